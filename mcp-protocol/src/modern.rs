//! Types of the 2026-07-28 revision ("modern" MCP): no handshake, per-request
//! `_meta`, `server/discover`, multi-round-trip results, cache hints.
//!
//! Data types and pure helpers only; a client decides when to use them. The
//! per-request `_meta` is in [`meta`](crate::meta).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use mcp_jsonrpc::Id;

use crate::meta::{SERVER_INFO, SUBSCRIPTION_ID};
use crate::types::{Extra, Implementation, ServerCapabilities};

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
    /// A result naming the versions a server speaks, what it offers, and
    /// (in `_meta`, where the spec puts it) who it is.
    pub fn new(
        supported_versions: Vec<String>,
        capabilities: ServerCapabilities,
        server_info: &Implementation,
    ) -> Self {
        let mut meta = Map::new();
        meta.insert(
            SERVER_INFO.into(),
            serde_json::to_value(server_info).unwrap_or_default(),
        );
        DiscoverResult {
            supported_versions,
            capabilities,
            instructions: None,
            meta: Some(meta),
            extra: Extra::new(),
        }
    }

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

/// The `data` of a `-32022` error
/// ([`UNSUPPORTED_PROTOCOL_VERSION`](crate::codes::UNSUPPORTED_PROTOCOL_VERSION)):
/// what the server speaks, and what the request asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnsupportedVersionData {
    /// The versions the server speaks; the client picks one and retries.
    pub supported: Vec<String>,
    /// The version the request named; `null` when it named none.
    #[serde(default)]
    pub requested: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Which notifications a `subscriptions/listen` stream carries: what the
/// client opts in to, and (acknowledged) what the server agreed to send.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl SubscriptionFilter {
    /// Nothing yet; add with the builder methods.
    ///
    /// ```
    /// use mcp_protocol::modern::SubscriptionFilter;
    /// let filter = SubscriptionFilter::new().tools_list_changed().resource("file:///notes.md");
    /// assert_eq!(
    ///     serde_json::to_value(&filter).unwrap(),
    ///     serde_json::json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///notes.md"]})
    /// );
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks for tool list changes.
    #[must_use]
    pub fn tools_list_changed(mut self) -> Self {
        self.tools_list_changed = Some(true);
        self
    }

    /// Asks for prompt list changes.
    #[must_use]
    pub fn prompts_list_changed(mut self) -> Self {
        self.prompts_list_changed = Some(true);
        self
    }

    /// Asks for resource list changes.
    #[must_use]
    pub fn resources_list_changed(mut self) -> Self {
        self.resources_list_changed = Some(true);
        self
    }

    /// Asks for updates of one resource.
    #[must_use]
    pub fn resource(mut self, uri: impl Into<String>) -> Self {
        self.resource_subscriptions
            .get_or_insert_with(Vec::new)
            .push(uri.into());
        self
    }
}

/// The parameters of `subscriptions/listen` and of its acknowledgment,
/// `notifications/subscriptions/acknowledged`: a filter, and `_meta` (the
/// request's metadata; on the acknowledgment, the subscription's id).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionParams {
    /// The notifications asked for, or agreed to.
    #[serde(default)]
    pub notifications: SubscriptionFilter,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl SubscriptionParams {
    /// The acknowledgment of subscription `id` (the id of its
    /// `subscriptions/listen` request), agreeing to `granted`.
    pub fn acknowledgment(id: &Id, granted: SubscriptionFilter) -> Self {
        let mut meta = Map::new();
        meta.insert(
            SUBSCRIPTION_ID.into(),
            serde_json::to_value(id).unwrap_or_default(),
        );
        SubscriptionParams {
            notifications: granted,
            meta: Some(meta),
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
    fn unsupported_version_data_says_null_for_no_version() {
        let data = UnsupportedVersionData {
            supported: vec!["2026-07-28".into()],
            requested: None,
            extra: Extra::new(),
        };
        let value = serde_json::to_value(&data).unwrap();
        assert_eq!(
            value,
            json!({"supported": ["2026-07-28"], "requested": null})
        );
        assert_eq!(
            serde_json::from_value::<UnsupportedVersionData>(value).unwrap(),
            data
        );
        let absent: UnsupportedVersionData =
            serde_json::from_value(json!({"supported": [], "x": 1})).unwrap();
        assert_eq!((absent.requested, &absent.extra["x"]), (None, &json!(1)));
    }

    #[test]
    fn subscription_params_round_trip_and_acknowledge() {
        let listen = json!({
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
            "notifications": {"toolsListChanged": true, "resourceSubscriptions": ["file:///a"],
                              "futureListChanged": true}
        });
        let p: SubscriptionParams = serde_json::from_value(listen.clone()).unwrap();
        assert_eq!(p.notifications.tools_list_changed, Some(true));
        assert_eq!(p.notifications.prompts_list_changed, None);
        assert_eq!(p.notifications.extra["futureListChanged"], true);
        assert_eq!(serde_json::to_value(&p).unwrap(), listen);
        let granted = SubscriptionFilter {
            tools_list_changed: Some(true),
            ..SubscriptionFilter::default()
        };
        let ack = SubscriptionParams::acknowledgment(&Id::from("listen-1"), granted);
        assert_eq!(
            serde_json::to_value(&ack).unwrap(),
            json!({"_meta": {SUBSCRIPTION_ID: "listen-1"}, "notifications": {"toolsListChanged": true}})
        );
        let empty: SubscriptionParams = serde_json::from_value(json!({})).unwrap();
        assert_eq!(empty, SubscriptionParams::default());
    }

    #[test]
    fn built_discover_and_input_required_results_parse_back() {
        let info = Implementation::new("srv", "1.0");
        let mut discover = DiscoverResult::new(
            vec!["2026-07-28".into()],
            ServerCapabilities::default(),
            &info,
        );
        discover.instructions = Some("hi".into());
        let value = serde_json::to_value(&discover).unwrap();
        assert_eq!(value["_meta"][SERVER_INFO]["name"], "srv");
        let back: DiscoverResult = serde_json::from_value(value).unwrap();
        assert_eq!(back.server_info(), Some(info));
        assert_eq!(back, discover);

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
