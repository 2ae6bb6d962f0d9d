//! The child process: its group's signals, reaping it, and reading its
//! stderr into a bounded tail and a listener.

use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::time::Instant;

use crate::ExitInfo;

use super::config::{GROUP_POLL_INTERVAL, KILL_TIMEOUT};
use super::spawn::{Child, Stderr};
use super::{Shared, StderrState};

#[derive(Debug, Clone, Copy)]
pub(super) enum Signal {
    Term,
    Kill,
}

impl Shared {
    /// Signals the whole process group, unless it is known to be gone.
    pub(super) fn signal(&self, signal: Signal) {
        if self.group_gone.load(Ordering::Acquire) {
            return;
        }
        #[cfg(unix)]
        {
            let signal = match signal {
                Signal::Term => libc::SIGTERM,
                Signal::Kill => libc::SIGKILL,
            };
            if let Err(e) = sys::signal_group(self.pid, signal)
                && e.raw_os_error() != Some(libc::ESRCH)
            {
                tracing::debug!(server = %self.server_name, "cannot signal process group {}: {e}", self.pid);
            }
        }
        #[cfg(not(unix))]
        {
            let _ = signal;
            self.kill.cancel();
        }
    }

    /// Whether any process of the group is left.
    pub(super) fn group_alive(&self) -> bool {
        if self.group_gone.load(Ordering::Acquire) {
            return false;
        }
        #[cfg(unix)]
        {
            // Zombies count for `kill`, but they are already dead; where
            // possible, look closer so an init that is slow to reap them does
            // not hold the close up.
            sys::signal_group(self.pid, 0).is_ok() && sys::group_has_live_member(self.pid)
        }
        #[cfg(not(unix))]
        {
            false
        }
    }

    /// After the leader is gone: `SIGTERM`, then `SIGKILL`, to what is left
    /// of its group (wrapped servers, their helpers).
    pub(super) async fn end_group(&self, term_timeout: Duration) {
        for (signal, timeout) in [(Signal::Term, term_timeout), (Signal::Kill, KILL_TIMEOUT)] {
            if !self.group_alive() {
                break;
            }
            tracing::debug!(server = %self.server_name, ?signal, "processes of the server's group remain; signalling them");
            self.signal(signal);
            let deadline = Instant::now() + timeout;
            while self.group_alive() && Instant::now() < deadline {
                tokio::time::sleep(GROUP_POLL_INTERVAL).await;
            }
        }
        self.group_gone.store(true, Ordering::Release);
    }
}

/// Waits for the child to exit and records how it ended.
pub(super) async fn reap(mut child: Child, shared: Arc<Shared>) {
    #[cfg(unix)]
    let status = child.wait().await;
    #[cfg(not(unix))]
    let status = tokio::select! {
        s = child.wait() => s,
        () = shared.kill.cancelled() => {
            let _ = child.start_kill();
            child.wait().await
        }
    };
    let exit = match status {
        Ok(status) => exit_info(status),
        Err(e) => {
            tracing::warn!(server = %shared.server_name, "waiting for the server failed: {e}");
            ExitInfo::new(None, None)
        }
    };
    tracing::debug!(server = %shared.server_name, "server exited: {exit}");
    // The leader is reaped: once its group is empty, its id may be reused.
    if !shared.group_alive() {
        shared.group_gone.store(true, Ordering::Release);
    }
    shared
        .status
        .send_modify(|s| s.exit = Some((exit, Instant::now())));
}

pub(super) fn exit_info(status: ExitStatus) -> ExitInfo {
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    #[cfg(not(unix))]
    let signal = None;
    ExitInfo::new(status.code(), signal)
}

/// Reads stderr line by line, each line cut at the maximum length.
pub(super) async fn read_stderr(stderr: Stderr, shared: Arc<Shared>) {
    let max = shared.stderr.max_line_length;
    let mut reader = BufReader::with_capacity(8 * 1024, stderr);
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    loop {
        let chunk = match reader.fill_buf().await {
            Ok(chunk) => chunk,
            Err(e) => {
                tracing::debug!(server = %shared.server_name, "reading stderr failed: {e}");
                break;
            }
        };
        if chunk.is_empty() {
            if !line.is_empty() || cut {
                shared.stderr.line(&line, cut);
            }
            break;
        }
        let newline = chunk.iter().position(|&b| b == b'\n');
        let part = chunk
            .get(..newline.unwrap_or(chunk.len()))
            .unwrap_or_default();
        let room = max.saturating_sub(line.len());
        line.extend_from_slice(part.get(..room.min(part.len())).unwrap_or_default());
        cut |= part.len() > room;
        let used = newline.map_or(chunk.len(), |i| i + 1);
        reader.consume(used);
        if newline.is_some() {
            shared.stderr.line(&line, cut);
            line.clear();
            cut = false;
        }
    }
    shared.status.send_modify(|s| s.stderr_done = true);
}

impl StderrState {
    pub(super) fn line(&self, bytes: &[u8], cut: bool) {
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let mut text = String::from_utf8_lossy(bytes).into_owned();
        if cut {
            text.push('…');
        }
        let listener = self
            .listener
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(listener) = listener {
            listener(&text);
        }
        if self.tail_lines > 0 {
            let mut tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
            while tail.len() >= self.tail_lines {
                tail.pop_front();
            }
            tail.push_back(text);
        }
    }
}

#[cfg(unix)]
pub use sys::signal_group;

#[cfg(unix)]
mod sys {
    use std::io;

    /// Sends `signal` (0: only check) to every process in the group `pgid`
    /// (the one such function of the workspace: `xtask`'s supervisor uses
    /// it too, through `mcp_stack_transport::stdio::signal_group`).
    #[allow(unsafe_code)]
    pub fn signal_group(pgid: u32, signal: libc::c_int) -> io::Result<()> {
        let pgid = libc::pid_t::try_from(pgid)
            .ok()
            .filter(|&p| p > 1)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "bad process group id"))?;
        // SAFETY: `kill` has no memory-safety preconditions: it takes two
        // integers and touches no memory of ours. `-pgid` with `pgid > 1`
        // addresses exactly that process group, never our own group (0) or
        // every process we may signal (-1).
        let rc = unsafe { libc::kill(-pgid, signal) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Whether a process of the group `pgid` is alive and not a zombie.
    ///
    /// Reads `/proc` on Linux; elsewhere (or without `/proc`) it assumes so.
    pub(super) fn group_has_live_member(pgid: u32) -> bool {
        #[cfg(target_os = "linux")]
        {
            let Ok(entries) = std::fs::read_dir("/proc") else {
                return true;
            };
            entries.flatten().any(|entry| {
                let name = entry.file_name();
                let Some(pid) = name
                    .to_str()
                    .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
                else {
                    return false;
                };
                let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                    return false;
                };
                // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
                let Some((_, rest)) = stat.rsplit_once(')') else {
                    return false;
                };
                let mut fields = rest.split_ascii_whitespace();
                let state = fields.next();
                let pgrp = fields.nth(1).and_then(|f| f.parse::<u32>().ok());
                pgrp == Some(pgid) && !matches!(state, Some("Z" | "X"))
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = pgid;
            true
        }
    }
}
