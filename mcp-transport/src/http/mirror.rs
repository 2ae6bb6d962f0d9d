//! The request metadata headers of protocol revision 2026-07-28, without IO.
//!
//! On streamable HTTP a request of a revision that mirrors (2026-07-28:
//! `ProtocolVersion::mirrors_into_headers`) copies parts of its body into
//! headers. The session says what they are (the [`SendContext`]: revision,
//! `Mcp-Name`, `Mcp-Param-*` values); the transport never reads `params`.
//! The names and the value encoding are `mcp_stack_protocol::x_mcp_header`'s.

use std::sync::LazyLock;

use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use mcp_stack_protocol::x_mcp_header;

use crate::SendContext;

fn name(text: &str) -> HeaderName {
    // The names are fixed tokens, so this never falls back; the fallback
    // keeps a typo from being a panic.
    HeaderName::from_bytes(text.as_bytes()).unwrap_or(hyper::header::WARNING)
}

/// `MCP-Protocol-Version`, lowercased as hyper keeps it.
pub(crate) static PROTOCOL_VERSION: LazyLock<HeaderName> =
    LazyLock::new(|| name(x_mcp_header::PROTOCOL_VERSION));
static METHOD: LazyLock<HeaderName> = LazyLock::new(|| name(x_mcp_header::METHOD));
static NAME: LazyLock<HeaderName> = LazyLock::new(|| name(x_mcp_header::NAME));

/// Adds the headers a mirroring request carries to `headers`: `MCP-Protocol-Version`,
/// `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`. Values that are not plain
/// header-safe ASCII go in the Base64 sentinel form; a parameter name that
/// cannot be a header name is left out with a warning.
pub(crate) fn apply(method: &str, context: &SendContext, headers: &mut HeaderMap) {
    if let Some(v) = context
        .revision_of()
        .and_then(|r| HeaderValue::from_str(r.as_str()).ok())
    {
        headers.insert(PROTOCOL_VERSION.clone(), v);
    }
    if let Some(v) = header_value(method) {
        headers.insert(METHOD.clone(), v);
    }
    if let Some(v) = context.name_of().and_then(header_value) {
        headers.insert(NAME.clone(), v);
    }
    for (param, value) in context.param_headers() {
        let full = format!("{}{param}", x_mcp_header::PARAM_PREFIX);
        let Ok(header) = HeaderName::from_bytes(full.as_bytes()) else {
            tracing::warn!("{param:?} cannot be a header name; Mcp-Param header left out");
            continue;
        };
        if let Some(v) = header_value(value) {
            headers.insert(header, v);
        }
    }
}

/// `value` as a header value, in the Base64 sentinel form when needed.
fn header_value(value: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&x_mcp_header::encode_value(value)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_stack_protocol::ProtocolVersion;

    #[test]
    fn the_context_becomes_headers() {
        let context = SendContext::new()
            .revision(ProtocolVersion::V2026_07_28)
            .name("get weather")
            .param_header("Region", "us-west1")
            .param_header("bad name", "x");
        let mut headers = HeaderMap::new();
        apply("tools/call", &context, &mut headers);
        assert_eq!(headers["mcp-protocol-version"], "2026-07-28");
        assert_eq!(headers["mcp-method"], "tools/call");
        assert_eq!(headers["mcp-name"], "get weather");
        assert_eq!(headers["mcp-param-region"], "us-west1");
        assert_eq!(headers.len(), 4);

        let read = SendContext::new()
            .revision(ProtocolVersion::V2026_07_28)
            .name("file:///é");
        let mut headers = HeaderMap::new();
        apply("resources/read", &read, &mut headers);
        assert_eq!(headers["mcp-name"], "=?base64?ZmlsZTovLy/DqQ==?=");

        let list = SendContext::new().revision(ProtocolVersion::V2026_07_28);
        let mut headers = HeaderMap::new();
        apply("tools/list", &list, &mut headers);
        assert!(headers.get("mcp-name").is_none());
        assert_eq!(headers["mcp-method"], "tools/list");
    }
}
