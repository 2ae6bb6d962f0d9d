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

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use mcp_jsonrpc::Id;
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::config::ServerNotification;
use crate::error::SessionError;
use crate::queue;

pub use mcp_protocol::subscriptions::SubscriptionFilter;

/// What the reader task hands a subscription.
#[derive(Debug)]
pub(crate) enum SubscriptionEvent {
    Acknowledged(SubscriptionFilter),
    Notification(ServerNotification),
    /// The listen request ended: `Ok` when the server closed it gracefully.
    Ended(Result<(), SessionError>),
}

/// The open subscriptions of a session, by the id of their listen request;
/// a subscription of a session before 2026-07-28 (no listen request: the
/// server sends its notifications untagged) also keeps the filter its
/// notifications are matched against.
#[derive(Debug, Default)]
pub(crate) struct Subscribers(Mutex<HashMap<Id, Entry>>);

#[derive(Debug)]
pub(crate) struct Entry {
    tx: queue::Sender<SubscriptionEvent>,
    /// `Some` for a local subscription (before 2026-07-28).
    local: Option<SubscriptionFilter>,
}

impl Subscribers {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Id, Entry>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a local subscription: untagged notifications matching `filter`
    /// reach it ([`route_untagged`](Self::route_untagged)).
    pub(crate) fn insert_local(
        &self,
        id: Id,
        filter: SubscriptionFilter,
        dropped: Arc<AtomicU64>,
    ) -> queue::Receiver<SubscriptionEvent> {
        let (tx, rx) = queue::bounded(queue::CAPACITY, dropped);
        self.map().insert(
            id,
            Entry {
                tx,
                local: Some(filter),
            },
        );
        rx
    }

    /// Ends every local subscription (the connection closed) with the
    /// error `why` gives.
    pub(crate) fn end_local(&self, why: impl Fn() -> SessionError) {
        let mut map = self.map();
        let local: Vec<Id> = map
            .iter()
            .filter(|(_, e)| e.local.is_some())
            .map(|(id, _)| id.clone())
            .collect();
        for id in local {
            if let Some(entry) = map.remove(&id) {
                let _ = entry.tx.send_always(SubscriptionEvent::Ended(Err(why())));
            }
        }
    }

    /// Hands an untagged notification to every local subscription whose
    /// filter asks for it.
    pub(crate) fn route_untagged(&self, event: &ServerNotification) {
        for entry in self.map().values() {
            if let Some(filter) = &entry.local
                && wants(filter, event)
            {
                entry
                    .tx
                    .send(SubscriptionEvent::Notification(event.clone()));
            }
        }
    }

    /// Opens the queue of subscription `id`; notifications it cannot keep up
    /// with are dropped oldest first and counted in `dropped`.
    pub(crate) fn insert(
        &self,
        id: Id,
        dropped: Arc<AtomicU64>,
    ) -> queue::Receiver<SubscriptionEvent> {
        let (tx, rx) = queue::bounded(queue::CAPACITY, dropped);
        self.map().insert(id, Entry { tx, local: None });
        rx
    }

    /// Ends a subscription with this outcome.
    pub(crate) fn end(&self, id: &Id, outcome: Result<(), SessionError>) {
        if let Some(entry) = self.map().remove(id) {
            let _ = entry.tx.send_always(SubscriptionEvent::Ended(outcome));
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
            Some(entry) => match event {
                SubscriptionEvent::Notification(_) => entry.tx.send(event),
                other => entry.tx.send_always(other),
            },
            None => false,
        }
    }
}

/// Whether a filter asks for this notification (a resource update matches
/// a subscribed URI, or one under it).
fn wants(filter: &SubscriptionFilter, event: &ServerNotification) -> bool {
    let on = |flag: Option<bool>| flag == Some(true);
    match event {
        ServerNotification::ToolsListChanged => on(filter.tools_list_changed),
        ServerNotification::ResourcesListChanged => on(filter.resources_list_changed),
        ServerNotification::PromptsListChanged => on(filter.prompts_list_changed),
        ServerNotification::ResourceUpdated(u) => filter
            .resource_subscriptions
            .iter()
            .flatten()
            .any(|s| u.uri == *s || u.uri.starts_with(&format!("{}/", s.trim_end_matches('/')))),
        _ => false,
    }
}

/// The subscription id a notification's params carry, if any.
pub(crate) fn subscription_id(params: Option<&Value>) -> Option<Id> {
    let id = mcp_protocol::meta::get(params?, mcp_protocol::meta::SUBSCRIPTION_ID)?;
    serde_json::from_value(id.clone()).ok()
}

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
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Dropping the request's future sends the cancellation.
        self.task.abort();
        self.subscribers.map().remove(&self.id);
        if let Some(f) = self.on_drop.take() {
            f();
        }
    }
}
