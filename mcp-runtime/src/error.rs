//! Runtime errors, and the wording of durations in them and in the catalog.

use std::fmt;

use mcp_stack_session::SessionError;
use mcp_stack_transport::TransportError;

/// A kind of catalog entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntryKind {
    /// A tool.
    Tool,
    /// A resource.
    Resource,
    /// A resource template.
    ResourceTemplate,
    /// A prompt.
    Prompt,
}

impl fmt::Display for EntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EntryKind::Tool => "tool",
            EntryKind::Resource => "resource",
            EntryKind::ResourceTemplate => "resource template",
            EntryKind::Prompt => "prompt",
        })
    }
}

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
    /// The session id is in use by another identity.
    #[error(
        "MCP session `{session}` belongs to another identity: give each user's agent \
         sessions their own ids"
    )]
    IdentityMismatch {
        /// The agent session id.
        session: String,
    },
    /// The session was disposed of while its runtime was being built.
    #[error("MCP session `{session}` was disposed of while its connections were starting")]
    Disposed {
        /// The agent session id.
        session: String,
    },
    /// No tool of that namespaced name in the session's catalog.
    #[error("no tool named `{name}`{}", hint(EntryKind::Tool, .known, .failed))]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// Some names the catalog does have.
        known: Vec<String>,
        /// Servers that failed to start (their tools are missing).
        failed: Vec<String>,
    },
    /// No resource, resource template or prompt of that namespaced name (or,
    /// for a resource, URI) in the session's catalog.
    #[error("no {kind} named `{name}`{}", hint(*.kind, .known, .failed))]
    UnknownEntry {
        /// What was looked for.
        kind: EntryKind,
        /// The name (or URI) asked for.
        name: String,
        /// Some names of that kind the catalog does have.
        known: Vec<String>,
        /// Servers that failed to start (their entries are missing).
        failed: Vec<String>,
    },
    /// A resource URI that several servers list: which server is meant is
    /// not clear.
    #[error(
        "the resource URI `{uri}` is listed by several servers; read it by one of these \
         names: {}",
        .candidates.join(", ")
    )]
    AmbiguousResource {
        /// The URI asked for.
        uri: String,
        /// The namespaced names of the resources at that URI.
        candidates: Vec<String>,
    },
    /// No connected server of that name.
    #[error("no connected server named `{server}`; connected: {}", list_or_none(.connected))]
    UnknownServer {
        /// The name asked for.
        server: String,
        /// The connected servers.
        connected: Vec<String>,
    },
    /// The server's tools were listed from the persisted catalog, and its
    /// connection failed.
    #[error(
        "server `{server}` is unavailable: {reason} (its tools were listed from the persisted \
         catalog; the catalog's failures say more, and a later acquire retries it)"
    )]
    Unavailable {
        /// The server.
        server: String,
        /// Why its connection failed.
        reason: String,
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

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

fn hint(kind: EntryKind, known: &[String], failed: &[String]) -> String {
    let mut s = String::new();
    if !failed.is_empty() {
        s.push_str(&format!(
            "; servers that failed to start (see the catalog's failures): {}",
            failed.join(", ")
        ));
    }
    if known.is_empty() {
        s.push_str(&format!("; the catalog has no {kind}s"));
    } else {
        s.push_str(&format!("; known {kind}s include: {}", known.join(", ")));
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

pub(crate) use mcp_stack_transport::describe_duration;
