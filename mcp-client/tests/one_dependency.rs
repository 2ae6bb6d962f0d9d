//! A program whose client side names nothing but `mcp_stack_client`: the
//! runtime, `json!`, serde's derives and the stream trait all come through
//! the front door's re-exports. (The server is the testkit, in-process.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::pin::Pin;

use mcp_stack_client::futures_core::Stream;
use mcp_stack_client::serde::{Deserialize, Serialize};
use mcp_stack_client::serde_json::json;
use mcp_stack_client::transport::stream::StreamTransport;
use mcp_stack_client::{ServerNotification, Session, SessionConfig, SessionError};

#[derive(Serialize)]
#[serde(crate = "mcp_stack_client::serde")]
struct Add {
    a: i64,
    b: i64,
}

#[derive(Deserialize, Debug, PartialEq)]
#[serde(crate = "mcp_stack_client::serde")]
struct Sum {
    sum: i64,
}

async fn demo_server() -> Session {
    let (client, server) = mcp_stack_client::tokio::io::duplex(1 << 16);
    let (r, w) = mcp_stack_client::tokio::io::split(server);
    mcp_stack_client::tokio::spawn(mcp_stack_testkit::serve(Default::default(), r, w));
    let (r, w) = mcp_stack_client::tokio::io::split(client);
    Session::connect(StreamTransport::new(r, w), SessionConfig::new())
        .await
        .unwrap()
}

#[mcp_stack_client::tokio::test(crate = "mcp_stack_client::tokio")]
async fn one_dependency_is_enough() -> Result<(), SessionError> {
    let session = demo_server().await;
    let echoed = session.call_tool("echo", json!({"text": "hi"})).await?;
    assert_eq!(echoed.into_result()?.text(), "hi");
    let sum: Sum = session
        .call_tool("add", Add { a: 40, b: 2 })
        .await?
        .into_result()?
        .structured()?;
    assert_eq!(sum, Sum { sum: 42 });

    // The notification stream through the re-exported trait.
    let mut notifications = session.notifications();
    session.call_tool("add_resource", json!({})).await?;
    let next = std::future::poll_fn(|cx| Pin::new(&mut notifications).poll_next(cx)).await;
    assert!(
        matches!(next, Some(ServerNotification::ResourcesListChanged)),
        "{next:?}"
    );
    session.close().await;
    Ok(())
}
