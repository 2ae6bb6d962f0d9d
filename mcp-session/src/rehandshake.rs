//! Running the handshake again when the server's session ends under a
//! running session, and sending again the requests that failed with it.
//!
//! A transport reports that the server's session ended
//! ([`Received::SessionExpired`](mcp_stack_transport::Received): a streamable HTTP
//! session expired, a legacy SSE stream came back with a new endpoint) and
//! fails the messages the server did not process with
//! [`TransportError::SessionExpired`](mcp_stack_transport::TransportError); it
//! posts nothing but the handshake until one has run. The session then:
//!
//! * runs the handshake once ([`Renewal`](crate::renewal::Renewal) keeps it
//!   single-flight): `initialize`, offering the revision it negotiated,
//!   then `notifications/initialized`, within the handshake timeout;
//!   An `initialize` lost on the way (a transport failure without status,
//!   such as a legacy SSE stream dropping again under it) is sent again, at
//!   most three times in all;
//! * checks the answer by the rules of the first handshake
//!   ([`Lifecycle::on_initialize`]), and requires the same revision: a
//!   server whose new session speaks another one (or refuses, or does not
//!   answer) closes the session, and every request waiting, with the
//!   reason;
//! * sends again, once and under a new id, each request that failed with
//!   `SessionExpired` (the server never processed it), the wait for the
//!   handshake and the new attempt both within what is left of the
//!   request's own timeout (a caller's timeout bounds the whole request,
//!   resend included). `initialize` and `server/discover` are never sent
//!   again.
//!   Notifications and answers to the server's requests that failed with
//!   it are not sent again (they belong to the session that ended): the
//!   caller of [`Session::notify`](crate::Session::notify) gets the error.
//!
//! What the server said about itself in the first handshake stays the
//! session's description ([`Session::server`](crate::Session::server)).

use std::sync::Arc;
use std::time::Duration;

use mcp_stack_jsonrpc::{Id, Message, Notification, OutgoingRequest, RawJson, Request};
use mcp_stack_transport::{Lifecycle as Lifecycle_, SendContext};
use serde::Serialize;
use tokio::time::Instant;

use mcp_stack_protocol::ProtocolMode;
use mcp_stack_protocol::notification::{Initialized, Notification as _};
use mcp_stack_protocol::request::{Initialize, Request as _, ServerDiscover};
use mcp_stack_protocol::types::ClientCapabilities;

use crate::config::ProgressListener;
use crate::conn::Inner;
use crate::error::SessionError;
use crate::lifecycle::{Lifecycle, Step};
use crate::pending::{Deadline, RequestId};
use crate::reader::ClosedInfo;
use crate::request::Outgoing;

/// Lets a connected session run the handshake again: installs the start
/// of a round in its [`Renewal`](crate::renewal::Renewal). Only for a
/// revision with a handshake (2026-07-28 has no server session to lose).
pub(crate) fn install(inner: &Arc<Inner>) {
    if !inner.revision.version().has_handshake() {
        return;
    }
    let session = Arc::downgrade(inner);
    let capabilities = Arc::clone(&inner.capabilities);
    inner.shared.renewal.install(Box::new(move || {
        let (session, capabilities) = (session.clone(), Arc::clone(&capabilities));
        tokio::spawn(async move {
            if let Some(inner) = session.upgrade() {
                inner.rehandshake(&capabilities).await;
            }
        });
    }));
}

/// How many times the handshake's `initialize` is sent when it is lost on
/// the way ([`lost`]).
const INITIALIZE_TRIES: u32 = 3;

/// Whether the `initialize` of a new handshake was lost on the way rather
/// than refused: a transport failure with no HTTP status, not a closed
/// connection and not an authorization problem.
fn lost(error: &mcp_stack_transport::TransportError) -> bool {
    !error.is_closed() && error.http_status().is_none() && !error.needs_authorization()
}

/// Whether a request that failed because the server's session ended is
/// sent again: everything but the lifecycle's own requests.
fn sent_again(method: &str) -> bool {
    !matches!(method, Initialize::METHOD | ServerDiscover::METHOD)
}

impl Inner {
    /// Sends a request with params already raw and waits for its answer,
    /// within its deadline; when the server's session ended before it was
    /// processed, waits for the handshake to run again and sends it once
    /// more (see the module).
    pub(crate) async fn request_raw(
        &self,
        key: RequestId,
        method: &str,
        params: Option<RawJson>,
        timeout: Duration,
        on_progress: Option<&ProgressListener>,
        context: &SendContext,
    ) -> Result<RawJson, SessionError> {
        // Raw params are shared bytes: sending them again copies nothing.
        let build = |id: Id| {
            Outgoing::Message(Message::Request(Request {
                id,
                method: method.to_string(),
                params: params.clone(),
            }))
        };
        self.request_renewing(key, method, build, timeout, on_progress, context)
            .await
    }

    /// Sends a request and waits for its answer, within its deadline; the
    /// params are written by serde straight into the outgoing frame (where
    /// the transport writes frames itself), never into a `String` first.
    /// Sent again as [`request_raw`](Self::request_raw) is.
    pub(crate) async fn request_params<P: Serialize + Sync>(
        &self,
        key: RequestId,
        method: &str,
        params: &P,
        timeout: Duration,
        on_progress: Option<&ProgressListener>,
        context: &SendContext,
    ) -> Result<RawJson, SessionError> {
        let build = |id: Id| Outgoing::Request(OutgoingRequest::new(id, method).params(params));
        self.request_renewing(key, method, build, timeout, on_progress, context)
            .await
    }

    /// The request `build` makes for an id, sent once, and once more under a
    /// new id when the server's session ended before it was processed.
    async fn request_renewing<'p>(
        &self,
        key: RequestId,
        method: &str,
        build: impl Fn(Id) -> Outgoing<'p>,
        timeout: Duration,
        on_progress: Option<&ProgressListener>,
        context: &SendContext,
    ) -> Result<RawJson, SessionError> {
        let renewal = &self.shared.renewal;
        let seen = renewal.done();
        let started = Instant::now();
        let outcome = self
            .request_once(key, &build(key.id()), method, timeout, on_progress, context)
            .await;
        match outcome {
            Err(SessionError::Transport(e))
                if e.is_session_expired() && sent_again(method) && renewal.installed() => {}
            other => return other,
        }
        renewal.start_after(seen);
        let left = timeout.saturating_sub(started.elapsed());
        match tokio::time::timeout(left, renewal.renewed_since(seen)).await {
            Ok(true) => {}
            Ok(false) => return Err(self.shared.closed_error()),
            Err(_) => {
                let deadline = Deadline::new(started, timeout, self.config.max_total_timeout);
                return Err(deadline.expired(method, Instant::now()));
            }
        }
        // The resend gets what is left of the request's timeout, not a new
        // one: the caller's bound holds for the whole request.
        let left = timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            let deadline = Deadline::new(started, timeout, self.config.max_total_timeout);
            return Err(deadline.expired(method, Instant::now()));
        }
        // A new id: a cancellation of the first one may still reach the
        // new session.
        let key = self.next_id();
        tracing::debug!(server = %self.config.server_name, "sending {method} again on the server's new session");
        self.request_once(key, &build(key.id()), method, left, on_progress, context)
            .await
    }

    /// One round: the handshake again, and its end told to the requests
    /// waiting for it. A failure closes the session with the reason.
    async fn rehandshake(&self, capabilities: &ClientCapabilities) {
        let server = &self.config.server_name;
        tracing::info!(server = %server, "the server's session ended; running the handshake again");
        match self.handshake_again(capabilities).await {
            Ok(()) => {
                tracing::info!(server = %server, version = %self.revision.version(), "the server's new session is ready");
                self.shared.renewal.finished(true);
            }
            Err(reason) => {
                tracing::warn!(server = %server, "{reason}");
                self.shared
                    .closed_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert(ClosedInfo {
                        reason,
                        exit: None,
                        stderr_tail: Vec::new(),
                    });
                self.shared.lock_pending().close();
                self.shared
                    .subscribers
                    .end_local(|| self.shared.closed_error());
                self.shared.server_requests.abort_all();
                self.shared.renewal.finished(false);
                self.transport.close().await;
            }
        }
    }

    /// `initialize` offering the negotiated revision, its answer checked
    /// as the first one was and for that same revision, then
    /// `notifications/initialized`. The error is the session's closing
    /// reason.
    async fn handshake_again(&self, capabilities: &ClientCapabilities) -> Result<(), String> {
        let version = self.revision.version();
        let mut tries = 1;
        let init = loop {
            match self.send_initialize(version, capabilities).await {
                Ok(init) => break init,
                // Lost on the way (a legacy SSE stream that dropped again
                // under it): the next try goes to the next stream.
                Err(SessionError::Transport(e)) if tries < INITIALIZE_TRIES && lost(&e) => {
                    tracing::debug!(server = %self.config.server_name, "initialize again (try {tries}): {e}");
                    tries += 1;
                }
                Err(e) => {
                    return Err(format!(
                        "the server's session ended and running the handshake again failed: \
                         {e}; connect again"
                    ));
                }
            }
        };
        let (lifecycle, _) = Lifecycle::start(ProtocolMode::Handshake, version);
        match lifecycle.on_initialize(version, &init.protocol_version) {
            Step::Initialized(v) if v == version => {}
            Step::Initialized(other) => {
                return Err(format!(
                    "the server's session ended and its new session speaks protocol revision \
                     {other}, not the {version} this session negotiated; connect again"
                ));
            }
            _ => {
                return Err(format!(
                    "the server's session ended and its new session answered initialize with \
                     protocol version {:?}, which this client does not speak; connect again",
                    init.protocol_version
                ));
            }
        }
        let context = self.context().lifecycle(Lifecycle_::Initialized);
        let message = Message::Notification(Notification::new(Initialized::METHOD, None));
        self.transport
            .send_with(&message, &context)
            .await
            .map_err(|e| {
                format!(
                    "the server's session ended and sending notifications/initialized to its \
                     new session failed: {e}; connect again"
                )
            })
    }
}
