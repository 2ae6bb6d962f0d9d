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
//! use mcp_stack_jsonrpc::{Message, Notification};
//! use mcp_stack_transport::{Received, Transport, memory};
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
use std::sync::Arc;

use mcp_stack_jsonrpc::BatchSwitch;
#[cfg(feature = "http")]
use mcp_stack_jsonrpc::Batches;
pub use mcp_stack_jsonrpc::{
    DEFAULT_MAX_BATCH_ELEMENTS, Id, Malformed, Message, MessageError, OutgoingRequest, Oversized,
    Truncated,
};
use mcp_stack_protocol::ProtocolVersion;

pub mod backoff;
mod error;
#[cfg(feature = "http")]
pub mod http;
mod lines;
pub mod memory;
pub mod sse;
pub mod stdio;
pub mod stream;
mod woken;

pub use error::{ExitInfo, TransportError};

/// A boxed future, as the [`Transport`] trait returns (so it can be a trait object).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a transport received.
#[derive(Debug)]
#[non_exhaustive]
pub enum Received {
    /// A JSON-RPC message. Batches arrive as their messages, one by one
    /// (only where the protocol revision has them: see [`SendContext::revision`]).
    Message(Message),
    /// Something that was not a usable message; the transport goes on.
    Invalid(InvalidFrame),
    /// A request the transport sent failed after `send` returned (an HTTP
    /// error status, a dropped stream, a reset): that request will get no
    /// answer. The transport goes on.
    Failed(RequestFailure),
    /// The server's session behind the transport ended: a streamable HTTP
    /// session expired (a 404, or a 400 about the session, to a message
    /// that carried its id), or a legacy SSE stream reconnected with a new
    /// endpoint, which is a new session on the server. Reported once per
    /// session, before any message fails because of it.
    ///
    /// Until the layer above runs the handshake again (`initialize`, then
    /// `notifications/initialized`, marked with [`Lifecycle`]), the
    /// transport posts nothing else: every other message fails with
    /// [`TransportError::SessionExpired`], which means the server did not
    /// process it. An `mcp_stack_session::Session` runs that handshake itself.
    SessionExpired {
        /// What the server said, or why the session is new.
        reason: String,
    },
}

/// How [`Transport::request_with`] ended.
#[derive(Debug)]
#[non_exhaustive]
pub enum Answer {
    /// The request was sent; its answer (or its [`Received::Failed`]) comes
    /// through [`Transport::recv`], as after [`Transport::send_with`].
    Later,
    /// The answer: a response or an error response with the request's id,
    /// which no `recv` will hand out.
    Now(Message),
    /// The request was sent and then failed in the transport (an answer
    /// that could not be read): it will get no answer, as with
    /// [`Received::Failed`].
    Failed(TransportError),
}

/// A request that failed in the transport after it was sent.
#[derive(Debug)]
#[non_exhaustive]
pub struct RequestFailure {
    /// The request's id.
    pub id: Id,
    /// What went wrong (with the HTTP status, when there was one).
    pub error: TransportError,
}

/// A frame that was not a usable message, or the elements of a batch that
/// were not. Each bad frame is one of these, however many elements it had.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidFrame {
    /// A line (or HTTP body, or SSE event) that is not UTF-8, not JSON, or
    /// not JSON-RPC; also a batch refused whole (where the protocol
    /// revision has none, or over a bound), its elements counted, not parsed.
    Malformed(Malformed),
    /// A line over the size limit; it was skipped.
    Oversized(Oversized),
    /// The stream ended inside a message.
    Truncated(Truncated),
    /// Elements of an accepted batch that were not messages (its messages
    /// were handed out): one report per batch.
    BatchElements(BadElements),
}

/// The elements of one batch that were not messages.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BadElements {
    /// How many were not messages.
    pub bad: usize,
    /// How many elements the batch had.
    pub of: usize,
    /// Why the first of them is not one.
    pub first: MessageError,
}

impl BadElements {
    /// `bad` elements of a batch of `of` were not messages; `first` says
    /// why the first was not.
    pub fn new(bad: usize, of: usize, first: MessageError) -> Self {
        BadElements { bad, of, first }
    }
}

impl fmt::Display for InvalidFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidFrame::Malformed(m) => {
                m.fmt(f)?;
                if matches!(m.reason, MessageError::BatchRefused { .. }) {
                    f.write_str("; MCP has batches only in protocol revision 2025-03-26")?;
                }
                Ok(())
            }
            InvalidFrame::Oversized(o) => o.fmt(f),
            InvalidFrame::Truncated(t) => t.fmt(f),
            InvalidFrame::BatchElements(b) => write!(
                f,
                "{} of the {} elements of a batch were not messages (the first: {})",
                b.bad, b.of, b.first
            ),
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

/// What the layer above knows about one message, for the transports that
/// need it (see [`Transport::send_with`]).
///
/// A transport never reads a message's `params` to learn these: the session
/// says which revision the message follows, which lifecycle step it is, and
/// what a streamable HTTP request mirrors into its headers.
///
/// ```
/// use mcp_stack_protocol::ProtocolVersion;
/// use mcp_stack_transport::{Lifecycle, SendContext};
/// let context = SendContext::new()
///     .revision(ProtocolVersion::V2026_07_28)
///     .name("get_weather")
///     .param_header("Region", "us-west1");
/// assert_eq!(context.revision_of(), Some(ProtocolVersion::V2026_07_28));
/// assert_eq!(context.lifecycle_of(), Lifecycle::None);
/// assert_eq!(context.param_headers(), &[("Region".to_string(), "us-west1".to_string())]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SendContext {
    revision: Option<ProtocolVersion>,
    lifecycle: Lifecycle,
    name: Option<String>,
    cancels: Option<Id>,
    param_headers: Vec<(String, String)>,
}

/// Which step of the connection's lifecycle a message is, when it is one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lifecycle {
    /// An ordinary message.
    #[default]
    None,
    /// The handshake's request (`initialize`): a streamable HTTP transport
    /// takes the session id from its answer; its refusal sends an automatic
    /// transport down the SSE path. After [`Received::SessionExpired`] it is
    /// the one message a transport posts.
    Initialize,
    /// The end of the handshake (`notifications/initialized`): a streamable
    /// HTTP transport then opens its GET stream, and a legacy SSE transport
    /// whose endpoint changed posts other messages again.
    Initialized,
    /// 2026-07-28's `server/discover`: its refusal decides the era, so a
    /// transport reports the answer's head from `send` itself.
    Discover,
}

impl SendContext {
    /// No extras: an ordinary message of no particular revision.
    pub const NONE: SendContext = SendContext {
        revision: None,
        lifecycle: Lifecycle::None,
        name: None,
        cancels: None,
        param_headers: Vec::new(),
    };

    /// No extras.
    pub fn new() -> Self {
        Self::default()
    }

    /// The protocol revision the message follows: the negotiated one after
    /// the handshake (sent as `MCP-Protocol-Version` on streamable HTTP), or
    /// the one a 2026-07-28 request names in its `_meta`.
    ///
    /// It also decides whether the transport accepts batches from the
    /// peer: none until a message names a revision, then only while the
    /// last one named has them (2025-03-26; see
    /// [`ProtocolVersion::has_batches`]). A batch where there are none is
    /// one [`InvalidFrame::Malformed`], its elements never parsed.
    pub fn revision(mut self, revision: ProtocolVersion) -> Self {
        self.revision = Some(revision);
        self
    }

    /// Marks a lifecycle step.
    pub fn lifecycle(mut self, lifecycle: Lifecycle) -> Self {
        self.lifecycle = lifecycle;
        self
    }

    /// What the request is about, mirrored as `Mcp-Name` on streamable HTTP
    /// (2026-07-28): the tool or prompt name, or the resource URI.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The message is `notifications/cancelled` for the request `id`: a
    /// 2026-07-28 streamable HTTP transport closes that request's stream
    /// instead of posting it.
    pub fn cancels(mut self, id: Id) -> Self {
        self.cancels = Some(id);
        self
    }

    /// A tool argument to mirror as an `Mcp-Param-{name}` header on
    /// streamable HTTP (protocol revision 2026-07-28): the name portion and
    /// the value as text (the transport encodes it). Other transports ignore it.
    pub fn param_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.param_headers.push((name.into(), value.into()));
        self
    }

    /// The revision, when the sender named one.
    pub fn revision_of(&self) -> Option<ProtocolVersion> {
        self.revision
    }

    /// Whether the message names a revision that has `capability` (one of
    /// [`ProtocolVersion`]'s `has_*` methods, say): `false` before any
    /// revision is known.
    pub fn revision_has(&self, capability: fn(ProtocolVersion) -> bool) -> bool {
        self.revision.is_some_and(capability)
    }

    /// The lifecycle step.
    pub fn lifecycle_of(&self) -> Lifecycle {
        self.lifecycle
    }

    /// The `Mcp-Name` value, when there is one.
    pub fn name_of(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The request a cancellation is for.
    pub fn cancelled_request(&self) -> Option<&Id> {
        self.cancels.as_ref()
    }

    /// The `Mcp-Param-*` headers to send, as (name portion, value).
    pub fn param_headers(&self) -> &[(String, String)] {
        &self.param_headers
    }
}

/// A bidirectional message transport.
///
/// * [`send_with`](Transport::send_with) may be called from many tasks at
///   once; each message is written whole. It is the one method a wrapper must
///   forward for sending: [`send`](Transport::send) is `send_with` and no
///   context, so a decorator cannot lose the context by forgetting a method.
/// * [`request_with`](Transport::request_with) sends a request and may
///   return its answer itself (streamable HTTP's JSON answers), sparing the
///   trip through `recv`; by default it is `send_with`.
/// * [`recv`](Transport::recv) is cancel-safe: dropping its future (in a
///   `select!`) loses no message. It is meant to be called from one task.
/// * [`close`](Transport::close) ends the transport within bounds and is
///   idempotent. After the peer is gone, `recv` returns
///   [`TransportError::Closed`] with what is known about why.
/// * [`process`](Transport::process) gives the server process behind a stdio
///   transport (its stderr and exit status); other transports have none.
pub trait Transport: Send + Sync + fmt::Debug + 'static {
    /// Sends one message, with what the layer above knows about it.
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<(), TransportError>>;

    /// Sends one message with no context.
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        static NONE: SendContext = SendContext::NONE;
        self.send_with(message, &NONE)
    }

    /// Sends a request and, where the transport can, drives it to its
    /// answer on the caller's task and returns that answer.
    ///
    /// The default is [`send_with`](Transport::send_with) and
    /// [`Answer::Later`]: the answer comes through [`recv`](Transport::recv).
    /// A transport that returns [`Answer::Now`] hands that answer out nowhere
    /// else. Dropping the future before it ends abandons the request (over
    /// HTTP, its connection is closed); the caller cancels it with the server
    /// as for any request it stops waiting for.
    fn request_with<'a>(
        &'a self,
        request: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<Answer, TransportError>> {
        let sent = self.send_with(request, context);
        Box::pin(async move { sent.await.map(|()| Answer::Later) })
    }

    /// [`request_with`](Transport::request_with) for a request whose params
    /// are still a value of the caller's type: a transport that writes
    /// frames itself (stdio, [`stream`]) has serde write them straight into
    /// the outgoing frame, never into a `String` first.
    ///
    /// The default builds the [`Message`] (the params serialized once) and
    /// calls `request_with`, so a wrapper that forwards `request_with` sees
    /// every request.
    fn request_outgoing<'a>(
        &'a self,
        request: &'a OutgoingRequest<'a>,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<Answer, TransportError>> {
        match request.to_message() {
            Ok(message) => Box::pin(async move { self.request_with(&message, context).await }),
            Err(e) => Box::pin(std::future::ready(Err(TransportError::Encode(
                mcp_stack_jsonrpc::EncodeError::Json(e),
            )))),
        }
    }

    /// Receives the next message, invalid frame or request failure.
    fn recv(&self) -> BoxFuture<'_, Result<Received, TransportError>>;

    /// Closes the transport: for a child process, the full close sequence.
    fn close(&self) -> BoxFuture<'_, ()>;

    /// Which kind of transport this is.
    fn kind(&self) -> TransportKind;

    /// The server process behind this transport, when there is one (stdio).
    fn process(&self) -> Option<&dyn ServerProcess> {
        None
    }
}

/// A server running as a child process: what a stdio transport knows of it.
pub trait ServerProcess: Send + Sync {
    /// The last lines the server wrote to stderr, oldest first.
    fn stderr_tail(&self) -> Vec<String>;

    /// How the server process ended, once it has.
    fn exit_info(&self) -> Option<ExitInfo>;

    /// Stops handing stderr lines to the listener (the tail is still kept).
    fn detach_stderr(&self);

    /// Kills the server's whole process group at once (`SIGKILL`), without
    /// the close sequence; the child is still reaped in the background and
    /// pending sends and receives end. For an application that must exit
    /// now (a second Ctrl-C); [`Transport::close`] is the orderly way.
    fn kill(&self);
}

macro_rules! forward_transport {
    ($($wrapper:ident),*) => {$(
        impl<T: Transport + ?Sized> Transport for $wrapper<T> {
            fn send_with<'a>(
                &'a self,
                message: &'a Message,
                context: &'a SendContext,
            ) -> BoxFuture<'a, Result<(), TransportError>> {
                (**self).send_with(message, context)
            }
            fn request_with<'a>(
                &'a self,
                request: &'a Message,
                context: &'a SendContext,
            ) -> BoxFuture<'a, Result<Answer, TransportError>> {
                (**self).request_with(request, context)
            }
            fn request_outgoing<'a>(
                &'a self,
                request: &'a OutgoingRequest<'a>,
                context: &'a SendContext,
            ) -> BoxFuture<'a, Result<Answer, TransportError>> {
                (**self).request_outgoing(request, context)
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
            fn process(&self) -> Option<&dyn ServerProcess> {
                (**self).process()
            }
        }
    )*};
}

forward_transport!(Arc, Box);

/// A duration as every message of the stack writes it (milliseconds below
/// a second, else seconds with one decimal): the one in `mcp-stack-protocol`.
pub use mcp_stack_protocol::defaults::describe_duration;

/// Whether a transport accepts batches from its peer, shared with the
/// codec or parser that reads them: refused until a message's context
/// names a revision, then up to `max_elements` while the last revision
/// named has batches (2025-03-26), refused again when one without is named.
///
/// The transport decides, not the session: it sees every message's
/// [`SendContext`], it owns the codec (so the bound is in place before a
/// frame is parsed, and a batch where there are none is refused before any
/// element is built), and every reading path of it (stdio lines, HTTP
/// bodies, SSE events) consults the one gate.
#[derive(Debug, Clone)]
pub(crate) struct BatchGate {
    switch: BatchSwitch,
    max_elements: usize,
}

impl BatchGate {
    /// Refusing batches until a revision with them is named; then at most
    /// `max_elements`.
    pub(crate) fn new(max_elements: usize) -> Self {
        BatchGate {
            switch: BatchSwitch::refused(),
            max_elements,
        }
    }

    /// Changes the bound used once batches are on (before any message).
    pub(crate) fn set_max_elements(&mut self, max_elements: usize) {
        self.max_elements = max_elements;
    }

    /// Follows the revision a message's context names, if any: one load
    /// (and a store when the revision changes) per message sent.
    pub(crate) fn follow(&self, context: &SendContext) {
        if let Some(revision) = context.revision_of() {
            let bound = if revision.has_batches() {
                self.max_elements
            } else {
                0
            };
            if self.switch.max_elements() != bound {
                self.switch.set(bound);
            }
        }
    }

    /// The switch, for a codec to read.
    pub(crate) fn switch(&self) -> BatchSwitch {
        self.switch.clone()
    }

    /// The setting now, with `budget` bytes for a batch's parsed elements
    /// (for the HTTP transports, which parse each body and event themselves).
    #[cfg(feature = "http")]
    pub(crate) fn batches(&self, budget: usize) -> Batches {
        self.switch.get().within(budget)
    }
}

/// Hands out a batch's messages in order, then one report of the elements
/// that were not messages, if any: a batch of junk is one invalid frame,
/// not one per element.
pub(crate) fn batch_to_received(
    items: Vec<Result<Message, MessageError>>,
    out: &mut impl Extend<Received>,
) {
    let of = items.len();
    let mut bad = 0usize;
    let mut first = None;
    out.extend(items.into_iter().filter_map(|item| match item {
        Ok(m) => Some(Received::Message(m)),
        Err(e) => {
            bad += 1;
            first.get_or_insert(e);
            None
        }
    }));
    if let Some(first) = first {
        out.extend([Received::Invalid(InvalidFrame::BatchElements(
            BadElements { bad, of, first },
        ))]);
    }
}

/// Turns a decoded frame into what `recv` hands out, flattening batches.
///
/// Transports that read newline-framed streams share this; the items are
/// pushed to `out` in order.
pub(crate) fn frame_to_received(frame: mcp_stack_jsonrpc::Frame, out: &mut impl Extend<Received>) {
    use mcp_stack_jsonrpc::Frame;
    match frame {
        Frame::Message(m) => out.extend([Received::Message(m)]),
        Frame::Batch(items) => batch_to_received(items, out),
        Frame::Malformed(m) => out.extend([Received::Invalid(InvalidFrame::Malformed(m))]),
        Frame::Oversized(o) => out.extend([Received::Invalid(InvalidFrame::Oversized(o))]),
        Frame::Truncated(t) => out.extend([Received::Invalid(InvalidFrame::Truncated(t))]),
        // `Frame` may grow; a frame we do not know is not a message.
        _ => {}
    }
}
