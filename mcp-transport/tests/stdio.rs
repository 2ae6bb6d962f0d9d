//! The stdio transport against real child processes.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stack_jsonrpc::{Message, Notification, Request, to_raw};
use mcp_stack_transport::stdio::{ENV_ALLOWLIST, StdioConfig, StdioTransport};
use mcp_stack_transport::{
    InvalidFrame, MessageError, Received, ServerProcess, Transport, TransportError,
};

/// A bound for anything that should finish well before it; hitting it is a failure.
const BOUND: Duration = Duration::from_secs(10);

const SHORT: Duration = Duration::from_millis(100);

fn sh(script: &str) -> StdioConfig {
    StdioConfig::new("sh")
        .args(["-c", script])
        .server_name("test")
        .stdin_close_timeout(SHORT)
        .term_timeout(SHORT)
}

/// A line that is a JSON-RPC notification with this method (for `echo` in scripts).
fn note_line(method: &str) -> String {
    format!(r#"echo '{{"jsonrpc":"2.0","method":"{method}"}}'"#)
}

async fn recv(t: &StdioTransport) -> Result<Received, TransportError> {
    tokio::time::timeout(BOUND, t.recv())
        .await
        .expect("recv took too long")
}

async fn recv_message(t: &StdioTransport) -> Message {
    match recv(t).await.unwrap() {
        Received::Message(m) => m,
        other => panic!("expected a message, got {other:?}"),
    }
}

async fn close(t: &StdioTransport) {
    tokio::time::timeout(BOUND, t.close())
        .await
        .expect("close took too long");
}

fn request(id: i64, payload: &str) -> Message {
    let params = to_raw(&serde_json::json!({ "payload": payload })).unwrap();
    Message::from(Request::new(id, "echo", Some(params)))
}

/// Collects stderr lines handed to the listener.
fn collector() -> (
    Arc<Mutex<Vec<String>>>,
    impl Fn(&str) + Send + Sync + 'static,
) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&lines);
    (lines, move |line: &str| {
        sink.lock().unwrap().push(line.to_owned())
    })
}

#[tokio::test]
async fn echo_round_trip_through_cat() {
    let t = StdioTransport::spawn(StdioConfig::new("cat").stdin_close_timeout(SHORT)).unwrap();
    assert!(t.pid() > 1);
    assert_eq!(t.server_name(), "cat");
    for id in 0..3 {
        t.send(&request(id, "hello")).await.unwrap();
        let Message::Request(r) = recv_message(&t).await else {
            panic!("not a request")
        };
        assert_eq!(r.id, id.into());
        assert_eq!(r.params.unwrap().get(), r#"{"payload":"hello"}"#);
    }
    close(&t).await;
    // `cat` ends on stdin close.
    assert_eq!(t.exit_info().unwrap().code, Some(0));
    let err = recv(&t).await.unwrap_err();
    assert!(err.is_closed(), "{err}");
    assert!(t.send(&request(9, "late")).await.unwrap_err().is_closed());
}

#[tokio::test]
async fn bad_lines_are_data_and_the_stream_goes_on() {
    let script = format!(
        "echo 'server starting...'; printf '\\377\\376\\n'; {}; printf '{{\"jsonrpc\"'",
        note_line("after")
    );
    let t = StdioTransport::spawn(sh(&script)).unwrap();
    let Received::Invalid(InvalidFrame::Malformed(m)) = recv(&t).await.unwrap() else {
        panic!("expected a malformed line")
    };
    assert_eq!(m.excerpt, "server starting...");
    let Received::Invalid(InvalidFrame::Malformed(m)) = recv(&t).await.unwrap() else {
        panic!("expected a malformed line")
    };
    assert_eq!(m.reason, MessageError::NotUtf8);
    assert_eq!(recv_message(&t).await.method(), Some("after"));
    let Received::Invalid(InvalidFrame::Truncated(tail)) = recv(&t).await.unwrap() else {
        panic!("expected a truncated tail")
    };
    assert_eq!(tail.len, 10);
    let err = recv(&t).await.unwrap_err();
    assert!(err.is_closed());
    assert_eq!(err.exit_info().unwrap().code, Some(0));
}

#[tokio::test]
async fn oversized_lines_are_skipped() {
    let script = format!("printf '%0300d\\n' 0; {}", note_line("after"));
    let t = StdioTransport::spawn(sh(&script).max_frame_length(100)).unwrap();
    let Received::Invalid(InvalidFrame::Oversized(o)) = recv(&t).await.unwrap() else {
        panic!("expected an oversized line")
    };
    assert_eq!(o.limit, 100);
    assert_eq!(recv_message(&t).await.method(), Some("after"));
    // Sending is bounded by the same limit.
    let err = t.send(&request(1, &"x".repeat(200))).await.unwrap_err();
    assert!(matches!(err, TransportError::Encode(_)), "{err}");
}

/// A server that waits for one line, then writes a batch of two messages
/// and a number.
const BATCH_AFTER_A_LINE: &str = r#"read line; echo '[{"jsonrpc":"2.0","method":"a"}, 5, {"jsonrpc":"2.0","id":1,"result":{}}]'"#;

/// Sends a notification whose context names `revision`.
async fn hello(t: &StdioTransport, revision: mcp_stack_protocol::ProtocolVersion) {
    let context = mcp_stack_transport::SendContext::new().revision(revision);
    t.send_with(&Message::from(Notification::new("hello", None)), &context)
        .await
        .unwrap();
}

#[tokio::test]
async fn batches_are_flattened_where_the_revision_has_them() {
    let t = StdioTransport::spawn(sh(BATCH_AFTER_A_LINE)).unwrap();
    hello(&t, mcp_stack_protocol::ProtocolVersion::V2025_03_26).await;
    assert_eq!(recv_message(&t).await.method(), Some("a"));
    assert!(matches!(recv_message(&t).await, Message::Response(_)));
    // The element that is no message: one report for the batch.
    let Received::Invalid(InvalidFrame::BatchElements(bad)) = recv(&t).await.unwrap() else {
        panic!("expected a report of the bad elements")
    };
    assert_eq!((bad.bad, bad.of), (1, 3));
    assert_eq!(bad.first, MessageError::NotAnObject("number"));
    assert!(recv(&t).await.unwrap_err().is_closed());
}

#[tokio::test]
async fn a_batch_is_one_invalid_frame_where_the_revision_has_none() {
    for revision in [None, Some(mcp_stack_protocol::ProtocolVersion::V2025_06_18)] {
        let t = StdioTransport::spawn(sh(BATCH_AFTER_A_LINE)).unwrap();
        match revision {
            Some(revision) => hello(&t, revision).await,
            None => t
                .send(&Message::from(Notification::new("hello", None)))
                .await
                .unwrap(),
        }
        let Received::Invalid(InvalidFrame::Malformed(m)) = recv(&t).await.unwrap() else {
            panic!("expected the batch refused whole")
        };
        assert_eq!(m.reason, MessageError::BatchRefused { elements: 3 });
        let text = InvalidFrame::Malformed(m).to_string();
        assert!(
            text.contains("only in protocol revision 2025-03-26"),
            "{text}"
        );
        assert!(recv(&t).await.unwrap_err().is_closed());
    }
}

#[tokio::test]
async fn the_batch_bound_is_configurable() {
    let config = sh(BATCH_AFTER_A_LINE).max_batch_elements(2);
    let t = StdioTransport::spawn(config).unwrap();
    hello(&t, mcp_stack_protocol::ProtocolVersion::V2025_03_26).await;
    let Received::Invalid(InvalidFrame::Malformed(m)) = recv(&t).await.unwrap() else {
        panic!("expected the batch refused whole")
    };
    assert_eq!(
        m.reason,
        MessageError::BatchTooLong {
            elements: 3,
            limit: 2
        }
    );
}

#[tokio::test]
async fn environment_is_the_allowlist_plus_config() {
    // A variable of ours outside the allowlist (cargo sets several for tests).
    let outside: Vec<String> = std::env::vars()
        .map(|(k, _)| k)
        .filter(|k| !ENV_ALLOWLIST.contains(&k.as_str()))
        .collect();
    assert!(
        !outside.is_empty(),
        "no variable outside the allowlist to test with"
    );

    let (lines, listener) = collector();
    let t = StdioTransport::spawn(
        sh("env >&2")
            .env("MCP_TEST_FROM_CONFIG", "configured value")
            .stderr_listener(listener),
    )
    .unwrap();
    assert!(recv(&t).await.unwrap_err().is_closed());
    close(&t).await;

    let lines = lines.lock().unwrap().clone();
    assert!(lines.contains(&"MCP_TEST_FROM_CONFIG=configured value".to_owned()));
    let names: BTreeSet<&str> = lines
        .iter()
        .filter_map(|l| l.split_once('='))
        .map(|p| p.0)
        .collect();
    // The shell adds a few of its own.
    let shell_own = ["PWD", "OLDPWD", "SHLVL", "_"];
    for name in &names {
        assert!(
            ENV_ALLOWLIST.contains(name)
                || shell_own.contains(name)
                || *name == "MCP_TEST_FROM_CONFIG",
            "{name} leaked into the child's environment"
        );
    }
    for name in outside.iter().filter(|n| !shell_own.contains(&n.as_str())) {
        assert!(!names.contains(name.as_str()), "{name} leaked");
    }
    if std::env::var_os("PATH").is_some() {
        assert!(names.contains("PATH"));
    }
}

#[tokio::test]
async fn working_directory() {
    let dir = std::env::temp_dir().canonicalize().unwrap();
    let t = StdioTransport::spawn(sh("pwd -P >&2").cwd(&dir)).unwrap();
    let err = recv(&t).await.unwrap_err();
    assert_eq!(err.stderr_tail(), [dir.display().to_string()]);

    let err = StdioTransport::spawn(sh("true").cwd("/definitely/not/here")).unwrap_err();
    assert!(err.is_spawn());
    assert!(err.to_string().contains("/definitely/not/here"), "{err}");
}

#[tokio::test]
async fn stderr_listener_detach_and_tail() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let script = "echo one >&2; read x; echo two >&2; read y; echo three >&2";
    let t = StdioTransport::spawn(sh(script).stderr_listener(move |line| {
        let _ = tx.send(line.to_owned());
    }))
    .unwrap();
    assert_eq!(rx.recv().await.unwrap(), "one");
    t.detach_stderr();
    let ping = Message::from(Notification::new("go", None));
    t.send(&ping).await.unwrap();
    t.send(&ping).await.unwrap();
    let err = recv(&t).await.unwrap_err();
    assert_eq!(err.stderr_tail(), ["one", "two", "three"]);
    assert_eq!(t.stderr_tail(), ["one", "two", "three"]);
    // Detaching dropped the listener: nothing more came, the channel is closed.
    assert_eq!(rx.recv().await, None);
}

#[tokio::test]
async fn stderr_lines_are_bounded_and_the_tail_is_short() {
    let (lines, listener) = collector();
    let script = "printf '%0300d\\r\\n' 0 >&2; for i in 1 2 3 4 5; do echo line$i >&2; done; printf 'no newline' >&2";
    let t = StdioTransport::spawn(
        sh(script)
            .stderr_listener(listener)
            .stderr_max_line_length(100)
            .stderr_tail_lines(3),
    )
    .unwrap();
    let err = recv(&t).await.unwrap_err();
    assert_eq!(err.stderr_tail(), ["line4", "line5", "no newline"]);
    let lines = lines.lock().unwrap().clone();
    assert_eq!(lines.len(), 7);
    assert_eq!(lines[0], format!("{}…", "0".repeat(100)));
    assert_eq!(lines[1], "line1");
}

#[tokio::test]
async fn exit_status_and_stderr_on_early_exit() {
    let t = StdioTransport::spawn(sh("echo missing FOO >&2; exit 3")).unwrap();
    let err = recv(&t).await.unwrap_err();
    let TransportError::Closed {
        exit, stderr_tail, ..
    } = &err
    else {
        panic!("expected Closed, got {err}")
    };
    assert_eq!(exit.as_ref().unwrap().code, Some(3));
    assert_eq!(stderr_tail, &["missing FOO"]);
    let text = err.to_string();
    assert!(
        text.contains("exit code 3") && text.contains("missing FOO"),
        "{text}"
    );
    assert_eq!(t.exit_info().unwrap().code, Some(3));
    // Later receives and sends say the same.
    assert_eq!(
        recv(&t).await.unwrap_err().exit_info().unwrap().code,
        Some(3)
    );
    let err = t.send(&request(1, "x")).await.unwrap_err();
    assert!(err.is_closed(), "{err}");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn exit_is_noticed_while_a_grandchild_holds_stdout() {
    let t = StdioTransport::spawn(sh("sleep 100 & exit 4")).unwrap();
    let err = recv(&t).await.unwrap_err();
    assert_eq!(err.exit_info().unwrap().code, Some(4));
    let pgid = t.pid();
    close(&t).await;
    assert!(group_members(pgid).is_empty());
}

#[tokio::test]
async fn close_terminates_a_server_that_ignores_stdin_close() {
    let script = format!("{}; exec sleep 100", note_line("ready"));
    let t = StdioTransport::spawn(sh(&script)).unwrap();
    assert_eq!(recv_message(&t).await.method(), Some("ready"));
    close(&t).await;
    assert_eq!(t.exit_info().unwrap().signal, Some(libc::SIGTERM));
    assert_reaped(t.pid());
}

#[tokio::test]
async fn close_kills_a_server_that_ignores_sigterm() {
    let script = format!("trap '' TERM; {}; exec sleep 100", note_line("ready"));
    let t = StdioTransport::spawn(sh(&script)).unwrap();
    assert_eq!(recv_message(&t).await.method(), Some("ready"));
    close(&t).await;
    assert_eq!(t.exit_info().unwrap().signal, Some(libc::SIGKILL));
    assert_reaped(t.pid());
    let err = recv(&t).await.unwrap_err();
    assert_eq!(err.exit_info().unwrap().signal, Some(libc::SIGKILL));
}

#[tokio::test]
async fn close_is_idempotent_and_concurrent() {
    let t = Arc::new(StdioTransport::spawn(StdioConfig::new("cat")).unwrap());
    let pending = {
        let t = Arc::clone(&t);
        tokio::spawn(async move { t.recv().await })
    };
    tokio::task::yield_now().await;
    tokio::join!(close(&t), close(&t));
    close(&t).await;
    let err = tokio::time::timeout(BOUND, pending)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(err.is_closed(), "{err}");
    assert_eq!(t.exit_info().unwrap().code, Some(0));
    assert_reaped(t.pid());
}

#[tokio::test]
async fn recv_is_cancel_safe() {
    let t = StdioTransport::spawn(StdioConfig::new("cat").stdin_close_timeout(SHORT)).unwrap();
    for id in 0..5 {
        // Nothing to read yet: the receive is dropped while waiting.
        assert!(
            tokio::time::timeout(Duration::from_millis(5), t.recv())
                .await
                .is_err()
        );
        t.send(&request(id, "x")).await.unwrap();
        assert_eq!(recv_message(&t).await.id(), Some(&id.into()));
    }
    close(&t).await;
}

#[tokio::test]
async fn a_cancelled_send_is_finished_by_the_next() {
    let t = StdioTransport::spawn(StdioConfig::new("cat").stdin_close_timeout(SHORT)).unwrap();
    // Far more than the pipes and `cat` hold while nobody reads stdout: the
    // write blocks half-way and is cancelled there.
    let big = "x".repeat(1 << 20);
    let first_request = request(1, &big);
    let cancelled = tokio::time::timeout(Duration::from_millis(50), t.send(&first_request));
    assert!(cancelled.await.is_err(), "the send should have blocked");
    let receive_two = async {
        let first = recv_message(&t).await;
        let second = recv_message(&t).await;
        (first, second)
    };
    let second_request = request(2, "small");
    let (sent, (first, second)) = tokio::join!(t.send(&second_request), receive_two);
    sent.unwrap();
    let (Message::Request(first), Message::Request(second)) = (first, second) else {
        panic!("expected requests")
    };
    assert_eq!(first.id, 1.into());
    assert_eq!(
        first.params.unwrap().get().len(),
        big.len() + r#"{"payload":""}"#.len()
    );
    assert_eq!(second.id, 2.into());
    close(&t).await;
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn close_ends_grandchildren() {
    // The shell waits for its children and ignores stdin: SIGTERM ends all three.
    let script = format!("sleep 100 & sleep 100 & {}; wait", note_line("ready"));
    let t = StdioTransport::spawn(sh(&script)).unwrap();
    assert_eq!(recv_message(&t).await.method(), Some("ready"));
    let pgid = t.pid();
    assert_eq!(group_members(pgid).len(), 3);
    close(&t).await;
    assert!(group_members(pgid).is_empty(), "{:?}", group_members(pgid));
    assert_reaped(pgid);
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn close_ends_grandchildren_of_a_leader_that_exits_on_stdin_close() {
    // Like an `npx` wrapper whose server outlives it.
    let script = format!(
        "trap '' TERM; sleep 100 & sleep 100 & {}; read x; exit 0",
        note_line("ready")
    );
    let t = StdioTransport::spawn(sh(&script)).unwrap();
    assert_eq!(recv_message(&t).await.method(), Some("ready"));
    let pgid = t.pid();
    assert_eq!(group_members(pgid).len(), 3);
    close(&t).await;
    // The leader left on stdin close; its children ignored SIGTERM too.
    assert_eq!(t.exit_info().unwrap().code, Some(0));
    assert!(group_members(pgid).is_empty(), "{:?}", group_members(pgid));
    assert_reaped(pgid);
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn drop_kills_the_group_and_the_child_is_reaped() {
    let script = format!("sleep 100 & sleep 100 & {}; wait", note_line("ready"));
    let t = StdioTransport::spawn(sh(&script)).unwrap();
    assert_eq!(recv_message(&t).await.method(), Some("ready"));
    let pgid = t.pid();
    assert_eq!(group_members(pgid).len(), 3);
    drop(t);
    // Killing and reaping happen in the background: wait for them, within a bound.
    let deadline = tokio::time::Instant::now() + BOUND;
    while (!group_members(pgid).is_empty() || !is_reaped(pgid))
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(group_members(pgid).is_empty());
    assert_reaped(pgid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sends_arrive_whole() {
    const TASKS: i64 = 16;
    const EACH: i64 = 20;
    let t = Arc::new(StdioTransport::spawn(StdioConfig::new("cat")).unwrap());
    // Larger than a pipe's atomic write size, so interleaving would show.
    let payload = |id: i64| format!("{id}:{}", "p".repeat(10_000));
    let reader = {
        let t = Arc::clone(&t);
        tokio::spawn(async move {
            let mut seen = BTreeSet::new();
            while seen.len() < (TASKS * EACH) as usize {
                let Received::Message(Message::Request(r)) = recv(&t).await.unwrap() else {
                    panic!("not a request")
                };
                let id = r.id.as_number().unwrap() as i64;
                let expected = serde_json::json!({ "payload": payload(id) }).to_string();
                assert_eq!(r.params.unwrap().get(), expected);
                assert!(seen.insert(id), "duplicate {id}");
            }
        })
    };
    let senders: Vec<_> = (0..TASKS)
        .map(|task| {
            let t = Arc::clone(&t);
            tokio::spawn(async move {
                for i in 0..EACH {
                    let id = task * EACH + i;
                    t.send(&request(id, &payload(id))).await.unwrap();
                }
            })
        })
        .collect();
    for s in senders {
        s.await.unwrap();
    }
    tokio::time::timeout(BOUND, reader).await.unwrap().unwrap();
    close(&t).await;
}

#[tokio::test]
async fn missing_program_is_a_spawn_error() {
    let err = StdioTransport::spawn(StdioConfig::new("mcp-no-such-program-here")).unwrap_err();
    assert!(err.is_spawn());
    let text = err.to_string();
    assert!(
        text.contains("mcp-no-such-program-here") && text.contains("PATH"),
        "{text}"
    );
}

#[tokio::test]
async fn debug_output_hides_env_values() {
    let config = StdioConfig::new("cat").env("API_TOKEN", "s3cr3t-value");
    let text = format!("{config:?}");
    assert!(
        text.contains("API_TOKEN") && !text.contains("s3cr3t-value"),
        "{text}"
    );
    let t = StdioTransport::spawn(config.stdin_close_timeout(SHORT)).unwrap();
    let text = format!("{t:?}");
    assert!(
        text.contains("StdioTransport") && !text.contains("s3cr3t-value"),
        "{text}"
    );
    close(&t).await;
}

/// Live (not zombie) processes in the process group, from /proc.
#[cfg(target_os = "linux")]
fn group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Some((state, _ppid, pgrp)) = proc_stat(pid) else {
            continue;
        };
        if pgrp == pgid && state != 'Z' {
            members.push(pid);
        }
    }
    members
}

/// State, parent and process group of a process.
fn proc_stat(pid: u32) -> Option<(char, u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

/// Our child `pid` is not left as a zombie (it was waited for).
fn is_reaped(pid: u32) -> bool {
    match proc_stat(pid) {
        None => true,
        // The pid may have been reused by a process that is not our child.
        Some((state, ppid, _)) => !(state == 'Z' && ppid == std::process::id()),
    }
}

fn assert_reaped(pid: u32) {
    assert!(is_reaped(pid), "process {pid} is a zombie");
}
