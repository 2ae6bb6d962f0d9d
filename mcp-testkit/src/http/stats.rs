//! What an HTTP test server saw, for tests to check.

use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

/// What the server saw, for tests to check.
#[derive(Debug, Default)]
pub struct HttpStats {
    /// `initialize` requests received (a new session each, when stateful).
    pub initializes: AtomicUsize,
    /// DELETE requests received.
    pub deletes: AtomicUsize,
    /// GETs that carried `Last-Event-ID`.
    pub resumes: AtomicUsize,
    /// GET streams opened (without `Last-Event-ID`).
    pub get_streams: AtomicUsize,
    /// Legacy SSE streams opened.
    pub legacy_streams: AtomicUsize,
    /// Requests answered 404 or 400 for a stale session.
    pub stale_session_answers: AtomicUsize,
    /// POSTs that reached the MCP server.
    pub posts: AtomicUsize,
    /// The `MCP-Protocol-Version` of each POST after initialize (empty when absent).
    pub protocol_versions: Mutex<Vec<String>>,
    /// The `Last-Event-ID` values seen.
    pub last_event_ids: Mutex<Vec<String>>,
    /// POSTs served the 2026-07-28 way (requests and notifications, refused
    /// or not).
    pub modern_posts: AtomicUsize,
    /// The `MCP-Protocol-Version` and `Mcp-*` headers of each modern POST, in
    /// order: lower-cased names, raw values.
    pub modern_headers: Mutex<Vec<Vec<(String, String)>>>,
    /// Modern requests refused with `400` + `-32020` (`HeaderMismatch`).
    pub header_rejections: AtomicUsize,
    /// Notification POSTs in the 2026-07-28 mode. A conforming client sends
    /// none: it cancels by closing the response stream.
    pub modern_notifications: AtomicUsize,
    /// Modern requests whose client closed the response stream (or the
    /// connection) before the answer; their work was aborted.
    pub disconnect_cancels: AtomicUsize,
}
