//! PKCE (RFC 7636) with S256, and the random `state` of an authorization
//! request.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::{SecureRandom, SystemRandom};
use sha2::{Digest, Sha256};

use crate::{AuthError, Secret};

/// A PKCE verifier and its S256 challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pkce {
    /// The `code_verifier`: kept by the client, sent to the token endpoint.
    pub verifier: Secret,
    /// The `code_challenge`: `BASE64URL(SHA256(verifier))`, sent in the
    /// authorization request with `code_challenge_method=S256`.
    pub challenge: String,
}

impl Pkce {
    /// A fresh verifier (32 random bytes, base64url without padding: 43
    /// characters) and its challenge.
    pub(crate) fn generate() -> Result<Pkce, AuthError> {
        let verifier = URL_SAFE_NO_PAD.encode(random_bytes::<32>()?);
        Ok(Self::with_verifier(Secret::new(verifier)))
    }

    /// The pair for a given verifier, which RFC 7636 §4.1 restricts to 43–128
    /// characters of `A-Z a-z 0-9 - . _ ~`. For tests and for resuming a
    /// stored flow.
    #[cfg(test)]
    pub(crate) fn from_verifier(verifier: &str) -> Result<Pkce, AuthError> {
        let valid_chars = verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
        if !(43..=128).contains(&verifier.len()) || !valid_chars {
            return Err(AuthError::InvalidVerifier);
        }
        Ok(Self::with_verifier(Secret::new(verifier)))
    }

    fn with_verifier(verifier: Secret) -> Pkce {
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.expose().as_bytes()));
        Pkce {
            verifier,
            challenge,
        }
    }
}

/// A fresh value for the `state` parameter (and usable as a JWT `jti`): 16
/// random bytes, base64url without padding (22 characters).
pub(crate) fn random_state() -> Result<String, AuthError> {
    Ok(URL_SAFE_NO_PAD.encode(random_bytes::<16>()?))
}

fn random_bytes<const N: usize>() -> Result<[u8; N], AuthError> {
    let mut bytes = [0u8; N];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| AuthError::Random)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b() {
        let p = Pkce::from_verifier("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk").unwrap();
        assert_eq!(p.challenge, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        assert!(!format!("{p:?}").contains("dBjft"));
    }

    #[test]
    fn generated_pairs_are_valid_and_fresh() {
        let a = Pkce::generate().unwrap();
        let b = Pkce::generate().unwrap();
        assert_eq!(a.verifier.expose().len(), 43);
        assert_ne!(a.verifier, b.verifier);
        assert_eq!(Pkce::from_verifier(a.verifier.expose()).unwrap(), a);
    }

    #[test]
    fn verifier_rules() {
        assert!(Pkce::from_verifier(&"a".repeat(42)).is_err());
        assert!(Pkce::from_verifier(&"a".repeat(43)).is_ok());
        assert!(Pkce::from_verifier(&"a".repeat(128)).is_ok());
        assert!(Pkce::from_verifier(&"a".repeat(129)).is_err());
        assert!(Pkce::from_verifier(&format!("{}+", "a".repeat(43))).is_err());
        assert!(Pkce::from_verifier(&format!("{}-._~", "a".repeat(43))).is_ok());
    }

    #[test]
    fn states_are_fresh() {
        let a = random_state().unwrap();
        assert_eq!(a.len(), 22);
        assert_ne!(a, random_state().unwrap());
    }
}
