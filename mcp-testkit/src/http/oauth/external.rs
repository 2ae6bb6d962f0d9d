//! An authorization server the testkit does not run: the protected resource
//! metadata names its issuer, and the MCP endpoint accepts the JWT access
//! tokens it signs.
//!
//! A token is accepted only when all of these hold (RFC 7515, RFC 7519,
//! and MCP's rule that a server accepts only tokens issued for it):
//!
//! * it is a JWS in compact form whose header says `alg: RS256` (no other
//!   algorithm, `none` least of all) and, if it says `typ`, `JWT`, `at+jwt`
//!   or `application/at+jwt`;
//! * its signature verifies (RSASSA-PKCS1-v1_5 with SHA-256) under an RSA
//!   key of the authorization server's JWKS: the one its `kid` names, or
//!   the only one when it names none;
//! * `iss` is the issuer, character for character;
//! * `exp` is present and later than now, and `nbf`, if present, is not
//!   later than now;
//! * `aud` (a string or a list) holds the endpoint's resource URL.
//!
//! Its `scope` claim (space-separated) is what the token grants. The
//! testkit fetches nothing: whoever starts the server hands it the JWKS.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{RSA_PKCS1_2048_8192_SHA256, RsaPublicKeyComponents};
use serde_json::Value;

/// An authorization server the testkit does not run, for
/// [`OAuthOptions::external_authorization_server`](super::OAuthOptions::external_authorization_server):
/// its issuer and its public signing keys.
#[derive(Clone, PartialEq, Eq)]
pub struct ExternalAuthorizationServer {
    pub(crate) issuer: String,
    keys: Vec<RsaKey>,
}

#[derive(Clone, PartialEq, Eq)]
struct RsaKey {
    kid: Option<String>,
    n: Vec<u8>,
    e: Vec<u8>,
}

impl fmt::Debug for ExternalAuthorizationServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kids: Vec<&str> = self
            .keys
            .iter()
            .map(|k| k.kid.as_deref().unwrap_or("(no kid)"))
            .collect();
        f.debug_struct("ExternalAuthorizationServer")
            .field("issuer", &self.issuer)
            .field("keys", &kids)
            .finish()
    }
}

impl ExternalAuthorizationServer {
    /// The server with issuer identifier `issuer` and the JWK Set `jwks`
    /// (`{"keys": [...]}`, as its `jwks_uri` serves it). Its RSA keys meant
    /// for signatures are kept (`kty: RSA`; `use`, if given, `sig`; `alg`,
    /// if given, `RS256`); it is an error when there is none.
    ///
    /// ```
    /// use mcp_stack_testkit::http::ExternalAuthorizationServer;
    /// let jwks = serde_json::json!({"keys": [{"kty": "EC", "crv": "P-256", "x": "", "y": ""}]});
    /// assert!(ExternalAuthorizationServer::new("http://127.0.0.1:9", &jwks).is_err());
    /// ```
    pub fn new(issuer: impl Into<String>, jwks: &Value) -> Result<Self, String> {
        let issuer = issuer.into();
        let listed = jwks
            .get("keys")
            .and_then(Value::as_array)
            .ok_or("the JWK Set has no `keys` list")?;
        let text = |k: &Value, name: &str| k.get(name).and_then(Value::as_str).map(str::to_owned);
        let mut keys = Vec::new();
        for key in listed {
            let usable = text(key, "kty").as_deref() == Some("RSA")
                && text(key, "use").is_none_or(|u| u == "sig")
                && text(key, "alg").is_none_or(|a| a == "RS256");
            if !usable {
                continue;
            }
            let component = |name: &str| {
                text(key, name)
                    .and_then(|v| URL_SAFE_NO_PAD.decode(v).ok())
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| format!("an RSA key of the JWK Set has no valid `{name}`"))
            };
            keys.push(RsaKey {
                kid: text(key, "kid"),
                n: component("n")?,
                e: component("e")?,
            });
        }
        if keys.is_empty() {
            return Err("the JWK Set has no RSA signing key (RS256)".into());
        }
        Ok(ExternalAuthorizationServer { issuer, keys })
    }

    /// The issuer identifier.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The scopes `token` grants for `resource`, or why it is refused.
    pub(crate) fn verify(
        &self,
        token: &str,
        resource: &str,
        now_unix: u64,
    ) -> Result<Vec<String>, JwtProblem> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(JwtProblem::Malformed);
        };
        let json = |part: &str| -> Result<Value, JwtProblem> {
            let bytes = URL_SAFE_NO_PAD
                .decode(part)
                .map_err(|_| JwtProblem::Malformed)?;
            serde_json::from_slice::<Value>(&bytes)
                .ok()
                .filter(Value::is_object)
                .ok_or(JwtProblem::Malformed)
        };
        let header_doc = json(header)?;
        if header_doc.get("alg").and_then(Value::as_str) != Some("RS256") {
            return Err(JwtProblem::Algorithm);
        }
        match header_doc.get("typ") {
            None => {}
            Some(Value::String(t))
                if ["jwt", "at+jwt", "application/at+jwt"]
                    .contains(&t.to_ascii_lowercase().as_str()) => {}
            Some(_) => return Err(JwtProblem::Type),
        }
        let key = match header_doc.get("kid") {
            Some(Value::String(kid)) => self
                .keys
                .iter()
                .find(|k| k.kid.as_deref() == Some(kid.as_str())),
            Some(_) => None,
            None if self.keys.len() == 1 => self.keys.first(),
            None => None,
        }
        .ok_or(JwtProblem::UnknownKey)?;
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| JwtProblem::Malformed)?;
        let signed = token
            .get(..header.len() + 1 + payload.len())
            .ok_or(JwtProblem::Malformed)?;
        RsaPublicKeyComponents {
            n: &key.n,
            e: &key.e,
        }
        .verify(&RSA_PKCS1_2048_8192_SHA256, signed.as_bytes(), &signature)
        .map_err(|_| JwtProblem::Signature)?;

        // The claims are read only once the signature vouches for them.
        let claims = json(payload)?;
        if claims.get("iss").and_then(Value::as_str) != Some(self.issuer.as_str()) {
            return Err(JwtProblem::Issuer);
        }
        let time = |name: &str| claims.get(name).and_then(Value::as_f64);
        match time("exp") {
            Some(exp) if exp > now_unix as f64 => {}
            Some(_) => return Err(JwtProblem::Expired),
            None => return Err(JwtProblem::NoExpiry),
        }
        if time("nbf").is_some_and(|nbf| nbf > now_unix as f64) {
            return Err(JwtProblem::NotYetValid);
        }
        let for_us = match claims.get("aud") {
            Some(Value::String(aud)) => aud == resource,
            Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(resource)),
            _ => false,
        };
        if !for_us {
            return Err(JwtProblem::Audience);
        }
        Ok(claims
            .get("scope")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .split_ascii_whitespace()
            .map(str::to_owned)
            .collect())
    }
}

/// Why a JWT access token is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JwtProblem {
    Malformed,
    Algorithm,
    Type,
    UnknownKey,
    Signature,
    Issuer,
    Expired,
    NoExpiry,
    NotYetValid,
    Audience,
}

impl JwtProblem {
    /// The `error_description` of the 401.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            JwtProblem::Malformed => "the access token is not a JWT",
            JwtProblem::Algorithm => "the access token is not signed with RS256",
            JwtProblem::Type => "the JWT is not an access token",
            JwtProblem::UnknownKey => "the access token's signing key is not the issuer's",
            JwtProblem::Signature => "the access token's signature does not verify",
            JwtProblem::Issuer => "the access token was issued by another issuer",
            JwtProblem::Expired => "the access token expired",
            JwtProblem::NoExpiry => "the access token has no expiry",
            JwtProblem::NotYetValid => "the access token is not valid yet",
            JwtProblem::Audience => "the access token was issued for another resource",
        }
    }
}

/// Seconds since the Unix epoch, `offset` ahead (the server's clock).
pub(crate) fn unix_now(offset: Duration) -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.saturating_add(offset).as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
    use serde_json::json;

    /// A 2048-bit RSA key made for these tests alone (PKCS#8, base64).
    const TEST_KEY: &str = include_str!("external_test_key.b64");

    const ISSUER: &str = "http://127.0.0.1:9/";
    const RESOURCE: &str = "http://127.0.0.1:8/mcp";
    const NOW: u64 = 1_800_000_000;

    fn key() -> RsaKeyPair {
        let der = base64::engine::general_purpose::STANDARD
            .decode(TEST_KEY.trim())
            .unwrap();
        RsaKeyPair::from_pkcs8(&der).unwrap()
    }

    fn jwks(kid: &str) -> Value {
        let public: RsaPublicKeyComponents<Vec<u8>> = key().public().into();
        json!({"keys": [
            {"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA", "kid": "ec"},
            {"kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid,
             "n": URL_SAFE_NO_PAD.encode(&public.n), "e": URL_SAFE_NO_PAD.encode(&public.e)},
        ]})
    }

    fn sign(header: &Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let key = key();
        let mut signature = vec![0; key.public().modulus_len()];
        key.sign(
            &RSA_PKCS1_SHA256,
            &SystemRandom::new(),
            input.as_bytes(),
            &mut signature,
        )
        .unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    fn header() -> Value {
        json!({"alg": "RS256", "typ": "JWT", "kid": "k1"})
    }

    fn claims() -> Value {
        json!({"iss": ISSUER, "aud": RESOURCE, "exp": NOW + 60, "nbf": NOW - 10,
               "iat": NOW - 10, "sub": "johndoe", "scope": "mcp extra"})
    }

    fn server() -> ExternalAuthorizationServer {
        ExternalAuthorizationServer::new(ISSUER, &jwks("k1")).unwrap()
    }

    #[test]
    fn a_token_of_the_issuer_for_this_resource_is_accepted() {
        let token = sign(&header(), &claims());
        assert_eq!(
            server().verify(&token, RESOURCE, NOW),
            Ok(vec!["mcp".to_owned(), "extra".to_owned()])
        );
        let mut c = claims();
        c["aud"] = json!(["other", RESOURCE]);
        let mut h = header();
        h["typ"] = json!("at+jwt");
        assert!(server().verify(&sign(&h, &c), RESOURCE, NOW).is_ok());
        // No kid, one key.
        let mut h = header();
        h.as_object_mut().unwrap().remove("kid");
        assert!(server().verify(&sign(&h, &c), RESOURCE, NOW).is_ok());
    }

    #[test]
    fn every_broken_rule_is_refused() {
        let s = server();
        let with = |key: &str, value: Value| {
            let mut c = claims();
            c[key] = value;
            sign(&header(), &c)
        };
        let without = |key: &str| {
            let mut c = claims();
            c.as_object_mut().unwrap().remove(key);
            sign(&header(), &c)
        };
        let cases = [
            (with("iss", json!("http://127.0.0.1:9")), JwtProblem::Issuer),
            (without("iss"), JwtProblem::Issuer),
            (
                with("aud", json!("http://127.0.0.1:8/mcp/")),
                JwtProblem::Audience,
            ),
            (with("aud", json!(["x"])), JwtProblem::Audience),
            (without("aud"), JwtProblem::Audience),
            (with("exp", json!(NOW)), JwtProblem::Expired),
            (without("exp"), JwtProblem::NoExpiry),
            (with("nbf", json!(NOW + 5)), JwtProblem::NotYetValid),
        ];
        for (token, problem) in cases {
            assert_eq!(s.verify(&token, RESOURCE, NOW), Err(problem));
        }
        let mut h = header();
        h["kid"] = json!("k2");
        assert_eq!(
            s.verify(&sign(&h, &claims()), RESOURCE, NOW),
            Err(JwtProblem::UnknownKey)
        );
        let mut h = header();
        h["typ"] = json!("JOSE+JSON");
        assert_eq!(
            s.verify(&sign(&h, &claims()), RESOURCE, NOW),
            Err(JwtProblem::Type)
        );
    }

    #[test]
    fn forged_and_unsigned_tokens_are_refused() {
        let s = server();
        let token = sign(&header(), &claims());
        let (signed, signature) = token.rsplit_once('.').unwrap();
        let (head, _) = signed.split_once('.').unwrap();
        let mut c = claims();
        c["scope"] = json!("mcp admin");
        let forged = format!(
            "{head}.{}.{signature}",
            URL_SAFE_NO_PAD.encode(c.to_string())
        );
        assert_eq!(s.verify(&forged, RESOURCE, NOW), Err(JwtProblem::Signature));
        let none = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(json!({"alg": "none"}).to_string()),
            URL_SAFE_NO_PAD.encode(claims().to_string())
        );
        assert_eq!(s.verify(&none, RESOURCE, NOW), Err(JwtProblem::Algorithm));
        let hs = sign(&json!({"alg": "HS256", "kid": "k1"}), &claims());
        assert_eq!(s.verify(&hs, RESOURCE, NOW), Err(JwtProblem::Algorithm));
        for junk in ["", "abc", "a.b", "a.b.c.d", "opaque-token-0123"] {
            assert_eq!(s.verify(junk, RESOURCE, NOW), Err(JwtProblem::Malformed));
        }
        // Another key with the same kid.
        let other = ExternalAuthorizationServer::new(
            ISSUER,
            &json!({"keys": [{"kty": "RSA", "kid": "k1",
                "n": URL_SAFE_NO_PAD.encode([0xc5u8; 256]), "e": "AQAB"}]}),
        )
        .unwrap();
        assert_eq!(
            other.verify(&token, RESOURCE, NOW),
            Err(JwtProblem::Signature)
        );
    }

    #[test]
    fn jwks_without_rsa_signing_keys_are_refused() {
        assert!(ExternalAuthorizationServer::new(ISSUER, &json!({})).is_err());
        assert!(ExternalAuthorizationServer::new(ISSUER, &json!({"keys": []})).is_err());
        let enc = json!({"keys": [{"kty": "RSA", "use": "enc", "n": "AQAB", "e": "AQAB"}]});
        assert!(ExternalAuthorizationServer::new(ISSUER, &enc).is_err());
        let bad = json!({"keys": [{"kty": "RSA", "n": "***", "e": "AQAB"}]});
        assert!(ExternalAuthorizationServer::new(ISSUER, &bad).is_err());
        assert!(!format!("{:?}", server()).contains("AQAB"));
    }
}
