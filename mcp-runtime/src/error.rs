//! Runtime errors, and the wording of durations in them and in the catalog.

use mcp_session::SessionError;
use mcp_transport::TransportError;

/// Why the runtime could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The cap on live session runtimes is reached.
    #[error(
        "too many live MCP session runtimes ({limit}); dispose of sessions that ended \
         (dispose_session) or raise RuntimeOptions::max_sessions"
    )]
    TooManySessions {
        /// The cap.
        limit: usize,
    },
    /// The session was disposed of while its runtime was being built.
    #[error("MCP session `{session}` was disposed of while its connections were starting")]
    Disposed {
        /// The agent session id.
        session: String,
    },
    /// No tool of that namespaced name in the session's catalog.
    #[error("no tool named `{name}`{}", hint(.known, .failed))]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// Some names the catalog does have.
        known: Vec<String>,
        /// Servers that failed to start (their tools are missing).
        failed: Vec<String>,
    },
    /// The call reached the server's session and failed there.
    #[error("{server}: {source}")]
    Call {
        /// The server the tool belongs to.
        server: String,
        /// What went wrong.
        #[source]
        source: SessionError,
    },
}

fn hint(known: &[String], failed: &[String]) -> String {
    let mut s = String::new();
    if !failed.is_empty() {
        s.push_str(&format!(
            "; servers that failed to start (see the catalog's failures): {}",
            failed.join(", ")
        ));
    }
    if known.is_empty() {
        s.push_str("; the catalog has no tools");
    } else {
        s.push_str(&format!("; known tools include: {}", known.join(", ")));
    }
    s
}

impl RuntimeError {
    /// The session error underneath, when a call failed in its session.
    pub fn session_error(&self) -> Option<&SessionError> {
        match self {
            RuntimeError::Call { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Why a [`Connector`](crate::Connector) could not open a transport.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The transport failed to start (the program was not found, say).
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// This connector has no transport of this kind.
    #[error("{0}")]
    Unsupported(String),
}

pub(crate) use mcp_transport::describe_duration;
