//! Idle TTL reaping: the background task and what it reclaims.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::expiry::{Decision, decide};

use crate::lease::ServerConn;
use crate::lease::lock;
use crate::manager::{Inner, RuntimeManager, State};

impl RuntimeManager {
    /// Reclaims every session idle for the TTL now, closing their servers,
    /// and returns how many. The background reaper does this on its own;
    /// this is for embedders that drive reaping themselves.
    pub async fn reap_expired(&self) -> usize {
        let conns = self.collect_expired(Instant::now());
        let n = conns.len();
        for (session, conns) in conns {
            tracing::info!(session = %session, "reaping idle MCP runtime");
            self.close_all(conns, "idle TTL").await;
        }
        n
    }

    /// Takes the expired sessions out of the registry (IO-free).
    pub(crate) fn collect_expired(&self, now: Instant) -> Vec<(String, Vec<Arc<ServerConn>>)> {
        self.expired_in(&mut lock(&self.inner.state), now)
    }

    /// The background reaper's pass: the expired sessions' teardowns are
    /// started before the registry's lock is let go. `dispose_all` drains
    /// the registry under that lock and then waits for every teardown
    /// started; were the teardowns started after the lock, it could run
    /// between the two and return with those servers still open (the
    /// runtime's stress test caught it on a loaded machine).
    fn reap_in_background(&self, now: Instant) {
        let mut state = lock(&self.inner.state);
        for (session, conns) in self.expired_in(&mut state, now) {
            tracing::info!(session = %session, servers = conns.len(), "reaping idle MCP runtime");
            self.spawn_teardowns(conns, "idle TTL");
        }
    }

    fn expired_in(&self, state: &mut State, now: Instant) -> Vec<(String, Vec<Arc<ServerConn>>)> {
        let ttl = self.inner.options.idle_ttl;
        let mut out = Vec::new();
        if ttl.is_zero() {
            return out;
        }
        while let Some((_, generation, id)) = state.expiry.pop_due(now) {
            let Some(entry) = state.sessions.get_mut(&id) else {
                continue;
            };
            if entry.slot.generation != generation {
                continue;
            }
            let (leases, last_used) = entry.usage();
            let last_used = self.inner.clock.instant(last_used);
            match decide(now, ttl, leases > 0, last_used) {
                Decision::Reap => {
                    if let Some(e) = state.sessions.remove(&id) {
                        self.inner.counters.reaped.fetch_add(1, Ordering::Relaxed);
                        out.push((id, e.into_conns()));
                    }
                }
                Decision::Recheck(at) => {
                    entry.scheduled = Some(at);
                    state.expiry.schedule(at, generation, id);
                }
            }
        }
        out
    }

    pub(crate) fn ensure_reaper(&self) {
        if self.inner.options.idle_ttl.is_zero() {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut reaper = lock(&self.inner.reaper);
        if reaper.as_ref().is_none_or(JoinHandle::is_finished) {
            let weak = Arc::downgrade(&self.inner);
            let wake = Arc::clone(&self.inner.wake);
            *reaper = Some(handle.spawn(reaper_loop(weak, wake)));
        }
    }
}

/// Sleeps until the earliest expiry (or a new earlier one), reaps, repeats.
/// Holds the manager only while reaping; ends when the manager is gone.
pub(crate) async fn reaper_loop(weak: Weak<Inner>, wake: Arc<Notify>) {
    loop {
        let next = match weak.upgrade() {
            Some(inner) => lock(&inner.state).expiry.next(),
            None => return,
        };
        match next {
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
        let Some(inner) = weak.upgrade() else { return };
        let manager = RuntimeManager { inner };
        manager.reap_in_background(Instant::now());
        manager
            .inner
            .counters
            .reaper_passes
            .fetch_add(1, Ordering::Relaxed);
    }
}
