//! `private_key_jwt` client authentication (RFC 7523 §2.2, RFC 7521 §4.2):
//! a short-lived JWT the client signs with its private key.
//!
//! The audience: RFC 7523 allowed the token endpoint URL, and its update
//! (RFC 7523bis, draft-ietf-oauth-rfc7523bis) requires the authorization
//! server's **issuer identifier**. Pass the issuer; the MCP conformance
//! suite (`auth/client-credentials-jwt`) verifies `aud` against the issuer
//! (with or without a trailing slash), `iss` and `sub` against the client
//! id, and hands the key over as a PKCS#8 PEM (`private_key_pem`) with
//! `signing_algorithm: "ES256"`.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, RsaKeyPair};
use serde_json::json;

use crate::{AuthError, Secret};

/// How long an assertion is valid: five minutes.
pub(crate) const ASSERTION_LIFETIME_SECS: u64 = 300;

/// A JWS signing algorithm this crate implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub(crate) enum Algorithm {
    /// ECDSA with P-256 and SHA-256.
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
}

impl Algorithm {
    /// The JWS name (`ES256`, `RS256`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Algorithm::Es256 => "ES256",
            Algorithm::Rs256 => "RS256",
        }
    }

    /// The algorithm of a JWS name; `None` for others.
    pub(crate) fn from_name(name: &str) -> Option<Algorithm> {
        match name {
            "ES256" => Some(Algorithm::Es256),
            "RS256" => Some(Algorithm::Rs256),
            _ => None,
        }
    }
}

enum KeyPair {
    Ec(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

/// A private key for signing client assertions. `Debug` shows the
/// algorithm and key id, never key material.
pub(crate) struct SigningKey {
    alg: Algorithm,
    kid: Option<String>,
    pair: KeyPair,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &self.alg)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Reads an unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`) for
    /// `alg` (`"ES256"`: a P-256 key; `"RS256"`: an RSA key of 2048 bits or
    /// more). Other PEM kinds are refused with the command that converts them.
    pub(crate) fn from_pem(pem: &str, alg: &str) -> Result<SigningKey, AuthError> {
        let algorithm = Algorithm::from_name(alg).ok_or_else(|| AuthError::InvalidKey {
            reason: format!(
                "signing algorithm {:?} is not supported; use ES256 or RS256",
                alg.chars().take(20).collect::<String>()
            ),
        })?;
        let der = pem_pkcs8(pem)?;
        SigningKey::from_pkcs8(&der, algorithm)
    }

    /// Reads a PKCS#8 DER private key for `alg`.
    pub(crate) fn from_pkcs8(der: &[u8], alg: Algorithm) -> Result<SigningKey, AuthError> {
        let rejected = |e: ring::error::KeyRejected| AuthError::InvalidKey {
            reason: format!("not a usable {} key ({e})", alg.as_str()),
        };
        let pair = match alg {
            Algorithm::Es256 => KeyPair::Ec(
                EcdsaKeyPair::from_pkcs8(
                    &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                    der,
                    &SystemRandom::new(),
                )
                .map_err(rejected)?,
            ),
            Algorithm::Rs256 => KeyPair::Rsa(RsaKeyPair::from_pkcs8(der).map_err(rejected)?),
        };
        Ok(SigningKey {
            alg,
            kid: None,
            pair,
        })
    }

    /// The key with a key id (`kid` in the JWS header), as registered in the
    /// client's JWKS.
    #[cfg(test)]
    pub(crate) fn with_kid(mut self, kid: impl Into<String>) -> SigningKey {
        self.kid = Some(kid.into());
        self
    }

    /// The algorithm.
    #[cfg(test)]
    pub(crate) fn algorithm(&self) -> Algorithm {
        self.alg
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, AuthError> {
        let rng = SystemRandom::new();
        let failed = |_| AuthError::InvalidKey {
            reason: "signing failed".into(),
        };
        match &self.pair {
            KeyPair::Ec(pair) => Ok(pair.sign(&rng, message).map_err(failed)?.as_ref().to_vec()),
            KeyPair::Rsa(pair) => {
                let mut out = vec![0; pair.public().modulus_len()];
                pair.sign(&signature::RSA_PKCS1_SHA256, &rng, message, &mut out)
                    .map_err(failed)?;
                Ok(out)
            }
        }
    }
}

/// The DER inside a `PRIVATE KEY` PEM block.
fn pem_pkcs8(pem: &str) -> Result<Vec<u8>, AuthError> {
    const BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
    const END: &str = "-----END PRIVATE KEY-----";
    let invalid = |reason: &str| AuthError::InvalidKey {
        reason: reason.to_owned(),
    };
    let Some((_, after_begin)) = pem.split_once(BEGIN) else {
        return Err(
            if pem.contains("-----BEGIN EC PRIVATE KEY-----")
                || pem.contains("-----BEGIN RSA PRIVATE KEY-----")
            {
                invalid(
                    "the key is not in PKCS#8 form; convert it with \
                     `openssl pkcs8 -topk8 -nocrypt -in key.pem -out key.p8.pem`",
                )
            } else if pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
                invalid(
                    "the key is encrypted; decrypt it with `openssl pkcs8 -in key.pem -out plain.pem`",
                )
            } else {
                invalid("no -----BEGIN PRIVATE KEY----- block found")
            },
        );
    };
    let (body, _) = after_begin
        .split_once(END)
        .ok_or_else(|| invalid("the PEM block has no -----END PRIVATE KEY----- line"))?;
    let base64: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    STANDARD
        .decode(base64)
        .map_err(|_| invalid("the PEM block is not valid base64"))
}

/// A signed client assertion for the token request's `client_assertion`:
/// header `{alg, typ: "JWT", kid?}`, claims `{iss: client_id, sub: client_id,
/// aud: audience, iat: now, exp: now + 300, jti}`. `audience` is the
/// authorization server's issuer (see the module docs); `jti` must be unique
/// per assertion ([`crate::pkce::random_state`] makes one).
pub(crate) fn client_assertion(
    client_id: &str,
    audience: &str,
    key: &SigningKey,
    now_unix: u64,
    jti: &str,
) -> Result<Secret, AuthError> {
    let mut header = json!({ "alg": key.alg.as_str(), "typ": "JWT" });
    if let (Some(kid), Some(map)) = (&key.kid, header.as_object_mut()) {
        map.insert("kid".into(), json!(kid));
    }
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now_unix,
        "exp": now_unix.saturating_add(ASSERTION_LIFETIME_SECS),
        "jti": jti,
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = key.sign(signing_input.as_bytes())?;
    Ok(Secret::new(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{KeyPair as _, UnparsedPublicKey};
    use serde_json::Value;

    /// A throwaway 2048-bit RSA test key (PKCS#8), made for these tests only.
    const RSA_PEM: &str = include_str!("../tests/data/rsa-test-key.pem");

    fn ec_pem() -> (String, Vec<u8>) {
        let doc = EcdsaKeyPair::generate_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            &SystemRandom::new(),
        )
        .unwrap();
        let b64 = STANDARD.encode(doc.as_ref());
        let lines: Vec<&str> = b64
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            lines.join("\n")
        );
        let pair = EcdsaKeyPair::from_pkcs8(
            &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            doc.as_ref(),
            &SystemRandom::new(),
        )
        .unwrap();
        (pem, pair.public_key().as_ref().to_vec())
    }

    fn split(jwt: &str) -> (Value, Value, Vec<u8>, String) {
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let decode = |s: &str| URL_SAFE_NO_PAD.decode(s).unwrap();
        (
            serde_json::from_slice(&decode(parts[0])).unwrap(),
            serde_json::from_slice(&decode(parts[1])).unwrap(),
            decode(parts[2]),
            format!("{}.{}", parts[0], parts[1]),
        )
    }

    #[test]
    fn es256_assertion_verifies() {
        let (pem, public) = ec_pem();
        let key = SigningKey::from_pem(&pem, "ES256").unwrap().with_kid("k1");
        assert_eq!(key.algorithm(), Algorithm::Es256);
        assert!(!format!("{key:?}").contains("BEGIN"));
        let jwt = client_assertion(
            "conformance-test-client",
            "http://localhost:1234",
            &key,
            1000,
            "j1",
        )
        .unwrap();
        let (header, claims, sig, input) = split(jwt.expose());
        assert_eq!(header, json!({"alg": "ES256", "typ": "JWT", "kid": "k1"}));
        assert_eq!(
            claims,
            json!({
                "iss": "conformance-test-client",
                "sub": "conformance-test-client",
                "aud": "http://localhost:1234",
                "iat": 1000,
                "exp": 1300,
                "jti": "j1",
            })
        );
        assert_eq!(sig.len(), 64);
        UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, public)
            .verify(input.as_bytes(), &sig)
            .unwrap();
    }

    #[test]
    fn rs256_assertion_verifies() {
        let key = SigningKey::from_pem(RSA_PEM, "RS256").unwrap();
        let KeyPair::Rsa(pair) = &key.pair else {
            panic!()
        };
        let public = pair.public().as_ref().to_vec();
        let jwt = client_assertion("c", "https://auth.example.com", &key, 0, "j").unwrap();
        let (header, _, sig, input) = split(jwt.expose());
        assert_eq!(header, json!({"alg": "RS256", "typ": "JWT"}));
        UnparsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA256, public)
            .verify(input.as_bytes(), &sig)
            .unwrap();
    }

    #[test]
    fn key_refusals() {
        let (pem, _) = ec_pem();
        let reason = |r: Result<SigningKey, AuthError>| match r {
            Err(AuthError::InvalidKey { reason }) => reason,
            other => panic!("{other:?}"),
        };
        assert!(reason(SigningKey::from_pem(&pem, "HS256")).contains("not supported"));
        assert!(reason(SigningKey::from_pem(&pem, "RS256")).contains("not a usable RS256 key"));
        assert!(reason(SigningKey::from_pem(RSA_PEM, "ES256")).contains("not a usable ES256 key"));
        assert!(
            reason(SigningKey::from_pem(
                "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----",
                "ES256"
            ))
            .contains("openssl pkcs8 -topk8")
        );
        assert!(
            reason(SigningKey::from_pem(
                "-----BEGIN ENCRYPTED PRIVATE KEY-----",
                "ES256"
            ))
            .contains("encrypted")
        );
        assert!(reason(SigningKey::from_pem("garbage", "ES256")).contains("no -----BEGIN"));
        assert!(
            reason(SigningKey::from_pem(
                "-----BEGIN PRIVATE KEY-----\nAAAA",
                "ES256"
            ))
            .contains("END")
        );
        assert!(
            reason(SigningKey::from_pem(
                "-----BEGIN PRIVATE KEY-----\n!!\n-----END PRIVATE KEY-----",
                "ES256"
            ))
            .contains("base64")
        );
        assert!(reason(SigningKey::from_pkcs8(b"", Algorithm::Es256)).contains("ES256"));
    }

    #[test]
    fn algorithm_names() {
        for a in [Algorithm::Es256, Algorithm::Rs256] {
            assert_eq!(Algorithm::from_name(a.as_str()), Some(a));
        }
        assert_eq!(Algorithm::from_name("es256"), None);
    }
}
