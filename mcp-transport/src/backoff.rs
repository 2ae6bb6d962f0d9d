//! Waiting before trying again: exponential, capped, and jittered, so that
//! a fleet of clients that lost the same server does not come back in step.
//! No IO; the randomness comes from the standard library's per-process
//! random hash keys, so no RNG crate is needed.
//!
//! The long-lived event streams (streamable HTTP's GET stream, the legacy
//! SSE stream) are paced on top of that: a server's `retry` is honoured
//! but never below [`MIN_STREAM_RETRY`], and a stream that dies before
//! [`HEALTHY_STREAM_LIFE`] does not reset the backoff, so a server that
//! answers and hangs up at once is reconnected less and less often, down to
//! once per [`MAX_STREAM_WAIT`] at most, instead of once a second for ever.

use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;
use std::time::Duration;

/// The wait before attempt `attempt` (1 for the first retry): `initial`
/// doubled for each earlier attempt, at most `max`, then jittered down to
/// between half and all of that ("equal jitter"). `salt` (a server name, an
/// address) spreads clients that retry the same attempt at the same moment.
///
/// ```
/// use std::time::Duration;
/// use mcp_stack_transport::backoff::delay;
/// let (initial, max) = (Duration::from_millis(100), Duration::from_secs(5));
/// let third = delay(3, initial, max, "server-a");
/// assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
/// assert!(delay(40, initial, max, "server-a") <= max);
/// ```
pub fn delay(attempt: u32, initial: Duration, max: Duration, salt: &str) -> Duration {
    let doublings = attempt.saturating_sub(1).min(30);
    let ceiling = initial.saturating_mul(1u32 << doublings).min(max);
    let half = ceiling / 2;
    let spread = u64::try_from((ceiling - half).as_nanos()).unwrap_or(u64::MAX);
    if spread == 0 {
        return ceiling;
    }
    let random = keys().hash_one((salt, attempt, now_nanos()));
    half + Duration::from_nanos(random % (spread + 1))
}

/// The least wait before a long-lived event stream (streamable HTTP's GET
/// stream, the legacy SSE stream) is opened again, whatever `retry` the
/// server sent: 1 s. The spec leaves `retry` to the server and a client
/// must wait at least that long; a floor only makes the wait longer. One
/// second is what these streams lose nothing by (they carry what the
/// server sends on its own, not answers a caller waits for; our own default
/// is the same second) while a `retry: 0` no longer buys a server a
/// reconnection loop as fast as the network goes. A request's own stream,
/// resumed at most `max_reconnects` times per request, keeps the server's
/// `retry` as it is.
pub const MIN_STREAM_RETRY: Duration = Duration::from_secs(1);

/// How long a long-lived event stream must have been open for its end to
/// count as an ordinary drop, which starts the backoff afresh: 10 s. A
/// stream that ends sooner does not reset it (the next wait is longer
/// than the last, up to [`MAX_STREAM_WAIT`]): a server that accepts each
/// stream and drops it at once is so reconnected less and less often. Ten
/// seconds is far below how long a working stream stays open (minutes; the
/// proxies that cut idle streams do so after 30 s or more) and ten times the
/// [`MIN_STREAM_RETRY`] floor.
pub const HEALTHY_STREAM_LIFE: Duration = Duration::from_secs(10);

/// The longest wait between two attempts to open a long-lived event
/// stream again: 30 s.
pub const MAX_STREAM_WAIT: Duration = Duration::from_secs(30);

/// The pacing of one long-lived event stream's reconnections, without IO:
/// attempts since a stream last lived [`HEALTHY_STREAM_LIFE`] (failed
/// attempts and young streams alike), which set the backoff.
#[cfg(feature = "http")]
#[derive(Debug, Default)]
pub(crate) struct StreamPacing {
    attempts: u32,
}

/// One wait chosen by [`StreamPacing`], with what the trace says of it.
#[cfg(feature = "http")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pace {
    /// How long to wait before the attempt.
    pub(crate) wait: Duration,
    /// The attempt's number since a stream last lived
    /// [`HEALTHY_STREAM_LIFE`] (1 for the first).
    pub(crate) attempt: u32,
    /// The server's `retry`, when it sent one.
    pub(crate) asked: Option<Duration>,
}

#[cfg(feature = "http")]
impl StreamPacing {
    /// A stream that was open for `lived` ended. One that lived
    /// [`HEALTHY_STREAM_LIFE`] starts the backoff afresh; a younger one
    /// does not. Returns whether it was young.
    pub(crate) fn ended(&mut self, lived: Duration) -> bool {
        let young = lived < HEALTHY_STREAM_LIFE;
        if !young {
            self.attempts = 0;
        }
        young
    }

    /// The wait before the next attempt to open the stream: the server's
    /// `retry` (at least [`MIN_STREAM_RETRY`]) for the first attempt since
    /// a healthy stream, else the larger of that and the backoff from
    /// `default_retry`, doubling per attempt up to [`MAX_STREAM_WAIT`],
    /// jittered (`salt` spreads clients, see [`delay`]).
    pub(crate) fn next(
        &mut self,
        retry: Option<Duration>,
        default_retry: Duration,
        salt: &str,
    ) -> Pace {
        self.attempts = self.attempts.saturating_add(1);
        let attempt = self.attempts;
        let backoff = || delay(attempt, default_retry, MAX_STREAM_WAIT, salt);
        let wait = match retry.map(|r| r.max(MIN_STREAM_RETRY)) {
            None => backoff(),
            Some(retry) if attempt <= 1 => retry,
            Some(retry) => retry.max(backoff()),
        };
        Pace {
            wait,
            attempt,
            asked: retry,
        }
    }
}

#[cfg(feature = "http")]
impl Pace {
    /// The wait in words, for the trace: how long, which attempt, and why
    /// (the server's `retry`, the floor under it, the cap of the backoff).
    pub(crate) fn describe(&self) -> String {
        let mut out = format!("in {} ms (attempt {}", self.wait.as_millis(), self.attempt);
        if self.attempt > 1 {
            out.push_str(&format!(
                " since a stream last lived {} s: backoff up to {} s",
                HEALTHY_STREAM_LIFE.as_secs(),
                MAX_STREAM_WAIT.as_secs()
            ));
        }
        if let Some(asked) = self.asked {
            out.push_str(&format!("; the server's retry: {} ms", asked.as_millis()));
            if asked < MIN_STREAM_RETRY {
                out.push_str(&format!(
                    ", raised to the {} ms floor",
                    MIN_STREAM_RETRY.as_millis()
                ));
            }
        }
        out.push(')');
        out
    }

    /// A `tracing` event for this wait, with its parts as fields.
    pub(crate) fn trace(&self, server: &str, stream: &'static str, lived: Option<Duration>) {
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        tracing::info!(
            server,
            stream,
            attempt = self.attempt,
            wait_ms = millis(self.wait),
            retry_ms = self.asked.map(millis),
            retry_floor_ms = millis(MIN_STREAM_RETRY),
            backoff_cap_ms = millis(MAX_STREAM_WAIT),
            lived_ms = lived.map(millis),
            "reopening a dropped event stream {}",
            self.describe()
        );
    }
}

/// This process's random hash keys.
fn keys() -> &'static RandomState {
    static KEYS: OnceLock<RandomState> = OnceLock::new();
    KEYS.get_or_init(RandomState::new)
}

/// A value that differs between calls, to vary the jitter within a process.
fn now_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_doubles_up_to_the_cap_and_stays_within_half_and_all_of_it() {
        let (initial, max) = (Duration::from_millis(100), Duration::from_secs(2));
        for attempt in 1..40 {
            let ceiling = (initial * 2u32.pow(attempt.min(20) - 1)).min(max);
            for _ in 0..20 {
                let d = delay(attempt, initial, max, "s");
                assert!(
                    d >= ceiling / 2 && d <= ceiling,
                    "{attempt}: {d:?} vs {ceiling:?}"
                );
            }
        }
        assert_eq!(delay(1, Duration::ZERO, max, "s"), Duration::ZERO);
    }

    #[cfg(feature = "http")]
    #[test]
    fn a_retry_below_the_floor_is_raised_and_young_streams_keep_backing_off() {
        let second = Duration::from_secs(1);
        let mut p = StreamPacing::default();
        // The first attempt takes the server's retry, at least the floor.
        let first = p.next(Some(Duration::ZERO), second, "s");
        assert_eq!((first.wait, first.attempt), (MIN_STREAM_RETRY, 1));
        assert!(first.describe().contains("raised to the 1000 ms floor"));
        // A stream that died young: the next wait is the backoff's.
        assert!(p.ended(Duration::from_millis(3)));
        let second_try = p.next(Some(Duration::ZERO), second, "s");
        assert_eq!(second_try.attempt, 2);
        assert!(second_try.wait >= second && second_try.wait <= 2 * second);
        // A long retry wins over a short backoff.
        let mut q = StreamPacing::default();
        assert_eq!(q.next(Some(5 * second), second, "s").wait, 5 * second);
        assert!(q.ended(Duration::ZERO));
        assert_eq!(q.next(Some(5 * second), second, "s").wait, 5 * second);
        // Many young ends: the cap holds.
        for _ in 0..40 {
            p.ended(Duration::ZERO);
            assert!(p.next(None, second, "s").wait <= MAX_STREAM_WAIT);
        }
        // A healthy stream starts afresh.
        assert!(!p.ended(HEALTHY_STREAM_LIFE));
        let fresh = p.next(None, second, "s");
        assert_eq!(fresh.attempt, 1);
        assert!(fresh.wait <= second);
        assert!(!fresh.describe().contains("backoff"));
    }

    #[test]
    fn clients_do_not_retry_in_step() {
        let (initial, max) = (Duration::from_secs(1), Duration::from_secs(60));
        let waits: std::collections::BTreeSet<Duration> = (0..50)
            .map(|i| delay(5, initial, max, &format!("client-{i}")))
            .collect();
        // 50 clients at the same attempt: spread over the window, not one instant.
        assert!(waits.len() > 40, "{waits:?}");
    }
}
