//! The streamable HTTP transport; see [`StreamableHttpTransport`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Response, Uri};
use mcp_stack_jsonrpc::{Id, Message};
use mcp_stack_protocol::ProtocolVersion;
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio::task::{AbortHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use super::client::HttpClient;
use super::mirror;
use super::{HttpOptions, HttpTrace, parse_url, redact_url};

mod expiry;
mod get_stream;
mod request;
mod state;

use crate::{
    Answer, BatchGate, BoxFuture, Lifecycle, Received, RequestFailure, SendContext, Transport,
    TransportError, TransportKind,
};
use state::{RequestHeaders, SessionState};

const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
/// After the answer arrived on a request's stream, how long to wait for the
/// server to end the stream before dropping it.
const AFTER_ANSWER_LINGER: Duration = Duration::from_millis(100);

/// A streamable HTTP connection to one MCP endpoint.
///
/// The streamable HTTP transport (protocol revisions 2025-03-26 and later).
///
/// How it behaves, in the spec's terms:
///
/// * Every message is a POST to the MCP endpoint with `Accept:
///   application/json, text/event-stream`. Requests go out concurrently over
///   the pooled keep-alive connections: one slow answer holds up nothing else.
/// * `send` of a request returns once the server accepted it (the answer's
///   head arrived) or after [`HttpOptions::accept_wait`], whichever comes
///   first; `initialize` waits for its head (up to the request timeout) so an
///   error status comes back from `send` itself. The answer (JSON, or an SSE
///   stream that may carry requests and notifications first) arrives through
///   `recv`. A failure after `send` returned arrives as
///   [`Received::Failed`] for that request (with the HTTP status when there
///   was one), so no request waits forever and no failure passes for a
///   server's JSON-RPC error.
/// * [`Transport::request_with`] of an ordinary request (not the handshake)
///   drives its POST on the caller's task instead: a JSON answer that is the
///   request's response comes back as [`Answer::Now`](crate::Answer::Now),
///   with no task or channel between; an error status is its error (an
///   expired session [`TransportError::SessionExpired`]). An SSE answer and
///   a 202 go on in a task of the transport and arrive through `recv`
///   ([`Answer::Later`](crate::Answer::Later)). Dropping that future drops
///   the POST.
/// * The transport reads no `params`: the [`SendContext`] says which message
///   is the handshake ([`Lifecycle`]) and which revision a message follows.
/// * The `Mcp-Session-Id` of the initialize answer is sent on every later
///   request, and the revision the context names as `MCP-Protocol-Version`
///   ([`StreamableHttpTransport::set_protocol_version`] overrides it).
/// * After the `Lifecycle::Initialized` notification, a GET stream is opened
///   for server-initiated messages (405 means the server offers none). When
///   it sends nothing, not even a comment, for
///   [`HttpOptions::idle_stream_timeout`], it is treated as dropped and
///   opened again (a request's own SSE answer is bounded by the session's
///   request timeout instead). Whenever it ends it is opened again after the
///   server's `retry`, never below
///   [`MIN_STREAM_RETRY`](crate::backoff::MIN_STREAM_RETRY), and a backoff
///   from [`HttpOptions::default_retry`] up to 30 s that only a stream that
///   lived [`HEALTHY_STREAM_LIFE`](crate::backoff::HEALTHY_STREAM_LIFE)
///   starts afresh: a server that answers the GET and hangs up at once is
///   reopened less and less often. Each wait, and why, is in the trace.
/// * A dropped SSE stream whose events had ids is resumed with a GET carrying
///   `Last-Event-ID`, after the server's `retry` delay (or
///   [`HttpOptions::default_retry`]), up to [`HttpOptions::max_reconnects`]
///   times. A stream that ends without the answer and cannot be resumed gives
///   that request an error response.
/// * A 404 to a message carrying a session id (or a 400 whose body speaks of
///   the session, as the TypeScript SDK's servers answer) means the session
///   expired and the server did not process the message. The transport
///   drops the session id, reports [`Received::SessionExpired`] once, and
///   fails that message (and every later one, unposted, until a new
///   `initialize` is answered with a new session) with
///   [`TransportError::SessionExpired`]. It replays nothing: the layer above
///   runs the handshake again and sends those messages again (an
///   `mcp_stack_session::Session` does both).
/// * `close` ends every stream and sends `DELETE` with the session id
///   (bounded by [`HttpOptions::close_timeout`]; 405 is fine).
///
/// Requests whose context names revision 2026-07-28 follow that revision
/// instead:
///
/// * No session id, no GET stream, no `DELETE`, no resumption: a stream that
///   ends before its answer gives that request an error response.
/// * The request metadata headers: `MCP-Protocol-Version`, `Mcp-Method`,
///   `Mcp-Name` and `Mcp-Param-{Name}`, from the [`SendContext`]. Values
///   that are not plain header-safe ASCII are sent as `=?base64?…?=`.
/// * A 4xx (other than 401, 403 and 407, which stay HTTP errors so the
///   caller sees the auth problem) whose body is a JSON-RPC error (a
///   2026-07-28 server explains `UnsupportedProtocolVersion`, `HeaderMismatch`
///   and unknown methods that way) is the request's answer, with the request's id; any other 4xx
///   fails the request. `Lifecycle::Discover` waits for its answer's head
///   like `initialize`, so a plain 400/404/405 comes back from `send` itself
///   and the session can fall back to `initialize`.
/// * A cancellation ([`SendContext::cancels`]) of a request in flight is not
///   posted: the request's response stream is closed instead, which is the
///   cancellation.
pub struct StreamableHttpTransport {
    inner: Arc<Inner>,
    rx: Mutex<mpsc::Receiver<Received>>,
    closed: AtomicBool,
}

impl std::fmt::Debug for StreamableHttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamableHttpTransport")
            .field("url", &redact_url(&self.inner.url))
            .field("session", &self.session_id().is_some())
            .finish_non_exhaustive()
    }
}

struct Inner {
    client: HttpClient,
    url: Uri,
    tx: mpsc::Sender<Received>,
    state: StdMutex<SessionState>,
    tasks: StdMutex<JoinSet<()>>,
    /// Requests without HTTP session (2026-07-28), whose cancellation
    /// closes their response stream: the task of one in flight (aborting it
    /// closes the stream), or `None` for a request driven on its caller's
    /// task that the caller dropped, which closed the stream then.
    stateless_requests: StdMutex<HashMap<Id, Option<AbortHandle>>>,
    /// Whether batches are accepted in JSON bodies and SSE events.
    batches: BatchGate,
    closing: CancellationToken,
    /// `POST <url>` and `GET <url>`, redacted, for errors: made once, not
    /// on every request.
    post_what: String,
    get_what: String,
}

/// Notes, when dropped before `forget`, that the caller of a request
/// without HTTP session driven on its task stopped waiting (which closed
/// the request's stream).
struct DroppedNote<'a> {
    /// `None`: a request of a session, nothing to note.
    inner: Option<&'a Inner>,
    id: &'a Id,
}

/// Dropped requests whose cancellation was never sent are forgotten past
/// this many (a caller that is not a session may never send one).
const MAX_DROPPED_NOTES: usize = 1024;

impl DroppedNote<'_> {
    fn forget(mut self) {
        self.inner = None;
    }
}

impl Drop for DroppedNote<'_> {
    fn drop(&mut self) {
        if let Some(inner) = self.inner {
            let mut requests = inner.stateless_requests();
            if requests.len() >= MAX_DROPPED_NOTES {
                requests.retain(|_, task| task.is_some());
            }
            requests.insert(self.id.clone(), None);
        }
    }
}

/// Where a request task reports the head of its answer, once.
struct Head(Option<oneshot::Sender<Result<(), TransportError>>>);

impl Head {
    fn ok(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(Ok(()));
        }
    }

    async fn fail(&mut self, inner: &Inner, id: &Id, error: TransportError) {
        let error = match self.0.take() {
            Some(tx) => match tx.send(Err(error)) {
                Ok(()) | Err(Ok(())) => return,
                Err(Err(error)) => error,
            },
            None => error,
        };
        inner.deliver_error(id, error).await;
    }
}

impl StreamableHttpTransport {
    /// A transport for the MCP endpoint at `url`. No request is made until
    /// the first `send` (the `initialize` request).
    ///
    /// Fails with [`TransportError::InvalidConfig`] for a URL that is not
    /// `http(s)://host/…`, a bad header, or an unreadable CA file.
    pub async fn connect(url: &str, options: HttpOptions) -> Result<Self, TransportError> {
        let url = parse_url(url)?;
        let batches = BatchGate::new(options.max_batch_elements);
        let client = HttpClient::new(options)?;
        let (tx, rx) = mpsc::channel(256);
        let redacted = redact_url(&url);
        Ok(StreamableHttpTransport {
            inner: Arc::new(Inner {
                client,
                post_what: format!("POST {redacted}"),
                get_what: format!("GET {redacted}"),
                url,
                tx,
                state: StdMutex::new(SessionState::default()),
                tasks: StdMutex::new(JoinSet::new()),
                stateless_requests: StdMutex::new(HashMap::new()),
                batches,
                closing: CancellationToken::new(),
            }),
            rx: Mutex::new(rx),
            closed: AtomicBool::new(false),
        })
    }

    /// The session id the server gave, if any.
    pub fn session_id(&self) -> Option<String> {
        self.inner
            .state()
            .session_id()
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// The protocol version sent as `MCP-Protocol-Version`, once known.
    pub fn protocol_version(&self) -> Option<String> {
        self.inner
            .state()
            .protocol_version()
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// Sets the protocol version header explicitly (it is otherwise the
    /// revision the layer above names in each message's context).
    pub fn set_protocol_version(&self, version: &str) -> Result<(), TransportError> {
        let value = HeaderValue::from_str(version).map_err(|_| {
            TransportError::InvalidConfig(format!("{version:?} is not a protocol version"))
        })?;
        self.inner.state().fix_version(value);
        Ok(())
    }
}

impl Drop for StreamableHttpTransport {
    fn drop(&mut self) {
        self.inner.closing.cancel();
        self.inner
            .tasks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .abort_all();
    }
}

fn closed_error() -> TransportError {
    TransportError::closed("closed by the client")
}

impl Inner {
    fn state(&self) -> std::sync::MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn options(&self) -> &HttpOptions {
        self.client.options()
    }

    /// `POST <url>` or `GET <url>` (redacted), for errors.
    fn what(&self, method: &Method) -> &str {
        if *method == Method::GET {
            &self.get_what
        } else {
            &self.post_what
        }
    }

    fn spawn(
        &self,
        task: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Option<AbortHandle> {
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        while tasks.try_join_next().is_some() {}
        if self.closing.is_cancelled() {
            None
        } else {
            Some(tasks.spawn(task))
        }
    }

    /// Spawns the task of request `id`. The task of a request without HTTP
    /// session (`stateless`) is registered for cancellation (aborting it
    /// closes its response stream) before it runs, and takes itself out
    /// when it ends.
    fn spawn_request(
        self: &Arc<Self>,
        id: &Id,
        stateless: bool,
        task: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        if !stateless {
            self.spawn(task);
            return;
        }
        let (inner, key) = (Arc::clone(self), id.clone());
        let task = async move {
            task.await;
            inner.stateless_requests().remove(&key);
        };
        // Registered before the task runs, so it can remove itself.
        let mut requests = self.stateless_requests();
        if let Some(handle) = self.spawn(task) {
            requests.insert(id.clone(), Some(handle));
        }
    }

    fn stateless_requests(&self) -> std::sync::MutexGuard<'_, HashMap<Id, Option<AbortHandle>>> {
        self.stateless_requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// A request without HTTP session is cancelled by closing its response
    /// stream: its task (which holds the stream) is aborted. `false` when
    /// it is not in flight.
    fn cancel_by_closing(&self, id: &Id) -> bool {
        let Some(task) = self.stateless_requests().remove(id) else {
            return false;
        };
        if let Some(handle) = task {
            handle.abort();
        }
        self.options().observe(HttpTrace::Note(
            "request cancelled: its response stream was closed".into(),
        ));
        true
    }

    /// The headers of a request, with the session's when `with_session`.
    fn headers(&self, accept: &'static str, with_session: bool) -> RequestHeaders {
        self.state().headers(accept, with_session)
    }

    /// POSTs `body` (accepting JSON or SSE), with the session's headers when
    /// `with_session` and then `extra` ones; waits for the answer's head.
    /// With the session while it is expired, posts nothing:
    /// [`TransportError::SessionExpired`].
    async fn post(
        &self,
        body: &Bytes,
        with_session: bool,
        extra: Extra<'_>,
    ) -> Result<Posted, TransportError> {
        let RequestHeaders {
            mut headers,
            generation,
            has_session,
            expired,
        } = self.headers(ACCEPT_BOTH, with_session);
        if let Some(reason) = expired {
            // The session expired since the message was let through: the
            // server would not know it, so it is not posted.
            return Err(self.expired_error(reason));
        }
        match extra {
            Extra::None => {}
            Extra::Headers(extra) => headers.extend(extra.clone()),
            Extra::Mirror(method, context) => mirror::apply(method, context, &mut headers),
        }
        let request = self
            .client
            .build(Method::POST, &self.url, headers, Some(body.clone()));
        let response = self.client.send(request).await?;
        Ok(Posted {
            response,
            session: has_session.then_some(generation),
        })
    }

    async fn deliver(&self, item: Received) {
        tokio::select! {
            _ = self.tx.send(item) => {}
            () = self.closing.cancelled() => {}
        }
    }

    /// Fails request `id`: it will get no answer.
    async fn deliver_error(&self, id: &Id, error: TransportError) {
        let failure = RequestFailure {
            id: id.clone(),
            error,
        };
        self.deliver(Received::Failed(failure)).await;
    }
}

/// The headers a POST adds to the session's.
#[derive(Clone, Copy)]
enum Extra<'a> {
    None,
    /// Made before (a request task keeps its mirrored headers for a retry).
    Headers(&'a HeaderMap),
    /// The metadata headers a 2026-07-28 request mirrors, written straight
    /// into the request's map: no map of their own to build and copy.
    Mirror(&'a str, &'a SendContext),
}

impl<'a> Extra<'a> {
    fn headers(headers: Option<&'a HeaderMap>) -> Self {
        headers.map_or(Extra::None, Extra::Headers)
    }
}

/// A POST whose answer's head arrived.
struct Posted {
    response: Response<Incoming>,
    /// The session generation it was sent in, when it carried the session's
    /// id: only then can its answer say the session expired.
    session: Option<u64>,
}

impl StreamableHttpTransport {
    /// [`Transport::request_with`] for an ordinary request: driven on the
    /// caller's task (see [`Inner::request_direct`]).
    async fn request_direct(
        &self,
        request: &mcp_stack_jsonrpc::Request,
        message: &Message,
        context: &SendContext,
    ) -> Result<Answer, TransportError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(closed_error());
        }
        let inner = &self.inner;
        if let Some(reason) = inner.state().awaiting_handshake() {
            return Err(inner.expired_error(reason.to_owned()));
        }
        inner.batches.follow(context);
        let stateless = context.revision_has(|v| !v.has_http_session());
        if stateless {
            inner.state().stateless_sent();
        } else if let Some(revision) = context.revision_of() {
            inner.state().note_revision(revision.as_str());
        }
        let mirror = context
            .revision_has(ProtocolVersion::mirrors_into_headers)
            .then_some((request.method.as_str(), context));
        let body = super::encode(message)?;
        // A request without HTTP session dropped by its caller closed its
        // stream, which is its cancellation: the note lets
        // `cancel_by_closing` know, so no `notifications/cancelled` is
        // posted after it.
        let dropped = DroppedNote {
            inner: stateless.then_some(inner),
            id: &request.id,
        };
        let answer = tokio::select! {
            answer = inner.request_direct(&request.id, body, stateless, mirror) => answer,
            () = inner.closing.cancelled() => Err(closed_error()),
        };
        dropped.forget();
        answer
    }

    async fn send_message(
        &self,
        message: &Message,
        context: &SendContext,
    ) -> Result<(), TransportError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(closed_error());
        }
        let inner = &self.inner;
        if let Some(id) = context.cancelled_request()
            && inner.state().is_stateless()
            && inner.cancel_by_closing(id)
        {
            // Closing the response stream is the cancellation; nothing is posted.
            return Ok(());
        }
        let lifecycle = context.lifecycle_of();
        if lifecycle != Lifecycle::Initialize
            && let Some(reason) = inner.state().awaiting_handshake()
        {
            // The server would not know the session: nothing is posted
            // until a new `initialize` starts one.
            return Err(inner.expired_error(reason.to_owned()));
        }
        inner.batches.follow(context);
        let stateless = context.revision_has(|v| !v.has_http_session());
        if !stateless
            && lifecycle != Lifecycle::Initialize
            && let Some(revision) = context.revision_of()
        {
            inner.state().note_revision(revision.as_str());
        }
        let body = super::encode(message)?;
        match message {
            Message::Request(request) => {
                let is_init = lifecycle == Lifecycle::Initialize;
                let mirrored = context
                    .revision_has(ProtocolVersion::mirrors_into_headers)
                    .then(|| {
                        let mut headers = HeaderMap::new();
                        mirror::apply(&request.method, context, &mut headers);
                        headers
                    });
                if is_init {
                    inner.state().initialize_sent();
                } else if stateless {
                    inner.state().stateless_sent();
                }
                // The era probe waits for the head like `initialize`, so a
                // refusal comes back from `send` itself.
                let is_probe = lifecycle == Lifecycle::Discover;
                let (tx, rx) = oneshot::channel();
                let task = Arc::clone(inner).run_request(
                    request.id.clone(),
                    body,
                    is_init,
                    mirrored,
                    Head(Some(tx)),
                );
                inner.spawn_request(&request.id, stateless, task);
                let options = inner.options();
                let wait = if is_init || is_probe {
                    options.request_timeout + options.connect_timeout
                } else {
                    options.accept_wait
                };
                let mut rx = rx;
                match tokio::time::timeout(wait, &mut rx).await {
                    Ok(Ok(result)) => result,
                    // The task was stopped (closing): nothing more comes.
                    Ok(Err(_)) => Ok(()),
                    // Still waiting: from now on the task reports through
                    // recv. Closing first makes the handoff exact: a result
                    // the task sent in the meantime is taken here, and one
                    // it sends later is refused, so it goes to recv instead
                    // of being lost with this receiver.
                    Err(_) => {
                        rx.close();
                        rx.try_recv().unwrap_or(Ok(()))
                    }
                }
            }
            _ => {
                let is_initialized = lifecycle == Lifecycle::Initialized;
                inner.post_other(body).await?;
                if is_initialized {
                    // The session is ready once its stream for server
                    // messages is open (or refused), within `accept_wait`:
                    // a message the server sends right after initializing
                    // is not missed, and the stream's request does not land
                    // after the caller's next requests (a server may read
                    // a late GET as a reconnection).
                    if let Some(answered) = inner.start_get_stream() {
                        let _ = tokio::time::timeout(inner.options().accept_wait, answered).await;
                    }
                }
                Ok(())
            }
        }
    }
}

impl Transport for StreamableHttpTransport {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(self.send_message(message, context))
    }

    fn request_with<'a>(
        &'a self,
        request: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<Answer, TransportError>> {
        Box::pin(async move {
            match request {
                // The handshake and anything not a request take the task path.
                Message::Request(r) if context.lifecycle_of() == Lifecycle::None => {
                    self.request_direct(r, request, context).await
                }
                _ => self
                    .send_message(request, context)
                    .await
                    .map(|()| Answer::Later),
            }
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Received, TransportError>> {
        Box::pin(async move {
            if self.closed.load(Ordering::SeqCst) {
                return Err(closed_error());
            }
            let mut rx = self.rx.lock().await;
            tokio::select! {
                biased;
                item = rx.recv() => item.ok_or_else(closed_error),
                () = self.inner.closing.cancelled() => Err(closed_error()),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if self.closed.swap(true, Ordering::SeqCst) {
                return;
            }
            let inner = &self.inner;
            inner.closing.cancel();
            inner
                .tasks
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .abort_all();
            let RequestHeaders {
                headers,
                has_session,
                ..
            } = inner.headers(ACCEPT_BOTH, true);
            if !has_session {
                return;
            }
            let request = inner
                .client
                .build(Method::DELETE, &inner.url, headers, None);
            let timeout = inner.options().close_timeout;
            let name = inner.options().name();
            match tokio::time::timeout(timeout, inner.client.send(request)).await {
                Ok(Ok(response)) => {
                    tracing::debug!(server = name, status = %response.status(), "session deleted");
                }
                Ok(Err(e)) => tracing::debug!(server = name, "DELETE failed: {e}"),
                Err(_) => tracing::debug!(server = name, "DELETE timed out"),
            }
        })
    }

    fn kind(&self) -> TransportKind {
        TransportKind::StreamableHttp
    }
}
