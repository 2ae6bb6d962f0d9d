//! The metadata documents of the flow and their checks: protected resource
//! metadata (RFC 9728) and authorization server metadata (RFC 8414, or an
//! OpenID Connect provider configuration). Unknown fields are kept.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::AuthError;
use crate::canonical::canonical;
use crate::discovery::check_endpoint;
use mcp_stack_protocol::endpoint::redact_url;

use crate::uri::Url;

/// OAuth 2.0 protected resource metadata (RFC 9728 §2), as an MCP server
/// publishes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProtectedResourceMetadata {
    /// The protected resource's resource identifier.
    pub resource: String,
    /// The issuers of the authorization servers that accept tokens for it.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes used to request access to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// How a bearer token may be presented (`header`, `body`, `query`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_methods_supported: Option<Vec<String>>,
    /// A human-readable name of the resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// The DPoP proof algorithms the resource accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// Whether the resource requires DPoP-bound tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_bound_access_tokens_required: Option<bool>,
    /// Every other field, as published.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ProtectedResourceMetadata {
    /// Checks the document against the MCP server being accessed
    /// (`server_url`), RFC 9728 §3.3 and the MCP specification:
    ///
    /// - `resource` must identify this server: after canonicalizing both
    ///   (see [`crate::canonical::canonical_resource`]) it is either the
    ///   server's canonical URI, or — same scheme, host and port, no query —
    ///   a parent of it on a path-segment boundary (`https://h` or `https://h/api`
    ///   for `https://h/api/mcp`, never `https://h/ap`). The parent case is how a
    ///   server with its metadata at the root (`/.well-known/oauth-protected-resource`)
    ///   names itself, and the conformance suite expects clients to accept it;
    ///   any other resource (another origin, a sibling or deeper path) is a
    ///   [`AuthError::ResourceMismatch`] and the document must not be used.
    /// - `authorization_servers` must name at least one server.
    ///
    /// After the check, send `self.resource` exactly as published as the
    /// `resource` parameter (RFC 9728 §3.3; authorization servers compare it
    /// byte for byte).
    pub(crate) fn check(&self, server_url: &str) -> Result<(), AuthError> {
        let server = Url::parse(server_url, "server URL")?;
        let expected = canonical(&server);
        let mismatch = || AuthError::ResourceMismatch {
            expected: redact_url(&expected),
            found: redact_url(&self.resource),
        };
        let published = Url::parse(&self.resource, "resource").map_err(|_| mismatch())?;
        if published.fragment {
            return Err(mismatch());
        }
        if canonical(&published) != expected && !is_parent(&published, &server) {
            return Err(mismatch());
        }
        if self
            .authorization_servers
            .iter()
            .all(|s| s.trim().is_empty())
        {
            return Err(AuthError::InvalidMetadata {
                what: "protected resource metadata",
                reason: "authorization_servers names no authorization server".into(),
            });
        }
        Ok(())
    }
}

/// Whether `parent` names a resource that contains `child`: same origin, no
/// query, and a path that is a segment-wise prefix of the child's.
fn is_parent(parent: &Url, child: &Url) -> bool {
    if parent.origin() != child.origin() || parent.query.is_some() {
        return false;
    }
    let p = parent.path_or_empty();
    let c = child.path_or_empty();
    p.is_empty() || c == p || (p.ends_with('/') && c.starts_with(p)) || {
        c.strip_prefix(p).is_some_and(|rest| rest.starts_with('/'))
    }
}

/// OAuth 2.0 authorization server metadata (RFC 8414 §2), or an OpenID
/// Connect provider configuration, which shares these fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AuthorizationServerMetadata {
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// The authorization endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    /// The token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// The dynamic client registration endpoint (RFC 7591).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_endpoint: Option<String>,
    /// The scopes the server supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes_supported: Option<Vec<String>>,
    /// The `response_type` values the server supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_types_supported: Option<Vec<String>>,
    /// The grant types the server supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types_supported: Option<Vec<String>>,
    /// The PKCE code challenge methods the server supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// The client authentication methods of the token endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// The signing algorithms for `private_key_jwt` and `client_secret_jwt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_signing_alg_values_supported: Option<Vec<String>>,
    /// Whether the server accepts URL client ids (Client ID Metadata Documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_metadata_document_supported: Option<bool>,
    /// Whether authorization responses carry `iss` (RFC 9207).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// The DPoP proof algorithms the server accepts (RFC 9449).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// The revocation endpoint (RFC 7009).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revocation_endpoint: Option<String>,
    /// Every other field, as published.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

const AS_METADATA: &str = "authorization server metadata";

impl AuthorizationServerMetadata {
    /// Checks the document for the authorization code flow, `issuer_used`
    /// being the issuer the well-known URL was built from (as listed in the
    /// protected resource metadata):
    ///
    /// - `issuer` identical to `issuer_used`, by simple string comparison
    ///   (RFC 8414 §3.3); otherwise the document must not be used;
    /// - `authorization_endpoint` and `token_endpoint` present and passing
    ///   [`crate::discovery::check_endpoint_url`];
    /// - `code_challenge_methods_supported` present and listing `S256`. The
    ///   specification is explicit that a missing field means no PKCE and
    ///   that clients MUST refuse to proceed, for OAuth and OpenID metadata
    ///   alike; so does a list without `S256` (the client must use S256).
    pub(crate) fn check(&self, issuer_used: &str) -> Result<(), AuthError> {
        self.check_issuer(issuer_used)?;
        self.endpoint(
            self.authorization_endpoint.as_deref(),
            "authorization_endpoint",
        )?;
        self.endpoint(self.token_endpoint.as_deref(), "token_endpoint")?;
        let s256 = self
            .code_challenge_methods_supported
            .as_deref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"));
        if !s256 {
            return Err(AuthError::PkceUnsupported {
                issuer: redact_url(&self.issuer),
            });
        }
        Ok(())
    }

    /// Checks the document for the `client_credentials` grant, which needs
    /// no authorization endpoint and no PKCE: the issuer (as in
    /// [`check`](Self::check)) and the token endpoint.
    pub(crate) fn check_for_client_credentials(&self, issuer_used: &str) -> Result<(), AuthError> {
        self.check_issuer(issuer_used)?;
        self.endpoint(self.token_endpoint.as_deref(), "token_endpoint")?;
        Ok(())
    }

    /// Checks the `issuer` of a document the 2025-03-26 fallback found at
    /// the MCP server's own origin
    /// ([`crate::discovery::legacy_metadata_url`]): that URL is built from
    /// the issuer identifier `scheme://host[:port]` (RFC 8414 §3), so the
    /// document must name that origin (RFC 8414 §3.3), written with or
    /// without a terminating `/` and in any case or default-port spelling
    /// of the same origin; no path, query, fragment or user info. Anything
    /// else — another authorization server's issuer above all, the mix-up
    /// that would send the code and the PKCE verifier to this server's
    /// token endpoint once the real server's `iss` matched — is an
    /// [`AuthError::IssuerMismatch`] naming both, and the document must not
    /// be used.
    ///
    /// On success the issuer to record is `self.issuer`, as published
    /// (the RFC 9207 `iss` is compared with it byte for byte); the rest of
    /// the document is then checked with [`check`](Self::check) or
    /// [`check_for_client_credentials`](Self::check_for_client_credentials).
    pub(crate) fn check_origin_issuer(&self, server_url: &str) -> Result<(), AuthError> {
        let expected = Url::parse(server_url, "server URL")?.origin();
        let names_origin = Url::parse(&self.issuer, "issuer").is_ok_and(|issuer| {
            !issuer.userinfo
                && !issuer.fragment
                && issuer.query.is_none()
                && issuer.path_or_empty().is_empty()
                && issuer.origin() == expected
        });
        if !names_origin {
            return Err(AuthError::IssuerMismatch {
                expected: redact_url(&expected),
                found: redact_url(&self.issuer),
            });
        }
        Ok(())
    }

    /// Whether `scopes_supported` lists `scope`.
    #[cfg(test)]
    pub(crate) fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_deref()
            .is_some_and(|s| s.iter().any(|s| s == scope))
    }

    fn check_issuer(&self, issuer_used: &str) -> Result<(), AuthError> {
        if self.issuer != issuer_used {
            return Err(AuthError::IssuerMismatch {
                expected: redact_url(issuer_used),
                found: redact_url(&self.issuer),
            });
        }
        Ok(())
    }

    fn endpoint(&self, url: Option<&str>, what: &'static str) -> Result<(), AuthError> {
        let url = url.ok_or_else(|| AuthError::InvalidMetadata {
            what: AS_METADATA,
            reason: format!("{} publishes no {what}", redact_url(&self.issuer)),
        })?;
        check_endpoint(url, what).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prm(resource: &str) -> ProtectedResourceMetadata {
        serde_json::from_value(json!({
            "resource": resource,
            "authorization_servers": ["https://auth.example.com"],
            "scopes_supported": ["mcp:basic"],
            "bearer_methods_supported": ["header"],
            "x-custom": 1,
        }))
        .unwrap()
    }

    #[test]
    fn prm_fields_and_extras() {
        let m = prm("https://h/mcp");
        assert_eq!(
            m.scopes_supported.as_deref(),
            Some(&["mcp:basic".to_owned()][..])
        );
        assert_eq!(m.extra.get("x-custom"), Some(&json!(1)));
        let back = serde_json::to_value(&m).unwrap();
        assert_eq!(back["x-custom"], 1);
        assert!(back.get("resource_name").is_none());
    }

    #[test]
    fn prm_resource_matches_after_canonicalization() {
        for (resource, server) in [
            ("https://h/mcp", "https://h/mcp"),
            ("HTTPS://H/mcp", "https://h:443/mcp"),
            ("https://h/", "https://h"),
            ("https://h", "https://h/"),
            ("http://localhost:3000/mcp", "http://localhost:3000/mcp#x"),
        ] {
            assert_eq!(
                prm(resource).check(server),
                Ok(()),
                "{resource} for {server}"
            );
        }
    }

    #[test]
    fn prm_parent_resource_is_accepted() {
        for (resource, server) in [
            ("http://localhost:3000", "http://localhost:3000/mcp"),
            ("https://h/api", "https://h/api/mcp"),
            ("https://h/api/", "https://h/api/mcp"),
            ("https://h/mcp", "https://h/mcp?tenant=a"),
        ] {
            assert_eq!(
                prm(resource).check(server),
                Ok(()),
                "{resource} for {server}"
            );
        }
    }

    #[test]
    fn prm_other_resources_are_refused() {
        for (resource, server) in [
            ("https://evil.example.com/mcp", "http://localhost:3000/mcp"),
            ("https://h/ap", "https://h/api/mcp"),
            ("https://h/mcp/deeper", "https://h/mcp"),
            ("https://h/other", "https://h/mcp"),
            ("http://h/mcp", "https://h/mcp"),
            ("https://h:8443/mcp", "https://h/mcp"),
            ("https://h?x=1", "https://h/mcp"),
            ("https://h/mcp#frag", "https://h/mcp"),
            ("not a url", "https://h/mcp"),
        ] {
            assert!(
                matches!(
                    prm(resource).check(server),
                    Err(AuthError::ResourceMismatch { .. })
                ),
                "{resource} for {server}"
            );
        }
        assert!(matches!(
            prm("https://h/mcp").check("no url"),
            Err(AuthError::InvalidUrl { .. })
        ));
    }

    #[test]
    fn prm_needs_an_authorization_server() {
        let mut m = prm("https://h/mcp");
        m.authorization_servers.clear();
        assert!(matches!(
            m.check("https://h/mcp"),
            Err(AuthError::InvalidMetadata { .. })
        ));
        m.authorization_servers.push(" ".into());
        assert!(m.check("https://h/mcp").is_err());
        let m: ProtectedResourceMetadata =
            serde_json::from_value(json!({"resource": "https://h/mcp"})).unwrap();
        assert!(m.check("https://h/mcp").is_err());
    }

    fn asm() -> AuthorizationServerMetadata {
        serde_json::from_value(json!({
            "issuer": "https://auth.example.com",
            "authorization_endpoint": "https://auth.example.com/authorize",
            "token_endpoint": "https://auth.example.com/token",
            "registration_endpoint": "https://auth.example.com/register",
            "scopes_supported": ["mcp:basic", "offline_access"],
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "client_id_metadata_document_supported": true,
            "authorization_response_iss_parameter_supported": true,
            "userinfo_endpoint": "https://auth.example.com/userinfo",
        }))
        .unwrap()
    }

    #[test]
    fn as_metadata_passes() {
        let m = asm();
        assert_eq!(m.check("https://auth.example.com"), Ok(()));
        assert_eq!(
            m.check_for_client_credentials("https://auth.example.com"),
            Ok(())
        );
        assert_eq!(m.client_id_metadata_document_supported, Some(true));
        assert!(m.extra.contains_key("userinfo_endpoint"));
        assert!(m.supports_scope("offline_access"));
        assert!(!m.supports_scope("admin"));
    }

    #[test]
    fn issuer_must_be_identical() {
        for used in [
            "https://auth.example.com/",
            "https://AUTH.example.com",
            "https://honest.example",
        ] {
            assert!(
                matches!(asm().check(used), Err(AuthError::IssuerMismatch { .. })),
                "{used}"
            );
            assert!(asm().check_for_client_credentials(used).is_err());
        }
    }

    #[test]
    fn the_fallback_issuer_is_the_servers_origin() {
        let with = |issuer: &str| {
            let mut m = asm();
            m.issuer = issuer.into();
            m
        };
        for (issuer, server) in [
            ("https://auth.example.com", "https://auth.example.com/mcp"),
            (
                "https://auth.example.com/",
                "https://auth.example.com/v1/mcp",
            ),
            (
                "https://AUTH.example.com:443",
                "https://auth.example.com/mcp",
            ),
            ("http://127.0.0.1:3000", "http://127.0.0.1:3000/mcp?x=1"),
            ("http://localhost:3000", "HTTP://LOCALHOST:3000"),
        ] {
            assert_eq!(
                with(issuer).check_origin_issuer(server),
                Ok(()),
                "{issuer} for {server}"
            );
        }
        for issuer in [
            // Another authorization server: the mix-up.
            "https://accounts.example.net",
            // The same host, another port or scheme.
            "https://auth.example.com:8443",
            "http://auth.example.com",
            // A path: that issuer's metadata lives at another URL.
            "https://auth.example.com/oauth",
            "https://auth.example.com/mcp",
            "https://auth.example.com?x=1",
            "https://auth.example.com#f",
            "https://u@auth.example.com",
            "auth.example.com",
            "",
        ] {
            let err = with(issuer)
                .check_origin_issuer("https://auth.example.com/mcp")
                .unwrap_err();
            assert!(
                matches!(&err, AuthError::IssuerMismatch { expected, .. }
                    if expected == "https://auth.example.com"),
                "{issuer}: {err:?}"
            );
        }
        // The message says what was claimed and what was expected, with
        // neither user info nor query (each shown as `<redacted>`).
        let err = with("https://user:pw@evil.example/x?token=1")
            .check_origin_issuer("https://auth.example.com/mcp")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("https://<redacted>@evil.example/x?<redacted>"),
            "{err}"
        );
        assert!(
            err.contains("https://auth.example.com was expected"),
            "{err}"
        );
        assert!(!err.contains("pw") && !err.contains("token"), "{err}");
    }

    #[test]
    fn endpoints_must_be_present_and_secure() {
        let mut m = asm();
        m.authorization_endpoint = None;
        assert!(matches!(
            m.check("https://auth.example.com"),
            Err(AuthError::InvalidMetadata { .. })
        ));
        assert_eq!(
            m.check_for_client_credentials("https://auth.example.com"),
            Ok(())
        );
        let mut m = asm();
        m.token_endpoint = Some("http://auth.example.com/token".into());
        assert!(matches!(
            m.check("https://auth.example.com"),
            Err(AuthError::InsecureUrl {
                what: "token_endpoint",
                ..
            })
        ));
        m.token_endpoint = None;
        assert!(
            m.check_for_client_credentials("https://auth.example.com")
                .is_err()
        );
    }

    #[test]
    fn pkce_s256_required() {
        let mut m = asm();
        m.code_challenge_methods_supported = None;
        assert!(matches!(
            m.check("https://auth.example.com"),
            Err(AuthError::PkceUnsupported { .. })
        ));
        m.code_challenge_methods_supported = Some(vec![]);
        assert!(m.check("https://auth.example.com").is_err());
        m.code_challenge_methods_supported = Some(vec!["plain".into()]);
        assert!(m.check("https://auth.example.com").is_err());
        m.code_challenge_methods_supported = Some(vec!["plain".into(), "S256".into()]);
        assert_eq!(m.check("https://auth.example.com"), Ok(()));
        // Not needed for client credentials.
        m.code_challenge_methods_supported = None;
        assert_eq!(
            m.check_for_client_credentials("https://auth.example.com"),
            Ok(())
        );
    }
}
