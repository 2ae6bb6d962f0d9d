//! The legacy HTTP+SSE transport when its stream drops: it reconnects,
//! reports a new endpoint as a new session (posting nothing but the
//! handshake until it has run again), fails the requests the drop took with
//! it, and gives up after `max_reconnects` against a server that stays down.

#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stack_jsonrpc::{Message, Notification, Request, to_raw};
use mcp_stack_testkit::http::{HttpMisbehaviour, HttpMode, HttpServer, HttpServerOptions};
use mcp_stack_transport::http::{HttpOptions, HttpTrace, SseTransport};
use mcp_stack_transport::{Lifecycle, Received, SendContext, Transport};
use serde_json::{Value, json};

const VERSION: &str = "2024-11-05";

fn request(id: i64, method: &str, params: Value) -> Message {
    Message::from(Request::new(id, method, Some(to_raw(&params).unwrap())))
}

fn call(id: i64, tool: &str, args: Value) -> Message {
    request(id, "tools/call", json!({"name": tool, "arguments": args}))
}

/// What `recv` gave for request `id`: its answer, or its transport failure.
#[derive(Debug)]
enum Outcome {
    Answer(Value),
    Failed(String),
}

/// Receives until the answer to (or failure of) `id`, returning it and what
/// came before. The deadline only stops a broken test from hanging.
async fn outcome(t: &SseTransport, id: i64) -> (Outcome, Vec<Received>) {
    let mut before = Vec::new();
    let fut = async {
        loop {
            match t.recv().await.unwrap() {
                Received::Message(m @ (Message::Response(_) | Message::Error(_)))
                    if m.id() == Some(&id.into()) =>
                {
                    return Outcome::Answer(serde_json::to_value(&m).unwrap());
                }
                Received::Failed(f) if f.id == id.into() => {
                    return Outcome::Failed(f.error.to_string());
                }
                other => before.push(other),
            }
        }
    };
    let value = tokio::time::timeout(Duration::from_secs(20), fut)
        .await
        .expect("nothing for this request within 20 s");
    (value, before)
}

async fn send(t: &SseTransport, message: &Message) {
    let context = match message.method() {
        Some("initialize") => SendContext::new().lifecycle(Lifecycle::Initialize),
        Some("notifications/initialized") => SendContext::new()
            .revision(VERSION.parse().unwrap())
            .lifecycle(Lifecycle::Initialized),
        _ => SendContext::new().revision(VERSION.parse().unwrap()),
    };
    t.send_with(message, &context).await.unwrap();
}

async fn handshake(t: &SseTransport) {
    let init = request(
        0,
        "initialize",
        json!({"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    send(t, &init).await;
    let (answer, _) = outcome(t, 0).await;
    assert!(matches!(answer, Outcome::Answer(_)), "{answer:?}");
    send(
        t,
        &Message::from(Notification::new("notifications/initialized", None)),
    )
    .await;
}

fn notes(options: HttpOptions) -> (HttpOptions, Arc<Mutex<Vec<String>>>) {
    let notes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&notes);
    let options = options.observer(move |trace| {
        if let HttpTrace::Note(note) = trace {
            seen.lock().unwrap().push(note.clone());
        }
    });
    (options, notes)
}

fn options() -> HttpOptions {
    HttpOptions::new()
        .request_timeout(Duration::from_secs(10))
        .connect_timeout(Duration::from_secs(2))
        .default_retry(Duration::from_millis(20))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_is_reconnected_and_the_new_session_waits_for_a_handshake() {
    // The first stream ends after its second message: the initialize
    // answer, then the echo answer below.
    let s = HttpServer::start(HttpServerOptions {
        mode: HttpMode::LegacySse,
        drop_after: 2,
        ..HttpServerOptions::misbehaving(HttpMisbehaviour::DropSseStream)
    })
    .await
    .unwrap();
    let (options, notes) = notes(options());
    let t = SseTransport::connect(&s.url(), options).await.unwrap();
    handshake(&t).await;

    // A call that would take an hour is in flight when the stream drops.
    send(&t, &call(1, "slow", json!({"ms": 3_600_000}))).await;
    send(
        &t,
        &call(2, "echo", json!({"text": "last on the old stream"})),
    )
    .await;
    let (echo, _) = outcome(&t, 2).await;
    let Outcome::Answer(echo) = echo else {
        panic!("{echo:?}")
    };
    assert_eq!(
        echo["result"]["content"][0]["text"],
        "last on the old stream"
    );

    // The slow call fails now, as a typed failure of that request, not at
    // a timeout: its answer would have come on the dropped stream.
    let (slow, _) = outcome(&t, 1).await;
    let Outcome::Failed(why) = slow else {
        panic!("{slow:?}")
    };
    assert!(why.contains("the server closed the SSE stream"), "{why}");
    assert!(why.contains("send the request again"), "{why}");

    // A later request waits for the new stream, whose new endpoint is a new
    // session: reported, and the request refused unposted until the
    // handshake has run again.
    let context = SendContext::new().revision(VERSION.parse().unwrap());
    let refused = t
        .send_with(&call(3, "echo", json!({"text": "too early"})), &context)
        .await
        .unwrap_err();
    assert!(refused.is_session_expired(), "{refused}");
    let report = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Received::SessionExpired { reason } = t.recv().await.unwrap() {
                return reason;
            }
        }
    })
    .await
    .expect("no new session reported");
    assert!(report.contains("new endpoint"), "{report}");
    assert_eq!(
        s.stats().initializes.load(Ordering::SeqCst),
        1,
        "the transport replays nothing"
    );
    handshake(&t).await;
    send(&t, &call(4, "echo", json!({"text": "on the new stream"}))).await;
    let (echo, before) = outcome(&t, 4).await;
    let Outcome::Answer(echo) = echo else {
        panic!("{echo:?}")
    };
    assert_eq!(echo["result"]["content"][0]["text"], "on the new stream");
    assert!(
        !before.iter().any(|r| matches!(r, Received::Message(_))),
        "{before:?}"
    );
    assert_eq!(s.stats().legacy_streams.load(Ordering::SeqCst), 2);
    assert_eq!(s.stats().initializes.load(Ordering::SeqCst), 2);
    let notes = notes.lock().unwrap().clone();
    assert!(
        notes.iter().any(|n| n.contains("a new SSE endpoint")),
        "{notes:?}"
    );
    t.close().await;
    assert!(t.recv().await.unwrap_err().is_closed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stays_down_closes_the_transport_after_max_reconnects() {
    let s = HttpServer::start(HttpServerOptions {
        mode: HttpMode::LegacySse,
        ..HttpServerOptions::default()
    })
    .await
    .unwrap();
    let (options, notes) = notes(options().max_reconnects(3));
    let t = SseTransport::connect(&s.url(), options).await.unwrap();
    handshake(&t).await;
    // The server goes away for good: its stream ends, its port refuses.
    s.shutdown().await;
    let error = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match t.recv().await {
                Ok(_) => continue,
                Err(e) => return e,
            }
        }
    })
    .await
    .expect("the transport kept trying past its bound");
    assert!(error.is_closed(), "{error}");
    let text = error.to_string();
    assert!(text.contains("3 attempts in a row"), "{text}");
    assert!(text.contains("max_reconnects"), "{text}");
    let attempts = notes
        .lock()
        .unwrap()
        .iter()
        .filter(|n| n.starts_with("reconnecting the SSE stream"))
        .count();
    assert_eq!(attempts, 3);
    // Sending now fails at once with the same reason.
    let err = t
        .send(&call(9, "echo", json!({"text": "x"})))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("3 attempts in a row"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_reconnects_a_dropped_stream_closes_the_transport() {
    let s = HttpServer::start(HttpServerOptions {
        mode: HttpMode::LegacySse,
        drop_after: 1,
        ..HttpServerOptions::misbehaving(HttpMisbehaviour::DropSseStream)
    })
    .await
    .unwrap();
    let t = SseTransport::connect(&s.url(), options().max_reconnects(0))
        .await
        .unwrap();
    // The initialize answer is the stream's one message.
    let init = request(
        0,
        "initialize",
        json!({"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    send(&t, &init).await;
    let (answer, _) = outcome(&t, 0).await;
    assert!(matches!(answer, Outcome::Answer(_)), "{answer:?}");
    let error = tokio::time::timeout(Duration::from_secs(20), t.recv())
        .await
        .unwrap()
        .unwrap_err();
    assert!(error.is_closed());
    assert!(error.to_string().contains("max_reconnects is 0"), "{error}");
    assert_eq!(s.stats().legacy_streams.load(Ordering::SeqCst), 1);
}
