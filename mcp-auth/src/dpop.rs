//! DPoP, proof of possession (RFC 9449): tokens bound to a key the client
//! holds, so a stolen token is useless without it.
//!
//! One [`DpopKey`] (ES256, P-256) per authorization: its public key travels
//! in every proof's header, the authorization server binds the token to its
//! thumbprint (`cnf.jkt`), and each request (the token request and every
//! request to the MCP server) carries a fresh proof: a JWT naming the
//! method (`htm`), the URL without query and fragment (`htu`), the time
//! (`iat`), a unique id (`jti`), for the MCP server the token's hash
//! (`ath`), and the server's nonce when it asked for one (`use_dpop_nonce`
//! with a `DPoP-Nonce` header). The caller supplies the clock and the ids,
//! so every proof is checkable in a test.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair as _};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::{AuthError, Secret};

/// The `token_type` and `Authorization` scheme of a DPoP-bound token.
pub(crate) const DPOP_SCHEME: &str = "DPoP";

/// A DPoP key pair (ES256). `Debug` shows the thumbprint only.
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    /// The PKCS#8 document, base64 (for the token store).
    pkcs8: Secret,
    /// The public key's `x` and `y`, base64url.
    x: String,
    y: String,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey")
            .field("thumbprint", &self.thumbprint())
            .finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A fresh P-256 key from the system's random generator.
    pub(crate) fn generate() -> Result<DpopKey, AuthError> {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).map_err(|_| AuthError::Random)?;
        Self::from_pkcs8(pkcs8.as_ref())
    }

    /// A key from a PKCS#8 document (P-256).
    pub(crate) fn from_pkcs8(der: &[u8]) -> Result<DpopKey, AuthError> {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pair = EcdsaKeyPair::from_pkcs8(alg, der, &rng).map_err(|_| AuthError::InvalidKey {
            reason: "not a P-256 PKCS#8 key".into(),
        })?;
        // The uncompressed point: 0x04, then 32 bytes of x and 32 of y.
        let public = pair.public_key().as_ref();
        let (x, y) = match (public.first(), public.get(1..33), public.get(33..65)) {
            (Some(4), Some(x), Some(y)) => (URL_SAFE_NO_PAD.encode(x), URL_SAFE_NO_PAD.encode(y)),
            _ => {
                return Err(AuthError::InvalidKey {
                    reason: "the public key is not an uncompressed P-256 point".into(),
                });
            }
        };
        Ok(DpopKey {
            pair,
            pkcs8: Secret::new(base64::engine::general_purpose::STANDARD.encode(der)),
            x,
            y,
        })
    }

    /// The key as the token store keeps it (base64 PKCS#8; a secret).
    pub(crate) fn to_stored(&self) -> Secret {
        self.pkcs8.clone()
    }

    /// A key the token store kept ([`to_stored`](Self::to_stored)).
    pub(crate) fn from_stored(stored: &Secret) -> Result<DpopKey, AuthError> {
        let der = base64::engine::general_purpose::STANDARD
            .decode(stored.expose())
            .map_err(|_| AuthError::InvalidKey {
                reason: "the stored DPoP key is not base64".into(),
            })?;
        Self::from_pkcs8(&der)
    }

    /// The public key as a JWK.
    pub(crate) fn jwk(&self) -> serde_json::Value {
        json!({"kty": "EC", "crv": "P-256", "x": self.x, "y": self.y})
    }

    /// The JWK thumbprint (RFC 7638): SHA-256 over the required members in
    /// lexicographic order, base64url. The authorization server puts it in
    /// the token's `cnf.jkt`.
    pub(crate) fn thumbprint(&self) -> String {
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            self.x, self.y
        );
        URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
    }

    /// A proof for one request. `url` loses its query and fragment (`htu`);
    /// `access_token` adds `ath` (requests to the MCP server); `nonce` the
    /// server's `DPoP-Nonce`. `jti` must be unique per proof.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        now_unix: u64,
        jti: &str,
        access_token: Option<&Secret>,
        nonce: Option<&str>,
    ) -> Result<Secret, AuthError> {
        let header = json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk()});
        let mut claims = json!({
            "jti": jti,
            "htm": method,
            "htu": htu(url),
            "iat": now_unix,
        });
        if let Some(map) = claims.as_object_mut() {
            if let Some(token) = access_token {
                map.insert("ath".into(), json!(token_hash(token)));
            }
            if let Some(nonce) = nonce {
                map.insert("nonce".into(), json!(nonce));
            }
        }
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let rng = SystemRandom::new();
        let signature =
            self.pair
                .sign(&rng, input.as_bytes())
                .map_err(|_| AuthError::InvalidKey {
                    reason: "signing a DPoP proof failed".into(),
                })?;
        Ok(Secret::new(format!(
            "{input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        )))
    }
}

/// `htu`: the URL without query and fragment (RFC 9449 §4.2).
pub(crate) fn htu(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    url.get(..end).unwrap_or(url)
}

/// `ath`: base64url(SHA-256(access token)).
pub(crate) fn token_hash(token: &Secret) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.expose().as_bytes()))
}

/// Whether an error answer asks for a (new) nonce: `use_dpop_nonce` in
/// the token endpoint's JSON error or in a `DPoP` challenge's `error`.
pub(crate) fn is_nonce_error(error: Option<&str>) -> bool {
    error == Some("use_dpop_nonce")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn decode(part: &str) -> serde_json::Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    #[test]
    fn a_proof_names_the_request_and_verifies_with_the_public_key() {
        let key = DpopKey::generate().unwrap();
        let token = Secret::new("at-123");
        let proof = key
            .proof(
                "POST",
                "https://mcp.example/mcp?x=1#f",
                1_700_000_000,
                "j1",
                Some(&token),
                Some("n0nce"),
            )
            .unwrap();
        let parts: Vec<&str> = proof.expose().split('.').collect();
        assert_eq!(parts.len(), 3);
        let header = decode(parts[0]);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        let claims = decode(parts[1]);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["iat"], 1_700_000_000);
        assert_eq!(claims["jti"], "j1");
        assert_eq!(claims["nonce"], "n0nce");
        assert_eq!(claims["ath"], token_hash(&token));
        // The signature verifies with the public key in the header.
        let public = key.pair.public_key().as_ref().to_vec();
        let verifier =
            signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, public);
        let input = format!("{}.{}", parts[0], parts[1]);
        let sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        verifier.verify(input.as_bytes(), &sig).unwrap();
        // No token, no nonce: neither claim.
        let bare = key
            .proof("POST", "https://as/token", 1, "j2", None, None)
            .unwrap();
        let claims = decode(bare.expose().split('.').nth(1).unwrap());
        assert!(claims.get("ath").is_none() && claims.get("nonce").is_none());
        assert!(!format!("{key:?}").contains(&key.x));
        // Kept and restored, it is the same key.
        let again = DpopKey::from_stored(&key.to_stored()).unwrap();
        assert_eq!(again.thumbprint(), key.thumbprint());
    }

    #[test]
    fn the_thumbprint_follows_rfc_7638() {
        // RFC 7638's method on a fixed key: the canonical members in order.
        let key = DpopKey::generate().unwrap();
        let jwk = key.jwk();
        let canonical = format!(
            r#"{{"crv":"{}","kty":"{}","x":"{}","y":"{}"}}"#,
            jwk["crv"].as_str().unwrap(),
            jwk["kty"].as_str().unwrap(),
            jwk["x"].as_str().unwrap(),
            jwk["y"].as_str().unwrap()
        );
        assert_eq!(
            key.thumbprint(),
            URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
        );
        assert_eq!(key.thumbprint().len(), 43);
    }

    #[test]
    fn the_token_hash_matches_rfc_9449s_example() {
        // RFC 9449 §7.1: the access token of the example and its `ath`.
        let token = Secret::new("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU");
        assert_eq!(
            token_hash(&token),
            "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
        );
        assert_eq!(htu("https://a/b?c#d"), "https://a/b");
        assert!(is_nonce_error(Some("use_dpop_nonce")));
        assert!(!is_nonce_error(Some("invalid_token")));
    }
}
