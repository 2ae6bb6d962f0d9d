//! The `Session` facade: the handle users hold, and its operations, each
//! handed to the part that does it: the core (`conn.rs`: requests, the
//! reader, the lifecycle) or a feature beside it (the tool catalog and
//! calls, the list caches, skills, tasks, subscriptions). The facade holds
//! the feature objects; they know the core, not the facade nor (beyond what
//! they use) each other. Resources, prompts and the rest are in
//! `session/resources.rs`, skills in `session/skills.rs`, tasks in
//! `session/tasks.rs`.

use std::fmt;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcp_stack_jsonrpc::RawJson;
use mcp_stack_transport::{Transport, TransportError};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::time::Instant;

use mcp_stack_protocol::types::{CallToolResult, InitializeResult};
use mcp_stack_protocol::{ProtocolVersion, x_mcp_header};

use crate::calls::CallAnswer;
use crate::catalog::Tools;
use crate::config::{CallOptions, Diagnostics, SessionConfig};
use crate::conn::Inner;
use crate::error::SessionError;
use crate::features::FeatureCaches;
use crate::pending::Deadline;
use crate::reader::ClosedInfo;
use crate::skills::Skills;
use crate::subscriptions::{self, Subscription, SubscriptionFilter};
use crate::tasks::{TaskHandle, Tasks};
use crate::tools::ToolCatalog;

mod resources;
mod skills;
mod tasks;

/// What a session is made of: the core, and the features beside it.
pub(crate) struct Parts {
    pub(crate) core: Arc<Inner>,
    /// The tool catalog (shared with the task handles, which check a
    /// task's output against it).
    pub(crate) tools: Arc<Tools>,
    /// The list caches, made on first use (most connections of a runtime
    /// never list resources or prompts).
    pub(crate) lists: OnceLock<Box<FeatureCaches>>,
    /// The skills listing, made on first use.
    pub(crate) skills: OnceLock<Box<Skills>>,
}

impl Parts {
    fn lists(&self) -> &FeatureCaches {
        self.lists.get_or_init(Box::default)
    }

    fn skills(&self) -> &Skills {
        self.skills.get_or_init(Box::default)
    }

    fn tasks(&self) -> Tasks<'_> {
        Tasks::new(&self.core, &self.tools)
    }
}

/// One MCP client connection.
///
/// Cheap to clone; all clones share the connection. Requests may be made
/// concurrently from any number of tasks.
#[derive(Clone)]
pub struct Session {
    pub(crate) inner: Arc<Parts>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let core = &self.inner.core;
        f.debug_struct("Session")
            .field("server", &core.config.server_name)
            .field("version", &core.revision.version())
            .field("transport", &core.transport.kind())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The facade over a connected core.
    fn over(core: Inner) -> Session {
        let core = Arc::new(core);
        // From now on a server session that ends is started again.
        crate::rehandshake::install(&core);
        Session {
            inner: Arc::new(Parts {
                core,
                tools: Arc::default(),
                lists: OnceLock::new(),
                skills: OnceLock::new(),
            }),
        }
    }

    fn core(&self) -> &Inner {
        &self.inner.core
    }

    /// Connects over a transport and runs the lifecycle the config's
    /// [`protocol`](SessionConfig::protocol) asks for: by default the
    /// 2026-07-28 probe (`server/discover`), falling back to the `initialize`
    /// handshake (version check, `notifications/initialized`) for a legacy
    /// server.
    ///
    /// The lifecycle is bounded by `config.handshake_timeout` (the probe by
    /// the shorter `probe_timeout`). A server that answers with a version
    /// this client does not speak gets the transport closed and a
    /// [`SessionError::VersionMismatch`].
    ///
    /// A transport given once cannot be opened again: a strict legacy stdio
    /// server that exits on the probe fails here. [`connect_with`](Self::connect_with)
    /// starts such a server again with the handshake.
    pub async fn connect(
        transport: impl Transport,
        config: SessionConfig,
    ) -> Result<Session, SessionError> {
        Self::connect_shared(Arc::new(transport), config).await
    }

    /// Like [`connect`](Self::connect), for a transport the caller also keeps
    /// (to read its stderr tail after a failed handshake, say).
    ///
    /// Like `connect`, it cannot restart a server that exits on the probe;
    /// see [`connect_with`](Self::connect_with).
    pub async fn connect_shared(
        transport: Arc<dyn Transport>,
        config: SessionConfig,
    ) -> Result<Session, SessionError> {
        Inner::connect(transport, config).await.map(Session::over)
    }

    /// Connects over transports that `open` makes, opening one more when the
    /// first attempt shows it is needed: in the default auto mode, a server
    /// whose transport closes during the 2026-07-28 probe (a strict legacy
    /// server that exits when the first request is not `initialize`) is
    /// started again and spoken to with the handshake straight away. Every
    /// entry point that can start a server again (the runtime, the CLI, the
    /// `mcp-stack-client` front door) goes through here.
    ///
    /// `open` is called once, or twice in that case; each transport it
    /// returns is closed if the session cannot use it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mcp_stack_session::{Session, SessionConfig};
    /// use mcp_stack_transport::{Transport, TransportError, memory};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// // A server that is gone at once: both attempts fail, with the reason.
    /// let mut opened = 0;
    /// let err = Session::connect_with(
    ///     || {
    ///         opened += 1;
    ///         let (client, server) = memory::pair();
    ///         drop(server);
    ///         async move { Ok::<_, TransportError>(Arc::new(client) as Arc<dyn Transport>) }
    ///     },
    ///     SessionConfig::new(),
    /// )
    /// .await
    /// .unwrap_err();
    /// assert!(err.is_closed());
    /// assert_eq!(opened, 2); // the probe, then the handshake on a fresh transport
    /// # });
    /// ```
    pub async fn connect_with<F, Fut>(
        open: F,
        config: SessionConfig,
    ) -> Result<Session, SessionError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Arc<dyn Transport>, TransportError>>,
    {
        Inner::connect_with(open, config).await.map(Session::over)
    }

    /// What the server said about itself in `initialize`.
    pub fn server(&self) -> &InitializeResult {
        &self.core().init
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.core().revision.version()
    }

    /// The configuration the session runs with.
    pub fn config(&self) -> &SessionConfig {
        &self.core().config
    }

    /// The transport underneath (for its stderr tail or exit status).
    pub fn transport(&self) -> &Arc<dyn Transport> {
        &self.core().transport
    }

    /// Sends a request with JSON parameters and returns the raw result.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Option<Duration>,
    ) -> Result<RawJson, SessionError> {
        let core = self.core();
        // What a 2026-07-28 request mirrors as `Mcp-Name`, when it has one.
        let context = match x_mcp_header::name_field(method)
            .and_then(|field| params.as_ref()?.get(field)?.as_str())
        {
            Some(name) => core.named_context(name),
            None => core.context(),
        };
        let raw = match (params, &core.meta) {
            (Some(p), _) => Some(core.params(method, &p)?),
            (None, Some(_)) => Some(core.params(method, &json!({}))?),
            (None, None) => None,
        };
        let id = core.next_id();
        let timeout = timeout.unwrap_or(core.config.request_timeout);
        core.request_raw(id, method, raw, timeout, None, &context)
            .await
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), SessionError> {
        self.core().notify(method, params).await
    }

    /// Checks the server answers: `ping`, or `server/discover` on
    /// 2026-07-28 (which has no `ping`).
    pub async fn ping(&self) -> Result<(), SessionError> {
        let method = self.core().revision.liveness_method();
        self.request(method, None, None).await.map(|_| ())
    }

    /// Subscribes to the notifications in `filter` and waits (up to the
    /// request timeout) for the acknowledgment: on 2026-07-28 a
    /// `subscriptions/listen` stream; before it, `resources/subscribe` for
    /// each resource and the list changes the server declares (see
    /// [`crate::subscriptions`]). [`Subscription::acknowledged`] says what
    /// was granted.
    ///
    /// The subscription holds the session open while it lives.
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, SessionError> {
        subscriptions::listen(&self.inner.core, filter).await
    }

    /// Every notification the server sends from now on, as a stream (see
    /// [`Notifications`](crate::Notifications) for its bound and what happens when you fall
    /// behind). Any number may be open; each gets every notification, as
    /// does the [`on_notification`](SessionConfig::on_notification) callback.
    /// Dropping the stream closes it.
    ///
    /// ```no_run
    /// # async fn f(session: mcp_stack_session::Session) {
    /// use mcp_stack_session::ServerNotification;
    ///
    /// let mut notifications = session.notifications();
    /// while let Some(n) = notifications.next().await {
    ///     match n {
    ///         ServerNotification::ToolsListChanged => println!("the tools changed"),
    ///         ServerNotification::ResourceUpdated(u) => println!("{} changed", u.uri),
    ///         ServerNotification::Log(m) => println!("log: {}", m.data),
    ///         _ => {}
    ///     }
    /// }
    /// # }
    /// ```
    pub fn notifications(&self) -> crate::Notifications {
        crate::Notifications::open(self.core())
    }

    /// The tool catalog: cached, fetched (every page) when missing or marked
    /// stale by `notifications/tools/list_changed`.
    ///
    /// A server without the `tools` capability yields an empty catalog with
    /// a diagnostic, and no request is sent.
    pub async fn list_tools(&self) -> Result<Arc<ToolCatalog>, SessionError> {
        self.inner.tools.catalog(self.core(), true).await
    }

    /// Fetches the catalog again, whatever the cache holds.
    pub async fn refresh_tools(&self) -> Result<Arc<ToolCatalog>, SessionError> {
        self.inner.tools.refresh(self.core()).await
    }

    /// Calls a tool with the session's defaults.
    ///
    /// The arguments are anything serde serializes to a JSON object: a
    /// `serde_json::json!` value, a `#[derive(Serialize)]` struct, a map.
    /// The result's typed readers are
    /// [`structured`](CallToolResult::structured) (the structured content
    /// into your type) and [`into_result`](CallToolResult::into_result)
    /// (`isError: true` as an `Err` with the tool's text); see
    /// [`call_tool_with`](Self::call_tool_with) for what is checked.
    ///
    /// ```no_run
    /// # async fn f(session: mcp_stack_session::Session) -> Result<(), mcp_stack_session::SessionError> {
    /// #[derive(serde::Serialize)]
    /// struct Add { a: f64, b: f64 }
    /// #[derive(serde::Deserialize)]
    /// struct Sum { sum: f64 }
    ///
    /// let sum: Sum = session.call_tool("add", Add { a: 2.0, b: 3.0 }).await?.into_result()?.structured()?;
    /// assert_eq!(sum.sum, 5.0);
    /// # Ok(()) }
    /// ```
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, SessionError> {
        self.call_tool_with(name, arguments, CallOptions::default())
            .await
    }

    /// Calls a tool.
    ///
    /// The arguments are checked against the tool's input schema first; on a
    /// mismatch nothing is sent and the error names each field. A result
    /// with `isError: true` is `Ok`: the tool ran and reported a failure.
    /// `structuredContent` is checked against the tool's output schema.
    ///
    /// A 2026-07-28 server with the tasks extension may answer with a task
    /// instead of the result: the call then polls it to its end and returns
    /// its result, within the call's timeout, which each change of the
    /// task's state extends (like progress) up to `max_total_timeout`.
    ///
    /// The arguments are serialized to JSON once, here (a `Value` is
    /// copied); a value that serde cannot write as JSON (a map with
    /// non-string keys, say) is [`SessionError::InvalidArguments`], and
    /// nothing is sent. That copy is freed when the answer comes in, before
    /// the result is read, unless the call may be sent again (a 2026-07-28
    /// input round or header-mismatch retry).
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: CallOptions,
    ) -> Result<CallToolResult, SessionError> {
        let arguments = crate::calls::arguments_json(name, arguments)?;
        let start = Instant::now();
        let Parts { core, tools, .. } = &*self.inner;
        let timeout = options.timeout.unwrap_or(core.config.request_timeout);
        match tools.call(core, name, arguments, &options, None).await? {
            CallAnswer::Complete(result, catalog) => Tools::checked_output(&catalog, name, result),
            CallAnswer::Task(started) => {
                tracing::debug!(server = %core.config.server_name, tool = name, task = %started.summary().task_id, "the server answered with a task; waiting for it");
                let mut deadline = Deadline::new(start, timeout, core.config.max_total_timeout);
                let mut handle =
                    TaskHandle::new(Arc::clone(core), Arc::clone(tools), name, started);
                handle.wait_until(&mut deadline, true, &mut |_| {}).await
            }
        }
    }

    /// What the session has seen: frames that were not messages, responses
    /// to unknown ids.
    pub fn diagnostics(&self) -> Diagnostics {
        let shared = &self.core().shared;
        let (invalid_frames, last_invalid) = {
            let invalid = shared.invalid.lock().unwrap_or_else(|p| p.into_inner());
            (invalid.count, invalid.last.iter().cloned().collect())
        };
        Diagnostics {
            invalid_frames,
            last_invalid,
            unknown_responses: shared.lock_pending().unknown_responses,
            answering: shared.server_requests.len(),
            dropped_notifications: shared.dropped.load(Ordering::Relaxed),
            refused_server_requests: shared.server_requests.refused.load(Ordering::Relaxed),
            notification_streams: shared.subscribers.taps_open(),
        }
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.core().shared.lock_pending().in_flight()
    }

    /// The connection is closed (by either side).
    pub fn is_closed(&self) -> bool {
        self.core().shared.lock_pending().is_closed()
    }

    /// Closes the connection with the transport's close sequence. Requests
    /// in flight end with a closed error.
    pub async fn close(&self) {
        let core = self.core();
        core.shared.server_requests.abort_all();
        core.transport.close().await;
        let mut pending = core.shared.lock_pending();
        if !pending.is_closed() {
            let mut err = core
                .shared
                .closed_error
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if err.is_none() {
                *err = Some(ClosedInfo::by_client());
            }
            pending.close();
        }
        drop(pending);
        // The notification streams end now, whenever the reader notices.
        core.shared.subscribers.end_taps();
    }
}

impl Session {
    /// Sends a request of the method table and returns its typed result:
    /// the params are written by serde straight into the outgoing frame,
    /// the result parsed once, from the frame's bytes, into `R::Result`.
    ///
    /// The typed form of [`Session::request`]: the session's revision, its
    /// request `_meta` and its default timeout, nothing more (a `tools/call`
    /// sent so is neither validated nor carried through `input_required`
    /// rounds or tasks: that is [`Session::call_tool`]).
    ///
    /// ```no_run
    /// # async fn f(session: mcp_stack_session::Session) -> Result<(), mcp_stack_session::SessionError> {
    /// use mcp_stack_session::protocol::request::ToolsList;
    /// let page = session.call::<ToolsList>(&Default::default()).await?;
    /// println!("{} tools on the first page", page.tools.len());
    /// # Ok(()) }
    /// ```
    pub async fn call<R: mcp_stack_protocol::request::Request>(
        &self,
        params: &R::Params,
    ) -> Result<R::Result, SessionError> {
        let inner = self.core();
        // What a 2026-07-28 request mirrors as `Mcp-Name`, read from the
        // params only where it is sent.
        let name = match mcp_stack_protocol::x_mcp_header::name_field(R::METHOD) {
            Some(field) if inner.mirrors_headers() => serde_json::to_value(params)
                .ok()
                .and_then(|v| v.get(field)?.as_str().map(str::to_owned)),
            _ => None,
        };
        let context = match &name {
            Some(name) => inner.named_context(name),
            None => inner.context(),
        };
        inner
            .send::<R>(params, inner.config.request_timeout, &context)
            .await
    }
}
