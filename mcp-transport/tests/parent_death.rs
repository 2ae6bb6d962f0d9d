//! A stdio server does not outlive this process, killed outright (Linux:
//! `PR_SET_PDEATHSIG`), and it does outlive the thread that started it.
//!
//! The process-level tests run this test binary again as a helper (the
//! ignored test `helper_starts_a_server_and_waits`) that starts a server
//! and waits; the test then kills the helper with `SIGKILL` and looks for
//! the server in `/proc`, by a marker in its environment.
#![cfg(any(target_os = "linux", target_os = "android"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mcp_stack_jsonrpc::{Message, Request};
use mcp_stack_transport::stdio::{StdioConfig, StdioTransport};
use mcp_stack_transport::{Received, ServerProcess, Transport};

/// A bound for anything that should finish well before it; hitting it is a failure.
const BOUND: Duration = Duration::from_secs(10);

/// The variable that marks a test's servers.
const HELPER_MARKER: &str = "MCP_PDEATH_TEST_MARKER";
/// The marker the helper gives its server (the helper itself is not marked).
const HELPER_FOR: &str = "MCP_PDEATH_TEST_FOR";
const HELPER_SCRIPT: &str = "MCP_PDEATH_TEST_SCRIPT";
const HELPER_OPTION: &str = "MCP_PDEATH_TEST_OPTION";

/// Polls `done` until it holds, failing the test after [`BOUND`].
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + BOUND;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `/proc/PID/stat`'s state and parent pid.
fn state_and_parent(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Live (not zombie) processes whose environment holds `HELPER_MARKER=marker`.
fn marked(marker: &str) -> Vec<u32> {
    mcp_stack_testkit::procs::marked(HELPER_MARKER, marker)
}

fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

/// Runs the helper, which starts `script` (under `sh -c`) as a stdio
/// server carrying `marker`; returns it and the server's pid.
fn start_helper(marker: &str, script: &str, option: bool) -> (Child, u32) {
    let mut helper = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "helper_starts_a_server_and_waits",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HELPER_FOR, marker)
        .env(HELPER_SCRIPT, script)
        .env(HELPER_OPTION, if option { "on" } else { "off" })
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = helper.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // After libtest's `test NAME ... ` on the same line.
            if let Some((_, pid)) = line.split_once("server pid ") {
                let _ = tx.send(pid.trim().parse::<u32>().unwrap());
                break;
            }
        }
    });
    let pid = rx
        .recv_timeout(BOUND)
        .expect("the helper did not report its server");
    (helper, pid)
}

/// Not a test: the helper process of the tests below (run with `--ignored`).
#[test]
#[ignore = "a helper process, run by the parent-death tests"]
fn helper_starts_a_server_and_waits() {
    let (Ok(marker), Ok(script)) = (std::env::var(HELPER_FOR), std::env::var(HELPER_SCRIPT)) else {
        panic!("run by the parent-death tests only");
    };
    let option = std::env::var(HELPER_OPTION).as_deref() != Ok("off");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _entered = rt.enter();
    let config = StdioConfig::new("sh")
        .args(["-c", &script])
        .env(HELPER_MARKER, marker)
        .parent_death_signal(option);
    let transport = StdioTransport::spawn(config).unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "server pid {}", transport.pid()).unwrap();
    out.flush().unwrap();
    drop(out);
    // Until killed.
    loop {
        std::thread::park();
    }
}

#[test]
fn a_server_dies_when_its_parent_is_killed_outright() {
    let marker = unique("killed");
    let _cleanup = mcp_stack_testkit::procs::KillMarked::new(HELPER_MARKER, &marker);
    // `sleep` ignores its stdin closing: only a signal ends it.
    let (mut helper, server) = start_helper(&marker, "exec sleep 600", true);
    // Waited for, not asserted at once: while `sh` execs `sleep`, the
    // process's environment cannot be read, and a scan then misses it.
    wait_until("the server is seen with its marker", || {
        marked(&marker) == vec![server]
    });
    helper.kill().unwrap();
    helper.wait().unwrap();
    // Gone by its pid, not only by the marker a scan could miss.
    wait_until("the server is gone", || {
        mcp_stack_testkit::procs::state(server).is_none_or(|s| matches!(s, 'Z' | 'X'))
            && marked(&marker).is_empty()
    });
}

#[test]
fn without_the_option_a_server_outlives_its_killed_parent() {
    let marker = unique("kept");
    let _cleanup = mcp_stack_testkit::procs::KillMarked::new(HELPER_MARKER, &marker);
    let dir = std::env::temp_dir().join(&marker);
    std::fs::create_dir_all(&dir).unwrap();
    let (trigger, proof) = (dir.join("trigger"), dir.join("proof"));
    // Alive after its parent died: it answers the trigger with the proof.
    let script = format!(
        "while [ ! -e '{}' ]; do sleep 0.01; done; echo alive > '{}'",
        trigger.display(),
        proof.display()
    );
    let (mut helper, server) = start_helper(&marker, &script, false);
    let helper_pid = helper.id();
    helper.kill().unwrap();
    helper.wait().unwrap();
    // Handed to another parent: a parent-death signal would have been sent.
    wait_until("the server has another parent", || {
        state_and_parent(server).is_none_or(|(_, ppid)| ppid != helper_pid)
    });
    std::fs::write(&trigger, "").unwrap();
    wait_until("the server answers", || proof_written(&proof));
    let _ = std::fs::remove_dir_all(&dir);
}

fn proof_written(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.trim() == "alive")
}

/// The id of the calling thread, from `/proc/thread-self` (`PID/task/TID`).
fn thread_id() -> u32 {
    let link: PathBuf = std::fs::read_link("/proc/thread-self").unwrap();
    link.file_name().unwrap().to_str().unwrap().parse().unwrap()
}

fn thread_gone(tid: u32) -> bool {
    !Path::new(&format!("/proc/self/task/{tid}")).exists()
}

/// `cat` echoes a request back: the server is alive and reading.
async fn round_trip(transport: &StdioTransport) {
    let request = Message::from(Request::new(7, "echo", None));
    transport.send(&request).await.unwrap();
    let received = tokio::time::timeout(BOUND, transport.recv())
        .await
        .expect("no echo")
        .unwrap_or_else(|e| panic!("the server is gone: {e}"));
    let Received::Message(Message::Request(echoed)) = received else {
        panic!("not the request: {received:?}");
    };
    assert_eq!(echoed.id, 7.into());
    assert!(transport.exit_info().is_none());
}

#[test]
fn a_server_outlives_the_thread_that_started_it() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let handle = rt.handle().clone();
    let (transport, tid) = std::thread::spawn(move || {
        let _entered = handle.enter();
        let transport = StdioTransport::spawn(StdioConfig::new("cat")).unwrap();
        (transport, thread_id())
    })
    .join()
    .unwrap();
    // Once the thread is gone from /proc, the kernel has handed its
    // children on (and sent any parent-death signal).
    wait_until("the starting thread is gone", || thread_gone(tid));
    rt.block_on(async {
        round_trip(&transport).await;
        transport.close().await;
    });
}

#[test]
fn a_server_outlives_the_blocking_pool_thread_that_started_it() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        // Idle blocking threads end at once.
        .thread_keep_alive(Duration::from_millis(1))
        .build()
        .unwrap();
    rt.block_on(async {
        let (transport, tid) = tokio::task::spawn_blocking(|| {
            let transport = StdioTransport::spawn(StdioConfig::new("cat")).unwrap();
            (transport, thread_id())
        })
        .await
        .unwrap();
        let deadline = tokio::time::Instant::now() + BOUND;
        while !thread_gone(tid) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the blocking thread did not end"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        round_trip(&transport).await;
        transport.close().await;
    });
}

#[tokio::test]
async fn kill_ends_the_group_at_once() {
    // A server that ignores SIGTERM and its stdin closing, with a grandchild.
    let transport = StdioTransport::spawn(
        StdioConfig::new("sh")
            .args(["-c", "trap '' TERM; sleep 600 & while :; do sleep 1; done"])
            .stdin_close_timeout(Duration::from_secs(600))
            .term_timeout(Duration::from_secs(600)),
    )
    .unwrap();
    let pgid = transport.pid();
    let members = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
            .filter(|&pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                    let rest = stat.rsplit_once(')').map(|r| r.1).unwrap_or_default();
                    let mut fields = rest.split_whitespace();
                    let live = !matches!(fields.next(), Some("Z" | "X"));
                    live && fields.nth(1).and_then(|g| g.parse().ok()) == Some(pgid)
                })
            })
            .count()
    };
    let deadline = tokio::time::Instant::now() + BOUND;
    while members() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "no grandchild");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    transport.kill();
    while members() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the group outlived kill"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Reaped, and the transport says so.
    while transport.exit_info().is_none() {
        assert!(tokio::time::Instant::now() < deadline, "not reaped");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(transport.recv().await.unwrap_err().is_closed());
    tokio::time::timeout(BOUND, transport.close())
        .await
        .expect("close after kill took too long");
}
