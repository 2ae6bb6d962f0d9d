//! The server loop: reading frames, dispatching requests, writing responses.

use std::collections::HashMap;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::BytesMut;
use mcp_jsonrpc::{
    ErrorObject, ErrorResponse, Frame, Id, Message, MessageError, NewlineCodec, Notification,
    Request, Response, codes, to_raw,
};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
use tokio_util::codec::{Decoder, Encoder};

use mcp_protocol::{ProtocolVersion, meta};

use crate::options::{Era, Misbehaviour, ServerOptions};
use crate::tools::{self, CallContext};

/// The modern revision the server speaks with `--era modern|dual`.
pub(crate) const MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;
/// The `requestState` the `ask_name` tool hands out and expects back.
const ASK_NAME_STATE: &str = "ask-name:v1";
/// The version [`Misbehaviour::UnsupportedVersion`] answers with.
pub const BOGUS_PROTOCOL_VERSION: &str = "1999-01-01";
/// The server name in `serverInfo`.
pub const SERVER_NAME: &str = "mcp-testkit";
/// The line [`Misbehaviour::ExitImmediately`] writes to stderr.
pub const EXIT_IMMEDIATELY_MESSAGE: &str =
    "error: required environment variable API_TOKEN is not set";

const CURSOR_PREFIX: &str = "mcp-testkit-page-";
const LOG_LEVELS: &[&str] = &[
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The versions a server of this era names in `supportedVersions` and in
/// `-32022` errors, newest first.
pub(crate) fn supported_versions(era: Era) -> Vec<&'static str> {
    let mut supported = vec![MODERN.as_str()];
    if era == Era::Dual {
        supported.extend(ProtocolVersion::HANDSHAKE.iter().map(|v| v.as_str()));
    }
    supported
}

/// The message and `data` of the `-32022` error refusing `requested`.
pub(crate) fn unsupported_version(era: Era, requested: Option<&str>) -> (String, Value) {
    let supported = supported_versions(era);
    (
        format!(
            "Unsupported protocol version (this server speaks {})",
            supported.join(", ")
        ),
        json!({"supported": supported, "requested": requested}),
    )
}

/// Whether a modern (2026-07-28) request for `method` is served, rather than
/// answered `-32601`. Keep in step with `Server::handle_request`.
#[cfg(feature = "http")]
pub(crate) fn modern_method_known(options: &ServerOptions, method: &str) -> bool {
    match method {
        "server/discover" | "logging/setLevel" | "subscriptions/listen" => true,
        "tools/list" | "tools/call" => !options.has(Misbehaviour::NoToolsCapability),
        _ => false,
    }
}

/// Where the server runs: as its own process (exits are real) or inside a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Host {
    Process,
    InMemory,
}

/// A JSON-RPC error to answer a request with.
#[derive(Debug)]
pub(crate) struct ProtocolError {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl ProtocolError {
    /// `-32602` naming the field that is wrong.
    pub(crate) fn invalid_field(field: impl Into<String>, reason: impl Into<String>) -> Self {
        let (field, reason) = (field.into(), reason.into());
        ProtocolError {
            code: codes::INVALID_PARAMS,
            message: format!("invalid params: {field}: {reason}"),
            data: Some(json!({"field": field, "reason": reason})),
        }
    }

    fn method_not_found(method: &str, why: &str) -> Self {
        ProtocolError {
            code: codes::METHOD_NOT_FOUND,
            message: format!("method not found: {method}{why}"),
            data: Some(json!({"method": method})),
        }
    }

    fn object(self) -> ErrorObject {
        let mut error = ErrorObject::new(self.code, self.message);
        error.data = self.data.and_then(|d| to_raw(&d).ok());
        error
    }
}

/// State the request tasks share.
#[derive(Debug)]
struct Shared {
    options: ServerOptions,
    /// Counts the unsolicited responses of [`Misbehaviour::UnknownIds`].
    unknown_ids: AtomicU64,
}

/// The sending side of the writer: every message goes through here as whole lines.
#[derive(Debug, Clone)]
pub(crate) struct Outbox {
    tx: mpsc::Sender<Vec<u8>>,
    shared: Arc<Shared>,
}

fn encode(message: &Message) -> Result<Vec<u8>, mcp_jsonrpc::EncodeError> {
    let mut buf = BytesMut::new();
    NewlineCodec::new().encode(message, &mut buf)?;
    Ok(buf.to_vec())
}

impl Outbox {
    /// Queues bytes for the writer; a writer that is gone (client hung up) is ignored.
    async fn send_bytes(&self, bytes: Vec<u8>) {
        let _ = self.tx.send(bytes).await;
    }

    /// Sends a notification.
    pub(crate) async fn notify(&self, method: &str, params: Value) {
        let Ok(params) = to_raw(&params) else { return };
        let message = Message::from(Notification::new(method, Some(params)));
        if let Ok(bytes) = encode(&message) {
            self.send_bytes(bytes).await;
        }
    }

    /// Sends the response to a request, preceded by whatever the misbehaviours add.
    async fn respond(&self, id: Id, result: Result<Value, ProtocolError>) {
        let message = match result.and_then(|value| {
            to_raw(&value).map_err(|e| ProtocolError {
                code: codes::INTERNAL_ERROR,
                message: format!("cannot serialize the result: {e}"),
                data: None,
            })
        }) {
            Ok(raw) => Message::from(Response::new(id.clone(), raw)),
            Err(e) => Message::from(ErrorResponse::new(Some(id.clone()), e.object())),
        };
        self.send_response(Some(id), message).await;
    }

    /// Sends an error response to a message that has no usable id.
    async fn respond_error(&self, id: Option<Id>, error: ProtocolError) {
        let message = Message::from(ErrorResponse::new(id.clone(), error.object()));
        self.send_response(id, message).await;
    }

    async fn send_response(&self, id: Option<Id>, message: Message) {
        let options = &self.shared.options;
        let mut bytes = Vec::new();
        if options.has(Misbehaviour::Noise) {
            bytes.extend_from_slice(b"[mcp-testkit] this line is not JSON-RPC\n");
        }
        if options.has(Misbehaviour::InvalidUtf8) {
            bytes.extend_from_slice(b"\xff\xfe not UTF-8: \xc3\x28 \xa0\xa1\n");
        }
        if options.has(Misbehaviour::UnknownIds) {
            let n = self.shared.unknown_ids.fetch_add(1, Ordering::Relaxed) + 1;
            let stray = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":\"mcp-testkit-unknown-{n}\",\"result\":{{}}}}\n"
            );
            bytes.extend_from_slice(stray.as_bytes());
        }
        match encode(&message) {
            Ok(line) => bytes.extend_from_slice(&line),
            Err(e) => {
                let error = ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!("the response could not be sent: {e}"),
                );
                if let Ok(line) = encode(&Message::from(ErrorResponse::new(id, error))) {
                    bytes.extend_from_slice(&line);
                }
            }
        }
        self.send_bytes(bytes).await;
    }
}

/// One line longer than `len` bytes: a log notification padded with `x`.
fn oversized_line(len: usize) -> Vec<u8> {
    let head =
        br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":""#;
    let tail = b"\"}}\n";
    let pad = len
        .saturating_add(1)
        .saturating_sub(head.len() + tail.len() - 1);
    let mut line = Vec::with_capacity(head.len() + pad + tail.len());
    line.extend_from_slice(head);
    line.resize(head.len() + pad, b'x');
    line.extend_from_slice(tail);
    line
}

fn stderr_line(line: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

fn append_instance_log(path: &Path, event: &str) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(format!("{event} {}\n", std::process::id()).as_bytes())
}

type InFlight = Arc<Mutex<HashMap<Id, (u64, AbortHandle)>>>;

struct Server {
    host: Host,
    shared: Arc<Shared>,
    outbox: Outbox,
    workspace: PathBuf,
    initialized: AtomicBool,
    /// An `initialize` request arrived (for `strict-initialize`).
    handshake_seen: bool,
    in_flight: InFlight,
    tasks: JoinSet<()>,
    next_task: u64,
}

/// Serves until the reader ends (or forever, with [`Misbehaviour::IgnoreStdinClose`]).
pub(crate) async fn serve_on<R, W>(
    options: ServerOptions,
    reader: R,
    writer: W,
    host: Host,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    if let Some(log) = &options.instance_log {
        append_instance_log(log, "start").map_err(|e| {
            io::Error::new(e.kind(), format!("instance log {}: {e}", log.display()))
        })?;
    }
    if options.has(Misbehaviour::ExitImmediately) {
        match host {
            Host::Process => {
                stderr_line(EXIT_IMMEDIATELY_MESSAGE);
                std::process::exit(1);
            }
            Host::InMemory => return Err(io::Error::other(EXIT_IMMEDIATELY_MESSAGE)),
        }
    }
    // Keeping a handler registered replaces the default action: SIGTERM no longer ends us.
    #[cfg(unix)]
    let _sigterm = if host == Host::Process && options.has(Misbehaviour::IgnoreStdinClose) {
        Some(tokio::signal::unix::signal(
            tokio::signal::unix::SignalKind::terminate(),
        )?)
    } else {
        None
    };
    let workspace = match &options.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    if host == Host::Process {
        let names: Vec<&str> = options.misbehaviours.iter().map(|m| m.name()).collect();
        stderr_line(&format!(
            "mcp-testkit {}: serving MCP on stdio (pid {}, workspace {}, misbehaviours: {})",
            env!("CARGO_PKG_VERSION"),
            std::process::id(),
            workspace.display(),
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(",")
            }
        ));
    }
    let (tx, rx) = mpsc::channel(64);
    let shared = Arc::new(Shared {
        options,
        unknown_ids: AtomicU64::new(0),
    });
    let server = Server {
        host,
        outbox: Outbox {
            tx,
            shared: Arc::clone(&shared),
        },
        shared,
        workspace,
        initialized: AtomicBool::new(false),
        handshake_seen: false,
        in_flight: Arc::default(),
        tasks: JoinSet::new(),
        next_task: 0,
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

impl Server {
    fn log(&self, line: &str) {
        if self.host == Host::Process {
            stderr_line(&format!("mcp-testkit: {line}"));
        }
    }

    fn options(&self) -> &ServerOptions {
        &self.shared.options
    }

    async fn read_loop<R: AsyncRead + Unpin>(&mut self, mut reader: R) -> io::Result<()> {
        if self.options().has(Misbehaviour::StdoutNoise) {
            let noise = b"mcp-testkit starting up...\n\
                Loading configuration from ./config.json\n\
                Server ready: listening on stdio\n";
            self.outbox.send_bytes(noise.to_vec()).await;
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
        if !self.tasks.is_empty() {
            // Let calls that are still running answer (`printf … | mcp-testkit`
            // expects every answer), but not for long: dropping the server
            // afterwards aborts the rest.
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
        Ok(())
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
                let error = ProtocolError {
                    code: codes::INVALID_REQUEST,
                    message: format!("message too large: {o}"),
                    data: None,
                };
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
        let error = ProtocolError {
            code,
            message: reason.to_string(),
            data: None,
        };
        self.outbox.respond_error(None, error).await;
    }

    async fn handle_message(&mut self, message: Message) -> io::Result<()> {
        match message {
            Message::Request(request) => self.handle_request(request).await?,
            Message::Notification(n) => self.handle_notification(n),
            // We send no requests, so responses answer nothing: ignore them.
            _ => {}
        }
        Ok(())
    }

    fn handle_notification(&self, n: Notification) {
        match n.method.as_str() {
            "notifications/initialized" => {
                self.initialized.store(true, Ordering::SeqCst);
            }
            "notifications/cancelled" => {
                let params = n
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<Map<String, Value>>(p.get()).ok());
                let id = params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .and_then(|id| serde_json::from_value::<Id>(id.clone()).ok());
                if let Some(id) = id {
                    let entry = self
                        .in_flight
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&id);
                    if let Some((_, handle)) = entry {
                        handle.abort();
                        self.log(&format!("cancelled request {id}"));
                    }
                }
            }
            _ => {}
        }
    }

    async fn handle_request(&mut self, request: Request) -> io::Result<()> {
        let Request { id, method, params } = request;
        let params = match params {
            None => Ok(Map::new()),
            Some(raw) => match serde_json::from_str::<Value>(raw.get()) {
                Ok(Value::Object(map)) => Ok(map),
                _ => Err(ProtocolError::invalid_field("params", "expected an object")),
            },
        };
        if method == "initialize" {
            self.handshake_seen = true;
        } else if !self.handshake_seen && self.options().has(Misbehaviour::StrictInitialize) {
            return Err(self.strict_exit(&method));
        }
        let no_tools = self.options().has(Misbehaviour::NoToolsCapability);
        let era = self.options().era;
        let requested: Option<String> = params
            .as_ref()
            .ok()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(meta::PROTOCOL_VERSION))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let modern = match era {
            Era::Legacy => false,
            Era::Modern => true,
            _ => requested.is_some() || method == "server/discover",
        };
        if modern && requested.as_deref() != Some(MODERN.as_str()) {
            // Every modern request names its version; `initialize` to a
            // modern-only server lands here too, and the error names what the
            // server does speak.
            let (message, data) = unsupported_version(era, requested.as_deref());
            let mut error =
                ErrorObject::new(mcp_protocol::codes::UNSUPPORTED_PROTOCOL_VERSION, message);
            error.data = mcp_jsonrpc::to_raw(&data).ok();
            self.outbox
                .send_response(
                    Some(id.clone()),
                    Message::from(ErrorResponse::new(Some(id), error)),
                )
                .await;
            return Ok(());
        }
        let result = match method.as_str() {
            "server/discover" if modern => Ok(self.discover(era)),
            "ping" if modern => Err(ProtocolError::method_not_found(
                &method,
                " (2026-07-28 has no ping)",
            )),
            "initialize" if modern => Err(ProtocolError::method_not_found(
                &method,
                " (2026-07-28 has no initialize handshake; send requests with _meta)",
            )),
            "initialize" => {
                if let Some(log) = &self.options().instance_log
                    && let Err(e) = append_instance_log(log, "initialize")
                {
                    self.log(&format!("cannot write instance log {}: {e}", log.display()));
                }
                if self.options().has(Misbehaviour::NeverAnswerInitialize) {
                    self.log("not answering initialize (misbehaviour never-answer-initialize)");
                    return Ok(());
                }
                params.and_then(|p| self.initialize(&p))
            }
            "ping" => params.map(|_| json!({})),
            "logging/setLevel" => params.and_then(|p| match p.get("level") {
                Some(Value::String(level)) if LOG_LEVELS.contains(&level.as_str()) => Ok(json!({})),
                _ => Err(ProtocolError::invalid_field(
                    "level",
                    format!("expected one of {}", LOG_LEVELS.join(", ")),
                )),
            }),
            "tools/list" | "tools/call" if no_tools => Err(ProtocolError::method_not_found(
                &method,
                " (this server declares no tools capability)",
            )),
            "tools/list" => params
                .and_then(|p| self.list_tools(&p, modern))
                .map(|mut r| {
                    if modern && let Value::Object(map) = &mut r {
                        map.insert("resultType".into(), json!("complete"));
                        map.insert("ttlMs".into(), json!(60_000));
                        map.insert("cacheScope".into(), json!("public"));
                    }
                    r
                }),
            "subscriptions/listen" if modern => {
                self.listen(id, params.unwrap_or_default()).await;
                return Ok(());
            }
            "tools/call" => {
                if self.options().has(Misbehaviour::CrashMidCall) {
                    return Err(self.crash());
                }
                match params.and_then(parse_call) {
                    Ok(call) => {
                        self.spawn_call(id, call, modern);
                        return Ok(());
                    }
                    Err(e) => Err(e),
                }
            }
            _ => Err(ProtocolError::method_not_found(&method, "")),
        };
        self.outbox.respond(id, result).await;
        Ok(())
    }

    /// `strict-initialize`: a request before `initialize` ends the server.
    fn strict_exit(&self, method: &str) -> io::Error {
        let message = format!(
            "protocol error: expected initialize as the first request, got {method} \
             (misbehaviour strict-initialize)"
        );
        match self.host {
            Host::Process => {
                stderr_line(&message);
                std::process::exit(1);
            }
            Host::InMemory => io::Error::other(message),
        }
    }

    fn crash(&self) -> io::Error {
        const MESSAGE: &str = "simulated crash in tools/call (misbehaviour crash-mid-call)";
        match self.host {
            Host::Process => {
                stderr_line(&format!(
                    "thread 'main' panicked at mcp-testkit/src/server.rs:1:1:\n{MESSAGE}\n\
                     note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
                ));
                std::process::exit(101);
            }
            Host::InMemory => io::Error::other(MESSAGE),
        }
    }

    fn initialize(&self, params: &Map<String, Value>) -> Result<Value, ProtocolError> {
        let requested = match params.get("protocolVersion") {
            Some(Value::String(v)) => v.as_str(),
            Some(_) => {
                return Err(ProtocolError::invalid_field(
                    "protocolVersion",
                    "expected a string",
                ));
            }
            None => return Err(ProtocolError::invalid_field("protocolVersion", "required")),
        };
        match params.get("capabilities") {
            Some(Value::Object(_)) => {}
            Some(_) => {
                return Err(ProtocolError::invalid_field(
                    "capabilities",
                    "expected an object",
                ));
            }
            None => return Err(ProtocolError::invalid_field("capabilities", "required")),
        }
        let Some(Value::Object(client)) = params.get("clientInfo") else {
            return Err(ProtocolError::invalid_field(
                "clientInfo",
                "required: an object with \"name\" and \"version\"",
            ));
        };
        for field in ["name", "version"] {
            if !client.get(field).is_some_and(Value::is_string) {
                return Err(ProtocolError::invalid_field(
                    format!("clientInfo.{field}"),
                    "expected a string",
                ));
            }
        }
        let version = if self.options().has(Misbehaviour::UnsupportedVersion) {
            BOGUS_PROTOCOL_VERSION
        } else if requested
            .parse::<ProtocolVersion>()
            .is_ok_and(|v| !v.is_modern())
        {
            requested
        } else {
            ProtocolVersion::LATEST_HANDSHAKE.as_str()
        };
        self.log(&format!(
            "initialize: client asked for {requested}, answering {version}"
        ));
        let capabilities = if self.options().has(Misbehaviour::NoToolsCapability) {
            json!({"logging": {}})
        } else {
            json!({"tools": {"listChanged": true}, "logging": {}})
        };
        Ok(json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": {
                "name": SERVER_NAME,
                "title": "MCP test kit server",
                "version": env!("CARGO_PKG_VERSION"),
            },
            "instructions": format!(
                "mcp-testkit is a test server. Tools: {}. read_file only reads inside the \
                 workspace folder; slow, progress and fail help test timeouts, progress and \
                 tool errors.",
                tools::TOOL_NAMES.join(", ")
            ),
        }))
    }

    /// The `server/discover` result.
    fn discover(&self, era: Era) -> Value {
        let supported = supported_versions(era);
        let capabilities = if self.options().has(Misbehaviour::NoToolsCapability) {
            json!({})
        } else {
            json!({"tools": {"listChanged": true}})
        };
        self.log(&format!(
            "server/discover: speaking {}",
            supported.join(", ")
        ));
        json!({
            "resultType": "complete",
            "supportedVersions": supported,
            "capabilities": capabilities,
            "_meta": {meta::SERVER_INFO: {
                "name": SERVER_NAME,
                "title": "MCP test kit server",
                "version": env!("CARGO_PKG_VERSION"),
            }},
            "instructions": "mcp-testkit (2026-07-28). ask_name shows multi-round-trip results.",
            "ttlMs": 60_000,
            "cacheScope": "public",
        })
    }

    fn list_tools(
        &self,
        params: &Map<String, Value>,
        modern: bool,
    ) -> Result<Value, ProtocolError> {
        let all: &[Value] = if modern {
            &tools::MODERN_DEFINITIONS
        } else {
            &tools::DEFINITIONS
        };
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(cursor)) => cursor
                .strip_prefix(CURSOR_PREFIX)
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| *n <= all.len())
                .ok_or_else(|| {
                    ProtocolError::invalid_field("cursor", "not a cursor this server gave out")
                })?,
            Some(_) => return Err(ProtocolError::invalid_field("cursor", "expected a string")),
        };
        if self.options().has(Misbehaviour::RequireInitialized)
            && !self.initialized.load(Ordering::SeqCst)
        {
            self.log("tools/list before notifications/initialized: answering an empty list");
            return Ok(json!({"tools": []}));
        }
        let size = self
            .options()
            .page_size
            .map_or(all.len(), std::num::NonZeroUsize::get);
        let end = start.saturating_add(size).min(all.len());
        let page = all.get(start..end).unwrap_or_default();
        let mut result = Map::new();
        result.insert("tools".to_owned(), json!(page));
        if end < all.len() {
            result.insert(
                "nextCursor".to_owned(),
                json!(format!("{CURSOR_PREFIX}{end}")),
            );
        }
        Ok(Value::Object(result))
    }

    /// `subscriptions/listen`: acknowledges what this server can send (tool
    /// list changes; its tools never change, so nothing follows) and keeps
    /// the request open until the client cancels it (on HTTP: closes the
    /// stream) or the server stops.
    async fn listen(&mut self, id: Id, params: Map<String, Value>) {
        let asked = params.get("notifications");
        let mut granted = Map::new();
        if asked.and_then(|n| n.get("toolsListChanged")) == Some(&Value::Bool(true)) {
            granted.insert("toolsListChanged".into(), Value::Bool(true));
        }
        let subscription = serde_json::to_value(&id).unwrap_or(Value::Null);
        self.outbox
            .notify(
                "notifications/subscriptions/acknowledged",
                json!({
                    "_meta": {meta::SUBSCRIPTION_ID: subscription},
                    "notifications": granted,
                }),
            )
            .await;
        self.log(&format!("subscription {id} open"));
        let mut table = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.next_task += 1;
        let handle = self.tasks.spawn(std::future::pending());
        table.insert(id, (self.next_task, handle));
    }

    fn spawn_call(&mut self, id: Id, call: Call, modern: bool) {
        let Call {
            name,
            arguments,
            progress_token,
            input_responses,
            request_state,
        } = call;
        let ctx = CallContext {
            workspace: self.workspace.clone(),
            outbox: self.outbox.clone(),
            progress_token,
            modern,
        };
        let options = &self.shared.options;
        let late = options
            .has(Misbehaviour::LateAnswer)
            .then(|| Duration::from_millis(options.late_ms));
        let oversize = options
            .has(Misbehaviour::OversizedLine)
            .then_some(options.oversize_bytes);
        let flood = options
            .has(Misbehaviour::FloodNotifications)
            .then_some(options.flood_count);
        let outbox = self.outbox.clone();
        let in_flight = Arc::clone(&self.in_flight);
        self.next_task += 1;
        let task = self.next_task;
        let task_id = id.clone();
        // Held while spawning, so the task cannot finish before it is registered.
        let mut table = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let handle = self.tasks.spawn(async move {
            if let Some(delay) = late {
                tokio::time::sleep(delay).await;
            }
            let result = if name == "ask_name" {
                ask_name(modern, input_responses.as_ref(), request_state.as_ref())
            } else {
                tools::call(&name, &arguments, ctx).await
            };
            let result = result.map(|mut r| {
                if modern && let Value::Object(map) = &mut r {
                    map.entry("resultType").or_insert_with(|| json!("complete"));
                }
                r
            });
            if let Some(len) = oversize {
                outbox.send_bytes(oversized_line(len)).await;
            }
            if let Some(count) = flood {
                for i in 1..=count {
                    outbox
                        .notify(
                            "notifications/message",
                            json!({
                                "level": "info",
                                "logger": SERVER_NAME,
                                "data": format!("flood notification {i} of {count}"),
                            }),
                        )
                        .await;
                }
            }
            {
                let mut table = in_flight.lock().unwrap_or_else(PoisonError::into_inner);
                if table.get(&task_id).is_some_and(|(t, _)| *t == task) {
                    table.remove(&task_id);
                }
            }
            // Past this point a cancellation finds nothing: the answer goes out whole.
            outbox.respond(task_id, result).await;
        });
        table.insert(id, (task, handle));
    }
}

/// The parameters of a `tools/call`.
struct Call {
    name: String,
    arguments: Map<String, Value>,
    progress_token: Option<Value>,
    /// A multi-round-trip retry's answers.
    input_responses: Option<Value>,
    /// A multi-round-trip retry's echoed state.
    request_state: Option<Value>,
}

/// `ask_name`: asks for a name with an elicitation input request (a
/// multi-round-trip result), then greets whoever answered.
fn ask_name(
    modern: bool,
    responses: Option<&Value>,
    state: Option<&Value>,
) -> Result<Value, ProtocolError> {
    if !modern {
        return Ok(json!({"content": [{"type": "text",
            "text": "ask_name needs 2026-07-28 multi-round-trip results"}], "isError": true}));
    }
    let answer = responses.and_then(|r| r.get("name"));
    match (answer, state) {
        (Some(answer), Some(Value::String(s))) if s == ASK_NAME_STATE => {
            let text = match answer.get("action").and_then(Value::as_str) {
                Some("accept") => format!(
                    "hello {}",
                    answer
                        .get("content")
                        .and_then(|c| c.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("stranger")
                ),
                _ => "no name given".to_owned(),
            };
            Ok(json!({"content": [{"type": "text", "text": text}]}))
        }
        (Some(_), _) => Err(ProtocolError::invalid_field(
            "requestState",
            "missing or not the one this server handed out",
        )),
        (None, _) => Ok(json!({
            "resultType": "input_required",
            "inputRequests": {"name": {"method": "elicitation/create", "params": {
                "mode": "form",
                "message": "What is your name?",
                "requestedSchema": {"type": "object", "properties": {
                    "name": {"type": "string", "default": "octocat"}}, "required": ["name"]},
            }}},
            "requestState": ASK_NAME_STATE,
        })),
    }
}

fn parse_call(mut params: Map<String, Value>) -> Result<Call, ProtocolError> {
    let name = match params.remove("name") {
        Some(Value::String(name)) => name,
        Some(_) => return Err(ProtocolError::invalid_field("name", "expected a string")),
        None => return Err(ProtocolError::invalid_field("name", "required")),
    };
    let arguments = match params.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err(ProtocolError::invalid_field(
                "arguments",
                "expected an object",
            ));
        }
    };
    let progress_token = match params.get("_meta").and_then(|m| m.get("progressToken")) {
        None | Some(Value::Null) => None,
        Some(token @ (Value::String(_) | Value::Number(_))) => Some(token.clone()),
        Some(_) => {
            return Err(ProtocolError::invalid_field(
                "_meta.progressToken",
                "expected a string or an integer",
            ));
        }
    };
    Ok(Call {
        name,
        arguments,
        progress_token,
        input_responses: params.remove("inputResponses"),
        request_state: params.remove("requestState"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_line_is_one_line_over_the_limit() {
        for len in [0, 10, 100, 1000] {
            let line = oversized_line(len);
            assert!(line.len() - 1 > len, "{len}");
            assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
            assert!(line.ends_with(b"\n"));
            if len > 100 {
                assert_eq!(line.len() - 1, len + 1);
                let value: Value = serde_json::from_slice(&line).unwrap();
                assert_eq!(value["method"], "notifications/message");
            }
        }
    }

    /// The HTTP layer answers 404 for the methods `modern_method_known`
    /// refuses: it must agree with what the server itself serves.
    #[cfg(feature = "http")]
    #[tokio::test]
    async fn modern_method_known_agrees_with_the_dispatch() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        for misbehaviours in [vec![], vec![Misbehaviour::NoToolsCapability]] {
            for era in [Era::Modern, Era::Dual] {
                let options = ServerOptions {
                    era,
                    misbehaviours: misbehaviours.clone(),
                    ..ServerOptions::default()
                };
                let (client, server) = tokio::io::duplex(1 << 16);
                let (r, w) = tokio::io::split(server);
                let task = tokio::spawn(serve_on(options.clone(), r, w, Host::InMemory));
                let (r, mut w) = tokio::io::split(client);
                let mut lines = BufReader::new(r).lines();
                for method in [
                    "server/discover",
                    "logging/setLevel",
                    "tools/list",
                    "tools/call",
                    "ping",
                    "initialize",
                    "resources/list",
                    "prompts/get",
                    "completion/complete",
                ] {
                    let request = json!({"jsonrpc": "2.0", "id": 1, "method": method,
                        "params": {"_meta": {meta::PROTOCOL_VERSION: MODERN.as_str()}}});
                    w.write_all(format!("{request}\n").as_bytes())
                        .await
                        .unwrap();
                    let answer: Value =
                        serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
                    let not_found = answer["error"]["code"] == codes::METHOD_NOT_FOUND;
                    assert_eq!(
                        modern_method_known(&options, method),
                        !not_found,
                        "{era:?} {method}: {answer}"
                    );
                }
                w.shutdown().await.unwrap();
                task.await.unwrap().unwrap();
            }
        }
    }
}
