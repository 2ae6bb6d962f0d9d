//! Waiting before trying again: exponential, capped, and jittered, so that
//! a fleet of clients that lost the same server does not come back in step.
//! No IO; the randomness comes from the standard library's per-process
//! random hash keys, so no RNG crate is needed.

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
/// use mcp_transport::backoff::delay;
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
