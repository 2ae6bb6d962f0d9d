//! The HTTP transports against the testkit HTTP servers on 127.0.0.1.

#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_stack_jsonrpc::{Message, Notification, Request, to_raw};
use mcp_stack_testkit::http::{HttpMisbehaviour, HttpMode, HttpServer, HttpServerOptions};
use mcp_stack_testkit::{Misbehaviour, ServerOptions};
use mcp_stack_transport::http::auto::{self, TransportCache};
use mcp_stack_transport::http::{HttpOptions, HttpTrace, SseTransport, StreamableHttpTransport};
use mcp_stack_transport::{
    Answer, InvalidFrame, Lifecycle, Received, SendContext, Transport, TransportError,
    TransportKind,
};
use serde_json::{Value, json};

const VERSION: &str = "2025-06-18";

fn request(id: i64, method: &str, params: Value) -> Message {
    Message::from(Request::new(id, method, Some(to_raw(&params).unwrap())))
}

fn call(id: i64, tool: &str, args: Value) -> Message {
    request(id, "tools/call", json!({"name": tool, "arguments": args}))
}

/// Receives until the answer to `id`, returning it and what came before.
async fn answer(t: &dyn Transport, id: i64) -> (Value, Vec<Received>) {
    let mut before = Vec::new();
    let fut = async {
        loop {
            match t.recv().await.unwrap() {
                Received::Message(m @ (Message::Response(_) | Message::Error(_)))
                    if m.id() == Some(&id.into()) =>
                {
                    return serde_json::to_value(&m).unwrap();
                }
                // A typed transport failure of this request, shown as JSON
                // so the tests can compare it like an answer.
                Received::Failed(f) if f.id == id.into() => {
                    return json!({"failed": {
                        "message": f.error.to_string(),
                        "httpStatus": f.error.http_status(),
                    }});
                }
                other => before.push(other),
            }
        }
    };
    let value = tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .expect("no answer within 10 s");
    (value, before)
}

/// Sends a message with the context a session would give it.
async fn send<T: Transport + ?Sized>(t: &T, message: &Message) -> Result<(), TransportError> {
    let context = match message.method() {
        Some("initialize") => SendContext::new().lifecycle(Lifecycle::Initialize),
        Some("notifications/initialized") => SendContext::new()
            .revision(VERSION.parse().unwrap())
            .lifecycle(Lifecycle::Initialized),
        _ => SendContext::new().revision(VERSION.parse().unwrap()),
    };
    t.send_with(message, &context).await
}

async fn handshake(t: &dyn Transport) -> Value {
    let init = request(
        0,
        "initialize",
        json!({"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    send(t, &init).await.unwrap();
    let (init, _) = answer(t, 0).await;
    send(
        t,
        &Message::from(Notification::new("notifications/initialized", None)),
    )
    .await
    .unwrap();
    init
}

async fn echo(t: &dyn Transport, id: i64, text: &str) -> Value {
    send(t, &call(id, "echo", json!({"text": text})))
        .await
        .unwrap();
    answer(t, id).await.0
}

fn options() -> HttpOptions {
    HttpOptions::new()
        .request_timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_secs(2))
}

async fn server(options: HttpServerOptions) -> HttpServer {
    HttpServer::start(options).await.unwrap()
}

/// A transport to `s` with the default test options, past the handshake.
async fn session(s: &HttpServer) -> StreamableHttpTransport {
    let t = StreamableHttpTransport::connect(&s.url(), options())
        .await
        .unwrap();
    handshake(&t).await;
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_sse_session_round_trip() {
    let s = server(HttpServerOptions::default()).await;
    let traces = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&traces);
    let t = StreamableHttpTransport::connect(
        &s.url(),
        options()
            .header("Authorization", "Bearer top-secret")
            .observer(move |e: &HttpTrace| seen.lock().unwrap().push(format!("{e:?}"))),
    )
    .await
    .unwrap();
    let init = handshake(&t).await;
    assert_eq!(init["result"]["protocolVersion"], VERSION);
    assert!(t.session_id().unwrap().starts_with("testkit-session-"));
    assert_eq!(t.protocol_version().as_deref(), Some(VERSION));
    assert_eq!(t.kind(), TransportKind::StreamableHttp);
    let echoed = echo(&t, 1, "hello").await;
    assert_eq!(echoed["result"]["content"][0]["text"], "hello");
    // Every POST after initialize carried the negotiated version.
    let versions = s.stats().protocol_versions.lock().unwrap().clone();
    assert!(
        versions.len() >= 2 && versions.iter().all(|v| v == VERSION),
        "{versions:?}"
    );
    t.close().await;
    assert_eq!(s.stats().deletes.load(Ordering::SeqCst), 1);
    assert!(t.recv().await.unwrap_err().is_closed());
    assert!(
        send(&t, &call(2, "echo", json!({"text": "x"})))
            .await
            .is_err()
    );
    let traces = traces.lock().unwrap().join("\n");
    assert!(traces.contains("Mcp-Session-Id"), "{traces}");
    assert!(traces.contains("DELETE"), "{traces}");
    assert!(!traces.contains("top-secret"), "{traces}");
}

/// Sending `notifications/initialized` returns once the GET stream's
/// request has been answered: on one thread, nothing else would have let
/// it leave, and a GET that reaches the server after the next requests
/// can be taken for a reconnection (the conformance suite's `sse-retry`).
#[tokio::test]
async fn the_get_stream_is_open_when_the_handshake_ends() {
    let s = server(HttpServerOptions::default()).await;
    let t = session(&s).await;
    assert_eq!(s.stats().get_streams.load(Ordering::SeqCst), 1);
    t.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_json_answers() {
    let s = server(HttpServerOptions {
        stateless: true,
        json_response: true,
        ..Default::default()
    })
    .await;
    let t = session(&s).await;
    assert_eq!(t.session_id(), None);
    assert_eq!(
        echo(&t, 1, "json").await["result"]["content"][0]["text"],
        "json"
    );
    t.close().await;
    assert_eq!(
        s.stats().deletes.load(Ordering::SeqCst),
        0,
        "no session, no DELETE"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_answer_holds_up_nothing() {
    let s = server(HttpServerOptions::default()).await;
    let t = session(&s).await;
    // The slow call takes 5 s: the order of the answers shows that it held
    // nothing up, with no clock in the test.
    send(&t, &call(1, "slow", json!({"ms": 5000})))
        .await
        .unwrap();
    send(&t, &call(2, "echo", json!({"text": "quick"})))
        .await
        .unwrap();
    // The quick answer comes first, long before the slow one.
    let first = loop {
        if let Received::Message(m @ Message::Response(_)) = t.recv().await.unwrap() {
            break m;
        }
    };
    assert_eq!(first.id(), Some(&2.into()));
    let (slow, _) = answer(&t, 1).await;
    assert!(
        slow["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("5000")
    );
    t.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_is_resumed_with_last_event_id_after_retry() {
    let s = server(HttpServerOptions {
        retry_ms: 300,
        ..HttpServerOptions::misbehaving(HttpMisbehaviour::DropStream)
    })
    .await;
    // The server's retry wins over the (long) default.
    let t = StreamableHttpTransport::connect(
        &s.url(),
        options().default_retry(Duration::from_secs(20)),
    )
    .await
    .unwrap();
    handshake(&t).await;
    let start = Instant::now();
    let echoed = echo(&t, 1, "resumed").await;
    let took = start.elapsed();
    assert_eq!(echoed["result"]["content"][0]["text"], "resumed");
    assert!(
        took >= Duration::from_millis(300),
        "{took:?}: reconnected before retry"
    );
    // Far below the 20 s default, however slow the machine.
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(s.stats().resumes.load(Ordering::SeqCst), 1);
    let ids = s.stats().last_event_ids.lock().unwrap().clone();
    assert_eq!(ids.len(), 1);
    assert!(ids[0].ends_with("-p"), "{ids:?}");
    t.close().await;
}

/// `request_with` as a session calls it: the answer handed back, or
/// received through `recv` when the transport says it comes later.
async fn ask(t: &dyn Transport, id: i64, text: &str) -> (Value, bool) {
    let context = SendContext::new().revision(VERSION.parse().unwrap());
    let message = call(id, "echo", json!({"text": text}));
    match t.request_with(&message, &context).await.unwrap() {
        Answer::Now(m) => (serde_json::to_value(&m).unwrap(), true),
        Answer::Later => (answer(t, id).await.0, false),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_with_hands_back_json_answers_and_leaves_sse_answers_to_recv() {
    for json_response in [true, false] {
        let s = server(HttpServerOptions {
            json_response,
            ..HttpServerOptions::default()
        })
        .await;
        let t = session(&s).await;
        let (value, direct) = ask(&t, 1, "x").await;
        assert_eq!(value["result"]["content"][0]["text"], "x");
        assert_eq!(direct, json_response, "JSON answers come back directly");
        t.close().await;
    }
}

/// Receives until the transport reports the session expired, returning
/// what came before.
async fn session_expired_report(t: &dyn Transport) -> Vec<Received> {
    let mut before = Vec::new();
    let fut = async {
        loop {
            match t.recv().await.unwrap() {
                Received::SessionExpired { reason } => {
                    assert!(reason.contains("HTTP 40"), "{reason}");
                    return;
                }
                other => before.push(other),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .expect("no expiry reported within 10 s");
    before
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_with_reports_an_expired_session_and_replays_nothing() {
    for misbehaviour in [
        HttpMisbehaviour::ExpireSession,
        HttpMisbehaviour::ExpireSession400,
    ] {
        let s = server(HttpServerOptions {
            expire_after: 2,
            json_response: true,
            ..HttpServerOptions::misbehaving(misbehaviour)
        })
        .await;
        let t = session(&s).await;
        let first = t.session_id().unwrap();
        // The third POST finds the session expired: the request fails,
        // unprocessed, and the expiry is reported through recv.
        let context = SendContext::new().revision(VERSION.parse().unwrap());
        let err = t
            .request_with(&call(1, "echo", json!({"text": "x"})), &context)
            .await
            .unwrap_err();
        assert!(err.is_session_expired(), "{misbehaviour:?}: {err}");
        session_expired_report(&t).await;
        assert!(t.session_id().is_none(), "the stale id is dropped");
        assert_eq!(s.stats().initializes.load(Ordering::SeqCst), 1, "no replay");
        // Nothing but the handshake is posted until it runs again.
        let posts = s.stats().posts.load(Ordering::SeqCst);
        let err = t
            .request_with(&call(2, "echo", json!({"text": "y"})), &context)
            .await
            .unwrap_err();
        assert!(err.is_session_expired(), "{err}");
        assert_eq!(s.stats().posts.load(Ordering::SeqCst), posts, "not posted");
        handshake(&t).await;
        assert_ne!(t.session_id().unwrap(), first);
        assert_eq!(s.stats().initializes.load(Ordering::SeqCst), 2);
        // The new session answers directly again.
        let (value, direct) = ask(&t, 3, "after").await;
        assert_eq!(value["result"]["content"][0]["text"], "after");
        assert!(direct, "{misbehaviour:?}");
        t.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_with_returns_error_statuses_and_wrong_content_types() {
    for (misbehaviour, expect) in [
        (HttpMisbehaviour::Status500, "500"),
        (HttpMisbehaviour::WrongContentType, "text/plain"),
    ] {
        let s = server(HttpServerOptions {
            json_response: true,
            ..HttpServerOptions::misbehaving(misbehaviour)
        })
        .await;
        let t = session(&s).await;
        let context = SendContext::new().revision(VERSION.parse().unwrap());
        let err = t
            .request_with(&call(1, "echo", json!({"text": "x"})), &context)
            .await
            .unwrap_err();
        assert!(err.to_string().contains(expect), "{err}");
        if misbehaviour == HttpMisbehaviour::Status500 {
            assert_eq!(err.http_status(), Some(500), "{err}");
        }
        t.close().await;
    }
}

async fn expiry(misbehaviour: HttpMisbehaviour) {
    let s = server(HttpServerOptions {
        expire_after: 2,
        ..HttpServerOptions::misbehaving(misbehaviour)
    })
    .await;
    let t = session(&s).await;
    let first = t.session_id().unwrap();
    // The third POST finds the session expired: the transport reports it
    // once and fails the call as not processed (from `send` itself, or
    // through `recv` when its head came late).
    let failed = match send(&t, &call(1, "echo", json!({"text": "again"}))).await {
        Err(e) => e,
        Ok(()) => {
            let fut = async {
                loop {
                    if let Received::Failed(f) = t.recv().await.unwrap() {
                        return f.error;
                    }
                }
            };
            tokio::time::timeout(Duration::from_secs(10), fut)
                .await
                .unwrap()
        }
    };
    assert!(failed.is_session_expired(), "{failed}");
    assert!(failed.to_string().contains("not processed"), "{failed}");
    session_expired_report(&t).await;
    // The POST, and perhaps the GET stream, found the session gone.
    assert!(s.stats().stale_session_answers.load(Ordering::SeqCst) >= 1);
    // A notification is not posted either, until the handshake runs again.
    let note = Message::from(Notification::new("notifications/roots/list_changed", None));
    assert!(send(&t, &note).await.unwrap_err().is_session_expired());
    // The layer above runs it (a session does): a new session, and the
    // call sent again completes on it.
    handshake(&t).await;
    assert_ne!(t.session_id().unwrap(), first);
    assert_eq!(s.stats().initializes.load(Ordering::SeqCst), 2);
    assert_eq!(
        echo(&t, 2, "again").await["result"]["content"][0]["text"],
        "again"
    );
    t.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_404_is_reported_and_a_new_handshake_starts_a_new_one() {
    expiry(HttpMisbehaviour::ExpireSession).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_400_like_typescript_is_reported_too() {
    expiry(HttpMisbehaviour::ExpireSession400).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_statuses_and_wrong_content_types_fail_the_request() {
    let s = server(HttpServerOptions::misbehaving(HttpMisbehaviour::Status500)).await;
    let t = session(&s).await;
    let err = send(&t, &call(1, "echo", json!({"text": "x"})))
        .await
        .unwrap_err();
    assert_eq!(err.http_status(), Some(500), "{err}");
    t.close().await;

    let s = server(HttpServerOptions::misbehaving(
        HttpMisbehaviour::WrongContentType,
    ))
    .await;
    let t = session(&s).await;
    let err = send(&t, &call(1, "echo", json!({"text": "x"})))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("text/plain"), "{err}");
    t.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_head_becomes_a_request_failure_not_a_hang() {
    let s = server(HttpServerOptions {
        slow_ms: 3000,
        ..HttpServerOptions::misbehaving(HttpMisbehaviour::SlowHead)
    })
    .await;
    // `send` returns after accept_wait (50 ms), long before the head (3 s);
    // the late answer arrives through recv.
    let t = StreamableHttpTransport::connect(
        &s.url(),
        options().accept_wait(Duration::from_millis(50)),
    )
    .await
    .unwrap();
    handshake(&t).await;
    let start = Instant::now();
    send(&t, &call(1, "echo", json!({"text": "late"})))
        .await
        .unwrap();
    assert!(
        start.elapsed() < Duration::from_millis(2500),
        "send waited for the head"
    );
    assert_eq!(
        answer(&t, 1).await.0["result"]["content"][0]["text"],
        "late"
    );
    t.close().await;

    // A request timeout shorter than the head's delay: an error response
    // to that request, not a hang.
    let s = server(HttpServerOptions {
        slow_ms: 2000,
        ..HttpServerOptions::misbehaving(HttpMisbehaviour::SlowHead)
    })
    .await;
    let t = StreamableHttpTransport::connect(
        &s.url(),
        options()
            .accept_wait(Duration::from_millis(50))
            .request_timeout(Duration::from_millis(500)),
    )
    .await
    .unwrap();
    handshake(&t).await;
    send(&t, &call(1, "echo", json!({"text": "late"})))
        .await
        .unwrap();
    // A transport failure, not a made-up JSON-RPC error.
    let (failure, _) = answer(&t, 1).await;
    let message = failure["failed"]["message"].as_str().unwrap();
    assert!(message.starts_with("timed out"), "{failure}");
    t.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_events_are_reported_and_skipped() {
    let mut server_options = ServerOptions::misbehaving(Misbehaviour::OversizedLine);
    server_options.oversize_bytes = 4000;
    let s = server(HttpServerOptions {
        server: server_options,
        ..Default::default()
    })
    .await;
    let t = StreamableHttpTransport::connect(&s.url(), options().max_event_size(2000))
        .await
        .unwrap();
    handshake(&t).await;
    send(&t, &call(1, "echo", json!({"text": "after"})))
        .await
        .unwrap();
    let (value, mut seen) = answer(&t, 1).await;
    assert_eq!(value["result"]["content"][0]["text"], "after");
    // The oversized event is unrelated to the call, so it may come on the
    // GET stream, after the answer.
    let oversized = |r: &Received| matches!(r, Received::Invalid(InvalidFrame::Oversized(o)) if o.limit == 2000);
    while !seen.iter().any(oversized) {
        let next = tokio::time::timeout(Duration::from_secs(5), t.recv()).await;
        seen.push(next.expect("no oversized report").unwrap());
    }
    t.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_gets_a_401_with_advice() {
    let s = server(HttpServerOptions {
        require_header: Some(("authorization".into(), "Bearer good".into())),
        ..Default::default()
    })
    .await;
    let t =
        StreamableHttpTransport::connect(&s.url(), options().header("Authorization", "Bearer bad"))
            .await
            .unwrap();
    let init = request(
        0,
        "initialize",
        json!({"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let err = send(&t, &init).await.unwrap_err();
    assert_eq!(err.http_status(), Some(401));
    let text = err.to_string();
    assert!(
        text.contains("Bearer <token>") && !text.contains("bad"),
        "{text}"
    );
    t.close().await;

    let t = StreamableHttpTransport::connect(
        &s.url(),
        options().header("Authorization", "Bearer good"),
    )
    .await
    .unwrap();
    handshake(&t).await;
    t.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_get_stream_carries_unrelated_server_messages() {
    let mut server_options = ServerOptions::misbehaving(Misbehaviour::FloodNotifications);
    server_options.flood_count = 3;
    let s = server(HttpServerOptions {
        server: server_options,
        ..Default::default()
    })
    .await;
    let t = session(&s).await;
    // Wait for the GET stream to be open.
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.stats().get_streams.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "no GET stream");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    send(&t, &call(1, "echo", json!({"text": "x"})))
        .await
        .unwrap();
    let (_, mut before) = answer(&t, 1).await;
    // Notifications may come after the answer (different streams): collect them.
    while before
        .iter()
        .filter(|r| matches!(r, Received::Message(Message::Notification(_))))
        .count()
        < 3
    {
        before.push(
            tokio::time::timeout(Duration::from_secs(5), t.recv())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    t.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_sse_round_trip() {
    let s = server(HttpServerOptions {
        mode: HttpMode::LegacySse,
        ..Default::default()
    })
    .await;
    let t = SseTransport::connect(&s.url(), options()).await.unwrap();
    assert!(t.endpoint().contains("/messages?"));
    assert_eq!(t.kind(), TransportKind::Sse);
    handshake(&t).await;
    assert_eq!(
        echo(&t, 1, "old").await["result"]["content"][0]["text"],
        "old"
    );
    t.close().await;
    assert!(t.recv().await.unwrap_err().is_closed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_falls_back_to_sse_and_remembers() {
    let s = server(HttpServerOptions {
        mode: HttpMode::LegacySse,
        ..Default::default()
    })
    .await;
    let cache = TransportCache::new();
    let t = auto::connect(&s.url(), options(), &cache).await.unwrap();
    handshake(&t).await;
    assert_eq!(t.kind(), TransportKind::Sse);
    assert_eq!(cache.get(&s.url()), Some(TransportKind::Sse));
    assert_eq!(
        echo(&t, 1, "fallback").await["result"]["content"][0]["text"],
        "fallback"
    );
    t.close().await;
    // The second connection goes straight to SSE.
    let t = auto::connect(&s.url(), options(), &cache).await.unwrap();
    assert_eq!(t.kind(), TransportKind::Sse);
    handshake(&t).await;
    t.close().await;
    assert_eq!(s.stats().legacy_streams.load(Ordering::SeqCst), 2);

    let s = server(HttpServerOptions::default()).await;
    let t = auto::connect(&s.url(), options(), &cache).await.unwrap();
    handshake(&t).await;
    assert_eq!(t.kind(), TransportKind::StreamableHttp);
    assert_eq!(cache.get(&s.url()), Some(TransportKind::StreamableHttp));
    t.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_an_extra_ca_and_verification_on() {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let pem = cert.cert.pem();
    let der = CertificateDer::from(cert.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![der], key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let s = Arc::new(server(HttpServerOptions::default()).await);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Arc::clone(&s);
    let accept = tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            if let Ok(tls) = acceptor.accept(tcp).await {
                server.serve_connection(tls);
            }
        }
    });
    let url = format!("https://{addr}/mcp");

    // Not trusted: the handshake fails and says why.
    let t = StreamableHttpTransport::connect(&url, options())
        .await
        .unwrap();
    let init = request(
        0,
        "initialize",
        json!({"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let err = send(&t, &init).await.unwrap_err();
    assert!(err.to_string().contains("certificate"), "{err}");
    t.close().await;

    // Trusted through the extra CA file.
    let dir = std::env::temp_dir().join(format!("mcp-transport-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, pem).unwrap();
    let t = StreamableHttpTransport::connect(&url, options().extra_ca_file(&ca))
        .await
        .unwrap();
    handshake(&t).await;
    assert_eq!(
        echo(&t, 1, "tls").await["result"]["content"][0]["text"],
        "tls"
    );
    t.close().await;
    accept.abort();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn bad_settings_are_refused_up_front() {
    let err = StreamableHttpTransport::connect(
        "http://127.0.0.1:1/mcp",
        HttpOptions::new().header("X-Key", "a\r\nInjected: 1"),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, TransportError::InvalidConfig(_)));
    assert!(!err.to_string().contains("Injected"));
    assert!(
        StreamableHttpTransport::connect("file:///etc/passwd", HttpOptions::new())
            .await
            .is_err()
    );
    let err = StreamableHttpTransport::connect(
        "http://127.0.0.1:1/mcp",
        HttpOptions::new().extra_ca_file("/nonexistent/ca.pem"),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("/nonexistent/ca.pem"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_refused_is_an_error_not_a_hang() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let t = StreamableHttpTransport::connect(&format!("http://{addr}/mcp"), options())
        .await
        .unwrap();
    let init = request(
        0,
        "initialize",
        json!({"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let err = send(&t, &init).await.unwrap_err();
    assert!(matches!(err, TransportError::Http { .. }), "{err}");
    t.close().await;
}

/// A TLS server that speaks only HTTP/2 (ALPN `h2`): the client gets
/// there over HTTP/2 by default, session, SSE answers and all; with
/// `http2(false)` it offers only HTTP/1.1 and the handshake fails, so the
/// success above was HTTP/2, over one connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_over_tls_when_the_server_offers_it() {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let pem = cert.cert.pem();
    let der = CertificateDer::from(cert.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![der], key)
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let s = Arc::new(server(HttpServerOptions::default()).await);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Arc::clone(&s);
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    let accept = tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            count.fetch_add(1, Ordering::SeqCst);
            if let Ok(tls) = acceptor.accept(tcp).await {
                server.serve_connection_h2(tls);
            }
        }
    });
    let url = format!("https://{addr}/mcp");
    let trusted = || options().extra_ca_pem(pem.clone());

    let t = StreamableHttpTransport::connect(&url, trusted())
        .await
        .unwrap();
    handshake(&t).await;
    assert_eq!(
        echo(&t, 1, "over h2").await["result"]["content"][0]["text"],
        "over h2"
    );
    t.close().await;
    // Every request of the session (its POSTs, the GET stream, the DELETE)
    // shared one HTTP/2 connection.
    assert_eq!(accepted.load(Ordering::SeqCst), 1);

    let t = StreamableHttpTransport::connect(&url, trusted().http2(false))
        .await
        .unwrap();
    let init = request(
        0,
        "initialize",
        json!({"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert!(
        send(&t, &init).await.is_err(),
        "HTTP/1.1 only cannot reach an h2-only server"
    );
    t.close().await;
    accept.abort();
}
