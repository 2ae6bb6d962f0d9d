//! The `mcp-testkit` binary as a child process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-testkit");

async fn run(args: &[&str]) -> std::process::Output {
    let child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the server did not exit")
        .unwrap()
}

#[tokio::test]
async fn exit_immediately_exits_with_code_1_and_says_why() {
    let out = run(&["--misbehave", "exit-immediately"]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("error: required environment variable API_TOKEN is not set"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[tokio::test]
async fn help_list_and_bad_args() {
    let out = run(&["--list-misbehaviours"]).await;
    assert!(out.status.success());
    let list = String::from_utf8(out.stdout).unwrap();
    for m in mcp_stack_testkit::Misbehaviour::ALL {
        assert!(list.contains(m.name()), "{list}");
    }
    let out = run(&["--help"]).await;
    assert!(out.status.success());
    assert!(
        String::from_utf8(out.stdout)
            .unwrap()
            .contains("--misbehave")
    );
    let out = run(&["--misbehave", "explode"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("--list-misbehaviours")
    );
}

fn line(value: Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(&value).unwrap();
    bytes.push(b'\n');
    bytes
}

#[tokio::test]
async fn a_session_over_stdio_then_a_crash() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("mcp-testkit-binary-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("instances.log");
    let _ = std::fs::remove_file(&log);
    let mut child = Command::new(BIN)
        .args(["--misbehave", "crash-mid-call", "--instance-log"])
        .arg(&log)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}});
    stdin.write_all(&line(init)).await.unwrap();
    let response: Value =
        serde_json::from_str(&stdout.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(response["result"]["protocolVersion"], "2025-06-18");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}}});
    stdin.write_all(&line(call)).await.unwrap();
    assert_eq!(stdout.next_line().await.unwrap(), None);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(101));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("serving MCP on stdio"), "{stderr}");
    assert!(stderr.contains("panicked"), "{stderr}");
    let pid = out_pid(&std::fs::read_to_string(&log).unwrap());
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!("start {pid}\ninitialize {pid}\n")
    );
    std::fs::remove_dir_all(dir).unwrap();
}

fn out_pid(log: &str) -> String {
    log.lines()
        .next()
        .and_then(|l| l.strip_prefix("start "))
        .unwrap()
        .to_owned()
}

#[cfg(unix)]
#[tokio::test]
async fn ignore_stdin_close_survives_eof_and_sigterm() {
    let mut child = Command::new(BIN)
        .args(["--misbehave", "ignore-stdin-close"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    // The startup line comes after the SIGTERM handler is in place.
    let first = stderr.next_line().await.unwrap().unwrap();
    assert!(first.contains("serving MCP on stdio"), "{first}");
    drop(child.stdin.take());
    let next = stderr.next_line().await.unwrap().unwrap();
    assert!(next.contains("ignoring it"), "{next}");
    let pid = child.id().unwrap().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
    // Still running a while after SIGTERM; only SIGKILL ends it.
    let waited = tokio::time::timeout(Duration::from_millis(300), child.wait()).await;
    assert!(waited.is_err(), "the server exited on SIGTERM");
    child.kill().await.unwrap();
}
