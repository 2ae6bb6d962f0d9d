//! One request: its POST, its answer (JSON, or an SSE stream resumed with
//! `Last-Event-ID` when it drops), and what it reports back.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::Method;
use hyper::body::Incoming;
use hyper::header::HeaderMap;
use mcp_stack_jsonrpc::{Id, Message, Oversized};

use super::super::client::{content_type, read_body, status_answer, status_error};
use super::super::{HttpTrace, parse_gated, parsed_to_received, payload_to_received};
use super::state::{self, Resume};
use super::{AFTER_ANSWER_LINGER, Extra, Head, Inner, Posted};
use crate::sse::{SseItem, SseParser};
use crate::{Answer, InvalidFrame, Received, SendContext, TransportError};

impl Inner {
    /// Drives one ordinary request (not `initialize`) on the caller's task:
    /// POST, and a JSON answer read and returned here, with no task,
    /// channel or reader in between. An SSE answer takes longer: it is
    /// handed to a task of the transport, as [`run_request`](Inner::run_request)
    /// would do it (read and resumed there, its messages through `recv`).
    ///
    /// A request without HTTP session (`stateless`: 2026-07-28, whose
    /// `mirror` is its method and context, which its metadata headers are
    /// made from) carries no session id; a 4xx whose body is a JSON-RPC error is its answer; its
    /// SSE task is registered for cancellation.
    ///
    /// An error status is returned as the error, as `send` returns it (an
    /// expired session as [`TransportError::SessionExpired`], reported
    /// through `recv` first); a body that cannot be read is
    /// [`Answer::Failed`]. A JSON body that is not exactly the answer to
    /// `id` (a batch, a stray message) is handed out through `recv`
    /// instead, item by item.
    pub(super) async fn request_direct(
        self: &Arc<Self>,
        id: &Id,
        body: Bytes,
        stateless: bool,
        mirror: Option<(&str, &SendContext)>,
    ) -> Result<Answer, TransportError> {
        let what = self.what(&Method::POST);
        let extra = mirror.map_or(Extra::None, |(method, context)| {
            Extra::Mirror(method, context)
        });
        let Posted { response, session } = self.post(&body, !stateless, extra).await?;
        let status = response.status();
        if stateless && explained_by_body(status) {
            // As on the task path: a JSON-RPC error that explains the
            // status is the answer.
            let (error, mut answer) = status_answer(response, what).await?;
            tracing::debug!(server = self.options().name(), "{error}");
            answer.id = Some(id.clone());
            return Ok(Answer::Now(Message::from(answer)));
        }
        if !status.is_success() {
            let error = status_error(response, what).await;
            if let Some(generation) = session
                && state::is_expiry(&error)
            {
                return Err(self.session_expired(generation, error).await);
            }
            return Err(error);
        }
        if status == hyper::StatusCode::ACCEPTED {
            if stateless {
                return Err(accepted_without_session(what));
            }
            // The answer will come on another stream (the GET stream).
            return Ok(Answer::Later);
        }
        match &*content_type(&response) {
            "application/json" => {
                let limit = self.options().max_event_size;
                let timeout = self.options().request_timeout;
                let bytes = match read_body(response.into_body(), limit, timeout, what).await {
                    Ok(bytes) => bytes,
                    Err(e) => return Ok(Answer::Failed(e)),
                };
                match parse_gated(&bytes, &self.batches, limit) {
                    Ok(mcp_stack_jsonrpc::Payload::Single(m))
                        if matches!(m, Message::Response(_) | Message::Error(_))
                            && m.id() == Some(id) =>
                    {
                        Ok(Answer::Now(m))
                    }
                    Err(reason) => {
                        let (frame, error) = unusable_answer(what, reason, &bytes);
                        self.deliver(Received::Invalid(frame)).await;
                        Ok(Answer::Failed(error))
                    }
                    other => {
                        let mut items = Vec::new();
                        parsed_to_received(other, &bytes, &mut items);
                        for item in items {
                            self.deliver(item).await;
                        }
                        Ok(Answer::Later)
                    }
                }
            }
            "text/event-stream" => {
                let inner = Arc::clone(self);
                let task_id = id.clone();
                let task = async move {
                    inner
                        .read_request_stream(response.into_body(), &task_id, stateless)
                        .await;
                };
                self.spawn_request(id, stateless, task);
                Ok(Answer::Later)
            }
            other => Err(unexpected_content_type(what, other)),
        }
    }

    /// Runs one request: POST, then its answer (JSON or SSE, resumed when dropped).
    ///
    /// A request without HTTP session (2026-07-28; `mirrored` holds its
    /// metadata headers) carries no session id, is not resumed, and takes a
    /// 4xx whose body is a JSON-RPC error as its answer. An expired session
    /// fails the request with [`TransportError::SessionExpired`].
    pub(super) async fn run_request(
        self: Arc<Self>,
        id: Id,
        body: Bytes,
        is_init: bool,
        mirrored: Option<HeaderMap>,
        mut head: Head,
    ) {
        let what = self.what(&Method::POST);
        let stateless = mirrored.is_some();
        let posted = self
            .post(
                &body,
                !is_init && !stateless,
                Extra::headers(mirrored.as_ref()),
            )
            .await;
        let Posted { response, session } = match posted {
            Ok(p) => p,
            Err(e) => return head.fail(&self, &id, e).await,
        };
        let status = response.status();
        if stateless && explained_by_body(status) {
            return match status_answer(response, what).await {
                Ok((error, mut answer)) => {
                    // The JSON-RPC error explains the status: it is the answer.
                    tracing::debug!(server = self.options().name(), "{error}");
                    answer.id = Some(id.clone());
                    head.ok();
                    self.deliver(Received::Message(Message::from(answer))).await;
                }
                Err(error) => head.fail(&self, &id, error).await,
            };
        }
        if !status.is_success() {
            let error = status_error(response, what).await;
            let error = match session {
                Some(generation) if state::is_expiry(&error) => {
                    self.session_expired(generation, error).await
                }
                _ => error,
            };
            return head.fail(&self, &id, error).await;
        }
        if is_init {
            self.state().session_started(response.headers());
        }
        if status == hyper::StatusCode::ACCEPTED {
            if stateless {
                return head.fail(&self, &id, accepted_without_session(what)).await;
            }
            // The answer will come on another stream (the GET stream).
            head.ok();
            return;
        }
        match &*content_type(&response) {
            "application/json" => {
                head.ok();
                let limit = self.options().max_event_size;
                let timeout = self.options().request_timeout;
                match read_body(response.into_body(), limit, timeout, what).await {
                    Ok(bytes) => match parse_gated(&bytes, &self.batches, limit) {
                        Err(reason) => {
                            let (frame, error) = unusable_answer(what, reason, &bytes);
                            self.deliver(Received::Invalid(frame)).await;
                            self.deliver_error(&id, error).await;
                        }
                        parsed => {
                            let mut items = Vec::new();
                            parsed_to_received(parsed, &bytes, &mut items);
                            for item in items {
                                self.deliver(item).await;
                            }
                        }
                    },
                    Err(e) => self.deliver_error(&id, e).await,
                }
            }
            "text/event-stream" => {
                head.ok();
                self.read_request_stream(response.into_body(), &id, stateless)
                    .await;
            }
            other => {
                head.fail(&self, &id, unexpected_content_type(what, other))
                    .await
            }
        }
    }

    /// Reads a request's SSE stream until its answer arrives, resuming the
    /// stream with `Last-Event-ID` when it drops.
    pub(super) async fn read_request_stream(&self, body: Incoming, id: &Id, stateless: bool) {
        let mut parser = SseParser::with_max_event_size(self.options().max_event_size);
        let mut body = Some(body);
        let mut attempts = 0u32;
        loop {
            if let Some(b) = body.take()
                && self.pump(b, &mut parser, Some(id), None).await
            {
                return;
            }
            if self.closing.is_cancelled() {
                return;
            }
            let options = self.options();
            let last = parser.last_event_id().map(str::to_owned);
            let wait = match state::resume(
                stateless,
                last.as_deref(),
                attempts,
                options.max_reconnects,
                parser.retry(),
                options.default_retry,
            ) {
                Resume::After(wait) => wait,
                Resume::Fail(why) => {
                    let error = TransportError::Http {
                        url: self.what(&Method::POST).to_owned(),
                        message: why,
                    };
                    return self.deliver_error(id, error).await;
                }
            };
            attempts += 1;
            self.options().observe(HttpTrace::Note(format!(
                "the stream of request {id} dropped; resuming after {} ms with Last-Event-ID",
                wait.as_millis()
            )));
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.closing.cancelled() => return,
            }
            match self.open_get(last.as_deref()).await {
                Ok(Some(b)) => body = Some(b),
                Ok(None) => {
                    let error = TransportError::Http {
                        url: self.what(&Method::GET).to_owned(),
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

    /// Reads SSE events from a body and hands their messages on. Returns
    /// whether the answer to `expect` arrived. With `idle`, a stream that
    /// sends no byte for that long ends as if dropped (the idle stream
    /// timeout, traced with its bound).
    pub(super) async fn pump(
        &self,
        mut body: Incoming,
        parser: &mut SseParser,
        expect: Option<&Id>,
        idle: Option<Duration>,
    ) -> bool {
        let mut answered = false;
        loop {
            let frame = if answered {
                // The server should end the stream now; do not wait long.
                match tokio::time::timeout(AFTER_ANSWER_LINGER, body.frame()).await {
                    Ok(f) => f,
                    Err(_) => return true,
                }
            } else {
                let next = async {
                    match idle {
                        Some(idle) => tokio::time::timeout(idle, body.frame()).await.ok(),
                        None => Some(body.frame().await),
                    }
                };
                tokio::select! {
                    f = next => match f {
                        Some(f) => f,
                        None => {
                            let why = crate::sse::idle_message(idle.unwrap_or_default());
                            tracing::info!(server = self.options().name(), "{why}");
                            self.options()
                                .observe(HttpTrace::Note(format!("{why}; reconnecting")));
                            parser.finish();
                            return false;
                        }
                    },
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
                        let budget = self.options().max_event_size;
                        payload_to_received(event.data, &self.batches, budget, &mut items);
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
                        let item = InvalidFrame::Oversized(Oversized::new(limit));
                        self.deliver(Received::Invalid(item)).await;
                    }
                }
            }
        }
    }
}

/// A JSON answer that is no JSON-RPC at all (not JSON, or a batch refused
/// whole): the invalid frame (counted once), and the request's failure,
/// since that body was its answer and no other will come.
fn unusable_answer(
    what: &str,
    reason: mcp_stack_jsonrpc::MessageError,
    bytes: &[u8],
) -> (InvalidFrame, TransportError) {
    let frame = InvalidFrame::Malformed(mcp_stack_jsonrpc::Malformed {
        reason,
        excerpt: mcp_stack_jsonrpc::excerpt(bytes),
        len: bytes.len(),
    });
    let error = TransportError::Http {
        url: what.to_owned(),
        message: format!("the answer is not a usable JSON-RPC message: {frame}"),
    };
    (frame, error)
}

/// A request's answer that is neither JSON nor an event stream.
fn unexpected_content_type(what: &str, content_type: &str) -> TransportError {
    TransportError::Http {
        url: what.to_owned(),
        message: format!(
            "the answer to a request has Content-Type {content_type:?}; expected \
             application/json or text/event-stream"
        ),
    }
}

/// Whether the error status of a request without HTTP session (2026-07-28)
/// may be explained by a JSON-RPC error in its body, which is then the
/// answer: a 4xx, but not an auth refusal (401, 403, 407), which stays an
/// HTTP error whatever its body says, so callers see the status they must
/// act on.
fn explained_by_body(status: hyper::StatusCode) -> bool {
    status.is_client_error() && !matches!(status.as_u16(), 401 | 403 | 407)
}

/// A 2026-07-28 request answered with 202 Accepted: its answer must come on
/// its own response.
fn accepted_without_session(what: &str) -> TransportError {
    TransportError::Http {
        url: what.to_owned(),
        message: "the server answered a request with 202 Accepted; in protocol 2026-07-28 the \
                  answer must come on the request's own response"
            .into(),
    }
}
