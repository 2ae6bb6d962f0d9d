//! Ctrl-C without orphans: on `SIGINT`, `SIGTERM` or `SIGHUP`, every server
//! `mcp` started is closed with its close sequence, then `mcp` exits with
//! 128 + the signal's number (130, 143, 129). A stdout found closed (a
//! reader that stopped early, `mcp tools --json | head -c 100`; `term`
//! notices it) ends the command the same way, quietly, with 141 (128 +
//! `SIGPIPE`, what a shell reports for other tools).
//!
//! One place decides: [`run`] drives a command on the CLI's runtime and races
//! it against the signals. What commands start is tracked here as it starts
//! ([`track`]: every transport, stdio or HTTP, the CLI's own or one its
//! runtime's connector opened; [`track_runtime`]: the runtime managers of
//! `--config`). On a signal the command's future is dropped at once, so it
//! prints nothing more (no error for the connection being closed under it,
//! no half a report), after what it holds was taken from here; then every
//! tracked transport's stderr listener is detached and the transports are
//! closed (stdin EOF → `SIGTERM` → `SIGKILL` to the group → reap, each step
//! bounded) and every runtime disposed of, all at once, within
//! [`CLOSE_BOUND`]. A second signal, or that bound, kills what is left (the
//! whole process group of each server) and exits at once. When the command
//! ends by itself, whatever it left open is closed the same way (a closed
//! transport's close returns at once).
//!
//! Tracking holds transports weakly: one a command drops is still killed by
//! its own `Drop`, as before. Runtime managers are held until the end.

use std::future::Future;

use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use mcp_stack_runtime::RuntimeManager;
use mcp_stack_transport::Transport;

use crate::term::{self, errln};
use tokio::task::JoinSet;

/// How long closing may take before what is left is killed. The stdio close
/// sequence is about 5 s at worst (2 s after stdin EOF, 2 s after `SIGTERM`,
/// 1 s after `SIGKILL`), and the servers close concurrently.
const CLOSE_BOUND: Duration = Duration::from_secs(10);

/// How long the runtime's shutdown after a signal waits for blocking tasks
/// (a prompt reading the terminal never ends by itself).
const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);

/// What commands started, for closing.
struct Started {
    transports: Vec<Weak<dyn Transport>>,
    runtimes: Vec<RuntimeManager>,
}

static STARTED: Mutex<Started> = Mutex::new(Started {
    transports: Vec::new(),
    runtimes: Vec::new(),
});

fn started() -> MutexGuard<'static, Started> {
    STARTED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Tracks a transport a command opened, so a signal closes it.
pub(crate) fn track(transport: &Arc<dyn Transport>) {
    let mut started = started();
    started.transports.retain(|t| t.strong_count() > 0);
    started.transports.push(Arc::downgrade(transport));
}

/// Tracks a runtime manager a command made, so a signal disposes of it.
pub(crate) fn track_runtime(manager: &RuntimeManager) {
    started().runtimes.push(manager.clone());
}

/// Transports (alive) and managers taken from the tracking.
type Taken = (Vec<Arc<dyn Transport>>, Vec<RuntimeManager>);

/// Takes what is tracked: the transports still alive, and the managers.
fn take() -> Taken {
    let mut started = started();
    let transports = started
        .transports
        .drain(..)
        .filter_map(|t| t.upgrade())
        .collect();
    (transports, std::mem::take(&mut started.runtimes))
}

/// A signal that ends `mcp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caught {
    Interrupt,
    Terminate,
    Hangup,
    /// Not a signal: stdout was found closed (`term::stdout_closed`),
    /// which ends the command as `SIGPIPE` ends other tools.
    ClosedPipe,
}

impl Caught {
    fn name(self) -> &'static str {
        match self {
            Caught::Interrupt => "SIGINT",
            Caught::Terminate => "SIGTERM",
            Caught::Hangup => "SIGHUP",
            Caught::ClosedPipe => "a closed stdout",
        }
    }

    /// 128 + the signal's number (the same on every POSIX system).
    fn exit_code(self) -> ExitCode {
        ExitCode::from(match self {
            Caught::Interrupt => 128 + 2,
            Caught::Terminate => 128 + 15,
            Caught::Hangup => 128 + 1,
            Caught::ClosedPipe => term::CLOSED_PIPE_EXIT,
        })
    }
}

/// The signals watched, installed before the command starts anything.
struct Signals {
    #[cfg(unix)]
    watched: [(Caught, tokio::signal::unix::Signal); 3],
}

impl Signals {
    #[cfg(unix)]
    fn install() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            watched: [
                (Caught::Interrupt, signal(SignalKind::interrupt())?),
                (Caught::Terminate, signal(SignalKind::terminate())?),
                (Caught::Hangup, signal(SignalKind::hangup())?),
            ],
        })
    }

    #[cfg(not(unix))]
    fn install() -> std::io::Result<Self> {
        Ok(Signals {})
    }

    /// The next signal (never, where none can be had).
    #[cfg(unix)]
    async fn next(&mut self) -> Caught {
        let [(a, sa), (b, sb), (c, sc)] = &mut self.watched;
        tokio::select! {
            Some(()) = sa.recv() => *a,
            Some(()) = sb.recv() => *b,
            Some(()) = sc.recv() => *c,
            else => std::future::pending().await,
        }
    }

    #[cfg(not(unix))]
    async fn next(&mut self) -> Caught {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
        Caught::Interrupt
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            errln!("mcp: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        })
}

/// Runs `future` on a new runtime, signals left alone (the demo server).
pub(crate) fn run_unwatched(future: impl Future<Output = ExitCode>) -> ExitCode {
    match runtime() {
        Ok(rt) => rt.block_on(future),
        Err(code) => code,
    }
}

/// Runs `command` on a new runtime; on a signal, closes what it started and
/// returns the signal's exit status.
pub(crate) fn run(command: impl Future<Output = ExitCode>) -> ExitCode {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let (code, interrupted) = rt.block_on(supervise(command));
    if interrupted {
        // What is left (tasks holding a killed transport) is dropped; a
        // blocking read of the terminal is not waited for.
        rt.shutdown_timeout(SHUTDOWN_GRACE);
    }
    code
}

/// The command raced against the signals; whether a signal ended it.
async fn supervise(command: impl Future<Output = ExitCode>) -> (ExitCode, bool) {
    let mut signals = match Signals::install() {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::debug!("cannot watch for signals: {e}");
            None
        }
    };
    let mut command = Box::pin(command);
    let caught = tokio::select! {
        biased;
        caught = next_signal(&mut signals) => caught,
        // Stdout closed: the command ends at once, quietly, as on a signal.
        () = term::stdout_closing() => Caught::ClosedPipe,
        code = &mut command => {
            return match close_started(&mut signals, Taken::default()).await {
                Some(caught) => (caught.exit_code(), true),
                None => (code, false),
            };
        }
    };
    // Hold what the command started before dropping it (transports are
    // tracked weakly: dropped with it, they would be killed, not closed),
    // then drop it: it prints nothing more.
    let held = take();
    drop(command);
    let servers = held.0.len();
    tracing::debug!(signal = caught.name(), servers, "closing what was started");
    if caught == Caught::Interrupt && term::stderr_is_terminal() {
        // Off the line the terminal echoed `^C` on (or a progress bar).
        errln!();
        if servers > 0 {
            errln!(
                "mcp: interrupted; closing {servers} server{} (Ctrl-C again to kill at once)",
                if servers == 1 { "" } else { "s" }
            );
        }
    }
    if let Some(again) = close_started(&mut signals, held).await {
        tracing::debug!(signal = again.name(), "killed what was left");
    }
    (caught.exit_code(), true)
}

async fn next_signal(signals: &mut Option<Signals>) -> Caught {
    match signals {
        Some(s) => s.next().await,
        None => std::future::pending().await,
    }
}

/// Closes `first` and every tracked transport, and disposes of every
/// tracked runtime, concurrently, until nothing tracked is left or
/// [`CLOSE_BOUND`] passes; then, or on a signal meanwhile, kills the
/// process groups of what is left. The signal, if one came.
async fn close_started(signals: &mut Option<Signals>, first: Taken) -> Option<Caught> {
    let deadline = tokio::time::Instant::now() + CLOSE_BOUND;
    let mut held: Vec<Arc<dyn Transport>> = Vec::new();
    let mut closing = JoinSet::new();
    let mut first = Some(first);
    loop {
        // Again after each close: a runtime's build may still start a server.
        let (mut transports, mut runtimes) = take();
        if let Some((t, r)) = first.take() {
            transports.extend(t);
            runtimes.extend(r);
        }
        if transports.is_empty() && runtimes.is_empty() && closing.is_empty() {
            return None;
        }
        for transport in transports {
            if let Some(process) = transport.process() {
                process.detach_stderr();
            }
            let closed = Arc::clone(&transport);
            closing.spawn(async move { closed.close().await });
            held.push(transport);
        }
        for manager in runtimes {
            closing.spawn(async move { manager.dispose_all().await });
        }
        tokio::select! {
            biased;
            caught = next_signal(signals) => {
                kill(&held);
                return Some(caught);
            }
            () = tokio::time::sleep_until(deadline) => {
                tracing::warn!("servers still closing after {CLOSE_BOUND:?}: killing them");
                kill(&held);
                return None;
            }
            _ = closing.join_next() => {}
        }
    }
}

/// Kills the process group of every server in `transports` (stdio).
fn kill(transports: &[Arc<dyn Transport>]) {
    for process in transports.iter().filter_map(|t| t.process()) {
        process.kill();
    }
}
