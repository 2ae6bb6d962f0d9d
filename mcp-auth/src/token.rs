//! The token endpoint: how the client authenticates, the request forms,
//! and what an answer means.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize};

use crate::{AuthError, Secret};

/// The client authentication method at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClientAuthMethod {
    /// `client_secret_basic`: HTTP Basic with the form-encoded id and secret.
    Basic,
    /// `client_secret_post`: id and secret in the form body.
    Post,
    /// `none`: a public client; only `client_id` in the body.
    None,
    /// `private_key_jwt`: a signed JWT assertion (RFC 7523).
    PrivateKeyJwt,
}

impl ClientAuthMethod {
    /// The registered name (`client_secret_basic`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuthMethod::Basic => "client_secret_basic",
            ClientAuthMethod::Post => "client_secret_post",
            ClientAuthMethod::None => "none",
            ClientAuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// The method of a registered name; `None` for methods this crate does
    /// not implement (`client_secret_jwt`, `tls_client_auth`, …).
    pub fn from_name(name: &str) -> Option<ClientAuthMethod> {
        [Self::Basic, Self::Post, Self::None, Self::PrivateKeyJwt]
            .into_iter()
            .find(|m| m.as_str() == name)
    }
}

/// Chooses how to authenticate at the token endpoint, given the server's
/// `token_endpoint_auth_methods_supported` and what the client holds.
///
/// - With a private key and `private_key_jwt` listed: `PrivateKeyJwt` (no
///   shared secret travels).
/// - With a secret: `client_secret_basic` if listed, else `client_secret_post`
///   if listed. An absent list means `["client_secret_basic"]` (RFC 8414 §2).
/// - Without a secret or key: `none` (a public client) if listed or the list
///   is absent.
/// - Holding a secret or key the server takes no method for, but `none`
///   listed: `none` (the server takes public clients; a registration that
///   handed out an unneeded secret should not stop the flow).
/// - With only a key and an absent list: `PrivateKeyJwt` (the key is all the
///   client has; the server will say if it disagrees).
///
/// When a client was registered with a `token_endpoint_auth_method`, use
/// that one ([`ClientAuthMethod::from_name`]) instead.
pub fn choose_client_auth(
    supported: Option<&[String]>,
    have_secret: bool,
    have_private_key: bool,
) -> Result<ClientAuthMethod, AuthError> {
    let listed = |m: ClientAuthMethod| supported.is_some_and(|s| s.iter().any(|n| n == m.as_str()));
    if have_private_key
        && (listed(ClientAuthMethod::PrivateKeyJwt) || supported.is_none() && !have_secret)
    {
        return Ok(ClientAuthMethod::PrivateKeyJwt);
    }
    if have_secret {
        if supported.is_none() || listed(ClientAuthMethod::Basic) {
            return Ok(ClientAuthMethod::Basic);
        }
        if listed(ClientAuthMethod::Post) {
            return Ok(ClientAuthMethod::Post);
        }
    } else if !have_private_key && supported.is_none() {
        return Ok(ClientAuthMethod::None);
    }
    if listed(ClientAuthMethod::None) {
        return Ok(ClientAuthMethod::None);
    }
    let offered = supported.map(|s| s.join(", ")).unwrap_or_default();
    let held = match (have_secret, have_private_key) {
        (true, true) => "a client secret and a private key",
        (true, false) => "a client secret",
        (false, true) => "a private key",
        (false, false) => "no credentials (a public client)",
    };
    Err(AuthError::NoClientAuth {
        reason: format!(
            "the server accepts [{offered}] and the client has {held}; configure credentials \
             for one of the accepted methods"
        ),
    })
}

/// The client's identity and credentials for a token request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    /// The client id.
    pub client_id: String,
    /// The client secret, for `client_secret_basic` and `client_secret_post`.
    pub client_secret: Option<Secret>,
    /// A signed client assertion for `private_key_jwt`, made for this request
    /// with [`crate::jwt::client_assertion`].
    pub client_assertion: Option<Secret>,
}

impl ClientCredentials {
    /// A public client: an id and nothing else.
    pub fn public(client_id: impl Into<String>) -> ClientCredentials {
        ClientCredentials {
            client_id: client_id.into(),
            client_secret: None,
            client_assertion: None,
        }
    }
}

/// The `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2).
pub const JWT_BEARER_ASSERTION: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A token request, by grant type. Every one carries the RFC 8707
/// `resource` (the specification requires it in all token requests).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenRequest {
    /// `authorization_code` with the PKCE verifier.
    AuthorizationCode {
        /// The code from the authorization response.
        code: Secret,
        /// The redirect URI of the authorization request, identical.
        redirect_uri: String,
        /// The PKCE verifier.
        verifier: Secret,
        /// The resource.
        resource: String,
    },
    /// `refresh_token`.
    Refresh {
        /// The refresh token.
        refresh_token: Secret,
        /// The resource.
        resource: String,
        /// The scopes to ask for, if fewer than granted; `None` omits `scope`.
        scopes: Option<Vec<String>>,
    },
    /// `client_credentials`: the client acting on its own behalf.
    ClientCredentials {
        /// The scopes; `None` omits `scope`.
        scopes: Option<Vec<String>>,
        /// The resource.
        resource: String,
    },
    /// The JWT bearer grant (RFC 7523 §2.1): an assertion the client holds
    /// (a workload's identity token, or an ID-JAG from its identity
    /// provider) for an access token.
    JwtBearer {
        /// The assertion.
        assertion: Secret,
        /// The resource.
        resource: String,
        /// The scopes; `None` omits `scope`.
        scopes: Option<Vec<String>>,
    },
    /// Token exchange at an identity provider (RFC 8693) for an Identity
    /// Assertion JWT Authorization Grant (ID-JAG) for one authorization
    /// server: the enterprise-managed authorization extension's first step.
    IdJagExchange {
        /// The user's identity token from the provider.
        id_token: Secret,
        /// The authorization server the grant is for (its issuer).
        audience: String,
        /// The resource.
        resource: String,
        /// The scopes; `None` omits `scope`.
        scopes: Option<Vec<String>>,
    },
}

/// The JWT bearer grant type (RFC 7523 §2.1).
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The token exchange grant type (RFC 8693 §2.1).
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an Identity Assertion JWT Authorization Grant.
pub const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The token type of an OpenID Connect ID token (RFC 8693 §3).
pub const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";

/// The answer of an ID-JAG exchange: the grant, to present at the
/// authorization server with [`TokenRequest::JwtBearer`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IdJagResponse {
    /// The ID-JAG (RFC 8693 puts the issued token in `access_token`).
    pub access_token: Secret,
    /// Must be [`ID_JAG_TOKEN_TYPE`].
    pub issued_token_type: String,
}

impl IdJagResponse {
    /// Reads an exchange answer: an OAuth error is
    /// [`AuthError::TokenRejected`]; anything but an ID-JAG is
    /// [`AuthError::InvalidTokenResponse`].
    pub fn parse(body: &[u8]) -> Result<IdJagResponse, AuthError> {
        if let Some(e) = TokenError::parse(body) {
            return Err(AuthError::TokenRejected {
                error: e.error,
                description: e.error_description,
            });
        }
        let response: IdJagResponse =
            serde_json::from_slice(body).map_err(|e| AuthError::InvalidTokenResponse {
                reason: format!("not a token exchange response ({})", json_problem(&e)),
            })?;
        if response.issued_token_type != ID_JAG_TOKEN_TYPE || response.access_token.is_empty() {
            return Err(AuthError::InvalidTokenResponse {
                reason: "the identity provider issued no ID-JAG".into(),
            });
        }
        Ok(response)
    }
}

/// A token request ready to send: `POST` these headers and this
/// `application/x-www-form-urlencoded` body to the token endpoint. Both
/// may hold secrets, so both are [`Secret`]s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormRequest {
    /// The headers (`Content-Type`, `Accept`, and `Authorization` for Basic).
    pub headers: Vec<(&'static str, Secret)>,
    /// The form body.
    pub body: Secret,
}

impl TokenRequest {
    /// An `authorization_code` request.
    pub fn authorization_code(
        code: Secret,
        redirect_uri: impl Into<String>,
        verifier: Secret,
        resource: impl Into<String>,
    ) -> TokenRequest {
        TokenRequest::AuthorizationCode {
            code,
            redirect_uri: redirect_uri.into(),
            verifier,
            resource: resource.into(),
        }
    }

    /// A `refresh_token` request.
    pub fn refresh(
        refresh_token: Secret,
        resource: impl Into<String>,
        scopes: Option<Vec<String>>,
    ) -> TokenRequest {
        TokenRequest::Refresh {
            refresh_token,
            resource: resource.into(),
            scopes,
        }
    }

    /// A `client_credentials` request.
    pub fn client_credentials(
        scopes: Option<Vec<String>>,
        resource: impl Into<String>,
    ) -> TokenRequest {
        TokenRequest::ClientCredentials {
            scopes,
            resource: resource.into(),
        }
    }

    /// The headers and body of this request, with the client authenticated
    /// by `method`:
    ///
    /// - `Basic`: `Authorization: Basic base64(urlencode(id):urlencode(secret))`
    ///   (RFC 6749 §2.3.1 form-encodes both before joining them), no
    ///   `client_id` in the body;
    /// - `Post`: `client_id` and `client_secret` in the body;
    /// - `None`: `client_id` in the body;
    /// - `PrivateKeyJwt`: `client_id`, `client_assertion_type` and `client_assertion`
    ///   in the body.
    ///
    /// Fails when `client` lacks the secret or assertion the method needs.
    pub fn form(
        &self,
        client: &ClientCredentials,
        method: ClientAuthMethod,
    ) -> Result<FormRequest, AuthError> {
        let mut body = form_urlencoded::Serializer::new(String::new());
        let join = |scopes: &Option<Vec<String>>| {
            scopes
                .as_ref()
                .filter(|s| !s.is_empty())
                .map(|s| s.join(" "))
        };
        match self {
            TokenRequest::AuthorizationCode {
                code,
                redirect_uri,
                verifier,
                resource,
            } => {
                body.append_pair("grant_type", "authorization_code")
                    .append_pair("code", code.expose())
                    .append_pair("redirect_uri", redirect_uri)
                    .append_pair("code_verifier", verifier.expose())
                    .append_pair("resource", resource);
            }
            TokenRequest::Refresh {
                refresh_token,
                resource,
                scopes,
            } => {
                body.append_pair("grant_type", "refresh_token")
                    .append_pair("refresh_token", refresh_token.expose())
                    .append_pair("resource", resource);
                if let Some(scope) = join(scopes) {
                    body.append_pair("scope", &scope);
                }
            }
            TokenRequest::ClientCredentials { scopes, resource } => {
                body.append_pair("grant_type", "client_credentials")
                    .append_pair("resource", resource);
                if let Some(scope) = join(scopes) {
                    body.append_pair("scope", &scope);
                }
            }
            TokenRequest::JwtBearer {
                assertion,
                resource,
                scopes,
            } => {
                body.append_pair("grant_type", JWT_BEARER_GRANT)
                    .append_pair("assertion", assertion.expose())
                    .append_pair("resource", resource);
                if let Some(scope) = join(scopes) {
                    body.append_pair("scope", &scope);
                }
            }
            TokenRequest::IdJagExchange {
                id_token,
                audience,
                resource,
                scopes,
            } => {
                body.append_pair("grant_type", TOKEN_EXCHANGE_GRANT)
                    .append_pair("requested_token_type", ID_JAG_TOKEN_TYPE)
                    .append_pair("subject_token", id_token.expose())
                    .append_pair("subject_token_type", ID_TOKEN_TYPE)
                    .append_pair("audience", audience)
                    .append_pair("resource", resource);
                if let Some(scope) = join(scopes) {
                    body.append_pair("scope", &scope);
                }
            }
        }
        let mut headers = vec![
            (
                "Content-Type",
                Secret::new("application/x-www-form-urlencoded"),
            ),
            ("Accept", Secret::new("application/json")),
        ];
        let missing = |what: &str| AuthError::NoClientAuth {
            reason: format!("{} needs {what}, and none is configured", method.as_str()),
        };
        match method {
            ClientAuthMethod::Basic => {
                let secret = client
                    .client_secret
                    .as_ref()
                    .ok_or_else(|| missing("a client secret"))?;
                let pair = format!(
                    "{}:{}",
                    form_encode(&client.client_id),
                    form_encode(secret.expose())
                );
                headers.push((
                    "Authorization",
                    Secret::new(format!("Basic {}", STANDARD.encode(pair))),
                ));
            }
            ClientAuthMethod::Post => {
                let secret = client
                    .client_secret
                    .as_ref()
                    .ok_or_else(|| missing("a client secret"))?;
                body.append_pair("client_id", &client.client_id)
                    .append_pair("client_secret", secret.expose());
            }
            ClientAuthMethod::None => {
                body.append_pair("client_id", &client.client_id);
            }
            ClientAuthMethod::PrivateKeyJwt => {
                let assertion = client
                    .client_assertion
                    .as_ref()
                    .ok_or_else(|| missing("a signed client assertion"))?;
                body.append_pair("client_id", &client.client_id)
                    .append_pair("client_assertion_type", JWT_BEARER_ASSERTION)
                    .append_pair("client_assertion", assertion.expose());
            }
        }
        Ok(FormRequest {
            headers,
            body: Secret::new(body.finish()),
        })
    }
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_encode(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// How an access token is presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum TokenType {
    /// `Authorization: Bearer` (RFC 6750).
    Bearer,
    /// `Authorization: DPoP` with a proof (RFC 9449).
    DPoP,
}

impl TokenType {
    /// The type of a `token_type` value, ignoring case.
    pub fn parse(value: &str) -> Option<TokenType> {
        if value.eq_ignore_ascii_case("bearer") {
            Some(TokenType::Bearer)
        } else if value.eq_ignore_ascii_case("dpop") {
            Some(TokenType::DPoP)
        } else {
            None
        }
    }

    /// The scheme of the `Authorization` header (`Bearer`, `DPoP`).
    pub fn scheme(self) -> &'static str {
        match self {
            TokenType::Bearer => "Bearer",
            TokenType::DPoP => "DPoP",
        }
    }
}

/// A successful token response (RFC 6749 §5.1), as received.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TokenResponse {
    /// The access token.
    pub access_token: Secret,
    /// The token type (`Bearer`, `DPoP`; any case).
    pub token_type: String,
    /// Seconds until the access token expires. A numeric string is read too.
    #[serde(default, deserialize_with = "lenient_seconds")]
    pub expires_in: Option<u64>,
    /// The refresh token, if issued.
    #[serde(default)]
    pub refresh_token: Option<Secret>,
    /// The granted scopes, space-separated, if they differ from the requested.
    #[serde(default)]
    pub scope: Option<String>,
}

/// `expires_in` as a number or a numeric string; anything else (negative,
/// fractional, text) is treated as absent rather than failing the response.
fn lenient_seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        Some(serde_json::Value::Number(n)) => n.as_u64(),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    })
}

/// An error response of the token endpoint (RFC 6749 §5.2).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TokenError {
    /// The error code (`invalid_grant`, `invalid_client`, …).
    pub error: String,
    /// A human-readable description.
    #[serde(default)]
    pub error_description: Option<String>,
    /// A page about the error.
    #[serde(default)]
    pub error_uri: Option<String>,
}

impl TokenError {
    /// The error in a response body, if it is one.
    pub fn parse(body: &[u8]) -> Option<TokenError> {
        serde_json::from_slice::<TokenError>(body)
            .ok()
            .filter(|e| !e.error.is_empty())
    }
}

impl TokenResponse {
    /// Reads a token endpoint answer body (whatever its status): an OAuth
    /// error becomes [`AuthError::TokenRejected`]; a response without a
    /// non-empty `access_token` or with a `token_type` other than `Bearer`
    /// or `DPoP` (any case) is [`AuthError::InvalidTokenResponse`].
    pub fn parse(body: &[u8]) -> Result<TokenResponse, AuthError> {
        if let Some(e) = TokenError::parse(body) {
            return Err(AuthError::TokenRejected {
                error: e.error,
                description: e.error_description,
            });
        }
        let response: TokenResponse =
            serde_json::from_slice(body).map_err(|e| AuthError::InvalidTokenResponse {
                // serde's message names fields and types, never values of strings.
                reason: format!("not a JSON token response ({})", json_problem(&e)),
            })?;
        response.check()?;
        Ok(response)
    }

    /// Checks the fields: a non-empty access token, a known token type.
    pub fn check(&self) -> Result<TokenType, AuthError> {
        if self.access_token.is_empty() {
            return Err(AuthError::InvalidTokenResponse {
                reason: "the access_token is empty".into(),
            });
        }
        TokenType::parse(&self.token_type).ok_or_else(|| AuthError::InvalidTokenResponse {
            reason: format!(
                "token_type {:?} is neither Bearer nor DPoP",
                self.token_type.chars().take(40).collect::<String>()
            ),
        })
    }
}

/// What is wrong with a JSON body, in words that never quote it.
pub(crate) fn json_problem(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Io => "unreadable",
        serde_json::error::Category::Syntax => "invalid JSON",
        serde_json::error::Category::Data => "missing or mistyped fields",
        serde_json::error::Category::Eof => "truncated JSON",
    }
}

/// The tokens a client holds for one resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// The access token.
    pub access: Secret,
    /// The refresh token, if any.
    pub refresh: Option<Secret>,
    /// When the access token expires (Unix seconds), if known.
    pub expires_at_unix: Option<u64>,
    /// The granted scopes.
    pub scopes: Vec<String>,
    /// How to present the access token.
    pub token_type: TokenType,
}

impl Tokens {
    /// The tokens of a checked response received at `now_unix`. The scopes
    /// are the response's `scope`, or the requested ones when it has none
    /// (RFC 6749 §5.1: the server omits it when it granted what was asked).
    pub fn from_response(
        response: TokenResponse,
        requested_scopes: Option<&[String]>,
        now_unix: u64,
    ) -> Result<Tokens, AuthError> {
        let token_type = response.check()?;
        let scopes = match &response.scope {
            Some(s) => s.split_ascii_whitespace().map(str::to_owned).collect(),
            None => requested_scopes.map(<[String]>::to_vec).unwrap_or_default(),
        };
        Ok(Tokens {
            access: response.access_token,
            refresh: response.refresh_token,
            expires_at_unix: response.expires_in.map(|s| now_unix.saturating_add(s)),
            scopes,
            token_type,
        })
    }

    /// The tokens after a refresh: the new ones, keeping the old refresh
    /// token when the server issued none (RFC 6749 §6 lets it keep the old one
    /// valid).
    pub fn refreshed(self, new: Tokens) -> Tokens {
        Tokens {
            refresh: new.refresh.or(self.refresh),
            ..new
        }
    }

    /// Whether the access token expires within `margin_secs` of `now_unix`
    /// (or already has). Unknown expiry: `false` (refresh on a 401 instead).
    pub fn needs_refresh(&self, now_unix: u64, margin_secs: u64) -> bool {
        self.expires_at_unix
            .is_some_and(|at| now_unix.saturating_add(margin_secs) >= at)
    }

    /// The `Authorization` header value: `Bearer <token>` or `DPoP <token>`.
    pub fn authorization_header(&self) -> Secret {
        Secret::new(format!(
            "{} {}",
            self.token_type.scheme(),
            self.access.expose()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jwt_bearer_and_id_jag_exchange_forms() {
        let pairs = |f: &FormRequest| -> Vec<(String, String)> {
            form_urlencoded::parse(f.body.expose().as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        };
        let get = |p: &[(String, String)], k: &str| {
            p.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        };
        let wif = TokenRequest::JwtBearer {
            assertion: Secret::new("eyJ.wl.sig"),
            resource: "https://mcp.example/mcp".into(),
            scopes: None,
        };
        let form = wif
            .form(
                &ClientCredentials::public("workload"),
                ClientAuthMethod::None,
            )
            .map_err(|e| e.to_string());
        let Ok(form) = form else { panic!("{form:?}") };
        let p = pairs(&form);
        assert_eq!(get(&p, "grant_type").as_deref(), Some(JWT_BEARER_GRANT));
        assert_eq!(get(&p, "assertion").as_deref(), Some("eyJ.wl.sig"));
        assert_eq!(get(&p, "scope"), None);
        assert!(!format!("{form:?}").contains("eyJ.wl.sig"));
        let xaa = TokenRequest::IdJagExchange {
            id_token: Secret::new("id.tok.en"),
            audience: "https://as.example".into(),
            resource: "https://mcp.example/mcp".into(),
            scopes: Some(vec!["a".into()]),
        };
        let Ok(form) = xaa.form(
            &ClientCredentials::public("idp-client"),
            ClientAuthMethod::None,
        ) else {
            panic!("form")
        };
        let p = pairs(&form);
        assert_eq!(get(&p, "grant_type").as_deref(), Some(TOKEN_EXCHANGE_GRANT));
        assert_eq!(
            get(&p, "requested_token_type").as_deref(),
            Some(ID_JAG_TOKEN_TYPE)
        );
        assert_eq!(
            get(&p, "subject_token_type").as_deref(),
            Some(ID_TOKEN_TYPE)
        );
        assert_eq!(get(&p, "audience").as_deref(), Some("https://as.example"));
        assert_eq!(get(&p, "client_id").as_deref(), Some("idp-client"));
        assert_eq!(get(&p, "scope").as_deref(), Some("a"));
    }

    #[test]
    fn an_id_jag_exchange_answer_must_issue_an_id_jag() {
        let ok = br#"{"access_token":"jag","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}"#;
        assert!(IdJagResponse::parse(ok).is_ok());
        let other = br#"{"access_token":"x","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"}"#;
        assert!(matches!(
            IdJagResponse::parse(other),
            Err(AuthError::InvalidTokenResponse { .. })
        ));
        let refused = br#"{"error":"invalid_grant"}"#;
        assert!(IdJagResponse::parse(refused).is_err_and(|e| e.is_invalid_grant()));
    }

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn auth_method_names() {
        for m in [
            ClientAuthMethod::Basic,
            ClientAuthMethod::Post,
            ClientAuthMethod::None,
            ClientAuthMethod::PrivateKeyJwt,
        ] {
            assert_eq!(ClientAuthMethod::from_name(m.as_str()), Some(m));
        }
        assert_eq!(ClientAuthMethod::from_name("client_secret_jwt"), None);
    }

    #[test]
    fn choosing_client_auth() {
        use ClientAuthMethod as M;
        let all = v(&[
            "client_secret_basic",
            "client_secret_post",
            "none",
            "private_key_jwt",
        ]);
        // Absent list: RFC 8414's default, client_secret_basic.
        assert_eq!(choose_client_auth(None, true, false), Ok(M::Basic));
        assert_eq!(choose_client_auth(None, false, false), Ok(M::None));
        assert_eq!(choose_client_auth(None, false, true), Ok(M::PrivateKeyJwt));
        assert_eq!(choose_client_auth(None, true, true), Ok(M::Basic));
        // A key wins when listed.
        assert_eq!(
            choose_client_auth(Some(&all), true, true),
            Ok(M::PrivateKeyJwt)
        );
        assert_eq!(choose_client_auth(Some(&all), true, false), Ok(M::Basic));
        assert_eq!(choose_client_auth(Some(&all), false, false), Ok(M::None));
        assert_eq!(
            choose_client_auth(Some(&v(&["client_secret_post"])), true, false),
            Ok(M::Post)
        );
        assert_eq!(
            choose_client_auth(Some(&v(&["client_secret_post"])), true, true),
            Ok(M::Post)
        );
        // Credentials the server takes no method for, but it takes public clients.
        assert_eq!(
            choose_client_auth(Some(&v(&["none"])), true, false),
            Ok(M::None)
        );
        assert_eq!(
            choose_client_auth(Some(&v(&["none"])), false, true),
            Ok(M::None)
        );
        // Nothing fits.
        for (list, secret, key) in [
            (v(&["client_secret_basic"]), false, false),
            (v(&["private_key_jwt"]), false, false),
            (v(&["private_key_jwt"]), true, false),
            (v(&["client_secret_basic"]), false, true),
            (v(&[]), true, true),
        ] {
            let e = choose_client_auth(Some(&list), secret, key).unwrap_err();
            assert!(
                matches!(e, AuthError::NoClientAuth { .. }),
                "{list:?} {secret} {key}"
            );
        }
    }

    fn body_pairs(f: &FormRequest) -> Vec<(String, String)> {
        form_urlencoded::parse(f.body.expose().as_bytes())
            .into_owned()
            .collect()
    }

    fn header<'a>(f: &'a FormRequest, name: &str) -> Option<&'a str> {
        f.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.expose())
    }

    fn confidential() -> ClientCredentials {
        ClientCredentials {
            client_id: "my client:1".into(),
            client_secret: Some(Secret::new("s3cr&t:x")),
            client_assertion: Some(Secret::new("eyJ.a.b")),
        }
    }

    #[test]
    fn authorization_code_with_basic() {
        let req = TokenRequest::authorization_code(
            Secret::new("the code"),
            "http://127.0.0.1:3000/callback",
            Secret::new("verifier"),
            "https://mcp.example.com",
        );
        let f = req.form(&confidential(), ClientAuthMethod::Basic).unwrap();
        assert_eq!(
            body_pairs(&f),
            [
                ("grant_type".into(), "authorization_code".into()),
                ("code".into(), "the code".into()),
                (
                    "redirect_uri".into(),
                    "http://127.0.0.1:3000/callback".into()
                ),
                ("code_verifier".into(), "verifier".into()),
                ("resource".into(), "https://mcp.example.com".into()),
            ]
        );
        let auth = header(&f, "Authorization").unwrap();
        let decoded = STANDARD
            .decode(auth.strip_prefix("Basic ").unwrap())
            .unwrap();
        assert_eq!(
            String::from_utf8(decoded).unwrap(),
            "my+client%3A1:s3cr%26t%3Ax"
        );
        assert_eq!(
            header(&f, "Content-Type"),
            Some("application/x-www-form-urlencoded")
        );
        assert!(!format!("{f:?}").contains("s3cr"));
        assert!(!format!("{req:?}").contains("the code"));
    }

    #[test]
    fn refresh_with_post() {
        let req = TokenRequest::refresh(Secret::new("rt"), "https://h/mcp", Some(v(&["a", "b"])));
        let f = req.form(&confidential(), ClientAuthMethod::Post).unwrap();
        assert_eq!(
            body_pairs(&f),
            [
                ("grant_type".into(), "refresh_token".into()),
                ("refresh_token".into(), "rt".into()),
                ("resource".into(), "https://h/mcp".into()),
                ("scope".into(), "a b".into()),
                ("client_id".into(), "my client:1".into()),
                ("client_secret".into(), "s3cr&t:x".into()),
            ]
        );
        assert_eq!(header(&f, "Authorization"), None);
        let no_scope = TokenRequest::refresh(Secret::new("rt"), "r", Some(vec![]));
        let f = no_scope
            .form(&confidential(), ClientAuthMethod::Post)
            .unwrap();
        assert!(!body_pairs(&f).iter().any(|(k, _)| k == "scope"));
    }

    #[test]
    fn client_credentials_with_jwt_and_public_client() {
        let req = TokenRequest::client_credentials(Some(v(&["x"])), "https://h/mcp");
        let f = req
            .form(&confidential(), ClientAuthMethod::PrivateKeyJwt)
            .unwrap();
        let pairs = body_pairs(&f);
        assert!(pairs.contains(&("client_assertion_type".into(), JWT_BEARER_ASSERTION.into())));
        assert!(pairs.contains(&("client_assertion".into(), "eyJ.a.b".into())));
        assert!(pairs.contains(&("scope".into(), "x".into())));
        assert!(!pairs.iter().any(|(k, _)| k == "client_secret"));

        let req = TokenRequest::client_credentials(None, "https://h/mcp");
        let f = req
            .form(&ClientCredentials::public("pub"), ClientAuthMethod::None)
            .unwrap();
        assert_eq!(
            body_pairs(&f),
            [
                ("grant_type".into(), "client_credentials".into()),
                ("resource".into(), "https://h/mcp".into()),
                ("client_id".into(), "pub".into()),
            ]
        );
    }

    #[test]
    fn missing_credentials_are_errors() {
        let req = TokenRequest::client_credentials(None, "r");
        let public = ClientCredentials::public("p");
        for m in [
            ClientAuthMethod::Basic,
            ClientAuthMethod::Post,
            ClientAuthMethod::PrivateKeyJwt,
        ] {
            assert!(
                matches!(req.form(&public, m), Err(AuthError::NoClientAuth { .. })),
                "{m:?}"
            );
        }
    }

    #[test]
    fn token_types() {
        assert_eq!(TokenType::parse("bEaReR"), Some(TokenType::Bearer));
        assert_eq!(TokenType::parse("DPOP"), Some(TokenType::DPoP));
        assert_eq!(TokenType::parse("mac"), None);
        assert_eq!(TokenType::DPoP.scheme(), "DPoP");
    }

    #[test]
    fn parsing_token_responses() {
        let r = TokenResponse::parse(
            br#"{"access_token":"at","token_type":"bearer","expires_in":"3600","refresh_token":"rt","scope":"a b"}"#,
        )
        .unwrap();
        assert_eq!(r.expires_in, Some(3600));
        assert!(!format!("{r:?}").contains("\"at\""));
        let r =
            TokenResponse::parse(br#"{"access_token":"at","token_type":"DPoP","expires_in":-5}"#)
                .unwrap();
        assert_eq!(r.expires_in, None);
        let r = TokenResponse::parse(
            br#"{"access_token":"at","token_type":"Bearer","expires_in":1.5}"#,
        )
        .unwrap();
        assert_eq!(r.expires_in, None);
        let r = TokenResponse::parse(
            br#"{"access_token":"at","token_type":"Bearer","expires_in":null}"#,
        )
        .unwrap();
        assert_eq!(r.expires_in, None);
    }

    #[test]
    fn token_response_refusals() {
        match TokenResponse::parse(br#"{"error":"invalid_grant","error_description":"expired"}"#) {
            Err(AuthError::TokenRejected { error, description }) => {
                assert_eq!(error, "invalid_grant");
                assert_eq!(description.as_deref(), Some("expired"));
            }
            other => panic!("{other:?}"),
        }
        for (body, why) in [
            (
                &br#"{"access_token":"","token_type":"Bearer"}"#[..],
                "empty",
            ),
            (
                br#"{"access_token":"secret-at","token_type":"mac"}"#,
                "neither",
            ),
            (br#"{"token_type":"Bearer"}"#, "missing"),
            (br#"not json"#, "invalid JSON"),
            (br#"{"access_token":"secret-at""#, "truncated"),
        ] {
            match TokenResponse::parse(body) {
                Err(AuthError::InvalidTokenResponse { reason }) => {
                    assert!(reason.contains(why), "{reason}");
                    assert!(!reason.contains("secret-at"));
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(TokenError::parse(br#"{"error":""}"#), None);
        assert_eq!(TokenError::parse(b"[]"), None);
    }

    #[test]
    fn tokens_from_responses() {
        let r = TokenResponse::parse(
            br#"{"access_token":"at","token_type":"Bearer","expires_in":60,"scope":"a  b"}"#,
        )
        .unwrap();
        let t = Tokens::from_response(r, Some(&v(&["x"])), 1000).unwrap();
        assert_eq!(t.expires_at_unix, Some(1060));
        assert_eq!(t.scopes, v(&["a", "b"]));
        assert_eq!(t.authorization_header().expose(), "Bearer at");
        assert!(!t.needs_refresh(1000, 30));
        assert!(t.needs_refresh(1030, 30));
        assert!(t.needs_refresh(2000, 0));

        let r = TokenResponse::parse(br#"{"access_token":"at2","token_type":"DPoP"}"#).unwrap();
        let t2 = Tokens::from_response(r, Some(&v(&["x"])), 0).unwrap();
        assert_eq!(t2.scopes, v(&["x"]));
        assert!(!t2.needs_refresh(u64::MAX, u64::MAX));
        let r = TokenResponse::parse(br#"{"access_token":"at2","token_type":"Bearer"}"#).unwrap();
        assert!(Tokens::from_response(r, None, 0).unwrap().scopes.is_empty());

        let bad = TokenResponse {
            access_token: Secret::new("x"),
            token_type: "mac".into(),
            expires_in: None,
            refresh_token: None,
            scope: None,
        };
        assert!(Tokens::from_response(bad, None, 0).is_err());
    }

    #[test]
    fn refresh_keeps_the_old_refresh_token_when_none_is_issued() {
        let old = Tokens {
            access: Secret::new("a1"),
            refresh: Some(Secret::new("r1")),
            expires_at_unix: Some(1),
            scopes: vec![],
            token_type: TokenType::Bearer,
        };
        let new = Tokens {
            access: Secret::new("a2"),
            refresh: None,
            ..old.clone()
        };
        let merged = old.clone().refreshed(new.clone());
        assert_eq!(merged.access.expose(), "a2");
        assert_eq!(merged.refresh.as_ref().map(Secret::expose), Some("r1"));
        let rotated = Tokens {
            refresh: Some(Secret::new("r2")),
            ..new
        };
        assert_eq!(old.refreshed(rotated).refresh.unwrap().expose(), "r2");
    }
}
