//! The catalog cache and the tool pins through the `mcp` binary: `tools
//! --config` answering from the cache and `--refresh`, changed tools
//! marked, `--pinning block`, `mcp pins`, and several `mcp` processes
//! sharing one cache folder.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{MCP, text};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mcp-cli-cache-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mcp_with(cache: &Path, args: &[&str]) -> Output {
    Command::new(MCP)
        .args(args)
        .env("NO_COLOR", "1")
        .env("MCP_CACHE_DIR", cache)
        .output()
        .expect("run mcp")
}

fn write_config(dir: &Path, extra_args: &[&str]) -> String {
    let mut args = vec!["\"demo-server\"".to_owned()];
    args.extend(extra_args.iter().map(|a| format!("\"{a}\"")));
    let file = dir.join("mcp.json");
    std::fs::write(
        &file,
        format!(
            r#"{{"mcpServers": {{"kit": {{"command": "{MCP}", "args": [{}]}}}}}}"#,
            args.join(", ")
        ),
    )
    .unwrap();
    file.to_str().unwrap().to_owned()
}

#[test]
fn tools_answer_from_the_fresh_cache_and_refresh_asks_the_servers() {
    let dir = temp_dir("fresh");
    let cache = dir.join("cache");
    let file = write_config(&dir, &[]);
    let first = mcp_with(&cache, &["tools", "--config", &file]);
    let t = text(&first);
    assert!(first.status.success(), "{t}");
    assert!(
        t.contains("kit__echo") && t.contains("kit: protocol"),
        "{t}"
    );
    assert!(!t.contains("from the catalog cache"), "{t}");

    let second = mcp_with(&cache, &["tools", "--config", &file]);
    let t2 = text(&second);
    assert!(second.status.success(), "{t2}");
    assert!(t2.contains("kit__echo"), "{t2}");
    assert!(
        t2.contains("from the catalog cache, ") && t2.contains(" s old"),
        "{t2}"
    );
    assert!(!t2.contains("kit: protocol"), "nothing started: {t2}");

    let refreshed = mcp_with(&cache, &["tools", "--config", &file, "--refresh"]);
    let t3 = text(&refreshed);
    assert!(refreshed.status.success(), "{t3}");
    assert!(
        t3.contains("kit: protocol") && !t3.contains("from the catalog cache"),
        "{t3}"
    );

    // JSON from the cache is the same listing.
    let json = mcp_with(&cache, &["tools", "--config", &file, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(
        v.as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "kit__echo"),
        "{v}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn changed_tools_are_marked_blocked_on_demand_and_approved() {
    let dir = temp_dir("pins");
    let cache = dir.join("cache");
    let file = write_config(&dir, &[]);
    assert!(
        mcp_with(&cache, &["tools", "--config", &file])
            .status
            .success()
    );

    // The server's tools change between runs.
    let file = write_config(&dir, &["--revise-tools"]);
    let warned = mcp_with(&cache, &["tools", "--config", &file]);
    let t = text(&warned);
    assert!(warned.status.success(), "{t}");
    assert!(t.contains("tool `echo` of `kit` changed"), "{t}");
    assert!(t.contains("description: \"Returns the given text unchanged.\" → \"Returns the given text unchanged (revised).\""), "{t}");
    assert!(
        t.contains("tool `add` of `kit` changed") && t.contains("inputSchema.properties.c: added"),
        "{t}"
    );
    assert!(t.contains("tool `added_tool` of `kit` added"), "{t}");
    assert!(t.contains("tool `fail` of `kit` removed"), "{t}");
    let stdout = String::from_utf8_lossy(&warned.stdout);
    assert!(
        stdout.contains("kit__echo"),
        "warn: still offered\n{stdout}"
    );

    let blocked = mcp_with(
        &cache,
        &[
            "tools",
            "--config",
            &file,
            "--refresh",
            "--pinning",
            "block",
        ],
    );
    let stdout = String::from_utf8_lossy(&blocked.stdout).into_owned();
    assert!(!stdout.contains("kit__echo"), "block: withheld\n{stdout}");
    assert!(stdout.contains("kit__read_file"), "{stdout}");
    assert!(
        text(&blocked).contains("changed, blocked until approved"),
        "{}",
        text(&blocked)
    );
    // The cached answer applies the policy too.
    let cached = mcp_with(&cache, &["tools", "--config", &file, "--pinning", "block"]);
    assert!(
        text(&cached).contains("from the catalog cache"),
        "{}",
        text(&cached)
    );
    assert!(!String::from_utf8_lossy(&cached.stdout).contains("kit__echo"));

    let list = mcp_with(&cache, &["pins", "list"]);
    let t = text(&list);
    assert!(list.status.success(), "{t}");
    assert!(
        t.contains("echo") && t.contains("changed, not approved"),
        "{t}"
    );

    let approve = mcp_with(&cache, &["pins", "approve", "kit__echo"]);
    assert!(approve.status.success(), "{}", text(&approve));
    let again = mcp_with(&cache, &["pins", "approve", "kit__echo"]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    let after = mcp_with(
        &cache,
        &[
            "tools",
            "--config",
            &file,
            "--refresh",
            "--pinning",
            "block",
        ],
    );
    let stdout = String::from_utf8_lossy(&after.stdout).into_owned();
    assert!(stdout.contains("kit__echo"), "approved\n{stdout}");
    assert!(
        !stdout.lines().any(|l| l.starts_with("kit__add(")),
        "not approved\n{stdout}"
    );

    let bad = mcp_with(
        &cache,
        &["tools", "--config", &file, "--pinning", "sometimes"],
    );
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    let reset = mcp_with(&cache, &["pins", "reset"]);
    assert!(
        text(&reset).contains("forgot the pins of 1 server"),
        "{}",
        text(&reset)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn several_processes_share_one_cache_folder() {
    let dir = temp_dir("shared");
    let cache = dir.join("cache");
    let file = write_config(&dir, &[]);
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(MCP)
                .args(["tools", "--config", &file, "--refresh"])
                .env("NO_COLOR", "1")
                .env("MCP_CACHE_DIR", &cache)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("kit__echo"));
    }
    let key: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".entry"))
        .collect();
    assert_eq!(key.len(), 1, "one server, one file: {key:?}");
    let cached = mcp_with(&cache, &["tools", "--config", &file]);
    assert!(
        text(&cached).contains("from the catalog cache"),
        "{}",
        text(&cached)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
