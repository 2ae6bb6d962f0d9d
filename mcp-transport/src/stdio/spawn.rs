//! Starting the child: on Linux, so that it gets `SIGTERM` when this process
//! dies, however it dies (`PR_SET_PDEATHSIG`).
//!
//! The kernel sends the parent-death signal when the *thread* that forked
//! the child exits, not when the process does. A child forked on a tokio
//! blocking-pool thread (idle ones exit after ten seconds), on a worker of a
//! runtime that is later shut down, or on a test's thread would be signalled
//! while this process still runs and still uses it. So every child that asks
//! for the signal is forked on one thread that lives as long as the process:
//! the spawner, started on first use and parked on a channel between spawns.
//! The caller waits for the fork there (a few hundred microseconds, as long
//! as the fork itself takes on its own thread); the child's pipes and its
//! reaper are registered with the caller's runtime (its handle is entered
//! on the spawner for the spawn), so nothing else changes.
//!
//! Why `SIGTERM` and not `SIGKILL`: most stdio servers are started through
//! a wrapper (`npx`, `uvx`, `docker run`, a shell) that forwards `SIGTERM`
//! to the real server, its own child, which the parent-death signal does
//! not reach; `SIGKILL` would kill the wrapper and orphan the real server.
//! `SIGTERM` is also the first signal of the transport's close sequence.
//! A server that ignores it is left running, but it also sees its stdin
//! close (this process held the only write end), which is the shutdown
//! signal the MCP specification gives first.

use std::io;

use tokio::process::{Child, Command};

/// Spawns `command`; with `parent_death_signal`, so that the child gets
/// `SIGTERM` when this process dies (Linux and Android; elsewhere it is a
/// plain spawn).
pub(super) fn spawn(mut command: Command, parent_death_signal: bool) -> io::Result<Child> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if parent_death_signal {
        linux::signal_on_parent_death(&mut command)?;
        return linux::spawn_on_spawner(command);
    }
    let _ = parent_death_signal;
    command.spawn()
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod linux {
    use std::io;
    use std::sync::{Mutex, mpsc};

    use tokio::process::{Child, Command};

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

    /// Forks `command` on the spawner thread, with the caller's runtime
    /// entered there, and waits for the outcome.
    pub(super) fn spawn_on_spawner(mut command: Command) -> io::Result<Child> {
        let handle = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
        let (done, outcome) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            let _entered = handle.enter();
            // The caller waits for this; if it is gone, the child is dropped
            // and killed (`kill_on_drop`).
            let _ = done.send(command.spawn());
        });
        run_on_spawner(job)?;
        outcome
            .recv()
            .map_err(|_| io::Error::other("the stdio spawner thread dropped a spawn"))?
    }

    /// Has the child ask for `SIGTERM` when its parent thread (the spawner,
    /// which lives as long as this process) dies.
    #[allow(unsafe_code)]
    pub(super) fn signal_on_parent_death(command: &mut Command) -> io::Result<()> {
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
