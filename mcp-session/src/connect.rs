//! Connecting: the lifecycle (the `initialize` handshake, 2026-07-28's
//! `server/discover`, or the probe that picks one), driven here; the
//! decisions are in [`crate::lifecycle`]. It makes the core ([`Inner`]);
//! the `Session` facade wraps it.

use std::sync::atomic::{AtomicI64, AtomicU64};
use std::sync::{Arc, Mutex};

use mcp_stack_jsonrpc::{Message, Notification, RawJson};
use mcp_stack_transport::{Lifecycle as Lifecycle_, SendContext, Transport, TransportError};
use serde_json::{Value, json};

use mcp_stack_protocol::discover::DiscoverResult;
use mcp_stack_protocol::meta::RequestMeta;
use mcp_stack_protocol::notification::{Initialized, Notification as _};
use mcp_stack_protocol::request::{Initialize, Request, ServerDiscover};
use mcp_stack_protocol::types::{
    ClientCapabilities, Implementation, InitializeParams, InitializeResult,
};
use mcp_stack_protocol::{ProtocolMode, ProtocolPin, ProtocolVersion};

use crate::changes::Staleness;
use crate::config::SessionConfig;
use crate::conn::Inner;
use crate::error::{SessionError, TimeoutKind};
use crate::intern::Interner;
use crate::lifecycle::{DISCOVERING, DiscoverAnswer, Failure, Lifecycle, Step};
use crate::parse::{parse_result, to_raw_params};
use crate::pending::PendingTable;
use crate::reader::{ServerRequests, Shared, read_loop};
use crate::revision::Revision;

impl Inner {
    /// Runs the lifecycle (see [`Lifecycle`]): sends what it asks for and
    /// feeds it the answers until it settles on a version or gives up.
    pub(crate) async fn run_lifecycle(
        &mut self,
        capabilities: &ClientCapabilities,
    ) -> Result<(), SessionError> {
        let (mut lifecycle, mut step) =
            Lifecycle::start(self.config.mode(), self.config.offered_version());
        // Extensions exist from 2026-07-28 on: declared in its `_meta` only.
        let mut meta_capabilities = capabilities.clone();
        if self.config.tasks_extension {
            mcp_stack_protocol::tasks::extension::declare(&mut meta_capabilities);
        }
        let mut meta = RequestMeta::new(
            DISCOVERING.as_str(),
            &self.config.client_info,
            &meta_capabilities,
        );
        if let Some(level) = &self.config.log_level {
            meta = meta.with_log_level(level);
        }
        loop {
            step = match step {
                Step::Discover => {
                    let answer = self.send_discover(&meta, lifecycle.probing()).await;
                    match self.judge_discover(&mut lifecycle, answer)? {
                        Judged::Discovered(discovered) => {
                            self.settle_discovered(*discovered, meta);
                            return Ok(());
                        }
                        Judged::Next(next) => next,
                    }
                }
                Step::Initialize(offered) => {
                    let init = self.send_initialize(offered, capabilities).await?;
                    match lifecycle.on_initialize(offered, &init.protocol_version) {
                        Step::Initialized(version) => {
                            self.revision = Revision::new(version, self.transport.kind());
                            self.init = intern_init(init);
                            return Ok(());
                        }
                        other => other,
                    }
                }
                Step::Fail(failure) => return Err(failure_error(failure, None)),
                // The settled steps return from their arms above.
                Step::Discovered | Step::Initialized(_) => return Ok(()),
            };
        }
    }

    /// Sends `server/discover` with the request `_meta`, bounded by the probe
    /// timeout when probing.
    async fn send_discover(
        &self,
        meta: &RequestMeta,
        probing: bool,
    ) -> Result<RawJson, SessionError> {
        let method = ServerDiscover::METHOD;
        // No params of its own: `{}` with the request `_meta`.
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
            .revision(DISCOVERING)
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
        let method = ServerDiscover::METHOD;
        let error = match answer {
            Ok(raw) => {
                let value: Value = parse_result(method, &raw)?;
                return match lifecycle.on_discover(DiscoverAnswer::Result(&value)) {
                    Step::Discovered => {
                        serde_json::from_value::<<ServerDiscover as Request>::Result>(value)
                            .map(|d| Judged::Discovered(Box::new(d)))
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
    pub(crate) async fn send_initialize(
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
        self.send::<Initialize>(&params, timeout, &context)
            .await
            .map_err(|e| e.in_lifecycle(TimeoutKind::Handshake, timeout))
    }

    /// Settles on 2026-07-28 with the server's discover result; its
    /// requests carry `meta`.
    pub(crate) fn settle_discovered(&mut self, discovered: DiscoverResult, meta: RequestMeta) {
        let server_info = discovered
            .server_info()
            .unwrap_or_else(|| Implementation::new("(unnamed server)", ""));
        let mut extra = discovered.extra;
        extra.insert(
            "supportedVersions".into(),
            Value::from(discovered.supported_versions),
        );
        self.revision = Revision::new(DISCOVERING, self.transport.kind());
        self.meta = Some(meta);
        self.init = intern_init(InitializeResult {
            protocol_version: DISCOVERING.as_str().into(),
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

impl Inner {
    /// Connects over a transport: starts the reader, runs the lifecycle the
    /// config asks for (see [`Session::connect`](crate::Session::connect)),
    /// and settles the session's [`Revision`]. The transport is closed when
    /// the lifecycle fails.
    pub(crate) async fn connect(
        transport: Arc<dyn Transport>,
        config: SessionConfig,
    ) -> Result<Inner, SessionError> {
        let shared = Arc::new(Shared {
            server_name: config.server_name.clone(),
            pending: Mutex::new(PendingTable::default()),
            closed_error: Mutex::new(None),
            invalid: Mutex::default(),
            catalog_changes: AtomicU64::new(0),
            stale: Staleness::default(),
            handler: config.handler.clone(),
            on_notification: config.on_notification.clone(),
            notifications_seen: AtomicU64::new(0),
            subscribers: Arc::default(),
            revision: std::sync::OnceLock::new(),
            server_requests: ServerRequests::default(),
            dropped: Arc::default(),
            rearm: Default::default(),
            renewal: Default::default(),
        });
        let reader = tokio::spawn(read_loop(Arc::clone(&transport), Arc::clone(&shared)));

        let mut capabilities = config.capabilities.clone();
        if let Some(h) = &config.handler {
            merge_capabilities(&mut capabilities, h.capabilities());
        }
        // The lifecycle runs on the core itself, so it uses the same request
        // path as everything else.
        let mut inner = Inner {
            transport: Arc::clone(&transport),
            shared,
            reader,
            next_id: AtomicI64::new(0),
            revision: Revision::new(config.offered_version(), transport.kind()),
            meta: None,
            init: Arc::new(InitializeResult {
                protocol_version: String::new(),
                capabilities: Default::default(),
                server_info: Implementation::new("", ""),
                instructions: None,
                extra: Default::default(),
            }),
            config,
            capabilities: Arc::new(ClientCapabilities::default()),
        };
        if let Err(e) = inner.run_lifecycle(&capabilities).await {
            transport.close().await;
            return Err(e);
        }
        let revision = inner.revision;
        let version = revision.version();
        inner.shared.revision.get_or_init(|| version);
        if revision.sends_initialized() {
            let context = inner.context().lifecycle(Lifecycle_::Initialized);
            let message = Message::Notification(Notification::new(Initialized::METHOD, None));
            inner.transport.send_with(&message, &context).await?;
        }
        // What a re-handshake declares again (see `rehandshake::install`).
        inner.capabilities = Arc::new(capabilities);
        tracing::debug!(server = %inner.config.server_name, %version, "connected");
        Ok(inner)
    }

    /// [`connect`](Self::connect) over transports that `open` makes, opening
    /// a second one when the first closed during the auto mode's probe (see
    /// [`Session::connect_with`](crate::Session::connect_with)).
    pub(crate) async fn connect_with<F, Fut>(
        mut open: F,
        config: SessionConfig,
    ) -> Result<Inner, SessionError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Arc<dyn Transport>, TransportError>>,
    {
        let transport = open().await?;
        let probing = config.mode() == ProtocolMode::Auto;
        match Self::connect(Arc::clone(&transport), config.clone()).await {
            Err(e) if probing && e.is_closed() => {
                tracing::info!(server = %config.server_name, "the server closed during the 2026-07-28 probe ({e}); starting it again with the initialize handshake, in case it refuses any other first request");
                if let Some(process) = transport.process() {
                    process.detach_stderr();
                }
                transport.close().await;
                let transport = open().await?;
                let handshake = config.protocol(ProtocolPin::Mode(ProtocolMode::Handshake));
                Self::connect(transport, handshake).await
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
    /// The server answered the discovery; this is its description.
    Discovered(Box<DiscoverResult>),
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
            method: ServerDiscover::METHOD.into(),
            reason: "the server refused server/discover while naming 2026-07-28 as supported"
                .into(),
        },
    }
}
