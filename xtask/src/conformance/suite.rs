//! Part 1: the official conformance suite (`@modelcontextprotocol/conformance`)
//! runs our client against each of its client scenarios: the pinned release
//! (rows `suite/…`), then the alpha line's scenarios for protocol revision
//! 2026-07-28 (rows `draft/…`), run at that revision's wire, then the alpha
//! line's others, each at its own revision (rows `alpha/…`: authorization
//! back-compat and extensions, the skills extension's client scenarios).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Semaphore;

use super::process;
use super::report::Row;
use super::setup::Tools;

/// The suite's bound on one client run (its default, in ms).
const CLIENT_TIMEOUT_MS: u64 = 30_000;

/// Our bound on one scenario, suite start-up included.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(75);

/// Scenarios run at once.
const PARALLEL: usize = 3;

/// Failing checks printed per scenario as it finishes (the report lists
/// them all for new failures).
const SHOWN_CHECKS: usize = 3;

const PACKAGE: &str = "@modelcontextprotocol/conformance";

/// One run of the suite: which install, which scenarios, at which wire.
#[derive(Debug, Clone)]
pub(crate) struct Suite {
    /// The first part of each row's name: `suite` or `draft`.
    pub(crate) prefix: &'static str,
    /// The `node_modules` holding the suite's package.
    pub(crate) node_modules: PathBuf,
    /// `--spec-version` for listing and for each run: the scenarios that
    /// apply at this revision, each run at its wire (the suite tells the
    /// client through `MCP_CONFORMANCE_PROTOCOL_VERSION`). `None`: the
    /// suite's default (each scenario at its own).
    pub(crate) spec_version: Option<&'static str>,
    /// Which listed scenarios run: given the name and the revisions the
    /// list tags it with (`2025-11-25,2026-07-28`, `extension`).
    pub(crate) pick: fn(&str, &str) -> bool,
}

impl Suite {
    /// The pinned release: every client scenario it lists.
    pub(crate) fn release(tools: &Tools) -> Self {
        Suite {
            prefix: "suite",
            node_modules: tools.node_modules.clone(),
            spec_version: None,
            pick: |_, _| true,
        }
    }

    /// The alpha line's client scenarios that apply at 2026-07-28, at that
    /// wire (the authorization ones included: 25 at alpha.12).
    pub(crate) fn draft(node_modules: PathBuf) -> Self {
        Suite {
            prefix: "draft",
            node_modules,
            spec_version: Some(DRAFT_VERSION),
            pick: |_, _| true,
        }
    }

    /// The alpha line's scenarios that the draft run leaves out, each at
    /// its own revision: the authorization ones (the 2025-03-26 back-compat
    /// ones and the authorization extensions: client credentials,
    /// enterprise-managed authorization, DPoP, workload identity) and the
    /// skills extension's client scenarios (`sep-2640-client-*`: no
    /// prefetch; digest, size and frontmatter verification).
    pub(crate) fn alpha(node_modules: PathBuf) -> Self {
        Suite {
            prefix: "alpha",
            node_modules,
            spec_version: None,
            pick: |name, tags| {
                let not_draft = !tags.split(',').any(|t| t == DRAFT_VERSION);
                (name.starts_with("auth/") || name.starts_with("sep-2640-client-")) && not_draft
            },
        }
    }
}

/// The protocol revision the draft scenarios are run at.
pub(crate) const DRAFT_VERSION: &str = "2026-07-28";

/// Runs every client scenario of `suite`. `client` is the command the
/// suite runs (it appends the server URL).
pub(crate) async fn run(
    tools: &Tools,
    suite: &Suite,
    client: &str,
    results: &Path,
    http: bool,
) -> Vec<Row> {
    let prefix = suite.prefix;
    let scenarios = match list(tools, suite).await {
        Ok(s) if !s.is_empty() => s,
        Ok(_) => {
            return vec![Row::fail(
                format!("{prefix}/list"),
                "the suite lists no client scenarios",
            )];
        }
        Err(e) => return vec![Row::fail(format!("{prefix}/list"), e)],
    };
    println!(
        "   {} client scenarios: {}",
        scenarios.len(),
        scenarios.join(", ")
    );
    if !http {
        return scenarios
            .into_iter()
            .map(|s| {
                Row::pending(
                    format!("{prefix}/{s}"),
                    "every scenario talks HTTP; this build has no HTTP transport",
                )
            })
            .collect();
    }
    let gate = Arc::new(Semaphore::new(PARALLEL));
    let mut runs = tokio::task::JoinSet::new();
    for (i, scenario) in scenarios.iter().enumerate() {
        let gate = Arc::clone(&gate);
        let tools = tools.clone();
        let suite = suite.clone();
        let client = client.to_string();
        // Each scenario writes into a folder of its own, so its checks are
        // found without guessing.
        let results = results.join(format!("{i:02}-{}", scenario.replace('/', "_")));
        let scenario = scenario.clone();
        runs.spawn(async move {
            let _permit = gate.acquire_owned().await;
            let row = one(&tools, &suite, &client, &results, &scenario).await;
            (i, row)
        });
    }
    let mut rows: Vec<(usize, Row)> = Vec::new();
    while let Some(done) = runs.join_next().await {
        match done {
            Ok((i, row)) => {
                println!(
                    "   {:<50} {}",
                    row.id,
                    if row.outcome == super::report::Outcome::Pass {
                        "pass"
                    } else {
                        "fail"
                    }
                );
                for c in row.checks.iter().take(SHOWN_CHECKS) {
                    println!("      {c}");
                }
                if row.checks.len() > SHOWN_CHECKS {
                    println!(
                        "      … {} more in the suite's checks.json",
                        row.checks.len() - SHOWN_CHECKS
                    );
                }
                rows.push((i, row));
            }
            Err(e) => rows.push((
                usize::MAX,
                Row::fail(
                    format!("{prefix}/?"),
                    format!("a scenario task failed: {e}"),
                ),
            )),
        }
    }
    rows.sort_by_key(|(i, _)| *i);
    rows.into_iter().map(|(_, r)| r).collect()
}

/// The suite's command line. (Its scenario servers listen on an ephemeral
/// port and are handed to our client as `http://localhost:PORT`; they read
/// their port back synchronously, so the 127.0.0.1 preload used for the
/// reference servers cannot be applied to them.)
fn suite_command(tools: &Tools, suite: &Suite) -> tokio::process::Command {
    let mut cmd = process::command(&tools.node);
    cmd.arg(suite.node_modules.join(PACKAGE).join("dist/index.js"));
    cmd
}

/// The client scenarios, as `conformance list --client` names them (at the
/// suite's `--spec-version`), less the skipped ones.
async fn list(tools: &Tools, suite: &Suite) -> Result<Vec<String>, String> {
    let mut cmd = suite_command(tools, suite);
    cmd.args(["list", "--client"]);
    if let Some(v) = suite.spec_version {
        cmd.args(["--spec-version", v]);
    }
    let out = process::run(cmd, Duration::from_secs(60)).await?;
    if !out.success() {
        return Err(format!("conformance list --client: {}", out.describe()));
    }
    Ok(parse_list(&out.stdout)
        .into_iter()
        .filter(|(name, tags)| (suite.pick)(name, tags))
        .map(|(name, _)| name)
        .collect())
}

/// `  - initialize [2025-06-18,2025-11-25]` → (`initialize`, `2025-06-18,2025-11-25`).
fn parse_list(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("- "))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let name = words.next()?.to_string();
            let tags = words
                .next()
                .and_then(|t| t.strip_prefix('['))
                .and_then(|t| t.strip_suffix(']'))
                .unwrap_or_default()
                .to_string();
            Some((name, tags))
        })
        .collect()
}

async fn one(tools: &Tools, suite: &Suite, client: &str, results: &Path, scenario: &str) -> Row {
    let id = format!("{}/{scenario}", suite.prefix);
    let mut cmd = suite_command(tools, suite);
    cmd.arg("client")
        .arg("--command")
        .arg(client)
        .arg("--scenario")
        .arg(scenario);
    if let Some(v) = suite.spec_version {
        cmd.args(["--spec-version", v]);
    }
    cmd.arg("--timeout")
        .arg(CLIENT_TIMEOUT_MS.to_string())
        .arg("--output-dir")
        .arg(results);
    let out = match process::run(cmd, SCENARIO_TIMEOUT).await {
        Ok(o) => o,
        Err(e) => return Row::fail(id, e),
    };
    let checks = read_checks(results)
        .map(|c| failing_checks(&c))
        .unwrap_or_default();
    let all = format!("{}\n{}", out.stdout, out.stderr);
    let summary = all
        .lines()
        .find(|l| l.starts_with("Passed: "))
        .map(str::trim)
        .unwrap_or("no summary from the suite")
        .to_string();
    if out.success() {
        return Row::pass(id, summary).with_checks(checks);
    }
    if out.status.is_none() {
        return Row::fail(
            id,
            format!(
                "the suite did not finish within {} s",
                SCENARIO_TIMEOUT.as_secs()
            ),
        );
    }
    // The suite's own account of what failed: failed checks, warnings, and
    // whether the client exited with an error.
    let mut why: Vec<String> = all
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.starts_with("Error:")
                || l.starts_with("error:")
                || l.starts_with("Warning:")
                || l.contains("CLIENT EXITED WITH ERROR")
                || l.contains("CLIENT TIMED OUT")
        })
        .map(|l| {
            // The client's error, without the hints meant for people.
            let l = l.split(" (check ").next().unwrap_or(l);
            if l.chars().count() > 140 {
                format!("{}…", l.chars().take(140).collect::<String>())
            } else {
                l.to_string()
            }
        })
        .collect();
    why.dedup();
    why.truncate(4);
    Row::fail(id, format!("{summary}; {}", why.join("; "))).with_checks(checks)
}

/// The checks the suite saved for one scenario (`checks.json`, somewhere
/// under the scenario's own output folder).
fn read_checks(dir: &Path) -> Option<Vec<Value>> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).ok()?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "checks.json") {
                let text = std::fs::read_to_string(&path).ok()?;
                return serde_json::from_str::<Value>(&text)
                    .ok()?
                    .as_array()
                    .cloned();
            }
        }
    }
    None
}

/// One line per check that failed or warned:
/// `FAILURE check-id (Name): message`.
fn failing_checks(checks: &[Value]) -> Vec<String> {
    let text = |c: &Value, key: &str| c.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    checks
        .iter()
        .filter(|c| {
            matches!(
                c.get("status").and_then(Value::as_str),
                Some("FAILURE" | "WARNING")
            )
        })
        .map(|c| {
            let mut message = text(c, "errorMessage");
            if message.is_empty() {
                message = text(c, "description");
            }
            let message: String = message.split_whitespace().collect::<Vec<_>>().join(" ");
            let message = if message.chars().count() > 240 {
                format!("{}…", message.chars().take(240).collect::<String>())
            } else {
                message
            };
            format!(
                "{} {} ({}): {message}",
                text(c, "status"),
                text(c, "id"),
                text(c, "name")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_list() {
        let text = "Client scenarios (test against a client):\n  - initialize [2025-06-18,2025-11-25]\n  - auth/metadata-default [2025-11-25]\n";
        let names: Vec<_> = parse_list(text).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["initialize", "auth/metadata-default"]);
        assert_eq!(parse_list(text)[0].1, "2025-06-18,2025-11-25");
        let pick = Suite::alpha(PathBuf::new()).pick;
        assert!(pick("auth/dpop", "extension"));
        assert!(pick(
            "auth/2025-03-26-oauth-endpoint-fallback",
            "2025-03-26"
        ));
        assert!(!pick("auth/iss-supported", "2026-07-28"));
        assert!(!pick("auth/metadata-default", "2025-11-25,2026-07-28"));
        assert!(pick("sep-2640-client-no-prefetch", "extension"));
        assert!(pick("sep-2640-client-verify-digest", "extension"));
        assert!(!pick("sep-2640-skills-enumeration", "extension"));
        assert!(!pick("initialize", "2025-06-18,2025-11-25"));
    }

    #[test]
    fn failing_checks_are_listed_with_their_messages() {
        let checks: Vec<Value> = serde_json::from_str(
            r#"[
              {"id": "a", "name": "A", "status": "SUCCESS", "description": "fine"},
              {"id": "b", "name": "B", "status": "FAILURE", "description": "d", "errorMessage": "Missing\n header"},
              {"id": "c", "name": "C", "status": "WARNING", "description": "should do"},
              {"id": "d", "name": "D", "status": "SKIPPED", "description": "n/a"}
            ]"#,
        )
        .unwrap();
        assert_eq!(
            failing_checks(&checks),
            ["FAILURE b (B): Missing header", "WARNING c (C): should do"]
        );
    }

    #[test]
    fn checks_are_found_in_the_scenario_folder() {
        let dir = std::env::temp_dir().join(format!("xtask-checks-{}", std::process::id()));
        let nested = dir.join("auth/x-2026");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(
            nested.join("checks.json"),
            r#"[{"id": "a", "status": "FAILURE"}]"#,
        )
        .unwrap();
        let found = read_checks(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found.len(), 1);
        assert!(read_checks(&dir).is_none());
    }
}
