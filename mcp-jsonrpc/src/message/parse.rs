//! Parsing: one pass over the text, into loosely typed fields, then checks
//! that give precise reasons. A top-level array is read by
//! [`batch_parse`](super::batch_parse).

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer};
use serde_json::value::RawValue;

use super::batch_parse::{TopLevel, TopSeed, count_elements};
use super::{
    ErrorObject, ErrorResponse, Message, MessageError, Notification, Payload, RawJson, Request,
    Response, excerpt_str,
};
use crate::batch::Batches;
use crate::id::WireId;

/// [`parse_payload_with`](super::parse_payload_with) after the UTF-8 check.
pub(super) fn parse_text(
    text: &str,
    batches: impl FnOnce() -> Batches,
) -> Result<Payload, MessageError> {
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

#[derive(Deserialize)]
pub(super) struct Wire<'a> {
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

fn error_object<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ErrorObject>, D::Error> {
    ErrorObject::deserialize(d).map(Some).map_err(|e| {
        de::Error::custom(format_args!(
            "\"error\" must be an object with an integer \"code\" and a string \"message\" ({e})"
        ))
    })
}

impl Wire<'_> {
    pub(super) fn into_message(self) -> Result<Message, MessageError> {
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
