//! The reader task: everything that arrives from the server, dispatched —
//! answers to our requests, the server's requests, notifications, noise.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;

use mcp_stack_jsonrpc::{
    ErrorObject, ErrorResponse, Id, Message, Notification, Request, Response, codes,
};
use mcp_stack_transport::{InvalidFrame, Received, SendContext, Transport, TransportError};
use serde_json::json;
use tokio::task::{AbortHandle, JoinSet};

use mcp_stack_protocol::ProtocolVersion;
use mcp_stack_protocol::notification::{Notification as _, SubscriptionsAcknowledged};
use mcp_stack_protocol::request::{Ping, Request as _};
use mcp_stack_protocol::subscriptions::subscription_of;
use mcp_stack_protocol::types::LoggingMessageParams;

use crate::config::{ClientHandler, NotificationListener, ServerNotification};
use crate::error::SessionError;
use crate::pending::{Delivery, Outcome, PendingTable};
use crate::subscribers::{Subscribers, SubscriptionEvent, SubscriptionFilter};

/// Why the connection closed, kept for every request that asks afterwards.
#[derive(Debug, Clone)]
pub(crate) struct ClosedInfo {
    pub(crate) reason: String,
    /// How the server process ended (stdio).
    pub(crate) exit: Option<mcp_stack_transport::ExitInfo>,
    /// Its last stderr lines (stdio).
    pub(crate) stderr_tail: Vec<String>,
}

impl ClosedInfo {
    /// Closed by this client.
    pub(crate) fn by_client() -> Self {
        ClosedInfo {
            reason: "closed by the client".into(),
            exit: None,
            stderr_tail: Vec::new(),
        }
    }
}

/// The frames that were not messages: how many, and the last few, described.
#[derive(Debug, Default)]
pub(crate) struct InvalidFrames {
    pub(crate) count: u64,
    pub(crate) last: std::collections::VecDeque<String>,
}

impl InvalidFrames {
    /// How many descriptions are kept.
    const KEEP: usize = 5;

    fn note(&mut self, description: String) {
        self.count += 1;
        if self.last.len() == Self::KEEP {
            self.last.pop_front();
        }
        self.last.push_back(description);
    }
}

/// State the reader task shares with the session handle.
pub(crate) struct Shared {
    pub(crate) server_name: String,
    pub(crate) pending: Mutex<PendingTable>,
    /// Why the connection closed, once it has.
    pub(crate) closed_error: Mutex<Option<ClosedInfo>>,
    pub(crate) invalid: Mutex<InvalidFrames>,
    /// How many times the tools list was said to change (`list_changed`,
    /// or a refresh asked for): a cached catalog fetched at an older count
    /// is stale.
    pub(crate) catalog_changes: AtomicU64,
    /// The lists beside tools that the server said changed.
    pub(crate) stale: crate::changes::Staleness,
    pub(crate) handler: Option<Arc<dyn ClientHandler>>,
    pub(crate) on_notification: Option<NotificationListener>,
    pub(crate) notifications_seen: AtomicU64,
    pub(crate) subscribers: Arc<Subscribers>,
    /// The revision in use, once the lifecycle has settled it.
    pub(crate) revision: std::sync::OnceLock<ProtocolVersion>,
    /// The server's requests being answered.
    pub(crate) server_requests: ServerRequests,
    /// Notifications dropped because their consumer fell behind (progress of
    /// a call, a subscription's), oldest first.
    pub(crate) dropped: Arc<AtomicU64>,
    /// Asks the reader to move its deadline timer (see `pending.rs`).
    pub(crate) rearm: Rearm,
    /// Running the handshake again when the server's session ends (see
    /// `rehandshake.rs`).
    pub(crate) renewal: crate::renewal::Renewal,
}

/// A request's deadline is earlier than the reader's timer: the reader sets
/// its timer to the table's `armed` at its next poll, and is woken for it
/// (its waker is kept in the table).
#[derive(Debug, Default)]
pub(crate) struct Rearm(AtomicBool);

/// How many requests from the server the session answers at once; more are
/// refused at once (a flooding server cannot make the client spawn without
/// limit).
pub(crate) const MAX_SERVER_REQUESTS: usize = 32;

/// The server's requests the session is answering: each a tracked task, at
/// most [`MAX_SERVER_REQUESTS`] at once, aborted when the server cancels it
/// and all aborted when the session closes or is dropped (a handler that
/// hangs cannot keep the transport, or a stdio child, alive).
#[derive(Debug, Default)]
pub(crate) struct ServerRequests {
    running: Mutex<Running>,
    /// Requests refused because the bound was reached.
    pub(crate) refused: AtomicU64,
}

#[derive(Debug, Default)]
struct Running {
    tasks: JoinSet<()>,
    by_id: HashMap<Id, AbortHandle>,
}

impl ServerRequests {
    /// Runs `answer` for request `id`, unless the bound is reached (then
    /// `false`, and nothing runs).
    fn start(&self, id: Id, answer: impl Future<Output = ()> + Send + 'static) -> bool {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        while running.tasks.try_join_next().is_some() {}
        running.by_id.retain(|_, task| !task.is_finished());
        if running.tasks.len() >= MAX_SERVER_REQUESTS {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        let task = running.tasks.spawn(answer);
        running.by_id.insert(id, task);
        true
    }

    /// The server cancelled request `id`: its handler stops, and no answer
    /// is sent (as the spec asks of the receiver of a cancellation).
    fn cancel(&self, id: &Id) {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(task) = running.by_id.remove(id) {
            task.abort();
        }
    }

    /// Stops every handler.
    pub(crate) fn abort_all(&self) {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        running.by_id.clear();
        running.tasks.abort_all();
    }

    /// How many are being answered now.
    pub(crate) fn len(&self) -> usize {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        while running.tasks.try_join_next().is_some() {}
        running.tasks.len()
    }
}

impl Shared {
    /// What the transport is told about the messages the session sends.
    pub(crate) fn context(&self) -> SendContext {
        match self.revision.get() {
            Some(v) => SendContext::new().revision(*v),
            None => SendContext::new(),
        }
    }

    /// Called after the table said so ([`crate::pending::Inserted::rearm`]):
    /// rare, once after an idle spell or for a shorter timeout.
    pub(crate) fn ask_rearm(&self) {
        self.rearm.0.store(true, Ordering::Release);
        self.lock_pending().wake_reader();
    }

    pub(crate) fn lock_pending(&self) -> std::sync::MutexGuard<'_, PendingTable> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn closed_error(&self) -> SessionError {
        let info = self
            .closed_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        match info {
            Some(ClosedInfo {
                reason,
                exit,
                stderr_tail,
            }) => SessionError::Transport(TransportError::Closed {
                reason,
                exit,
                stderr_tail,
            }),
            None => SessionError::Closed,
        }
    }
}

/// The reader's deadline timer: boxed, and present from a request until it
/// fires with none waiting, so an idle connection keeps three words for it.
#[derive(Default)]
struct Timer {
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The waker the table holds for `Rearm` (the task's, which does not
    /// change).
    registered: Option<Waker>,
}

impl Timer {
    fn set(&mut self, at: Option<tokio::time::Instant>) {
        match (self.sleep.as_mut(), at) {
            (Some(sleep), Some(at)) => {
                if sleep.deadline() != at {
                    sleep.as_mut().reset(at);
                }
            }
            (None, Some(at)) => self.sleep = Some(Box::pin(tokio::time::sleep_until(at))),
            (_, None) => self.sleep = None,
        }
    }

    /// Moves the timer when asked, and ends the requests whose deadline has
    /// passed when it fires; registers the task's waker for both.
    fn poll(&mut self, cx: &mut std::task::Context<'_>, shared: &Shared) {
        if !self
            .registered
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            let waker = cx.waker().clone();
            shared.lock_pending().set_reader(waker.clone());
            self.registered = Some(waker);
        }
        if shared.rearm.0.load(Ordering::Relaxed) && shared.rearm.0.swap(false, Ordering::Acquire) {
            let at = shared.lock_pending().armed();
            self.set(at);
        }
        while let Some(sleep) = self.sleep.as_mut() {
            if sleep.as_mut().poll(cx).is_pending() {
                break;
            }
            let at = shared.lock_pending().expire(tokio::time::Instant::now());
            self.set(at);
        }
    }
}

/// Ends the waiting requests when the reader stops while the connection is
/// still open: a listener it calls panicked, or the task was aborted. Their
/// deadlines are the reader's to keep; without this they would wait for
/// ever.
struct Stopped<'a>(&'a Shared);

impl Drop for Stopped<'_> {
    fn drop(&mut self) {
        if self.0.lock_pending().is_closed() {
            return;
        }
        self.0
            .closed_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert_with(|| ClosedInfo {
                reason: "the session's reader task stopped: it panicked (see the panic \
                         message). A listener or handler it called may have panicked, or the \
                         tokio runtime has no timers (build it with `enable_all()` or \
                         `enable_time()`); reconnect"
                    .into(),
                exit: None,
                stderr_tail: Vec::new(),
            });
        self.0.lock_pending().close();
        self.0.subscribers.end_local(|| self.0.closed_error());
    }
}

/// Awaits `future` with the deadline timer running beside it.
async fn timed<F: Future + Unpin>(mut future: F, timer: &mut Timer, shared: &Shared) -> F::Output {
    std::future::poll_fn(|cx| {
        timer.poll(cx, shared);
        Pin::new(&mut future).poll(cx)
    })
    .await
}

/// Reads from the transport until it closes, dispatching each message, and
/// runs the session's deadline timer.
pub(crate) async fn read_loop(transport: Arc<dyn Transport>, shared: Arc<Shared>) {
    let _stopped = Stopped(&shared);
    let mut timer = Timer::default();
    loop {
        // Nothing but the pending receive and the timer live across an
        // await here: the reader task is what every idle connection keeps,
        // so its state is kept to a few words (a refusal, rare, is sent
        // from a box). The receive is awaited in the scrutinee, so that
        // neither it nor what it returns is kept across the refusal's await.
        let refusal = match timed(transport.recv(), &mut timer, &shared).await {
            Ok(Received::Message(m)) => dispatch(&transport, &shared, m),
            Ok(Received::Invalid(frame)) => {
                note_invalid(&shared, &frame);
                // An answer over the size limit whose first bytes name its
                // request: that request fails now, not at its timeout.
                if let InvalidFrame::Oversized(o) = &frame
                    && let Some(id) = &o.id
                {
                    deliver(&shared, id, Outcome::TooLarge(o.limit));
                }
                None
            }
            Ok(Received::Failed(failure)) => {
                deliver(&shared, &failure.id, Outcome::Failed(failure.error));
                None
            }
            Ok(Received::SessionExpired { reason }) => {
                tracing::info!(server = %shared.server_name, "the server's session ended: {reason}");
                shared.renewal.expired();
                None
            }
            Ok(_) => None,
            Err(e) => {
                let info = match e {
                    TransportError::Closed {
                        reason,
                        exit,
                        stderr_tail,
                    } => ClosedInfo {
                        reason,
                        exit,
                        stderr_tail,
                    },
                    other => {
                        let process = transport.process();
                        ClosedInfo {
                            reason: other.to_string(),
                            exit: process.and_then(|p| p.exit_info()),
                            stderr_tail: process.map(|p| p.stderr_tail()).unwrap_or_default(),
                        }
                    }
                };
                tracing::debug!(server = %shared.server_name, reason = %info.reason, "connection closed");
                // A reason given first (a failed re-handshake's) stays.
                shared
                    .closed_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert(info);
                shared.lock_pending().close();
                // Local subscriptions have no request to fail: end them.
                shared.subscribers.end_local(|| shared.closed_error());
                // Answers could not be delivered any more.
                shared.server_requests.abort_all();
                return;
            }
        };
        if let Some(refusal) = refusal {
            // Inline: a flooding server waits for its refusals. The timer
            // runs meanwhile: a server that floods and does not read must
            // not hold back the timeouts of the requests waiting on it.
            timed(
                Box::pin(refuse(&transport, &shared, refusal)),
                &mut timer,
                &shared,
            )
            .await;
        }
    }
}

pub(crate) fn note_invalid(shared: &Shared, frame: &InvalidFrame) {
    tracing::warn!(server = %shared.server_name, "ignored a frame that is not JSON-RPC: {frame}");
    shared
        .invalid
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .note(frame.to_string());
}

/// Delivers an answer, handles a notification, or starts answering a
/// server request. Synchronous, so the reader's state stays small; a
/// request refused because too many are being answered is handed back, for
/// the reader to [`refuse`].
pub(crate) fn dispatch(
    transport: &Arc<dyn Transport>,
    shared: &Arc<Shared>,
    message: Message,
) -> Option<Message> {
    match message {
        Message::Response(Response { id, result }) => {
            deliver(shared, &id, Outcome::Result(result));
        }
        Message::Error(ErrorResponse {
            id: Some(id),
            error,
        }) => {
            deliver(shared, &id, Outcome::Error(error));
        }
        Message::Error(ErrorResponse { id: None, error }) => {
            tracing::warn!(server = %shared.server_name, "error response without an id: {error}");
        }
        Message::Request(request) => {
            let id = request.id.clone();
            let (task_transport, task_shared) = (Arc::clone(transport), Arc::clone(shared));
            // A handler may take its time (elicitation asks a person): the
            // reader must not wait for it.
            let answering = async move {
                let answer = answer_request(&task_shared, &request).await;
                let context = task_shared.context();
                if let Err(e) = task_transport.send_with(&answer, &context).await {
                    tracing::debug!(server = %task_shared.server_name, "could not answer {}: {e}", request.method);
                }
            };
            if !shared.server_requests.start(id.clone(), answering) {
                tracing::warn!(server = %shared.server_name, "refused a server request: {MAX_SERVER_REQUESTS} are being answered already");
                let busy = ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!(
                        "the client is already answering {MAX_SERVER_REQUESTS} requests from this \
                         server; send this one again later"
                    ),
                );
                return Some(Message::Error(ErrorResponse::new(Some(id), busy)));
            }
        }
        Message::Notification(n) => on_notification(shared, n),
        _ => {}
    }
    None
}

/// Sends the refusal of a server request.
pub(crate) async fn refuse(transport: &Arc<dyn Transport>, shared: &Shared, refusal: Message) {
    if let Err(e) = transport.send_with(&refusal, &shared.context()).await {
        tracing::debug!(server = %shared.server_name, "could not refuse a request: {e}");
    }
}

pub(crate) fn deliver(shared: &Shared, id: &Id, outcome: Outcome) {
    if shared.lock_pending().complete(id, outcome) == Delivery::Unknown {
        tracing::debug!(server = %shared.server_name, %id, "dropped a response to no request in flight");
    }
}

pub(crate) async fn answer_request(shared: &Shared, request: &Request) -> Message {
    let id = request.id.clone();
    let outcome = if request.method == Ping::METHOD {
        Some(Ok(json!({})))
    } else if let Some(handler) = &shared.handler {
        handler
            .handle(
                &request.method,
                request.params.as_ref().and_then(|p| p.raw_value().ok()),
            )
            .await
    } else {
        None
    };
    let result = match outcome {
        Some(Ok(value)) => mcp_stack_jsonrpc::to_raw(&value).map_err(|e| {
            ErrorObject::new(codes::INTERNAL_ERROR, format!("cannot encode answer: {e}"))
        }),
        Some(Err(e)) => Err(e),
        None => Err(ErrorObject::new(
            codes::METHOD_NOT_FOUND,
            format!("this client does not handle {}", request.method),
        )),
    };
    match result {
        Ok(raw) => Message::Response(Response::new(id, raw)),
        Err(e) => Message::Error(ErrorResponse::new(Some(id), e)),
    }
}

pub(crate) fn on_notification(shared: &Shared, n: Notification) {
    shared.notifications_seen.fetch_add(1, Ordering::Relaxed);
    // Borrowed as serde_json's `RawValue` for the method table's reader.
    let params = n.params.as_ref().and_then(|p| p.raw_value().ok());
    // Notifications of a `subscriptions/listen` stream name their
    // subscription in `_meta`.
    let subscription = if shared.subscribers.is_empty() {
        None
    } else {
        params.and_then(subscription_of)
    };
    let event = match ServerNotification::parse(&n.method, params) {
        Ok(event) => event,
        Err(e) => {
            tracing::debug!(server = %shared.server_name, "{e}");
            // An acknowledgment opens its stream whatever else it says.
            if let Some(id) = &subscription
                && n.method == SubscriptionsAcknowledged::METHOD
            {
                let filter = SubscriptionFilter::default();
                shared
                    .subscribers
                    .route(id, SubscriptionEvent::Acknowledged(filter));
            }
            return;
        }
    };
    let event = match event {
        ServerNotification::SubscriptionsAcknowledged(ack) if subscription.is_some() => {
            if let Some(id) = &subscription {
                let filter = ack.notifications;
                shared
                    .subscribers
                    .route(id, SubscriptionEvent::Acknowledged(filter));
            }
            return;
        }
        ServerNotification::Progress(p) => {
            shared
                .lock_pending()
                .progress(p.clone(), tokio::time::Instant::now());
            ServerNotification::Progress(p)
        }
        ServerNotification::ToolsListChanged => {
            shared.catalog_changes.fetch_add(1, Ordering::AcqRel);
            ServerNotification::ToolsListChanged
        }
        ServerNotification::ResourcesListChanged => {
            shared.stale.resources_changed();
            ServerNotification::ResourcesListChanged
        }
        ServerNotification::PromptsListChanged => {
            shared.stale.prompts.store(true, Ordering::Release);
            ServerNotification::PromptsListChanged
        }
        ServerNotification::Log(m) => {
            log_server_message(&shared.server_name, &m);
            ServerNotification::Log(m)
        }
        ServerNotification::Cancelled(c) => {
            shared.server_requests.cancel(&c.request_id);
            ServerNotification::Cancelled(c)
        }
        // Listeners hear 2026-07-28's task notifications as 2025-11-25's.
        ServerNotification::TaskDetail(detail) => ServerNotification::TaskStatus(detail.summary()),
        other => other,
    };
    if let Some(listener) = &shared.on_notification {
        listener(&event);
    }
    shared.subscribers.broadcast(&event);
    if let Some(id) = &subscription {
        shared
            .subscribers
            .route(id, SubscriptionEvent::Notification(event));
    } else if !shared.subscribers.is_empty() {
        // Before 2026-07-28: local subscriptions match untagged ones.
        shared.subscribers.route_untagged(&event);
    }
}

pub(crate) fn log_server_message(server: &str, m: &LoggingMessageParams) {
    let logger = m.logger.as_deref().unwrap_or("");
    match m.level.as_str() {
        "debug" => tracing::debug!(server, logger, data = %m.data, "server log"),
        "info" | "notice" => tracing::info!(server, logger, data = %m.data, "server log"),
        "warning" => tracing::warn!(server, logger, data = %m.data, "server log"),
        _ => tracing::error!(server, logger, level = %m.level, data = %m.data, "server log"),
    }
}
