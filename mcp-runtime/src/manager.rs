//! The manager: a registry of session runtimes, leases, (re)builds by
//! fingerprint, idle reaping, teardown.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use mcp_config::{Fingerprint, ResolvedConfig, ResolvedServer};
use mcp_session::types::CallToolResult;
use mcp_session::{
    CallOptions, ProtocolMode, ProtocolVersion, Session, SessionConfig, SessionError, ToolCatalog,
};
use serde_json::Value;
use tokio::sync::Notify;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::catalog::{RuntimeCatalog, ServerFailure, ServerTools, StartupStep};
use crate::connector::{Connector, DefaultConnector};
use crate::error::{RuntimeError, describe_duration};
use crate::expiry::{Decision, ExpiryQueue, decide};
use crate::plan::{Had, Step, plan};

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
    /// The most live session runtimes; beyond, `acquire` fails with
    /// [`RuntimeError::TooManySessions`]. Default 10,000.
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
    /// flag and protocol version pin come from each server's config.
    pub session_defaults: SessionConfig,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            idle_ttl: DEFAULT_IDLE_TTL,
            max_sessions: DEFAULT_MAX_SESSIONS,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            retry_initial: DEFAULT_RETRY_INITIAL,
            retry_max: DEFAULT_RETRY_MAX,
            session_defaults: SessionConfig::default(),
        }
    }
}

impl RuntimeOptions {
    /// Sets the idle TTL (zero disables reaping).
    pub fn idle_ttl(mut self, ttl: Duration) -> Self {
        self.idle_ttl = ttl;
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

    fn backoff(&self, attempts: u32) -> Duration {
        let doublings = attempts.saturating_sub(1).min(30);
        self.retry_initial
            .saturating_mul(1u32 << doublings)
            .min(self.retry_max)
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
    /// Tool calls in flight.
    pub in_flight_calls: usize,
    /// Leases held.
    pub leases: usize,
    /// Sessions reclaimed by the idle TTL so far.
    pub reaped_sessions: u64,
    /// Servers connected so far (handshake and tools/list done).
    pub connects: u64,
    /// Requests served from an existing runtime (fingerprint hit).
    pub reuses: u64,
    /// Runtimes built or rebuilt.
    pub builds: u64,
    /// Server starts that failed so far.
    pub failed_starts: u64,
}

#[derive(Debug, Default)]
struct Counters {
    connections: AtomicUsize,
    in_flight: AtomicUsize,
    reaped: AtomicU64,
    connects: AtomicU64,
    builds: AtomicU64,
    failed: AtomicU64,
}

/// Per agent session: what outlives rebuilds of its runtime.
struct Slot {
    id: String,
    generation: u64,
    epoch: Instant,
    leases: AtomicUsize,
    /// Nanoseconds since `epoch` of the last use.
    last_used: AtomicU64,
    /// Held while the runtime is (re)built: one build at a time (single flight).
    build: tokio::sync::Mutex<()>,
}

impl Slot {
    fn touch(&self) {
        let nanos = Instant::now()
            .saturating_duration_since(self.epoch)
            .as_nanos();
        self.last_used
            .store(u64::try_from(nanos).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    fn last_used(&self) -> Instant {
        self.epoch + Duration::from_nanos(self.last_used.load(Ordering::Relaxed))
    }

    fn release(&self) {
        self.touch();
        self.leases.fetch_sub(1, Ordering::Release);
    }
}

/// One server connection of a session runtime.
struct ServerConn {
    server: ResolvedServer,
    session: Session,
    catalog: Arc<ToolCatalog>,
    in_flight: AtomicUsize,
    idle: Notify,
    closed: AtomicBool,
    counters: Arc<Counters>,
}

impl ServerConn {
    fn mark_closed(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            self.counters.connections.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for ServerConn {
    fn drop(&mut self) {
        self.mark_closed();
    }
}

/// Counts a call in flight on a connection and in the manager.
struct CallGuard<'a> {
    conn: &'a ServerConn,
}

impl<'a> CallGuard<'a> {
    fn new(conn: &'a ServerConn) -> Self {
        conn.in_flight.fetch_add(1, Ordering::AcqRel);
        conn.counters.in_flight.fetch_add(1, Ordering::Relaxed);
        CallGuard { conn }
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.conn.counters.in_flight.fetch_sub(1, Ordering::Relaxed);
        if self.conn.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.conn.idle.notify_waiters();
        }
    }
}

/// One agent session's MCP runtime: its connections and tool catalog.
///
/// Reached through a [`RuntimeLease`]. It is a snapshot: a rebuild after a
/// config change makes a new one; a lease taken before keeps the old one
/// (whose replaced servers close once their calls are done).
pub struct SessionRuntime {
    slot: Arc<Slot>,
    fingerprint: Fingerprint,
    servers: BTreeMap<String, Arc<ServerConn>>,
    catalog: Arc<RuntimeCatalog>,
    /// The earliest retry of a failed server, if any failed.
    retry_at: Option<Instant>,
}

impl fmt::Debug for SessionRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionRuntime")
            .field("session", &self.slot.id)
            .field("fingerprint", &self.fingerprint)
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .field("tools", &self.catalog.len())
            .field("failures", &self.catalog.failures().len())
            .finish()
    }
}

impl SessionRuntime {
    /// The agent session id.
    pub fn session_id(&self) -> &str {
        &self.slot.id
    }

    /// The fingerprint of the config this runtime was built from.
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// The tools the agent sees, and the servers that failed to start.
    pub fn catalog(&self) -> &Arc<RuntimeCatalog> {
        &self.catalog
    }

    /// The names of the connected servers, sorted.
    pub fn servers(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// A connected server's session (for its transport's stderr, say).
    pub fn session(&self, server: &str) -> Option<&Session> {
        self.servers.get(server).map(|c| &c.session)
    }

    /// Calls a tool by namespaced name with the server's defaults.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, RuntimeError> {
        self.call_tool_with(name, arguments, CallOptions::default())
            .await
    }

    /// Calls a tool by namespaced name (`SERVER__TOOL`): routed to its
    /// server, bounded by the server's `requestTimeoutMs` (unless `options`
    /// says otherwise), one at a time when the server does not support
    /// parallel calls, with the arguments checked against the tool's schema.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallToolResult, RuntimeError> {
        let unknown = || RuntimeError::UnknownTool {
            name: name.to_owned(),
            known: self.catalog.some_names(20),
            failed: self
                .catalog
                .failures()
                .iter()
                .map(|f| f.server.clone())
                .collect(),
        };
        let tool = self.catalog.get(name).ok_or_else(unknown)?;
        let conn = self.servers.get(tool.server()).ok_or_else(unknown)?;
        let _in_flight = CallGuard::new(conn);
        conn.session
            .call_tool_with(tool.tool_name(), arguments, options)
            .await
            .map_err(|source| RuntimeError::Call {
                server: tool.server().to_owned(),
                source,
            })
    }
}

/// A session's runtime, held in use: while any lease is held the runtime is
/// never reclaimed; dropping the last one starts its idle time.
///
/// Derefs to [`SessionRuntime`]. Cloning takes another lease.
pub struct RuntimeLease {
    runtime: Arc<SessionRuntime>,
}

impl Deref for RuntimeLease {
    type Target = SessionRuntime;
    fn deref(&self) -> &SessionRuntime {
        &self.runtime
    }
}

impl Clone for RuntimeLease {
    fn clone(&self) -> Self {
        // 1 → 2 at least: never the 0 → 1 step the registry guards.
        self.runtime.slot.leases.fetch_add(1, Ordering::AcqRel);
        RuntimeLease {
            runtime: Arc::clone(&self.runtime),
        }
    }
}

impl Drop for RuntimeLease {
    fn drop(&mut self) {
        self.runtime.slot.release();
    }
}

impl fmt::Debug for RuntimeLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RuntimeLease").field(&self.runtime).finish()
    }
}

/// A lease on a slot whose runtime is not ready yet.
struct SlotGuard {
    slot: Option<Arc<Slot>>,
}

impl SlotGuard {
    fn into_lease(mut self, runtime: Arc<SessionRuntime>) -> RuntimeLease {
        // The runtime's slot carries the lease from here on.
        self.slot = None;
        RuntimeLease { runtime }
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            slot.release();
        }
    }
}

struct Entry {
    slot: Arc<Slot>,
    runtime: Option<Arc<SessionRuntime>>,
    scheduled: Option<Instant>,
}

#[derive(Default)]
struct State {
    sessions: HashMap<String, Entry>,
    expiry: ExpiryQueue,
    next_generation: u64,
    /// Requests served from an existing runtime.
    reuses: u64,
}

struct Inner {
    options: RuntimeOptions,
    connector: Arc<dyn Connector>,
    epoch: Instant,
    state: Mutex<State>,
    counters: Arc<Counters>,
    wake: Arc<Notify>,
    reaper: Mutex<Option<JoinHandle<()>>>,
    teardowns: Mutex<JoinSet<()>>,
    /// What the `auto` probe found per server (by fingerprint), so later
    /// connections skip it; forgotten when a connection with it fails.
    eras: Mutex<HashMap<Fingerprint, ProtocolVersion>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Let the reaper see the manager is gone.
        self.wake.notify_one();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Registers, reuses and reclaims the MCP connections of agent sessions.
///
/// One per process is usual ([`RuntimeManager::global`]); tests and
/// embedders can make their own. Cheap to clone (clones share the manager).
/// See the [crate docs](crate) for the rules.
#[derive(Clone)]
pub struct RuntimeManager {
    inner: Arc<Inner>,
}

impl fmt::Debug for RuntimeManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeManager")
            .field("options", &self.inner.options)
            .field("connector", &self.inner.connector)
            .field("stats", &self.stats())
            .finish()
    }
}

static GLOBAL: OnceLock<RuntimeManager> = OnceLock::new();

impl RuntimeManager {
    /// A manager that starts servers with the [`DefaultConnector`].
    pub fn new(options: RuntimeOptions) -> Self {
        Self::with_connector(options, Arc::new(DefaultConnector::new()))
    }

    /// A manager that opens transports with `connector`.
    pub fn with_connector(options: RuntimeOptions, connector: Arc<dyn Connector>) -> Self {
        RuntimeManager {
            inner: Arc::new(Inner {
                options,
                connector,
                epoch: Instant::now(),
                state: Mutex::new(State::default()),
                counters: Arc::new(Counters::default()),
                wake: Arc::new(Notify::new()),
                reaper: Mutex::new(None),
                teardowns: Mutex::new(JoinSet::new()),
                eras: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The process-wide manager, made with default options on first use
    /// (or those given to [`init_global`](Self::init_global) before).
    pub fn global() -> &'static RuntimeManager {
        GLOBAL.get_or_init(|| RuntimeManager::new(RuntimeOptions::default()))
    }

    /// Makes the process-wide manager with these options. Fails (handing
    /// back the existing one) when it was already made.
    pub fn init_global(
        options: RuntimeOptions,
    ) -> Result<&'static RuntimeManager, &'static RuntimeManager> {
        let mut fresh = Some(options);
        let manager = GLOBAL.get_or_init(|| RuntimeManager::new(fresh.take().unwrap_or_default()));
        if fresh.is_none() {
            Ok(manager)
        } else {
            Err(manager)
        }
    }

    /// The options it runs with.
    pub fn options(&self) -> &RuntimeOptions {
        &self.inner.options
    }

    /// The runtime of agent session `session_id` for `config`, under a lease.
    ///
    /// * Same session, same config fingerprint: the existing runtime, with
    ///   no handshake, no process start and no `tools/list`.
    /// * A new session: its servers start concurrently, each bounded by its
    ///   handshake timeout; concurrent requests for it wait for that one
    ///   start (single flight).
    /// * A changed fingerprint: only servers whose own fingerprint changed
    ///   (or that were added) start; removed and changed ones are closed once
    ///   their in-flight calls are done (bounded by the drain timeout).
    /// * A server that fails to start is in the catalog's failures and is
    ///   retried, with backoff, by a later request; the others are not held up.
    pub async fn acquire(
        &self,
        session_id: &str,
        config: &ResolvedConfig,
    ) -> Result<RuntimeLease, RuntimeError> {
        if let Some(lease) = self.try_reuse(session_id, &config.fingerprint) {
            return Ok(lease);
        }
        // Boxed: the warm path's future stays small.
        Box::pin(self.acquire_slow(session_id, config)).await
    }

    /// The warm path: one lock, one hash lookup, one fingerprint comparison.
    fn try_reuse(&self, session_id: &str, fingerprint: &Fingerprint) -> Option<RuntimeLease> {
        let mut guard = lock(&self.inner.state);
        let state = &mut *guard;
        let runtime = state.sessions.get(session_id)?.runtime.as_ref()?;
        if runtime.fingerprint != *fingerprint {
            return None;
        }
        if let Some(at) = runtime.retry_at
            && Instant::now() >= at
        {
            return None;
        }
        runtime.slot.leases.fetch_add(1, Ordering::AcqRel);
        let runtime = Arc::clone(runtime);
        // Counted under the lock already held: no extra atomic on this path.
        state.reuses += 1;
        drop(guard);
        tracing::trace!(session = session_id, "reused MCP runtime");
        Some(RuntimeLease { runtime })
    }

    /// Finds or registers the session's slot and takes a lease on it.
    fn enter(&self, session_id: &str) -> Result<SlotGuard, RuntimeError> {
        let inner = &*self.inner;
        let mut guard = lock(&inner.state);
        let state = &mut *guard;
        if let Some(entry) = state.sessions.get(session_id) {
            entry.slot.leases.fetch_add(1, Ordering::AcqRel);
            return Ok(SlotGuard {
                slot: Some(Arc::clone(&entry.slot)),
            });
        }
        if state.sessions.len() >= inner.options.max_sessions {
            tracing::warn!(
                session = session_id,
                limit = inner.options.max_sessions,
                "MCP session runtime cap reached"
            );
            return Err(RuntimeError::TooManySessions {
                limit: inner.options.max_sessions,
            });
        }
        state.next_generation += 1;
        let generation = state.next_generation;
        let slot = Arc::new(Slot {
            id: session_id.to_owned(),
            generation,
            epoch: inner.epoch,
            leases: AtomicUsize::new(1),
            last_used: AtomicU64::new(0),
            build: tokio::sync::Mutex::new(()),
        });
        slot.touch();
        let scheduled = if inner.options.idle_ttl.is_zero() {
            None
        } else {
            let at = Instant::now() + inner.options.idle_ttl;
            let earliest = state.expiry.next().is_none_or(|next| at < next);
            state.expiry.schedule(at, generation, session_id.to_owned());
            if earliest {
                inner.wake.notify_one();
            }
            Some(at)
        };
        state.sessions.insert(
            session_id.to_owned(),
            Entry {
                slot: Arc::clone(&slot),
                runtime: None,
                scheduled,
            },
        );
        drop(guard);
        self.ensure_reaper();
        Ok(SlotGuard { slot: Some(slot) })
    }

    async fn acquire_slow(
        &self,
        session_id: &str,
        config: &ResolvedConfig,
    ) -> Result<RuntimeLease, RuntimeError> {
        let guard = self.enter(session_id)?;
        let Some(slot) = guard.slot.clone() else {
            return Err(RuntimeError::Disposed {
                session: session_id.to_owned(),
            });
        };
        let _building = slot.build.lock().await;
        let disposed = || RuntimeError::Disposed {
            session: session_id.to_owned(),
        };
        let old = {
            let state = lock(&self.inner.state);
            let entry = state
                .sessions
                .get(session_id)
                .filter(|e| e.slot.generation == slot.generation)
                .ok_or_else(disposed)?;
            match &entry.runtime {
                Some(rt)
                    if rt.fingerprint == config.fingerprint
                        && rt.retry_at.is_none_or(|at| Instant::now() < at) =>
                {
                    // Built by the request we waited for.
                    let rt = Arc::clone(rt);
                    drop(state);
                    lock(&self.inner.state).reuses += 1;
                    return Ok(guard.into_lease(rt));
                }
                other => other.clone(),
            }
        };
        let (runtime, replaced) = self.build(&slot, old.as_deref(), config).await;
        let runtime = Arc::new(runtime);
        let installed = {
            let mut state = lock(&self.inner.state);
            match state
                .sessions
                .get_mut(session_id)
                .filter(|e| e.slot.generation == slot.generation)
            {
                Some(entry) => {
                    entry.runtime = Some(Arc::clone(&runtime));
                    true
                }
                None => false,
            }
        };
        if !installed {
            // Disposed of meanwhile: close what this build holds.
            let conns: Vec<_> = runtime.servers.values().cloned().collect();
            self.spawn_teardowns(conns, "session disposed during start");
            return Err(disposed());
        }
        self.spawn_teardowns(replaced, "config changed");
        Ok(guard.into_lease(runtime))
    }

    /// Builds a runtime for `config`, reusing what `old` has that did not change.
    /// Returns it and the old connections it replaces.
    async fn build(
        &self,
        slot: &Arc<Slot>,
        old: Option<&SessionRuntime>,
        config: &ResolvedConfig,
    ) -> (SessionRuntime, Vec<Arc<ServerConn>>) {
        let now = Instant::now();
        let mut had: BTreeMap<String, Had> = BTreeMap::new();
        if let Some(old) = old {
            for (name, conn) in &old.servers {
                had.insert(name.clone(), Had::Connected(conn.server.fingerprint));
            }
            for f in old.catalog.failures() {
                had.insert(f.server.clone(), Had::Failed(f.fingerprint, f.retry_at));
            }
        }
        let want = config
            .servers
            .iter()
            .map(|(n, s)| (n.clone(), s.fingerprint))
            .collect();
        let plan = plan(&had, &want, now);

        let mut servers = BTreeMap::new();
        let mut failures = Vec::new();
        let mut to_start = Vec::new();
        for (name, step) in &plan.steps {
            let old_conn = old.and_then(|o| o.servers.get(name));
            let old_failure =
                old.and_then(|o| o.catalog.failures().iter().find(|f| &f.server == name));
            match (step, old_conn, old_failure) {
                (Step::Keep, Some(conn), _) => {
                    servers.insert(name.clone(), Arc::clone(conn));
                }
                (Step::KeepFailure, _, Some(f)) => failures.push(f.clone()),
                _ => {
                    if let Some(server) = config.servers.get(name) {
                        let prior = old_failure
                            .filter(|f| f.fingerprint == server.fingerprint)
                            .map_or(0, |f| f.attempts);
                        to_start.push((server, prior));
                    }
                }
            }
        }
        let started = futures_util::future::join_all(
            to_start
                .iter()
                .map(|(server, _)| self.start(&slot.id, server)),
        )
        .await;
        let mut started_names = Vec::new();
        for ((server, prior), result) in to_start.iter().zip(started) {
            match result {
                Ok(conn) => {
                    started_names.push(server.name.as_str());
                    servers.insert(server.name.clone(), conn);
                }
                Err((step, message, stderr_tail)) => {
                    let attempts = prior.saturating_add(1);
                    let retry_after = self.inner.options.backoff(attempts);
                    let failure = ServerFailure {
                        server: server.name.clone(),
                        step,
                        message,
                        stderr_tail,
                        attempts,
                        retry_after,
                        retry_at: Instant::now() + retry_after,
                        fingerprint: server.fingerprint,
                    };
                    self.inner.counters.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(session = %slot.id, "MCP {failure}");
                    failures.push(failure);
                }
            }
        }
        let replaced: Vec<Arc<ServerConn>> = plan
            .teardown
            .iter()
            .filter_map(|n| old.and_then(|o| o.servers.get(n)).cloned())
            .collect();
        let kept = servers.len() - started_names.len();
        tracing::info!(
            session = %slot.id,
            fingerprint = ?config.fingerprint,
            rebuild = old.is_some(),
            kept,
            started = ?started_names,
            stopped = ?plan.teardown,
            failed = failures.len(),
            "built MCP runtime"
        );
        self.inner.counters.builds.fetch_add(1, Ordering::Relaxed);

        let tools: Vec<ServerTools<'_>> = servers
            .values()
            .map(|c: &Arc<ServerConn>| ServerTools {
                server: &c.server.name,
                filter: &c.server.tools,
                tools: c.catalog.iter().collect(),
                diagnostics: c.catalog.diagnostics(),
                protocol: c.session.protocol_version(),
                transport: c.session.transport().kind(),
            })
            .collect();
        let retry_at = failures.iter().map(|f| f.retry_at).min();
        let catalog = Arc::new(RuntimeCatalog::build(&tools, failures));
        drop(tools);
        let runtime = SessionRuntime {
            slot: Arc::clone(slot),
            fingerprint: config.fingerprint,
            servers,
            catalog,
            retry_at,
        };
        (runtime, replaced)
    }

    /// Opens a server's transport (starts its process), within its handshake timeout.
    async fn open(
        &self,
        server: &ResolvedServer,
    ) -> Result<Arc<dyn mcp_transport::Transport>, (StartupStep, String, Vec<String>)> {
        match tokio::time::timeout(
            server.handshake_timeout,
            self.inner.connector.connect(server),
        )
        .await
        {
            Err(_) => Err((
                StartupStep::Connect,
                format!(
                    "the transport did not open within {} (the handshake timeout)",
                    describe_duration(server.handshake_timeout)
                ),
                Vec::new(),
            )),
            Ok(Err(e)) => Err((StartupStep::Connect, e.to_string(), Vec::new())),
            Ok(Ok(t)) => Ok(t),
        }
    }

    /// Starts one server: transport, handshake, tools/list.
    async fn start(
        &self,
        session_id: &str,
        server: &ResolvedServer,
    ) -> Result<Arc<ServerConn>, (StartupStep, String, Vec<String>)> {
        let started = Instant::now();
        let mut config = session_config(&self.inner.options.session_defaults, server)
            .map_err(|m| (StartupStep::Config, m, Vec::new()))?;
        let probing = config.mode == ProtocolMode::Auto;
        let remembered = probing
            .then(|| {
                self.inner
                    .eras
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(&server.fingerprint)
                    .copied()
            })
            .flatten();
        if let Some(version) = remembered {
            // The probe already told us what this server speaks.
            let _ = config.pin_protocol(version.as_str());
        }
        let mut transport = self.open(server).await?;
        let mut connected = Session::connect_shared(Arc::clone(&transport), config.clone()).await;
        if let Err(e) = &connected
            && probing
            && remembered.is_none()
            && e.is_closed()
        {
            // Some legacy servers exit when the first request is not
            // `initialize`: the probe's "no reply" on a transport that is
            // gone. One more process, with the handshake straight away.
            tracing::info!(server = %server.name, "the server closed during the 2026-07-28 probe ({e}); starting it again with the initialize handshake, in case it refuses any other first request");
            detach_stderr(&*transport);
            transport.close().await;
            transport = self.open(server).await?;
            let mut legacy = config;
            legacy.mode = ProtocolMode::Legacy;
            connected = Session::connect_shared(Arc::clone(&transport), legacy).await;
        }
        let session = match connected {
            Ok(s) => {
                if probing {
                    self.inner
                        .eras
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(server.fingerprint, s.protocol_version());
                }
                s
            }
            Err(e) => {
                if remembered.is_some() {
                    // The remembered era may be stale (the server was
                    // upgraded): probe again next time.
                    self.inner
                        .eras
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&server.fingerprint);
                }
                detach_stderr(&*transport);
                transport.close().await;
                let tail = stderr_tail(&*transport);
                return Err((StartupStep::Handshake, handshake_message(&e), tail));
            }
        };
        let catalog = match session.list_tools().await {
            Ok(c) => c,
            Err(e) => {
                detach_stderr(&*transport);
                session.close().await;
                let tail = stderr_tail(&*transport);
                return Err((StartupStep::ListTools, e.to_string(), tail));
            }
        };
        let counters = Arc::clone(&self.inner.counters);
        counters.connections.fetch_add(1, Ordering::Relaxed);
        counters.connects.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            session = session_id,
            server = %server.name,
            transport = %transport.kind(),
            version = %session.protocol_version(),
            tools = catalog.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "connected MCP server"
        );
        Ok(Arc::new(ServerConn {
            server: server.clone(),
            session,
            catalog,
            in_flight: AtomicUsize::new(0),
            idle: Notify::new(),
            closed: AtomicBool::new(false),
            counters,
        }))
    }

    fn spawn_teardowns(&self, conns: Vec<Arc<ServerConn>>, why: &'static str) {
        if conns.is_empty() {
            return;
        }
        let drain = self.inner.options.drain_timeout;
        let mut set = lock(&self.inner.teardowns);
        while set.try_join_next().is_some() {}
        for conn in conns {
            set.spawn(teardown(conn, drain, why));
        }
    }

    /// Ends a session: removes its runtime and closes its servers (waiting
    /// for in-flight calls up to the drain timeout). Returns whether it had one.
    pub async fn dispose_session(&self, session_id: &str) -> bool {
        let entry = {
            let mut guard = lock(&self.inner.state);
            let state = &mut *guard;
            let entry = state.sessions.remove(session_id);
            if let Some(Entry {
                slot,
                scheduled: Some(at),
                ..
            }) = &entry
            {
                state.expiry.remove(*at, slot.generation);
            }
            entry
        };
        let Some(entry) = entry else { return false };
        tracing::info!(session = session_id, "disposed of MCP runtime");
        let conns = entry
            .runtime
            .map(|r| r.servers.values().cloned().collect())
            .unwrap_or_default();
        self.close_all(conns, "session disposed").await;
        true
    }

    /// Ends every session and waits for every teardown: for shutdown.
    pub async fn dispose_all(&self) {
        let entries: Vec<Entry> = {
            let mut guard = lock(&self.inner.state);
            let state = &mut *guard;
            state.expiry.clear();
            state.sessions.drain().map(|(_, e)| e).collect()
        };
        if !entries.is_empty() {
            tracing::info!(sessions = entries.len(), "disposing of every MCP runtime");
        }
        let conns = entries
            .into_iter()
            .filter_map(|e| e.runtime)
            .flat_map(|r| r.servers.values().cloned().collect::<Vec<_>>())
            .collect();
        self.close_all(conns, "manager shutting down").await;
        let mut pending = std::mem::take(&mut *lock(&self.inner.teardowns));
        while pending.join_next().await.is_some() {}
    }

    async fn close_all(&self, conns: Vec<Arc<ServerConn>>, why: &'static str) {
        let drain = self.inner.options.drain_timeout;
        futures_util::future::join_all(conns.into_iter().map(|c| teardown(c, drain, why))).await;
    }

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
    fn collect_expired(&self, now: Instant) -> Vec<(String, Vec<Arc<ServerConn>>)> {
        let ttl = self.inner.options.idle_ttl;
        let mut out = Vec::new();
        if ttl.is_zero() {
            return out;
        }
        let mut guard = lock(&self.inner.state);
        let state = &mut *guard;
        while let Some((_, generation, id)) = state.expiry.pop_due(now) {
            let Some(entry) = state.sessions.get_mut(&id) else {
                continue;
            };
            if entry.slot.generation != generation {
                continue;
            }
            let in_use = entry.slot.leases.load(Ordering::Acquire) > 0;
            match decide(now, ttl, in_use, entry.slot.last_used()) {
                Decision::Reap => {
                    if let Some(e) = state.sessions.remove(&id) {
                        self.inner.counters.reaped.fetch_add(1, Ordering::Relaxed);
                        let conns = e
                            .runtime
                            .map(|r| r.servers.values().cloned().collect())
                            .unwrap_or_default();
                        out.push((id, conns));
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

    fn ensure_reaper(&self) {
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

    /// A snapshot of what the manager holds and has done.
    pub fn stats(&self) -> RuntimeStats {
        let c = &self.inner.counters;
        let (sessions, leases, reuses) = {
            let state = lock(&self.inner.state);
            let leases = state
                .sessions
                .values()
                .map(|e| e.slot.leases.load(Ordering::Relaxed))
                .sum();
            (state.sessions.len(), leases, state.reuses)
        };
        RuntimeStats {
            sessions,
            connections: c.connections.load(Ordering::Relaxed),
            in_flight_calls: c.in_flight.load(Ordering::Relaxed),
            leases,
            reaped_sessions: c.reaped.load(Ordering::Relaxed),
            connects: c.connects.load(Ordering::Relaxed),
            reuses,
            builds: c.builds.load(Ordering::Relaxed),
            failed_starts: c.failed.load(Ordering::Relaxed),
        }
    }
}

/// Sleeps until the earliest expiry (or a new earlier one), reaps, repeats.
/// Holds the manager only while reaping; ends when the manager is gone.
async fn reaper_loop(weak: Weak<Inner>, wake: Arc<Notify>) {
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
        for (session, conns) in manager.collect_expired(Instant::now()) {
            tracing::info!(session = %session, servers = conns.len(), "reaping idle MCP runtime");
            manager.spawn_teardowns(conns, "idle TTL");
        }
    }
}

/// Waits for the connection's in-flight calls (up to `drain`), detaches its
/// stderr listener and closes it with the transport's close sequence.
async fn teardown(conn: Arc<ServerConn>, drain: Duration, why: &'static str) {
    let deadline = Instant::now() + drain;
    loop {
        let idle = conn.idle.notified();
        tokio::pin!(idle);
        idle.as_mut().enable();
        let busy = conn.in_flight.load(Ordering::Acquire);
        if busy == 0 {
            break;
        }
        if tokio::time::timeout_at(deadline, idle).await.is_err() {
            tracing::warn!(
                server = %conn.server.name,
                in_flight = busy,
                "closing MCP server with calls still in flight after {}",
                describe_duration(drain)
            );
            break;
        }
    }
    detach_stderr(&**conn.session.transport());
    conn.session.close().await;
    conn.mark_closed();
    tracing::debug!(server = %conn.server.name, why, "closed MCP server");
}

/// The session settings for one server.
fn session_config(
    defaults: &SessionConfig,
    server: &ResolvedServer,
) -> Result<SessionConfig, String> {
    let mut c = defaults.clone();
    c.server_name = server.name.clone();
    c.request_timeout = server.request_timeout;
    c.handshake_timeout = server.handshake_timeout;
    c.supports_parallel_tool_calls = server.supports_parallel_tool_calls;
    if let Some(pin) = &server.protocol_version {
        c.pin_protocol(pin).map_err(|_| {
            let known: Vec<&str> = ProtocolVersion::ALL.iter().map(|v| v.as_str()).collect();
            format!(
                "the config pins protocol {pin}, which this client does not know (it speaks \
                 {}, or the modes legacy, modern, auto); remove the pin or choose one of those",
                known.join(", ")
            )
        })?;
    }
    Ok(c)
}

/// A handshake error, with the seed's troubleshooting hints.
fn handshake_message(e: &SessionError) -> String {
    let mut m = e.to_string();
    if e.is_timeout() {
        m.push_str(
            "; the server may be slow to start, or it writes logs to stdout, which corrupts \
             the protocol stream (servers must log to stderr)",
        );
    } else if e.transport_error().and_then(|t| t.exit_info()).is_some() {
        m.push_str(
            "; the server exited during startup: a missing environment variable or a bad \
             argument? its stderr says more",
        );
    }
    m
}

/// Stops handing a stdio server's stderr to the log (no-op for other transports).
fn detach_stderr(transport: &dyn mcp_transport::Transport) {
    if let Some(process) = transport.process() {
        process.detach_stderr();
    }
}

/// The last lines a stdio server wrote to stderr (none for other transports).
fn stderr_tail(transport: &dyn mcp_transport::Transport) -> Vec<String> {
    transport
        .process()
        .map(|p| p.stderr_tail())
        .unwrap_or_default()
}
