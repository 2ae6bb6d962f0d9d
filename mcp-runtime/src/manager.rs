//! The registry: sessions to runtimes, reuse by fingerprint, disposal, stats.

use crate::clock::Stamp;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use mcp_stack_config::{Fingerprint, ResolvedConfig};
use mcp_stack_session::{ClientHandler, ProtocolVersion};
use tokio::sync::Notify;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::connector::{Connector, DefaultConnector};
use crate::error::RuntimeError;
use crate::expiry::ExpiryQueue;

use crate::build::{Builder, Built, Handlers, Refresh, assemble, teardown};
use crate::lease::{
    Counters, Offline, OfflineState, RuntimeLease, ServerConn, SessionRuntime, Slot, SlotGuard,
    leases_on, lock, same_handlers,
};
use crate::options::{RuntimeOptions, RuntimeStats};
use crate::persist::Persist;

pub(crate) struct Entry {
    pub(crate) slot: Arc<Slot>,
    pub(crate) runtime: Option<Installed>,
    /// Runtimes replaced while leases on them were still held: they keep
    /// the session in use until those leases are dropped.
    pub(crate) retired: Vec<Arc<SessionRuntime>>,
    pub(crate) scheduled: Option<Instant>,
}

impl Entry {
    pub(crate) fn new(slot: Arc<Slot>, scheduled: Option<Instant>) -> Self {
        Entry {
            slot,
            runtime: None,
            retired: Vec::new(),
            scheduled,
        }
    }

    /// The session's current runtime, once one is built.
    pub(crate) fn current(&self) -> Option<&Arc<SessionRuntime>> {
        self.runtime.as_ref().map(|i| &i.runtime)
    }

    /// Makes `runtime` the session's current one; the one it replaces is
    /// kept (as retired) while leases on it are held.
    pub(crate) fn install(&mut self, runtime: Arc<SessionRuntime>) {
        if let Some(old) = self.runtime.replace(Installed::new(runtime)) {
            self.retired.push(old.runtime);
        }
        self.prune();
    }

    /// Lets go of the retired runtimes no lease holds any more, folding
    /// their last use into the slot's.
    fn prune(&mut self) {
        let slot = &self.slot;
        self.retired.retain(|r| {
            let held = leases_on(r) > 0;
            if !held {
                slot.last_used
                    .fetch_max(r.last_used.load(Ordering::Relaxed), Ordering::Relaxed);
            }
            held
        });
    }

    /// The session's leases and guards, and its last use (a reading of the
    /// idle clock). Call under the registry's lock.
    pub(crate) fn usage(&mut self) -> (usize, u64) {
        self.prune();
        let mut held = self.slot.guards.load(Ordering::Acquire);
        let mut last = self.slot.last_used.load(Ordering::Relaxed);
        for r in self.current().into_iter().chain(&self.retired) {
            held += leases_on(r);
            last = last.max(r.last_used.load(Ordering::Relaxed));
        }
        (held, last)
    }

    /// The connections of the session's current runtime: a retired one's
    /// servers are the current one's, or already being closed.
    pub(crate) fn into_conns(self) -> Vec<Arc<ServerConn>> {
        self.current()
            .map(|r| r.servers.values().cloned().collect())
            .unwrap_or_default()
    }
}

/// The session's current runtime, with what the warm path compares kept
/// beside it in the registry's table: checking them then reads no memory
/// of the runtime's own (at 1,000 sessions and more, each such read is
/// likely a cache miss).
pub(crate) struct Installed {
    pub(crate) runtime: Arc<SessionRuntime>,
    fingerprint: Fingerprint,
    retry_at: Option<Instant>,
}

impl Installed {
    pub(crate) fn new(runtime: Arc<SessionRuntime>) -> Self {
        Installed {
            fingerprint: runtime.fingerprint,
            retry_at: runtime.retry_at,
            runtime,
        }
    }

    /// Whether a request for `fingerprint` at `now` may reuse it: the same
    /// configuration, and no failed server due for a retry.
    pub(crate) fn serves(&self, fingerprint: &Fingerprint, now: impl FnOnce() -> Instant) -> bool {
        self.fingerprint == *fingerprint && self.retry_at.is_none_or(|at| now() < at)
    }
}

#[derive(Default)]
pub(crate) struct State {
    /// Keyed with foldhash: the warm path hashes a session id on every
    /// `acquire`, and SipHash was a third of its cost.
    pub(crate) sessions: HashMap<String, Entry, foldhash::fast::RandomState>,
    pub(crate) expiry: ExpiryQueue,
    pub(crate) next_generation: u64,
    /// Requests served from an existing runtime.
    pub(crate) reuses: u64,
}

pub(crate) struct Inner {
    pub(crate) options: RuntimeOptions,
    pub(crate) connector: Arc<dyn Connector>,
    /// The idle clock every slot records its last use with.
    pub(crate) clock: Stamp,
    pub(crate) state: Mutex<State>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) wake: Arc<Notify>,
    pub(crate) reaper: Mutex<Option<JoinHandle<()>>>,
    pub(crate) teardowns: Mutex<JoinSet<()>>,
    /// What the `auto` probe found per server (by fingerprint), so later
    /// connections skip it; forgotten when a connection with it fails.
    pub(crate) eras: Mutex<HashMap<Fingerprint, ProtocolVersion>>,
    /// The persisted catalog and pins (`RuntimeOptions::catalog_cache`),
    /// when its folder could be opened.
    pub(crate) persist: Option<Arc<Persist>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Let the reaper see the manager is gone.
        self.wake.notify_one();
    }
}

impl Refresh for Inner {
    fn refresh(self: Arc<Self>, slot: Arc<Slot>) -> mcp_stack_transport::BoxFuture<'static, ()> {
        Box::pin(async move {
            RuntimeManager { inner: self }
                .refresh_slot(&slot, false)
                .await;
        })
    }
}

/// A catalog read from the persisted cache alone
/// ([`RuntimeManager::persisted_catalog`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct PersistedCatalog {
    /// The catalog (its tools marked [`Connecting`](crate::ToolStatus::Connecting):
    /// nothing is connected).
    pub catalog: crate::catalog::RuntimeCatalog,
    /// The age of the oldest server's lists.
    pub age: std::time::Duration,
    /// Whether every server's lists are still fresh.
    pub fresh: bool,
}

/// Registers, reuses and reclaims the MCP connections of agent sessions.
///
/// One per process is usual ([`RuntimeManager::global`]); tests and
/// embedders can make their own. Cheap to clone (clones share the manager).
/// See the [crate docs](crate) for the rules.
#[derive(Clone)]
pub struct RuntimeManager {
    pub(crate) inner: Arc<Inner>,
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

pub(crate) static GLOBAL: OnceLock<RuntimeManager> = OnceLock::new();

impl RuntimeManager {
    /// A manager that starts servers with the [`DefaultConnector`].
    pub fn new(options: RuntimeOptions) -> Self {
        Self::with_connector(options, Arc::new(DefaultConnector::new()))
    }

    /// A manager that opens transports with `connector`.
    pub fn with_connector(options: RuntimeOptions, connector: Arc<dyn Connector>) -> Self {
        let clock = Stamp::new(options.idle_clock);
        let persist = options.catalog_cache.clone().and_then(|cache| {
            let dir = cache.dir.clone();
            Persist::open(cache)
                .map_err(|e| {
                    tracing::warn!(
                        dir = %dir.display(),
                        "cannot open the persisted MCP catalog; going on without it: {e}"
                    );
                })
                .ok()
        });
        RuntimeManager {
            inner: Arc::new(Inner {
                options,
                connector,
                clock,
                state: Mutex::new(State::default()),
                counters: Arc::new(Counters::default()),
                wake: Arc::new(Notify::new()),
                reaper: Mutex::new(None),
                teardowns: Mutex::new(JoinSet::new()),
                eras: Mutex::new(HashMap::new()),
                persist,
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
        self.acquire_as("", session_id, config).await
    }

    /// [`acquire`](Self::acquire) for a session of one user: `identity` is
    /// the platform's user or tenant id (`""` is what `acquire` uses). The
    /// session's servers are authorized with that identity's logins
    /// ([`AuthorizerSource::authorizer_for`](crate::AuthorizerSource::authorizer_for)),
    /// so two users of one runtime never share a token; the lease says
    /// whose session it is ([`SessionRuntime::identity`](crate::SessionRuntime::identity)).
    /// A session id is one identity's: asking for it with another is
    /// [`RuntimeError::IdentityMismatch`].
    pub async fn acquire_as(
        &self,
        identity: &str,
        session_id: &str,
        config: &ResolvedConfig,
    ) -> Result<RuntimeLease, RuntimeError> {
        let same = |r: &SessionRuntime| r.slot.identity == identity;
        if let Some(lease) = self.try_reuse(session_id, &config.fingerprint, same) {
            return Ok(lease);
        }
        // Boxed: the warm path's future stays small.
        Box::pin(self.acquire_slow(session_id, identity, config, Handlers::Keep)).await
    }

    /// [`acquire`](Self::acquire), with the handlers of server requests
    /// (elicitation, roots, sampling — usually a
    /// [`ClientHandlers`](mcp_stack_session::ClientHandlers)) that every server
    /// of this agent session gets, instead of
    /// [`session_defaults.handler`](crate::RuntimeOptions::session_defaults).
    ///
    /// Handlers are declared as client capabilities in each server's
    /// handshake, so they are fixed per connection: pass the *same* `Arc`
    /// on every call (the warm path then costs one pointer comparison
    /// more). Other handlers than the runtime was built with start every
    /// server of the session again (like a changed config); a plain
    /// `acquire` keeps the runtime's handlers. A session that was reclaimed
    /// (idle TTL) or disposed of starts from nothing: its next
    /// `acquire_with_handlers` gives them again, a plain `acquire` gives
    /// the defaults.
    pub async fn acquire_with_handlers(
        &self,
        session_id: &str,
        config: &ResolvedConfig,
        handlers: &Arc<dyn ClientHandler>,
    ) -> Result<RuntimeLease, RuntimeError> {
        let same = |r: &SessionRuntime| {
            r.slot.identity.is_empty() && same_handlers(r.handlers.as_ref(), Some(handlers))
        };
        if let Some(lease) = self.try_reuse(session_id, &config.fingerprint, same) {
            return Ok(lease);
        }
        Box::pin(self.acquire_slow(session_id, "", config, Handlers::Use(handlers))).await
    }

    /// Fetches again every list of the session's servers (through each
    /// server session's cache: a list the server did not say changed, and
    /// whose 2026-07-28 `ttlMs` has not run out, costs no request) and, when
    /// anything is new, installs a runtime with a fresh catalog, which the
    /// next `acquire` returns. Whether it did; `false` for an unknown
    /// session.
    ///
    /// Lists a server announces changed (`notifications/…/list_changed`)
    /// are refreshed like this on their own, in the background; this is
    /// for the rest (a 2026-07-28 server's TTL, or to be sure before going on).
    pub async fn refresh_catalog(&self, session_id: &str) -> bool {
        let slot = {
            let state = lock(&self.inner.state);
            state.sessions.get(session_id).map(|e| Arc::clone(&e.slot))
        };
        match slot {
            Some(slot) => self.refresh_slot(&slot, true).await,
            None => false,
        }
    }

    /// The catalog of `config` as persisted, without starting anything:
    /// `None` unless the manager keeps a catalog cache and it holds every
    /// server of `config` (under its fingerprint). Says how old the oldest
    /// server's lists are and whether they are all still fresh (the
    /// server's `ttlMs`, else [`CatalogCache::fresh_for`](crate::CatalogCache::fresh_for)).
    /// Tools are compared with their pins, as in a connected catalog.
    pub fn persisted_catalog(&self, config: &ResolvedConfig) -> Option<PersistedCatalog> {
        let persist = self.inner.persist.as_ref()?;
        let mut offline = std::collections::BTreeMap::new();
        let mut age = std::time::Duration::ZERO;
        let mut fresh = true;
        let servers: Vec<_> = config.servers.iter().collect();
        // Read, checked and parsed on every core. The single user's (the
        // `mcp` command's): a private catalog is never another identity's.
        // One server missing makes the answer `None`: the others still to
        // be read are then skipped.
        let missing = AtomicBool::new(false);
        let loaded = crate::par::map(&servers, crate::par::Cost::Record, |(_, server)| {
            if missing.load(Ordering::Relaxed) {
                return None;
            }
            let Some(record) = persist.load(server, "") else {
                missing.store(true, Ordering::Relaxed);
                return None;
            };
            let age = record.age();
            let fresh = age < record.fresh_for(persist.options.fresh_for);
            let o = crate::build::offline_of(server, record, OfflineState::Connecting);
            Some((age, fresh, o))
        });
        for ((name, _), one) in servers.into_iter().zip(loaded) {
            let (one_age, one_fresh, o) = one?;
            age = age.max(one_age);
            fresh &= one_fresh;
            offline.insert(name.clone(), Arc::new(o));
        }
        let catalog = assemble(
            &std::collections::BTreeMap::new(),
            &offline,
            Vec::new(),
            Some(persist),
        );
        Some(PersistedCatalog {
            catalog,
            age,
            fresh,
        })
    }

    /// The warm path: one lock, one hash lookup, one fingerprint comparison
    /// (and whatever `also` checks: nothing for `acquire`).
    #[inline]
    pub(crate) fn try_reuse(
        &self,
        session_id: &str,
        fingerprint: &Fingerprint,
        also: impl FnOnce(&SessionRuntime) -> bool,
    ) -> Option<RuntimeLease> {
        let mut guard = lock(&self.inner.state);
        let state = &mut *guard;
        let entry = state.sessions.get(session_id)?;
        let installed = entry.runtime.as_ref()?;
        if !installed.serves(fingerprint, Instant::now) || !also(&installed.runtime) {
            return None;
        }
        // The new strong reference is the lease (see `leases_on`).
        let runtime = Arc::clone(&installed.runtime);
        // Counted under the lock already held: no extra atomic on this path.
        state.reuses += 1;
        drop(guard);
        tracing::trace!(session = session_id, "reused MCP runtime");
        Some(RuntimeLease {
            runtime,
            clock: self.inner.clock,
        })
    }

    /// Finds or registers the session's slot and takes a lease on it.
    pub(crate) fn enter(
        &self,
        session_id: &str,
        identity: &str,
    ) -> Result<SlotGuard, RuntimeError> {
        let inner = &*self.inner;
        let mut guard = lock(&inner.state);
        let state = &mut *guard;
        if let Some(entry) = state.sessions.get(session_id) {
            if entry.slot.identity != identity {
                return Err(RuntimeError::IdentityMismatch {
                    session: session_id.to_owned(),
                });
            }
            entry.slot.guards.fetch_add(1, Ordering::AcqRel);
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
            identity: identity.to_owned(),
            generation,
            clock: inner.clock,
            guards: AtomicUsize::new(1),
            last_used: AtomicU64::new(0),
            build: tokio::sync::Mutex::new(()),
            refresh_pending: AtomicBool::new(false),
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
            Entry::new(Arc::clone(&slot), scheduled),
        );
        drop(guard);
        self.ensure_reaper();
        Ok(SlotGuard { slot: Some(slot) })
    }

    pub(crate) async fn acquire_slow(
        &self,
        session_id: &str,
        identity: &str,
        config: &ResolvedConfig,
        handlers: Handlers<'_>,
    ) -> Result<RuntimeLease, RuntimeError> {
        let guard = self.enter(session_id, identity)?;
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
                Some(installed)
                    if installed.serves(&config.fingerprint, Instant::now)
                        && match handlers {
                            Handlers::Keep => true,
                            Handlers::Use(h) => {
                                same_handlers(installed.runtime.handlers.as_ref(), Some(h))
                            }
                        } =>
                {
                    // Built by the request we waited for.
                    let rt = Arc::clone(&installed.runtime);
                    drop(state);
                    lock(&self.inner.state).reuses += 1;
                    return Ok(guard.into_lease(rt));
                }
                _ => entry.current().cloned(),
            }
        };
        let Built {
            runtime,
            replaced,
            deferred,
        } = self
            .builder()
            .build(&slot, old.as_deref(), config, handlers)
            .await;
        let runtime = Arc::new(runtime);
        if !deferred.is_empty() {
            // Waits for this build's lock, then connects them.
            tokio::spawn(self.clone().connect_deferred(
                Arc::clone(&slot),
                deferred,
                runtime.handlers.clone(),
            ));
        }
        let installed = {
            let mut state = lock(&self.inner.state);
            match state
                .sessions
                .get_mut(session_id)
                .filter(|e| e.slot.generation == slot.generation)
            {
                Some(entry) => {
                    entry.install(Arc::clone(&runtime));
                    // Started under the registry's lock, as the reaper's
                    // are: `dispose_all` cannot come between and miss them.
                    self.spawn_teardowns(replaced, "config changed");
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
        Ok(guard.into_lease(runtime))
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
        self.close_all(entry.into_conns(), "session disposed").await;
        true
    }

    /// Ends every session and waits for every teardown: what an application
    /// calls on shutdown (see [Shutdown](crate#shutdown)).
    ///
    /// Every server is closed with its transport's close sequence (a stdio
    /// server's whole process group ends), concurrently; a call still in
    /// flight holds its server's close for up to the drain timeout. When it
    /// returns, no server process of the manager is left. The manager stays
    /// usable: a later `acquire` starts servers again.
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
        let slots: Vec<Arc<Slot>> = entries.iter().map(|e| Arc::clone(&e.slot)).collect();
        let conns = entries.into_iter().flat_map(Entry::into_conns).collect();
        self.close_all(conns, "manager shutting down").await;
        // A build still running for a drained session finds it gone and
        // starts its connections' teardowns before it lets go of the
        // slot's build lock: waiting for that lock puts them in the set
        // joined below.
        for slot in slots {
            drop(slot.build.lock().await);
        }
        let mut pending = std::mem::take(&mut *lock(&self.inner.teardowns));
        while pending.join_next().await.is_some() {}
    }

    /// Fetches again the lists of the session's servers — those the servers
    /// said changed, or all of them when `force` (through each session's
    /// cache, so an unchanged list costs no request) — and installs a
    /// runtime with a fresh catalog when anything is new. Whether it did.
    pub(crate) async fn refresh_slot(&self, slot: &Arc<Slot>, force: bool) -> bool {
        let _building = slot.build.lock().await;
        slot.refresh_pending.store(false, Ordering::Release);
        let current = {
            let state = lock(&self.inner.state);
            state
                .sessions
                .get(&slot.id)
                .filter(|e| e.slot.generation == slot.generation)
                .and_then(|e| e.current().cloned())
        };
        let Some(current) = current else {
            return false;
        };
        let changed = futures_util::future::join_all(
            current.servers.values().map(|c| c.refresh_lists(force)),
        )
        .await;
        if !changed.contains(&true) {
            return false;
        }
        if let Some(persist) = &self.inner.persist {
            for (conn, _) in current.servers.values().zip(&changed).filter(|(_, c)| **c) {
                persist.save(
                    &conn.server.fingerprint,
                    &conn
                        .lists()
                        .to_record(&conn.server, &conn.session, conn.authorized),
                    &slot.identity,
                );
            }
        }
        let catalog = assemble(
            &current.servers,
            &current.offline,
            current.catalog.failures().to_vec(),
            self.inner.persist.as_ref(),
        );
        catalog.inherit_search(&current.catalog);
        let runtime = Arc::new(SessionRuntime {
            last_used: AtomicU64::new(0),
            slot: Arc::clone(slot),
            fingerprint: current.fingerprint,
            servers: current.servers.clone(),
            offline: current.offline.clone(),
            catalog: Arc::new(catalog),
            retry_at: current.retry_at,
            handlers: current.handlers.clone(),
        });
        let mut state = lock(&self.inner.state);
        match state
            .sessions
            .get_mut(&slot.id)
            .filter(|e| e.slot.generation == slot.generation)
        {
            Some(entry) if entry.current().is_some_and(|r| Arc::ptr_eq(r, &current)) => {
                entry.install(runtime);
                drop(state);
                tracing::debug!(session = %slot.id, "refreshed MCP catalog");
                true
            }
            _ => false,
        }
    }

    pub(crate) fn spawn_teardowns(&self, conns: Vec<Arc<ServerConn>>, why: &'static str) {
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

    /// What starting this manager's servers needs.
    fn builder(&self) -> Builder<'_> {
        let refresh: Weak<dyn Refresh> = Arc::downgrade(&self.inner) as Weak<Inner>;
        Builder {
            options: &self.inner.options,
            connector: &*self.inner.connector,
            counters: &self.inner.counters,
            eras: &self.inner.eras,
            refresh,
            persist: self.inner.persist.as_ref(),
        }
    }

    /// Connects the servers a build listed from the persisted catalog (all
    /// at once, under the session's build lock, as a build does), then
    /// installs a runtime where they are connected (or failed, their
    /// persisted tools kept and marked unavailable); its catalog is the
    /// servers' fresh lists, as after a `list_changed`. Callers waiting on
    /// one of them are woken as soon as it is settled.
    async fn connect_deferred(
        self,
        slot: Arc<Slot>,
        deferred: Vec<Arc<Offline>>,
        handlers: Option<Arc<dyn ClientHandler>>,
    ) {
        let _building = slot.build.lock().await;
        let builder = self.builder();
        let started = futures_util::future::join_all(deferred.iter().map(|o| async {
            let result = builder.start(&slot, &o.server, handlers.as_ref()).await;
            match &result {
                Ok(conn) => o.settle(OfflineState::Ready(Arc::clone(conn))),
                Err(f) => o.settle(OfflineState::Failed(f.message.clone())),
            }
            result
        }))
        .await;
        let mut state = lock(&self.inner.state);
        let current = state
            .sessions
            .get_mut(&slot.id)
            .filter(|e| e.slot.generation == slot.generation)
            .and_then(|e| e.current().cloned().map(|c| (e, c)));
        let Some((entry, current)) = current else {
            // Disposed of meanwhile: close what connected.
            let conns = started.into_iter().filter_map(Result::ok).collect();
            self.spawn_teardowns(conns, "session disposed during start");
            return;
        };
        let mut servers = current.servers.clone();
        let mut offline = current.offline.clone();
        let mut failures = current.catalog.failures().to_vec();
        let mut orphans = Vec::new();
        for (o, result) in deferred.iter().zip(started) {
            let name = &o.server.name;
            let ours = offline.get(name).is_some_and(|x| Arc::ptr_eq(x, o));
            match result {
                Ok(conn) if ours => {
                    offline.remove(name);
                    servers.insert(name.clone(), conn);
                }
                Ok(conn) => orphans.push(conn),
                Err(f) if ours => {
                    let attempts = 1;
                    let retry_after = self.inner.options.backoff(attempts, name);
                    let failure = crate::catalog::ServerFailure {
                        server: name.clone(),
                        step: f.step,
                        message: f.message,
                        stderr_tail: f.stderr_tail,
                        attempts,
                        retry_after,
                        retry_at: Instant::now() + retry_after,
                        fingerprint: o.server.fingerprint,
                    };
                    self.inner.counters.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(session = %slot.id, "MCP {failure}");
                    failures.retain(|x| &x.server != name);
                    failures.push(failure);
                }
                Err(_) => {}
            }
        }
        let catalog = assemble(&servers, &offline, failures, self.inner.persist.as_ref());
        let retry_at = catalog.failures().iter().map(|f| f.retry_at).min();
        let runtime = Arc::new(SessionRuntime {
            last_used: AtomicU64::new(0),
            slot: Arc::clone(&slot),
            fingerprint: current.fingerprint,
            servers,
            offline,
            catalog: Arc::new(catalog),
            retry_at,
            handlers: current.handlers.clone(),
        });
        entry.install(runtime);
        self.spawn_teardowns(orphans, "replaced while connecting");
        drop(state);
        tracing::debug!(session = %slot.id, "MCP servers connected in the background");
    }

    pub(crate) async fn close_all(&self, conns: Vec<Arc<ServerConn>>, why: &'static str) {
        let drain = self.inner.options.drain_timeout;
        futures_util::future::join_all(conns.into_iter().map(|c| teardown(c, drain, why))).await;
    }

    /// A snapshot of what the manager holds and has done.
    pub fn stats(&self) -> RuntimeStats {
        let c = &self.inner.counters;
        let (sessions, leases, reuses) = {
            let mut state = lock(&self.inner.state);
            let leases = state.sessions.values_mut().map(|e| e.usage().0).sum();
            (state.sessions.len(), leases, state.reuses)
        };
        RuntimeStats {
            sessions,
            connections: c.connections.load(Ordering::Relaxed),
            in_flight_calls: c.in_flight.load(Ordering::Relaxed),
            leases,
            reaped_sessions: c.reaped.load(Ordering::Relaxed),
            reaper_passes: c.reaper_passes.load(Ordering::Relaxed),
            connects: c.connects.load(Ordering::Relaxed),
            reuses,
            builds: c.builds.load(Ordering::Relaxed),
            failed_starts: c.failed.load(Ordering::Relaxed),
        }
    }
}
