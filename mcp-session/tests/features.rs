#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! Resources, prompts and completion through a `Session`, against a
//! scripted peer: paging and its guards, caching and `list_changed`, the
//! capability checks and prompt argument checks that keep a request from
//! going out, and the wire form of each request.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp_stack_jsonrpc::{Message, Notification, Request, to_raw};
use mcp_stack_session::types::{CompletionReference, ResourceContents};
use mcp_stack_session::{ServerNotification, Session, SessionConfig, SessionError};
use mcp_stack_transport::Transport as _;
use serde_json::{Value, json};

use common::{Reply, Script, init_result, params, start};

fn config() -> SessionConfig {
    SessionConfig::new()
        .server_name("fake")
        .protocol(mcp_stack_session::ProtocolPin::Mode(
            mcp_stack_session::ProtocolMode::Handshake,
        ))
}

fn all_caps() -> Value {
    json!({"resources": {"subscribe": true, "listChanged": true},
           "prompts": {"listChanged": true}, "completions": {}})
}

/// A server with two pages of resources, one of templates, prompts, and
/// completion; `caps` is what it declares.
fn server(caps: Value) -> Script {
    Arc::new(move |r: &Request| {
        let p = params(r);
        match r.method.as_str() {
            "initialize" => Reply::Ok(init_result("2025-11-25", caps.clone())),
            "resources/list" => match p["cursor"].as_str() {
                None => Reply::Ok(json!({
                    "resources": [{"uri": "test://a", "name": "a", "mimeType": "text/plain"}],
                    "nextCursor": "page2"
                })),
                Some("page2") => Reply::Ok(json!({
                    "resources": [{"uri": "test://b", "name": "b", "size": 3}]
                })),
                Some(_) => Reply::Err(-32602, "bad cursor"),
            },
            "resources/templates/list" => Reply::Ok(json!({
                "resourceTemplates": [{"uriTemplate": "test://greeting/{name}", "name": "greeting"}]
            })),
            "resources/read" => Reply::Ok(json!({"contents": [
                {"uri": p["uri"], "text": "hello"},
                {"uri": p["uri"], "blob": "AAEC", "mimeType": "application/octet-stream"}
            ]})),
            "resources/subscribe" | "resources/unsubscribe" => Reply::Ok(json!({})),
            "prompts/list" => Reply::Ok(json!({"prompts": [{
                "name": "review",
                "arguments": [{"name": "code", "required": true}, {"name": "style"}]
            }]})),
            "prompts/get" => Reply::Ok(json!({
                "description": "a review",
                "messages": [{"role": "user", "content": {"type": "text",
                    "text": format!("review {}", p["arguments"]["code"].as_str().unwrap_or("?"))}}]
            })),
            "completion/complete" => Reply::Ok(json!({
                "completion": {"values": ["concise"], "total": 1, "hasMore": false}
            })),
            _ => Reply::Err(-32601, "method not found"),
        }
    })
}

fn count(fake: &common::Fake, method: &str) -> usize {
    fake.methods().iter().filter(|m| *m == method).count()
}

fn notification(method: &str, params: Value) -> Message {
    Message::from(Notification::new(method, Some(to_raw(&params).unwrap())))
}

#[tokio::test]
async fn resources_are_listed_across_pages_and_cached() {
    let (t, fake) = start(server(all_caps()));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let resources = s.list_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["test://a", "test://b"]);
    assert_eq!(resources[0].mime_type.as_deref(), Some("text/plain"));
    assert_eq!(resources[1].size, Some(3));
    // Cached: no second fetch.
    s.list_resources().await.unwrap();
    assert_eq!(count(&fake, "resources/list"), 2, "two pages, once");
    let templates = s.list_resource_templates().await.unwrap();
    assert_eq!(templates[0].variables(), ["name"]);
    // Read: text and blob, the blob decoded only when asked.
    let read = s.read_resource("test://a").await.unwrap();
    assert_eq!(read.contents[0].as_text(), Some("hello"));
    let ResourceContents::Blob(blob) = &read.contents[1] else {
        panic!("{:?}", read.contents[1])
    };
    assert_eq!(blob.bytes().unwrap(), [0, 1, 2]);
}

#[tokio::test]
async fn list_changed_invalidates_the_cached_lists() {
    let (t, fake) = start(server(all_caps()));
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel();
    let cfg = config().on_notification(move |n: &ServerNotification| {
        let _ = seen_tx.send(format!("{n:?}"));
    });
    let s = Session::connect_shared(t, cfg).await.unwrap();
    s.list_resources().await.unwrap();
    s.list_resource_templates().await.unwrap();
    s.list_prompts().await.unwrap();
    fake.server
        .send(&notification(
            "notifications/resources/list_changed",
            json!({}),
        ))
        .await
        .unwrap();
    fake.server
        .send(&notification(
            "notifications/prompts/list_changed",
            json!({}),
        ))
        .await
        .unwrap();
    fake.server
        .send(&notification(
            "notifications/resources/updated",
            json!({"uri": "test://a"}),
        ))
        .await
        .unwrap();
    // Wait (bounded) until the reader dispatched all three.
    let mut got = Vec::new();
    while got.len() < 3 {
        let n = tokio::time::timeout(Duration::from_secs(10), seen_rx.recv())
            .await
            .unwrap()
            .unwrap();
        got.push(n);
    }
    assert!(got[0].contains("ResourcesListChanged"), "{got:?}");
    assert!(got[1].contains("PromptsListChanged"), "{got:?}");
    assert!(
        got[2].contains("ResourceUpdated") && got[2].contains("test://a"),
        "{got:?}"
    );
    s.list_resources().await.unwrap();
    s.list_resource_templates().await.unwrap();
    s.list_prompts().await.unwrap();
    assert_eq!(
        count(&fake, "resources/list"),
        4,
        "fetched again, two pages"
    );
    assert_eq!(count(&fake, "resources/templates/list"), 2);
    assert_eq!(count(&fake, "prompts/list"), 2);
}

#[tokio::test]
async fn a_repeated_cursor_stops_the_paging() {
    let script: Script = Arc::new(|r: &Request| match r.method.as_str() {
        "initialize" => Reply::Ok(init_result("2025-11-25", all_caps())),
        "prompts/list" => Reply::Ok(json!({"prompts": [{"name": "p"}], "nextCursor": "same"})),
        _ => Reply::Err(-32601, "method not found"),
    });
    let (t, fake) = start(script);
    let s = Session::connect_shared(t, config()).await.unwrap();
    let err = s.list_prompts().await.unwrap_err();
    assert!(err.to_string().contains("repeated the cursor"), "{err}");
    assert_eq!(count(&fake, "prompts/list"), 2);
}

#[tokio::test]
async fn undeclared_features_fail_without_a_request() {
    let (t, fake) = start(server(json!({"tools": {}})));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let reference = CompletionReference::Prompt {
        name: "review".into(),
    };
    for err in [
        s.list_resources().await.map(|_| ()).unwrap_err(),
        s.list_resource_templates().await.map(|_| ()).unwrap_err(),
        s.subscribe_resource("test://a").await.unwrap_err(),
        s.list_prompts().await.map(|_| ()).unwrap_err(),
        s.get_prompt("review", BTreeMap::<String, String>::new())
            .await
            .map(|_| ())
            .unwrap_err(),
        s.complete(reference, "style", "c", BTreeMap::new())
            .await
            .map(|_| ())
            .unwrap_err(),
    ] {
        assert!(matches!(err, SessionError::NotSupported(_)), "{err}");
    }
    let sent: Vec<String> = fake
        .methods()
        .into_iter()
        .filter(|m| m != "initialize" && m != "notifications/initialized")
        .collect();
    assert!(sent.is_empty(), "nothing went out: {sent:?}");
}

#[tokio::test]
async fn prompt_arguments_are_checked_before_the_request() {
    let (t, fake) = start(server(all_caps()));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let args = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let err = s
        .get_prompt("review", args(&[("style", "terse")]))
        .await
        .unwrap_err();
    let SessionError::InvalidPromptArguments { problems, .. } = &err else {
        panic!("{err}")
    };
    assert!(problems.contains("`code` is required"), "{problems}");
    assert_eq!(count(&fake, "prompts/get"), 0);
    let got = s
        .get_prompt("review", args(&[("code", "x = 1")]))
        .await
        .unwrap();
    assert_eq!(got.messages.len(), 1);
    assert_eq!(got.messages[0].role, "user");
    let sent = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .find_map(|m| match m {
            Message::Request(r) if r.method == "prompts/get" => Some(params(r)),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        sent,
        json!({"name": "review", "arguments": {"code": "x = 1"}})
    );
}

#[tokio::test]
async fn completion_sends_the_reference_argument_and_context() {
    let (t, fake) = start(server(all_caps()));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let completion = s
        .complete(
            CompletionReference::Resource {
                uri: "test://greeting/{name}".into(),
            },
            "name",
            "b",
            [("lang".to_owned(), "en".to_owned())].into(),
        )
        .await
        .unwrap();
    assert_eq!(completion.values, ["concise"]);
    assert_eq!(completion.has_more, Some(false));
    let sent = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .find_map(|m| match m {
            Message::Request(r) if r.method == "completion/complete" => Some(params(r)),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        sent,
        json!({"ref": {"type": "ref/resource", "uri": "test://greeting/{name}"},
               "argument": {"name": "name", "value": "b"},
               "context": {"arguments": {"lang": "en"}}})
    );
}

#[tokio::test]
async fn resource_subscriptions_go_out_when_declared() {
    let (t, fake) = start(server(all_caps()));
    let s = Session::connect_shared(t, config()).await.unwrap();
    s.subscribe_resource("test://a").await.unwrap();
    s.unsubscribe_resource("test://a").await.unwrap();
    assert_eq!(count(&fake, "resources/subscribe"), 1);
    assert_eq!(count(&fake, "resources/unsubscribe"), 1);
    // Declared resources without `subscribe`: refused here.
    let (t, fake) = start(server(json!({"resources": {}})));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let err = s.subscribe_resource("test://a").await.unwrap_err();
    assert!(err.to_string().contains("resources.subscribe"), "{err}");
    assert_eq!(count(&fake, "resources/subscribe"), 0);
}

#[tokio::test]
async fn progress_sent_just_before_the_answer_all_reaches_the_listener() {
    // The server writes every progress notification and the answer at once:
    // the answer must not win over progress still queued for the call.
    let script: Script = Arc::new(|r: &Request| match r.method.as_str() {
        "initialize" => Reply::Ok(init_result("2025-11-25", json!({"tools": {}}))),
        "tools/list" => Reply::Ok(json!({"tools": [
            {"name": "work", "inputSchema": {"type": "object"}}
        ]})),
        "tools/call" => {
            let token = params(r)["_meta"]["progressToken"].clone();
            let steps = (1..=50)
                .map(|i| {
                    Message::from(Notification::new(
                        "notifications/progress",
                        Some(
                            to_raw(&json!({"progressToken": token, "progress": i, "total": 50}))
                                .unwrap(),
                        ),
                    ))
                })
                .collect();
            Reply::Then(
                steps,
                json!({"content": [{"type": "text", "text": "done"}]}),
            )
        }
        _ => Reply::Err(-32601, "method not found"),
    });
    let (t, _fake) = start(script);
    let s = Session::connect_shared(t, config()).await.unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let options = mcp_stack_session::CallOptions::new().on_progress(move |p| {
        log.lock().unwrap().push(p.progress());
    });
    s.call_tool_with("work", json!({}), options).await.unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 50, "{seen:?}");
    assert_eq!(seen.last(), Some(&50.0));
}

#[tokio::test]
async fn a_long_list_is_followed_past_a_hundred_pages() {
    // 10,000 resources in pages of 50: 200 pages, all followed.
    let script: Script = Arc::new(|r: &Request| match r.method.as_str() {
        "initialize" => Reply::Ok(init_result("2025-11-25", all_caps())),
        "resources/list" => {
            let page: usize = params(r)["cursor"]
                .as_str()
                .map_or(0, |c| c.parse().unwrap());
            let resources: Vec<Value> = (page * 50..page * 50 + 50)
                .map(|i| json!({"uri": format!("test://r/{i}"), "name": format!("r{i}")}))
                .collect();
            let next = (page + 1 < 200).then(|| (page + 1).to_string());
            Reply::Ok(json!({"resources": resources, "nextCursor": next}))
        }
        _ => Reply::Err(-32601, "method not found"),
    });
    let (t, fake) = start(script);
    let s = Session::connect_shared(t, config()).await.unwrap();
    assert_eq!(s.list_resources().await.unwrap().len(), 10_000);
    assert_eq!(count(&fake, "resources/list"), 200);
}

/// A server whose `resources/list` never ends: pages of 100 resources, each
/// with a new cursor.
fn endless_resources() -> Script {
    Arc::new(|r: &Request| match r.method.as_str() {
        "initialize" => Reply::Ok(init_result("2025-11-25", all_caps())),
        "resources/list" => {
            let page: usize = params(r)["cursor"]
                .as_str()
                .map_or(0, |c| c.parse().unwrap());
            let resources: Vec<Value> = (page * 100..page * 100 + 100)
                .map(|i| json!({"uri": format!("test://r/{i}"), "name": format!("r{i}")}))
                .collect();
            Reply::Ok(json!({"resources": resources, "nextCursor": (page + 1).to_string()}))
        }
        _ => Reply::Err(-32601, "method not found"),
    })
}

#[tokio::test]
async fn each_list_budget_stops_an_endless_list_and_names_its_setting() {
    use mcp_stack_session::ListBudget;
    // A page of 100 resources is about 3.5 KB of JSON.
    let cases = [
        (config().max_list_items(250), ListBudget::Items, 250, 3),
        (
            config().max_list_bytes(20_000),
            ListBudget::Bytes,
            20_000,
            6,
        ),
        (config().max_list_pages(7), ListBudget::Pages, 7, 7),
    ];
    for (config, expected, limit, requests) in cases {
        let (t, fake) = start(endless_resources());
        let s = Session::connect_shared(t, config).await.unwrap();
        let err = s.list_resources().await.unwrap_err();
        assert_eq!(err.list_budget(), Some(expected), "{err}");
        let SessionError::ListTooLarge {
            method,
            limit: got,
            pages,
            ..
        } = &err
        else {
            panic!("{err}")
        };
        assert_eq!((method.as_str(), *got), ("resources/list", limit));
        assert_eq!(*pages, requests, "{err}");
        assert_eq!(
            count(&fake, "resources/list"),
            requests,
            "paging stopped at the page that went over"
        );
        let message = err.to_string();
        assert!(message.contains(expected.setting()), "{message}");
        assert!(message.contains("resources/list"), "{message}");
        assert!(message.contains(&limit.to_string()), "{message}");
    }
}

#[test]
fn the_list_budgets_default_far_above_real_servers() {
    let c = SessionConfig::default();
    assert_eq!(c.max_list_pages, 1000);
    assert_eq!(c.max_list_bytes, 64 * 1024 * 1024);
    assert_eq!(c.max_list_items, 100_000);
}
