//! What the token endpoint (or an identity provider's) answers: tokens,
//! errors, ID-JAGs, and the tokens a client keeps.

use serde::{Deserialize, Deserializer, Serialize};

use super::ID_JAG_TOKEN_TYPE;
use crate::error::{DESCRIPTION_CHARS, ERROR_CODE_CHARS, peer_text};
use crate::{AuthError, Secret};

/// The answer of an ID-JAG exchange: the grant, to present at the
/// authorization server with [`TokenRequest::JwtBearer`](super::TokenRequest::JwtBearer).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct IdJagResponse {
    /// The ID-JAG (RFC 8693 puts the issued token in `access_token`).
    pub access_token: Secret,
    /// Must be [`ID_JAG_TOKEN_TYPE`].
    pub issued_token_type: String,
}

impl IdJagResponse {
    /// Reads an exchange answer: an OAuth error is
    /// [`AuthError::TokenRejected`]; anything but an ID-JAG is
    /// [`AuthError::InvalidTokenResponse`].
    pub(crate) fn parse(body: &[u8]) -> Result<IdJagResponse, AuthError> {
        if let Some(e) = TokenError::parse(body) {
            return Err(e.rejected());
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
pub(crate) struct TokenResponse {
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
pub(crate) struct TokenError {
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
    pub(crate) fn parse(body: &[u8]) -> Option<TokenError> {
        serde_json::from_slice::<TokenError>(body)
            .ok()
            .filter(|e| !e.error.is_empty())
    }

    /// As an [`AuthError::TokenRejected`]: the server's words, without
    /// control characters and bounded (see [`crate::error`]).
    fn rejected(self) -> AuthError {
        AuthError::TokenRejected {
            error: peer_text(&self.error, ERROR_CODE_CHARS),
            description: self
                .error_description
                .map(|d| peer_text(&d, DESCRIPTION_CHARS)),
        }
    }
}

impl TokenResponse {
    /// Reads a token endpoint answer body (whatever its status): an OAuth
    /// error becomes [`AuthError::TokenRejected`]; a response without a
    /// non-empty `access_token` or with a `token_type` other than `Bearer`
    /// or `DPoP` (any case) is [`AuthError::InvalidTokenResponse`].
    pub(crate) fn parse(body: &[u8]) -> Result<TokenResponse, AuthError> {
        if let Some(e) = TokenError::parse(body) {
            return Err(e.rejected());
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
    pub(crate) fn check(&self) -> Result<TokenType, AuthError> {
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
pub(crate) struct Tokens {
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
    pub(crate) fn from_response(
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
    #[cfg(test)]
    pub(crate) fn refreshed(self, new: Tokens) -> Tokens {
        Tokens {
            refresh: new.refresh.or(self.refresh),
            ..new
        }
    }

    /// Whether the access token expires within `margin_secs` of `now_unix`
    /// (or already has). Unknown expiry: `false` (refresh on a 401 instead).
    #[cfg(test)]
    pub(crate) fn needs_refresh(&self, now_unix: u64, margin_secs: u64) -> bool {
        self.expires_at_unix
            .is_some_and(|at| now_unix.saturating_add(margin_secs) >= at)
    }

    /// The `Authorization` header value: `Bearer <token>` or `DPoP <token>`.
    #[cfg(test)]
    pub(crate) fn authorization_header(&self) -> Secret {
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

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| (*s).to_owned()).collect()
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
        // The server's words lose their control characters and are bounded.
        let body = format!(
            r#"{{"error":"invalid_grant\u001b]52;c;eA==\u0007","error_description":"\u009b2J{}"}}"#,
            "x".repeat(1000)
        );
        match TokenResponse::parse(body.as_bytes()) {
            Err(AuthError::TokenRejected { error, description }) => {
                assert_eq!(error, "invalid_grant\u{FFFD}]52;c;eA==\u{FFFD}");
                let description = description.unwrap();
                assert!(description.starts_with("\u{FFFD}2Jxxx"), "{description}");
                assert!(description.chars().count() <= DESCRIPTION_CHARS + 1);
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
