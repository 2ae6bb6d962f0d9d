//! Every config format as its own client reads it, end to end: `mcp config
//! check`, `mcp config show` and `mcp tools --config` against the fixtures
//! in `tests/fixtures`, whose servers are the demo server (`mcp
//! demo-server`, found on the PATH the test gives).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MCP: &str = env!("CARGO_BIN_EXE_mcp");

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(p)
}

/// `mcp ARGS…` with this build's `mcp` first on the PATH, no colours, an
/// empty auth folder, and stdin not a terminal.
fn mcp(args: &[&str]) -> Command {
    let bin = Path::new(MCP).parent().unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin.to_path_buf()];
    paths.extend(std::env::split_paths(&path));
    let mut c = Command::new(MCP);
    c.args(args)
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env("NO_COLOR", "1")
        .env(
            "MCP_AUTH_DIR",
            std::env::temp_dir().join("mcp-cli-config-formats-auth"),
        )
        .stdin(std::process::Stdio::null());
    c
}

fn run(args: &[&str]) -> (Output, String, String) {
    let out = mcp(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

fn path_of(p: &str) -> String {
    fixture(p).to_str().unwrap().to_owned()
}

#[test]
fn one_server_works_though_another_is_broken_and_each_problem_is_said_once() {
    let file = path_of("codex/config.toml");
    let (out, stdout, stderr) = run(&["tools", "--config", &file, "--server", "demo"]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("demo__echo"), "{stdout}");
    // The broken entry is a warning, once, with its path; the unset token
    // variable of `github` is not looked at.
    assert_eq!(stderr.matches("mcp_servers.broken").count(), 1, "{stderr}");
    assert!(stderr.contains("warning: mcp_servers.broken:"), "{stderr}");
    assert!(!stderr.contains("GITHUB_PAT_UNSET_IN_TESTS"), "{stderr}");
}

#[test]
fn the_asked_server_s_own_problem_fails_naming_the_file_once() {
    let file = path_of("codex/config.toml");
    let (out, stdout, stderr) = run(&["tools", "--config", &file, "--server", "github"]);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stderr
            .matches("mcp_servers.github.bearer_token_env_var")
            .count(),
        1,
        "{stderr}"
    );
    // The error names the file once (it used to be `FILE: FILE: …`).
    assert!(!stderr.contains(&format!("{file}: {file}")), "{stderr}");
    assert!(
        stderr.contains(&format!("mcp: {file}: cannot resolve the MCP config:")),
        "{stderr}"
    );
    let (out, _, stderr) = run(&["tools", "--config", &file, "--server", "nope"]);
    assert!(!out.status.success());
    assert!(
        stderr.contains("no server `nope` (it has: broken, demo, github)"),
        "{stderr}"
    );
}
