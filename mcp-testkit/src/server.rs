//! The server loop: reading frames, dispatching requests, writing responses.
//!
//! The steps live in submodules: `params` (requests read into
//! `mcp-stack-protocol`'s types, `-32602` naming the field that does not fit),
//! `lifecycle` (the handshake, `server/discover` and which revision a
//! request speaks), `tools_list` (paging), `calls` (`tools/call` tasks,
//! `ask_name`, `subscriptions/listen`), `asks` (the tools that ask the
//! client: elicitation, sampling, roots), `features` (resources, prompts,
//! completion), `tasks` (the task methods) and `misbehave` (exits, crashes
//! and the rest of the deliberate breakage). The server imports its
//! features (`tools`, `resources`, `prompts`) and the modules below them
//! (`outbox`: writing whole lines, `ProtocolError`; `client`: what the
//! client declared; `task_store`); none of those imports the server. Well-behaved answers are built as
//! `mcp-stack-protocol`'s types; only the misbehaviours write raw bytes.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::BytesMut;
use mcp_stack_jsonrpc::{
    Frame, Id, Message, MessageError, NewlineCodec, Notification, RawJson, Request, codes,
};
use mcp_stack_protocol::from_client::ClientNotification;
use mcp_stack_protocol::request::{self, Request as _};
use mcp_stack_protocol::types::{EmptyResult, LoggingLevel, SetLevelParams};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
use tokio_util::codec::Decoder;

use crate::options::{Misbehaviour, ServerOptions};
use crate::resources::World;

mod asks;
mod calls;
mod features;
pub(crate) mod hostile;
pub(crate) mod lifecycle;
mod misbehave;
mod params;
pub(crate) mod tasks;
mod tools_list;

use crate::client::ClientSide;
use crate::outbox::{Outbox, ProtocolError, Shared, raw};

/// The version [`Misbehaviour::UnsupportedVersion`] answers with.
pub const BOGUS_PROTOCOL_VERSION: &str = "1999-01-01";
/// The server name in `serverInfo`.
pub const SERVER_NAME: &str = "mcp-testkit";
/// The line [`Misbehaviour::ExitImmediately`] writes to stderr.
pub const EXIT_IMMEDIATELY_MESSAGE: &str =
    "error: required environment variable API_TOKEN is not set";

/// Where the server runs: as its own process (exits are real) or inside a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Host {
    Process,
    InMemory,
}

/// The calls (and subscriptions) running, by request id: a task number
/// (so a finished task only removes its own entry) and its handle.
type InFlight = Arc<Mutex<HashMap<Id, (u64, AbortHandle)>>>;

/// A connection's place in the [`World`]: when the server ends, it
/// listens for resource changes no more.
struct Connection {
    world: Arc<World>,
    key: u64,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.world.forget(self.key);
    }
}

struct Server {
    host: Host,
    shared: Arc<Shared>,
    outbox: Outbox,
    /// The resources and who listens for their changes (shared by the
    /// instances of one HTTP server).
    world: Arc<World>,
    /// This connection's key in the world.
    conn: u64,
    _connection: Connection,
    workspace: PathBuf,
    initialized: AtomicBool,
    /// An `initialize` request arrived (for `strict-initialize`).
    handshake_seen: bool,
    /// The revision `initialize` settled on (tasks need 2025-11-25).
    negotiated: Option<mcp_stack_protocol::ProtocolVersion>,
    in_flight: InFlight,
    tasks: JoinSet<()>,
    next_task: u64,
    /// What the client declared in `initialize` (before 2026-07-28; a
    /// modern request declares it in its own `_meta`).
    client: ClientSide,
    /// The `notifications/roots/list_changed` this connection received.
    roots_changed: Arc<AtomicU64>,
}

/// Serves until the reader ends (or forever, with [`Misbehaviour::IgnoreStdinClose`]).
/// `world` is `None` for a server of its own, else the resources it shares.
pub(crate) async fn serve_on<R, W>(
    options: ServerOptions,
    world: Option<Arc<World>>,
    reader: R,
    writer: W,
    host: Host,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    misbehave::on_start(&options, host)?;
    if options.startup_delay_ms > 0 {
        // A server slow to start: nothing is read before it is ready.
        tokio::time::sleep(std::time::Duration::from_millis(options.startup_delay_ms)).await;
    }
    // Keeping a handler registered replaces the default action: SIGTERM no longer ends us.
    #[cfg(unix)]
    let _sigterm = misbehave::ignore_sigterm(&options, host)?;
    let workspace = match &options.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    if host == Host::Process {
        misbehave::announce(&options, &workspace);
        hostile::announce(&options);
    }
    let (tx, rx) = mpsc::channel(64);
    let world = world.unwrap_or_else(|| Arc::new(World::new(&options)));
    let conn = world.next_key();
    let shared = Arc::new(Shared {
        options,
        unknown_ids: AtomicU64::new(0),
    });
    let server = Server {
        host,
        outbox: Outbox::new(tx, Arc::clone(&shared)),
        shared,
        _connection: Connection {
            world: Arc::clone(&world),
            key: conn,
        },
        world,
        conn,
        workspace,
        initialized: AtomicBool::new(false),
        handshake_seen: false,
        negotiated: None,
        in_flight: Arc::default(),
        tasks: JoinSet::new(),
        next_task: 0,
        client: ClientSide::default(),
        roots_changed: Arc::default(),
    };
    let read = async move {
        let mut server = server;
        let result = server.read_loop(reader).await;
        // Dropping the server aborts in-flight calls and closes the outbox.
        drop(server);
        result
    };
    let (read, write) = tokio::join!(read, write_loop(rx, writer));
    read.and(write)
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut rx: mpsc::Receiver<Vec<u8>>,
    mut writer: W,
) -> io::Result<()> {
    while let Some(bytes) = rx.recv().await {
        writer.write_all(&bytes).await?;
        if rx.is_empty() {
            writer.flush().await?;
        }
    }
    writer.shutdown().await
}

/// A request's params: an object, or the error to answer with.
fn params_object(params: Option<RawJson>) -> Result<Map<String, Value>, ProtocolError> {
    match params {
        None => Ok(Map::new()),
        Some(raw) => match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err(ProtocolError::invalid_field("params", "expected an object")),
        },
    }
}

impl Server {
    fn log(&self, line: &str) {
        if self.host == Host::Process {
            misbehave::stderr_line(&format!("mcp-testkit: {line}"));
        }
    }

    fn options(&self) -> &ServerOptions {
        &self.shared.options
    }

    async fn read_loop<R: AsyncRead + Unpin>(&mut self, mut reader: R) -> io::Result<()> {
        if self.options().has(Misbehaviour::StdoutNoise) {
            self.outbox
                .send_bytes(misbehave::STARTUP_NOISE.to_vec())
                .await;
        }
        let mut codec = NewlineCodec::new();
        let mut buf = BytesMut::with_capacity(8 * 1024);
        loop {
            while let Some(frame) = codec.decode(&mut buf)? {
                self.handle_frame(frame).await?;
            }
            // Forget finished calls.
            while self.tasks.try_join_next().is_some() {}
            if reader.read_buf(&mut buf).await? == 0 {
                if let Some(frame) = codec.decode_eof(&mut buf)? {
                    self.handle_frame(frame).await?;
                }
                break;
            }
        }
        if self.options().has(Misbehaviour::IgnoreStdinClose) {
            self.log("input closed; ignoring it and running on (misbehaviour ignore-stdin-close)");
            std::future::pending::<()>().await;
        }
        self.drain().await;
        Ok(())
    }

    /// The input ended: lets calls that are still running answer
    /// (`printf … | mcp-testkit` expects every answer), but not for long:
    /// dropping the server afterwards aborts the rest.
    async fn drain(&mut self) {
        if !self.tasks.is_empty() {
            let drain = Duration::from_millis(self.options().drain_ms);
            let tasks = &mut self.tasks;
            let _ =
                tokio::time::timeout(drain, async { while tasks.join_next().await.is_some() {} })
                    .await;
        }
        if self.tasks.is_empty() {
            self.log("input closed; exiting");
        } else {
            let n = self.tasks.len();
            self.log(&format!(
                "input closed; exiting and dropping {n} running call(s)"
            ));
        }
    }

    async fn handle_frame(&mut self, frame: Frame) -> io::Result<()> {
        match frame {
            Frame::Message(message) => self.handle_message(message).await?,
            Frame::Batch(items) => {
                for item in items {
                    match item {
                        Ok(message) => self.handle_message(message).await?,
                        Err(reason) => self.invalid_message(&reason).await,
                    }
                }
            }
            Frame::Malformed(bad) => self.invalid_message(&bad.reason).await,
            Frame::Oversized(o) => {
                let error =
                    ProtocolError::new(codes::INVALID_REQUEST, format!("message too large: {o}"));
                self.outbox.respond_error(None, error).await;
            }
            // A partial line at end of input: nobody is left to answer.
            _ => {}
        }
        Ok(())
    }

    async fn invalid_message(&self, reason: &MessageError) {
        let code = match reason {
            MessageError::NotJson(_) | MessageError::NotUtf8 => codes::PARSE_ERROR,
            _ => codes::INVALID_REQUEST,
        };
        let error = ProtocolError::new(code, reason.to_string());
        self.outbox.respond_error(None, error).await;
    }

    async fn handle_message(&mut self, message: Message) -> io::Result<()> {
        match message {
            Message::Request(request) => self.handle_request(request).await?,
            Message::Notification(n) => self.handle_notification(n),
            // Answers to the requests the client-request tools sent.
            answer => self.outbox.answered(answer),
        }
        Ok(())
    }

    fn handle_notification(&self, n: Notification) {
        match ClientNotification::parse(
            &n.method,
            n.params.as_ref().and_then(|p| p.raw_value().ok()),
        ) {
            Ok(ClientNotification::Initialized) => {
                self.initialized.store(true, Ordering::SeqCst);
            }
            Ok(ClientNotification::Cancelled(params)) => self.cancel(&params.request_id),
            Ok(ClientNotification::RootsListChanged) => {
                self.roots_changed.fetch_add(1, Ordering::SeqCst);
            }
            // Progress, others, and params that do not fit: nothing to do.
            _ => {}
        }
    }

    fn cancel(&self, id: &Id) {
        let entry = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        // A `subscriptions/listen` stream hears no more at once.
        self.world.unlisten(self.conn, id);
        if let Some((_, handle)) = entry {
            handle.abort();
            self.log(&format!("cancelled request {id}"));
        }
    }

    async fn handle_request(&mut self, request: Request) -> io::Result<()> {
        let Request { id, method, params } = request;
        let params = params_object(params);
        if method == request::Initialize::METHOD {
            self.handshake_seen = true;
        } else if !self.handshake_seen && self.options().has(Misbehaviour::StrictInitialize) {
            return Err(self.strict_exit(&method));
        }
        // `None`: a modern request of another revision, already refused.
        let Some(discover) = self.revision_of(&id, &method, params.as_ref().ok()).await else {
            return Ok(());
        };
        self.dispatch(id, &method, params, discover).await
    }

    /// Answers a request (or starts the task that will). `discover`: it
    /// speaks 2026-07-28.
    async fn dispatch(
        &mut self,
        id: Id,
        method: &str,
        params: Result<Map<String, Value>, ProtocolError>,
        discover: bool,
    ) -> io::Result<()> {
        let no_tools = self.options().has(Misbehaviour::NoToolsCapability);
        let result = match method {
            request::ServerDiscover::METHOD if discover => raw(&self.discover()),
            request::Ping::METHOD | request::Initialize::METHOD if discover => {
                Err(lifecycle::handshake_only(method))
            }
            request::Initialize::METHOD => match self.initialize_request(params) {
                Some(result) => {
                    if let Ok(r) = &result {
                        // A legacy client hears of resource list changes.
                        self.world.register_legacy(self.conn, &self.outbox);
                        self.negotiated = r.protocol_version.parse().ok();
                    }
                    result.and_then(|r| raw(&r))
                }
                None => return Ok(()),
            },
            request::Ping::METHOD => params.and_then(|_| raw(&EmptyResult::default())),
            request::LoggingSetLevel::METHOD => params
                .and_then(parse_set_level)
                .and_then(|_| raw(&EmptyResult::default())),
            request::ToolsList::METHOD | request::ToolsCall::METHOD if no_tools => {
                Err(ProtocolError::method_not_found(
                    method,
                    " (this server declares no tools capability)",
                ))
            }
            request::ToolsList::METHOD => params
                .and_then(tools_list::parse_list)
                .and_then(|p| self.list_tools(&p, discover))
                .and_then(|r| raw(&r)),
            request::SubscriptionsListen::METHOD if discover => {
                self.listen(id, params).await;
                return Ok(());
            }
            request::ToolsCall::METHOD => {
                if self.options().has(Misbehaviour::CrashMidCall) {
                    return Err(self.crash());
                }
                let declared = params.as_ref().is_ok_and(tasks::declares_extension);
                match params.and_then(calls::parse_call) {
                    Ok(call) => {
                        if !self.maybe_task(&id, &call, discover, declared).await {
                            self.spawn_call(id, call, discover);
                        }
                        return Ok(());
                    }
                    Err(e) => Err(e),
                }
            }
            request::TasksGet::METHOD
            | request::TasksResult::METHOD
            | request::TasksList::METHOD
            | request::TasksCancel::METHOD
            | request::TasksUpdate::METHOD => {
                match self.task_method(&id, method, &params, discover).await {
                    Some(Some(answer)) => answer,
                    Some(None) => return Ok(()),
                    None => Err(ProtocolError::method_not_found(method, "")),
                }
            }
            _ => match self.feature(method, params, discover).await {
                Some(result) => result,
                None => Err(ProtocolError::method_not_found(method, "")),
            },
        };
        self.outbox.respond(id, result).await;
        Ok(())
    }
}

/// `logging/setLevel`'s params: any of the syslog levels.
fn parse_set_level(params: Map<String, Value>) -> Result<SetLevelParams, ProtocolError> {
    params::typed(params, |p| {
        let level = p.get("level").and_then(Value::as_str);
        let known = LoggingLevel::ALL.iter().any(|l| Some(l.as_str()) == level);
        (!known).then(|| {
            let levels: Vec<&str> = LoggingLevel::ALL.iter().map(|l| l.as_str()).collect();
            ProtocolError::invalid_field("level", format!("expected one of {}", levels.join(", ")))
        })
    })
}
