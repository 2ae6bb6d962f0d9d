//! Where to look for metadata: the protected resource metadata URLs of an
//! MCP server (RFC 9728), the authorization server metadata URLs of an
//! issuer (RFC 8414 and OpenID Connect Discovery), the 2025-03-26
//! fallbacks, and what an authorization server endpoint URL must be.
//!
//! Every function returns the URLs to try, in order; the caller fetches
//! them and stops at the first that answers with a usable document.

use crate::AuthError;
use mcp_stack_protocol::endpoint::redact_url;

use crate::uri::Url;

const PRM_WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
pub(crate) const OAUTH_WELL_KNOWN: &str = "/.well-known/oauth-authorization-server";
const OPENID_WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// The protected resource metadata URLs to try for the MCP server at
/// `server_url`, in order.
///
/// - With a `resource_metadata` URL from the server's `WWW-Authenticate`
///   challenge: that URL alone (the specification says to use it when
///   present). It must be an absolute `http(s)` URL without a fragment.
/// - Otherwise the well-known URIs of RFC 9728 §3.1: first with the
///   server's path (and query) after the well-known prefix, then at the
///   root; only the root when the server's path is empty or `/`.
///
/// ```
/// use mcp_stack_auth::discovery::protected_resource_metadata_urls;
/// assert_eq!(
///     protected_resource_metadata_urls("https://example.com/public/mcp", None).unwrap(),
///     [
///         "https://example.com/.well-known/oauth-protected-resource/public/mcp",
///         "https://example.com/.well-known/oauth-protected-resource",
///     ]
/// );
/// ```
pub fn protected_resource_metadata_urls(
    server_url: &str,
    challenge_url: Option<&str>,
) -> Result<Vec<String>, AuthError> {
    if let Some(from_challenge) = challenge_url {
        let url = Url::parse(from_challenge, "resource_metadata URL")?;
        if url.fragment {
            return Err(AuthError::InvalidUrl {
                what: "resource_metadata URL",
                url: redact_url(from_challenge),
                reason: "it has a fragment",
            });
        }
        return Ok(vec![from_challenge.to_owned()]);
    }
    let server = Url::parse(server_url, "server URL")?;
    let origin = server.origin();
    let root = format!("{origin}{PRM_WELL_KNOWN}");
    let suffix = format!("{}{}", server.path_or_empty(), server.query_suffix());
    if suffix.is_empty() {
        return Ok(vec![root]);
    }
    Ok(vec![format!("{origin}{PRM_WELL_KNOWN}{suffix}"), root])
}

/// The authorization server metadata URLs to try for `issuer`, in the
/// specification's order.
///
/// With a path (`https://auth.example.com/tenant1`): OAuth with the path
/// inserted, OpenID Connect with the path inserted, OpenID Connect with the
/// path appended. Without: OAuth, then OpenID Connect. A terminating `/` of
/// the issuer is removed first (RFC 8414 §3.1). The issuer must pass
/// [`check_endpoint_url`] and have no query (RFC 8414 §2).
///
/// The document found must then name this `issuer` exactly: see
/// `AuthorizationServerMetadata::check`.
///
/// ```
/// use mcp_stack_auth::discovery::authorization_server_metadata_urls;
/// assert_eq!(
///     authorization_server_metadata_urls("https://auth.example.com/tenant1").unwrap(),
///     [
///         "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
///         "https://auth.example.com/.well-known/openid-configuration/tenant1",
///         "https://auth.example.com/tenant1/.well-known/openid-configuration",
///     ]
/// );
/// ```
pub fn authorization_server_metadata_urls(issuer: &str) -> Result<Vec<String>, AuthError> {
    let url = check_endpoint(issuer, "authorization server issuer")?;
    if url.query.is_some() {
        return Err(AuthError::InvalidUrl {
            what: "authorization server issuer",
            url: redact_url(issuer),
            reason: "an issuer has no query component",
        });
    }
    let origin = url.origin();
    let path = url.path.trim_end_matches('/');
    if path.is_empty() {
        return Ok(vec![
            format!("{origin}{OAUTH_WELL_KNOWN}"),
            format!("{origin}{OPENID_WELL_KNOWN}"),
        ]);
    }
    Ok(vec![
        format!("{origin}{OAUTH_WELL_KNOWN}{path}"),
        format!("{origin}{OPENID_WELL_KNOWN}{path}"),
        format!("{origin}{path}{OPENID_WELL_KNOWN}"),
    ])
}

/// The 2025-03-26 revision's metadata URL: the authorization base URL (the
/// server URL without its path) plus `/.well-known/oauth-authorization-server`.
/// For servers that publish no protected resource metadata. The URL is
/// the one of the issuer identifier `scheme://host[:port]`, so the document
/// found there must name that origin as its `issuer`: see
/// `AuthorizationServerMetadata::check_origin_issuer`.
pub fn legacy_metadata_url(server_url: &str) -> Result<String, AuthError> {
    let server = Url::parse(server_url, "server URL")?;
    Ok(format!("{}{OAUTH_WELL_KNOWN}", server.origin()))
}

/// The endpoints of an authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// The authorization endpoint.
    pub authorization: String,
    /// The token endpoint.
    pub token: String,
    /// The dynamic client registration endpoint.
    pub registration: String,
}

/// The 2025-03-26 revision's default endpoints, for a server with neither
/// protected resource metadata nor authorization server metadata: `/authorize`,
/// `/token` and `/register` at the authorization base URL (the server URL
/// without its path). They must still pass [`check_endpoint_url`] before use.
///
/// ```
/// use mcp_stack_auth::discovery::legacy_default_endpoints;
/// let e = legacy_default_endpoints("https://api.example.com/v1/mcp").unwrap();
/// assert_eq!(e.authorization, "https://api.example.com/authorize");
/// assert_eq!(e.token, "https://api.example.com/token");
/// assert_eq!(e.registration, "https://api.example.com/register");
/// ```
pub fn legacy_default_endpoints(server_url: &str) -> Result<Endpoints, AuthError> {
    let origin = Url::parse(server_url, "server URL")?.origin();
    Ok(Endpoints {
        authorization: format!("{origin}/authorize"),
        token: format!("{origin}/token"),
        registration: format!("{origin}/register"),
    })
}

/// Checks a URL the client sends credentials or users to (an authorization
/// server's issuer or endpoints, a redirect URI): `https`, or plain `http`
/// only on a loopback host (127.0.0.0/8, `::1`, `localhost`); no user info;
/// no fragment.
pub fn check_endpoint_url(url: &str) -> Result<(), AuthError> {
    check_endpoint(url, "endpoint").map(drop)
}

pub(crate) fn check_endpoint(url: &str, what: &'static str) -> Result<Url, AuthError> {
    let parsed = Url::parse(url, what)?;
    let insecure = |reason| AuthError::InsecureUrl {
        what,
        url: redact_url(url),
        reason,
    };
    if parsed.userinfo {
        return Err(insecure("it carries user info"));
    }
    if parsed.fragment {
        return Err(insecure("it has a fragment"));
    }
    if parsed.scheme == "http" && !parsed.is_loopback() {
        return Err(insecure("it is plain http"));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_url_alone_when_given() {
        let urls = protected_resource_metadata_urls(
            "https://h/mcp",
            Some("https://h/custom/metadata/location.json"),
        )
        .unwrap();
        assert_eq!(urls, ["https://h/custom/metadata/location.json"]);
        assert!(protected_resource_metadata_urls("https://h/mcp", Some("/relative")).is_err());
        assert!(protected_resource_metadata_urls("https://h/mcp", Some("https://h/x#f")).is_err());
    }

    #[test]
    fn path_aware_then_root() {
        assert_eq!(
            protected_resource_metadata_urls("http://localhost:3000/mcp", None).unwrap(),
            [
                "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
                "http://localhost:3000/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            protected_resource_metadata_urls("https://H/mcp/?a=b", None).unwrap(),
            [
                "https://h/.well-known/oauth-protected-resource/mcp/?a=b",
                "https://h/.well-known/oauth-protected-resource",
            ]
        );
    }

    #[test]
    fn root_server_only_root() {
        for server in ["https://mcp.example.com", "https://mcp.example.com/"] {
            assert_eq!(
                protected_resource_metadata_urls(server, None).unwrap(),
                ["https://mcp.example.com/.well-known/oauth-protected-resource"]
            );
        }
        assert!(protected_resource_metadata_urls("not a url", None).is_err());
    }

    #[test]
    fn issuer_without_path() {
        for issuer in ["https://auth.example.com", "https://auth.example.com/"] {
            assert_eq!(
                authorization_server_metadata_urls(issuer).unwrap(),
                [
                    "https://auth.example.com/.well-known/oauth-authorization-server",
                    "https://auth.example.com/.well-known/openid-configuration",
                ]
            );
        }
    }

    #[test]
    fn issuer_with_path_trailing_slash_removed() {
        assert_eq!(
            authorization_server_metadata_urls("http://127.0.0.1:9000/tenant1/").unwrap(),
            [
                "http://127.0.0.1:9000/.well-known/oauth-authorization-server/tenant1",
                "http://127.0.0.1:9000/.well-known/openid-configuration/tenant1",
                "http://127.0.0.1:9000/tenant1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn issuer_refusals() {
        assert!(matches!(
            authorization_server_metadata_urls("http://auth.example.com"),
            Err(AuthError::InsecureUrl { .. })
        ));
        assert!(matches!(
            authorization_server_metadata_urls("https://auth.example.com?x=1"),
            Err(AuthError::InvalidUrl { .. })
        ));
    }

    #[test]
    fn legacy_fallbacks() {
        assert_eq!(
            legacy_metadata_url("https://api.example.com/v1/mcp").unwrap(),
            "https://api.example.com/.well-known/oauth-authorization-server"
        );
        let e = legacy_default_endpoints("http://localhost:8080/mcp?x").unwrap();
        assert_eq!(e.token, "http://localhost:8080/token");
        assert!(legacy_metadata_url("nope").is_err());
        assert!(legacy_default_endpoints("nope").is_err());
    }

    #[test]
    fn endpoint_rules() {
        for ok in [
            "https://auth.example.com/token",
            "http://localhost:3000/callback",
            "http://127.0.0.1/authorize",
            "http://[::1]:9/x",
            "https://auth.example.com/authorize?tenant=a",
        ] {
            assert_eq!(check_endpoint_url(ok), Ok(()), "{ok}");
        }
        for (bad, reason) in [
            ("http://auth.example.com/token", "it is plain http"),
            ("https://u:p@auth.example.com/token", "it carries user info"),
            ("https://auth.example.com/token#f", "it has a fragment"),
        ] {
            match check_endpoint_url(bad) {
                Err(AuthError::InsecureUrl { reason: r, url, .. }) => {
                    assert_eq!(r, reason);
                    assert!(!url.contains("u:p"));
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert!(matches!(
            check_endpoint_url("ftp://x/"),
            Err(AuthError::InvalidUrl { .. })
        ));
    }
}
