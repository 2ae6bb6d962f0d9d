//! One MCP instance behind the HTTP layer (a session, or one 2026-07-28
//! request) and the routing of what it writes: answers to the request
//! that asked (a JSON wait or a request's SSE stream), progress to the
//! stream of the request that offered the token, the rest to the GET
//! stream.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use mcp_stack_jsonrpc::{Id, Message, from_raw};
use mcp_stack_protocol::meta;
use mcp_stack_protocol::notification::{self, Notification as _};
use mcp_stack_protocol::types::ProgressParams;
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, WriteHalf};
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use super::lock;
use super::sse::sse_event;
use crate::options::ServerOptions;
use crate::resources::World;

/// Where a message from the MCP server goes.
#[derive(Debug)]
enum Target {
    Stream(u64),
    Json(oneshot::Sender<Bytes>),
}

/// One request's SSE stream.
#[derive(Debug, Default)]
pub(super) struct EventStream {
    /// The events sent so far, to replay after a `Last-Event-ID`.
    pub(super) log: Vec<Bytes>,
    /// The client's end, while one is attached.
    pub(super) live: Option<mpsc::UnboundedSender<Bytes>>,
    /// The answer went out.
    pub(super) done: bool,
}

/// Where each message of a session's MCP instance goes.
#[derive(Debug, Default)]
pub(super) struct Routes {
    /// Requests waiting for their answer, by id (JSON-encoded).
    pending: HashMap<String, Target>,
    /// Progress tokens (JSON-encoded) and the stream of their request.
    progress: HashMap<String, u64>,
    pub(super) streams: HashMap<u64, EventStream>,
    next_stream: u64,
    /// The GET stream (streamable) or the stream of a legacy session.
    pub(super) standalone: Option<mpsc::UnboundedSender<Bytes>>,
    /// Events carry no ids (2026-07-28 streams cannot be resumed).
    no_event_ids: bool,
}

/// What a [`Session`] serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SessionKind {
    /// A streamable HTTP session (or the one instance of a stateless server).
    Streamable,
    /// A legacy HTTP+SSE session.
    LegacySse,
    /// One 2026-07-28 request.
    Discover,
}

/// One in-process [`crate::serve`] instance and its routes. Dropping it
/// ends the instance.
#[derive(Debug)]
pub(super) struct Session {
    pub(super) id: String,
    pub(super) legacy: bool,
    input: tokio::sync::Mutex<WriteHalf<tokio::io::DuplexStream>>,
    pub(super) routes: Mutex<Routes>,
    /// POSTs to this session so far (for the expire misbehaviours).
    pub(super) posts: AtomicUsize,
    /// A legacy stream ends after this many messages (0: never).
    drop_after: AtomicUsize,
    /// Messages sent on a legacy stream so far.
    streamed: AtomicUsize,
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

/// The progress token (JSON-encoded) a request's params offer, if any.
pub(super) fn progress_token(params: &Map<String, Value>) -> Option<String> {
    params
        .get(meta::KEY)
        .and_then(|m| m.get(meta::PROGRESS_TOKEN))
        .map(Value::to_string)
}

impl Routes {
    /// Opens request `id`'s stream: its answer, and the progress of
    /// `progress` (a token, JSON-encoded), go there. `live` is the client's
    /// end (`None`: nobody listens until a resumption).
    pub(super) fn open_stream(
        &mut self,
        id: &Id,
        progress: Option<String>,
        live: Option<mpsc::UnboundedSender<Bytes>>,
    ) -> u64 {
        self.next_stream += 1;
        let sid = self.next_stream;
        if let Some(token) = progress {
            self.progress.insert(token, sid);
        }
        self.pending.insert(key(id), Target::Stream(sid));
        self.streams.insert(
            sid,
            EventStream {
                log: Vec::new(),
                live,
                done: false,
            },
        );
        sid
    }

    /// Adds an event to a request stream and sends it to the client, if attached.
    fn emit(&mut self, sid: u64, data: &[u8], last: bool) {
        let Some(stream) = self.streams.get_mut(&sid) else {
            return;
        };
        let n = stream.log.len();
        let id = (!self.no_event_ids).then(|| format!("{sid}-{n}"));
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
            self.progress.retain(|_, s| *s != sid);
        }
    }

    /// Where a message belongs: the request it answers, or the stream of
    /// the request whose progress it reports.
    fn target_of(&mut self, message: Option<&Message>) -> Option<Target> {
        match message {
            Some(Message::Response(_) | Message::Error(_)) => message
                .and_then(Message::id)
                .and_then(|id| self.pending.remove(&key(id))),
            Some(Message::Notification(n)) if n.method == notification::Progress::METHOD => n
                .params
                .as_ref()
                .and_then(|p| from_raw::<ProgressParams>(p).ok())
                .and_then(|p| self.progress.get(&p.progress_token.to_string()).copied())
                .map(Target::Stream),
            _ => None,
        }
    }

    /// A message unrelated to any request: to the GET stream, else to the
    /// oldest open request stream.
    fn elsewhere(&mut self, line: &[u8]) {
        if let Some(tx) = &self.standalone
            && tx.send(sse_event(None, None, line)).is_ok()
        {
            return;
        }
        let open = self
            .streams
            .iter()
            .filter(|(_, s)| !s.done)
            .map(|(id, _)| *id)
            .min();
        if let Some(sid) = open {
            self.emit(sid, line, false);
        }
    }
}

impl Session {
    /// Starts an instance with `options` and the task routing what it writes.
    /// `world`: the resources it shares with the server's other instances.
    pub(super) fn start(
        id: String,
        kind: SessionKind,
        options: ServerOptions,
        world: Option<Arc<World>>,
    ) -> Arc<Session> {
        let legacy = kind == SessionKind::LegacySse;
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server);
        let (client_read, client_write) = tokio::io::split(client);
        let serve = tokio::spawn(async move {
            let _ = crate::server::serve_on(
                options,
                world,
                server_read,
                server_write,
                crate::server::Host::InMemory,
            )
            .await;
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
                if kind == SessionKind::Discover
                    && let Some(session) = weak.upgrade()
                {
                    session.hang_up();
                }
            });
            Session {
                id,
                legacy,
                input: tokio::sync::Mutex::new(client_write),
                routes: Mutex::new(Routes {
                    no_event_ids: kind == SessionKind::Discover,
                    ..Routes::default()
                }),
                posts: AtomicUsize::new(0),
                drop_after: AtomicUsize::new(0),
                streamed: AtomicUsize::new(0),
                tasks: vec![serve.abort_handle(), router.abort_handle()],
            }
        })
    }

    /// Ends the legacy stream after `messages` more messages (the
    /// `drop-sse-stream` misbehaviour).
    pub(super) fn drop_stream_after(&self, messages: usize) {
        self.drop_after.store(messages, Ordering::Relaxed);
    }

    /// Ends every wait and stream: nothing more will come.
    fn hang_up(&self) {
        let mut routes = lock(&self.routes);
        routes.pending.clear();
        for stream in routes.streams.values_mut() {
            stream.live = None;
        }
    }

    /// Writes one message, as one line, to the MCP server. Line breaks in a
    /// (pretty-printed) body can only be JSON whitespace: they become spaces.
    pub(super) async fn write(&self, body: &[u8]) -> io::Result<()> {
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

    /// Sends request `id` and waits for its answer, whole (the JSON form of
    /// an answer); `None` when it cannot be sent or no answer comes.
    pub(super) async fn ask(&self, id: &Id, body: &[u8]) -> Option<Bytes> {
        let (tx, rx) = oneshot::channel();
        lock(&self.routes).pending.insert(key(id), Target::Json(tx));
        self.write(body).await.ok()?;
        rx.await.ok()
    }

    /// Sends one line of the MCP server where it belongs.
    fn route(&self, line: Bytes) {
        let mut routes = lock(&self.routes);
        if self.legacy {
            if let Some(tx) = &routes.standalone {
                let _ = tx.send(sse_event(None, Some("message"), &line));
                let sent = self.streamed.fetch_add(1, Ordering::Relaxed) + 1;
                let limit = self.drop_after.load(Ordering::Relaxed);
                if limit > 0 && sent >= limit {
                    // The stream ends: its last sender is gone.
                    routes.standalone = None;
                }
            }
            return;
        }
        let message = Message::from_slice(&line).ok();
        let is_answer = matches!(message, Some(Message::Response(_) | Message::Error(_)));
        match routes.target_of(message.as_ref()) {
            Some(Target::Json(tx)) => {
                let _ = tx.send(line);
            }
            Some(Target::Stream(sid)) => routes.emit(sid, &line, is_answer),
            None => routes.elsewhere(&line),
        }
    }
}
