//! Protocol revisions.

use std::fmt;
use std::str::FromStr;

/// An MCP protocol revision this client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// 2024-11-05: the first revision (HTTP+SSE transport).
    V2024_11_05,
    /// 2025-03-26: streamable HTTP, batches, tool annotations.
    V2025_03_26,
    /// 2025-06-18: structured tool output, elicitation, no batches.
    V2025_06_18,
    /// 2025-11-25: icons, URL elicitation, tasks.
    V2025_11_25,
    /// 2026-07-28: no handshake; `server/discover`, per-request `_meta`,
    /// multi-round-trip results, cache hints.
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every revision that uses the `initialize` handshake, newest first.
    pub const HANDSHAKE: [ProtocolVersion; 4] = [
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2024_11_05,
    ];

    /// The newest revision with the `initialize` handshake.
    pub const LATEST_HANDSHAKE: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// Every modern revision (no handshake), newest first.
    pub const MODERN: [ProtocolVersion; 1] = [ProtocolVersion::V2026_07_28];

    /// Every revision this client speaks, newest first.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2026_07_28,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2024_11_05,
    ];

    /// A modern revision: per-request metadata instead of a handshake.
    pub fn is_modern(self) -> bool {
        self >= ProtocolVersion::V2026_07_28
    }

    /// Whether the revision has JSON-RPC batches: only 2025-03-26 (which
    /// added them; 2025-06-18 removed them again). A peer of any other
    /// revision has no business sending one.
    ///
    /// ```
    /// use mcp_protocol::ProtocolVersion;
    /// assert!(ProtocolVersion::V2025_03_26.has_batches());
    /// assert!(!ProtocolVersion::V2024_11_05.has_batches());
    /// assert!(!ProtocolVersion::V2025_06_18.has_batches());
    /// ```
    pub fn has_batches(self) -> bool {
        self == ProtocolVersion::V2025_03_26
    }

    /// The revision's date string.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which lifecycle a session uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ProtocolMode {
    /// The `initialize` handshake only, offering the configured version.
    Legacy,
    /// 2026-07-28 only: `server/discover`, then per-request metadata.
    Modern,
    /// Probe with `server/discover` and fall back to the handshake for a
    /// legacy server (an error that is not a recognised modern one, or no
    /// answer within the probe timeout). The default: users need not know
    /// which era a server belongs to.
    #[default]
    Auto,
}

impl ProtocolMode {
    /// Every mode.
    pub const ALL: [ProtocolMode; 3] = [
        ProtocolMode::Legacy,
        ProtocolMode::Modern,
        ProtocolMode::Auto,
    ];

    /// How configs and command lines spell it: `legacy`, `modern`, `auto`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolMode::Legacy => "legacy",
            ProtocolMode::Modern => "modern",
            ProtocolMode::Auto => "auto",
        }
    }
}

impl fmt::Display for ProtocolMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A protocol pin as configs and command lines write it: a mode
/// (`legacy`, `modern`, `auto`) or one revision.
///
/// ```
/// use mcp_protocol::{ProtocolMode, ProtocolPin, ProtocolVersion};
/// assert_eq!("auto".parse(), Ok(ProtocolPin::Mode(ProtocolMode::Auto)));
/// assert_eq!("2025-06-18".parse(), Ok(ProtocolPin::Version(ProtocolVersion::V2025_06_18)));
/// assert!("1999-01-01".parse::<ProtocolPin>().is_err());
/// assert!(ProtocolPin::spellings().contains(&"2026-07-28"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtocolPin {
    /// A lifecycle, with the default revision.
    Mode(ProtocolMode),
    /// One revision (a modern one implies the modern mode).
    Version(ProtocolVersion),
}

impl ProtocolPin {
    /// Every accepted spelling: the revisions, oldest first, then the modes.
    pub fn spellings() -> Vec<&'static str> {
        ProtocolVersion::ALL
            .iter()
            .rev()
            .map(|v| v.as_str())
            .chain(ProtocolMode::ALL.iter().map(|m| m.as_str()))
            .collect()
    }
}

impl FromStr for ProtocolPin {
    type Err = UnknownVersion;

    fn from_str(s: &str) -> Result<Self, UnknownVersion> {
        s.parse::<ProtocolMode>()
            .map(ProtocolPin::Mode)
            .or_else(|_| s.parse::<ProtocolVersion>().map(ProtocolPin::Version))
    }
}

impl FromStr for ProtocolMode {
    type Err = UnknownVersion;

    /// `legacy`, `modern`, `auto`.
    fn from_str(s: &str) -> Result<Self, UnknownVersion> {
        ProtocolMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownVersion(s.to_string()))
    }
}

/// A version string this client does not speak.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol version {0:?}")]
pub struct UnknownVersion(pub String);

impl FromStr for ProtocolVersion {
    type Err = UnknownVersion;

    fn from_str(s: &str) -> Result<Self, UnknownVersion> {
        ProtocolVersion::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| UnknownVersion(s.to_string()))
    }
}
