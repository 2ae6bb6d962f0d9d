//! The decisions of a legacy HTTP+SSE connection, without IO: where a POST
//! may go (or whether it waits for a reconnection, or for a new handshake),
//! which requests a dropped stream takes with it, how many reconnection
//! attempts are left, how long to wait before each, and whether a new
//! endpoint is a new session. The async code in the parent module drives
//! these.

use std::collections::HashSet;
use std::time::Duration;

use hyper::Uri;
use mcp_stack_jsonrpc::Id;

use crate::TransportError;
use crate::backoff::{Pace, StreamPacing};

/// Where the connection stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// A stream is open and its endpoint known: POSTs go there.
    Ready(Uri),
    /// The stream dropped; a new one is being opened. POSTs wait.
    Reconnecting,
    /// Given up (or closed by the client), for this reason.
    Closed(String),
}

/// What a POST may do now.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Gate {
    /// Post to this endpoint (a request is now in flight on this stream).
    Post(Uri),
    /// The stream is being reconnected: wait for it.
    Wait,
    /// The new stream's endpoint is a new session on the server, whose
    /// handshake has not run: only the handshake's messages are posted.
    /// Refused, for this reason (the server would not process it).
    Expired(String),
    /// The connection is gone, for this reason.
    Closed(String),
}

/// What to do after a failed (or first) reconnection attempt.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Attempt {
    /// Try again: this is attempt number `n` (1 for the first) in a row.
    Try(u32),
    /// No attempts left: the connection is closed, for this reason.
    GiveUp(String),
}

/// What a dropped stream leaves behind.
#[derive(Debug)]
pub(super) struct Dropped {
    /// The requests in flight on it, to be failed (their answers would
    /// have come on it).
    pub(super) lost: Vec<Id>,
    /// It died young: the waits before reconnecting go on growing.
    pub(super) young: bool,
}

/// The state of one legacy SSE connection across its streams.
#[derive(Debug)]
pub(super) struct LinkState {
    phase: Phase,
    /// The endpoint of the last stream that had one.
    endpoint: Uri,
    /// Requests posted on the current stream whose answers have not come.
    in_flight: HashSet<Id>,
    /// The layer above runs a handshake (it sent `initialize`): a new
    /// endpoint then needs one too.
    handshakes: bool,
    /// The endpoint is a new session whose handshake has not ended (no
    /// `notifications/initialized` posted yet), for this reason.
    awaiting_handshake: Option<String>,
    /// Failed reconnection attempts in a row.
    failures: u32,
    /// Why the current outage began.
    outage: Option<String>,
    /// The pacing of the reconnections: a stream that dies young does not
    /// reset it.
    pacing: StreamPacing,
}

impl LinkState {
    /// A connection whose first stream is opening: POSTs wait until
    /// [`ready`](Self::ready) names its endpoint (`sse_url` stands in until
    /// then; nothing is posted to it).
    pub(super) fn new(sse_url: Uri) -> Self {
        LinkState {
            phase: Phase::Reconnecting,
            endpoint: sse_url,
            in_flight: HashSet::new(),
            handshakes: false,
            awaiting_handshake: None,
            failures: 0,
            outage: None,
            pacing: StreamPacing::default(),
        }
    }

    /// The endpoint POSTs go to (the last one known while reconnecting).
    pub(super) fn endpoint(&self) -> &Uri {
        &self.endpoint
    }

    /// A message is to be posted (`handshake`: `initialize` or
    /// `notifications/initialized`); a request (`id`) counts as in flight
    /// on the current stream from now on, so a drop fails it.
    pub(super) fn gate(&mut self, id: Option<&Id>, handshake: bool) -> Gate {
        match &self.phase {
            Phase::Ready(_) if !handshake && self.awaiting_handshake.is_some() => {
                Gate::Expired(self.awaiting_handshake.clone().unwrap_or_default())
            }
            Phase::Ready(endpoint) => {
                if let Some(id) = id {
                    self.in_flight.insert(id.clone());
                }
                Gate::Post(endpoint.clone())
            }
            Phase::Reconnecting => Gate::Wait,
            Phase::Closed(reason) => Gate::Closed(reason.clone()),
        }
    }

    /// The answer to `id` arrived. Returns whether it was in flight.
    pub(super) fn answered(&mut self, id: &Id) -> bool {
        self.in_flight.remove(id)
    }

    /// The POST of request `id` failed: it is no longer in flight. Returns
    /// whether it still was (else a dropped stream has failed it already).
    pub(super) fn post_failed(&mut self, id: &Id) -> bool {
        self.in_flight.remove(id)
    }

    /// The layer above sends `initialize`: it runs handshakes.
    pub(super) fn initialize_sent(&mut self) {
        self.handshakes = true;
    }

    /// The layer above posted `notifications/initialized`: the handshake
    /// ended, other messages are posted again.
    pub(super) fn initialized_sent(&mut self) {
        self.awaiting_handshake = None;
    }

    /// The stream dropped (`why`) after `lived`, not by our own close: POSTs
    /// wait for a new one, and the requests in flight are returned, to be
    /// failed (their answers would have come on the dropped stream).
    pub(super) fn stream_dropped(&mut self, why: &str, lived: Duration) -> Dropped {
        let young = self.pacing.ended(lived);
        if let Phase::Closed(_) = self.phase {
            return Dropped {
                lost: Vec::new(),
                young,
            };
        }
        self.phase = Phase::Reconnecting;
        self.outage = Some(why.to_owned());
        Dropped {
            lost: self.in_flight.drain().collect(),
            young,
        }
    }

    /// The wait before the next reconnection attempt, after the server's
    /// last `retry` (if any) and the default: see [`StreamPacing`].
    pub(super) fn reconnect_wait(
        &mut self,
        retry: Option<Duration>,
        default_retry: Duration,
        salt: &str,
    ) -> Pace {
        self.pacing.next(retry, default_retry, salt)
    }

    /// The next reconnection attempt, with `max` attempts in a row allowed;
    /// `last_error` is why the previous one failed (or the drop itself).
    /// Past the bound the connection is closed, with a reason naming the
    /// attempts and the last error.
    pub(super) fn next_attempt(&mut self, max: u32, last_error: &str) -> Attempt {
        if let Phase::Closed(reason) = &self.phase {
            return Attempt::GiveUp(reason.clone());
        }
        if self.failures >= max {
            let why = self.outage.as_deref().unwrap_or("the SSE stream dropped");
            let reason = if max == 0 {
                format!("{why}; reconnecting is off (max_reconnects is 0)")
            } else {
                format!(
                    "{why}, and {max} attempts in a row to reconnect failed (the last: \
                     {last_error}); raise HttpOptions::max_reconnects to keep trying longer"
                )
            };
            self.close(reason.clone());
            return Attempt::GiveUp(reason);
        }
        self.failures += 1;
        Attempt::Try(self.failures)
    }

    /// Whether a new stream's `endpoint` is a new session that needs a
    /// handshake: the endpoint changed (the same one is the session
    /// resumed) and the layer above runs handshakes.
    pub(super) fn is_new_session(&self, endpoint: &Uri) -> bool {
        *endpoint != self.endpoint && self.handshakes
    }

    /// The new stream is usable: POSTs go to `endpoint`, and the attempts
    /// count from zero again. With `new_session` (a reason), only the
    /// handshake's messages until it ends; without, a handshake still
    /// awaited (the same endpoint came back) is still awaited.
    pub(super) fn ready(&mut self, endpoint: Uri, new_session: Option<String>) {
        if let Phase::Closed(_) = self.phase {
            return;
        }
        if new_session.is_some() {
            self.awaiting_handshake = new_session;
        }
        self.phase = Phase::Ready(endpoint.clone());
        self.endpoint = endpoint;
        self.failures = 0;
        self.outage = None;
    }

    /// The connection is closed for good (given up, refused, or by the client).
    pub(super) fn close(&mut self, reason: String) {
        if !matches!(self.phase, Phase::Closed(_)) {
            self.phase = Phase::Closed(reason);
        }
    }

    /// Why the connection closed, once it has.
    pub(super) fn closed_reason(&self) -> Option<&str> {
        match &self.phase {
            Phase::Closed(reason) => Some(reason),
            _ => None,
        }
    }
}

/// Whether a failed reconnection step is worth another attempt: a network
/// error, a timeout, a 5xx, 408 or 429 is; another 4xx, a refused
/// authorization or bad settings are not (the URL or the credentials are
/// wrong, which waiting does not fix).
pub(super) fn retryable(error: &TransportError) -> bool {
    match error.http_status() {
        Some(status) => !(400..500).contains(&status) || matches!(status, 408 | 429),
        None => !matches!(
            error,
            TransportError::Unauthorized { .. } | TransportError::InvalidConfig(_)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How long the tests' streams lived: long enough to be healthy.
    const LIFE: Duration = Duration::from_secs(60);

    fn uri(s: &str) -> Uri {
        s.parse().unwrap()
    }

    /// A connection whose first stream named `endpoint`.
    fn ready_at(endpoint: &str) -> LinkState {
        let mut s = LinkState::new(uri("http://h/sse"));
        assert_eq!(
            s.gate(None, false),
            Gate::Wait,
            "nothing goes out before an endpoint"
        );
        s.ready(uri(endpoint), None);
        s
    }

    #[test]
    fn requests_posted_on_a_stream_fail_when_it_drops_and_later_ones_wait() {
        let mut s = ready_at("http://h/messages?s=1");
        assert_eq!(
            s.gate(Some(&Id::from(1)), false),
            Gate::Post(uri("http://h/messages?s=1"))
        );
        assert_eq!(
            s.gate(Some(&Id::from(2)), false),
            Gate::Post(uri("http://h/messages?s=1"))
        );
        assert_eq!(
            s.gate(None, false),
            Gate::Post(uri("http://h/messages?s=1"))
        );
        assert!(s.answered(&Id::from(2)));
        assert!(!s.answered(&Id::from(2)), "answered once");
        let mut failed = s
            .stream_dropped("the server closed the SSE stream", LIFE)
            .lost;
        failed.sort_by_key(ToString::to_string);
        assert_eq!(failed, vec![Id::from(1)]);
        assert_eq!(s.gate(Some(&Id::from(3)), false), Gate::Wait);
        assert!(!s.post_failed(&Id::from(1)), "already failed by the drop");
        s.ready(uri("http://h/messages?s=2"), None);
        assert_eq!(
            s.gate(Some(&Id::from(3)), false),
            Gate::Post(uri("http://h/messages?s=2"))
        );
        assert!(s.post_failed(&Id::from(3)));
    }

    #[test]
    fn attempts_are_bounded_in_a_row_and_counted_again_after_a_success() {
        let mut s = ready_at("http://h/m?s=1");
        s.stream_dropped("the server closed the SSE stream", LIFE);
        assert_eq!(s.next_attempt(2, "x"), Attempt::Try(1));
        assert_eq!(s.next_attempt(2, "x"), Attempt::Try(2));
        s.ready(uri("http://h/m?s=2"), None);
        s.stream_dropped("the SSE stream broke", LIFE);
        assert_eq!(s.next_attempt(2, "x"), Attempt::Try(1), "reset");
        assert_eq!(s.next_attempt(2, "refused"), Attempt::Try(2));
        let Attempt::GiveUp(reason) = s.next_attempt(2, "connection refused") else {
            panic!("attempts left past the bound");
        };
        assert!(reason.contains("the SSE stream broke"), "{reason}");
        assert!(reason.contains("2 attempts"), "{reason}");
        assert!(reason.contains("connection refused"), "{reason}");
        assert!(reason.contains("max_reconnects"), "{reason}");
        assert_eq!(s.gate(None, false), Gate::Closed(reason.clone()));
        assert_eq!(s.closed_reason(), Some(reason.as_str()));
        // Closed stays closed.
        s.ready(uri("http://h/m?s=3"), None);
        assert!(matches!(s.gate(None, false), Gate::Closed(_)));
        assert!(s.stream_dropped("again", LIFE).lost.is_empty());
    }

    #[test]
    fn no_reconnects_means_closed_at_the_first_drop() {
        let mut s = ready_at("http://h/m");
        s.stream_dropped("the server closed the SSE stream", LIFE);
        let Attempt::GiveUp(reason) = s.next_attempt(0, "-") else {
            panic!()
        };
        assert!(reason.contains("max_reconnects is 0"), "{reason}");
    }

    #[test]
    fn a_new_endpoint_is_a_new_session_and_holds_all_but_the_handshake() {
        let mut s = ready_at("http://h/m?s=1");
        s.stream_dropped("x", LIFE);
        // No handshake was ever sent: a new endpoint needs none.
        assert!(!s.is_new_session(&uri("http://h/m?s=2")));
        s.ready(uri("http://h/m?s=2"), None);
        s.initialize_sent();
        s.initialized_sent();
        s.stream_dropped("x", LIFE);
        // The same endpoint: the same session, resumed.
        assert!(!s.is_new_session(&uri("http://h/m?s=2")));
        assert!(s.is_new_session(&uri("http://h/m?s=3")));
        s.ready(uri("http://h/m?s=3"), Some("a new endpoint".into()));
        // Until the handshake ends, only its messages go out.
        assert_eq!(
            s.gate(Some(&Id::from(7)), false),
            Gate::Expired("a new endpoint".into())
        );
        assert_eq!(s.gate(None, false), Gate::Expired("a new endpoint".into()));
        assert_eq!(
            s.gate(Some(&Id::from(8)), true),
            Gate::Post(uri("http://h/m?s=3"))
        );
        assert!(
            !s.post_failed(&Id::from(7)),
            "a refused request is not in flight"
        );
        assert_eq!(s.gate(None, true), Gate::Post(uri("http://h/m?s=3")));
        s.initialized_sent();
        assert_eq!(
            s.gate(Some(&Id::from(9)), false),
            Gate::Post(uri("http://h/m?s=3"))
        );
        // A drop while waiting for the handshake: the next stream decides again.
        s.ready(uri("http://h/m?s=4"), Some("again".into()));
        s.stream_dropped("x", LIFE);
        assert_eq!(s.gate(None, false), Gate::Wait);
        // The same endpoint came back: its handshake is still awaited.
        s.ready(uri("http://h/m?s=4"), None);
        assert_eq!(s.gate(None, false), Gate::Expired("again".into()));
        s.initialized_sent();
        assert_eq!(s.gate(None, false), Gate::Post(uri("http://h/m?s=4")));
    }

    #[test]
    fn a_stream_that_dies_young_is_reconnected_less_and_less_often() {
        let second = Duration::from_secs(1);
        let zero = Some(Duration::ZERO);
        // A server that sends `retry: 0`, the endpoint, and hangs up:
        // each reconnection succeeds (ready) and its stream dies at once.
        // On a virtual clock, two minutes of it.
        let mut s = ready_at("http://h/m?s=0");
        let (mut now, mut reconnects) = (Duration::ZERO, 0u32);
        let mut waits = Vec::new();
        while now < 120 * second {
            let dropped = s.stream_dropped("the server closed the SSE stream", Duration::ZERO);
            assert!(dropped.young);
            assert_eq!(s.next_attempt(5, "-"), Attempt::Try(1), "never gives up");
            let pace = s.reconnect_wait(zero, second, "s");
            waits.push(pace.wait);
            now += pace.wait;
            reconnects += 1;
            s.ready(uri(&format!("http://h/m?s={reconnects}")), None);
        }
        // The old rule waited the server's 0 ms every time, for ever.
        assert!((5..=12).contains(&reconnects), "{reconnects}: {waits:?}");
        assert_eq!(waits.first(), Some(&crate::backoff::MIN_STREAM_RETRY));
        assert!(waits.windows(2).all(|w| w[1] >= w[0] / 2), "{waits:?}");
        assert!(waits.iter().all(|w| *w <= crate::backoff::MAX_STREAM_WAIT));
        // A stream that lived long enough starts the waits afresh.
        let dropped = s.stream_dropped("the server closed the SSE stream", LIFE);
        assert!(!dropped.young);
        s.next_attempt(5, "-");
        let pace = s.reconnect_wait(zero, second, "s");
        assert_eq!(
            (pace.attempt, pace.wait),
            (1, crate::backoff::MIN_STREAM_RETRY)
        );
    }

    #[test]
    fn only_failures_that_waiting_can_fix_are_retried() {
        let status = |status| TransportError::HttpStatus {
            status,
            url: "GET http://h/sse".into(),
            body: String::new(),
        };
        assert!(retryable(&status(500)) && retryable(&status(503)));
        assert!(retryable(&status(408)) && retryable(&status(429)));
        assert!(!retryable(&status(404)) && !retryable(&status(401)));
        assert!(retryable(&TransportError::Http {
            url: "GET http://h/sse".into(),
            message: "connection refused".into(),
        }));
        assert!(retryable(&TransportError::Timeout {
            what: "x".into(),
            after: std::time::Duration::from_secs(1),
        }));
        assert!(!retryable(&TransportError::Unauthorized {
            url: "u".into(),
            message: "log in".into(),
        }));
    }
}
