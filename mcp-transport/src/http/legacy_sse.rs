//! The HTTP+SSE transport of protocol revision 2024-11-05.
//!
//! [`SseTransport::connect`] GETs the SSE URL and waits (bounded by the
//! request timeout) for the `endpoint` event, whose data is resolved against
//! the SSE URL; an endpoint on another origin is refused, so messages and
//! headers never go elsewhere. Each message is then POSTed to the endpoint,
//! and the server's messages arrive as `message` events on the stream.
//!
//! When the stream drops (the server ends it, the connection resets or
//! breaks, or it sends nothing for [`HttpOptions::idle_stream_timeout`]) and
//! it was not our own close, the transport reconnects; the
//! decisions are the IO-free [`state`] module's:
//!
//! * The requests posted on the dropped stream whose answers had not come
//!   can get none any more (they would have come on that stream): each is
//!   failed at once through `recv` as a [`Received::Failed`], so callers do
//!   not wait for their timeouts.
//! * The SSE URL is fetched again after a wait (the server's `retry` when it
//!   sent one, never below [`MIN_STREAM_RETRY`](crate::backoff::MIN_STREAM_RETRY),
//!   else [`backoff::delay`](crate::backoff::delay) from
//!   [`HttpOptions::default_retry`], capped at 30 s, jittered; the backoff
//!   starts afresh only after a stream that lived
//!   [`HEALTHY_STREAM_LIFE`](crate::backoff::HEALTHY_STREAM_LIFE), so a
//!   server that hangs up at once is reconnected less and less often),
//!   carrying `Last-Event-ID` when the events had ids, at most
//!   [`HttpOptions::max_reconnects`] failed attempts in a row (counted again
//!   from zero after a success). A 4xx other than 408 and 429 ends the
//!   attempts at once: waiting does not fix a wrong URL or refused
//!   credentials. Each wait, and why, is in the trace.
//! * The new stream's `endpoint` passes the same origin check as the first.
//!   The same endpoint is the same session, resumed: POSTs go out again,
//!   those issued meanwhile having waited (within the request timeout). A
//!   new endpoint is a new session on the server: when the layer above ran
//!   a handshake (it sent `initialize`), `recv` reports
//!   [`Received::SessionExpired`] and, until the layer above has posted
//!   `initialize` and `notifications/initialized` again, every other
//!   message (those that waited too) fails unposted with
//!   [`TransportError::SessionExpired`]: the server would not know them.
//!   The transport replays nothing; an `mcp_stack_session::Session` runs the
//!   handshake again and resends its requests.
//! * When the attempts run out, `recv` reports the connection closed with a
//!   reason naming the attempts and the last error.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Uri};
use mcp_stack_jsonrpc::{Id, Message, Oversized};
use tokio::sync::{Mutex, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::client::{HttpClient, event_stream, status_error};
use super::{HttpOptions, HttpTrace, parse_url, payload_to_received, redact_url, same_origin};
use crate::sse::{SseItem, SseParser};
use crate::{
    BatchGate, BoxFuture, InvalidFrame, Lifecycle, Received, RequestFailure, SendContext,
    Transport, TransportError, TransportKind,
};

mod state;

use state::{Attempt, Gate, LinkState};

const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// A connection to a server speaking the 2024-11-05 HTTP+SSE transport.
pub struct SseTransport {
    inner: Arc<Inner>,
    rx: Mutex<mpsc::Receiver<Received>>,
    driver: JoinHandle<()>,
    closed: AtomicBool,
}

impl std::fmt::Debug for SseTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseTransport")
            .field("sse_url", &redact_url(&self.inner.sse_url))
            .field("endpoint", &self.endpoint())
            .finish_non_exhaustive()
    }
}

/// What the tasks of one connection share.
struct Inner {
    client: HttpClient,
    sse_url: Uri,
    tx: mpsc::Sender<Received>,
    state: StdMutex<LinkState>,
    /// Bumped on every change of phase: wakes POSTs waiting for a stream.
    changed: watch::Sender<()>,
    /// Whether batches are accepted in SSE events.
    batches: BatchGate,
    /// Our own close.
    closing: CancellationToken,
    /// The transport gave up (the reason is the state's).
    dead: CancellationToken,
}

/// How one stream ended.
struct StreamEnd {
    why: String,
    /// How long the stream was read.
    lived: Duration,
    last_event_id: Option<String>,
    retry: Option<Duration>,
}

/// Why a reconnection attempt failed.
enum AttemptError {
    /// Worth another attempt.
    Retry(String),
    /// Not: the connection closes with this reason.
    Fatal(String),
}

impl AttemptError {
    fn of(error: TransportError, doing: &str) -> Self {
        if state::retryable(&error) {
            AttemptError::Retry(error.to_string())
        } else {
            AttemptError::Fatal(format!("{doing} failed: {error}"))
        }
    }
}

/// Aborts a task when dropped (a reader whose attempt was abandoned).
struct AbortOnDrop<T>(Option<JoinHandle<T>>);

impl<T> AbortOnDrop<T> {
    fn into_inner(mut self) -> Option<JoinHandle<T>> {
        self.0.take()
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

/// Resolves the `endpoint` event's data against the SSE URL.
fn resolve_endpoint(base: &Uri, data: &str) -> Result<Uri, String> {
    let data = data.trim();
    if data.is_empty() {
        return Err("the endpoint event is empty".into());
    }
    let resolved: Uri = if data.starts_with("http://") || data.starts_with("https://") {
        data.parse()
            .map_err(|_| "the endpoint is not a valid URL".to_owned())?
    } else {
        let path = if data.starts_with('/') {
            data.to_owned()
        } else {
            let dir = base.path().rsplit_once('/').map_or("", |(dir, _)| dir);
            format!("{dir}/{data}")
        };
        let mut parts = hyper::http::uri::Parts::default();
        parts.scheme = base.scheme().cloned();
        parts.authority = base.authority().cloned();
        parts.path_and_query = Some(
            path.parse()
                .map_err(|_| "the endpoint is not a valid path".to_owned())?,
        );
        Uri::from_parts(parts).map_err(|_| "the endpoint is not a valid URL".to_owned())?
    };
    if !same_origin(base, &resolved) {
        return Err(format!(
            "the endpoint {} is on another origin than the SSE URL; refusing to send messages there",
            redact_url(&resolved)
        ));
    }
    Ok(resolved)
}

fn closed_by_client() -> TransportError {
    TransportError::closed("closed by the client")
}

impl Inner {
    fn state(&self) -> std::sync::MutexGuard<'_, LinkState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn options(&self) -> &HttpOptions {
        self.client.options()
    }

    fn what_get(&self) -> String {
        format!("GET {}", redact_url(&self.sse_url))
    }

    /// Hands an item to `recv`; `false` when the transport is closing.
    async fn deliver(&self, item: Received) -> bool {
        tokio::select! {
            sent = self.tx.send(item) => sent.is_ok(),
            () = self.closing.cancelled() => false,
        }
    }

    /// The error of the connection once it is gone.
    fn closed_error(&self) -> TransportError {
        if self.closing.is_cancelled() {
            return closed_by_client();
        }
        let reason = self
            .state()
            .closed_reason()
            .unwrap_or("the SSE stream ended")
            .to_owned();
        TransportError::closed(reason)
    }

    /// Opens the SSE stream, resuming after `last_event_id` when given.
    async fn open_stream(&self, last_event_id: Option<&str>) -> Result<Incoming, TransportError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        if let Some(last) = last_event_id
            && let Ok(v) = HeaderValue::from_str(last)
        {
            headers.insert(LAST_EVENT_ID, v);
        }
        let request = self.client.build(Method::GET, &self.sse_url, headers, None);
        let response = self.client.send(request).await?;
        event_stream(response, &self.what_get()).await
    }

    /// POSTs one message to `endpoint`; the server should answer 2xx.
    async fn post(&self, endpoint: &Uri, body: Bytes) -> Result<(), TransportError> {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let request = self
            .client
            .build(Method::POST, endpoint, headers, Some(body));
        let response = self.client.send(request).await?;
        if !response.status().is_success() {
            let what = format!("POST {}", redact_url(endpoint));
            return Err(status_error(response, &what).await);
        }
        Ok(())
    }

    /// Waits until a stream is up, then returns where to POST; a request
    /// (`id`) is in flight on that stream from then on. Bounded by the
    /// request timeout. A message that is not a `handshake` step fails
    /// while a new session awaits its handshake.
    async fn wait_ready(&self, id: Option<&Id>, handshake: bool) -> Result<Uri, TransportError> {
        let timeout = self.options().request_timeout;
        let mut changed = self.changed.subscribe();
        let wait = async {
            loop {
                changed.borrow_and_update();
                let gate = self.state().gate(id, handshake);
                match gate {
                    Gate::Post(endpoint) => return Ok(endpoint),
                    Gate::Expired(reason) => {
                        return Err(TransportError::SessionExpired {
                            url: format!("POST {}", redact_url(self.state().endpoint())),
                            reason,
                        });
                    }
                    Gate::Closed(reason) => return Err(TransportError::closed(reason)),
                    Gate::Wait => {}
                }
                if changed.changed().await.is_err() {
                    return Err(self.closed_error());
                }
            }
        };
        tokio::select! {
            ready = tokio::time::timeout(timeout, wait) => ready.unwrap_or_else(|_| {
                Err(TransportError::Timeout {
                    what: format!(
                        "the SSE stream {} to be reconnected before posting (the request timeout)",
                        redact_url(&self.sse_url)
                    ),
                    after: timeout,
                })
            }),
            () = self.closing.cancelled() => Err(closed_by_client()),
        }
    }

    /// Reads one stream: its `endpoint` event (sent to `endpoint`), its
    /// messages (answers mark their requests done), until it ends.
    async fn read_stream(
        self: Arc<Self>,
        mut body: Incoming,
        last_event_id: Option<String>,
        mut endpoint: Option<oneshot::Sender<Result<Uri, String>>>,
    ) -> StreamEnd {
        let since = tokio::time::Instant::now();
        let mut parser = SseParser::with_max_event_size(self.options().max_event_size);
        parser.set_last_event_id(last_event_id);
        let idle = self.options().idle_stream_timeout;
        let why = 'read: loop {
            let frame = tokio::select! {
                frame = tokio::time::timeout(idle, body.frame()) => match frame {
                    Ok(frame) => frame,
                    Err(_) => break 'read crate::sse::idle_message(idle),
                },
                () = self.closing.cancelled() => break 'read "closed by the client".to_owned(),
            };
            let data = match frame {
                None => break "the server closed the SSE stream".to_owned(),
                Some(Err(e)) => break format!("the SSE stream broke: {e}"),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue,
                },
            };
            parser.push(&data);
            while let Some(item) = parser.next_item() {
                let event = match item {
                    SseItem::Event(event) => event,
                    SseItem::Oversized { limit } => {
                        let item =
                            Received::Invalid(InvalidFrame::Oversized(Oversized::new(limit)));
                        if !self.deliver(item).await {
                            break 'read "closed by the client".to_owned();
                        }
                        continue;
                    }
                };
                match event.event.as_str() {
                    "endpoint" => {
                        if let Some(tx) = endpoint.take() {
                            let text = String::from_utf8_lossy(&event.data);
                            let _ = tx.send(resolve_endpoint(&self.sse_url, &text));
                        }
                    }
                    "message" => {
                        if event.data.trim_ascii().is_empty() {
                            continue;
                        }
                        let mut items = Vec::new();
                        let budget = self.options().max_event_size;
                        payload_to_received(event.data, &self.batches, budget, &mut items);
                        for item in items {
                            self.answer_seen(&item);
                            if !self.deliver(item).await {
                                break 'read "closed by the client".to_owned();
                            }
                        }
                    }
                    _ => {}
                }
            }
        };
        StreamEnd {
            why,
            lived: since.elapsed(),
            last_event_id: parser.last_event_id().map(str::to_owned),
            retry: parser.retry(),
        }
    }

    /// Notes an answer: its request is no longer in flight.
    fn answer_seen(&self, item: &Received) {
        if let Received::Message(message @ (Message::Response(_) | Message::Error(_))) = item
            && let Some(id) = message.id()
        {
            self.state().answered(id);
        }
    }

    /// Runs the connection after its first stream: when a stream drops,
    /// fails the requests in flight on it and reconnects, until the
    /// attempts run out or the client closes.
    async fn drive(self: Arc<Self>, first: JoinHandle<StreamEnd>) {
        let mut reader = first;
        let mut last_event_id: Option<String> = None;
        let mut retry: Option<Duration> = None;
        let name = self.options().name().to_owned();
        let max = self.options().max_reconnects;
        loop {
            let Ok(end) = (&mut reader).await else {
                return;
            };
            if self.closing.is_cancelled() {
                return;
            }
            if end.last_event_id.is_some() {
                last_event_id = end.last_event_id;
            }
            if end.retry.is_some() {
                retry = end.retry;
            }
            let dropped = self.state().stream_dropped(&end.why, end.lived);
            let lost = dropped.lost;
            self.changed.send_replace(());
            let young = if dropped.young {
                " (young: the backoff goes on)"
            } else {
                ""
            };
            tracing::info!(
                server = %name,
                lived_ms = u64::try_from(end.lived.as_millis()).unwrap_or(u64::MAX),
                young = dropped.young,
                "{}; reconnecting",
                end.why
            );
            self.options().observe(HttpTrace::Note(format!(
                "{} after {} ms{young}; {} request(s) in flight failed; reconnecting",
                end.why,
                end.lived.as_millis(),
                lost.len()
            )));
            for id in lost {
                let error = TransportError::Http {
                    url: self.what_get(),
                    message: format!(
                        "{} before this request's answer, which would have come on that \
                         stream; the transport reconnects: send the request again if it is \
                         safe to run twice",
                        end.why
                    ),
                };
                let failure = Received::Failed(RequestFailure { id, error });
                if !self.deliver(failure).await {
                    return;
                }
            }
            let mut last_error = end.why;
            reader = loop {
                let next = self.state().next_attempt(max, &last_error);
                let n = match next {
                    Attempt::Try(n) => n,
                    Attempt::GiveUp(reason) => return self.give_up(reason),
                };
                let pace = self
                    .state()
                    .reconnect_wait(retry, self.options().default_retry, &name);
                pace.trace(&name, "SSE", (n == 1).then_some(end.lived));
                self.options().observe(HttpTrace::Note(format!(
                    "reconnecting the SSE stream {}; try {n} of at most {max} in a row",
                    pace.describe()
                )));
                tokio::select! {
                    () = tokio::time::sleep(pace.wait) => {}
                    () = self.closing.cancelled() => return,
                }
                let attempt = tokio::select! {
                    attempt = self.reconnect(last_event_id.clone()) => attempt,
                    () = self.closing.cancelled() => return,
                };
                match attempt {
                    Ok(next) => break next,
                    Err(AttemptError::Retry(e)) => {
                        tracing::debug!(server = %name, "reconnecting the SSE stream: {e}");
                        last_error = e;
                    }
                    Err(AttemptError::Fatal(e)) => return self.give_up(e),
                }
            };
        }
    }

    /// One reconnection: a new stream and its endpoint; a new endpoint (a
    /// new session) is reported before POSTs may go out again.
    async fn reconnect(
        self: &Arc<Self>,
        last_event_id: Option<String>,
    ) -> Result<JoinHandle<StreamEnd>, AttemptError> {
        let body = self
            .open_stream(last_event_id.as_deref())
            .await
            .map_err(|e| AttemptError::of(e, "reconnecting the SSE stream"))?;
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let mut reader = AbortOnDrop(Some(tokio::spawn(Arc::clone(self).read_stream(
            body,
            last_event_id,
            Some(endpoint_tx),
        ))));
        let timeout = self.options().request_timeout;
        let endpoint = match tokio::time::timeout(timeout, endpoint_rx).await {
            Ok(Ok(Ok(endpoint))) => endpoint,
            Ok(Ok(Err(refused))) => return Err(AttemptError::Fatal(refused)),
            Ok(Err(_)) => {
                let why = match reader.0.take() {
                    Some(task) => task.await.map(|end| end.why).unwrap_or_default(),
                    None => String::new(),
                };
                return Err(AttemptError::Retry(format!(
                    "{why} before sending the endpoint event"
                )));
            }
            Err(_) => {
                return Err(AttemptError::Retry(format!(
                    "no endpoint event on the new stream within {} (the request timeout)",
                    crate::describe_duration(timeout)
                )));
            }
        };
        let new_session = self.state().is_new_session(&endpoint).then(|| {
            "the SSE stream reconnected with a new endpoint, which is a new session on the \
             server; its handshake has not run"
                .to_owned()
        });
        if let Some(reason) = &new_session {
            self.options().observe(HttpTrace::Note(
                "a new SSE endpoint: a new session; reported, waiting for initialize".into(),
            ));
            // Reported before any message can fail for it.
            let item = Received::SessionExpired {
                reason: reason.clone(),
            };
            if !self.deliver(item).await {
                return Err(AttemptError::Retry("closed by the client".into()));
            }
        }
        tracing::info!(
            server = self.options().name(),
            endpoint = %redact_url(&endpoint),
            "SSE stream reconnected"
        );
        self.options().observe(HttpTrace::Note(format!(
            "SSE stream reconnected; posting to {}",
            redact_url(&endpoint)
        )));
        self.state().ready(endpoint, new_session);
        self.changed.send_replace(());
        reader
            .into_inner()
            .ok_or_else(|| AttemptError::Retry("the new stream's reader is gone".into()))
    }

    /// No more attempts: `recv` reports the connection closed with `reason`,
    /// and waiting POSTs fail with it.
    fn give_up(&self, reason: String) {
        tracing::warn!(server = self.options().name(), "{reason}");
        self.options()
            .observe(HttpTrace::Note(format!("giving up: {reason}")));
        self.state().close(reason);
        self.changed.send_replace(());
        self.dead.cancel();
    }
}

impl SseTransport {
    /// Opens the SSE stream at `url` and waits for the `endpoint` event.
    pub async fn connect(url: &str, options: HttpOptions) -> Result<Self, TransportError> {
        let sse_url = parse_url(url)?;
        let batches = BatchGate::new(options.max_batch_elements);
        let client = HttpClient::new(options)?;
        let (tx, rx) = mpsc::channel(256);
        let inner = Arc::new(Inner {
            client,
            batches,
            state: StdMutex::new(LinkState::new(sse_url.clone())),
            sse_url,
            tx,
            changed: watch::Sender::new(()),
            closing: CancellationToken::new(),
            dead: CancellationToken::new(),
        });
        let what = inner.what_get();
        let body = inner.open_stream(None).await?;
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let mut reader = AbortOnDrop(Some(tokio::spawn(Arc::clone(&inner).read_stream(
            body,
            None,
            Some(endpoint_tx),
        ))));
        let timeout = inner.options().request_timeout;
        let endpoint = match tokio::time::timeout(timeout, endpoint_rx).await {
            Ok(Ok(Ok(endpoint))) => endpoint,
            Ok(Ok(Err(message))) => return Err(TransportError::Http { url: what, message }),
            Ok(Err(_)) => {
                let why = match reader.0.take() {
                    Some(task) => task.await.map(|end| end.why).unwrap_or_default(),
                    None => String::new(),
                };
                return Err(TransportError::Http {
                    url: what,
                    message: format!("{why} before sending the endpoint event"),
                });
            }
            Err(_) => {
                return Err(TransportError::Timeout {
                    what: format!("the endpoint event on {what}"),
                    after: timeout,
                });
            }
        };
        tracing::debug!(
            server = inner.options().name(),
            endpoint = %redact_url(&endpoint),
            "SSE endpoint"
        );
        inner.state().ready(endpoint, None);
        let Some(first) = reader.into_inner() else {
            return Err(TransportError::Http {
                url: what,
                message: "the stream's reader is gone".into(),
            });
        };
        let driver = tokio::spawn(Arc::clone(&inner).drive(first));
        Ok(SseTransport {
            inner,
            rx: Mutex::new(rx),
            driver,
            closed: AtomicBool::new(false),
        })
    }

    /// Where messages are POSTed (from the last `endpoint` event).
    pub fn endpoint(&self) -> String {
        redact_url(self.inner.state().endpoint())
    }

    async fn send_message(
        &self,
        message: &Message,
        context: &SendContext,
    ) -> Result<(), TransportError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(closed_by_client());
        }
        let inner = &self.inner;
        inner.batches.follow(context);
        let body = super::encode(message)?;
        let lifecycle = context.lifecycle_of();
        let handshake = matches!(lifecycle, Lifecycle::Initialize | Lifecycle::Initialized);
        if lifecycle == Lifecycle::Initialize {
            inner.state().initialize_sent();
        }
        let id = match message {
            Message::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let endpoint = inner.wait_ready(id.as_ref(), handshake).await?;
        match inner.post(&endpoint, body).await {
            Ok(()) => {
                if lifecycle == Lifecycle::Initialized {
                    inner.state().initialized_sent();
                }
                Ok(())
            }
            // The stream dropped meanwhile and failed the request through
            // `recv` already: one failure per request.
            Err(_) if id.as_ref().is_some_and(|id| !inner.state().post_failed(id)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.inner.closing.cancel();
        self.driver.abort();
    }
}

impl Transport for SseTransport {
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
                return Err(closed_by_client());
            }
            let mut rx = self.rx.lock().await;
            tokio::select! {
                biased;
                item = rx.recv() => item.ok_or_else(|| self.inner.closed_error()),
                () = self.inner.closing.cancelled() => Err(closed_by_client()),
                () = self.inner.dead.cancelled() => Err(self.inner.closed_error()),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.closed.store(true, Ordering::SeqCst);
        self.inner.closing.cancel();
        self.inner.state().close("closed by the client".into());
        self.inner.changed.send_replace(());
        self.driver.abort();
        Box::pin(async {})
    }

    fn kind(&self) -> TransportKind {
        TransportKind::Sse
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_against_the_sse_url() {
        let base: Uri = "http://127.0.0.1:8080/app/sse?x=1".parse().unwrap();
        let r = |d: &str| resolve_endpoint(&base, d).map(|u| u.to_string());
        assert_eq!(
            r("/messages?sessionId=abc").unwrap(),
            "http://127.0.0.1:8080/messages?sessionId=abc"
        );
        assert_eq!(
            r("messages?sessionId=abc").unwrap(),
            "http://127.0.0.1:8080/app/messages?sessionId=abc"
        );
        assert_eq!(
            r("http://127.0.0.1:8080/m").unwrap(),
            "http://127.0.0.1:8080/m"
        );
        assert!(
            r("http://evil.example/m")
                .unwrap_err()
                .contains("another origin")
        );
        assert!(r("https://127.0.0.1:8080/m").is_err());
        assert!(r("").is_err());
    }
}
