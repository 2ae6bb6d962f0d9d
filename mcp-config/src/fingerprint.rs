//! SHA-256 fingerprints over a canonical JSON form.

use std::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// A SHA-256 fingerprint of a resolved server or of a whole session config.
///
/// `Display` prints the 64 hex digits; `Debug` a short prefix.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The raw digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The digest as 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        base16ct::lower::encode_string(&self.0)
    }

    /// Fingerprint of a JSON value in canonical form (keys sorted, compact).
    pub(crate) fn of_canonical(value: &Value) -> Self {
        let mut text = String::new();
        write_canonical(value, &mut text);
        Self(sha256(text.as_bytes()))
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

fn sha256(bytes: &[u8]) -> [u8; 32] {
    let digest = Sha256::digest(bytes);
    let mut out = [0u8; 32];
    out.copy_from_slice(&digest);
    out
}

/// How a secret enters a canonical form: only through its (domain-separated) hash.
pub(crate) fn secret_digest(value: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"mcp-config secret v1\0");
    h.update(value.as_bytes());
    let digest = h.finalize();
    format!("sha256:{}", base16ct::lower::encode_string(&digest))
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

    #[test]
    fn canonical_sorts_keys_at_every_level() {
        let mut s = String::new();
        write_canonical(&json!({"b": {"z": 1, "a": [true, null]}, "a": "x"}), &mut s);
        assert_eq!(s, r#"{"a":"x","b":{"a":[true,null],"z":1}}"#);
    }

    #[test]
    fn display_is_hex_and_debug_is_short() {
        let f = Fingerprint::of_canonical(&json!({}));
        assert_eq!(f.to_string().len(), 64);
        assert_eq!(f.to_string(), f.to_hex());
        let d = format!("{f:?}");
        assert!(d.starts_with("Fingerprint(") && d.len() < 30, "{d}");
        // SHA-256 of `{}`, lowercase: fingerprints stay comparable across versions.
        assert_eq!(
            f.to_hex(),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }

    #[test]
    fn secret_digest_hides_the_value() {
        let d = secret_digest("hunter2");
        assert!(d.starts_with("sha256:") && !d.contains("hunter2"));
        assert_ne!(d, secret_digest("hunter3"));
        assert_eq!(
            d,
            "sha256:83ccd8bbd4f005f022c031b8c617d52af6986564ce32967538b3bfbc3208b72e"
        );
    }
}
