//! What an HTTP test server is asked to do: its transports, options and
//! deliberate HTTP misbehaviours.

#[cfg(feature = "oauth")]
use super::OAuthOptions;
use crate::options::ServerOptions;

/// Which HTTP transport the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpMode {
    /// Streamable HTTP only, at `/mcp`.
    Streamable,
    /// The 2024-11-05 HTTP+SSE transport only, at `/sse` and `/messages`.
    LegacySse,
    /// Both, as servers that keep old clients working do.
    Both,
}

/// One way the HTTP layer misbehaves on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HttpMisbehaviour {
    /// `drop-stream`: the SSE stream of each `tools/call` sends a priming event
    /// (an id and `retry: retry_ms`) and then drops the connection before the
    /// answer; the answer waits to be fetched with a GET carrying `Last-Event-ID`.
    DropStream,
    /// `expire-session`: the first session expires after `expire_after`
    /// POSTs; requests with its id then get 404.
    ExpireSession,
    /// `expire-session-400`: like `expire-session`, but answers the stale id
    /// with 400 "Bad Request: No valid session ID provided", as the
    /// TypeScript SDK's servers do.
    ExpireSession400,
    /// `status-500`: answers every `tools/call` POST with 500.
    Status500,
    /// `wrong-content-type`: answers requests other than `initialize` with
    /// `Content-Type: text/plain`.
    WrongContentType,
    /// `slow-head`: waits `slow_ms` before answering each POST of a request
    /// other than `initialize`.
    SlowHead,
    /// `drop-sse-stream`: the first legacy SSE stream ends after `drop_after`
    /// `message` events (the `endpoint` event not counted). Its session
    /// lives on, but answers can no longer reach the client: it must open a
    /// new stream, which is a new session.
    DropSseStream,
    /// `accept-and-drop`: every long-lived event stream — the streamable
    /// GET stream (without `Last-Event-ID`) and the legacy `/sse` stream —
    /// is answered 200 and ended at once (the legacy one right after its
    /// `endpoint` event): each reconnection succeeds and dies young.
    AcceptAndDrop,
    /// `retry-zero-close`: like `accept-and-drop`, but each stream first
    /// sends `retry: 0`, asking to be reconnected without any wait.
    RetryZeroClose,
}

impl HttpMisbehaviour {
    /// Every HTTP misbehaviour.
    pub const ALL: &'static [HttpMisbehaviour] = &[
        HttpMisbehaviour::DropStream,
        HttpMisbehaviour::ExpireSession,
        HttpMisbehaviour::ExpireSession400,
        HttpMisbehaviour::Status500,
        HttpMisbehaviour::WrongContentType,
        HttpMisbehaviour::SlowHead,
        HttpMisbehaviour::DropSseStream,
        HttpMisbehaviour::AcceptAndDrop,
        HttpMisbehaviour::RetryZeroClose,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            HttpMisbehaviour::DropStream => "drop-stream",
            HttpMisbehaviour::ExpireSession => "expire-session",
            HttpMisbehaviour::ExpireSession400 => "expire-session-400",
            HttpMisbehaviour::Status500 => "status-500",
            HttpMisbehaviour::WrongContentType => "wrong-content-type",
            HttpMisbehaviour::SlowHead => "slow-head",
            HttpMisbehaviour::DropSseStream => "drop-sse-stream",
            HttpMisbehaviour::AcceptAndDrop => "accept-and-drop",
            HttpMisbehaviour::RetryZeroClose => "retry-zero-close",
        }
    }

    /// Whether the long-lived event streams end as soon as they are
    /// answered ([`AcceptAndDrop`](Self::AcceptAndDrop),
    /// [`RetryZeroClose`](Self::RetryZeroClose)), and what they send first.
    pub(super) fn short_stream_prelude(options: &HttpServerOptions) -> Option<&'static [u8]> {
        if options.has(HttpMisbehaviour::RetryZeroClose) {
            Some(b"retry: 0\n\n")
        } else if options.has(HttpMisbehaviour::AcceptAndDrop) {
            Some(b"")
        } else {
            None
        }
    }

    /// Parses a name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|m| m.name() == name)
    }
}

/// How an HTTP test server behaves. Build it with struct update syntax from
/// `HttpServerOptions::default()` (fields may be added).
#[derive(Debug, Clone)]
pub struct HttpServerOptions {
    /// The MCP behaviour (tools, stdio-level misbehaviours).
    pub server: ServerOptions,
    /// Streamable HTTP, legacy SSE, or both.
    pub mode: HttpMode,
    /// No sessions: no `Mcp-Session-Id`, GET and DELETE answer 405.
    pub stateless: bool,
    /// Answer requests with `application/json` instead of an SSE stream.
    pub json_response: bool,
    /// Offer the GET stream (else GET answers 405).
    pub get_stream: bool,
    /// HTTP misbehaviours.
    pub misbehaviours: Vec<HttpMisbehaviour>,
    /// The `retry` (ms) sent before a dropped stream.
    pub retry_ms: u64,
    /// POSTs before a session expires (with the expire misbehaviours).
    pub expire_after: usize,
    /// The delay of [`HttpMisbehaviour::SlowHead`], in ms.
    pub slow_ms: u64,
    /// The `message` events before [`HttpMisbehaviour::DropSseStream`]
    /// ends the stream.
    pub drop_after: usize,
    /// A header every request must carry (name, exact value); 401 otherwise.
    pub require_header: Option<(String, String)>,
    /// The OAuth-protected mode: bearer tokens on every MCP request, and an
    /// authorization server of its own (see the module's docs, "OAuth").
    #[cfg(feature = "oauth")]
    pub oauth: Option<OAuthOptions>,
}

impl Default for HttpServerOptions {
    fn default() -> Self {
        HttpServerOptions {
            server: ServerOptions::default(),
            mode: HttpMode::Streamable,
            stateless: false,
            json_response: false,
            get_stream: true,
            misbehaviours: Vec::new(),
            retry_ms: 200,
            expire_after: 3,
            slow_ms: 1000,
            drop_after: 2,
            require_header: None,
            #[cfg(feature = "oauth")]
            oauth: None,
        }
    }
}

impl HttpServerOptions {
    /// Whether a misbehaviour is selected.
    pub fn has(&self, m: HttpMisbehaviour) -> bool {
        self.misbehaviours.contains(&m)
    }

    /// These options with the OAuth-protected mode.
    #[cfg(feature = "oauth")]
    pub fn with_oauth(mut self, oauth: OAuthOptions) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Options with one HTTP misbehaviour.
    pub fn misbehaving(m: HttpMisbehaviour) -> Self {
        HttpServerOptions {
            misbehaviours: vec![m],
            ..Self::default()
        }
    }
}
