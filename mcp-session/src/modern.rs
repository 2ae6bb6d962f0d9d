//! Types of the 2026-07-28 revision ("modern" MCP): no handshake, per-request
//! `_meta`, `server/discover`, multi-round-trip results, cache hints.
//!
//! These are data types and pure helpers only; the session decides when to
//! use them.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::types::{ClientCapabilities, Extra, Implementation, ServerCapabilities};

/// `_meta` key: the protocol version a request uses.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the log level the client wants `notifications/message` at.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key, on results: the server's name and version.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key, on notifications: the `subscriptions/listen` stream they belong to.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The per-request metadata every modern request carries.
///
/// ```
/// use mcp_session::modern::RequestMeta;
/// use mcp_session::types::{ClientCapabilities, Implementation};
///
/// let meta = RequestMeta::new("2026-07-28", &Implementation::new("c", "1"), &ClientCapabilities::default());
/// let mut params = serde_json::json!({"name": "echo"});
/// meta.apply(&mut params);
/// assert_eq!(params["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RequestMeta {
    entries: Map<String, Value>,
}

impl RequestMeta {
    /// Metadata for a version, client and capabilities.
    pub fn new(
        version: &str,
        client_info: &Implementation,
        capabilities: &ClientCapabilities,
    ) -> Self {
        let mut entries = Map::new();
        entries.insert(META_PROTOCOL_VERSION.into(), Value::from(version));
        entries.insert(
            META_CLIENT_INFO.into(),
            serde_json::to_value(client_info).unwrap_or_default(),
        );
        entries.insert(
            META_CLIENT_CAPABILITIES.into(),
            serde_json::to_value(capabilities).unwrap_or_default(),
        );
        RequestMeta { entries }
    }

    /// Asks for log messages at this level and above.
    pub fn with_log_level(mut self, level: &str) -> Self {
        self.entries
            .insert(META_LOG_LEVEL.into(), Value::from(level));
        self
    }

    /// The `_meta` entries, keyed as on the wire.
    pub fn entries(&self) -> &Map<String, Value> {
        &self.entries
    }

    /// The protocol version these metadata declare.
    pub fn protocol_version(&self) -> Option<&str> {
        self.entries
            .get(META_PROTOCOL_VERSION)
            .and_then(Value::as_str)
    }

    /// Adds the metadata to request parameters (an object), keeping any
    /// `_meta` entries already there (a progress token, say). Parameters that
    /// are not an object are replaced by one.
    pub fn apply(&self, params: &mut Value) {
        if !params.is_object() {
            *params = Value::Object(Map::new());
        }
        if let Value::Object(map) = params {
            let meta = map
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if !meta.is_object() {
                *meta = Value::Object(Map::new());
            }
            if let Value::Object(meta) = meta {
                for (k, v) in &self.entries {
                    meta.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

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
            .and_then(|m| m.get(META_SERVER_INFO))
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

/// What a `server/discover` probe says about a server's era.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProbeOutcome {
    /// A modern server; use this version.
    Modern(String),
    /// A modern server that speaks none of our modern versions; these are
    /// the ones it named.
    ModernUnsupported(Vec<String>),
    /// A legacy server: fall back to `initialize`.
    Legacy,
    /// A modern server that refused the request with a modern error
    /// (`HeaderMismatch`, `MissingRequiredClientCapability`): no fallback.
    ModernError(i64),
}

/// Classifies the answer to a `server/discover` probe, per the stdio
/// backward-compatibility rules: a discover result or a recognised modern
/// error means modern; any other error means legacy (never keyed to one code).
pub fn classify_probe(
    answer: Result<&Value, (i64, Option<&Value>)>,
    ours: &[&str],
) -> ProbeOutcome {
    let pick = |supported: &[String]| {
        ours.iter()
            .find(|v| supported.iter().any(|s| s == *v))
            .map(|v| v.to_string())
    };
    match answer {
        Ok(result) => {
            // A result without `supportedVersions` is no discover result: a
            // legacy server that answers any method (some do) is still legacy.
            let Some(supported) = result
                .get("supportedVersions")
                .and_then(|v| serde_json::from_value::<Vec<String>>(v.clone()).ok())
            else {
                return ProbeOutcome::Legacy;
            };
            match pick(&supported) {
                Some(v) => ProbeOutcome::Modern(v),
                None => ProbeOutcome::ModernUnsupported(supported),
            }
        }
        Err((code, data)) if code == mcp_jsonrpc::codes::UNSUPPORTED_PROTOCOL_VERSION => {
            let supported: Vec<String> = data
                .and_then(|d| d.get("supported"))
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default();
            match pick(&supported) {
                Some(v) => ProbeOutcome::Modern(v),
                None => ProbeOutcome::ModernUnsupported(supported),
            }
        }
        Err((code, _))
            if code == mcp_jsonrpc::codes::HEADER_MISMATCH
                || code == mcp_jsonrpc::codes::MISSING_REQUIRED_CLIENT_CAPABILITY =>
        {
            ProbeOutcome::ModernError(code)
        }
        Err(_) => ProbeOutcome::Legacy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn meta_is_merged_with_existing_entries() {
        let meta = RequestMeta::new(
            "2026-07-28",
            &Implementation::new("c", "1"),
            &ClientCapabilities::default(),
        )
        .with_log_level("info");
        let mut p = json!({"name": "x", "_meta": {"progressToken": 4}});
        meta.apply(&mut p);
        assert_eq!(p["_meta"]["progressToken"], 4);
        assert_eq!(p["_meta"][META_LOG_LEVEL], "info");
        assert_eq!(p["_meta"][META_CLIENT_INFO]["name"], "c");
        let mut not_object = Value::Null;
        meta.apply(&mut not_object);
        assert!(not_object["_meta"].is_object());
    }

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
    fn probe_classification_follows_the_stdio_rules() {
        let ours = ["2026-07-28"];
        let result = json!({"supportedVersions": ["2026-07-28", "2025-11-25"]});
        assert_eq!(
            classify_probe(Ok(&result), &ours),
            ProbeOutcome::Modern("2026-07-28".into())
        );
        let data = json!({"supported": ["2027-01-01"], "requested": "2026-07-28"});
        assert_eq!(
            classify_probe(Err((-32022, Some(&data))), &ours),
            ProbeOutcome::ModernUnsupported(vec!["2027-01-01".into()])
        );
        for legacy_code in [-32601, -32602, -32600, -32000, 1] {
            assert_eq!(
                classify_probe(Err((legacy_code, None)), &ours),
                ProbeOutcome::Legacy
            );
        }
        for modern_code in [-32020, -32021] {
            assert_eq!(
                classify_probe(Err((modern_code, None)), &ours),
                ProbeOutcome::ModernError(modern_code)
            );
        }
        // A server that answers anything with a result is not thereby modern.
        assert_eq!(
            classify_probe(Ok(&json!({"content": []})), &ours),
            ProbeOutcome::Legacy
        );
    }
}
