//! The session against a scripted in-memory peer: no processes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stack_jsonrpc::{Id, Message, Notification, Request, to_raw};
use mcp_stack_session::{ProtocolVersion, Session, SessionError};
use mcp_stack_transport::{BadElements, InvalidFrame, Transport};
use serde_json::{Value, json};

use common::{Fake, Hangs, Reply, config, init_result, server_request, start, tools_server, until};

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
        .send_invalid(InvalidFrame::BatchElements(BadElements::new(
            2,
            3,
            mcp_stack_jsonrpc::MessageError::MissingVersion,
        )))
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
    let cfg = config().on_notification(move |n: &mcp_stack_session::ServerNotification| {
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
    fake.notify("notifications/cancelled", cancel).await;
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
    let transport = mcp_stack_transport::stream::StreamTransport::with_max_frame_length(
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

/// A raw peer over a pipe that speaks `revision`, waits for three `x`
/// requests and answers them all in one batch line, with a junk element.
fn batch_peer(revision: &'static str) -> mcp_stack_transport::stream::StreamTransport {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (client, server) = tokio::io::duplex(1 << 16);
    let (client_read, client_write) = tokio::io::split(client);
    tokio::spawn(async move {
        let (read, mut write) = tokio::io::split(server);
        let mut lines = BufReader::new(read).lines();
        let mut waiting = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            let request: Value = serde_json::from_str(&line).unwrap();
            let out = match request["method"].as_str() {
                Some("initialize") => json!({"jsonrpc": "2.0", "id": request["id"],
                    "result": init_result(revision, json!({}))}),
                Some("x") => {
                    waiting.push(json!({"jsonrpc": "2.0", "id": request["id"],
                        "result": {"n": request["params"]["n"]}}));
                    if waiting.len() < 3 {
                        continue;
                    }
                    waiting.reverse();
                    waiting.insert(1, json!(0));
                    Value::Array(std::mem::take(&mut waiting))
                }
                _ => continue,
            };
            let mut bytes = serde_json::to_vec(&out).unwrap();
            bytes.push(b'\n');
            write.write_all(&bytes).await.unwrap();
        }
    });
    mcp_stack_transport::stream::StreamTransport::new(client_read, client_write)
}

/// Sends three `x` requests at once; their outcomes in order.
async fn three_requests(s: &Session) -> Vec<Result<Value, SessionError>> {
    let ask = |n: i64| {
        let s = s.clone();
        async move {
            s.request("x", Some(json!({ "n": n })), None)
                .await
                .map(|raw| serde_json::from_str::<Value>(raw.get()).unwrap())
        }
    };
    let (a, b, c) = tokio::join!(ask(1), ask(2), ask(3));
    vec![a, b, c]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_03_26_batch_of_answers_is_delivered() {
    let config = config().protocol(mcp_stack_session::ProtocolPin::Version(
        ProtocolVersion::V2025_03_26,
    ));
    let s = Session::connect(batch_peer("2025-03-26"), config)
        .await
        .unwrap();
    let answers = three_requests(&s).await;
    for (n, answer) in answers.into_iter().enumerate() {
        assert_eq!(answer.unwrap()["n"], n + 1);
    }
    // The junk element: one report for the batch.
    until("the junk element is reported", || {
        s.diagnostics().invalid_frames == 1
    })
    .await;
    let d = s.diagnostics();
    assert!(
        d.last_invalid[0].contains("1 of the 4 elements of a batch were not messages"),
        "{:?}",
        d.last_invalid
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_in_a_revision_without_batches_is_one_invalid_frame() {
    let config = config()
        .protocol(mcp_stack_session::ProtocolPin::Version(
            ProtocolVersion::V2025_06_18,
        ))
        .request_timeout(Duration::from_millis(500));
    let s = Session::connect(batch_peer("2025-06-18"), config)
        .await
        .unwrap();
    for answer in three_requests(&s).await {
        assert!(answer.unwrap_err().is_timeout());
    }
    let d = s.diagnostics();
    assert_eq!(d.invalid_frames, 1);
    assert!(
        d.last_invalid[0].contains("a batch of 4 elements where batches are not accepted"),
        "{:?}",
        d.last_invalid
    );
}

/// A transport that fails the requests of one method with an error of the
/// test's choosing, as an HTTP transport would, and forwards the rest.
#[derive(Debug)]
struct FailsRequests {
    inner: Arc<mcp_stack_transport::memory::MemoryTransport>,
    error: fn(&str) -> Option<mcp_stack_transport::TransportError>,
    /// The ids of the requests it failed, by method.
    failed: Mutex<Vec<(String, Value)>>,
}

impl Transport for FailsRequests {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a mcp_stack_transport::SendContext,
    ) -> mcp_stack_transport::BoxFuture<'a, Result<(), mcp_stack_transport::TransportError>> {
        self.inner.send_with(message, context)
    }

    fn request_with<'a>(
        &'a self,
        request: &'a Message,
        context: &'a mcp_stack_transport::SendContext,
    ) -> mcp_stack_transport::BoxFuture<
        'a,
        Result<mcp_stack_transport::Answer, mcp_stack_transport::TransportError>,
    > {
        match request.method().and_then(self.error) {
            Some(e) => {
                if let Message::Request(r) = request {
                    let id = serde_json::to_value(&r.id).unwrap();
                    self.failed.lock().unwrap().push((r.method.clone(), id));
                }
                Box::pin(std::future::ready(Err(e)))
            }
            None => self.inner.request_with(request, context),
        }
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

#[tokio::test]
async fn a_refused_request_is_not_cancelled_a_broken_one_is() {
    use mcp_stack_transport::TransportError;
    let (t, fake) = start(tools_server(|_| None));
    let t = FailsRequests {
        inner: t,
        error: |method| match method {
            "refused" => Some(TransportError::HttpStatus {
                status: 403,
                url: "POST http://127.0.0.1/mcp".into(),
                body: String::new(),
            }),
            "broken" => Some(TransportError::Io(std::io::Error::from(
                std::io::ErrorKind::ConnectionReset,
            ))),
            _ => None,
        },
        failed: Mutex::new(Vec::new()),
    };
    let t = Arc::new(t);
    let s = Session::connect_shared(t.clone(), config()).await.unwrap();
    let refused = s.request("refused", None, None).await.unwrap_err();
    assert!(refused.to_string().contains("403"), "{refused}");
    assert_eq!(s.in_flight(), 0);
    // The server may have taken a request whose connection broke: that
    // one is cancelled. Had the refused one been, its cancellation (sent
    // first, on this one-thread runtime) would be seen before this one.
    s.request("broken", None, None).await.unwrap_err();
    until("the broken request's cancellation", || {
        fake.methods()
            .iter()
            .any(|m| m == "notifications/cancelled")
    })
    .await;
    let cancelled: Vec<Value> = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|m| match m {
            Message::Notification(n) if n.method == "notifications/cancelled" => {
                serde_json::from_str::<Value>(n.params.as_ref()?.get()).ok()
            }
            _ => None,
        })
        .collect();
    let failed = t.failed.lock().unwrap().clone();
    let broken = failed.iter().find(|(m, _)| m == "broken").unwrap();
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(
        cancelled[0]["requestId"], broken.1,
        "{cancelled:?} {failed:?}"
    );
}
