#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! Every fixture format loads to the same model where it describes the same servers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_stack_config::{
    ConfigError, Format, HttpKind, Options, ResolvedConfig, TransportConfig, load_path, resolve,
};

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(p)
}

const TOKEN: &str = "tok-Fixture-7f3a9c";

fn env(name: &str) -> Option<String> {
    (name == "MCP_SERVER_TOKEN").then(|| TOKEN.to_owned())
}

fn load(p: &str) -> (Format, ResolvedConfig) {
    let loaded = load_path(&fixture(p), &Options::new()).unwrap();
    assert!(loaded.report.is_empty(), "{p}: {}", loaded.report);
    (loaded.config.format, resolve(&loaded.config, &env).unwrap())
}

#[test]
fn formats_are_detected() {
    let cases = [
        ("openclaw/settings.json", Format::OpenClawJson),
        ("openclaw/config.toml", Format::OpenClawToml),
        ("openclaw-remote/settings.json", Format::OpenClawJson),
        ("claude/claude_desktop_config.json", Format::ClaudeDesktop),
        ("cursor/mcp.json", Format::Cursor),
        ("vscode/.vscode/mcp.json", Format::VsCode),
        ("codex/config.toml", Format::Codex),
    ];
    for (p, f) in cases {
        assert_eq!(load(p).0, f, "{p}");
    }
    // A folder with one config file is read like the file.
    assert_eq!(load("vscode").0, Format::VsCode);
    assert_eq!(load("cursor").0, Format::Cursor);
}

#[test]
fn the_stdio_server_is_the_same_in_every_format() {
    let sources = [
        "openclaw/settings.json",
        "openclaw/config.toml",
        "claude/claude_desktop_config.json",
        "cursor/mcp.json",
        "vscode/.vscode/mcp.json",
        "codex/config.toml",
    ];
    let servers: Vec<_> = sources
        .iter()
        .map(|p| load(p).1.servers["local-fs"].clone())
        .collect();
    for (p, s) in sources.iter().zip(&servers) {
        assert_eq!(s, &servers[0], "{p} differs");
    }
    let s = &servers[0];
    let TransportConfig::Stdio {
        command,
        args,
        env,
        cwd,
    } = &s.transport
    else {
        panic!()
    };
    assert_eq!(command, "node");
    assert_eq!(args, &["./mcp-servers/fs-server.js"]);
    assert_eq!(env["MCP_WORKSPACE"].expose(), "/tmp/openclaw-workspace");
    assert_eq!(env["MCP_AUTH_MODE"].expose(), "token");
    assert_eq!(cwd, &None);
    assert_eq!(s.request_timeout, Duration::from_secs(60));
    assert_eq!(s.handshake_timeout, Duration::from_secs(30));
    assert!(s.supports_parallel_tool_calls);
}

#[test]
fn the_two_openclaw_examples_fingerprint_the_same_as_whole_sessions() {
    let json = load("openclaw/settings.json").1;
    let toml = load("openclaw/config.toml").1;
    assert_eq!(json.fingerprint, toml.fingerprint);
    assert_eq!(json.servers, toml.servers);
}

#[test]
fn the_remote_server_is_the_same_in_cursor_vscode_and_codex() {
    let fps: Vec<_> = [
        "cursor/mcp.json",
        "vscode/.vscode/mcp.json",
        "codex/config.toml",
    ]
    .iter()
    .map(|p| load(p).1.servers["remote-tools"].fingerprint)
    .collect();
    assert_eq!(fps[0], fps[1]);
    assert_eq!(fps[0], fps[2]);

    let (_, cursor) = load("cursor/mcp.json");
    let TransportConfig::Http {
        url, headers, kind, ..
    } = &cursor.servers["remote-tools"].transport
    else {
        panic!()
    };
    assert_eq!(url, "https://your-mcp-server.example.com/mcp");
    assert_eq!(*kind, HttpKind::StreamableHttpWithSseFallback);
    assert_eq!(headers["Authorization"].expose(), format!("Bearer {TOKEN}"));
}

#[test]
fn the_openclaw_remote_example_pins_streamable_http() {
    let (_, c) = load("openclaw-remote/settings.json");
    let s = &c.servers["remote-tools"];
    let TransportConfig::Http { kind, headers, .. } = &s.transport else {
        panic!()
    };
    assert_eq!(*kind, HttpKind::StreamableHttp);
    assert_eq!(headers["MCP-Protocol-Version"].expose(), "2025-06-18");
    assert_eq!(s.request_timeout, Duration::from_secs(60));
    // Same record with the SSE fallback (Cursor's) is a different behaviour.
    let (_, cursor) = load("cursor/mcp.json");
    assert_ne!(s.fingerprint, cursor.servers["remote-tools"].fingerprint);
}

#[test]
fn disabled_servers_are_not_resolved() {
    let (_, codex) = load("codex/config.toml");
    assert!(codex.disabled.contains("disabled-one"));
    assert!(!codex.servers.contains_key("disabled-one"));
}

#[test]
fn a_folder_with_settings_json_and_config_toml_is_an_error_naming_both() {
    let dir = fixture("openclaw");
    let err = load_path(&dir, &Options::new()).unwrap_err();
    assert!(matches!(err, ConfigError::Ambiguous { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("settings.json") && msg.contains("config.toml"),
        "{msg}"
    );
    assert!(msg.contains("holds both"), "{msg}");

    let chosen = load_path(&dir, &Options::new().format(Format::OpenClawToml)).unwrap();
    assert_eq!(chosen.config.source.unwrap(), dir.join("config.toml"));
    let chosen = load_path(&dir, &Options::new().format(Format::OpenClawJson)).unwrap();
    assert_eq!(chosen.config.source.unwrap(), dir.join("settings.json"));
}

#[test]
fn a_folder_without_config_says_what_it_looked_for() {
    let err = load_path(&fixture("."), &Options::new()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("holds no MCP config file") && msg.contains(".vscode/mcp.json"),
        "{msg}"
    );
}
