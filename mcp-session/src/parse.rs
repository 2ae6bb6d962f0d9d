//! Request parameters out and results in: encoding, decoding, and the
//! shape scan that tells a `tools/call` result's kind without building it.

use std::fmt;

use mcp_jsonrpc::{RawJson, RawValue};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::SessionError;

pub(crate) fn to_raw_params<P: Serialize + ?Sized>(
    method: &str,
    params: &P,
) -> Result<RawJson, SessionError> {
    mcp_jsonrpc::to_raw(params).map_err(|e| SessionError::InvalidResponse {
        method: method.to_string(),
        reason: format!("cannot encode the request: {e}"),
    })
}

/// What `tools/call` must know of a result before parsing it whole: its
/// `resultType`, and whether it has a `task` object. Every other member is
/// skipped unparsed.
#[derive(Deserialize)]
pub(crate) struct ResultShape {
    #[serde(rename = "resultType", default)]
    pub(crate) result_type: Option<Value>,
    #[serde(default)]
    pub(crate) task: Option<IsObject>,
}

/// Whether a JSON value is an object; the value itself is skipped.
pub(crate) struct IsObject(pub(crate) bool);

impl<'de> Deserialize<'de> for IsObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = bool;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(true)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(false)
            }
            fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_str<E>(self, _: &str) -> Result<bool, E> {
                Ok(false)
            }
            fn visit_unit<E>(self) -> Result<bool, E> {
                Ok(false)
            }
        }
        d.deserialize_any(Visit).map(IsObject)
    }
}

pub(crate) fn parse_value<R: DeserializeOwned>(
    method: &str,
    value: Value,
) -> Result<R, SessionError> {
    serde_json::from_value(value).map_err(|e| SessionError::InvalidResponse {
        method: method.to_string(),
        reason: e.to_string(),
    })
}

pub(crate) fn parse_result<R: DeserializeOwned>(
    method: &str,
    raw: &RawValue,
) -> Result<R, SessionError> {
    mcp_jsonrpc::from_raw(raw).map_err(|e| SessionError::InvalidResponse {
        method: method.to_string(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_protocol::modern::ResultType;

    fn shape(text: &str) -> (ResultType, Option<bool>) {
        let s: ResultShape = serde_json::from_str(text).unwrap();
        let kind = ResultType::named(s.result_type.as_ref().and_then(Value::as_str));
        (kind, s.task.map(|t| t.0))
    }

    #[test]
    fn the_shape_of_a_result_is_read_without_building_it() {
        let content = r#""content":[{"type":"text","text":"hi","_meta":{"a":[1,{"b":null}]}}]"#;
        assert_eq!(
            shape(&format!("{{{content}}}")),
            (ResultType::Complete, None)
        );
        assert_eq!(
            shape(&format!(r#"{{{content},"resultType":"input_required"}}"#)),
            (ResultType::InputRequired, None)
        );
        assert_eq!(
            shape(r#"{"resultType":"task","task":{"taskId":"t","status":"working"}}"#),
            (ResultType::Task, Some(true))
        );
        // Only an object is a task; other values and null are not.
        assert_eq!(shape(r#"{"task":"t"}"#).1, Some(false));
        assert_eq!(shape(r#"{"task":[{}]}"#).1, Some(false));
        assert_eq!(shape(r#"{"task":null}"#).1, None);
        // A resultType that is not a string means complete, as before.
        assert_eq!(shape(r#"{"resultType":7}"#).0, ResultType::Complete);
        assert_eq!(
            shape(r#"{"resultType":"later"}"#).0,
            ResultType::Other("later".into())
        );
    }
}
