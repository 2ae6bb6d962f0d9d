//! The CLI against legacy, modern (2026-07-28) and dual-era testkit servers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::process::{Command, Output};

const MCP: &str = env!("CARGO_BIN_EXE_mcp");

fn mcp(args: &[&str]) -> (Output, String) {
    let out = Command::new(MCP)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run mcp");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, text)
}

fn server(era: &str) -> String {
    format!("{MCP} demo-server --era {era}")
}

#[test]
fn auto_picks_the_right_revision_for_each_kind_of_server() {
    for (era, revision, first_step) in [
        ("legacy", "2025-11-25", "✓ initialize"),
        ("modern", "2026-07-28", "✓ discover"),
        ("dual", "2026-07-28", "✓ discover"),
    ] {
        let (out, t) = mcp(&["probe", "--protocol", "auto", "--stdio", &server(era)]);
        assert!(out.status.success(), "{era}:\n{t}");
        assert!(t.contains(&format!("protocol {revision}")), "{era}:\n{t}");
        assert!(t.contains(first_step), "{era}:\n{t}");
        assert!(t.contains("✓ tools/call"), "{era}:\n{t}");
        assert_eq!(
            t.contains("probe declined, fell back to the handshake"),
            era == "legacy",
            "{era}:\n{t}"
        );
    }
}

#[test]
fn the_same_tools_and_call_commands_work_against_every_era() {
    for era in ["legacy", "modern", "dual"] {
        let (out, t) = mcp(&["tools", "--protocol", "auto", "--stdio", &server(era)]);
        assert!(out.status.success() && t.contains("echo"), "{era}:\n{t}");
        let (out, t) = mcp(&[
            "call",
            "--protocol",
            "auto",
            "--stdio",
            &server(era),
            "add",
            "--args",
            r#"{"a": 1, "b": 2}"#,
        ]);
        assert!(out.status.success() && t.contains('3'), "{era}:\n{t}");
    }
}

#[test]
fn mismatched_eras_fail_with_advice() {
    let (out, t) = mcp(&[
        "probe",
        "--protocol",
        "modern",
        "--stdio",
        &server("legacy"),
    ]);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("speaks only the initialize handshake") && t.contains("--protocol auto"),
        "{t}"
    );

    let (out, t) = mcp(&[
        "probe",
        "--protocol",
        "legacy",
        "--stdio",
        &server("modern"),
    ]);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("2026-07-28") && t.contains("try --protocol auto"),
        "{t}"
    );
}

#[test]
fn trace_shows_the_per_request_meta() {
    let (out, t) = mcp(&[
        "probe",
        "--protocol",
        "modern",
        "--trace",
        "--stdio",
        &server("modern"),
    ]);
    assert!(out.status.success(), "{t}");
    assert!(t.contains(r#""method":"server/discover""#), "{t}");
    assert!(
        t.contains(r#""io.modelcontextprotocol/protocolVersion":"2026-07-28""#),
        "{t}"
    );
    assert!(!t.contains(r#""method":"initialize""#), "{t}");
}

#[test]
fn multi_round_trip_without_a_person_declines() {
    let (out, t) = mcp(&[
        "call",
        "--protocol",
        "modern",
        "--stdio",
        &server("modern"),
        "ask_name",
    ]);
    assert!(out.status.success(), "{t}");
    assert!(
        t.contains("no name given"),
        "the default handler declines:\n{t}"
    );
}

#[test]
fn tools_and_call_with_a_config_go_through_the_runtime() {
    let dir = std::env::temp_dir().join(format!("mcp-cli-runtime-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("settings.json");
    std::fs::write(
        &file,
        format!(
            r#"{{"mcpServers": {{
                "local": {{"command": "{MCP}", "args": ["demo-server"]}},
                "modern-one": {{"command": "{MCP}", "args": ["demo-server", "--era", "modern"], "protocolVersion": "auto"}},
                "broken": {{"command": "{MCP}", "args": ["demo-server", "--misbehave", "exit-immediately"]}}
            }}}}"#
        ),
    )
    .unwrap();
    let file = file.to_str().unwrap();

    let (out, t) = mcp(&["tools", "--config", file]);
    assert_eq!(out.status.code(), Some(1), "a server failed:\n{t}");
    assert!(
        t.contains("local__echo") && t.contains("modern-one__ask_name"),
        "{t}"
    );
    assert!(
        t.contains("server `broken` failed") && t.contains("API_TOKEN"),
        "{t}"
    );

    let (out, t) = mcp(&[
        "call",
        "--config",
        file,
        "modern-one__add",
        "--args",
        r#"{"a": 2, "b": 5}"#,
    ]);
    assert!(out.status.success(), "{t}");
    assert!(t.contains('7'), "{t}");

    // One server picked with --server: its bare tool names work (#26).
    let (out, t) = mcp(&[
        "call", "--config", file, "--server", "local", "add", "a=2", "b=5",
    ]);
    assert!(out.status.success(), "{t}");
    assert!(t.contains('7'), "{t}");
    // Several servers: the bare name is not one, and the error says how
    // names go.
    let (out, t) = mcp(&["call", "--config", file, "add", "--args", "{}"]);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("local__add") && t.contains("SERVER__TOOL"),
        "{t}"
    );
}

#[test]
fn a_server_that_exits_on_the_probe_is_started_again_for_the_handshake() {
    let strict = format!("{MCP} demo-server --misbehave strict-initialize");
    let (out, t) = mcp(&["probe", "--stdio", &strict]);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("exited during the 2026-07-28 probe"), "{t}");
    assert!(t.contains("protocol 2025-11-25"), "{t}");
    assert!(t.contains("✓ tools/call"), "{t}");
    let (out, t) = mcp(&[
        "call",
        "--stdio",
        &strict,
        "add",
        "--args",
        r#"{"a": 1, "b": 2}"#,
    ]);
    assert!(out.status.success() && t.contains('3'), "{t}");
    // Pinned to the handshake, there is no probe to survive.
    let (out, t) = mcp(&["probe", "--protocol", "legacy", "--stdio", &strict]);
    assert!(out.status.success(), "{t}");
    assert!(!t.contains("exited during the 2026-07-28 probe"), "{t}");
}
