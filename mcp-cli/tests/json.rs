//! `--json` everywhere, failures included: every command takes it, and on
//! failure stdout holds exactly one JSON object with an `error` object
//! (stable `kind`, `message`, `command`, the `step` where there is one),
//! never text. Exit codes: 0, 1, 2 (README, "Exit codes"). Messages are in
//! the CLI's own words.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::{mcp, text};
use serde_json::Value;

/// Stdout as exactly one JSON value (fails on text, or on two values).
fn one_json(o: &std::process::Output) -> Value {
    let out = String::from_utf8_lossy(&o.stdout);
    let mut values = serde_json::Deserializer::from_str(&out).into_iter::<Value>();
    let first = values
        .next()
        .unwrap_or_else(|| panic!("no JSON on stdout: {}", text(o)))
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {out}"));
    assert!(values.next().is_none(), "more than one JSON value: {out}");
    first
}

/// The error object of a failed `--json` run, with its exit code checked.
fn error_of(args: &[&str], code: i32) -> Value {
    let o = mcp(args);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {}", text(&o));
    let v = one_json(&o);
    assert!(v["error"].is_object(), "{args:?}: {v}");
    assert!(v["error"]["message"].is_string(), "{v}");
    v["error"].clone()
}

#[test]
fn every_command_takes_json() {
    // Not `completions`, `man` and `demo-server`: they print a script, a
    // page, or speak MCP.
    let commands: [&[&str]; 17] = [
        &["probe"],
        &["tools"],
        &["call"],
        &["resources"],
        &["read"],
        &["prompts"],
        &["prompt"],
        &["complete"],
        &["listen"],
        &["config", "check"],
        &["config", "show"],
        &["add"],
        &["remove"],
        &["list"],
        &["login"],
        &["logout"],
        &["auth", "status"],
    ];
    for command in commands {
        let mut args = command.to_vec();
        args.push("--help");
        let o = mcp(&args);
        assert!(o.status.success(), "{command:?}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("--json"),
            "mcp {command:?} has no --json"
        );
    }
}

#[test]
fn usage_errors_are_json_with_exit_2() {
    let e = error_of(&["call", "--json", "echo", "--args", "{not json"], 2);
    assert_eq!(e["kind"], "usage");
    assert_eq!(e["command"], "call");
    // Refused by the argument parser itself.
    let e = error_of(&["tools", "--json", "--no-such-flag"], 2);
    assert_eq!(e["kind"], "usage");
    assert_eq!(e["command"], "tools");
    let e = error_of(
        &["config", "check", "--json", "x.json", "--format", "nope"],
        2,
    );
    assert_eq!(e["kind"], "usage");
}

#[test]
fn a_server_that_does_not_start_is_a_json_error_at_the_start_step() {
    let args = ["tools", "--json", "--stdio", "/nonexistent/mcp-server-xyz"];
    let e = error_of(&args, 1);
    assert_eq!(e["kind"], "start");
    assert_eq!(e["step"], "start");
    assert_eq!(e["command"], "tools");
    // As text, headed by the command that ran, on stderr.
    let o = mcp(&args[..1]
        .iter()
        .chain(&args[2..])
        .copied()
        .collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1));
    let all = text(&o);
    assert!(all.contains("mcp tools"), "{all}");
    assert!(!all.contains("mcp probe"), "{all}");
}

#[test]
fn request_failures_tool_errors_and_timeouts_have_their_kinds() {
    let e = error_of(&["call", "--json", "no_such_tool"], 1);
    assert_eq!(e["kind"], "not_found");
    assert!(e["message"].as_str().unwrap().contains("no tool"), "{e}");
    // A tool's own failure: the result, with the error object in it.
    let o = mcp(&["call", "--json", "fail", "--args", r#"{"message": "boom"}"#]);
    assert_eq!(o.status.code(), Some(1));
    let v = one_json(&o);
    assert_eq!(v["error"]["kind"], "tool");
    assert_eq!(v["isError"], true);
    // A timeout names the flag, not the library's setting.
    let args = [
        "call",
        "--json",
        "--timeout",
        "200",
        "slow",
        "--args",
        r#"{"ms": 5000}"#,
    ];
    let e = error_of(&args, 1);
    assert_eq!(e["kind"], "timeout");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("--timeout"), "{message}");
    assert!(!message.contains("SessionConfig"), "{message}");
    let o = mcp(&[
        "call",
        "--timeout",
        "200",
        "slow",
        "--args",
        r#"{"ms": 5000}"#,
    ]);
    let all = text(&o);
    assert!(
        all.contains("--timeout") && !all.contains("SessionConfig"),
        "{all}"
    );
}

#[test]
fn config_and_auth_commands_answer_in_json() {
    let dir = std::env::temp_dir().join(format!("mcp-cli-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("mcp.json");
    std::fs::write(&bad, r#"{"mcpServers": {"x": {"command": 5}}}"#).unwrap();
    let e = error_of(&["config", "check", "--json", bad.to_str().unwrap()], 1);
    assert_eq!(e["kind"], "config");
    assert_eq!(e["command"], "config check");
    let good = dir.join("good.json");
    std::fs::write(&good, r#"{"mcpServers": {"x": {"command": "srv"}}}"#).unwrap();
    let o = mcp(&["config", "check", "--json", good.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(one_json(&o)["problems"].is_array());
    let o = mcp(&["config", "show", "--json", good.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(one_json(&o)["lines"].is_array());
    let e = error_of(&["logout", "--json", "--url", "not a url"], 1);
    assert_eq!(e["kind"], "auth");
}

#[test]
fn successes_print_one_json_value_and_no_text() {
    for args in [
        &["tools", "--json"][..],
        &["probe", "--json"],
        &["resources", "--json"],
    ] {
        let o = mcp(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o));
        let v = one_json(&o);
        assert!(v.get("error").is_none(), "{v}");
    }
}
