//! JSON-RPC 2.0 for newline-delimited streams.
//!
//! This crate knows nothing about MCP. It gives you:
//!
//! * the message model ([`Message`]: [`Request`], [`Notification`],
//!   [`Response`], [`ErrorResponse`]) with `params`, `result` and error `data`
//!   kept as raw JSON ([`RawJson`], a slice of the frame they were read from)
//!   so each message is parsed once, by the layer that knows its type;
//! * [`OutgoingRequest`], a request whose params serde writes straight into
//!   the frame;
//! * precise reasons when JSON is not JSON-RPC ([`MessageError`]);
//! * batches parsed only as far as a setting allows ([`Batches`], shared
//!   with a running codec through a [`BatchSwitch`]): refused whole, or
//!   bounded in elements and in the memory their parsed form takes;
//! * [`NewlineCodec`], a `tokio_util` codec with a bounded frame length that
//!   reports bad lines as items ([`Frame::Malformed`], [`Frame::Oversized`])
//!   instead of ending the stream (cargo feature `codec`, on by default;
//!   without it the crate is the message model alone, with no tokio).
//!
//! # Example
//!
//! ```
//! use bytes::BytesMut;
//! use mcp_stack_jsonrpc::{Frame, Message, NewlineCodec, Request, to_raw};
//! use tokio_util::codec::{Decoder, Encoder};
//!
//! let mut codec = NewlineCodec::new();
//! let mut buf = BytesMut::new();
//! let params = to_raw(&serde_json::json!({"name": "echo"})).unwrap();
//! codec.encode(Message::from(Request::new(1, "tools/call", Some(params))), &mut buf).unwrap();
//! // A server that logs to stdout: the noise is reported, the stream goes on.
//! buf.extend_from_slice(b"server starting...\n");
//! buf.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n");
//!
//! assert!(matches!(codec.decode(&mut buf).unwrap(), Some(Frame::Message(Message::Request(_)))));
//! let Some(Frame::Malformed(bad)) = codec.decode(&mut buf).unwrap() else { panic!() };
//! assert_eq!(bad.excerpt, "server starting...");
//! let Some(Frame::Message(Message::Response(r))) = codec.decode(&mut buf).unwrap() else {
//!     panic!()
//! };
//! assert_eq!(r.result.get(), "{}");
//! ```

mod batch;
#[cfg(feature = "codec")]
mod codec;
pub mod codes;
mod compact;
mod id;
mod message;
mod raw;

pub use batch::{
    BATCH_ELEMENT_COST, BatchSwitch, Batches, DEFAULT_BATCH_BUDGET, DEFAULT_MAX_BATCH_ELEMENTS,
};
#[cfg(feature = "codec")]
pub use codec::{
    DEFAULT_MAX_FRAME_LENGTH, EncodeError, Frame, Malformed, NewlineCodec, Oversized, Truncated,
    excerpt,
};
pub use compact::find_escape;
pub use id::Id;
pub use message::{
    ErrorObject, ErrorResponse, Message, MessageError, Notification, OutgoingRequest, Payload,
    Request, Response, parse_frame_with, parse_payload, parse_payload_with,
};
pub use raw::{RawJson, from_raw, to_raw};
pub use serde_json::value::RawValue;
