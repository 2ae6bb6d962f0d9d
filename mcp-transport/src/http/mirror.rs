//! The request metadata headers of protocol revision 2026-07-28, without IO.
//!
//! On streamable HTTP a modern request mirrors parts of its body into
//! headers: `MCP-Protocol-Version` (from `_meta`), `Mcp-Method`, `Mcp-Name`
//! (`params.name` of `tools/call` and `prompts/get`, `params.uri` of
//! `resources/read`) and `Mcp-Param-{Name}` for annotated tool arguments.
//! Values that are not plain header-safe ASCII travel in the Base64 sentinel
//! form `=?base64?…?=`.

use std::borrow::Cow;

use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use mcp_jsonrpc::Request;
use serde::Deserialize;

/// The `_meta` key naming a modern request's protocol version.
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// What a modern request's headers are made of, read from its body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Mirror {
    pub(crate) version: String,
    name: Option<String>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uri: Option<Cow<'a, str>>,
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<Meta<'a>>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    version: Option<Cow<'a, str>>,
}

impl Mirror {
    /// The mirror of a request that carries the modern `_meta`; `None` for a
    /// request of the handshake era (no version in `_meta`).
    pub(crate) fn of(request: &Request) -> Option<Mirror> {
        let raw = request.params.as_ref()?.get();
        // Cheap test first: legacy requests never name the key.
        memchr::memmem::find(raw.as_bytes(), META_PROTOCOL_VERSION.as_bytes())?;
        let params: Params<'_> = serde_json::from_str(raw).ok()?;
        let version = params.meta?.version?.into_owned();
        let name = match request.method.as_str() {
            "tools/call" | "prompts/get" => params.name.map(Cow::into_owned),
            "resources/read" => params.uri.map(Cow::into_owned),
            _ => None,
        };
        Some(Mirror { version, name })
    }

    /// Adds the standard headers (and the `Mcp-Param-*` ones) to `headers`.
    pub(crate) fn apply(&self, method: &str, params: &[(String, String)], headers: &mut HeaderMap) {
        if let Some(v) = header_value(&self.version) {
            headers.insert(PROTOCOL_VERSION, v);
        }
        if let Some(v) = header_value(method) {
            headers.insert(MCP_METHOD, v);
        }
        if let Some(v) = self.name.as_deref().and_then(header_value) {
            headers.insert(MCP_NAME, v);
        }
        for (name, value) in params {
            let Ok(name) = HeaderName::from_bytes(format!("mcp-param-{name}").as_bytes()) else {
                tracing::warn!("{name:?} cannot be a header name; Mcp-Param header left out");
                continue;
            };
            if let Some(v) = header_value(value) {
                headers.insert(name, v);
            }
        }
    }
}

/// `value` as a header value, in the Base64 sentinel form when needed.
fn header_value(value: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&encode_value(value)).ok()
}

/// Encodes a value for an `Mcp-Name` or `Mcp-Param-*` header: as it is when
/// it is visible ASCII with inner spaces or tabs only; otherwise (non-ASCII,
/// control characters, leading or trailing whitespace, empty, or text that
/// looks like the sentinel itself) as `=?base64?{UTF-8 in Base64}?=`.
pub(crate) fn encode_value(value: &str) -> Cow<'_, str> {
    let safe_bytes = value.bytes().all(|b| matches!(b, 0x20..=0x7e | b'\t'));
    let trimmed = !value.starts_with([' ', '\t']) && !value.ends_with([' ', '\t']);
    let looks_encoded = value.starts_with("=?base64?") && value.ends_with("?=");
    let plain = !value.is_empty() && safe_bytes && trimmed && !looks_encoded;
    if plain {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!("=?base64?{}?=", base64(value.as_bytes())))
    }
}

/// Standard Base64 with padding (RFC 4648 §4).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let symbol =
        |index: u32| char::from(ALPHABET.get((index & 63) as usize).copied().unwrap_or(b'A'));
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        out.push(symbol(n >> 18));
        out.push(symbol(n >> 12));
        out.push(if chunk.len() > 1 { symbol(n >> 6) } else { '=' });
        out.push(if chunk.len() > 2 { symbol(n) } else { '=' });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_jsonrpc::{Id, to_raw};
    use serde_json::json;

    fn request(method: &str, params: serde_json::Value) -> Request {
        Request {
            id: Id::from(1),
            method: method.into(),
            params: Some(to_raw(&params).unwrap()),
        }
    }

    #[test]
    fn the_spec_encoding_examples() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        assert_eq!(encode_value("a b\tc"), "a b\tc");
        assert_eq!(encode_value(""), "=?base64??=");
        assert_eq!(encode_value("=?base64?x"), "=?base64?x");
    }

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
        assert_eq!(base64(&[0xff, 0xfe, 0xfd]), "//79");
    }

    #[test]
    fn mirrors_modern_requests_only() {
        let legacy = request("tools/call", json!({"name": "x", "arguments": {}}));
        assert_eq!(Mirror::of(&legacy), None);
        let meta = json!({META_PROTOCOL_VERSION: "2026-07-28"});
        let call = request(
            "tools/call",
            json!({"name": "get weather", "arguments": {"uri": "no"}, "_meta": meta}),
        );
        let m = Mirror::of(&call).unwrap();
        assert_eq!(m.version, "2026-07-28");
        let mut headers = HeaderMap::new();
        m.apply(
            "tools/call",
            &[("Region".into(), "us-west1".into())],
            &mut headers,
        );
        assert_eq!(headers["mcp-protocol-version"], "2026-07-28");
        assert_eq!(headers["mcp-method"], "tools/call");
        assert_eq!(headers["mcp-name"], "get weather");
        assert_eq!(headers["mcp-param-region"], "us-west1");

        let read = request(
            "resources/read",
            json!({"uri": "file:///é", "name": "ignored", "_meta": meta}),
        );
        let mut headers = HeaderMap::new();
        Mirror::of(&read)
            .unwrap()
            .apply("resources/read", &[], &mut headers);
        assert_eq!(headers["mcp-name"], "=?base64?ZmlsZTovLy/DqQ==?=");

        let list = request("tools/list", json!({"_meta": meta}));
        let mut headers = HeaderMap::new();
        Mirror::of(&list)
            .unwrap()
            .apply("tools/list", &[], &mut headers);
        assert!(headers.get("mcp-name").is_none());
        assert_eq!(headers["mcp-method"], "tools/list");
    }

    #[test]
    fn a_key_in_the_arguments_is_not_meta() {
        let call = request(
            "tools/call",
            json!({"name": "x", "arguments": {META_PROTOCOL_VERSION: "2026-07-28"}}),
        );
        assert_eq!(Mirror::of(&call), None);
    }
}
