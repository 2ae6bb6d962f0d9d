//! The runtime with several servers: one config (written here in code; users
//! have theirs in Claude Desktop, Cursor, VS Code …), one agent session, the
//! servers' tools in one catalog under `SERVER__TOOL` names, calls routed to
//! the right server. Here both servers are the test server, one speaking the
//! `initialize` handshake, the other 2026-07-28.
//!
//! ```sh
//! cargo run -p mcp-stack-client --features runtime --example servers -- target/debug/mcp-testkit
//! ```

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use mcp_stack_client::config::{Options, parse_str, process_env, resolve};
use mcp_stack_client::runtime::RuntimeManager;
use mcp_stack_client::serde_json::json;

#[tokio::main]
async fn main() -> ExitCode {
    let program = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "mcp-testkit".into());
    match run(&program).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(program: &str) -> Result<(), Box<dyn std::error::Error>> {
    let text = json!({"mcpServers": {
        "legacy": {"command": program},
        "current": {"command": program, "args": ["--era", "modern"]},
    }})
    .to_string();
    let loaded = parse_str(&text, &Options::new())?;
    let config = resolve(&loaded.config, &process_env)?;

    // One manager per process; one lease per agent session.
    let manager = RuntimeManager::global();
    let lease = manager.acquire("my-agent", &config).await?;
    let catalog = lease.catalog();
    if let Some(failure) = catalog.failures().first() {
        return Err(format!("server {} failed: {failure}", failure.server).into());
    }
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.name()).collect();
    let some: Vec<&str> = names.iter().take(4).copied().collect();
    println!("{} tools, e.g. {}", names.len(), some.join(", "));

    for tool in ["legacy__add", "current__add"] {
        let result = lease.call_tool(tool, json!({"a": 20, "b": 22})).await?;
        println!("{tool}(20, 22) = {}", result.text());
        if result.text() != "42" {
            return Err(format!("{tool} answered {}", result.text()).into());
        }
    }

    drop(lease);
    manager.dispose_all().await;
    Ok(())
}
