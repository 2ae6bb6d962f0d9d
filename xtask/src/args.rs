//! The command line, parsed by clap: `cargo xtask <task> [options]`.
//!
//! Every option takes `--name value` or `--name=value` and has the default
//! its help shows.

use clap::{Args, Parser, Subcommand};

/// Project tasks: benchmarks, conformance and soak runs.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
pub(crate) struct Cli {
    /// The task; without one, this help.
    #[command(subcommand)]
    pub(crate) task: Option<Task>,
}

/// The tasks.
#[derive(Debug, Subcommand)]
pub(crate) enum Task {
    /// Benchmarks, always in an optimized build (a debug build runs itself
    /// again through `cargo run --release`).
    Bench {
        /// Which benchmark.
        #[command(subcommand)]
        what: Bench,
    },
    /// The official MCP conformance suite's client scenarios against our
    /// client, and our stack against the reference servers.
    ///
    /// The pinned release of the suite, then the alpha line's draft scenarios
    /// at 2026-07-28 (`--only draft` runs those alone); then the reference
    /// servers and the interop rows with an authorization server from npm
    /// (`--only servers`, or `--only interop` for the latter). Prepares Node 22, the
    /// pinned npm packages and a Python virtualenv under
    /// target/conformance/cache; writes target/conformance/report.md.
    Conformance(ConformanceArgs),
    /// A bounded fault run of the session runtime: many agent sessions
    /// against misbehaving mcp-testkit servers (stdio and streamable HTTP),
    /// for a fixed time; prints one table and fails on a broken promise
    /// (a deadline overrun, a panic, a process, descriptor or task left,
    /// memory growth past its bound).
    Soak(SoakArgs),
    /// The shape rules of ARCHITECTURE.md: no import cycle between a crate's
    /// top-level modules (the vocabulary crate exempt), no library file over
    /// 900 lines.
    Layout,
    /// Every publishable crate declares the one workspace `rust-version`, and
    /// no dependency it builds (every feature on) needs a newer compiler.
    Msrv,
    /// The client the conformance suite runs (not a task for people).
    #[command(hide = true)]
    ConformanceClient(ClientArgs),
}

/// `bench <what>`.
#[derive(Debug, Subcommand)]
pub(crate) enum Bench {
    /// Decode a deterministic stream of MCP messages with mcp-stack-jsonrpc's
    /// NewlineCodec, with LinesCodec + serde_json, and with serde_json alone
    /// (the floor); print MB/s and ratios.
    Codec(CodecArgs),
    /// tools/call round trips to a child-process server over stdio,
    /// sequential and 8 in flight (or --in-flight 1,8,64): this stack, rmcp's
    /// client, the TypeScript SDK's client (when `cargo xtask conformance`
    /// installed it) and a raw-pipe floor; print calls/s, p50/p99 latency and
    /// ratios. --instructions: instructions per call under callgrind.
    Stdio(StdioArgs),
    /// Payloads from 100 B to 1 MB over stdio: a tools/call whose result
    /// (echo) and a tools/list whose catalog are that large; this stack, rmcp
    /// and the floor; print calls/s and MB/s.
    Payload(PayloadArgs),
    /// Building a tool catalog of 1, 100 and 10,000 tools:
    /// mcp_stack_session::ToolCatalog::new alone, and a session's refresh_tools
    /// against an in-process mcp-testkit; print µs per build and per tool.
    Catalog(CatalogArgs),
    /// tools/call round trips to mcp-testkit's streamable HTTP server on
    /// 127.0.0.1 (stateful), sequential and 8 in flight: this stack, rmcp's
    /// streamable HTTP client and a raw hyper floor; print calls/s, p50/p99
    /// latency and ratios.
    Http(HttpArgs),
    /// The session runtime manager's warm path, cold path and idle memory.
    Runtime(RuntimeArgs),
    /// Listing many resources across pages and reading a large blob over
    /// stdio: this stack and rmcp's client.
    Resources(ResourcesArgs),
    /// An agent's start with 10 stdio servers that each take 300 ms to
    /// start: time to catalog cold and from the persisted catalog, beside
    /// rmcp (one client per server, in turn and joined).
    Start(StartArgs),
    /// Tool search over 10,000 generated tools: index build and update
    /// time, p50/p99 per query over a fixed query set, and the schema bytes
    /// a deferred catalog hands out against the full one. Needs no peers:
    /// runs in the build it is given (use --release for the figures).
    Search(SearchArgs),
}

/// `bench start`.
#[derive(Debug, Args)]
pub(crate) struct StartArgs {
    /// Stdio servers in the config.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub(crate) servers: usize,
    /// How long each server takes to start, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 300)]
    pub(crate) delay_ms: u64,
    /// Rounds of every variant.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub(crate) rounds: usize,
    /// The mcp-testkit binary to run (default: built in release mode).
    #[arg(long, value_name = "PATH")]
    pub(crate) server: Option<String>,
    /// Skip rmcp's sequential variant (N × the delay per round).
    #[arg(long)]
    pub(crate) no_sequential: bool,
    /// Run in this (debug) build to check that the benchmark works; its
    /// figures mean nothing.
    #[arg(long)]
    pub(crate) debug_check: bool,
}

/// `bench codec`.
#[derive(Debug, Args)]
pub(crate) struct CodecArgs {
    /// Megabytes of messages to decode.
    #[arg(long, value_name = "N", default_value_t = 8.0)]
    pub(crate) mb: f64,
    /// Timed passes over the stream.
    #[arg(long, value_name = "K", default_value_t = 7)]
    pub(crate) iters: usize,
    /// The seed of the generated messages.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub(crate) seed: u64,
}

/// `bench stdio`.
#[derive(Debug, Args)]
pub(crate) struct StdioArgs {
    /// Be the benchmark's fast server instead (`echo`); the benchmark starts
    /// this program so.
    #[arg(long, value_name = "SERVER", hide = true)]
    pub(crate) serve: Option<String>,
    /// Sequential calls per round.
    #[arg(long, value_name = "N", default_value_t = 5000)]
    pub(crate) n: usize,
    /// Calls per round with 8 in flight [default: 4 × --n].
    #[arg(long, value_name = "N")]
    pub(crate) n_inflight: Option<usize>,
    /// Rounds, interleaved between the clients.
    #[arg(long, value_name = "K", default_value_t = 5)]
    pub(crate) rounds: usize,
    /// The server: testkit, fast or both.
    #[arg(long, value_name = "SERVER", default_value = "both")]
    pub(crate) server: String,
    /// The client's tokio runtime: multi or current.
    #[arg(long, value_name = "FLAVOR", default_value = "multi")]
    pub(crate) runtime: String,
    /// Only one client, for profiling: ours, rmcp, floor, ts or tokio-floor.
    #[arg(long, value_name = "CLIENT")]
    pub(crate) only: Option<String>,
    /// Calls in flight, one row each (1 is the sequential row), e.g. 1,8,64.
    #[arg(long, value_name = "K,K…", value_delimiter = ',', default_values_t = [1, 8])]
    pub(crate) in_flight: Vec<usize>,
    /// Count the instructions per sequential call of each client under
    /// valgrind (callgrind) instead of timing: reproducible on a noisy machine.
    #[arg(long)]
    pub(crate) instructions: bool,
    /// The two call counts of --instructions; the difference of their
    /// instruction totals over the difference of the counts cancels startup.
    #[arg(long, value_name = "N1,N2", value_delimiter = ',', default_values_t = [500, 2500])]
    pub(crate) instructions_calls: Vec<usize>,
    /// Run the sequential mode only (what --instructions runs under valgrind).
    #[arg(long, hide = true)]
    pub(crate) sequential_only: bool,
    /// The mcp-testkit program, already built (--instructions passes it on).
    #[arg(long, value_name = "PATH", hide = true)]
    pub(crate) testkit: Option<String>,
}

/// `bench payload`.
#[derive(Debug, Args)]
pub(crate) struct PayloadArgs {
    /// Payload sizes in bytes: the text `echo` returns, and roughly the size
    /// of the `tools/list` answer.
    #[arg(long, value_name = "BYTES,…", value_delimiter = ',', default_values_t = [100, 10_000, 1_000_000])]
    pub(crate) sizes: Vec<usize>,
    /// Megabytes of payload per run (calls = this / size, between 10 and 5000).
    #[arg(long, value_name = "MB", default_value_t = 20.0)]
    pub(crate) mb: f64,
    /// Rounds, interleaved between the clients.
    #[arg(long, value_name = "K", default_value_t = 3)]
    pub(crate) rounds: usize,
    /// The client's tokio runtime: multi or current.
    #[arg(long, value_name = "FLAVOR", default_value = "multi")]
    pub(crate) runtime: String,
    /// Where the `tools/call` rows of ours and rmcp await their calls:
    /// `task`, in one task spawned on the runtime (as `bench stdio` does), or
    /// `main`, in `block_on` on this thread, one call at a time. On a
    /// multi-thread runtime `main` adds a hop per call: tokio's IO driver
    /// runs on the workers, which then wake this thread.
    #[arg(long, value_name = "WHERE", default_value = "task")]
    pub(crate) caller: String,
    /// Count the instructions per `tools/call` of each client and size under
    /// valgrind (callgrind) instead of timing: reproducible on a noisy machine.
    #[arg(long)]
    pub(crate) instructions: bool,
    /// The two call counts of --instructions; the difference of their
    /// instruction totals over the difference of the counts cancels startup.
    #[arg(long, value_name = "N1,N2", value_delimiter = ',', default_values_t = [10, 30])]
    pub(crate) instructions_calls: Vec<usize>,
    /// Only one client (ours, rmcp or floor), `tools/call` only, `--calls`
    /// calls per size, nothing printed: what --instructions counts.
    #[arg(long, value_name = "CLIENT", hide = true)]
    pub(crate) only: Option<String>,
    /// Calls per size with --only.
    #[arg(long, value_name = "N", hide = true, default_value_t = 10)]
    pub(crate) calls: usize,
}

/// `bench catalog`.
#[derive(Debug, Args)]
pub(crate) struct CatalogArgs {
    /// Catalog sizes, in tools.
    #[arg(long, value_name = "N,…", value_delimiter = ',', default_values_t = [1, 100, 10_000])]
    pub(crate) tools: Vec<usize>,
    /// Tools built per size and way (builds = this / tools, at least 5).
    #[arg(long, value_name = "N", default_value_t = 200_000)]
    pub(crate) budget: usize,
}

/// `bench http`.
#[derive(Debug, Args)]
pub(crate) struct HttpArgs {
    /// Sequential calls per round.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub(crate) n: usize,
    /// Calls per round with 8 in flight [default: 4 × --n].
    #[arg(long, value_name = "N")]
    pub(crate) n_inflight: Option<usize>,
    /// Rounds, interleaved between the clients.
    #[arg(long, value_name = "K", default_value_t = 5)]
    pub(crate) rounds: usize,
    /// How the server answers requests: json or sse.
    #[arg(long, value_name = "FORM", default_value = "json")]
    pub(crate) answers: String,
    /// Threads of the server's own tokio runtime.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub(crate) server_threads: usize,
    /// The client's tokio runtime: multi or current.
    #[arg(long, value_name = "FLAVOR", default_value = "multi")]
    pub(crate) runtime: String,
    /// Only one client, for profiling: ours, rmcp or floor.
    #[arg(long, value_name = "CLIENT")]
    pub(crate) only: Option<String>,
    /// Calls in flight, one row each (1 is the sequential row), e.g. 1,8,64.
    #[arg(long, value_name = "K,K…", value_delimiter = ',', default_values_t = [1, 8])]
    pub(crate) in_flight: Vec<usize>,
    /// Count the instructions per sequential call of each client under
    /// valgrind (callgrind) instead of timing: reproducible on a noisy machine.
    #[arg(long)]
    pub(crate) instructions: bool,
    /// The two call counts of --instructions.
    #[arg(long, value_name = "N1,N2", value_delimiter = ',', default_values_t = [500, 2500])]
    pub(crate) instructions_calls: Vec<usize>,
    /// Run the sequential mode only (what --instructions runs under valgrind).
    #[arg(long, hide = true)]
    pub(crate) sequential_only: bool,
    /// A server already running (--instructions starts it outside valgrind).
    #[arg(long, value_name = "URL", hide = true)]
    pub(crate) url: Option<String>,
    /// The server's era: legacy, or dual (ours then speaks 2026-07-28 while
    /// rmcp and the floor use the handshake).
    #[arg(long, value_name = "ERA", default_value = "legacy")]
    pub(crate) era: String,
    /// Measure the cost of authorization: the second client is ours again,
    /// with an OAuth client holding a valid token (`mcp_stack_auth::OAuthClient`
    /// as the transport's authorizer), in place of rmcp.
    #[arg(long)]
    pub(crate) auth: bool,
    /// With --auth: where the OAuth client keeps its token: memory, file, or
    /// postgres (its URL from MCP_TEST_POSTGRES_URL; `.ci/postgres.sh`).
    /// Store operations per request are counted and printed.
    #[arg(long, value_name = "STORE", default_value = "memory")]
    pub(crate) token_store: String,
}

/// `bench resources`.
#[derive(Debug, Args)]
pub(crate) struct ResourcesArgs {
    /// Resources the server lists.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub(crate) resources: usize,
    /// Resources per page.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub(crate) page_size: usize,
    /// Size of the blob read, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1024 * 1024)]
    pub(crate) blob_bytes: usize,
    /// Rounds, interleaved between the clients.
    #[arg(long, value_name = "K", default_value_t = 7)]
    pub(crate) rounds: usize,
}

/// `bench runtime`.
#[derive(Debug, Args)]
pub(crate) struct RuntimeArgs {
    /// Acquisitions on the warm path.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub(crate) warm_iters: usize,
    /// Acquisitions on the cold path.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub(crate) cold_iters: usize,
    /// Idle sessions for the memory figures, one figure per count.
    #[arg(long, value_name = "N,N…", value_delimiter = ',', default_values_t = [1000, 100_000])]
    pub(crate) sessions: Vec<usize>,
    /// Servers per session config.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub(crate) servers: usize,
    /// Sessions registered for the warm path, one figure per count.
    #[arg(long, value_name = "N,N…", value_delimiter = ',', default_values_t = [10, 1000, 100_000])]
    pub(crate) registered: Vec<usize>,
}

/// `bench search`.
#[derive(Debug, Args)]
pub(crate) struct SearchArgs {
    /// Generated tools in the catalog.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub(crate) tools: usize,
    /// Passes over the query set (each query timed on its own per pass).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub(crate) rounds: usize,
    /// Results asked per query.
    #[arg(long, value_name = "K", default_value_t = 10)]
    pub(crate) k: usize,
    /// The seed of the generated tools.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub(crate) seed: u64,
}

/// `soak`.
#[derive(Debug, Args)]
pub(crate) struct SoakArgs {
    /// The short form CI runs: 40 sessions for 20 s (explicit options win).
    #[arg(long)]
    pub(crate) short: bool,
    /// Agent sessions at once [default: 200; 40 with --short].
    #[arg(long, value_name = "N")]
    pub(crate) sessions: Option<usize>,
    /// Servers in each session's config.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub(crate) servers_per_session: usize,
    /// How long the load runs, in seconds [default: 120; 20 with --short].
    #[arg(long, value_name = "SECS")]
    pub(crate) duration: Option<u64>,
    /// The seed of the run's random choices.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub(crate) seed: u64,
    /// The chance that a server of a config misbehaves.
    #[arg(long, value_name = "P", default_value_t = 0.3)]
    pub(crate) fault_rate: f64,
}

/// [`SoakArgs`] with the defaults applied.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Soak {
    pub(crate) sessions: usize,
    pub(crate) servers_per_session: usize,
    pub(crate) duration: u64,
    pub(crate) seed: u64,
    pub(crate) fault_rate: f64,
}

impl SoakArgs {
    /// The options with the long or short form's defaults.
    pub(crate) fn resolved(&self) -> Soak {
        let (sessions, duration) = if self.short { (40, 20) } else { (200, 120) };
        Soak {
            sessions: self.sessions.unwrap_or(sessions),
            servers_per_session: self.servers_per_session,
            duration: self.duration.unwrap_or(duration),
            seed: self.seed,
            fault_rate: self.fault_rate,
        }
    }
}

/// `conformance`.
#[derive(Debug, Args)]
pub(crate) struct ConformanceArgs {
    /// Run one part only: suite, draft, servers (with interop) or interop.
    #[arg(long, value_name = "PART")]
    pub(crate) only: Option<String>,
    /// Give up on the whole run after this many seconds.
    #[arg(long, value_name = "SECS", default_value_t = 900)]
    pub(crate) timeout: u64,
}

/// `conformance-client`.
#[derive(Debug, Args)]
pub(crate) struct ClientArgs {
    /// Pin this protocol version [default: $MCP_CONFORMANCE_PROTOCOL_VERSION].
    #[arg(long, value_name = "PIN")]
    pub(crate) protocol: Option<String>,
    /// The server's URL.
    pub(crate) url: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    fn parse(list: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("xtask").chain(list.iter().copied()))
    }

    #[test]
    fn the_command_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn positionals_and_options() {
        let cli = parse(&["bench", "codec", "--mb", "4", "--iters=3"]).unwrap();
        let Some(Task::Bench {
            what: Bench::Codec(a),
        }) = cli.task
        else {
            panic!("{cli:?}")
        };
        assert_eq!(a.mb, 4.0);
        assert_eq!(a.iters, 3);
        assert_eq!(a.seed, 1, "the default");

        let cli = parse(&["bench", "search", "--tools=500", "--k", "3"]).unwrap();
        let Some(Task::Bench {
            what: Bench::Search(a),
        }) = cli.task
        else {
            panic!("{cli:?}")
        };
        assert_eq!((a.tools, a.k, a.rounds, a.seed), (500, 3, 100, 1));

        let cli = parse(&[
            "conformance-client",
            "--protocol=2026-07-28",
            "http://x/mcp",
        ])
        .unwrap();
        let Some(Task::ConformanceClient(c)) = cli.task else {
            panic!("{cli:?}")
        };
        assert_eq!(c.protocol.as_deref(), Some("2026-07-28"));
        assert_eq!(c.url, "http://x/mcp");

        let cli = parse(&["bench", "stdio", "--n", "10"]).unwrap();
        let Some(Task::Bench {
            what: Bench::Stdio(s),
        }) = cli.task
        else {
            panic!("{cli:?}")
        };
        assert_eq!((s.n, s.n_inflight, s.rounds), (10, None, 5));
        assert_eq!((s.server.as_str(), s.runtime.as_str()), ("both", "multi"));
        assert_eq!(s.in_flight, [1, 8]);
        assert_eq!(s.instructions_calls, [500, 2500]);
        assert!(!s.instructions && !s.sequential_only);

        let cli = parse(&["bench", "stdio", "--in-flight=1,8,64", "--instructions"]).unwrap();
        let Some(Task::Bench {
            what: Bench::Stdio(s),
        }) = cli.task
        else {
            panic!("{cli:?}")
        };
        assert_eq!(s.in_flight, [1, 8, 64]);
        assert!(s.instructions);

        assert!(parse(&[]).unwrap().task.is_none());

        let soak = |list: &[&str]| match parse(list).unwrap().task {
            Some(Task::Soak(a)) => a.resolved(),
            other => panic!("{other:?}"),
        };
        let long = soak(&["soak"]);
        assert_eq!(
            (long.sessions, long.servers_per_session, long.duration),
            (200, 3, 120)
        );
        let short = soak(&["soak", "--short"]);
        assert_eq!((short.sessions, short.duration), (40, 20));
        let mixed = soak(&["soak", "--short", "--sessions=7", "--fault-rate", "0"]);
        assert_eq!(
            (mixed.sessions, mixed.duration, mixed.fault_rate),
            (7, 20, 0.0)
        );
    }

    #[test]
    fn bad_and_left_over_options() {
        assert!(parse(&["bench", "codec", "--mb", "x"]).is_err());
        assert!(parse(&["bench", "codec", "--mb"]).is_err());
        assert!(parse(&["bench", "codec", "--what", "1"]).is_err());
        assert!(parse(&["bench", "codec", "extra"]).is_err());
        assert!(parse(&["bench"]).is_err(), "which benchmark?");
        assert!(parse(&["bench", "disk"]).is_err());
        assert!(parse(&["conformance-client"]).is_err(), "the URL");
    }
}
