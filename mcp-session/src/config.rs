//! How a session behaves: its settings, the handler of server requests,
//! the listeners.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_stack_jsonrpc::{ErrorObject, RawValue};
use mcp_stack_transport::BoxFuture;
use serde_json::Value;

use mcp_stack_protocol::types::{ClientCapabilities, Implementation, ProgressParams};
use mcp_stack_protocol::{ProtocolMode, ProtocolPin, ProtocolVersion, defaults};

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

impl<H: ClientHandler + ?Sized> ClientHandler for Arc<H> {
    fn capabilities(&self) -> ClientCapabilities {
        (**self).capabilities()
    }

    fn handle<'a>(
        &'a self,
        method: &'a str,
        params: Option<&'a RawValue>,
    ) -> BoxFuture<'a, Option<Result<Value, ErrorObject>>> {
        (**self).handle(method, params)
    }
}

/// A notification from the server, read once into its type
/// (`mcp_stack_protocol::from_server`); the session hands it to the notification
/// listener and to the subscriptions that asked for it. A
/// `notifications/tasks` (2026-07-28) reaches them as
/// [`TaskStatus`](ServerNotification::TaskStatus), its summary.
pub use mcp_stack_protocol::from_server::ServerNotification;

/// The default of [`SessionConfig::max_list_bytes`]: 64 MiB.
pub(crate) const DEFAULT_MAX_LIST_BYTES: usize = 64 * 1024 * 1024;
/// The default of [`SessionConfig::max_list_items`]: 100,000.
pub(crate) const DEFAULT_MAX_LIST_ITEMS: usize = 100_000;

/// Called for every notification from the server.
pub type NotificationListener = Arc<dyn Fn(&ServerNotification) + Send + Sync>;

/// Called for each progress notification of one request.
pub type ProgressListener = Arc<dyn Fn(&ProgressParams) + Send + Sync>;

/// How a session behaves. `Default` gives the documented defaults; the
/// builder methods (named like the fields) change one setting each.
///
/// ```
/// use std::time::Duration;
/// use mcp_stack_session::{ProtocolMode, ProtocolPin, ProtocolVersion, SessionConfig};
///
/// let config = SessionConfig::new()
///     .server_name("files")
///     .request_timeout(Duration::from_secs(20))
///     .protocol(ProtocolPin::Version(ProtocolVersion::V2025_06_18));
/// assert_eq!(config.mode(), ProtocolMode::Handshake);
/// assert_eq!(config.offered_version(), ProtocolVersion::V2025_06_18);
/// assert_eq!(SessionConfig::default().mode(), ProtocolMode::Auto);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct SessionConfig {
    /// The name this client gives in `initialize`.
    pub client_info: Implementation,
    /// Capabilities to declare (merged with the handler's).
    pub capabilities: ClientCapabilities,
    /// Which revision to speak, as one setting: a mode —
    /// [`ProtocolMode::Auto`] (the default: a `server/discover` probe that
    /// falls back to the handshake for a server without `server/discover`),
    /// `Handshake` (offering 2025-11-25) or `Discover` (2026-07-28 only) — or one
    /// revision (a handshake revision is offered in `initialize`; 2026-07-28
    /// means `Discover`).
    pub protocol: ProtocolPin,
    /// In [`ProtocolMode::Auto`], how long a silent `server/discover` probe
    /// waits before the server is taken for a handshake one. Default: 3 s.
    pub probe_timeout: Duration,
    /// For servers without a handshake (2026-07-28): the log level to ask for in each request's
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
    /// Most pages a list (`tools/list`, `resources/list`, `prompts/list` …)
    /// follows before giving up. Default: 1,000 (a server that repeats a
    /// cursor is stopped at once, whatever this says). 100 was too few for
    /// a server with 10,000 resources in pages of 100.
    pub max_list_pages: usize,
    /// Most bytes one fetch of a list (every page of it) may take, counted
    /// on the answers' raw JSON as received. Default: 64 MiB, four answers
    /// at the transports' 16 MiB message limit and some hundred times the
    /// largest real catalogs (a few hundred tools or ten thousand resources
    /// are a few MiB); a server that pages on past it is stopped with
    /// [`SessionError::ListTooLarge`](crate::SessionError::ListTooLarge)
    /// instead of filling memory.
    pub max_list_bytes: usize,
    /// Most entries one fetch of a list may hold, all pages together.
    /// Default: 100,000, ten times the 10,000 resources that made 100 pages
    /// too few (see `max_list_pages`); past it the fetch fails with
    /// [`SessionError::ListTooLarge`](crate::SessionError::ListTooLarge).
    pub max_list_items: usize,
    /// On 2026-07-28, declare the tasks extension
    /// (`io.modelcontextprotocol/tasks`) on every request, so the server may
    /// answer a tool call with a task (which `call_tool` then follows to its
    /// end). Default: true.
    pub tasks_extension: bool,
    /// Answers server requests (sampling, elicitation, roots).
    pub handler: Option<Arc<dyn ClientHandler>>,
    /// Sees every server notification.
    pub on_notification: Option<NotificationListener>,
}

impl fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionConfig")
            .field("client_info", &self.client_info)
            .field("protocol", &self.protocol)
            .field("server_name", &self.server_name)
            .field("request_timeout", &self.request_timeout)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("max_total_timeout", &self.max_total_timeout)
            .field(
                "supports_parallel_tool_calls",
                &self.supports_parallel_tool_calls,
            )
            .field("max_list_pages", &self.max_list_pages)
            .field("max_list_bytes", &self.max_list_bytes)
            .field("max_list_items", &self.max_list_items)
            .field("tasks_extension", &self.tasks_extension)
            .field("handler", &self.handler.is_some())
            .finish_non_exhaustive()
    }
}

macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty),* $(,)?) => {$(
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, $name: $ty) -> Self {
            self.$name = $name;
            self
        }
    )*};
}

impl SessionConfig {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    setters! {
        /// Sets the name this client gives the server.
        client_info: Implementation,
        /// Sets the capabilities to declare (merged with the handler's).
        capabilities: ClientCapabilities,
        /// Sets which revision to speak.
        protocol: ProtocolPin,
        /// Sets how long a silent probe waits before the server is taken for
        /// a handshake one.
        probe_timeout: Duration,
        /// Sets the most multi-round-trip rounds one call may take.
        max_input_rounds: usize,
        /// Sets the bound on each request without progress.
        request_timeout: Duration,
        /// Sets the bound on the lifecycle (handshake or discover).
        handshake_timeout: Duration,
        /// Sets the bound on a request however much progress it reports.
        max_total_timeout: Duration,
        /// Sets whether tool calls may run concurrently.
        supports_parallel_tool_calls: bool,
        /// Sets the most pages a list follows.
        max_list_pages: usize,
        /// Sets the most bytes (raw JSON, all pages) one fetch of a list takes.
        max_list_bytes: usize,
        /// Sets the most entries (all pages) one fetch of a list takes.
        max_list_items: usize,
        /// Sets whether a 2026-07-28 session declares the tasks extension.
        tasks_extension: bool,
    }

    /// Sets the server's name, for logs and errors.
    #[must_use]
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = name.into();
        self
    }

    /// Asks servers without a handshake (2026-07-28) for log messages at this level and above.
    #[must_use]
    pub fn log_level(mut self, level: impl Into<String>) -> Self {
        self.log_level = Some(level.into());
        self
    }

    /// Sets the handler of server requests (sampling, elicitation, roots).
    #[must_use]
    pub fn handler(mut self, handler: impl ClientHandler) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// Sets the listener that sees every server notification.
    #[must_use]
    pub fn on_notification(
        mut self,
        listener: impl Fn(&ServerNotification) + Send + Sync + 'static,
    ) -> Self {
        self.on_notification = Some(Arc::new(listener));
        self
    }

    /// The lifecycle [`protocol`](Self::protocol) asks for.
    pub fn mode(&self) -> ProtocolMode {
        match self.protocol {
            ProtocolPin::Mode(mode) => mode,
            ProtocolPin::Version(v) if !v.has_handshake() => ProtocolMode::Discover,
            _ => ProtocolMode::Handshake,
        }
    }

    /// The revision offered: the pinned one, or the newest of its mode.
    pub fn offered_version(&self) -> ProtocolVersion {
        match self.protocol {
            ProtocolPin::Version(v) => v,
            ProtocolPin::Mode(ProtocolMode::Discover) => ProtocolVersion::V2026_07_28,
            _ => ProtocolVersion::LATEST_HANDSHAKE,
        }
    }

    /// Applies a protocol pin as configs write it: `handshake`, `discover`,
    /// `auto` (or the older `legacy`, `modern`), or a revision date (one
    /// without a handshake selects the discover mode).
    ///
    /// ```
    /// use mcp_stack_session::{ProtocolMode, SessionConfig};
    /// let mut c = SessionConfig::default();
    /// c.pin_protocol("2026-07-28").unwrap();
    /// assert_eq!(c.mode(), ProtocolMode::Discover);
    /// c.pin_protocol("2025-06-18").unwrap();
    /// assert_eq!((c.mode(), c.offered_version().as_str()), (ProtocolMode::Handshake, "2025-06-18"));
    /// assert!(c.pin_protocol("1999-01-01").is_err());
    /// ```
    pub fn pin_protocol(&mut self, pin: &str) -> Result<(), mcp_stack_protocol::UnknownVersion> {
        self.protocol = pin.parse()?;
        Ok(())
    }
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            client_info: Implementation::new("mcp-client-rs", env!("CARGO_PKG_VERSION")),
            capabilities: ClientCapabilities::default(),
            protocol: ProtocolPin::Mode(ProtocolMode::Auto),
            probe_timeout: defaults::PROBE_TIMEOUT,
            log_level: None,
            max_input_rounds: 8,
            server_name: "server".into(),
            request_timeout: defaults::REQUEST_TIMEOUT,
            handshake_timeout: defaults::HANDSHAKE_TIMEOUT,
            max_total_timeout: defaults::MAX_TOTAL_TIMEOUT,
            supports_parallel_tool_calls: defaults::SUPPORTS_PARALLEL_TOOL_CALLS,
            max_list_pages: 1000,
            max_list_bytes: DEFAULT_MAX_LIST_BYTES,
            max_list_items: DEFAULT_MAX_LIST_ITEMS,
            tasks_extension: true,
            handler: None,
            on_notification: None,
        }
    }
}

/// Per-call settings.
///
/// ```
/// use std::time::Duration;
/// let options = mcp_stack_session::CallOptions::new()
///     .timeout(Duration::from_secs(5))
///     .on_progress(|p| eprintln!("{} of {:?}", p.progress(), p.total()));
/// assert_eq!(options.timeout, Some(Duration::from_secs(5)));
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Overrides the session's request timeout for this call.
    pub timeout: Option<Duration>,
    /// Receives this call's progress notifications. Progress also extends
    /// the timeout, up to the session's `max_total_timeout`.
    pub on_progress: Option<ProgressListener>,
    /// For [`call_tool_as_task`](crate::Session::call_tool_as_task) on
    /// 2025-11-25: how long the server is asked to keep the task.
    pub task_ttl: Option<Duration>,
}

impl CallOptions {
    /// No overrides.
    pub fn new() -> Self {
        Self::default()
    }

    /// Overrides the session's request timeout for this call.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Asks (2025-11-25) that a task made of this call be kept this long.
    #[must_use]
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.task_ttl = Some(ttl);
        self
    }

    /// Receives this call's progress notifications.
    #[must_use]
    pub fn on_progress(
        mut self,
        listener: impl Fn(&ProgressParams) + Send + Sync + 'static,
    ) -> Self {
        self.on_progress = Some(Arc::new(listener));
        self
    }
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("on_progress", &self.on_progress.is_some())
            .field("task_ttl", &self.task_ttl)
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
    /// Requests from the server being answered now (sampling, elicitation,
    /// roots): at most 32 at once.
    pub answering: usize,
    /// Requests from the server refused because 32 were being answered.
    pub refused_server_requests: u64,
    /// Notifications dropped, oldest first, because the code they were for
    /// (a call's progress listener, a subscription, a notification
    /// stream) fell 256 behind.
    pub dropped_notifications: u64,
    /// Notification streams open now ([`Session::notifications`](crate::Session::notifications));
    /// a dropped one is closed at once.
    pub notification_streams: usize,
}
