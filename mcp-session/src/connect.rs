//! Connecting: the lifecycle (the `initialize` handshake, 2026-07-28's
//! `server/discover`, or the probe that picks one), driven here; the
//! decisions are in [`crate::lifecycle`].

use std::sync::atomic::{AtomicI64, AtomicU64};
use std::sync::{Arc, Mutex};

use mcp_jsonrpc::{Message, Notification, RawJson};
use mcp_transport::{Lifecycle as Lifecycle_, SendContext, Transport, TransportError};
use serde_json::{Value, json};

use mcp_protocol::discover::DiscoverResult;
use mcp_protocol::meta::RequestMeta;
use mcp_protocol::types::{ClientCapabilities, Implementation, InitializeParams, InitializeResult};
use mcp_protocol::{ProtocolMode, ProtocolPin, ProtocolVersion, methods};

use crate::config::SessionConfig;
use crate::error::{SessionError, TimeoutKind};
use crate::intern::Interner;
use crate::lifecycle::{DiscoverAnswer, Failure, Lifecycle, Step};
use crate::parse::{parse_result, to_raw_params};
use crate::pending::PendingTable;
use crate::reader::{ServerRequests, Shared, read_loop};
use crate::session::{Inner, Session};

impl Inner {
    /// Runs the lifecycle (see [`Lifecycle`]): sends what it asks for and
    /// feeds it the answers until it settles on a version or gives up.
    pub(crate) async fn run_lifecycle(
        &mut self,
        capabilities: &ClientCapabilities,
    ) -> Result<(), SessionError> {
        let (mut lifecycle, mut step) =
            Lifecycle::start(self.config.mode(), self.config.offered_version());
        let modern = ProtocolVersion::V2026_07_28;
        // Extensions exist from 2026-07-28 on: declared in its `_meta` only.
        let mut modern_capabilities = capabilities.clone();
        if self.config.tasks_extension {
            mcp_protocol::tasks::extension::declare(&mut modern_capabilities);
        }
        let mut meta = RequestMeta::new(
            modern.as_str(),
            &self.config.client_info,
            &modern_capabilities,
        );
        if let Some(level) = &self.config.log_level {
            meta = meta.with_log_level(level);
        }
        loop {
            step = match step {
                Step::Discover => {
                    let answer = self.send_discover(&meta, lifecycle.probing()).await;
                    match self.judge_discover(&mut lifecycle, answer)? {
                        Judged::Modern(discovered) => {
                            self.become_modern(*discovered, meta);
                            return Ok(());
                        }
                        Judged::Next(next) => next,
                    }
                }
                Step::Initialize(offered) => {
                    let init = self.send_initialize(offered, capabilities).await?;
                    match lifecycle.on_initialize(offered, &init.protocol_version) {
                        Step::Legacy(version) => {
                            self.version = version;
                            self.init = intern_init(init);
                            return Ok(());
                        }
                        other => other,
                    }
                }
                Step::Fail(failure) => return Err(failure_error(failure, None)),
                // The settled steps return from their arms above.
                Step::Modern | Step::Legacy(_) => return Ok(()),
            };
        }
    }

    /// Sends `server/discover` with the modern `_meta`, bounded by the probe
    /// timeout when probing.
    async fn send_discover(
        &self,
        meta: &RequestMeta,
        probing: bool,
    ) -> Result<RawJson, SessionError> {
        let method = methods::SERVER_DISCOVER;
        let mut params = json!({});
        meta.apply(&mut params);
        let raw = to_raw_params(method, &params)?;
        let (kind, timeout) =
            if probing && self.config.probe_timeout < self.config.handshake_timeout {
                (TimeoutKind::Probe, self.config.probe_timeout)
            } else {
                (TimeoutKind::Handshake, self.config.handshake_timeout)
            };
        let context = SendContext::new()
            .revision(ProtocolVersion::V2026_07_28)
            .lifecycle(Lifecycle_::Discover);
        let id = self.next_id();
        self.request_raw(id, method, Some(raw), timeout, None, &context)
            .await
            .map_err(|e| e.in_lifecycle(kind, timeout))
    }

    /// Feeds an answer to `server/discover` to the lifecycle.
    fn judge_discover(
        &self,
        lifecycle: &mut Lifecycle,
        answer: Result<RawJson, SessionError>,
    ) -> Result<Judged, SessionError> {
        let method = methods::SERVER_DISCOVER;
        let error = match answer {
            Ok(raw) => {
                let value: Value = parse_result(method, &raw)?;
                return match lifecycle.on_discover(DiscoverAnswer::Result(&value)) {
                    Step::Modern => {
                        serde_json::from_value(value)
                            .map(Judged::Modern)
                            .map_err(|e| SessionError::InvalidResponse {
                                method: method.into(),
                                reason: e.to_string(),
                            })
                    }
                    Step::Fail(failure) => Err(failure_error(
                        failure,
                        Some("a result that is no discover result (no supportedVersions)"),
                    )),
                    next => Ok(Judged::Next(next)),
                };
            }
            Err(e) => e,
        };
        let data: Option<Value> = error
            .protocol_error()
            .and_then(|e| e.data_as())
            .and_then(Result::ok);
        let answer = match &error {
            SessionError::Protocol { error, .. } => {
                DiscoverAnswer::Error(error.code, data.as_ref())
            }
            e if e.is_timeout() => DiscoverAnswer::Timeout,
            SessionError::Transport(t) => match t.http_status() {
                Some(status) => DiscoverAnswer::HttpStatus(status),
                None => return Err(error),
            },
            _ => return Err(error),
        };
        match lifecycle.on_discover(answer) {
            // The answer itself is the failure.
            Step::Fail(Failure::Refused) => Err(error),
            Step::Fail(failure) => {
                let said = error.protocol_error().map(ToString::to_string);
                Err(failure_error(failure, said.as_deref()))
            }
            next => {
                tracing::debug!(server = %self.config.server_name, "server/discover: {error}; next: {next:?}");
                Ok(Judged::Next(next))
            }
        }
    }

    /// Sends `initialize`, offering `offered`.
    async fn send_initialize(
        &self,
        offered: ProtocolVersion,
        capabilities: &ClientCapabilities,
    ) -> Result<InitializeResult, SessionError> {
        let params = InitializeParams {
            protocol_version: offered.as_str().to_string(),
            capabilities: capabilities.clone(),
            client_info: self.config.client_info.clone(),
        };
        let timeout = self.config.handshake_timeout;
        let context = SendContext::new().lifecycle(Lifecycle_::Initialize);
        self.request(methods::INITIALIZE, &params, timeout, &context)
            .await
            .map_err(|e| e.in_lifecycle(TimeoutKind::Handshake, timeout))
    }

    pub(crate) fn become_modern(&mut self, discovered: DiscoverResult, meta: RequestMeta) {
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
        self.init = intern_init(InitializeResult {
            protocol_version: ProtocolVersion::V2026_07_28.as_str().into(),
            capabilities: discovered.capabilities,
            server_info,
            instructions: discovered.instructions,
            extra,
        });
    }
}

/// The server descriptions of every connection of the process, each kept
/// once (many agent sessions connect the same servers).
static INITS: Interner<InitializeResult> = Interner::new();

fn intern_init(init: InitializeResult) -> Arc<InitializeResult> {
    INITS.intern(init, |i| i, |i| i)
}

impl Session {
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
        let shared = Arc::new(Shared {
            server_name: config.server_name.clone(),
            pending: Mutex::new(PendingTable::default()),
            closed_error: Mutex::new(None),
            invalid: Mutex::default(),
            catalog_changes: AtomicU64::new(0),
            stale: crate::features::Staleness::default(),
            handler: config.handler.clone(),
            on_notification: config.on_notification.clone(),
            notifications_seen: AtomicU64::new(0),
            subscribers: Arc::default(),
            revision: std::sync::OnceLock::new(),
            server_requests: ServerRequests::default(),
            dropped: Arc::default(),
            rearm: Default::default(),
        });
        let reader = tokio::spawn(read_loop(Arc::clone(&transport), Arc::clone(&shared)));

        let mut capabilities = config.capabilities.clone();
        if let Some(h) = &config.handler {
            merge_capabilities(&mut capabilities, h.capabilities());
        }
        // The lifecycle runs on a provisional handle so it uses the same
        // request path as everything else.
        let mut inner = Inner {
            transport: Arc::clone(&transport),
            shared,
            reader,
            next_id: AtomicI64::new(0),
            version: config.offered_version(),
            meta: None,
            init: Arc::new(InitializeResult {
                protocol_version: String::new(),
                capabilities: Default::default(),
                server_info: Implementation::new("", ""),
                instructions: None,
                extra: Default::default(),
            }),
            catalog: std::sync::RwLock::new(None),
            catalog_fetch: tokio::sync::Mutex::new(()),
            call_gate: tokio::sync::Mutex::new(()),
            features: std::sync::OnceLock::new(),
            config,
        };
        if let Err(e) = inner.run_lifecycle(&capabilities).await {
            transport.close().await;
            return Err(e);
        }
        let version = inner.version;
        let session = Session {
            inner: Arc::new(inner),
        };
        session.inner.shared.revision.get_or_init(|| version);
        if version.has_handshake() {
            let context = session.inner.context().lifecycle(Lifecycle_::Initialized);
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

    /// Connects over transports that `open` makes, opening one more when the
    /// first attempt shows it is needed: in the default auto mode, a server
    /// whose transport closes during the 2026-07-28 probe (a strict legacy
    /// server that exits when the first request is not `initialize`) is
    /// started again and spoken to with the handshake straight away. Every
    /// entry point that can start a server again (the runtime, the CLI, the
    /// `mcp-client` front door) goes through here.
    ///
    /// `open` is called once, or twice in that case; each transport it
    /// returns is closed if the session cannot use it.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mcp_session::{Session, SessionConfig};
    /// use mcp_transport::{Transport, TransportError, memory};
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
        mut open: F,
        config: SessionConfig,
    ) -> Result<Session, SessionError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Arc<dyn Transport>, TransportError>>,
    {
        let transport = open().await?;
        let probing = config.mode() == ProtocolMode::Auto;
        match Self::connect_shared(Arc::clone(&transport), config.clone()).await {
            Err(e) if probing && e.is_closed() => {
                tracing::info!(server = %config.server_name, "the server closed during the 2026-07-28 probe ({e}); starting it again with the initialize handshake, in case it refuses any other first request");
                if let Some(process) = transport.process() {
                    process.detach_stderr();
                }
                transport.close().await;
                let transport = open().await?;
                let legacy = config.protocol(ProtocolPin::Mode(ProtocolMode::Handshake));
                Self::connect_shared(transport, legacy).await
            }
            other => other,
        }
    }
}

pub(crate) fn merge_capabilities(into: &mut ClientCapabilities, from: ClientCapabilities) {
    into.roots = into.roots.take().or(from.roots);
    into.sampling = into.sampling.take().or(from.sampling);
    into.elicitation = into.elicitation.take().or(from.elicitation);
    into.experimental = into.experimental.take().or(from.experimental);
    if let Some(extensions) = from.extensions {
        let into = into.extensions.get_or_insert_with(Default::default);
        for (k, v) in extensions {
            into.entry(k).or_insert(v);
        }
    }
    for (k, v) in from.extra {
        into.extra.entry(k).or_insert(v);
    }
}

/// What an answer to `server/discover` led to.
enum Judged {
    /// The session is modern; this is the server's description.
    Modern(Box<DiscoverResult>),
    /// The lifecycle goes on.
    Next(Step),
}

/// The error for a failed lifecycle; `said` is what the server answered,
/// when there is something to quote.
fn failure_error(failure: Failure, said: Option<&str>) -> SessionError {
    match failure {
        Failure::LegacyServer => SessionError::LegacyServer {
            reason: format!(
                "it answered server/discover with {}",
                said.unwrap_or("something other than a discover result")
            ),
        },
        Failure::VersionMismatch {
            offered,
            received,
            supported,
        } => SessionError::VersionMismatch {
            offered,
            received,
            supported,
        },
        Failure::Inconsistent | Failure::Refused => SessionError::InvalidResponse {
            method: methods::SERVER_DISCOVER.into(),
            reason: "the server refused server/discover while naming 2026-07-28 as supported"
                .into(),
        },
    }
}
