//! The idle-TTL bookkeeping, with no IO and time passed in.
//!
//! Each live session has at most one entry in the queue, at a time no later
//! than it can expire. Use does not touch the queue (it only records the
//! time, see [`decide`]); when an entry comes due, the session is either
//! reaped or its entry is put back at its real expiry. So the work per tick
//! is proportional to the entries that come due, not to the sessions.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

/// Due times of sessions, keyed by (time, generation); the value is the session id.
#[derive(Debug, Default)]
pub(crate) struct ExpiryQueue {
    entries: BTreeMap<(Instant, u64), String>,
}

impl ExpiryQueue {
    pub(crate) fn schedule(&mut self, at: Instant, generation: u64, session: String) {
        self.entries.insert((at, generation), session);
    }

    pub(crate) fn remove(&mut self, at: Instant, generation: u64) {
        self.entries.remove(&(at, generation));
    }

    /// The earliest due time.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.entries.keys().next().map(|k| k.0)
    }

    /// Takes the earliest entry if it is due at `now`.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(Instant, u64, String)> {
        let entry = self.entries.first_entry()?;
        if entry.key().0 > now {
            return None;
        }
        let ((at, generation), session) = entry.remove_entry();
        Some((at, generation, session))
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

/// What to do with a session whose entry came due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Idle for the whole TTL: reclaim it.
    Reap,
    /// In use, or used since: look again at this time.
    Recheck(Instant),
}

/// Decides for a due session: `in_use` (a lease held, a call in flight) is
/// never reaped; otherwise it expires `ttl` after `last_used`.
pub(crate) fn decide(now: Instant, ttl: Duration, in_use: bool, last_used: Instant) -> Decision {
    if in_use {
        return Decision::Recheck(now + ttl);
    }
    let expires = last_used + ttl;
    if expires <= now {
        Decision::Reap
    } else {
        Decision::Recheck(expires)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(600);

    #[test]
    fn pops_only_what_is_due_in_order() {
        let t0 = Instant::now();
        let mut q = ExpiryQueue::default();
        q.schedule(t0 + Duration::from_secs(3), 1, "c".into());
        q.schedule(t0 + Duration::from_secs(1), 2, "a".into());
        q.schedule(t0 + Duration::from_secs(2), 3, "b".into());
        assert_eq!(q.next(), Some(t0 + Duration::from_secs(1)));
        let now = t0 + Duration::from_secs(2);
        let due: Vec<String> = std::iter::from_fn(|| q.pop_due(now)).map(|e| e.2).collect();
        assert_eq!(due, ["a", "b"]);
        assert_eq!(q.len(), 1);
        q.remove(t0 + Duration::from_secs(3), 1);
        assert_eq!(q.next(), None);
    }

    #[test]
    fn same_time_different_generations_coexist() {
        let t0 = Instant::now();
        let mut q = ExpiryQueue::default();
        q.schedule(t0, 1, "a".into());
        q.schedule(t0, 2, "a".into());
        assert_eq!(q.len(), 2);
        q.clear();
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn decisions() {
        let t0 = Instant::now();
        // Idle the whole TTL.
        assert_eq!(decide(t0 + TTL, TTL, false, t0), Decision::Reap);
        // Used one minute in: expires one minute later.
        let used = t0 + Duration::from_secs(60);
        assert_eq!(
            decide(t0 + TTL, TTL, false, used),
            Decision::Recheck(used + TTL)
        );
        // In use: never reaped, looked at again a TTL later.
        assert_eq!(
            decide(t0 + TTL * 5, TTL, true, t0),
            Decision::Recheck(t0 + TTL * 6)
        );
    }
}
