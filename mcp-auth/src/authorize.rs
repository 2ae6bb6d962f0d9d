//! The authorization request (the URL the browser opens) and the checks
//! of its response (the redirect back to the client).

use crate::discovery::check_endpoint;
use crate::error::{DESCRIPTION_CHARS, ERROR_CODE_CHARS, peer_text};
use crate::{AuthError, Secret};
use mcp_stack_protocol::endpoint::redact_url;

/// What goes into the authorization request URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuthorizationRequest {
    /// The authorization server's authorization endpoint (may have a query).
    pub authorization_endpoint: String,
    /// The client id.
    pub client_id: String,
    /// Where the server sends the browser back: `https`, or `http` on a
    /// loopback host.
    pub redirect_uri: String,
    /// The scopes; `None` (or empty) omits `scope`.
    pub scopes: Option<Vec<String>>,
    /// The RFC 8707 resource.
    pub resource: String,
    /// The PKCE S256 challenge ([`crate::pkce::Pkce::challenge`]).
    pub code_challenge: String,
    /// The `state` ([`crate::pkce::random_state`]).
    pub state: String,
}

impl AuthorizationRequest {
    /// The URL to open: the endpoint with `response_type=code`, `client_id`,
    /// `redirect_uri`, `scope` (when any), `resource`, `code_challenge`,
    /// `code_challenge_method=S256` and `state` appended to its query,
    /// form-encoded. The endpoint and the redirect URI must pass
    /// [`crate::discovery::check_endpoint_url`].
    pub(crate) fn url(&self) -> Result<String, AuthError> {
        check_endpoint(&self.authorization_endpoint, "authorization_endpoint")?;
        check_endpoint(&self.redirect_uri, "redirect_uri")?;
        let mut query = form_urlencoded::Serializer::new(String::new());
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.client_id)
            .append_pair("redirect_uri", &self.redirect_uri);
        if let Some(scopes) = self.scopes.as_ref().filter(|s| !s.is_empty()) {
            query.append_pair("scope", &scopes.join(" "));
        }
        query
            .append_pair("resource", &self.resource)
            .append_pair("code_challenge", &self.code_challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &self.state);
        let query = query.finish();
        let endpoint = self.authorization_endpoint.as_str();
        let separator = match endpoint.split_once('?') {
            None => "?",
            Some((_, "")) => "",
            Some((_, q)) if q.ends_with('&') => "",
            Some(_) => "&",
        };
        Ok(format!("{endpoint}{separator}{query}"))
    }
}

/// The per-request record kept while the user is at the authorization
/// server: what the response must match, and what the token request needs.
/// Record `issuer` from the *validated* authorization server metadata
/// (the 2026-07-28 specification's "Authorization Response Validation").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PendingAuthorization {
    /// The `state` sent.
    pub state: String,
    /// The PKCE verifier.
    pub verifier: Secret,
    /// The issuer of the authorization server the request went to.
    pub issuer: String,
    /// That server's `authorization_response_iss_parameter_supported`.
    pub iss_supported: Option<bool>,
    /// The redirect URI sent (the token request repeats it).
    pub redirect_uri: String,
    /// The resource sent.
    pub resource: String,
    /// The scopes requested.
    pub scopes: Option<Vec<String>>,
}

impl PendingAuthorization {
    /// Checks the authorization response (the redirect's query, with or
    /// without its leading `?`) and returns the authorization code.
    ///
    /// In order:
    /// 1. `state` present once and equal to ours (compared in constant time),
    ///    else [`AuthError::StateMismatch`]: the response is not ours;
    /// 2. `iss` (RFC 9207 §2.4), before anything else is acted on:
    ///    present → compared to the recorded issuer by simple string
    ///    comparison, no normalization ([`AuthError::IssuerMismatch`]);
    ///    absent → refused only when the server advertises
    ///    `authorization_response_iss_parameter_supported: true`
    ///    ([`AuthError::IssuerMissing`]). On either failure `error` and
    ///    `error_description` are never surfaced;
    /// 3. `error` → [`AuthError::Denied`] with the server's description;
    /// 4. a non-empty `code`, else [`AuthError::InvalidCallback`].
    ///
    /// A repeated `state`, `iss`, `code` or `error` is malformed (RFC 6749
    /// §3.1: parameters must not be included more than once).
    pub(crate) fn accept(&self, callback_query: &str) -> Result<Secret, AuthError> {
        let query = callback_query.strip_prefix('?').unwrap_or(callback_query);
        let mut state = None;
        let mut iss = None;
        let mut code = None;
        let mut error = None;
        let mut error_description = None;
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            let slot = match name.as_ref() {
                "state" => &mut state,
                "iss" => &mut iss,
                "code" => &mut code,
                "error" => &mut error,
                "error_description" => &mut error_description,
                _ => continue,
            };
            if slot.is_some() {
                return Err(AuthError::InvalidCallback {
                    reason: "a parameter appears more than once",
                });
            }
            *slot = Some(value.into_owned());
        }
        match &state {
            Some(s) if constant_time_eq(s.as_bytes(), self.state.as_bytes()) => {}
            _ => return Err(AuthError::StateMismatch),
        }
        match (iss, self.iss_supported) {
            (Some(found), _) if found != self.issuer => {
                return Err(AuthError::IssuerMismatch {
                    expected: redact_url(&self.issuer),
                    found: redact_url(&found),
                });
            }
            (None, Some(true)) => {
                return Err(AuthError::IssuerMissing {
                    issuer: redact_url(&self.issuer),
                });
            }
            _ => {}
        }
        if let Some(error) = error {
            // The server's words, reached through the browser: no control
            // character, bounded.
            return Err(AuthError::Denied {
                error: peer_text(&error, ERROR_CODE_CHARS),
                description: error_description.map(|d| peer_text(&d, DESCRIPTION_CHARS)),
            });
        }
        match code {
            Some(code) if !code.is_empty() => Ok(Secret::new(code)),
            _ => Err(AuthError::InvalidCallback {
                reason: "it carries neither a code nor an error",
            }),
        }
    }
}

/// Equality whose time depends on the lengths only.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> AuthorizationRequest {
        AuthorizationRequest {
            authorization_endpoint: "https://auth.example.com/authorize".into(),
            client_id: "https://app.example.com/client.json".into(),
            redirect_uri: "http://127.0.0.1:3000/callback".into(),
            scopes: Some(vec!["files:read".into(), "offline_access".into()]),
            resource: "https://mcp.example.com".into(),
            code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".into(),
            state: "st ate".into(),
        }
    }

    #[test]
    fn url_has_every_parameter_encoded() {
        let url = request().url().unwrap();
        assert_eq!(
            url,
            "https://auth.example.com/authorize?response_type=code\
             &client_id=https%3A%2F%2Fapp.example.com%2Fclient.json\
             &redirect_uri=http%3A%2F%2F127.0.0.1%3A3000%2Fcallback\
             &scope=files%3Aread+offline_access\
             &resource=https%3A%2F%2Fmcp.example.com\
             &code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM\
             &code_challenge_method=S256&state=st+ate"
        );
    }

    #[test]
    fn url_keeps_an_existing_query_and_omits_empty_scopes() {
        let mut r = request();
        r.scopes = None;
        for (endpoint, prefix) in [
            (
                "https://a.example/authorize?tenant=x",
                "https://a.example/authorize?tenant=x&response_type=code",
            ),
            (
                "https://a.example/authorize?tenant=x&",
                "https://a.example/authorize?tenant=x&response_type=code",
            ),
            (
                "https://a.example/authorize?",
                "https://a.example/authorize?response_type=code",
            ),
        ] {
            r.authorization_endpoint = endpoint.into();
            let url = r.url().unwrap();
            assert!(url.starts_with(prefix), "{url}");
            assert!(!url.contains("scope="));
        }
        r.scopes = Some(vec![]);
        assert!(!r.url().unwrap().contains("scope="));
    }

    #[test]
    fn url_refuses_insecure_endpoints_and_redirects() {
        let mut r = request();
        r.authorization_endpoint = "http://auth.example.com/authorize".into();
        assert!(matches!(r.url(), Err(AuthError::InsecureUrl { .. })));
        let mut r = request();
        r.redirect_uri = "http://app.example.com/cb".into();
        assert!(matches!(
            r.url(),
            Err(AuthError::InsecureUrl {
                what: "redirect_uri",
                ..
            })
        ));
        let mut r = request();
        r.redirect_uri = "https://app.example.com/cb#x".into();
        assert!(r.url().is_err());
    }

    fn pending(iss_supported: Option<bool>) -> PendingAuthorization {
        PendingAuthorization {
            state: "s1".into(),
            verifier: Secret::new("v"),
            issuer: "https://auth.example.com".into(),
            iss_supported,
            redirect_uri: "http://127.0.0.1:3000/callback".into(),
            resource: "https://mcp.example.com".into(),
            scopes: None,
        }
    }

    const ISS: &str = "iss=https%3A%2F%2Fauth.example.com";

    #[test]
    fn rfc9207_table() {
        // true + present: compared.
        assert_eq!(
            pending(Some(true))
                .accept(&format!("?code=c&state=s1&{ISS}"))
                .unwrap()
                .expose(),
            "c"
        );
        // true + absent: rejected.
        assert!(matches!(
            pending(Some(true)).accept("code=c&state=s1"),
            Err(AuthError::IssuerMissing { .. })
        ));
        // false or absent + present: compared.
        for supported in [Some(false), None] {
            assert!(
                pending(supported)
                    .accept(&format!("code=c&state=s1&{ISS}"))
                    .is_ok()
            );
            assert!(matches!(
                pending(supported).accept("code=c&state=s1&iss=https%3A%2F%2Fevil.example"),
                Err(AuthError::IssuerMismatch { .. })
            ));
            // false or absent + absent: proceed.
            assert!(pending(supported).accept("code=c&state=s1").is_ok());
        }
    }

    #[test]
    fn iss_compared_without_normalization() {
        for iss in [
            "https%3A%2F%2Fauth.example.com%2F",
            "https%3A%2F%2FAUTH.example.com",
            "https%3A%2F%2Fauth.example.com%3A443",
        ] {
            assert!(
                matches!(
                    pending(Some(true)).accept(&format!("code=c&state=s1&iss={iss}")),
                    Err(AuthError::IssuerMismatch { .. })
                ),
                "{iss}"
            );
        }
    }

    #[test]
    fn iss_checked_before_error() {
        let q = "state=s1&error=access_denied&error_description=click+here+evil&iss=https%3A%2F%2Fevil.example";
        let e = pending(None).accept(q).unwrap_err();
        assert!(matches!(e, AuthError::IssuerMismatch { .. }));
        assert!(!e.to_string().contains("click here"));
        let e = pending(Some(true))
            .accept("state=s1&error=access_denied")
            .unwrap_err();
        assert!(matches!(e, AuthError::IssuerMissing { .. }));
    }

    #[test]
    fn errors_are_surfaced_after_the_checks() {
        let q = format!("state=s1&error=access_denied&error_description=no+thanks&{ISS}");
        assert_eq!(
            pending(Some(true)).accept(&q),
            Err(AuthError::Denied {
                error: "access_denied".into(),
                description: Some("no thanks".into())
            })
        );
        assert_eq!(
            pending(None).accept("state=s1&error=server_error&code=c"),
            Err(AuthError::Denied {
                error: "server_error".into(),
                description: None
            })
        );
    }

    #[test]
    fn a_denial_keeps_no_control_characters_and_is_bounded() {
        let long = "x".repeat(5000);
        let q = format!(
            "state=s1&error=access%1B%5D0%3Bowned%07&error_description=%1B%5B2J%0D%0Aclick{long}&{ISS}"
        );
        let Err(AuthError::Denied { error, description }) = pending(Some(true)).accept(&q) else {
            panic!("not a denial");
        };
        assert_eq!(error, "access\u{FFFD}]0;owned\u{FFFD}");
        let description = description.unwrap();
        assert!(description.starts_with("\u{FFFD}[2J\u{FFFD}\u{FFFD}click"));
        assert!(description.chars().count() <= DESCRIPTION_CHARS + 1);
        assert!(!description.contains(char::is_control));
    }

    #[test]
    fn state_must_match() {
        for q in [
            "code=c",
            "code=c&state=s2",
            "code=c&state=s",
            "code=c&state=",
        ] {
            assert_eq!(
                pending(None).accept(q),
                Err(AuthError::StateMismatch),
                "{q}"
            );
        }
        // State is checked before anything else.
        assert_eq!(
            pending(None).accept("error=x&state=bad"),
            Err(AuthError::StateMismatch)
        );
    }

    #[test]
    fn malformed_responses() {
        for q in [
            "state=s1",
            "state=s1&code=",
            "state=s1&state=s1&code=c",
            "state=s1&code=a&code=b",
        ] {
            assert!(
                matches!(
                    pending(None).accept(q),
                    Err(AuthError::InvalidCallback { .. })
                ),
                "{q}"
            );
        }
        assert!(pending(None).accept("state=s1&code=c&other=1&%ZZ").is_ok());
    }

    #[test]
    fn constant_time_eq_works() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(constant_time_eq(b"", b""));
    }
}
