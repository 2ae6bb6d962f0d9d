//! Tasks against scripted peers, in both designs: 2025-11-25's task
//! utility and 2026-07-28's tasks extension. Time is paused: waits and
//! poll intervals are exact, and no test sleeps on the wall clock.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stack_jsonrpc::{Message, Notification, Request, to_raw};
use mcp_stack_session::protocol::tasks::TaskStatus;
use mcp_stack_session::{
    CallOptions, DefaultsElicitationHandler, ProtocolMode, ProtocolPin, ServerNotification,
    Session, SessionConfig, SessionError, TaskCall,
};
use serde_json::{Value, json};
use tokio::time::Instant;

use common::{Fake, Reply, init_result, params, start};

const TASKS_EXT: &str = "io.modelcontextprotocol/tasks";

fn task(id: &str, status: &str, poll_ms: u64) -> Value {
    json!({"taskId": id, "status": status, "createdAt": "2025-11-25T10:30:00Z",
           "lastUpdatedAt": "2025-11-25T10:30:00Z", "ttl": 60000, "pollInterval": poll_ms})
}

fn job_tools() -> Value {
    json!({"tools": [
        {"name": "job", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
         "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
         "execution": {"taskSupport": "optional"}},
        {"name": "plain", "inputSchema": {"type": "object"}}
    ]})
}

fn legacy_config() -> SessionConfig {
    SessionConfig::new()
        .server_name("fake")
        .protocol(ProtocolPin::Mode(ProtocolMode::Handshake))
}

/// A 2025-11-25 server with tasks for tool calls: `tasks/get` answers what
/// `status` says for the nth poll (counting from 1).
fn legacy_server(
    caps: Value,
    status: impl Fn(usize) -> &'static str + Send + Sync + 'static,
    result: impl Fn() -> Reply + Send + Sync + 'static,
) -> common::Script {
    let polls = AtomicUsize::new(0);
    Arc::new(move |r: &Request| match r.method.as_str() {
        "initialize" => Reply::Ok(init_result("2025-11-25", caps.clone())),
        "tools/list" => Reply::Ok(job_tools()),
        "tools/call" if params(r).get("task").is_some() => {
            Reply::Ok(json!({"task": task("t-1", "working", 500)}))
        }
        "tools/call" => Reply::Ok(json!({"content": [], "structuredContent": {"n": 0}})),
        "tasks/get" => {
            let n = polls.fetch_add(1, Ordering::SeqCst) + 1;
            Reply::Ok(task("t-1", status(n), 500))
        }
        "tasks/result" => result(),
        "tasks/cancel" => Reply::Ok(task("t-1", "cancelled", 500)),
        "tasks/list" => match params(r)["cursor"].as_str() {
            None => Reply::Ok(json!({"tasks": [task("t-1", "working", 500)], "nextCursor": "p2"})),
            Some(_) => Reply::Ok(json!({"tasks": [task("t-2", "completed", 500)]})),
        },
        _ => Reply::Err(-32601, "method not found"),
    })
}

fn full_caps() -> Value {
    json!({"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}})
}

fn job_result(n: i64) -> Reply {
    Reply::Ok(
        json!({"content": [{"type": "text", "text": "done"}], "structuredContent": {"n": n},
        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t-1"}}}),
    )
}

fn count(fake: &Fake, method: &str) -> usize {
    fake.methods().iter().filter(|m| *m == method).count()
}

#[tokio::test(start_paused = true)]
async fn a_legacy_task_is_created_polled_at_its_interval_and_its_result_fetched() {
    let (t, fake) = start(legacy_server(
        full_caps(),
        |n| if n < 2 { "working" } else { "completed" },
        || job_result(7),
    ));
    let s = Session::connect_shared(t, legacy_config()).await.unwrap();
    let call = s
        .call_tool_as_task(
            "job",
            json!({"n": 7}),
            CallOptions::new().task_ttl(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    let TaskCall::Task(mut handle) = call else {
        panic!("expected a task")
    };
    assert_eq!(
        (handle.id(), &handle.last().status),
        ("t-1", &TaskStatus::Working)
    );
    let started = Instant::now();
    let result = handle.wait(Duration::from_secs(30)).await.unwrap();
    assert_eq!(result.structured_content, Some(json!({"n": 7})));
    // Two polls, each after the server's 500 ms interval.
    assert_eq!(started.elapsed(), Duration::from_millis(1000));
    assert_eq!(
        fake.methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "tasks/get",
            "tasks/get",
            "tasks/result"
        ]
    );
    let seen = fake.seen.lock().unwrap();
    let Message::Request(call) = &seen[3] else {
        panic!()
    };
    assert_eq!(params(call)["task"], json!({"ttl": 60000}));
    let Message::Request(get) = &seen[4] else {
        panic!()
    };
    assert_eq!(params(get), json!({"taskId": "t-1"}));
}

#[tokio::test(start_paused = true)]
async fn a_legacy_task_result_is_checked_against_the_output_schema() {
    let (t, _fake) = start(legacy_server(
        full_caps(),
        |_| "completed",
        || Reply::Ok(json!({"content": [], "structuredContent": {"n": "seven"}})),
    ));
    let s = Session::connect_shared(t, legacy_config()).await.unwrap();
    let call = s
        .call_tool_as_task("job", json!({}), CallOptions::new())
        .await
        .unwrap();
    let err = call.wait(Duration::from_secs(5)).await.unwrap_err();
    assert!(matches!(err, SessionError::InvalidOutput { .. }), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_failed_legacy_task_is_its_error() {
    let (t, _fake) = start(legacy_server(
        full_caps(),
        |_| "failed",
        || Reply::Err(-32603, "rate limited"),
    ));
    let s = Session::connect_shared(t, legacy_config()).await.unwrap();
    let call = s
        .call_tool_as_task("job", json!({}), CallOptions::new())
        .await
        .unwrap();
    let err = call.wait(Duration::from_secs(5)).await.unwrap_err();
    let SessionError::TaskFailed { task_id, error, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(
        (task_id.as_str(), error.as_ref().unwrap().code),
        ("t-1", -32603)
    );
    assert!(err.to_string().contains("rate limited"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_legacy_task_ends_the_wait_without_more_requests() {
    let (t, fake) = start(legacy_server(full_caps(), |_| "working", || job_result(1)));
    let s = Session::connect_shared(t, legacy_config()).await.unwrap();
    let TaskCall::Task(mut handle) = s
        .call_tool_as_task("job", json!({}), CallOptions::new())
        .await
        .unwrap()
    else {
        panic!()
    };
    handle.cancel().await.unwrap();
    assert_eq!(handle.last().status, TaskStatus::Cancelled);
    let err = handle.wait(Duration::from_secs(5)).await.unwrap_err();
    assert!(matches!(err, SessionError::TaskCancelled { .. }), "{err}");
    assert_eq!(
        (count(&fake, "tasks/get"), count(&fake, "tasks/result")),
        (0, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn the_bounded_wait_times_out_clearly_and_polls_no_more() {
    let (t, fake) = start(legacy_server(full_caps(), |_| "working", || job_result(1)));
    let s = Session::connect_shared(t, legacy_config()).await.unwrap();
    let TaskCall::Task(mut handle) = s
        .call_tool_as_task("job", json!({}), CallOptions::new())
        .await
        .unwrap()
    else {
        panic!()
    };
    let started = Instant::now();
    let err = handle.wait(Duration::from_millis(1200)).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_millis(1200));
    let SessionError::TaskTimeout {
        task_id, status, ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!((task_id.as_str(), status.as_str()), ("t-1", "working"));
    assert!(err.is_timeout());
    assert!(err.to_string().contains("cancel it"), "{err}");
    // Polled at 500 and 1000 ms; the deadline at 1200 ms sent nothing.
    assert_eq!(count(&fake, "tasks/get"), 2);
    assert_eq!(count(&fake, "tasks/result"), 0);
    assert_eq!(count(&fake, "notifications/cancelled"), 0);
    assert_eq!(s.in_flight(), 0);
}

#[tokio::test]
async fn without_the_capability_or_the_tool_s_consent_nothing_is_sent() {
    let (t, fake) = start(legacy_server(
        json!({"tools": {}}),
        |_| "working",
        || job_result(1),
    ));
    let s = Session::connect_shared(t, legacy_config()).await.unwrap();
    let err = s
        .call_tool_as_task("job", json!({}), CallOptions::new())
        .await
        .unwrap_err();
    assert!(matches!(err, SessionError::NotSupported(_)), "{err}");
    assert!(
        err.to_string().contains("tasks.requests.tools.call"),
        "{err}"
    );
    let err = s.list_tasks().await.unwrap_err();
    assert!(matches!(err, SessionError::NotSupported(_)), "{err}");
    // Nothing was sent after the handshake (the catalog is not even fetched).
    let sent = fake.methods();
    assert!(
        sent.iter()
            .all(|m| m == "initialize" || m == "notifications/initialized"),
        "{sent:?}"
    );

    let (t, fake) = start(legacy_server(full_caps(), |_| "working", || job_result(1)));
    let s = Session::connect_shared(t, legacy_config()).await.unwrap();
    let err = s
        .call_tool_as_task("plain", json!({}), CallOptions::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, SessionError::TaskForbidden { tool } if tool == "plain"),
        "{err}"
    );
    assert_eq!(count(&fake, "tools/call"), 0);
}

#[tokio::test]
async fn cancel_needs_the_cancel_capability() {
    let caps = json!({"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}});
    let (t, fake) = start(legacy_server(caps, |_| "working", || job_result(1)));
    let s = Session::connect_shared(t, legacy_config()).await.unwrap();
    let TaskCall::Task(mut handle) = s
        .call_tool_as_task("job", json!({}), CallOptions::new())
        .await
        .unwrap()
    else {
        panic!()
    };
    let err = handle.cancel().await.unwrap_err();
    assert!(matches!(err, SessionError::NotSupported(_)), "{err}");
    assert_eq!(count(&fake, "tasks/cancel"), 0);
}

#[tokio::test]
async fn tasks_are_listed_page_by_page_and_status_notifications_typed() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let cfg = legacy_config().on_notification(move |n| {
        if let ServerNotification::TaskStatus(t) = n {
            log.lock()
                .unwrap()
                .push((t.task_id.clone(), t.status.clone()));
        }
    });
    let inner = legacy_server(full_caps(), |_| "completed", || job_result(1));
    let script: common::Script = Arc::new(move |r: &Request| {
        if r.method == "tasks/get" {
            let note = Notification::new(
                "notifications/tasks/status",
                Some(to_raw(&task("t-1", "completed", 500)).unwrap()),
            );
            return Reply::Then(vec![note.into()], task("t-1", "completed", 500));
        }
        inner(r)
    });
    let (t, fake) = start(script);
    let s = Session::connect_shared(t, cfg).await.unwrap();
    let tasks = s.list_tasks().await.unwrap();
    let ids: Vec<_> = tasks.iter().map(|t| t.task_id.as_str()).collect();
    assert_eq!(ids, ["t-1", "t-2"]);
    assert_eq!(count(&fake, "tasks/list"), 2);
    let mut handle = s.task_handle("t-1").await.unwrap();
    assert_eq!(handle.last().status, TaskStatus::Completed);
    assert_eq!(handle.tool(), None);
    let result = handle.result().await.unwrap();
    assert_eq!(result.text(), "done");
    assert_eq!(
        *seen.lock().unwrap(),
        [("t-1".to_owned(), TaskStatus::Completed)]
    );
}

// ---- 2026-07-28: the tasks extension ----

fn extension_config() -> SessionConfig {
    SessionConfig::new()
        .server_name("fake")
        .protocol(ProtocolPin::Mode(ProtocolMode::Discover))
}

fn detailed_task(id: &str, status: &str) -> Value {
    json!({"resultType": "complete", "taskId": id, "status": status,
           "createdAt": "2026-07-28T10:30:00Z", "lastUpdatedAt": "2026-07-28T10:30:00Z",
           "ttlMs": 60000, "pollIntervalMs": 200})
}

/// A 2026-07-28 server with the tasks extension (unless `offer` is false):
/// `tools/call` answers with a task; `tasks/get` answers `poll(n)`.
fn extension_server(
    offer: bool,
    poll: impl Fn(usize) -> Value + Send + Sync + 'static,
) -> common::Script {
    let polls = AtomicUsize::new(0);
    Arc::new(move |r: &Request| {
        let p = params(r);
        match r.method.as_str() {
            "server/discover" => {
                let mut caps = json!({"tools": {}});
                if offer {
                    caps["extensions"] = json!({TASKS_EXT: {}});
                }
                Reply::Ok(
                    json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": caps,
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "m", "version": "1"}}}),
                )
            }
            "tools/list" => {
                let mut tools = job_tools();
                tools["resultType"] = json!("complete");
                Reply::Ok(tools)
            }
            "tools/call" => {
                let declared =
                    p["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
                        .get(TASKS_EXT)
                        .is_some();
                if declared {
                    let mut created = detailed_task("m-1", "working");
                    created["resultType"] = json!("task");
                    Reply::Ok(created)
                } else {
                    Reply::Ok(json!({"resultType": "complete", "content": [],
                                     "structuredContent": {"n": 0}}))
                }
            }
            "tasks/get" => Reply::Ok(poll(polls.fetch_add(1, Ordering::SeqCst) + 1)),
            "tasks/update" | "tasks/cancel" => Reply::Ok(json!({"resultType": "complete"})),
            _ => Reply::Err(-32601, "method not found"),
        }
    })
}

fn completed(n: i64) -> Value {
    let mut t = detailed_task("m-1", "completed");
    t["result"] =
        json!({"content": [{"type": "text", "text": "done"}], "structuredContent": {"n": n}});
    t
}

#[tokio::test(start_paused = true)]
async fn call_tool_follows_a_task_the_server_returns_unasked() {
    let (t, fake) = start(extension_server(true, |n| {
        if n < 3 {
            detailed_task("m-1", "working")
        } else {
            completed(3)
        }
    }));
    let s = Session::connect_shared(t, extension_config())
        .await
        .unwrap();
    let started = Instant::now();
    let result = s.call_tool("job", json!({"n": 3})).await.unwrap();
    assert_eq!(result.structured_content, Some(json!({"n": 3})));
    assert_eq!(started.elapsed(), Duration::from_millis(600));
    assert_eq!(
        fake.methods(),
        [
            "server/discover",
            "tools/list",
            "tools/call",
            "tasks/get",
            "tasks/get",
            "tasks/get"
        ]
    );
    for m in fake.seen.lock().unwrap().iter() {
        let Message::Request(r) = m else { continue };
        let p = params(r);
        assert_eq!(
            p["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"][TASKS_EXT],
            json!({}),
            "{} declares the extension",
            r.method
        );
        if r.method == "tasks/get" {
            assert_eq!(p["taskId"], "m-1");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_extension_call_waiting_on_a_task_is_bounded_by_its_timeout() {
    let (t, fake) = start(extension_server(true, |_| detailed_task("m-1", "working")));
    let s = Session::connect_shared(
        t,
        extension_config().max_total_timeout(Duration::from_secs(5)),
    )
    .await
    .unwrap();
    let started = Instant::now();
    let err = s
        .call_tool_with(
            "job",
            json!({}),
            CallOptions::new().timeout(Duration::from_secs(1)),
        )
        .await
        .unwrap_err();
    // The state never changed, so the call's own timeout held.
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    assert!(matches!(err, SessionError::TaskTimeout { .. }), "{err}");
    assert_eq!(count(&fake, "tasks/get"), 4, "at 200, 400, 600 and 800 ms");
}

#[tokio::test(start_paused = true)]
async fn an_extension_task_asking_for_input_gets_one_update_per_request() {
    let (t, fake) = start(extension_server(true, |n| match n {
        1 | 2 => {
            let mut t = detailed_task("m-1", "input_required");
            t["inputRequests"] = json!({"name": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Name?", "requestedSchema": {"type": "object",
                "properties": {"name": {"type": "string", "default": "octocat"}}}}}});
            t
        }
        _ => completed(1),
    }));
    let s = Session::connect_shared(
        t,
        extension_config().handler(DefaultsElicitationHandler::new()),
    )
    .await
    .unwrap();
    let TaskCall::Task(mut handle) = s
        .call_tool_as_task("job", json!({}), CallOptions::new())
        .await
        .unwrap()
    else {
        panic!("expected a task")
    };
    let result = handle.wait(Duration::from_secs(10)).await.unwrap();
    assert_eq!(result.text(), "done");
    assert_eq!(
        count(&fake, "tasks/update"),
        1,
        "the same key is answered once"
    );
    let seen = fake.seen.lock().unwrap();
    let update = seen
        .iter()
        .find_map(|m| match m {
            Message::Request(r) if r.method == "tasks/update" => Some(params(r)),
            _ => None,
        })
        .unwrap();
    assert_eq!(update["taskId"], "m-1");
    assert_eq!(update["inputResponses"]["name"]["action"], "accept");
    assert_eq!(
        update["inputResponses"]["name"]["content"]["name"],
        "octocat"
    );
}

#[tokio::test(start_paused = true)]
async fn extension_failures_cancellation_and_refusals() {
    let (t, _fake) = start(extension_server(true, |_| {
        let mut t = detailed_task("m-1", "failed");
        t["statusMessage"] = json!("Tool execution failed");
        t["error"] = json!({"code": -32603, "message": "API rate limit exceeded"});
        t
    }));
    let s = Session::connect_shared(t, extension_config())
        .await
        .unwrap();
    let err = s.call_tool("job", json!({})).await.unwrap_err();
    let SessionError::TaskFailed { error, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(error.as_ref().unwrap().code, -32603);
    let err = s.list_tasks().await.unwrap_err();
    assert!(err.to_string().contains("no list"), "{err}");

    let (t, fake) = start(extension_server(true, |_| {
        detailed_task("m-1", "cancelled")
    }));
    let s = Session::connect_shared(t, extension_config())
        .await
        .unwrap();
    let TaskCall::Task(mut handle) = s
        .call_tool_as_task("job", json!({}), CallOptions::new())
        .await
        .unwrap()
    else {
        panic!()
    };
    handle.cancel().await.unwrap();
    let err = handle.wait(Duration::from_secs(5)).await.unwrap_err();
    assert!(matches!(err, SessionError::TaskCancelled { .. }), "{err}");
    assert_eq!(count(&fake, "tasks/cancel"), 1);

    // No extension on the server: nothing is sent.
    let (t, fake) = start(extension_server(false, |_| completed(1)));
    let s = Session::connect_shared(t, extension_config())
        .await
        .unwrap();
    let err = s
        .call_tool_as_task("job", json!({}), CallOptions::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains(TASKS_EXT), "{err}");
    assert_eq!(fake.methods(), ["server/discover"]);

    // A client that leaves the extension out gets plain results.
    let (t, fake) = start(extension_server(true, |_| completed(1)));
    let s = Session::connect_shared(t, extension_config().tasks_extension(false))
        .await
        .unwrap();
    let result = s.call_tool("job", json!({})).await.unwrap();
    assert_eq!(result.structured_content, Some(json!({"n": 0})));
    assert_eq!(count(&fake, "tasks/get"), 0);
}
