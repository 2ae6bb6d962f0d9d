//! Typed calls: arguments from your own structs, results read into your
//! own types, a tool's failure as an `Err` with its text, typed prompt
//! arguments and a resource read as text.
//!
//! ```sh
//! cargo run -p mcp-stack-client --example typed -- target/debug/mcp-testkit
//! cargo run -p mcp-stack-client --example typed -- mcp demo-server
//! ```

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

use mcp_stack_client::serde::{Deserialize, Serialize};
use mcp_stack_client::serde_json::json;
use mcp_stack_client::{DecodeError, SessionError};

#[derive(Serialize)]
#[serde(crate = "mcp_stack_client::serde")]
struct Add {
    a: f64,
    b: f64,
}

#[derive(Debug, Deserialize)]
#[serde(crate = "mcp_stack_client::serde")]
struct Sum {
    sum: f64,
}

#[derive(Serialize)]
#[serde(crate = "mcp_stack_client::serde")]
struct Greeting<'a> {
    name: &'a str,
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let program = args.next().unwrap_or_else(|| "mcp-testkit".into());
    match run(&program, args.collect()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(program: &str, args: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    let session = mcp_stack_client::stdio(program, args).await?;

    // A struct in, a struct out: the call, the tool's failure and the
    // structured content's shape are three `?`s.
    let sum: Sum = session
        .call_tool("add", Add { a: 2.0, b: 3.5 })
        .await?
        .into_result()?
        .structured()?;
    println!("add(2, 3.5) = {}", sum.sum);
    if sum.sum != 5.5 {
        return Err(format!("expected 5.5, got {sum:?}").into());
    }

    // A tool without structured content: a typed error, not a panic.
    let echoed = session.call_tool("echo", json!({"text": "hi"})).await?;
    match echoed.structured::<Sum>() {
        Err(DecodeError::Missing(what)) => println!("echo has no {what}: {}", echoed.text()),
        other => return Err(format!("expected no structured content, got {other:?}").into()),
    }

    // A tool that fails: `into_result` makes its isError an Err with its text.
    let failed = session
        .call_tool("fail", json!({"message": "the disk is full"}))
        .await?
        .into_result();
    match failed {
        Err(e) => println!("fail reported: {}", e.text()),
        Ok(r) => return Err(format!("fail succeeded: {}", r.text()).into()),
    }
    // Through `?` into a SessionError, the tool's text intact.
    let through: Result<(), SessionError> = async {
        session.call_tool("fail", json!({})).await?.into_result()?;
        Ok(())
    }
    .await;
    if !matches!(through, Err(SessionError::Tool(_))) {
        return Err(format!("expected SessionError::Tool, got {through:?}").into());
    }

    // Prompts take typed arguments; resources read as text (or JSON).
    let prompt = session
        .get_prompt("greeting", Greeting { name: "Ada" })
        .await?;
    println!("prompt greeting: {} message(s)", prompt.messages.len());
    let read = session.read_resource("test://text/1").await?;
    println!("test://text/1: {}", read.text().unwrap_or_default());

    session.close().await;
    Ok(())
}
