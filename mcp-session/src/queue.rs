//! A bounded queue from the reader task to one consumer (a call's progress
//! listener, a subscription): when the consumer falls behind and the queue
//! is full, the oldest item that may be dropped is dropped and counted, so a
//! consumer that stops reading cannot make memory grow. Items that must not
//! be lost (a subscription's acknowledgment and end) are never dropped; there
//! are at most a couple of those per queue.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// How many items a queue holds before it drops the oldest.
pub(crate) const CAPACITY: usize = 256;

#[derive(Debug)]
struct State<T> {
    /// Each item, and whether it may be dropped.
    items: VecDeque<(T, bool)>,
    sender_gone: bool,
    receiver_gone: bool,
    /// The consumer waiting for an item, woken when one comes (or the
    /// sender goes).
    waker: Option<Waker>,
    /// Items this queue dropped.
    lost: u64,
}

#[derive(Debug)]
struct Shared<T> {
    state: Mutex<State<T>>,
    capacity: usize,
    /// Counts every item dropped, session-wide.
    dropped: Arc<AtomicU64>,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The reader's end.
#[derive(Debug)]
pub(crate) struct Sender<T>(Arc<Shared<T>>);

/// The consumer's end.
#[derive(Debug)]
pub(crate) struct Receiver<T>(Arc<Shared<T>>);

/// A queue of `capacity` items whose drops are added to `dropped`.
pub(crate) fn bounded<T>(capacity: usize, dropped: Arc<AtomicU64>) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            items: VecDeque::new(),
            sender_gone: false,
            receiver_gone: false,
            waker: None,
            lost: 0,
        }),
        capacity: capacity.max(1),
        dropped,
    });
    (Sender(Arc::clone(&shared)), Receiver(shared))
}

impl<T> Sender<T> {
    /// Queues an item that may be dropped for a newer one; `false` when the
    /// consumer is gone.
    pub(crate) fn send(&self, item: T) -> bool {
        self.push(item, true)
    }

    /// Queues an item that is never dropped; `false` when the consumer is gone.
    pub(crate) fn send_always(&self, item: T) -> bool {
        self.push(item, false)
    }

    fn push(&self, item: T, droppable: bool) -> bool {
        let mut state = self.0.lock();
        if state.receiver_gone {
            return false;
        }
        if state.items.len() >= self.0.capacity {
            match state.items.iter().position(|(_, d)| *d) {
                Some(oldest) => {
                    state.items.remove(oldest);
                    state.lost += 1;
                    self.0.dropped.fetch_add(1, Ordering::Relaxed);
                }
                // Full of items that must stay: the new one is what goes,
                // unless it must stay too.
                None if droppable => {
                    state.lost += 1;
                    self.0.dropped.fetch_add(1, Ordering::Relaxed);
                    return true;
                }
                None => {}
            }
        }
        state.items.push_back((item, droppable));
        let waker = state.waker.take();
        drop(state);
        if let Some(w) = waker {
            w.wake();
        }
        true
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut state = self.0.lock();
            state.sender_gone = true;
            state.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl<T> Receiver<T> {
    /// The next item; `None` once the sender is gone and nothing is left.
    /// Cancel-safe: an item is taken only when this returns it.
    pub(crate) async fn recv(&mut self) -> Option<T> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// The next item if one is queued, `Ready(None)` once the sender is
    /// gone and nothing is left, else `Pending` with the waker kept (only
    /// the last poller's: one consumer).
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut state = self.0.lock();
        if let Some((item, _)) = state.items.pop_front() {
            return Poll::Ready(Some(item));
        }
        if state.sender_gone {
            return Poll::Ready(None);
        }
        match &mut state.waker {
            Some(w) => w.clone_from(cx.waker()),
            None => state.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// How many items this queue dropped because its consumer fell behind.
    pub(crate) fn lost(&self) -> u64 {
        self.0.lock().lost
    }
}

impl<T> Receiver<T> {
    /// The next item, when one is queued now.
    pub(crate) fn try_recv(&mut self) -> Option<T> {
        self.0.lock().items.pop_front().map(|(item, _)| item)
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.receiver_gone = true;
        state.items.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_slow_consumer_loses_the_oldest_and_the_loss_is_counted() {
        let dropped = Arc::new(AtomicU64::new(0));
        let (tx, mut rx) = bounded(3, Arc::clone(&dropped));
        for i in 0..10 {
            assert!(tx.send(i));
        }
        assert_eq!(dropped.load(Ordering::Relaxed), 7);
        assert_eq!(rx.lost(), 7);
        drop(tx);
        run(async {
            let mut got = Vec::new();
            while let Some(i) = rx.recv().await {
                got.push(i);
            }
            assert_eq!(got, [7, 8, 9]);
        });
    }

    #[test]
    fn items_that_must_stay_are_never_dropped() {
        let dropped = Arc::new(AtomicU64::new(0));
        let (tx, mut rx) = bounded(2, Arc::clone(&dropped));
        assert!(tx.send_always("ack"));
        for n in ["n1", "n2", "n3"] {
            assert!(tx.send(n));
        }
        assert!(tx.send_always("end"));
        drop(tx);
        run(async {
            let mut got = Vec::new();
            while let Some(i) = rx.recv().await {
                got.push(i);
            }
            // The notifications made room; the acknowledgment and the end stayed.
            assert_eq!(got, ["ack", "end"]);
        });
        assert_eq!(dropped.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn a_gone_consumer_is_reported_and_holds_nothing() {
        let (tx, rx) = bounded::<u8>(4, Arc::default());
        assert!(tx.send(1));
        drop(rx);
        assert!(!tx.send(2));
        assert!(tx.0.lock().items.is_empty());
    }

    #[test]
    fn a_waiting_consumer_is_woken() {
        run(async {
            let (tx, mut rx) = bounded(4, Arc::default());
            let waiter = tokio::spawn(async move { rx.recv().await });
            tokio::task::yield_now().await;
            assert!(tx.send(5));
            assert_eq!(waiter.await.unwrap(), Some(5));
        });
    }
}
