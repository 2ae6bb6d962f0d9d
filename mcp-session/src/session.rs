//! One client connection: the reader task, requests with timeouts, the
//! handshake, and the tool calls.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_jsonrpc::{
    ErrorObject, ErrorResponse, Id, Message, Notification, RawJson, RawValue, Request, Response,
    codes,
};
use mcp_transport::{BoxFuture, InvalidFrame, Received, Transport, TransportError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::error::{SessionError, fmt_duration};
use crate::pending::{Deadline, Delivery, Outcome, PendingTable};
use crate::tools::{Checked, ToolCatalog};
use crate::types::{
    CallToolResult, CancelledParams, ClientCapabilities, Implementation, InitializeParams,
    InitializeResult, ListToolsResult, LoggingMessageParams, ProgressParams,
};
use crate::version::ProtocolVersion;

/// Answers requests the server sends to the client (sampling, elicitation,
/// roots). `ping` is answered by the session itself.
pub trait ClientHandler: Send + Sync + 'static {
    /// Capabilities to declare for what this handler answers.
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities::default()
    }

    /// Answers a request; `None` means "not handled" and the server gets
    /// -32601 (method not found).
    fn handle<'a>(
        &'a self,
        method: &'a str,
        params: Option<&'a RawValue>,
    ) -> BoxFuture<'a, Option<Result<Value, ErrorObject>>>;
}

/// A notification from the server, as the session dispatches it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ServerNotification {
    /// Progress of one of our requests.
    Progress(ProgressParams),
    /// The tool list changed; the catalog is marked stale.
    ToolsListChanged,
    /// A log message.
    Log(LoggingMessageParams),
    /// The server cancelled a request it had sent us.
    Cancelled(CancelledParams),
    /// Any other notification.
    Other {
        /// Its method.
        method: String,
        /// Its parameters.
        params: Option<Value>,
    },
}

/// Called for every notification from the server.
pub type NotificationListener = Arc<dyn Fn(&ServerNotification) + Send + Sync>;

/// Called for each progress notification of one request.
pub type ProgressListener = Arc<dyn Fn(&ProgressParams) + Send + Sync>;

/// How a session behaves. `Default` gives the documented defaults.
#[derive(Clone)]
pub struct SessionConfig {
    /// The name this client gives in `initialize`.
    pub client_info: Implementation,
    /// Capabilities to declare (merged with the handler's).
    pub capabilities: ClientCapabilities,
    /// The version offered in `initialize`. Default: 2025-11-25.
    pub protocol_version: ProtocolVersion,
    /// The server's name in the config, for logs.
    pub server_name: String,
    /// Bound on each request without progress. Default: 60 s.
    pub request_timeout: Duration,
    /// Bound on the handshake. Default: 30 s.
    pub handshake_timeout: Duration,
    /// Bound on a request however much progress it reports. Default: 10 min.
    pub max_total_timeout: Duration,
    /// Whether tool calls may run concurrently; when false they run one at a
    /// time, in the order they were made. Default: true.
    pub supports_parallel_tool_calls: bool,
    /// Most pages `tools/list` follows before giving up. Default: 100.
    pub max_list_pages: usize,
    /// Answers server requests (sampling, elicitation, roots).
    pub handler: Option<Arc<dyn ClientHandler>>,
    /// Sees every server notification.
    pub on_notification: Option<NotificationListener>,
}

impl fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionConfig")
            .field("client_info", &self.client_info)
            .field("protocol_version", &self.protocol_version)
            .field("server_name", &self.server_name)
            .field("request_timeout", &self.request_timeout)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("max_total_timeout", &self.max_total_timeout)
            .field(
                "supports_parallel_tool_calls",
                &self.supports_parallel_tool_calls,
            )
            .field("max_list_pages", &self.max_list_pages)
            .field("handler", &self.handler.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            client_info: Implementation::new("mcp-client-rs", env!("CARGO_PKG_VERSION")),
            capabilities: ClientCapabilities::default(),
            protocol_version: ProtocolVersion::LATEST_HANDSHAKE,
            server_name: "server".into(),
            request_timeout: Duration::from_secs(60),
            handshake_timeout: Duration::from_secs(30),
            max_total_timeout: Duration::from_secs(600),
            supports_parallel_tool_calls: true,
            max_list_pages: 100,
            handler: None,
            on_notification: None,
        }
    }
}

/// Per-call settings.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Overrides the session's request timeout for this call.
    pub timeout: Option<Duration>,
    /// Receives this call's progress notifications. Progress also extends
    /// the timeout, up to the session's `max_total_timeout`.
    pub on_progress: Option<ProgressListener>,
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("on_progress", &self.on_progress.is_some())
            .finish()
    }
}

/// What the session has seen that a person may want to know about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Diagnostics {
    /// Frames that were not JSON-RPC messages (log lines on stdout, say).
    pub invalid_frames: u64,
    /// The last few of those, described.
    pub last_invalid: Vec<String>,
    /// Responses whose id matched no request in flight.
    pub unknown_responses: u64,
}

const KEEP_INVALID: usize = 5;

/// Why the connection closed: reason, exit status, stderr tail.
type ClosedInfo = (String, Option<mcp_transport::ExitInfo>, Vec<String>);

/// State the reader task shares with the session handle.
struct Shared {
    server_name: String,
    pending: Mutex<PendingTable>,
    /// Why the connection closed, once it has.
    closed_error: Mutex<Option<ClosedInfo>>,
    invalid: Mutex<(u64, Vec<String>)>,
    catalog_stale: AtomicBool,
    handler: Option<Arc<dyn ClientHandler>>,
    on_notification: Option<NotificationListener>,
    notifications_seen: AtomicU64,
}

impl Shared {
    fn lock_pending(&self) -> std::sync::MutexGuard<'_, PendingTable> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn closed_error(&self) -> SessionError {
        let info = self
            .closed_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        match info {
            Some((reason, exit, stderr_tail)) => SessionError::Transport(TransportError::Closed {
                reason,
                exit,
                stderr_tail,
            }),
            None => SessionError::Closed,
        }
    }
}

/// The session handle's state. Dropping the last handle stops the reader
/// task, which drops the transport (a stdio transport then kills its child).
struct Inner {
    transport: Arc<dyn Transport>,
    shared: Arc<Shared>,
    reader: JoinHandle<()>,
    next_id: AtomicI64,
    config: SessionConfig,
    init: InitializeResult,
    version: ProtocolVersion,
    catalog: tokio::sync::Mutex<Option<Arc<ToolCatalog>>>,
    call_gate: tokio::sync::Mutex<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// One MCP client connection.
///
/// Cheap to clone; all clones share the connection. Requests may be made
/// concurrently from any number of tasks.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("server", &self.inner.config.server_name)
            .field("version", &self.inner.version)
            .field("transport", &self.inner.transport.kind())
            .finish_non_exhaustive()
    }
}

/// Reads from the transport until it closes, dispatching each message.
async fn read_loop(transport: Arc<dyn Transport>, shared: Arc<Shared>) {
    loop {
        match transport.recv().await {
            Ok(Received::Message(m)) => dispatch(&transport, &shared, m),
            Ok(Received::Invalid(frame)) => note_invalid(&shared, &frame),
            Ok(_) => {}
            Err(e) => {
                let info = match e {
                    TransportError::Closed {
                        reason,
                        exit,
                        stderr_tail,
                    } => (reason, exit, stderr_tail),
                    other => (
                        other.to_string(),
                        transport.exit_info(),
                        transport.stderr_tail(),
                    ),
                };
                tracing::debug!(server = %shared.server_name, reason = %info.0, "connection closed");
                *shared
                    .closed_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = Some(info);
                shared.lock_pending().close();
                return;
            }
        }
    }
}

fn note_invalid(shared: &Shared, frame: &InvalidFrame) {
    tracing::warn!(server = %shared.server_name, "ignored a frame that is not JSON-RPC: {frame}");
    let mut inv = shared.invalid.lock().unwrap_or_else(|p| p.into_inner());
    inv.0 += 1;
    if inv.1.len() == KEEP_INVALID {
        inv.1.remove(0);
    }
    inv.1.push(frame.to_string());
}

fn dispatch(transport: &Arc<dyn Transport>, shared: &Arc<Shared>, message: Message) {
    match message {
        Message::Response(Response { id, result }) => {
            deliver(shared, &id, Outcome::Result(result));
        }
        Message::Error(ErrorResponse {
            id: Some(id),
            error,
        }) => {
            deliver(shared, &id, Outcome::Error(error));
        }
        Message::Error(ErrorResponse { id: None, error }) => {
            tracing::warn!(server = %shared.server_name, "error response without an id: {error}");
        }
        Message::Request(request) => {
            let transport = Arc::clone(transport);
            let shared = Arc::clone(shared);
            // A handler may take its time (elicitation asks a person): the
            // reader must not wait for it.
            tokio::spawn(async move {
                let answer = answer_request(&shared, &request).await;
                if let Err(e) = transport.send(&answer).await {
                    tracing::debug!(server = %shared.server_name, "could not answer {}: {e}", request.method);
                }
            });
        }
        Message::Notification(n) => on_notification(shared, n),
        _ => {}
    }
}

fn deliver(shared: &Shared, id: &Id, outcome: Outcome) {
    if shared.lock_pending().complete(id, outcome) == Delivery::Unknown {
        tracing::debug!(server = %shared.server_name, %id, "dropped a response to no request in flight");
    }
}

async fn answer_request(shared: &Shared, request: &Request) -> Message {
    let id = request.id.clone();
    let outcome = if request.method == "ping" {
        Some(Ok(json!({})))
    } else if let Some(handler) = &shared.handler {
        handler
            .handle(&request.method, request.params.as_deref())
            .await
    } else {
        None
    };
    let result = match outcome {
        Some(Ok(value)) => mcp_jsonrpc::to_raw(&value).map_err(|e| {
            ErrorObject::new(codes::INTERNAL_ERROR, format!("cannot encode answer: {e}"))
        }),
        Some(Err(e)) => Err(e),
        None => Err(ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            format!("this client does not handle {}", request.method),
        )),
    };
    match result {
        Ok(raw) => Message::Response(Response::new(id, raw)),
        Err(e) => Message::Error(ErrorResponse::new(Some(id), e)),
    }
}

fn on_notification(shared: &Shared, n: Notification) {
    shared.notifications_seen.fetch_add(1, Ordering::Relaxed);
    let params = n.params.as_deref();
    let parse = |what: &str| -> Option<Value> {
        params.and_then(|p| {
            serde_json::from_str(p.get())
                .map_err(|e| {
                    tracing::debug!(server = %shared.server_name, "bad {what} params: {e}");
                })
                .ok()
        })
    };
    let event = match n.method.as_str() {
        "notifications/progress" => {
            match parse("progress").and_then(|v| serde_json::from_value::<ProgressParams>(v).ok()) {
                Some(p) => {
                    shared.lock_pending().progress(p.clone());
                    ServerNotification::Progress(p)
                }
                None => return,
            }
        }
        "notifications/tools/list_changed" => {
            shared.catalog_stale.store(true, Ordering::Release);
            ServerNotification::ToolsListChanged
        }
        "notifications/message" => {
            match parse("log").and_then(|v| serde_json::from_value::<LoggingMessageParams>(v).ok())
            {
                Some(m) => {
                    log_server_message(&shared.server_name, &m);
                    ServerNotification::Log(m)
                }
                None => return,
            }
        }
        "notifications/cancelled" => {
            match parse("cancelled").and_then(|v| serde_json::from_value::<CancelledParams>(v).ok())
            {
                Some(c) => ServerNotification::Cancelled(c),
                None => return,
            }
        }
        _ => ServerNotification::Other {
            params: parse("notification"),
            method: n.method,
        },
    };
    if let Some(listener) = &shared.on_notification {
        listener(&event);
    }
}

fn log_server_message(server: &str, m: &LoggingMessageParams) {
    let logger = m.logger.as_deref().unwrap_or("");
    match m.level.as_str() {
        "debug" => tracing::debug!(server, logger, data = %m.data, "server log"),
        "info" | "notice" => tracing::info!(server, logger, data = %m.data, "server log"),
        "warning" => tracing::warn!(server, logger, data = %m.data, "server log"),
        _ => tracing::error!(server, logger, level = %m.level, data = %m.data, "server log"),
    }
}

/// Removes a request from the table if its caller stops waiting (timeout,
/// or the caller's future was dropped), and tells the server to stop.
struct InFlight<'a> {
    session: &'a Inner,
    id: Id,
    method: &'a str,
    done: bool,
}

impl InFlight<'_> {
    fn finish(mut self) {
        self.done = true;
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let still_waiting = self.session.shared.lock_pending().remove(&self.id);
        // The spec forbids cancelling `initialize`.
        if still_waiting && self.method != "initialize" {
            let params = json!({"requestId": self.id, "reason": "the client stopped waiting"});
            let transport = Arc::clone(&self.session.transport);
            if let Ok(raw) = mcp_jsonrpc::to_raw(&params) {
                let note =
                    Message::Notification(Notification::new("notifications/cancelled", Some(raw)));
                // Drop cannot await; a runtime is present wherever requests run.
                if let Ok(handle) = tokio::runtime::Handle::try_current() {
                    handle.spawn(async move {
                        let _ = transport.send(&note).await;
                    });
                }
            }
        }
    }
}

impl Inner {
    fn next_id(&self) -> Id {
        Id::from(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends a request and waits for its answer, within its deadline.
    async fn request_raw(
        &self,
        id: Id,
        method: &str,
        params: Option<RawJson>,
        timeout: Duration,
        on_progress: Option<&ProgressListener>,
    ) -> Result<RawJson, SessionError> {
        let (progress_tx, mut progress_rx) = match on_progress {
            Some(_) => {
                let (tx, rx) = mpsc::unbounded_channel();
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        let Some(mut done) = self.shared.lock_pending().insert(id.clone(), progress_tx) else {
            return Err(self.shared.closed_error());
        };
        let guard = InFlight {
            session: self,
            id: id.clone(),
            method,
            done: false,
        };
        let message = Message::Request(Request {
            id,
            method: method.to_string(),
            params,
        });
        self.transport.send(&message).await?;

        let mut deadline = Deadline::new(Instant::now(), timeout, self.config.max_total_timeout);
        let outcome = loop {
            tokio::select! {
                biased;
                outcome = &mut done => break outcome.ok(),
                Some(p) = async {
                    match progress_rx.as_mut() {
                        Some(rx) => rx.recv().await,
                        None => std::future::pending().await,
                    }
                } => {
                    deadline.on_progress(Instant::now());
                    if let Some(listener) = on_progress {
                        listener(&p);
                    }
                }
                () = tokio::time::sleep_until(deadline.at()) => {
                    // The guard removes the entry and sends the cancellation.
                    drop(guard);
                    return Err(SessionError::Timeout {
                        method: method.to_string(),
                        after: deadline.elapsed(Instant::now()),
                    });
                }
            }
        };
        guard.finish();
        match outcome {
            Some(Outcome::Result(raw)) => Ok(raw),
            Some(Outcome::Error(error)) => Err(SessionError::Protocol {
                method: method.to_string(),
                error,
            }),
            Some(Outcome::Closed) | None => Err(self.shared.closed_error()),
        }
    }

    async fn request<P: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        timeout: Duration,
    ) -> Result<R, SessionError> {
        let raw = to_raw_params(method, params)?;
        let id = self.next_id();
        let result = self
            .request_raw(id, method, Some(raw), timeout, None)
            .await?;
        parse_result(method, &result)
    }
}

fn to_raw_params<P: Serialize + ?Sized>(method: &str, params: &P) -> Result<RawJson, SessionError> {
    mcp_jsonrpc::to_raw(params).map_err(|e| SessionError::InvalidResponse {
        method: method.to_string(),
        reason: format!("cannot encode the request: {e}"),
    })
}

fn parse_result<R: DeserializeOwned>(method: &str, raw: &RawValue) -> Result<R, SessionError> {
    mcp_jsonrpc::from_raw(raw).map_err(|e| SessionError::InvalidResponse {
        method: method.to_string(),
        reason: e.to_string(),
    })
}

impl Session {
    /// Connects over a transport: `initialize`, version check,
    /// `notifications/initialized`.
    ///
    /// The handshake is bounded by `config.handshake_timeout`. A server that
    /// answers with a version this client does not speak gets the transport
    /// closed and a [`SessionError::VersionMismatch`].
    pub async fn connect(
        transport: impl Transport,
        config: SessionConfig,
    ) -> Result<Session, SessionError> {
        Self::connect_shared(Arc::new(transport), config).await
    }

    /// Like [`connect`](Self::connect), for a transport the caller also keeps
    /// (to read its stderr tail after a failed handshake, say).
    pub async fn connect_shared(
        transport: Arc<dyn Transport>,
        config: SessionConfig,
    ) -> Result<Session, SessionError> {
        let shared = Arc::new(Shared {
            server_name: config.server_name.clone(),
            pending: Mutex::new(PendingTable::default()),
            closed_error: Mutex::new(None),
            invalid: Mutex::new((0, Vec::new())),
            catalog_stale: AtomicBool::new(false),
            handler: config.handler.clone(),
            on_notification: config.on_notification.clone(),
            notifications_seen: AtomicU64::new(0),
        });
        let reader = tokio::spawn(read_loop(Arc::clone(&transport), Arc::clone(&shared)));

        let mut capabilities = config.capabilities.clone();
        if let Some(h) = &config.handler {
            merge_capabilities(&mut capabilities, h.capabilities());
        }
        let params = InitializeParams {
            protocol_version: config.protocol_version.as_str().to_string(),
            capabilities,
            client_info: config.client_info.clone(),
        };
        // The handshake runs on a provisional handle so it uses the same
        // request path as everything else.
        let mut inner = Inner {
            transport: Arc::clone(&transport),
            shared,
            reader,
            next_id: AtomicI64::new(0),
            version: config.protocol_version,
            init: InitializeResult {
                protocol_version: String::new(),
                capabilities: Default::default(),
                server_info: Implementation::new("", ""),
                instructions: None,
                extra: Default::default(),
            },
            catalog: tokio::sync::Mutex::new(None),
            call_gate: tokio::sync::Mutex::new(()),
            config,
        };
        let timeout = inner.config.handshake_timeout;
        let init: InitializeResult = match inner.request("initialize", &params, timeout).await {
            Ok(init) => init,
            Err(e) => {
                transport.close().await;
                return Err(e);
            }
        };
        let Ok(version) = init.protocol_version.parse::<ProtocolVersion>() else {
            transport.close().await;
            return Err(SessionError::VersionMismatch {
                offered: params.protocol_version,
                received: init.protocol_version,
                supported: ProtocolVersion::HANDSHAKE
                    .iter()
                    .map(|v| v.as_str().to_string())
                    .collect(),
            });
        };
        inner.version = version;
        inner.init = init;
        let session = Session {
            inner: Arc::new(inner),
        };
        session.notify("notifications/initialized", None).await?;
        tracing::debug!(server = %session.inner.config.server_name, %version, "initialized");
        Ok(session)
    }

    /// What the server said about itself in `initialize`.
    pub fn server(&self) -> &InitializeResult {
        &self.inner.init
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.version
    }

    /// The configuration the session runs with.
    pub fn config(&self) -> &SessionConfig {
        &self.inner.config
    }

    /// The transport underneath (for its stderr tail or exit status).
    pub fn transport(&self) -> &Arc<dyn Transport> {
        &self.inner.transport
    }

    /// Sends a request with JSON parameters and returns the raw result.
    pub async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Option<Duration>,
    ) -> Result<RawJson, SessionError> {
        let raw = params.map(|p| to_raw_params(method, &p)).transpose()?;
        let id = self.inner.next_id();
        let timeout = timeout.unwrap_or(self.inner.config.request_timeout);
        self.inner.request_raw(id, method, raw, timeout, None).await
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), SessionError> {
        let raw = params.map(|p| to_raw_params(method, &p)).transpose()?;
        let message = Message::Notification(Notification::new(method, raw));
        Ok(self.inner.transport.send(&message).await?)
    }

    /// `ping`: checks the server answers.
    pub async fn ping(&self) -> Result<(), SessionError> {
        self.request("ping", None, None).await.map(|_| ())
    }

    /// The tool catalog: cached, fetched (every page) when missing or marked
    /// stale by `notifications/tools/list_changed`.
    ///
    /// A server without the `tools` capability yields an empty catalog with
    /// a diagnostic, and no request is sent.
    pub async fn list_tools(&self) -> Result<Arc<ToolCatalog>, SessionError> {
        let mut cached = self.inner.catalog.lock().await;
        let stale = self
            .inner
            .shared
            .catalog_stale
            .swap(false, Ordering::AcqRel);
        if let (Some(c), false) = (cached.as_ref(), stale) {
            return Ok(Arc::clone(c));
        }
        let catalog = Arc::new(self.fetch_tools().await?);
        *cached = Some(Arc::clone(&catalog));
        Ok(catalog)
    }

    /// Fetches the catalog again, whatever the cache holds.
    pub async fn refresh_tools(&self) -> Result<Arc<ToolCatalog>, SessionError> {
        self.inner
            .shared
            .catalog_stale
            .store(true, Ordering::Release);
        self.list_tools().await
    }

    async fn fetch_tools(&self) -> Result<ToolCatalog, SessionError> {
        if self.inner.init.capabilities.tools.is_none() {
            return Ok(ToolCatalog::new(
                Vec::new(),
                vec![
                    "tools/list is empty: the server did not declare the `tools` capability in initialize, so it offers no tools"
                        .to_string(),
                ],
            ));
        }
        let method = "tools/list";
        let mut tools = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut cursor: Option<String> = None;
        let timeout = self.inner.config.request_timeout;
        for _ in 0..self.inner.config.max_list_pages {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page: ListToolsResult = self.inner.request(method, &params, timeout).await?;
            tools.extend(page.tools);
            match page.next_cursor {
                None => return Ok(ToolCatalog::new(tools, Vec::new())),
                Some(next) => {
                    if !seen.insert(next.clone()) {
                        return Err(SessionError::InvalidResponse {
                            method: method.into(),
                            reason: format!(
                                "the server repeated the cursor {next:?}; stopped paging"
                            ),
                        });
                    }
                    cursor = Some(next);
                }
            }
        }
        Err(SessionError::InvalidResponse {
            method: method.into(),
            reason: format!(
                "more than {} pages; stopped paging",
                self.inner.config.max_list_pages
            ),
        })
    }

    /// Calls a tool with the session's defaults.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
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
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallToolResult, SessionError> {
        let catalog = self.list_tools().await?;
        let Some(entry) = catalog.get(name) else {
            return Err(SessionError::UnknownTool {
                name: name.to_string(),
                known: catalog.some_names(20),
            });
        };
        match entry.check_arguments(&arguments) {
            Checked::Valid => {}
            Checked::Invalid(problems) => {
                return Err(SessionError::InvalidArguments {
                    tool: name.to_string(),
                    problems,
                });
            }
            Checked::Unchecked(why) => {
                tracing::warn!(server = %self.inner.config.server_name, tool = name, "arguments not checked: {why}");
            }
        }

        let _serial = if self.inner.config.supports_parallel_tool_calls {
            None
        } else {
            Some(self.inner.call_gate.lock().await)
        };
        let id = self.inner.next_id();
        let params = match options.on_progress {
            Some(_) => {
                json!({"name": name, "arguments": arguments, "_meta": {"progressToken": id}})
            }
            None => json!({"name": name, "arguments": arguments}),
        };
        let method = "tools/call";
        let raw = to_raw_params(method, &params)?;
        let timeout = options.timeout.unwrap_or(self.inner.config.request_timeout);
        let result = self
            .inner
            .request_raw(id, method, Some(raw), timeout, options.on_progress.as_ref())
            .await?;
        let result: CallToolResult = parse_result(method, &result)?;
        if let (Some(structured), false) = (&result.structured_content, result.is_error())
            && let Checked::Invalid(problems) = entry.check_output(structured)
        {
            return Err(SessionError::InvalidOutput {
                tool: name.to_string(),
                problems,
            });
        }
        Ok(result)
    }

    /// What the session has seen: frames that were not messages, responses
    /// to unknown ids.
    pub fn diagnostics(&self) -> Diagnostics {
        let (invalid_frames, last_invalid) = self
            .inner
            .shared
            .invalid
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Diagnostics {
            invalid_frames,
            last_invalid,
            unknown_responses: self.inner.shared.lock_pending().unknown_responses,
        }
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.inner.shared.lock_pending().in_flight()
    }

    /// The connection is closed (by either side).
    pub fn is_closed(&self) -> bool {
        self.inner.shared.lock_pending().is_closed()
    }

    /// Closes the connection with the transport's close sequence. Requests
    /// in flight end with a closed error.
    pub async fn close(&self) {
        self.inner.transport.close().await;
        let mut pending = self.inner.shared.lock_pending();
        if !pending.is_closed() {
            let mut err = self
                .inner
                .shared
                .closed_error
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if err.is_none() {
                *err = Some(("closed by the client".into(), None, Vec::new()));
            }
            pending.close();
        }
    }
}

fn merge_capabilities(into: &mut ClientCapabilities, from: ClientCapabilities) {
    into.roots = into.roots.take().or(from.roots);
    into.sampling = into.sampling.take().or(from.sampling);
    into.elicitation = into.elicitation.take().or(from.elicitation);
    into.experimental = into.experimental.take().or(from.experimental);
    for (k, v) in from.extra {
        into.extra.entry(k).or_insert(v);
    }
}

/// Formats a duration for messages.
pub fn describe_duration(d: Duration) -> String {
    fmt_duration(d)
}
