//! The streamable HTTP transport; see [`StreamableHttpTransport`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Response, Uri};
use mcp_jsonrpc::{Id, Message, Oversized};
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio::task::{AbortHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use super::client::{HttpClient, content_type, read_body, status_answer, status_error};
use super::mirror::{self, PROTOCOL_VERSION};
use super::{HttpOptions, HttpTrace, parse_url, payload_to_received, redact_url};
use crate::sse::{SseItem, SseParser};
use crate::{
    BoxFuture, InvalidFrame, Lifecycle, Received, RequestFailure, SendContext, Transport,
    TransportError, TransportKind,
};

const ACCEPT_BOTH: &str = "application/json, text/event-stream";
const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
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
/// * The transport reads no `params`: the [`SendContext`] says which message
///   is the handshake ([`Lifecycle`]) and which revision a message follows.
/// * The `Mcp-Session-Id` of the initialize answer is sent on every later
///   request, and the revision the context names as `MCP-Protocol-Version`
///   ([`StreamableHttpTransport::set_protocol_version`] overrides it).
/// * After the `Lifecycle::Initialized` notification, a GET stream is opened
///   for server-initiated messages (405 means the server offers none).
/// * A dropped SSE stream whose events had ids is resumed with a GET carrying
///   `Last-Event-ID`, after the server's `retry` delay (or
///   [`HttpOptions::default_retry`]), up to [`HttpOptions::max_reconnects`]
///   times. A stream that ends without the answer and cannot be resumed gives
///   that request an error response.
/// * A 404 to a request carrying a session id (or a 400 whose body speaks of
///   the session, as the TypeScript SDK's servers answer) means the session
///   expired: the transport replays the `initialize` request and the
///   `notifications/initialized` it saw (their answers are not handed to the
///   caller), then sends the failed message again on the new session, once.
///   Concurrent requests that hit the expiry wait for that one
///   re-initialization and retry too. If it fails, the message fails with the error.
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
///   caller sees the auth problem) whose body is a JSON-RPC error (a modern server explains
///   `UnsupportedProtocolVersion`, `HeaderMismatch` and unknown methods that
///   way) is the request's answer, with the request's id; any other 4xx
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
    state: StdMutex<State>,
    /// Held while a new session is being initialized.
    renewing: Mutex<()>,
    tasks: StdMutex<JoinSet<()>>,
    /// The tasks of modern (2026-07-28) requests in flight: cancelling one
    /// aborts its task, which closes its response stream.
    modern_requests: StdMutex<HashMap<Id, AbortHandle>>,
    closing: CancellationToken,
}

#[derive(Default)]
struct State {
    session_id: Option<HeaderValue>,
    protocol_version: Option<HeaderValue>,
    /// Set by the caller: not replaced by what the initialize result says.
    version_fixed: bool,
    /// Counts sessions: bumped by each initialize answer.
    generation: u64,
    /// The initialize request seen, to replay when the session expires.
    init_request: Option<(Id, Bytes)>,
    /// The initialized notification seen, to replay too.
    initialized: Option<Bytes>,
    /// A request of protocol revision 2026-07-28 was sent: no sessions, no
    /// GET stream, no resumption, and cancelling closes the response stream.
    modern: bool,
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
        let client = HttpClient::new(options)?;
        let (tx, rx) = mpsc::channel(256);
        Ok(StreamableHttpTransport {
            inner: Arc::new(Inner {
                client,
                url,
                tx,
                state: StdMutex::new(State::default()),
                renewing: Mutex::new(()),
                tasks: StdMutex::new(JoinSet::new()),
                modern_requests: StdMutex::new(HashMap::new()),
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
            .session_id
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// The protocol version sent as `MCP-Protocol-Version`, once known.
    pub fn protocol_version(&self) -> Option<String> {
        self.inner
            .state()
            .protocol_version
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// Sets the protocol version header explicitly (it is otherwise read
    /// from the initialize result).
    pub fn set_protocol_version(&self, version: &str) -> Result<(), TransportError> {
        let value = HeaderValue::from_str(version).map_err(|_| {
            TransportError::InvalidConfig(format!("{version:?} is not a protocol version"))
        })?;
        let mut state = self.inner.state();
        state.protocol_version = Some(value);
        state.version_fixed = true;
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
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn options(&self) -> &HttpOptions {
        self.client.options()
    }

    fn what(&self, method: &Method) -> String {
        format!("{method} {}", redact_url(&self.url))
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

    fn modern_requests(&self) -> std::sync::MutexGuard<'_, HashMap<Id, AbortHandle>> {
        self.modern_requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// A modern request is cancelled by closing its response stream: its
    /// task (which holds the stream) is aborted. `false` when it is not in flight.
    fn cancel_modern(&self, id: &Id) -> bool {
        let Some(handle) = self.modern_requests().remove(id) else {
            return false;
        };
        handle.abort();
        self.options().observe(HttpTrace::Note(
            "request cancelled: its response stream was closed".into(),
        ));
        true
    }

    /// The session headers: `(headers, generation, carries a session id)`.
    fn headers(&self, accept: &'static str, with_session: bool) -> (HeaderMap, u64, bool) {
        let state = self.state();
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_static(accept));
        let mut has_session = false;
        if with_session {
            if let Some(id) = &state.session_id {
                h.insert(SESSION_ID, id.clone());
                has_session = true;
            }
            if let Some(v) = &state.protocol_version {
                h.insert(PROTOCOL_VERSION.clone(), v.clone());
            }
        }
        (h, state.generation, has_session)
    }

    /// Records the revision to send as `MCP-Protocol-Version`, unless the
    /// caller fixed one.
    fn note_revision(&self, revision: &str) {
        let mut state = self.state();
        if state.version_fixed
            || state
                .protocol_version
                .as_ref()
                .is_some_and(|v| v.as_bytes() == revision.as_bytes())
        {
            return;
        }
        state.protocol_version = HeaderValue::from_str(revision).ok();
    }

    fn generation(&self) -> u64 {
        self.state().generation
    }

    /// Records the session of an initialize answer.
    fn take_session(&self, response: &Response<Incoming>) {
        let id = response
            .headers()
            .get(SESSION_ID)
            .filter(|v| !v.is_empty() && v.as_bytes().iter().all(|b| (0x21..=0x7e).contains(b)))
            .cloned();
        let mut state = self.state();
        state.session_id = id;
        state.generation += 1;
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

    /// Whether an error answer means the session expired.
    fn is_expiry(error: &TransportError) -> bool {
        match error {
            TransportError::HttpStatus { status: 404, .. } => true,
            TransportError::HttpStatus {
                status: 400, body, ..
            } => body.to_ascii_lowercase().contains("session"),
            _ => false,
        }
    }

    /// Runs one request: POST, then its answer (JSON or SSE, resumed when dropped).
    ///
    /// A modern request (`mirrored` holds its metadata headers) carries no
    /// session, is not resumed, and takes a 4xx whose body is a JSON-RPC
    /// error as its answer.
    async fn run_request(
        self: Arc<Self>,
        id: Id,
        body: Bytes,
        is_init: bool,
        mirrored: Option<HeaderMap>,
        mut head: Head,
    ) {
        let modern = mirrored.is_some();
        self.run_request_inner(&id, body, is_init, mirrored, &mut head)
            .await;
        if modern {
            self.modern_requests().remove(&id);
        }
    }

    async fn run_request_inner(
        self: &Arc<Self>,
        id: &Id,
        body: Bytes,
        is_init: bool,
        mirrored: Option<HeaderMap>,
        head: &mut Head,
    ) {
        let what = self.what(&Method::POST);
        let mut renewed = false;
        let modern = mirrored.is_some();
        loop {
            let (mut headers, generation, has_session) =
                self.headers(ACCEPT_BOTH, !is_init && !modern);
            if let Some(extra) = &mirrored {
                headers.extend(extra.clone());
            }
            let request =
                match self
                    .client
                    .build(Method::POST, &self.url, headers, Some(body.clone()))
                {
                    Ok(r) => r,
                    Err(e) => return head.fail(self, id, e).await,
                };
            let response = match self.client.send(request).await {
                Ok(r) => r,
                Err(e) => return head.fail(self, id, e).await,
            };
            let status = response.status();
            // Auth refusals (401, 403, 407) stay HTTP errors whatever their
            // body says, so callers see the status they must act on.
            let explained = status.is_client_error() && !matches!(status.as_u16(), 401 | 403 | 407);
            if modern && explained {
                return match status_answer(response, &what).await {
                    Ok((error, mut answer)) => {
                        // The JSON-RPC error explains the status: it is the answer.
                        tracing::debug!(server = self.options().name(), "{error}");
                        answer.id = Some(id.clone());
                        head.ok();
                        self.deliver(Received::Message(Message::from(answer))).await;
                    }
                    Err(error) => head.fail(self, id, error).await,
                };
            }
            if !status.is_success() {
                let error = status_error(response, &what).await;
                if has_session && !renewed && Self::is_expiry(&error) {
                    renewed = true;
                    match self.renew(generation, error.http_status()).await {
                        Ok(()) => continue,
                        Err(e) => return head.fail(self, id, e).await,
                    }
                }
                return head.fail(self, id, error).await;
            }
            if is_init {
                self.take_session(&response);
            }
            if status == hyper::StatusCode::ACCEPTED {
                if modern {
                    let error = TransportError::Http {
                        url: what.clone(),
                        message: "the server answered a request with 202 Accepted; in protocol \
                                  2026-07-28 the answer must come on the request's own response"
                            .into(),
                    };
                    return head.fail(self, id, error).await;
                }
                // The answer will come on another stream (the GET stream).
                head.ok();
                return;
            }
            match content_type(&response).as_str() {
                "application/json" => {
                    head.ok();
                    let limit = self.options().max_event_size;
                    let timeout = self.options().request_timeout;
                    match read_body(response.into_body(), limit, timeout, &what).await {
                        Ok(bytes) => {
                            let mut items = Vec::new();
                            payload_to_received(&bytes, &mut items);
                            for item in items {
                                self.deliver(item).await;
                            }
                        }
                        Err(e) => self.deliver_error(id, e).await,
                    }
                }
                "text/event-stream" => {
                    head.ok();
                    self.read_request_stream(response.into_body(), id, modern)
                        .await;
                }
                other => {
                    let error = TransportError::Http {
                        url: what.clone(),
                        message: format!(
                            "the answer to a request has Content-Type {other:?}; expected \
                             application/json or text/event-stream"
                        ),
                    };
                    head.fail(self, id, error).await;
                }
            }
            return;
        }
    }

    /// Reads a request's SSE stream until its answer arrives, resuming the
    /// stream with `Last-Event-ID` when it drops.
    async fn read_request_stream(&self, body: Incoming, id: &Id, modern: bool) {
        let mut parser = SseParser::with_max_event_size(self.options().max_event_size);
        let mut body = Some(body);
        let mut attempts = 0u32;
        loop {
            if let Some(b) = body.take()
                && self.pump(b, &mut parser, Some(id)).await
            {
                return;
            }
            if self.closing.is_cancelled() {
                return;
            }
            if modern {
                let error = TransportError::Http {
                    url: self.what(&Method::POST),
                    message: "the server ended the SSE stream before answering (streams of \
                              protocol 2026-07-28 are not resumable)"
                        .into(),
                };
                return self.deliver_error(id, error).await;
            }
            let Some(last) = parser.last_event_id().map(str::to_owned) else {
                let error = TransportError::Http {
                    url: self.what(&Method::POST),
                    message: "the server ended the SSE stream before answering, with no event \
                              id to resume from"
                        .into(),
                };
                return self.deliver_error(id, error).await;
            };
            if attempts >= self.options().max_reconnects {
                let error = TransportError::Http {
                    url: self.what(&Method::GET),
                    message: format!(
                        "the SSE stream dropped before the answer and {attempts} attempts to \
                         resume it failed"
                    ),
                };
                return self.deliver_error(id, error).await;
            }
            attempts += 1;
            let wait = parser.retry().unwrap_or(self.options().default_retry);
            self.options().observe(HttpTrace::Note(format!(
                "the stream of request {id} dropped; resuming after {} ms with Last-Event-ID",
                wait.as_millis()
            )));
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.closing.cancelled() => return,
            }
            match self.open_get(Some(&last)).await {
                Ok(Some(b)) => body = Some(b),
                Ok(None) => {
                    let error = TransportError::Http {
                        url: self.what(&Method::GET),
                        message: "the server does not offer a GET stream (405), so the dropped \
                                  stream cannot be resumed"
                            .into(),
                    };
                    return self.deliver_error(id, error).await;
                }
                Err(e) if e.http_status().is_some_and(|s| (400..500).contains(&s)) => {
                    return self.deliver_error(id, e).await;
                }
                Err(e) => {
                    tracing::debug!(server = self.options().name(), "resuming failed: {e}");
                }
            }
        }
    }

    /// Opens a GET stream; `Ok(None)` when the server answers 405.
    async fn open_get(
        &self,
        last_event_id: Option<&str>,
    ) -> Result<Option<Incoming>, TransportError> {
        let (mut headers, _, _) = self.headers("text/event-stream", true);
        if let Some(last) = last_event_id
            && let Ok(v) = HeaderValue::from_str(last)
        {
            headers.insert(LAST_EVENT_ID, v);
        }
        let what = self.what(&Method::GET);
        let request = self.client.build(Method::GET, &self.url, headers, None)?;
        let response = self.client.send(request).await?;
        if response.status() == hyper::StatusCode::METHOD_NOT_ALLOWED {
            return Ok(None);
        }
        if !response.status().is_success() {
            return Err(status_error(response, &what).await);
        }
        let ct = content_type(&response);
        if ct != "text/event-stream" {
            return Err(TransportError::Http {
                url: what,
                message: format!("the GET stream has Content-Type {ct:?}, not text/event-stream"),
            });
        }
        Ok(Some(response.into_body()))
    }

    /// Reads SSE events from a body and hands their messages on. Returns
    /// whether the answer to `expect` arrived.
    async fn pump(&self, mut body: Incoming, parser: &mut SseParser, expect: Option<&Id>) -> bool {
        let mut answered = false;
        loop {
            let frame = if answered {
                // The server should end the stream now; do not wait long.
                match tokio::time::timeout(AFTER_ANSWER_LINGER, body.frame()).await {
                    Ok(f) => f,
                    Err(_) => return true,
                }
            } else {
                tokio::select! {
                    f = body.frame() => f,
                    () = self.closing.cancelled() => return false,
                }
            };
            let data = match frame {
                None => {
                    parser.finish();
                    return answered;
                }
                Some(Err(e)) => {
                    tracing::debug!(server = self.options().name(), "SSE stream broke: {e}");
                    parser.finish();
                    return answered;
                }
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue,
                },
            };
            parser.push(&data);
            while let Some(item) = parser.next_item() {
                match item {
                    SseItem::Event(event) => {
                        if event.event != "message" || event.data.trim_ascii().is_empty() {
                            continue;
                        }
                        let mut items = Vec::new();
                        payload_to_received(&event.data, &mut items);
                        for item in items {
                            if let (Some(id), Received::Message(m)) = (expect, &item)
                                && matches!(m, Message::Response(_) | Message::Error(_))
                                && m.id() == Some(id)
                            {
                                answered = true;
                            }
                            self.deliver(item).await;
                        }
                    }
                    SseItem::Oversized { limit } => {
                        self.deliver(Received::Invalid(InvalidFrame::Oversized(Oversized {
                            limit,
                        })))
                        .await;
                    }
                }
            }
        }
    }

    /// The GET stream for server-initiated messages of one session.
    async fn run_get_stream(self: Arc<Self>, generation: u64) {
        let mut parser = SseParser::with_max_event_size(self.options().max_event_size);
        let mut failures = 0u32;
        loop {
            if self.closing.is_cancelled() || self.generation() != generation {
                return;
            }
            let last = parser.last_event_id().map(str::to_owned);
            match self.open_get(last.as_deref()).await {
                Ok(Some(body)) => {
                    failures = 0;
                    self.pump(body, &mut parser, None).await;
                }
                Ok(None) => return,
                Err(e) => {
                    tracing::debug!(server = self.options().name(), "GET stream: {e}");
                    if e.http_status().is_some_and(|s| (400..500).contains(&s)) {
                        return;
                    }
                    failures += 1;
                    if failures > self.options().max_reconnects {
                        return;
                    }
                }
            }
            let wait = parser.retry().unwrap_or(self.options().default_retry);
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.closing.cancelled() => return,
            }
        }
    }

    fn start_get_stream(self: &Arc<Self>) {
        if !self.options().get_stream {
            return;
        }
        let generation = self.generation();
        let me = Arc::clone(self);
        self.spawn(me.run_get_stream(generation));
    }

    /// Initializes a new session after the one of `stale` expired: replays
    /// the initialize request and the initialized notification.
    async fn renew(
        self: &Arc<Self>,
        stale: u64,
        status: Option<u16>,
    ) -> Result<(), TransportError> {
        let _renewing = tokio::select! {
            guard = self.renewing.lock() => guard,
            () = self.closing.cancelled() => return Err(closed_error()),
        };
        let (init, initialized) = {
            let mut state = self.state();
            if state.generation != stale {
                // Another task renewed it already.
                return Ok(());
            }
            state.session_id = None;
            (state.init_request.clone(), state.initialized.clone())
        };
        let Some((init_id, init_body)) = init else {
            return Err(TransportError::Http {
                url: self.what(&Method::POST),
                message: "the session expired and there is no initialize request to replay".into(),
            });
        };
        let status = status.map(|s| format!("HTTP {s}")).unwrap_or_default();
        tracing::info!(
            server = self.options().name(),
            "session expired ({status}); initializing a new one"
        );
        self.options().observe(HttpTrace::Note(format!(
            "session expired ({status}); replaying initialize for a new session"
        )));
        let what = self.what(&Method::POST);
        let (headers, _, _) = self.headers(ACCEPT_BOTH, false);
        let request = self
            .client
            .build(Method::POST, &self.url, headers, Some(init_body))?;
        let response = self.client.send(request).await?;
        if !response.status().is_success() {
            return Err(status_error(response, &what).await);
        }
        self.take_session(&response);
        self.drain_answer(response, &init_id).await?;
        if let Some(body) = initialized {
            let (headers, _, _) = self.headers(ACCEPT_BOTH, true);
            let request = self
                .client
                .build(Method::POST, &self.url, headers, Some(body))?;
            let response = self.client.send(request).await?;
            if !response.status().is_success() {
                return Err(status_error(response, &what).await);
            }
        }
        self.start_get_stream();
        Ok(())
    }

    /// Reads the answer to a replayed initialize without handing it on.
    async fn drain_answer(
        &self,
        response: Response<Incoming>,
        init_id: &Id,
    ) -> Result<(), TransportError> {
        let what = self.what(&Method::POST);
        let limit = self.options().max_event_size;
        let timeout = self.options().request_timeout;
        match content_type(&response).as_str() {
            "text/event-stream" => {
                let read = async {
                    let mut body = response.into_body();
                    let mut parser = SseParser::with_max_event_size(limit);
                    while let Some(Ok(frame)) = body.frame().await {
                        let Ok(data) = frame.into_data() else {
                            continue;
                        };
                        parser.push(&data);
                        while let Some(item) = parser.next_item() {
                            if let SseItem::Event(e) = item
                                && let Ok(m) = Message::from_slice(&e.data)
                                && m.id() == Some(init_id)
                            {
                                return;
                            }
                        }
                    }
                };
                tokio::time::timeout(timeout, read)
                    .await
                    .map_err(|_| TransportError::Timeout {
                        what: "the answer to the replayed initialize".into(),
                        after: timeout,
                    })
            }
            _ => read_body(response.into_body(), limit, timeout, &what)
                .await
                .map(drop),
        }
    }

    /// POSTs a notification or a response; the server should answer 202.
    async fn post_other(self: &Arc<Self>, body: Bytes) -> Result<(), TransportError> {
        let what = self.what(&Method::POST);
        let mut renewed = false;
        loop {
            let (headers, generation, has_session) = self.headers(ACCEPT_BOTH, true);
            let request =
                self.client
                    .build(Method::POST, &self.url, headers, Some(body.clone()))?;
            let response = self.client.send(request).await?;
            if response.status().is_success() {
                return Ok(());
            }
            let error = status_error(response, &what).await;
            if has_session && !renewed && Self::is_expiry(&error) {
                renewed = true;
                self.renew(generation, error.http_status()).await?;
                continue;
            }
            return Err(error);
        }
    }
}

impl StreamableHttpTransport {
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
            && inner.state().modern
            && inner.cancel_modern(id)
        {
            // Closing the response stream is the cancellation; nothing is posted.
            return Ok(());
        }
        let lifecycle = context.lifecycle_of();
        let modern = context.is_modern();
        if !modern
            && lifecycle != Lifecycle::Initialize
            && let Some(revision) = context.revision_of()
        {
            inner.note_revision(revision.as_str());
        }
        let body = Bytes::from(
            message
                .to_vec()
                .map_err(|e| TransportError::Io(std::io::Error::other(e)))?,
        );
        match message {
            Message::Request(request) => {
                let is_init = lifecycle == Lifecycle::Initialize;
                let mirrored = modern.then(|| {
                    let mut headers = HeaderMap::new();
                    mirror::apply(&request.method, context, &mut headers);
                    headers
                });
                if is_init {
                    let mut state = inner.state();
                    state.init_request = Some((request.id.clone(), body.clone()));
                    state.initialized = None;
                    state.modern = false;
                } else if modern {
                    inner.state().modern = true;
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
                if modern {
                    // Registered before the task runs, so it can remove itself.
                    let mut requests = inner.modern_requests();
                    if let Some(handle) = inner.spawn(task) {
                        requests.insert(request.id.clone(), handle);
                    }
                } else {
                    inner.spawn(task);
                }
                let options = inner.options();
                let wait = if is_init || is_probe {
                    options.request_timeout + options.connect_timeout
                } else {
                    options.accept_wait
                };
                match tokio::time::timeout(wait, rx).await {
                    Ok(Ok(result)) => result,
                    // The task was stopped (closing) or is still waiting:
                    // the answer, or an error response, comes through recv.
                    Ok(Err(_)) | Err(_) => Ok(()),
                }
            }
            _ => {
                let is_initialized = lifecycle == Lifecycle::Initialized;
                inner.post_other(body.clone()).await?;
                if is_initialized {
                    inner.state().initialized = Some(body);
                    inner.start_get_stream();
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
            let (headers, _, has_session) = inner.headers(ACCEPT_BOTH, true);
            if !has_session {
                return;
            }
            let Ok(request) = inner
                .client
                .build(Method::DELETE, &inner.url, headers, None)
            else {
                return;
            };
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
