//! The decisions of a streamable HTTP connection, without IO: which session
//! a request carries, when a session has expired (and that it is reported
//! once), which messages wait for a new handshake, whether a dropped stream
//! is resumed, and when the GET stream is opened again. The async code in
//! the parent module drives these and does the HTTP.

use std::time::Duration;

use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};

use super::super::mirror::PROTOCOL_VERSION;
use crate::TransportError;
use crate::backoff::{Pace, StreamPacing};

pub(super) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// The session of one connection, as far as the server has told us.
#[derive(Debug, Default)]
pub(super) struct SessionState {
    session_id: Option<HeaderValue>,
    protocol_version: Option<HeaderValue>,
    /// Set by the caller: not replaced by the revision messages name.
    version_fixed: bool,
    /// Counts sessions: bumped by each initialize answer.
    generation: u64,
    /// The session expired, for this reason, and no new one has started:
    /// only `initialize` is posted until one does.
    expired: Option<String>,
    /// A request of a revision without HTTP sessions (2026-07-28) was sent
    /// last: no session id, no GET stream, no resumption, and cancelling
    /// closes the response stream.
    stateless: bool,
}

/// The headers a request carries, and what they say about the session.
#[derive(Debug)]
pub(super) struct RequestHeaders {
    pub(super) headers: HeaderMap,
    /// The session generation the request was sent in.
    pub(super) generation: u64,
    /// Whether it carries a session id (only then can the session expire).
    pub(super) has_session: bool,
    /// Asked with the session while it is expired (and no new one has
    /// started): why. Such a request must not go out.
    pub(super) expired: Option<String>,
}

impl SessionState {
    /// The session id the server gave, if any.
    pub(super) fn session_id(&self) -> Option<&HeaderValue> {
        self.session_id.as_ref()
    }

    /// The protocol version sent as `MCP-Protocol-Version`, once known.
    pub(super) fn protocol_version(&self) -> Option<&HeaderValue> {
        self.protocol_version.as_ref()
    }

    /// Whether a request without HTTP session (2026-07-28) was sent last.
    pub(super) fn is_stateless(&self) -> bool {
        self.stateless
    }

    /// The current session's generation.
    pub(super) fn generation(&self) -> u64 {
        self.generation
    }

    /// Why messages other than `initialize` are not posted now: the
    /// session expired and no new handshake has started a new one.
    pub(super) fn awaiting_handshake(&self) -> Option<&str> {
        self.expired.as_deref()
    }

    /// The headers of a request: `Accept`, and with `with_session` the
    /// session id and protocol version once known.
    pub(super) fn headers(&self, accept: &'static str, with_session: bool) -> RequestHeaders {
        // Room for what the request adds later (its content type, `Host`,
        // the metadata headers a 2026-07-28 request mirrors) without
        // growing the map.
        let mut headers = HeaderMap::with_capacity(12);
        headers.insert(header::ACCEPT, HeaderValue::from_static(accept));
        let mut has_session = false;
        let mut expired = None;
        if with_session {
            expired.clone_from(&self.expired);
            if let Some(id) = &self.session_id {
                headers.insert(SESSION_ID, id.clone());
                has_session = true;
            }
            if let Some(v) = &self.protocol_version {
                headers.insert(PROTOCOL_VERSION.clone(), v.clone());
            }
        }
        RequestHeaders {
            headers,
            generation: self.generation,
            has_session,
            expired,
        }
    }

    /// The caller fixes the protocol version header.
    pub(super) fn fix_version(&mut self, version: HeaderValue) {
        self.protocol_version = Some(version);
        self.version_fixed = true;
    }

    /// A message of the handshake era names its revision: sent as
    /// `MCP-Protocol-Version` from now on, unless the caller fixed one.
    pub(super) fn note_revision(&mut self, revision: &str) {
        let same = self
            .protocol_version
            .as_ref()
            .is_some_and(|v| v.as_bytes() == revision.as_bytes());
        if !self.version_fixed && !same {
            self.protocol_version = HeaderValue::from_str(revision).ok();
        }
    }

    /// An `initialize` request goes out: the connection has sessions again.
    pub(super) fn initialize_sent(&mut self) {
        self.stateless = false;
    }

    /// A request without HTTP session (2026-07-28) went out.
    pub(super) fn stateless_sent(&mut self) {
        self.stateless = true;
    }

    /// The answer to `initialize` arrived with these headers: its session id
    /// (visible ASCII, non-empty, as the spec requires; anything else is no
    /// session) starts a new generation, and messages are posted again.
    pub(super) fn session_started(&mut self, headers: &HeaderMap) {
        self.session_id = headers
            .get(SESSION_ID)
            .filter(|v| !v.is_empty() && v.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b)))
            .cloned();
        self.generation += 1;
        self.expired = None;
    }

    /// A message sent in the session of generation `stale` found it
    /// expired (`reason`). Returns whether this is news: the first report
    /// for the current session, which drops its id and holds every message
    /// but `initialize` until a new session starts. A report about an older
    /// session (a new one started meanwhile), or a second one, is not.
    pub(super) fn expire(&mut self, stale: u64, reason: &str) -> bool {
        if self.generation != stale || self.expired.is_some() {
            return false;
        }
        self.session_id = None;
        self.expired = Some(reason.to_owned());
        true
    }
}

/// Whether an error answer means the session expired: 404, or a 400 whose
/// body speaks of the session (the TypeScript SDK's servers answer so).
pub(super) fn is_expiry(error: &TransportError) -> bool {
    match error {
        TransportError::HttpStatus { status: 404, .. } => true,
        TransportError::HttpStatus {
            status: 400, body, ..
        } => body.to_ascii_lowercase().contains("session"),
        _ => false,
    }
}

/// What to do when a request's SSE stream ends before its answer.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Resume {
    /// Give up: the request fails, for this reason.
    Fail(String),
    /// Resume with a GET carrying `Last-Event-ID` after this wait.
    After(Duration),
}

/// Whether a dropped request stream is resumed: never for 2026-07-28
/// (its streams are not resumable), only when an event id was seen, at most
/// `max_attempts` times, after the server's `retry` or the default wait.
pub(super) fn resume(
    stateless: bool,
    last_event_id: Option<&str>,
    attempts: u32,
    max_attempts: u32,
    retry: Option<Duration>,
    default_retry: Duration,
) -> Resume {
    if stateless {
        return Resume::Fail(
            "the server ended the SSE stream before answering (streams of protocol 2026-07-28 \
             are not resumable)"
                .into(),
        );
    }
    if last_event_id.is_none() {
        return Resume::Fail(
            "the server ended the SSE stream before answering, with no event id to resume from"
                .into(),
        );
    }
    if attempts >= max_attempts {
        return Resume::Fail(format!(
            "the SSE stream dropped before the answer and {attempts} attempts to resume it failed"
        ));
    }
    Resume::After(retry.unwrap_or(default_retry))
}

/// The GET stream's reconnections: failed attempts in a row (past
/// `max_reconnects` the stream is given up) and the pacing of the waits
/// (a stream that dies young does not reset it: see [`StreamPacing`]).
#[derive(Debug, Default)]
pub(super) struct GetStream {
    failures: u32,
    pacing: StreamPacing,
}

impl GetStream {
    /// The stream opened: failed attempts count from zero again (the
    /// pacing does not: that waits for the stream to live long enough).
    pub(super) fn opened(&mut self) {
        self.failures = 0;
    }

    /// The open stream ended after `lived`. Returns whether it was young.
    pub(super) fn ended(&mut self, lived: Duration) -> bool {
        self.pacing.ended(lived)
    }

    /// An attempt to open it failed; returns whether to give up (more than
    /// `max` in a row).
    pub(super) fn failed(&mut self, max: u32) -> bool {
        self.failures = self.failures.saturating_add(1);
        self.failures > max
    }

    /// The wait before the next attempt, after the server's `retry` (if
    /// any) and the default.
    pub(super) fn next_wait(
        &mut self,
        retry: Option<Duration>,
        default_retry: Duration,
        salt: &str,
    ) -> Pace {
        self.pacing.next(retry, default_retry, salt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer_headers(session: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(SESSION_ID, HeaderValue::from_str(session).unwrap());
        h
    }

    #[test]
    fn a_session_id_is_sent_once_given_and_only_with_the_session() {
        let mut s = SessionState::default();
        let before = s.headers("application/json", true);
        assert!(!before.has_session);
        assert_eq!(before.headers.len(), 1);

        s.initialize_sent();
        s.session_started(&answer_headers("abc-123"));
        s.note_revision("2025-06-18");
        let with = s.headers("application/json", true);
        assert!(with.has_session);
        assert_eq!(with.generation, 1);
        assert_eq!(with.headers[SESSION_ID], "abc-123");
        assert_eq!(with.headers["mcp-protocol-version"], "2025-06-18");
        let without = s.headers("application/json", false);
        assert!(!without.has_session);
        assert!(without.headers.get(SESSION_ID).is_none());
    }

    #[test]
    fn session_ids_outside_visible_ascii_are_no_session() {
        let mut s = SessionState::default();
        for bad in ["", "has space"] {
            s.session_started(&answer_headers(bad));
            assert!(s.session_id().is_none(), "{bad:?}");
        }
        s.session_started(&HeaderMap::new());
        assert!(s.session_id().is_none());
        assert_eq!(s.generation(), 3, "each answer starts a generation");
    }

    #[test]
    fn a_fixed_version_is_not_replaced() {
        let mut s = SessionState::default();
        s.note_revision("2025-03-26");
        assert_eq!(s.protocol_version().unwrap(), "2025-03-26");
        s.fix_version(HeaderValue::from_static("2025-06-18"));
        s.note_revision("2025-11-25");
        assert_eq!(s.protocol_version().unwrap(), "2025-06-18");
    }

    #[test]
    fn an_expiry_is_news_once_per_session_and_holds_messages_until_the_next() {
        let mut s = SessionState::default();
        s.initialize_sent();
        s.session_started(&answer_headers("one"));
        assert!(s.awaiting_handshake().is_none());
        // Two requests of generation 1 find the session expired: one report.
        assert!(s.expire(1, "HTTP 404"));
        assert!(!s.expire(1, "HTTP 404"), "reported once");
        assert!(s.session_id().is_none(), "the stale id is dropped");
        assert_eq!(s.awaiting_handshake(), Some("HTTP 404"));
        let headers = s.headers("application/json", true);
        assert!(!headers.has_session);
        assert_eq!(
            headers.expired.as_deref(),
            Some("HTTP 404"),
            "not to be sent"
        );
        assert!(s.headers("application/json", false).expired.is_none());
        // The layer above initializes again: a new session, messages flow.
        s.initialize_sent();
        s.session_started(&answer_headers("two"));
        assert!(s.awaiting_handshake().is_none());
        assert!(s.headers("application/json", true).expired.is_none());
        // A late answer about the old session is no news.
        assert!(!s.expire(1, "HTTP 404"));
        assert_eq!(s.session_id().unwrap(), "two");
        assert!(s.expire(2, "HTTP 400: no valid session"));
    }

    #[test]
    fn a_new_handshake_has_sessions_again() {
        let mut s = SessionState::default();
        s.stateless_sent();
        assert!(s.is_stateless());
        s.initialize_sent();
        assert!(!s.is_stateless());
    }

    #[test]
    fn expiry_is_a_404_or_a_400_about_the_session() {
        let status = |status, body: &str| TransportError::HttpStatus {
            url: "u".into(),
            status,
            body: body.into(),
        };
        assert!(is_expiry(&status(404, "")));
        assert!(is_expiry(&status(
            400,
            "Bad Request: No valid session ID provided"
        )));
        assert!(!is_expiry(&status(400, "bad arguments")));
        assert!(!is_expiry(&status(500, "session")));
        assert!(!is_expiry(&TransportError::closed("gone")));
    }

    /// Drives a GET stream against a server whose every stream lives
    /// `lived`, on a virtual clock, for `window`: how many streams it opens.
    fn streams_opened(lived: Duration, retry: Option<Duration>, window: Duration) -> usize {
        let mut get = GetStream::default();
        let mut now = Duration::ZERO;
        let mut opened = 0;
        while now < window {
            get.opened();
            opened += 1;
            now += lived;
            get.ended(lived);
            now += get.next_wait(retry, Duration::from_secs(1), "s").wait;
        }
        opened
    }

    #[test]
    fn a_get_stream_that_dies_young_is_reopened_less_and_less_often() {
        let minute = Duration::from_secs(60);
        let zero = Some(Duration::ZERO);
        // Accept and drop (no retry): waits 0.5–1 s, 1–2, 2–4 … 15–30 s.
        // The old rule (a success resets the backoff) opened 60 to 120.
        let dropped = streams_opened(Duration::from_millis(2), None, 2 * minute);
        assert!((5..=12).contains(&dropped), "{dropped} streams in 2 min");
        // `retry: 0`: raised to 1 s, then the same backoff; the old rule
        // never waited at all.
        let zeroed = streams_opened(Duration::ZERO, zero, 2 * minute);
        assert!((5..=12).contains(&zeroed), "{zeroed} streams in 2 min");
        // Over an hour the rate is the cap's: about one per 15–30 s.
        let hour = streams_opened(Duration::ZERO, zero, 60 * minute);
        assert!((120..=250).contains(&hour), "{hour} streams in an hour");
        // A server whose streams live a minute each: reopened after a
        // second every time, as before.
        let healthy = streams_opened(minute, zero, 60 * minute);
        assert!((58..=60).contains(&healthy), "{healthy} streams in an hour");
    }

    #[test]
    fn the_get_stream_gives_up_after_max_failures_in_a_row_only() {
        let mut get = GetStream::default();
        assert!(!get.failed(2) && !get.failed(2));
        get.opened();
        assert!(!get.failed(2) && !get.failed(2), "an open resets the count");
        assert!(get.failed(2));
        // Failures and young streams both grow the wait; only a stream
        // that lived long enough starts it afresh.
        let before = get.next_wait(None, Duration::from_secs(1), "s").attempt;
        get.ended(Duration::from_secs(1));
        assert_eq!(
            get.next_wait(None, Duration::from_secs(1), "s").attempt,
            before + 1
        );
        get.ended(Duration::from_secs(600));
        assert_eq!(get.next_wait(None, Duration::from_secs(1), "s").attempt, 1);
    }

    #[test]
    fn resumption_needs_an_event_id_a_legacy_stream_and_attempts_left() {
        let wait = Duration::from_millis(250);
        let default = Duration::from_secs(1);
        assert!(matches!(
            resume(true, Some("e1"), 0, 3, None, default),
            Resume::Fail(why) if why.contains("not resumable")
        ));
        assert!(matches!(
            resume(false, None, 0, 3, None, default),
            Resume::Fail(why) if why.contains("no event id")
        ));
        assert!(matches!(
            resume(false, Some("e1"), 3, 3, None, default),
            Resume::Fail(why) if why.contains("3 attempts to resume it failed")
        ));
        assert_eq!(
            resume(false, Some("e1"), 0, 3, Some(wait), default),
            Resume::After(wait)
        );
        assert_eq!(
            resume(false, Some("e1"), 2, 3, None, default),
            Resume::After(default)
        );
    }
}
