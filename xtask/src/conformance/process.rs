//! Child processes with bounds: every one runs in its own process group, and
//! the whole group is ended on timeout, on drop, and at the end of the run.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};

/// How long a group gets after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// What a bounded command produced.
#[derive(Debug)]
pub(crate) struct Finished {
    /// `None` when it was killed at its deadline.
    pub(crate) status: Option<ExitStatus>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Finished {
    pub(crate) fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// A one-line account of how it ended, with the tail of its output.
    pub(crate) fn describe(&self) -> String {
        let how = match self.status {
            Some(s) => s.to_string(),
            None => "timed out and was killed".to_string(),
        };
        let tail: Vec<&str> = self
            .stderr
            .lines()
            .chain(self.stdout.lines())
            .filter(|l| !l.trim().is_empty())
            .collect();
        let start = tail.len().saturating_sub(6);
        format!(
            "{how}; last output: {}",
            tail.get(start..).unwrap_or(&[]).join(" | ")
        )
    }
}

/// A command prepared to run in its own process group.
pub(crate) fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut cmd = Command::new(program);
    cmd.stdin(Stdio::null()).kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    cmd
}

/// Runs a command to completion within `timeout`, capturing its output. On
/// timeout the whole process group is ended.
pub(crate) async fn run(mut cmd: Command, timeout: Duration) -> Result<Finished, String> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let program = format!("{:?}", cmd.as_std().get_program());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    let group = Group::of(&child);
    // If this future is dropped (the run's overall bound, Ctrl-C), the
    // whole group goes, not only its leader.
    let _guard = KillOnDrop(group);
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let read_out = async {
        let mut s = String::new();
        if let Some(o) = out.as_mut() {
            let mut buf = Vec::new();
            let _ = o.read_to_end(&mut buf).await;
            s = String::from_utf8_lossy(&buf).into_owned();
        }
        s
    };
    let read_err = async {
        let mut s = String::new();
        if let Some(e) = err.as_mut() {
            let mut buf = Vec::new();
            let _ = e.read_to_end(&mut buf).await;
            s = String::from_utf8_lossy(&buf).into_owned();
        }
        s
    };
    let waited = tokio::time::timeout(timeout, async {
        let (stdout, stderr, status) = tokio::join!(read_out, read_err, child.wait());
        (stdout, stderr, status)
    })
    .await;
    match waited {
        Ok((stdout, stderr, status)) => {
            // The leader is gone; anything it left behind in its group goes too.
            group.kill_now();
            Ok(Finished {
                status: Some(status.map_err(|e| format!("waiting for {program}: {e}"))?),
                stdout,
                stderr,
            })
        }
        Err(_) => {
            group.terminate(&mut child).await;
            Ok(Finished {
                status: None,
                stdout: String::new(),
                stderr: String::new(),
            })
        }
    }
}

/// A long-running process (an HTTP server), its output sent to a log file.
/// Dropping it kills its process group.
#[derive(Debug)]
pub(crate) struct Background {
    child: Child,
    group: Group,
    name: String,
}

impl Background {
    /// Starts `cmd` with stdout and stderr appended to `log`.
    pub(crate) fn spawn(mut cmd: Command, name: &str, log: &Path) -> Result<Self, String> {
        let file = std::fs::File::create(log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let file2 = file
            .try_clone()
            .map_err(|e| format!("cannot open {}: {e}", log.display()))?;
        cmd.stdout(Stdio::from(file)).stderr(Stdio::from(file2));
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        let group = Group::of(&child);
        Ok(Background {
            child,
            group,
            name: name.to_string(),
        })
    }

    /// The process has exited already (it failed to start, say).
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Ends the process group (SIGTERM, then SIGKILL) and reaps the leader;
    /// says whether anything of the group is left.
    pub(crate) async fn stop(mut self) -> Result<(), String> {
        self.group.terminate(&mut self.child).await;
        if self.group.alive() {
            Err(format!(
                "{}: processes left in its group after SIGKILL",
                self.name
            ))
        } else {
            Ok(())
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.group.kill_now();
    }
}

/// Kills a process group when dropped.
struct KillOnDrop(Group);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.0.kill_now();
    }
}

/// A process group (the child's pid is its id).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Group(Option<u32>);

impl Group {
    fn of(child: &Child) -> Self {
        Group(child.id())
    }

    /// The group of a process that leads its own group.
    pub(crate) fn from_pid(pid: u32) -> Self {
        Group(Some(pid))
    }

    /// Some process of the group is still there (zombies included until reaped).
    pub(crate) fn alive(&self) -> bool {
        self.0.is_some_and(|g| sys::signal_group(g, 0).is_ok())
    }

    fn kill_now(&self) {
        if let Some(g) = self.0 {
            let _ = sys::signal_group(g, sys::KILL);
        }
    }

    async fn terminate(&self, child: &mut Child) {
        let Some(g) = self.0 else {
            let _ = child.kill().await;
            return;
        };
        let _ = sys::signal_group(g, sys::TERM);
        if tokio::time::timeout(TERM_GRACE, child.wait())
            .await
            .is_err()
        {
            let _ = sys::signal_group(g, sys::KILL);
            let _ = tokio::time::timeout(TERM_GRACE, child.wait()).await;
        }
        // The leader is reaped; children it left in the group are killed.
        let _ = sys::signal_group(g, sys::KILL);
        let deadline = tokio::time::Instant::now() + TERM_GRACE;
        while self.alive() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[cfg(unix)]
mod sys {
    pub(super) const TERM: i32 = libc::SIGTERM;
    pub(super) const KILL: i32 = libc::SIGKILL;

    /// Sends `signal` to every process of group `pgid` (0 only checks).
    pub(super) use mcp_stack_transport::stdio::signal_group;
}

#[cfg(not(unix))]
mod sys {
    use std::io;

    pub(super) const TERM: i32 = 15;
    pub(super) const KILL: i32 = 9;

    pub(super) fn signal_group(_pgid: u32, _signal: i32) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "process groups are unix-only",
        ))
    }
}

/// A free TCP port on 127.0.0.1 (free now; the server binds it next).
pub(crate) fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port on 127.0.0.1: {e}"))
}

/// Waits until something accepts connections on 127.0.0.1:`port`.
pub(crate) async fn wait_for_port(
    port: u16,
    server: &mut Background,
    timeout: Duration,
) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if let Some(status) = server.exited() {
            return Err(format!(
                "{} exited before listening ({status})",
                server.name
            ));
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!(
                "{} did not listen on 127.0.0.1:{port} within {} s",
                server.name,
                timeout.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
