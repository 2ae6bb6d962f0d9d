//! The message model: requests, notifications, responses and error responses.

use std::fmt;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::batch::Batches;
use crate::id::Id;
use crate::raw::RawJson;

mod batch_parse;
mod fast;
mod outgoing;
mod parse;
mod serialize;
pub use outgoing::OutgoingRequest;
pub(crate) use serialize::write_compact;

/// One JSON-RPC 2.0 message.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Message {
    /// A request: expects a response with the same id.
    Request(Request),
    /// A notification: no id, no response.
    Notification(Notification),
    /// A successful response.
    Response(Response),
    /// An error response.
    Error(ErrorResponse),
}

/// A request: `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request id; the response carries the same one.
    pub id: Id,
    /// The method name.
    pub method: String,
    /// The parameters, an object or an array, as raw JSON.
    pub params: Option<RawJson>,
}

/// A notification: `{"jsonrpc":"2.0","method":…,"params":…}`.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The parameters, an object or an array, as raw JSON.
    pub params: Option<RawJson>,
}

/// A successful response: `{"jsonrpc":"2.0","id":…,"result":…}`.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request this answers.
    pub id: Id,
    /// The result, as raw JSON.
    pub result: RawJson,
}

/// An error response: `{"jsonrpc":"2.0","id":…,"error":{…}}`.
///
/// The id is absent (or `null`) when the peer could not tell which request
/// failed, for example because it could not parse it.
#[derive(Debug, Clone)]
pub struct ErrorResponse {
    /// The id of the request this answers, when known.
    pub id: Option<Id>,
    /// What went wrong.
    pub error: ErrorObject,
}

/// The `error` member of an error response.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code; see [`crate::codes`].
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Additional information, as raw JSON.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "parse::present"
    )]
    pub data: Option<RawJson>,
}

impl ErrorObject {
    /// An error with a code and a message and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Parses `data` into a type, when present.
    pub fn data_as<T: DeserializeOwned>(&self) -> Option<Result<T, serde_json::Error>> {
        self.data.as_ref().map(RawJson::parse)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {}", self.message, self.code)?;
        if let Some(name) = crate::codes::name(self.code) {
            write!(f, ", {name}")?;
        }
        f.write_str(")")
    }
}

impl Request {
    /// A request with raw parameters.
    pub fn new(id: impl Into<Id>, method: impl Into<String>, params: Option<RawJson>) -> Self {
        Request {
            id: id.into(),
            method: method.into(),
            params,
        }
    }
}

impl Notification {
    /// A notification with raw parameters.
    pub fn new(method: impl Into<String>, params: Option<RawJson>) -> Self {
        Notification {
            method: method.into(),
            params,
        }
    }
}

impl Response {
    /// A successful response (`result` a [`RawJson`], or serde_json's
    /// `Box<RawValue>`).
    pub fn new(id: impl Into<Id>, result: impl Into<RawJson>) -> Self {
        Response {
            id: id.into(),
            result: result.into(),
        }
    }
}

impl ErrorResponse {
    /// An error response.
    pub fn new(id: Option<Id>, error: ErrorObject) -> Self {
        ErrorResponse { id, error }
    }
}

macro_rules! from_variant {
    ($ty:ident) => {
        impl From<$ty> for Message {
            fn from(m: $ty) -> Self {
                Message::$ty(m)
            }
        }
    };
}
from_variant!(Request);
from_variant!(Notification);
from_variant!(Response);

impl From<ErrorResponse> for Message {
    fn from(m: ErrorResponse) -> Self {
        Message::Error(m)
    }
}

impl Message {
    /// The method, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) | Message::Error(_) => None,
        }
    }

    /// The id, for requests, responses and error responses that carry one.
    pub fn id(&self) -> Option<&Id> {
        match self {
            Message::Request(r) => Some(&r.id),
            Message::Response(r) => Some(&r.id),
            Message::Error(e) => e.id.as_ref(),
            Message::Notification(_) => None,
        }
    }

    /// Parses one message (not a batch) from bytes.
    ///
    /// ```
    /// use mcp_stack_jsonrpc::Message;
    /// let m = Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap();
    /// assert!(matches!(m, Message::Response(_)));
    /// let err = Message::from_slice(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).unwrap_err();
    /// assert_eq!(err.to_string(), "request id is null; ids are integers or strings");
    /// ```
    pub fn from_slice(bytes: &[u8]) -> Result<Message, MessageError> {
        Self::single(parse_payload_with(bytes, || Batches::REFUSED))
    }

    /// [`from_slice`](Self::from_slice) for a frame held in a [`Bytes`]: its
    /// `params`, `result` and error `data` are slices of `frame`, not copies.
    pub fn from_bytes(frame: &Bytes) -> Result<Message, MessageError> {
        Self::single(parse_frame_with(frame, || Batches::REFUSED))
    }

    fn single(parsed: Result<Payload, MessageError>) -> Result<Message, MessageError> {
        // A batch is refused before any element is built.
        match parsed {
            Ok(Payload::Single(m)) => Ok(m),
            Ok(Payload::Batch(_)) | Err(MessageError::BatchRefused { .. }) => {
                Err(MessageError::UnexpectedBatch)
            }
            Err(e) => Err(e),
        }
    }

    /// Serializes the message to compact JSON (no trailing newline), byte
    /// for byte what `serde_json::to_vec` writes.
    pub fn to_vec(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut out = Vec::with_capacity(self.encoded_len_hint());
        write_compact(self, &mut out)?;
        Ok(out)
    }
}

/// What one frame held: a single message or a batch.
#[derive(Debug)]
#[non_exhaustive]
pub enum Payload {
    /// One message.
    Single(Message),
    /// A batch (a JSON array), each element parsed on its own so that one bad
    /// element does not hide the others. Batches are received, never sent.
    Batch(Vec<Result<Message, MessageError>>),
}

/// Why a JSON text is not a JSON-RPC 2.0 message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// The bytes are not UTF-8.
    #[error("not UTF-8 text")]
    NotUtf8,
    /// The text is not JSON.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// Valid JSON, but not an object (or a batch of objects).
    #[error("a JSON {0}, not a JSON-RPC message object")]
    NotAnObject(&'static str),
    /// `[]`.
    #[error("an empty batch")]
    EmptyBatch,
    /// A batch where a single message was expected.
    #[error("a batch where a single message was expected")]
    UnexpectedBatch,
    /// A batch where batches are not accepted (see [`Batches`]): its
    /// elements were counted, not parsed.
    #[error("a batch of {elements} elements where batches are not accepted")]
    BatchRefused {
        /// How many elements it had.
        elements: usize,
    },
    /// A batch with more elements than accepted: refused whole.
    #[error("a batch of {elements} elements; at most {limit} are accepted")]
    BatchTooLong {
        /// How many elements it had.
        elements: usize,
        /// The most accepted.
        limit: usize,
    },
    /// A batch whose elements, parsed, would take more memory than its
    /// budget (see [`Batches::within`]): refused whole.
    #[error(
        "a batch of {elements} elements whose parsed elements would take more than its \
         {budget}-byte budget"
    )]
    BatchOverBudget {
        /// How many elements it had.
        elements: usize,
        /// The budget, in bytes.
        budget: usize,
    },
    /// No `jsonrpc` member.
    #[error("missing \"jsonrpc\": \"2.0\"")]
    MissingVersion,
    /// `jsonrpc` is not `"2.0"`.
    #[error("\"jsonrpc\" is {0}, expected \"2.0\"")]
    WrongVersion(String),
    /// A member has the wrong type or shape.
    #[error("{0}")]
    InvalidMember(String),
    /// A request whose id is `null`.
    #[error("request id is null; ids are integers or strings")]
    NullRequestId,
    /// An id that is neither an integer nor a string.
    #[error("{0}")]
    InvalidId(&'static str),
    /// `params` is neither an object nor an array.
    #[error("\"params\" must be an object or an array")]
    ParamsNotStructured,
    /// A message with `method` and also `result` or `error`.
    #[error("has \"method\" and also \"result\" or \"error\"")]
    MethodAndResponse,
    /// A response with both `result` and `error`.
    #[error("has both \"result\" and \"error\"")]
    ResultAndError,
    /// A success response without a usable id.
    #[error("a result without an id")]
    ResultWithoutId,
    /// None of `method`, `result`, `error`.
    #[error("has none of \"method\", \"result\", \"error\"")]
    NotAMessage,
}

/// Parses a frame's bytes into one message or a batch, with the default
/// batch bounds ([`Batches::default`]).
///
/// Leading and trailing JSON whitespace is allowed.
pub fn parse_payload(bytes: &[u8]) -> Result<Payload, MessageError> {
    parse_payload_with(bytes, Batches::default)
}

/// Parses a frame's bytes into one message or a batch, a batch as far as
/// `batches` allows (see [`Batches`]).
///
/// `batches` is called only when the frame is a JSON array, when the
/// parser reaches its `[` and before any element is built: a single
/// message never calls it. A batch refused (or over a bound) stops the
/// parse there; its top-level elements are then counted by a scan of its
/// bytes that follows strings and nesting (about ten times cheaper than
/// skipping them through serde), not parsed into anything.
pub fn parse_payload_with(
    bytes: &[u8],
    batches: impl FnOnce() -> Batches,
) -> Result<Payload, MessageError> {
    // All of the text must be UTF-8, members the parser skips included
    // (serde_json checks only the strings it keeps). Checking once up front
    // also spares the parser its checks string by string. simdutf8 accepts
    // exactly what `std::str::from_utf8` accepts, several times faster on
    // text with some non-ASCII (std's fast path is for ASCII runs only).
    let text = simdutf8::basic::from_utf8(bytes).map_err(|_| MessageError::NotUtf8)?;
    parse::parse_text(parse::Source { frame: None, text }, batches)
}

/// [`parse_payload_with`] for a frame held in a [`Bytes`] (a line the codec
/// split off its read buffer, an HTTP body, an SSE event's data): the
/// messages' `params`, `result` and error `data` are slices of `frame`,
/// not copies, so each member is read once, by the layer that knows its type.
pub fn parse_frame_with(
    frame: &Bytes,
    batches: impl FnOnce() -> Batches,
) -> Result<Payload, MessageError> {
    let text = simdutf8::basic::from_utf8(frame).map_err(|_| MessageError::NotUtf8)?;
    parse::parse_text(
        parse::Source {
            frame: Some(frame),
            text,
        },
        batches,
    )
}

/// A short, printable excerpt of some text: at most `max` characters, control
/// characters escaped, with `…` when cut.
pub(crate) fn excerpt_str(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(max.min(text.len()) + 4);
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::to_raw;

    fn err(s: &str) -> MessageError {
        Message::from_slice(s.as_bytes()).unwrap_err()
    }

    #[test]
    fn ids_distinguish_number_and_string() {
        let a = Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"result":0}"#).unwrap();
        let b = Message::from_slice(br#"{"jsonrpc":"2.0","id":"1","result":0}"#).unwrap();
        assert_ne!(a.id(), b.id());
    }

    #[test]
    fn large_integer_ids_round_trip() {
        for text in [
            "18446744073709551615",
            "-9223372036854775808",
            "9223372036854775808",
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{text},"method":"m"}}"#);
            let m = Message::from_slice(line.as_bytes()).unwrap();
            let out = String::from_utf8(m.to_vec().unwrap()).unwrap();
            assert!(out.contains(&format!("\"id\":{text}")), "{out}");
        }
        // Beyond 64 bits serde_json reads a float: refused rather than rounded.
        let e = err(r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"m"}"#);
        assert!(matches!(e, MessageError::InvalidId(_)));
        let e = err(r#"{"jsonrpc":"2.0","id":1e3,"method":"m"}"#);
        assert!(matches!(e, MessageError::InvalidId(_)));
    }

    #[test]
    fn serializes_compactly_with_version() {
        let req = Request::new(
            3,
            "tools/list",
            Some(to_raw(&serde_json::json!({})).unwrap()),
        );
        let text = String::from_utf8(Message::from(req).to_vec().unwrap()).unwrap();
        assert_eq!(
            text,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}"#
        );
        let e = ErrorResponse::new(None, ErrorObject::new(-32600, "bad"));
        let text = String::from_utf8(Message::from(e).to_vec().unwrap()).unwrap();
        assert_eq!(
            text,
            r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"bad"}}"#
        );
    }

    #[test]
    fn excerpt_escapes_and_cuts() {
        assert_eq!(excerpt_str("a\x1b[31mb", 100), "a\\u{1b}[31mb");
        assert_eq!(excerpt_str("abcdef", 3), "abc…");
    }

    /// The reference path: std's UTF-8 check, then the same parse.
    fn parse_payload_std(bytes: &[u8]) -> Result<Payload, MessageError> {
        match std::str::from_utf8(bytes) {
            Ok(text) => parse::parse_text(parse::Source { frame: None, text }, Batches::default),
            Err(_) => Err(MessageError::NotUtf8),
        }
    }

    mod fast_path {
        use super::*;
        use proptest::prelude::*;

        /// JSON-RPC-looking text: pieces of envelopes, numbers, and strings
        /// with one- to four-byte characters, long enough to cross the
        /// validator's 64-byte blocks.
        fn text() -> impl Strategy<Value = Vec<u8>> {
            let piece = prop::sample::select(vec![
                r#"{"jsonrpc":"2.0","#,
                r#""id":7,"#,
                r#""id":"é7","#,
                r#""method":"tools/call","#,
                r#""params":{"text":""#,
                r#""result":{"content":[{"type":"text","text":""#,
                r#""}]}}"#,
                r#""},"#,
                "naïve café ",
                "日本語 ",
                "😀\\u00e9\\\\ ",
                "\\ud83d\\ude00\\n ",
                "\\u{10ffff}\u{10ffff}",
                "plain ascii words of some length, ",
                "]",
                "}",
                "[",
                "\"",
                ",",
            ]);
            prop::collection::vec(piece, 0..40).prop_map(|p| p.concat().into_bytes())
        }

        /// Text, then a few bytes replaced, inserted or removed (surrogate,
        /// overlong and truncated sequences among them), or arbitrary bytes.
        fn bytes() -> impl Strategy<Value = Vec<u8>> {
            let edit = (
                any::<prop::sample::Index>(),
                0..3u8,
                prop::sample::select(vec![
                    0x80u8, 0xBF, 0xC0, 0xC1, 0xC3, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF, b'"',
                    b'\\', b'{', b'\n', 0x00, 0xA0, 0x9F,
                ]),
            );
            prop_oneof![
                3 => (text(), prop::collection::vec(edit, 0..4)).prop_map(|(mut t, edits)| {
                    for (at, kind, byte) in edits {
                        if t.is_empty() {
                            t.push(byte);
                            continue;
                        }
                        let i = at.index(t.len());
                        match kind {
                            0 => t[i] = byte,
                            1 => t.insert(i, byte),
                            _ => {
                                t.remove(i);
                            }
                        }
                    }
                    t
                }),
                1 => text(),
                1 => prop::collection::vec(any::<u8>(), 0..300),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

            /// The SIMD UTF-8 check accepts and refuses exactly what std's
            /// does, so the fast path parses every input as the reference
            /// path does.
            #[test]
            fn fast_and_reference_paths_agree(bytes in bytes()) {
                prop_assert_eq!(
                    format!("{:?}", parse_payload(&bytes)),
                    format!("{:?}", parse_payload_std(&bytes))
                );
            }
        }
    }
}
