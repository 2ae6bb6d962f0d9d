//! `bench runtime`: the session runtime manager's warm path (fingerprint
//! hit) against a plain `HashMap` lookup plus fingerprint comparison, its
//! cold path (start, handshake, tools/list), and the memory of idle
//! sessions (in-memory transports).

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_config::{Fingerprint, Options, ResolvedConfig, ResolvedServer, parse_str, resolve};
use mcp_jsonrpc::{Message, Response, to_raw};
use mcp_runtime::{ConnectError, Connector, RuntimeManager, RuntimeOptions};
use mcp_testkit::{InProcessConnector, ServerOptions};
use mcp_transport::{BoxFuture, Received, Transport, memory};
use serde_json::json;

use super::median;
use crate::args::RuntimeArgs;

/// The least server there is: an in-memory pair and a task answering
/// `initialize` and `tools/list` (two tools) from constants. Used for the
/// memory figure, so that the server's own state is nearly nothing.
#[derive(Debug)]
struct Minimal;

impl Connector for Minimal {
    fn connect<'a>(
        &'a self,
        _: &'a ResolvedServer,
    ) -> BoxFuture<'a, Result<Arc<dyn Transport>, ConnectError>> {
        let (client, server) = memory::pair();
        tokio::spawn(minimal_server(server));
        Box::pin(async move { Ok(Arc::new(client) as Arc<dyn Transport>) })
    }
}

async fn minimal_server(t: memory::MemoryTransport) {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
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

/// Each server is `mcp_testkit::serve` in-process over a duplex stream, with
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

/// Resident set size in bytes, from /proc/self/status (Linux).
fn rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Interleaved rounds of the warm path and its floor.
const ROUNDS: usize = 40;

pub(crate) fn run(args: RuntimeArgs) -> Result<(), String> {
    let RuntimeArgs {
        warm_iters,
        cold_iters,
        sessions,
        servers,
    } = args;
    if warm_iters == 0 || cold_iters == 0 || sessions == 0 || servers == 0 {
        return Err("every count must be at least 1".into());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start tokio: {e}"))?;
    rt.block_on(bench(warm_iters, cold_iters, sessions, servers))
}

async fn bench(
    warm_iters: usize,
    cold_iters: usize,
    sessions: usize,
    servers: usize,
) -> Result<(), String> {
    let cfg = config(servers)?;
    let err = |e: mcp_runtime::RuntimeError| e.to_string();
    println!(
        "bench runtime: {servers} servers per session (mcp-testkit in-process over duplex streams \
         unless said otherwise); best and median of the rounds"
    );

    // Warm path: 100 sessions registered; requests rotate over them.
    let manager = RuntimeManager::with_connector(RuntimeOptions::default(), testkit());
    let ids: Vec<String> = (0..100).map(|i| format!("agent-session-{i}")).collect();
    for id in &ids {
        drop(manager.acquire(id, &cfg).await.map_err(err)?);
    }
    let mut plain: HashMap<String, (Fingerprint, Arc<()>)> = HashMap::new();
    for id in &ids {
        plain.insert(id.clone(), (cfg.fingerprint, Arc::new(())));
    }
    let fp = cfg.fingerprint;
    let mut ours = Vec::new();
    let mut floor = Vec::new();
    // Many short interleaved rounds: load from elsewhere hits both alike,
    // and the best round of each is compared.
    let round = (warm_iters / ROUNDS).max(1);
    for _ in 0..ROUNDS {
        let t = Instant::now();
        for i in 0..round {
            let id = ids.get(i % ids.len()).map_or("", String::as_str);
            let lease = manager.acquire(black_box(id), &cfg).await.map_err(err)?;
            black_box(&lease);
        }
        ours.push(t.elapsed() / round as u32);
        let t = Instant::now();
        for i in 0..round {
            let id = ids.get(i % ids.len()).map_or("", String::as_str);
            let hit = plain
                .get(black_box(id))
                .is_some_and(|e| e.0 == black_box(fp));
            black_box(hit);
        }
        floor.push(t.elapsed() / round as u32);
    }
    ours.sort();
    floor.sort();
    let stats = manager.stats();
    if stats.connects != (ids.len() * servers) as u64 {
        return Err(format!("the warm path connected again: {stats:?}"));
    }
    let ns = |d: Duration| d.as_nanos() as f64;
    let (best_ours, best_floor) = (ours.first().copied(), floor.first().copied());
    let (best_ours, best_floor) = (
        best_ours.unwrap_or_default(),
        best_floor.unwrap_or_default(),
    );
    println!();
    println!(
        "warm path ({warm_iters} requests in {ROUNDS} interleaved rounds, 100 sessions registered)"
    );
    println!(
        "  {:<52} {:>8.1} ns  (median {:>6.1})",
        "RuntimeManager::acquire + drop lease",
        ns(best_ours),
        ns(median(&ours))
    );
    println!(
        "  {:<52} {:>8.1} ns  (median {:>6.1})",
        "floor: HashMap::get + fingerprint ==",
        ns(best_floor),
        ns(median(&floor))
    );
    println!(
        "  ratio: {:.2}x the floor (target: within 3x)",
        ns(best_ours) / ns(best_floor).max(0.001)
    );
    manager.dispose_all().await;

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
        median(&cold).as_secs_f64() / median(&ours).as_secs_f64().max(1e-12)
    );

    // Memory of idle sessions.
    let Some(before) = rss() else {
        println!("\nmemory: /proc/self/status not readable; skipped");
        return Ok(());
    };
    // The servers alone: the same tasks and pairs with no client session.
    let mut parked = Vec::with_capacity(sessions * servers);
    for _ in 0..sessions * servers {
        let (client, server) = memory::pair();
        tokio::spawn(minimal_server(server));
        parked.push(client);
    }
    tokio::task::yield_now().await;
    let servers_only = rss().unwrap_or(before).saturating_sub(before);
    drop(parked);
    tokio::task::yield_now().await;

    let manager = RuntimeManager::with_connector(RuntimeOptions::default(), Arc::new(Minimal));
    let before = rss().unwrap_or(0);
    for i in 0..sessions {
        drop(
            manager
                .acquire(&format!("idle-{i}"), &cfg)
                .await
                .map_err(err)?,
        );
    }
    let after = rss().unwrap_or(0);
    let total = after.saturating_sub(before);
    let stats = manager.stats();
    println!();
    println!(
        "memory per idle session at {sessions} sessions ({servers} servers each, in-memory \
         transports, minimal in-process server; RSS delta from /proc/self/status)"
    );
    println!(
        "  {:<52} {:>8.1} KiB",
        "client + server, per session",
        total as f64 / sessions as f64 / 1024.0
    );
    println!(
        "  {:<52} {:>8.1} KiB",
        "of which the servers' tasks and pairs (measured alone)",
        servers_only as f64 / sessions as f64 / 1024.0
    );
    println!(
        "  {:<52} {:>8.1} KiB  ({} sessions, {} connections live)",
        "runtime client side, per session (difference)",
        total.saturating_sub(servers_only) as f64 / sessions as f64 / 1024.0,
        stats.sessions,
        stats.connections
    );
    manager.dispose_all().await;
    Ok(())
}
