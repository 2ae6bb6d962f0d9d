//! `mcp probe` against the testkit HTTP servers (`mcp demo-server --http`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::{MCP, mcp, text};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// An HTTP demo server on 127.0.0.1, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let mut child = Command::new(MCP)
            .args(["demo-server", "--http", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the demo server");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let line = lines.next().unwrap().unwrap();
        let url = line
            .strip_prefix("mcp-testkit: listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line}"))
            .to_owned();
        Server { child, url }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn probe_url_streamable_http_with_trace_redacts_headers() {
    let server = Server::start(&["--require-header", "Authorization: Bearer s3cret-token"]);
    let out = mcp(&[
        "probe",
        "--url",
        &server.url,
        "--header",
        "Authorization: Bearer s3cret-token",
        "--transport",
        "streamable-http",
        "--trace",
    ]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("PASS"), "{t}");
    assert!(t.contains("→ POST http://127.0.0.1:"), "{t}");
    assert!(t.contains("Mcp-Session-Id: testkit-session-"), "{t}");
    assert!(t.contains("MCP-Protocol-Version: 2025-11-25"), "{t}");
    assert!(t.contains("Authorization: <redacted>"), "{t}");
    assert!(t.contains("DELETE"), "{t}");
    assert!(!t.contains("s3cret-token"), "the token leaked: {t}");
}

#[test]
fn probe_url_falls_back_to_legacy_sse() {
    let server = Server::start(&["--legacy-sse"]);
    let out = mcp(&["probe", "--url", &server.url]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("tools/call"), "{t}");
    let out = mcp(&["probe", "--url", &server.url, "--transport", "sse"]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn a_401_gets_the_authorization_diagnosis() {
    let server = Server::start(&["--require-header", "Authorization: Bearer good"]);
    let out = mcp(&[
        "probe",
        "--url",
        &server.url,
        "--header",
        "Authorization: Bearer  expired",
    ]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("HTTP 401"), "{t}");
    assert!(t.contains("`Bearer <token>` with one space"), "{t}");
    assert!(!t.contains("expired\""), "{t}");
}

#[test]
fn http_servers_from_a_config_are_probed_with_their_headers() {
    let server = Server::start(&["--require-header", "X-Api-Key: k3y-from-env"]);
    let dir = std::env::temp_dir().join(format!("mcp-cli-http-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("settings.json");
    let body = serde_json::json!({
        "mcpServers": {
            "remote": {
                "type": "streamable-http",
                "url": server.url,
                "headers": {"X-Api-Key": "${MCP_CLI_TEST_KEY}"}
            }
        }
    });
    std::fs::write(&config, body.to_string()).unwrap();
    let out = Command::new(MCP)
        .args(["probe", "--config", config.to_str().unwrap(), "--trace"])
        .env("NO_COLOR", "1")
        .env("MCP_CLI_TEST_KEY", "k3y-from-env")
        .output()
        .unwrap();
    let t = text(&out);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("X-Api-Key: <redacted>"), "{t}");
    assert!(!t.contains("k3y-from-env"), "{t}");
}

#[test]
fn over_http_the_same_commands_work_against_every_era() {
    for (era, revision) in [
        ("legacy", "2025-11-25"),
        ("modern", "2026-07-28"),
        ("dual", "2026-07-28"),
    ] {
        let server = Server::start(&["--era", era]);
        let out = mcp(&["probe", "--url", &server.url]);
        let t = text(&out);
        assert!(out.status.success(), "{era}:\n{t}");
        assert!(t.contains(&format!("protocol {revision}")), "{era}:\n{t}");
        let out = mcp(&["tools", "--url", &server.url]);
        let t = text(&out);
        assert!(out.status.success() && t.contains("echo"), "{era}:\n{t}");
        let out = mcp(&[
            "call",
            "--url",
            &server.url,
            "add",
            "--args",
            r#"{"a": 1, "b": 2}"#,
        ]);
        let t = text(&out);
        assert!(out.status.success() && t.contains('3'), "{era}:\n{t}");
    }
}

#[test]
fn modern_http_trace_shows_the_standard_and_mirrored_headers() {
    let server = Server::start(&["--era", "modern"]);
    let out = mcp(&[
        "call",
        "--url",
        &server.url,
        "--trace",
        "route",
        "--args",
        r#"{"region": "eu-west-1", "shard": 7, "query": "SELECT 1"}"#,
    ]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    for needle in [
        "MCP-Protocol-Version: 2026-07-28",
        "Mcp-Method: server/discover",
        "Mcp-Method: tools/call",
        "Mcp-Name: route",
        "Mcp-Param-Region: eu-west-1",
        "Mcp-Param-Shard: 7",
    ] {
        assert!(t.contains(needle), "missing {needle:?}:\n{t}");
    }
    assert!(
        !t.contains("Mcp-Session-Id"),
        "no session in 2026-07-28:\n{t}"
    );
    assert!(!t.contains("DELETE"), "no DELETE in 2026-07-28:\n{t}");
}

#[test]
fn over_http_a_tool_with_an_invalid_header_annotation_is_left_out() {
    let server = Server::start(&["--era", "modern"]);
    let out = mcp(&["tools", "--url", &server.url]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("route"), "{t}");
    assert!(t.contains("`bad_header` left out"), "{t}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let listed: Vec<&str> = stdout
        .lines()
        // Each line starts with the tool's signature, `name(args)`.
        .filter_map(|l| l.split(['(', ' ']).next())
        .collect();
    assert!(listed.contains(&"route"), "{t}");
    assert!(!listed.contains(&"bad_header"), "{t}");
}

#[test]
fn a_401_from_a_server_without_oauth_metadata_suggests_a_header_too() {
    // An API-key server: its 401 names no OAuth metadata, so the probe
    // must not send the user only to `mcp login`.
    let server = Server::start(&["--require-header", "X-Api-Key: k3y"]);
    let store = std::env::temp_dir().join(format!("mcp-cli-nometa-{}", std::process::id()));
    let out = Command::new(MCP)
        .args(["probe", "--url", &server.url])
        .env("NO_COLOR", "1")
        .env("MCP_AUTH_DIR", &store)
        .output()
        .expect("run mcp");
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("publishes no OAuth metadata"), "{t}");
    assert!(t.contains("pass it in a header"), "{t}");
    assert!(t.contains("mcp login --url"), "{t}");
    let _ = std::fs::remove_dir_all(&store);
}
