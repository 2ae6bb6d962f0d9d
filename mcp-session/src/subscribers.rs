//! The subscriptions' side of the reader: a registry of sinks the core
//! owns. The reader hands each notification that names a subscription (and,
//! before 2026-07-28, each untagged one a local subscription's filter asks
//! for) to its queue here; the subscriptions feature (`subscriptions.rs`)
//! opens and closes the entries. The session's notification streams
//! (`notifications.rs`) are taps here too: each gets every notification.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mcp_stack_jsonrpc::Id;
pub(crate) use mcp_stack_protocol::subscriptions::SubscriptionFilter;

use crate::config::ServerNotification;
use crate::error::SessionError;
use crate::queue;

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
pub(crate) struct Subscribers {
    entries: Mutex<HashMap<Id, Entry>>,
    /// The notification streams, by key: each gets every notification.
    taps: Mutex<Vec<(u64, queue::Sender<ServerNotification>)>>,
    /// How many taps are open (read without the lock on every notification).
    tap_count: AtomicUsize,
    next_tap: AtomicU64,
}

#[derive(Debug)]
pub(crate) struct Entry {
    tx: queue::Sender<SubscriptionEvent>,
    /// `Some` for a local subscription (before 2026-07-28).
    local: Option<SubscriptionFilter>,
}

impl Subscribers {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Id, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn taps(&self) -> std::sync::MutexGuard<'_, Vec<(u64, queue::Sender<ServerNotification>)>> {
        self.taps.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a tap: every notification from now on is queued for it (the
    /// oldest dropped and counted when it falls behind). The key closes it.
    pub(crate) fn tap(
        &self,
        dropped: Arc<AtomicU64>,
    ) -> (u64, queue::Receiver<ServerNotification>) {
        let (tx, rx) = queue::bounded(queue::CAPACITY, dropped);
        let key = self.next_tap.fetch_add(1, Ordering::Relaxed);
        let mut taps = self.taps();
        taps.push((key, tx));
        self.tap_count.store(taps.len(), Ordering::Release);
        (key, rx)
    }

    /// Closes a tap (its stream was dropped).
    pub(crate) fn untap(&self, key: u64) {
        let mut taps = self.taps();
        taps.retain(|(k, _)| *k != key);
        self.tap_count.store(taps.len(), Ordering::Release);
    }

    /// Ends every tap (the connection closed): their streams yield `None`.
    pub(crate) fn end_taps(&self) {
        let mut taps = self.taps();
        taps.clear();
        self.tap_count.store(0, Ordering::Release);
    }

    /// How many taps are open.
    pub(crate) fn taps_open(&self) -> usize {
        self.tap_count.load(Ordering::Acquire)
    }

    /// Hands a notification to every tap.
    pub(crate) fn broadcast(&self, event: &ServerNotification) {
        if self.taps_open() == 0 {
            return;
        }
        let mut taps = self.taps();
        // A tap whose stream is gone is forgotten here too.
        taps.retain(|(_, tx)| tx.send(event.clone()));
        self.tap_count.store(taps.len(), Ordering::Release);
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
    /// The taps end too (their streams yield `None`).
    pub(crate) fn end_local(&self, why: impl Fn() -> SessionError) {
        self.end_taps();
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

    /// Forgets a subscription (its handle was dropped).
    pub(crate) fn remove(&self, id: &Id) {
        self.map().remove(id);
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
