//! The lifecycle's decisions, without IO: what the answer to a
//! `server/discover` probe says about the server's era.
//!
//! The session's async code sends the probe and acts on the outcome; the
//! rules themselves (the spec's backward-compatibility section) live here and
//! are tested on their own.

use mcp_protocol::codes;
use serde_json::Value;

/// What a `server/discover` probe says about a server's era.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum ProbeOutcome {
    /// A modern server; use this version.
    Modern(String),
    /// A modern server that speaks none of our modern versions; these are
    /// the ones it named.
    ModernUnsupported(Vec<String>),
    /// A legacy server: fall back to `initialize`.
    Legacy,
    /// A modern server that refused the request with a modern error
    /// (`HeaderMismatch`, `MissingRequiredClientCapability`): no fallback.
    ModernError(i64),
}

/// Classifies the answer to a `server/discover` probe, per the stdio
/// backward-compatibility rules: a discover result or a recognised modern
/// error means modern; any other error means legacy (never keyed to one code).
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
                Some(v) => ProbeOutcome::Modern(v),
                None => ProbeOutcome::ModernUnsupported(supported),
            }
        }
        Err((code, data)) if code == codes::UNSUPPORTED_PROTOCOL_VERSION => {
            let supported: Vec<String> = data
                .and_then(|d| d.get("supported"))
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default();
            match pick(&supported) {
                Some(v) => ProbeOutcome::Modern(v),
                None => ProbeOutcome::ModernUnsupported(supported),
            }
        }
        Err((code, _))
            if code == codes::HEADER_MISMATCH
                || code == codes::MISSING_REQUIRED_CLIENT_CAPABILITY =>
        {
            ProbeOutcome::ModernError(code)
        }
        Err(_) => ProbeOutcome::Legacy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn probe_classification_follows_the_stdio_rules() {
        let ours = ["2026-07-28"];
        let result = json!({"supportedVersions": ["2026-07-28", "2025-11-25"]});
        assert_eq!(
            classify_probe(Ok(&result), &ours),
            ProbeOutcome::Modern("2026-07-28".into())
        );
        let data = json!({"supported": ["2027-01-01"], "requested": "2026-07-28"});
        assert_eq!(
            classify_probe(Err((-32022, Some(&data))), &ours),
            ProbeOutcome::ModernUnsupported(vec!["2027-01-01".into()])
        );
        for legacy_code in [-32601, -32602, -32600, -32000, 1] {
            assert_eq!(
                classify_probe(Err((legacy_code, None)), &ours),
                ProbeOutcome::Legacy
            );
        }
        for modern_code in [-32020, -32021] {
            assert_eq!(
                classify_probe(Err((modern_code, None)), &ours),
                ProbeOutcome::ModernError(modern_code)
            );
        }
        // A server that answers anything with a result is not thereby modern.
        assert_eq!(
            classify_probe(Ok(&json!({"content": []})), &ours),
            ProbeOutcome::Legacy
        );
    }
}
