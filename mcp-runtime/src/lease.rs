//! What an agent session holds: its runtime (connections and catalog) under
//! a lease, and the per-server connection with its in-flight count.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use mcp_config::{Fingerprint, ResolvedServer};
use mcp_session::types::CallToolResult;
use mcp_session::{CallOptions, Session, ToolCatalog};
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::catalog::RuntimeCatalog;
use crate::error::RuntimeError;

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) connections: AtomicUsize,
    pub(crate) in_flight: AtomicUsize,
    pub(crate) reaped: AtomicU64,
    pub(crate) connects: AtomicU64,
    pub(crate) builds: AtomicU64,
    pub(crate) failed: AtomicU64,
}

/// Per agent session: what outlives rebuilds of its runtime.
pub(crate) struct Slot {
    pub(crate) id: String,
    pub(crate) generation: u64,
    pub(crate) epoch: Instant,
    pub(crate) leases: AtomicUsize,
    /// Nanoseconds since `epoch` of the last use.
    pub(crate) last_used: AtomicU64,
    /// Held while the runtime is (re)built: one build at a time (single flight).
    pub(crate) build: tokio::sync::Mutex<()>,
}

impl Slot {
    pub(crate) fn touch(&self) {
        let nanos = Instant::now()
            .saturating_duration_since(self.epoch)
            .as_nanos();
        self.last_used
            .store(u64::try_from(nanos).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    pub(crate) fn last_used(&self) -> Instant {
        self.epoch + Duration::from_nanos(self.last_used.load(Ordering::Relaxed))
    }

    pub(crate) fn release(&self) {
        self.touch();
        self.leases.fetch_sub(1, Ordering::Release);
    }
}

/// One server connection of a session runtime.
pub(crate) struct ServerConn {
    pub(crate) server: ResolvedServer,
    pub(crate) session: Session,
    pub(crate) catalog: Arc<ToolCatalog>,
    pub(crate) in_flight: AtomicUsize,
    pub(crate) idle: Notify,
    pub(crate) closed: AtomicBool,
    pub(crate) counters: Arc<Counters>,
}

impl ServerConn {
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

/// One agent session's MCP runtime: its connections and tool catalog.
///
/// Reached through a [`RuntimeLease`]. It is a snapshot: a rebuild after a
/// config change makes a new one; a lease taken before keeps the old one
/// (whose replaced servers close once their calls are done).
pub struct SessionRuntime {
    pub(crate) slot: Arc<Slot>,
    pub(crate) fingerprint: Fingerprint,
    pub(crate) servers: BTreeMap<String, Arc<ServerConn>>,
    pub(crate) catalog: Arc<RuntimeCatalog>,
    /// The earliest retry of a failed server, if any failed.
    pub(crate) retry_at: Option<Instant>,
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
    pub(crate) runtime: Arc<SessionRuntime>,
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
pub(crate) struct SlotGuard {
    pub(crate) slot: Option<Arc<Slot>>,
}

impl SlotGuard {
    pub(crate) fn into_lease(mut self, runtime: Arc<SessionRuntime>) -> RuntimeLease {
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
