//! Two agent sessions sharing one config, reuse on the second request, a
//! rebuild after a config change, and reaping after the idle TTL.
//!
//! The servers are `mcp-testkit` run in-process (over a duplex stream), so
//! this runs anywhere: `cargo run -p mcp-stack-runtime --example sessions`.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use mcp_stack_config::{Options, ResolvedConfig, parse_str, resolve};
use mcp_stack_runtime::{RuntimeManager, RuntimeOptions};
use mcp_stack_testkit::InProcessConnector;

fn config(text: &str) -> ResolvedConfig {
    resolve(
        &parse_str(text, &Options::new()).unwrap().config,
        &|_: &str| None,
    )
    .unwrap()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), mcp_stack_runtime::RuntimeError> {
    let ttl = Duration::from_millis(300);
    // Starts a testkit server in-process for each connect (its options from
    // the config's `args`), and counts them.
    let connector = Arc::new(InProcessConnector::new());
    let manager =
        RuntimeManager::with_connector(RuntimeOptions::default().idle_ttl(ttl), connector.clone());
    let starts = || format!("{:?}", connector.connects_by_server());

    let v1 = config(r#"{"mcpServers": {"files": {"command": "kit"}, "math": {"command": "kit"}}}"#);
    println!("config fingerprint {}", v1.fingerprint);

    // Two sessions, one config: separate connections.
    let alice = manager.acquire("alice", &v1).await?;
    let bob = manager.acquire("bob", &v1).await?;
    println!("alice and bob acquired; server starts so far: {}", starts());
    let names: Vec<&str> = alice.catalog().tools().iter().map(|t| t.name()).collect();
    println!("alice sees {} tools: {}", names.len(), names.join(", "));
    let sum = alice
        .call_tool("math__add", serde_json::json!({"a": 2, "b": 3}))
        .await?;
    println!("alice calls math__add(2, 3) -> {}", sum.text());
    drop((alice, bob));

    // Same session, same fingerprint: reused.
    let alice = manager.acquire("alice", &v1).await?;
    println!("alice again: reused, server starts still {}", starts());
    drop(alice);

    // One server changes: only it restarts.
    let v2 = config(
        r#"{"mcpServers": {"files": {"command": "kit"}, "math": {"command": "kit", "args": ["--page-size", "2"]}}}"#,
    );
    let alice = manager.acquire("alice", &v2).await?;
    println!(
        "alice with a changed `math`: rebuilt, server starts {}",
        starts()
    );
    drop(alice);
    println!("stats: {:?}", manager.stats());

    // Idle past the TTL: reclaimed.
    tokio::time::sleep(ttl * 2).await;
    for _ in 0..50 {
        if manager.stats().connections == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stats = manager.stats();
    println!(
        "after {} ms idle: {} sessions, {} connections, {} reaped",
        (ttl * 2).as_millis(),
        stats.sessions,
        stats.connections,
        stats.reaped_sessions
    );
    manager.dispose_all().await;
    Ok(())
}
