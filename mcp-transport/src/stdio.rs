//! A server started as a child process: one JSON-RPC message per line on its
//! stdin and stdout, free-form logging on its stderr.
//!
//! [`StdioTransport::spawn`] starts the program directly (never through a
//! shell) in its own process group, with a small allowlist of this process's
//! environment ([`ENV_ALLOWLIST`]) plus the variables its [`StdioConfig`]
//! names.
//!
//! * stdout is decoded with [`NewlineCodec`]: lines that are not messages
//!   arrive as [`Received::Invalid`], and the stream goes on. Batches are
//!   accepted only once a message's context names protocol revision
//!   2025-03-26 (see [`SendContext::revision`]).
//! * stderr is read line by line (each line bounded), handed to a listener
//!   (by default `tracing` at debug level, tagged with the server name) and the
//!   last lines are kept for diagnostics ([`ServerProcess::stderr_tail`]).
//!   [`Transport::process`] gives them, and the exit status.
//! * [`Transport::close`] closes stdin, waits, sends `SIGTERM` to the whole
//!   process group, waits, sends `SIGKILL`, and reaps the child. Grandchildren
//!   (the real server behind an `npx` or `uvx` wrapper) are ended too.
//! * Dropping the transport without closing it kills the process group at once,
//!   as does [`ServerProcess::kill`] (for an application that must exit now).
//! * On Linux, the server gets `SIGTERM` when this process dies, however it
//!   dies (`PR_SET_PDEATHSIG`; [`StdioConfig::parent_death_signal`]). Servers
//!   are forked on one long-lived thread, so the signal does not come early
//!   when the thread that called [`StdioTransport::spawn`] exits.
//!
//! When the server exits, `recv` returns [`TransportError::Closed`] with the
//! exit status and the last stderr lines.
//!
//! Sends are written straight to the pipe by the sender (no writer task),
//! and `recv` decodes straight from the pipe (no reader task): a round trip
//! costs no task hand-offs. Requests sent together leave in one `write`
//! (see `lines.rs`). `recv` is cancel-safe. A `send` cancelled half-way
//! leaves the rest of its message to be written by the next `send`, so
//! the server never sees two messages interleaved.
//!
//! Arguments appear in `Debug` output; environment values never do.
//!
//! # Example
//!
//! ```
//! # #[cfg(unix)] {
//! use mcp_stack_jsonrpc::{Message, Notification};
//! use mcp_stack_transport::stdio::{StdioConfig, StdioTransport};
//! use mcp_stack_transport::{Received, Transport};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! // `cat` echoes every line: a stand-in for a server.
//! let transport = StdioTransport::spawn(StdioConfig::new("cat").server_name("echo")).unwrap();
//! transport.send(&Message::from(Notification::new("ping", None))).await.unwrap();
//! let Received::Message(m) = transport.recv().await.unwrap() else { panic!() };
//! assert_eq!(m.method(), Some("ping"));
//! transport.close().await;
//! assert!(transport.recv().await.unwrap_err().is_closed());
//! # });
//! # }
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::sync::Arc;
use std::sync::Mutex as StdMutex;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use futures_util::StreamExt;
use mcp_stack_jsonrpc::{Frame, NewlineCodec, OutgoingRequest};
use tokio::sync::{Mutex, OnceCell, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

use crate::lines::{LineWriter, SendFailure, lock};
use crate::woken::WokenOnly;
use crate::{
    Answer, BatchGate, BoxFuture, ExitInfo, Message, Received, SendContext, ServerProcess,
    Transport, TransportError, TransportKind, frame_to_received,
};

mod config;
mod process;
#[cfg(unix)]
pub use process::signal_group;
mod spawn;

pub use config::{
    DEFAULT_STDERR_MAX_LINE_LENGTH, DEFAULT_STDERR_TAIL_LINES, DEFAULT_STDIN_CLOSE_TIMEOUT,
    DEFAULT_TERM_TIMEOUT, ENV_ALLOWLIST, StderrListener, StdioConfig,
};
use config::{EXIT_AFTER_EOF_TIMEOUT, KILL_TIMEOUT, STDERR_DRAIN_TIMEOUT, STDOUT_AFTER_EXIT_GRACE};
use process::{Signal, read_stderr, reap};

/// A connection to a server running as a child process.
///
/// Must be created inside a tokio runtime with IO and time enabled.
pub struct StdioTransport {
    shared: Arc<Shared>,
    writer: LineWriter<spawn::Stdin>,
    reader: Mutex<Reader>,
    /// Whether batches are accepted (shared with the codec).
    batches: BatchGate,
    /// Cancelled when close starts: pending sends and receives end.
    closing: CancellationToken,
    closed: OnceCell<()>,
    stdin_close_timeout: Duration,
    term_timeout: Duration,
    stderr_task: JoinHandle<()>,
}

/// What the transport and its background tasks share.
struct Shared {
    server_name: String,
    /// The child's pid, which is also its process group id.
    pid: u32,
    status: watch::Sender<Status>,
    stderr: StderrState,
    /// The process group is known to be empty: never signal it again (its id
    /// may be reused).
    group_gone: AtomicBool,
    /// Asks the reaper task to kill the child (where there are no process groups).
    #[cfg(not(unix))]
    kill: CancellationToken,
}

#[derive(Debug, Clone, Default)]
struct Status {
    /// How the child ended, and when we learned of it.
    exit: Option<(ExitInfo, Instant)>,
    /// The stderr reader reached the end of the stream.
    stderr_done: bool,
}

struct StderrState {
    listener: StdMutex<Option<StderrListener>>,
    tail: StdMutex<VecDeque<String>>,
    tail_lines: usize,
    max_line_length: usize,
}

struct Reader {
    frames: Option<FramedRead<spawn::Stdout, NewlineCodec>>,
    /// Items of a batch not handed out yet.
    pending: VecDeque<Received>,
    /// Why stdout ended, once it has.
    ended: Option<End>,
    /// The exit status was waited for after stdout ended.
    settled: bool,
    status: watch::Receiver<Status>,
    /// Resolves once close starts or the exit status arrives. Kept across
    /// receives, so waiting for a message registers these wakers once, not
    /// on every call (a `watch` and a `Notify` registration and removal per
    /// message: about 300 instructions of a round trip), and polled only
    /// when one of them fired.
    ending: WokenOnly<Ending>,
    /// What `ending` resolved to.
    ended_by: Option<Ending>,
}

/// What ends reading besides the stream itself.
#[derive(Debug, Clone, Copy)]
enum Ending {
    /// Close started.
    Closing,
    /// The server exited at this time (stdout gets a grace period).
    Exited(Instant),
}

/// The future behind [`Reader::ending`].
async fn ending(closing: CancellationToken, mut status: watch::Receiver<Status>) -> Ending {
    let exited_at = tokio::select! {
        biased;
        () = closing.cancelled() => return Ending::Closing,
        seen = status.wait_for(|s| s.exit.is_some()) => {
            seen.ok().and_then(|s| s.exit.as_ref().map(|e| e.1))
        }
    };
    match exited_at {
        Some(at) => Ending::Exited(at),
        // The status is gone (cannot be while the transport lives): only
        // close is left to wait for.
        None => {
            closing.cancelled().await;
            Ending::Closing
        }
    }
}

impl StdioTransport {
    /// Starts the server.
    ///
    /// Fails with [`TransportError::Spawn`] when the program cannot be
    /// started (not found, not executable, bad working directory) or when
    /// called outside a tokio runtime.
    pub fn spawn(config: StdioConfig) -> Result<StdioTransport, TransportError> {
        let spawn_error = |source: io::Error| TransportError::Spawn {
            program: config.program.clone(),
            source,
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(spawn_error(io::Error::other(
                "StdioTransport::spawn must be called inside a tokio runtime",
            )));
        }
        if let Some(cwd) = &config.cwd
            && !cwd.is_dir()
        {
            return Err(spawn_error(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("working directory `{}` is not a directory", cwd.display()),
            )));
        }

        let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = ENV_ALLOWLIST
            .iter()
            .filter(|key| !config.env.contains_key(**key))
            .filter_map(|key| std::env::var_os(key).map(|value| ((*key).into(), value)))
            .collect();
        env.extend(config.env.iter().map(|(k, v)| (k.into(), v.into())));
        let spec = spawn::Spec {
            program: config.program.clone(),
            args: config.args.clone(),
            env,
            cwd: config.cwd.clone(),
        };
        let spawn::Spawned {
            pid,
            stdin,
            stdout,
            stderr,
            child,
        } = spawn::spawn(spec, config.parent_death_signal).map_err(spawn_error)?;

        let server_name = config.name().to_owned();
        tracing::debug!(server = %server_name, program = %config.program, pid, "started stdio server");
        let listener = config.stderr_listener.clone().unwrap_or_else(|| {
            let name = server_name.clone();
            Arc::new(move |line: &str| tracing::debug!(server = %name, "stderr: {line}"))
        });
        let (status, status_rx) = watch::channel(Status::default());
        let shared = Arc::new(Shared {
            server_name,
            pid,
            status,
            stderr: StderrState {
                listener: StdMutex::new(Some(listener)),
                tail: StdMutex::new(VecDeque::with_capacity(config.stderr_tail_lines.min(64))),
                tail_lines: config.stderr_tail_lines,
                max_line_length: config.stderr_max_line_length.max(1),
            },
            group_gone: AtomicBool::new(false),
            #[cfg(not(unix))]
            kill: CancellationToken::new(),
        });

        tokio::spawn(reap(child, Arc::clone(&shared)));
        let stderr_task = tokio::spawn(read_stderr(stderr, Arc::clone(&shared)));
        let closing = CancellationToken::new();
        let batches = BatchGate::new(config.max_batch_elements);

        Ok(StdioTransport {
            writer: LineWriter::new(stdin, config.max_frame_length),
            reader: Mutex::new(Reader {
                frames: Some(FramedRead::new(
                    stdout,
                    NewlineCodec::with_max_frame_length(config.max_frame_length)
                        .with_batch_switch(batches.switch()),
                )),
                pending: VecDeque::new(),
                ended: None,
                settled: false,
                ending: WokenOnly::new(ending(closing.clone(), status_rx.clone())),
                ended_by: None,
                status: status_rx,
            }),
            batches,
            shared,
            closing,
            closed: OnceCell::new(),
            stdin_close_timeout: config.stdin_close_timeout,
            term_timeout: config.term_timeout,
            stderr_task,
        })
    }

    /// The child's process id (also its process group id on unix).
    pub fn pid(&self) -> u32 {
        self.shared.pid
    }

    /// The name used in logs.
    pub fn server_name(&self) -> &str {
        &self.shared.server_name
    }

    fn closed_error(&self, reason: impl Into<String>) -> TransportError {
        TransportError::Closed {
            reason: reason.into(),
            exit: self.exit_info(),
            stderr_tail: self.stderr_tail(),
        }
    }

    async fn send_message(&self, message: &Message, cancels: bool) -> Result<(), TransportError> {
        self.sent(self.writer.send(message, cancels, &self.closing).await)
    }

    /// What a send's failure is to the caller.
    fn sent(&self, result: Result<(), SendFailure>) -> Result<(), TransportError> {
        match result {
            Ok(()) => Ok(()),
            Err(SendFailure::Encode(e)) => Err(e.into()),
            Err(SendFailure::Closing) => Err(self.closed_error("closed by client")),
            Err(SendFailure::Gone) => Err(self.closed_error(if self.closing.is_cancelled() {
                "closed by client"
            } else {
                "server stdin is closed"
            })),
            Err(SendFailure::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => {
                Err(self.closed_error("server closed stdin"))
            }
            Err(SendFailure::Io(e)) => Err(TransportError::Io(e)),
        }
    }

    async fn recv_item(&self) -> Result<Received, TransportError> {
        if self.closing.is_cancelled() {
            return Err(self.closed_error("closed by client"));
        }
        let mut guard = lock(&self.reader).await;
        let reader = &mut *guard;
        loop {
            if let Some(item) = reader.pending.pop_front() {
                return Ok(item);
            }
            if let Some(reason) = &reader.ended {
                if !reader.settled {
                    // Let the exit status and the last stderr lines arrive.
                    let exited_at = tokio::time::timeout(
                        EXIT_AFTER_EOF_TIMEOUT,
                        reader.status.wait_for(|s| s.exit.is_some()),
                    )
                    .await
                    .ok()
                    .and_then(|r| r.ok().and_then(|s| s.exit.as_ref().map(|e| e.1)));
                    if let Some(at) = exited_at {
                        // stderr may be held open by a grandchild: wait no longer
                        // than stdout would have been read.
                        let _ = tokio::time::timeout_at(
                            at + STDOUT_AFTER_EXIT_GRACE,
                            reader.status.wait_for(|s| s.stderr_done),
                        )
                        .await;
                    }
                    reader.settled = true;
                }
                let reason = match reason {
                    End::Eof if self.exit_info().is_some() => "server exited".to_owned(),
                    End::Eof => "server closed stdout".to_owned(),
                    End::Exited => "server exited".to_owned(),
                    End::ReadError(e) => format!("reading server stdout failed: {e}"),
                    End::Closed => "closed by client".to_owned(),
                };
                return Err(self.closed_error(reason));
            }
            let Some(frames) = reader.frames.as_mut() else {
                reader.ended = Some(End::Closed);
                continue;
            };
            let exited_at = match reader.ended_by {
                Some(Ending::Exited(at)) => Some(at),
                _ => None,
            };
            let grace = async {
                match exited_at {
                    Some(at) => tokio::time::sleep_until(at + STDOUT_AFTER_EXIT_GRACE).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                frame = frames.next() => match frame {
                    Some(Ok(Frame::Message(m))) => return Ok(Received::Message(m)),
                    Some(Ok(frame)) => frame_to_received(frame, &mut reader.pending),
                    Some(Err(e)) => {
                        tracing::debug!(server = %self.shared.server_name, "reading stdout failed: {e}");
                        reader.ended = Some(End::ReadError(e));
                    }
                    None => reader.ended = Some(End::Eof),
                },
                ending = &mut reader.ending, if reader.ended_by.is_none() => match ending {
                    Ending::Closing => return Err(self.closed_error("closed by client")),
                    // The exit status arrived: look again (and start the grace period).
                    exited => reader.ended_by = Some(exited),
                },
                // After the exit, `ending` is spent: close is watched here.
                () = self.closing.cancelled(), if reader.ended_by.is_some() => {
                    return Err(self.closed_error("closed by client"));
                }
                () = grace => {
                    // The server is gone but something still holds its stdout open.
                    reader.ended = Some(End::Exited);
                }
            }
        }
    }

    /// Waits up to `timeout` for the child to have been reaped.
    async fn wait_exit(&self, timeout: Duration) -> bool {
        let mut status = self.shared.status.subscribe();
        tokio::time::timeout(timeout, status.wait_for(|s| s.exit.is_some()))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    async fn close_sequence(&self) {
        let name = &self.shared.server_name;
        self.closing.cancel();
        // Pending sends give the lock up when `closing` fires.
        if self.writer.take_io(KILL_TIMEOUT).await.is_err() {
            tracing::warn!(server = %name, "could not close stdin: writer busy");
        }
        if !self.wait_exit(self.stdin_close_timeout).await {
            tracing::debug!(server = %name, "server did not exit after stdin closed; sending SIGTERM");
            self.shared.signal(Signal::Term);
            if !self.wait_exit(self.term_timeout).await {
                tracing::debug!(server = %name, "server did not exit after SIGTERM; sending SIGKILL");
                self.shared.signal(Signal::Kill);
                if !self.wait_exit(KILL_TIMEOUT).await {
                    tracing::warn!(server = %name, pid = self.shared.pid, "server did not exit after SIGKILL");
                }
            }
        }
        self.shared.end_group(self.term_timeout).await;
        // Let stderr reach its end so the tail is complete, then stop reading it.
        let mut status = self.shared.status.subscribe();
        let _ =
            tokio::time::timeout(STDERR_DRAIN_TIMEOUT, status.wait_for(|s| s.stderr_done)).await;
        self.stderr_task.abort();
        if let Ok(mut reader) = tokio::time::timeout(KILL_TIMEOUT, self.reader.lock()).await {
            reader.frames = None;
        }
        tracing::debug!(server = %name, exit = ?self.exit_info(), "closed stdio server");
    }
}

/// Why the server's stdout stream ended.
#[derive(Debug)]
enum End {
    /// End of file.
    Eof,
    /// The server exited and the grace period passed without end of file.
    Exited,
    /// Reading failed.
    ReadError(io::Error),
    /// The transport was closed.
    Closed,
}

impl Transport for StdioTransport {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        self.batches.follow(context);
        Box::pin(self.send_message(message, context.cancelled_request().is_some()))
    }

    // One box, not the default's two: a stdio request is sent here and
    // answered through `recv`.
    fn request_with<'a>(
        &'a self,
        request: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<Answer, TransportError>> {
        self.batches.follow(context);
        Box::pin(async move {
            self.send_message(request, false)
                .await
                .map(|()| Answer::Later)
        })
    }

    fn request_outgoing<'a>(
        &'a self,
        request: &'a OutgoingRequest<'a>,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<Answer, TransportError>> {
        self.batches.follow(context);
        Box::pin(async move {
            self.sent(self.writer.send_request(request, &self.closing).await)
                .map(|()| Answer::Later)
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Received, TransportError>> {
        Box::pin(async move {
            let item = self.recv_item().await;
            self.writer.received(&item);
            item
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.closed.get_or_init(|| self.close_sequence()).await;
        })
    }

    fn kind(&self) -> TransportKind {
        TransportKind::Stdio
    }

    fn process(&self) -> Option<&dyn ServerProcess> {
        Some(self)
    }
}

impl ServerProcess for StdioTransport {
    fn stderr_tail(&self) -> Vec<String> {
        let tail = self
            .shared
            .stderr
            .tail
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        tail.iter().cloned().collect()
    }

    fn exit_info(&self) -> Option<ExitInfo> {
        self.shared
            .status
            .borrow()
            .exit
            .as_ref()
            .map(|e| e.0.clone())
    }

    fn kill(&self) {
        tracing::debug!(server = %self.shared.server_name, "killing the server's process group");
        self.closing.cancel();
        self.shared.signal(Signal::Kill);
    }

    fn detach_stderr(&self) {
        *self
            .shared
            .stderr
            .listener
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = None;
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        if self.closed.get().is_none() {
            tracing::debug!(server = %self.shared.server_name, "stdio transport dropped without close; killing the server");
        }
        // The reaper task reaps the child; this only makes sure it dies.
        self.shared.signal(Signal::Kill);
        self.stderr_task.abort();
    }
}

impl fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioTransport")
            .field("server_name", &self.shared.server_name)
            .field("pid", &self.shared.pid)
            .field("exit", &self.exit_info())
            .field("closing", &self.closing.is_cancelled())
            .finish_non_exhaustive()
    }
}
