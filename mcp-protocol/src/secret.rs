//! [`Secret`]: a string that never shows itself through `Debug` or `Display`.
//!
//! One type for every layer: the config's environment and header values,
//! and `mcp-stack-auth`'s tokens, codes, verifiers and client secrets, so a
//! `{:?}` of any type (or error) of the stack cannot leak one into a log,
//! and a secret passes from one layer to the next without being unwrapped.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A secret string. `Debug` and `Display` print `<redacted>`; [`Secret::expose`]
/// is the one way to the value, so every place that needs it is explicit and
/// easy to audit. Serializes as the plain string (transparent), so token
/// responses and stores read and write it directly.
///
/// ```
/// use mcp_stack_protocol::secret::Secret;
/// let s = Secret::new("Bearer abc123");
/// assert_eq!(format!("{s} {s:?}"), "<redacted> <redacted>");
/// assert_eq!(s.expose(), "Bearer abc123");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the value is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Self(value)
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_redact() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?}"), "<redacted>");
        assert_eq!(format!("{s}"), "<redacted>");
        assert_eq!(format!("{:?}", Some(s.clone())), "Some(<redacted>)");
        assert_eq!(s.expose(), "hunter2");
        assert!(!s.is_empty());
        assert!(Secret::default().is_empty());
    }

    #[test]
    fn conversions_and_serde_are_transparent() {
        assert_eq!(Secret::from("a"), Secret::from(String::from("a")));
        let s: Secret = serde_json::from_str("\"tok\"").unwrap();
        assert_eq!(s.expose(), "tok");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"tok\"");
    }
}
