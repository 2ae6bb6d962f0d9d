//! Parsing: one pass over the text, into loosely typed fields, then checks
//! that give precise reasons. A top-level array is read by
//! [`batch_parse`](super::batch_parse).

use bytes::Bytes;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer};
use serde_json::value::RawValue;

use super::batch_parse::{TopLevel, TopSeed, count_elements};
use super::{
    ErrorObject, ErrorResponse, Message, MessageError, Notification, Payload, Request, Response,
    excerpt_str,
};
use crate::batch::Batches;
use crate::id::WireId;
use crate::raw::RawJson;

/// The text being parsed, checked as UTF-8, and the frame it is, when it is
/// held in a [`Bytes`]: raw members are then slices of the frame, else copies.
#[derive(Clone, Copy)]
pub(crate) struct Source<'a> {
    pub(crate) frame: Option<&'a Bytes>,
    pub(crate) text: &'a str,
}

impl Source<'_> {
    fn keep(&self, raw: &RawValue) -> RawJson {
        RawJson::in_frame(self.frame, self.text, raw.get())
    }

    /// `value`, a JSON value checked and borrowed from the text.
    pub(super) fn keep_str(&self, value: &str) -> RawJson {
        RawJson::in_frame(self.frame, self.text, value)
    }
}

/// [`parse_payload_with`](super::parse_payload_with) after the UTF-8 check:
/// a plain success response by the fast path, anything else (or anything
/// it is unsure of) by serde.
pub(crate) fn parse_text(
    source: Source<'_>,
    batches: impl FnOnce() -> Batches,
) -> Result<Payload, MessageError> {
    match super::fast::response(&source) {
        Some(message) => Ok(Payload::Single(message)),
        None => parse_text_in_full(source, batches),
    }
}

/// Every frame, through serde: one pass into loosely typed fields.
pub(super) fn parse_text_in_full(
    source: Source<'_>,
    batches: impl FnOnce() -> Batches,
) -> Result<Payload, MessageError> {
    let text = source.text;
    let mut de = serde_json::Deserializer::from_str(text);
    let mut seed = TopSeed {
        batches: Some(batches),
        refusal: None,
        source,
    };
    let parsed = (&mut seed)
        .deserialize(&mut de)
        .and_then(|t| de.end().map(|()| t));
    match parsed {
        Ok(TopLevel::Single(w)) => w.into_message(&source).map(Payload::Single),
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

/// A message's members as read: the raw ones borrowed from the text (kept
/// as slices of the frame, or copied, by [`Wire::into_message`]).
#[derive(Deserialize)]
pub(super) struct Wire<'a> {
    /// Only compared, never kept.
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    id: Option<WireId>,
    #[serde(default, deserialize_with = "method")]
    method: Option<String>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "error_object")]
    error: Option<WireError<'a>>,
}

/// The `error` member as read: [`ErrorObject`] with `data` borrowed.
#[derive(Deserialize)]
struct WireError<'a> {
    code: i64,
    message: String,
    #[serde(borrow, default, deserialize_with = "present")]
    data: Option<&'a RawValue>,
}

/// `Some` even for `null`: a member that is present must not look absent.
pub(super) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

fn method<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d)
        .map(Some)
        .map_err(|_| de::Error::custom("\"method\" must be a string"))
}

fn error_object<'de, D: Deserializer<'de>>(d: D) -> Result<Option<WireError<'de>>, D::Error> {
    WireError::deserialize(d).map(Some).map_err(|e| {
        de::Error::custom(format_args!(
            "\"error\" must be an object with an integer \"code\" and a string \"message\" ({e})"
        ))
    })
}

impl Wire<'_> {
    /// The message, its raw members taken from `source`.
    pub(super) fn into_message(self, source: &Source<'_>) -> Result<Message, MessageError> {
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
            let params = self.params.map(|p| source.keep(p));
            return match self.id {
                None => Ok(Message::Notification(Notification { method, params })),
                Some(WireId::Id(id)) => Ok(Message::Request(Request { id, method, params })),
                Some(WireId::Null) => Err(MessageError::NullRequestId),
                Some(WireId::Invalid(why)) => Err(MessageError::InvalidId(why)),
            };
        }
        match (self.result, self.error) {
            (Some(_), Some(_)) => Err(MessageError::ResultAndError),
            (Some(result), None) => match self.id {
                Some(WireId::Id(id)) => Ok(Message::Response(Response {
                    id,
                    result: source.keep(result),
                })),
                Some(WireId::Invalid(why)) => Err(MessageError::InvalidId(why)),
                None | Some(WireId::Null) => Err(MessageError::ResultWithoutId),
            },
            (None, Some(error)) => {
                let error = ErrorObject {
                    code: error.code,
                    message: error.message,
                    data: error.data.map(|d| source.keep(d)),
                };
                match self.id {
                    Some(WireId::Id(id)) => Ok(Message::Error(ErrorResponse {
                        id: Some(id),
                        error,
                    })),
                    None | Some(WireId::Null) => {
                        Ok(Message::Error(ErrorResponse { id: None, error }))
                    }
                    Some(WireId::Invalid(why)) => Err(MessageError::InvalidId(why)),
                }
            }
            (None, None) => Err(MessageError::NotAMessage),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::Id;

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
}
