//! Deadlines against a scripted in-memory peer: request and handshake
//! timeouts, progress extending them up to the cap, cancellation, and the
//! session's one timer (the reader's) kept running whatever the reader
//! waits on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stack_jsonrpc::{Message, Notification, Request, Response, to_raw};
use mcp_stack_session::{CallOptions, Session, SessionError, TimeoutKind};
use mcp_stack_transport::{Transport, memory};
use serde_json::{Value, json};

use common::{Fake, Hangs, Reply, config, server_request, start, tools_server, until};

#[tokio::test(start_paused = true)]
async fn handshake_timeout_is_bounded_and_not_cancelled() {
    let (t, fake) = start(Arc::new(|_: &Request| Reply::Silence));
    let cfg = config().handshake_timeout(Duration::from_secs(5));
    let started = tokio::time::Instant::now();
    let err = Session::connect_shared(t, cfg).await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    // Named as the handshake timeout, with its bound and its setting.
    assert_eq!(err.timeout_kind(), Some(TimeoutKind::Handshake));
    let text = err.to_string();
    assert!(text.contains("the handshake timeout of 5.0 s"), "{text}");
    assert!(
        text.contains("raise SessionConfig::handshake_timeout"),
        "{text}"
    );
    tokio::task::yield_now().await;
    assert_eq!(
        fake.methods(),
        ["initialize"],
        "initialize is never cancelled"
    );
}

#[tokio::test(start_paused = true)]
async fn request_timeout_cancels_and_drops_the_late_answer() {
    let (t, fake) = start(tools_server(|r| {
        (r.method == "slow").then(|| Reply::After(Duration::from_secs(10), json!({"late": true})))
    }));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let err = s
        .request("slow", None, Some(Duration::from_secs(2)))
        .await
        .unwrap_err();
    let SessionError::Timeout {
        method,
        after,
        kind,
        bound,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!((method.as_str(), *after), ("slow", Duration::from_secs(2)));
    assert_eq!(
        (*kind, *bound),
        (TimeoutKind::Request, Duration::from_secs(2))
    );
    assert!(
        err.to_string()
            .contains("raise SessionConfig::request_timeout (or CallOptions::timeout"),
        "{err}"
    );
    assert_eq!(s.in_flight(), 0);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let seen = fake.seen.lock().unwrap().clone();
    let cancel = seen
        .iter()
        .find(|m| m.method() == Some("notifications/cancelled"))
        .expect("cancelled sent");
    let Message::Notification(n) = cancel else {
        panic!()
    };
    let p: Value = serde_json::from_str(n.params.as_ref().unwrap().get()).unwrap();
    let Message::Request(slow) = seen.iter().find(|m| m.method() == Some("slow")).unwrap() else {
        panic!()
    };
    assert_eq!(serde_json::to_value(&slow.id).unwrap(), p["requestId"]);
    assert_eq!(
        s.diagnostics().unknown_responses,
        1,
        "the late answer was dropped"
    );
    // The connection still works.
    s.ping().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn dropping_a_request_future_cancels_it() {
    let (t, fake) = start(tools_server(|r| {
        (r.method == "slow").then_some(Reply::Silence)
    }));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let r = tokio::time::timeout(Duration::from_millis(50), s.request("slow", None, None)).await;
    assert!(r.is_err());
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(s.in_flight(), 0);
    assert!(
        fake.methods()
            .contains(&"notifications/cancelled".to_string())
    );
}

/// A server whose `tools/call` reports progress every 0.8 s three times,
/// then answers 0.8 s later.
fn progress_server() -> (Arc<memory::MemoryTransport>, Fake) {
    let progress = |token: &Value, i: u32| {
        Message::from(Notification::new(
            "notifications/progress",
            Some(to_raw(&json!({"progressToken": token, "progress": i, "total": 3})).unwrap()),
        ))
    };
    let server_side = Arc::new(Mutex::new(None::<Arc<memory::MemoryTransport>>));
    let ss = Arc::clone(&server_side);
    let (t, fake) = start(tools_server(move |r| {
        if r.method != "tools/call" {
            return None;
        }
        let p: Value = serde_json::from_str(r.params.as_ref().unwrap().get()).unwrap();
        let token = p["_meta"]["progressToken"].clone();
        let server = ss.lock().unwrap().clone().unwrap();
        let id = r.id.clone();
        tokio::spawn(async move {
            for i in 1..=3 {
                tokio::time::sleep(Duration::from_millis(800)).await;
                let _ = server.send(&progress(&token, i)).await;
            }
            tokio::time::sleep(Duration::from_millis(800)).await;
            let result = json!({"content": [{"type": "text", "text": "done"}]});
            let _ = server
                .send(&Message::from(Response::new(id, to_raw(&result).unwrap())))
                .await;
        });
        Some(Reply::Silence)
    }));
    *server_side.lock().unwrap() = Some(Arc::clone(&fake.server));
    (t, fake)
}

#[tokio::test(start_paused = true)]
async fn progress_extends_the_timeout_up_to_the_cap() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = Arc::clone(&seen);
    let opts = CallOptions::new()
        .timeout(Duration::from_secs(1))
        .on_progress(move |p| seen2.lock().unwrap().push(p.progress()));
    // 3.2 s in all, never more than 0.8 s without progress: within a 1 s timeout.
    let (t, _fake) = progress_server();
    let cfg = config().max_total_timeout(Duration::from_secs(10));
    let s = Session::connect_shared(t, cfg).await.unwrap();
    let r = s
        .call_tool_with("echo", json!({"text": "x"}), opts.clone())
        .await
        .unwrap();
    assert_eq!(r.text(), "done");
    assert_eq!(*seen.lock().unwrap(), [1.0, 2.0, 3.0]);

    // With a 2 s cap, the same call times out at the cap.
    let (t, _fake) = progress_server();
    let cfg = config().max_total_timeout(Duration::from_secs(2));
    let s = Session::connect_shared(t, cfg).await.unwrap();
    let err = s
        .call_tool_with("echo", json!({"text": "x"}), opts.clone())
        .await
        .unwrap_err();
    let SessionError::Timeout {
        after, kind, bound, ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(*after, Duration::from_secs(2));
    // The cap fired, not the 1 s per-request timeout progress kept extending.
    assert_eq!(
        (*kind, *bound),
        (TimeoutKind::MaxTotal, Duration::from_secs(2))
    );
    assert!(
        err.to_string()
            .contains("the max total timeout (which progress cannot extend) of 2.0 s"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("raise SessionConfig::max_total_timeout"),
        "{err}"
    );

    // Without a progress listener, no token is sent and the 1 s timeout holds.
    let (t, _fake) = progress_server();
    let s = Session::connect_shared(t, config()).await.unwrap();
    let opts = CallOptions::new().timeout(Duration::from_secs(1));
    let err = s
        .call_tool_with("echo", json!({"text": "x"}), opts)
        .await
        .unwrap_err();
    assert!(err.is_timeout());
}

/// The reader keeps every request's deadline: if it stops (here a listener
/// it calls panics), the requests waiting end at once, not never.
#[tokio::test(start_paused = true)]
async fn a_panicking_listener_ends_the_waiting_requests() {
    let (t, fake) = start(tools_server(|r| {
        (r.method == "stuck").then_some(Reply::Silence)
    }));
    let cfg = config().on_notification(|n: &mcp_stack_session::ServerNotification| {
        assert!(
            !format!("{n:?}").contains("boom"),
            "the listener panics (on purpose)"
        );
    });
    let s = Session::connect_shared(t, cfg).await.unwrap();
    let waiting = {
        let s = s.clone();
        tokio::spawn(async move {
            s.request("stuck", None, Some(Duration::from_secs(3600)))
                .await
        })
    };
    until("the request sent", || {
        fake.seen
            .lock()
            .unwrap()
            .iter()
            .any(|m| m.method() == Some("stuck"))
    })
    .await;
    let boom = json!({"level": "info", "data": "boom"});
    fake.notify("notifications/message", boom).await;
    // The test's own bound: far short of the request's hour.
    let err = tokio::time::timeout(Duration::from_secs(60), waiting)
        .await
        .expect("the request still waits after the reader stopped")
        .unwrap()
        .unwrap_err();
    assert!(!err.is_timeout(), "{err}");
    assert!(err.to_string().contains("reader task stopped"), "{err}");
    assert!(s.is_closed());
}

/// The client's end of a pair, whose sends of the messages `stuck` picks
/// never finish: an HTTP send waiting for a head that never comes, or a
/// server that stops reading.
#[derive(Debug)]
struct SendsStuck {
    inner: Arc<memory::MemoryTransport>,
    stuck: fn(&Message) -> bool,
}

impl Transport for SendsStuck {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a mcp_stack_transport::SendContext,
    ) -> mcp_stack_transport::BoxFuture<'a, Result<(), mcp_stack_transport::TransportError>> {
        if (self.stuck)(message) {
            return Box::pin(std::future::pending());
        }
        self.inner.send_with(message, context)
    }

    fn recv(
        &self,
    ) -> mcp_stack_transport::BoxFuture<
        '_,
        Result<mcp_stack_transport::Received, mcp_stack_transport::TransportError>,
    > {
        self.inner.recv()
    }

    fn close(&self) -> mcp_stack_transport::BoxFuture<'_, ()> {
        self.inner.close()
    }

    fn kind(&self) -> mcp_stack_transport::TransportKind {
        self.inner.kind()
    }
}

#[tokio::test(start_paused = true)]
async fn the_deadline_covers_a_send_that_never_finishes() {
    let (t, _fake) = start(tools_server(|_| None));
    let stuck = SendsStuck {
        inner: t,
        stuck: |m| m.method() == Some("stuck"),
    };
    let s = Session::connect(stuck, config()).await.unwrap();
    let err = s
        .request("stuck", None, Some(Duration::from_secs(2)))
        .await
        .unwrap_err();
    let SessionError::Timeout { after, .. } = err else {
        panic!("{err}")
    };
    assert_eq!(after, Duration::from_secs(2));
    assert_eq!(s.in_flight(), 0);
}

/// Deadlines are kept by the reader task; while it waits to send a refusal
/// (a flooding server that does not read), they still run out.
#[tokio::test(start_paused = true)]
async fn a_refusal_the_server_does_not_read_holds_back_no_timeout() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let working = Arc::new(AtomicUsize::new(0));
    let (t, fake) = start(tools_server(|r| {
        (r.method == "stuck").then_some(Reply::Silence)
    }));
    let s = Session::connect(
        // The session's refusals of server requests.
        SendsStuck {
            inner: t,
            stuck: |m| matches!(m, Message::Error(_)),
        },
        config().handler(Hangs(Arc::clone(&working))),
    )
    .await
    .unwrap();
    // 32 requests keep the handlers busy; the 33rd is refused, and that
    // refusal is never sent.
    for i in 0..33 {
        fake.server
            .send(&server_request(&format!("flood-{i}"), "elicitation/create"))
            .await
            .unwrap();
    }
    until("32 handlers at work", || working.load(SeqCst) == 32).await;
    until("the 33rd refused", || {
        s.diagnostics().refused_server_requests == 1
    })
    .await;
    // The test's own bound, so that a regression fails rather than hangs.
    let err = tokio::time::timeout(
        Duration::from_secs(60),
        s.request("stuck", None, Some(Duration::from_secs(2))),
    )
    .await
    .expect("the request's 2 s timeout never fired")
    .unwrap_err();
    let SessionError::Timeout { after, .. } = err else {
        panic!("{err}")
    };
    assert_eq!(after, Duration::from_secs(2));
    s.close().await;
}

/// The session's timer needs tokio's time driver. On a runtime built
/// without it, the reader task stops at the first request (tokio panics
/// there), and the session fails with an error that names the cure rather
/// than hanging.
#[test]
fn a_runtime_without_timers_fails_the_session_clearly() {
    // Bounded from outside: the runtime under test has no timers.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let connected = rt.block_on(async {
            let (t, _fake) = start(tools_server(|_| None));
            Session::connect_shared(t, config()).await.map(drop)
        });
        let _ = tx.send(connected.map_err(|e| e.to_string()));
    });
    let err = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the session hangs")
        .unwrap_err();
    assert!(err.contains("enable_time"), "{err}");
}
