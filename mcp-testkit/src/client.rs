//! What the client declared (its capabilities, and the revision they hold
//! for): the part of the request context the tools that ask the client
//! read. A leaf: the server fills it in, the tools consult it.

use mcp_stack_protocol::types::ClientCapabilities;
use mcp_stack_protocol::{ProtocolVersion, meta};
use serde::Deserialize;
use serde_json::{Map, Value};

/// What the client declared: its capabilities and the revision they hold
/// for (`None`: a handshake that agreed on no revision we know).
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientSide {
    version: Option<ProtocolVersion>,
    pub(crate) capabilities: ClientCapabilities,
}

impl ClientSide {
    /// What a client declared in `initialize`, for the revision agreed.
    pub(crate) fn legacy(version: &str, capabilities: ClientCapabilities) -> Self {
        ClientSide {
            version: version.parse().ok(),
            capabilities,
        }
    }

    /// What a 2026-07-28 request declares in its `_meta` (capabilities
    /// that do not parse declare nothing).
    pub(crate) fn discover(meta: Option<&Map<String, Value>>) -> Self {
        let capabilities = meta
            .and_then(|m| m.get(meta::CLIENT_CAPABILITIES))
            .and_then(|c| ClientCapabilities::deserialize(c).ok())
            .unwrap_or_default();
        ClientSide {
            version: Some(ProtocolVersion::V2026_07_28),
            capabilities,
        }
    }

    pub(crate) fn at_least(&self, version: ProtocolVersion) -> bool {
        self.version.is_some_and(|v| v >= version)
    }

    pub(crate) fn spoken(&self) -> &'static str {
        self.version.map_or("an unknown revision", |v| v.as_str())
    }

    /// Why the client cannot be asked in this elicitation `mode`, if it cannot.
    pub(crate) fn cannot_elicit(&self, mode: Mode) -> Option<String> {
        if !self.at_least(ProtocolVersion::V2025_06_18) {
            return Some(format!(
                "elicitation needs protocol 2025-06-18 or later; this connection speaks {}",
                self.spoken()
            ));
        }
        let Some(declared) = &self.capabilities.elicitation else {
            return Some("the client did not declare the elicitation capability".into());
        };
        // `{}` declares form mode alone.
        let empty = declared.as_object().is_none_or(Map::is_empty);
        match mode {
            Mode::Form if empty || declared.get("form").is_some() => None,
            Mode::Form => Some("the client did not declare elicitation form mode".into()),
            Mode::Url if !self.at_least(ProtocolVersion::V2025_11_25) => Some(format!(
                "URL-mode elicitation needs protocol 2025-11-25 or later; this connection speaks {}",
                self.spoken()
            )),
            Mode::Url if declared.get("url").is_some() => None,
            Mode::Url => Some(
                "the client did not declare elicitation URL mode (capabilities.elicitation.url)"
                    .into(),
            ),
        }
    }
}

/// `ask_user`'s `mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Form,
    Url,
}

impl Mode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Mode::Form => "form",
            Mode::Url => "url",
        }
    }
}
