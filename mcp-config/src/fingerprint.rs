//! Keyed fingerprints (HMAC-SHA256) over a canonical JSON form.
//!
//! A fingerprint is printed (`mcp config show`) and compared, so it must not
//! let anyone who sees it test guesses of the values behind it: a 6-digit
//! PIN in an env value, or in an arg from `${VAR}`, falls to a million
//! SHA-256 computations. Every fingerprint is therefore an HMAC under a
//! [`FingerprintKey`], and every secret enters the canonical form only as its
//! own HMAC under the same key. Without the key, a fingerprint says nothing
//! about any value; with the same key, the same config gives the same
//! fingerprint, in any process.

use std::fmt;
use std::sync::OnceLock;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// A fingerprint of a resolved server or of a whole session config: an
/// HMAC-SHA256, under a [`FingerprintKey`], of its canonical form.
///
/// Equal under one key means equal in behaviour. Fingerprints made under
/// different keys cannot be compared, and without the key a fingerprint
/// reveals nothing about the values it covers.
///
/// `Display` prints the 64 hex digits; `Debug` a short prefix.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

/// Where a fingerprint's MAC input starts: the scheme and its version.
const FINGERPRINT_DOMAIN: &[u8] = b"mcp-config fingerprint v2\0";
/// Where a secret's MAC input starts, so no secret digest is ever a fingerprint.
const SECRET_DOMAIN: &[u8] = b"mcp-config secret v2\0";

impl Fingerprint {
    /// A placeholder, replaced before a resolved server is handed out.
    pub(crate) const UNSET: Fingerprint = Fingerprint([0; 32]);

    /// The raw digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The digest as 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        base16ct::lower::encode_string(&self.0)
    }

    /// Fingerprint of a JSON value in canonical form (keys sorted, compact).
    pub(crate) fn of_canonical(key: &FingerprintKey, value: &Value) -> Self {
        let mut text = String::new();
        write_canonical(value, &mut text);
        let mut mac = key.mac.clone();
        mac.update(FINGERPRINT_DOMAIN);
        mac.update(text.as_bytes());
        Self(mac.finalize())
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = self.to_hex();
        write!(f, "Fingerprint({}…)", hex.get(..12).unwrap_or(&hex))
    }
}

/// The secret key fingerprints are computed under: 32 bytes.
///
/// Fingerprints are stable exactly as long as their key is. Three ways to
/// have one:
///
/// * [`FingerprintKey::per_process`]: a random key made once per process.
///   [`resolve`](crate::resolve) uses it, so a program that compares
///   fingerprints only within one run (as `mcp-stack-runtime` does to reuse
///   connections) needs nothing else. Fingerprints then differ from run to
///   run.
/// * [`FingerprintKey::from_bytes`]: a key the program keeps, for
///   fingerprints that must mean the same in the next run (a persisted
///   catalog, a printed fingerprint compared later). Pass it to
///   [`resolve_with_key`](crate::resolve_with_key). Keep it as secret as the
///   config's secrets: whoever has it can test guesses of them against a
///   fingerprint. `mcp-stack-runtime`'s `load_or_create_key` keeps one in a 0600
///   file; `mcp` uses the one beside its token store.
/// * [`FingerprintKey::generate`]: a new random key, to keep.
///
/// `Debug` never shows it.
#[derive(Clone)]
pub struct FingerprintKey {
    bytes: [u8; 32],
    /// The HMAC with the key absorbed, cloned for each fingerprint.
    mac: HmacSha256,
}

impl FingerprintKey {
    /// A key's length in bytes.
    pub const LEN: usize = 32;

    /// A key from its bytes (as kept by the program).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        FingerprintKey {
            bytes,
            mac: HmacSha256::new(&bytes),
        }
    }

    /// A new key from the operating system's random number generator.
    pub fn generate() -> Result<Self, KeyUnavailable> {
        let mut bytes = [0u8; 32];
        getrandom::getrandom(&mut bytes).map_err(|e| KeyUnavailable(e.to_string()))?;
        Ok(Self::from_bytes(bytes))
    }

    /// This process's key: random, made on first use, the same for the rest
    /// of the process, never stored.
    ///
    /// Should the operating system's random number generator fail (a
    /// sandbox without `getrandom` or `/dev/urandom`), the key is derived
    /// from the time, the process and thread ids and memory addresses
    /// instead: never written anywhere and hard to predict from outside the
    /// process, but far weaker than a random key; it keeps resolving from
    /// failing, nothing more.
    pub fn per_process() -> &'static FingerprintKey {
        static KEY: OnceLock<FingerprintKey> = OnceLock::new();
        KEY.get_or_init(|| Self::generate().unwrap_or_else(|_| Self::from_bytes(fallback_bytes())))
    }

    /// The key's bytes, for a program that keeps the key (and keeps them as
    /// secret as the config's secrets).
    pub fn expose_bytes(&self) -> &[u8; 32] {
        &self.bytes
    }
}

impl fmt::Debug for FingerprintKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FingerprintKey(<redacted>)")
    }
}

/// The operating system's random number generator failed, so no key could
/// be made.
#[derive(Debug, thiserror::Error)]
#[error(
    "the operating system's random number generator failed ({0}); fingerprints need a random key"
)]
pub struct KeyUnavailable(String);

/// Bytes for a key when the random number generator fails: a hash of the
/// time, the process and thread, and where the stack, heap and code are.
fn fallback_bytes() -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"mcp-config fallback key\0");
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.update(t.as_nanos().to_le_bytes());
    }
    h.update(format!("{:?}", std::time::Instant::now()).as_bytes());
    h.update(std::process::id().to_le_bytes());
    h.update(format!("{:?}", std::thread::current().id()).as_bytes());
    let on_stack = 0u8;
    h.update((&raw const on_stack).addr().to_le_bytes());
    let on_heap = Box::new(0u8);
    h.update((&raw const *on_heap).addr().to_le_bytes());
    h.update((fallback_bytes as fn() -> [u8; 32] as usize).to_le_bytes());
    to_array(&h.finalize())
}

fn to_array(digest: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (o, d) in out.iter_mut().zip(digest) {
        *o = *d;
    }
    out
}

/// HMAC-SHA256 (RFC 2104) on `sha2`: the hash of the key padded with
/// `opad`, then of the hash of the key padded with `ipad` and the message.
#[derive(Clone)]
pub(crate) struct HmacSha256 {
    inner: Sha256,
    outer: Sha256,
}

impl HmacSha256 {
    /// SHA-256's block size in bytes.
    const BLOCK: usize = 64;

    /// A MAC under `key`; a key longer than a block is hashed first.
    pub(crate) fn new(key: &[u8]) -> Self {
        let mut block = [0u8; Self::BLOCK];
        let hashed;
        let key = if key.len() > Self::BLOCK {
            hashed = Sha256::digest(key);
            hashed.as_slice()
        } else {
            key
        };
        for (b, k) in block.iter_mut().zip(key) {
            *b = *k;
        }
        let mut ipad = [0x36u8; Self::BLOCK];
        let mut opad = [0x5cu8; Self::BLOCK];
        for ((i, o), k) in ipad.iter_mut().zip(opad.iter_mut()).zip(block) {
            *i ^= k;
            *o ^= k;
        }
        let mut inner = Sha256::new();
        inner.update(ipad);
        let mut outer = Sha256::new();
        outer.update(opad);
        HmacSha256 { inner, outer }
    }

    pub(crate) fn update(&mut self, data: &[u8]) {
        self.inner.update(data);
    }

    pub(crate) fn finalize(self) -> [u8; 32] {
        let mut outer = self.outer;
        outer.update(self.inner.finalize());
        to_array(&outer.finalize())
    }
}

impl fmt::Debug for HmacSha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HmacSha256(<keyed>)")
    }
}

/// How a secret enters a canonical form: only through its own HMAC under
/// the fingerprint key (domain-separated from fingerprints).
pub(crate) fn secret_digest(key: &FingerprintKey, value: &str) -> String {
    let mut mac = key.mac.clone();
    mac.update(SECRET_DOMAIN);
    mac.update(value.as_bytes());
    format!(
        "hmac-sha256:{}",
        base16ct::lower::encode_string(&mac.finalize())
    )
}

/// Compact JSON with object keys sorted, whatever `serde_json`'s map order is.
pub(crate) fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hex(bytes: &[u8]) -> String {
        base16ct::lower::encode_string(bytes)
    }

    fn hmac(key: &[u8], message: &[u8]) -> String {
        let mut mac = HmacSha256::new(key);
        mac.update(message);
        hex(&mac.finalize())
    }

    /// RFC 4231, section 4: the HMAC-SHA-256 results of test cases 1 to 7
    /// (case 5's is truncated to 128 bits there, so only its prefix is given).
    #[test]
    fn hmac_sha256_matches_rfc_4231() {
        let cases: [(Vec<u8>, &[u8], &str); 7] = [
            (
                vec![0x0b; 20],
                b"Hi There",
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
            ),
            (
                b"Jefe".to_vec(),
                b"what do ya want for nothing?",
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                vec![0xaa; 20],
                &[0xdd; 50],
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
            ),
            (
                (1..=25).collect(),
                &[0xcd; 50],
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
            ),
            (
                vec![0x0c; 20],
                b"Test With Truncation",
                "a3b6167473100ee06e0c796c2955552b",
            ),
            (
                vec![0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            ),
            (
                vec![0xaa; 131],
                b"This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.",
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
            ),
        ];
        for (i, (key, message, want)) in cases.iter().enumerate() {
            let got = hmac(key, message);
            assert!(got.starts_with(want), "test case {}: {got}", i + 1);
        }
    }

    /// A block-sized key is used as it is, one byte longer is hashed first:
    /// the two paths meet exactly at the boundary.
    #[test]
    fn hmac_keys_at_the_block_boundary() {
        let block = [0x42u8; 64];
        let longer = [0x42u8; 65];
        assert_ne!(hmac(&block, b"m"), hmac(&longer, b"m"));
        let hashed = Sha256::digest(longer);
        assert_eq!(hmac(&longer, b"m"), hmac(&hashed, b"m"));
        // Trailing zero bytes pad a short key, as HMAC defines.
        assert_eq!(hmac(b"k", b"m"), hmac(b"k\0\0", b"m"));
    }

    #[test]
    fn canonical_sorts_keys_at_every_level() {
        let mut s = String::new();
        write_canonical(&json!({"b": {"z": 1, "a": [true, null]}, "a": "x"}), &mut s);
        assert_eq!(s, r#"{"a":"x","b":{"a":[true,null],"z":1}}"#);
    }

    #[test]
    fn a_fingerprint_is_the_hmac_of_the_canonical_form_under_the_key() {
        let key = FingerprintKey::from_bytes([7; 32]);
        let f = Fingerprint::of_canonical(&key, &json!({"b": 1, "a": "x"}));
        assert_eq!(f.to_string().len(), 64);
        assert_eq!(f.to_string(), f.to_hex());
        let d = format!("{f:?}");
        assert!(d.starts_with("Fingerprint(") && d.len() < 30, "{d}");
        let mut input = FINGERPRINT_DOMAIN.to_vec();
        input.extend_from_slice(br#"{"a":"x","b":1}"#);
        assert_eq!(f.to_hex(), hmac(&[7; 32], &input));
        // Not the unkeyed SHA-256 of the same form, which anyone could compute.
        assert_ne!(f.to_hex(), hex(&Sha256::digest(br#"{"a":"x","b":1}"#)));
    }

    #[test]
    fn same_key_same_fingerprint_other_key_other_fingerprint() {
        let value = json!({"transport": {"env": {"PIN": "x"}}});
        let a = FingerprintKey::from_bytes([1; 32]);
        let a_again = FingerprintKey::from_bytes([1; 32]);
        let b = FingerprintKey::from_bytes([2; 32]);
        assert_eq!(
            Fingerprint::of_canonical(&a, &value),
            Fingerprint::of_canonical(&a_again, &value)
        );
        assert_ne!(
            Fingerprint::of_canonical(&a, &value),
            Fingerprint::of_canonical(&b, &value)
        );
    }

    #[test]
    fn secret_digest_is_keyed_and_hides_the_value() {
        let key = FingerprintKey::from_bytes([9; 32]);
        let d = secret_digest(&key, "hunter2");
        assert!(d.starts_with("hmac-sha256:") && !d.contains("hunter2"));
        assert_ne!(d, secret_digest(&key, "hunter3"));
        assert_eq!(
            d,
            secret_digest(&FingerprintKey::from_bytes([9; 32]), "hunter2")
        );
        assert_ne!(
            d,
            secret_digest(&FingerprintKey::from_bytes([8; 32]), "hunter2")
        );
        let mut input = SECRET_DOMAIN.to_vec();
        input.extend_from_slice(b"hunter2");
        assert_eq!(d, format!("hmac-sha256:{}", hmac(&[9; 32], &input)));
    }

    #[test]
    fn keys_never_show_and_random_ones_differ() {
        let key = FingerprintKey::from_bytes([0xab; 32]);
        assert_eq!(format!("{key:?}"), "FingerprintKey(<redacted>)");
        assert_eq!(key.expose_bytes(), &[0xab; 32]);
        let a = FingerprintKey::generate().unwrap();
        let b = FingerprintKey::generate().unwrap();
        assert_ne!(a.expose_bytes(), b.expose_bytes());
        assert!(std::ptr::eq(
            FingerprintKey::per_process(),
            FingerprintKey::per_process()
        ));
        assert_ne!(fallback_bytes(), [0; 32]);
    }
}
