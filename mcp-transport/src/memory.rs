//! An in-memory transport pair, for testing the layers above without processes.
//!
//! Messages are passed as values (no encoding), through unbounded channels.
//! Closing either end makes the other end's `recv` return
//! [`TransportError::Closed`] once the messages already sent are read.

use std::sync::Mutex as StdMutex;

use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use crate::{
    Answer, BoxFuture, Message, Received, SendContext, Transport, TransportError, TransportKind,
};

/// One end of an in-memory pair.
#[derive(Debug)]
pub struct MemoryTransport {
    tx: StdMutex<Option<mpsc::UnboundedSender<Received>>>,
    rx: Mutex<mpsc::UnboundedReceiver<Received>>,
    closed: CancellationToken,
}

/// Makes a connected pair: what one sends, the other receives.
pub fn pair() -> (MemoryTransport, MemoryTransport) {
    let (a_tx, b_rx) = mpsc::unbounded_channel();
    let (b_tx, a_rx) = mpsc::unbounded_channel();
    (
        MemoryTransport::new(a_tx, a_rx),
        MemoryTransport::new(b_tx, b_rx),
    )
}

impl MemoryTransport {
    fn new(tx: mpsc::UnboundedSender<Received>, rx: mpsc::UnboundedReceiver<Received>) -> Self {
        MemoryTransport {
            tx: StdMutex::new(Some(tx)),
            rx: Mutex::new(rx),
            closed: CancellationToken::new(),
        }
    }

    /// Delivers an invalid frame to the other end, as a misbehaving peer's
    /// noise would arrive.
    pub fn send_invalid(&self, frame: crate::InvalidFrame) -> Result<(), TransportError> {
        self.deliver(Received::Invalid(frame))
    }

    fn deliver(&self, item: Received) -> Result<(), TransportError> {
        let guard = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        match guard.as_ref() {
            Some(tx) => tx
                .send(item)
                .map_err(|_| TransportError::closed("peer closed")),
            None => Err(TransportError::closed("closed by this side")),
        }
    }
}

impl Transport for MemoryTransport {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        _context: &'a SendContext,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        let result = self.deliver(Received::Message(message.clone()));
        Box::pin(async move { result })
    }

    fn request_with<'a>(
        &'a self,
        request: &'a Message,
        _context: &'a SendContext,
    ) -> BoxFuture<'a, Result<Answer, TransportError>> {
        let result = self.deliver(Received::Message(request.clone()));
        Box::pin(async move { result.map(|()| Answer::Later) })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Received, TransportError>> {
        Box::pin(async move {
            let closed = || TransportError::closed("closed by this side");
            if self.closed.is_cancelled() {
                return Err(closed());
            }
            let mut rx = self.rx.lock().await;
            tokio::select! {
                biased;
                item = rx.recv() => item.ok_or_else(|| TransportError::closed("peer closed")),
                () = self.closed.cancelled() => Err(closed()),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(tx);
        self.closed.cancel();
        Box::pin(async {})
    }

    fn kind(&self) -> TransportKind {
        TransportKind::Memory
    }
}
