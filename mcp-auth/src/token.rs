//! The token endpoint: how the client authenticates, the request forms,
//! and what an answer means.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::{AuthError, Secret};

mod response;

pub(crate) use response::json_problem;
pub(crate) use response::{IdJagResponse, TokenError, TokenResponse, TokenType, Tokens};

/// The client authentication method at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub(crate) enum ClientAuthMethod {
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
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ClientAuthMethod::Basic => "client_secret_basic",
            ClientAuthMethod::Post => "client_secret_post",
            ClientAuthMethod::None => "none",
            ClientAuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// The method of a registered name; `None` for methods this crate does
    /// not implement (`client_secret_jwt`, `tls_client_auth`, …).
    pub(crate) fn from_name(name: &str) -> Option<ClientAuthMethod> {
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
pub(crate) fn choose_client_auth(
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
pub(crate) struct ClientCredentials {
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
    pub(crate) fn public(client_id: impl Into<String>) -> ClientCredentials {
        ClientCredentials {
            client_id: client_id.into(),
            client_secret: None,
            client_assertion: None,
        }
    }
}

/// The `client_assertion_type` of a JWT client assertion (RFC 7523 §2.2).
pub(crate) const JWT_BEARER_ASSERTION: &str =
    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A token request, by grant type. Every one carries the RFC 8707
/// `resource` (the specification requires it in all token requests).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum TokenRequest {
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
pub(crate) const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The token exchange grant type (RFC 8693 §2.1).
pub(crate) const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an Identity Assertion JWT Authorization Grant.
pub(crate) const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The token type of an OpenID Connect ID token (RFC 8693 §3).
pub(crate) const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";

/// A token request ready to send: `POST` these headers and this
/// `application/x-www-form-urlencoded` body to the token endpoint. Both
/// may hold secrets, so both are [`Secret`]s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FormRequest {
    /// The headers (`Content-Type`, `Accept`, and `Authorization` for Basic).
    pub headers: Vec<(&'static str, Secret)>,
    /// The form body.
    pub body: Secret,
}

impl TokenRequest {
    /// An `authorization_code` request.
    pub(crate) fn authorization_code(
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
    pub(crate) fn refresh(
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
    pub(crate) fn client_credentials(
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
    pub(crate) fn form(
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
}
