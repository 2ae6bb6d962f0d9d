//! `mcp tools --search`: ranked tools over a config's servers and over one
//! server, `-k`, `--json`, and a hostile server's text through the filter.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::{MCP, mcp, text};
use serde_json::{Value, json};

fn config() -> String {
    let dir = std::env::temp_dir().join(format!("mcp-cli-search-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp.json");
    let servers = json!({"mcpServers": {
        "kit": {"command": MCP, "args": ["demo-server"]},
        "other": {"command": MCP, "args": ["demo-server"]}
    }});
    std::fs::write(&path, servers.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn ranks_every_server_s_tools_best_first() {
    let config = config();
    let o = mcp(&[
        "tools",
        "--config",
        &config,
        "--search",
        "add two numbers",
        "-k",
        "3",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    // The same tool on both servers first (catalog order breaks the tie).
    assert!(
        lines[0].starts_with("kit__add(a: number, b: number)"),
        "{stdout}"
    );
    assert!(
        lines[1].starts_with("other__add(a: number, b: number)"),
        "{stdout}"
    );
    assert!(lines[0].contains("[score "), "{stdout}");

    // JSON: the tool as listed, with its server, score and whether the
    // query named it.
    let o = mcp(&[
        "tools",
        "--json",
        "--config",
        &config,
        "--search",
        "read_file",
        "--limit",
        "4",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let hits = v.as_array().unwrap();
    // No other tool says "read" or "file".
    assert_eq!(hits.len(), 2, "{v}");
    for h in hits {
        assert_eq!(h["serverToolName"], "read_file");
        assert_eq!(h["exactName"], true);
        assert!(h["inputSchema"]["properties"]["path"].is_object());
        assert!(h["score"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(
        (&hits[0]["name"], &hits[0]["server"]),
        (&json!("kit__read_file"), &json!("kit"))
    );
    assert_eq!(hits[1]["name"], "other__read_file");
    let o = mcp(&[
        "tools", "--json", "--config", &config, "--search", "text", "-k", "1",
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["exactName"], false, "{v}");

    // Nothing matches: said on stderr, nothing listed.
    let o = mcp(&["tools", "--config", &config, "--search", "zebra quartz"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(o.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("matches \"zebra quartz\": try other words"),
        "{}",
        text(&o)
    );
}

#[test]
fn one_server_bounds_and_usage() {
    let server = format!("{MCP} demo-server");
    let o = mcp(&["tools", "--stdio", &server, "--search", "echo", "-k", "1"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("echo(text: string)"),
        "{}",
        text(&o)
    );
    // -k wants --search; a query over the budget and -k 0 are usage errors.
    let o = mcp(&["tools", "--stdio", &server, "-k", "3"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let long = "word ".repeat(300);
    let o = mcp(&["tools", "--stdio", &server, "--search", &long]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("bytes, more than the 1024 allowed"),
        "{}",
        text(&o)
    );
    let o = mcp(&["tools", "--stdio", &server, "--search", "echo", "-k", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn a_hostile_server_s_text_is_shown_escaped() {
    let server = format!("{MCP} demo-server --misbehave escape-text");
    let o = mcp(&[
        "tools",
        "--stdio",
        &server,
        "--search",
        "esc start",
        "--full",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("esc\\x1b[31m_tool\\x9b0m"), "{stdout}");
    assert!(stdout.contains("esc-start\\x1b[2J"), "{stdout}");
    let bytes = [&o.stdout[..], &o.stderr[..]].concat();
    let control = bytes.iter().enumerate().any(|(i, &b)| {
        (b < 0x20 && b != b'\n' && b != b'\t')
            || b == 0x7f
            || (b == 0xc2 && bytes.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)))
    });
    assert!(!control, "{}", text(&o));
}
