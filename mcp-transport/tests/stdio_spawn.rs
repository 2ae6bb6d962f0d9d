//! How a stdio server is started: the program's lookup, the state it
//! inherits (signals, process group, parent), and the errors of a start
//! that fails. On Linux these go through the `clone`-based start, with
//! the parent-death signal (the default).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_stack_transport::stdio::{StdioConfig, StdioTransport};
use mcp_stack_transport::{ServerProcess, Transport, TransportError};

/// A bound for anything that should finish well before it; hitting it is a failure.
const BOUND: Duration = Duration::from_secs(10);

/// The server's stderr, once it has exited (its stdout closed).
async fn stderr_at_exit(t: &StdioTransport) -> Vec<String> {
    let err = tokio::time::timeout(BOUND, t.recv())
        .await
        .expect("the server did not exit")
        .unwrap_err();
    err.stderr_tail().to_vec()
}

/// `/proc/self/status`'s value of `field` in `lines`, as printed by `grep`.
fn field<'a>(lines: &'a [String], name: &str) -> &'a str {
    lines
        .iter()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in {lines:?}"))
        .trim()
}

fn temp_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let dir = std::env::temp_dir().join(format!("mcp-spawn-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn script(path: &Path, body: &str, mode: u32) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_server_starts_with_default_signals_in_its_own_group() {
    // This process ignores SIGPIPE (every Rust program does), so a child
    // that inherited the disposition would show it.
    let ours = std::fs::read_to_string("/proc/self/status").unwrap();
    let ignored = ours
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
        .unwrap();
    assert_ne!(
        ignored & (1 << (libc::SIGPIPE - 1)),
        0,
        "the test process should ignore SIGPIPE"
    );

    let config = StdioConfig::new("sh").args([
        "-c",
        "exec grep -E '^(SigIgn|SigBlk|PPid|NSpgid|Pid):' /proc/self/status >&2",
    ]);
    let t = StdioTransport::spawn(config).unwrap();
    let pid = t.pid();
    let lines = stderr_at_exit(&t).await;
    // What this process ignores, less SIGPIPE (as a fork and exec from
    // the standard library gives): ignored dispositions carry over `exec`,
    // and this process may itself have inherited some from what ran it.
    let child_ignores = u64::from_str_radix(field(&lines, "SigIgn"), 16).unwrap();
    assert_eq!(
        child_ignores,
        ignored & !(1 << (libc::SIGPIPE - 1)),
        "{lines:?}"
    );
    assert_eq!(field(&lines, "SigBlk"), "0000000000000000", "{lines:?}");
    assert_eq!(field(&lines, "PPid"), std::process::id().to_string());
    assert_eq!(field(&lines, "Pid"), pid.to_string());
    // Its own process group, led by itself.
    assert_eq!(field(&lines, "NSpgid"), pid.to_string());
    let exit = t.exit_info().expect("exit status");
    assert_eq!(exit.code, Some(0), "{exit:?}");
    t.close().await;
}

#[tokio::test]
async fn a_program_is_looked_up_on_the_configured_path_as_execvp_does() {
    let empty = temp_dir("empty");
    let denied = temp_dir("denied");
    let found = temp_dir("found");
    // Not executable in the first folder that has it: skipped, as `execvp`
    // skips it, for the next one.
    script(&denied.join("mcp-spawn-tool"), "echo wrong >&2", 0o644);
    script(
        &found.join("mcp-spawn-tool"),
        "echo found \"$0\" >&2",
        0o755,
    );
    let path = format!(
        "/definitely/not/here:{}:{}:{}:/usr/bin:/bin",
        empty.display(),
        denied.display(),
        found.display()
    );
    let t = StdioTransport::spawn(StdioConfig::new("mcp-spawn-tool").env("PATH", &path)).unwrap();
    let lines = stderr_at_exit(&t).await;
    assert_eq!(
        lines,
        [format!("found {}", found.join("mcp-spawn-tool").display())]
    );
    t.close().await;

    // Only the non-executable one: permission denied, as `execvp` says.
    let path = format!("{}:{}", empty.display(), denied.display());
    let err =
        StdioTransport::spawn(StdioConfig::new("mcp-spawn-tool").env("PATH", &path)).unwrap_err();
    assert_spawn_error(&err, ErrorKind::PermissionDenied);
    for dir in [empty, denied, found] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[tokio::test]
async fn a_start_that_cannot_exec_is_a_spawn_error_and_leaves_no_child() {
    let dir = temp_dir("noexec");
    let file = dir.join("not-executable");
    script(&file, "exit 0", 0o600);
    let err = StdioTransport::spawn(StdioConfig::new(file.display().to_string())).unwrap_err();
    assert_spawn_error(&err, ErrorKind::PermissionDenied);
    let err = StdioTransport::spawn(StdioConfig::new(dir.join("missing").display().to_string()))
        .unwrap_err();
    assert_spawn_error(&err, ErrorKind::NotFound);
    let err = StdioTransport::spawn(StdioConfig::new("sh").arg("nul\0byte")).unwrap_err();
    assert_spawn_error(&err, ErrorKind::InvalidInput);
    std::fs::remove_dir_all(dir).unwrap();
    // The failed children were reaped: none of ours is left as a zombie.
    #[cfg(target_os = "linux")]
    assert_eq!(zombie_children(), Vec::<u32>::new());
}

fn assert_spawn_error(err: &TransportError, kind: ErrorKind) {
    let TransportError::Spawn { source, .. } = err else {
        panic!("not a spawn error: {err:?}");
    };
    assert_eq!(source.kind(), kind, "{err}");
}

/// This process's children that are zombies.
#[cfg(target_os = "linux")]
fn zombie_children() -> Vec<u32> {
    mcp_stack_testkit::procs::children(std::process::id())
        .into_iter()
        .filter(|&(_, state)| state == 'Z')
        .map(|(pid, _)| pid)
        .collect()
}
