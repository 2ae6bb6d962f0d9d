//! Finding the processes a test started, grandchildren included, by a
//! marker in their environment (Linux: `/proc`), to check that none is left
//! behind and to kill whatever a failed test left.
//!
//! A test starts its servers with `VAR=VALUE` in their environment (a
//! value unique to the test), which every descendant inherits; afterwards
//! [`marked`] lists the ones still alive.

use std::process::Command;

/// The live processes (zombies not counted: they have exited, only not
/// been reaped yet) whose environment holds `var=value`. Processes this
/// user cannot read are skipped.
pub fn marked(var: &str, value: &str) -> Vec<u32> {
    let needle = format!("{var}={value}");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if !environ
            .split(|&b| b == 0)
            .any(|assignment| assignment == needle.as_bytes())
        {
            continue;
        }
        if state(pid).is_some_and(|s| !matches!(s, 'Z' | 'X')) {
            found.push(pid);
        }
    }
    found
}

/// A process's state letter from `/proc/PID/stat` (`R`, `S`, `Z` …).
pub fn state(pid: u32) -> Option<char> {
    state_and_parent(pid).map(|(state, _)| state)
}

/// A process's state letter and parent's pid, from `/proc/PID/stat`.
fn state_and_parent(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((state, parent))
}

/// The children of `parent`, zombies included, each with its state letter.
pub fn children(parent: u32) -> Vec<(u32, char)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter_map(|pid| {
            let (state, of) = state_and_parent(pid)?;
            (of == parent).then_some((pid, state))
        })
        .collect()
}

/// Kills (`SIGKILL`) every process marked `var=value` when dropped, so a
/// failed test leaves nothing running.
#[derive(Debug)]
pub struct KillMarked {
    var: String,
    value: String,
}

impl KillMarked {
    /// A guard for the processes marked `var=value`.
    pub fn new(var: &str, value: &str) -> Self {
        KillMarked {
            var: var.to_owned(),
            value: value.to_owned(),
        }
    }
}

impl Drop for KillMarked {
    fn drop(&mut self) {
        for pid in marked(&self.var, &self.value) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}
