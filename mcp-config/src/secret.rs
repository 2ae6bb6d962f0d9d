//! A string that never prints itself.

use std::fmt;

/// A secret string: an environment value or an HTTP header value.
///
/// `Debug` and `Display` print `<redacted>`; the value is only readable
/// through [`Secret::expose`], so every place that needs it is explicit and
/// easy to audit.
///
/// ```
/// use mcp_config::Secret;
/// let s = Secret::new("Bearer abc123");
/// assert_eq!(format!("{s} {s:?}"), "<redacted> <redacted>");
/// assert_eq!(s.expose(), "Bearer abc123");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default)]
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
