//! Finding a server without a handshake (2026-07-28): the
//! `server/discover` result, and the data of the `-32022` error a server
//! answers a revision it does not speak with. The per-request `_meta` that
//! replaces the handshake is in [`meta`](crate::meta).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::SERVER_INFO;
use crate::types::{Extra, Implementation, ServerCapabilities};

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn built_discover_result_parses_back() {
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
    }
}
