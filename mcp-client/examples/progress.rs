//! Progress and cancellation: a call that reports progress to a listener,
//! a call given up by dropping its future (the server is told with
//! `notifications/cancelled`), and a call that runs out of its own timeout.
//!
//! ```sh
//! cargo run -p mcp-stack-client --example progress -- target/debug/mcp-testkit
//! ```

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_stack_client::serde_json::json;
use mcp_stack_client::types::ProgressParams;
use mcp_stack_client::{CallOptions, SessionError};

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

    // Progress: the listener is called for each notifications/progress of
    // this call (and each one extends the call's timeout, up to the
    // session's max_total_timeout).
    let heard = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&heard);
    let options = CallOptions::new().on_progress(move |p: &ProgressParams| {
        counter.fetch_add(1, Ordering::Relaxed);
        println!(
            "  progress {} of {}",
            p.progress(),
            p.total().map_or_else(|| "?".to_owned(), |t| t.to_string())
        );
    });
    let result = session
        .call_tool_with("progress", json!({"steps": 4, "intervalMs": 20}), options)
        .await?
        .into_result()?;
    println!("progress: {}", result.text());
    if heard.load(Ordering::Relaxed) != 4 {
        return Err("expected 4 progress notifications".into());
    }

    // Cancellation: drop the call's future (here, by a timeout of our own).
    // The session sends notifications/cancelled and forgets the request.
    let call = session.call_tool("slow", json!({"ms": 60_000}));
    match tokio::time::timeout(Duration::from_millis(200), call).await {
        Err(_) => println!("slow: given up after 200 ms (the server was told)"),
        Ok(r) => return Err(format!("slow answered early: {r:?}").into()),
    }
    if session.in_flight() != 0 {
        return Err("the cancelled call is still in flight".into());
    }

    // Or give the call a timeout of its own: a typed error that says which.
    let options = CallOptions::new().timeout(Duration::from_millis(200));
    match session
        .call_tool_with("slow", json!({"ms": 60_000}), options)
        .await
    {
        Err(e @ SessionError::Timeout { .. }) => println!("slow with a timeout: {e}"),
        other => return Err(format!("expected a timeout, got {other:?}").into()),
    }

    // The session goes on.
    let echoed = session
        .call_tool("echo", json!({"text": "still here"}))
        .await?;
    println!("echo: {}", echoed.text());
    session.close().await;
    Ok(())
}
