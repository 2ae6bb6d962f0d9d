//! `cargo xtask msrv`: the `rust-version` every crate declares is honest.
//!
//! Without an older toolchain to build with, two checks stand in for it:
//! clippy's `incompatible_msrv` (denied in the workspace lints) catches a
//! standard-library item newer than the declared version, and this task
//! catches a dependency that needs a newer compiler than its dependent
//! declares. It reads `cargo metadata` with every feature on (an optional
//! dependency is still one a user can turn on) and walks each publishable
//! member's normal and build dependencies, transitively: every package met
//! must declare no `rust-version` above the member's. Members must all
//! declare the one workspace value, so a user reads one number.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// A `rust-version` as numbers (`1.88` and `1.88.0` compare equal).
fn version(text: &str) -> Vec<u64> {
    let mut parts: Vec<u64> = text.split('.').map(|p| p.parse().unwrap_or(0)).collect();
    while parts.len() < 3 {
        parts.push(0);
    }
    parts
}

/// Runs the check; the error lists every dependency that needs more.
pub(crate) fn run() -> Result<(), String> {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--locked",
            "--all-features",
        ])
        .output()
        .map_err(|e| format!("cannot run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let meta: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("cargo metadata printed no JSON: {e}"))?;
    let problems = check(&meta)?;
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The problems `meta` (cargo metadata's JSON) shows; an empty list when the
/// declared versions hold.
fn check(meta: &Value) -> Result<Vec<String>, String> {
    let packages = meta["packages"]
        .as_array()
        .ok_or("metadata has no packages")?;
    let by_id: BTreeMap<&str, &Value> = packages
        .iter()
        .filter_map(|p| Some((p["id"].as_str()?, p)))
        .collect();
    let members: Vec<&str> = meta["workspace_members"]
        .as_array()
        .ok_or("metadata has no workspace_members")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let nodes: BTreeMap<&str, &Value> = meta
        .pointer("/resolve/nodes")
        .unwrap_or(&Value::Null)
        .as_array()
        .ok_or("metadata has no resolve graph")?
        .iter()
        .filter_map(|n| Some((n["id"].as_str()?, n)))
        .collect();
    let name = |id: &str| {
        by_id
            .get(id)
            .map(|p| {
                format!(
                    "{} {}",
                    p["name"].as_str().unwrap_or("?"),
                    p["version"].as_str().unwrap_or("?")
                )
            })
            .unwrap_or_else(|| id.to_owned())
    };
    let mut problems = Vec::new();
    let mut declared_values = BTreeSet::new();
    for &member in &members {
        let Some(package) = by_id.get(member) else {
            continue;
        };
        // `publish = false` reads as an empty list of registries.
        if package["publish"].as_array().is_some_and(Vec::is_empty) {
            continue;
        }
        let Some(declared) = package["rust_version"].as_str() else {
            problems.push(format!("{}: no rust-version", name(member)));
            continue;
        };
        declared_values.insert(declared.to_owned());
        let mut seen = BTreeSet::new();
        let mut stack = vec![member];
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            if let Some(needs) = by_id.get(id).and_then(|p| p["rust_version"].as_str())
                && version(needs) > version(declared)
            {
                problems.push(format!(
                    "{} declares rust-version {declared}, but {} needs {needs}",
                    name(member),
                    name(id)
                ));
            }
            let Some(node) = nodes.get(id) else { continue };
            for dep in node["deps"].as_array().into_iter().flatten() {
                let used = dep["dep_kinds"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|k| k["kind"].as_str() != Some("dev"));
                if let (true, Some(pkg)) = (used, dep["pkg"].as_str()) {
                    stack.push(pkg);
                }
            }
        }
    }
    if declared_values.len() > 1 {
        problems.push(format!(
            "the publishable crates declare different rust-versions ({declared_values:?}): \
             use the one workspace value"
        ));
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(member_rv: &str, dep_rv: &str, kind: Value) -> Value {
        json!({
            "packages": [
                {"id": "a", "name": "a", "version": "0.1.0", "rust_version": member_rv, "publish": null},
                {"id": "b", "name": "b", "version": "1.0.0", "rust_version": null, "publish": null},
                {"id": "c", "name": "c", "version": "2.0.0", "rust_version": dep_rv, "publish": null}
            ],
            "workspace_members": ["a"],
            "resolve": {"nodes": [
                {"id": "a", "deps": [{"pkg": "b", "dep_kinds": [{"kind": kind}]}]},
                {"id": "b", "deps": [{"pkg": "c", "dep_kinds": [{"kind": null}]}]},
                {"id": "c", "deps": []}
            ]}
        })
    }

    #[test]
    fn a_transitive_dependency_needing_more_is_named() {
        let problems = check(&meta("1.88", "1.89.0", Value::Null)).unwrap();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("c 2.0.0 needs 1.89.0"), "{problems:?}");
    }

    #[test]
    fn equal_versions_and_dev_dependencies_pass() {
        assert!(
            check(&meta("1.88", "1.88.0", Value::Null))
                .unwrap()
                .is_empty()
        );
        assert!(
            check(&meta("1.88", "1.95", json!("dev")))
                .unwrap()
                .is_empty()
        );
    }
}
