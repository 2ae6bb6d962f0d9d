//! Building a session's runtime ([`Builder`]): which servers to keep, start or
//! tear down, starting one (transport, lifecycle, its lists), the listener
//! that asks the manager for a fresh catalog when a list changed, teardown.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use mcp_stack_config::{Fingerprint, ResolvedConfig, ResolvedServer};
use mcp_stack_session::{
    ClientHandler, NotificationListener, ProtocolMode, ProtocolPin, ProtocolVersion, Session,
    SessionError,
};
use mcp_stack_transport::BoxFuture;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::catalog::{RuntimeCatalog, ServerEntries, ServerFailure, StartupStep, ToolStatus};
use crate::error::describe_duration;
use crate::lists::{ChangeFlags, ServerLists, Which};
use crate::plan::{Had, Step, plan};
use crate::settings::session_settings;

use crate::connector::Connector;
use crate::lease::{
    Counters, Offline, OfflineState, ServerConn, SessionRuntime, Slot, lock, same_handlers,
};
use crate::options::RuntimeOptions;
use crate::persist::Persist;

/// Which handlers of server requests a (re)build gives its connections.
#[derive(Clone, Copy)]
pub(crate) enum Handlers<'a> {
    /// Those the session's runtime has (none for a new session: then
    /// `session_defaults.handler`).
    Keep,
    /// These.
    Use(&'a Arc<dyn ClientHandler>),
}

/// Why one server did not start: at which step, what went wrong, and the
/// last lines it wrote to stderr (stdio).
#[derive(Debug)]
pub(crate) struct StartFailure {
    pub(crate) step: StartupStep,
    pub(crate) message: String,
    pub(crate) stderr_tail: Vec<String>,
}

impl StartFailure {
    fn new(step: StartupStep, message: String) -> Self {
        StartFailure {
            step,
            message,
            stderr_tail: Vec::new(),
        }
    }
}

/// What starting servers needs of the manager: its options, connector,
/// counters and memory of eras, and where to ask for a catalog refresh.
pub(crate) struct Builder<'a> {
    pub(crate) options: &'a RuntimeOptions,
    pub(crate) connector: &'a dyn Connector,
    pub(crate) counters: &'a Arc<Counters>,
    pub(crate) eras: &'a Mutex<HashMap<Fingerprint, ProtocolVersion>>,
    /// Told when a server says a list changed (weak: a connection does
    /// not keep its manager alive).
    pub(crate) refresh: Weak<dyn Refresh>,
    /// The persisted catalog and pins, when the runtime keeps them.
    pub(crate) persist: Option<&'a Arc<Persist>>,
}

/// What a build gives: the runtime, the old connections it replaces, and
/// the servers to connect in the background (listed from the persisted
/// catalog meanwhile).
pub(crate) struct Built {
    pub(crate) runtime: SessionRuntime,
    pub(crate) replaced: Vec<Arc<ServerConn>>,
    pub(crate) deferred: Vec<Arc<Offline>>,
}

/// Refreshes a session's catalog in the background (the manager does:
/// it owns the registry the fresh runtime is installed in).
pub(crate) trait Refresh: Send + Sync {
    /// The refresh of `slot`'s catalog, to be spawned.
    fn refresh(self: Arc<Self>, slot: Arc<Slot>) -> BoxFuture<'static, ()>;
}

impl Builder<'_> {
    /// Builds a runtime for `config`, reusing what `old` has that did not change.
    /// Returns it and the old connections it replaces.
    ///
    /// With other handlers than `old` was built with, nothing is reused:
    /// every server starts again to declare them.
    pub(crate) async fn build(
        &self,
        slot: &Arc<Slot>,
        old: Option<&SessionRuntime>,
        config: &ResolvedConfig,
        handlers: Handlers<'_>,
    ) -> Built {
        let handlers = match handlers {
            Handlers::Keep => old.and_then(|o| o.handlers.clone()),
            Handlers::Use(h) => Some(Arc::clone(h)),
        };
        let (old, mut replaced) = match old {
            Some(o) if !same_handlers(o.handlers.as_ref(), handlers.as_ref()) => {
                tracing::info!(
                    session = %slot.id,
                    "MCP client handlers changed: every server starts again"
                );
                (None, o.servers.values().cloned().collect())
            }
            other => (other, Vec::new()),
        };
        let now = Instant::now();
        let mut had: BTreeMap<String, Had> = BTreeMap::new();
        if let Some(old) = old {
            for (name, conn) in &old.servers {
                had.insert(name.clone(), Had::Connected(conn.server.fingerprint));
            }
            for (name, o) in old.offline.iter().filter(|(_, o)| !o.is_failed()) {
                had.insert(name.clone(), Had::Connected(o.server.fingerprint));
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
        let mut offline = BTreeMap::new();
        let mut deferred = Vec::new();
        let mut failures = Vec::new();
        let mut to_start = Vec::new();
        let mut to_open = Vec::new();
        for (name, step) in &plan.steps {
            let old_conn = old.and_then(|o| o.servers.get(name));
            let old_offline = old.and_then(|o| o.offline.get(name));
            let old_failure =
                old.and_then(|o| o.catalog.failures().iter().find(|f| &f.server == name));
            match (step, old_conn, old_failure) {
                (Step::Keep, Some(conn), _) => {
                    servers.insert(name.clone(), Arc::clone(conn));
                }
                (Step::Keep, None, _) if old_offline.is_some() => {
                    if let Some(o) = old_offline {
                        offline.insert(name.clone(), Arc::clone(o));
                    }
                }
                (Step::KeepFailure, _, Some(f)) => {
                    failures.push(f.clone());
                    if let Some(o) = old_offline {
                        offline.insert(name.clone(), Arc::clone(o));
                    }
                }
                _ => {
                    if let Some(server) = config.servers.get(name) {
                        let prior = old_failure
                            .filter(|f| f.fingerprint == server.fingerprint)
                            .map_or(0, |f| f.attempts);
                        to_open.push((server, prior));
                    }
                }
            }
        }
        // Listed from the persisted catalog where it holds them (read on
        // every core), else started now.
        let cached = crate::par::map(&to_open, crate::par::Cost::Record, |(server, _)| {
            self.offline_from_cache(server, &slot.identity)
        });
        for ((server, prior), cached) in to_open.into_iter().zip(cached) {
            match cached {
                Some(o) => {
                    offline.insert(server.name.clone(), Arc::clone(&o));
                    deferred.push(o);
                }
                None => to_start.push((server, prior)),
            }
        }
        let started = futures_util::future::join_all(
            to_start
                .iter()
                .map(|(server, _)| self.start(slot, server, handlers.as_ref())),
        )
        .await;
        let mut started_names = Vec::new();
        for ((server, prior), result) in to_start.iter().zip(started) {
            match result {
                Ok(conn) => {
                    started_names.push(server.name.as_str());
                    servers.insert(server.name.clone(), conn);
                }
                Err(StartFailure {
                    step,
                    message,
                    stderr_tail,
                }) => {
                    let attempts = prior.saturating_add(1);
                    let retry_after = self.options.backoff(attempts, &server.name);
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
                    self.counters.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(session = %slot.id, "MCP {failure}");
                    if let Some(o) = self.persisted_failure(server, &failure, &slot.identity) {
                        offline.insert(server.name.clone(), o);
                    }
                    failures.push(failure);
                }
            }
        }
        replaced.extend(
            plan.teardown
                .iter()
                .filter_map(|n| old.and_then(|o| o.servers.get(n)).cloned()),
        );
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
        self.counters.builds.fetch_add(1, Ordering::Relaxed);

        let retry_at = failures.iter().map(|f| f.retry_at).min();
        let catalog = Arc::new(assemble(&servers, &offline, failures, self.persist));
        let runtime = SessionRuntime {
            last_used: AtomicU64::new(0),
            slot: Arc::clone(slot),
            fingerprint: config.fingerprint,
            servers,
            offline,
            catalog,
            retry_at,
            handlers,
        };
        Built {
            runtime,
            replaced,
            deferred,
        }
    }

    /// A server to connect in the background, listed meanwhile from its
    /// persisted lists (when the cache has them and connects in the
    /// background).
    fn offline_from_cache(&self, server: &ResolvedServer, identity: &str) -> Option<Arc<Offline>> {
        let persist = self.persist?;
        if !persist.options.background_connect {
            return None;
        }
        let record = persist.load(server, identity)?;
        Some(Arc::new(offline_of(
            server,
            record,
            OfflineState::Connecting,
        )))
    }

    /// A server that failed to start, still listed from its persisted
    /// lists (marked unavailable), when the cache has them.
    fn persisted_failure(
        &self,
        server: &ResolvedServer,
        failure: &ServerFailure,
        identity: &str,
    ) -> Option<Arc<Offline>> {
        let record = self.persist?.load(server, identity)?;
        let state = OfflineState::Failed(failure.to_string());
        Some(Arc::new(offline_of(server, record, state)))
    }

    /// Opens a server's transport (starts its process), within its handshake timeout.
    pub(crate) async fn open(
        &self,
        server: &ResolvedServer,
        identity: &str,
    ) -> Result<Arc<dyn mcp_stack_transport::Transport>, StartFailure> {
        let connect = self.connector.connect_as(server, identity);
        match tokio::time::timeout(server.handshake_timeout, connect).await {
            Err(_) => Err(StartFailure::new(
                StartupStep::Connect,
                format!(
                    "the transport did not open within {} (the handshake timeout)",
                    describe_duration(server.handshake_timeout)
                ),
            )),
            Ok(Err(e)) => Err(StartFailure::new(StartupStep::Connect, e.to_string())),
            Ok(Ok(t)) => Ok(t),
        }
    }

    /// Starts one server: transport, handshake, tools/list, then (for a
    /// server that declares them) its resources, templates and prompts.
    pub(crate) async fn start(
        &self,
        slot: &Arc<Slot>,
        server: &ResolvedServer,
        handlers: Option<&Arc<dyn ClientHandler>>,
    ) -> Result<Arc<ServerConn>, StartFailure> {
        let session_id = slot.id.as_str();
        let started = Instant::now();
        let mut config = session_settings(&self.options.session_defaults, server);
        if let Some(h) = handlers {
            config.handler = Some(Arc::clone(h));
        }
        let changes = Arc::new(ChangeFlags::default());
        config.on_notification = Some(change_listener(
            config.on_notification.take(),
            Arc::clone(&changes),
            self.refresh.clone(),
            Arc::downgrade(slot),
        ));
        let probing = config.mode() == ProtocolMode::Auto;
        let remembered = probing
            .then(|| {
                self.eras
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(&server.fingerprint)
                    .copied()
            })
            .flatten();
        if let Some(version) = remembered {
            // The probe already told us what this server speaks.
            config = config.protocol(ProtocolPin::Version(version));
        }
        // The session opens the transport (twice for a server that exits on
        // the probe); the last one opened is kept here for its stderr, and a
        // failure to open is a connect failure, not a handshake one.
        let opened: Mutex<Option<Arc<dyn mcp_stack_transport::Transport>>> = Mutex::new(None);
        let open_failed: Mutex<Option<StartFailure>> = Mutex::new(None);
        let connected = Session::connect_with(
            || async {
                match self.open(server, &slot.identity).await {
                    Ok(t) => {
                        *lock(&opened) = Some(Arc::clone(&t));
                        Ok(t)
                    }
                    Err(failure) => {
                        let error = mcp_stack_transport::TransportError::Io(std::io::Error::other(
                            failure.message.clone(),
                        ));
                        *lock(&open_failed) = Some(failure);
                        Err(error)
                    }
                }
            },
            config,
        )
        .await;
        let transport = lock(&opened).take();
        let session = match connected {
            Ok(s) => {
                if probing {
                    self.eras
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
                    self.eras
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&server.fingerprint);
                }
                if let Some(failure) = lock(&open_failed).take() {
                    return Err(failure);
                }
                let tail = match &transport {
                    Some(t) => {
                        detach_stderr(&**t);
                        t.close().await;
                        stderr_tail(&**t)
                    }
                    None => Vec::new(),
                };
                return Err(StartFailure {
                    step: StartupStep::Handshake,
                    message: handshake_message(&e),
                    stderr_tail: tail,
                });
            }
        };
        let transport = Arc::clone(session.transport());
        let tools = match session.list_tools().await {
            Ok(c) => c,
            Err(e) => {
                detach_stderr(&*transport);
                session.close().await;
                let tail = stderr_tail(&*transport);
                return Err(StartFailure {
                    step: StartupStep::ListTools,
                    message: e.to_string(),
                    stderr_tail: tail,
                });
            }
        };
        let lists = ServerLists::fetch(&session, tools, None, None, Which::ALL).await;
        let authorized = self.connector.authorizes(server);
        if let Some(persist) = self.persist {
            persist.save(
                &server.fingerprint,
                &lists.to_record(server, &session, authorized),
                &slot.identity,
            );
        }
        let counters = Arc::clone(self.counters);
        counters.connections.fetch_add(1, Ordering::Relaxed);
        counters.connects.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            session = session_id,
            server = %server.name,
            transport = %transport.kind(),
            version = %session.protocol_version(),
            tools = lists.tools.len(),
            resources = lists.resources.items.len(),
            templates = lists.templates.items.len(),
            prompts = lists.prompts.items.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "connected MCP server"
        );
        Ok(Arc::new(ServerConn {
            server: server.clone(),
            session,
            lists: Mutex::new(Arc::new(lists)),
            authorized,
            changes,
            in_flight: AtomicUsize::new(0),
            idle: Notify::new(),
            closed: AtomicBool::new(false),
            counters,
        }))
    }
}

/// Waits for the connection's in-flight calls (up to `drain`), detaches its
/// stderr listener and closes it with the transport's close sequence.
pub(crate) async fn teardown(conn: Arc<ServerConn>, drain: Duration, why: &'static str) {
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

/// An offline server from its persisted record.
pub(crate) fn offline_of(
    server: &ResolvedServer,
    record: crate::persist::ServerRecord,
    state: OfflineState,
) -> Offline {
    let protocol = record
        .protocol
        .parse()
        .unwrap_or(ProtocolVersion::V2025_11_25);
    let lists = Arc::new(ServerLists::from_record(record));
    Offline::new(server.clone(), lists, protocol, state)
}

/// One server's part of the catalog: who, its lists, how it is reached.
struct Source<'a> {
    server: &'a ResolvedServer,
    lists: Arc<ServerLists>,
    protocol: ProtocolVersion,
    transport: mcp_stack_transport::TransportKind,
    status: ToolStatus,
}

/// The catalog of these connections (their lists as last fetched) and of
/// the servers listed from the persisted catalog, each server's tools
/// compared with their pins first (withheld when blocked, marked when
/// changed).
pub(crate) fn assemble(
    servers: &BTreeMap<String, Arc<ServerConn>>,
    offline: &BTreeMap<String, Arc<Offline>>,
    failures: Vec<ServerFailure>,
    persist: Option<&Arc<Persist>>,
) -> RuntimeCatalog {
    let mut sources: Vec<Source<'_>> = servers
        .values()
        .map(|c| Source {
            server: &c.server,
            lists: c.lists(),
            protocol: c.session.protocol_version(),
            transport: c.session.transport().kind(),
            status: ToolStatus::Ready,
        })
        .collect();
    sources.extend(offline.values().map(|o| Source {
        server: &o.server,
        lists: Arc::clone(&o.lists),
        protocol: o.protocol,
        transport: match o.server.transport {
            mcp_stack_config::TransportConfig::Stdio { .. } => {
                mcp_stack_transport::TransportKind::Stdio
            }
            _ => mcp_stack_transport::TransportKind::StreamableHttp,
        },
        status: if o.is_failed() {
            ToolStatus::Unavailable
        } else {
            ToolStatus::Connecting
        },
    }));
    let mut reports = Vec::new();
    // Each server's pins on its own, on every core: decided by the pins'
    // summary (read once) where it holds the list, else by a file or two
    // of the server's.
    let summary = persist.map(|p| p.pins.summary());
    let checked: Vec<crate::persist::pins::Checked> =
        crate::par::map(&sources, crate::par::Cost::Pins, |s| {
            match (persist, &summary) {
                (Some(p), Some(summary)) => {
                    let tools: Vec<_> = s.lists.tools.iter().collect();
                    let policy = p.options.policy_for(s.server);
                    p.pins.check(
                        s.server,
                        &tools,
                        s.lists.pin_hashes(),
                        policy,
                        p.options.on_pin_event.as_ref(),
                        summary,
                    )
                }
                _ => Default::default(),
            }
        });
    if let Some(p) = persist {
        let verified: Vec<_> = checked.iter().filter_map(|c| c.verified.clone()).collect();
        p.pins.remember_listed(&verified);
    }
    let entries: Vec<ServerEntries<'_>> = sources
        .iter()
        .zip(&checked)
        .map(|(s, c)| {
            reports.extend(c.reports.iter().cloned());
            let changed = c
                .reports
                .iter()
                .filter(|r| r.status == crate::persist::PinStatus::Changed)
                .map(|r| (r.tool.clone(), r.diff.clone()))
                .collect();
            ServerEntries {
                server: &s.server.name,
                filter: &s.server.tools,
                tools: s
                    .lists
                    .tools
                    .iter()
                    .filter(|t| !c.blocked.contains_key(&t.name))
                    .collect(),
                resources: &s.lists.resources.items,
                templates: &s.lists.templates.items,
                prompts: &s.lists.prompts.items,
                diagnostics: &s.lists.notes,
                protocol: s.protocol,
                transport: s.transport,
                status: s.status,
                changed,
            }
        })
        .collect();
    RuntimeCatalog::build(&entries, failures).with_pin_reports(reports)
}

/// The notification listener of one connection: the application's (from
/// `session_defaults`), then, on a `list_changed`, marks the list and
/// schedules a refresh of the session's catalog (one at a time).
fn change_listener(
    application: Option<NotificationListener>,
    changes: Arc<ChangeFlags>,
    manager: Weak<dyn Refresh>,
    slot: Weak<Slot>,
) -> NotificationListener {
    Arc::new(move |n| {
        if let Some(listener) = &application {
            listener(n);
        }
        if !changes.mark(n) {
            return;
        }
        let (Some(manager), Some(slot)) = (manager.upgrade(), slot.upgrade()) else {
            return;
        };
        if slot.refresh_pending.swap(true, Ordering::AcqRel) {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(manager.refresh(slot));
            }
            Err(_) => slot.refresh_pending.store(false, Ordering::Release),
        }
    })
}

/// A handshake error, with the seed's troubleshooting hints.
pub(crate) fn handshake_message(e: &SessionError) -> String {
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
pub(crate) fn detach_stderr(transport: &dyn mcp_stack_transport::Transport) {
    if let Some(process) = transport.process() {
        process.detach_stderr();
    }
}

/// The last lines a stdio server wrote to stderr (none for other transports).
pub(crate) fn stderr_tail(transport: &dyn mcp_stack_transport::Transport) -> Vec<String> {
    transport
        .process()
        .map(|p| p.stderr_tail())
        .unwrap_or_default()
}
