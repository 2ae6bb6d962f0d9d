//! The session against a scripted in-memory peer: no processes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_jsonrpc::{Id, Message, Notification, Request, Response, to_raw};
use mcp_session::{
    CallOptions, ProtocolVersion, Session, SessionConfig, SessionError, TimeoutKind,
};
use mcp_transport::{InvalidFrame, Transport, memory};
use serde_json::{Value, json};

use common::{Fake, Reply, Script, init_result, start};

fn tools_server(extra: impl Fn(&Request) -> Option<Reply> + Send + Sync + 'static) -> Script {
    Arc::new(move |r: &Request| {
        if let Some(reply) = extra(r) {
            return reply;
        }
        match r.method.as_str() {
            "initialize" => Reply::Ok(init_result(
                "2025-11-25",
                json!({"tools": {"listChanged": true}}),
            )),
            "ping" => Reply::Ok(json!({})),
            "tools/list" => Reply::Ok(json!({"tools": [
                {"name": "echo", "inputSchema": {"type": "object",
                    "properties": {"text": {"type": "string"}}, "required": ["text"]}},
                {"name": "add", "inputSchema": {"type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
                 "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}}
            ]})),
            "tools/call" => {
                let p: Value = serde_json::from_str(r.params.as_ref().unwrap().get()).unwrap();
                match p["name"].as_str() {
                    Some("echo") => Reply::Ok(
                        json!({"content": [{"type": "text", "text": p["arguments"]["text"]}]}),
                    ),
                    Some("add") => {
                        let sum = p["arguments"]["a"].as_f64().unwrap()
                            + p["arguments"]["b"].as_f64().unwrap();
                        Reply::Ok(
                            json!({"content": [{"type": "text", "text": sum.to_string()}], "structuredContent": {"sum": sum}}),
                        )
                    }
                    _ => Reply::Err(-32602, "unknown tool"),
                }
            }
            _ => Reply::Err(-32601, "method not found"),
        }
    })
}

/// These tests cover handshake-era sessions, so they skip the default
/// `server/discover` probe (tests/modern.rs covers the probe).
fn config() -> SessionConfig {
    SessionConfig::new()
        .server_name("fake")
        .protocol(mcp_session::ProtocolPin::Mode(
            mcp_session::ProtocolMode::Legacy,
        ))
}

#[tokio::test]
async fn handshake_sends_initialize_then_initialized() {
    let (t, fake) = start(tools_server(|r| {
        (r.method == "initialize")
            .then(|| Reply::Ok(init_result("2025-06-18", json!({"tools": {}}))))
    }));
    let s = Session::connect_shared(t, config()).await.unwrap();
    assert_eq!(s.protocol_version(), ProtocolVersion::V2025_06_18);
    assert_eq!(s.server().server_info.name, "fake");
    assert_eq!(s.server().instructions.as_deref(), Some("be nice"));
    s.ping().await.unwrap();
    assert_eq!(
        fake.methods(),
        ["initialize", "notifications/initialized", "ping"]
    );
    let Message::Request(init) = &fake.seen.lock().unwrap()[0] else {
        panic!()
    };
    let p: Value = serde_json::from_str(init.params.as_ref().unwrap().get()).unwrap();
    assert_eq!(p["protocolVersion"], "2025-11-25");
    assert_eq!(p["clientInfo"]["name"], "mcp-client-rs");
    assert!(p["capabilities"].is_object());
}

#[tokio::test]
async fn every_handshake_revision_is_accepted() {
    for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let (t, _fake) = start(Arc::new(move |r: &Request| match r.method.as_str() {
            "initialize" => Reply::Ok(init_result(v, json!({}))),
            _ => Reply::Silence,
        }));
        let s = Session::connect_shared(t, config()).await.unwrap();
        assert_eq!(s.protocol_version().as_str(), v);
    }
}

#[tokio::test]
async fn unknown_version_is_a_clear_error_and_closes() {
    let (t, fake) = start(Arc::new(|r: &Request| match r.method.as_str() {
        "initialize" => Reply::Ok(init_result("1999-01-01", json!({}))),
        _ => Reply::Silence,
    }));
    let err = Session::connect_shared(Arc::clone(&t) as Arc<dyn Transport>, config())
        .await
        .unwrap_err();
    let SessionError::VersionMismatch {
        offered, received, ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(
        (offered.as_str(), received.as_str()),
        ("2025-11-25", "1999-01-01")
    );
    assert!(err.to_string().contains("1999-01-01"));
    // The client closed its side: the server sees the end.
    assert!(fake.server.recv().await.unwrap_err().is_closed());
    assert_eq!(
        fake.methods(),
        ["initialize"],
        "no initialized after a mismatch"
    );
}

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

#[tokio::test]
async fn concurrent_requests_are_matched_by_id() {
    // Each request's answer is delayed inversely to its order, so answers
    // arrive out of order.
    let (t, _fake) = start(tools_server(|r| {
        r.method.starts_with("wait/").then(|| {
            let n: u64 = r.method[5..].parse().unwrap();
            Reply::After(Duration::from_millis(50 - n * 5), json!({"n": n}))
        })
    }));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let calls = (0..8u64).map(|n| {
        let s = s.clone();
        async move {
            (
                n,
                s.request(&format!("wait/{n}"), None, None).await.unwrap(),
            )
        }
    });
    for (n, raw) in futures_join(calls).await {
        let v: Value = serde_json::from_str(raw.get()).unwrap();
        assert_eq!(v["n"], n);
    }
}

async fn futures_join<F: std::future::Future + Send + 'static>(
    fs: impl Iterator<Item = F>,
) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = fs.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

#[tokio::test]
async fn server_requests_are_answered() {
    let (t, fake) = start(tools_server(|_| None));
    let _s = Session::connect_shared(t, config()).await.unwrap();
    fake.server
        .send(&Message::from(Request::new("p1", "ping", None)))
        .await
        .unwrap();
    fake.server
        .send(&Message::from(Request::new(
            9,
            "sampling/createMessage",
            None,
        )))
        .await
        .unwrap();
    // The fake's loop records what the client sends back.
    let answers = loop {
        let seen = fake.seen.lock().unwrap().clone();
        let answers: Vec<_> = seen.into_iter().filter(|m| m.method().is_none()).collect();
        if answers.len() == 2 {
            break answers;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let ping = answers
        .iter()
        .find(|m| m.id() == Some(&Id::from("p1")))
        .unwrap();
    let Message::Response(r) = ping else {
        panic!("{ping:?}")
    };
    assert_eq!(r.result.get(), "{}");
    let other = answers
        .iter()
        .find(|m| m.id() == Some(&Id::from(9)))
        .unwrap();
    let Message::Error(e) = other else {
        panic!("{other:?}")
    };
    assert_eq!(e.error.code, -32601);
}

#[tokio::test]
async fn tools_list_follows_cursors_and_guards_repeats() {
    let pages = |r: &Request| -> Option<Reply> {
        if r.method != "tools/list" {
            return None;
        }
        let p: Value = serde_json::from_str(r.params.as_ref().unwrap().get()).unwrap();
        let tool = |n: &str| json!({"name": n, "inputSchema": {"type": "object"}});
        Some(match p["cursor"].as_str() {
            None => Reply::Ok(json!({"tools": [tool("a")], "nextCursor": "c1"})),
            Some("c1") => Reply::Ok(json!({"tools": [tool("b")], "nextCursor": "c2"})),
            Some(_) => Reply::Ok(json!({"tools": [tool("c")]})),
        })
    };
    let (t, fake) = start(tools_server(pages));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let c = s.list_tools().await.unwrap();
    let names: Vec<_> = c.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    // Cached: no second round of tools/list.
    s.list_tools().await.unwrap();
    assert_eq!(
        fake.methods().iter().filter(|m| *m == "tools/list").count(),
        3
    );

    let (t, _fake) = start(tools_server(|r| {
        (r.method == "tools/list").then(|| Reply::Ok(json!({"tools": [], "nextCursor": "same"})))
    }));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let err = s.list_tools().await.unwrap_err();
    assert!(err.to_string().contains("repeated the cursor"), "{err}");
}

/// The server says its tools changed; returns once the session's reader
/// has processed it (a ping round trip after it guarantees that).
async fn announce_tools_changed(fake: &Fake, s: &Session) {
    fake.server
        .send(&Message::from(Notification::new(
            "notifications/tools/list_changed",
            None,
        )))
        .await
        .unwrap();
    s.ping().await.unwrap();
}

#[tokio::test]
async fn list_changed_marks_the_catalog_stale() {
    let count = Arc::new(Mutex::new(0));
    let c2 = Arc::clone(&count);
    let (t, fake) = start(tools_server(move |r| {
        if r.method == "tools/list" {
            *c2.lock().unwrap() += 1;
        }
        None
    }));
    let s = Session::connect_shared(t, config()).await.unwrap();
    s.list_tools().await.unwrap();
    s.list_tools().await.unwrap();
    assert_eq!(*count.lock().unwrap(), 1);
    announce_tools_changed(&fake, &s).await;
    s.list_tools().await.unwrap();
    assert_eq!(*count.lock().unwrap(), 2);
}

/// Calls that find no catalog wait for one `tools/list` together; so do
/// calls after `list_changed`, and they all see the new list (a call that
/// went on with the old one would not know `echo2` and fetch again).
#[tokio::test]
async fn concurrent_calls_fetch_the_catalog_once() {
    let count = Arc::new(Mutex::new(0));
    let c2 = Arc::clone(&count);
    let (t, fake) = start(tools_server(move |r| match r.method.as_str() {
        "tools/list" => {
            let mut n = c2.lock().unwrap();
            *n += 1;
            let mut tools = vec![json!({"name": "echo", "inputSchema": {"type": "object"}})];
            if *n > 1 {
                tools.push(json!({"name": "echo2", "inputSchema": {"type": "object"}}));
            }
            // Slow enough that the other calls arrive while it runs.
            Some(Reply::After(
                Duration::from_millis(50),
                json!({ "tools": tools }),
            ))
        }
        "tools/call" => {
            let p: Value = serde_json::from_str(r.params.as_ref().unwrap().get()).unwrap();
            (p["name"] == "echo2").then(|| {
                Reply::Ok(json!({"content": [{"type": "text", "text": p["arguments"]["text"]}]}))
            })
        }
        _ => None,
    }));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let calls = |tool: &'static str| {
        let s = s.clone();
        (0..8).map(move |i| {
            let s = s.clone();
            async move {
                let text = format!("{tool}:{i}");
                let r = s.call_tool(tool, json!({ "text": text })).await.unwrap();
                assert_eq!(r.text(), text);
            }
        })
    };
    futures_join(calls("echo")).await;
    assert_eq!(*count.lock().unwrap(), 1, "one fetch for eight first calls");
    announce_tools_changed(&fake, &s).await;
    futures_join(calls("echo2")).await;
    assert_eq!(*count.lock().unwrap(), 2, "one fetch after list_changed");
}

#[tokio::test]
async fn no_tools_capability_means_empty_catalog_without_a_request() {
    let (t, fake) = start(Arc::new(|r: &Request| match r.method.as_str() {
        "initialize" => Reply::Ok(init_result("2025-11-25", json!({}))),
        _ => Reply::Silence,
    }));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let c = s.list_tools().await.unwrap();
    assert!(c.is_empty());
    assert!(c.diagnostics()[0].contains("`tools` capability"));
    assert!(!fake.methods().contains(&"tools/list".to_string()));
}

#[tokio::test]
async fn invalid_arguments_are_caught_before_sending() {
    let (t, fake) = start(tools_server(|_| None));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let err = s.call_tool("echo", json!({"text": 5})).await.unwrap_err();
    let SessionError::InvalidArguments { tool, problems } = &err else {
        panic!("{err}")
    };
    assert_eq!(tool, "echo");
    assert_eq!(problems[0].path, "/text");
    assert!(
        problems[0].message.contains("string"),
        "{}",
        problems[0].message
    );
    let err = s.call_tool("echo", json!({})).await.unwrap_err();
    assert!(
        err.to_string().contains("\"text\" is a required property"),
        "{err}"
    );
    assert!(
        !fake.methods().contains(&"tools/call".to_string()),
        "nothing was sent"
    );

    let r = s.call_tool("echo", json!({"text": "hi"})).await.unwrap();
    assert_eq!(r.text(), "hi");
    let err = s.call_tool("nope", json!({})).await.unwrap_err();
    assert!(matches!(err, SessionError::UnknownTool { .. }), "{err}");
    assert!(err.to_string().contains("echo"));
}

#[tokio::test]
async fn is_error_is_a_successful_call_and_protocol_errors_are_errors() {
    let (t, _fake) = start(tools_server(|r| {
        let p: Value = r
            .params
            .as_ref()
            .map(|p| serde_json::from_str(p.get()).unwrap())
            .unwrap_or_default();
        match (r.method.as_str(), p["arguments"]["text"].as_str()) {
            ("tools/call", Some("fail")) => Some(Reply::Ok(
                json!({"content": [{"type": "text", "text": "no such file"}], "isError": true}),
            )),
            ("tools/call", Some("proto")) => Some(Reply::Err(-32602, "bad path")),
            _ => None,
        }
    }));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let r = s.call_tool("echo", json!({"text": "fail"})).await.unwrap();
    assert!(r.is_error());
    assert_eq!(r.text(), "no such file");
    let err = s
        .call_tool("echo", json!({"text": "proto"}))
        .await
        .unwrap_err();
    assert_eq!(err.protocol_error().unwrap().code, -32602);
}

#[tokio::test]
async fn structured_content_is_checked_against_output_schema() {
    let (t, _fake) = start(tools_server(|r| {
        let p: Value = r
            .params
            .as_ref()
            .map(|p| serde_json::from_str(p.get()).unwrap())
            .unwrap_or_default();
        (r.method == "tools/call" && p["arguments"]["a"] == 0)
            .then(|| Reply::Ok(json!({"content": [], "structuredContent": {"sum": "zero"}})))
    }));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let ok = s.call_tool("add", json!({"a": 1, "b": 2})).await.unwrap();
    assert_eq!(ok.structured_content, Some(json!({"sum": 3.0})));
    let err = s
        .call_tool("add", json!({"a": 0, "b": 2}))
        .await
        .unwrap_err();
    let SessionError::InvalidOutput { problems, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(problems[0].path, "/sum");
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

#[tokio::test]
async fn serial_tool_calls_run_one_at_a_time_in_order() {
    let active = Arc::new(Mutex::new((0usize, 0usize)));
    let a2 = Arc::clone(&active);
    let (t, fake) = start(tools_server(move |r| {
        if r.method != "tools/call" {
            return None;
        }
        let mut a = a2.lock().unwrap();
        a.0 += 1;
        a.1 = a.1.max(a.0);
        let a3 = Arc::clone(&a2);
        let p: Value = serde_json::from_str(r.params.as_ref().unwrap().get()).unwrap();
        let text = p["arguments"]["text"].clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            a3.lock().unwrap().0 -= 1;
        });
        Some(Reply::After(
            Duration::from_millis(25),
            json!({"content": [{"type": "text", "text": text}]}),
        ))
    }));
    let cfg = config().supports_parallel_tool_calls(false);
    let s = Session::connect_shared(t, cfg).await.unwrap();
    s.list_tools().await.unwrap();
    let calls = (0..4).map(|i| {
        let s = s.clone();
        async move {
            s.call_tool("echo", json!({"text": i.to_string()}))
                .await
                .unwrap()
                .text()
        }
    });
    let mut handles = Vec::new();
    for c in calls {
        handles.push(tokio::spawn(c));
        tokio::task::yield_now().await;
    }
    for h in handles {
        h.await.unwrap();
    }
    assert_eq!(active.lock().unwrap().1, 1, "never two calls at once");
    let order: Vec<String> = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|m| match m {
            Message::Request(r) if r.method == "tools/call" => {
                let p: Value = serde_json::from_str(r.params.as_ref().unwrap().get()).unwrap();
                Some(p["arguments"]["text"].as_str().unwrap().to_string())
            }
            _ => None,
        })
        .collect();
    assert_eq!(order, ["0", "1", "2", "3"]);
}

#[tokio::test]
async fn a_closed_connection_fails_requests_in_flight_and_later() {
    let (t, fake) = start(tools_server(|r| {
        (r.method == "slow").then_some(Reply::Silence)
    }));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let s2 = s.clone();
    let call = tokio::spawn(async move { s2.request("slow", None, None).await });
    // Close once the request is in flight (not merely spawned).
    until("the request is in flight", || s.in_flight() == 1).await;
    fake.server.close().await;
    let err = call.await.unwrap().unwrap_err();
    assert!(err.is_closed(), "{err}");
    assert!(s.ping().await.unwrap_err().is_closed());
    assert!(s.is_closed());
}

#[tokio::test]
async fn invalid_frames_are_counted_not_fatal() {
    let (t, fake) = start(tools_server(|_| None));
    let s = Session::connect_shared(t, config()).await.unwrap();
    fake.server
        .send_invalid(InvalidFrame::BatchElement(
            mcp_jsonrpc::MessageError::MissingVersion,
        ))
        .unwrap();
    s.ping().await.unwrap();
    let d = s.diagnostics();
    assert_eq!(d.invalid_frames, 1);
    assert!(d.last_invalid[0].contains("jsonrpc"));
}

#[tokio::test]
async fn notifications_are_dispatched_to_the_listener() {
    let note = |method: &str, params: Value| {
        Message::from(Notification::new(method, Some(to_raw(&params).unwrap())))
    };
    let before = vec![
        note(
            "notifications/message",
            json!({"level": "info", "logger": "t", "data": "hello"}),
        ),
        note(
            "notifications/cancelled",
            json!({"requestId": 77, "reason": "gone"}),
        ),
        note("notifications/custom/thing", json!({"x": 1})),
    ];
    let (t, _fake) = start(tools_server(move |r| {
        (r.method == "tools/call").then(|| {
            Reply::Then(
                before.clone(),
                json!({"content": [{"type": "text", "text": "ok"}]}),
            )
        })
    }));
    let events = Arc::new(Mutex::new(Vec::new()));
    let e2 = Arc::clone(&events);
    let cfg = config().on_notification(move |n: &mcp_session::ServerNotification| {
        e2.lock().unwrap().push(format!("{n:?}"));
    });
    let s = Session::connect_shared(t, cfg).await.unwrap();
    s.call_tool("echo", json!({"text": "a"})).await.unwrap();
    let events = events.lock().unwrap().clone();
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(events[0].starts_with("Log(") && events[0].contains("hello"));
    assert!(events[1].starts_with("Cancelled(") && events[1].contains("77"));
    assert!(events[2].contains("notifications/custom/thing"));
}

/// The reader keeps every request's deadline: if it stops (here a listener
/// it calls panics), the requests waiting end at once, not never.
#[tokio::test(start_paused = true)]
async fn a_panicking_listener_ends_the_waiting_requests() {
    let (t, fake) = start(tools_server(|r| {
        (r.method == "stuck").then_some(Reply::Silence)
    }));
    let cfg = config().on_notification(|n: &mcp_session::ServerNotification| {
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
    fake.server
        .send(&Message::Notification(Notification::new(
            "notifications/message",
            Some(to_raw(&boom).unwrap()),
        )))
        .await
        .unwrap();
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

/// A transport whose `send` of one method never finishes (an HTTP send
/// waiting for a head that never comes).
#[derive(Debug)]
struct StuckSend(Arc<memory::MemoryTransport>);

impl Transport for StuckSend {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a mcp_transport::SendContext,
    ) -> mcp_transport::BoxFuture<'a, Result<(), mcp_transport::TransportError>> {
        if message.method() == Some("stuck") {
            return Box::pin(std::future::pending());
        }
        self.0.send_with(message, context)
    }
    fn recv(
        &self,
    ) -> mcp_transport::BoxFuture<'_, Result<mcp_transport::Received, mcp_transport::TransportError>>
    {
        self.0.recv()
    }
    fn close(&self) -> mcp_transport::BoxFuture<'_, ()> {
        self.0.close()
    }
    fn kind(&self) -> mcp_transport::TransportKind {
        self.0.kind()
    }
}

#[tokio::test(start_paused = true)]
async fn the_deadline_covers_a_send_that_never_finishes() {
    let (t, _fake) = start(tools_server(|_| None));
    let s = Session::connect(StuckSend(t), config()).await.unwrap();
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

/// The client's end of a pair, whose error responses (the session's
/// refusals of server requests) are never sent: as a server that floods
/// requests and stops reading would leave them.
#[derive(Debug)]
struct RefusalsStick(Arc<memory::MemoryTransport>);

impl Transport for RefusalsStick {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a mcp_transport::SendContext,
    ) -> mcp_transport::BoxFuture<'a, Result<(), mcp_transport::TransportError>> {
        if matches!(message, Message::Error(_)) {
            return Box::pin(std::future::pending());
        }
        self.0.send_with(message, context)
    }

    fn recv(
        &self,
    ) -> mcp_transport::BoxFuture<'_, Result<mcp_transport::Received, mcp_transport::TransportError>>
    {
        self.0.recv()
    }

    fn close(&self) -> mcp_transport::BoxFuture<'_, ()> {
        self.0.close()
    }

    fn kind(&self) -> mcp_transport::TransportKind {
        self.0.kind()
    }
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
        RefusalsStick(t),
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

/// A handler that never answers, counting the answers it is working on; a
/// count goes down only when its future is dropped (the task aborted).
struct Hangs(Arc<std::sync::atomic::AtomicUsize>);

struct Working(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Working {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl mcp_session::ClientHandler for Hangs {
    fn handle<'a>(
        &'a self,
        _method: &'a str,
        _params: Option<&'a mcp_jsonrpc::RawValue>,
    ) -> mcp_transport::BoxFuture<'a, Option<Result<Value, mcp_jsonrpc::ErrorObject>>> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let working = Working(Arc::clone(&self.0));
        Box::pin(async move {
            let _working = working;
            std::future::pending().await
        })
    }
}

/// Waits (up to 10 s of real time) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "gave up waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn server_request(id: &str, method: &str) -> Message {
    Message::Request(Request {
        id: Id::from(id.to_string()),
        method: method.into(),
        params: Some(to_raw(&json!({})).unwrap()),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_requests_are_bounded_cancellable_and_end_with_the_session() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let working = Arc::new(AtomicUsize::new(0));
    let (t, fake) = start(tools_server(|_| None));
    let s = Session::connect(t, config().handler(Hangs(Arc::clone(&working))))
        .await
        .unwrap();

    // The server cancels one of its requests: the handler stops and no
    // answer is sent for it.
    fake.server
        .send(&server_request("cancel-me", "sampling/createMessage"))
        .await
        .unwrap();
    until("the handler started", || working.load(SeqCst) == 1).await;
    let cancel = json!({"requestId": "cancel-me", "reason": "no longer needed"});
    fake.server
        .send(&Message::Notification(Notification::new(
            "notifications/cancelled",
            Some(to_raw(&cancel).unwrap()),
        )))
        .await
        .unwrap();
    until("the cancelled handler stopped", || {
        working.load(SeqCst) == 0
    })
    .await;

    // A flood: the first 32 are answered (here: worked on), the rest refused at once.
    let max = 32;
    for i in 0..max + 3 {
        fake.server
            .send(&server_request(&format!("flood-{i}"), "elicitation/create"))
            .await
            .unwrap();
    }
    let refusals = || {
        fake.seen
            .lock()
            .unwrap()
            .iter()
            .filter(
                |m| matches!(m, Message::Error(e) if e.error.message.contains("already answering")),
            )
            .count()
    };
    until("three refusals", || refusals() == 3).await;
    until("32 handlers at work", || working.load(SeqCst) == max).await;
    assert_eq!(s.diagnostics().answering, max);
    assert_eq!(s.diagnostics().refused_server_requests, 3);
    let answered_cancelled = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .any(|m| m.id() == Some(&Id::from("cancel-me".to_string())));
    assert!(!answered_cancelled, "a cancelled request gets no answer");

    // Closing the session stops every handler, even ones that never end.
    s.close().await;
    until("every handler stopped", || working.load(SeqCst) == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_size_limit_fails_its_request_at_once() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (client, server) = tokio::io::duplex(1 << 20);
    let (client_read, client_write) = tokio::io::split(client);
    let transport = mcp_transport::stream::StreamTransport::with_max_frame_length(
        client_read,
        client_write,
        4096,
    );
    // A raw server: the handshake, then a tools/list answer of 100 kB.
    tokio::spawn(async move {
        let (read, mut write) = tokio::io::split(server);
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let request: Value = serde_json::from_str(&line).unwrap();
            let answer = match request["method"].as_str() {
                Some("initialize") => json!({"jsonrpc": "2.0", "id": request["id"],
                    "result": init_result("2025-11-25", json!({"tools": {}}))}),
                Some("tools/list") => json!({"jsonrpc": "2.0", "id": request["id"],
                    "result": {"tools": [{"name": "x".repeat(100_000), "inputSchema": {}}]}}),
                _ => continue,
            };
            let mut out = serde_json::to_vec(&answer).unwrap();
            out.push(b'\n');
            write.write_all(&out).await.unwrap();
        }
    });
    let s = Session::connect(transport, config().request_timeout(Duration::from_secs(60)))
        .await
        .unwrap();
    // Were the request not failed when its answer was skipped, this would
    // end as a Timeout after 60 s instead.
    let err = s.list_tools().await.unwrap_err();
    assert!(
        matches!(&err, SessionError::AnswerTooLarge { method, limit: 4096 } if method == "tools/list"),
        "{err:?}"
    );
    assert!(err.to_string().contains("raise the limit"), "{err}");
    assert_eq!(s.diagnostics().invalid_frames, 1);
}
