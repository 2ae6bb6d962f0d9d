//! Which servers a (re)build keeps, connects and tears down: fingerprint
//! diffing, with no IO.

use std::collections::BTreeMap;

use mcp_stack_config::Fingerprint;
use tokio::time::Instant;

/// What a session had for one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Had {
    /// Connected with this server fingerprint.
    Connected(Fingerprint),
    /// Failed to start with this fingerprint; may retry at this time.
    Failed(Fingerprint, Instant),
}

/// What to do with one server of the new config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Same fingerprint, connected: reuse the connection.
    Keep,
    /// Same fingerprint, failed, retry not due: keep the failure.
    KeepFailure,
    /// Start it (new, changed, or a failure whose retry is due).
    Connect,
}

/// The plan: a step per server of the new config, and the old connected
/// servers that nothing keeps (removed or changed), to tear down.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) steps: BTreeMap<String, Step>,
    pub(crate) teardown: Vec<String>,
}

pub(crate) fn plan(
    had: &BTreeMap<String, Had>,
    want: &BTreeMap<String, Fingerprint>,
    now: Instant,
) -> Plan {
    let mut out = Plan::default();
    for (name, fp) in want {
        let step = match had.get(name) {
            Some(Had::Connected(old)) if old == fp => Step::Keep,
            Some(Had::Failed(old, retry_at)) if old == fp && *retry_at > now => Step::KeepFailure,
            _ => Step::Connect,
        };
        out.steps.insert(name.clone(), step);
    }
    for (name, had) in had {
        if let Had::Connected(_) = had
            && out.steps.get(name) != Some(&Step::Keep)
        {
            out.teardown.push(name.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn fp(n: u8) -> Fingerprint {
        // Real fingerprints come from resolved configs; any distinct ones do here.
        let text = format!(r#"{{"mcpServers":{{"s":{{"command":"c{n}"}}}}}}"#);
        let loaded = mcp_stack_config::parse_str(&text, &mcp_stack_config::Options::new()).unwrap();
        let resolved = mcp_stack_config::resolve(&loaded.config, &|_: &str| None).unwrap();
        resolved.servers["s"].fingerprint
    }

    #[test]
    fn diffing() {
        let now = Instant::now();
        let later = now + Duration::from_secs(5);
        let had = BTreeMap::from([
            ("same".to_owned(), Had::Connected(fp(1))),
            ("changed".to_owned(), Had::Connected(fp(1))),
            ("gone".to_owned(), Had::Connected(fp(1))),
            ("failing".to_owned(), Had::Failed(fp(1), later)),
            ("due".to_owned(), Had::Failed(fp(1), now)),
            ("fixed".to_owned(), Had::Failed(fp(1), later)),
        ]);
        let want = BTreeMap::from([
            ("same".to_owned(), fp(1)),
            ("changed".to_owned(), fp(2)),
            ("failing".to_owned(), fp(1)),
            ("due".to_owned(), fp(1)),
            ("fixed".to_owned(), fp(2)),
            ("new".to_owned(), fp(1)),
        ]);
        let p = plan(&had, &want, now);
        assert_eq!(p.steps["same"], Step::Keep);
        assert_eq!(p.steps["changed"], Step::Connect);
        assert_eq!(p.steps["failing"], Step::KeepFailure);
        assert_eq!(p.steps["due"], Step::Connect);
        assert_eq!(p.steps["fixed"], Step::Connect);
        assert_eq!(p.steps["new"], Step::Connect);
        assert_eq!(p.teardown, ["changed", "gone"]);
    }

    #[test]
    fn unchanged_config_plans_nothing() {
        let had = BTreeMap::from([("a".to_owned(), Had::Connected(fp(1)))]);
        let want = BTreeMap::from([("a".to_owned(), fp(1))]);
        let p = plan(&had, &want, Instant::now());
        assert!(p.steps.values().all(|s| *s == Step::Keep) && p.teardown.is_empty());
    }
}
