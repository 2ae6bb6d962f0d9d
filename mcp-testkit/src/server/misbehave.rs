//! The plumbing of the misbehaviours that are not about one message: exits,
//! crashes, noise at start-up, an ignored SIGTERM, and what a call does
//! before it answers (late answers, oversized lines, floods).

use std::io::{self, Write as _};
use std::path::Path;
use std::time::Duration;

use mcp_stack_protocol::notification::{self, Notification as _};
use mcp_stack_protocol::types::{LoggingLevel, LoggingMessageParams};
use serde_json::Value;

use super::{EXIT_IMMEDIATELY_MESSAGE, Host, SERVER_NAME, Server};
use crate::options::{Misbehaviour, ServerOptions};
use crate::outbox::Outbox;

/// What [`Misbehaviour::StdoutNoise`] writes before any message.
pub(super) const STARTUP_NOISE: &[u8] = b"mcp-testkit starting up...\n\
                Loading configuration from ./config.json\n\
                Server ready: listening on stdio\n";

pub(super) fn stderr_line(line: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

pub(super) fn append_instance_log(path: &Path, event: &str) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(format!("{event} {}\n", std::process::id()).as_bytes())
}

/// Before serving: the instance log's `start` line, and
/// [`Misbehaviour::ExitImmediately`] (a real exit in a process, an error
/// in memory).
pub(super) fn on_start(options: &ServerOptions, host: Host) -> io::Result<()> {
    if let Some(log) = &options.instance_log {
        append_instance_log(log, "start").map_err(|e| {
            io::Error::new(e.kind(), format!("instance log {}: {e}", log.display()))
        })?;
    }
    if options.has(Misbehaviour::ExitImmediately) {
        match host {
            Host::Process => {
                stderr_line(EXIT_IMMEDIATELY_MESSAGE);
                std::process::exit(1);
            }
            Host::InMemory => return Err(io::Error::other(EXIT_IMMEDIATELY_MESSAGE)),
        }
    }
    Ok(())
}

/// With [`Misbehaviour::IgnoreStdinClose`] in a process, a SIGTERM handler
/// to keep registered: it replaces the default action, so SIGTERM no longer
/// ends the process.
#[cfg(unix)]
pub(super) fn ignore_sigterm(
    options: &ServerOptions,
    host: Host,
) -> io::Result<Option<tokio::signal::unix::Signal>> {
    if host == Host::Process && options.has(Misbehaviour::IgnoreStdinClose) {
        Ok(Some(tokio::signal::unix::signal(
            tokio::signal::unix::SignalKind::terminate(),
        )?))
    } else {
        Ok(None)
    }
}

/// The start-up line on stderr of a server in its own process.
pub(super) fn announce(options: &ServerOptions, workspace: &Path) {
    let names: Vec<&str> = options.misbehaviours.iter().map(|m| m.name()).collect();
    stderr_line(&format!(
        "mcp-testkit {}: serving MCP on stdio (pid {}, workspace {}, misbehaviours: {})",
        env!("CARGO_PKG_VERSION"),
        std::process::id(),
        workspace.display(),
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(",")
        }
    ));
}

/// One line longer than `len` bytes: a log notification padded with `x`.
fn oversized_line(len: usize) -> Vec<u8> {
    let head =
        br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":""#;
    let tail = b"\"}}\n";
    let pad = len
        .saturating_add(1)
        .saturating_sub(head.len() + tail.len() - 1);
    let mut line = Vec::with_capacity(head.len() + pad + tail.len());
    line.extend_from_slice(head);
    line.resize(head.len() + pad, b'x');
    line.extend_from_slice(tail);
    line
}

/// A batch of `0` elements (`[0,0,…,0]` and a line end), `len` bytes
/// before the line end (at least `[0]`).
fn batch_bomb_line(len: usize) -> Vec<u8> {
    let elements = len.saturating_sub(1) / 2;
    let mut line = Vec::with_capacity(elements * 2 + 2);
    line.push(b'[');
    for i in 0..elements.max(1) {
        if i > 0 {
            line.push(b',');
        }
        line.push(b'0');
    }
    line.extend_from_slice(b"]\n");
    line
}

/// What the misbehaviours make a call do besides its work.
#[derive(Debug, Clone, Copy)]
pub(super) struct CallMisbehaviours {
    /// [`Misbehaviour::LateAnswer`]: wait before the work.
    late: Option<Duration>,
    /// [`Misbehaviour::OversizedLine`]: a line this long before the answer.
    oversize: Option<usize>,
    /// [`Misbehaviour::BatchBomb`]: a batch line this long before the answer.
    batch_bomb: Option<usize>,
    /// [`Misbehaviour::FloodNotifications`]: this many log notifications
    /// before the answer.
    flood: Option<usize>,
}

impl CallMisbehaviours {
    pub(super) fn of(options: &ServerOptions) -> Self {
        CallMisbehaviours {
            late: options
                .has(Misbehaviour::LateAnswer)
                .then(|| Duration::from_millis(options.late_ms)),
            oversize: options
                .has(Misbehaviour::OversizedLine)
                .then_some(options.oversize_bytes),
            batch_bomb: options
                .has(Misbehaviour::BatchBomb)
                .then_some(options.batch_bomb_bytes),
            flood: options
                .has(Misbehaviour::FloodNotifications)
                .then_some(options.flood_count),
        }
    }

    /// Before the call's work.
    pub(super) async fn delay(&self) {
        if let Some(delay) = self.late {
            tokio::time::sleep(delay).await;
        }
    }

    /// After the work, before the answer.
    pub(super) async fn before_answer(&self, outbox: &Outbox) {
        if let Some(len) = self.oversize {
            outbox.send_bytes(oversized_line(len)).await;
        }
        if let Some(len) = self.batch_bomb {
            outbox.send_bytes(batch_bomb_line(len)).await;
        }
        if let Some(count) = self.flood {
            for i in 1..=count {
                let message = LoggingMessageParams {
                    level: LoggingLevel::Info.as_str().to_owned(),
                    logger: Some(SERVER_NAME.to_owned()),
                    data: Value::from(format!("flood notification {i} of {count}")),
                };
                outbox
                    .notify(notification::LoggingMessage::METHOD, &message)
                    .await;
            }
        }
    }
}

impl Server {
    /// `strict-initialize`: a request before `initialize` ends the server.
    pub(super) fn strict_exit(&self, method: &str) -> io::Error {
        let message = format!(
            "protocol error: expected initialize as the first request, got {method} \
             (misbehaviour strict-initialize)"
        );
        match self.host {
            Host::Process => {
                stderr_line(&message);
                std::process::exit(1);
            }
            Host::InMemory => io::Error::other(message),
        }
    }

    /// `crash-mid-call`: a `tools/call` ends the server as a panic would.
    pub(super) fn crash(&self) -> io::Error {
        const MESSAGE: &str = "simulated crash in tools/call (misbehaviour crash-mid-call)";
        match self.host {
            Host::Process => {
                stderr_line(&format!(
                    "thread 'main' panicked at mcp-testkit/src/server.rs:1:1:\n{MESSAGE}\n\
                     note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
                ));
                std::process::exit(101);
            }
            Host::InMemory => io::Error::other(MESSAGE),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[test]
    fn a_batch_bomb_is_one_batch_line_of_its_length() {
        for len in [3, 4, 11, 1000, 1001] {
            let line = batch_bomb_line(len);
            assert!(
                line.len() - 1 <= len && line.len() + 1 >= len,
                "{len}: {}",
                line.len()
            );
            assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
            let value: Value = serde_json::from_slice(&line).unwrap();
            let items = value.as_array().unwrap();
            assert_eq!(items.len(), (len - 1) / 2);
            assert!(items.iter().all(|v| v == 0));
        }
        assert_eq!(batch_bomb_line(0), b"[0]\n");
    }

    #[test]
    fn oversized_line_is_one_line_over_the_limit() {
        for len in [0, 10, 100, 1000] {
            let line = oversized_line(len);
            assert!(line.len() - 1 > len, "{len}");
            assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
            assert!(line.ends_with(b"\n"));
            if len > 100 {
                assert_eq!(line.len() - 1, len + 1);
                let value: Value = serde_json::from_slice(&line).unwrap();
                assert_eq!(value["method"], "notifications/message");
            }
        }
    }
}
