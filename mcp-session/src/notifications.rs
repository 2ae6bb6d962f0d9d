//! The session's notifications as a stream ([`Notifications`]): every
//! notification the server sends, typed, beside (not instead of) the
//! callback of [`SessionConfig::on_notification`](crate::SessionConfig::on_notification).
//!
//! Each stream is a tap of the reader (`subscribers.rs`) with its own bounded
//! queue: the reader never waits for a consumer, and a consumer that falls
//! behind loses the oldest notifications, counted, instead of making memory
//! grow.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;

use crate::config::ServerNotification;
use crate::conn::Inner;
use crate::queue;
use crate::subscribers::Subscribers;

/// Every notification from the server, as a [`Stream`]: list changes,
/// resource updates, progress, log messages, cancellations, task status.
/// Made by [`Session::notifications`](crate::Session::notifications).
///
/// The stream starts when it is made (nothing sent before is replayed) and
/// ends (`None`) when the connection closes. It holds at most 256
/// notifications: when its consumer falls that far behind, the **oldest**
/// are dropped to make room, and counted ([`dropped`](Self::dropped), and
/// the session's [`Diagnostics::dropped_notifications`](crate::Diagnostics::dropped_notifications)),
/// so a slow or stalled consumer never makes memory grow and never slows the
/// connection. Dropping the stream closes it
/// ([`Diagnostics::notification_streams`](crate::Diagnostics::notification_streams)
/// counts the open ones).
pub struct Notifications {
    key: u64,
    events: queue::Receiver<ServerNotification>,
    subscribers: Arc<Subscribers>,
}

impl std::fmt::Debug for Notifications {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifications")
            .field("key", &self.key)
            .field("dropped", &self.events.lost())
            .finish_non_exhaustive()
    }
}

impl Notifications {
    pub(crate) fn open(core: &Inner) -> Notifications {
        let subscribers = Arc::clone(&core.shared.subscribers);
        let (key, events) = subscribers.tap(Arc::clone(&core.shared.dropped));
        if core.shared.lock_pending().is_closed() {
            // Closed before the tap was made: end it now, as closing would have.
            subscribers.untap(key);
        }
        Notifications {
            key,
            events,
            subscribers,
        }
    }

    /// The next notification; `None` once the connection has closed. The
    /// same as [`StreamExt::next`](https://docs.rs/futures/latest/futures/stream/trait.StreamExt.html#method.next),
    /// without needing a stream crate.
    pub async fn next(&mut self) -> Option<ServerNotification> {
        std::future::poll_fn(|cx| self.events.poll_recv(cx)).await
    }

    /// How many notifications this stream dropped (oldest first) because it
    /// fell 256 behind.
    pub fn dropped(&self) -> u64 {
        self.events.lost()
    }
}

impl Stream for Notifications {
    type Item = ServerNotification;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().events.poll_recv(cx)
    }
}

impl Drop for Notifications {
    fn drop(&mut self) {
        self.subscribers.untap(self.key);
    }
}
