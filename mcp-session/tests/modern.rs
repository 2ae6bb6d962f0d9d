//! The 2026-07-28 lifecycle against scripted peers: discover, the stdio
//! probe and its fallback, per-request `_meta`, multi-round-trip results,
//! cache hints.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stack_jsonrpc::{ErrorObject, Message, RawValue, Request};
use mcp_stack_session::protocol::meta::{
    CLIENT_INFO as META_CLIENT_INFO, PROTOCOL_VERSION as META_PROTOCOL_VERSION,
};
use mcp_stack_session::{
    ClientHandler, ProtocolMode, ProtocolVersion, Session, SessionConfig, SessionError,
};
use mcp_stack_transport::{BoxFuture, Transport};
use serde_json::{Value, json};

use common::{Reply, init_result, params, start};

fn discover_result(ttl: Option<u64>) -> Value {
    let mut r = json!({
        "resultType": "complete",
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"tools": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-fake", "version": "2.0"}},
        "instructions": "modern"
    });
    if let Some(ttl) = ttl {
        r["ttlMs"] = json!(ttl);
    }
    r
}

fn echo_tools(ttl: Option<u64>) -> Value {
    let mut r = json!({"resultType": "complete", "tools": [{"name": "echo", "inputSchema": {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]});
    if let Some(ttl) = ttl {
        r["ttlMs"] = json!(ttl);
        r["cacheScope"] = json!("public");
    }
    r
}

/// A modern-only server: every request must carry `_meta`.
fn discover_server(
    list_ttl: Option<u64>,
    call: impl Fn(&Value) -> Reply + Send + Sync + 'static,
) -> common::Script {
    Arc::new(move |r: &Request| {
        let p = params(r);
        if p["_meta"][META_PROTOCOL_VERSION] != "2026-07-28" {
            return Reply::Err(-32022, "Unsupported protocol version");
        }
        match r.method.as_str() {
            "server/discover" => Reply::Ok(discover_result(Some(60_000))),
            "tools/list" => Reply::Ok(echo_tools(list_ttl)),
            "tools/call" => call(&p),
            _ => Reply::Err(-32601, "method not found"),
        }
    })
}

fn config(mode: ProtocolMode) -> SessionConfig {
    SessionConfig::new()
        .protocol(mcp_stack_session::ProtocolPin::Mode(mode))
        .server_name("fake")
}

fn echo_reply(p: &Value) -> Reply {
    Reply::Ok(json!({"resultType": "complete",
        "content": [{"type": "text", "text": p["arguments"]["text"]}]}))
}

#[tokio::test]
async fn a_discovered_session_sends_meta_on_every_request() {
    let (t, fake) = start(discover_server(None, echo_reply));
    let s = Session::connect_shared(t, config(ProtocolMode::Discover))
        .await
        .unwrap();
    assert_eq!(s.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(s.server().server_info.name, "modern-fake");
    assert_eq!(s.server().instructions.as_deref(), Some("modern"));
    let r = s.call_tool("echo", json!({"text": "hi"})).await.unwrap();
    assert_eq!(r.text(), "hi");
    s.ping().await.unwrap();
    assert_eq!(
        fake.methods(),
        [
            "server/discover",
            "tools/list",
            "tools/call",
            "server/discover"
        ],
        "no initialize, no initialized, no ping"
    );
    for m in fake.seen.lock().unwrap().iter() {
        let Message::Request(r) = m else {
            panic!("{m:?}")
        };
        let p = params(r);
        assert_eq!(
            p["_meta"][META_PROTOCOL_VERSION], "2026-07-28",
            "{}",
            r.method
        );
        assert_eq!(p["_meta"][META_CLIENT_INFO]["name"], "mcp-client-rs");
        assert!(p["_meta"]["io.modelcontextprotocol/clientCapabilities"].is_object());
    }
}

#[tokio::test]
async fn auto_mode_falls_back_on_a_legacy_error() {
    let (t, fake) = start(Arc::new(|r: &Request| match r.method.as_str() {
        "initialize" => Reply::Ok(init_result("2025-06-18", json!({"tools": {}}))),
        "tools/list" => Reply::Ok(json!({"tools": []})),
        // What a legacy server says to an unknown method before initialize.
        _ => Reply::Err(-32601, "Method not found"),
    }));
    let s = Session::connect_shared(t, config(ProtocolMode::Auto))
        .await
        .unwrap();
    assert_eq!(s.protocol_version(), ProtocolVersion::V2025_06_18);
    s.list_tools().await.unwrap();
    assert_eq!(
        fake.methods(),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list"
        ]
    );
    let seen = fake.seen.lock().unwrap().clone();
    let Message::Request(list) = &seen[3] else {
        panic!()
    };
    assert!(
        params(list).get("_meta").is_none(),
        "no modern _meta on a legacy session"
    );
}

#[tokio::test(start_paused = true)]
async fn auto_mode_falls_back_when_the_probe_goes_unanswered() {
    let (t, fake) = start(Arc::new(|r: &Request| match r.method.as_str() {
        "initialize" => Reply::Ok(init_result("2025-11-25", json!({}))),
        _ => Reply::Silence,
    }));
    let started = tokio::time::Instant::now();
    let s = Session::connect_shared(t, config(ProtocolMode::Auto))
        .await
        .unwrap();
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(3),
        "the probe timeout"
    );
    assert_eq!(s.protocol_version(), ProtocolVersion::V2025_11_25);
    assert!(
        !fake
            .methods()
            .contains(&"notifications/cancelled".to_string())
    );
}

#[tokio::test]
async fn auto_mode_stays_on_discovery_with_a_discovering_server() {
    let (t, fake) = start(discover_server(None, echo_reply));
    let s = Session::connect_shared(t, config(ProtocolMode::Auto))
        .await
        .unwrap();
    assert!(!s.protocol_version().has_handshake());
    assert_eq!(fake.methods(), ["server/discover"]);
}

#[tokio::test]
async fn unsupported_version_error_picks_a_listed_handshake_version() {
    let (t, fake) = start(Arc::new(|r: &Request| match r.method.as_str() {
        "server/discover" => Reply::ErrData(
            -32022,
            "Unsupported protocol version",
            json!({"supported": ["2025-06-18"], "requested": "2026-07-28"}),
        ),
        "initialize" => {
            assert_eq!(params(r)["protocolVersion"], "2025-06-18");
            Reply::Ok(init_result("2025-06-18", json!({})))
        }
        _ => Reply::Silence,
    }));
    let s = Session::connect_shared(t, config(ProtocolMode::Auto))
        .await
        .unwrap();
    assert_eq!(s.protocol_version(), ProtocolVersion::V2025_06_18);
    assert_eq!(fake.methods()[..2], ["server/discover", "initialize"]);

    // Nothing in common: a clear mismatch, no handshake.
    let (t, fake) = start(Arc::new(|r: &Request| match r.method.as_str() {
        "server/discover" => {
            Reply::ErrData(-32022, "Unsupported", json!({"supported": ["2099-01-01"]}))
        }
        _ => Reply::Silence,
    }));
    let err = Session::connect_shared(t, config(ProtocolMode::Auto))
        .await
        .unwrap_err();
    assert!(matches!(err, SessionError::VersionMismatch { .. }), "{err}");
    assert!(err.to_string().contains("2099-01-01"));
    assert_eq!(fake.methods(), ["server/discover"]);
}

#[tokio::test]
async fn discover_only_refuses_a_handshake_server_clearly() {
    let (t, fake) = start(Arc::new(|_: &Request| {
        Reply::Err(-32601, "Method not found")
    }));
    let err = Session::connect_shared(t, config(ProtocolMode::Discover))
        .await
        .unwrap_err();
    assert!(matches!(err, SessionError::LegacyServer { .. }), "{err}");
    assert!(err.to_string().contains("legacy or auto"), "{err}");
    assert_eq!(fake.methods(), ["server/discover"]);
}

/// Answers elicitation with a fixed name, and counts what it was asked.
struct Answers(Mutex<Vec<String>>);

impl ClientHandler for Answers {
    fn handle<'a>(
        &'a self,
        method: &'a str,
        _params: Option<&'a RawValue>,
    ) -> BoxFuture<'a, Option<Result<Value, ErrorObject>>> {
        self.0.lock().unwrap().push(method.to_string());
        Box::pin(async move {
            (method == "elicitation/create")
                .then(|| Ok(json!({"action": "accept", "content": {"name": "octocat"}})))
        })
    }
}

#[tokio::test]
async fn input_required_results_are_answered_and_retried() {
    let (t, fake) = start(discover_server(None, |p| {
        if p.get("inputResponses").is_none() {
            return Reply::Ok(json!({
                "resultType": "input_required",
                "inputRequests": {"login": {"method": "elicitation/create", "params": {
                    "mode": "form", "message": "who?", "requestedSchema": {"type": "object"}}}},
                "requestState": "opaque-🔒-state"
            }));
        }
        let name = p["inputResponses"]["login"]["content"]["name"]
            .as_str()
            .unwrap_or("?");
        Reply::Ok(
            json!({"resultType": "complete", "content": [{"type": "text", "text": format!("hello {name}")}]}),
        )
    }));
    let handler = Arc::new(Answers(Mutex::new(Vec::new())));
    let cfg = config(ProtocolMode::Discover).handler(handler.clone());
    let s = Session::connect_shared(t, cfg).await.unwrap();
    let r = s.call_tool("echo", json!({"text": "x"})).await.unwrap();
    assert_eq!(r.text(), "hello octocat");
    assert_eq!(*handler.0.lock().unwrap(), ["elicitation/create"]);

    let seen = fake.seen.lock().unwrap().clone();
    let calls: Vec<&Request> = seen
        .iter()
        .filter_map(|m| match m {
            Message::Request(r) if r.method == "tools/call" => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0].id, calls[1].id, "the retry has a new id");
    let (first, retry) = (params(calls[0]), params(calls[1]));
    assert_eq!(first["name"], retry["name"]);
    assert_eq!(
        first["arguments"], retry["arguments"],
        "the original params"
    );
    assert_eq!(retry["requestState"], "opaque-🔒-state", "echoed unchanged");
    assert!(first.get("requestState").is_none());
    assert_eq!(retry["_meta"][META_PROTOCOL_VERSION], "2026-07-28");
}

#[tokio::test]
async fn without_a_handler_elicitation_is_declined_and_rounds_are_bounded() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let a2 = Arc::clone(&asked);
    let (t, _fake) = start(discover_server(None, move |p| {
        a2.lock().unwrap().push(p.get("inputResponses").cloned());
        // Never satisfied, and no requestState: the client must not invent one.
        assert!(p.get("requestState").is_none());
        Reply::Ok(
            json!({"resultType": "input_required", "inputRequests": {"q": {
            "method": "elicitation/create", "params": {"message": "?", "requestedSchema": {"type": "object"}}}}}),
        )
    }));
    let cfg = config(ProtocolMode::Discover).max_input_rounds(3);
    let s = Session::connect_shared(t, cfg).await.unwrap();
    let err = s.call_tool("echo", json!({"text": "x"})).await.unwrap_err();
    assert!(err.to_string().contains("after 3 rounds"), "{err}");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 4, "the first call and three retries");
    assert_eq!(asked[1], Some(json!({"q": {"action": "decline"}})));
}

#[tokio::test]
async fn input_required_is_a_2026_answer_only() {
    // A 2025-11-25 server that answers a call with an input round: that
    // revision has none, so the call is not sent again (its arguments are
    // not kept for it) and the error names the revision.
    let calls = Arc::new(Mutex::new(0usize));
    let c2 = Arc::clone(&calls);
    let (t, _fake) = start(common::tools_server(move |r| {
        (r.method == "tools/call").then(|| {
            *c2.lock().unwrap() += 1;
            Reply::Ok(json!({"resultType": "input_required", "inputRequests": {"q": {
                "method": "elicitation/create", "params": {"message": "?", "requestedSchema": {"type": "object"}}}}}))
        })
    }));
    let s = Session::connect_shared(t, common::config()).await.unwrap();
    assert_eq!(s.protocol_version(), ProtocolVersion::V2025_11_25);
    let err = s.call_tool("echo", json!({"text": "x"})).await.unwrap_err();
    assert!(matches!(err, SessionError::InvalidResponse { .. }), "{err}");
    assert!(err.to_string().contains("2025-11-25"), "{err}");
    assert_eq!(*calls.lock().unwrap(), 1, "sent once, not again");
}

#[tokio::test]
async fn sampling_without_a_handler_is_an_error_not_a_guess() {
    let (t, _fake) = start(discover_server(None, |_| {
        Reply::Ok(
            json!({"resultType": "input_required", "inputRequests": {"s": {
            "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}}}),
        )
    }));
    let s = Session::connect_shared(t, config(ProtocolMode::Discover))
        .await
        .unwrap();
    let err = s.call_tool("echo", json!({"text": "x"})).await.unwrap_err();
    assert!(matches!(err, SessionError::InputRequest { .. }), "{err}");
    assert!(err.to_string().contains("sampling/createMessage"));
}

#[tokio::test(start_paused = true)]
async fn list_ttl_drives_the_catalog_cache() {
    let (t, fake) = start(discover_server(Some(1_000), echo_reply));
    let s = Session::connect_shared(t, config(ProtocolMode::Discover))
        .await
        .unwrap();
    let lists = || fake.methods().iter().filter(|m| *m == "tools/list").count();
    s.list_tools().await.unwrap();
    s.list_tools().await.unwrap();
    assert_eq!(lists(), 1, "fresh for 1 s");
    tokio::time::sleep(Duration::from_millis(1_001)).await;
    // A call only needs the schemas: it does not refetch a catalog past its TTL.
    s.call_tool("echo", json!({"text": "x"})).await.unwrap();
    assert_eq!(lists(), 1);
    s.list_tools().await.unwrap();
    assert_eq!(lists(), 2, "stale after the TTL");
}

#[tokio::test]
async fn missing_ttl_means_immediately_stale_on_2026_07_28() {
    let (t, fake) = start(discover_server(None, echo_reply));
    let s = Session::connect_shared(t, config(ProtocolMode::Discover))
        .await
        .unwrap();
    s.list_tools().await.unwrap();
    s.list_tools().await.unwrap();
    assert_eq!(
        fake.methods().iter().filter(|m| *m == "tools/list").count(),
        2
    );
}

#[tokio::test]
async fn discover_error_codes_are_explained() {
    let (t, _fake) = start(discover_server(None, |_| {
        Reply::ErrData(
            -32021,
            "Server requires the elicitation capability",
            json!({"requiredCapabilities": {"elicitation": {}}}),
        )
    }));
    let s = Session::connect_shared(t, config(ProtocolMode::Discover))
        .await
        .unwrap();
    let err = s.call_tool("echo", json!({"text": "x"})).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("client capability") && text.contains("elicitation"),
        "{text}"
    );
    assert_eq!(err.protocol_error().unwrap().code, -32021);
}

#[tokio::test]
async fn a_pinned_2026_07_28_version_means_discover_mode() {
    let (t, fake) = start(discover_server(None, echo_reply));
    let cfg = config(ProtocolMode::Handshake).protocol(mcp_stack_session::ProtocolPin::Version(
        ProtocolVersion::V2026_07_28,
    ));
    let s = Session::connect_shared(t as Arc<dyn Transport>, cfg)
        .await
        .unwrap();
    assert!(!s.protocol_version().has_handshake());
    assert_eq!(fake.methods(), ["server/discover"]);
}

fn on_subscription(method: &str, subscription: &Value, mut params: Value) -> Message {
    params["_meta"] = json!({"io.modelcontextprotocol/subscriptionId": subscription});
    Message::from(mcp_stack_jsonrpc::Notification::new(
        method,
        Some(mcp_stack_jsonrpc::to_raw(&params).unwrap()),
    ))
}

/// A modern server whose `subscriptions/listen` acknowledges, sends a tool
/// list change (and one for another subscription), then `end`s or stays open.
fn listening_server(end: bool) -> common::Script {
    let tools_lists = Arc::new(Mutex::new(0));
    Arc::new(move |r: &Request| {
        let p = params(r);
        match r.method.as_str() {
            "server/discover" => Reply::Ok(discover_result(Some(60_000))),
            "tools/list" => {
                *tools_lists.lock().unwrap() += 1;
                Reply::Ok(echo_tools(Some(60_000)))
            }
            "subscriptions/listen" => {
                assert_eq!(p["_meta"][META_PROTOCOL_VERSION], "2026-07-28");
                let id = serde_json::to_value(&r.id).unwrap();
                let messages = vec![
                    on_subscription(
                        "notifications/subscriptions/acknowledged",
                        &id,
                        json!({"notifications": {"toolsListChanged": true}}),
                    ),
                    on_subscription(
                        "notifications/resources/updated",
                        &json!(999),
                        json!({"uri": "x"}),
                    ),
                    on_subscription("notifications/tools/list_changed", &id, json!({})),
                ];
                if end {
                    Reply::Then(
                        messages,
                        json!({"resultType": "complete",
                        "_meta": {"io.modelcontextprotocol/subscriptionId": id}}),
                    )
                } else {
                    Reply::Only(messages)
                }
            }
            _ => Reply::Err(-32601, "method not found"),
        }
    })
}

#[tokio::test]
async fn listen_yields_its_own_notifications_and_a_graceful_end() {
    use mcp_stack_session::subscriptions::SubscriptionFilter;
    let (t, fake) = start(listening_server(true));
    let s = Session::connect_shared(t, config(ProtocolMode::Discover))
        .await
        .unwrap();
    s.list_tools().await.unwrap();
    let filter = SubscriptionFilter::new()
        .tools_list_changed()
        .resource("file:///a");
    let mut sub = s.listen(filter).await.unwrap();
    let listen = fake
        .seen
        .lock()
        .unwrap()
        .iter()
        .find_map(|m| match m {
            Message::Request(r) if r.method == "subscriptions/listen" => Some(params(r)),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        listen["notifications"],
        json!({"toolsListChanged": true, "resourceSubscriptions": ["file:///a"]})
    );
    // The server agreed to less than was asked.
    assert_eq!(
        sub.acknowledged(),
        &SubscriptionFilter::new().tools_list_changed()
    );
    // Another subscription's notification is not ours.
    let first = sub.next().await.unwrap().unwrap();
    assert!(
        matches!(
            first,
            mcp_stack_session::ServerNotification::ToolsListChanged
        ),
        "{first:?}"
    );
    assert!(sub.next().await.unwrap().is_none(), "a graceful end");
    // The change marked the catalog stale, cache hints notwithstanding.
    s.list_tools().await.unwrap();
    let lists = fake.methods().iter().filter(|m| *m == "tools/list").count();
    assert_eq!(lists, 2);
}

#[tokio::test]
async fn dropping_a_subscription_cancels_its_request() {
    use mcp_stack_session::subscriptions::SubscriptionFilter;
    let (t, fake) = start(listening_server(false));
    let s = Session::connect_shared(t, config(ProtocolMode::Discover))
        .await
        .unwrap();
    let mut sub = s
        .listen(SubscriptionFilter::new().tools_list_changed())
        .await
        .unwrap();
    assert!(sub.next().await.unwrap().is_some());
    let id = serde_json::to_value(sub.id()).unwrap();
    drop(sub);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let cancelled = fake.seen.lock().unwrap().iter().any(|m| {
            m.method() == Some("notifications/cancelled")
                && matches!(m, Message::Notification(n)
                    if serde_json::from_str::<Value>(n.params.as_ref().unwrap().get()).unwrap()["requestId"] == id)
        });
        if cancelled {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no cancellation sent"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(s.in_flight(), 0);
}

#[tokio::test]
async fn listen_on_a_legacy_session_grants_what_the_server_declares() {
    use mcp_stack_session::subscriptions::SubscriptionFilter;
    // Tools without listChanged, no resources: nothing can be granted.
    let (t, fake) = start(Arc::new(|r: &Request| match r.method.as_str() {
        "initialize" => Reply::Ok(init_result("2025-11-25", json!({"tools": {}}))),
        _ => Reply::Ok(json!({})),
    }));
    let s = Session::connect_shared(t, config(ProtocolMode::Handshake))
        .await
        .unwrap();
    let sub = s
        .listen(
            SubscriptionFilter::new()
                .tools_list_changed()
                .resource("file:///a"),
        )
        .await
        .unwrap();
    assert_eq!(sub.acknowledged(), &SubscriptionFilter::new());
    // Nothing went out: no listen, no subscribe the server cannot take.
    let sent: Vec<String> = fake
        .methods()
        .into_iter()
        .filter(|m| m != "initialize" && m != "notifications/initialized")
        .collect();
    assert!(sent.is_empty(), "{sent:?}");
    // The connection ends: so does the subscription, with the reason.
    use mcp_stack_transport::Transport as _;
    fake.server.close().await;
    let mut sub = sub;
    let end = tokio::time::timeout(Duration::from_secs(10), sub.next())
        .await
        .expect("the subscription ends when the connection does");
    assert!(end.is_err(), "{end:?}");
}

#[tokio::test]
async fn listen_on_a_legacy_session_subscribes_routes_and_unsubscribes() {
    use mcp_stack_session::subscriptions::SubscriptionFilter;
    let (t, fake) = start(Arc::new(|r: &Request| match r.method.as_str() {
        "initialize" => Reply::Ok(init_result(
            "2025-11-25",
            json!({"tools": {"listChanged": true},
                   "resources": {"subscribe": true, "listChanged": true}}),
        )),
        _ => Reply::Ok(json!({})),
    }));
    let s = Session::connect_shared(t, config(ProtocolMode::Handshake))
        .await
        .unwrap();
    let mut sub = s
        .listen(
            SubscriptionFilter::new()
                .tools_list_changed()
                .prompts_list_changed()
                .resource("file:///a"),
        )
        .await
        .unwrap();
    // Prompts are not declared: not granted.
    assert_eq!(
        sub.acknowledged(),
        &SubscriptionFilter::new()
            .tools_list_changed()
            .resource("file:///a")
    );
    assert_eq!(
        fake.methods()
            .iter()
            .filter(|m| *m == "resources/subscribe")
            .count(),
        1
    );
    let send = |method: &str, params: Value| {
        Message::from(mcp_stack_jsonrpc::Notification::new(
            method,
            Some(mcp_stack_jsonrpc::to_raw(&params).unwrap()),
        ))
    };
    use mcp_stack_transport::Transport as _;
    // Another resource's update is not ours; ours and the list change are.
    for m in [
        send(
            "notifications/resources/updated",
            json!({"uri": "file:///b"}),
        ),
        send(
            "notifications/resources/updated",
            json!({"uri": "file:///a"}),
        ),
        send("notifications/tools/list_changed", json!({})),
    ] {
        fake.server.send(&m).await.unwrap();
    }
    let first = sub.next().await.unwrap().unwrap();
    assert!(
        matches!(&first, mcp_stack_session::ServerNotification::ResourceUpdated(u) if u.uri == "file:///a"),
        "{first:?}"
    );
    let second = sub.next().await.unwrap().unwrap();
    assert!(
        matches!(
            second,
            mcp_stack_session::ServerNotification::ToolsListChanged
        ),
        "{second:?}"
    );
    // Dropping it unsubscribes (wait, bounded, for the request to arrive).
    drop(sub);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !fake.methods().iter().any(|m| m == "resources/unsubscribe") {
        assert!(std::time::Instant::now() < deadline, "no unsubscribe");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The memory transport, presented as streamable HTTP, keeping what each
/// send was given to mirror into headers.
#[derive(Debug)]
struct AsHttp {
    inner: Arc<mcp_stack_transport::memory::MemoryTransport>,
    contexts: Mutex<Vec<(String, mcp_stack_transport::SendContext)>>,
}

impl AsHttp {
    fn over(inner: Arc<mcp_stack_transport::memory::MemoryTransport>) -> Arc<AsHttp> {
        Arc::new(AsHttp {
            inner,
            contexts: Mutex::new(Vec::new()),
        })
    }
}

impl Transport for AsHttp {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        context: &'a mcp_stack_transport::SendContext,
    ) -> BoxFuture<'a, Result<(), mcp_stack_transport::TransportError>> {
        self.contexts.lock().unwrap().push((
            message.method().unwrap_or_default().to_owned(),
            context.clone(),
        ));
        self.inner.send(message)
    }
    fn recv(
        &self,
    ) -> BoxFuture<'_, Result<mcp_stack_transport::Received, mcp_stack_transport::TransportError>>
    {
        self.inner.recv()
    }
    fn close(&self) -> BoxFuture<'_, ()> {
        self.inner.close()
    }
    fn kind(&self) -> mcp_stack_transport::TransportKind {
        mcp_stack_transport::TransportKind::StreamableHttp
    }
}

fn annotated_tools() -> Value {
    json!({"resultType": "complete", "ttlMs": 60_000, "tools": [
        {"name": "route", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"}}}},
        {"name": "bad", "inputSchema": {"type": "object", "properties": {
            "ratio": {"type": "number", "x-mcp-header": "Ratio"}}}}
    ]})
}

#[tokio::test]
async fn over_http_annotated_arguments_become_headers_and_invalid_tools_are_dropped() {
    let calls = Arc::new(Mutex::new(0));
    let c = Arc::clone(&calls);
    let (t, fake) = start(Arc::new(move |r: &Request| match r.method.as_str() {
        "server/discover" => Reply::Ok(discover_result(Some(60_000))),
        "tools/list" => Reply::Ok(annotated_tools()),
        "tools/call" => {
            let mut n = c.lock().unwrap();
            *n += 1;
            if *n == 1 {
                // The server wants a header the client did not send.
                Reply::Err(-32020, "Header mismatch: Mcp-Param-Region missing")
            } else {
                Reply::Ok(json!({"resultType": "complete", "content": []}))
            }
        }
        _ => Reply::Err(-32601, "method not found"),
    }));
    let http = AsHttp::over(t);
    let s = Session::connect_shared(http.clone(), config(ProtocolMode::Discover))
        .await
        .unwrap();
    let catalog = s.list_tools().await.unwrap();
    let names: Vec<&str> = catalog.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["route"]);
    assert!(
        catalog.diagnostics()[0].contains("`bad` left out")
            && catalog.diagnostics()[0].contains("number"),
        "{:?}",
        catalog.diagnostics()
    );
    s.call_tool("route", json!({"region": "eu-west", "query": "q"}))
        .await
        .unwrap();
    let calls: Vec<mcp_stack_transport::SendContext> = http
        .contexts
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "tools/call")
        .map(|(_, c)| c.clone())
        .collect();
    assert_eq!(calls.len(), 2, "a header mismatch is retried once");
    for c in &calls {
        assert_eq!(
            c.param_headers(),
            &[("Region".to_string(), "eu-west".to_string())]
        );
    }
    // The retry came after fetching the tool list again.
    let methods = fake.methods();
    let last_list = methods.iter().rposition(|m| m == "tools/list").unwrap();
    let first_call = methods.iter().position(|m| m == "tools/call").unwrap();
    assert!(last_list > first_call, "{methods:?}");
}

/// The schema of `route` as the server lists it: before its change, and after
/// (a new required argument, a header on it, and a different output shape).
fn route_tools(changed: bool) -> Value {
    let (input, output) = if changed {
        (
            json!({"type": "object", "required": ["region"], "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}}}),
            json!({"type": "object", "required": ["zone"], "properties": {"zone": {"type": "string"}}}),
        )
    } else {
        (
            json!({"type": "object", "properties": {"region": {"type": "string"}}}),
            json!({"type": "object", "required": ["count"], "properties": {"count": {"type": "integer"}}}),
        )
    };
    json!({"resultType": "complete", "ttlMs": 60_000, "tools": [
        {"name": "route", "inputSchema": input, "outputSchema": output}]})
}

/// A modern server whose `route` tool changed after the client listed it: the
/// first call is refused with HeaderMismatch, and the list says what changed.
fn changed_schema_server(listed: Arc<Mutex<usize>>) -> common::Script {
    Arc::new(move |r: &Request| match r.method.as_str() {
        "server/discover" => Reply::Ok(discover_result(Some(60_000))),
        "tools/list" => {
            let mut n = listed.lock().unwrap();
            *n += 1;
            Reply::Ok(route_tools(*n > 1))
        }
        "tools/call" if *listed.lock().unwrap() == 1 => {
            Reply::Err(-32020, "Header mismatch: Mcp-Param-Region missing")
        }
        "tools/call" => Reply::Ok(json!({"resultType": "complete", "content": [],
            "structuredContent": {"zone": "eu-west-1a"}})),
        _ => Reply::Err(-32601, "method not found"),
    })
}

#[tokio::test]
async fn after_a_header_mismatch_the_retry_is_checked_against_the_new_schema() {
    // The output is checked against the schema the retry used, not the old one.
    let listed = Arc::new(Mutex::new(0));
    let (t, _fake) = start(changed_schema_server(Arc::clone(&listed)));
    let http = AsHttp::over(t);
    let s = Session::connect_shared(http.clone(), config(ProtocolMode::Discover))
        .await
        .unwrap();
    s.list_tools().await.unwrap();
    let result = s
        .call_tool("route", json!({"region": "eu-west"}))
        .await
        .unwrap();
    assert_eq!(result.structured_content.unwrap()["zone"], "eu-west-1a");
    let headers: Vec<_> = http
        .contexts
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, _)| m == "tools/call")
        .map(|(_, c)| c.param_headers().to_vec())
        .collect();
    assert_eq!(
        headers,
        [vec![], vec![("Region".to_string(), "eu-west".to_string())]],
        "the retry carries the header the new schema asks for"
    );

    // The arguments are checked against the new schema before the retry:
    // one that misses the newly required argument is not sent again.
    let listed = Arc::new(Mutex::new(0));
    let (t, fake) = start(changed_schema_server(Arc::clone(&listed)));
    let http = AsHttp::over(t);
    let s = Session::connect_shared(http, config(ProtocolMode::Discover))
        .await
        .unwrap();
    s.list_tools().await.unwrap();
    let err = s.call_tool("route", json!({})).await.unwrap_err();
    assert!(
        matches!(&err, SessionError::InvalidArguments { problems, .. }
            if problems.iter().any(|p| p.message.contains("region"))),
        "{err:?}"
    );
    let calls = fake.methods().iter().filter(|m| *m == "tools/call").count();
    assert_eq!(
        calls, 1,
        "nothing is sent with arguments the new schema refuses"
    );
}

#[tokio::test]
async fn resource_not_found_is_recognised_under_both_codes() {
    let (t, _fake) = start(Arc::new(|r: &Request| {
        let p = params(r);
        match (r.method.as_str(), p["uri"].as_str()) {
            ("server/discover", _) => Reply::Ok(discover_result(Some(60_000))),
            ("resources/read", Some("file:///new")) => {
                Reply::ErrData(-32602, "Resource not found", json!({"uri": "file:///new"}))
            }
            ("resources/read", Some("file:///old")) => Reply::Err(-32002, "no such thing"),
            ("resources/read", Some("bad uri")) => Reply::Err(-32602, "uri must be absolute"),
            ("resources/read", _) => Reply::Ok(json!({"resultType": "complete",
                "contents": [{"uri": "file:///ok", "text": "hello"}]})),
            _ => Reply::Err(-32601, "method not found"),
        }
    }));
    let s = Session::connect_shared(t, config(ProtocolMode::Discover))
        .await
        .unwrap();
    let ok = s.read_resource("file:///ok").await.unwrap();
    assert_eq!(ok.contents[0].as_text(), Some("hello"));
    for uri in ["file:///new", "file:///old"] {
        let err = s.read_resource(uri).await.unwrap_err();
        assert!(
            matches!(&err, SessionError::ResourceNotFound { uri: u, .. } if u == uri),
            "{err}"
        );
    }
    // Invalid params about something else stay a protocol error.
    let err = s.read_resource("bad uri").await.unwrap_err();
    assert_eq!(err.protocol_error().unwrap().code, -32602);
}

#[tokio::test]
async fn an_unsupported_version_naming_ours_is_retried_once() {
    let discovers = Arc::new(Mutex::new(0));
    let d = Arc::clone(&discovers);
    let (t, _fake) = start(Arc::new(move |r: &Request| match r.method.as_str() {
        "server/discover" => {
            let mut n = d.lock().unwrap();
            *n += 1;
            if *n == 1 {
                Reply::ErrData(
                    -32022,
                    "Unsupported protocol version",
                    json!({"supported": ["2026-07-28"], "requested": "2026-07-28"}),
                )
            } else {
                let mut result = discover_result(None);
                // serverInfo in the body rather than _meta is accepted too.
                result["_meta"] = json!({});
                result["serverInfo"] = json!({"name": "body-info", "version": "1"});
                Reply::Ok(result)
            }
        }
        _ => Reply::Err(-32601, "method not found"),
    }));
    let s = Session::connect_shared(t, config(ProtocolMode::Auto))
        .await
        .unwrap();
    assert_eq!(s.protocol_version(), ProtocolVersion::V2026_07_28);
    assert_eq!(s.server().server_info.name, "body-info");
    assert_eq!(*discovers.lock().unwrap(), 2);
}

#[tokio::test]
async fn a_second_refusal_naming_ours_is_an_error_not_a_loop() {
    let (t, fake) = start(Arc::new(|_: &Request| {
        Reply::ErrData(
            -32022,
            "Unsupported protocol version",
            json!({"supported": ["2026-07-28"]}),
        )
    }));
    let err = Session::connect_shared(t, config(ProtocolMode::Discover))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("refused"), "{err}");
    assert_eq!(fake.methods(), ["server/discover", "server/discover"]);
}

#[tokio::test]
async fn a_subscriber_that_falls_behind_keeps_the_newest_and_the_loss_is_counted() {
    use mcp_stack_session::subscriptions::SubscriptionFilter;
    // 1,000 notifications while nobody reads: the queue keeps the newest 256.
    let flood = 1000usize;
    let (t, _fake) = start(Arc::new(move |r: &Request| match r.method.as_str() {
        "server/discover" => Reply::Ok(discover_result(Some(60_000))),
        "subscriptions/listen" => {
            let id = serde_json::to_value(&r.id).unwrap();
            let mut messages = vec![on_subscription(
                "notifications/subscriptions/acknowledged",
                &id,
                json!({"notifications": {"resourceSubscriptions": ["file:///log"]}}),
            )];
            for n in 0..flood {
                messages.push(on_subscription(
                    "notifications/resources/updated",
                    &id,
                    json!({"uri": format!("file:///log#{n}")}),
                ));
            }
            Reply::Then(
                messages,
                json!({"resultType": "complete",
                    "_meta": {"io.modelcontextprotocol/subscriptionId": id}}),
            )
        }
        _ => Reply::Err(-32601, "method not found"),
    }));
    let s = Session::connect_shared(t, config(ProtocolMode::Discover))
        .await
        .unwrap();
    let mut sub = s
        .listen(SubscriptionFilter::new().resource("file:///log"))
        .await
        .unwrap();
    // Wait (up to 10 s) for the reader to have routed all of them and the
    // end (which, the queue being full, pushes out one more).
    let expected_dropped = (flood - 255) as u64;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while s.diagnostics().dropped_notifications < expected_dropped {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            s.diagnostics()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut kept = Vec::new();
    while let Some(event) = sub.next().await.unwrap() {
        if let mcp_stack_session::ServerNotification::ResourceUpdated(update) = event {
            kept.push(update.uri);
        }
    }
    // 256 items in all: the newest 255 notifications and the end, which is
    // never dropped (it made room for itself).
    assert_eq!(kept.len(), 255);
    assert_eq!(
        kept.first().unwrap(),
        &format!("file:///log#{}", flood - 255)
    );
    assert_eq!(kept.last().unwrap(), &format!("file:///log#{}", flood - 1));
    assert_eq!(
        s.diagnostics().dropped_notifications,
        (flood - kept.len()) as u64,
        "every notification is either kept or counted"
    );
}
