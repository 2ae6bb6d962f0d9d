//! Request bookkeeping, free of IO: which requests are in flight, and what to
//! do with a response, a progress notification, or a closed connection.
//!
//! The session's reader task and its callers share one table behind a mutex;
//! every operation here is a few map operations, so the lock is held briefly
//! and never across an await.
//!
//! Deadlines live here too, checked by one timer per session (the reader's)
//! rather than one per request. A tokio timer registered from a thread other
//! than the one parked on the runtime's driver, earlier than anything the
//! driver waits for, wakes that thread (an `eventfd` write and a context
//! switch): a caller on a `block_on` thread, or on another worker, paid that
//! on every request (`bench payload`, which calls `block_on` per call, went
//! from 33–36k to 52–56k calls/s of 100 B when the timer moved here). The table
//! keeps `armed`, the instant the reader's timer is set to. A new request
//! whose deadline is later (the usual case: every request has the same
//! timeout) leaves the timer alone; when it fires, every request past its
//! deadline ends with [`Outcome::Expired`] and the timer moves to the
//! earliest deadline left, or stops when none is. Only a request earlier
//! than `armed`, or the first after an idle spell, asks the reader to move
//! its timer.

use std::collections::HashMap;
use std::task::Waker;
use std::time::Duration;

use mcp_stack_jsonrpc::{ErrorObject, Id, RawJson};
use tokio::sync::oneshot;

use crate::error::{SessionError, TimeoutKind};
use crate::queue;

use mcp_stack_protocol::types::ProgressParams;

/// How a request ended, as the reader saw it.
#[derive(Debug)]
pub(crate) enum Outcome {
    Result(RawJson),
    Error(ErrorObject),
    /// The transport failed this request after sending it.
    Failed(mcp_stack_transport::TransportError),
    /// The answer was over the size limit (this many bytes) and skipped.
    TooLarge(usize),
    /// The connection closed first; the reason is kept by the table.
    Closed,
    /// The request's deadline passed and the table let it go: the caller
    /// reports the timeout and sends the cancellation. With the deadline
    /// as its progress extended it, when it listened for progress (else the
    /// caller's own is the same).
    Expired(Option<Deadline>),
}

#[derive(Debug)]
struct Entry {
    done: oneshot::Sender<Outcome>,
    /// Its deadline: for a request that listens for progress, its
    /// `Listening::deadline`'s, copied here (and kept in step by
    /// `progress`) so that the timer's scan reads no box.
    at: tokio::time::Instant,
    /// Set when it asked for progress: boxed, as few requests do, and the
    /// table's slots (which an idle connection keeps) stay small.
    progress: Option<Box<Listening>>,
}

/// A request that listens for progress.
#[derive(Debug)]
struct Listening {
    /// Where its progress notifications go.
    tx: queue::Sender<ProgressParams>,
    /// Its deadline, which each notification pushes out.
    deadline: Deadline,
}

/// The id of a request this session sends: its counter's next value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestId(pub(crate) i64);

impl RequestId {
    /// As it goes on the wire.
    pub(crate) fn id(self) -> Id {
        Id::from(self.0)
    }

    /// The request an answer's id names, when it can be one of ours: only
    /// an integer the counter could have made.
    fn of(id: &Id) -> Option<i64> {
        id.as_number().and_then(|n| i64::try_from(n).ok())
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The requests in flight.
#[derive(Debug, Default)]
pub(crate) struct PendingTable {
    /// Keyed by the counter's value (8 bytes, where an [`Id`] takes 32: the
    /// table's slots are what an idle connection keeps), with foldhash:
    /// only this client's own ids are inserted (a peer's ids are only
    /// looked up), so SipHash's flooding resistance buys nothing here, and
    /// it was about 1% of a sequential call.
    entries: HashMap<i64, Entry, foldhash::fast::RandomState>,
    /// Set once the connection is gone: new requests fail at once.
    closed: bool,
    /// Responses whose id matched nothing (late answers, a confused server).
    pub(crate) unknown_responses: u64,
    /// When the reader's timer fires (or will, once it has seen the last
    /// [`Inserted::rearm`]): no later than every deadline in the table.
    /// `None`: no timer.
    armed: Option<tokio::time::Instant>,
    /// The reader task's waker, to tell it to move its timer.
    reader: Option<Waker>,
}

/// A request registered.
#[derive(Debug)]
pub(crate) struct Inserted {
    /// Where its outcome comes.
    pub(crate) done: oneshot::Receiver<Outcome>,
    /// Its deadline is earlier than the reader's timer, or there is no
    /// timer: the reader must be told to set it to [`PendingTable::armed`].
    pub(crate) rearm: bool,
}

/// What the reader should do after offering a response to the table.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    Delivered,
    /// No request with that id is waiting (timed out, cancelled, or never sent).
    Unknown,
}

impl PendingTable {
    /// Registers a request that gives up at `deadline`; `None` when the
    /// connection is already closed.
    pub(crate) fn insert(
        &mut self,
        id: RequestId,
        progress: Option<queue::Sender<ProgressParams>>,
        deadline: Deadline,
    ) -> Option<Inserted> {
        if self.closed {
            return None;
        }
        let (done, rx) = oneshot::channel();
        self.entries.insert(
            id.0,
            Entry {
                done,
                at: deadline.at(),
                progress: progress.map(|tx| Box::new(Listening { tx, deadline })),
            },
        );
        let rearm = self.armed.is_none_or(|armed| deadline.at() < armed);
        if rearm {
            self.armed = Some(deadline.at());
        }
        Some(Inserted { done: rx, rearm })
    }

    /// When the reader's timer should fire; `None`: it should not run.
    pub(crate) fn armed(&self) -> Option<tokio::time::Instant> {
        self.armed
    }

    /// Keeps the reader task's waker (set at its first poll).
    pub(crate) fn set_reader(&mut self, waker: Waker) {
        self.reader = Some(waker);
    }

    /// Wakes the reader, to move its timer; before its first poll there is
    /// no waker, and that poll looks anyway.
    pub(crate) fn wake_reader(&self) {
        if let Some(waker) = &self.reader {
            waker.wake_by_ref();
        }
    }

    /// The reader's timer fired at `now`: every request whose deadline has
    /// passed ends with [`Outcome::Expired`]. Returns when the timer fires
    /// next: the earliest deadline left, or `None` when no request waits.
    pub(crate) fn expire(&mut self, now: tokio::time::Instant) -> Option<tokio::time::Instant> {
        let mut next: Option<tokio::time::Instant> = None;
        for (_, entry) in self.entries.extract_if(|_, entry| entry.at <= now) {
            let extended = entry.progress.map(|p| p.deadline);
            // A send fails only when the caller is gone; nothing to do then.
            let _ = entry.done.send(Outcome::Expired(extended));
        }
        for entry in self.entries.values() {
            next = Some(next.map_or(entry.at, |n: tokio::time::Instant| n.min(entry.at)));
        }
        self.armed = next;
        next
    }

    /// Forgets a request (timed out or abandoned by its caller). Returns
    /// whether it was still waiting.
    pub(crate) fn remove(&mut self, id: &Id) -> bool {
        RequestId::of(id).is_some_and(|key| self.entries.remove(&key).is_some())
    }

    /// Hands a response to whoever waits for it.
    pub(crate) fn complete(&mut self, id: &Id, outcome: Outcome) -> Delivery {
        // The caller may have given up between our lookup and now; that is
        // the same as an unknown id.
        let delivered = RequestId::of(id)
            .and_then(|key| self.entries.remove(&key))
            .is_some_and(|entry| entry.done.send(outcome).is_ok());
        match delivered {
            true => Delivery::Delivered,
            false => {
                self.unknown_responses += 1;
                Delivery::Unknown
            }
        }
    }

    /// Routes a progress notification, arrived at `now`, to its request,
    /// whose deadline it pushes out (up to the cap). The token is the
    /// request id (that is how this client makes tokens). Returns whether a
    /// request took it: only one that asked for progress does.
    pub(crate) fn progress(&mut self, params: ProgressParams, now: tokio::time::Instant) -> bool {
        let Ok(id) = serde_json::from_value::<Id>(params.progress_token.clone()) else {
            return false;
        };
        let Some(entry) = RequestId::of(&id).and_then(|key| self.entries.get_mut(&key)) else {
            return false;
        };
        let Some(listening) = entry.progress.as_mut() else {
            return false;
        };
        // A later deadline never needs the timer moved: when it fires early,
        // it finds this one not yet due and waits for it.
        listening.deadline.on_progress(now);
        entry.at = listening.deadline.at();
        listening.tx.send(params)
    }

    /// The connection is gone: every waiting request ends, and new ones fail.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        self.armed = None;
        self.reader = None;
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

    fn now() -> tokio::time::Instant {
        tokio::time::Instant::now()
    }

    /// A deadline a minute away: no test here reaches it.
    fn later() -> Deadline {
        due(now(), Duration::from_secs(60))
    }

    /// A deadline `timeout` after `start`, capped far beyond it.
    fn due(start: tokio::time::Instant, timeout: Duration) -> Deadline {
        Deadline::new(start, timeout, Duration::from_secs(600))
    }

    /// A progress notification for `token`.
    fn progress(token: serde_json::Value) -> ProgressParams {
        ProgressParams {
            progress_token: token,
            progress_value: 1.into(),
            total_value: None,
            message: None,
            extra: Default::default(),
        }
    }

    fn raw(s: &str) -> RawJson {
        RawJson::from_string(s.to_string()).unwrap()
    }

    #[test]
    fn responses_match_by_id_and_unknown_ids_are_counted() {
        let mut t = PendingTable::default();
        let mut a = t.insert(RequestId(1), None, later()).unwrap().done;
        let mut b = t.insert(RequestId(2), None, later()).unwrap().done;
        assert_eq!(
            t.complete(&Id::from("1"), Outcome::Result(raw("0"))),
            Delivery::Unknown,
            "1 and \"1\" are different ids"
        );
        assert_eq!(
            t.complete(&Id::Number(1 << 64 | 1), Outcome::Result(raw("0"))),
            Delivery::Unknown,
            "an integer the counter cannot make is not taken for one it can"
        );
        assert!(a.try_recv().is_err());
        assert_eq!(
            t.complete(&Id::from(2), Outcome::Result(raw("2"))),
            Delivery::Delivered
        );
        assert!(matches!(b.try_recv(), Ok(Outcome::Result(r)) if r.get() == "2"));
        assert_eq!(
            t.complete(&Id::from(9), Outcome::Result(raw("0"))),
            Delivery::Unknown
        );
        assert_eq!(t.unknown_responses, 3);
        assert_eq!(t.in_flight(), 1);
    }

    #[test]
    fn removed_requests_drop_late_answers() {
        let mut t = PendingTable::default();
        let _rx = t.insert(RequestId(5), None, later()).unwrap().done;
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
        drop(t.insert(RequestId(5), None, later()).unwrap().done);
        assert_eq!(
            t.complete(&Id::from(5), Outcome::Result(raw("1"))),
            Delivery::Unknown
        );
    }

    #[test]
    fn close_ends_everything_and_refuses_new_requests() {
        let mut t = PendingTable::default();
        let mut a = t.insert(RequestId(1), None, later()).unwrap().done;
        t.close();
        assert!(matches!(a.try_recv(), Ok(Outcome::Closed)));
        assert!(t.insert(RequestId(2), None, later()).is_none());
        assert!(t.is_closed());
    }

    #[test]
    fn progress_goes_to_the_request_whose_id_is_the_token() {
        let mut t = PendingTable::default();
        let (tx, mut rx) = queue::bounded(4, Default::default());
        let _a = t.insert(RequestId(3), Some(tx), later()).unwrap().done;
        let _b = t.insert(RequestId(4), None, later()).unwrap().done;
        assert!(t.progress(progress(json!(3)), now()));
        assert!(
            !t.progress(progress(json!(4)), now()),
            "request 4 did not ask for progress"
        );
        assert!(
            !t.progress(progress(json!("3")), now()),
            "a string token is another id"
        );
        assert!(!t.progress(progress(json!(1.5)), now()));
        assert_eq!(rx.try_recv().unwrap().progress_token, json!(3));
        assert!(rx.try_recv().is_none());
    }

    #[test]
    fn the_timer_moves_only_for_an_earlier_deadline_or_after_idling() {
        let mut t = PendingTable::default();
        let start = now();
        let s = Duration::from_secs(1);
        assert_eq!(t.armed(), None);
        let a = t.insert(RequestId(1), None, due(start, 10 * s)).unwrap();
        assert!(a.rearm, "no timer yet");
        assert_eq!(t.armed(), Some(start + 10 * s));
        let b = t.insert(RequestId(2), None, due(start, 20 * s)).unwrap();
        assert!(!b.rearm, "a later deadline leaves the timer alone");
        let c = t.insert(RequestId(3), None, due(start, 5 * s)).unwrap();
        assert!(c.rearm, "an earlier one moves it");
        assert_eq!(t.armed(), Some(start + 5 * s));
        // An answered request leaves the timer where it is: when it fires
        // early, it finds nothing due and moves on.
        assert!(t.remove(&Id::from(3)));
        assert_eq!(t.armed(), Some(start + 5 * s));
        assert_eq!(t.expire(start + 5 * s), Some(start + 10 * s));
        assert_eq!(t.in_flight(), 2);
        t.close();
        assert_eq!(t.armed(), None);
    }

    #[test]
    fn expiry_ends_the_requests_due_and_stops_when_none_wait() {
        let mut t = PendingTable::default();
        let start = now();
        let s = Duration::from_secs(1);
        let mut a = t
            .insert(RequestId(1), None, due(start, 10 * s))
            .unwrap()
            .done;
        let mut b = t
            .insert(RequestId(2), None, due(start, 10 * s))
            .unwrap()
            .done;
        let mut c = t
            .insert(RequestId(3), None, due(start, 30 * s))
            .unwrap()
            .done;
        assert_eq!(
            t.expire(start + 9 * s),
            Some(start + 10 * s),
            "none due yet"
        );
        assert!(a.try_recv().is_err());
        assert_eq!(t.expire(start + 10 * s), Some(start + 30 * s));
        for rx in [&mut a, &mut b] {
            assert!(
                matches!(rx.try_recv(), Ok(Outcome::Expired(None))),
                "expired, with no deadline of the table's: the caller's holds"
            );
        }
        assert!(c.try_recv().is_err(), "not due");
        assert_eq!(
            t.complete(&Id::from(1), Outcome::Result(raw("1"))),
            Delivery::Unknown,
            "a late answer to an expired request is unknown"
        );
        assert_eq!(
            t.expire(start + 31 * s),
            None,
            "nothing left: the timer stops"
        );
        assert!(matches!(c.try_recv(), Ok(Outcome::Expired(_))));
        assert_eq!(t.armed(), None);
        let d = t.insert(RequestId(4), None, due(start, 40 * s)).unwrap();
        assert!(
            d.rearm,
            "the first request after the timer stopped starts it"
        );
    }

    #[test]
    fn progress_pushes_the_deadline_the_timer_checks() {
        let mut t = PendingTable::default();
        let start = now();
        let s = Duration::from_secs(1);
        let (tx, _progress) = queue::bounded(4, Default::default());
        let d = Deadline::new(start, 10 * s, 25 * s);
        let mut slow = t.insert(RequestId(1), Some(tx), d).unwrap().done;
        let mut quiet = t.insert(RequestId(2), None, d).unwrap().done;
        assert!(t.progress(progress(json!(1)), start + 8 * s));
        assert!(
            !t.progress(progress(json!(2)), start + 8 * s),
            "asked for none"
        );
        assert_eq!(t.expire(start + 10 * s), Some(start + 18 * s));
        assert!(matches!(quiet.try_recv(), Ok(Outcome::Expired(_))));
        assert!(slow.try_recv().is_err(), "its progress moved it to 18 s");
        // Progress up to the cap, then the cap is what runs out.
        assert!(t.progress(progress(json!(1)), start + 17 * s));
        assert_eq!(t.expire(start + 18 * s), Some(start + 25 * s));
        assert_eq!(t.expire(start + 25 * s), None);
        let Ok(Outcome::Expired(Some(d))) = slow.try_recv() else {
            panic!("expected an expiry with the extended deadline")
        };
        assert_eq!(d.kind(), (TimeoutKind::MaxTotal, 25 * s));
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
