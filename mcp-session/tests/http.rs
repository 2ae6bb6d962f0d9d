//! A session over streamable HTTP against the testkit's servers, in every
//! era: the revision picked, the headers mirrored, multi-round-trip results,
//! and cancellation by closing the response stream.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_stack_session::{
    CallOptions, DefaultsElicitationHandler, ProtocolVersion, Session, SessionConfig, SessionError,
};
use mcp_stack_testkit::Era;
use mcp_stack_testkit::http::{HttpMisbehaviour, HttpServer, HttpServerOptions};
use mcp_stack_transport::http::{HttpOptions, StreamableHttpTransport};
use serde_json::json;

async fn server(era: Era) -> HttpServer {
    let mut options = HttpServerOptions::default();
    options.server.era = era;
    HttpServer::start(options).await.unwrap()
}

async fn connect(server: &HttpServer) -> Session {
    let transport = StreamableHttpTransport::connect(&server.url(), HttpOptions::new())
        .await
        .unwrap();
    let config = SessionConfig::new().handler(DefaultsElicitationHandler::new());
    Session::connect(transport, config).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_mode_picks_each_servers_revision_over_http() {
    for (era, revision) in [
        (Era::Legacy, ProtocolVersion::V2025_11_25),
        (Era::Modern, ProtocolVersion::V2026_07_28),
        (Era::Dual, ProtocolVersion::V2026_07_28),
    ] {
        let server = server(era).await;
        let session = connect(&server).await;
        assert_eq!(session.protocol_version(), revision, "{era:?}");
        let r = session
            .call_tool("add", json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert!(r.text().contains('5'), "{era:?}: {}", r.text());
        session.close().await;
        let stats = server.stats();
        if !revision.has_handshake() {
            assert_eq!(stats.initializes.load(Ordering::SeqCst), 0, "{era:?}");
            assert!(stats.modern_posts.load(Ordering::SeqCst) >= 3, "{era:?}");
            assert_eq!(stats.deletes.load(Ordering::SeqCst), 0, "{era:?}");
            assert_eq!(stats.get_streams.load(Ordering::SeqCst), 0, "{era:?}");
        } else {
            // One refused probe, then the handshake.
            assert_eq!(stats.initializes.load(Ordering::SeqCst), 1, "{era:?}");
        }
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotated_arguments_reach_the_server_as_headers_and_it_accepts_them() {
    let server = server(Era::Modern).await;
    let session = connect(&server).await;
    let catalog = session.list_tools().await.unwrap();
    assert!(catalog.get("route").is_some());
    assert!(
        catalog.get("bad_header").is_none(),
        "invalid annotation dropped"
    );
    let r = session
        .call_tool(
            "route",
            json!({"region": "Zürich", "shard": 3, "query": "SELECT 1"}),
        )
        .await
        .unwrap();
    assert!(!r.is_error(), "{}", r.text());
    let stats = server.stats();
    assert_eq!(stats.header_rejections.load(Ordering::SeqCst), 0);
    let seen = stats.modern_headers.lock().unwrap().clone();
    let call = seen
        .iter()
        .find(|h| h.iter().any(|(k, v)| k == "mcp-name" && v == "route"))
        .expect("the tools/call POST");
    let header = |name: &str| {
        call.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(header("mcp-param-region"), Some("=?base64?WsO8cmljaA==?="));
    assert_eq!(header("mcp-param-shard"), Some("3"));
    assert_eq!(header("mcp-method"), Some("tools/call"));
    session.close().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_round_trip_results_work_over_http() {
    let server = server(Era::Modern).await;
    let session = connect(&server).await;
    let r = session.call_tool("ask_name", json!({})).await.unwrap();
    // The defaults handler accepts with the schema's default.
    assert_eq!(r.text(), "hello octocat");
    session.close().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_call_closes_its_stream_and_posts_no_cancellation() {
    let server = server(Era::Modern).await;
    let session = connect(&server).await;
    let options = CallOptions::new().timeout(Duration::from_millis(300));
    let err = session
        .call_tool_with("slow", json!({"ms": 60_000}), options)
        .await
        .unwrap_err();
    assert!(matches!(err, SessionError::Timeout { .. }), "{err}");
    let stats = server.stats();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while stats.disconnect_cancels.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server never saw the stream close"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(stats.disconnect_cancels.load(Ordering::SeqCst), 1);
    assert_eq!(stats.modern_notifications.load(Ordering::SeqCst), 0);
    // The session goes on.
    let r = session
        .call_tool("add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert!(r.text().contains('2'));
    session.close().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_over_http_is_acknowledged_and_dropping_it_closes_its_stream() {
    use mcp_stack_session::subscriptions::SubscriptionFilter;
    let server = server(Era::Modern).await;
    let session = connect(&server).await;
    let subscription = session
        .listen(
            SubscriptionFilter::new()
                .tools_list_changed()
                .resource("file:///x"),
        )
        .await
        .unwrap();
    // The testkit has no file:///x: it promises tool list changes only.
    assert_eq!(
        subscription.acknowledged(),
        &SubscriptionFilter::new().tools_list_changed()
    );
    let stats = server.stats();
    assert_eq!(stats.disconnect_cancels.load(Ordering::SeqCst), 0);
    drop(subscription);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while stats.disconnect_cancels.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server never saw the subscription's stream close"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(stats.modern_notifications.load(Ordering::SeqCst), 0);
    assert_eq!(session.in_flight(), 0);
    session.close().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_failure_after_sending_is_a_transport_error_with_its_status() {
    // JSON answers of a handshake-era session come back on the caller's
    // task; the others through the reader.
    for (era, json_response) in [
        (Era::Legacy, false),
        (Era::Legacy, true),
        (Era::Modern, false),
        (Era::Modern, true),
    ] {
        let mut options = HttpServerOptions::misbehaving(HttpMisbehaviour::Status500);
        options.server.era = era;
        options.json_response = json_response;
        let server = HttpServer::start(options).await.unwrap();
        // `send` returns before the answer's head, so the 500 reaches the
        // session through `recv`, as a failure of that request (or, driven
        // on the caller's task, straight from the transport).
        let transport = StreamableHttpTransport::connect(
            &server.url(),
            HttpOptions::new().accept_wait(Duration::ZERO),
        )
        .await
        .unwrap();
        let session = Session::connect(transport, SessionConfig::default())
            .await
            .unwrap();
        let err = session
            .call_tool("add", json!({"a": 1, "b": 2}))
            .await
            .unwrap_err();
        let SessionError::Transport(failure) = &err else {
            panic!("{era:?} {json_response}: not a transport error: {err:?}");
        };
        assert_eq!(failure.http_status(), Some(500), "{era:?}: {err}");
        assert!(err.protocol_error().is_none(), "{era:?}");
        // Only that request failed: the session goes on.
        assert!(!session.list_tools().await.unwrap().is_empty(), "{era:?}");
        session.close().await;
        server.shutdown().await;
    }
}

/// A server on a runtime of its own, so that the test's runtime counts
/// only the client's tasks.
struct ServerApart {
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerApart {
    fn start(options: HttpServerOptions) -> Self {
        let (url_tx, url_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let server = HttpServer::start(options).await.unwrap();
                url_tx.send(server.url()).unwrap();
                let _ = stopped.await;
                server.shutdown().await;
            });
        });
        let url = url_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        ServerApart {
            url,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for ServerApart {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_answers_reach_sequential_and_concurrent_calls_across_an_expiry() {
    let server = HttpServer::start(HttpServerOptions {
        json_response: true,
        expire_after: 6,
        ..HttpServerOptions::misbehaving(HttpMisbehaviour::ExpireSession)
    })
    .await
    .unwrap();
    let session = connect(&server).await;
    assert_eq!(session.protocol_version(), ProtocolVersion::V2025_11_25);
    for i in 0..4 {
        let r = session
            .call_tool("add", json!({"a": i, "b": 1}))
            .await
            .unwrap();
        assert!(r.text().contains(&(i + 1).to_string()), "{}", r.text());
    }
    // Eight at once, across the session's expiry and renewal.
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..8 {
        let session = session.clone();
        calls.spawn(async move {
            let r = session
                .call_tool("add", json!({"a": i, "b": 100}))
                .await
                .unwrap();
            assert!(r.text().contains(&(i + 100).to_string()), "{}", r.text());
        });
    }
    while let Some(done) = calls.join_next().await {
        done.unwrap();
    }
    assert_eq!(server.stats().initializes.load(Ordering::SeqCst), 2);
    assert_eq!(session.in_flight(), 0);
    session.close().await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_call_over_http_leaves_no_entry_and_no_task_behind() {
    let server = ServerApart::start(HttpServerOptions {
        json_response: true,
        ..HttpServerOptions::default()
    });
    let transport = StreamableHttpTransport::connect(&server.url, HttpOptions::new())
        .await
        .unwrap();
    let session = Session::connect(transport, SessionConfig::default())
        .await
        .unwrap();
    session
        .call_tool("add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    // The caller gives up on a call the server answers in a minute.
    let dropped = tokio::time::timeout(
        Duration::from_millis(300),
        session.call_tool("slow", json!({"ms": 60_000})),
    )
    .await;
    assert!(dropped.is_err(), "the slow call answered: {dropped:?}");
    assert_eq!(session.in_flight(), 0, "the call's entry is gone at once");
    // No task goes on waiting for that answer (the cancellation, sent from
    // a task of its own, ends too).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while metrics.num_alive_tasks() > before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} tasks alive, {before} before the call",
            metrics.num_alive_tasks()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The session goes on.
    let r = session
        .call_tool("add", json!({"a": 2, "b": 2}))
        .await
        .unwrap();
    assert!(r.text().contains('4'));
    session.close().await;
}
