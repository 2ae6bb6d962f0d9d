//! `mcp` writing into a pipe whose reader stops early
//! (`mcp tools --json | head -c 100`): the command ends quietly, with
//! SIGPIPE's exit status (141), never a panic or a message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::MCP;
use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `mcp ARGS…`, reads `keep` bytes of its stdout, closes the pipe, and
/// waits (bounded) for it: its exit status and stderr.
fn read_then_close(args: &[&str], keep: usize) -> (Option<i32>, String) {
    let mut child = Command::new(MCP)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mcp");
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = vec![0; keep];
    stdout.read_exact(&mut buf).unwrap();
    drop(stdout);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.code(), err);
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("mcp {args:?} did not end after its stdout closed");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// More output than a pipe holds (64 KiB on Linux), so the write after the
/// reader left fails for sure: every run must end with 141, quietly.
#[test]
fn a_reader_that_stops_early_ends_the_command_quietly() {
    let text = "x".repeat(100_000);
    let args = format!("{{\"text\": \"{text}\"}}");
    let cases: [&[&str]; 3] = [
        &["call", "echo", "--json", "--args", &args],
        &["call", "echo", "--full", "--args", &args],
        &[
            "tools",
            "--json",
            "--stdio",
            &format!("{MCP} demo-server --extra-tools 2000"),
        ],
    ];
    for case in cases {
        for _ in 0..5 {
            let (code, err) = read_then_close(case, 100);
            let what = &case[..2];
            assert!(!err.contains("panic"), "mcp {what:?} panicked: {err}");
            assert_eq!(code, Some(141), "mcp {what:?}: {err}");
            assert!(err.is_empty(), "mcp {what:?} said something: {err}");
        }
    }
}

/// A reader that closes after a few bytes of a short output: whether `mcp`
/// finished writing first or not, it never panics or complains, and ends
/// with success or 141 (20 runs of each: the race goes both ways).
#[test]
fn short_outputs_into_a_closing_pipe_never_panic() {
    for case in [&["tools", "--json"][..], &["probe", "--json"], &["--help"]] {
        for _ in 0..20 {
            let (code, err) = read_then_close(case, 10);
            assert!(!err.contains("panic"), "mcp {case:?} panicked: {err}");
            assert!(
                matches!(code, Some(0 | 141)),
                "mcp {case:?}: {code:?} {err}"
            );
        }
    }
}
