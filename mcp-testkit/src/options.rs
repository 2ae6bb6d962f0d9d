//! Server options and their command-line form.

use std::error::Error as _;
use std::fmt;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::str::FromStr;

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// The default size of the line written by [`Misbehaviour::OversizedLine`]: 17 MiB,
/// one MiB over the usual 16 MiB frame limit.
pub const DEFAULT_OVERSIZE_BYTES: usize = 17 * 1024 * 1024;
/// The default size of the line written by [`Misbehaviour::BatchBomb`]: 1 KiB
/// under the usual 16 MiB frame limit, so a client parses it rather than
/// skipping it: about 8 million elements.
pub const DEFAULT_BATCH_BOMB_BYTES: usize = 16 * 1024 * 1024 - 1024;
/// The default delay of [`Misbehaviour::LateAnswer`], in milliseconds.
pub const DEFAULT_LATE_MS: u64 = 3000;
/// The default number of notifications sent by [`Misbehaviour::FloodNotifications`].
pub const DEFAULT_FLOOD_COUNT: usize = 1000;
/// How long calls still running when the input ends may finish, by default, in milliseconds.
pub const DEFAULT_DRAIN_MS: u64 = 1000;
/// How many text resources (`test://text/1` …) `resources/list` shows, by default.
pub const DEFAULT_RESOURCE_COUNT: usize = 3;
/// The size of the `test://blob/large` resource, by default: 1 KiB.
pub const DEFAULT_BLOB_BYTES: usize = 1024;

/// One way the server can misbehave. Select with `--misbehave NAME` (repeatable).
///
/// Some misbehaviours only make full sense in a process ([`crate::serve_stdio`]):
/// under [`crate::serve`] an exit becomes the end of `serve` with an error, and
/// signals are left alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Misbehaviour {
    /// `stdout-noise`: writes a few non-JSON log lines to stdout before the
    /// handshake (as a server that logs to stdout does), then behaves.
    StdoutNoise,
    /// `never-answer-initialize`: reads `initialize` and never answers it (other
    /// requests are still answered).
    NeverAnswerInitialize,
    /// `unsupported-version`: answers `initialize` with protocol version `1999-01-01`.
    UnsupportedVersion,
    /// `exit-immediately`: writes `error: required environment variable API_TOKEN
    /// is not set` to stderr and exits with code 1 before reading anything.
    ExitImmediately,
    /// `crash-mid-call`: on the first `tools/call`, writes a panic message to
    /// stderr and exits with code 101 without answering.
    CrashMidCall,
    /// `oversized-line`: on `tools/call`, first writes one line longer than
    /// `--oversize-bytes` (default 17 MiB), then the normal response.
    OversizedLine,
    /// `batch-bomb`: on `tools/call`, first writes one line `[0,0,…,0]` of
    /// `--batch-bomb-bytes` (default 1 KiB under 16 MiB): a JSON-RPC batch
    /// of millions of elements that are not messages, then the normal
    /// response.
    BatchBomb,
    /// `invalid-utf8`: writes a line of bytes that are not UTF-8 before each response.
    InvalidUtf8,
    /// `noise`: writes a non-JSON line before each response.
    Noise,
    /// `unknown-ids`: before each response, sends a response to an id the client
    /// never used.
    UnknownIds,
    /// `escape-text`: terminal escape sequences and other control characters
    /// ([`ESCAPE_TEXT`](crate::ESCAPE_TEXT)) in the server's name, version,
    /// title and instructions, in a tool listed first
    /// ([`ESCAPE_TOOL`](crate::ESCAPE_TOOL)) whose call is answered with a
    /// JSON-RPC error carrying them, in a log notification (and a progress
    /// message) before each `tools/call` answer, and on stderr.
    EscapeText,
    /// `print-env`: calls itself [`PRINT_ENV_SERVER`](crate::PRINT_ENV_SERVER)
    /// and lists first a read-only tool without arguments,
    /// [`PRINT_ENV_TOOL`](crate::PRINT_ENV_TOOL), that returns its whole
    /// environment (as server-everything's `get-env` does).
    PrintEnv,
    /// `late-answer`: answers `tools/call` only after `--late-ms` (default 3000 ms).
    LateAnswer,
    /// `flood-notifications`: on `tools/call`, sends `--flood-count` (default 1000)
    /// `notifications/message` log notifications before the result.
    FloodNotifications,
    /// `ignore-stdin-close`: keeps running after stdin reaches end of file and
    /// ignores SIGTERM; only SIGKILL ends it.
    IgnoreStdinClose,
    /// `no-tools-capability`: `initialize` declares no `tools` capability, and
    /// `tools/list` and `tools/call` answer `-32601` (method not found).
    NoToolsCapability,
    /// `require-initialized`: `tools/list` returns an empty list until the
    /// `notifications/initialized` notification has arrived.
    RequireInitialized,
    /// `strict-initialize`: when the first request is not `initialize` (a
    /// 2026-07-28 `server/discover` probe, say), writes a protocol error to
    /// stderr and exits with code 1, as some strict legacy servers do.
    StrictInitialize,
    /// `endless-tool-pages`: `tools/list` never ends: every page holds 64
    /// generated tools with long descriptions (about 256 KiB of JSON) and
    /// the cursor of one more page, never repeated.
    EndlessToolPages,
}

impl Misbehaviour {
    /// Every misbehaviour, in the order `--list-misbehaviours` shows them.
    pub const ALL: &'static [Misbehaviour] = &[
        Misbehaviour::StdoutNoise,
        Misbehaviour::NeverAnswerInitialize,
        Misbehaviour::UnsupportedVersion,
        Misbehaviour::ExitImmediately,
        Misbehaviour::CrashMidCall,
        Misbehaviour::OversizedLine,
        Misbehaviour::BatchBomb,
        Misbehaviour::InvalidUtf8,
        Misbehaviour::Noise,
        Misbehaviour::UnknownIds,
        Misbehaviour::EscapeText,
        Misbehaviour::PrintEnv,
        Misbehaviour::LateAnswer,
        Misbehaviour::FloodNotifications,
        Misbehaviour::IgnoreStdinClose,
        Misbehaviour::NoToolsCapability,
        Misbehaviour::RequireInitialized,
        Misbehaviour::StrictInitialize,
        Misbehaviour::EndlessToolPages,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Misbehaviour::StdoutNoise => "stdout-noise",
            Misbehaviour::NeverAnswerInitialize => "never-answer-initialize",
            Misbehaviour::UnsupportedVersion => "unsupported-version",
            Misbehaviour::ExitImmediately => "exit-immediately",
            Misbehaviour::CrashMidCall => "crash-mid-call",
            Misbehaviour::OversizedLine => "oversized-line",
            Misbehaviour::BatchBomb => "batch-bomb",
            Misbehaviour::InvalidUtf8 => "invalid-utf8",
            Misbehaviour::Noise => "noise",
            Misbehaviour::UnknownIds => "unknown-ids",
            Misbehaviour::EscapeText => "escape-text",
            Misbehaviour::PrintEnv => "print-env",
            Misbehaviour::LateAnswer => "late-answer",
            Misbehaviour::FloodNotifications => "flood-notifications",
            Misbehaviour::IgnoreStdinClose => "ignore-stdin-close",
            Misbehaviour::NoToolsCapability => "no-tools-capability",
            Misbehaviour::RequireInitialized => "require-initialized",
            Misbehaviour::StrictInitialize => "strict-initialize",
            Misbehaviour::EndlessToolPages => "endless-tool-pages",
        }
    }

    /// A one-line description, as `--list-misbehaviours` shows it.
    pub fn description(self) -> &'static str {
        match self {
            Misbehaviour::StdoutNoise => {
                "logs a few non-JSON lines to stdout before the handshake, then behaves"
            }
            Misbehaviour::NeverAnswerInitialize => "never answers the initialize request",
            Misbehaviour::UnsupportedVersion => {
                "answers initialize with protocolVersion \"1999-01-01\""
            }
            Misbehaviour::ExitImmediately => {
                "prints a missing API_TOKEN error to stderr and exits with code 1 at once"
            }
            Misbehaviour::CrashMidCall => {
                "prints a panic to stderr and exits with code 101 on the first tools/call"
            }
            Misbehaviour::OversizedLine => {
                "on tools/call, first writes a line longer than --oversize-bytes (default 17 MiB)"
            }
            Misbehaviour::BatchBomb => {
                "on tools/call, first writes a batch [0,0,...] of --batch-bomb-bytes (default 16 MiB - 1 KiB)"
            }
            Misbehaviour::InvalidUtf8 => "writes a line of invalid UTF-8 before each response",
            Misbehaviour::Noise => "writes a non-JSON line before each response",
            Misbehaviour::UnknownIds => {
                "sends a response to an id the client never used before each response"
            }
            Misbehaviour::EscapeText => {
                "terminal escapes in its name, a tool, an error, a log notification and stderr"
            }
            Misbehaviour::PrintEnv => {
                "calls itself env-printing-server; lists printEnv first, which returns its environment"
            }
            Misbehaviour::LateAnswer => {
                "answers tools/call only after --late-ms milliseconds (default 3000)"
            }
            Misbehaviour::FloodNotifications => {
                "sends --flood-count log notifications (default 1000) before each tools/call result"
            }
            Misbehaviour::IgnoreStdinClose => {
                "keeps running after stdin closes and ignores SIGTERM (needs SIGKILL)"
            }
            Misbehaviour::NoToolsCapability => {
                "declares no tools capability; tools/list and tools/call answer -32601"
            }
            Misbehaviour::RequireInitialized => {
                "tools/list is empty until notifications/initialized arrives"
            }
            Misbehaviour::StrictInitialize => {
                "exits with code 1 when the first request is not initialize (a discover probe)"
            }
            Misbehaviour::EndlessToolPages => {
                "tools/list never ends: pages of ~256 KiB of tools, each with a new cursor"
            }
        }
    }

    /// The `--list-misbehaviours` text: one `name  description` line each.
    pub fn list() -> String {
        let width = Self::ALL.iter().map(|m| m.name().len()).max().unwrap_or(0);
        let mut out = String::new();
        for m in Self::ALL {
            out.push_str(&format!("{:<width$}  {}\n", m.name(), m.description()));
        }
        out
    }
}

impl fmt::Display for Misbehaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Misbehaviour {
    type Err = ArgsError;

    fn from_str(s: &str) -> Result<Self, ArgsError> {
        Self::ALL
            .iter()
            .copied()
            .find(|m| m.name() == s)
            .ok_or_else(|| ArgsError::UnknownMisbehaviour(s.to_owned()))
    }
}

/// How the server behaves: the misbehaviours to show and a few knobs.
///
/// The default is a well-behaved server with every tool in one `tools/list` page.
///
/// ```
/// use mcp_stack_testkit::{Misbehaviour, ServerOptions};
///
/// let args = ["--misbehave", "late-answer", "--late-ms", "50", "--page-size", "3"];
/// let options = ServerOptions::from_args(args.iter().map(|s| s.to_string())).unwrap();
/// assert!(options.has(Misbehaviour::LateAnswer));
/// assert_eq!(options.late_ms, 50);
/// // The options survive a round trip, so a parent can pass them to a child process.
/// let again = ServerOptions::from_args(options.to_args().into_iter()).unwrap();
/// assert_eq!(again, options);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerOptions {
    /// The misbehaviours to show (`--misbehave NAME`, repeatable or comma-separated).
    pub misbehaviours: Vec<Misbehaviour>,
    /// Entries per page of `tools/list`, `resources/list`,
    /// `resources/templates/list` and `prompts/list` (`--page-size N`);
    /// `None`: all in one page.
    pub page_size: Option<NonZeroUsize>,
    /// The folder `read_file` is confined to (`--workspace DIR`); `None`: the
    /// current directory when serving starts.
    pub workspace: Option<PathBuf>,
    /// A file to append `start <pid>` and `initialize <pid>` lines to
    /// (`--instance-log FILE`).
    pub instance_log: Option<PathBuf>,
    /// The length of the line [`Misbehaviour::OversizedLine`] writes (`--oversize-bytes N`).
    pub oversize_bytes: usize,
    /// The length of the line [`Misbehaviour::BatchBomb`] writes (`--batch-bomb-bytes N`).
    pub batch_bomb_bytes: usize,
    /// The delay of [`Misbehaviour::LateAnswer`] in milliseconds (`--late-ms N`).
    pub late_ms: u64,
    /// How many notifications [`Misbehaviour::FloodNotifications`] sends (`--flood-count N`).
    pub flood_count: usize,
    /// When the input ends, how long calls still running may finish and answer
    /// before they are dropped, in milliseconds (`--drain-ms N`). This lets
    /// `printf '…' | mcp-testkit` see every answer without a slow call keeping
    /// the server alive.
    pub drain_ms: u64,
    /// Which protocol revisions the server speaks (`--era legacy|modern|dual`).
    pub era: Era,
    /// How many text resources `resources/list` shows (`--resource-count N`):
    /// `test://text/1` to `test://text/N`, before the two blobs.
    pub resource_count: usize,
    /// The size in bytes of the `test://blob/large` resource (`--blob-bytes N`).
    pub blob_bytes: usize,
    /// Generated tools `extra_1` … `extra_N` listed after the real ones
    /// (`--extra-tools N`), for benchmarks of large catalogs; listed only
    /// (calling one is an unknown tool).
    pub extra_tools: usize,
    /// Wait this long before reading the first message
    /// (`--startup-delay-ms N`): a server slow to start, for benchmarks of
    /// start-up time.
    pub startup_delay_ms: u64,
    /// List the second revision of the tool definitions (`--revise-tools`):
    /// `echo`'s description edited, `add`'s input schema widened (an
    /// optional `c`), a tool `added_tool` listed (listed only) and `fail`
    /// gone: a server whose tools changed between runs.
    pub revise_tools: bool,
}

/// Which protocol revisions the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Era {
    /// The `initialize` handshake only (2024-11-05 to 2025-11-25):
    /// `server/discover` is an unknown method.
    #[default]
    Legacy,
    /// 2026-07-28 only: `server/discover`, `_meta` on every request,
    /// multi-round-trip results; `initialize` is refused naming the version.
    Modern,
    /// Both: a request with modern `_meta` is served the modern way,
    /// `initialize` the legacy way.
    Dual,
}

impl Era {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
            Era::Dual => "dual",
        }
    }
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            misbehaviours: Vec::new(),
            page_size: None,
            workspace: None,
            instance_log: None,
            oversize_bytes: DEFAULT_OVERSIZE_BYTES,
            batch_bomb_bytes: DEFAULT_BATCH_BOMB_BYTES,
            late_ms: DEFAULT_LATE_MS,
            flood_count: DEFAULT_FLOOD_COUNT,
            drain_ms: DEFAULT_DRAIN_MS,
            era: Era::Legacy,
            resource_count: DEFAULT_RESOURCE_COUNT,
            blob_bytes: DEFAULT_BLOB_BYTES,
            extra_tools: 0,
            startup_delay_ms: 0,
            revise_tools: false,
        }
    }
}

/// A command line the server cannot run with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgsError {
    /// An argument that is not a known flag.
    #[error("unknown argument {0:?}; run with --help for the flags")]
    UnknownArgument(String),
    /// A flag given without its value.
    #[error("{0} needs a value; run with --help for the flags")]
    MissingValue(&'static str),
    /// A flag value that does not parse.
    #[error("invalid value {value:?} for {flag}: {reason}")]
    InvalidValue {
        /// The flag.
        flag: &'static str,
        /// The value given.
        value: String,
        /// What was expected.
        reason: &'static str,
    },
    /// A misbehaviour name that does not exist.
    #[error("unknown misbehaviour {0:?}; run with --list-misbehaviours for the names")]
    UnknownMisbehaviour(String),
}

/// The `--help` text of the `mcp-testkit` binary.
pub const HELP: &str = "\
mcp-testkit: an MCP test server over stdio (newline-delimited JSON-RPC)

Usage: mcp-testkit [OPTIONS]

Options:
  --misbehave NAME        misbehave in one way (repeatable, or comma-separated names)
  --list-misbehaviours    list the misbehaviours and exit
  --page-size N           entries per page of tools/list, resources/list, resources/templates/list
                          and prompts/list (default: all in one page)
  --workspace DIR         the folder read_file is confined to (default: the current dir)
  --instance-log FILE     append `start <pid>` and `initialize <pid>` lines to FILE
  --oversize-bytes N      line length for oversized-line (default 17825792)
  --batch-bomb-bytes N    line length for batch-bomb (default 16776192)
  --late-ms N             delay for late-answer in milliseconds (default 3000)
  --flood-count N         notifications for flood-notifications (default 1000)
  --drain-ms N            when stdin ends, let running calls finish for N ms (default 1000)
  --era legacy|modern|dual  protocol revisions spoken: the initialize handshake (default),
                          2026-07-28 only (server/discover, _meta, multi-round-trip), or both
  --resource-count N      text resources test://text/1..N in resources/list (default 3)
  --blob-bytes N          size of the test://blob/large resource in bytes (default 1024)
  --extra-tools N         list N generated tools extra_1..N after the real ones (listed only;
                          for benchmarks of large catalogs; default 0)
  --startup-delay-ms N    wait N ms before reading the first message (a slow start; default 0)
  --revise-tools          list revised tools: echo's description edited, add's schema widened,
                          added_tool listed, fail gone (a server whose tools changed)
  -h, --help              show this help and exit

HTTP (instead of stdio; serves until interrupted, printing the URL to stderr):
  --http ADDR             listen on ADDR (IP:PORT, e.g. 127.0.0.1:0) for streamable HTTP at /mcp
  --legacy-sse            serve the 2024-11-05 HTTP+SSE transport (/sse, /messages) instead
  --both                  serve streamable HTTP and HTTP+SSE
  --stateless             no sessions (no Mcp-Session-Id; GET and DELETE answer 405)
  --json-response         answer requests with application/json instead of SSE
  --no-get-stream         GET /mcp answers 405
  --http-misbehave NAME   drop-stream, expire-session, expire-session-400, status-500,
                          wrong-content-type, slow-head, drop-sse-stream, accept-and-drop or
                          retry-zero-close (repeatable)
  --require-header 'K: V' answer 401 unless every request carries this header
  --oauth                 protect the MCP endpoint with OAuth: every request needs a bearer token
                          from the built-in authorization server (issuer http://ADDR, metadata at
                          /.well-known/oauth-protected-resource/mcp and
                          /.well-known/oauth-authorization-server; /register, /authorize, /token;
                          no user interaction). Each --oauth-* flag implies --oauth:
  --oauth-scope S         the scopes every request needs (space or comma separated; default mcp)
  --oauth-tool-scope TOOL=SCOPE  a tools/call of TOOL also needs SCOPE, else 403 (repeatable)
  --oauth-token-lifetime N  access tokens live N seconds (default 3600; 0: expired at once)
  --oauth-rotate-refresh  each refresh issues a new refresh token; the old one is refused
  --oauth-issuer-path P   the issuer is http://ADDR/P, its endpoints under it
  --oauth-metadata M      authorization server metadata: oauth (default), openid, both or none
  --oauth-resource-metadata W  protected resource metadata at path (default), root, both or none
  --oauth-client ID[:SECRET]  a pre-registered client (redirects to http://127.0.0.1/callback or
                          http://localhost/callback, any port; with a secret: client_secret_basic)
  --oauth-misbehave NAME  wrong-issuer, no-pkce, no-iss, wrong-iss, expire-immediately,
                          refuse-refresh or wrong-resource (repeatable)
  With --era modern, /mcp speaks 2026-07-28: every POST is stateless, its MCP-Protocol-Version,
  Mcp-Method, Mcp-Name and Mcp-Param-* headers are checked against the body (400 -32020),
  GET and DELETE answer 405. With --era dual, requests with 2026-07-28 _meta are served that
  way and initialize starts a legacy session.

Tools: echo, add, read_file, slow, fail, progress, get_env, bad_output, touch_resource
(notifies the resource's subscribers), add_resource (notifies resource list changes),
ask_user (elicitation: mode form or url), sample (sampling/createMessage) and list_roots
(roots/list, and how many notifications/roots/list_changed arrived), which ask the client:
a request while the call waits before 2026-07-28, an input_required result in it; a client
that did not declare the capability is not asked (isError). 2026-07-28 clients also get
ask_name, route and bad_header.
Resources: test://text/1..N (text), test://blob/1 (a few non-UTF-8 bytes),
test://blob/large (--blob-bytes); templates test://text/{id} and test://greeting/{name}
(\"Hello, NAME!\"); paged with --page-size. Subscriptions: resources/subscribe before
2026-07-28, subscriptions/listen (resourceSubscriptions) in it.
Prompts: greeting (name), review (code, style?), scaffold (framework, language).
Completion: review's style, greeting's and test://greeting/{name}'s name, scaffold's
framework and language (filtered by context.arguments.framework), test://text/{id}'s id.
";

/// The flags [`ServerOptions::from_args`] reads, as clap parses them. `--help`
/// is not one of them: [`crate::run`] answers it with [`HELP`].
///
/// Every flag takes the next argument as its value, even one starting with
/// `-`, or the text after `=`; given twice, the last one counts (except
/// `--misbehave`, which adds up).
#[derive(Debug, clap::Parser)]
#[command(
    no_binary_name = true,
    disable_help_flag = true,
    disable_version_flag = true,
    args_override_self = true
)]
struct Flags {
    #[arg(long = "misbehave", value_name = "NAME", allow_hyphen_values = true)]
    misbehave: Vec<String>,
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = page_size)]
    page_size: Option<NonZeroUsize>,
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    workspace: Option<PathBuf>,
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    instance_log: Option<PathBuf>,
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        value_parser = number::<usize>,
        default_value_t = DEFAULT_OVERSIZE_BYTES,
    )]
    oversize_bytes: usize,
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        value_parser = number::<usize>,
        default_value_t = DEFAULT_BATCH_BOMB_BYTES,
    )]
    batch_bomb_bytes: usize,
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        value_parser = number::<u64>,
        default_value_t = DEFAULT_LATE_MS,
    )]
    late_ms: u64,
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        value_parser = number::<usize>,
        default_value_t = DEFAULT_FLOOD_COUNT,
    )]
    flood_count: usize,
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        value_parser = number::<u64>,
        default_value_t = DEFAULT_DRAIN_MS,
    )]
    drain_ms: u64,
    #[arg(long, value_name = "ERA", allow_hyphen_values = true, value_parser = era)]
    era: Option<Era>,
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        value_parser = number::<usize>,
        default_value_t = DEFAULT_RESOURCE_COUNT,
    )]
    resource_count: usize,
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        value_parser = number::<usize>,
        default_value_t = DEFAULT_BLOB_BYTES,
    )]
    blob_bytes: usize,
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        value_parser = number::<usize>,
        default_value_t = 0,
    )]
    extra_tools: usize,
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        value_parser = number::<u64>,
        default_value_t = 0,
    )]
    startup_delay_ms: u64,
    #[arg(long)]
    revise_tools: bool,
}

/// The flags of [`Flags`], as [`ArgsError`] names them.
const FLAGS: [&str; 15] = [
    "--misbehave",
    "--page-size",
    "--workspace",
    "--instance-log",
    "--oversize-bytes",
    "--batch-bomb-bytes",
    "--late-ms",
    "--flood-count",
    "--drain-ms",
    "--era",
    "--resource-count",
    "--blob-bytes",
    "--extra-tools",
    "--startup-delay-ms",
    "--revise-tools",
];

/// Why a flag's value was refused: the `reason` of [`ArgsError::InvalidValue`].
#[derive(Debug)]
struct Reason(&'static str);

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Reason {}

fn number<T: FromStr>(value: &str) -> Result<T, Reason> {
    value
        .parse()
        .map_err(|_| Reason("expected a non-negative integer"))
}

fn page_size(value: &str) -> Result<NonZeroUsize, Reason> {
    NonZeroUsize::new(number(value)?).ok_or(Reason("the page size must be at least 1"))
}

fn era(value: &str) -> Result<Era, Reason> {
    match value {
        "legacy" => Ok(Era::Legacy),
        "modern" => Ok(Era::Modern),
        "dual" => Ok(Era::Dual),
        _ => Err(Reason("expected legacy, modern or dual")),
    }
}

/// Clap's error as an [`ArgsError`]: which flag, which value, and why.
fn args_error(e: &clap::Error) -> ArgsError {
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    // Clap names a flag with its value, `--page-size <N>`.
    let arg = text(ContextKind::InvalidArg);
    let flag = FLAGS
        .iter()
        .copied()
        .find(|f| arg.split(' ').next() == Some(f));
    let value = text(ContextKind::InvalidValue);
    match (e.kind(), flag) {
        (ErrorKind::InvalidValue, Some(flag)) if value.is_empty() => ArgsError::MissingValue(flag),
        (ErrorKind::ValueValidation | ErrorKind::InvalidValue, Some(flag)) => {
            let reason = e
                .source()
                .and_then(|r| r.downcast_ref::<Reason>())
                .map_or("not a valid value", |r| r.0);
            ArgsError::InvalidValue {
                flag,
                value,
                reason,
            }
        }
        // An unknown flag, or a word where no flag expects one.
        _ => ArgsError::UnknownArgument(arg),
    }
}

impl ServerOptions {
    /// Options for a server with one misbehaviour and default knobs.
    pub fn misbehaving(misbehaviour: Misbehaviour) -> Self {
        ServerOptions {
            misbehaviours: vec![misbehaviour],
            ..Self::default()
        }
    }

    /// Whether a misbehaviour is selected.
    pub fn has(&self, misbehaviour: Misbehaviour) -> bool {
        self.misbehaviours.contains(&misbehaviour)
    }

    /// Parses command-line arguments (without the program name).
    ///
    /// Flags take their value as the next argument or after `=`
    /// (`--page-size 2`, `--page-size=2`). `--help` and `--list-misbehaviours`
    /// are not options: [`crate::run`] handles them.
    pub fn from_args(args: impl Iterator<Item = String>) -> Result<Self, ArgsError> {
        let flags = <Flags as clap::Parser>::try_parse_from(args).map_err(|e| args_error(&e))?;
        let mut misbehaviours = Vec::new();
        for list in &flags.misbehave {
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let m: Misbehaviour = name.parse()?;
                if !misbehaviours.contains(&m) {
                    misbehaviours.push(m);
                }
            }
        }
        Ok(ServerOptions {
            misbehaviours,
            page_size: flags.page_size,
            workspace: flags.workspace,
            instance_log: flags.instance_log,
            oversize_bytes: flags.oversize_bytes,
            batch_bomb_bytes: flags.batch_bomb_bytes,
            late_ms: flags.late_ms,
            flood_count: flags.flood_count,
            drain_ms: flags.drain_ms,
            era: flags.era.unwrap_or_default(),
            resource_count: flags.resource_count,
            blob_bytes: flags.blob_bytes,
            extra_tools: flags.extra_tools,
            startup_delay_ms: flags.startup_delay_ms,
            revise_tools: flags.revise_tools,
        })
    }

    /// The command-line arguments that [`ServerOptions::from_args`] turns back
    /// into these options. Paths that are not UTF-8 are converted lossily.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for m in &self.misbehaviours {
            args.extend(["--misbehave".to_owned(), m.name().to_owned()]);
        }
        if let Some(n) = self.page_size {
            args.extend(["--page-size".to_owned(), n.to_string()]);
        }
        if let Some(dir) = &self.workspace {
            args.extend(["--workspace".to_owned(), dir.to_string_lossy().into_owned()]);
        }
        if let Some(file) = &self.instance_log {
            args.extend([
                "--instance-log".to_owned(),
                file.to_string_lossy().into_owned(),
            ]);
        }
        if self.oversize_bytes != DEFAULT_OVERSIZE_BYTES {
            args.extend([
                "--oversize-bytes".to_owned(),
                self.oversize_bytes.to_string(),
            ]);
        }
        if self.batch_bomb_bytes != DEFAULT_BATCH_BOMB_BYTES {
            args.extend([
                "--batch-bomb-bytes".to_owned(),
                self.batch_bomb_bytes.to_string(),
            ]);
        }
        if self.late_ms != DEFAULT_LATE_MS {
            args.extend(["--late-ms".to_owned(), self.late_ms.to_string()]);
        }
        if self.flood_count != DEFAULT_FLOOD_COUNT {
            args.extend(["--flood-count".to_owned(), self.flood_count.to_string()]);
        }
        if self.drain_ms != DEFAULT_DRAIN_MS {
            args.extend(["--drain-ms".to_owned(), self.drain_ms.to_string()]);
        }
        if self.era != Era::Legacy {
            args.extend(["--era".to_owned(), self.era.name().to_owned()]);
        }
        if self.resource_count != DEFAULT_RESOURCE_COUNT {
            args.extend([
                "--resource-count".to_owned(),
                self.resource_count.to_string(),
            ]);
        }
        if self.blob_bytes != DEFAULT_BLOB_BYTES {
            args.extend(["--blob-bytes".to_owned(), self.blob_bytes.to_string()]);
        }
        if self.extra_tools != 0 {
            args.extend(["--extra-tools".to_owned(), self.extra_tools.to_string()]);
        }
        if self.startup_delay_ms != 0 {
            args.extend([
                "--startup-delay-ms".to_owned(),
                self.startup_delay_ms.to_string(),
            ]);
        }
        if self.revise_tools {
            args.push("--revise-tools".to_owned());
        }
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<ServerOptions, ArgsError> {
        ServerOptions::from_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for m in Misbehaviour::ALL {
            assert_eq!(m.name().parse::<Misbehaviour>().unwrap(), *m);
            assert!(seen.insert(m.name()));
            assert!(Misbehaviour::list().contains(m.name()));
        }
    }

    #[test]
    fn parses_flags() {
        let o = parse(&[
            "--misbehave=noise,unknown-ids",
            "--misbehave",
            "noise",
            "--page-size",
            "2",
            "--workspace",
            "/tmp/w",
            "--flood-count=5",
            "--drain-ms",
            "0",
            "--resource-count=10000",
            "--blob-bytes",
            "5",
            "--extra-tools=7",
        ])
        .unwrap();
        assert_eq!(
            o.misbehaviours,
            vec![Misbehaviour::Noise, Misbehaviour::UnknownIds]
        );
        assert_eq!(o.page_size.map(NonZeroUsize::get), Some(2));
        assert_eq!(o.workspace, Some(PathBuf::from("/tmp/w")));
        assert_eq!(o.flood_count, 5);
        assert_eq!(o.drain_ms, 0);
        assert_eq!((o.resource_count, o.blob_bytes), (10_000, 5));
        assert_eq!(o.extra_tools, 7);
        assert_eq!(
            parse(&o.to_args().iter().map(String::as_str).collect::<Vec<_>>()),
            Ok(o)
        );
    }

    #[test]
    fn rejects_bad_args() {
        assert_eq!(
            parse(&["--page-size"]),
            Err(ArgsError::MissingValue("--page-size"))
        );
        assert!(matches!(
            parse(&["--page-size", "0"]),
            Err(ArgsError::InvalidValue { .. })
        ));
        assert!(matches!(
            parse(&["--late-ms", "-1"]),
            Err(ArgsError::InvalidValue { .. })
        ));
        assert_eq!(
            parse(&["--misbehave", "explode"]),
            Err(ArgsError::UnknownMisbehaviour("explode".into()))
        );
        assert_eq!(
            parse(&["serve"]),
            Err(ArgsError::UnknownArgument("serve".into()))
        );
        assert_eq!(
            parse(&["--help"]),
            Err(ArgsError::UnknownArgument("--help".into()))
        );
        assert_eq!(parse(&["-h"]), Err(ArgsError::UnknownArgument("-h".into())));
        assert_eq!(
            parse(&["--late-ms", "-1"]),
            Err(ArgsError::InvalidValue {
                flag: "--late-ms",
                value: "-1".into(),
                reason: "expected a non-negative integer",
            })
        );
        assert_eq!(
            parse(&["--page-size="]),
            Err(ArgsError::InvalidValue {
                flag: "--page-size",
                value: String::new(),
                reason: "expected a non-negative integer",
            })
        );
        assert_eq!(
            parse(&["--era", "future"]),
            Err(ArgsError::InvalidValue {
                flag: "--era",
                value: "future".into(),
                reason: "expected legacy, modern or dual",
            })
        );
        assert_eq!(
            parse(&["--drain-ms", "1", "--era"]),
            Err(ArgsError::MissingValue("--era"))
        );
    }

    #[test]
    fn defaults_values_and_repeats() {
        assert_eq!(parse(&[]), Ok(ServerOptions::default()));
        // A value may start with `-`; a repeated flag keeps its last value.
        let o = parse(&[
            "--workspace",
            "-w",
            "--late-ms=1",
            "--late-ms",
            "2",
            "--era=dual",
        ])
        .unwrap();
        assert_eq!(o.workspace, Some(PathBuf::from("-w")));
        assert_eq!(o.late_ms, 2);
        assert_eq!(o.era, Era::Dual);
        assert_eq!(o.oversize_bytes, DEFAULT_OVERSIZE_BYTES);
    }

    #[test]
    fn every_flag_is_named_and_in_the_help() {
        use clap::CommandFactory as _;
        let command = Flags::command();
        let longs: Vec<String> = command
            .get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect();
        assert_eq!(longs, FLAGS);
        for flag in FLAGS {
            assert!(
                HELP.contains(&format!("  {flag} ")),
                "{flag} is not in HELP"
            );
        }
    }
}
