//! The idle stream timeout: a long-lived SSE stream that sends nothing for
//! `HttpOptions::idle_stream_timeout` is treated as dropped and reconnected,
//! and the trace names the timeout and its bound. The testkit's streams send
//! no keep-alives, so an idle stream is just one nobody writes to.

#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_stack_jsonrpc::{Message, Notification, Request, to_raw};
use mcp_stack_testkit::http::{HttpMode, HttpServer, HttpServerOptions};
use mcp_stack_transport::http::{HttpOptions, HttpTrace, SseTransport, StreamableHttpTransport};
use mcp_stack_transport::{Lifecycle, Received, SendContext, Transport};
use serde_json::json;
use tokio::sync::mpsc;

/// Options with a short idle bound, and the trace lines as they come.
fn options() -> (HttpOptions, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let options = HttpOptions::new()
        .request_timeout(Duration::from_secs(10))
        .default_retry(Duration::from_millis(20))
        .idle_stream_timeout(Duration::from_millis(300))
        .observer(move |trace| {
            let line = match trace {
                HttpTrace::Note(note) => note.clone(),
                HttpTrace::Request { method, .. } => format!("request {method}"),
                _ => return,
            };
            let _ = tx.send(line);
        });
    (options, rx)
}

/// Waits (with a deadline against hanging) for a trace line that `matches`.
async fn wait_for(
    lines: &mut mpsc::UnboundedReceiver<String>,
    matches: impl Fn(&str) -> bool,
) -> String {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let line = lines.recv().await.expect("the observer is gone");
            if matches(&line) {
                return line;
            }
        }
    })
    .await
    .expect("no such trace line within 20 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_legacy_stream_is_dropped_at_the_idle_timeout_and_reconnected() {
    let s = HttpServer::start(HttpServerOptions {
        mode: HttpMode::LegacySse,
        ..HttpServerOptions::default()
    })
    .await
    .unwrap();
    let (options, mut lines) = options();
    let t = SseTransport::connect(&s.url(), options).await.unwrap();
    let idle = wait_for(&mut lines, |l| l.contains("idle stream timeout")).await;
    assert!(idle.contains("300 ms"), "{idle}");
    assert!(idle.contains("HttpOptions::idle_stream_timeout"), "{idle}");
    wait_for(&mut lines, |l| l.starts_with("SSE stream reconnected")).await;
    assert!(s.stats().legacy_streams.load(Ordering::SeqCst) >= 2);
    t.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_get_stream_is_dropped_at_the_idle_timeout_and_opened_again() {
    let s = HttpServer::start(HttpServerOptions::default())
        .await
        .unwrap();
    let (options, mut lines) = options();
    let t = StreamableHttpTransport::connect(&s.url(), options)
        .await
        .unwrap();
    let init = Message::from(Request::new(
        0,
        "initialize",
        Some(
            to_raw(&json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}))
            .unwrap(),
        ),
    ));
    t.send_with(&init, &SendContext::new().lifecycle(Lifecycle::Initialize))
        .await
        .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(10), t.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(answer, Received::Message(_)), "{answer:?}");
    let initialized = Message::from(Notification::new("notifications/initialized", None));
    let context = SendContext::new()
        .revision("2025-06-18".parse().unwrap())
        .lifecycle(Lifecycle::Initialized);
    t.send_with(&initialized, &context).await.unwrap();

    // The GET stream opens, stays silent, is dropped and opened again.
    wait_for(&mut lines, |l| l == "request GET").await;
    let idle = wait_for(&mut lines, |l| l.contains("idle stream timeout")).await;
    assert!(idle.contains("300 ms"), "{idle}");
    wait_for(&mut lines, |l| l == "request GET").await;
    t.close().await;
}
