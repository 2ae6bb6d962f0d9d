//! Sending one request and waiting for its answer: ids, deadlines,
//! progress, cancellation when the caller stops waiting.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_stack_jsonrpc::{
    EncodeError, ErrorResponse, Id, Message, Notification, OutgoingRequest, RawJson, Response,
};
use mcp_stack_transport::{Answer, SendContext, Transport, TransportError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::time::Instant;

use mcp_stack_protocol::notification::{Cancelled, Notification as _};
use mcp_stack_protocol::request::{Initialize, Request as _, ServerDiscover};

use crate::config::ProgressListener;
use crate::conn::Inner;
use crate::error::SessionError;
use crate::parse::{parse_result, to_raw_params};
use crate::pending::{Deadline, Outcome, RequestId};
use crate::queue;
use crate::reader;

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
        if still_waiting && !matches!(self.method, Initialize::METHOD | ServerDiscover::METHOD) {
            let params = json!({"requestId": self.id, "reason": "the client stopped waiting"});
            let transport = Arc::clone(&self.session.transport);
            let context = self.session.context().cancels(self.id.clone());
            if let Ok(raw) = mcp_stack_jsonrpc::to_raw(&params) {
                let note = Message::Notification(Notification::new(Cancelled::METHOD, Some(raw)));
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
    /// The context of an ordinary message: the session's revision.
    pub(crate) fn context(&self) -> SendContext {
        SendContext::new().revision(self.revision.version())
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

    /// Sends `send` (the request `key`) and waits for its answer, within its
    /// deadline, once: the answer's `result` as the slice of the frame it
    /// came in. [`request_raw`](Inner::request_raw) and
    /// [`request_params`](Inner::request_params) (in `rehandshake.rs`) build
    /// it and send it again when the server's session ended before it was
    /// processed.
    pub(crate) async fn request_once(
        &self,
        key: RequestId,
        send: &Outgoing<'_>,
        method: &str,
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
        let mut sending = Some(match send {
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
                        Err(e) if e.is_refused() => {
                            // The server refused it (or it never left):
                            // it is working on nothing to cancel, and a
                            // cancellation would be one more request for
                            // the transport (and its authorizer) to make.
                            self.shared.lock_pending().remove(&guard.id);
                            guard.finish();
                            return Err(e.into());
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
    /// session whose revision has one (2026-07-28).
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

/// A request on its way out: a message built already, or params still a
/// value (written straight into the frame by transports that write frames).
pub(crate) enum Outgoing<'p> {
    Message(Message),
    Request(OutgoingRequest<'p>),
}

fn cannot_encode(method: &str, e: &serde_json::Error) -> SessionError {
    SessionError::InvalidResponse {
        method: method.to_string(),
        reason: format!("cannot encode the request: {e}"),
    }
}
