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

    /// Every revision without a handshake (a client finds the server with
    /// `server/discover`, or just sends requests), newest first.
    pub const DISCOVER: [ProtocolVersion; 1] = [ProtocolVersion::V2026_07_28];

    /// Every revision this client speaks, newest first.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2026_07_28,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2024_11_05,
    ];

    /// Whether a connection starts with the `initialize` handshake (and
    /// `notifications/initialized`), whose answer fixes the revision and the
    /// capabilities for the connection's life: every revision before
    /// 2026-07-28. Without one, each request carries the revision and the
    /// client's description in its `_meta` ([`has_request_meta`]) and
    /// `server/discover` says what the server offers.
    ///
    /// [`has_request_meta`]: ProtocolVersion::has_request_meta
    ///
    /// ```
    /// use mcp_stack_protocol::ProtocolVersion;
    /// assert!(ProtocolVersion::V2025_11_25.has_handshake());
    /// assert!(!ProtocolVersion::V2026_07_28.has_handshake());
    /// ```
    pub const fn has_handshake(self) -> bool {
        !matches!(self, ProtocolVersion::V2026_07_28)
    }

    /// Whether every request names the revision, the client and its
    /// capabilities in `_meta` (2026-07-28's stateless requests).
    pub const fn has_request_meta(self) -> bool {
        !self.has_handshake()
    }

    /// Whether the `ping` request exists. 2026-07-28 dropped it; a liveness
    /// check there is a `server/discover`.
    pub const fn has_ping(self) -> bool {
        self.has_handshake()
    }

    /// Whether a result may say what kind it is (`resultType`: complete, or
    /// `input_required` with requests the client answers before retrying)
    /// and carry cache hints (`ttlMs`, `cacheScope`): 2026-07-28.
    pub const fn has_result_types(self) -> bool {
        !self.has_handshake()
    }

    /// Whether streamable HTTP keeps a server-side session
    /// (`Mcp-Session-Id`, the GET stream, `DELETE` on close, resuming a
    /// stream with `Last-Event-ID`): the revisions with a handshake.
    pub const fn has_http_session(self) -> bool {
        self.has_handshake()
    }

    /// Whether an HTTP request mirrors its method, name and marked
    /// parameters into headers (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`;
    /// see [`crate::x_mcp_header`]): 2026-07-28.
    pub const fn mirrors_into_headers(self) -> bool {
        !self.has_handshake()
    }

    /// How a client gets notifications it asks for.
    ///
    /// ```
    /// use mcp_stack_protocol::{Listening, ProtocolVersion};
    /// assert_eq!(ProtocolVersion::V2025_06_18.listening(), Listening::Subscribe);
    /// assert_eq!(ProtocolVersion::V2026_07_28.listening(), Listening::Stream);
    /// ```
    pub const fn listening(self) -> Listening {
        if self.has_handshake() {
            Listening::Subscribe
        } else {
            Listening::Stream
        }
    }

    /// How a revision runs tool calls as tasks.
    ///
    /// ```
    /// use mcp_stack_protocol::{ProtocolVersion, TaskModel};
    /// assert_eq!(ProtocolVersion::V2025_06_18.tasks(), TaskModel::None);
    /// assert_eq!(ProtocolVersion::V2025_11_25.tasks(), TaskModel::Requested);
    /// assert_eq!(ProtocolVersion::V2026_07_28.tasks(), TaskModel::Extension);
    /// ```
    pub const fn tasks(self) -> TaskModel {
        match self {
            ProtocolVersion::V2024_11_05
            | ProtocolVersion::V2025_03_26
            | ProtocolVersion::V2025_06_18 => TaskModel::None,
            ProtocolVersion::V2025_11_25 => TaskModel::Requested,
            ProtocolVersion::V2026_07_28 => TaskModel::Extension,
        }
    }

    /// Whether the revision has JSON-RPC batches: only 2025-03-26 (which
    /// added them; 2025-06-18 removed them again). A peer of any other
    /// revision has no business sending one.
    ///
    /// ```
    /// use mcp_stack_protocol::ProtocolVersion;
    /// assert!(ProtocolVersion::V2025_03_26.has_batches());
    /// assert!(!ProtocolVersion::V2024_11_05.has_batches());
    /// assert!(!ProtocolVersion::V2025_06_18.has_batches());
    /// ```
    pub const fn has_batches(self) -> bool {
        matches!(self, ProtocolVersion::V2025_03_26)
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

/// The revisions a method exists in: a contiguous range of
/// [`ProtocolVersion`]s, as the method table records it for each method
/// ([`crate::request::Request::REVISIONS`],
/// [`crate::notification::Notification::REVISIONS`]).
///
/// Every method MCP added or dropped did so at one revision and never came
/// back, so a range (first and last revision) says it all.
///
/// ```
/// use mcp_stack_protocol::{ProtocolVersion, Revisions};
/// let ping = Revisions::until(ProtocolVersion::V2025_11_25);
/// assert!(ping.contains(ProtocolVersion::V2024_11_05));
/// assert!(!ping.contains(ProtocolVersion::V2026_07_28));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Revisions {
    first: ProtocolVersion,
    last: ProtocolVersion,
}

impl Revisions {
    /// Every revision.
    pub const ALL: Revisions = Revisions {
        first: ProtocolVersion::V2024_11_05,
        last: ProtocolVersion::V2026_07_28,
    };

    /// From `first` on (every later revision too).
    pub const fn since(first: ProtocolVersion) -> Revisions {
        Revisions {
            first,
            last: ProtocolVersion::V2026_07_28,
        }
    }

    /// Up to `last`, included.
    pub const fn until(last: ProtocolVersion) -> Revisions {
        Revisions {
            first: ProtocolVersion::V2024_11_05,
            last,
        }
    }

    /// `revision` alone.
    pub const fn only(revision: ProtocolVersion) -> Revisions {
        Revisions {
            first: revision,
            last: revision,
        }
    }

    /// The first revision with the method.
    pub const fn first(self) -> ProtocolVersion {
        self.first
    }

    /// The last revision with the method.
    pub const fn last(self) -> ProtocolVersion {
        self.last
    }

    /// Whether `revision` has the method.
    pub const fn contains(self, revision: ProtocolVersion) -> bool {
        let v = revision as u8;
        self.first as u8 <= v && v <= self.last as u8
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a client gets the notifications it asks for
/// ([`ProtocolVersion::listening`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Listening {
    /// `resources/subscribe` per resource, and the list changes the server
    /// declared arrive on their own (before 2026-07-28).
    Subscribe,
    /// A `subscriptions/listen` request whose stream carries what its filter
    /// names (2026-07-28).
    Stream,
}

/// How a revision runs a tool call as a task ([`ProtocolVersion::tasks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskModel {
    /// No tasks.
    None,
    /// The client asks for a task (`task` in the call's params, when the
    /// server and the tool allow it), polls `tasks/get` and fetches
    /// `tasks/result` (2025-11-25).
    Requested,
    /// The `io.modelcontextprotocol/tasks` extension: the server may answer
    /// any call with a task, polled with `tasks/get` (its result or input
    /// requests inline) and answered with `tasks/update` (2026-07-28).
    Extension,
}

/// Which lifecycle a session uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ProtocolMode {
    /// The `initialize` handshake only, offering the configured version
    /// (spelled `handshake`; `legacy` is accepted too).
    Handshake,
    /// Revisions without a handshake only (2026-07-28): `server/discover`,
    /// then per-request metadata (spelled `discover`; `modern` is accepted
    /// too).
    Discover,
    /// Probe with `server/discover` and fall back to the handshake for a
    /// server that has one (an error that is not a recognised 2026-07-28
    /// one, or no answer within the probe timeout). The default: users need
    /// not know which revisions a server speaks.
    #[default]
    Auto,
}

impl ProtocolMode {
    /// Every mode.
    pub const ALL: [ProtocolMode; 3] = [
        ProtocolMode::Handshake,
        ProtocolMode::Discover,
        ProtocolMode::Auto,
    ];

    /// How configs and command lines spell it: `handshake`, `discover`,
    /// `auto`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolMode::Handshake => "handshake",
            ProtocolMode::Discover => "discover",
            ProtocolMode::Auto => "auto",
        }
    }

    /// The older spellings still read: `legacy`, `modern`.
    const fn alias(self) -> Option<&'static str> {
        match self {
            ProtocolMode::Handshake => Some("legacy"),
            ProtocolMode::Discover => Some("modern"),
            ProtocolMode::Auto => None,
        }
    }
}

impl fmt::Display for ProtocolMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A protocol pin as configs and command lines write it: a mode
/// (`handshake`, `discover`, `auto`; `legacy` and `modern` as older
/// spellings) or one revision.
///
/// ```
/// use mcp_stack_protocol::{ProtocolMode, ProtocolPin, ProtocolVersion};
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
    /// One revision (one without a handshake implies the `discover` mode).
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

    /// `handshake`, `discover`, `auto` (and `legacy`, `modern`).
    fn from_str(s: &str) -> Result<Self, UnknownVersion> {
        ProtocolMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s || m.alias() == Some(s))
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
