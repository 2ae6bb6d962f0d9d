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
use mcp_transport::{
    BoxFuture, InvalidFrame, Lifecycle, Received, SendContext, Transport, TransportError,
    TransportKind,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use mcp_protocol::meta::RequestMeta;
use mcp_protocol::modern::{CacheHints, DiscoverResult, InputRequest, InputRequiredResult};
use mcp_protocol::types::{
    CallToolResult, CancelledParams, ClientCapabilities, Implementation, InitializeParams,
    InitializeResult, ListToolsResult, LoggingMessageParams, ProgressParams, ReadResourceResult,
    Tool,
};
use mcp_protocol::{
    ProtocolMode, ProtocolPin, ProtocolVersion, codes as mcp_codes, defaults, methods, x_mcp_header,
};

use crate::error::SessionError;
use crate::lifecycle::{ProbeOutcome, classify_probe};
use crate::pending::{Deadline, Delivery, Outcome, PendingTable};
use crate::subscriptions::{
    ListenFilter, Subscribers, Subscription, SubscriptionEvent, subscription_id,
};
use crate::tools::{Checked, ToolCatalog};

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
    /// The version offered in `initialize`. Default: 2025-11-25. A modern
    /// version here (2026-07-28) means [`ProtocolMode::Modern`].
    pub protocol_version: ProtocolVersion,
    /// Which lifecycle to use: the handshake, 2026-07-28's
    /// `server/discover`, or (the default) a `server/discover` probe that
    /// falls back to the handshake for a legacy server.
    pub mode: ProtocolMode,
    /// In [`ProtocolMode::Auto`], how long a silent `server/discover` probe
    /// waits before the server is taken for a legacy one. Default: 3 s.
    pub probe_timeout: Duration,
    /// For modern servers: the log level to ask for in each request's
    /// `_meta` (servers send no log messages without one). Default: none.
    pub log_level: Option<String>,
    /// Most multi-round-trip rounds (`input_required` results) one call may
    /// take. Default: 8.
    pub max_input_rounds: usize,
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
            .field("mode", &self.mode)
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

impl SessionConfig {
    /// Applies a protocol pin as configs write it: `legacy`, `modern`,
    /// `auto`, or a revision date (a modern one selects the modern mode).
    ///
    /// ```
    /// use mcp_session::{ProtocolMode, SessionConfig};
    /// let mut c = SessionConfig::default();
    /// c.pin_protocol("2026-07-28").unwrap();
    /// assert_eq!(c.mode, ProtocolMode::Modern);
    /// c.pin_protocol("2025-06-18").unwrap();
    /// assert_eq!((c.mode, c.protocol_version.as_str()), (ProtocolMode::Legacy, "2025-06-18"));
    /// assert!(c.pin_protocol("1999-01-01").is_err());
    /// ```
    pub fn pin_protocol(&mut self, pin: &str) -> Result<(), mcp_protocol::UnknownVersion> {
        match pin.parse::<ProtocolPin>()? {
            ProtocolPin::Mode(mode) => self.mode = mode,
            ProtocolPin::Version(version) => {
                self.protocol_version = version;
                self.mode = if version.is_modern() {
                    ProtocolMode::Modern
                } else {
                    ProtocolMode::Legacy
                };
            }
            // `ProtocolPin` may grow; a pin we cannot apply is no pin.
            _ => return Err(mcp_protocol::UnknownVersion(pin.to_string())),
        }
        Ok(())
    }
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            client_info: Implementation::new("mcp-client-rs", env!("CARGO_PKG_VERSION")),
            capabilities: ClientCapabilities::default(),
            protocol_version: ProtocolVersion::LATEST_HANDSHAKE,
            mode: ProtocolMode::Auto,
            probe_timeout: defaults::PROBE_TIMEOUT,
            log_level: None,
            max_input_rounds: 8,
            server_name: "server".into(),
            request_timeout: defaults::REQUEST_TIMEOUT,
            handshake_timeout: defaults::HANDSHAKE_TIMEOUT,
            max_total_timeout: defaults::MAX_TOTAL_TIMEOUT,
            supports_parallel_tool_calls: defaults::SUPPORTS_PARALLEL_TOOL_CALLS,
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
    subscribers: Arc<Subscribers>,
    /// The revision in use, once the lifecycle has settled it.
    revision: std::sync::OnceLock<ProtocolVersion>,
}

impl Shared {
    /// What the transport is told about the messages the session sends.
    fn context(&self) -> SendContext {
        match self.revision.get() {
            Some(v) => SendContext::new().revision(*v),
            None => SendContext::new(),
        }
    }

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

/// The catalog and how long it stays fresh.
struct CachedCatalog {
    catalog: Arc<ToolCatalog>,
    /// `None`: until the server says the list changed (legacy servers send
    /// no TTL). `Some`: the modern server's `ttlMs` from the fetch.
    fresh_until: Option<Instant>,
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
    /// Per-request metadata, for a modern session.
    meta: Option<RequestMeta>,
    catalog: tokio::sync::Mutex<Option<CachedCatalog>>,
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
            Ok(Received::Failed(failure)) => {
                deliver(&shared, &failure.id, Outcome::Failed(failure.error));
            }
            Ok(_) => {}
            Err(e) => {
                let info = match e {
                    TransportError::Closed {
                        reason,
                        exit,
                        stderr_tail,
                    } => (reason, exit, stderr_tail),
                    other => {
                        let process = transport.process();
                        (
                            other.to_string(),
                            process.and_then(|p| p.exit_info()),
                            process.map(|p| p.stderr_tail()).unwrap_or_default(),
                        )
                    }
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
                let context = shared.context();
                if let Err(e) = transport.send_with(&answer, &context).await {
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
    let outcome = if request.method == methods::PING {
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
    // Notifications of a `subscriptions/listen` stream name their
    // subscription; the params parsed to find it are used once more below.
    let mut parsed = if shared.subscribers.is_empty() {
        None
    } else {
        parse("notification")
    };
    let subscription = subscription_id(parsed.as_ref());
    let mut parse = |what: &str| parsed.take().or_else(|| parse(what));
    if let Some(id) = &subscription
        && n.method == methods::SUBSCRIPTIONS_ACKNOWLEDGED
    {
        let filter = parse("acknowledgment")
            .and_then(|p| p.get("notifications").cloned())
            .and_then(|f| serde_json::from_value::<ListenFilter>(f).ok())
            .unwrap_or_default();
        shared
            .subscribers
            .route(id, SubscriptionEvent::Acknowledged(filter));
        return;
    }
    let event = match n.method.as_str() {
        methods::PROGRESS => {
            match parse("progress").and_then(|v| serde_json::from_value::<ProgressParams>(v).ok()) {
                Some(p) => {
                    shared.lock_pending().progress(p.clone());
                    ServerNotification::Progress(p)
                }
                None => return,
            }
        }
        methods::TOOLS_LIST_CHANGED => {
            shared.catalog_stale.store(true, Ordering::Release);
            ServerNotification::ToolsListChanged
        }
        methods::MESSAGE => {
            match parse("log").and_then(|v| serde_json::from_value::<LoggingMessageParams>(v).ok())
            {
                Some(m) => {
                    log_server_message(&shared.server_name, &m);
                    ServerNotification::Log(m)
                }
                None => return,
            }
        }
        methods::CANCELLED => {
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
    if let Some(id) = &subscription {
        shared
            .subscribers
            .route(id, SubscriptionEvent::Notification(event));
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

/// `tools/call` parameters, serialized straight from borrowed parts.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallParams<'a> {
    name: &'a str,
    arguments: &'a Value,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<&'a serde_json::Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_responses: Option<&'a serde_json::Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_state: Option<&'a str>,
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
        // The spec forbids cancelling `initialize`; a `server/discover` probe
        // may go to a legacy server that knows no cancellation yet.
        if still_waiting && !matches!(self.method, methods::INITIALIZE | methods::SERVER_DISCOVER) {
            let params = json!({"requestId": self.id, "reason": "the client stopped waiting"});
            let transport = Arc::clone(&self.session.transport);
            let context = self.session.context().cancels(self.id.clone());
            if let Ok(raw) = mcp_jsonrpc::to_raw(&params) {
                let note = Message::Notification(Notification::new(methods::CANCELLED, Some(raw)));
                // Drop cannot await; a runtime is present wherever requests run.
                if let Ok(handle) = tokio::runtime::Handle::try_current() {
                    handle.spawn(async move {
                        let _ = transport.send_with(&note, &context).await;
                    });
                }
            }
        }
    }
}

impl Inner {
    /// Whether requests mirror tool arguments into `Mcp-Param-*` headers:
    /// a 2026-07-28 session over streamable HTTP.
    fn mirrors_headers(&self) -> bool {
        self.version.is_modern() && self.transport.kind() == TransportKind::StreamableHttp
    }

    /// The context of an ordinary message: the session's revision.
    fn context(&self) -> SendContext {
        SendContext::new().revision(self.version)
    }

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
        context: &SendContext,
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
        // The deadline covers sending too: an HTTP transport's send may wait
        // for the answer's head.
        let mut deadline = Deadline::new(Instant::now(), timeout, self.config.max_total_timeout);
        match tokio::time::timeout_at(deadline.at(), self.transport.send_with(&message, context))
            .await
        {
            Ok(sent) => sent?,
            Err(_) => {
                drop(guard);
                return Err(SessionError::Timeout {
                    method: method.to_string(),
                    after: deadline.elapsed(Instant::now()),
                });
            }
        }

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
            Some(Outcome::Failed(error)) => Err(SessionError::Transport(error)),
            Some(Outcome::Closed) | None => Err(self.shared.closed_error()),
        }
    }

    async fn request<P: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        timeout: Duration,
        context: &SendContext,
    ) -> Result<R, SessionError> {
        let raw = self.params(method, params)?;
        let id = self.next_id();
        let result = self
            .request_raw(id, method, Some(raw), timeout, None, context)
            .await?;
        parse_result(method, &result)
    }

    /// Encodes request parameters, adding the per-request `_meta` of a
    /// modern session.
    fn params<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<RawJson, SessionError> {
        match &self.meta {
            None => to_raw_params(method, params),
            Some(meta) => {
                let mut value =
                    serde_json::to_value(params).map_err(|e| SessionError::InvalidResponse {
                        method: method.to_string(),
                        reason: format!("cannot encode the request: {e}"),
                    })?;
                meta.apply(&mut value);
                to_raw_params(method, &value)
            }
        }
    }

    /// The `initialize` handshake, offering `offered`.
    async fn handshake(
        &mut self,
        offered: ProtocolVersion,
        capabilities: &ClientCapabilities,
    ) -> Result<(), SessionError> {
        let params = InitializeParams {
            protocol_version: offered.as_str().to_string(),
            capabilities: capabilities.clone(),
            client_info: self.config.client_info.clone(),
        };
        let timeout = self.config.handshake_timeout;
        let context = SendContext::new().lifecycle(Lifecycle::Initialize);
        let init: InitializeResult = self
            .request(methods::INITIALIZE, &params, timeout, &context)
            .await?;
        let version = init
            .protocol_version
            .parse::<ProtocolVersion>()
            .ok()
            .filter(|v| !v.is_modern());
        let Some(version) = version else {
            return Err(SessionError::VersionMismatch {
                offered: params.protocol_version,
                received: init.protocol_version,
                supported: ProtocolVersion::HANDSHAKE
                    .iter()
                    .map(|v| v.as_str().to_string())
                    .collect(),
            });
        };
        self.version = version;
        self.init = init;
        Ok(())
    }

    /// `server/discover`: the modern lifecycle, or (with `fallback`) the
    /// stdio probe that falls back to the handshake for a legacy server.
    async fn discover(
        &mut self,
        capabilities: &ClientCapabilities,
        fallback: bool,
    ) -> Result<(), SessionError> {
        let modern = ProtocolVersion::V2026_07_28;
        let mut meta = RequestMeta::new(modern.as_str(), &self.config.client_info, capabilities);
        if let Some(level) = &self.config.log_level {
            meta = meta.with_log_level(level);
        }
        let mut params = json!({});
        meta.apply(&mut params);
        let method = methods::SERVER_DISCOVER;
        let raw = to_raw_params(method, &params)?;
        let timeout = if fallback {
            self.config.probe_timeout.min(self.config.handshake_timeout)
        } else {
            self.config.handshake_timeout
        };
        let ours = [modern.as_str()];
        // A server may refuse a first request with UnsupportedProtocolVersion
        // while listing our version as supported: the spec's answer is to
        // retry with a listed version, so the probe is sent at most twice.
        let mut retried = false;
        let context = SendContext::new()
            .revision(modern)
            .lifecycle(Lifecycle::Discover);
        let outcome = loop {
            let id = self.next_id();
            let outcome = match self
                .request_raw(id, method, Some(raw.clone()), timeout, None, &context)
                .await
            {
                Ok(raw) => {
                    let value: Value = parse_result(method, &raw)?;
                    match classify_probe(Ok(&value), &ours) {
                        ProbeOutcome::Modern(_) => {
                            let discovered: DiscoverResult = serde_json::from_value(value)
                                .map_err(|e| SessionError::InvalidResponse {
                                    method: method.into(),
                                    reason: e.to_string(),
                                })?;
                            self.become_modern(discovered, meta);
                            return Ok(());
                        }
                        other => other,
                    }
                }
                Err(SessionError::Protocol { error, .. }) => {
                    let data: Option<Value> = error.data_as().and_then(Result::ok);
                    match classify_probe(Err((error.code, data.as_ref())), &ours) {
                        ProbeOutcome::Legacy if !fallback => {
                            return Err(SessionError::LegacyServer {
                                reason: format!("it answered server/discover with {error}"),
                            });
                        }
                        ProbeOutcome::ModernError(_) => {
                            return Err(SessionError::Protocol {
                                method: method.into(),
                                error,
                            });
                        }
                        ProbeOutcome::Modern(v) if !retried => {
                            tracing::debug!(server = %self.config.server_name, "server/discover refused ({error}) while {v} is listed as supported; retrying once");
                            retried = true;
                            continue;
                        }
                        other => other,
                    }
                }
                Err(e) if e.is_timeout() && fallback => ProbeOutcome::Legacy,
                // HTTP: a 400, 404 or 405 whose body is not a JSON-RPC error
                // (those arrive as protocol errors, above) is a legacy server.
                Err(SessionError::Transport(e))
                    if fallback && matches!(e.http_status(), Some(400 | 404 | 405)) =>
                {
                    tracing::debug!(server = %self.config.server_name, "server/discover refused ({e})");
                    ProbeOutcome::Legacy
                }
                Err(e) => return Err(e),
            };
            break outcome;
        };
        match outcome {
            ProbeOutcome::Legacy => {
                tracing::debug!(server = %self.config.server_name, "legacy server: falling back to initialize");
                self.handshake(ProtocolVersion::LATEST_HANDSHAKE, capabilities)
                    .await
            }
            ProbeOutcome::ModernUnsupported(supported) => {
                // A server that names a handshake version it supports gets
                // the handshake with that version.
                let legacy = ProtocolVersion::HANDSHAKE
                    .into_iter()
                    .find(|v| supported.iter().any(|s| s == v.as_str()));
                match legacy {
                    Some(v) => self.handshake(v, capabilities).await,
                    None => Err(SessionError::VersionMismatch {
                        offered: modern.as_str().into(),
                        received: supported.join(", "),
                        supported: ProtocolVersion::ALL
                            .iter()
                            .map(|v| v.as_str().to_string())
                            .collect(),
                    }),
                }
            }
            // A recognised modern error naming our version: modern after all.
            _ => Err(SessionError::InvalidResponse {
                method: method.into(),
                reason: "the server refused server/discover while naming 2026-07-28 as supported"
                    .into(),
            }),
        }
    }

    fn become_modern(&mut self, discovered: DiscoverResult, meta: RequestMeta) {
        let server_info = discovered
            .server_info()
            .unwrap_or_else(|| Implementation::new("(unnamed server)", ""));
        let mut extra = discovered.extra;
        extra.insert(
            "supportedVersions".into(),
            Value::from(discovered.supported_versions),
        );
        self.version = ProtocolVersion::V2026_07_28;
        self.meta = Some(meta);
        self.init = InitializeResult {
            protocol_version: ProtocolVersion::V2026_07_28.as_str().into(),
            capabilities: discovered.capabilities,
            server_info,
            instructions: discovered.instructions,
            extra,
        };
    }
}

/// Leaves out the tools whose `x-mcp-header` annotations are invalid, as
/// the 2026-07-28 spec requires over HTTP; says why for each.
fn drop_invalid_header_tools(server: &str, tools: &mut Vec<Tool>) -> Vec<String> {
    let mut diagnostics = Vec::new();
    tools.retain(|tool| match x_mcp_header::annotations(&tool.input_schema) {
        Ok(_) => true,
        Err(why) => {
            tracing::warn!(server, tool = %tool.name, "tool left out: {why}");
            diagnostics.push(format!(
                "tool `{}` left out: {why} (the 2026-07-28 spec excludes tools with invalid \
                 x-mcp-header annotations)",
                tool.name
            ));
            false
        }
    });
    diagnostics
}

/// Whether an error answer to `resources/read` of `uri` says the resource
/// does not exist: -32002 (before 2026-07-28), or -32602 naming the URI in
/// its data or saying "not found" (an invalid-params error about something
/// else stays a protocol error).
fn is_not_found(error: &mcp_jsonrpc::ErrorObject, uri: &str) -> bool {
    if error.code == mcp_codes::RESOURCE_NOT_FOUND {
        return true;
    }
    if error.code != mcp_jsonrpc::codes::INVALID_PARAMS {
        return false;
    }
    let data: Option<Value> = error.data_as().and_then(Result::ok);
    data.as_ref()
        .and_then(|d| d.get("uri"))
        .and_then(Value::as_str)
        == Some(uri)
        || error.message.to_ascii_lowercase().contains("not found")
}

/// `base` with the `Mcp-Param-*` headers of a call, for the transport.
fn param_context(
    base: SendContext,
    params: &[x_mcp_header::HeaderParam],
    arguments: &Value,
) -> SendContext {
    x_mcp_header::param_values(params, arguments)
        .into_iter()
        .fold(base, |c, (name, value)| c.param_header(name, value))
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
            subscribers: Arc::default(),
            revision: std::sync::OnceLock::new(),
        });
        let reader = tokio::spawn(read_loop(Arc::clone(&transport), Arc::clone(&shared)));

        let mut capabilities = config.capabilities.clone();
        if let Some(h) = &config.handler {
            merge_capabilities(&mut capabilities, h.capabilities());
        }
        let mode = if config.protocol_version.is_modern() {
            ProtocolMode::Modern
        } else {
            config.mode
        };
        // The lifecycle runs on a provisional handle so it uses the same
        // request path as everything else.
        let mut inner = Inner {
            transport: Arc::clone(&transport),
            shared,
            reader,
            next_id: AtomicI64::new(0),
            version: config.protocol_version,
            meta: None,
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
        let started = match mode {
            ProtocolMode::Modern => inner.discover(&capabilities, false).await,
            ProtocolMode::Auto => inner.discover(&capabilities, true).await,
            _ => {
                let offered = inner.config.protocol_version;
                inner.handshake(offered, &capabilities).await
            }
        };
        if let Err(e) = started {
            transport.close().await;
            return Err(e);
        }
        let version = inner.version;
        let session = Session {
            inner: Arc::new(inner),
        };
        session.inner.shared.revision.get_or_init(|| version);
        if !version.is_modern() {
            let context = session.inner.context().lifecycle(Lifecycle::Initialized);
            let message = Message::Notification(Notification::new(methods::INITIALIZED, None));
            session
                .inner
                .transport
                .send_with(&message, &context)
                .await?;
        }
        tracing::debug!(server = %session.inner.config.server_name, %version, "connected");
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
        let mut context = self.inner.context();
        // What a 2026-07-28 request mirrors as `Mcp-Name`.
        if self.inner.version.is_modern()
            && let Some(name) = x_mcp_header::name_field(method)
                .and_then(|field| params.as_ref()?.get(field)?.as_str())
        {
            context = context.name(name);
        }
        let raw = match (params, &self.inner.meta) {
            (Some(p), _) => Some(self.inner.params(method, &p)?),
            (None, Some(_)) => Some(self.inner.params(method, &json!({}))?),
            (None, None) => None,
        };
        let id = self.inner.next_id();
        let timeout = timeout.unwrap_or(self.inner.config.request_timeout);
        self.inner
            .request_raw(id, method, raw, timeout, None, &context)
            .await
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), SessionError> {
        let raw = params.map(|p| to_raw_params(method, &p)).transpose()?;
        let message = Message::Notification(Notification::new(method, raw));
        let context = self.inner.context();
        Ok(self.inner.transport.send_with(&message, &context).await?)
    }

    /// Checks the server answers: `ping`, or `server/discover` for a modern
    /// server (2026-07-28 has no `ping`).
    pub async fn ping(&self) -> Result<(), SessionError> {
        let method = if self.inner.version.is_modern() {
            methods::SERVER_DISCOVER
        } else {
            methods::PING
        };
        self.request(method, None, None).await.map(|_| ())
    }

    /// Opens a `subscriptions/listen` stream (protocol 2026-07-28) for the
    /// notifications in `filter`, and waits (up to the request timeout) for
    /// the server's acknowledgment. See [`crate::subscriptions`].
    ///
    /// The subscription holds the session open while it lives. A legacy
    /// session gets [`SessionError::NeedsModern`]: servers of the handshake
    /// era send change notifications without being asked.
    pub async fn listen(&self, filter: ListenFilter) -> Result<Subscription, SessionError> {
        if !self.inner.version.is_modern() {
            return Err(SessionError::NeedsModern {
                feature: methods::SUBSCRIPTIONS_LISTEN,
                version: self.inner.version.to_string(),
                advice: "servers of earlier revisions send change notifications unasked, to the \
                         session's notification listener",
            });
        }
        let method = methods::SUBSCRIPTIONS_LISTEN;
        let raw = self
            .inner
            .params(method, &json!({ "notifications": filter }))?;
        let id = self.inner.next_id();
        let subscribers = Arc::clone(&self.inner.shared.subscribers);
        let events = subscribers.insert(id.clone());
        let inner = Arc::clone(&self.inner);
        let request_id = id.clone();
        let task = tokio::spawn(async move {
            // The stream lasts until either side ends it: no deadline.
            let forever = Duration::from_secs(100 * 365 * 24 * 3600);
            let context = inner.context();
            let outcome = inner
                .request_raw(
                    request_id.clone(),
                    method,
                    Some(raw),
                    forever,
                    None,
                    &context,
                )
                .await
                .map(drop);
            inner.shared.subscribers.end(&request_id, outcome);
        });
        // Built first: dropping it on a failure below cancels the request.
        let mut subscription = Subscription {
            id,
            acknowledged: ListenFilter::default(),
            events,
            task,
            subscribers,
            ended: false,
        };
        let timeout = self.inner.config.request_timeout;
        let acknowledged = tokio::time::timeout(timeout, async {
            loop {
                match subscription.events.recv().await {
                    Some(SubscriptionEvent::Acknowledged(filter)) => return Ok(filter),
                    // The spec puts the acknowledgment first; tolerate one late.
                    Some(SubscriptionEvent::Notification(_)) => continue,
                    Some(SubscriptionEvent::Ended(Ok(()))) => {
                        return Err(SessionError::InvalidResponse {
                            method: method.into(),
                            reason: "the server ended the subscription before acknowledging it"
                                .into(),
                        });
                    }
                    Some(SubscriptionEvent::Ended(Err(e))) => return Err(e),
                    None => return Err(SessionError::Closed),
                }
            }
        })
        .await;
        match acknowledged {
            Ok(Ok(filter)) => {
                subscription.acknowledged = filter;
                Ok(subscription)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(SessionError::Timeout {
                method: format!("{method} (waiting for its acknowledgment)"),
                after: timeout,
            }),
        }
    }

    /// The tool catalog: cached, fetched (every page) when missing or marked
    /// stale by `notifications/tools/list_changed`.
    ///
    /// A server without the `tools` capability yields an empty catalog with
    /// a diagnostic, and no request is sent.
    pub async fn list_tools(&self) -> Result<Arc<ToolCatalog>, SessionError> {
        self.catalog(true).await
    }

    /// The catalog, fetched when missing or invalidated by
    /// `notifications/tools/list_changed`; when `honour_ttl`, also when a
    /// modern server's `ttlMs` has run out. (A call only needs the schemas to
    /// check its arguments, so it uses a catalog past its TTL rather than
    /// fetching before every call.)
    async fn catalog(&self, honour_ttl: bool) -> Result<Arc<ToolCatalog>, SessionError> {
        let mut cached = self.inner.catalog.lock().await;
        let invalidated = self
            .inner
            .shared
            .catalog_stale
            .swap(false, Ordering::AcqRel);
        if let Some(c) = cached.as_ref() {
            let expired = honour_ttl && c.fresh_until.is_some_and(|t| Instant::now() >= t);
            if !invalidated && !expired {
                return Ok(Arc::clone(&c.catalog));
            }
        }
        let (catalog, ttl) = self.fetch_tools().await?;
        let catalog = Arc::new(catalog);
        *cached = Some(CachedCatalog {
            catalog: Arc::clone(&catalog),
            fresh_until: ttl.map(|ttl| Instant::now() + ttl),
        });
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

    /// Every page of `tools/list`, and (for a modern server) how long the
    /// result stays fresh: the shortest `ttlMs` of its pages, 0 when absent.
    async fn fetch_tools(&self) -> Result<(ToolCatalog, Option<Duration>), SessionError> {
        let modern = self.inner.version.is_modern();
        if self.inner.init.capabilities.tools.is_none() {
            let why = "tools/list is empty: the server did not declare the `tools` capability, so it offers no tools";
            return Ok((ToolCatalog::new(Vec::new(), vec![why.to_string()]), None));
        }
        let method = methods::TOOLS_LIST;
        let mut tools = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut cursor: Option<String> = None;
        let mut ttl: Option<Duration> = None;
        let timeout = self.inner.config.request_timeout;
        for _ in 0..self.inner.config.max_list_pages {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page: ListToolsResult = self
                .inner
                .request(method, &params, timeout, &self.inner.context())
                .await?;
            if modern {
                let page_ttl = CacheHints::of_map(&page.extra).ttl;
                ttl = Some(ttl.map_or(page_ttl, |t| t.min(page_ttl)));
            }
            tools.extend(page.tools);
            match page.next_cursor {
                None => {
                    let diagnostics = if self.inner.mirrors_headers() {
                        drop_invalid_header_tools(&self.inner.config.server_name, &mut tools)
                    } else {
                        Vec::new()
                    };
                    return Ok((ToolCatalog::new(tools, diagnostics), ttl));
                }
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
        let mut catalog = self.catalog(false).await?;
        if catalog.get(name).is_none() {
            // The server may have added the tool since the catalog was fetched.
            catalog = self.refresh_tools().await?;
        }
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
        let method = methods::TOOLS_CALL;
        let timeout = options.timeout.unwrap_or(self.inner.config.request_timeout);
        let mirror_headers = self.inner.mirrors_headers();
        let base = self.inner.context().name(name);
        let mut context = if mirror_headers {
            param_context(base.clone(), entry.header_params(), &arguments)
        } else {
            base.clone()
        };
        let mut refetched = false;
        let mut input: Option<(serde_json::Map<String, Value>, Option<String>)> = None;
        let mut rounds = 0usize;
        loop {
            let id = self.inner.next_id();
            let mut meta = self
                .inner
                .meta
                .as_ref()
                .map(|m| m.entries().clone())
                .unwrap_or_default();
            if options.on_progress.is_some() {
                meta.insert(
                    mcp_protocol::meta::PROGRESS_TOKEN.into(),
                    serde_json::to_value(&id).unwrap_or_default(),
                );
            }
            let params = CallParams {
                name,
                arguments: &arguments,
                meta: (!meta.is_empty()).then_some(&meta),
                input_responses: input.as_ref().map(|(r, _)| r),
                request_state: input.as_ref().and_then(|(_, s)| s.as_deref()),
            };
            let raw = to_raw_params(method, &params)?;
            let sent = self
                .inner
                .request_raw(
                    id,
                    method,
                    Some(raw),
                    timeout,
                    options.on_progress.as_ref(),
                    &context,
                )
                .await;
            let result = match sent {
                Err(SessionError::Protocol { error, .. })
                    if mirror_headers && !refetched && error.code == mcp_codes::HEADER_MISMATCH =>
                {
                    // The spec's remedy: the tool's schema may have changed;
                    // fetch the catalog again and retry with its headers, once.
                    refetched = true;
                    tracing::info!(server = %self.inner.config.server_name, tool = name, "header mismatch ({}); fetching tools/list again and retrying", error.message);
                    let fresh = self.refresh_tools().await?;
                    let Some(entry) = fresh.get(name) else {
                        return Err(SessionError::UnknownTool {
                            name: name.to_string(),
                            known: fresh.some_names(20),
                        });
                    };
                    context = param_context(base.clone(), entry.header_params(), &arguments);
                    continue;
                }
                other => other?,
            };
            let parsed: CallToolResult = parse_result(method, &result)?;
            if parsed.extra.get("resultType").and_then(Value::as_str) == Some("input_required") {
                rounds += 1;
                if rounds > self.inner.config.max_input_rounds {
                    return Err(SessionError::InvalidResponse {
                        method: method.into(),
                        reason: format!(
                            "the server still asked for input after {} rounds; gave up",
                            self.inner.config.max_input_rounds
                        ),
                    });
                }
                let asked: InputRequiredResult = parse_result(method, &result)?;
                let mut responses = serde_json::Map::new();
                for (key, request) in asked.input_requests.iter().flatten() {
                    responses.insert(key.clone(), self.answer_input(request).await?);
                }
                // `requestState` goes back exactly as it came, or not at all.
                input = Some((responses, asked.request_state));
                continue;
            }
            if let (Some(structured), false) = (&parsed.structured_content, parsed.is_error())
                && let Checked::Invalid(problems) = entry.check_output(structured)
            {
                return Err(SessionError::InvalidOutput {
                    tool: name.to_string(),
                    problems,
                });
            }
            return Ok(parsed);
        }
    }

    /// Reads a resource. A resource the server does not have is
    /// [`SessionError::ResourceNotFound`], whichever code the server's
    /// revision uses for it (-32602 from 2026-07-28 on, -32002 before).
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, SessionError> {
        let method = methods::RESOURCES_READ;
        let timeout = self.inner.config.request_timeout;
        match self
            .inner
            .request(
                method,
                &json!({ "uri": uri }),
                timeout,
                &self.inner.context().name(uri),
            )
            .await
        {
            Err(SessionError::Protocol { error, .. }) if is_not_found(&error, uri) => {
                Err(SessionError::ResourceNotFound {
                    uri: uri.to_string(),
                    message: error.message,
                })
            }
            other => other,
        }
    }

    /// Answers one of a server's input requests (multi-round-trip results)
    /// through the handler. Without a handler, elicitation is declined and
    /// anything else is an error.
    async fn answer_input(&self, request: &InputRequest) -> Result<Value, SessionError> {
        let params = match &request.params {
            Some(p) => Some(to_raw_params(&request.method, p)?),
            None => None,
        };
        let answer = match &self.inner.config.handler {
            Some(h) => h.handle(&request.method, params.as_deref()).await,
            None => None,
        };
        match answer {
            Some(Ok(value)) => Ok(value),
            Some(Err(error)) => Err(SessionError::InputRequest {
                method: request.method.clone(),
                reason: error.to_string(),
            }),
            None if request.method == methods::ELICITATION_CREATE => {
                Ok(json!({"action": "decline"}))
            }
            None => Err(SessionError::InputRequest {
                method: request.method.clone(),
                reason: "this client has no handler for it".into(),
            }),
        }
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
