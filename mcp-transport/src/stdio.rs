//! A server started as a child process: one JSON-RPC message per line on its
//! stdin and stdout, free-form logging on its stderr.
//!
//! [`StdioTransport::spawn`] starts the program directly (never through a
//! shell) in its own process group, with a small allowlist of this process's
//! environment ([`ENV_ALLOWLIST`]) plus the variables its [`StdioConfig`]
//! names.
//!
//! * stdout is decoded with [`NewlineCodec`]: lines that are not messages
//!   arrive as [`Received::Invalid`], and the stream goes on.
//! * stderr is read line by line (each line bounded), handed to a listener
//!   (by default `tracing` at debug level, tagged with the server name) and the
//!   last lines are kept for diagnostics ([`ServerProcess::stderr_tail`]).
//!   [`Transport::process`] gives them, and the exit status.
//! * [`Transport::close`] closes stdin, waits, sends `SIGTERM` to the whole
//!   process group, waits, sends `SIGKILL`, and reaps the child. Grandchildren
//!   (the real server behind an `npx` or `uvx` wrapper) are ended too.
//! * Dropping the transport without closing it kills the process group at once.
//!
//! When the server exits, `recv` returns [`TransportError::Closed`] with the
//! exit status and the last stderr lines.
//!
//! Sends are written straight to the pipe under a lock (no writer task), and
//! `recv` decodes straight from the pipe (no reader task): a round trip costs
//! no task hand-offs. `recv` is cancel-safe. A `send` cancelled half-way
//! leaves the rest of its message to be written by the next `send`, so
//! the server never sees two messages interleaved.
//!
//! Arguments appear in `Debug` output; environment values never do.
//!
//! # Example
//!
//! ```
//! # #[cfg(unix)] {
//! use mcp_jsonrpc::{Message, Notification};
//! use mcp_transport::stdio::{StdioConfig, StdioTransport};
//! use mcp_transport::{Received, Transport};
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

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::Mutex as StdMutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use futures_util::StreamExt;
use mcp_jsonrpc::{DEFAULT_MAX_FRAME_LENGTH, Frame, NewlineCodec};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{Mutex, OnceCell, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::codec::{Encoder, FramedRead};
use tokio_util::sync::CancellationToken;

use crate::{
    BoxFuture, ExitInfo, Message, Received, SendContext, ServerProcess, Transport, TransportError,
    TransportKind, frame_to_received,
};

/// The variables of this process's environment a server inherits (when set).
///
/// Everything else must be named in [`StdioConfig::env`]: API keys of other
/// servers, for example, are not passed on.
#[cfg(not(windows))]
pub const ENV_ALLOWLIST: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ",
];

/// The variables of this process's environment a server inherits (when set).
///
/// Everything else must be named in [`StdioConfig::env`].
#[cfg(windows)]
pub const ENV_ALLOWLIST: &[&str] = &[
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "TERM",
    "USER",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "TZ",
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
];

/// How long [`Transport::close`] waits for the server to exit after closing its stdin.
pub const DEFAULT_STDIN_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long [`Transport::close`] waits after `SIGTERM` before `SIGKILL`.
pub const DEFAULT_TERM_TIMEOUT: Duration = Duration::from_secs(2);

/// How many stderr lines are kept for diagnostics.
pub const DEFAULT_STDERR_TAIL_LINES: usize = 20;

/// The longest stderr line handed on, in bytes; longer lines are cut.
pub const DEFAULT_STDERR_MAX_LINE_LENGTH: usize = 8 * 1024;

/// How long to wait for a process to go after `SIGKILL`.
const KILL_TIMEOUT: Duration = Duration::from_secs(1);

/// After stdout ends, how long to wait for the exit status.
const EXIT_AFTER_EOF_TIMEOUT: Duration = Duration::from_secs(1);

/// After the server exits, how long to go on reading a stdout that something
/// else (an orphaned grandchild) still holds open.
const STDOUT_AFTER_EXIT_GRACE: Duration = Duration::from_millis(500);

/// How often the group is checked once its leader is gone.
const GROUP_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// At close, how long the stderr reader may take to reach the end of the stream.
const STDERR_DRAIN_TIMEOUT: Duration = Duration::from_millis(200);

/// A buffer for outgoing messages larger than this is not kept between sends.
const KEEP_WRITE_BUFFER: usize = 1024 * 1024;

/// Receives each line the server writes to stderr, without its line end.
pub type StderrListener = Arc<dyn Fn(&str) + Send + Sync>;

/// How to start a stdio server.
///
/// ```
/// use std::time::Duration;
/// use mcp_transport::stdio::StdioConfig;
///
/// let config = StdioConfig::new("npx")
///     .args(["-y", "@modelcontextprotocol/server-memory"])
///     .env("MEMORY_FILE_PATH", "/tmp/memory.json")
///     .server_name("memory")
///     .stdin_close_timeout(Duration::from_millis(500));
/// // Env values are never shown.
/// assert!(!format!("{config:?}").contains("/tmp/memory.json"));
/// ```
#[derive(Clone)]
pub struct StdioConfig {
    program: String,
    args: Vec<String>,
    cwd: Option<PathBuf>,
    env: BTreeMap<String, String>,
    server_name: Option<String>,
    max_frame_length: usize,
    stdin_close_timeout: Duration,
    term_timeout: Duration,
    stderr_listener: Option<StderrListener>,
    stderr_tail_lines: usize,
    stderr_max_line_length: usize,
}

impl StdioConfig {
    /// A configuration to run `program` (looked up on `PATH` when it has no
    /// slash), with no arguments and the defaults.
    pub fn new(program: impl Into<String>) -> Self {
        StdioConfig {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: BTreeMap::new(),
            server_name: None,
            max_frame_length: DEFAULT_MAX_FRAME_LENGTH,
            stdin_close_timeout: DEFAULT_STDIN_CLOSE_TIMEOUT,
            term_timeout: DEFAULT_TERM_TIMEOUT,
            stderr_listener: None,
            stderr_tail_lines: DEFAULT_STDERR_TAIL_LINES,
            stderr_max_line_length: DEFAULT_STDERR_MAX_LINE_LENGTH,
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The working directory (default: this process's).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Sets an environment variable for the server (on top of [`ENV_ALLOWLIST`]).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Sets environment variables for the server.
    pub fn envs<I, K, V>(mut self, vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.env
            .extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// The name used in logs (default: the program).
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(name.into());
        self
    }

    /// The longest message accepted or sent, in bytes (default 16 MiB).
    pub fn max_frame_length(mut self, bytes: usize) -> Self {
        self.max_frame_length = bytes;
        self
    }

    /// How long close waits for the server to exit after closing its stdin (default 2 s).
    pub fn stdin_close_timeout(mut self, timeout: Duration) -> Self {
        self.stdin_close_timeout = timeout;
        self
    }

    /// How long close waits after `SIGTERM` before `SIGKILL` (default 2 s).
    pub fn term_timeout(mut self, timeout: Duration) -> Self {
        self.term_timeout = timeout;
        self
    }

    /// Where stderr lines go (default: `tracing` at debug level, with the server name).
    pub fn stderr_listener(mut self, listener: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.stderr_listener = Some(Arc::new(listener));
        self
    }

    /// How many stderr lines to keep for diagnostics (default 20).
    pub fn stderr_tail_lines(mut self, lines: usize) -> Self {
        self.stderr_tail_lines = lines;
        self
    }

    /// The longest stderr line handed on, in bytes (default 8 KiB); longer lines are cut.
    pub fn stderr_max_line_length(mut self, bytes: usize) -> Self {
        self.stderr_max_line_length = bytes;
        self
    }

    /// The program to run.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The name used in logs.
    pub fn name(&self) -> &str {
        self.server_name.as_deref().unwrap_or(&self.program)
    }
}

impl fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Redacted<'a>(&'a BTreeMap<String, String>);
        impl fmt::Debug for Redacted<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_map()
                    .entries(self.0.keys().map(|k| (k, "<redacted>")))
                    .finish()
            }
        }
        f.debug_struct("StdioConfig")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("env", &Redacted(&self.env))
            .field("server_name", &self.server_name)
            .field("max_frame_length", &self.max_frame_length)
            .field("stdin_close_timeout", &self.stdin_close_timeout)
            .field("term_timeout", &self.term_timeout)
            .field(
                "stderr_listener",
                &self.stderr_listener.as_ref().map(|_| "<fn>"),
            )
            .field("stderr_tail_lines", &self.stderr_tail_lines)
            .field("stderr_max_line_length", &self.stderr_max_line_length)
            .finish()
    }
}

/// A connection to a server running as a child process.
///
/// Must be created inside a tokio runtime with IO and time enabled.
pub struct StdioTransport {
    shared: Arc<Shared>,
    writer: Mutex<Writer>,
    reader: Mutex<Reader>,
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

struct Writer {
    stdin: Option<ChildStdin>,
    codec: NewlineCodec,
    /// Encoded bytes not yet written: empty between sends, unless a send was
    /// cancelled mid-write, in which case the next send finishes that message first.
    buf: BytesMut,
}

struct Reader {
    frames: Option<FramedRead<ChildStdout, NewlineCodec>>,
    /// Items of a batch not handed out yet.
    pending: VecDeque<Received>,
    /// Why stdout ended, once it has.
    ended: Option<End>,
    /// The exit status was waited for after stdout ended.
    settled: bool,
    status: watch::Receiver<Status>,
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

        let mut command = Command::new(&config.program);
        command.args(&config.args).env_clear();
        for key in ENV_ALLOWLIST {
            if let Some(value) = std::env::var_os(key) {
                command.env(key, value);
            }
        }
        command.envs(&config.env);
        if let Some(cwd) = &config.cwd {
            command.current_dir(cwd);
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);

        let mut child = command.spawn().map_err(spawn_error)?;
        // Dropping `child` on the error paths below kills it (`kill_on_drop`).
        let missing = || spawn_error(io::Error::other("the child's stdio pipes are missing"));
        let pid = child.id().ok_or_else(missing)?;
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let stderr = child.stderr.take().ok_or_else(missing)?;

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

        Ok(StdioTransport {
            writer: Mutex::new(Writer {
                stdin: Some(stdin),
                codec: NewlineCodec::with_max_frame_length(config.max_frame_length),
                buf: BytesMut::with_capacity(8 * 1024),
            }),
            reader: Mutex::new(Reader {
                frames: Some(FramedRead::new(
                    stdout,
                    NewlineCodec::with_max_frame_length(config.max_frame_length),
                )),
                pending: VecDeque::new(),
                ended: None,
                settled: false,
                status: status_rx,
            }),
            shared,
            closing: CancellationToken::new(),
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

    async fn send_message(&self, message: &Message) -> Result<(), TransportError> {
        if self.closing.is_cancelled() {
            return Err(self.closed_error("closed by client"));
        }
        let mut guard = self.writer.lock().await;
        let writer = &mut *guard;
        let Some(stdin) = writer.stdin.as_mut() else {
            return Err(self.closed_error(if self.closing.is_cancelled() {
                "closed by client"
            } else {
                "server stdin is closed"
            }));
        };
        // Leftover bytes of a cancelled send stay in front and are written first.
        writer.codec.encode(message, &mut writer.buf)?;
        let written = tokio::select! {
            biased;
            r = write_message(stdin, &mut writer.buf) => r,
            () = self.closing.cancelled() => return Err(self.closed_error("closed by client")),
        };
        if let Err(e) = written {
            // The pipe is in an unknown state: no further writes.
            writer.stdin = None;
            writer.buf.clear();
            return Err(match e.kind() {
                io::ErrorKind::BrokenPipe => self.closed_error("server closed stdin"),
                _ => TransportError::Io(e),
            });
        }
        if writer.buf.capacity() > KEEP_WRITE_BUFFER {
            writer.buf = BytesMut::with_capacity(8 * 1024);
        }
        Ok(())
    }

    async fn recv_item(&self) -> Result<Received, TransportError> {
        if self.closing.is_cancelled() {
            return Err(self.closed_error("closed by client"));
        }
        let mut guard = self.reader.lock().await;
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
            let exited_at = reader.status.borrow_and_update().exit.as_ref().map(|e| e.1);
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
                () = self.closing.cancelled() => return Err(self.closed_error("closed by client")),
                // The exit status arrived: look again (and start the grace period).
                _ = reader.status.changed(), if exited_at.is_none() => {}
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
        match tokio::time::timeout(KILL_TIMEOUT, self.writer.lock()).await {
            Ok(mut writer) => writer.stdin = None,
            Err(_) => tracing::warn!(server = %name, "could not close stdin: writer busy"),
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

/// Writes a whole message and flushes.
async fn write_message(stdin: &mut ChildStdin, buf: &mut BytesMut) -> io::Result<()> {
    // `write_all_buf` advances `buf` as it goes, so a cancelled write resumes
    // where it stopped.
    stdin.write_all_buf(buf).await?;
    stdin.flush().await
}

impl Transport for StdioTransport {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        _context: &'a SendContext,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(self.send_message(message))
    }

    fn recv(&self) -> BoxFuture<'_, Result<Received, TransportError>> {
        Box::pin(self.recv_item())
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

#[derive(Debug, Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

impl Shared {
    /// Signals the whole process group, unless it is known to be gone.
    fn signal(&self, signal: Signal) {
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
    fn group_alive(&self) -> bool {
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
    async fn end_group(&self, term_timeout: Duration) {
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
async fn reap(mut child: Child, shared: Arc<Shared>) {
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

fn exit_info(status: ExitStatus) -> ExitInfo {
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    #[cfg(not(unix))]
    let signal = None;
    ExitInfo::new(status.code(), signal)
}

/// Reads stderr line by line, each line cut at the maximum length.
async fn read_stderr(stderr: ChildStderr, shared: Arc<Shared>) {
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
    fn line(&self, bytes: &[u8], cut: bool) {
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
mod sys {
    use std::io;

    /// Sends `signal` (0: only check) to every process in the group `pgid`.
    #[allow(unsafe_code)]
    pub(super) fn signal_group(pgid: u32, signal: libc::c_int) -> io::Result<()> {
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
