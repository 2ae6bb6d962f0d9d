//! The idle clock: when a session was last used. Every lease release records
//! the time, so on the warm path (acquire, call, drop the lease) the clock
//! read is a large share of the cost: an exact read (`CLOCK_MONOTONIC`) is
//! about 29 ns on a typical VM, a coarse one about 7.

use std::time::Duration;

use tokio::time::Instant;

/// Which clock measures how long a session has been idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum IdleClock {
    /// The operating system's coarse monotonic clock (on Linux,
    /// `CLOCK_MONOTONIC_COARSE`, which advances once per kernel tick, a few
    /// milliseconds): a fraction of the cost of an exact read. Each reading
    /// is rounded up by two ticks, so a session is never reclaimed before
    /// its idle TTL has passed, and at most a few milliseconds after. Where
    /// no coarse clock is known, the exact one. The default.
    #[default]
    Coarse,
    /// tokio's clock: exact, and it follows tokio's paused test time
    /// (`tokio::time::pause`, `advance`), which the coarse clock does not.
    /// Tests that advance time to check idle reaping need this one.
    Exact,
}

/// A clock and its epoch: the last use is kept as nanoseconds since the
/// epoch in an atomic, and read back as an `Instant` of tokio's clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamp {
    epoch: Instant,
    coarse: Option<CoarseEpoch>,
}

#[derive(Debug, Clone, Copy)]
struct CoarseEpoch {
    /// The coarse clock's reading at the epoch, taken just before the exact
    /// one: it lags by at least as much as any later reading's lag.
    at_epoch: u64,
    /// Added to every reading: two ticks, more than any reading's lag.
    round_up: u64,
}

impl Stamp {
    pub(crate) fn new(clock: IdleClock) -> Self {
        let coarse = match clock {
            IdleClock::Coarse => coarse::now().zip(coarse::resolution()),
            IdleClock::Exact => None,
        };
        Stamp {
            epoch: Instant::now(),
            coarse: coarse.map(|(at_epoch, tick)| CoarseEpoch {
                at_epoch,
                round_up: tick.saturating_mul(2),
            }),
        }
    }

    /// Now, as nanoseconds since the epoch: never earlier than the exact
    /// time.
    pub(crate) fn now(&self) -> u64 {
        if let Some(c) = self.coarse
            && let Some(now) = coarse::now()
        {
            return now.saturating_sub(c.at_epoch).saturating_add(c.round_up);
        }
        let nanos = Instant::now()
            .saturating_duration_since(self.epoch)
            .as_nanos();
        u64::try_from(nanos).unwrap_or(u64::MAX)
    }

    /// A reading of [`now`](Self::now) as an instant of tokio's clock.
    pub(crate) fn instant(&self, nanos: u64) -> Instant {
        self.epoch + Duration::from_nanos(nanos)
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod coarse {
    /// `CLOCK_MONOTONIC_COARSE` in nanoseconds (the same timeline as
    /// `CLOCK_MONOTONIC`, which `Instant` reads, at tick granularity).
    pub(super) fn now() -> Option<u64> {
        read(|ts| {
            // SAFETY: `ts` is a valid, writable timespec for the call.
            #[allow(unsafe_code)]
            unsafe {
                libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, ts)
            }
        })
    }

    /// The coarse clock's tick, in nanoseconds.
    pub(super) fn resolution() -> Option<u64> {
        read(|ts| {
            // SAFETY: `ts` is a valid, writable timespec for the call.
            #[allow(unsafe_code)]
            unsafe {
                libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, ts)
            }
        })
    }

    fn read(call: impl FnOnce(&mut libc::timespec) -> libc::c_int) -> Option<u64> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        if call(&mut ts) != 0 {
            return None;
        }
        let secs = u64::try_from(ts.tv_sec).ok()?;
        let nanos = u64::try_from(ts.tv_nsec).ok()?;
        secs.checked_mul(1_000_000_000)?.checked_add(nanos)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod coarse {
    pub(super) fn now() -> Option<u64> {
        None
    }

    pub(super) fn resolution() -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_is_never_earlier_than_the_exact_time() {
        for clock in [IdleClock::Coarse, IdleClock::Exact] {
            let stamp = Stamp::new(clock);
            for _ in 0..1000 {
                let before = Instant::now();
                let read = stamp.instant(stamp.now());
                assert!(read >= before, "{clock:?}: {read:?} < {before:?}");
                // Rounded up by two ticks at most (a tick is at most 10 ms
                // on common kernels); a generous bound, not a timing claim.
                assert!(read < before + Duration::from_secs(1), "{clock:?}");
            }
        }
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn the_coarse_clock_is_used_where_there_is_one() {
        assert!(Stamp::new(IdleClock::Coarse).coarse.is_some());
        assert!(Stamp::new(IdleClock::Exact).coarse.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn the_exact_clock_follows_paused_time() {
        let stamp = Stamp::new(IdleClock::Exact);
        let before = stamp.now();
        tokio::time::advance(Duration::from_secs(60)).await;
        assert!(stamp.now() - before >= 60_000_000_000);
    }
}
