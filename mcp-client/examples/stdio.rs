//! Connects to a stdio MCP server, lists its tools and calls one.
//!
//! ```sh
//! cargo run -p mcp-stack-client --example stdio -- npx -y @modelcontextprotocol/server-everything
//! cargo run -p mcp-stack-client --example stdio -- target/debug/mcp-testkit   # our test server
//! ```
//!
//! The first tool whose input schema needs nothing is called with `{}`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: stdio PROGRAM [ARGS…]");
        return ExitCode::from(2);
    };
    match run(&program, args.collect()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(program: &str, args: Vec<String>) -> Result<(), mcp_stack_client::SessionError> {
    let session = mcp_stack_client::stdio(program, args).await?;
    let server = &session.server().server_info;
    println!(
        "connected to {} {} (protocol {})",
        server.name,
        server.version,
        session.protocol_version()
    );
    let tools = session.list_tools().await?;
    for tool in tools.iter() {
        println!("  tool {}", tool.name);
    }
    let callable = tools.iter().find(|t| {
        t.input_schema
            .get("required")
            .and_then(|r| r.as_array())
            .is_none_or(|r| r.is_empty())
    });
    if let Some(tool) = callable {
        let result = session.call_tool(&tool.name, serde_json::json!({})).await?;
        let note = if result.is_error() {
            " (the tool reported an error: a result, not a protocol failure)"
        } else {
            ""
        };
        println!("{} → {}{note}", tool.name, result.text());
    }
    session.close().await;
    Ok(())
}
