//! Logins sealed at rest: AES-256-GCM (ring) with a key the platform
//! supplies, a random nonce per write, and the login's key (identity,
//! server, issuer) as associated data, so a row copied under another
//! identity does not open. Each sealed row names the key that sealed it:
//! [`SealingKeys`] holds the newest key (which writes) and older ones (which
//! still read), so keys rotate without a migration.

use std::fmt;

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

use super::{LoginKey, StoreError, StoredAuth};

/// One encryption key: an id (stored beside each row it seals) and 32
/// secret bytes. `Debug` shows the id only.
#[derive(Clone)]
pub struct SealingKey {
    id: String,
    bytes: [u8; 32],
}

impl fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealingKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl SealingKey {
    /// A key named `id` (non-empty, at most 64 characters) of these bytes.
    pub fn new(id: impl Into<String>, bytes: [u8; 32]) -> Result<Self, StoreError> {
        let id = id.into();
        if id.is_empty() || id.len() > 64 {
            return Err(StoreError::Settings(
                "a sealing key id must be 1 to 64 characters".into(),
            ));
        }
        Ok(SealingKey { id, bytes })
    }

    /// A key from 32 bytes in standard or URL-safe base64 (with or without
    /// padding), as a platform's secret manager hands them out.
    pub fn from_base64(id: impl Into<String>, text: &str) -> Result<Self, StoreError> {
        use base64::Engine as _;
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
        let text = text.trim();
        let raw = STANDARD
            .decode(text)
            .or_else(|_| URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')))
            .map_err(|_| StoreError::Settings("a sealing key must be base64".into()))?;
        let bytes: [u8; 32] = raw.try_into().map_err(|_| {
            StoreError::Settings("a sealing key must be 32 bytes (256 bits)".into())
        })?;
        Self::new(id, bytes)
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.id
    }

    fn aead(&self) -> Result<LessSafeKey, StoreError> {
        UnboundKey::new(&AES_256_GCM, &self.bytes)
            .map(LessSafeKey::new)
            .map_err(|_| StoreError::Settings("the sealing key was refused".into()))
    }
}

/// The keys a store seals and opens logins with: the newest seals every
/// write; the others only open rows written before a rotation.
#[derive(Debug, Clone)]
pub struct SealingKeys {
    current: SealingKey,
    older: Vec<SealingKey>,
}

/// A sealed login as stored: the key's id, the nonce, ciphertext and tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sealed {
    pub(crate) key_id: String,
    pub(crate) nonce: Vec<u8>,
    pub(crate) data: Vec<u8>,
}

impl SealingKeys {
    /// Keys with `current` sealing new writes.
    pub fn new(current: SealingKey) -> Self {
        SealingKeys {
            current,
            older: Vec::new(),
        }
    }

    /// Adds a retired key that still opens rows it sealed.
    pub fn with_older(mut self, key: SealingKey) -> Self {
        self.older.push(key);
        self
    }

    /// The id of the key new writes are sealed with.
    pub fn current_id(&self) -> &str {
        &self.current.id
    }

    fn find(&self, id: &str) -> Option<&SealingKey> {
        std::iter::once(&self.current)
            .chain(&self.older)
            .find(|k| k.id == id)
    }

    /// Seals `entry` under its key with the current key.
    pub(crate) fn seal(&self, entry: &StoredAuth) -> Result<Sealed, StoreError> {
        let key = entry.key();
        let mut data = serde_json::to_vec(entry).map_err(|e| StoreError::Corrupt {
            what: describe(&key),
            message: e.to_string(),
        })?;
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| StoreError::Settings("no random numbers for a nonce".into()))?;
        self.current
            .aead()?
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(associated_data(&key)),
                &mut data,
            )
            .map_err(|_| StoreError::Settings("sealing a login failed".into()))?;
        Ok(Sealed {
            key_id: self.current.id.clone(),
            nonce: nonce.to_vec(),
            data,
        })
    }

    /// Opens a row stored under `key`: a typed error for an unknown key, a
    /// wrong key or an altered row, and for what opens but is no login.
    pub(crate) fn open(&self, key: &LoginKey, sealed: Sealed) -> Result<StoredAuth, StoreError> {
        let what = describe(key);
        let Some(sealing) = self.find(&sealed.key_id) else {
            return Err(StoreError::UnknownKey {
                what,
                key_id: sealed.key_id,
            });
        };
        let nonce: [u8; NONCE_LEN] =
            sealed
                .nonce
                .as_slice()
                .try_into()
                .map_err(|_| StoreError::Corrupt {
                    what: what.clone(),
                    message: format!("its nonce is {} bytes, not {NONCE_LEN}", sealed.nonce.len()),
                })?;
        let mut data = sealed.data;
        let plain = sealing
            .aead()?
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(associated_data(key)),
                &mut data,
            )
            .map_err(|_| StoreError::WrongKey {
                what: what.clone(),
                key_id: sealed.key_id.clone(),
            })?;
        let entry: StoredAuth = serde_json::from_slice(plain).map_err(|e| StoreError::Corrupt {
            what: what.clone(),
            message: e.to_string(),
        })?;
        if entry.key() != *key {
            return Err(StoreError::Corrupt {
                what,
                message: "it names another login".into(),
            });
        }
        Ok(entry)
    }
}

/// Whose login, for which server and issuer (no secrets).
pub(crate) fn describe(key: &LoginKey) -> String {
    let who = if key.identity.is_empty() {
        "the default identity".to_owned()
    } else {
        format!("identity `{}`", key.identity)
    };
    format!("{who} at {} (issuer {})", key.server, key.issuer)
}

/// The login's key, unambiguously: each part with its length.
fn associated_data(key: &LoginKey) -> Vec<u8> {
    let mut out = b"mcp-auth login v1".to_vec();
    for part in [&key.identity, &key.server, &key.issuer] {
        out.extend_from_slice(&(part.len() as u64).to_be_bytes());
        out.extend_from_slice(part.as_bytes());
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::store::tests::entry;

    fn keys(id: &str, byte: u8) -> SealingKeys {
        SealingKeys::new(SealingKey::new(id, [byte; 32]).unwrap())
    }

    #[test]
    fn a_sealed_login_opens_with_its_key_and_hides_its_tokens() {
        let e = entry("https://s", "https://as", "sekrit-token").for_identity("alice");
        let k = keys("k1", 7);
        let sealed = k.seal(&e).unwrap();
        assert_eq!(sealed.key_id, "k1");
        assert!(
            !sealed.data.windows(b"sekrit".len()).any(|w| w == b"sekrit"),
            "the token is not stored in clear"
        );
        // A fresh nonce per write: the same entry seals differently.
        let again = k.seal(&e).unwrap();
        assert_ne!(sealed.nonce, again.nonce);
        assert_ne!(sealed.data, again.data);
        assert_eq!(k.open(&e.key(), sealed).unwrap(), e);
    }

    #[test]
    fn wrong_unknown_or_rotated_keys_are_told_apart() {
        let e = entry("https://s", "https://as", "t").for_identity("alice");
        let sealed = keys("k1", 1).seal(&e).unwrap();
        // The right id, the wrong bytes.
        let err = keys("k1", 2).open(&e.key(), sealed.clone()).unwrap_err();
        assert!(matches!(err, StoreError::WrongKey { .. }), "{err}");
        assert!(err.to_string().contains("k1"), "{err}");
        // An id the store does not have.
        let err = keys("k2", 1).open(&e.key(), sealed.clone()).unwrap_err();
        assert!(matches!(err, StoreError::UnknownKey { .. }), "{err}");
        // After a rotation: k2 writes, k1 still reads.
        let rotated = keys("k2", 9).with_older(SealingKey::new("k1", [1; 32]).unwrap());
        assert_eq!(rotated.open(&e.key(), sealed).unwrap(), e);
        assert_eq!(rotated.seal(&e).unwrap().key_id, "k2");
    }

    #[test]
    fn a_row_moved_to_another_identity_or_altered_does_not_open() {
        let e = entry("https://s", "https://as", "t").for_identity("alice");
        let k = keys("k1", 3);
        let sealed = k.seal(&e).unwrap();
        let bob = LoginKey::new("bob", "https://s", "https://as");
        assert!(matches!(
            k.open(&bob, sealed.clone()).unwrap_err(),
            StoreError::WrongKey { .. }
        ));
        let mut altered = sealed.clone();
        altered.data[0] ^= 1;
        assert!(matches!(
            k.open(&e.key(), altered).unwrap_err(),
            StoreError::WrongKey { .. }
        ));
        let mut short = sealed;
        short.nonce.truncate(3);
        assert!(matches!(
            k.open(&e.key(), short).unwrap_err(),
            StoreError::Corrupt { .. }
        ));
    }

    #[test]
    fn keys_come_from_base64_of_32_bytes_and_never_show_themselves() {
        let text = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        let key = SealingKey::from_base64("main", text).unwrap();
        assert!(!format!("{key:?}").contains("AAEC"));
        assert!(SealingKey::from_base64("main", "AAEC").is_err());
        assert!(SealingKey::new("", [0; 32]).is_err());
    }
}
