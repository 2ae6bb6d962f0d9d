//! What an agent session holds: its runtime (connections and catalog) under
//! a lease, and the per-server connection with its in-flight count.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mcp_stack_config::{Fingerprint, ResolvedServer};
use mcp_stack_session::types::{
    CallToolResult, Completion, CompletionReference, GetPromptResult, ReadResourceResult,
};
use mcp_stack_session::{CallOptions, ClientHandler, Session};
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::catalog::RuntimeCatalog;
use crate::clock::Stamp;
use crate::error::{EntryKind, RuntimeError};
use crate::lists::{ChangeFlags, ServerLists, Which};

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) connections: AtomicUsize,
    pub(crate) in_flight: AtomicUsize,
    pub(crate) reaped: AtomicU64,
    /// Passes the background reaper made over what was due.
    pub(crate) reaper_passes: AtomicU64,
    pub(crate) connects: AtomicU64,
    pub(crate) builds: AtomicU64,
    pub(crate) failed: AtomicU64,
}

/// Per agent session: what outlives rebuilds of its runtime.
pub(crate) struct Slot {
    pub(crate) id: String,
    /// Whose session: the identity its servers are authorized as.
    pub(crate) identity: String,
    pub(crate) generation: u64,
    /// The manager's idle clock.
    pub(crate) clock: Stamp,
    /// Holds on the session while its runtime is (re)built: a
    /// [`SlotGuard`] each. Leases on a built runtime are counted by the
    /// runtime itself (see [`leases_on`]).
    pub(crate) guards: AtomicUsize,
    /// The last release of a guard (or of a retired runtime's last lease,
    /// folded in when the registry let go of it), as a reading of `clock`.
    pub(crate) last_used: AtomicU64,
    /// Held while the runtime is (re)built or its catalog refreshed: one at
    /// a time (single flight).
    pub(crate) build: tokio::sync::Mutex<()>,
    /// A catalog refresh is scheduled (a server said a list changed).
    pub(crate) refresh_pending: AtomicBool,
}

impl Slot {
    pub(crate) fn touch(&self) {
        self.last_used.store(self.clock.now(), Ordering::Relaxed);
    }

    pub(crate) fn release(&self) {
        self.touch();
        self.guards.fetch_sub(1, Ordering::Release);
    }
}

/// One server connection of a session runtime.
pub(crate) struct ServerConn {
    pub(crate) server: ResolvedServer,
    pub(crate) session: Session,
    /// What it offers, as last fetched.
    pub(crate) lists: Mutex<Arc<ServerLists>>,
    /// Its connector may send it credentials ([`Connector::authorizes`](crate::connector::Connector::authorizes)):
    /// its persisted lists are private.
    pub(crate) authorized: bool,
    /// The lists it said changed since.
    pub(crate) changes: Arc<ChangeFlags>,
    pub(crate) in_flight: AtomicUsize,
    pub(crate) idle: Notify,
    pub(crate) closed: AtomicBool,
    pub(crate) counters: Arc<Counters>,
}

impl ServerConn {
    pub(crate) fn lists(&self) -> Arc<ServerLists> {
        Arc::clone(&lock(&self.lists))
    }

    /// Fetches again the lists the server said changed (all of them when
    /// `force`, through the session's caches); whether anything is new.
    pub(crate) async fn refresh_lists(&self, force: bool) -> bool {
        let marked = self.changes.take();
        let which = if force { Which::ALL } else { marked };
        if !which.any() {
            return false;
        }
        let prior = self.lists();
        let next = prior.refetch(&self.session, which).await;
        if prior.same(&next) {
            return false;
        }
        *lock(&self.lists) = Arc::new(next);
        true
    }

    pub(crate) fn mark_closed(&self) {
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

/// A server listed from the persisted catalog, not connected (yet): its
/// connection is being made in the background, or failed.
pub(crate) struct Offline {
    pub(crate) server: ResolvedServer,
    /// Its lists as persisted.
    pub(crate) lists: Arc<ServerLists>,
    pub(crate) protocol: mcp_stack_session::ProtocolVersion,
    state: tokio::sync::watch::Sender<OfflineState>,
}

/// Where a background connection is.
#[derive(Clone)]
pub(crate) enum OfflineState {
    Connecting,
    Ready(Arc<ServerConn>),
    Failed(String),
}

impl Offline {
    pub(crate) fn new(
        server: ResolvedServer,
        lists: Arc<ServerLists>,
        protocol: mcp_stack_session::ProtocolVersion,
        state: OfflineState,
    ) -> Self {
        Offline {
            server,
            lists,
            protocol,
            state: tokio::sync::watch::Sender::new(state),
        }
    }

    pub(crate) fn is_failed(&self) -> bool {
        matches!(*self.state.borrow(), OfflineState::Failed(_))
    }

    pub(crate) fn settle(&self, state: OfflineState) {
        self.state.send_replace(state);
    }

    /// Waits for the background connection: the connection, or why it
    /// failed.
    pub(crate) async fn wait(&self) -> Result<Arc<ServerConn>, String> {
        let mut rx = self.state.subscribe();
        loop {
            match &*rx.borrow_and_update() {
                OfflineState::Ready(conn) => return Ok(Arc::clone(conn)),
                OfflineState::Failed(why) => return Err(why.clone()),
                OfflineState::Connecting => {}
            }
            if rx.changed().await.is_err() {
                return Err("the background connection was abandoned".to_owned());
            }
        }
    }
}

/// Counts a call in flight on a connection and in the manager.
pub(crate) struct CallGuard<'a> {
    pub(crate) conn: &'a ServerConn,
}

impl<'a> CallGuard<'a> {
    pub(crate) fn new(conn: &'a ServerConn) -> Self {
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

/// One agent session's MCP runtime: its connections and catalog.
///
/// Reached through a [`RuntimeLease`]. It is a snapshot: a rebuild after a
/// config change makes a new one; a lease taken before keeps the old one
/// (whose replaced servers close once their calls are done).
// `repr(C)`: `last_used` comes first, in the cache line of the `Arc`'s
// reference count, so that taking and dropping a lease touch one line of
// the runtime's memory.
#[repr(C)]
pub struct SessionRuntime {
    /// The last release of a lease on it, as a reading of the manager's
    /// idle clock (0: none yet).
    pub(crate) last_used: AtomicU64,
    pub(crate) slot: Arc<Slot>,
    pub(crate) fingerprint: Fingerprint,
    pub(crate) servers: BTreeMap<String, Arc<ServerConn>>,
    /// Servers listed from the persisted catalog, connecting in the
    /// background or failed.
    pub(crate) offline: BTreeMap<String, Arc<Offline>>,
    pub(crate) catalog: Arc<RuntimeCatalog>,
    /// The earliest retry of a failed server, if any failed.
    pub(crate) retry_at: Option<Instant>,
    /// The handlers of server requests every connection of the session
    /// got (`None`: those of `RuntimeOptions::session_defaults`).
    pub(crate) handlers: Option<Arc<dyn ClientHandler>>,
}

/// Whether two handler choices are the same one.
pub(crate) fn same_handlers(
    a: Option<&Arc<dyn ClientHandler>>,
    b: Option<&Arc<dyn ClientHandler>>,
) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

impl fmt::Debug for SessionRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionRuntime")
            .field("session", &self.slot.id)
            .field("fingerprint", &self.fingerprint)
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .field("tools", &self.catalog.len())
            .field("resources", &self.catalog.resources().len())
            .field("prompts", &self.catalog.prompts().len())
            .field("failures", &self.catalog.failures().len())
            .field("own_handlers", &self.handlers.is_some())
            .finish()
    }
}

/// A runtime's leases: the strong references to it beyond the registry's
/// own. Every other holder is a lease, or a build or catalog refresh of the
/// session in progress (which holds it only while it runs, and may well
/// count as a use). `runtime` must be the registry's reference, read under
/// its lock: then no lease can be taken meanwhile (only the registry takes
/// a first one), so 0 stays 0.
pub(crate) fn leases_on(runtime: &Arc<SessionRuntime>) -> usize {
    let beyond = Arc::strong_count(runtime).saturating_sub(1);
    // Pairs with the release decrement of a dropped lease: its
    // `last_used` store is seen by whoever saw the count fall.
    std::sync::atomic::fence(Ordering::Acquire);
    beyond
}

impl SessionRuntime {
    /// The agent session id.
    pub fn session_id(&self) -> &str {
        &self.slot.id
    }

    /// Whose session this is: the identity given to
    /// [`RuntimeManager::acquire_as`](crate::RuntimeManager::acquire_as)
    /// (`""` for [`acquire`](crate::RuntimeManager::acquire)). Its servers
    /// were authorized with this identity's logins; results a server marks
    /// `cacheScope: "private"` belong to it and are never to be served to
    /// another identity (key any cache kept beyond this session by it).
    pub fn identity(&self) -> &str {
        &self.slot.identity
    }

    /// The fingerprint of the config this runtime was built from.
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    /// The tools, resources, resource templates and prompts the agent sees,
    /// and the servers that failed to start.
    ///
    /// A snapshot: when a server says a list changed, a new runtime with a
    /// fresh catalog is installed, which the session's next
    /// [`acquire`](crate::RuntimeManager::acquire) returns.
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
            known: self.catalog.some_names(EntryKind::Tool, 20),
            failed: self.failed_servers(),
        };
        let tool = self.catalog.get(name).ok_or_else(unknown)?;
        if !self.servers.contains_key(tool.server()) && !self.offline.contains_key(tool.server()) {
            return Err(unknown());
        }
        let conn = self.conn(tool.server()).await?;
        let _in_flight = CallGuard::new(&conn);
        conn.session
            .call_tool_with(tool.tool_name(), arguments, options)
            .await
            .map_err(|source| RuntimeError::Call {
                server: tool.server().to_owned(),
                source,
            })
    }

    fn failed_servers(&self) -> Vec<String> {
        self.catalog
            .failures()
            .iter()
            .map(|f| f.server.clone())
            .collect()
    }

    fn unknown(&self, kind: EntryKind, name: &str) -> RuntimeError {
        RuntimeError::UnknownEntry {
            kind,
            name: name.to_owned(),
            known: self.catalog.some_names(kind, 20),
            failed: self.failed_servers(),
        }
    }

    /// The connection of a server the catalog names: connected, or
    /// waited for when it connects in the background.
    async fn conn(&self, server: &str) -> Result<Arc<ServerConn>, RuntimeError> {
        if let Some(conn) = self.servers.get(server) {
            return Ok(Arc::clone(conn));
        }
        match self.offline.get(server) {
            Some(offline) => offline
                .wait()
                .await
                .map_err(|reason| RuntimeError::Unavailable {
                    server: server.to_owned(),
                    reason,
                }),
            None => Err(RuntimeError::UnknownServer {
                server: server.to_owned(),
                connected: self.servers.keys().cloned().collect(),
            }),
        }
    }

    /// Which server and URI `name_or_uri` means: a namespaced resource name
    /// of the catalog first; else a URI exactly one server's resources list.
    fn resolve_resource(&self, name_or_uri: &str) -> Result<(&str, String), RuntimeError> {
        if let Some(r) = self.catalog.resource(name_or_uri) {
            return Ok((r.server(), r.uri().to_owned()));
        }
        let at: Vec<_> = self.catalog.resources_at(name_or_uri).collect();
        match at.as_slice() {
            [] => Err(self.unknown(EntryKind::Resource, name_or_uri)),
            [only] => Ok((only.server(), only.uri().to_owned())),
            // A server lists a URI once (the catalog keeps one), so these
            // are several servers.
            many => Err(RuntimeError::AmbiguousResource {
                uri: name_or_uri.to_owned(),
                candidates: many.iter().map(|r| r.name().to_owned()).collect(),
            }),
        }
    }

    /// Reads a resource, by its namespaced name in the catalog
    /// ([`RuntimeCatalog::resources`]) or by its URI when exactly one
    /// server lists that URI (a namespaced name wins over a URI spelled the
    /// same). A URI several servers list is
    /// [`RuntimeError::AmbiguousResource`] (naming the candidates); one no
    /// server lists is [`RuntimeError::UnknownEntry`] — for a URI made from
    /// a template, or one the server does not list, use
    /// [`read_resource_at`](Self::read_resource_at).
    pub async fn read_resource(
        &self,
        name_or_uri: &str,
    ) -> Result<ReadResourceResult, RuntimeError> {
        let (server, uri) = self.resolve_resource(name_or_uri)?;
        self.read_resource_at(server, &uri).await
    }

    /// Reads `uri` from the server named `server` (its name in the config),
    /// listed or not: for URIs filled in from a resource template.
    pub async fn read_resource_at(
        &self,
        server: &str,
        uri: &str,
    ) -> Result<ReadResourceResult, RuntimeError> {
        let conn = self.conn(server).await?;
        let _in_flight = CallGuard::new(&conn);
        conn.session
            .read_resource(uri)
            .await
            .map_err(|source| RuntimeError::Call {
                server: server.to_owned(),
                source,
            })
    }

    /// Gets a prompt by namespaced name (`SERVER__PROMPT`) with these
    /// arguments (checked against the prompt's declared ones first).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, RuntimeError> {
        let prompt = self
            .catalog
            .prompt(name)
            .ok_or_else(|| self.unknown(EntryKind::Prompt, name))?;
        let conn = self.conn(prompt.server()).await?;
        let _in_flight = CallGuard::new(&conn);
        conn.session
            .get_prompt(prompt.prompt_name(), arguments)
            .await
            .map_err(|source| RuntimeError::Call {
                server: prompt.server().to_owned(),
                source,
            })
    }

    /// Suggestions for `argument` of the prompt `prompt` (namespaced), given
    /// what was typed (`value`) and the arguments already chosen
    /// (`context`). A server without the `completions` capability gives
    /// [`SessionError::NotSupported`](mcp_stack_session::SessionError::NotSupported)
    /// (in [`RuntimeError::Call`]).
    pub async fn complete_prompt_argument(
        &self,
        prompt: &str,
        argument: &str,
        value: &str,
        context: BTreeMap<String, String>,
    ) -> Result<Completion, RuntimeError> {
        let p = self
            .catalog
            .prompt(prompt)
            .ok_or_else(|| self.unknown(EntryKind::Prompt, prompt))?;
        let reference = CompletionReference::Prompt {
            name: p.prompt_name().to_owned(),
        };
        self.complete(p.server(), reference, argument, value, context)
            .await
    }

    /// Suggestions for `variable` of the resource template `template`
    /// (namespaced), like
    /// [`complete_prompt_argument`](Self::complete_prompt_argument).
    pub async fn complete_resource_variable(
        &self,
        template: &str,
        variable: &str,
        value: &str,
        context: BTreeMap<String, String>,
    ) -> Result<Completion, RuntimeError> {
        let t = self
            .catalog
            .resource_template(template)
            .ok_or_else(|| self.unknown(EntryKind::ResourceTemplate, template))?;
        let reference = CompletionReference::Resource {
            uri: t.uri_template().to_owned(),
        };
        self.complete(t.server(), reference, variable, value, context)
            .await
    }

    async fn complete(
        &self,
        server: &str,
        reference: CompletionReference,
        argument: &str,
        value: &str,
        context: BTreeMap<String, String>,
    ) -> Result<Completion, RuntimeError> {
        let conn = self.conn(server).await?;
        let _in_flight = CallGuard::new(&conn);
        conn.session
            .complete(reference, argument, value, context)
            .await
            .map_err(|source| RuntimeError::Call {
                server: server.to_owned(),
                source,
            })
    }
}

/// A session's runtime, held in use: while any lease is held the runtime is
/// never reclaimed; dropping the last one starts its idle time.
///
/// Derefs to [`SessionRuntime`]. Cloning takes another lease.
pub struct RuntimeLease {
    // The lease count is the runtime's strong count (see `leases_on`): the
    // warm path takes and drops a lease with one atomic each, on the line
    // that holds `last_used` too.
    pub(crate) runtime: Arc<SessionRuntime>,
    /// The manager's idle clock, copied: the release reads no other memory.
    pub(crate) clock: Stamp,
}

impl Deref for RuntimeLease {
    type Target = SessionRuntime;
    fn deref(&self) -> &SessionRuntime {
        &self.runtime
    }
}

impl Clone for RuntimeLease {
    fn clone(&self) -> Self {
        RuntimeLease {
            runtime: Arc::clone(&self.runtime),
            clock: self.clock,
        }
    }
}

impl Drop for RuntimeLease {
    fn drop(&mut self) {
        // Before the `Arc`'s release decrement: a reaper that sees the
        // count fall sees this use too.
        self.runtime
            .last_used
            .store(self.clock.now(), Ordering::Relaxed);
    }
}

impl fmt::Debug for RuntimeLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RuntimeLease").field(&self.runtime).finish()
    }
}

/// A hold on a slot whose runtime is not ready yet.
pub(crate) struct SlotGuard {
    pub(crate) slot: Option<Arc<Slot>>,
}

impl SlotGuard {
    /// A lease on the runtime the guard waited for; the guard lets go of
    /// the slot only after the lease holds the runtime.
    pub(crate) fn into_lease(self, runtime: Arc<SessionRuntime>) -> RuntimeLease {
        let clock = runtime.slot.clock;
        let lease = RuntimeLease { runtime, clock };
        drop(self);
        lease
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            slot.release();
        }
    }
}

/// Locks `m`, going on past a poisoned lock (its data stays consistent:
/// no critical section of this crate leaves it half-changed).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
