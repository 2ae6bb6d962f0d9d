//! When the server's session ends under a running [`Session`](crate::Session),
//! the handshake is run again once, and the requests it failed wait for it:
//! the shared state of that, without the handshake itself (which is
//! `rehandshake.rs`'s).
//!
//! The reader (on [`Received::SessionExpired`](mcp_stack_transport::Received))
//! and each request the expiry failed ask for a new handshake; the first
//! ask for a round starts it, the others find it running, or done since
//! the request was sent, and only wait. Rounds are counted: a request
//! notes the count before it is sent, and after its failure waits for a
//! round past that count. The transport reports an expiry before it fails
//! any message for it, and the handshake's answer comes through the reader
//! after that report, so the report never starts a second round for one
//! expiry.

use std::sync::OnceLock;

use tokio::sync::watch;

/// Where the rounds stand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Rounds {
    /// Handshakes run again and ended well.
    done: u64,
    /// One is running.
    running: bool,
    /// One failed: the session is closed.
    failed: bool,
}

/// Starts a handshake round (spawns it); installed once the session exists.
pub(crate) type Start = Box<dyn Fn() + Send + Sync>;

/// The re-handshake rounds of one session.
pub(crate) struct Renewal {
    rounds: watch::Sender<Rounds>,
    start: OnceLock<Start>,
}

impl Default for Renewal {
    fn default() -> Self {
        Renewal {
            rounds: watch::Sender::new(Rounds::default()),
            start: OnceLock::new(),
        }
    }
}

impl std::fmt::Debug for Renewal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renewal")
            .field("rounds", &*self.rounds.borrow())
            .field("installed", &self.start.get().is_some())
            .finish()
    }
}

impl Renewal {
    /// Installs what starts a round: a session that runs the handshake
    /// does this once it is connected. Before (and for a session without
    /// handshake) an expiry starts nothing.
    pub(crate) fn install(&self, start: Start) {
        let _ = self.start.set(start);
    }

    /// Whether rounds can start.
    pub(crate) fn installed(&self) -> bool {
        self.start.get().is_some()
    }

    /// The rounds done so far: noted before a request is sent.
    pub(crate) fn done(&self) -> u64 {
        self.rounds.borrow().done
    }

    /// The transport reported that the server's session ended: a round
    /// starts unless one is running.
    pub(crate) fn expired(&self) -> bool {
        self.start_after(self.done())
    }

    /// A message sent after `seen` rounds failed because the server's
    /// session ended: a round starts, unless one is running, one ended
    /// since (the message only needs sending again), or one failed.
    /// Returns whether this call started it.
    pub(crate) fn start_after(&self, seen: u64) -> bool {
        let Some(start) = self.start.get() else {
            return false;
        };
        let mut began = false;
        self.rounds.send_if_modified(|rounds| {
            if rounds.running || rounds.failed || rounds.done != seen {
                return false;
            }
            rounds.running = true;
            began = true;
            true
        });
        if began {
            start();
        }
        began
    }

    /// The running round ended: well (`ok`), or the session is closed.
    pub(crate) fn finished(&self, ok: bool) {
        self.rounds.send_modify(|rounds| {
            rounds.running = false;
            if ok {
                rounds.done += 1;
            } else {
                rounds.failed = true;
            }
        });
    }

    /// Waits for a round past `seen` to end: `true` when one did, `false`
    /// when one failed (the session is closed, with the reason).
    pub(crate) async fn renewed_since(&self, seen: u64) -> bool {
        let mut rounds = self.rounds.subscribe();
        match rounds.wait_for(|r| r.done > seen || r.failed).await {
            Ok(r) => r.done > seen,
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn counting() -> (Renewal, Arc<AtomicUsize>) {
        let renewal = Renewal::default();
        let started = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&started);
        renewal.install(Box::new(move || {
            count.fetch_add(1, Ordering::SeqCst);
        }));
        (renewal, started)
    }

    #[test]
    fn nothing_starts_before_it_is_installed() {
        let renewal = Renewal::default();
        assert!(!renewal.installed());
        assert!(!renewal.expired());
        assert!(!renewal.start_after(0));
    }

    #[test]
    fn one_expiry_starts_one_round_however_many_ask() {
        let (renewal, started) = counting();
        // The report and three failed requests, all sent in round 0.
        assert!(renewal.expired());
        assert!(!renewal.start_after(0));
        assert!(!renewal.start_after(0));
        assert!(!renewal.expired());
        assert_eq!(started.load(Ordering::SeqCst), 1);
        renewal.finished(true);
        assert_eq!(renewal.done(), 1);
        // A late failure of a request sent in round 0: renewed already.
        assert!(!renewal.start_after(0));
        assert_eq!(started.load(Ordering::SeqCst), 1);
        // The next expiry is a new round.
        assert!(renewal.start_after(1));
        assert_eq!(started.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_failed_round_starts_no_other() {
        let (renewal, started) = counting();
        assert!(renewal.expired());
        renewal.finished(false);
        assert!(!renewal.expired());
        assert!(!renewal.start_after(0));
        assert_eq!(started.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn waiters_hear_how_the_round_ended() {
        let (renewal, _) = counting();
        let renewal = Arc::new(renewal);
        renewal.expired();
        let waiter = {
            let renewal = Arc::clone(&renewal);
            tokio::spawn(async move { renewal.renewed_since(0).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        renewal.finished(true);
        assert!(waiter.await.unwrap());
        // Renewed already: no wait.
        assert!(renewal.renewed_since(0).await);
        renewal.start_after(1);
        renewal.finished(false);
        assert!(!renewal.renewed_since(1).await);
    }
}
