//! Request parameters out and results in: encoding (`tools/call`'s params
//! from borrowed parts), decoding, and the shape scan that tells a
//! `tools/call` result's kind without building it.

use std::fmt;

use mcp_stack_jsonrpc::{Id, RawJson};
use mcp_stack_protocol::tasks::TaskMetadata;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::SessionError;

pub(crate) fn to_raw_params<P: Serialize + ?Sized>(
    method: &str,
    params: &P,
) -> Result<RawJson, SessionError> {
    mcp_stack_jsonrpc::to_raw(params).map_err(|e| SessionError::InvalidResponse {
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
    serde_json::from_value(value).map_err(|e| invalid_response(method, &e))
}

/// Parses a result into `R`, once, straight from its text (a slice of the
/// frame it came in).
pub(crate) fn parse_result<R: DeserializeOwned>(
    method: &str,
    raw: &RawJson,
) -> Result<R, SessionError> {
    raw.parse().map_err(|e| invalid_response(method, &e))
}

/// A tool's result (`tools/call`, `tasks/result`), read as
/// [`CallToolResult::from_json_str`] reads it: the plain shape in one pass,
/// any other with serde.
pub(crate) fn parse_call_result(
    method: &str,
    raw: &RawJson,
) -> Result<mcp_stack_protocol::types::CallToolResult, SessionError> {
    mcp_stack_protocol::types::CallToolResult::from_json_str(raw.get())
        .map_err(|e| invalid_response(method, &e))
}

fn invalid_response(method: &str, e: &serde_json::Error) -> SessionError {
    SessionError::InvalidResponse {
        method: method.to_string(),
        reason: e.to_string(),
    }
}

/// `tools/call` parameters, serialized straight from borrowed parts.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallParams<'a> {
    pub(crate) name: &'a str,
    pub(crate) arguments: &'a Value,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(crate) meta: Option<CallMeta<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) input_responses: Option<&'a serde_json::Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) request_state: Option<&'a str>,
    /// 2025-11-25: run the call as a task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) task: Option<&'a TaskMetadata>,
}

/// A call's `_meta`: the session's entries (a 2026-07-28 session's protocol
/// version, client info and capabilities) and, when the caller listens for
/// progress, the request id as its token. Serialized from borrowed parts:
/// the entries are not copied for every call.
#[derive(Clone, Copy)]
pub(crate) struct CallMeta<'a> {
    pub(crate) entries: Option<&'a serde_json::Map<String, Value>>,
    /// `entries` already encoded, copied as is when there is no token.
    pub(crate) encoded: Option<&'a serde_json::value::RawValue>,
    pub(crate) progress: Option<&'a Id>,
}

impl CallMeta<'_> {
    pub(crate) fn is_empty(&self) -> bool {
        self.progress.is_none() && self.entries.is_none_or(serde_json::Map::is_empty)
    }
}

impl Serialize for CallMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if let (None, Some(encoded)) = (self.progress, self.encoded) {
            return encoded.serialize(s);
        }
        let token = mcp_stack_protocol::meta::PROGRESS_TOKEN;
        let mut map = s.serialize_map(None)?;
        for (k, v) in self.entries.into_iter().flatten() {
            if self.progress.is_none() || k != token {
                map.serialize_entry(k, v)?;
            }
        }
        if let Some(id) = self.progress {
            map.serialize_entry(token, id)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_stack_protocol::results::ResultType;
    use serde_json::json;

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

    #[test]
    fn a_calls_meta_is_the_sessions_entries_and_its_progress_token() {
        let entries = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "progressToken": "stale"});
        let entries = entries.as_object();
        let id = Id::from(7);
        let json = |meta: CallMeta<'_>| serde_json::to_value(meta).unwrap_or_default();
        let encoded = serde_json::value::to_raw_value(&entries).ok();
        let both = CallMeta {
            entries,
            encoded: encoded.as_deref(),
            progress: Some(&id),
        };
        assert_eq!(
            json(both),
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "progressToken": 7})
        );
        let no_progress = CallMeta {
            entries,
            encoded: encoded.as_deref(),
            progress: None,
        };
        assert_eq!(
            json(no_progress),
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "progressToken": "stale"})
        );
        let progress_only = CallMeta {
            entries: None,
            encoded: None,
            progress: Some(&id),
        };
        assert_eq!(json(progress_only), json!({"progressToken": 7}));
        assert!(
            CallMeta {
                entries: None,
                encoded: None,
                progress: None
            }
            .is_empty()
        );
        assert!(!progress_only.is_empty());
    }

    mod call_params {
        use super::*;
        use proptest::prelude::*;

        fn text() -> impl Strategy<Value = String> {
            prop_oneof![
                ".{0,24}",
                "[a-z\u{0}-\u{1f}\"\\\\é😀]{0,40}",
                ("[a-z]{0,60}", "[\n\"\\\\\u{1}]", "[a-zé]{0,60}")
                    .prop_map(|(a, b, c)| a + &b + &c),
            ]
        }

        fn value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                any::<u64>().prop_map(Value::from),
                any::<f64>()
                    .prop_filter("finite", |f| f.is_finite())
                    .prop_map(Value::from),
                text().prop_map(Value::from),
            ];
            leaf.prop_recursive(3, 24, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                    prop::collection::btree_map(text(), inner, 0..4)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        fn map() -> impl Strategy<Value = serde_json::Map<String, Value>> {
            prop::collection::btree_map(text(), value(), 0..4).prop_map(|m| m.into_iter().collect())
        }

        proptest! {
            /// `tools/call`'s params as the session encodes them (through
            /// mcp-stack-jsonrpc's writer) are the bytes serde_json writes.
            #[test]
            fn call_params_are_encoded_as_serde_json_encodes_them(
                name in text(),
                arguments in value(),
                entries in prop::option::of(map()),
                encode_entries in any::<bool>(),
                progress in prop::option::of(prop_oneof![
                    any::<i64>().prop_map(Id::from),
                    text().prop_map(Id::from),
                ]),
                input_responses in prop::option::of(map()),
                request_state in prop::option::of(text()),
                task in prop::option::of((prop::option::of(any::<u64>()), map())),
            ) {
                let encoded = entries
                    .as_ref()
                    .filter(|_| encode_entries)
                    .map(|e| serde_json::value::to_raw_value(e).unwrap());
                let task: Option<TaskMetadata> = task.map(|(ttl, extra)| {
                    let mut v = Value::Object(extra);
                    if let Some(ttl) = ttl {
                        v["ttl"] = Value::from(ttl);
                    }
                    serde_json::from_value(v).unwrap()
                });
                let meta = CallMeta {
                    entries: entries.as_ref(),
                    encoded: encoded.as_deref(),
                    progress: progress.as_ref(),
                };
                let params = CallParams {
                    name: &name,
                    arguments: &arguments,
                    meta: (!meta.is_empty()).then_some(meta),
                    input_responses: input_responses.as_ref(),
                    request_state: request_state.as_deref(),
                    task: task.as_ref(),
                };
                let ours = to_raw_params("tools/call", &params).unwrap();
                let reference = serde_json::to_vec(&params).unwrap();
                prop_assert_eq!(ours.get().as_bytes(), reference.as_slice());
            }
        }
    }
}
