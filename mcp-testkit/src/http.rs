//! MCP test servers over HTTP, on 127.0.0.1 (cargo feature `http`, on by default).
//!
//! Each MCP session is one [`crate::serve`] instance behind the HTTP layer, so
//! the HTTP servers answer exactly like the stdio server (same tools, same
//! [`Misbehaviour`](crate::Misbehaviour)s), and add HTTP behaviours and
//! misbehaviours of their own ([`HttpMisbehaviour`]).
//!
//! * Streamable HTTP at `/mcp`: stateful (an `Mcp-Session-Id` per
//!   `initialize`) or stateless; answers as SSE streams (with event ids, so
//!   they can be resumed with `Last-Event-ID`) or as JSON; a GET stream for
//!   server-initiated messages; DELETE ends a session.
//! * Legacy HTTP+SSE (2024-11-05): GET `/sse` opens a stream whose first
//!   event is `endpoint` (`/messages?sessionId=…`); messages are POSTed there
//!   and answered on the stream. A legacy-only server answers POST `/sse`
//!   with 405 and anything at `/mcp` with 404, so fallback can be tested.
//!
//! A stateful server answers a POST without a session id that is not
//! `initialize` as the TypeScript SDK does: 400 with
//! `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`,
//! so a legacy-era server (the default, [`Era::Legacy`]) refuses a
//! 2026-07-28 request the way clients falling back expect.
//!
//! # 2026-07-28 (modern) streamable HTTP
//!
//! With [`ServerOptions::era`] [`Era::Modern`] (every POST) or [`Era::Dual`]
//! (a request whose `params._meta` names
//! `io.modelcontextprotocol/protocolVersion`, a `server/discover`, or a
//! notification without a session id that says it is modern), `/mcp` serves
//! POSTs statelessly: no `Mcp-Session-Id` is minted or needed (one sent is
//! ignored), and each request runs on an MCP instance of its own, which ends
//! with the answer. Multi-round-trip retries (the `ask_name` tool) are new
//! POSTs carrying the self-contained `requestState`, so this is all they need.
//! The answer comes as an SSE stream scoped to the request (notifications
//! such as progress, then the response; no event ids, no resumption) or as
//! JSON with [`HttpServerOptions::json_response`]. In the modern era GET and
//! DELETE answer 405; a dual-era server keeps them for its legacy sessions.
//!
//! Before a modern request reaches the MCP instance, its headers are checked
//! against its body as the spec's "Server Validation" says (header names in
//! any case):
//!
//! * `MCP-Protocol-Version` must be present and equal the `_meta` version,
//!   else 400 + `-32020` (`HeaderMismatch`); a version other than
//!   2026-07-28 gets 400 + `-32022` with `data: {"supported", "requested"}`
//!   (a dual-era server lists the legacy versions too);
//! * `Mcp-Method` must equal `method`; an unknown method then gets 404 +
//!   `-32601`;
//! * `Mcp-Name` must equal `params.name` (`tools/call`, `prompts/get`) or
//!   `params.uri` (`resources/read`), after decoding the Base64 sentinel
//!   form `=?base64?…?=`;
//! * for `tools/call`, `Mcp-Param-{Name}` for every argument of the tool
//!   annotated `x-mcp-header: Name` (reached through `properties` only):
//!   required when the argument has a non-null value, equal to it after
//!   decoding (integers numerically, booleans as `true`/`false`), absent
//!   otherwise.
//!
//! A failed check is 400 + `-32020` naming the header (`data: {"header"}`),
//! with the request's id. An `initialize` to a modern-only server gets 400 +
//! `-32022` naming the versions it speaks.
//!
//! Closing a request's SSE stream (or the connection) before the answer is
//! its cancellation: the instance and its work are dropped and
//! [`HttpStats::disconnect_cancels`] counts it. Notification POSTs are
//! answered 202 and counted in [`HttpStats::modern_notifications`] (a
//! conforming client sends no `notifications/cancelled` over HTTP). The
//! modern-only tools are `ask_name`, `route` (arguments `region` and `shard`
//! mirrored into `Mcp-Param-Region` and `Mcp-Param-Shard`) and `bad_header`
//! (an invalid annotation: a conforming HTTP client drops it from its
//! catalog). The `status-500`, `slow-head` and `wrong-content-type`
//! misbehaviours apply to modern requests too; with `drop-stream`, a
//! `tools/call` stream ends with no answer.
//!
//! ```
//! use mcp_testkit::http::{HttpServer, HttpServerOptions};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let server = HttpServer::start(HttpServerOptions::default()).await.unwrap();
//! assert!(server.url().starts_with("http://127.0.0.1:"));
//! assert!(server.url().ends_with("/mcp"));
//! server.shutdown().await;
//! # });
//! ```
//!
//! A modern server answers `server/discover` without any session:
//!
//! ```
//! use mcp_testkit::http::{HttpServer, HttpServerOptions};
//! use mcp_testkit::{Era, ServerOptions};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let mut server = ServerOptions::default();
//! server.era = Era::Modern;
//! let options = HttpServerOptions { server, json_response: true, ..HttpServerOptions::default() };
//! let server = HttpServer::start(options).await.unwrap();
//!
//! let body = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{
//!     "io.modelcontextprotocol/protocolVersion":"2026-07-28",
//!     "io.modelcontextprotocol/clientInfo":{"name":"doc","version":"1"},
//!     "io.modelcontextprotocol/clientCapabilities":{}}}}"#;
//! let request = format!(
//!     "POST /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
//!      Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
//!      MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\n\
//!      Content-Length: {}\r\n\r\n{body}",
//!     server.addr(),
//!     body.len()
//! );
//! let mut tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
//! tcp.write_all(request.as_bytes()).await.unwrap();
//! let mut response = String::new();
//! tcp.read_to_string(&mut response).await.unwrap();
//! assert!(response.starts_with("HTTP/1.1 200"), "{response}");
//! assert!(!response.to_ascii_lowercase().contains("mcp-session-id"));
//! assert!(response.contains(r#""supportedVersions":["2026-07-28"]"#), "{response}");
//! server.shutdown().await;
//! # });
//! ```

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mcp_jsonrpc::{Id, Message, codes};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, WriteHalf};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinSet};

use crate::options::{Era, ServerOptions};

mod modern;

type Body = BoxBody<Bytes, Infallible>;

/// Which HTTP transport the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpMode {
    /// Streamable HTTP only, at `/mcp`.
    Streamable,
    /// The 2024-11-05 HTTP+SSE transport only, at `/sse` and `/messages`.
    LegacySse,
    /// Both, as servers that keep old clients working do.
    Both,
}

/// One way the HTTP layer misbehaves on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HttpMisbehaviour {
    /// `drop-stream`: the SSE stream of each `tools/call` sends a priming event
    /// (an id and `retry: retry_ms`) and then drops the connection before the
    /// answer; the answer waits to be fetched with a GET carrying `Last-Event-ID`.
    DropStream,
    /// `expire-session`: the first session expires after `expire_after`
    /// POSTs; requests with its id then get 404.
    ExpireSession,
    /// `expire-session-400`: like `expire-session`, but answers the stale id
    /// with 400 "Bad Request: No valid session ID provided", as the
    /// TypeScript SDK's servers do.
    ExpireSession400,
    /// `status-500`: answers every `tools/call` POST with 500.
    Status500,
    /// `wrong-content-type`: answers requests other than `initialize` with
    /// `Content-Type: text/plain`.
    WrongContentType,
    /// `slow-head`: waits `slow_ms` before answering each POST of a request
    /// other than `initialize`.
    SlowHead,
}

impl HttpMisbehaviour {
    /// Every HTTP misbehaviour.
    pub const ALL: &'static [HttpMisbehaviour] = &[
        HttpMisbehaviour::DropStream,
        HttpMisbehaviour::ExpireSession,
        HttpMisbehaviour::ExpireSession400,
        HttpMisbehaviour::Status500,
        HttpMisbehaviour::WrongContentType,
        HttpMisbehaviour::SlowHead,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            HttpMisbehaviour::DropStream => "drop-stream",
            HttpMisbehaviour::ExpireSession => "expire-session",
            HttpMisbehaviour::ExpireSession400 => "expire-session-400",
            HttpMisbehaviour::Status500 => "status-500",
            HttpMisbehaviour::WrongContentType => "wrong-content-type",
            HttpMisbehaviour::SlowHead => "slow-head",
        }
    }

    /// Parses a name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|m| m.name() == name)
    }
}

/// How an HTTP test server behaves. Build it with struct update syntax from
/// `HttpServerOptions::default()` (fields may be added).
#[derive(Debug, Clone)]
pub struct HttpServerOptions {
    /// The MCP behaviour (tools, stdio-level misbehaviours).
    pub server: ServerOptions,
    /// Streamable HTTP, legacy SSE, or both.
    pub mode: HttpMode,
    /// No sessions: no `Mcp-Session-Id`, GET and DELETE answer 405.
    pub stateless: bool,
    /// Answer requests with `application/json` instead of an SSE stream.
    pub json_response: bool,
    /// Offer the GET stream (else GET answers 405).
    pub get_stream: bool,
    /// HTTP misbehaviours.
    pub misbehaviours: Vec<HttpMisbehaviour>,
    /// The `retry` (ms) sent before a dropped stream.
    pub retry_ms: u64,
    /// POSTs before a session expires (with the expire misbehaviours).
    pub expire_after: usize,
    /// The delay of [`HttpMisbehaviour::SlowHead`], in ms.
    pub slow_ms: u64,
    /// A header every request must carry (name, exact value); 401 otherwise.
    pub require_header: Option<(String, String)>,
}

impl Default for HttpServerOptions {
    fn default() -> Self {
        HttpServerOptions {
            server: ServerOptions::default(),
            mode: HttpMode::Streamable,
            stateless: false,
            json_response: false,
            get_stream: true,
            misbehaviours: Vec::new(),
            retry_ms: 200,
            expire_after: 3,
            slow_ms: 1000,
            require_header: None,
        }
    }
}

impl HttpServerOptions {
    /// Whether a misbehaviour is selected.
    pub fn has(&self, m: HttpMisbehaviour) -> bool {
        self.misbehaviours.contains(&m)
    }

    /// Options with one HTTP misbehaviour.
    pub fn misbehaving(m: HttpMisbehaviour) -> Self {
        HttpServerOptions {
            misbehaviours: vec![m],
            ..Self::default()
        }
    }
}

/// What the server saw, for tests to check.
#[derive(Debug, Default)]
pub struct HttpStats {
    /// `initialize` requests received (a new session each, when stateful).
    pub initializes: AtomicUsize,
    /// DELETE requests received.
    pub deletes: AtomicUsize,
    /// GETs that carried `Last-Event-ID`.
    pub resumes: AtomicUsize,
    /// GET streams opened (without `Last-Event-ID`).
    pub get_streams: AtomicUsize,
    /// Legacy SSE streams opened.
    pub legacy_streams: AtomicUsize,
    /// Requests answered 404 or 400 for a stale session.
    pub stale_session_answers: AtomicUsize,
    /// POSTs that reached the MCP server.
    pub posts: AtomicUsize,
    /// The `MCP-Protocol-Version` of each POST after initialize (empty when absent).
    pub protocol_versions: Mutex<Vec<String>>,
    /// The `Last-Event-ID` values seen.
    pub last_event_ids: Mutex<Vec<String>>,
    /// POSTs served the 2026-07-28 way (requests and notifications, refused
    /// or not).
    pub modern_posts: AtomicUsize,
    /// The `MCP-Protocol-Version` and `Mcp-*` headers of each modern POST, in
    /// order: lower-cased names, raw values.
    pub modern_headers: Mutex<Vec<Vec<(String, String)>>>,
    /// Modern requests refused with `400` + `-32020` (`HeaderMismatch`).
    pub header_rejections: AtomicUsize,
    /// Notification POSTs in the 2026-07-28 mode. A conforming client sends
    /// none: it cancels by closing the response stream.
    pub modern_notifications: AtomicUsize,
    /// Modern requests whose client closed the response stream (or the
    /// connection) before the answer; their work was aborted.
    pub disconnect_cancels: AtomicUsize,
}

/// A running HTTP test server. Dropping it stops it.
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: AbortHandle,
}

#[derive(Debug)]
struct Shared {
    options: HttpServerOptions,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// The one session of a stateless server.
    stateless: Mutex<Option<Arc<Session>>>,
    next_session: AtomicU64,
    expired_once: AtomicBool,
    stats: HttpStats,
    connections: Mutex<JoinSet<()>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where a message from the MCP server goes.
#[derive(Debug)]
enum Target {
    Stream(u64),
    Json(oneshot::Sender<Bytes>),
}

#[derive(Debug, Default)]
struct EventStream {
    /// The events sent so far, to replay after a `Last-Event-ID`.
    log: Vec<Bytes>,
    live: Option<mpsc::UnboundedSender<Bytes>>,
    done: bool,
}

#[derive(Debug, Default)]
struct Routes {
    pending: HashMap<String, Target>,
    progress: HashMap<String, u64>,
    streams: HashMap<u64, EventStream>,
    next_stream: u64,
    /// The GET stream (streamable) or the stream of a legacy session.
    standalone: Option<mpsc::UnboundedSender<Bytes>>,
    /// Events carry no ids (2026-07-28 streams cannot be resumed).
    no_event_ids: bool,
}

/// What a [`Session`] serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SessionKind {
    /// A streamable HTTP session (or the one instance of a stateless server).
    Streamable,
    /// A legacy HTTP+SSE session.
    LegacySse,
    /// One 2026-07-28 request.
    Modern,
}

#[derive(Debug)]
struct Session {
    id: String,
    legacy: bool,
    input: tokio::sync::Mutex<WriteHalf<tokio::io::DuplexStream>>,
    routes: Mutex<Routes>,
    posts: AtomicUsize,
    tasks: Vec<AbortHandle>,
}

impl Drop for Session {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn key(id: &Id) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

fn sse_event(id: Option<&str>, event: Option<&str>, data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 32);
    if let Some(id) = id {
        out.extend_from_slice(format!("id: {id}\n").as_bytes());
    }
    if let Some(event) = event {
        out.extend_from_slice(format!("event: {event}\n").as_bytes());
    }
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

impl Session {
    fn start(id: String, kind: SessionKind, options: ServerOptions) -> Arc<Session> {
        let legacy = kind == SessionKind::LegacySse;
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server);
        let (client_read, client_write) = tokio::io::split(client);
        let serve = tokio::spawn(async move {
            let _ = crate::serve(options, server_read, server_write).await;
        });
        Arc::new_cyclic(|weak: &std::sync::Weak<Session>| {
            let weak = weak.clone();
            let router = tokio::spawn(async move {
                let mut lines = BufReader::new(client_read);
                let mut line = Vec::new();
                loop {
                    line.clear();
                    match lines.read_until(b'\n', &mut line).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    let Some(session) = weak.upgrade() else { break };
                    let text = line.strip_suffix(b"\n").unwrap_or(&line);
                    session.route(Bytes::copy_from_slice(text));
                }
                // A modern request's instance ended (a crash, say): end its
                // stream or JSON wait rather than leave the client hanging.
                if kind == SessionKind::Modern
                    && let Some(session) = weak.upgrade()
                {
                    let mut routes = lock(&session.routes);
                    routes.pending.clear();
                    for stream in routes.streams.values_mut() {
                        stream.live = None;
                    }
                }
            });
            Session {
                id,
                legacy,
                input: tokio::sync::Mutex::new(client_write),
                routes: Mutex::new(Routes {
                    no_event_ids: kind == SessionKind::Modern,
                    ..Routes::default()
                }),
                posts: AtomicUsize::new(0),
                tasks: vec![serve.abort_handle(), router.abort_handle()],
            }
        })
    }

    /// Writes one message, as one line, to the MCP server. Line breaks in a
    /// (pretty-printed) body can only be JSON whitespace: they become spaces.
    async fn write(&self, body: &[u8]) -> io::Result<()> {
        let line: std::borrow::Cow<'_, [u8]> = if body.contains(&b'\n') || body.contains(&b'\r') {
            body.iter()
                .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
                .collect::<Vec<u8>>()
                .into()
        } else {
            body.into()
        };
        let mut input = self.input.lock().await;
        input.write_all(&line).await?;
        input.write_all(b"\n").await?;
        input.flush().await
    }

    /// Sends one line of the MCP server where it belongs.
    fn route(&self, line: Bytes) {
        let mut routes = lock(&self.routes);
        if self.legacy {
            if let Some(tx) = &routes.standalone {
                let _ = tx.send(sse_event(None, Some("message"), &line));
            }
            return;
        }
        let message = Message::from_slice(&line).ok();
        let target = match &message {
            Some(Message::Response(_) | Message::Error(_)) => message
                .as_ref()
                .and_then(Message::id)
                .and_then(|id| routes.pending.remove(&key(id))),
            Some(Message::Notification(n)) => n
                .params
                .as_ref()
                .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                .and_then(|p| p.get("progressToken").map(Value::to_string))
                .and_then(|token| routes.progress.get(&token).copied())
                .map(Target::Stream),
            _ => None,
        };
        let is_answer = matches!(
            message,
            Some(Message::Response(_) | Message::Error(_)) | None
        );
        match target {
            Some(Target::Json(tx)) => {
                let _ = tx.send(line);
            }
            Some(Target::Stream(sid)) => {
                emit(&mut routes, sid, &line, is_answer && message.is_some())
            }
            None => {
                // Unrelated to any request: the GET stream, else any open request stream.
                if let Some(tx) = &routes.standalone
                    && tx.send(sse_event(None, None, &line)).is_ok()
                {
                    return;
                }
                let open = routes
                    .streams
                    .iter()
                    .filter(|(_, s)| !s.done)
                    .map(|(id, _)| *id)
                    .min();
                if let Some(sid) = open {
                    emit(&mut routes, sid, &line, false);
                }
            }
        }
    }
}

/// Adds an event to a request stream and sends it to the client, if attached.
fn emit(routes: &mut Routes, sid: u64, data: &[u8], last: bool) {
    let Some(stream) = routes.streams.get_mut(&sid) else {
        return;
    };
    let n = stream.log.len();
    let id = (!routes.no_event_ids).then(|| format!("{sid}-{n}"));
    let event = sse_event(id.as_deref(), None, data);
    if id.is_some() {
        stream.log.push(event.clone());
    }
    if let Some(tx) = &stream.live
        && tx.send(event).is_err()
    {
        stream.live = None;
    }
    if last {
        stream.done = true;
        stream.live = None;
        routes.progress.retain(|_, s| *s != sid);
    }
}

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()).boxed());
    *response.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    response
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = status;
    response
}

fn json_error(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    full(status, "application/json", body.to_string())
}

fn sse_response(rx: mpsc::UnboundedReceiver<Bytes>) -> Response<Body> {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|bytes| (Ok::<_, Infallible>(Frame::data(bytes)), rx))
    });
    sse_headers(Response::new(StreamBody::new(stream).boxed()))
}

/// An SSE response that owns one modern request's instance: the stream
/// ending (after the answer) finishes the call; the client dropping it
/// first cancels the call.
fn sse_response_for(rx: mpsc::UnboundedReceiver<Bytes>, call: ModernCall) -> Response<Body> {
    let stream = futures_util::stream::unfold((rx, call), |(mut rx, mut call)| async move {
        match rx.recv().await {
            Some(bytes) => Some((Ok::<_, Infallible>(Frame::data(bytes)), (rx, call))),
            None => {
                call.finish();
                None
            }
        }
    });
    sse_headers(Response::new(StreamBody::new(stream).boxed()))
}

fn sse_headers(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// One 2026-07-28 request's MCP instance. Dropping it ends the instance
/// (aborting the request's work); dropping it before the answer went out
/// counts a [`HttpStats::disconnect_cancels`].
#[derive(Debug)]
struct ModernCall {
    shared: Arc<Shared>,
    session: Arc<Session>,
    finished: bool,
}

impl ModernCall {
    /// The answer went out (or the instance ended): no cancellation.
    fn finish(&mut self) {
        self.finished = true;
    }
}

impl Drop for ModernCall {
    fn drop(&mut self) {
        if !self.finished {
            self.shared
                .stats
                .disconnect_cancels
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn rejection_response(rejection: &modern::Rejection, id: Option<&Id>) -> Response<Body> {
    full(
        rejection.status,
        "application/json",
        rejection.body(id).to_string(),
    )
}

fn header_str<'a>(request: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    request.headers().get(name).and_then(|v| v.to_str().ok())
}

impl Shared {
    fn new_session(&self, legacy: bool) -> Arc<Session> {
        let n = self.next_session.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("testkit-session-{n}-{:x}", std::process::id());
        let kind = if legacy {
            SessionKind::LegacySse
        } else {
            SessionKind::Streamable
        };
        let session = Session::start(id.clone(), kind, self.options.server.clone());
        lock(&self.sessions).insert(id, Arc::clone(&session));
        session
    }

    fn stale_answer(&self) -> Response<Body> {
        self.stats
            .stale_session_answers
            .fetch_add(1, Ordering::Relaxed);
        if self.options.has(HttpMisbehaviour::ExpireSession400) {
            json_error(
                StatusCode::BAD_REQUEST,
                -32000,
                "Bad Request: No valid session ID provided",
            )
        } else {
            json_error(StatusCode::NOT_FOUND, -32001, "Session not found")
        }
    }

    async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        if let Some((name, value)) = &self.options.require_header
            && header_str(&request, name) != Some(value.as_str())
        {
            let mut r = json_error(StatusCode::UNAUTHORIZED, -32001, "Unauthorized");
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
        let streamable = matches!(self.options.mode, HttpMode::Streamable | HttpMode::Both);
        let legacy = matches!(self.options.mode, HttpMode::LegacySse | HttpMode::Both);
        let path = request.uri().path().to_owned();
        match (request.method().clone(), path.as_str()) {
            (Method::POST, "/mcp") if streamable => self.post(request).await,
            (Method::GET, "/mcp") if streamable => self.get(request),
            (Method::DELETE, "/mcp") if streamable => self.delete(&request),
            (_, "/mcp") if streamable => empty(StatusCode::METHOD_NOT_ALLOWED),
            (Method::GET, "/sse") if legacy => self.legacy_stream(),
            (Method::POST, "/messages") if legacy => self.legacy_post(request).await,
            (_, "/sse" | "/messages") if legacy => empty(StatusCode::METHOD_NOT_ALLOWED),
            _ => full(StatusCode::NOT_FOUND, "text/plain", "Not Found"),
        }
    }

    async fn post(self: Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        let accept = header_str(&request, "accept").unwrap_or_default();
        if !(accept.contains("application/json") && accept.contains("text/event-stream")) {
            return json_error(
                StatusCode::NOT_ACCEPTABLE,
                -32000,
                "Not Acceptable: Client must accept both application/json and text/event-stream",
            );
        }
        let (parts, body) = request.into_parts();
        let headers = parts.headers;
        let body = match body.collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => return empty(StatusCode::BAD_REQUEST),
        };
        let message = match Message::from_slice(&body) {
            Ok(m) => m,
            Err(e) => {
                return json_error(
                    StatusCode::BAD_REQUEST,
                    -32700,
                    &format!("Parse error: {e}"),
                );
            }
        };
        if modern::is_modern(self.options.server.era, &headers, &message) {
            return self.modern_post(&headers, body, message).await;
        }
        let session_header = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let version = headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let is_init = message.method() == Some("initialize");
        let session = if is_init {
            self.stats.initializes.fetch_add(1, Ordering::Relaxed);
            if self.options.stateless {
                let mut s = lock(&self.stateless);
                Arc::clone(s.get_or_insert_with(|| {
                    Session::start(
                        String::new(),
                        SessionKind::Streamable,
                        self.options.server.clone(),
                    )
                }))
            } else {
                self.new_session(false)
            }
        } else {
            lock(&self.stats.protocol_versions).push(version);
            match self.find_session_by(session_header.as_deref()) {
                Ok(s) => s,
                Err(r) => return *r,
            }
        };
        let posts = session.posts.fetch_add(1, Ordering::Relaxed) + 1;
        let expire = self.options.has(HttpMisbehaviour::ExpireSession)
            || self.options.has(HttpMisbehaviour::ExpireSession400);
        if expire
            && !self.options.stateless
            && posts > self.options.expire_after
            && !self.expired_once.swap(true, Ordering::SeqCst)
        {
            lock(&self.sessions).remove(&session.id);
            return self.stale_answer();
        }
        self.stats.posts.fetch_add(1, Ordering::Relaxed);
        let session_id = (!self.options.stateless && is_init).then(|| session.id.clone());
        let with_session = |mut r: Response<Body>| {
            if let Some(id) = &session_id
                && let Ok(v) = HeaderValue::from_str(id)
            {
                r.headers_mut().insert("mcp-session-id", v);
            }
            r
        };
        let Message::Request(req) = &message else {
            if session.write(&body).await.is_err() {
                return empty(StatusCode::INTERNAL_SERVER_ERROR);
            }
            return with_session(empty(StatusCode::ACCEPTED));
        };
        if req.method == "tools/call" && self.options.has(HttpMisbehaviour::Status500) {
            return full(
                StatusCode::INTERNAL_SERVER_ERROR,
                "text/plain",
                "Internal Server Error",
            );
        }
        if !is_init && self.options.has(HttpMisbehaviour::SlowHead) {
            tokio::time::sleep(Duration::from_millis(self.options.slow_ms)).await;
        }
        let wrong_type = !is_init && self.options.has(HttpMisbehaviour::WrongContentType);
        if self.options.json_response || wrong_type {
            let (tx, rx) = oneshot::channel();
            lock(&session.routes)
                .pending
                .insert(key(&req.id), Target::Json(tx));
            if session.write(&body).await.is_err() {
                return empty(StatusCode::INTERNAL_SERVER_ERROR);
            }
            return match rx.await {
                Ok(answer) => with_session(full(
                    StatusCode::OK,
                    if wrong_type {
                        "text/plain"
                    } else {
                        "application/json"
                    },
                    answer,
                )),
                Err(_) => empty(StatusCode::INTERNAL_SERVER_ERROR),
            };
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let drop_stream =
            req.method == "tools/call" && self.options.has(HttpMisbehaviour::DropStream);
        {
            let mut routes = lock(&session.routes);
            routes.next_stream += 1;
            let sid = routes.next_stream;
            let progress = req
                .params
                .as_ref()
                .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                .and_then(|p| p.pointer("/_meta/progressToken").map(Value::to_string));
            if let Some(token) = progress {
                routes.progress.insert(token, sid);
            }
            routes.pending.insert(key(&req.id), Target::Stream(sid));
            // The priming event: an id and no data, so the client can resume.
            let mut priming = format!("id: {sid}-p\n").into_bytes();
            if drop_stream {
                priming.extend_from_slice(format!("retry: {}\n", self.options.retry_ms).as_bytes());
            }
            priming.extend_from_slice(b"data:\n\n");
            let _ = tx.send(Bytes::from(priming));
            routes.streams.insert(
                sid,
                EventStream {
                    log: Vec::new(),
                    // A dropped stream: the connection ends after the priming event.
                    live: (!drop_stream).then(|| tx.clone()),
                    done: false,
                },
            );
        }
        drop(tx);
        if session.write(&body).await.is_err() {
            return empty(StatusCode::INTERNAL_SERVER_ERROR);
        }
        with_session(sse_response(rx))
    }

    /// A 2026-07-28 POST: no session; the headers are checked against the
    /// body; a request is served by an MCP instance of its own.
    async fn modern_post(
        self: Arc<Self>,
        headers: &HeaderMap,
        body: Bytes,
        message: Message,
    ) -> Response<Body> {
        self.stats.modern_posts.fetch_add(1, Ordering::Relaxed);
        lock(&self.stats.modern_headers).push(modern::recorded_headers(headers));
        let req = match &message {
            Message::Request(req) => req,
            Message::Notification(_) => {
                self.stats
                    .modern_notifications
                    .fetch_add(1, Ordering::Relaxed);
                return empty(StatusCode::ACCEPTED);
            }
            _ => {
                return json_error(
                    StatusCode::BAD_REQUEST,
                    codes::INVALID_REQUEST,
                    "Bad Request: a 2026-07-28 client sends only requests and notifications",
                );
            }
        };
        let params = req
            .params
            .as_ref()
            .and_then(|p| serde_json::from_str::<Map<String, Value>>(p.get()).ok())
            .unwrap_or_default();
        let era = self.options.server.era;
        let checked = if req.method == "initialize" {
            Err(modern::refuse_initialize(era, &params))
        } else {
            modern::validate(&self.options.server, headers, &req.method, &params)
        };
        if let Err(rejection) = checked {
            if rejection.code == mcp_protocol::codes::HEADER_MISMATCH {
                self.stats.header_rejections.fetch_add(1, Ordering::Relaxed);
            }
            return rejection_response(&rejection, Some(&req.id));
        }
        let tools_call = req.method == "tools/call";
        if tools_call && self.options.has(HttpMisbehaviour::Status500) {
            return full(
                StatusCode::INTERNAL_SERVER_ERROR,
                "text/plain",
                "Internal Server Error",
            );
        }
        if self.options.has(HttpMisbehaviour::SlowHead) {
            tokio::time::sleep(Duration::from_millis(self.options.slow_ms)).await;
        }
        if tools_call && self.options.has(HttpMisbehaviour::DropStream) {
            // The stream ends before the answer, and nothing can resume it.
            let (_, rx) = mpsc::unbounded_channel();
            return sse_response(rx);
        }
        let session = Session::start(
            String::new(),
            SessionKind::Modern,
            self.options.server.clone(),
        );
        let mut call = ModernCall {
            shared: Arc::clone(&self),
            session,
            finished: false,
        };
        let wrong_type = self.options.has(HttpMisbehaviour::WrongContentType);
        if self.options.json_response || wrong_type {
            let (tx, rx) = oneshot::channel();
            lock(&call.session.routes)
                .pending
                .insert(key(&req.id), Target::Json(tx));
            if call.session.write(&body).await.is_err() {
                call.finish();
                return empty(StatusCode::INTERNAL_SERVER_ERROR);
            }
            // Dropped here when the client goes away first.
            let answer = rx.await;
            call.finish();
            return match answer {
                Ok(answer) => full(
                    StatusCode::OK,
                    if wrong_type {
                        "text/plain"
                    } else {
                        "application/json"
                    },
                    answer,
                ),
                Err(_) => empty(StatusCode::INTERNAL_SERVER_ERROR),
            };
        }
        let (tx, rx) = mpsc::unbounded_channel();
        {
            let mut routes = lock(&call.session.routes);
            routes.next_stream += 1;
            let sid = routes.next_stream;
            if let Some(token) = params
                .get("_meta")
                .and_then(|m| m.get("progressToken"))
                .map(Value::to_string)
            {
                routes.progress.insert(token, sid);
            }
            routes.pending.insert(key(&req.id), Target::Stream(sid));
            routes.streams.insert(
                sid,
                EventStream {
                    log: Vec::new(),
                    live: Some(tx),
                    done: false,
                },
            );
        }
        if call.session.write(&body).await.is_err() {
            call.finish();
            return empty(StatusCode::INTERNAL_SERVER_ERROR);
        }
        sse_response_for(rx, call)
    }

    /// The session a streamable request belongs to, or the answer to give instead.
    fn find_session_by(&self, id: Option<&str>) -> Result<Arc<Session>, Box<Response<Body>>> {
        if self.options.stateless {
            let mut s = lock(&self.stateless);
            return Ok(Arc::clone(s.get_or_insert_with(|| {
                Session::start(
                    String::new(),
                    SessionKind::Streamable,
                    self.options.server.clone(),
                )
            })));
        }
        let Some(id) = id else {
            // What the TypeScript SDK answers before `initialize`; a client
            // probing with a 2026-07-28 request falls back on it.
            return Err(Box::new(json_error(
                StatusCode::BAD_REQUEST,
                -32000,
                "Bad Request: Server not initialized",
            )));
        };
        match lock(&self.sessions).get(id) {
            Some(s) if !s.legacy => Ok(Arc::clone(s)),
            _ => Err(Box::new(self.stale_answer())),
        }
    }

    fn get(&self, request: Request<Incoming>) -> Response<Body> {
        if self.options.stateless
            || !self.options.get_stream
            || self.options.server.era == Era::Modern
        {
            return empty(StatusCode::METHOD_NOT_ALLOWED);
        }
        let session = match self.find_session_by(header_str(&request, "mcp-session-id")) {
            Ok(s) => s,
            Err(r) => return *r,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let mut routes = lock(&session.routes);
        if let Some(last) = header_str(&request, "last-event-id") {
            self.stats.resumes.fetch_add(1, Ordering::Relaxed);
            lock(&self.stats.last_event_ids).push(last.to_owned());
            let Some((sid, n)) = last.split_once('-') else {
                return empty(StatusCode::BAD_REQUEST);
            };
            let Ok(sid) = sid.parse::<u64>() else {
                return empty(StatusCode::BAD_REQUEST);
            };
            // `p` is the priming event: replay everything.
            let from = n.parse::<usize>().map_or(0, |n| n + 1);
            let Some(stream) = routes.streams.get_mut(&sid) else {
                return empty(StatusCode::NOT_FOUND);
            };
            for event in stream.log.iter().skip(from) {
                let _ = tx.send(event.clone());
            }
            if !stream.done {
                stream.live = Some(tx);
            }
            return sse_response(rx);
        }
        self.stats.get_streams.fetch_add(1, Ordering::Relaxed);
        routes.standalone = Some(tx);
        sse_response(rx)
    }

    fn delete(&self, request: &Request<Incoming>) -> Response<Body> {
        self.stats.deletes.fetch_add(1, Ordering::Relaxed);
        if self.options.stateless || self.options.server.era == Era::Modern {
            return empty(StatusCode::METHOD_NOT_ALLOWED);
        }
        match header_str(request, "mcp-session-id") {
            Some(id) if lock(&self.sessions).remove(id).is_some() => empty(StatusCode::OK),
            _ => self.stale_answer(),
        }
    }

    fn legacy_stream(&self) -> Response<Body> {
        self.stats.legacy_streams.fetch_add(1, Ordering::Relaxed);
        let session = self.new_session(true);
        let (tx, rx) = mpsc::unbounded_channel();
        let endpoint = format!("/messages?sessionId={}", session.id);
        let _ = tx.send(sse_event(None, Some("endpoint"), endpoint.as_bytes()));
        lock(&session.routes).standalone = Some(tx);
        sse_response(rx)
    }

    async fn legacy_post(&self, request: Request<Incoming>) -> Response<Body> {
        let id = request
            .uri()
            .query()
            .unwrap_or_default()
            .split('&')
            .find_map(|kv| kv.strip_prefix("sessionId="))
            .map(str::to_owned);
        let session = id.and_then(|id| lock(&self.sessions).get(&id).cloned());
        let Some(session) = session.filter(|s| s.legacy) else {
            return full(StatusCode::NOT_FOUND, "text/plain", "Session not found");
        };
        let body = match request.into_body().collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => return empty(StatusCode::BAD_REQUEST),
        };
        if Message::from_slice(&body)
            .ok()
            .and_then(|m| m.method().map(str::to_owned))
            .as_deref()
            == Some("initialize")
        {
            self.stats.initializes.fetch_add(1, Ordering::Relaxed);
        }
        self.stats.posts.fetch_add(1, Ordering::Relaxed);
        if session.write(&body).await.is_err() {
            return empty(StatusCode::INTERNAL_SERVER_ERROR);
        }
        full(StatusCode::ACCEPTED, "text/plain", "Accepted")
    }
}

impl HttpServer {
    /// Starts a server on 127.0.0.1 with a free port.
    pub async fn start(options: HttpServerOptions) -> io::Result<HttpServer> {
        Self::bind(SocketAddr::from(([127, 0, 0, 1], 0)), options).await
    }

    /// Starts a server on an address (use a loopback address).
    pub async fn bind(addr: SocketAddr, options: HttpServerOptions) -> io::Result<HttpServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            options,
            sessions: Mutex::default(),
            stateless: Mutex::default(),
            next_session: AtomicU64::new(0),
            expired_once: AtomicBool::new(false),
            stats: HttpStats::default(),
            connections: Mutex::new(JoinSet::new()),
        });
        let accept_shared = Arc::clone(&shared);
        let accept = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                accept_shared.serve_connection(stream);
            }
        });
        Ok(HttpServer {
            addr,
            shared,
            accept: accept.abort_handle(),
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL a client connects to: `/mcp` for streamable HTTP (and both),
    /// `/sse` for a legacy-only server.
    pub fn url(&self) -> String {
        match self.shared.options.mode {
            HttpMode::LegacySse => format!("http://{}/sse", self.addr),
            _ => format!("http://{}/mcp", self.addr),
        }
    }

    /// What the server saw.
    pub fn stats(&self) -> &HttpStats {
        &self.shared.stats
    }

    /// Serves one connection accepted elsewhere (a TLS stream, say).
    pub fn serve_connection<IO>(&self, io: IO)
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        self.shared.serve_connection(io);
    }

    /// Stops accepting, ends every connection and session.
    pub async fn shutdown(self) {
        drop(self);
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.accept.abort();
        lock(&self.shared.connections).abort_all();
        lock(&self.shared.sessions).clear();
        lock(&self.shared.stateless).take();
    }
}

impl Shared {
    fn serve_connection<IO>(self: &Arc<Self>, io: IO)
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Arc::clone(self);
        let service = service_fn(move |request| {
            let shared = Arc::clone(&shared);
            async move { Ok::<_, Infallible>(shared.handle(request).await) }
        });
        let mut connections = lock(&self.connections);
        while connections.try_join_next().is_some() {}
        connections.spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(io), service)
                .await;
        });
    }
}
