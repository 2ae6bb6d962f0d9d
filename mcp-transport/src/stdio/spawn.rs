//! Starting the child: on Linux, so that it gets `SIGTERM` when this process
//! dies, however it dies (`PR_SET_PDEATHSIG`), without copying this
//! process's memory map to do it.
//!
//! The kernel sends the parent-death signal when the *thread* that forked
//! the child exits, not when the process does. A child forked on a tokio
//! blocking-pool thread (idle ones exit after ten seconds), on a worker of a
//! runtime that is later shut down, or on a test's thread would be signalled
//! while this process still runs and still uses it. So every child that asks
//! for the signal is started on one thread that lives as long as the
//! process: the spawner, started on first use and parked on a channel
//! between spawns. The caller waits for the spawn there; the child's pipes
//! and its reaper are registered with the caller's runtime.
//!
//! How it is started ([`clone`]): the way `posix_spawn` starts a child
//! (`clone` with `CLONE_VM | CLONE_VFORK`: the child borrows this process's
//! memory until it calls `exec`), with the `prctl` added between. The
//! standard library's `pre_exec` hook would do the same `prctl`, but a hook
//! makes it `fork`, which copies every page table of this process while
//! holding its memory-map lock: the cost grows with the agent's memory, and
//! 100 servers started at once queue behind each other's forks (about 40 ms
//! of a 100-server start on the benchmark machine; `bench start`). Where
//! that `clone` is refused (a kernel before 5.3, a seccomp filter), the
//! child is forked with the hook, as before.
//!
//! Why `SIGTERM` and not `SIGKILL`: most stdio servers are started through
//! a wrapper (`npx`, `uvx`, `docker run`, a shell) that forwards `SIGTERM`
//! to the real server, its own child, which the parent-death signal does
//! not reach; `SIGKILL` would kill the wrapper and orphan the real server.
//! `SIGTERM` is also the first signal of the transport's close sequence.
//! A server that ignores it is left running, but it also sees its stdin
//! close (this process held the only write end), which is the shutdown
//! signal the MCP specification gives first.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};

use tokio::process::Command;

#[cfg(target_os = "linux")]
mod clone;

/// What to start: the program, its arguments, its whole environment and
/// its working directory.
#[derive(Debug)]
pub(super) struct Spec {
    pub(super) program: String,
    pub(super) args: Vec<String>,
    /// The child's whole environment (nothing else is inherited).
    pub(super) env: Vec<(OsString, OsString)>,
    pub(super) cwd: Option<PathBuf>,
}

impl Spec {
    /// A tokio command for `spec`: piped stdio, its own process group,
    /// killed when dropped.
    fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        #[cfg(unix)]
        command.process_group(0);
        command
    }
}

/// The write end of the child's stdin.
#[cfg(unix)]
pub(super) type Stdin = tokio::net::unix::pipe::Sender;
/// The read end of the child's stdout or stderr.
#[cfg(unix)]
pub(super) type Output = tokio::net::unix::pipe::Receiver;
/// The write end of the child's stdin.
#[cfg(not(unix))]
pub(super) type Stdin = tokio::process::ChildStdin;
/// The read end of the child's stdout.
#[cfg(not(unix))]
pub(super) type Stdout = tokio::process::ChildStdout;
/// The read end of the child's stderr.
#[cfg(not(unix))]
pub(super) type Stderr = tokio::process::ChildStderr;
#[cfg(unix)]
pub(super) type Stdout = Output;
#[cfg(unix)]
pub(super) type Stderr = Output;

/// A started child: its id, its pipes, and what reaps it.
pub(super) struct Spawned {
    pub(super) pid: u32,
    pub(super) stdin: Stdin,
    pub(super) stdout: Stdout,
    pub(super) stderr: Stderr,
    pub(super) child: Child,
}

/// The child to wait for; killed (`SIGKILL`) when dropped before it was
/// reaped.
pub(super) enum Child {
    /// Started by tokio.
    Tokio(tokio::process::Child),
    /// Started by [`clone`], waited for on its pidfd.
    #[cfg(target_os = "linux")]
    Pidfd(clone::PidfdChild),
}

impl Child {
    /// Waits for the child to exit and reaps it.
    pub(super) async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self {
            Child::Tokio(c) => c.wait().await,
            #[cfg(target_os = "linux")]
            Child::Pidfd(c) => c.wait().await,
        }
    }

    /// Sends the child `SIGKILL` (or ends it where there are no signals).
    #[cfg(not(unix))]
    pub(super) fn start_kill(&mut self) -> io::Result<()> {
        match self {
            Child::Tokio(c) => c.start_kill(),
        }
    }
}

/// Starts `spec`; with `parent_death_signal`, so that the child gets
/// `SIGTERM` when this process dies (Linux and Android; elsewhere it is a
/// plain spawn).
pub(super) fn spawn(spec: Spec, parent_death_signal: bool) -> io::Result<Spawned> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if parent_death_signal {
        return linux::spawn_on_spawner(spec);
    }
    let _ = parent_death_signal;
    of_tokio(spec.command().spawn()?)
}

/// A tokio child's parts.
fn of_tokio(mut child: tokio::process::Child) -> io::Result<Spawned> {
    // Dropping `child` on the error paths kills it (`kill_on_drop`).
    let missing = || io::Error::other("the child's stdio pipes are missing");
    let pid = child.id().ok_or_else(missing)?;
    let stdin = child.stdin.take().ok_or_else(missing)?;
    let stdout = child.stdout.take().ok_or_else(missing)?;
    let stderr = child.stderr.take().ok_or_else(missing)?;
    #[cfg(unix)]
    let (stdin, stdout, stderr) = (
        Stdin::from_owned_fd(stdin.into_owned_fd()?)?,
        Output::from_owned_fd(stdout.into_owned_fd()?)?,
        Output::from_owned_fd(stderr.into_owned_fd()?)?,
    );
    Ok(Spawned {
        pid,
        stdin,
        stdout,
        stderr,
        child: Child::Tokio(child),
    })
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod linux {
    use std::io;
    use std::sync::{Mutex, mpsc};

    use tokio::process::Command;

    use super::{Spawned, Spec};

    /// A spawn to run on the spawner thread.
    type Job = Box<dyn FnOnce() + Send>;

    /// The spawner thread's queue, once it runs. Its sender lives here for
    /// ever, so the thread never ends.
    static SPAWNER: Mutex<Option<mpsc::Sender<Job>>> = Mutex::new(None);

    /// Hands `job` to the spawner thread, starting it on first use (again,
    /// if starting it failed before).
    fn run_on_spawner(job: Job) -> io::Result<()> {
        let mut queue = SPAWNER.lock().unwrap_or_else(|p| p.into_inner());
        if queue.is_none() {
            let (tx, rx) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("mcp-stdio-spawner".into())
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        // A panicking spawn must not take the thread (and
                        // every child's parent-death signal) with it.
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    }
                })?;
            *queue = Some(tx);
        }
        queue
            .as_ref()
            .ok_or_else(|| io::Error::other("the stdio spawner thread is not running"))?
            .send(job)
            .map_err(|_| io::Error::other("the stdio spawner thread is gone"))
    }

    /// Starts `spec` on the spawner thread, with the caller's runtime
    /// entered there, and waits for the outcome.
    pub(super) fn spawn_on_spawner(spec: Spec) -> io::Result<Spawned> {
        let handle = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
        let (done, outcome) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            let _entered = handle.enter();
            // The caller waits for this; if it is gone, the child is dropped
            // and killed.
            let _ = done.send(start(spec));
        });
        run_on_spawner(job)?;
        outcome
            .recv()
            .map_err(|_| io::Error::other("the stdio spawner thread dropped a spawn"))?
    }

    /// On the spawner: `clone` where the kernel allows it, else a fork with
    /// the `prctl` in a `pre_exec` hook.
    fn start(spec: Spec) -> io::Result<Spawned> {
        #[cfg(target_os = "linux")]
        match super::clone::spawn(&spec) {
            Ok(child) => return child.into_spawned(),
            Err(super::clone::Failure::Io(e)) => return Err(e),
            Err(super::clone::Failure::Refused(e)) => {
                tracing::debug!(
                    "clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD) refused ({e}); forking instead"
                );
            }
        }
        let mut command = spec.command();
        signal_on_parent_death(&mut command)?;
        super::of_tokio(command.spawn()?)
    }

    /// Has the child ask for `SIGTERM` when its parent thread (the spawner,
    /// which lives as long as this process) dies.
    #[allow(unsafe_code)]
    fn signal_on_parent_death(command: &mut Command) -> io::Result<()> {
        let parent = libc::pid_t::try_from(std::process::id())
            .map_err(|_| io::Error::other("this process's id does not fit a pid_t"))?;
        let signal = libc::c_ulong::try_from(libc::SIGTERM)
            .map_err(|_| io::Error::other("SIGTERM does not fit an unsigned long"))?;
        // SAFETY: the closure runs in the child between fork and exec, where
        // only async-signal-safe calls are allowed: it makes two system
        // calls (`prctl`, `getppid`, both async-signal-safe, touching no
        // memory of ours) and builds an `io::Error` from an OS error code,
        // which does not allocate. It takes no lock and captures two
        // integers.
        unsafe {
            command.pre_exec(move || {
                let unused: libc::c_ulong = 0;
                if libc::prctl(libc::PR_SET_PDEATHSIG, signal, unused, unused, unused) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The parent may have died between the fork and the prctl:
                // then the signal was never sent, and the child was handed
                // to another process. Do not run the server at all.
                if libc::getppid() != parent {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
        Ok(())
    }
}
