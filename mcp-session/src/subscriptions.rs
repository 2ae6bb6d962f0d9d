//! `subscriptions/listen` (protocol revision 2026-07-28): a long-lived
//! request whose stream carries the change notifications the client asked for.
//! On a session of an earlier revision the same call gives the same
//! [`Subscription`]: `resources/subscribe` for each resource (where the
//! server declares `resources.subscribe`), and the list changes the server
//! declares it sends unasked; the acknowledgment says which of the asked-for
//! ones those are. One API over every revision.
//!
//! [`Session::listen`](crate::Session::listen) opens one and waits for the
//! server's `notifications/subscriptions/acknowledged`; the [`Subscription`]
//! then yields the notifications that carry its id in
//! `_meta["io.modelcontextprotocol/subscriptionId"]`. They also reach the
//! session's own notification listener, and `tools/list_changed` marks the
//! tool catalog stale as always. Dropping or closing the subscription cancels
//! the request (on HTTP by closing its stream, on stdio with
//! `notifications/cancelled`).
//!
//! A [`Subscription`] is a [`Stream`] of `Result<ServerNotification,
//! SessionError>` (and has an inherent [`next`](Subscription::next) for
//! code without a stream crate): it ends (`None`) when the server ends it
//! gracefully, after yielding the error once when it ends otherwise. Like
//! [`Notifications`](crate::Notifications) it holds at most 256
//! notifications and drops the oldest, counted
//! ([`dropped`](Subscription::dropped)), when its consumer falls behind.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;

use mcp_stack_jsonrpc::Id;
use tokio::task::JoinHandle;

use mcp_stack_protocol::Listening;
use mcp_stack_protocol::request::{
    Request, ResourcesSubscribe, ResourcesUnsubscribe, SubscriptionsListen,
};
use mcp_stack_protocol::subscriptions::SubscriptionParams;
use mcp_stack_protocol::types::{Extra, ResourceParams};

use crate::config::ServerNotification;
use crate::conn::{Inner, require};
use crate::error::{SessionError, TimeoutKind};
use crate::queue;
use crate::subscribers::{Subscribers, SubscriptionEvent};

pub use mcp_stack_protocol::subscriptions::SubscriptionFilter;

/// An open subscription: a `subscriptions/listen` stream (2026-07-28), or
/// before it a local one over `resources/subscribe` and the notifications
/// the server sends unasked. Dropping it cancels the request (or
/// unsubscribes).
pub struct Subscription {
    pub(crate) id: Id,
    pub(crate) acknowledged: SubscriptionFilter,
    pub(crate) events: queue::Receiver<SubscriptionEvent>,
    pub(crate) task: JoinHandle<()>,
    pub(crate) subscribers: Arc<Subscribers>,
    pub(crate) ended: bool,
    /// Run when dropped (a local subscription's `resources/unsubscribe`).
    pub(crate) on_drop: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("acknowledged", &self.acknowledged)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Subscription {
    /// The subscription's id (the id of its listen request).
    pub fn id(&self) -> &Id {
        &self.id
    }

    /// What the server agreed to send; types it does not support are left out.
    pub fn acknowledged(&self) -> &SubscriptionFilter {
        &self.acknowledged
    }

    /// The next notification. `Ok(None)` when the server ended the
    /// subscription gracefully (a result to the listen request); an error
    /// when it ended otherwise (the connection closed, an error answer).
    pub async fn next(&mut self) -> Result<Option<ServerNotification>, SessionError> {
        if self.ended {
            return Ok(None);
        }
        loop {
            match self.events.recv().await {
                Some(SubscriptionEvent::Notification(n)) => return Ok(Some(n)),
                Some(SubscriptionEvent::Acknowledged(_)) => continue,
                Some(SubscriptionEvent::Ended(outcome)) => {
                    self.ended = true;
                    return outcome.map(|()| None);
                }
                None => {
                    self.ended = true;
                    return Err(SessionError::Closed);
                }
            }
        }
    }

    /// Cancels the subscription.
    pub fn close(self) {
        drop(self);
    }

    /// How many notifications this subscription dropped (oldest first)
    /// because it fell 256 behind.
    pub fn dropped(&self) -> u64 {
        self.events.lost()
    }
}

impl Stream for Subscription {
    type Item = Result<ServerNotification, SessionError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        loop {
            let event = match this.events.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(event) => event,
            };
            match event {
                Some(SubscriptionEvent::Notification(n)) => return Poll::Ready(Some(Ok(n))),
                Some(SubscriptionEvent::Acknowledged(_)) => continue,
                Some(SubscriptionEvent::Ended(outcome)) => {
                    this.ended = true;
                    return Poll::Ready(outcome.err().map(Err));
                }
                None => {
                    this.ended = true;
                    return Poll::Ready(Some(Err(SessionError::Closed)));
                }
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Dropping the request's future sends the cancellation.
        self.task.abort();
        self.subscribers.remove(&self.id);
        if let Some(f) = self.on_drop.take() {
            f();
        }
    }
}

/// Opens a subscription (see [`Session::listen`](crate::Session::listen)):
/// a `subscriptions/listen` stream where the revision listens so, else a
/// local one.
pub(crate) async fn listen(
    core: &Arc<Inner>,
    filter: SubscriptionFilter,
) -> Result<Subscription, SessionError> {
    if core.revision.listening() == Listening::Subscribe {
        return listen_locally(core, filter).await;
    }
    let method = SubscriptionsListen::METHOD;
    let params = SubscriptionParams {
        notifications: filter,
        meta: None,
        extra: Extra::new(),
    };
    let raw = core.params(method, &params)?;
    let id = core.next_id();
    let subscribers = Arc::clone(&core.shared.subscribers);
    let events = subscribers.insert(id.id(), Arc::clone(&core.shared.dropped));
    let inner = Arc::clone(core);
    let request_id = id;
    let task = tokio::spawn(async move {
        // The stream lasts until either side ends it: no deadline.
        let forever = Duration::from_secs(100 * 365 * 24 * 3600);
        let context = inner.context();
        let outcome = inner
            .request_raw(request_id, method, Some(raw), forever, None, &context)
            .await
            .map(drop);
        inner.shared.subscribers.end(&request_id.id(), outcome);
    });
    // Built first: dropping it on a failure below cancels the request.
    let mut subscription = Subscription {
        id: id.id(),
        acknowledged: SubscriptionFilter::default(),
        events,
        task,
        subscribers,
        ended: false,
        on_drop: None,
    };
    let timeout = core.config.request_timeout;
    let acknowledged = tokio::time::timeout(timeout, async {
        loop {
            match subscription.events.recv().await {
                Some(SubscriptionEvent::Acknowledged(filter)) => return Ok(filter),
                // The spec puts the acknowledgment first; tolerate one late.
                Some(SubscriptionEvent::Notification(_)) => continue,
                Some(SubscriptionEvent::Ended(Ok(()))) => {
                    return Err(SessionError::InvalidResponse {
                        method: method.into(),
                        reason: "the server ended the subscription before acknowledging it".into(),
                    });
                }
                Some(SubscriptionEvent::Ended(Err(e))) => return Err(e),
                None => return Err(SessionError::Closed),
            }
        }
    })
    .await;
    match acknowledged {
        Ok(Ok(filter)) => {
            subscription.acknowledged = filter;
            Ok(subscription)
        }
        Ok(Err(e)) => Err(e),
        Err(_) => Err(SessionError::timeout(
            format!("{method} (waiting for its acknowledgment)"),
            TimeoutKind::Request,
            timeout,
            timeout,
        )),
    }
}

/// [`listen`] before 2026-07-28: `resources/subscribe` for each resource
/// the server can take, and the list changes it declares.
async fn listen_locally(
    core: &Arc<Inner>,
    filter: SubscriptionFilter,
) -> Result<Subscription, SessionError> {
    let caps = &core.init.capabilities;
    let asked = |flag: Option<bool>| flag == Some(true);
    let mut granted = SubscriptionFilter::new();
    if asked(filter.tools_list_changed)
        && caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true)
    {
        granted = granted.tools_list_changed();
    }
    if asked(filter.resources_list_changed)
        && caps.resources.as_ref().and_then(|r| r.list_changed) == Some(true)
    {
        granted = granted.resources_list_changed();
    }
    if asked(filter.prompts_list_changed)
        && caps.prompts.as_ref().and_then(|p| p.list_changed) == Some(true)
    {
        granted = granted.prompts_list_changed();
    }
    let can_subscribe = caps.resources.as_ref().and_then(|r| r.subscribe) == Some(true);
    let mut subscribed = Vec::new();
    for uri in filter.resource_subscriptions.iter().flatten() {
        if !can_subscribe {
            break;
        }
        resource_subscription::<ResourcesSubscribe>(core, uri).await?;
        subscribed.push(uri.clone());
        granted = granted.resource(uri.clone());
    }
    let id = Id::from(format!("local-subscription-{}", core.next_id()));
    let events = core.shared.subscribers.insert_local(
        id.clone(),
        granted.clone(),
        Arc::clone(&core.shared.dropped),
    );
    // Unsubscribing on drop needs the connection; the task holds it.
    let inner = Arc::clone(core);
    let on_drop: Box<dyn FnOnce() + Send + Sync> = Box::new(move || {
        if subscribed.is_empty() {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                for uri in subscribed {
                    let _ = resource_subscription::<ResourcesUnsubscribe>(&inner, &uri).await;
                }
            });
        }
    });
    Ok(Subscription {
        id,
        acknowledged: granted,
        events,
        task: tokio::spawn(async {}),
        subscribers: Arc::clone(&core.shared.subscribers),
        ended: false,
        on_drop: Some(on_drop),
    })
}

/// `resources/subscribe` or `resources/unsubscribe` of `uri` (revisions
/// before 2026-07-28, whose servers declare `resources.subscribe`).
pub(crate) async fn resource_subscription<R: Request<Params = ResourceParams>>(
    core: &Inner,
    uri: &str,
) -> Result<(), SessionError> {
    let subscribe = core
        .init
        .capabilities
        .resources
        .as_ref()
        .and_then(|r| r.subscribe)
        == Some(true);
    require(subscribe, "resources.subscribe")?;
    if core.revision.listening() == Listening::Stream {
        return Err(SessionError::NotSupported(
            "resources/subscribe on 2026-07-28 (use listen with a resource filter)",
        ));
    }
    let timeout = core.config.request_timeout;
    core.send_acknowledged::<R>(&ResourceParams::new(uri), timeout, &core.named_context(uri))
        .await
}
