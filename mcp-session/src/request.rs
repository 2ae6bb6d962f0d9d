//! Sending one request and waiting for its answer: ids, deadlines,
//! progress, cancellation when the caller stops waiting.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_jsonrpc::{
    EncodeError, ErrorResponse, Id, Message, Notification, OutgoingRequest, RawJson, Request,
    Response,
};
use mcp_transport::{Answer, SendContext, Transport, TransportError, TransportKind};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::time::Instant;

use mcp_protocol::methods;

use crate::config::ProgressListener;
use crate::error::SessionError;
use crate::parse::{parse_result, to_raw_params};
use crate::pending::{Deadline, Outcome, RequestId};
use crate::queue;
use crate::reader;
use crate::session::{Inner, Session};

/// Removes a request from the table if its caller stops waiting (timeout,
/// or the caller's future was dropped), and tells the server to stop.
pub(crate) struct InFlight<'a> {
    pub(crate) session: &'a Inner,
    pub(crate) id: Id,
    pub(crate) method: &'a str,
    pub(crate) done: bool,
    /// The table let the request go at its deadline: it is cancelled
    /// though no longer in the table.
    pub(crate) expired: bool,
}

impl InFlight<'_> {
    pub(crate) fn finish(mut self) {
        self.done = true;
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let still_waiting = self.session.shared.lock_pending().remove(&self.id) || self.expired;
        // The spec forbids cancelling `initialize`; a `server/discover` probe
        // may go to a legacy server that knows no cancellation yet.
        if still_waiting && !matches!(self.method, methods::INITIALIZE | methods::SERVER_DISCOVER) {
            let params = json!({"requestId": self.id, "reason": "the client stopped waiting"});
            let transport = Arc::clone(&self.session.transport);
            let context = self.session.context().cancels(self.id.clone());
            if let Ok(raw) = mcp_jsonrpc::to_raw(&params) {
                let note = Message::Notification(Notification::new(methods::CANCELLED, Some(raw)));
                // Drop cannot await; a runtime is present wherever requests run.
                if let Ok(handle) = tokio::runtime::Handle::try_current() {
                    handle.spawn(async move {
                        let _ = transport.send_with(&note, &context).await;
                    });
                }
            }
        }
    }
}

impl Inner {
    /// Whether requests mirror tool arguments into `Mcp-Param-*` headers:
    /// a 2026-07-28 session over streamable HTTP.
    pub(crate) fn mirrors_headers(&self) -> bool {
        self.version.mirrors_into_headers()
            && self.transport.kind() == TransportKind::StreamableHttp
    }

    /// The context of an ordinary message: the session's revision.
    pub(crate) fn context(&self) -> SendContext {
        SendContext::new().revision(self.version)
    }

    /// The context of a request about `name` (a tool, a prompt, a resource
    /// URI): it carries the name only where it is sent, as `Mcp-Name` on
    /// streamable HTTP of 2026-07-28, so other requests allocate nothing.
    pub(crate) fn named_context(&self, name: &str) -> SendContext {
        if self.mirrors_headers() {
            self.context().name(name)
        } else {
            self.context()
        }
    }

    pub(crate) fn next_id(&self) -> RequestId {
        RequestId(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends a request with params already raw and waits for its answer,
    /// within its deadline.
    pub(crate) async fn request_raw(
        &self,
        key: RequestId,
        method: &str,
        params: Option<RawJson>,
        timeout: Duration,
        on_progress: Option<&ProgressListener>,
        context: &SendContext,
    ) -> Result<RawJson, SessionError> {
        let send = Outgoing::Message(Message::Request(Request {
            id: key.id(),
            method: method.to_string(),
            params,
        }));
        self.exchange(key, method, send, timeout, on_progress, context)
            .await
    }

    /// Sends a request and waits for its answer, within its deadline; the
    /// params are written by serde straight into the outgoing frame (where
    /// the transport writes frames itself), never into a `String` first.
    pub(crate) async fn request_params<P: Serialize + Sync>(
        &self,
        key: RequestId,
        method: &str,
        params: &P,
        timeout: Duration,
        on_progress: Option<&ProgressListener>,
        context: &SendContext,
    ) -> Result<RawJson, SessionError> {
        let send = Outgoing::Request(OutgoingRequest::new(key.id(), method).params(params));
        self.exchange(key, method, send, timeout, on_progress, context)
            .await
    }

    /// Sends `send` (the request `key`) and waits for its answer, within its
    /// deadline: the answer's `result` as the slice of the frame it came in.
    async fn exchange(
        &self,
        key: RequestId,
        method: &str,
        send: Outgoing<'_>,
        timeout: Duration,
        on_progress: Option<&ProgressListener>,
        context: &SendContext,
    ) -> Result<RawJson, SessionError> {
        let (progress_tx, mut progress_rx) = match on_progress {
            Some(_) => {
                let (tx, rx) = queue::bounded(queue::CAPACITY, Arc::clone(&self.shared.dropped));
                (Some(tx), Some(rx))
            }
            None => (None, None),
        };
        // The deadline covers sending too: an HTTP transport's send may wait
        // for the answer's head, or drive the request to its answer. The
        // session's timer (the reader's) watches it, not one of its own.
        let deadline = Deadline::new(Instant::now(), timeout, self.config.max_total_timeout);
        let inserted = self
            .shared
            .lock_pending()
            .insert(key, progress_tx, deadline);
        let Some(inserted) = inserted else {
            return Err(self.shared.closed_error());
        };
        if inserted.rearm {
            self.shared.ask_rearm();
        }
        let mut done = inserted.done;
        let id = key.id();
        let mut guard = InFlight {
            session: self,
            id: id.clone(),
            method,
            done: false,
            expired: false,
        };
        // The transport may answer here (HTTP: the POST driven on this task),
        // or later through the reader; until it has returned, both race.
        let mut sending = Some(match &send {
            Outgoing::Message(message) => self.transport.request_with(message, context),
            Outgoing::Request(request) => self.transport.request_outgoing(request, context),
        });
        let outcome = loop {
            tokio::select! {
                biased;
                outcome = &mut done => break outcome.ok(),
                answer = async {
                    match sending.as_mut() {
                        Some(sending) => sending.await,
                        None => std::future::pending().await,
                    }
                } => {
                    sending = None;
                    let answer = match answer {
                        Ok(answer) => answer,
                        Err(TransportError::Encode(EncodeError::Json(e))) => {
                            // Nothing was sent: nothing to cancel.
                            self.shared.lock_pending().remove(&guard.id);
                            guard.finish();
                            return Err(cannot_encode(method, &e));
                        }
                        Err(e) => return Err(e.into()),
                    };
                    if let Some(outcome) = self.answered(&guard.id, answer) {
                        break Some(outcome);
                    }
                }
                Some(p) = async {
                    match progress_rx.as_mut() {
                        Some(rx) => rx.recv().await,
                        None => std::future::pending().await,
                    }
                } => {
                    // The table pushed the deadline out when it routed this.
                    if let Some(listener) = on_progress {
                        listener(&p);
                    }
                }
            }
        };
        if let Some(Outcome::Expired(extended)) = outcome {
            let deadline = extended.unwrap_or(deadline);
            // The guard sends the cancellation; a request still being sent
            // is dropped first.
            drop(sending);
            guard.expired = true;
            drop(guard);
            return Err(deadline.expired(method, Instant::now()));
        }
        guard.finish();
        // Progress the server sent before its answer and still queued (the
        // answer wins the race above) reaches the listener too: the last
        // step of a call is never lost.
        if let (Some(rx), Some(listener)) = (progress_rx.as_mut(), on_progress) {
            while let Some(p) = rx.try_recv() {
                listener(&p);
            }
        }
        match outcome {
            Some(Outcome::Result(raw)) => Ok(raw),
            Some(Outcome::Error(error)) => Err(SessionError::Protocol {
                method: method.to_string(),
                error,
            }),
            Some(Outcome::Failed(error)) => Err(SessionError::Transport(error)),
            Some(Outcome::TooLarge(limit)) => Err(SessionError::AnswerTooLarge {
                method: method.to_string(),
                limit,
            }),
            // An expiry returned above.
            Some(Outcome::Closed | Outcome::Expired(_)) | None => Err(self.shared.closed_error()),
        }
    }

    /// What a transport's `request_with` returned for request `ours`. An
    /// answer or a failure takes its entry out of the table (the reader
    /// will see no answer for it) and is the outcome. A message that is not
    /// the answer is dispatched as the reader would (a transport should not
    /// hand one back), and then, as with `Later`, the request goes on
    /// waiting for the reader.
    fn answered(&self, ours: &Id, answer: Answer) -> Option<Outcome> {
        let outcome = match answer {
            Answer::Now(Message::Response(Response { id, result })) if id == *ours => {
                Outcome::Result(result)
            }
            Answer::Now(Message::Error(ErrorResponse {
                id: Some(id),
                error,
            })) if id == *ours => Outcome::Error(error),
            Answer::Failed(error) => Outcome::Failed(error),
            Answer::Now(other) => {
                if let Some(refusal) = reader::dispatch(&self.transport, &self.shared, other) {
                    let (transport, shared) =
                        (Arc::clone(&self.transport), Arc::clone(&self.shared));
                    tokio::spawn(async move { reader::refuse(&transport, &shared, refusal).await });
                }
                return None;
            }
            // The answer comes through the reader.
            _ => return None,
        };
        self.shared.lock_pending().remove(ours);
        Some(outcome)
    }

    /// Sends a request and parses its result into `R`, once, straight from
    /// the frame it came in; the params are written straight into the
    /// outgoing frame.
    pub(crate) async fn request<P: Serialize + Sync, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        timeout: Duration,
        context: &SendContext,
    ) -> Result<R, SessionError> {
        let id = self.next_id();
        let result = match &self.meta {
            None => {
                self.request_params(id, method, params, timeout, None, context)
                    .await?
            }
            Some(meta) => {
                let mut value =
                    serde_json::to_value(params).map_err(|e| cannot_encode(method, &e))?;
                meta.apply(&mut value);
                self.request_params(id, method, &value, timeout, None, context)
                    .await?
            }
        };
        parse_result(method, &result)
    }

    /// Encodes request parameters, adding the per-request `_meta` of a
    /// modern session.
    pub(crate) fn params<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<RawJson, SessionError> {
        match &self.meta {
            None => to_raw_params(method, params),
            Some(meta) => {
                let mut value =
                    serde_json::to_value(params).map_err(|e| cannot_encode(method, &e))?;
                meta.apply(&mut value);
                to_raw_params(method, &value)
            }
        }
    }
}

impl Session {
    /// Sends a request of the method table and returns its typed result:
    /// the params are written by serde straight into the outgoing frame,
    /// the result parsed once, from the frame's bytes, into `R::Result`.
    ///
    /// The typed form of [`Session::request`]: the session's revision, its
    /// request `_meta` and its default timeout, nothing more (a `tools/call`
    /// sent so is neither validated nor carried through `input_required`
    /// rounds or tasks: that is [`Session::call_tool`]).
    ///
    /// ```no_run
    /// # async fn f(session: mcp_session::Session) -> Result<(), mcp_session::SessionError> {
    /// use mcp_session::protocol::request::ToolsList;
    /// let page = session.call::<ToolsList>(&Default::default()).await?;
    /// println!("{} tools on the first page", page.tools.len());
    /// # Ok(()) }
    /// ```
    pub async fn call<R: mcp_protocol::request::Request>(
        &self,
        params: &R::Params,
    ) -> Result<R::Result, SessionError> {
        let inner = &self.inner;
        // What a 2026-07-28 request mirrors as `Mcp-Name`, read from the
        // params only where it is sent.
        let name = match mcp_protocol::x_mcp_header::name_field(R::METHOD) {
            Some(field) if inner.mirrors_headers() => serde_json::to_value(params)
                .ok()
                .and_then(|v| v.get(field)?.as_str().map(str::to_owned)),
            _ => None,
        };
        let context = match &name {
            Some(name) => inner.named_context(name),
            None => inner.context(),
        };
        inner
            .call::<R>(params, inner.config.request_timeout, &context)
            .await
    }
}

impl Inner {
    /// A request of the method table: [`request`](Inner::request) with the
    /// method and both types taken from `R`.
    pub(crate) async fn call<R: mcp_protocol::request::Request>(
        &self,
        params: &R::Params,
        timeout: Duration,
        context: &SendContext,
    ) -> Result<R::Result, SessionError> {
        self.request(R::METHOD, params, timeout, context).await
    }
}

/// A request on its way out: a message built already, or params still a
/// value (written straight into the frame by transports that write frames).
enum Outgoing<'p> {
    Message(Message),
    Request(OutgoingRequest<'p>),
}

fn cannot_encode(method: &str, e: &serde_json::Error) -> SessionError {
    SessionError::InvalidResponse {
        method: method.to_string(),
        reason: format!("cannot encode the request: {e}"),
    }
}
