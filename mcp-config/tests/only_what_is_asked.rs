#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! Only what is asked for is resolved: one server's problems do not stop another.

use std::path::{Path, PathBuf};

use mcp_stack_config::{ConfigError, Options, Resolve, Severity, load_path, resolve};

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(p)
}

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn the_whole_file_still_fails_with_each_problem_once() {
    let err = load_path(&fixture("codex-broken/config.toml"), &Options::new()).unwrap_err();
    let report = err.report().unwrap();
    assert_eq!(report.error_count(), 1, "{report}");
    assert_eq!(report.problems[0].path, "mcp_servers.broken");
    // The origin is named once, not once by the error and again by its report.
    let text = err.to_string();
    let origin = fixture("codex-broken/config.toml").display().to_string();
    assert_eq!(text.matches(&origin).count(), 1, "{text}");
}

#[test]
fn one_server_is_loaded_and_resolved_alone() {
    let options = Options::new().server("docs");
    let loaded = load_path(&fixture("codex-broken/config.toml"), &options).unwrap();
    // The broken entry elsewhere is a warning, with its path, once.
    let broken: Vec<_> = loaded
        .report
        .problems
        .iter()
        .filter(|p| p.path == "mcp_servers.broken")
        .collect();
    assert_eq!(broken.len(), 1, "{}", loaded.report);
    assert_eq!(broken[0].severity, Severity::Warning);
    assert!(!loaded.report.has_errors());
    // The unset variable of `github` is not looked at.
    let resolved = Resolve::new(&no_env)
        .only("docs")
        .run(&loaded.config)
        .unwrap();
    assert_eq!(resolved.servers.keys().collect::<Vec<_>>(), ["docs"]);
    // Resolving everything still fails on it, naming it once.
    let all = resolve(&loaded.config, &no_env).unwrap_err();
    let report = all.report().unwrap();
    assert_eq!(report.error_count(), 1, "{report}");
    assert_eq!(
        report.problems[0].path,
        "mcp_servers.github.bearer_token_env_var"
    );
}

#[test]
fn asking_for_a_server_that_is_not_there_names_the_ones_that_are() {
    let options = Options::new().server("nope");
    let err = load_path(&fixture("codex-broken/config.toml"), &options).unwrap_err();
    assert!(matches!(err, ConfigError::UnknownServer { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("no server `nope`"), "{text}");
    assert!(text.contains("broken, docs, github"), "{text}");
    let loaded = load_path(&fixture("codex/config.toml"), &Options::new()).unwrap();
    let err = Resolve::new(&no_env)
        .only("disabled-one")
        .run(&loaded.config)
        .unwrap_err();
    assert!(err.to_string().contains("is disabled"), "{err}");
}

#[test]
fn the_asked_server_s_own_errors_still_fail() {
    let options = Options::new().server("broken");
    let err = load_path(&fixture("codex-broken/config.toml"), &options).unwrap_err();
    let report = err.report().unwrap();
    assert_eq!(report.error_count(), 1, "{report}");
    assert_eq!(report.problems[0].path, "mcp_servers.broken");
}
