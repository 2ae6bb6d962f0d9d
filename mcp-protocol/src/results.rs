//! What kind a result is, and what it says about caching (2026-07-28):
//! `resultType` (complete, `input_required` with the requests the client
//! answers before retrying, or a task), the `input_required` result itself,
//! and the `ttlMs`/`cacheScope` hints.
//!
//! Data types and pure helpers only; a client decides when to use them.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::types::Extra;

/// Whether a result is final or asks for more input.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResultType {
    /// A final result (also what a missing `resultType` means).
    Complete,
    /// An interim result: the server needs input before it can finish.
    InputRequired,
    /// The tasks extension's `CreateTaskResult`: the result comes later,
    /// through `tasks/get` ([`crate::tasks::extension`]).
    Task,
    /// A type this client does not know.
    Other(String),
}

impl ResultType {
    /// The member of a result that holds its type.
    pub const KEY: &'static str = "resultType";

    /// Reads `resultType` from a result object; absent means complete.
    pub fn of(result: &Value) -> ResultType {
        Self::named(result.get(Self::KEY).and_then(Value::as_str))
    }

    /// The type a `resultType` value names (`None`: absent, or not a
    /// string): absent means complete.
    pub fn named(name: Option<&str>) -> ResultType {
        match name {
            None | Some("complete") => ResultType::Complete,
            Some("input_required") => ResultType::InputRequired,
            Some("task") => ResultType::Task,
            Some(other) => ResultType::Other(other.to_string()),
        }
    }

    /// The type as on the wire (`"complete"`, `"input_required"`).
    pub fn as_str(&self) -> &str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Task => "task",
            ResultType::Other(other) => other,
        }
    }

    /// Writes `resultType` into a result's fields (its `extra`, say), the
    /// inverse of [`of`](Self::of).
    pub fn write(&self, result: &mut Map<String, Value>) {
        result.insert(Self::KEY.into(), Value::from(self.as_str()));
    }
}

/// Cache hints on discover and list results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheHints {
    /// How long the result stays fresh; zero when the server gave no TTL or a
    /// negative one (the spec's default).
    pub ttl: Duration,
    /// `cacheScope: "private"`: not to be shared across authorization contexts.
    pub private: bool,
}

impl CacheHints {
    /// Reads `ttlMs` and `cacheScope` from a result object.
    pub fn of(result: &Value) -> CacheHints {
        result.as_object().map(Self::of_map).unwrap_or_default()
    }

    /// Reads `ttlMs` and `cacheScope` from a result's fields.
    pub fn of_map(result: &Map<String, Value>) -> CacheHints {
        let ttl = result
            .get("ttlMs")
            .and_then(Value::as_i64)
            .filter(|ms| *ms > 0)
            .map(|ms| Duration::from_millis(ms.unsigned_abs()))
            .unwrap_or_default();
        let private = result.get("cacheScope").and_then(Value::as_str) == Some("private");
        CacheHints { ttl, private }
    }

    /// Writes `ttlMs` (whole milliseconds) and `cacheScope` (`"private"` or
    /// `"public"`) into a result's fields, the inverse of
    /// [`of_map`](Self::of_map).
    pub fn write(&self, result: &mut Map<String, Value>) {
        let ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let scope = if self.private { "private" } else { "public" };
        result.insert("ttlMs".into(), Value::from(ms));
        result.insert("cacheScope".into(), Value::from(scope));
    }
}
/// A request the server needs the client to answer before it can finish
/// (elicitation, sampling, roots).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// Its parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An interim result: `resultType: "input_required"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// Always `"input_required"`.
    pub result_type: String,
    /// What the server asks for, by server-chosen key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<BTreeMap<String, InputRequest>>,
    /// Opaque state to echo back unchanged on the retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl InputRequiredResult {
    /// An interim result asking for `input_requests` (by server-chosen
    /// key), with the state the retry is to echo.
    pub fn new(
        input_requests: BTreeMap<String, InputRequest>,
        request_state: Option<String>,
    ) -> Self {
        InputRequiredResult {
            result_type: ResultType::InputRequired.as_str().into(),
            input_requests: Some(input_requests),
            request_state,
            extra: Extra::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn result_type_and_cache_hints() {
        assert_eq!(ResultType::of(&json!({})), ResultType::Complete);
        assert_eq!(
            ResultType::of(&json!({"resultType": "input_required"})),
            ResultType::InputRequired
        );
        let h = CacheHints::of(&json!({"ttlMs": 1500, "cacheScope": "private"}));
        assert_eq!((h.ttl, h.private), (Duration::from_millis(1500), true));
        assert_eq!(CacheHints::of(&json!({"ttlMs": -5})).ttl, Duration::ZERO);
        assert_eq!(CacheHints::of(&json!({})), CacheHints::default());
    }

    #[test]
    fn result_type_and_cache_hints_are_written_as_read() {
        for t in [
            ResultType::Complete,
            ResultType::InputRequired,
            ResultType::Task,
            ResultType::Other("later".into()),
        ] {
            let mut fields = Map::new();
            t.write(&mut fields);
            assert_eq!(ResultType::of(&Value::Object(fields)), t);
        }
        for hints in [
            CacheHints {
                ttl: Duration::from_secs(60),
                private: false,
            },
            CacheHints {
                ttl: Duration::ZERO,
                private: true,
            },
        ] {
            let mut fields = Map::new();
            hints.write(&mut fields);
            assert_eq!(CacheHints::of_map(&fields), hints);
        }
        let mut fields = Map::new();
        CacheHints {
            ttl: Duration::from_millis(60_000),
            private: false,
        }
        .write(&mut fields);
        assert_eq!(
            Value::Object(fields),
            json!({"ttlMs": 60_000, "cacheScope": "public"})
        );
    }

    #[test]
    fn built_input_required_result_parses_back() {
        let ask = InputRequest {
            method: "elicitation/create".into(),
            params: Some(json!({"message": "?"})),
            extra: Extra::new(),
        };
        let result =
            InputRequiredResult::new(BTreeMap::from([("name".to_owned(), ask)]), Some("s".into()));
        let value = serde_json::to_value(&result).unwrap();
        assert_eq!(ResultType::of(&value), ResultType::InputRequired);
        assert_eq!(value["inputRequests"]["name"]["params"]["message"], "?");
        assert_eq!(
            serde_json::from_value::<InputRequiredResult>(value).unwrap(),
            result
        );
    }
}
