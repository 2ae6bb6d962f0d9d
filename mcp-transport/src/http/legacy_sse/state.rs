//! The decisions of a legacy HTTP+SSE connection, without IO: where a POST
//! may go (or whether it waits for a reconnection), which requests a dropped
//! stream takes with it, how many reconnection attempts are left, how long
//! to wait before each, and what a new endpoint replays. The async code in
//! the parent module drives these.

use std::collections::HashSet;
use std::time::Duration;

use bytes::Bytes;
use hyper::Uri;
use mcp_jsonrpc::{Id, Message, Request};

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

/// What a new stream's endpoint asks for before POSTs may go out.
#[derive(Debug)]
pub(super) struct Replay {
    /// The recorded `initialize`, with a fresh id of the transport's own
    /// (its answer is not handed on).
    pub(super) initialize: Request,
    /// The recorded `notifications/initialized`, to post after the answer.
    pub(super) initialized: Option<Bytes>,
    /// The protocol version the session negotiated, when the layer above
    /// named it: the replayed handshake must settle on the same one.
    pub(super) version: Option<String>,
}

/// The state of one legacy SSE connection across its streams.
#[derive(Debug)]
pub(super) struct LinkState {
    phase: Phase,
    /// The endpoint of the last stream that had one.
    endpoint: Uri,
    /// Requests posted on the current stream whose answers have not come.
    in_flight: HashSet<Id>,
    /// The `initialize` request the layer above sent, to replay.
    init: Option<Request>,
    /// The `notifications/initialized` it sent, to replay too.
    initialized: Option<Bytes>,
    /// The revision named with `notifications/initialized`.
    version: Option<String>,
    /// Failed reconnection attempts in a row.
    failures: u32,
    /// Why the current outage began.
    outage: Option<String>,
    /// Replays so far (numbers the fresh ids).
    replays: u64,
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
            init: None,
            initialized: None,
            version: None,
            failures: 0,
            outage: None,
            replays: 0,
            pacing: StreamPacing::default(),
        }
    }

    /// The endpoint POSTs go to (the last one known while reconnecting).
    pub(super) fn endpoint(&self) -> &Uri {
        &self.endpoint
    }

    /// A message is to be posted; a request (`id`) counts as in flight on
    /// the current stream from now on, so a drop fails it.
    pub(super) fn gate(&mut self, id: Option<&Id>) -> Gate {
        match &self.phase {
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

    /// The layer above sent `initialize`: kept for replay; a new handshake
    /// forgets the old `initialized` and version.
    pub(super) fn initialize_sent(&mut self, request: Request) {
        self.init = Some(request);
        self.initialized = None;
        self.version = None;
    }

    /// The layer above sent `notifications/initialized` (naming `version`).
    pub(super) fn initialized_sent(&mut self, body: Bytes, version: Option<&str>) {
        self.initialized = Some(body);
        self.version = version.map(str::to_owned);
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

    /// A new stream named `endpoint`: the handshake to replay before POSTs
    /// go out, when there is one and the endpoint changed (a new endpoint is
    /// a new session on the server; the same one, the session resumed).
    pub(super) fn endpoint_found(&mut self, endpoint: &Uri) -> Option<Replay> {
        if *endpoint == self.endpoint {
            return None;
        }
        let init = self.init.as_ref()?;
        self.replays += 1;
        let mut initialize = init.clone();
        initialize.id = Id::from(format!("mcp-transport-reinitialize-{}", self.replays));
        Some(Replay {
            initialize,
            initialized: self.initialized.clone(),
            version: self.version.clone(),
        })
    }

    /// The new stream is usable: POSTs go to `endpoint`, and the attempts
    /// count from zero again.
    pub(super) fn ready(&mut self, endpoint: Uri) {
        if let Phase::Closed(_) = self.phase {
            return;
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

/// Checks the answer to a replayed `initialize`: a success naming the
/// protocol version the session negotiated (when known). The error says
/// what the server did instead.
pub(super) fn check_replay(answer: &Message, version: Option<&str>) -> Result<(), String> {
    #[derive(serde::Deserialize)]
    struct Answer {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    let result = match answer {
        Message::Response(response) => &response.result,
        Message::Error(error) => {
            return Err(format!(
                "the server refused the replayed initialize: {}",
                error.error
            ));
        }
        _ => return Err("the answer to the replayed initialize is not a response".into()),
    };
    let answer: Answer = serde_json::from_str(result.get()).map_err(|e| {
        format!("the answer to the replayed initialize is not an initialize result: {e}")
    })?;
    match version {
        Some(version) if version != answer.protocol_version => Err(format!(
            "the new session speaks protocol version {}, not the {version} this session \
             negotiated",
            answer.protocol_version
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_jsonrpc::{ErrorObject, ErrorResponse, Response};

    /// How long the tests' streams lived: long enough to be healthy.
    const LIFE: Duration = Duration::from_secs(60);

    fn uri(s: &str) -> Uri {
        s.parse().unwrap()
    }

    /// A connection whose first stream named `endpoint`.
    fn ready_at(endpoint: &str) -> LinkState {
        let mut s = LinkState::new(uri("http://h/sse"));
        assert_eq!(
            s.gate(None),
            Gate::Wait,
            "nothing goes out before an endpoint"
        );
        s.ready(uri(endpoint));
        s
    }

    fn init() -> Request {
        Request::new(0, "initialize", None)
    }

    #[test]
    fn requests_posted_on_a_stream_fail_when_it_drops_and_later_ones_wait() {
        let mut s = ready_at("http://h/messages?s=1");
        assert_eq!(
            s.gate(Some(&Id::from(1))),
            Gate::Post(uri("http://h/messages?s=1"))
        );
        assert_eq!(
            s.gate(Some(&Id::from(2))),
            Gate::Post(uri("http://h/messages?s=1"))
        );
        assert_eq!(s.gate(None), Gate::Post(uri("http://h/messages?s=1")));
        assert!(s.answered(&Id::from(2)));
        assert!(!s.answered(&Id::from(2)), "answered once");
        let mut failed = s
            .stream_dropped("the server closed the SSE stream", LIFE)
            .lost;
        failed.sort_by_key(ToString::to_string);
        assert_eq!(failed, vec![Id::from(1)]);
        assert_eq!(s.gate(Some(&Id::from(3))), Gate::Wait);
        assert!(!s.post_failed(&Id::from(1)), "already failed by the drop");
        s.ready(uri("http://h/messages?s=2"));
        assert_eq!(
            s.gate(Some(&Id::from(3))),
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
        s.ready(uri("http://h/m?s=2"));
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
        assert_eq!(s.gate(None), Gate::Closed(reason.clone()));
        assert_eq!(s.closed_reason(), Some(reason.as_str()));
        // Closed stays closed.
        s.ready(uri("http://h/m?s=3"));
        assert!(matches!(s.gate(None), Gate::Closed(_)));
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
    fn a_new_endpoint_replays_the_handshake_with_a_fresh_id() {
        let mut s = ready_at("http://h/m?s=1");
        s.stream_dropped("x", LIFE);
        // Nothing was sent yet: nothing to replay.
        assert!(s.endpoint_found(&uri("http://h/m?s=2")).is_none());
        s.ready(uri("http://h/m?s=2"));
        s.initialize_sent(init());
        s.initialized_sent(Bytes::from_static(b"initialized"), Some("2024-11-05"));
        s.stream_dropped("x", LIFE);
        // The same endpoint: the same session, resumed.
        assert!(s.endpoint_found(&uri("http://h/m?s=2")).is_none());
        let replay = s.endpoint_found(&uri("http://h/m?s=3")).unwrap();
        assert_eq!(replay.initialize.method, "initialize");
        assert_ne!(replay.initialize.id, Id::from(0));
        assert_eq!(replay.initialized.as_deref(), Some(&b"initialized"[..]));
        assert_eq!(replay.version.as_deref(), Some("2024-11-05"));
        let again = s.endpoint_found(&uri("http://h/m?s=4")).unwrap();
        assert_ne!(again.initialize.id, replay.initialize.id, "fresh each time");
        // A new handshake forgets the old notification and version.
        s.initialize_sent(init());
        let replay = s.endpoint_found(&uri("http://h/m?s=5")).unwrap();
        assert!(replay.initialized.is_none() && replay.version.is_none());
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
            s.ready(uri(&format!("http://h/m?s={reconnects}")));
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

    #[test]
    fn a_replayed_initialize_must_succeed_with_the_same_version() {
        let ok = |v: &str| {
            let raw = serde_json::value::RawValue::from_string(format!(
                r#"{{"protocolVersion":"{v}","capabilities":{{}},"serverInfo":{{"name":"s","version":"1"}}}}"#
            ))
            .unwrap();
            Message::from(Response::new("r", raw))
        };
        assert!(check_replay(&ok("2024-11-05"), Some("2024-11-05")).is_ok());
        assert!(check_replay(&ok("2024-11-05"), None).is_ok());
        let err = check_replay(&ok("2025-06-18"), Some("2024-11-05")).unwrap_err();
        assert!(
            err.contains("2025-06-18") && err.contains("2024-11-05"),
            "{err}"
        );
        let refused = Message::from(ErrorResponse::new(
            Some(Id::from("r")),
            ErrorObject::new(-32600, "no"),
        ));
        assert!(
            check_replay(&refused, None)
                .unwrap_err()
                .contains("refused")
        );
        let raw = serde_json::value::RawValue::from_string("{}".into()).unwrap();
        assert!(check_replay(&Message::from(Response::new("r", raw)), None).is_err());
    }
}
