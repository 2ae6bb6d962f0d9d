//! The canonical URI of an MCP server (RFC 8707 §2, as the MCP
//! specification uses it for the `resource` parameter).

use crate::AuthError;
use crate::uri::Url;

/// The RFC 8707 resource identifier of the MCP server at `server_url`.
///
/// - scheme and host lowercase (the specification's canonical form), the
///   scheme's default port left out (RFC 3986 §6.2.3);
/// - the path kept as written, except that a lone `/` is dropped
///   (`https://mcp.example.com/` → `https://mcp.example.com`): the
///   specification asks for the form without the trailing slash; a trailing
///   slash after a non-empty path is kept, as it may be significant;
/// - the query kept: RFC 8707 discourages one but allows it when it is part
///   of what identifies the resource, and the specification asks for the
///   most specific URI;
/// - the fragment and any user info dropped (RFC 8707 forbids a fragment;
///   credentials never belong in an identifier sent to another party).
///
/// When the server publishes protected resource metadata, send its
/// `resource` value as published instead (see
/// `ProtectedResourceMetadata::check`).
///
/// ```
/// use mcp_stack_auth::canonical::canonical_resource;
/// assert_eq!(canonical_resource("HTTPS://MCP.Example.com/").unwrap(), "https://mcp.example.com");
/// assert_eq!(canonical_resource("https://h:8443/mcp#x").unwrap(), "https://h:8443/mcp");
/// assert!(canonical_resource("mcp.example.com").is_err());
/// ```
pub fn canonical_resource(server_url: &str) -> Result<String, AuthError> {
    let url = Url::parse(server_url, "server URL")?;
    Ok(canonical(&url))
}

pub(crate) fn canonical(url: &Url) -> String {
    format!(
        "{}{}{}",
        url.origin(),
        url.path_or_empty(),
        url.query_suffix()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms() {
        for (input, want) in [
            ("https://mcp.example.com", "https://mcp.example.com"),
            ("https://mcp.example.com/", "https://mcp.example.com"),
            ("HTTPS://MCP.EXAMPLE.COM/MCP", "https://mcp.example.com/MCP"),
            (
                "https://mcp.example.com:8443",
                "https://mcp.example.com:8443",
            ),
            (
                "https://mcp.example.com:443/mcp",
                "https://mcp.example.com/mcp",
            ),
            ("http://localhost:80/mcp", "http://localhost/mcp"),
            (
                "https://mcp.example.com/server/mcp/",
                "https://mcp.example.com/server/mcp/",
            ),
            (
                "https://mcp.example.com/mcp?tenant=a",
                "https://mcp.example.com/mcp?tenant=a",
            ),
            (
                "https://mcp.example.com/?tenant=a",
                "https://mcp.example.com?tenant=a",
            ),
            (
                "https://mcp.example.com#fragment",
                "https://mcp.example.com",
            ),
            (
                "https://user:pw@mcp.example.com/mcp",
                "https://mcp.example.com/mcp",
            ),
            ("http://[::1]:3000/mcp", "http://[::1]:3000/mcp"),
        ] {
            assert_eq!(canonical_resource(input).unwrap(), want, "{input}");
        }
    }

    #[test]
    fn no_scheme_is_no_resource() {
        assert!(matches!(
            canonical_resource("mcp.example.com"),
            Err(AuthError::InvalidUrl {
                what: "server URL",
                ..
            })
        ));
    }
}
