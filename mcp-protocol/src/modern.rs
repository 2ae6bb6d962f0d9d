//! Types of the 2026-07-28 revision ("modern" MCP): no handshake, per-request
//! `_meta`, `server/discover`, multi-round-trip results, cache hints.
//!
//! Data types and pure helpers only; a client decides when to use them. The
//! per-request `_meta` is in [`meta`](crate::meta).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::SERVER_INFO;
use crate::types::{Extra, Implementation, ServerCapabilities};

/// Whether a result is final or asks for more input.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResultType {
    /// A final result (also what a missing `resultType` means).
    Complete,
    /// An interim result: the server needs input before it can finish.
    InputRequired,
    /// A type this client does not know.
    Other(String),
}

impl ResultType {
    /// Reads `resultType` from a result object; absent means complete.
    pub fn of(result: &Value) -> ResultType {
        match result.get("resultType").and_then(Value::as_str) {
            None | Some("complete") => ResultType::Complete,
            Some("input_required") => ResultType::InputRequired,
            Some(other) => ResultType::Other(other.to_string()),
        }
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
}

/// `server/discover` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Versions the server speaks.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    #[serde(default)]
    pub capabilities: ServerCapabilities,
    /// How to use the server, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Result metadata (the server's identity is here).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Other fields (`resultType`, `ttlMs`, `cacheScope` …).
    #[serde(flatten)]
    pub extra: Extra,
}

impl DiscoverResult {
    /// The server's name and version, from `_meta`.
    ///
    /// Read from `_meta` as the spec says; some servers put a `serverInfo`
    /// member in the result instead, which is accepted too.
    pub fn server_info(&self) -> Option<Implementation> {
        self.meta
            .as_ref()
            .and_then(|m| m.get(SERVER_INFO))
            .or_else(|| self.extra.get("serverInfo"))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
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
}
