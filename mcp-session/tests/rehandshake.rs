//! The session runs the handshake again when its transport reports that the
//! server's session ended, and sends again the requests the server never
//! processed: once for many requests, never onto another revision, and
//! before anything else on a legacy SSE stream's new endpoint.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stack_jsonrpc::{Message, Response, to_raw};
use mcp_stack_session::protocol::{ProtocolMode, ProtocolPin};
use mcp_stack_session::{Session, SessionConfig};
use mcp_stack_testkit::http::{HttpMisbehaviour, HttpMode, HttpServer, HttpServerOptions};
use mcp_stack_transport::http::{HttpOptions, HttpTrace, SseTransport, StreamableHttpTransport};
use mcp_stack_transport::{
    Answer, BoxFuture, Lifecycle, Received, SendContext, Transport, TransportError, TransportKind,
    memory,
};
use serde_json::json;
use tokio::sync::{mpsc, watch};

/// A transport over an in-memory pair whose server session the test ends,
/// as a streamable HTTP transport reports it: requests held in flight get
/// a "404" (their `request_with` fails with `SessionExpired`), the expiry
/// is reported through `recv` first, and nothing but the handshake goes out
/// until it has run again.
#[derive(Debug)]
struct Expiring {
    inner: memory::MemoryTransport,
    /// Requests sent now wait for the expiry instead of an answer.
    hold: AtomicBool,
    /// The next `initialize` is lost on the way (not sent).
    lose_initialize: AtomicBool,
    /// The session ended and no handshake has ended since.
    expired: AtomicBool,
    /// Bumped by each expiry: wakes the held requests.
    expiries: watch::Sender<u64>,
    reports_tx: mpsc::UnboundedSender<Received>,
    reports: tokio::sync::Mutex<mpsc::UnboundedReceiver<Received>>,
}

impl Expiring {
    fn new(inner: memory::MemoryTransport) -> Self {
        let (reports_tx, reports) = mpsc::unbounded_channel();
        Expiring {
            inner,
            hold: AtomicBool::new(false),
            lose_initialize: AtomicBool::new(false),
            expired: AtomicBool::new(false),
            expiries: watch::Sender::new(0),
            reports_tx,
            reports: tokio::sync::Mutex::new(reports),
        }
    }

    /// Ends the server's session: reported, then the held requests fail.
    fn expire(&self) {
        self.hold.store(false, Ordering::SeqCst);
        self.expired.store(true, Ordering::SeqCst);
        self.reports_tx
            .send(Received::SessionExpired {
                reason: "HTTP 404 (test)".into(),
            })
            .unwrap();
        self.expiries.send_modify(|n| *n += 1);
    }

    fn expired_error() -> TransportError {
        TransportError::SessionExpired {
            url: "POST test".into(),
            reason: "HTTP 404 (test)".into(),
        }
    }

    /// What the gate says about a message: `Err` while the session is
    /// expired and it is not the handshake's.
    fn gate(&self, context: &SendContext) -> Result<(), TransportError> {
        match context.lifecycle_of() {
            Lifecycle::Initialize => Ok(()),
            Lifecycle::Initialized => {
                self.expired.store(false, Ordering::SeqCst);
                Ok(())
            }
            _ if self.expired.load(Ordering::SeqCst) => Err(Self::expired_error()),
            _ => Ok(()),
        }
    }
}

impl Transport for Expiring {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            self.gate(context)?;
            self.inner.send_with(message, context).await
        })
    }

    fn request_with<'a>(
        &'a self,
        request: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<Answer, TransportError>> {
        Box::pin(async move {
            self.gate(context)?;
            if context.lifecycle_of() == Lifecycle::Initialize
                && self.lose_initialize.swap(false, Ordering::SeqCst)
            {
                return Err(TransportError::Http {
                    url: "POST test".into(),
                    message: "the stream dropped under it (test)".into(),
                });
            }
            let held = self.hold.load(Ordering::SeqCst);
            let mut expiries = self.expiries.subscribe();
            self.inner.send_with(request, context).await?;
            if !held {
                return Ok(Answer::Later);
            }
            // The "404" comes once the test ends the session.
            expiries.changed().await.unwrap();
            Err(Self::expired_error())
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Received, TransportError>> {
        Box::pin(async move {
            let mut reports = self.reports.lock().await;
            tokio::select! {
                biased;
                Some(report) = reports.recv() => Ok(report),
                item = self.inner.recv() => item,
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.inner.close()
    }

    fn kind(&self) -> TransportKind {
        TransportKind::StreamableHttp
    }
}

/// What the scripted server saw.
#[derive(Debug, Default)]
struct Seen {
    initializes: AtomicUsize,
    initialized: AtomicUsize,
    /// Requests it got and left unanswered (sent in its first session).
    forgotten: AtomicUsize,
    answered: AtomicUsize,
}

/// A server that answers `initialize` with `versions[n]` for its n-th
/// handshake, leaves requests of its first session that ask to be held
/// unanswered (its session ends under them), and echoes the rest.
fn serve(server: memory::MemoryTransport, versions: &'static [&'static str]) -> Arc<Seen> {
    let seen = Arc::new(Seen::default());
    let counts = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok(item) = server.recv().await {
            let message = match item {
                Received::Message(Message::Request(r)) => r,
                Received::Message(Message::Notification(n)) => {
                    if n.method == "notifications/initialized" {
                        counts.initialized.fetch_add(1, Ordering::SeqCst);
                    }
                    continue;
                }
                _ => continue,
            };
            let result = if message.method == "initialize" {
                let n = counts.initializes.fetch_add(1, Ordering::SeqCst);
                json!({"protocolVersion": versions[n.min(versions.len() - 1)],
                    "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}})
            } else {
                let params: serde_json::Value = message
                    .params
                    .as_ref()
                    .map(|p| serde_json::from_str(p.get()).unwrap())
                    .unwrap_or_default();
                if params["hold"] == true && counts.initializes.load(Ordering::SeqCst) < 2 {
                    counts.forgotten.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
                counts.answered.fetch_add(1, Ordering::SeqCst);
                json!({"n": params["n"]})
            };
            let answer = Message::from(Response::new(message.id, to_raw(&result).unwrap()));
            if server.send(&answer).await.is_err() {
                return;
            }
        }
    });
    seen
}

fn config() -> SessionConfig {
    SessionConfig::new()
        .protocol(ProtocolPin::Mode(ProtocolMode::Handshake))
        .request_timeout(Duration::from_secs(10))
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} within 10 s"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiry_under_concurrent_requests_runs_one_handshake_and_answers_them_all() {
    let (client, server) = memory::pair();
    let seen = serve(server, &["2025-06-18"]);
    let transport = Arc::new(Expiring::new(client));
    let session = Session::connect_shared(transport.clone(), config())
        .await
        .unwrap();
    transport.hold.store(true, Ordering::SeqCst);
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..6 {
        let session = session.clone();
        calls.spawn(async move {
            session
                .request("test/echo", Some(json!({"n": n, "hold": true})), None)
                .await
        });
    }
    // All six reach the server, which then forgets its session.
    until("six requests in flight", || {
        seen.forgotten.load(Ordering::SeqCst) == 6
    })
    .await;
    transport.expire();
    let mut answers = Vec::new();
    while let Some(done) = calls.join_next().await {
        let raw = done.unwrap().unwrap();
        let value: serde_json::Value = serde_json::from_str(raw.get()).unwrap();
        answers.push(value["n"].as_i64().unwrap());
    }
    answers.sort_unstable();
    assert_eq!(answers, [0, 1, 2, 3, 4, 5]);
    assert_eq!(
        seen.initializes.load(Ordering::SeqCst),
        2,
        "one handshake again"
    );
    assert_eq!(seen.initialized.load(Ordering::SeqCst), 2);
    assert_eq!(
        seen.answered.load(Ordering::SeqCst),
        6,
        "each sent again once"
    );
    assert_eq!(session.in_flight(), 0);
    assert_eq!(session.diagnostics().unknown_responses, 0);
    // The session goes on, on the new server session.
    let raw = session
        .request("test/echo", Some(json!({"n": 7})), None)
        .await
        .unwrap();
    assert!(raw.get().contains('7'), "{raw}");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_server_session_on_another_revision_closes_the_session_with_the_reason() {
    let (client, server) = memory::pair();
    let seen = serve(server, &["2025-06-18", "2025-03-26"]);
    let transport = Arc::new(Expiring::new(client));
    let session = Session::connect_shared(transport.clone(), config())
        .await
        .unwrap();
    transport.hold.store(true, Ordering::SeqCst);
    let held = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .request("test/echo", Some(json!({"n": 1, "hold": true})), None)
                .await
        })
    };
    until("the request in flight", || {
        seen.forgotten.load(Ordering::SeqCst) == 1
    })
    .await;
    transport.expire();
    let err = tokio::time::timeout(Duration::from_secs(10), held)
        .await
        .expect("the waiting request was not failed")
        .unwrap()
        .unwrap_err();
    let text = err.to_string();
    assert!(err.is_closed(), "{text}");
    assert!(
        text.contains("2025-03-26") && text.contains("2025-06-18"),
        "{text}"
    );
    assert!(text.contains("connect again"), "{text}");
    assert!(session.is_closed());
    // Later requests get the same reason, and nothing was sent again.
    let later = session.request("test/echo", None, None).await.unwrap_err();
    assert!(later.to_string().contains("2025-03-26"), "{later}");
    assert_eq!(seen.initializes.load(Ordering::SeqCst), 2);
    assert_eq!(
        seen.initialized.load(Ordering::SeqCst),
        1,
        "not on the new revision"
    );
    assert_eq!(seen.answered.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialize_lost_on_the_way_is_sent_again() {
    let (client, server) = memory::pair();
    let seen = serve(server, &["2025-06-18"]);
    let transport = Arc::new(Expiring::new(client));
    let session = Session::connect_shared(transport.clone(), config())
        .await
        .unwrap();
    transport.lose_initialize.store(true, Ordering::SeqCst);
    transport.hold.store(true, Ordering::SeqCst);
    let held = {
        let session = session.clone();
        tokio::spawn(async move {
            session
                .request("test/echo", Some(json!({"n": 3, "hold": true})), None)
                .await
        })
    };
    until("the request in flight", || {
        seen.forgotten.load(Ordering::SeqCst) == 1
    })
    .await;
    transport.expire();
    let raw = held.await.unwrap().unwrap();
    assert!(raw.get().contains('3'), "{raw}");
    assert!(
        !transport.lose_initialize.load(Ordering::SeqCst),
        "one was lost"
    );
    assert_eq!(seen.initializes.load(Ordering::SeqCst), 2);
    assert!(!session.is_closed());
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_are_answered_across_an_http_expiry_404_or_400() {
    for misbehaviour in [
        HttpMisbehaviour::ExpireSession,
        HttpMisbehaviour::ExpireSession400,
    ] {
        // JSON answers: a request whose SSE answer was streaming when the
        // server dropped its session was processed, and is not sent again.
        let server = HttpServer::start(HttpServerOptions {
            expire_after: 4,
            json_response: true,
            ..HttpServerOptions::misbehaving(misbehaviour)
        })
        .await
        .unwrap();
        let transport = StreamableHttpTransport::connect(&server.url(), HttpOptions::new())
            .await
            .unwrap();
        let session = Session::connect(transport, config()).await.unwrap();
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
        let stats = server.stats();
        assert!(stats.stale_session_answers.load(Ordering::SeqCst) >= 1);
        assert_eq!(
            stats.initializes.load(Ordering::SeqCst),
            2,
            "{misbehaviour:?}: one handshake again"
        );
        assert_eq!(session.in_flight(), 0);
        session.close().await;
        server.shutdown().await;
    }
}

/// Records the methods of the messages a transport was given, in order,
/// leaving out those it refused: what it posted (or is posting).
#[derive(Debug)]
struct Recording<T> {
    inner: T,
    posted: Arc<Mutex<Vec<(usize, String)>>>,
    count: AtomicUsize,
}

impl<T: Transport> Transport for Recording<T> {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a SendContext,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            // Noted before: a request's answer may come (and its sending
            // be dropped) before the POST's own status.
            let n = self.count.fetch_add(1, Ordering::SeqCst);
            let method = message.method().unwrap_or_default().to_owned();
            self.posted.lock().unwrap().push((n, method));
            let sent = self.inner.send_with(message, context).await;
            if sent.is_err() {
                self.posted.lock().unwrap().retain(|(m, _)| *m != n);
            }
            sent
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Received, TransportError>> {
        self.inner.recv()
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.inner.close()
    }

    fn kind(&self) -> TransportKind {
        self.inner.kind()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_legacy_sse_endpoint_gets_the_handshake_before_any_other_post() {
    // The first stream ends after its third message: the initialize
    // answer, the tools/list answer, the first echo's answer.
    let server = HttpServer::start(HttpServerOptions {
        mode: HttpMode::LegacySse,
        drop_after: 3,
        ..HttpServerOptions::misbehaving(HttpMisbehaviour::DropSseStream)
    })
    .await
    .unwrap();
    let dropped = Arc::new(AtomicBool::new(false));
    let seen_drop = Arc::clone(&dropped);
    let options = HttpOptions::new()
        .default_retry(Duration::from_millis(20))
        .observer(move |trace| {
            if let HttpTrace::Note(note) = trace
                && note.contains("in flight failed; reconnecting")
            {
                seen_drop.store(true, Ordering::SeqCst);
            }
        });
    let posted = Arc::new(Mutex::new(Vec::new()));
    let transport = Recording {
        inner: SseTransport::connect(&server.url(), options).await.unwrap(),
        posted: Arc::clone(&posted),
        count: AtomicUsize::new(0),
    };
    let session = Session::connect(transport, config()).await.unwrap();
    session.list_tools().await.unwrap();
    let r = session
        .call_tool("echo", json!({"text": "last"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "last");
    // Calls made while the stream is down wait for the new one, are
    // refused there until the handshake has run again, then sent again.
    until("the drop seen", || dropped.load(Ordering::SeqCst)).await;
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..3 {
        let session = session.clone();
        calls.spawn(async move {
            let text = format!("call {i}");
            let r = session
                .call_tool("echo", json!({"text": text}))
                .await
                .unwrap();
            assert_eq!(r.text(), text);
        });
    }
    while let Some(done) = calls.join_next().await {
        done.unwrap();
    }
    let posted: Vec<String> = posted
        .lock()
        .unwrap()
        .iter()
        .map(|(_, m)| m.clone())
        .collect();
    let again = posted
        .iter()
        .enumerate()
        .filter(|(_, m)| *m == "initialize")
        .nth(1)
        .map(|(i, _)| i)
        .expect("no second initialize");
    let (before, after) = posted.split_at(again);
    assert_eq!(
        before.iter().filter(|m| *m == "tools/call").count(),
        1,
        "only the call on the first stream went before the handshake: {posted:?}"
    );
    assert_eq!(
        after.get(1).map(String::as_str),
        Some("notifications/initialized")
    );
    assert_eq!(
        after.iter().filter(|m| *m == "tools/call").count(),
        3,
        "{posted:?}"
    );
    assert_eq!(server.stats().initializes.load(Ordering::SeqCst), 2);
    assert_eq!(server.stats().legacy_streams.load(Ordering::SeqCst), 2);
    let diagnostics = session.diagnostics();
    assert_eq!(diagnostics.unknown_responses, 0);
    assert_eq!(diagnostics.invalid_frames, 0);
    session.close().await;
}
