//! `bench runtime`: the session runtime manager's warm path (fingerprint
//! hit) against a plain `HashMap` lookup plus fingerprint comparison, with
//! 10 to 100,000 sessions registered; a reaper pass and `dispose_all` at
//! 100,000; the cold path (start, handshake, tools/list); and the memory of
//! idle sessions (in-memory transports, live heap bytes).

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_stack_config::{Fingerprint, Options, ResolvedConfig, ResolvedServer, parse_str, resolve};
use mcp_stack_jsonrpc::{Message, Response, to_raw};
use mcp_stack_runtime::{ConnectError, Connector, RuntimeManager, RuntimeOptions};
use mcp_stack_testkit::{InProcessConnector, ServerOptions};
use mcp_stack_transport::{BoxFuture, Received, Transport, memory};
use serde_json::json;

use super::{heap, median};
use crate::args::RuntimeArgs;

/// The least server there is: an in-memory pair and a task answering
/// `initialize` and `tools/list` (two tools) from constants. Used for the
/// memory figure, so that the server's own state is nearly nothing.
#[derive(Debug)]
struct Minimal {
    tools: Tools,
    /// Connections made, to tell them apart (`Tools::Distinct`).
    next: AtomicUsize,
}

impl Connector for Minimal {
    fn connect<'a>(
        &'a self,
        _: &'a ResolvedServer,
    ) -> BoxFuture<'a, Result<Arc<dyn Transport>, ConnectError>> {
        let (client, server) = memory::pair();
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(minimal_server(server, self.tools, i));
        Box::pin(async move { Ok(Arc::new(client) as Arc<dyn Transport>) })
    }
}

async fn minimal_server(t: memory::MemoryTransport, tools: Tools, i: usize) {
    let text = match tools {
        Tools::Same => json!({"type": "string"}),
        // A description of its own makes each connection's schemas differ.
        Tools::Distinct => json!({"type": "string", "description": format!("text {i}")}),
    };
    let schema = json!({"type": "object", "properties": {"text": text}});
    while let Ok(item) = t.recv().await {
        let Received::Message(Message::Request(r)) = item else {
            continue;
        };
        let result = match r.method.as_str() {
            "initialize" => json!({"protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}}, "serverInfo": {"name": "min", "version": "1"}}),
            "tools/list" => json!({"tools": [
                {"name": "echo", "inputSchema": schema},
                {"name": "search", "inputSchema": schema, "annotations": {"readOnlyHint": true}}
            ]}),
            _ => json!({}),
        };
        let Ok(raw) = to_raw(&result) else { return };
        if t.send(&Message::from(Response::new(r.id, raw)))
            .await
            .is_err()
        {
            return;
        }
    }
}

/// Each server is `mcp_stack_testkit::serve` in-process over a duplex stream, with
/// the default options (the configs' `args` only make the servers differ).
fn testkit() -> Arc<InProcessConnector> {
    Arc::new(InProcessConnector::with_options(ServerOptions::default()))
}

fn config(servers: usize) -> Result<ResolvedConfig, String> {
    let entries: Vec<String> = (0..servers)
        .map(|i| format!(r#""s{i}": {{"command": "kit", "args": ["{i}"]}}"#))
        .collect();
    let text = format!(r#"{{"mcpServers": {{{}}}}}"#, entries.join(","));
    let loaded = parse_str(&text, &Options::new()).map_err(|e| e.to_string())?;
    resolve(&loaded.config, &|_: &str| None).map_err(|e| e.to_string())
}

/// Interleaved rounds of the warm path and its floor.
const ROUNDS: usize = 40;

pub(crate) fn run(args: RuntimeArgs) -> Result<(), String> {
    let RuntimeArgs {
        warm_iters,
        cold_iters,
        sessions,
        servers,
        registered,
    } = args;
    if warm_iters == 0
        || cold_iters == 0
        || sessions.contains(&0)
        || servers == 0
        || registered.contains(&0)
    {
        return Err("every count must be at least 1".into());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start tokio: {e}"))?;
    rt.block_on(bench(
        warm_iters,
        cold_iters,
        &registered,
        sessions,
        servers,
    ))
}

async fn bench(
    warm_iters: usize,
    cold_iters: usize,
    registered: &[usize],
    sessions: Vec<usize>,
    servers: usize,
) -> Result<(), String> {
    let cfg = config(servers)?;
    let err = |e: mcp_stack_runtime::RuntimeError| e.to_string();
    heap::counting();
    println!(
        "bench runtime: {servers} servers per session (mcp-testkit in-process over duplex streams \
         unless said otherwise); best and median of the rounds"
    );

    // Warm path: `n` sessions registered; requests rotate over them.
    let mut medians = Vec::new();
    println!();
    println!(
        "warm path ({warm_iters} requests per size in {ROUNDS} interleaved rounds; sessions \
         registered through the minimal in-memory server; requests rotate over them)"
    );
    for &n in registered {
        let w = warm_path(&cfg, n, warm_iters).await?;
        println!(
            "  {n:>7} sessions: acquire + drop lease {:>6.1} ns (median {:>6.1}); floor: \
             HashMap::get + fingerprint == {:>5.1} ns (median {:>5.1}); {:.2}x the floor \
             (target: within 2x)",
            w.best_ours,
            w.median_ours,
            w.best_floor,
            w.median_floor,
            w.best_ours / w.best_floor.max(0.001)
        );
        println!(
            "  {n:>7} sessions: thread-safe floor: Mutex<HashMap> lock + get + fingerprint == \
             + Arc clone and drop {:>5.1} ns (median {:>5.1}); ours is {:.2}x that",
            w.best_shared,
            w.median_shared,
            w.best_ours / w.best_shared.max(0.001)
        );
        if let Some(reap) = w.reap_pass {
            println!(
                "  {n:>7} sessions idle, none due: a reaper pass (reap_expired) takes {:.1} µs; \
                 dispose_all then closes them in {:.1} ms ({:.2} µs per session)",
                reap.as_secs_f64() * 1e6,
                w.dispose.as_secs_f64() * 1e3,
                w.dispose.as_secs_f64() * 1e6 / n as f64
            );
        }
        medians.push(w.median_ours);
    }
    let warm_median = medians.first().copied().unwrap_or_default();

    // Cold path: a new session each time.
    let manager = RuntimeManager::with_connector(RuntimeOptions::default(), testkit());
    let mut cold = Vec::with_capacity(cold_iters);
    for i in 0..cold_iters {
        let id = format!("cold-{i}");
        let t = Instant::now();
        let lease = manager.acquire(&id, &cfg).await.map_err(err)?;
        cold.push(t.elapsed());
        if lease.catalog().is_empty() {
            return Err("the cold path found no tools".into());
        }
        drop(lease);
        manager.dispose_session(&id).await;
    }
    cold.sort();
    println!();
    println!(
        "cold path ({cold_iters} new sessions: {servers} servers started concurrently, handshake, tools/list)"
    );
    println!(
        "  {:<52} {:>8.1} µs  (median {:>6.1})",
        "RuntimeManager::acquire, new session",
        cold.first().copied().unwrap_or_default().as_secs_f64() * 1e6,
        median(&cold).as_secs_f64() * 1e6
    );
    println!(
        "  warm path is {:.0}x faster than the cold path (medians)",
        median(&cold).as_secs_f64() * 1e9 / warm_median.max(1e-3)
    );

    // Memory of idle sessions: live heap bytes, counted by the allocator.
    println!();
    println!(
        "memory per idle session ({servers} servers each, in-memory transports, a minimal \
         in-process server; live heap bytes, counted by the allocator)"
    );
    // The same sessions once their deadline timers have lapsed: each
    // connection's timer outlives its last request by up to that request's
    // timeout (a short one here, to see it sooner; nothing else differs).
    let mut quick = cfg.clone();
    for server in quick.servers.values_mut() {
        server.request_timeout = LAPSE;
    }
    for &n in &sessions {
        for (tools, cfg, lapsed) in [
            (Tools::Same, &cfg, false),
            (Tools::Same, &quick, true),
            (Tools::Distinct, &cfg, false),
        ] {
            let m = idle_memory(cfg, n, servers, tools, lapsed).await?;
            let label = match lapsed {
                false => tools.label().to_owned(),
                true => format!("{}, timers lapsed", tools.label()),
            };
            println!(
                "  {n:>7} sessions, {label:<33} {:>6.1} KiB client side  ({:.1} KiB with the \
                 servers' tasks and pairs; {} connections)",
                m.client as f64 / n as f64 / 1024.0,
                m.total as f64 / n as f64 / 1024.0,
                m.connections,
            );
        }
    }
    println!(
        "  (same tool lists: every session connects the same servers, as agents of one platform \
         do; distinct: each connection's tools differ, so nothing is shared. Measured right \
         after the sessions' last request, when each connection's deadline timer (one per \
         connection, in its reader task) is still set; timers lapsed: with a {} ms request \
         timeout, measured once it has passed and the timers are gone, as for any session \
         idle longer than its request timeout)",
        LAPSE.as_millis()
    );
    Ok(())
}

/// The warm path with `n` sessions registered, in nanoseconds.
struct Warm {
    best_ours: f64,
    median_ours: f64,
    best_floor: f64,
    median_floor: f64,
    /// The least a registry shared between threads pays: a lock, the same
    /// lookup, and a reference count up and down.
    best_shared: f64,
    median_shared: f64,
    /// One reaper pass with nothing due (measured at the largest size).
    reap_pass: Option<Duration>,
    dispose: Duration,
}

async fn warm_path(cfg: &ResolvedConfig, n: usize, iters: usize) -> Result<Warm, String> {
    let err = |e: mcp_stack_runtime::RuntimeError| e.to_string();
    let minimal = Minimal {
        tools: Tools::Same,
        next: AtomicUsize::new(0),
    };
    let options = RuntimeOptions::default().max_sessions(n.max(10_000));
    let manager = RuntimeManager::with_connector(options, Arc::new(minimal));
    let ids: Vec<String> = (0..n).map(|i| format!("agent-session-{i}")).collect();
    for id in &ids {
        drop(manager.acquire(id, cfg).await.map_err(err)?);
    }
    let mut plain: HashMap<String, (Fingerprint, Arc<()>)> = HashMap::new();
    for id in &ids {
        plain.insert(id.clone(), (cfg.fingerprint, Arc::new(())));
    }
    let shared_map = std::sync::Mutex::new(plain.clone());
    let fp = cfg.fingerprint;
    let mut ours = Vec::new();
    let mut floor = Vec::new();
    let mut shared = Vec::new();
    // Many short interleaved rounds: load from elsewhere hits both alike,
    // and the best round of each is compared.
    let round = (iters / ROUNDS).max(1);
    let mut next = 0usize;
    for _ in 0..ROUNDS {
        let start = next;
        let t = Instant::now();
        for _ in 0..round {
            let id = ids.get(next % n).map_or("", String::as_str);
            next = next.wrapping_add(1);
            let lease = manager.acquire(black_box(id), cfg).await.map_err(err)?;
            black_box(&lease);
        }
        ours.push(t.elapsed() / round as u32);
        let mut next_floor = start;
        let t = Instant::now();
        for _ in 0..round {
            let id = ids.get(next_floor % n).map_or("", String::as_str);
            next_floor = next_floor.wrapping_add(1);
            let hit = plain
                .get(black_box(id))
                .is_some_and(|e| e.0 == black_box(fp));
            black_box(hit);
        }
        floor.push(t.elapsed() / round as u32);
        let mut next_shared = start;
        let t = Instant::now();
        for _ in 0..round {
            let id = ids.get(next_shared % n).map_or("", String::as_str);
            next_shared = next_shared.wrapping_add(1);
            let held = {
                let map = shared_map.lock().unwrap_or_else(|e| e.into_inner());
                map.get(black_box(id))
                    .filter(|e| e.0 == black_box(fp))
                    .map(|e| Arc::clone(&e.1))
            };
            black_box(held);
        }
        shared.push(t.elapsed() / round as u32);
    }
    ours.sort();
    floor.sort();
    shared.sort();
    let stats = manager.stats();
    if stats.builds != n as u64 {
        return Err(format!("the warm path built again: {stats:?}"));
    }
    let ns = |d: Option<&Duration>| d.copied().unwrap_or_default().as_nanos() as f64;
    let reap_pass = if n >= 100_000 {
        let t = Instant::now();
        let reaped = manager.reap_expired().await;
        let pass = t.elapsed();
        if reaped != 0 {
            return Err(format!("{reaped} sessions reaped before their TTL"));
        }
        Some(pass)
    } else {
        None
    };
    let t = Instant::now();
    manager.dispose_all().await;
    Ok(Warm {
        best_ours: ns(ours.first()),
        median_ours: ns(ours.get(ours.len() / 2)),
        best_floor: ns(floor.first()),
        median_floor: ns(floor.get(floor.len() / 2)),
        best_shared: ns(shared.first()),
        median_shared: ns(shared.get(shared.len() / 2)),
        reap_pass,
        dispose: t.elapsed(),
    })
}

/// Whether the minimal servers of different connections list the same tools.
#[derive(Debug, Clone, Copy)]
enum Tools {
    Same,
    Distinct,
}

impl Tools {
    fn label(self) -> &'static str {
        match self {
            Tools::Same => "same tool lists",
            Tools::Distinct => "distinct tool lists",
        }
    }
}

/// Yields until the live heap has not changed for a while: every task that
/// was ready has run until it waits, and the ones that were ending (servers
/// whose peer left, teardowns) have freed what they held, so neither is
/// counted against the next measurement.
async fn quiesce() {
    let mut last = heap::live();
    let mut still = 0;
    while still < 64 {
        tokio::task::yield_now().await;
        let now = heap::live();
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
}

/// What `n` idle sessions hold, in bytes.
struct IdleMemory {
    /// Everything: the sessions, and the servers' tasks and in-memory pairs.
    total: usize,
    /// Without the servers' tasks and pairs (measured alone, the same way).
    client: usize,
    connections: usize,
}

/// The request timeout of the sessions measured once their timers lapsed.
const LAPSE: Duration = Duration::from_millis(100);

/// The memory of `n` idle sessions; `lapsed`: measured once their request
/// timeout (`cfg`'s, short) has passed.
async fn idle_memory(
    cfg: &ResolvedConfig,
    n: usize,
    servers: usize,
    tools: Tools,
    lapsed: bool,
) -> Result<IdleMemory, String> {
    let err = |e: mcp_stack_runtime::RuntimeError| e.to_string();
    // The servers alone: the same tasks and pairs with no client session
    // (each answers nothing until asked, so this is their idle state).
    quiesce().await;
    let before = heap::live();
    let mut parked = Vec::with_capacity(n * servers);
    for i in 0..n * servers {
        let (client, server) = memory::pair();
        tokio::spawn(minimal_server(server, tools, i));
        parked.push(client);
    }
    // Every server must have run up to its first `recv` (its schema built,
    // its receive pending) before it is counted. One yield is not enough:
    // the scheduler polls a few dozen tasks between two polls of this one,
    // and a server first polled later would count as client memory.
    quiesce().await;
    let servers_only = usize::try_from(heap::live() - before).unwrap_or(0);
    drop(parked);

    let manager = RuntimeManager::with_connector(
        RuntimeOptions::default().max_sessions(n.max(10_000)),
        Arc::new(Minimal {
            tools,
            next: AtomicUsize::new(0),
        }),
    );
    quiesce().await;
    let before = heap::live();
    for i in 0..n {
        drop(
            manager
                .acquire(&format!("idle-{i}"), cfg)
                .await
                .map_err(err)?,
        );
    }
    if lapsed {
        tokio::time::sleep(
            cfg.servers
                .values()
                .map(|s| s.request_timeout)
                .max()
                .unwrap_or_default()
                * 2,
        )
        .await;
    }
    quiesce().await;
    let total = usize::try_from(heap::live() - before).unwrap_or(0);
    let connections = manager.stats().connections;
    manager.dispose_all().await;
    drop(manager);
    Ok(IdleMemory {
        total,
        client: total.saturating_sub(servers_only),
        connections,
    })
}
