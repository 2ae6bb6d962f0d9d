//! Moving JSON-RPC messages between an MCP client and a server.
//!
//! All process and network IO of the stack lives in this crate. A
//! [`Transport`] sends [`Message`]s, receives them (with bad frames reported as
//! data, not as errors), and closes within bounds.
//!
//! * [`memory`]: an in-memory pair, for tests of the layers above.
//! * [`stdio`]: a server started as a child process, one JSON message per line.
//! * [`stream`]: one JSON message per line over any `AsyncRead`/`AsyncWrite` pair.
//! * `http` (cargo feature `http`, on by default): streamable HTTP, the legacy
//!   HTTP+SSE transport of 2024-11-05, and automatic fallback between them,
//!   on hyper and rustls. Build with `default-features = false` for a
//!   stdio-only client that compiles neither.
//! * [`sse`]: the Server-Sent Events parser the HTTP transports use.
//!
//! # Example
//!
//! ```
//! use mcp_jsonrpc::{Message, Notification};
//! use mcp_transport::{Received, Transport, memory};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let (client, server) = memory::pair();
//! client.send(&Message::from(Notification::new("ping", None))).await.unwrap();
//! let Received::Message(m) = server.recv().await.unwrap() else { panic!() };
//! assert_eq!(m.method(), Some("ping"));
//! client.close().await;
//! assert!(server.recv().await.unwrap_err().is_closed());
//! # });
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;

pub use mcp_jsonrpc::{Malformed, Message, MessageError, Oversized, Truncated};

mod error;
#[cfg(feature = "http")]
pub mod http;
pub mod memory;
pub mod sse;
pub mod stdio;
pub mod stream;

pub use error::{ExitInfo, TransportError};

/// A boxed future, as the [`Transport`] trait returns (so it can be a trait object).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a transport received.
#[derive(Debug)]
#[non_exhaustive]
pub enum Received {
    /// A JSON-RPC message. Batches arrive as their messages, one by one.
    Message(Message),
    /// Something that was not a usable message; the transport goes on.
    Invalid(InvalidFrame),
}

/// A frame (or batch element) that was not a usable message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidFrame {
    /// A line that is not UTF-8, not JSON, or not JSON-RPC.
    Malformed(Malformed),
    /// A line over the size limit; it was skipped.
    Oversized(Oversized),
    /// The stream ended inside a message.
    Truncated(Truncated),
    /// One element of a batch was not a message.
    BatchElement(MessageError),
}

impl fmt::Display for InvalidFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidFrame::Malformed(m) => m.fmt(f),
            InvalidFrame::Oversized(o) => o.fmt(f),
            InvalidFrame::Truncated(t) => t.fmt(f),
            InvalidFrame::BatchElement(e) => write!(f, "invalid batch element: {e}"),
        }
    }
}

/// Which kind of transport this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportKind {
    /// A child process over stdin/stdout.
    Stdio,
    /// An in-memory pair.
    Memory,
    /// Streamable HTTP (protocol revisions 2025-03-26 and later).
    StreamableHttp,
    /// The HTTP+SSE transport of protocol revision 2024-11-05.
    Sse,
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransportKind::Stdio => "stdio",
            TransportKind::Memory => "memory",
            TransportKind::StreamableHttp => "streamable-http",
            TransportKind::Sse => "sse",
        })
    }
}

/// Extras that travel with one message and that only some transports use
/// (see [`Transport::send_with`]).
///
/// ```
/// use mcp_transport::SendContext;
/// let context = SendContext::new().param_header("Region", "us-west1");
/// assert_eq!(context.param_headers(), &[("Region".to_string(), "us-west1".to_string())]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SendContext {
    param_headers: Vec<(String, String)>,
}

impl SendContext {
    /// No extras.
    pub fn new() -> Self {
        Self::default()
    }

    /// A tool argument to mirror as an `Mcp-Param-{name}` header on
    /// streamable HTTP (protocol revision 2026-07-28): the name portion and
    /// the value as text (the transport encodes it). Other transports ignore it.
    pub fn param_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.param_headers.push((name.into(), value.into()));
        self
    }

    /// The `Mcp-Param-*` headers to send, as (name portion, value).
    pub fn param_headers(&self) -> &[(String, String)] {
        &self.param_headers
    }

    /// Whether there is nothing in it.
    pub fn is_empty(&self) -> bool {
        self.param_headers.is_empty()
    }
}

/// A bidirectional message transport.
///
/// * [`send`](Transport::send) may be called from many tasks at once; each
///   message is written whole.
/// * [`recv`](Transport::recv) is cancel-safe: dropping its future (in a
///   `select!`) loses no message. It is meant to be called from one task.
/// * [`close`](Transport::close) ends the transport within bounds and is
///   idempotent. After the peer is gone, `recv` returns
///   [`TransportError::Closed`] with what is known about why.
pub trait Transport: Send + Sync + fmt::Debug + 'static {
    /// Sends one message.
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>>;

    /// Sends one message with extras some transports use (HTTP headers
    /// mirrored from tool arguments); the others just [`send`](Transport::send) it.
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        let _ = context;
        self.send(message)
    }

    /// Receives the next message or invalid frame.
    fn recv(&self) -> BoxFuture<'_, Result<Received, TransportError>>;

    /// Closes the transport: for a child process, the full close sequence.
    fn close(&self) -> BoxFuture<'_, ()>;

    /// Which kind of transport this is.
    fn kind(&self) -> TransportKind;

    /// The last lines the server wrote to stderr (stdio only), oldest first.
    fn stderr_tail(&self) -> Vec<String> {
        Vec::new()
    }

    /// How the server process ended, once it has (stdio only).
    fn exit_info(&self) -> Option<ExitInfo> {
        None
    }

    /// Stops handing stderr lines to the listener (the tail is still kept).
    fn detach_stderr(&self) {}
}

impl<T: Transport + ?Sized> Transport for std::sync::Arc<T> {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        (**self).send(message)
    }
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        (**self).send_with(message, context)
    }
    fn recv(&self) -> BoxFuture<'_, Result<Received, TransportError>> {
        (**self).recv()
    }
    fn close(&self) -> BoxFuture<'_, ()> {
        (**self).close()
    }
    fn kind(&self) -> TransportKind {
        (**self).kind()
    }
    fn stderr_tail(&self) -> Vec<String> {
        (**self).stderr_tail()
    }
    fn exit_info(&self) -> Option<ExitInfo> {
        (**self).exit_info()
    }
    fn detach_stderr(&self) {
        (**self).detach_stderr()
    }
}

impl<T: Transport + ?Sized> Transport for Box<T> {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        (**self).send(message)
    }
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        (**self).send_with(message, context)
    }
    fn recv(&self) -> BoxFuture<'_, Result<Received, TransportError>> {
        (**self).recv()
    }
    fn close(&self) -> BoxFuture<'_, ()> {
        (**self).close()
    }
    fn kind(&self) -> TransportKind {
        (**self).kind()
    }
    fn stderr_tail(&self) -> Vec<String> {
        (**self).stderr_tail()
    }
    fn exit_info(&self) -> Option<ExitInfo> {
        (**self).exit_info()
    }
    fn detach_stderr(&self) {
        (**self).detach_stderr()
    }
}

/// Turns a decoded frame into what `recv` hands out, flattening batches.
///
/// Transports that read newline-framed streams share this; the items are
/// pushed to `out` in order.
pub fn frame_to_received(frame: mcp_jsonrpc::Frame, out: &mut impl Extend<Received>) {
    use mcp_jsonrpc::Frame;
    match frame {
        Frame::Message(m) => out.extend([Received::Message(m)]),
        Frame::Batch(items) => out.extend(items.into_iter().map(|item| match item {
            Ok(m) => Received::Message(m),
            Err(e) => Received::Invalid(InvalidFrame::BatchElement(e)),
        })),
        Frame::Malformed(m) => out.extend([Received::Invalid(InvalidFrame::Malformed(m))]),
        Frame::Oversized(o) => out.extend([Received::Invalid(InvalidFrame::Oversized(o))]),
        Frame::Truncated(t) => out.extend([Received::Invalid(InvalidFrame::Truncated(t))]),
        // `Frame` may grow; a frame we do not know is not a message.
        _ => {}
    }
}
