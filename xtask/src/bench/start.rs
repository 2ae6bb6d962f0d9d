//! `bench start`: an agent's start with N stdio servers that each take D ms
//! to start (`mcp-testkit --startup-delay-ms D`), to its catalog:
//!
//! - ours, cold: `RuntimeManager::acquire` with an empty catalog cache (every
//!   server started, concurrently; target: the slowest server + 100 ms);
//! - ours, from the persisted catalog: a new manager (as a new process
//!   would be) over the cache the cold run wrote; `acquire` returns the
//!   catalog at once and connects in the background (target: ≤ 5 ms,
//!   whatever N);
//! - ours, `persisted_catalog` (what `mcp tools --config` lists from the
//!   cache): the same reads, checks and parses with nothing started, timed
//!   over 100 calls in one manager, a steadier figure than a start; then 20
//!   calls each after 50 ms asleep, which shows what a start pays for
//!   coming after an idle wait (cores woken from idle run the same work
//!   slower);
//! - rmcp, one client per server, sequentially and joined (`join_all`),
//!   each connected and its tools listed: the reference.
//!
//! Every figure is a new set of server processes; each variant runs once
//! per round, in turn, after the processes of the one before have exited,
//! and the median and best are printed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mcp_stack_config::{FingerprintKey, Options, ResolvedConfig, parse_str, resolve_with_key};
use mcp_stack_runtime::{CatalogCache, RuntimeManager, RuntimeOptions, ToolStatus};
use serde_json::json;

use super::stdio::build_testkit;
use crate::args::StartArgs;

pub(crate) fn run(args: StartArgs) -> Result<(), String> {
    let program = match &args.server {
        Some(p) => p.clone(),
        None => build_testkit()?,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio: {e}"))?;
    runtime.block_on(bench(&args, &program))
}

fn config(program: &str, servers: usize, delay_ms: u64) -> Result<ResolvedConfig, String> {
    let mut map = serde_json::Map::new();
    for i in 0..servers {
        map.insert(
            format!("s{i}"),
            json!({"command": program, "args": ["--startup-delay-ms", delay_ms.to_string()]}),
        );
    }
    let text = json!({ "mcpServers": map }).to_string();
    let loaded = parse_str(&text, &Options::new()).map_err(|e| e.to_string())?;
    let key = FingerprintKey::from_bytes([7; 32]);
    resolve_with_key(&loaded.config, &|_: &str| None, &key).map_err(|e| e.to_string())
}

fn manager(dir: &PathBuf) -> RuntimeManager {
    let options = RuntimeOptions::default()
        .idle_ttl(Duration::ZERO)
        .catalog_cache(CatalogCache::in_dir(dir));
    RuntimeManager::new(options)
}

/// Ours, cold: an empty cache, every server started before `acquire` returns.
async fn ours_cold(
    cfg: &ResolvedConfig,
    dir: &PathBuf,
    tools: &mut usize,
) -> Result<Duration, String> {
    mcp_stack_runtime::persist::clear_cache_dir(dir).map_err(|e| e.to_string())?;
    let m = manager(dir);
    let started = Instant::now();
    let lease = m.acquire("bench", cfg).await.map_err(|e| e.to_string())?;
    let elapsed = started.elapsed();
    if !lease.catalog().failures().is_empty() {
        return Err(format!(
            "cold start failed: {:?}",
            lease.catalog().failures()
        ));
    }
    *tools = lease.catalog().len();
    drop(lease);
    m.dispose_all().await;
    Ok(elapsed)
}

/// Ours, from the persisted catalog: a new manager over the cache.
async fn ours_cached(
    cfg: &ResolvedConfig,
    dir: &PathBuf,
    tools: usize,
) -> Result<Duration, String> {
    let m = manager(dir);
    let started = Instant::now();
    let lease = m.acquire("bench", cfg).await.map_err(|e| e.to_string())?;
    let elapsed = started.elapsed();
    let catalog = lease.catalog();
    if catalog.len() != tools
        || catalog
            .tools()
            .iter()
            .any(|t| t.status() != ToolStatus::Connecting)
    {
        return Err(format!(
            "the persisted catalog was not used: {} tools of {tools}",
            catalog.len()
        ));
    }
    drop(lease);
    // Not timed: the background connections finish, then close.
    m.dispose_all().await;
    Ok(elapsed)
}

/// Calls of `persisted_catalog` timed one by one.
const LISTED_CALLS: usize = 100;

/// Calls of `persisted_catalog` each after the machine was left idle.
const IDLE_CALLS: usize = 20;

/// Ours, the catalog from the cache alone (`mcp tools --config` from the
/// cache): `persisted_catalog`, which starts nothing, so it can be called
/// over and over in one manager; steadier than a start. Timed back to back,
/// then each call after 50 ms asleep, as a start comes after the machine
/// waited for the previous variant's servers to exit: with its cores gone
/// idle the same work takes longer, which is most of the distance between
/// the start's figure and the back-to-back one.
async fn ours_listed(
    cfg: &ResolvedConfig,
    dir: &PathBuf,
    tools: usize,
) -> Result<(Vec<Duration>, Vec<Duration>), String> {
    let m = manager(dir);
    let list = || -> Result<Duration, String> {
        let started = Instant::now();
        let listed = m.persisted_catalog(cfg).ok_or("the cache has no catalog")?;
        let elapsed = started.elapsed();
        if listed.catalog.len() != tools {
            return Err(format!(
                "persisted_catalog listed {} tools of {tools}",
                listed.catalog.len()
            ));
        }
        Ok(elapsed)
    };
    let mut back_to_back = Vec::with_capacity(LISTED_CALLS);
    for _ in 0..LISTED_CALLS {
        back_to_back.push(list()?);
    }
    let mut after_idle = Vec::with_capacity(IDLE_CALLS);
    for _ in 0..IDLE_CALLS {
        tokio::time::sleep(Duration::from_millis(50)).await;
        after_idle.push(list()?);
    }
    Ok((back_to_back, after_idle))
}

type RmcpClient = rmcp::service::RunningService<rmcp::RoleClient, ()>;

async fn rmcp_one(program: &str, delay_ms: u64) -> Result<(RmcpClient, usize), String> {
    use rmcp::ServiceExt;
    let mut command = tokio::process::Command::new(program);
    command.args(["--startup-delay-ms", &delay_ms.to_string()]);
    let (transport, _stderr) = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("rmcp: cannot start the server: {e}"))?;
    let client = ().serve(transport).await.map_err(|e| format!("rmcp: {e}"))?;
    let tools = client
        .peer()
        .list_all_tools()
        .await
        .map_err(|e| format!("rmcp: {e}"))?;
    Ok((client, tools.len()))
}

async fn rmcp_close(clients: Vec<RmcpClient>) {
    for c in clients {
        let _ = c.cancel().await;
    }
}

async fn rmcp_sequential(program: &str, servers: usize, delay_ms: u64) -> Result<Duration, String> {
    let started = Instant::now();
    let mut clients = Vec::new();
    for _ in 0..servers {
        clients.push(rmcp_one(program, delay_ms).await?.0);
    }
    let elapsed = started.elapsed();
    rmcp_close(clients).await;
    Ok(elapsed)
}

async fn rmcp_joined(program: &str, servers: usize, delay_ms: u64) -> Result<Duration, String> {
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..servers {
        let program = program.to_owned();
        set.spawn(async move { rmcp_one(&program, delay_ms).await });
    }
    let mut clients = Vec::new();
    let mut failed = None;
    while let Some(r) = set.join_next().await {
        match r.map_err(|e| e.to_string()).and_then(|r| r) {
            Ok((c, _)) => clients.push(c),
            Err(e) => failed = Some(e),
        }
    }
    let elapsed = started.elapsed();
    if let Some(e) = failed {
        rmcp_close(clients).await;
        return Err(e);
    }
    rmcp_close(clients).await;
    Ok(elapsed)
}

/// Waits (up to 10 s) until the server processes of the variant before
/// have exited and been reaped: a hundred processes exiting share the CPU
/// with the next timing otherwise (a stdio close or rmcp's `cancel` does
/// not wait for the process to be gone). Linux only; elsewhere it returns
/// at once.
async fn settle() {
    let deadline = Instant::now() + Duration::from_secs(10);
    while children() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// This process's child processes, from every thread's `children` file.
fn children() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .map(|t| {
            std::fs::read_to_string(t.path().join("children"))
                .map_or(0, |s| s.split_whitespace().count())
        })
        .sum()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn summary(name: &str, mut v: Vec<Duration>, target: Option<(f64, &str)>) {
    v.sort();
    let median = v.get(v.len() / 2).copied().unwrap_or_default();
    let best = v.first().copied().unwrap_or_default();
    let verdict = match target {
        Some((limit, what)) if ms(median) <= limit => format!("  ✓ ≤ {limit:.0} ms ({what})"),
        Some((limit, what)) => format!("  ✗ over {limit:.0} ms ({what})"),
        None => String::new(),
    };
    println!(
        "  {name:<38} median {:>9.2} ms   best {:>9.2} ms{verdict}",
        ms(median),
        ms(best)
    );
}

async fn bench(args: &StartArgs, program: &str) -> Result<(), String> {
    let cfg = config(program, args.servers, args.delay_ms)?;
    let dir = std::env::temp_dir().join(format!("mcp-bench-start-{}", std::process::id()));
    let mut cold = Vec::new();
    let mut cached = Vec::new();
    let mut sequential = Vec::new();
    let mut joined = Vec::new();
    let mut tools = 0;
    for _ in 0..args.rounds {
        cold.push(ours_cold(&cfg, &dir, &mut tools).await?);
        settle().await;
        cached.push(ours_cached(&cfg, &dir, tools).await?);
        settle().await;
        joined.push(rmcp_joined(program, args.servers, args.delay_ms).await?);
        settle().await;
        if !args.no_sequential {
            sequential.push(rmcp_sequential(program, args.servers, args.delay_ms).await?);
            settle().await;
        }
    }
    let (listed, after_idle) = ours_listed(&cfg, &dir, tools).await?;
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "bench start: {} stdio servers (mcp-testkit --startup-delay-ms {}), {} tools in all, {} rounds{}",
        args.servers,
        args.delay_ms,
        tools,
        args.rounds,
        if cfg!(debug_assertions) {
            " — DEBUG BUILD: the figures mean nothing"
        } else {
            ""
        }
    );
    let slowest = args.delay_ms as f64;
    summary(
        "ours, cold (servers started in parallel)",
        cold,
        Some((slowest + 100.0, "slowest + 100 ms")),
    );
    summary(
        "ours, from the persisted catalog",
        cached,
        Some((5.0, "whatever the count")),
    );
    summary(
        &format!("ours, persisted_catalog ({LISTED_CALLS} calls)"),
        listed,
        None,
    );
    summary("ours, persisted_catalog, after idle", after_idle, None);
    summary("rmcp, one client per server, joined", joined, None);
    if !args.no_sequential {
        summary("rmcp, one client per server, in turn", sequential, None);
    }
    Ok(())
}
