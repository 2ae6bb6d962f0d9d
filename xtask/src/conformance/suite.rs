//! Part 1: the official conformance suite (`@modelcontextprotocol/conformance`)
//! runs our client against each of its client scenarios.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

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

const PACKAGE: &str = "@modelcontextprotocol/conformance";

/// Runs every client scenario the suite lists. `client` is the command the
/// suite runs (it appends the server URL).
pub(crate) async fn run(tools: &Tools, client: &str, results: &Path, http: bool) -> Vec<Row> {
    let scenarios = match list(tools).await {
        Ok(s) if !s.is_empty() => s,
        Ok(_) => {
            return vec![Row::fail(
                "suite/list",
                "the suite lists no client scenarios",
            )];
        }
        Err(e) => return vec![Row::fail("suite/list", e)],
    };
    println!("   {} client scenarios", scenarios.len());
    if !http {
        return scenarios
            .into_iter()
            .map(|s| {
                Row::pending(
                    format!("suite/{s}"),
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
        let client = client.to_string();
        let results = results.to_path_buf();
        let scenario = scenario.clone();
        runs.spawn(async move {
            let _permit = gate.acquire_owned().await;
            let row = one(&tools, &client, &results, &scenario).await;
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
                rows.push((i, row));
            }
            Err(e) => rows.push((
                usize::MAX,
                Row::fail("suite/?", format!("a scenario task failed: {e}")),
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
fn suite_command(tools: &Tools) -> tokio::process::Command {
    let mut cmd = process::command(&tools.node);
    cmd.arg(tools.package_file(PACKAGE, "dist/index.js"));
    cmd
}

/// The client scenarios, as `conformance list --client` names them.
async fn list(tools: &Tools) -> Result<Vec<String>, String> {
    let mut cmd = suite_command(tools);
    cmd.args(["list", "--client"]);
    let out = process::run(cmd, Duration::from_secs(60)).await?;
    if !out.success() {
        return Err(format!("conformance list --client: {}", out.describe()));
    }
    Ok(parse_list(&out.stdout))
}

/// `  - initialize [2025-06-18,2025-11-25]` → `initialize`.
fn parse_list(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("- "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

async fn one(tools: &Tools, client: &str, results: &Path, scenario: &str) -> Row {
    let id = format!("suite/{scenario}");
    let mut cmd = suite_command(tools);
    cmd.arg("client")
        .arg("--command")
        .arg(client)
        .arg("--scenario")
        .arg(scenario)
        .arg("--timeout")
        .arg(CLIENT_TIMEOUT_MS.to_string())
        .arg("--output-dir")
        .arg(results);
    let out = match process::run(cmd, SCENARIO_TIMEOUT).await {
        Ok(o) => o,
        Err(e) => return Row::fail(id, e),
    };
    let all = format!("{}\n{}", out.stdout, out.stderr);
    let summary = all
        .lines()
        .find(|l| l.starts_with("Passed: "))
        .map(str::trim)
        .unwrap_or("no summary from the suite")
        .to_string();
    if out.success() {
        return Row::pass(id, summary);
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
    Row::fail(id, format!("{summary}; {}", why.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_list() {
        let text = "Client scenarios (test against a client):\n  - initialize [2025-06-18,2025-11-25]\n  - auth/metadata-default [2025-11-25]\n";
        assert_eq!(parse_list(text), ["initialize", "auth/metadata-default"]);
    }
}
