//! `_meta`: the reserved metadata object of requests, results and
//! notifications, and the keys MCP defines in it.
//!
//! Revision 2026-07-28 has no handshake: every request says who the client is
//! and which revision it speaks in `params._meta` ([`RequestMeta`]).

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::types::{ClientCapabilities, Implementation};

/// The member of `params` (and of results and notifications) that holds metadata.
pub const KEY: &str = "_meta";
/// `_meta` key: the progress token a request offers (every revision).
pub const PROGRESS_TOKEN: &str = "progressToken";
/// `_meta` key (2026-07-28): the protocol version a request uses.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key (2026-07-28): the client's capabilities.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key (2026-07-28): the client's name and version.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key (2026-07-28): the log level the client wants `notifications/message` at.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key (2026-07-28), on results: the server's name and version.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key (2026-07-28), on notifications: the `subscriptions/listen`
/// stream they belong to.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The value of `key` in the `_meta` of `params`, when there is one.
///
/// ```
/// use mcp_stack_protocol::meta;
/// let params = serde_json::json!({"_meta": {"progressToken": 7}});
/// assert_eq!(meta::get(&params, meta::PROGRESS_TOKEN), Some(&serde_json::json!(7)));
/// assert_eq!(meta::get(&serde_json::json!({}), meta::PROGRESS_TOKEN), None);
/// ```
pub fn get<'a>(params: &'a Value, key: &str) -> Option<&'a Value> {
    params.get(KEY)?.get(key)
}

/// The per-request metadata every request of a revision without a handshake
/// (2026-07-28) carries.
///
/// ```
/// use mcp_stack_protocol::meta::RequestMeta;
/// use mcp_stack_protocol::types::{ClientCapabilities, Implementation};
///
/// let meta = RequestMeta::new("2026-07-28", &Implementation::new("c", "1"), &ClientCapabilities::default());
/// let mut params = serde_json::json!({"name": "echo"});
/// meta.apply(&mut params);
/// assert_eq!(params["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
/// ```
#[derive(Debug, Clone)]
pub struct RequestMeta {
    entries: Map<String, Value>,
    /// `entries` as JSON, made once: a session sends them with every request.
    raw: Option<Box<RawValue>>,
}

impl PartialEq for RequestMeta {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
    }
}

impl RequestMeta {
    /// Metadata for a version, client and capabilities.
    pub fn new(
        version: &str,
        client_info: &Implementation,
        capabilities: &ClientCapabilities,
    ) -> Self {
        let mut entries = Map::new();
        entries.insert(PROTOCOL_VERSION.into(), Value::from(version));
        entries.insert(
            CLIENT_INFO.into(),
            serde_json::to_value(client_info).unwrap_or_default(),
        );
        entries.insert(
            CLIENT_CAPABILITIES.into(),
            serde_json::to_value(capabilities).unwrap_or_default(),
        );
        RequestMeta::from_entries(entries)
    }

    fn from_entries(entries: Map<String, Value>) -> Self {
        let raw = serde_json::value::to_raw_value(&entries).ok();
        RequestMeta { entries, raw }
    }

    /// Asks for log messages at this level and above.
    pub fn with_log_level(mut self, level: &str) -> Self {
        self.entries.insert(LOG_LEVEL.into(), Value::from(level));
        RequestMeta::from_entries(self.entries)
    }

    /// The `_meta` entries, keyed as on the wire.
    pub fn entries(&self) -> &Map<String, Value> {
        &self.entries
    }

    /// The `_meta` entries as one JSON object, encoded once.
    ///
    /// ```
    /// use mcp_stack_protocol::meta::RequestMeta;
    /// use mcp_stack_protocol::types::{ClientCapabilities, Implementation};
    ///
    /// let meta = RequestMeta::new("2026-07-28", &Implementation::new("c", "1"), &ClientCapabilities::default());
    /// let raw: serde_json::Value = serde_json::from_str(meta.entries_json().unwrap().get()).unwrap();
    /// assert_eq!(raw, serde_json::Value::Object(meta.entries().clone()));
    /// ```
    pub fn entries_json(&self) -> Option<&RawValue> {
        self.raw.as_deref()
    }

    /// The protocol version these metadata declare.
    pub fn protocol_version(&self) -> Option<&str> {
        self.entries.get(PROTOCOL_VERSION).and_then(Value::as_str)
    }

    /// Adds the metadata to request parameters (an object), keeping any
    /// `_meta` entries already there (a progress token, say). Parameters that
    /// are not an object are replaced by one.
    pub fn apply(&self, params: &mut Value) {
        if !params.is_object() {
            *params = Value::Object(Map::new());
        }
        if let Value::Object(map) = params {
            let meta = map.entry(KEY).or_insert_with(|| Value::Object(Map::new()));
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
        assert_eq!(p["_meta"][LOG_LEVEL], "info");
        assert_eq!(p["_meta"][CLIENT_INFO]["name"], "c");
        assert_eq!(meta.protocol_version(), Some("2026-07-28"));
        let mut not_object = Value::Null;
        meta.apply(&mut not_object);
        assert!(not_object["_meta"].is_object());
    }
}
