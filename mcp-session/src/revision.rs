//! The questions a session asks of its revision, answered in one place.
//!
//! The lifecycle settles on a [`ProtocolVersion`]; from then on every part of
//! the session that behaves differently by revision asks a [`Revision`]: how
//! to check liveness, whether results carry cache hints, how notifications
//! are listened for, how tool calls run as tasks, whether a request mirrors
//! its name and arguments into HTTP headers. A new revision is a change here
//! (and in `mcp-stack-protocol`'s capability methods), not a hunt through the
//! features.

use mcp_stack_protocol::request::{Ping, Request, ServerDiscover};
use mcp_stack_protocol::{Listening, ProtocolVersion, TaskModel};
use mcp_stack_transport::TransportKind;

/// The session's revision and what it means for this connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Revision {
    version: ProtocolVersion,
    /// Over streamable HTTP (where 2026-07-28 mirrors into headers).
    streamable_http: bool,
}

impl Revision {
    /// `version` spoken over a transport of this kind.
    pub(crate) fn new(version: ProtocolVersion, transport: TransportKind) -> Self {
        Revision {
            version,
            streamable_http: transport == TransportKind::StreamableHttp,
        }
    }

    /// The negotiated version.
    pub(crate) fn version(self) -> ProtocolVersion {
        self.version
    }

    /// Whether the lifecycle ends with `notifications/initialized` (the
    /// revisions with an `initialize` handshake).
    pub(crate) fn sends_initialized(self) -> bool {
        self.version.has_handshake()
    }

    /// The request that checks the server answers: `ping`, or
    /// `server/discover` where there is no `ping` (2026-07-28).
    pub(crate) fn liveness_method(self) -> &'static str {
        if self.version.has_ping() {
            Ping::METHOD
        } else {
            ServerDiscover::METHOD
        }
    }

    /// Whether list results carry cache hints (`ttlMs`).
    pub(crate) fn cache_hints(self) -> bool {
        self.version.has_result_types()
    }

    /// How the client gets the notifications it asks for.
    pub(crate) fn listening(self) -> Listening {
        self.version.listening()
    }

    /// How a tool call runs as a task.
    pub(crate) fn tasks(self) -> TaskModel {
        self.version.tasks()
    }

    /// Whether the server may answer any call with a task it decides on
    /// (the tasks extension), rather than only when asked.
    pub(crate) fn tasks_by_extension(self) -> bool {
        self.tasks() == TaskModel::Extension
    }

    /// Whether a call may be answered with `input_required`, and then sent
    /// again with the answers (multi-round-trip requests, 2026-07-28).
    pub(crate) fn has_input_rounds(self) -> bool {
        self.version.has_result_types()
    }

    /// Whether requests mirror tool arguments into `Mcp-Param-*` headers
    /// and names into `Mcp-Name`: a 2026-07-28 session over streamable HTTP.
    pub(crate) fn mirrors_headers(self) -> bool {
        self.version.mirrors_into_headers() && self.streamable_http
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_revision_answers_for_itself() {
        let handshake = Revision::new(ProtocolVersion::V2025_06_18, TransportKind::StreamableHttp);
        assert!(handshake.sends_initialized());
        assert_eq!(handshake.liveness_method(), Ping::METHOD);
        assert!(!handshake.cache_hints());
        assert_eq!(handshake.listening(), Listening::Subscribe);
        assert_eq!(handshake.tasks(), TaskModel::None);
        assert!(!handshake.tasks_by_extension());
        assert!(!handshake.mirrors_headers());
        assert!(!handshake.has_input_rounds());

        let requested = Revision::new(ProtocolVersion::V2025_11_25, TransportKind::Stdio);
        assert_eq!(requested.tasks(), TaskModel::Requested);
        assert!(!requested.tasks_by_extension());

        let discovered = Revision::new(ProtocolVersion::V2026_07_28, TransportKind::Stdio);
        assert!(!discovered.sends_initialized());
        assert_eq!(discovered.liveness_method(), ServerDiscover::METHOD);
        assert!(discovered.cache_hints());
        assert_eq!(discovered.listening(), Listening::Stream);
        assert!(discovered.tasks_by_extension());
        assert!(discovered.has_input_rounds());
        assert_eq!(discovered.version(), ProtocolVersion::V2026_07_28);
    }

    #[test]
    fn only_streamable_http_of_2026_mirrors_headers() {
        let v = ProtocolVersion::V2026_07_28;
        assert!(Revision::new(v, TransportKind::StreamableHttp).mirrors_headers());
        assert!(!Revision::new(v, TransportKind::Stdio).mirrors_headers());
        assert!(!Revision::new(v, TransportKind::Sse).mirrors_headers());
    }
}
