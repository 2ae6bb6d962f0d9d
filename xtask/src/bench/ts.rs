//! The TypeScript SDK's client in `bench stdio`: node running
//! `xtask/bench/ts_client.mjs` (the SDK's `Client` over
//! `StdioClientTransport`), driven line by line over its stdin and stdout.
//!
//! Node and the SDK come from `cargo xtask conformance`'s cache; this never
//! installs anything, and a missing SDK only leaves its row out.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::Value;

use super::rounds::Timed;

/// The script, written beside the SDK's `node_modules` at run time.
const SCRIPT: &str = include_str!("../../bench/ts_client.mjs");

/// How long node may take to start and connect, or to answer one run.
const WAIT: Duration = Duration::from_secs(300);

/// Where node and the SDK are.
#[derive(Debug)]
pub(super) struct Found {
    node: PathBuf,
    script: PathBuf,
}

/// Finds node and the SDK in the conformance cache and writes the script
/// beside them; the error says why there is no TS row.
pub(super) fn find() -> Result<Found, String> {
    let (node, node_modules) = crate::conformance::installed_node_sdk()?;
    let dir = node_modules
        .parent()
        .ok_or("the SDK's node_modules has no parent folder")?;
    let script = dir.join("xtask-bench-ts-client.mjs");
    if std::fs::read_to_string(&script).ok().as_deref() != Some(SCRIPT) {
        std::fs::write(&script, SCRIPT)
            .map_err(|e| format!("cannot write {}: {e}", script.display()))?;
    }
    Ok(Found { node, script })
}

/// A running TS client.
#[derive(Debug)]
pub(super) struct TsClient {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The child's stdout lines, read on a thread of their own so that every
    /// wait has a bound.
    lines: Receiver<std::io::Result<String>>,
    /// The SDK's version.
    pub(super) version: String,
}

impl TsClient {
    /// Starts node with the script against `program args`; waits for it to
    /// connect and check one call.
    pub(super) fn spawn(found: &Found, program: &str, args: &[String]) -> Result<Self, String> {
        let mut child = Command::new(&found.node)
            .arg(&found.script)
            .arg(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", found.node.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("node's pipes are missing".into());
        };
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("bench-ts-stdout".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| format!("cannot start a reader thread: {e}"))?;
        let mut client = TsClient {
            child,
            stdin: Some(stdin),
            lines,
            version: String::new(),
        };
        let ready = client.next()?;
        match ready
            .get("sdk")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
        {
            v if ready.get("ready") == Some(&Value::Bool(true)) => {
                client.version = format!("@modelcontextprotocol/sdk {v}");
                Ok(client)
            }
            _ => {
                client.close();
                Err(format!("node did not say it was ready: {ready}"))
            }
        }
    }

    /// The next line of the child's stdout, as JSON; an `error` it reports is an error.
    fn next(&mut self) -> Result<Value, String> {
        let line = match self.lines.recv_timeout(WAIT) {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => return Err(format!("reading node's output: {e}")),
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                return Err(format!("node gave no answer in {} s", WAIT.as_secs()));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(format!(
                    "node ended ({})",
                    self.child
                        .wait()
                        .map_or_else(|e| e.to_string(), |s| s.to_string())
                ));
            }
        };
        let value: Value = serde_json::from_str(&line)
            .map_err(|e| format!("node printed something that is not JSON ({e}): {line}"))?;
        match value.get("error") {
            Some(error) => Err(format!("the TS client failed: {error}")),
            None => Ok(value),
        }
    }

    /// `calls` echo calls with `width` in flight, timed by node itself.
    pub(super) fn run(&mut self, width: usize, calls: usize) -> Result<Timed, String> {
        let stdin = self.stdin.as_mut().ok_or("node's stdin is closed")?;
        writeln!(stdin, r#"{{"calls":{calls},"width":{width}}}"#)
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("writing to node: {e}"))?;
        let answer = self.next()?;
        let ns = |v: &Value| {
            v.as_f64()
                .map(|ns| Duration::from_nanos(ns.max(0.0) as u64))
        };
        let elapsed = answer
            .get("elapsed_ns")
            .and_then(ns)
            .ok_or_else(|| format!("node's answer has no elapsed_ns: {answer}"))?;
        let latencies: Vec<Duration> = answer
            .get("latencies_ns")
            .and_then(Value::as_array)
            .map(|all| all.iter().filter_map(ns).collect())
            .unwrap_or_default();
        if latencies.len() != calls {
            return Err(format!("node timed {} calls of {calls}", latencies.len()));
        }
        Ok(Timed {
            latencies,
            elapsed: Some(elapsed),
        })
    }

    /// Closes node's stdin (the script then closes its client and server)
    /// and waits a bounded time for it to end.
    pub(super) fn close(mut self) {
        drop(self.stdin.take());
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
