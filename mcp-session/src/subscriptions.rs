//! `subscriptions/listen` (protocol revision 2026-07-28): a long-lived
//! request whose stream carries the change notifications the client asked for.
//!
//! [`Session::listen`](crate::Session::listen) opens one and waits for the
//! server's `notifications/subscriptions/acknowledged`; the [`Subscription`]
//! then yields the notifications that carry its id in
//! `_meta["io.modelcontextprotocol/subscriptionId"]`. They also reach the
//! session's own notification listener, and `tools/list_changed` marks the
//! tool catalog stale as always. Dropping or closing the subscription cancels
//! the request (on HTTP by closing its stream, on stdio with
//! `notifications/cancelled`).

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use mcp_jsonrpc::Id;
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::config::ServerNotification;
use crate::error::SessionError;
use crate::queue;

pub use mcp_protocol::modern::SubscriptionFilter;

/// What the reader task hands a subscription.
#[derive(Debug)]
pub(crate) enum SubscriptionEvent {
    Acknowledged(SubscriptionFilter),
    Notification(ServerNotification),
    /// The listen request ended: `Ok` when the server closed it gracefully.
    Ended(Result<(), SessionError>),
}

/// The open subscriptions of a session, by the id of their listen request.
#[derive(Debug, Default)]
pub(crate) struct Subscribers(Mutex<HashMap<Id, queue::Sender<SubscriptionEvent>>>);

impl Subscribers {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Id, queue::Sender<SubscriptionEvent>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens the queue of subscription `id`; notifications it cannot keep up
    /// with are dropped oldest first and counted in `dropped`.
    pub(crate) fn insert(
        &self,
        id: Id,
        dropped: Arc<AtomicU64>,
    ) -> queue::Receiver<SubscriptionEvent> {
        let (tx, rx) = queue::bounded(queue::CAPACITY, dropped);
        self.map().insert(id, tx);
        rx
    }

    /// Ends a subscription with this outcome.
    pub(crate) fn end(&self, id: &Id, outcome: Result<(), SessionError>) {
        if let Some(tx) = self.map().remove(id) {
            let _ = tx.send_always(SubscriptionEvent::Ended(outcome));
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.map().is_empty()
    }

    /// Hands an event to the subscription with this id. `false` when no open
    /// subscription has it.
    pub(crate) fn route(&self, id: &Id, event: SubscriptionEvent) -> bool {
        match self.map().get(id) {
            // Notifications may be dropped for newer ones; the
            // acknowledgment never is.
            Some(tx) => match event {
                SubscriptionEvent::Notification(_) => tx.send(event),
                other => tx.send_always(other),
            },
            None => false,
        }
    }
}

/// The subscription id a notification's params carry, if any.
pub(crate) fn subscription_id(params: Option<&Value>) -> Option<Id> {
    let id = mcp_protocol::meta::get(params?, mcp_protocol::meta::SUBSCRIPTION_ID)?;
    serde_json::from_value(id.clone()).ok()
}

/// An open `subscriptions/listen` stream. Dropping it cancels the request.
#[derive(Debug)]
pub struct Subscription {
    pub(crate) id: Id,
    pub(crate) acknowledged: SubscriptionFilter,
    pub(crate) events: queue::Receiver<SubscriptionEvent>,
    pub(crate) task: JoinHandle<()>,
    pub(crate) subscribers: Arc<Subscribers>,
    pub(crate) ended: bool,
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
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Dropping the request's future sends the cancellation.
        self.task.abort();
        self.subscribers.map().remove(&self.id);
    }
}
