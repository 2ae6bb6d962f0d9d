//! The `mcp` command end to end, against the built-in testkit server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::{MCP, mcp, text};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A unique file whose path marks the server processes of one test.
fn marker(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "mcp-cli-test-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("instances.log")
}

/// Processes whose command line mentions `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // A zombie is already dead; its parent (init) reaps it.
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(needle) {
            found.push(pid);
        }
    }
    found
}

fn assert_no_process_left(log: &Path) {
    let needle = log.to_string_lossy().to_string();
    let left = processes_with(&needle);
    assert!(left.is_empty(), "server processes left behind: {left:?}");
}

/// Probes the testkit server with one misbehaviour, with short timeouts.
fn probe_misbehaving(misbehaviour: &str, extra: &[&str]) -> (Output, PathBuf) {
    let log = marker(misbehaviour);
    let stdio = format!(
        "{MCP} demo-server --misbehave {misbehaviour} --instance-log {} {}",
        log.display(),
        extra.join(" ")
    );
    let out = mcp(&[
        "probe",
        "--handshake-timeout",
        "1500",
        "--timeout",
        "1500",
        "--stdio",
        &stdio,
    ]);
    (out, log)
}

#[test]
fn probe_with_no_arguments_runs_the_demo() {
    let out = mcp(&["probe"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    for step in [
        "✓ start",
        "✓ initialize",
        "✓ initialized",
        "✓ tools/list",
        "✓ tools/call",
        "✓ features",
        "✓ close",
    ] {
        assert!(t.contains(step), "missing {step:?} in\n{t}");
    }
    assert!(t.contains("protocol 2025-11-25"), "{t}");
    assert!(t.contains("echo → \"hello from mcp probe\""), "{t}");
    assert!(t.contains("PASS 7/7"), "{t}");
    assert!(!t.contains('\x1b'), "no colour when piped / NO_COLOR");
}

#[test]
fn trace_shows_every_message_both_ways() {
    let out = mcp(&["probe", "--trace"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    for needle in [
        // The default probe for 2026-07-28, refused by the (legacy) demo
        // server, then the handshake.
        "→ {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"server/discover\"",
        "← {\"jsonrpc\":\"2.0\",\"id\":0,\"error\"",
        "→ {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"",
        "← {\"jsonrpc\":\"2.0\",\"id\":1,\"result\"",
        "→ {\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
        "\"method\":\"tools/list\"",
        "\"method\":\"tools/call\"",
        "stderr│ mcp-testkit",
    ] {
        assert!(t.contains(needle), "missing {needle:?} in\n{t}");
    }
}

#[test]
fn json_report_is_machine_readable() {
    let out = mcp(&["probe", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], true);
    let steps: Vec<_> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "start",
            "initialize",
            "initialized",
            "tools/list",
            "tools/call",
            "features",
            "close"
        ]
    );
    assert_eq!(v["server"]["serverInfo"]["name"], "mcp-testkit");
    assert_eq!(
        v["tools"].as_array().unwrap().len(),
        mcp_stack_testkit::TOOL_NAMES.len()
    );
    assert_eq!(v["call"]["content"][0]["text"], "hello from mcp probe");
}

#[test]
fn stdout_noise_is_diagnosed_and_survived() {
    let (out, log) = probe_misbehaving("stdout-noise", &[]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("were not JSON-RPC") && t.contains("must log to stderr"),
        "{t}"
    );
    assert_no_process_left(&log);
}

#[test]
fn silent_handshake_times_out_with_its_diagnosis() {
    let (out, log) = probe_misbehaving("stdout-noise,never-answer-initialize", &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("✗ initialize") && t.contains("timed out after 1.5 s"),
        "{t}"
    );
    assert!(t.contains("did not answer initialize"), "{t}");
    assert!(
        t.contains("must write logs to stderr"),
        "noise is named as a likely cause:\n{t}"
    );
    assert!(t.contains("server stderr"), "{t}");
    // Bounded by the handshake timeout (the step says so), whatever the
    // machine's speed; and the server is gone.
    assert_no_process_left(&log);
}

#[test]
fn version_mismatch_names_both_versions() {
    let (out, log) = probe_misbehaving("unsupported-version", &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("offered 2025-11-25") && t.contains("answered 1999-01-01"),
        "{t}"
    );
    assert_no_process_left(&log);
}

#[test]
fn immediate_exit_shows_exit_code_and_stderr() {
    let (out, log) = probe_misbehaving("exit-immediately", &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("exit code 1"), "{t}");
    assert!(t.contains("API_TOKEN is not set"), "{t}");
    assert!(t.contains("missing environment variable"), "{t}");
    assert_no_process_left(&log);
}

#[test]
fn crash_mid_call_is_reported_with_its_stderr() {
    let (out, log) = probe_misbehaving("crash-mid-call", &[]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("✗ tools/call") && t.contains("exit code 101"),
        "{t}"
    );
    assert!(t.contains("simulated crash"), "{t}");
    assert_no_process_left(&log);
}

#[test]
fn late_answer_times_out_and_the_connection_is_closed() {
    let (out, log) = probe_misbehaving("late-answer", &["--late-ms", "5000"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("tools/call timed out after 1.5 s"), "{t}");
    // The probe did not wait for the late answer: it closed the server's
    // input, which the server reports before it exits.
    assert!(t.contains("input closed; exiting"), "{t}");
    assert_no_process_left(&log);
}

#[test]
fn bad_lines_and_unknown_ids_do_not_break_the_probe() {
    for m in [
        "noise",
        "invalid-utf8",
        "unknown-ids",
        "flood-notifications",
        "require-initialized",
    ] {
        let (out, log) = probe_misbehaving(m, &["--flood-count", "200"]);
        let t = text(&out);
        assert!(out.status.success(), "{m}:\n{t}");
        assert!(t.contains("✓ tools/call"), "{m}:\n{t}");
        assert_no_process_left(&log);
    }
}

#[test]
fn oversized_line_is_skipped_and_reported() {
    let (out, log) = probe_misbehaving("oversized-line", &["--oversize-bytes", "17000000"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("longer than the 16777216-byte limit"), "{t}");
    assert_no_process_left(&log);
}

#[test]
fn server_ignoring_stdin_close_and_sigterm_is_still_gone() {
    let (out, log) = probe_misbehaving("ignore-stdin-close", &[]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("✓ close"), "{t}");
    // The close sequence ran to its end (stdin close, SIGTERM, then
    // SIGKILL): the event, not the clock, says so.
    assert!(t.contains("killed by signal 9"), "{t}");
    assert_no_process_left(&log);
}

#[test]
fn no_tools_capability_explains_the_empty_list() {
    let (out, log) = probe_misbehaving("no-tools-capability", &[]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("! tools/list") && t.contains("did not declare the `tools` capability"),
        "{t}"
    );
    assert_no_process_left(&log);
}

#[test]
fn missing_program_says_so() {
    let out = mcp(&["probe", "--stdio", "definitely-not-a-program-xyz --flag"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("✗ start") && t.contains("was not found"), "{t}");
}

#[test]
fn tools_and_call_work_on_any_stdio_target() {
    let demo = format!("{MCP} demo-server");
    let out = mcp(&["tools", "--stdio", &demo]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("echo") && t.contains("read_file") && t.contains("[read-only"),
        "{t}"
    );

    let out = mcp(&[
        "call",
        "--stdio",
        &demo,
        "add",
        "--args",
        r#"{"a": 2, "b": 3}"#,
    ]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains('5'), "{t}");

    let out = mcp(&[
        "call",
        "--stdio",
        &demo,
        "add",
        "--args",
        r#"{"a": "two", "b": 3}"#,
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("/a") && t.contains("nothing was sent"), "{t}");

    let out = mcp(&[
        "call",
        "--stdio",
        &demo,
        "fail",
        "--args",
        r#"{"message": "disk full"}"#,
    ]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("disk full") && t.contains("isError: true"),
        "{t}"
    );
}

#[test]
fn config_check_and_show() {
    let dir = marker("config").parent().unwrap().to_path_buf();
    let bad = dir.join("settings.json");
    std::fs::write(
        &bad,
        r#"{"mcpServers": {"remote-tools": {"url": "ftp://x", "headers": {"Authorization": "Bearer a\nb"}}}}"#,
    )
    .unwrap();
    let out = mcp(&["config", "check", bad.to_str().unwrap()]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("mcpServers.remote-tools.url"), "{t}");
    assert!(
        t.contains("mcpServers.remote-tools.headers.Authorization"),
        "{t}"
    );

    std::fs::write(
        &bad,
        format!(
            r#"{{"mcpServers": {{"demo": {{"command": "{MCP}", "args": ["demo-server"], "env": {{"API_TOKEN": "sekrit-value-123"}}}}}}}}"#
        ),
    )
    .unwrap();
    // `config show` makes the user's fingerprint key: here, not in $HOME.
    let out = Command::new(MCP)
        .args(["config", "show", bad.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .env("MCP_AUTH_DIR", dir.join("auth"))
        .output()
        .expect("run mcp");
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("demo") && !t.contains("sekrit-value-123"), "{t}");

    // Probe through the config.
    let out = mcp(&[
        "probe",
        "--config",
        bad.to_str().unwrap(),
        "--server",
        "demo",
    ]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("✓ tools/call") && !t.contains("sekrit-value-123"),
        "{t}"
    );
}
