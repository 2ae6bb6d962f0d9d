//! A future that is polled again only after it asked to be.
//!
//! `select!` polls every branch each time its task runs. A branch that
//! waits for something rare (the stdio reader's "close started or the
//! server exited") is then asked on every message for nothing; for the
//! stdio reader that was a cancellation token and a `watch` receiver polled
//! per message, about 470 instructions of a round trip. [`WokenOnly`]
//! polls its future with a waker of its own and, until that waker fires,
//! answers `Pending` without polling it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// `inner`, polled only when it woke since its last poll (and on the first).
pub(crate) struct WokenOnly<T> {
    inner: Pin<Box<dyn Future<Output = T> + Send>>,
    signal: Arc<Signal>,
    /// `signal` as a waker, made once.
    waker: Waker,
}

struct Signal {
    woken: AtomicBool,
    /// The task that polled last.
    outer: AtomicWaker,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.outer.wake();
    }
}

impl<T> WokenOnly<T> {
    pub(crate) fn new(inner: impl Future<Output = T> + Send + 'static) -> Self {
        let signal = Arc::new(Signal {
            woken: AtomicBool::new(true),
            outer: AtomicWaker::new(),
        });
        WokenOnly {
            inner: Box::pin(inner),
            waker: Waker::from(Arc::clone(&signal)),
            signal,
        }
    }
}

impl<T> Future for WokenOnly<T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = self.get_mut();
        // Registered before the flag is read: a wake in between sets the
        // flag, which is then seen here.
        this.signal.outer.register(cx.waker());
        if !this.signal.woken.swap(false, Ordering::AcqRel) {
            return Poll::Pending;
        }
        this.inner
            .as_mut()
            .poll(&mut Context::from_waker(&this.waker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use tokio::sync::oneshot;

    /// Counts the polls of the future inside.
    struct Counted<F>(Pin<Box<F>>, Arc<AtomicUsize>);

    impl<F: Future> Future for Counted<F> {
        type Output = F::Output;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.as_mut().poll(cx)
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn polled_again_only_after_a_wake() {
        let polls = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = oneshot::channel::<u8>();
        let mut f = WokenOnly::new(Counted(Box::pin(rx), Arc::clone(&polls)));
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..5 {
            assert!(Pin::new(&mut f).poll(&mut cx).is_pending());
        }
        assert_eq!(
            polls.load(Ordering::Relaxed),
            1,
            "only the first poll reached it"
        );
        tx.send(7).unwrap();
        assert!(matches!(Pin::new(&mut f).poll(&mut cx), Poll::Ready(Ok(7))));
        assert_eq!(polls.load(Ordering::Relaxed), 2);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_task_is_woken_when_it_is() {
        let (tx, rx) = oneshot::channel::<u8>();
        let f = WokenOnly::new(rx);
        let waiting = tokio::spawn(f);
        tokio::task::yield_now().await;
        tx.send(3).unwrap();
        let got = tokio::time::timeout(std::time::Duration::from_secs(10), waiting).await;
        assert_eq!(got.unwrap().unwrap().unwrap(), 3);
    }
}
