//! Resource subscriptions as streams: subscribe to a resource and to the
//! resource list, change them through the server's tools, and read the
//! updates from the subscription; the session-wide notification stream
//! sees them too. Dropping the subscription unsubscribes.
//!
//! ```sh
//! cargo run -p mcp-stack-client --example subscriptions -- target/debug/mcp-testkit
//! cargo run -p mcp-stack-client --example subscriptions -- target/debug/mcp-testkit --era modern
//! ```

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;
use std::time::Duration;

use mcp_stack_client::serde_json::json;
use mcp_stack_client::{ServerNotification, SubscriptionFilter};

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let program = args.next().unwrap_or_else(|| "mcp-testkit".into());
    // Stops by itself: every wait below is bounded.
    match tokio::time::timeout(Duration::from_secs(30), run(&program, args.collect())).await {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("error: no update within 30 s");
            ExitCode::FAILURE
        }
    }
}

async fn run(program: &str, args: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    let session = mcp_stack_client::stdio(program, args).await?;
    println!("protocol {}", session.protocol_version());

    // Everything the server sends, from now on.
    let mut everything = session.notifications();

    // On 2026-07-28 a `subscriptions/listen` stream; before it,
    // `resources/subscribe` and the list changes the server sends unasked.
    let uri = "test://text/1";
    let mut updates = session
        .listen(
            SubscriptionFilter::new()
                .resources_list_changed()
                .resource(uri),
        )
        .await?;
    println!("granted: {:?}", updates.acknowledged());

    session
        .call_tool("add_resource", json!({}))
        .await?
        .into_result()?;
    session
        .call_tool("touch_resource", json!({"uri": uri}))
        .await?
        .into_result()?;

    let (mut listed, mut updated) = (false, false);
    while !(listed && updated) {
        match updates.next().await? {
            Some(ServerNotification::ResourcesListChanged) => {
                println!("the resource list changed");
                listed = true;
            }
            Some(ServerNotification::ResourceUpdated(u)) => {
                println!("{} was updated", u.uri);
                let read = session.read_resource(&u.uri).await?;
                println!("  now: {}", read.text().unwrap_or_default());
                updated = true;
            }
            Some(other) => println!("(also: {other:?})"),
            None => return Err("the server ended the subscription".into()),
        }
    }
    // Unsubscribes (`resources/unsubscribe`, or the end of the listen request).
    drop(updates);

    // The session-wide stream heard the same.
    let mut seen = 0;
    while seen < 2 {
        match everything.next().await {
            Some(
                ServerNotification::ResourcesListChanged | ServerNotification::ResourceUpdated(_),
            ) => seen += 1,
            Some(_) => {}
            None => return Err("the connection closed".into()),
        }
    }
    println!(
        "the notification stream saw both ({} dropped)",
        everything.dropped()
    );
    session.close().await;
    Ok(())
}
