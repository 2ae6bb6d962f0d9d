//! Transport errors.

use std::fmt;
use std::io;

/// How a server process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExitInfo {
    /// The exit code, when it exited normally.
    pub code: Option<i32>,
    /// The signal that ended it, when one did (unix).
    pub signal: Option<i32>,
}

impl ExitInfo {
    /// Builds exit information from a code and a signal.
    pub fn new(code: Option<i32>, signal: Option<i32>) -> Self {
        ExitInfo { code, signal }
    }
}

impl fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "exit code {code}"),
            (None, Some(sig)) => write!(f, "killed by signal {sig}"),
            (None, None) => f.write_str("unknown exit status"),
        }
    }
}

/// Why a transport operation failed.
///
/// Use the predicates ([`is_closed`](Self::is_closed)) rather than matching
/// when you only need to know what to do next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The connection is closed: the peer went away, or `close` was called.
    #[error("{}", closed_message(.exit, .stderr_tail, .reason))]
    Closed {
        /// Why it closed, in a few words ("server closed stdout", "closed by client").
        reason: String,
        /// How the server process ended, when it was a process that has ended.
        exit: Option<ExitInfo>,
        /// The last lines the server wrote to stderr.
        stderr_tail: Vec<String>,
    },
    /// The server program could not be started.
    #[error("cannot start `{program}`: {source}{}", spawn_hint(.source))]
    Spawn {
        /// The program that was to be run.
        program: String,
        /// The error from the operating system.
        #[source]
        source: io::Error,
    },
    /// The message could not be encoded (too large, for example); nothing was sent.
    #[error("cannot send: {0}")]
    Encode(#[from] mcp_stack_jsonrpc::EncodeError),
    /// An IO error while reading or writing.
    #[error("transport IO error: {0}")]
    Io(#[from] io::Error),
    /// The server answered an HTTP request with an error status.
    #[error("HTTP {status} from {url}{}{}", body_part(.body), status_hint(*.status))]
    HttpStatus {
        /// The status code.
        status: u16,
        /// The method and URL, without query or user info (`POST https://host/mcp`).
        url: String,
        /// The start of the response body, control characters escaped.
        body: String,
    },
    /// An HTTP exchange failed without a status: connection refused, TLS,
    /// an answer that breaks the transport's rules.
    #[error("HTTP error ({url}): {message}")]
    Http {
        /// The method and URL, without query or user info.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The HTTP proxy would not open a tunnel to the server: it answered
    /// `CONNECT` with a status other than 2xx. The status is the proxy's,
    /// not the server's ([`http_status`](Self::http_status) is `None`).
    #[error(
        "the proxy {proxy} answered HTTP {status} to CONNECT {target}{}",
        mcp_stack_protocol::endpoint::proxy_refusal_hint(*.status, *.credentials_sent)
    )]
    ProxyRefused {
        /// The proxy, `http://host:port` (never its user info).
        proxy: String,
        /// The server the tunnel was for, `host:port`.
        target: String,
        /// The proxy's status code (407: it wants credentials).
        status: u16,
        /// Whether credentials from the proxy URL were sent.
        credentials_sent: bool,
    },
    /// Something took longer than its bound.
    #[error("timed out after {}: {what}", mcp_stack_protocol::defaults::describe_duration(*.after))]
    Timeout {
        /// What was being waited for.
        what: String,
        /// The bound.
        after: std::time::Duration,
    },
    /// The server wants authorization that this client could not obtain:
    /// the message says what to do (log in, configure a client id).
    #[error("{url} needs authorization: {message}")]
    Unauthorized {
        /// The method and URL of the refused request, without query or user info.
        url: String,
        /// Why no credentials could be had, and what to do about it.
        message: String,
    },
    /// The server's session ended (see [`Received::SessionExpired`](crate::Received::SessionExpired))
    /// and the message was not processed: the server did not know the
    /// session it named, or the transport did not post it before a new
    /// handshake. Sending it again after that handshake is safe.
    #[error(
        "the server's session ended ({url}): {reason}; the message was not processed (it can be \
         sent again once the handshake has run again)"
    )]
    SessionExpired {
        /// The method and URL, without query or user info.
        url: String,
        /// What the server said, or why the session is new.
        reason: String,
    },
    /// The transport's settings cannot work (a bad URL, a header value with a
    /// line break, an unreadable CA file). Values of headers are never shown.
    #[error("invalid transport settings: {0}")]
    InvalidConfig(String),
}

fn body_part(body: &str) -> String {
    if body.is_empty() {
        String::new()
    } else {
        format!(": {body}")
    }
}

fn status_hint(status: u16) -> &'static str {
    match status {
        401 => {
            " (check the Authorization header format, `Bearer <token>` with one space, \
             and whether the token expired)"
        }
        403 => " (the credentials were accepted but are not allowed here)",
        404 => " (check the URL path, e.g. /mcp or /sse)",
        405 => " (the server does not take this method here; try the other HTTP transport)",
        _ => "",
    }
}

fn spawn_hint(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::NotFound => " (is it installed and on PATH?)",
        io::ErrorKind::PermissionDenied => " (is it executable?)",
        _ => "",
    }
}

fn closed_message(exit: &Option<ExitInfo>, tail: &[String], reason: &str) -> String {
    let mut s = format!("connection closed: {reason}");
    if let Some(exit) = exit {
        s.push_str(&format!(" (server {exit})"));
    }
    if let Some(last) = tail.last() {
        s.push_str(&format!("; last stderr line: {last}"));
    }
    s
}

impl TransportError {
    /// Builds a `Closed` error with only a reason.
    pub fn closed(reason: impl Into<String>) -> Self {
        TransportError::Closed {
            reason: reason.into(),
            exit: None,
            stderr_tail: Vec::new(),
        }
    }

    /// The connection is gone; retrying on it is pointless.
    pub fn is_closed(&self) -> bool {
        matches!(self, TransportError::Closed { .. })
    }

    /// The server could not be started at all.
    pub fn is_spawn(&self) -> bool {
        matches!(self, TransportError::Spawn { .. })
    }

    /// The server refused for want of authorization: a 401 or 403 answer,
    /// or credentials that could not be had ([`Unauthorized`](Self::Unauthorized)).
    pub fn needs_authorization(&self) -> bool {
        matches!(self, TransportError::Unauthorized { .. })
            || matches!(self.http_status(), Some(401 | 403))
    }

    /// The message was refused, or never left: a 4xx answer, credentials
    /// that could not be had, a session the server no longer knows, a
    /// message that could not be encoded, a transport that could not start.
    /// The server is not working on it, so a request that failed so has
    /// nothing to cancel. A 5xx, a timeout or a broken connection may come
    /// after the server took the message: those are not refusals.
    pub fn is_refused(&self) -> bool {
        match self {
            TransportError::Unauthorized { .. }
            | TransportError::SessionExpired { .. }
            | TransportError::Encode(_)
            | TransportError::Spawn { .. }
            | TransportError::ProxyRefused { .. }
            | TransportError::InvalidConfig(_) => true,
            TransportError::HttpStatus { status, .. } => (400..500).contains(status),
            _ => false,
        }
    }

    /// The HTTP status, when the server answered with an error status.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            TransportError::HttpStatus { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The server's session ended before the message was processed
    /// ([`SessionExpired`](Self::SessionExpired)): it may be sent again
    /// after a new handshake.
    pub fn is_session_expired(&self) -> bool {
        matches!(self, TransportError::SessionExpired { .. })
    }

    /// Something took longer than its bound.
    pub fn is_timeout(&self) -> bool {
        matches!(self, TransportError::Timeout { .. })
    }

    /// How the server process ended, when known.
    pub fn exit_info(&self) -> Option<&ExitInfo> {
        match self {
            TransportError::Closed { exit, .. } => exit.as_ref(),
            _ => None,
        }
    }

    /// The server's last stderr lines, when known.
    pub fn stderr_tail(&self) -> &[String] {
        match self {
            TransportError::Closed { stderr_tail, .. } => stderr_tail,
            _ => &[],
        }
    }
}

/// The HTTP client's errors keep their names: a proxy's refusal is a
/// [`TransportError::ProxyRefused`], a timeout a [`TransportError::Timeout`].
#[cfg(feature = "http")]
impl From<mcp_stack_http::HttpError> for TransportError {
    fn from(e: mcp_stack_http::HttpError) -> Self {
        use mcp_stack_http::HttpError as H;
        match e {
            H::Http { url, message } => TransportError::Http { url, message },
            H::ProxyRefused {
                proxy,
                target,
                status,
                credentials_sent,
            } => TransportError::ProxyRefused {
                proxy,
                target,
                status,
                credentials_sent,
            },
            H::Timeout { what, after } => TransportError::Timeout { what, after },
            H::Unauthorized { url, message } => TransportError::Unauthorized { url, message },
            H::InvalidConfig(message) => TransportError::InvalidConfig(message),
            other => TransportError::Http {
                url: String::new(),
                message: other.to_string(),
            },
        }
    }
}
