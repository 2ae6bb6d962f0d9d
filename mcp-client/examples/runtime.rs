//! Config → runtime → call: reads a config file users already have, starts
//! its servers for one agent session, and calls a tool by the `SERVER__TOOL`
//! name an agent sees.
//!
//! ```sh
//! cargo run -p mcp-stack-client --features runtime --example runtime -- ~/.cursor/mcp.json
//! cargo run -p mcp-stack-client --features runtime --example runtime -- settings.json kit__echo '{"text": "hi"}'
//! ```
//!
//! Without a tool name it lists the catalog (and any server that failed).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;

use mcp_stack_client::config::{Options, load_path, process_env, resolve};
use mcp_stack_client::runtime::RuntimeManager;

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: runtime CONFIG [SERVER__TOOL [ARGUMENTS_JSON]]");
        return ExitCode::from(2);
    };
    let tool = args.next();
    let arguments = args.next().unwrap_or_else(|| "{}".into());
    match run(PathBuf::from(path), tool, &arguments).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(
    path: PathBuf,
    tool: Option<String>,
    arguments: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let loaded = load_path(&path, &Options::new())?;
    let config = resolve(&loaded.config, &process_env)?;
    let manager = RuntimeManager::global();
    let lease = manager.acquire("example-agent", &config).await?;
    let catalog = lease.catalog();
    for failure in catalog.failures() {
        println!("server {} failed: {failure}", failure.server);
    }
    match tool {
        None => {
            for tool in catalog.tools() {
                println!("{}", tool.name());
            }
        }
        Some(name) => {
            let arguments: serde_json::Value = serde_json::from_str(arguments)?;
            let result = lease.call_tool(&name, arguments).await?;
            println!("{}", result.text());
        }
    }
    drop(lease);
    manager.dispose_all().await;
    Ok(())
}
