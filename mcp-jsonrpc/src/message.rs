//! The message model: requests, notifications, responses and error responses.

use std::fmt;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess,
    Visitor,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::batch::{BATCH_ELEMENT_COST, Batches};
use crate::id::{Id, WireId};

mod serialize;
pub(crate) use serialize::write_compact;

/// A JSON value kept as its raw text until the layer that knows its type parses it.
///
/// Keeping `params` and `result` raw means a message is parsed once: the codec
/// checks the envelope, and the session parses the payload straight into its
/// own types.
pub type RawJson = Box<RawValue>;

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
        deserialize_with = "present"
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
        self.data
            .as_deref()
            .map(|raw| serde_json::from_str(raw.get()))
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

/// Serializes a value to raw JSON, for building `params` and `result`.
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<RawJson, serde_json::Error> {
    serde_json::value::to_raw_value(value)
}

/// Parses raw JSON into a type.
pub fn from_raw<T: DeserializeOwned>(raw: &RawValue) -> Result<T, serde_json::Error> {
    serde_json::from_str(raw.get())
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
    /// A successful response.
    pub fn new(id: impl Into<Id>, result: RawJson) -> Self {
        Response {
            id: id.into(),
            result,
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
    /// use mcp_jsonrpc::Message;
    /// let m = Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap();
    /// assert!(matches!(m, Message::Response(_)));
    /// let err = Message::from_slice(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).unwrap_err();
    /// assert_eq!(err.to_string(), "request id is null; ids are integers or strings");
    /// ```
    pub fn from_slice(bytes: &[u8]) -> Result<Message, MessageError> {
        // A batch is refused before any element is built.
        match parse_payload_with(bytes, || Batches::REFUSED) {
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
    parse_text(text, batches)
}

/// [`parse_payload_with`] after the UTF-8 check.
fn parse_text(text: &str, batches: impl FnOnce() -> Batches) -> Result<Payload, MessageError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let mut seed = TopSeed {
        batches: Some(batches),
        refusal: None,
    };
    let parsed = (&mut seed)
        .deserialize(&mut de)
        .and_then(|t| de.end().map(|()| t));
    match parsed {
        Ok(TopLevel::Single(w)) => w.into_message().map(Payload::Single),
        Ok(TopLevel::Batch(items)) => Ok(Payload::Batch(items)),
        Ok(TopLevel::Other(kind)) => Err(MessageError::NotAnObject(kind)),
        Err(e) => match seed.refusal {
            // The parse was stopped at the batch: its elements are counted
            // by a scan of the bytes, never built.
            Some(refusal) => Err(match count_elements(text) {
                Ok(0) => MessageError::EmptyBatch,
                Ok(elements) => refusal.error(elements),
                Err(e) => e,
            }),
            None => Err(classify_json_error(e)),
        },
    }
}

fn classify_json_error(e: serde_json::Error) -> MessageError {
    match e.classify() {
        serde_json::error::Category::Data => MessageError::InvalidMember(e.to_string()),
        _ => MessageError::NotJson(e.to_string()),
    }
}

// ---------------------------------------------------------------------------
// Parsing: one pass over the text, into loosely typed fields, then checks that
// give precise reasons.

#[derive(Deserialize)]
struct Wire<'a> {
    /// Borrowed from the text: only compared, never kept.
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    id: Option<WireId>,
    #[serde(default, deserialize_with = "method")]
    method: Option<String>,
    #[serde(default, deserialize_with = "present")]
    params: Option<RawJson>,
    #[serde(default, deserialize_with = "present")]
    result: Option<RawJson>,
    #[serde(default, deserialize_with = "error_object")]
    error: Option<ErrorObject>,
}

/// `Some` even for `null`: a member that is present must not look absent.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

fn method<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d)
        .map(Some)
        .map_err(|_| de::Error::custom("\"method\" must be a string"))
}

fn error_object<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ErrorObject>, D::Error> {
    ErrorObject::deserialize(d).map(Some).map_err(|e| {
        de::Error::custom(format_args!(
            "\"error\" must be an object with an integer \"code\" and a string \"message\" ({e})"
        ))
    })
}

impl Wire<'_> {
    fn into_message(self) -> Result<Message, MessageError> {
        match self.jsonrpc.map(RawValue::get) {
            None => return Err(MessageError::MissingVersion),
            Some("\"2.0\"") => {}
            Some(other) => return Err(MessageError::WrongVersion(excerpt_str(other, 32))),
        }
        if let Some(method) = self.method {
            if self.result.is_some() || self.error.is_some() {
                return Err(MessageError::MethodAndResponse);
            }
            if let Some(p) = &self.params
                && !matches!(p.get().as_bytes().first(), Some(b'{' | b'['))
            {
                return Err(MessageError::ParamsNotStructured);
            }
            return match self.id {
                None => Ok(Message::Notification(Notification {
                    method,
                    params: self.params,
                })),
                Some(WireId::Id(id)) => Ok(Message::Request(Request {
                    id,
                    method,
                    params: self.params,
                })),
                Some(WireId::Null) => Err(MessageError::NullRequestId),
                Some(WireId::Invalid(why)) => Err(MessageError::InvalidId(why)),
            };
        }
        match (self.result, self.error) {
            (Some(_), Some(_)) => Err(MessageError::ResultAndError),
            (Some(result), None) => match self.id {
                Some(WireId::Id(id)) => Ok(Message::Response(Response { id, result })),
                Some(WireId::Invalid(why)) => Err(MessageError::InvalidId(why)),
                None | Some(WireId::Null) => Err(MessageError::ResultWithoutId),
            },
            (None, Some(error)) => match self.id {
                Some(WireId::Id(id)) => Ok(Message::Error(ErrorResponse {
                    id: Some(id),
                    error,
                })),
                None | Some(WireId::Null) => Ok(Message::Error(ErrorResponse { id: None, error })),
                Some(WireId::Invalid(why)) => Err(MessageError::InvalidId(why)),
            },
            (None, None) => Err(MessageError::NotAMessage),
        }
    }
}

/// A top-level value: an object, a batch within its bounds, or another
/// JSON value. (A batch refused whole stops the parse: see [`Refusal`].)
enum TopLevel<'a> {
    Single(Wire<'a>),
    /// At least one element, each parsed on its own.
    Batch(Vec<Result<Message, MessageError>>),
    Other(&'static str),
}

/// Why a batch was refused whole. The parse stops there (with a serde
/// error, the only way to stop it) and the reason is kept here; the
/// elements are then counted by [`count_elements`], not parsed.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    NotAccepted,
    TooLong { limit: usize },
    OverBudget { budget: usize },
}

impl Refusal {
    fn error(self, elements: usize) -> MessageError {
        match self {
            Refusal::NotAccepted => MessageError::BatchRefused { elements },
            Refusal::TooLong { limit } => MessageError::BatchTooLong { elements, limit },
            Refusal::OverBudget { budget } => MessageError::BatchOverBudget { elements, budget },
        }
    }
}

/// Parses the top-level value; `batches` gives the batch setting, asked
/// only when the value is an array, and `refusal` says why a batch stopped
/// the parse.
struct TopSeed<F> {
    batches: Option<F>,
    refusal: Option<Refusal>,
}

impl<'de, F: FnOnce() -> Batches> DeserializeSeed<'de> for &mut TopSeed<F> {
    type Value = TopLevel<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<TopLevel<'de>, D::Error> {
        d.deserialize_any(TopVisitor(self))
    }
}

struct TopVisitor<'s, F>(&'s mut TopSeed<F>);

/// The kind of a value that is neither an object nor an array.
macro_rules! other_kind {
    ($wrap:path; $($fn:ident: $ty:ty => $kind:literal),* $(,)?) => {
        $(fn $fn<E: de::Error>(self, _: $ty) -> Result<Self::Value, E> {
            Ok($wrap($kind))
        })*

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($wrap("null"))
        }
    };
}

impl<'de, F: FnOnce() -> Batches> Visitor<'de> for TopVisitor<'_, F> {
    type Value = TopLevel<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object or a batch")
    }

    other_kind! {
        TopLevel::Other;
        visit_bool: bool => "boolean",
        visit_i64: i64 => "number",
        visit_u64: u64 => "number",
        visit_f64: f64 => "number",
        visit_str: &str => "string",
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TopLevel<'de>, A::Error> {
        Wire::deserialize(de::value::MapAccessDeserializer::new(map)).map(TopLevel::Single)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<TopLevel<'de>, A::Error> {
        let limits = self.0.batches.take().map_or(Batches::REFUSED, |f| f());
        batch(seq, limits).map_err(|e| match e {
            BatchError::Refused(refusal) => {
                self.0.refusal = Some(refusal);
                de::Error::custom("a batch refused whole")
            }
            BatchError::Json(e) => e,
        })
    }
}

/// Reads a batch's elements as far as `limits` allows. Each element is
/// turned into its message (or the reason it is none) as soon as it is
/// read, and charged against the budget. A batch refused or over a bound
/// is dropped at once and the parse stopped (`Err(Ok(refusal))`); a JSON
/// error is `Err(Err(_))`.
fn batch<'de, A: SeqAccess<'de>>(
    mut seq: A,
    limits: Batches,
) -> Result<TopLevel<'de>, BatchError<A::Error>> {
    if !limits.allowed() {
        return Err(BatchError::Refused(Refusal::NotAccepted));
    }
    let mut items: Vec<Result<Message, MessageError>> = Vec::new();
    let mut charged = 0usize;
    loop {
        if items.len() == limits.max_elements() {
            // Another element (skipped, not built) is one too many.
            if seq.next_element::<IgnoredAny>()?.is_none() {
                break;
            }
            return Err(BatchError::Refused(Refusal::TooLong {
                limit: limits.max_elements(),
            }));
        }
        let Some(Element(item)) = seq.next_element::<Element>()? else {
            break;
        };
        charged = charged.saturating_add(element_cost(&item));
        if charged > limits.budget() {
            return Err(BatchError::Refused(Refusal::OverBudget {
                budget: limits.budget(),
            }));
        }
        items.push(item);
    }
    if items.is_empty() {
        return Err(BatchError::Refused(Refusal::NotAccepted));
    }
    Ok(TopLevel::Batch(items))
}

/// Why [`batch`] stopped.
enum BatchError<E> {
    /// Refused whole, for this reason.
    Refused(Refusal),
    /// Not JSON.
    Json(E),
}

impl<E> From<E> for BatchError<E> {
    fn from(e: E) -> Self {
        BatchError::Json(e)
    }
}

/// Counts a batch's top-level elements by scanning its text (strings and
/// nesting followed, nothing built): how a batch refused whole is
/// described. The text's first non-blank byte is its `[`. Elements are
/// counted, not checked: a refused batch is refused whatever they hold.
fn count_elements(text: &str) -> Result<usize, MessageError> {
    let bytes = text.trim_start_matches(JSON_BLANK).as_bytes();
    let (mut depth, mut commas, mut any) = (0usize, 0usize, false);
    let (mut in_string, mut escaped) = (false, false);
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                any |= depth == 1;
            }
            b'[' | b'{' => {
                any |= depth == 1;
                depth += 1;
            }
            b']' | b'}' => {
                depth = depth.checked_sub(1).ok_or_else(not_a_batch)?;
                if depth == 0 {
                    let rest = bytes.get(i + 1..).unwrap_or_default();
                    if !rest.iter().all(|b| JSON_BLANK.contains(&char::from(*b))) {
                        return Err(MessageError::NotJson(
                            "trailing characters after a batch".into(),
                        ));
                    }
                    return Ok(if any { commas + 1 } else { commas });
                }
            }
            b',' if depth == 1 => commas += 1,
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => any |= depth == 1,
        }
    }
    Err(not_a_batch())
}

/// JSON's blanks.
const JSON_BLANK: [char; 4] = [' ', '\t', '\n', '\r'];

fn not_a_batch() -> MessageError {
    MessageError::NotJson("EOF while parsing a batch".into())
}

/// Skips the rest of a sequence without building anything; how many
/// elements it had.
fn skip_rest<'de, A: SeqAccess<'de>>(seq: &mut A) -> Result<usize, A::Error> {
    let mut n = 0usize;
    while seq.next_element::<IgnoredAny>()?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// What a parsed batch element is charged: [`BATCH_ELEMENT_COST`] plus the
/// text it keeps.
fn element_cost(item: &Result<Message, MessageError>) -> usize {
    BATCH_ELEMENT_COST
        + match item {
            Ok(m) => m.kept_len(),
            Err(e) => e.kept_len(),
        }
}

impl Message {
    /// The bytes of text the message keeps on the heap (method, raw
    /// members, strings), for budgets.
    fn kept_len(&self) -> usize {
        let raw = |r: &Option<RawJson>| r.as_ref().map_or(0, |r| r.get().len());
        let id = |id: &Id| match id {
            Id::String(s) => s.len(),
            Id::Number(_) => 0,
        };
        match self {
            Message::Request(r) => id(&r.id) + r.method.len() + raw(&r.params),
            Message::Notification(n) => n.method.len() + raw(&n.params),
            Message::Response(r) => id(&r.id) + r.result.get().len(),
            Message::Error(e) => {
                e.id.as_ref().map_or(0, id) + e.error.message.len() + raw(&e.error.data)
            }
        }
    }
}

impl MessageError {
    /// The bytes of text the reason keeps on the heap, for budgets.
    fn kept_len(&self) -> usize {
        match self {
            MessageError::NotJson(s)
            | MessageError::WrongVersion(s)
            | MessageError::InvalidMember(s) => s.len(),
            _ => 0,
        }
    }
}

/// A batch element: its message, or why it is none (an element that is
/// not an object, an array inside the batch, an object that is not a
/// message).
struct Element(Result<Message, MessageError>);

impl<'de> Deserialize<'de> for Element {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A member of the wrong type inside one element is an error here:
        // serde cannot resume inside the array after one, so the whole
        // batch fails with this reason.
        d.deserialize_any(ElementVisitor).map(Element)
    }
}

struct ElementVisitor;

impl<'de> Visitor<'de> for ElementVisitor {
    type Value = Result<Message, MessageError>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }

    other_kind! {
        not_an_object;
        visit_bool: bool => "boolean",
        visit_i64: i64 => "number",
        visit_u64: u64 => "number",
        visit_f64: f64 => "number",
        visit_str: &str => "string",
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Wire::deserialize(de::value::MapAccessDeserializer::new(map)).map(Wire::into_message)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        skip_rest(&mut seq)?;
        Ok(not_an_object("array inside a batch"))
    }
}

fn not_an_object(kind: &'static str) -> Result<Message, MessageError> {
    Err(MessageError::NotAnObject(kind))
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

    fn err(s: &str) -> MessageError {
        Message::from_slice(s.as_bytes()).unwrap_err()
    }

    #[test]
    fn kinds_of_message() {
        let r = Message::from_slice(br#"{"jsonrpc":"2.0","id":7,"method":"m","params":{}}"#);
        assert!(matches!(
            r,
            Ok(Message::Request(Request {
                id: Id::Number(7),
                ..
            }))
        ));
        let n = Message::from_slice(br#"{"jsonrpc":"2.0","method":"m"}"#).unwrap();
        assert!(matches!(
            n,
            Message::Notification(Notification { params: None, .. })
        ));
        let e = Message::from_slice(br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"x"}}"#);
        assert!(matches!(
            e,
            Ok(Message::Error(ErrorResponse { id: None, .. }))
        ));
        let e =
            Message::from_slice(br#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":""}}"#);
        assert!(matches!(
            e,
            Ok(Message::Error(ErrorResponse { id: None, .. }))
        ));
    }

    #[test]
    fn null_result_is_a_result() {
        let m = Message::from_slice(br#"{"jsonrpc":"2.0","id":"a","result":null}"#).unwrap();
        let Message::Response(r) = m else { panic!() };
        assert_eq!(r.result.get(), "null");
        assert_eq!(r.id, Id::from("a"));
    }

    #[test]
    fn precise_reasons() {
        assert_eq!(err("3"), MessageError::NotAnObject("number"));
        assert_eq!(err("\"x\""), MessageError::NotAnObject("string"));
        assert_eq!(err("null"), MessageError::NotAnObject("null"));
        assert_eq!(
            err(r#"{"id":1,"method":"m"}"#),
            MessageError::MissingVersion
        );
        assert_eq!(
            err(r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#),
            MessageError::WrongVersion("\"1.0\"".into())
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","id":1}"#),
            MessageError::NotAMessage
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}}"#),
            MessageError::ResultAndError
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","id":1,"method":"m","result":1}"#),
            MessageError::MethodAndResponse
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","result":1}"#),
            MessageError::ResultWithoutId
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"#),
            MessageError::ParamsNotStructured
        );
        assert!(matches!(
            err(r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#),
            MessageError::InvalidId(_)
        ));
        assert!(matches!(
            err(r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#),
            MessageError::InvalidId(_)
        ));
        assert!(matches!(
            err(r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#),
            MessageError::InvalidId(_)
        ));
        let e = err(r#"{"jsonrpc":"2.0","id":1,"method":5}"#);
        assert!(
            e.to_string().starts_with("\"method\" must be a string"),
            "{e}"
        );
        let e = err(r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#);
        assert!(
            e.to_string().starts_with("\"error\" must be an object"),
            "{e}"
        );
        assert!(matches!(err("{"), MessageError::NotJson(_)));
        assert!(matches!(err("{} x"), MessageError::NotJson(_)));
        assert_eq!(err("[]"), MessageError::EmptyBatch);
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
    fn batches_parse_each_element() {
        let p = parse_payload(
            br#"[{"jsonrpc":"2.0","id":1,"result":{}}, 5, {"jsonrpc":"2.0","method":"n"}, []]"#,
        )
        .unwrap();
        let Payload::Batch(items) = p else { panic!() };
        assert_eq!(items.len(), 4);
        assert!(matches!(items[0], Ok(Message::Response(_))));
        assert_eq!(
            items[1].as_ref().unwrap_err(),
            &MessageError::NotAnObject("number")
        );
        assert!(matches!(items[2], Ok(Message::Notification(_))));
        assert!(items[3].is_err());
        assert_eq!(
            err(r#"[{"jsonrpc":"2.0","method":"n"}]"#),
            MessageError::UnexpectedBatch
        );
    }

    #[test]
    fn a_refused_batch_is_counted_not_parsed() {
        let count = |t: &str| count_elements(t);
        assert_eq!(count("[0,0,0]"), Ok(3));
        assert_eq!(count(" \n[ ]\r\n"), Ok(0));
        assert_eq!(
            count(r#"[{"a":[1,2,{"b":","}]},"],[\"x\\",[[]],null]"#),
            Ok(4)
        );
        assert_eq!(count(r#"["\\"]"#), Ok(1));
        assert!(matches!(count("[0,0"), Err(MessageError::NotJson(_))));
        assert!(matches!(count("[0] 1"), Err(MessageError::NotJson(_))));
        assert!(matches!(count("[0]]"), Err(MessageError::NotJson(_))));
        // Through the parser: the setting refuses, the scan counts.
        let refused = |t: &str| parse_payload_with(t.as_bytes(), || Batches::REFUSED).unwrap_err();
        assert_eq!(
            refused(r#"[{"jsonrpc":"2.0","method":"a,b"}, 1, "]"]"#),
            MessageError::BatchRefused { elements: 3 }
        );
        assert_eq!(refused("[ ]"), MessageError::EmptyBatch);
        assert!(matches!(refused("[1,"), MessageError::NotJson(_)));
        // A JSON error inside an accepted batch is still a JSON error.
        let accepted = parse_payload_with(b"[1,}", Batches::default).unwrap_err();
        assert!(matches!(accepted, MessageError::NotJson(_)), "{accepted:?}");
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
            Ok(text) => parse_text(text, Batches::default),
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
