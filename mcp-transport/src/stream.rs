//! A transport over any `AsyncRead` + `AsyncWrite` pair: one JSON-RPC
//! message per line, as on stdio, but without a process.
//!
//! Use it to run a server in-process over [`tokio::io::duplex`] (tests,
//! benchmarks) or over a socket someone else opened. Lines that are not
//! messages arrive as [`Received::Invalid`]; the end of the read half is
//! [`TransportError::Closed`]. [`Transport::close`] shuts the write half down
//! (bounded) and stops reading. It reports [`TransportKind::Memory`]. As on
//! stdio, batches are accepted only once a message's context names protocol
//! revision 2025-03-26.
//!
//! ```
//! use mcp_stack_jsonrpc::{Message, Notification};
//! use mcp_stack_transport::stream::StreamTransport;
//! use mcp_stack_transport::{Received, Transport};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let (a, b) = tokio::io::duplex(4096);
//! let (ar, aw) = tokio::io::split(a);
//! let (br, bw) = tokio::io::split(b);
//! let (client, server) = (StreamTransport::new(ar, aw), StreamTransport::new(br, bw));
//! client.send(&Message::from(Notification::new("ping", None))).await.unwrap();
//! let Received::Message(m) = server.recv().await.unwrap() else { panic!() };
//! assert_eq!(m.method(), Some("ping"));
//! client.close().await;
//! assert!(server.recv().await.unwrap_err().is_closed());
//! # });
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::time::Duration;

use futures_util::StreamExt;
use mcp_stack_jsonrpc::{
    DEFAULT_MAX_BATCH_ELEMENTS, DEFAULT_MAX_FRAME_LENGTH, Frame, NewlineCodec, OutgoingRequest,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

use crate::lines::{LineWriter, SendFailure, lock};
use crate::{
    Answer, BatchGate, BoxFuture, Message, Received, SendContext, Transport, TransportError,
    TransportKind, frame_to_received,
};

/// How long `close` waits for a busy writer and for the shutdown of the write half.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

type BoxRead = Box<dyn AsyncRead + Send + Unpin>;
type BoxWrite = Box<dyn AsyncWrite + Send + Unpin>;

struct Reader {
    frames: Option<FramedRead<BoxRead, NewlineCodec>>,
    pending: VecDeque<Received>,
}

/// A newline-delimited JSON-RPC transport over a reader and a writer.
pub struct StreamTransport {
    writer: LineWriter<BoxWrite>,
    reader: Mutex<Reader>,
    /// Whether batches are accepted (shared with the codec).
    batches: BatchGate,
    closing: CancellationToken,
}

impl fmt::Debug for StreamTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamTransport")
            .field("closing", &self.closing.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl StreamTransport {
    /// A transport reading messages from `reader` and writing them to `writer`,
    /// with the default frame limit (16 MiB).
    pub fn new<R, W>(reader: R, writer: W) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        Self::with_max_frame_length(reader, writer, DEFAULT_MAX_FRAME_LENGTH)
    }

    /// Like [`new`](Self::new), with another limit on a message's size in bytes.
    pub fn with_max_frame_length<R, W>(reader: R, writer: W, max: usize) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let reader: BoxRead = Box::new(reader);
        let batches = BatchGate::new(DEFAULT_MAX_BATCH_ELEMENTS);
        StreamTransport {
            writer: LineWriter::new(Box::new(writer), max),
            reader: Mutex::new(Reader {
                frames: Some(FramedRead::new(
                    reader,
                    NewlineCodec::with_max_frame_length(max).with_batch_switch(batches.switch()),
                )),
                pending: VecDeque::new(),
            }),
            batches,
            closing: CancellationToken::new(),
        }
    }

    /// The largest batch accepted, in elements (default 1,024; 0: none),
    /// once a message's context names protocol revision 2025-03-26, the
    /// one revision with batches (until then every batch is refused whole).
    pub fn max_batch_elements(mut self, elements: usize) -> Self {
        self.batches.set_max_elements(elements);
        self
    }

    async fn send_message(&self, message: &Message, cancels: bool) -> Result<(), TransportError> {
        self.sent(self.writer.send(message, cancels, &self.closing).await)
    }

    /// What a send's failure is to the caller.
    fn sent(&self, result: Result<(), SendFailure>) -> Result<(), TransportError> {
        match result {
            Ok(()) => Ok(()),
            Err(SendFailure::Encode(e)) => Err(e.into()),
            Err(SendFailure::Closing) => Err(TransportError::closed("closed by this side")),
            Err(SendFailure::Gone) => Err(TransportError::closed(if self.closing.is_cancelled() {
                "closed by this side"
            } else {
                "the stream's write half is closed"
            })),
            Err(SendFailure::Io(e)) => Err(match e.kind() {
                io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset => {
                    TransportError::closed("the peer closed the stream")
                }
                _ => TransportError::Io(e),
            }),
        }
    }

    async fn recv_item(&self) -> Result<Received, TransportError> {
        let by_us = || TransportError::closed("closed by this side");
        if self.closing.is_cancelled() {
            return Err(by_us());
        }
        let mut guard = lock(&self.reader).await;
        let r = &mut *guard;
        loop {
            if let Some(item) = r.pending.pop_front() {
                return Ok(item);
            }
            let Some(frames) = r.frames.as_mut() else {
                return Err(TransportError::closed("the peer closed the stream"));
            };
            tokio::select! {
                biased;
                frame = frames.next() => match frame {
                    Some(Ok(Frame::Message(m))) => return Ok(Received::Message(m)),
                    Some(Ok(frame)) => frame_to_received(frame, &mut r.pending),
                    Some(Err(e)) => {
                        r.frames = None;
                        return Err(TransportError::closed(format!("reading the stream failed: {e}")));
                    }
                    None => r.frames = None,
                },
                () = self.closing.cancelled() => return Err(by_us()),
            }
        }
    }

    async fn close_once(&self) {
        if self.closing.is_cancelled() {
            return;
        }
        self.closing.cancel();
        if let Ok(Some(mut io)) = self.writer.take_io(CLOSE_TIMEOUT).await {
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, io.shutdown()).await;
        }
        if let Ok(mut r) = tokio::time::timeout(CLOSE_TIMEOUT, self.reader.lock()).await {
            r.frames = None;
            r.pending.clear();
        }
    }
}

impl Transport for StreamTransport {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        self.batches.follow(context);
        Box::pin(self.send_message(message, context.cancelled_request().is_some()))
    }

    // One box, not the default's two: a request is written here and
    // answered through `recv`.
    fn request_with<'a>(
        &'a self,
        request: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<Answer, TransportError>> {
        self.batches.follow(context);
        Box::pin(async move {
            self.send_message(request, false)
                .await
                .map(|()| Answer::Later)
        })
    }

    fn request_outgoing<'a>(
        &'a self,
        request: &'a OutgoingRequest<'a>,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<Answer, TransportError>> {
        self.batches.follow(context);
        Box::pin(async move {
            self.sent(self.writer.send_request(request, &self.closing).await)
                .map(|()| Answer::Later)
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Received, TransportError>> {
        Box::pin(async move {
            let item = self.recv_item().await;
            self.writer.received(&item);
            item
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.close_once())
    }

    fn kind(&self) -> TransportKind {
        TransportKind::Memory
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::InvalidFrame;
    use mcp_stack_jsonrpc::Notification;
    use tokio::io::AsyncWriteExt;

    fn pair() -> (StreamTransport, tokio::io::DuplexStream) {
        let (a, b) = tokio::io::duplex(1024);
        let (ar, aw) = tokio::io::split(a);
        (StreamTransport::new(ar, aw), b)
    }

    #[tokio::test]
    async fn bad_lines_are_data_and_eof_is_closed() {
        let (t, mut peer) = pair();
        peer.write_all(b"not json\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n")
            .await
            .unwrap();
        drop(peer);
        assert!(matches!(
            t.recv().await.unwrap(),
            Received::Invalid(InvalidFrame::Malformed(_))
        ));
        let Received::Message(m) = t.recv().await.unwrap() else {
            panic!()
        };
        assert_eq!(m.method(), Some("x"));
        let err = t.recv().await.unwrap_err();
        assert!(err.is_closed(), "{err}");
        // The peer is gone: sending fails as closed, not as a panic.
        let sent = t.send(&Message::from(Notification::new("y", None))).await;
        assert!(sent.unwrap_err().is_closed());
    }

    #[tokio::test]
    async fn close_is_idempotent_and_ends_pending_recv() {
        let (t, _peer) = pair();
        let t = std::sync::Arc::new(t);
        let t2 = std::sync::Arc::clone(&t);
        let waiting = tokio::spawn(async move { t2.recv().await });
        tokio::task::yield_now().await;
        t.close().await;
        t.close().await;
        assert!(waiting.await.unwrap().unwrap_err().is_closed());
        assert!(
            t.send(&Message::from(Notification::new("y", None)))
                .await
                .unwrap_err()
                .is_closed()
        );
    }

    #[tokio::test]
    async fn messages_are_written_one_per_line() {
        let (t, peer) = pair();
        t.send(&Message::from(Notification::new("a", None)))
            .await
            .unwrap();
        t.send(&Message::from(Notification::new("b", None)))
            .await
            .unwrap();
        t.close().await;
        let mut out = String::new();
        let mut peer = peer;
        tokio::io::AsyncReadExt::read_to_string(&mut peer, &mut out)
            .await
            .unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(lines[0].contains("\"a\"") && lines[1].contains("\"b\""));
    }
}
