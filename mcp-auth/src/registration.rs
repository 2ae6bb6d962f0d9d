//! How the client gets a client id: pre-registration, a Client ID Metadata
//! Document, or dynamic client registration (RFC 7591), in the
//! specification's order, and the registration messages.

use mcp_stack_protocol::endpoint::redact_url;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::discovery::check_endpoint;
use crate::metadata::AuthorizationServerMetadata;
use crate::token::json_problem;
use crate::{AuthError, Secret};

/// How the client will identify itself to an authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum Registration {
    /// Use the client information configured for this server.
    PreRegistered,
    /// Use this HTTPS URL (the client's metadata document) as the client id.
    ClientIdMetadataDocument(String),
    /// Register at this registration endpoint (RFC 7591).
    Dynamic(String),
    /// None applies: ask the user for client information. The reason says why.
    Unavailable(String),
}

impl Registration {
    /// The error to show when nothing applies and no one can be asked.
    pub(crate) fn into_result(self) -> Result<Registration, AuthError> {
        match self {
            Registration::Unavailable(reason) => Err(AuthError::NoRegistration { reason }),
            other => Ok(other),
        }
    }
}

/// Chooses the registration mechanism in the specification's priority order:
///
/// 1. pre-registered client information, when the client has it for this
///    server (`pre_registered`; the caller keys it by the server's issuer);
/// 2. a Client ID Metadata Document, when the client has one (`cimd_url`, an
///    `https` URL with a path, see [`check_cimd_url`]; an unusable URL counts
///    as none) and the server says `client_id_metadata_document_supported: true`;
/// 3. dynamic client registration, when the server publishes a
///    `registration_endpoint` that passes [`crate::discovery::check_endpoint_url`];
/// 4. otherwise [`Registration::Unavailable`].
pub(crate) fn choose_registration(
    pre_registered: bool,
    cimd_url: Option<&str>,
    as_meta: &AuthorizationServerMetadata,
) -> Registration {
    if pre_registered {
        return Registration::PreRegistered;
    }
    let cimd = cimd_url.filter(|u| check_cimd_url(u).is_ok());
    if let Some(url) = cimd
        && as_meta.client_id_metadata_document_supported == Some(true)
    {
        return Registration::ClientIdMetadataDocument(url.to_owned());
    }
    match as_meta.registration_endpoint.as_deref() {
        Some(endpoint) if check_endpoint(endpoint, "registration_endpoint").is_ok() => {
            Registration::Dynamic(endpoint.to_owned())
        }
        Some(_) => Registration::Unavailable(
            "its registration endpoint is not https, so dynamic registration is refused".into(),
        ),
        None if cimd.is_some() => Registration::Unavailable(
            "the authorization server supports neither client id metadata documents nor \
             dynamic registration"
                .into(),
        ),
        None => Registration::Unavailable(
            "the authorization server offers no dynamic registration and no client id \
             metadata document is configured"
                .into(),
        ),
    }
}

/// Checks a Client ID Metadata Document URL: `https`, with a path other
/// than `/`, no user info, no fragment.
pub(crate) fn check_cimd_url(url: &str) -> Result<(), AuthError> {
    let parsed = check_endpoint(url, "client id metadata document URL")?;
    if parsed.scheme != "https" || parsed.path_or_empty().is_empty() {
        return Err(AuthError::InvalidUrl {
            what: "client id metadata document URL",
            url: redact_url(url),
            reason: "it must be an https URL with a path",
        });
    }
    Ok(())
}

/// A dynamic client registration request body (RFC 7591 §2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DynamicRegistrationRequest {
    /// The client's name, shown to the user.
    pub client_name: String,
    /// The redirect URIs.
    pub redirect_uris: Vec<String>,
    /// The grant types: `authorization_code` and `refresh_token` (the
    /// latter so the server may issue refresh tokens).
    pub grant_types: Vec<String>,
    /// The response types: `code`.
    pub response_types: Vec<String>,
    /// `none`: a public client using PKCE.
    pub token_endpoint_auth_method: String,
    /// `native` (desktop, CLI, loopback redirect) or `web`; the
    /// specification requires a value, as OpenID Connect defaults to `web`.
    pub application_type: String,
    /// The scopes the client may ask for, space-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl DynamicRegistrationRequest {
    /// The registration of a native public client (a CLI or desktop app
    /// with loopback redirects).
    pub(crate) fn native(
        client_name: impl Into<String>,
        redirect_uris: Vec<String>,
        scopes: Option<&[String]>,
    ) -> DynamicRegistrationRequest {
        DynamicRegistrationRequest {
            client_name: client_name.into(),
            redirect_uris,
            grant_types: vec!["authorization_code".into(), "refresh_token".into()],
            response_types: vec!["code".into()],
            token_endpoint_auth_method: "none".into(),
            application_type: "native".into(),
            scope: scopes.filter(|s| !s.is_empty()).map(|s| s.join(" ")),
        }
    }
}

/// A dynamic client registration response (RFC 7591 §3.2.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RegisteredClient {
    /// The client id.
    pub client_id: String,
    /// The client secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// When the secret expires (Unix seconds; 0 = never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<u64>,
    /// When the id was issued (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_issued_at: Option<u64>,
    /// The client authentication method the server registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// The redirect URIs registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uris: Option<Vec<String>>,
    /// The grant types registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_types: Option<Vec<String>>,
    /// The token for managing the registration (RFC 7592), if issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registration_access_token: Option<Secret>,
    /// Every other field, as returned.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RegisteredClient {
    /// Reads a registration response body; a missing or empty `client_id`
    /// is [`AuthError::InvalidRegistration`].
    pub(crate) fn parse(body: &[u8]) -> Result<RegisteredClient, AuthError> {
        let client: RegisteredClient =
            serde_json::from_slice(body).map_err(|e| AuthError::InvalidRegistration {
                reason: format!("not a registration response ({})", json_problem(&e)),
            })?;
        if client.client_id.is_empty() {
            return Err(AuthError::InvalidRegistration {
                reason: "the client_id is empty".into(),
            });
        }
        Ok(client)
    }

    /// Whether the secret has expired at `now_unix` (`0` means it never does).
    #[cfg(test)]
    pub(crate) fn secret_expired(&self, now_unix: u64) -> bool {
        self.client_secret_expires_at
            .is_some_and(|at| at != 0 && now_unix >= at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(cimd: Option<bool>, registration: Option<&str>) -> AuthorizationServerMetadata {
        let mut m: AuthorizationServerMetadata =
            serde_json::from_value(json!({"issuer": "https://a.example"})).unwrap();
        m.client_id_metadata_document_supported = cimd;
        m.registration_endpoint = registration.map(str::to_owned);
        m
    }

    const CIMD: &str = "https://app.example.com/oauth/client.json";

    #[test]
    fn priority_order() {
        let all = meta(Some(true), Some("https://a.example/register"));
        assert_eq!(
            choose_registration(true, Some(CIMD), &all),
            Registration::PreRegistered
        );
        assert_eq!(
            choose_registration(false, Some(CIMD), &all),
            Registration::ClientIdMetadataDocument(CIMD.into())
        );
        assert_eq!(
            choose_registration(false, None, &all),
            Registration::Dynamic("https://a.example/register".into())
        );
        for cimd in [None, Some(false)] {
            let m = meta(cimd, Some("https://a.example/register"));
            assert_eq!(
                choose_registration(false, Some(CIMD), &m),
                Registration::Dynamic("https://a.example/register".into())
            );
        }
    }

    #[test]
    fn unusable_cimd_urls_count_as_none() {
        let m = meta(Some(true), Some("https://a.example/register"));
        for bad in [
            "http://app.example.com/c.json",
            "https://app.example.com",
            "https://app.example.com/",
            "nope",
        ] {
            assert!(check_cimd_url(bad).is_err(), "{bad}");
            assert_eq!(
                choose_registration(false, Some(bad), &m),
                Registration::Dynamic("https://a.example/register".into())
            );
        }
        assert_eq!(check_cimd_url(CIMD), Ok(()));
    }

    #[test]
    fn nothing_applies() {
        let reasons: Vec<_> = [
            choose_registration(false, None, &meta(None, None)),
            choose_registration(false, Some(CIMD), &meta(Some(false), None)),
            choose_registration(
                false,
                None,
                &meta(Some(true), Some("http://a.example/register")),
            ),
        ]
        .into_iter()
        .map(|r| match r {
            Registration::Unavailable(reason) => reason,
            other => panic!("{other:?}"),
        })
        .collect();
        assert!(reasons[0].contains("no client id metadata document is configured"));
        assert!(reasons[1].contains("supports neither"));
        assert!(reasons[2].contains("not https"));
        let e = Registration::Unavailable("x".into())
            .into_result()
            .unwrap_err();
        assert_eq!(e.to_string(), "configure a client id for this server: x");
        assert_eq!(
            Registration::PreRegistered.into_result(),
            Ok(Registration::PreRegistered)
        );
    }

    #[test]
    fn registration_request_body() {
        let r = DynamicRegistrationRequest::native(
            "mcp",
            vec!["http://127.0.0.1:3000/callback".into()],
            Some(&["a".to_owned(), "b".to_owned()]),
        );
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({
                "client_name": "mcp",
                "redirect_uris": ["http://127.0.0.1:3000/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
                "application_type": "native",
                "scope": "a b",
            })
        );
        let r = DynamicRegistrationRequest::native("mcp", vec![], Some(&[]));
        assert!(serde_json::to_value(&r).unwrap().get("scope").is_none());
    }

    #[test]
    fn registration_responses() {
        let c = RegisteredClient::parse(
            br#"{"client_id":"id1","client_secret":"sec","client_secret_expires_at":100,"registration_access_token":"x"}"#,
        )
        .unwrap();
        assert_eq!(c.client_secret.as_ref().map(Secret::expose), Some("sec"));
        let shown = format!("{c:?}");
        assert!(!shown.contains("\"sec\"") && !shown.contains("\"x\""));
        assert!(c.registration_access_token.is_some() && c.extra.is_empty());
        assert!(!c.secret_expired(99));
        assert!(c.secret_expired(100));
        let never =
            RegisteredClient::parse(br#"{"client_id":"id","client_secret_expires_at":0}"#).unwrap();
        assert!(!never.secret_expired(u64::MAX));
        assert!(
            !RegisteredClient::parse(br#"{"client_id":"id"}"#)
                .unwrap()
                .secret_expired(5)
        );
        for bad in [&br#"{"client_id":""}"#[..], br#"{}"#, b"<html>"] {
            assert!(matches!(
                RegisteredClient::parse(bad),
                Err(AuthError::InvalidRegistration { .. })
            ));
        }
    }
}
