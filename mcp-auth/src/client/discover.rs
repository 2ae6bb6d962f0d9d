//! Finding the authorization server: protected resource metadata, then the
//! issuer's metadata, or the 2025-03-26 fallbacks.

use http::header::HeaderMap;
use mcp_stack_protocol::endpoint::redact_url;
use serde_json::json;

use super::*;

impl OAuthClient {
    pub(super) async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
    ) -> Result<Option<T>, AuthError> {
        let answer = self
            .inner
            .web
            .get(url, HeaderMap::new())
            .await
            .map_err(|e| AuthError::Http(e.to_string()))?;
        if !answer.is_success() {
            tracing::debug!(url = %redact_url(url), status = answer.status, "metadata not here");
            return Ok(None);
        }
        serde_json::from_slice(&answer.body)
            .map(Some)
            .map_err(|e| AuthError::InvalidMetadata {
                what: "metadata document",
                reason: format!("{} is not valid metadata: {e}", redact_url(url)),
            })
    }

    /// Finds the authorization server: protected resource metadata, then
    /// the issuer's metadata; a 2025-03-26 server without the former gets
    /// the latter at its own origin, else the default endpoints.
    pub(super) async fn discover(
        &self,
        metadata_url: Option<&str>,
    ) -> Result<Discovered, AuthError> {
        let server = &self.inner.config.server_url;
        let mut prm: Option<ProtectedResourceMetadata> = None;
        for url in protected_resource_metadata_urls(server, metadata_url)? {
            crate::discovery::check_endpoint_url(&url)?;
            if let Some(doc) = self.get_json::<ProtectedResourceMetadata>(&url).await? {
                doc.check(server)?;
                prm = Some(doc);
                break;
            }
        }
        let Some(prm) = prm else {
            return self.discover_legacy().await;
        };
        let issuer = prm.authorization_servers.first().cloned().ok_or_else(|| {
            AuthError::InvalidMetadata {
                what: "protected resource metadata",
                reason: "it names no authorization server".into(),
            }
        })?;
        for url in authorization_server_metadata_urls(&issuer)? {
            crate::discovery::check_endpoint_url(&url)?;
            if let Some(meta) = self.get_json::<AuthorizationServerMetadata>(&url).await? {
                if self.inner.config.grant.has_user() {
                    meta.check(&issuer)?;
                } else {
                    // No authorization endpoint, no PKCE: the grant is
                    // made at the token endpoint alone.
                    meta.check_for_client_credentials(&issuer)?;
                }
                return Ok(Discovered {
                    resource: prm.resource.clone(),
                    prm_scopes: prm.scopes_supported.clone(),
                    issuer,
                    meta,
                    guessed: false,
                });
            }
        }
        Err(AuthError::InvalidMetadata {
            what: "authorization server metadata",
            reason: format!(
                "none at any well-known URL of the issuer {}",
                redact_url(&issuer)
            ),
        })
    }

    /// The 2025-03-26 way: no protected resource metadata.
    pub(super) async fn discover_legacy(&self) -> Result<Discovered, AuthError> {
        let server = &self.inner.config.server_url;
        let resource = crate::canonical::canonical_resource(server)?;
        let url = legacy_metadata_url(server)?;
        let origin = url
            .strip_suffix(crate::discovery::OAUTH_WELL_KNOWN)
            .unwrap_or(&url)
            .to_owned();
        if let Some(meta) = self.get_json::<AuthorizationServerMetadata>(&url).await? {
            // The URL was built from the issuer `origin` (RFC 8414 §3), so
            // the document must name it (§3.3). Checked against itself, a
            // server could claim a real authorization server's issuer, send
            // the user to that server's login page (whose `iss` would then
            // match) and take the code and the PKCE verifier at its own
            // token endpoint.
            meta.check_origin_issuer(server)?;
            let issuer = meta.issuer.clone();
            if self.inner.config.grant.has_user() {
                meta.check(&issuer)?;
            } else {
                meta.check_for_client_credentials(&issuer)?;
            }
            return Ok(Discovered {
                resource,
                prm_scopes: None,
                issuer,
                meta,
                guessed: false,
            });
        }
        let endpoints = legacy_default_endpoints(server)?;
        let meta: AuthorizationServerMetadata = serde_json::from_value(json!({
            "issuer": origin,
            "authorization_endpoint": endpoints.authorization,
            "token_endpoint": endpoints.token,
            "registration_endpoint": endpoints.registration,
            "code_challenge_methods_supported": ["S256"],
        }))
        .map_err(|e| AuthError::InvalidMetadata {
            what: "default endpoints",
            reason: e.to_string(),
        })?;
        Ok(Discovered {
            resource,
            prm_scopes: None,
            issuer: origin,
            meta,
            guessed: true,
        })
    }
}
