//! The runtime's settings and the figures it reports.

use std::time::Duration;

use mcp_stack_session::SessionConfig;

use crate::clock::IdleClock;
use crate::persist::CatalogCache;

/// The default idle TTL: 10 minutes.
pub const DEFAULT_IDLE_TTL: Duration = Duration::from_secs(600);
/// The default cap on live session runtimes.
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;
/// The default bound on waiting for in-flight calls before closing a server.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// The default first wait before retrying a server that failed to start.
pub const DEFAULT_RETRY_INITIAL: Duration = Duration::from_secs(1);
/// The default longest wait between retries.
pub const DEFAULT_RETRY_MAX: Duration = Duration::from_secs(300);

/// How a manager behaves. `Default` gives the documented defaults.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RuntimeOptions {
    /// A session runtime unused this long is reclaimed. Default 10 minutes;
    /// zero disables reaping.
    pub idle_ttl: Duration,
    /// Which clock measures idleness: the coarse one by default (never
    /// early, at most a few milliseconds late, a fraction of the cost on the
    /// warm path); [`IdleClock::Exact`] to follow tokio's paused test time.
    pub idle_clock: IdleClock,
    /// The most live session runtimes; beyond, `acquire` fails with
    /// [`RuntimeError::TooManySessions`](crate::RuntimeError::TooManySessions). Default 10,000.
    pub max_sessions: usize,
    /// How long the teardown of a replaced or reclaimed server waits for its
    /// in-flight calls before closing it anyway. Default 30 s.
    pub drain_timeout: Duration,
    /// The wait before the first retry of a server that failed to start;
    /// doubled per failure. Default 1 s.
    pub retry_initial: Duration,
    /// The longest wait between retries. Default 5 minutes.
    pub retry_max: Duration,
    /// Session settings every connection starts from (client info,
    /// capabilities, handlers). The server name, timeouts, parallel-calls
    /// flag and protocol version pin come from each server's config; the
    /// handler is replaced by a session's own when it has some
    /// ([`acquire_with_handlers`](crate::RuntimeManager::acquire_with_handlers));
    /// the notification listener is called, and the runtime then watches
    /// for `list_changed`.
    pub session_defaults: SessionConfig,
    /// The persisted catalog and the tool pins (`None`, the default: no
    /// files; see [`CatalogCache`]).
    pub catalog_cache: Option<CatalogCache>,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            idle_ttl: DEFAULT_IDLE_TTL,
            idle_clock: IdleClock::Coarse,
            max_sessions: DEFAULT_MAX_SESSIONS,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            retry_initial: DEFAULT_RETRY_INITIAL,
            retry_max: DEFAULT_RETRY_MAX,
            session_defaults: SessionConfig::default(),
            catalog_cache: None,
        }
    }
}

impl RuntimeOptions {
    /// Sets the idle TTL (zero disables reaping).
    pub fn idle_ttl(mut self, ttl: Duration) -> Self {
        self.idle_ttl = ttl;
        self
    }

    /// Sets the clock idleness is measured with (see [`IdleClock`]).
    pub fn idle_clock(mut self, clock: IdleClock) -> Self {
        self.idle_clock = clock;
        self
    }

    /// Sets the cap on live session runtimes.
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max;
        self
    }

    /// Sets the bound on waiting for in-flight calls at teardown.
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }

    /// Sets the retry backoff of servers that fail to start.
    pub fn retry_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.retry_initial = initial;
        self.retry_max = max;
        self
    }

    /// Persists the catalog and pins tool definitions in `cache` (see
    /// [`CatalogCache`]).
    pub fn catalog_cache(mut self, cache: CatalogCache) -> Self {
        self.catalog_cache = Some(cache);
        self
    }

    /// The wait before retrying `server` after `attempts` failed starts:
    /// doubling from `retry_initial` up to `retry_max`, jittered down to
    /// between half and all of that, so that many agents that lost the same
    /// server do not start it again in step.
    pub(crate) fn backoff(&self, attempts: u32, server: &str) -> Duration {
        mcp_stack_transport::backoff::delay(attempts, self.retry_initial, self.retry_max, server)
    }
}

/// A snapshot of what a manager holds and has done.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuntimeStats {
    /// Live session runtimes.
    pub sessions: usize,
    /// Open server connections.
    pub connections: usize,
    /// Requests in flight: tool calls, resource reads, prompts, completions.
    pub in_flight_calls: usize,
    /// Leases held, counting a build or catalog refresh in progress as one.
    pub leases: usize,
    /// Sessions reclaimed by the idle TTL so far.
    pub reaped_sessions: u64,
    /// Passes the background reaper made so far (each time something was
    /// due, reaped or found used again): lets a test wait for the reaper to
    /// have looked before it asserts what it left.
    pub reaper_passes: u64,
    /// Servers connected so far (handshake and tools/list done).
    pub connects: u64,
    /// Requests served from an existing runtime (fingerprint hit).
    pub reuses: u64,
    /// Runtimes built or rebuilt.
    pub builds: u64,
    /// Server starts that failed so far.
    pub failed_starts: u64,
}
