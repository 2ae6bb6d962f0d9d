//! A session over the legacy HTTP+SSE transport when the stream drops: the
//! transport reconnects and reports the new endpoint as a new server
//! session, which the session initializes again on its own; the caller sees
//! nothing of it but the request the drop took with it, failed at once as a
//! transport error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_stack_session::protocol::{ProtocolMode, ProtocolPin};
use mcp_stack_session::{Session, SessionConfig, SessionError};
use mcp_stack_testkit::http::{HttpMisbehaviour, HttpMode, HttpServer, HttpServerOptions};
use mcp_stack_transport::http::{HttpOptions, SseTransport};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_sees_only_the_request_a_dropped_sse_stream_took_with_it() {
    // The first stream ends after its third message: the initialize
    // answer, the tools/list answer, the first echo's answer.
    let server = HttpServer::start(HttpServerOptions {
        mode: HttpMode::LegacySse,
        drop_after: 3,
        ..HttpServerOptions::misbehaving(HttpMisbehaviour::DropSseStream)
    })
    .await
    .unwrap();
    let options = HttpOptions::new().default_retry(Duration::from_millis(20));
    let transport = SseTransport::connect(&server.url(), options).await.unwrap();
    let config = SessionConfig::new()
        .protocol(ProtocolPin::Mode(ProtocolMode::Handshake))
        .request_timeout(Duration::from_secs(120));
    let session = Arc::new(Session::connect(transport, config).await.unwrap());
    session.list_tools().await.unwrap();
    let posts = server.stats().posts.load(Ordering::SeqCst);

    // A call that would take an hour, then one that ends the stream.
    let slow = {
        let session = Arc::clone(&session);
        tokio::spawn(async move { session.call_tool("slow", json!({"ms": 3_600_000})).await })
    };
    tokio::time::timeout(Duration::from_secs(10), async {
        while server.stats().posts.load(Ordering::SeqCst) == posts {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the slow call was not posted");
    let r = session
        .call_tool("echo", json!({"text": "last"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "last");

    // The slow call fails as soon as the stream is gone, not at its 120 s
    // timeout: the deadline below only keeps a broken test from hanging.
    let failed = tokio::time::timeout(Duration::from_secs(20), slow)
        .await
        .expect("the request in flight waited for its timeout")
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(failed, SessionError::Transport(ref e) if !e.is_closed()),
        "{failed}"
    );
    assert!(
        failed.to_string().contains("closed the SSE stream"),
        "{failed}"
    );

    // The same session goes on, on the server's new session.
    let r = session
        .call_tool("echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "again");
    assert_eq!(server.stats().initializes.load(Ordering::SeqCst), 2);
    let diagnostics = session.diagnostics();
    assert_eq!(
        diagnostics.unknown_responses, 0,
        "an answer reached the session that no request of it waited for"
    );
    assert_eq!(diagnostics.invalid_frames, 0);
    session.close().await;
}
