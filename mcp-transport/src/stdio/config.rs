//! What to start and how: the command, its environment (an allowlist plus
//! what the config names), the bounds of the close sequence, stderr handling.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mcp_stack_jsonrpc::{DEFAULT_MAX_BATCH_ELEMENTS, DEFAULT_MAX_FRAME_LENGTH};

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

/// How long [`Transport::close`](crate::Transport::close) waits for the server to exit after closing its stdin.
pub const DEFAULT_STDIN_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long [`Transport::close`](crate::Transport::close) waits after `SIGTERM` before `SIGKILL`.
pub const DEFAULT_TERM_TIMEOUT: Duration = Duration::from_secs(2);

/// How many stderr lines are kept for diagnostics.
pub const DEFAULT_STDERR_TAIL_LINES: usize = 20;

/// The longest stderr line handed on, in bytes; longer lines are cut.
pub const DEFAULT_STDERR_MAX_LINE_LENGTH: usize = 8 * 1024;

/// How long to wait for a process to go after `SIGKILL`.
pub(super) const KILL_TIMEOUT: Duration = Duration::from_secs(1);

/// After stdout ends, how long to wait for the exit status.
pub(super) const EXIT_AFTER_EOF_TIMEOUT: Duration = Duration::from_secs(1);

/// After the server exits, how long to go on reading a stdout that something
/// else (an orphaned grandchild) still holds open.
pub(super) const STDOUT_AFTER_EXIT_GRACE: Duration = Duration::from_millis(500);

/// How often the group is checked once its leader is gone.
pub(super) const GROUP_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// At close, how long the stderr reader may take to reach the end of the stream.
pub(super) const STDERR_DRAIN_TIMEOUT: Duration = Duration::from_millis(200);

/// Receives each line the server writes to stderr, without its line end.
pub type StderrListener = Arc<dyn Fn(&str) + Send + Sync>;

/// How to start a stdio server.
///
/// ```
/// use std::time::Duration;
/// use mcp_stack_transport::stdio::StdioConfig;
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
    pub(super) program: String,
    pub(super) args: Vec<String>,
    pub(super) cwd: Option<PathBuf>,
    pub(super) env: BTreeMap<String, String>,
    pub(super) server_name: Option<String>,
    pub(super) max_frame_length: usize,
    pub(super) max_batch_elements: usize,
    pub(super) stdin_close_timeout: Duration,
    pub(super) term_timeout: Duration,
    pub(super) stderr_listener: Option<StderrListener>,
    pub(super) stderr_tail_lines: usize,
    pub(super) stderr_max_line_length: usize,
    pub(super) parent_death_signal: bool,
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
            max_batch_elements: DEFAULT_MAX_BATCH_ELEMENTS,
            stdin_close_timeout: DEFAULT_STDIN_CLOSE_TIMEOUT,
            term_timeout: DEFAULT_TERM_TIMEOUT,
            stderr_listener: None,
            stderr_tail_lines: DEFAULT_STDERR_TAIL_LINES,
            stderr_max_line_length: DEFAULT_STDERR_MAX_LINE_LENGTH,
            parent_death_signal: true,
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

    /// The largest batch accepted, in elements (default
    /// [`DEFAULT_MAX_BATCH_ELEMENTS`], 1,024; 0 refuses every batch), where
    /// batches are accepted at all: only once a message's context names
    /// protocol revision 2025-03-26. A batch is also refused when its
    /// elements, parsed, would take more than the frame limit (each is
    /// charged [`mcp_stack_jsonrpc::BATCH_ELEMENT_COST`] plus its text).
    pub fn max_batch_elements(mut self, elements: usize) -> Self {
        self.max_batch_elements = elements;
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

    /// Whether the server gets `SIGTERM` when this process dies, however it
    /// dies (killed with `SIGKILL`, crashed), so that it is not left running
    /// without a client (default on).
    ///
    /// Linux and Android only (`PR_SET_PDEATHSIG`, set in the child before
    /// it runs the program); elsewhere this does nothing. Such servers are
    /// forked on one thread that lives as long as the process, because the
    /// kernel sends the signal when the forking *thread* exits. Only the
    /// child gets it, not its own children (a wrapper such as `npx` or
    /// `uvx` forwards it to the server it runs; that is why it is
    /// `SIGTERM` and not `SIGKILL`), and a set-user-ID program drops it.
    /// Turn it off for a server that must outlive this process.
    pub fn parent_death_signal(mut self, enabled: bool) -> Self {
        self.parent_death_signal = enabled;
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
            .field("max_batch_elements", &self.max_batch_elements)
            .field("stdin_close_timeout", &self.stdin_close_timeout)
            .field("term_timeout", &self.term_timeout)
            .field(
                "stderr_listener",
                &self.stderr_listener.as_ref().map(|_| "<fn>"),
            )
            .field("stderr_tail_lines", &self.stderr_tail_lines)
            .field("stderr_max_line_length", &self.stderr_max_line_length)
            .field("parent_death_signal", &self.parent_death_signal)
            .finish()
    }
}
