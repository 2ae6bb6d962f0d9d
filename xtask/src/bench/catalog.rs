//! `bench catalog`: building a tool catalog of 1, 100 and 10,000 tools.
//!
//! Two figures per size:
//!
//! - `mcp_stack_session::ToolCatalog::new` alone over a `Vec<Tool>` (the copy of
//!   the tools is made before the clock starts): once with no catalog of the
//!   same tools alive (every tool new to the process-wide intern table), and
//!   once with one held (every tool found there and shared, as when many
//!   sessions list the same server);
//! - `Session::refresh_tools` on a session connected to an in-process
//!   `mcp-testkit` (over a tokio duplex pipe, `--extra-tools` generated tools
//!   after its 14 real ones): the server's answer, the transport, the parse
//!   and the catalog together, as an application pays for it.

use std::time::{Duration, Instant};

use mcp_stack_session::protocol::types::Tool;
use mcp_stack_session::{Session, SessionConfig, ToolCatalog};
use mcp_stack_transport::stream::StreamTransport;
use serde_json::json;

use crate::args::CatalogArgs;

/// The testkit's own tools, listed before the generated ones.
const TESTKIT_TOOLS: usize = mcp_stack_testkit::TOOL_NAMES.len();

pub(crate) fn run(args: CatalogArgs) -> Result<(), String> {
    let CatalogArgs { tools, budget } = args;
    if tools.is_empty() || tools.iter().any(|&n| n == 0 || n > 1_000_000) {
        return Err("--tools: give sizes from 1 to 1,000,000".into());
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
    println!(
        "bench catalog: building a tool catalog; median of {budget} tools' worth of builds per \
         size (5 to 1000 builds)"
    );
    println!();
    println!(
        "{:<44} {:>8} {:>8} {:>14} {:>12}",
        "way", "tools", "builds", "µs per build", "µs per tool"
    );
    for &n in &tools {
        let builds = (budget / n).clamp(5, 1000);
        let list = generated(n);

        // Nothing of these tools alive: every build interns them anew.
        let fresh = median(builds, || {
            let copy = list.clone();
            let start = Instant::now();
            let catalog = ToolCatalog::new(copy, Vec::new());
            let took = start.elapsed();
            std::hint::black_box(&catalog);
            drop(catalog);
            Ok(took)
        })?;
        row("ToolCatalog::new, tools new", n, builds, fresh);

        // One catalog of the same tools held: every tool is shared.
        let held = ToolCatalog::new(list.clone(), Vec::new());
        let shared = median(builds, || {
            let copy = list.clone();
            let start = Instant::now();
            let catalog = ToolCatalog::new(copy, Vec::new());
            let took = start.elapsed();
            std::hint::black_box(&catalog);
            Ok(took)
        })?;
        drop(held);
        row("ToolCatalog::new, tools shared", n, builds, shared);

        let (total, refresh) = rt.block_on(session_refresh(n, builds))?;
        row(
            "Session::refresh_tools (in-process testkit)",
            total,
            builds,
            refresh,
        );
    }
    println!();
    println!(
        "  tools: generated, each a name, title, description and a one-property input schema."
    );
    println!(
        "  refresh_tools: the testkit lists its {TESTKIT_TOOLS} tools first, so its smallest \
         catalog has {TESTKIT_TOOLS}; the time includes the server"
    );
    println!("    serializing the list (same process), the pipe, the parse and the catalog.");
    Ok(())
}

/// `n` distinct tools shaped like a real server's.
fn generated(n: usize) -> Vec<Tool> {
    (0..n)
        .map(|i| Tool {
            name: format!("tool_{i}"),
            title: Some(format!("Tool {i}")),
            description: Some("A generated tool for the catalog benchmark.".to_owned()),
            input_schema: json!({
                "type": "object",
                "properties": {"text": {"type": "string", "description": "Any text."}},
                "required": ["text"]
            })
            .into(),
            output_schema: None,
            annotations: None,
            icons: None,
            extra: Default::default(),
        })
        .collect()
}

/// A session to an in-process testkit with about `n` tools; the median time
/// of `builds` `refresh_tools` calls and the catalog's size.
async fn session_refresh(n: usize, builds: usize) -> Result<(usize, Duration), String> {
    let mut options = mcp_stack_testkit::ServerOptions::default();
    options.extra_tools = n.saturating_sub(TESTKIT_TOOLS);
    let (client, server) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server);
    let served = tokio::spawn(mcp_stack_testkit::serve(options, server_read, server_write));
    let (client_read, client_write) = tokio::io::split(client);
    let session = Session::connect(
        StreamTransport::new(client_read, client_write),
        SessionConfig::default(),
    )
    .await
    .map_err(|e| format!("session: {e}"))?;
    let mut total = 0;
    let mut times = Vec::with_capacity(builds);
    // One untimed warm-up, then the builds.
    for i in 0..=builds {
        let start = Instant::now();
        let catalog = session
            .refresh_tools()
            .await
            .map_err(|e| format!("refresh_tools: {e}"))?;
        if i > 0 {
            times.push(start.elapsed());
        }
        total = catalog.len();
    }
    session.close().await;
    served.abort();
    times.sort();
    Ok((total, super::median(&times)))
}

/// The median of `builds` timings.
fn median(
    builds: usize,
    mut one: impl FnMut() -> Result<Duration, String>,
) -> Result<Duration, String> {
    let mut times = Vec::with_capacity(builds);
    for _ in 0..builds {
        times.push(one()?);
    }
    times.sort();
    Ok(super::median(&times))
}

fn row(way: &str, tools: usize, builds: usize, took: Duration) {
    let us = took.as_secs_f64() * 1e6;
    println!(
        "{way:<44} {tools:>8} {builds:>8} {us:>14.1} {:>12.3}",
        us / tools.max(1) as f64
    );
}
