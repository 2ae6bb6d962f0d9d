//! Connects to an MCP server over HTTP, lists its tools and calls one.
//!
//! ```sh
//! cargo run -p mcp-stack-client --features http --example http -- http://127.0.0.1:3000/mcp
//! cargo run -p mcp-stack-client --features http --example http   # starts our test server on 127.0.0.1
//! ```
//!
//! With no URL, the example serves `mcp-testkit` over streamable HTTP on an
//! ephemeral loopback port first, so it runs anywhere.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use mcp_stack_client::{HttpOptions, SessionConfig};
use mcp_stack_testkit::http::{HttpServer, HttpServerOptions};

#[tokio::main]
async fn main() -> ExitCode {
    let (url, server) = match std::env::args().nth(1) {
        Some(url) => (url, None),
        None => match HttpServer::start(HttpServerOptions::default()).await {
            Ok(server) => (server.url(), Some(server)),
            Err(e) => {
                eprintln!("error: cannot start the test server: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    let outcome = run(&url).await;
    if let Some(server) = server {
        server.shutdown().await;
    }
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(url: &str) -> Result<(), mcp_stack_client::SessionError> {
    let options = HttpOptions::new().server_name("example");
    let session = mcp_stack_client::connect_http(url, options, SessionConfig::new()).await?;
    println!(
        "connected to {} over {} (protocol {})",
        session.server().server_info.name,
        session.transport().kind(),
        session.protocol_version()
    );
    let tools = session.list_tools().await?;
    println!("{} tools", tools.len());
    if tools.get("add").is_some() {
        let sum = session
            .call_tool("add", serde_json::json!({"a": 2, "b": 3}))
            .await?;
        println!("add(2, 3) → {}", sum.text());
    }
    session.close().await;
    Ok(())
}
