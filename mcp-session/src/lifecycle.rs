//! The lifecycle's decisions, without IO: which request comes first, what
//! the answer to a `server/discover` probe says about the server's era, when
//! to retry it, which handshake version to offer, and which version the
//! session ends up with.
//!
//! [`Lifecycle`] is a state machine fed with answers; the session's async
//! code (`connect.rs`) sends what it asks for and hands back what came. The
//! rules (the spec's backward-compatibility section) are tested here on
//! their own, with no transport.

use mcp_stack_protocol::discover::UnsupportedVersionData;
use mcp_stack_protocol::{ProtocolMode, ProtocolVersion, codes};
use serde::Deserialize;
use serde_json::Value;

/// The revision `server/discover` asks for and a discovered session
/// settles on: the newest of [`ProtocolVersion::DISCOVER`], named once here.
pub(crate) const DISCOVERING: ProtocolVersion = ProtocolVersion::V2026_07_28;

/// What the lifecycle asks for next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Send `server/discover` (the discover mode's lifecycle, or the auto
    /// mode's probe).
    Discover,
    /// Send `initialize`, offering this version.
    Initialize(ProtocolVersion),
    /// Settled on 2026-07-28: the discover result is the server's description.
    Discovered,
    /// Settled on this handshake version.
    Initialized(ProtocolVersion),
    /// Give up.
    Fail(Failure),
}

/// Why the lifecycle gave up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// A discover-only session met a server that only has the handshake.
    LegacyServer,
    /// The server's own error answer is the reason (a 2026-07-28 refusal such as
    /// `HeaderMismatch`): the driver reports it as it came.
    Refused,
    /// No version both sides speak.
    VersionMismatch {
        offered: String,
        received: String,
        supported: Vec<String>,
    },
    /// The server refused `server/discover` while naming our version as
    /// supported, twice.
    Inconsistent,
}

/// An answer to `server/discover`, as far as the lifecycle cares.
#[derive(Debug, Clone, Copy)]
pub(crate) enum DiscoverAnswer<'a> {
    /// A result.
    Result(&'a Value),
    /// A JSON-RPC error: its code and `data`.
    Error(i64, Option<&'a Value>),
    /// No answer within the probe's bound.
    Timeout,
    /// An HTTP status without a JSON-RPC body.
    HttpStatus(u16),
}

/// The lifecycle of one connection.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    /// Auto mode: a legacy answer falls back to the handshake.
    fallback: bool,
    /// The probe was retried once already.
    retried: bool,
}

impl Lifecycle {
    /// The lifecycle for `mode`, and its first step; `offered` is the
    /// handshake version of the legacy mode.
    pub(crate) fn start(mode: ProtocolMode, offered: ProtocolVersion) -> (Lifecycle, Step) {
        let first = match mode {
            ProtocolMode::Discover | ProtocolMode::Auto => Step::Discover,
            _ => Step::Initialize(offered),
        };
        let lifecycle = Lifecycle {
            fallback: mode == ProtocolMode::Auto,
            retried: false,
        };
        (lifecycle, first)
    }

    /// Whether this is the auto mode's probe (bounded by the probe timeout,
    /// and a silent server is taken for a legacy one).
    pub(crate) fn probing(&self) -> bool {
        self.fallback
    }

    /// The next step after an answer to `server/discover`. A transport
    /// failure other than an HTTP status is not for the lifecycle to judge:
    /// the driver reports it as it is.
    pub(crate) fn on_discover(&mut self, answer: DiscoverAnswer<'_>) -> Step {
        let ours = [DISCOVERING.as_str()];
        let outcome = match answer {
            DiscoverAnswer::Result(value) => classify_probe(Ok(value), &ours),
            DiscoverAnswer::Error(code, data) => {
                match classify_probe(Err((code, data)), &ours) {
                    // Refused while listing our version: the spec says to
                    // retry with a listed version — ours, once.
                    ProbeOutcome::Discovered(_) if !self.retried => {
                        self.retried = true;
                        return Step::Discover;
                    }
                    ProbeOutcome::Discovered(_) => return Step::Fail(Failure::Inconsistent),
                    ProbeOutcome::DiscoverError(_) => return Step::Fail(Failure::Refused),
                    other => other,
                }
            }
            DiscoverAnswer::Timeout | DiscoverAnswer::HttpStatus(400 | 404 | 405)
                if self.fallback =>
            {
                ProbeOutcome::Legacy
            }
            DiscoverAnswer::Timeout | DiscoverAnswer::HttpStatus(_) => {
                return Step::Fail(Failure::Refused);
            }
        };
        match outcome {
            ProbeOutcome::Discovered(_) => Step::Discovered,
            ProbeOutcome::Legacy if self.fallback => {
                Step::Initialize(ProtocolVersion::LATEST_HANDSHAKE)
            }
            ProbeOutcome::Legacy => Step::Fail(Failure::LegacyServer),
            // A server that names a handshake version it supports gets the
            // handshake with that version.
            ProbeOutcome::NoCommonVersion(supported) => ProtocolVersion::HANDSHAKE
                .into_iter()
                .find(|v| supported.iter().any(|s| s == v.as_str()))
                .map_or_else(
                    || {
                        Step::Fail(Failure::VersionMismatch {
                            offered: DISCOVERING.as_str().into(),
                            received: supported.join(", "),
                            supported: all(&ProtocolVersion::ALL),
                        })
                    },
                    Step::Initialize,
                ),
            ProbeOutcome::DiscoverError(_) => Step::Fail(Failure::Refused),
        }
    }

    /// The step after the `initialize` result named `received` when
    /// `offered` was offered: a handshake version this client speaks, or a
    /// mismatch.
    pub(crate) fn on_initialize(&self, offered: ProtocolVersion, received: &str) -> Step {
        match received.parse::<ProtocolVersion>() {
            Ok(v) if v.has_handshake() => Step::Initialized(v),
            _ => Step::Fail(Failure::VersionMismatch {
                offered: offered.as_str().into(),
                received: received.into(),
                supported: all(&ProtocolVersion::HANDSHAKE),
            }),
        }
    }
}

fn all(versions: &[ProtocolVersion]) -> Vec<String> {
    versions.iter().map(|v| v.as_str().to_string()).collect()
}

/// What a `server/discover` probe says about a server's era.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum ProbeOutcome {
    /// A server that answers discovery; use this version.
    Discovered(String),
    /// A server that answers discovery but speaks none of our revisions
    /// without a handshake; these are the ones it named.
    NoCommonVersion(Vec<String>),
    /// A legacy server: fall back to `initialize`.
    Legacy,
    /// A 2026-07-28 server that refused the request with one of its errors
    /// (`HeaderMismatch`, `MissingRequiredClientCapability`): no fallback.
    DiscoverError(i64),
}

/// Classifies the answer to a `server/discover` probe, per the stdio
/// backward-compatibility rules: a discover result or a recognised 2026-07-28
/// error means discovery; any other error means the handshake (never keyed to one code).
pub(crate) fn classify_probe(
    answer: Result<&Value, (i64, Option<&Value>)>,
    ours: &[&str],
) -> ProbeOutcome {
    let pick = |supported: &[String]| {
        ours.iter()
            .find(|v| supported.iter().any(|s| s == *v))
            .map(|v| v.to_string())
    };
    match answer {
        Ok(result) => {
            // A result without `supportedVersions` is no discover result: a
            // legacy server that answers any method (some do) is still legacy.
            let Some(supported) = result
                .get("supportedVersions")
                .and_then(|v| serde_json::from_value::<Vec<String>>(v.clone()).ok())
            else {
                return ProbeOutcome::Legacy;
            };
            match pick(&supported) {
                Some(v) => ProbeOutcome::Discovered(v),
                None => ProbeOutcome::NoCommonVersion(supported),
            }
        }
        Err((code, data)) if code == codes::UNSUPPORTED_PROTOCOL_VERSION => {
            let supported = data
                .and_then(|d| UnsupportedVersionData::deserialize(d).ok())
                .map(|d| d.supported)
                .unwrap_or_default();
            match pick(&supported) {
                Some(v) => ProbeOutcome::Discovered(v),
                None => ProbeOutcome::NoCommonVersion(supported),
            }
        }
        Err((code, _))
            if code == codes::HEADER_MISMATCH
                || code == codes::MISSING_REQUIRED_CLIENT_CAPABILITY =>
        {
            ProbeOutcome::DiscoverError(code)
        }
        Err(_) => ProbeOutcome::Legacy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn started(mode: ProtocolMode) -> (Lifecycle, Step) {
        Lifecycle::start(mode, ProtocolVersion::V2025_06_18)
    }

    #[test]
    fn each_mode_starts_where_it_should() {
        assert_eq!(started(ProtocolMode::Auto).1, Step::Discover);
        assert_eq!(started(ProtocolMode::Discover).1, Step::Discover);
        assert_eq!(
            started(ProtocolMode::Handshake).1,
            Step::Initialize(ProtocolVersion::V2025_06_18)
        );
        assert!(started(ProtocolMode::Auto).0.probing());
        assert!(!started(ProtocolMode::Discover).0.probing());
    }

    #[test]
    fn a_discover_result_naming_us_settles_on_discovery() {
        let (mut l, _) = started(ProtocolMode::Auto);
        let result = json!({"supportedVersions": ["2026-07-28"]});
        assert_eq!(
            l.on_discover(DiscoverAnswer::Result(&result)),
            Step::Discovered
        );
    }

    #[test]
    fn auto_falls_back_and_discover_does_not() {
        for legacy in [
            DiscoverAnswer::Error(-32601, None),
            DiscoverAnswer::Timeout,
            DiscoverAnswer::HttpStatus(404),
            DiscoverAnswer::HttpStatus(405),
            DiscoverAnswer::HttpStatus(400),
        ] {
            let (mut auto, _) = started(ProtocolMode::Auto);
            assert_eq!(
                auto.on_discover(legacy),
                Step::Initialize(ProtocolVersion::LATEST_HANDSHAKE),
                "{legacy:?}"
            );
        }
        let (mut discover, _) = started(ProtocolMode::Discover);
        assert_eq!(
            discover.on_discover(DiscoverAnswer::Error(-32601, None)),
            Step::Fail(Failure::LegacyServer)
        );
        // A result that is no discover result: the handshake, so no discover-only session.
        let (mut discover, _) = started(ProtocolMode::Discover);
        let not_discover = json!({"content": []});
        assert_eq!(
            discover.on_discover(DiscoverAnswer::Result(&not_discover)),
            Step::Fail(Failure::LegacyServer)
        );
        let (mut discover, _) = started(ProtocolMode::Discover);
        assert_eq!(
            discover.on_discover(DiscoverAnswer::HttpStatus(404)),
            Step::Fail(Failure::Refused)
        );
        // A 500 is no era signal even when probing.
        let (mut auto, _) = started(ProtocolMode::Auto);
        assert_eq!(
            auto.on_discover(DiscoverAnswer::HttpStatus(500)),
            Step::Fail(Failure::Refused)
        );
    }

    #[test]
    fn a_refusal_that_lists_our_version_is_retried_once() {
        let (mut l, _) = started(ProtocolMode::Auto);
        let data = json!({"supported": ["2026-07-28"]});
        let refusal = DiscoverAnswer::Error(-32022, Some(&data));
        assert_eq!(l.on_discover(refusal), Step::Discover);
        assert_eq!(l.on_discover(refusal), Step::Fail(Failure::Inconsistent));
    }

    #[test]
    fn discover_refusals_are_not_fallbacks() {
        for code in [-32020, -32021] {
            let (mut l, _) = started(ProtocolMode::Auto);
            assert_eq!(
                l.on_discover(DiscoverAnswer::Error(code, None)),
                Step::Fail(Failure::Refused)
            );
        }
    }

    #[test]
    fn a_discovering_server_without_our_version_gets_a_handshake_it_names() {
        let (mut l, _) = started(ProtocolMode::Auto);
        let data = json!({"supported": ["2027-01-01", "2025-06-18"]});
        assert_eq!(
            l.on_discover(DiscoverAnswer::Error(-32022, Some(&data))),
            Step::Initialize(ProtocolVersion::V2025_06_18)
        );
        let (mut l, _) = started(ProtocolMode::Auto);
        let result = json!({"supportedVersions": ["2027-01-01"]});
        assert!(matches!(
            l.on_discover(DiscoverAnswer::Result(&result)),
            Step::Fail(Failure::VersionMismatch { received, .. }) if received == "2027-01-01"
        ));
    }

    #[test]
    fn the_handshake_accepts_any_handshake_version_and_nothing_else() {
        let (l, _) = started(ProtocolMode::Handshake);
        let offered = ProtocolVersion::V2025_11_25;
        assert_eq!(
            l.on_initialize(offered, "2024-11-05"),
            Step::Initialized(ProtocolVersion::V2024_11_05)
        );
        for bad in ["2026-07-28", "1999-01-01", ""] {
            assert!(
                matches!(
                    l.on_initialize(offered, bad),
                    Step::Fail(Failure::VersionMismatch { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn probe_classification_follows_the_stdio_rules() {
        let ours = ["2026-07-28"];
        let result = json!({"supportedVersions": ["2026-07-28", "2025-11-25"]});
        assert_eq!(
            classify_probe(Ok(&result), &ours),
            ProbeOutcome::Discovered("2026-07-28".into())
        );
        let data = json!({"supported": ["2027-01-01"], "requested": "2026-07-28"});
        assert_eq!(
            classify_probe(Err((-32022, Some(&data))), &ours),
            ProbeOutcome::NoCommonVersion(vec!["2027-01-01".into()])
        );
        for legacy_code in [-32601, -32602, -32600, -32000, 1] {
            assert_eq!(
                classify_probe(Err((legacy_code, None)), &ours),
                ProbeOutcome::Legacy
            );
        }
        for refusal_code in [-32020, -32021] {
            assert_eq!(
                classify_probe(Err((refusal_code, None)), &ours),
                ProbeOutcome::DiscoverError(refusal_code)
            );
        }
        // A server that answers anything with a result does not thereby speak 2026-07-28.
        assert_eq!(
            classify_probe(Ok(&json!({"content": []})), &ours),
            ProbeOutcome::Legacy
        );
    }
}
