//! `cargo xtask soak`: a bounded, self-stopping fault run of the session
//! runtime that prints one table and fails when a promise broke.
//!
//! Many agent sessions (tokio tasks) drive one `RuntimeManager` with the
//! default connector at once: acquire (sometimes with a changed config, so
//! the session rebuilds), call tools, read resources, listen, go idle long
//! enough to be reaped, dispose. Their servers are `mcp-testkit` processes:
//! stdio children started per connection (legacy, 2026-07-28 or dual era),
//! and a pool of streamable HTTP servers of each era started by the soak.
//! Each server of a config misbehaves at random (seeded), several at once;
//! a chaos task also kills HTTP servers and starts them again on their port.
//!
//! The promises checked at the end: no operation outlived its bound by more
//! than [`GRACE`]; no panic; every failure a typed error that names its
//! server (a server's words in it, escape sequences included, printed through
//! the stack's one printable filter); no process of the run left after `dispose_all` (stdio children
//! and their grandchildren, found by an environment marker, and unreaped
//! children of ours); file descriptors and tokio tasks back to their
//! baseline; resident memory after warm-up (the median of the second half
//! of the samples against the first's) grew within [`RSS_BOUND`] and
//! [`RSS_SLACK`]. Dropped notifications are counted, not judged.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::future::Future;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_stack_config::{Options, ResolvedConfig, parse_str, resolve};
use mcp_stack_runtime::{RuntimeError, RuntimeLease, RuntimeManager, RuntimeOptions};
use mcp_stack_session::protocol::printable::{Layout, printable};
use mcp_stack_session::protocol::subscriptions::SubscriptionFilter;
use mcp_stack_session::{SessionError, TimeoutKind};
use mcp_stack_transport::TransportError;
use serde_json::{Value, json};

use crate::args::{Soak, SoakArgs};

/// How much longer than its bound an operation may take (scheduling on a
/// loaded machine) before it counts as a broken deadline.
const GRACE: Duration = Duration::from_secs(2);
/// Every request's bound (`requestTimeoutMs` of every server).
const REQUEST_TIMEOUT: Duration = Duration::from_millis(2500);
/// The handshake's bound (`handshakeTimeoutMs`).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_millis(2000);
/// The 2026-07-28 probe's bound (the session's default).
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// Idle sessions are reaped after this.
const IDLE_TTL: Duration = Duration::from_secs(3);
/// Resident memory at the end of the load may exceed the figure after
/// warm-up by this fraction of it plus [`RSS_SLACK`]: allocator caches and
/// the varying number of live connections (each stdio child's pipes, each
/// HTTP connection's buffers) move it by tens of MiB; a leak per operation
/// over a run of minutes grows past it.
const RSS_BOUND: f64 = 0.5;
const RSS_SLACK: u64 = 48 * 1024 * 1024;
/// File descriptors after the run may exceed the baseline by this many:
/// none are expected (every handle the run's first connections create
/// lazily — the child reaper's signal pipe, say — is made before the
/// baseline, when the HTTP pool starts).
const FD_SLACK: usize = 0;
/// How long the end checks wait for descriptors, tasks and processes to go.
const SETTLE: Duration = Duration::from_secs(15);
/// The environment variable every stdio server of the run (and so every
/// grandchild) carries, with this run's nonce.
const MARKER: &str = "MCP_SOAK_RUN";

/// A small seeded generator (xorshift64*): the run's choices, reproducible
/// per seed up to scheduling.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        // splitmix64 of the seed, so neighbouring seeds differ everywhere.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo).max(1)
    }
    /// One of `items` (`None` when there are none).
    fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len()))
    }
}

/// A fault a stdio server of a config shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StdioFault {
    CrashMidCall,
    HangAtStart,
    Slow,
    StdoutNoise,
    Garbage,
    Oversized,
    BatchBomb,
    Flood,
    EscapeText,
    ExitOnProbe,
    IgnoreSigterm,
    Grandchild,
    ExitAtStart,
}

const STDIO_FAULTS: &[StdioFault] = &[
    StdioFault::CrashMidCall,
    StdioFault::HangAtStart,
    StdioFault::Slow,
    StdioFault::StdoutNoise,
    StdioFault::Garbage,
    StdioFault::Oversized,
    StdioFault::BatchBomb,
    StdioFault::Flood,
    StdioFault::EscapeText,
    StdioFault::ExitOnProbe,
    StdioFault::IgnoreSigterm,
    StdioFault::Grandchild,
    StdioFault::ExitAtStart,
];

impl StdioFault {
    fn name(self) -> &'static str {
        match self {
            StdioFault::CrashMidCall => "stdio: crash mid-call",
            StdioFault::HangAtStart => "stdio: hang (never answers initialize)",
            StdioFault::Slow => "stdio: slow answers (late-answer)",
            StdioFault::StdoutNoise => "stdio: stdout noise",
            StdioFault::Garbage => "stdio: garbage (invalid UTF-8, unknown ids)",
            StdioFault::Oversized => "stdio: oversized line (17 MiB)",
            StdioFault::BatchBomb => "stdio: batch bomb (16 MiB [0,0,…], at 2025-03-26)",
            StdioFault::Flood => "stdio: notification flood",
            StdioFault::EscapeText => "stdio: terminal escapes in its text",
            StdioFault::ExitOnProbe => "stdio: exits on the probe",
            StdioFault::IgnoreSigterm => "stdio: ignores stdin close and SIGTERM",
            StdioFault::Grandchild => "stdio: leaves a grandchild",
            StdioFault::ExitAtStart => "stdio: exits at start",
        }
    }
}

/// The HTTP servers the soak starts: each era well-behaved, and the HTTP
/// faults (on legacy-era servers, where sessions exist).
const HTTP_POOL: &[(&str, &[&str])] = &[
    ("http: legacy", &["--era", "legacy"]),
    ("http: modern", &["--era", "modern"]),
    ("http: dual", &["--era", "dual"]),
    (
        "http: drops its stream",
        &["--http-misbehave", "drop-stream"],
    ),
    (
        "http: expires the session (404)",
        &["--http-misbehave", "expire-session"],
    ),
    ("http: escape text", &["--misbehave", "escape-text"]),
    // Its sessions speak 2025-11-25, which has no batches: refused whole.
    ("http: batch bomb", &["--misbehave", "batch-bomb"]),
    ("http: slow head", &["--http-misbehave", "slow-head"]),
    ("http: 500 on calls", &["--http-misbehave", "status-500"]),
];
/// The well-behaved entries of [`HTTP_POOL`].
const HTTP_CLEAN: usize = 3;

/// One server of a session's config.
#[derive(Debug, Clone, PartialEq)]
enum Spec {
    Stdio {
        era: &'static str,
        fault: Option<StdioFault>,
        late_ms: u64,
    },
    Http {
        pool: usize,
    },
}

impl Spec {
    fn pick(rng: &mut Rng, fault_rate: f64) -> Spec {
        let faulty = rng.chance(fault_rate);
        if rng.chance(0.35) {
            let pool = if faulty {
                HTTP_CLEAN + rng.below(HTTP_POOL.len() - HTTP_CLEAN)
            } else {
                rng.below(HTTP_CLEAN)
            };
            return Spec::Http { pool };
        }
        let era = *rng.pick(&["legacy", "modern", "dual"]).unwrap_or(&"legacy");
        let fault = faulty.then(|| rng.pick(STDIO_FAULTS).copied()).flatten();
        // Exiting on the probe is what strict legacy servers do; the
        // batch bomb's server negotiates 2025-03-26 (the one revision with
        // batches), which takes the handshake.
        let era = if fault == Some(StdioFault::ExitOnProbe) || fault == Some(StdioFault::BatchBomb)
        {
            "legacy"
        } else {
            era
        };
        Spec::Stdio {
            era,
            fault,
            late_ms: rng.range(100, 4000),
        }
    }

    fn fault_name(&self) -> Option<&'static str> {
        match self {
            Spec::Stdio { fault, .. } => fault.map(StdioFault::name),
            Spec::Http { pool } => HTTP_POOL
                .get(*pool)
                .filter(|_| *pool >= HTTP_CLEAN)
                .map(|p| p.0),
        }
    }

    fn entry(&self, run: &Run) -> Value {
        let timeouts = (
            REQUEST_TIMEOUT.as_millis() as u64,
            HANDSHAKE_TIMEOUT.as_millis() as u64,
        );
        match self {
            Spec::Http { pool } => json!({
                "url": run.http_urls.get(*pool),
                "requestTimeoutMs": timeouts.0,
                "handshakeTimeoutMs": timeouts.1,
            }),
            Spec::Stdio {
                era,
                fault,
                late_ms,
            } => {
                let mut args: Vec<String> = vec!["--era".into(), (*era).into()];
                let mut misbehave = |names: &str| {
                    args.push("--misbehave".into());
                    args.push(names.into());
                };
                match fault {
                    None | Some(StdioFault::Grandchild) => {}
                    Some(StdioFault::CrashMidCall) => misbehave("crash-mid-call"),
                    Some(StdioFault::HangAtStart) => misbehave("never-answer-initialize"),
                    Some(StdioFault::Slow) => misbehave("late-answer"),
                    Some(StdioFault::StdoutNoise) => misbehave("stdout-noise,noise"),
                    Some(StdioFault::Garbage) => misbehave("invalid-utf8,unknown-ids"),
                    Some(StdioFault::Oversized) => misbehave("oversized-line"),
                    Some(StdioFault::BatchBomb) => misbehave("batch-bomb"),
                    Some(StdioFault::Flood) => misbehave("flood-notifications"),
                    Some(StdioFault::EscapeText) => misbehave("escape-text"),
                    Some(StdioFault::ExitOnProbe) => misbehave("strict-initialize"),
                    Some(StdioFault::IgnoreSigterm) => misbehave("ignore-stdin-close"),
                    Some(StdioFault::ExitAtStart) => misbehave("exit-immediately"),
                }
                if *fault == Some(StdioFault::Slow) {
                    args.extend(["--late-ms".into(), late_ms.to_string()]);
                }
                let (command, args) = if *fault == Some(StdioFault::Grandchild) {
                    // The shell starts a long sleep (the grandchild, in the
                    // server's process group, with the marker) and becomes
                    // the server.
                    let mut all = vec![
                        "-c".to_owned(),
                        "sleep 600 & exec \"$0\" \"$@\"".to_owned(),
                        run.kit.clone(),
                    ];
                    all.extend(args);
                    ("sh".to_owned(), all)
                } else {
                    (run.kit.clone(), args)
                };
                let mut entry = json!({
                    "command": command,
                    "args": args,
                    "env": {MARKER: run.nonce},
                    "requestTimeoutMs": timeouts.0,
                    "handshakeTimeoutMs": timeouts.1,
                });
                if *fault == Some(StdioFault::BatchBomb)
                    && let Some(entry) = entry.as_object_mut()
                {
                    // Batches accepted, so the bomb meets the element bound.
                    entry.insert("protocolVersion".into(), json!("2025-03-26"));
                }
                entry
            }
        }
    }
}

/// What every worker shares.
struct Run {
    kit: String,
    nonce: String,
    http_urls: Vec<String>,
    manager: RuntimeManager,
    fault_rate: f64,
    end: Instant,
    tally: Mutex<Tally>,
    dropped_notifications: AtomicU64,
    config_changes: AtomicU64,
    disposals: AtomicU64,
    idles: AtomicU64,
}

/// The kinds of operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Op {
    Acquire,
    Echo,
    Slow,
    Hang,
    Fail,
    Progress,
    Hostile,
    Read,
    Listen,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Acquire => "acquire",
            Op::Echo => "call echo",
            Op::Slow => "call slow (<0.4 s)",
            Op::Hang => "call slow (8 s: hangs)",
            Op::Fail => "call fail (isError)",
            Op::Progress => "call progress",
            Op::Hostile => "call escape tool (error)",
            Op::Read => "read resource",
            Op::Listen => "listen + touch",
        }
    }
}

#[derive(Debug, Default)]
struct OpTally {
    ok: u64,
    failed: u64,
    overruns: u64,
    max: Duration,
}

#[derive(Debug, Default)]
struct Tally {
    ops: BTreeMap<Op, OpTally>,
    /// Failure kind → count and one message.
    errors: BTreeMap<&'static str, (u64, String)>,
    /// Failures whose message does not name the server.
    unattributed: Vec<String>,
    /// Overruns, described.
    overrun_notes: Vec<String>,
    /// Faults chosen per config change.
    faults: BTreeMap<&'static str, u64>,
}

/// The typed cause of a failure.
fn error_kind(e: &RuntimeError) -> &'static str {
    match e {
        RuntimeError::Call { source, .. } => match source {
            SessionError::Timeout { kind, .. } => match kind {
                TimeoutKind::MaxTotal => "timeout (max total)",
                TimeoutKind::Handshake | TimeoutKind::Probe => "timeout (handshake)",
                _ => "timeout",
            },
            SessionError::Closed => "closed",
            SessionError::Transport(t) => match t {
                TransportError::Closed { .. } => "transport closed",
                TransportError::Timeout { .. } => "transport timeout",
                TransportError::HttpStatus { .. } => "HTTP status",
                TransportError::Http { .. } => "HTTP error",
                TransportError::Io(_) => "IO error",
                _ => "transport: other",
            },
            SessionError::Protocol { .. } => "protocol error (JSON-RPC error)",
            SessionError::InvalidResponse { .. } => "invalid response",
            SessionError::AnswerTooLarge { .. } => "answer too large",
            SessionError::UnknownTool { .. } => "unknown tool (server)",
            SessionError::NotSupported(_) => "not supported",
            _ => "session: other",
        },
        RuntimeError::UnknownTool { .. } => "unknown tool (server not started)",
        RuntimeError::UnknownEntry { .. } => "unknown entry (server not started)",
        RuntimeError::UnknownServer { .. } => "unknown server (not started)",
        RuntimeError::Disposed { .. } => "disposed while starting",
        RuntimeError::TooManySessions { .. } => "too many sessions",
        _ => "runtime: other",
    }
}

impl Run {
    /// Runs `op` under its bound; records the outcome. `None` on failure.
    async fn timed<T, F>(&self, op: Op, bound: Duration, server: &str, f: F) -> Option<T>
    where
        F: Future<Output = Result<T, RuntimeError>>,
    {
        let start = Instant::now();
        // The hard stop only keeps a stuck operation from stalling the run;
        // it is far past the bound, and counts as an overrun.
        let outcome = tokio::time::timeout(bound + GRACE + Duration::from_secs(30), f).await;
        let took = start.elapsed();
        let mut tally = self.tally.lock().unwrap_or_else(|e| e.into_inner());
        let t = tally.ops.entry(op).or_default();
        t.max = t.max.max(took);
        if took > bound + GRACE {
            t.overruns += 1;
            let note = format!(
                "{} on {server}: {:.1} s, bound {:.1} s",
                op.name(),
                took.as_secs_f64(),
                bound.as_secs_f64()
            );
            tally.overrun_notes.push(note);
        }
        let t = tally.ops.entry(op).or_default();
        match outcome {
            Ok(Ok(value)) => {
                t.ok += 1;
                Some(value)
            }
            Ok(Err(e)) => {
                t.failed += 1;
                let kind = error_kind(&e);
                let message = e.to_string();
                if let RuntimeError::Call { server: named, .. } = &e
                    && (named != server || !message.starts_with(&format!("{server}: ")))
                {
                    tally.unattributed.push(message.clone());
                }
                let entry = tally.errors.entry(kind).or_insert((0, String::new()));
                entry.0 += 1;
                if entry.1.is_empty() {
                    entry.1 = message;
                }
                None
            }
            Err(_) => {
                t.failed += 1;
                let entry = tally
                    .errors
                    .entry("stuck (hard stop)")
                    .or_insert((0, String::new()));
                entry.0 += 1;
                None
            }
        }
    }
}

fn config_of(run: &Run, specs: &[Spec]) -> Result<ResolvedConfig, String> {
    let servers: serde_json::Map<String, Value> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| (format!("s{i}"), s.entry(run)))
        .collect();
    let text = json!({ "mcpServers": servers }).to_string();
    let loaded = parse_str(&text, &Options::new()).map_err(|e| e.to_string())?;
    let config = resolve(&loaded.config, &|_: &str| None).map_err(|e| e.to_string())?;
    if let Some(s) = config
        .servers
        .values()
        .find(|s| s.request_timeout != REQUEST_TIMEOUT || s.handshake_timeout != HANDSHAKE_TIMEOUT)
    {
        return Err(format!("the config's timeouts were not taken: {s:?}"));
    }
    Ok(config)
}

/// The bound of an `acquire`: the probe, a second start after a server that
/// exits on it, the handshake, and tools/list then the other lists.
fn acquire_bound() -> Duration {
    PROBE_TIMEOUT + 2 * HANDSHAKE_TIMEOUT + 2 * REQUEST_TIMEOUT
}

async fn sleep_until_or_end(run: &Run, d: Duration) {
    let until = (Instant::now() + d).min(run.end);
    tokio::time::sleep_until(until.into()).await;
}

async fn worker(run: Arc<Run>, index: usize, servers: usize, seed: u64) -> Result<(), String> {
    let mut rng = Rng::new(seed ^ (index as u64).wrapping_mul(0xA24B_AED4_963E_E407));
    let session = format!("agent-{index}");
    let mut specs: Vec<Spec> = (0..servers)
        .map(|_| Spec::pick(&mut rng, run.fault_rate))
        .collect();
    let mut config = config_of(&run, &specs)?;
    note_faults(&run, &specs);
    // Per server: the connection's session seen last and its dropped count.
    let mut dropped: HashMap<String, (usize, u64)> = HashMap::new();
    // Start at different moments.
    sleep_until_or_end(&run, Duration::from_millis(rng.range(0, 1000))).await;
    while Instant::now() < run.end {
        if rng.chance(0.08) {
            let slot = rng.below(servers);
            let spec = Spec::pick(&mut rng, run.fault_rate);
            note_faults(&run, std::slice::from_ref(&spec));
            if let Some(s) = specs.get_mut(slot) {
                *s = spec;
            }
            config = config_of(&run, &specs)?;
            run.config_changes.fetch_add(1, Ordering::Relaxed);
        }
        let lease = run
            .timed(
                Op::Acquire,
                acquire_bound(),
                &session,
                run.manager.acquire(&session, &config),
            )
            .await;
        let Some(lease) = lease else {
            sleep_until_or_end(&run, Duration::from_millis(200)).await;
            continue;
        };
        for _ in 0..1 + rng.below(4) {
            operation(&run, &lease, &mut rng).await;
        }
        for name in lease.servers() {
            let Some(s) = lease.session(name) else {
                continue;
            };
            let now = s.diagnostics().dropped_notifications;
            let id = std::ptr::from_ref(s) as usize;
            let seen = dropped.entry(name.to_owned()).or_insert((id, 0));
            let delta = if seen.0 == id {
                now.saturating_sub(seen.1)
            } else {
                now
            };
            *seen = (id, now);
            run.dropped_notifications
                .fetch_add(delta, Ordering::Relaxed);
        }
        drop(lease);
        if rng.chance(0.04) {
            // Idle past the TTL: the reaper takes the session.
            run.idles.fetch_add(1, Ordering::Relaxed);
            sleep_until_or_end(&run, IDLE_TTL + Duration::from_millis(1500)).await;
        } else if rng.chance(0.01) {
            run.disposals.fetch_add(1, Ordering::Relaxed);
            run.manager.dispose_session(&session).await;
        } else {
            sleep_until_or_end(&run, Duration::from_millis(rng.range(0, 150))).await;
        }
    }
    Ok(())
}

fn note_faults(run: &Run, specs: &[Spec]) {
    let mut tally = run.tally.lock().unwrap_or_else(|e| e.into_inner());
    for s in specs {
        *tally
            .faults
            .entry(s.fault_name().unwrap_or("none"))
            .or_default() += 1;
    }
}

/// One operation on a random connected server of the lease.
async fn operation(run: &Run, lease: &RuntimeLease, rng: &mut Rng) {
    let servers: Vec<&str> = lease.servers().collect();
    let Some(&server) = rng.pick(&servers) else {
        return;
    };
    let tool = |name: &str| format!("{server}__{name}");
    let call = |op: Op, name: String, args: Value| async move {
        run.timed(op, REQUEST_TIMEOUT, server, lease.call_tool(&name, args))
            .await
    };
    // An escape-text server's own tool answers a JSON-RPC error full of
    // escape sequences: a typed failure naming the server, printed safely.
    let hostile = lease
        .catalog()
        .tools()
        .iter()
        .find(|t| t.server() == server && t.tool_name() == mcp_stack_testkit::ESCAPE_TOOL)
        .map(|t| t.name().to_owned());
    if let Some(name) = hostile
        && rng.chance(0.2)
    {
        call(Op::Hostile, name, json!({})).await;
        return;
    }
    match rng.below(10) {
        0..=2 => {
            call(Op::Echo, tool("echo"), json!({"text": "soak"})).await;
        }
        3 => {
            let ms = rng.range(10, 400);
            call(Op::Slow, tool("slow"), json!({"ms": ms})).await;
        }
        4 => {
            if rng.chance(0.3) {
                call(Op::Hang, tool("slow"), json!({"ms": 8000})).await;
            } else {
                call(Op::Fail, tool("fail"), json!({"message": "soak"})).await;
            }
        }
        5 => {
            call(
                Op::Progress,
                tool("progress"),
                json!({"steps": 3, "intervalMs": 10}),
            )
            .await;
        }
        6..=7 => {
            run.timed(
                Op::Read,
                REQUEST_TIMEOUT,
                server,
                lease.read_resource_at(server, "test://text/1"),
            )
            .await;
        }
        _ => {
            let Some(session) = lease.session(server) else {
                return;
            };
            let listen = async {
                let filter = SubscriptionFilter::new().resource("test://text/1");
                let call_error = |source| RuntimeError::Call {
                    server: server.to_owned(),
                    source,
                };
                let mut sub = session.listen(filter).await.map_err(call_error)?;
                lease
                    .call_tool(&tool("touch_resource"), json!({"uri": "test://text/1"}))
                    .await?;
                // The update may or may not come in time: listening briefly
                // is the point, not the notification.
                let _ = tokio::time::timeout(Duration::from_millis(500), sub.next()).await;
                sub.close();
                Ok(())
            };
            run.timed(
                Op::Listen,
                2 * REQUEST_TIMEOUT + Duration::from_millis(500),
                server,
                listen,
            )
            .await;
        }
    }
}

/// The testkit binary, built by cargo in this build's profile.
fn build_testkit() -> Result<String, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let workspace = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut command = Command::new(cargo);
    command.current_dir(workspace).args([
        "build",
        "--quiet",
        "--package",
        "mcp-stack-testkit",
        "--bin",
        "mcp-testkit",
        "--message-format=json",
        "--locked",
    ]);
    if !cfg!(debug_assertions) {
        command.arg("--release");
    }
    let out = command
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!("building mcp-testkit failed ({})", out.status));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m.pointer("/target/name").and_then(Value::as_str) == Some("mcp-testkit"))
        .find_map(|m| {
            m.get("executable")
                .and_then(Value::as_str)
                .map(String::from)
        })
        .ok_or_else(|| "cargo built mcp-testkit but did not say where".to_owned())
}

/// An HTTP server of the pool: a testkit process on a fixed port.
struct HttpChild {
    port: u16,
    args: &'static [&'static str],
    child: tokio::process::Child,
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

async fn start_http(
    kit: &str,
    port: u16,
    args: &'static [&'static str],
) -> Result<HttpChild, String> {
    let child = tokio::process::Command::new(kit)
        .arg("--http")
        .arg(format!("127.0.0.1:{port}"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {kit}: {e}"))?;
    // Ready when it accepts connections.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(HttpChild { port, args, child });
        }
        if Instant::now() > deadline {
            return Err(format!("the HTTP test server on port {port} did not start"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Kills an HTTP server of the pool now and then and starts it again on its
/// port: every connection to it breaks mid-call. Returns how many times.
async fn http_chaos(
    kit: String,
    pool: Arc<tokio::sync::Mutex<Vec<HttpChild>>>,
    end: Instant,
    seed: u64,
) -> u64 {
    let mut rng = Rng::new(seed ^ 0xC4A0_5C4A_05C4_A05C);
    let mut kills = 0;
    loop {
        let until = Instant::now() + Duration::from_millis(rng.range(2000, 6000));
        if until >= end {
            return kills;
        }
        tokio::time::sleep_until(until.into()).await;
        let mut pool = pool.lock().await;
        let i = rng.below(pool.len());
        let Some(server) = pool.get_mut(i) else {
            continue;
        };
        let (port, args) = (server.port, server.args);
        let _ = server.child.kill().await;
        kills += 1;
        // The port may linger for a moment.
        for _ in 0..50 {
            if let Ok(c) = start_http(&kit, port, args).await {
                *server = c;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn median_of(samples: &[u64]) -> u64 {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied().unwrap_or(0)
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count)
}

/// Processes of the run still there: any carrying the marker (stdio servers
/// and their grandchildren, wherever they were re-parented), and children of
/// ours (zombies included) other than the HTTP pool's.
fn left_processes(nonce: &str, pool: &[u32]) -> Vec<Left> {
    let me = std::process::id();
    let marker = format!("{MARKER}={nonce}");
    let mut left = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return left;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me || pool.contains(&pid) {
            continue;
        }
        let base = Path::new("/proc").join(pid.to_string());
        let stat = std::fs::read_to_string(base.join("stat")).unwrap_or_default();
        // pid (comm) state ppid …; comm may hold spaces and parentheses.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let mut fields = after.split_whitespace();
        let state = fields.next().unwrap_or("?");
        let ppid: u32 = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        let comm = stat
            .split_once('(')
            .and_then(|(_, r)| r.rsplit_once(')'))
            .map_or("?", |(c, _)| c);
        let marked = std::fs::read(base.join("environ"))
            .map(|env| env.split(|b| *b == 0).any(|var| var == marker.as_bytes()))
            .unwrap_or(false);
        if marked || ppid == me {
            left.push(Left {
                marked,
                what: format!("{pid} {comm} ({state})"),
            });
        }
    }
    left
}

/// A process of the run.
struct Left {
    /// It carries the run's marker (else: a child of ours).
    marked: bool,
    /// Pid, name and state.
    what: String,
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Polls `f` until `ok` holds of its value or [`SETTLE`] passes.
async fn settle<T>(mut f: impl FnMut() -> T, ok: impl Fn(&T) -> bool) -> (T, Duration) {
    let start = Instant::now();
    loop {
        let v = f();
        if ok(&v) || start.elapsed() > SETTLE {
            return (v, start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

static PANICS: AtomicU64 = AtomicU64::new(0);

pub(crate) fn run(args: SoakArgs) -> Result<(), String> {
    let args = args.resolved();
    if args.sessions == 0 || args.servers_per_session == 0 || args.duration == 0 {
        return Err("--sessions, --servers-per-session and --duration must be at least 1".into());
    }
    if !(0.0..=1.0).contains(&args.fault_rate) {
        return Err("--fault-rate is a probability, from 0 to 1".into());
    }
    if !cfg!(target_os = "linux") {
        return Err("the soak reads /proc: it runs on Linux".into());
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::Relaxed);
        previous(info);
    }));
    eprintln!("soak: building mcp-testkit");
    let kit = build_testkit()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start tokio: {e}"))?;
    rt.block_on(soak(args, kit))
}

async fn soak(args: Soak, kit: String) -> Result<(), String> {
    let Soak {
        sessions,
        servers_per_session: servers,
        duration,
        seed,
        fault_rate,
    } = args;
    let nonce = format!("{}-{seed}", std::process::id());
    let mut pool = Vec::new();
    for (_, pool_args) in HTTP_POOL {
        pool.push(start_http(&kit, free_port()?, pool_args).await?);
    }
    let http_urls: Vec<String> = pool
        .iter()
        .map(|c| format!("http://127.0.0.1:{}/mcp", c.port))
        .collect();
    let pool = Arc::new(tokio::sync::Mutex::new(pool));
    // Let the first moments' lazily made handles settle before the baseline.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fds_before = open_fds();
    let tasks_before = alive_tasks();

    let options = RuntimeOptions::default()
        .idle_ttl(IDLE_TTL)
        .drain_timeout(Duration::from_secs(2))
        .retry_backoff(Duration::from_millis(200), Duration::from_secs(2));
    let started = Instant::now();
    let run = Arc::new(Run {
        kit: kit.clone(),
        nonce: nonce.clone(),
        http_urls,
        manager: RuntimeManager::new(options),
        fault_rate,
        end: started + Duration::from_secs(duration),
        tally: Mutex::default(),
        dropped_notifications: AtomicU64::new(0),
        config_changes: AtomicU64::new(0),
        disposals: AtomicU64::new(0),
        idles: AtomicU64::new(0),
    });
    println!(
        "soak: {sessions} sessions × {servers} servers for {duration} s, seed {seed}, \
         fault rate {fault_rate} (mcp-testkit over stdio and streamable HTTP)"
    );
    let chaos = (fault_rate > 0.0)
        .then(|| tokio::spawn(http_chaos(kit.clone(), pool.clone(), run.end, seed)));
    let workers: Vec<_> = (0..sessions)
        .map(|i| tokio::spawn(worker(run.clone(), i, servers, seed)))
        .collect();
    // RSS after warm-up (a quarter of the run, at least 5 s, at most 30 s).
    let warm_up = Duration::from_secs((duration / 4).clamp(5, 30).min(duration));
    tokio::time::sleep(warm_up).await;
    // RSS sampled every 500 ms after warm-up; the first half's median is
    // compared with the second's, so that one moment's buffers (a 16 MiB
    // oversized line being skipped, say) decide nothing.
    let mut rss_samples = vec![rss().unwrap_or(0)];
    // Peaks during the load: the end checks compare against nothing if these
    // never rose.
    let (mut fds_peak, mut tasks_peak) = (open_fds(), alive_tasks());
    let pool_pids: Vec<u32> = pool
        .lock()
        .await
        .iter()
        .filter_map(|c| c.child.id())
        .collect();
    let mut processes_peak = 0;
    while Instant::now() < run.end {
        if rss_samples.len() % 4 == 0 {
            // The chaos task restarts pool servers: their new pids are
            // children without the marker, which only count after dispose.
            processes_peak = processes_peak.max(
                left_processes(&nonce, &pool_pids)
                    .iter()
                    .filter(|p| p.marked)
                    .count(),
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        rss_samples.push(rss().unwrap_or(0));
        fds_peak = fds_peak.max(open_fds());
        tasks_peak = tasks_peak.max(alive_tasks());
    }
    let rss_peak = rss_samples.iter().copied().max().unwrap_or(0);
    let (first, second) = rss_samples.split_at(rss_samples.len() / 2);
    let first = if first.is_empty() { second } else { first };
    let (rss_warm, rss_end) = (median_of(first), median_of(second));
    let mut worker_errors = Vec::new();
    let mut worker_panics = 0;
    for w in workers {
        match w.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => worker_errors.push(e),
            Err(e) if e.is_panic() => worker_panics += 1,
            Err(e) => worker_errors.push(e.to_string()),
        }
    }
    let http_restarts = match chaos {
        Some(c) => c.await.unwrap_or(0),
        None => 0,
    };
    let load_took = started.elapsed();
    let stats = run.manager.stats();
    let pool_pids: Vec<u32> = pool
        .lock()
        .await
        .iter()
        .filter_map(|c| c.child.id())
        .collect();
    let dispose_start = Instant::now();
    run.manager.dispose_all().await;
    let dispose_took = dispose_start.elapsed();
    let after_dispose = run.manager.stats();

    let (left, left_after) = settle(|| left_processes(&nonce, &pool_pids), Vec::is_empty).await;
    let run = Arc::try_unwrap(run).map_err(|_| "a worker still holds the run".to_owned())?;
    let Run {
        manager,
        tally,
        dropped_notifications,
        config_changes,
        disposals,
        idles,
        ..
    } = run;
    drop(manager);
    let (fds_after, _) = settle(open_fds, |n| *n <= fds_before + FD_SLACK).await;
    let (tasks_after, _) = settle(alive_tasks, |n| *n <= tasks_before).await;
    for mut c in std::mem::take(&mut *pool.lock().await) {
        let _ = c.child.kill().await;
    }
    let tally = tally.into_inner().unwrap_or_else(|e| e.into_inner());
    let panics = PANICS.load(Ordering::Relaxed);

    // The table.
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{:<28} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8}",
        "operation", "total", "ok", "failed", "overruns", "max s", "bound s"
    );
    let mut totals = OpTally::default();
    for (op, t) in &tally.ops {
        let bound = match op {
            Op::Acquire => acquire_bound(),
            Op::Listen => 2 * REQUEST_TIMEOUT + Duration::from_millis(500),
            _ => REQUEST_TIMEOUT,
        };
        let _ = writeln!(
            out,
            "{:<28} {:>8} {:>8} {:>8} {:>9} {:>9.2} {:>8.1}",
            op.name(),
            t.ok + t.failed,
            t.ok,
            t.failed,
            t.overruns,
            t.max.as_secs_f64(),
            bound.as_secs_f64()
        );
        totals.ok += t.ok;
        totals.failed += t.failed;
        totals.overruns += t.overruns;
    }
    let _ = writeln!(
        out,
        "{:<28} {:>8} {:>8} {:>8} {:>9}   ({:.0} operations/s)",
        "all",
        totals.ok + totals.failed,
        totals.ok,
        totals.failed,
        totals.overruns,
        (totals.ok + totals.failed) as f64 / load_took.as_secs_f64()
    );
    let _ = writeln!(out, "\nfailures by typed cause (one example each)");
    for (kind, (n, example)) in &tally.errors {
        let mut example = example.replace('\n', " ");
        if example.chars().count() > 110 {
            example = example.chars().take(110).collect::<String>() + "…";
        }
        let _ = writeln!(out, "  {kind:<34} {n:>7}  {example}");
    }
    let _ = writeln!(
        out,
        "\nservers configured, by fault (at start and per config change)"
    );
    for (fault, n) in &tally.faults {
        let _ = writeln!(out, "  {fault:<44} {n:>7}");
    }
    let _ = writeln!(
        out,
        "  {:<44} {http_restarts:>7}",
        "http: killed and started again (chaos)"
    );
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let rss_limit = rss_warm + (rss_warm as f64 * RSS_BOUND) as u64 + RSS_SLACK;
    let _ = writeln!(out, "\nruntime");
    let _ = writeln!(
        out,
        "  builds {}  connects {}  reuses {}  failed starts {}  reaped sessions {}",
        stats.builds, stats.connects, stats.reuses, stats.failed_starts, stats.reaped_sessions
    );
    let _ = writeln!(
        out,
        "  config changes {}  idle pauses past the TTL {}  explicit disposals {}  \
         dropped notifications {}",
        config_changes.load(Ordering::Relaxed),
        idles.load(Ordering::Relaxed),
        disposals.load(Ordering::Relaxed),
        dropped_notifications.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        out,
        "  at the end: {} sessions, {} connections; dispose_all took {:.2} s; after it {} \
         sessions, {} connections",
        stats.sessions,
        stats.connections,
        dispose_took.as_secs_f64(),
        after_dispose.sessions,
        after_dispose.connections
    );

    let _ = writeln!(out, "\npromises");
    let mut broken = Vec::new();
    let mut check = |name: String, ok: bool| {
        let _ = writeln!(out, "  [{}] {name}", if ok { " ok " } else { "FAIL" });
        if !ok {
            broken.push(name);
        }
    };
    check(
        format!(
            "deadline overruns (> bound + {} s): {}",
            GRACE.as_secs(),
            totals.overruns
        ),
        totals.overruns == 0,
    );
    check(
        format!("panics: {}", panics + worker_panics),
        panics + worker_panics == 0,
    );
    check(
        format!(
            "failures not naming their server: {}",
            tally.unattributed.len()
        ),
        tally.unattributed.is_empty(),
    );
    check(
        format!("workers that could not run: {}", worker_errors.len()),
        worker_errors.is_empty(),
    );
    check(
        format!(
            "processes left after dispose: {} (waited {:.1} s; peak {processes_peak} during \
             the load, which must not be 0)",
            left.len(),
            left_after.as_secs_f64()
        ),
        left.is_empty() && processes_peak > 0,
    );
    check(
        format!(
            "file descriptors: {fds_before} before, {fds_after} after (slack {FD_SLACK}; \
             peak {fds_peak} during the load)"
        ),
        fds_after <= fds_before + FD_SLACK,
    );
    check(
        format!(
            "tokio tasks: {tasks_before} before, {tasks_after} after (peak {tasks_peak} during \
             the load)"
        ),
        tasks_after <= tasks_before,
    );
    check(
        format!(
            "resident memory (medians): {:.0} MiB in the first half after warm-up ({} s), \
             {:.0} MiB in the second, peak {:.0} MiB (bound {:.0} MiB: +{:.0}% + {:.0} MiB)",
            mib(rss_warm),
            warm_up.as_secs(),
            mib(rss_end),
            mib(rss_peak),
            mib(rss_limit),
            RSS_BOUND * 100.0,
            mib(RSS_SLACK)
        ),
        rss_end <= rss_limit,
    );
    check(
        format!(
            "sessions left after dispose_all: {}",
            after_dispose.sessions
        ),
        after_dispose.sessions == 0 && after_dispose.connections == 0,
    );
    for note in tally.overrun_notes.iter().take(10) {
        let _ = writeln!(out, "  overrun: {note}");
    }
    for m in tally.unattributed.iter().take(5) {
        let _ = writeln!(out, "  unattributed: {m}");
    }
    for e in worker_errors.iter().take(5) {
        let _ = writeln!(out, "  worker: {e}");
    }
    for p in left.iter().take(10) {
        let _ = writeln!(out, "  left: {}", p.what);
    }
    // Failure examples hold servers' words (escape-text's escape sequences
    // among them): the report goes out through the stack's printable filter.
    println!("{}", printable(&out, Layout::Block));
    if broken.is_empty() {
        println!("soak: every promise kept");
        Ok(())
    } else {
        Err(format!("broken promises: {}", broken.join("; ")))
    }
}
