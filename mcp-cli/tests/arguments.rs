//! Arguments people can type: `mcp call TOOL key=value …` read by the
//! tool's input schema, `key:=JSON`, `--args @FILE` and `--args -`; tool
//! signatures in `mcp tools`; "did you mean" for tools, commands, flags and
//! a config's servers; bare tool names with `--server`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::{MCP, mcp, text};
use serde_json::{Value, json};
use std::io::Write as _;
use std::process::{Command, Stdio};

fn json_out(args: &[&str]) -> Value {
    let o = mcp(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn temp(name: &str, content: &str) -> String {
    let dir = std::env::temp_dir().join(format!("mcp-cli-args-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn key_value_pairs_are_read_by_the_schema() {
    // `add` takes numbers: `2.5` is a number, not the string "2.5".
    let v = json_out(&["call", "--json", "add", "a=1", "b=2.5"]);
    assert_eq!(v["structuredContent"]["sum"], json!(3.5));
    // `echo` takes a string: `42` stays text.
    let v = json_out(&["call", "--json", "echo", "text=42"]);
    assert_eq!(v["content"][0]["text"], "42");
    // Raw JSON.
    let v = json_out(&["call", "--json", "add", "a:=40", "b:=2"]);
    assert_eq!(v["structuredContent"]["sum"], json!(42));
    // On top of --args.
    let v = json_out(&[
        "call",
        "--json",
        "add",
        "--args",
        r#"{"a": 1, "b": 1}"#,
        "b=5",
    ]);
    assert_eq!(v["structuredContent"]["sum"], json!(6));
}

#[test]
fn wrong_values_and_unknown_arguments_are_usage_errors_that_say_what_fits() {
    let o = mcp(&["call", "add", "a=one", "b=2"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("number"), "{}", text(&o));
    let o = mcp(&["call", "echo", "txt=hi"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("did you mean `text`"), "{}", text(&o));
    let o = mcp(&["call", "echo", "justaword"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("KEY=VALUE"), "{}", text(&o));
}

#[test]
fn args_come_from_a_file_or_stdin() {
    let file = temp("args.json", r#"{"a": 2, "b": 3}"#);
    let v = json_out(&["call", "--json", "add", "--args", &format!("@{file}")]);
    assert_eq!(v["structuredContent"]["sum"], json!(5));
    let mut child = Command::new(MCP)
        .args(["call", "--json", "add", "--args", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"a": 7, "b": 8}"#)
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["structuredContent"]["sum"], json!(15));
    let o = mcp(&["call", "add", "--args", "@/nonexistent/args.json"]);
    assert_eq!(o.status.code(), Some(2));
    // `mcp prompt` reads its --args the same way.
    let file = temp("prompt.json", r#"{"name": "Ada"}"#);
    let out = mcp(&["prompt", "greeting", "--args", &format!("@{file}")]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("Ada"), "{}", text(&out));
}

#[test]
fn tools_show_their_signatures() {
    let o = mcp(&["tools"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("read_file(path: string, maxBytes?: integer)"),
        "{out}"
    );
    assert!(out.contains("add(a: number, b: number)"), "{out}");
}

#[test]
fn unknown_names_get_a_did_you_mean() {
    let o = mcp(&["call", "ecoh", "text=hi"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("did you mean `echo`"), "{}", text(&o));
    let o = mcp(&["tols"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("did you mean `tools`"), "{}", text(&o));
    let o = mcp(&["tools", "--jsno"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("did you mean `--json`"), "{}", text(&o));
}

#[test]
fn with_server_bare_tool_names_work_and_servers_get_a_did_you_mean() {
    let config = temp(
        "mcp.json",
        &json!({"mcpServers": {"kit": {"command": MCP, "args": ["demo-server"]}}}).to_string(),
    );
    let v = json_out(&[
        "call", "--json", "--config", &config, "--server", "kit", "echo", "text=hi",
    ]);
    assert_eq!(v["content"][0]["text"], "hi");
    let o = mcp(&[
        "call", "--config", &config, "--server", "kti", "echo", "text=hi",
    ]);
    assert!(!o.status.success());
    assert!(text(&o).contains("did you mean `kit`"), "{}", text(&o));
}
