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

/// Each client's file: checked clean, shown under its client's name, and
/// its demo server's tools listed (tool filters applied).
#[test]
fn every_format_is_checked_shown_and_used() {
    let cases: [(&str, &str, &[&str]); 7] = [
        ("vscode/.vscode/mcp.json", "VS Code, format vscode", &[]),
        (
            "claude-code/.mcp.json",
            "Claude Code, format claude-code",
            &[],
        ),
        ("claude-code", "Claude Code, format claude-code", &[]),
        (
            "gemini/.gemini/settings.json",
            "Gemini CLI, format gemini-cli",
            &["fail", "read_file"],
        ),
        (
            "windsurf/mcp_config.json",
            "Windsurf, format windsurf",
            &["get_env"],
        ),
        ("zed/settings.json", "Zed, format zed", &[]),
        ("opencode/opencode.jsonc", "OpenCode, format opencode", &[]),
    ];
    for (p, label, hidden) in cases {
        let file = path_of(p);
        let (out, stdout, stderr) = run(&["config", "check", &file]);
        assert!(out.status.success(), "{p}: {stdout}\n{stderr}");
        assert!(stdout.contains("ok: no problems"), "{p}: {stdout}");
        let (out, stdout, stderr) = run(&[
            "config",
            "show",
            &file,
            "--input",
            "demo-token=tok-from-flag",
        ]);
        assert!(out.status.success(), "{p}: {stdout}\n{stderr}");
        assert!(stdout.contains(&format!("({label})")), "{p}: {stdout}");
        assert!(stdout.contains("server demo: stdio"), "{p}: {stdout}");
        assert!(!stdout.contains("tok-from-flag"), "{p}: {stdout}");
        let (out, stdout, stderr) = run(&[
            "tools",
            "--config",
            &file,
            "--input",
            "demo-token=tok-from-flag",
        ]);
        assert!(out.status.success(), "{p}: {stdout}\n{stderr}");
        assert!(stdout.contains("demo__echo"), "{p}: {stdout}");
        for tool in hidden {
            assert!(
                !stdout.contains(&format!("demo__{tool}")),
                "{p} shows {tool}: {stdout}"
            );
        }
    }
}

#[test]
fn gemini_trust_and_filters_are_shown() {
    let (out, stdout, _) = run(&["config", "show", &path_of("gemini")]);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("  tools: only add, echo, fail; never fail"),
        "{stdout}"
    );
    assert!(stdout.contains("  trust: yes"), "{stdout}");
    assert!(stdout.contains("request timeout: 20s"), "{stdout}");
}

/// A filtered-out tool is not callable either.
#[test]
fn a_filtered_out_tool_cannot_be_called() {
    let file = path_of("gemini/.gemini/settings.json");
    let (out, stdout, stderr) = run(&["call", "--config", &file, "demo__fail"]);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    let (out, stdout, stderr) = run(&[
        "call",
        "--config",
        &file,
        "demo__echo",
        "--args",
        r#"{"text": "hi"}"#,
    ]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("hi"), "{stdout}");
}

/// Without `--input` and off a terminal, the error names the input and
/// its description, once.
#[test]
fn a_missing_input_names_itself() {
    let file = path_of("vscode/.vscode/mcp.json");
    let (out, stdout, stderr) = run(&["tools", "--config", &file]);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(
        stderr
            .matches("input `demo-token` (Demo token) has no value")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("servers.demo.env.DEMO_TOKEN"), "{stderr}");
    let (out, _, stderr) = run(&["tools", "--config", &file, "--input", "no-equals"]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
}
