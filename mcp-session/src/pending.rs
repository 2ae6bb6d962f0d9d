//! Request bookkeeping, free of IO: which requests are in flight, and what to
//! do with a response, a progress notification, or a closed connection.
//!
//! The session's reader task and its callers share one table behind a mutex;
//! every operation here is a few map operations, so the lock is held briefly
//! and never across an await.

use std::collections::HashMap;
use std::time::Duration;

use mcp_jsonrpc::{ErrorObject, Id, RawJson};
use tokio::sync::oneshot;

use crate::error::{SessionError, TimeoutKind};
use crate::queue;

use mcp_protocol::types::ProgressParams;

/// How a request ended, as the reader saw it.
#[derive(Debug)]
pub(crate) enum Outcome {
    Result(RawJson),
    Error(ErrorObject),
    /// The transport failed this request after sending it.
    Failed(mcp_transport::TransportError),
    /// The answer was over the size limit (this many bytes) and skipped.
    TooLarge(usize),
    /// The connection closed first; the reason is kept by the table.
    Closed,
}

#[derive(Debug)]
struct Entry {
    done: oneshot::Sender<Outcome>,
    /// Where progress notifications for this request go, when it asked for them.
    progress: Option<queue::Sender<ProgressParams>>,
}

/// The requests in flight.
#[derive(Debug, Default)]
pub(crate) struct PendingTable {
    /// Keyed with foldhash: only this client's own ids are inserted (a
    /// peer's ids are only looked up), so SipHash's flooding resistance buys
    /// nothing here, and it was about 1% of a sequential call.
    entries: HashMap<Id, Entry, foldhash::fast::RandomState>,
    /// Set once the connection is gone: new requests fail at once.
    closed: bool,
    /// Responses whose id matched nothing (late answers, a confused server).
    pub(crate) unknown_responses: u64,
}

/// What the reader should do after offering a response to the table.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    Delivered,
    /// No request with that id is waiting (timed out, cancelled, or never sent).
    Unknown,
}

impl PendingTable {
    /// Registers a request; `None` when the connection is already closed.
    pub(crate) fn insert(
        &mut self,
        id: Id,
        progress: Option<queue::Sender<ProgressParams>>,
    ) -> Option<oneshot::Receiver<Outcome>> {
        if self.closed {
            return None;
        }
        let (done, rx) = oneshot::channel();
        self.entries.insert(id, Entry { done, progress });
        Some(rx)
    }

    /// Forgets a request (timed out or abandoned by its caller). Returns
    /// whether it was still waiting.
    pub(crate) fn remove(&mut self, id: &Id) -> bool {
        self.entries.remove(id).is_some()
    }

    /// Hands a response to whoever waits for it.
    pub(crate) fn complete(&mut self, id: &Id, outcome: Outcome) -> Delivery {
        // The caller may have given up between our lookup and now; that is
        // the same as an unknown id.
        let delivered = self
            .entries
            .remove(id)
            .is_some_and(|entry| entry.done.send(outcome).is_ok());
        match delivered {
            true => Delivery::Delivered,
            false => {
                self.unknown_responses += 1;
                Delivery::Unknown
            }
        }
    }

    /// Routes a progress notification to its request. The token is the
    /// request id (that is how this client makes tokens). Returns whether a
    /// request took it.
    pub(crate) fn progress(&mut self, params: ProgressParams) -> bool {
        let Ok(id) = serde_json::from_value::<Id>(params.progress_token.clone()) else {
            return false;
        };
        match self.entries.get(&id).and_then(|e| e.progress.as_ref()) {
            Some(tx) => tx.send(params),
            None => false,
        }
    }

    /// The connection is gone: every waiting request ends, and new ones fail.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        for (_, entry) in self.entries.drain() {
            let _ = entry.done.send(Outcome::Closed);
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.entries.len()
    }
}

/// When a request gives up, given its own timeout, progress, and a cap.
///
/// Each progress notification restarts the per-request timeout, but never
/// past `max_total` from the start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    timeout: Duration,
    start: tokio::time::Instant,
    hard: tokio::time::Instant,
    current: tokio::time::Instant,
    /// Progress would have pushed the deadline past the cap: when it comes,
    /// the cap is what ran out.
    capped: bool,
}

impl Deadline {
    pub(crate) fn new(start: tokio::time::Instant, timeout: Duration, max_total: Duration) -> Self {
        let hard = start + max_total.max(timeout);
        Deadline {
            timeout,
            start,
            hard,
            current: start + timeout,
            capped: false,
        }
    }

    pub(crate) fn at(&self) -> tokio::time::Instant {
        self.current
    }

    /// Progress arrived at `now`: push the deadline out, up to the cap.
    pub(crate) fn on_progress(&mut self, now: tokio::time::Instant) {
        let wanted = now + self.timeout;
        self.capped |= wanted > self.hard;
        self.current = wanted.min(self.hard).max(self.current);
    }

    /// Which timeout the deadline is, and its bound: the per-request
    /// timeout, or the cap once progress ran into it.
    pub(crate) fn kind(&self) -> (TimeoutKind, Duration) {
        if self.capped {
            (
                TimeoutKind::MaxTotal,
                self.hard.saturating_duration_since(self.start),
            )
        } else {
            (TimeoutKind::Request, self.timeout)
        }
    }

    /// The error of a request of `method` whose deadline passed at `now`.
    pub(crate) fn expired(&self, method: &str, now: tokio::time::Instant) -> SessionError {
        let (kind, bound) = self.kind();
        SessionError::timeout(method, kind, bound, self.elapsed(now))
    }

    /// How long the request has waited at `now`.
    pub(crate) fn elapsed(&self, now: tokio::time::Instant) -> Duration {
        now.saturating_duration_since(self.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(s: &str) -> RawJson {
        serde_json::value::RawValue::from_string(s.to_string()).unwrap()
    }

    #[test]
    fn responses_match_by_id_and_unknown_ids_are_counted() {
        let mut t = PendingTable::default();
        let mut a = t.insert(Id::from(1), None).unwrap();
        let mut b = t.insert(Id::from("1"), None).unwrap();
        assert_eq!(
            t.complete(&Id::from("1"), Outcome::Result(raw("2"))),
            Delivery::Delivered
        );
        assert!(a.try_recv().is_err(), "1 and \"1\" are different ids");
        assert!(matches!(b.try_recv(), Ok(Outcome::Result(r)) if r.get() == "2"));
        assert_eq!(
            t.complete(&Id::from(9), Outcome::Result(raw("0"))),
            Delivery::Unknown
        );
        assert_eq!(t.unknown_responses, 1);
        assert_eq!(t.in_flight(), 1);
    }

    #[test]
    fn removed_requests_drop_late_answers() {
        let mut t = PendingTable::default();
        let _rx = t.insert(Id::from(5), None).unwrap();
        assert!(t.remove(&Id::from(5)));
        assert_eq!(
            t.complete(&Id::from(5), Outcome::Result(raw("1"))),
            Delivery::Unknown
        );
        assert_eq!(t.unknown_responses, 1);
    }

    #[test]
    fn abandoned_receiver_counts_as_unknown() {
        let mut t = PendingTable::default();
        drop(t.insert(Id::from(5), None).unwrap());
        assert_eq!(
            t.complete(&Id::from(5), Outcome::Result(raw("1"))),
            Delivery::Unknown
        );
    }

    #[test]
    fn close_ends_everything_and_refuses_new_requests() {
        let mut t = PendingTable::default();
        let mut a = t.insert(Id::from(1), None).unwrap();
        t.close();
        assert!(matches!(a.try_recv(), Ok(Outcome::Closed)));
        assert!(t.insert(Id::from(2), None).is_none());
        assert!(t.is_closed());
    }

    #[test]
    fn progress_goes_to_the_request_whose_id_is_the_token() {
        let mut t = PendingTable::default();
        let (tx, mut rx) = queue::bounded(4, Default::default());
        let _a = t.insert(Id::from(3), Some(tx)).unwrap();
        let _b = t.insert(Id::from(4), None).unwrap();
        let p = |token| ProgressParams {
            progress_token: token,
            progress_value: 1.into(),
            total_value: None,
            message: None,
            extra: Default::default(),
        };
        assert!(t.progress(p(json!(3))));
        assert!(
            !t.progress(p(json!(4))),
            "request 4 did not ask for progress"
        );
        assert!(!t.progress(p(json!("3"))), "a string token is another id");
        assert!(!t.progress(p(json!(1.5))));
        assert_eq!(rx.try_recv().unwrap().progress_token, json!(3));
        assert!(rx.try_recv().is_none());
    }

    #[test]
    fn progress_extends_the_deadline_up_to_the_cap() {
        let start = tokio::time::Instant::now();
        let s = Duration::from_secs(1);
        let mut d = Deadline::new(start, 10 * s, 25 * s);
        assert_eq!(d.at(), start + 10 * s);
        assert_eq!(d.kind(), (TimeoutKind::Request, 10 * s));
        d.on_progress(start + 8 * s);
        assert_eq!(d.at(), start + 18 * s);
        assert_eq!(d.kind(), (TimeoutKind::Request, 10 * s), "not capped yet");
        d.on_progress(start + 20 * s);
        assert_eq!(d.at(), start + 25 * s, "capped at max_total");
        assert_eq!(d.kind(), (TimeoutKind::MaxTotal, 25 * s), "the cap fires");
        d.on_progress(start + 2 * s);
        assert_eq!(d.at(), start + 25 * s, "never moves back");
        assert_eq!(d.elapsed(start + 3 * s), 3 * s);
    }

    #[test]
    fn a_timeout_longer_than_the_cap_is_the_request_timeout() {
        let start = tokio::time::Instant::now();
        let s = Duration::from_secs(1);
        // The cap never cuts a request short of its own timeout.
        let d = Deadline::new(start, 30 * s, 20 * s);
        assert_eq!(d.at(), start + 30 * s);
        assert_eq!(d.kind(), (TimeoutKind::Request, 30 * s));
        let e = d.expired("tools/call", start + 30 * s);
        assert_eq!(e.timeout_kind(), Some(TimeoutKind::Request));
        assert!(
            e.to_string()
                .contains("raise SessionConfig::request_timeout"),
            "{e}"
        );
    }
}
