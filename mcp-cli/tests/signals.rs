//! `SIGINT`, `SIGTERM` and `SIGHUP` on `mcp` close every server it started
//! (grandchildren included) and exit with 130, 143 and 129.
//!
//! The servers are the built-in testkit server behind a shell that also
//! leaves a `sleep` grandchild in the group (`sh -c 'sleep 600 & exec mcp
//! demo-server'`); every one of them carries a marker in its environment,
//! by which the tests find them in `/proc`.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// The variable that marks a test's server processes.
const MARKER: &str = "MCP_SIGNAL_TEST";

/// A bound for what should happen well before it (the close sequence of a
/// stubborn server is about 5 s); hitting it is a failure.
const BOUND: Duration = Duration::from_secs(30);

const SIGNALS: [(&str, i32); 3] = [("INT", 130), ("TERM", 143), ("HUP", 129)];

fn unique(name: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Live (not zombie) processes whose environment holds `MARKER=marker`.
fn marked(marker: &str) -> Vec<u32> {
    mcp_stack_testkit::procs::marked(MARKER, marker)
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + BOUND;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `mcp` running, its output collected as it comes.
struct Running {
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<Vec<String>>>,
    marker: String,
}

impl Running {
    fn start(args: &[String], marker: &str) -> Running {
        let mut child = Command::new(MCP)
            .args(args)
            .env("NO_COLOR", "1")
            .env_remove(MARKER)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run mcp");
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut out = child.stdout.take().unwrap();
        let sink = Arc::clone(&stdout);
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = out.read_to_string(&mut text);
            sink.lock().unwrap().push_str(&text);
        });
        let err = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line);
            }
        });
        Running {
            child,
            stdout,
            stderr,
            marker: marker.to_owned(),
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    fn wait_for_stderr(&mut self, needle: &str) {
        let deadline = Instant::now() + BOUND;
        while !self
            .stderr
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains(needle))
        {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "mcp exited ({status}) before printing {needle:?}:\n{}",
                    self.stderr()
                );
            }
            assert!(
                Instant::now() < deadline,
                "mcp never printed {needle:?}:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits until at least `n` marked processes run.
    fn wait_for_servers(&self, n: usize) {
        wait_until("the servers run", || marked(&self.marker).len() >= n);
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} failed");
    }

    fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "mcp did not exit:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// After `mcp` exited with `code`: no marked process is left, and
    /// nothing but progress went to the terminal.
    fn assert_ended(&mut self, code: i32) {
        let status = self.wait();
        assert_eq!(
            status.code(),
            Some(code),
            "{status}; stderr:\n{}",
            self.stderr()
        );
        let marker = self.marker.clone();
        wait_until("no server process is left", || marked(&marker).is_empty());
        let err = self.stderr();
        assert!(!err.contains('✗'), "a failure was printed:\n{err}");
        assert!(!err.contains("closed"), "a close was reported:\n{err}");
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in marked(&self.marker) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// The testkit server behind a shell that leaves a grandchild running.
fn wrapped_server(extra: &str) -> String {
    format!("sleep 600 & exec {MCP} demo-server {extra}")
}

/// `mcp call --stdio …` of a long `progress` call, with its progress shown.
fn call_direct(marker: &str, extra: &str, verbose: bool) -> Running {
    let mut args: Vec<String> = Vec::new();
    if verbose {
        args.push("-v".into());
    }
    args.extend([
        "call".into(),
        "--stdio".into(),
        format!("sh -c '{}'", wrapped_server(extra)),
        "--env".into(),
        format!("{MARKER}={marker}"),
        "progress".into(),
        "--progress".into(),
        "--args".into(),
        r#"{"steps": 10000, "intervalMs": 50}"#.into(),
    ]);
    Running::start(&args, marker)
}

#[test]
fn each_signal_closes_a_direct_servers_group_and_exits_with_its_status() {
    for (signal, code) in SIGNALS {
        let marker = unique(&format!("direct-{signal}"));
        let mut mcp = call_direct(&marker, "", false);
        // The call is under way: the server reports progress.
        mcp.wait_for_stderr("progress ");
        mcp.wait_for_servers(2);
        mcp.signal(signal);
        mcp.assert_ended(code);
        // The call was cut short: no result, no error.
        assert_eq!(mcp.stdout.lock().unwrap().as_str(), "", "SIG{signal}");
    }
}

#[test]
fn each_signal_disposes_of_the_config_runtime_and_exits_with_its_status() {
    for (signal, code) in SIGNALS {
        let marker = unique(&format!("config-{signal}"));
        let dir = std::env::temp_dir().join(&marker);
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("settings.json");
        let servers = serde_json::json!({"mcpServers": {
            "kit": {
                "command": "sh",
                "args": ["-c", wrapped_server("")],
                "env": {MARKER: marker},
            },
            "other": {
                "command": "sh",
                "args": ["-c", wrapped_server("")],
                "env": {MARKER: marker},
            },
        }});
        std::fs::write(&config, servers.to_string()).unwrap();
        let args: Vec<String> = vec![
            "call".into(),
            "--config".into(),
            config.display().to_string(),
            "kit__slow".into(),
            "--args".into(),
            r#"{"ms": 600000}"#.into(),
        ];
        let mut mcp = Running::start(&args, &marker);
        // Both servers connected (a line each), four processes.
        mcp.wait_for_stderr("kit: protocol");
        mcp.wait_for_stderr("other: protocol");
        mcp.wait_for_servers(4);
        mcp.signal(signal);
        mcp.assert_ended(code);
        assert_eq!(mcp.stdout.lock().unwrap().as_str(), "", "SIG{signal}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn ctrl_c_ends_listen_with_130_and_closes_its_server() {
    let marker = unique("listen");
    let args: Vec<String> = vec![
        "listen".into(),
        "--stdio".into(),
        format!("sh -c '{}'", wrapped_server("")),
        "--env".into(),
        format!("{MARKER}={marker}"),
    ];
    let mut mcp = Running::start(&args, &marker);
    mcp.wait_for_stderr("listening");
    mcp.wait_for_servers(2);
    mcp.signal("INT");
    mcp.assert_ended(130);
}

#[test]
fn a_second_signal_kills_a_server_that_ignores_the_close_sequence() {
    let marker = unique("twice");
    // The server ignores stdin closing and SIGTERM: its close sequence
    // would take 4 s before SIGKILL.
    let mut mcp = call_direct(&marker, "--misbehave ignore-stdin-close", true);
    mcp.wait_for_stderr("progress ");
    mcp.wait_for_servers(2);
    mcp.signal("TERM");
    mcp.wait_for_stderr("closing what was started");
    mcp.signal("INT");
    // The first signal's status; the groups killed, not closed.
    let status = mcp.wait();
    assert_eq!(status.code(), Some(143), "{status}:\n{}", mcp.stderr());
    let marker = mcp.marker.clone();
    wait_until("no server process is left", || marked(&marker).is_empty());
    let err = mcp.stderr();
    assert!(err.contains("killing the server's process group"), "{err}");
    assert!(!err.contains("sending SIGKILL"), "{err}");
}
