//! Resources, resource templates, subscriptions, prompts and completion,
//! in the legacy, modern (2026-07-28) and dual eras, driven in-process with
//! raw JSON lines.
//!
//! "Not delivered" is checked without waiting: a notification is queued
//! before the answer of the request that caused it, so when the next line
//! is that answer, no notification was sent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::num::NonZeroUsize;
use std::time::Duration;

use mcp_stack_protocol::types::BlobResourceContents;
use mcp_stack_testkit::{Era, PROMPT_NAMES, ServerOptions, serve};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines, ReadHalf, WriteHalf};

struct Peer {
    lines: Lines<BufReader<ReadHalf<tokio::io::DuplexStream>>>,
    write: WriteHalf<tokio::io::DuplexStream>,
    /// Stamps every request with 2026-07-28's `_meta`.
    modern: bool,
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
           "io.modelcontextprotocol/clientCapabilities": {}})
}

impl Peer {
    fn start(options: ServerOptions, modern: bool) -> Peer {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (r, w) = tokio::io::split(server);
        tokio::spawn(serve(options, r, w));
        let (r, write) = tokio::io::split(client);
        Peer {
            lines: BufReader::new(r).lines(),
            write,
            modern,
        }
    }

    async fn legacy(options: ServerOptions) -> Peer {
        let mut peer = Peer::start(options, false);
        let init = peer
            .call(
                0,
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}),
            )
            .await;
        assert!(init["result"].is_object(), "{init}");
        peer.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        peer
    }

    fn modern(mut options: ServerOptions) -> Peer {
        options.era = Era::Modern;
        Peer::start(options, true)
    }

    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.write.write_all(&line).await.unwrap();
    }

    async fn request(&mut self, id: i64, method: &str, mut params: Value) {
        if self.modern {
            params["_meta"] = meta();
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("no line from the server within 30 s")
            .unwrap()
            .expect("end of stream");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a request and reads its answer, which must be the next line.
    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.request(id, method, params).await;
        let answer = self.recv().await;
        assert_eq!(
            answer["id"], id,
            "expected the answer to {method}: {answer}"
        );
        answer
    }

    async fn ok(&mut self, id: i64, method: &str, params: Value) -> Value {
        let answer = self.call(id, method, params).await;
        assert!(answer["result"].is_object(), "{method}: {answer}");
        answer["result"].clone()
    }

    async fn error(&mut self, id: i64, method: &str, params: Value) -> Value {
        let answer = self.call(id, method, params).await;
        assert!(answer["error"].is_object(), "{method}: {answer}");
        answer["error"].clone()
    }

    async fn tool(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        self.ok(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
        .await
    }

    /// Every page of a list, following cursors: the entries and the number of pages.
    async fn list_all(&mut self, method: &str, field: &str) -> (Vec<Value>, usize) {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            pages += 1;
            let r = self.ok(100 + pages as i64, method, params).await;
            all.extend(r[field].as_array().unwrap().iter().cloned());
            match r["nextCursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => return (all, pages),
            }
        }
    }
}

fn paged(page_size: usize, resource_count: usize) -> ServerOptions {
    let mut options = ServerOptions::default();
    options.page_size = NonZeroUsize::new(page_size);
    options.resource_count = resource_count;
    options
}

fn uris(entries: &[Value]) -> Vec<&str> {
    entries.iter().map(|r| r["uri"].as_str().unwrap()).collect()
}

fn text_of(read: &Value) -> &str {
    read["contents"][0]["text"].as_str().unwrap()
}

fn expected_capabilities(caps: &Value) {
    assert_eq!(
        caps["resources"],
        json!({"subscribe": true, "listChanged": true})
    );
    assert_eq!(caps["prompts"], json!({"listChanged": true}));
    assert_eq!(caps["completions"], json!({}));
}

#[tokio::test]
async fn capabilities_are_declared_in_both_lifecycles() {
    let mut peer = Peer::start(ServerOptions::default(), false);
    let init = peer
        .ok(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await;
    expected_capabilities(&init["capabilities"]);
    let mut peer = Peer::modern(ServerOptions::default());
    let discover = peer.ok(1, "server/discover", json!({})).await;
    expected_capabilities(&discover["capabilities"]);
}

#[tokio::test]
async fn resources_are_listed_in_pages_and_read() {
    let mut peer = Peer::legacy(paged(2, 5)).await;
    let (resources, pages) = peer.list_all("resources/list", "resources").await;
    assert_eq!(
        uris(&resources),
        [
            "test://text/1",
            "test://text/2",
            "test://text/3",
            "test://text/4",
            "test://text/5",
            "test://blob/1",
            "test://blob/large"
        ]
    );
    assert_eq!(pages, 4);
    assert_eq!(resources[0]["mimeType"], "text/plain");
    assert_eq!(resources[6]["size"], 1024);

    let e = peer
        .error(1, "resources/list", json!({"cursor": "forged"}))
        .await;
    assert_eq!(e["code"], -32602);
    assert_eq!(e["data"]["field"], "cursor");

    let (templates, pages) = peer
        .list_all("resources/templates/list", "resourceTemplates")
        .await;
    let patterns: Vec<&str> = templates
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert_eq!(patterns, ["test://text/{id}", "test://greeting/{name}"]);
    assert_eq!(pages, 1);

    let r = peer
        .ok(2, "resources/read", json!({"uri": "test://text/2"}))
        .await;
    assert_eq!(r["contents"][0]["uri"], "test://text/2");
    assert_eq!(r["contents"][0]["mimeType"], "text/plain");
    assert_eq!(text_of(&r), "This is text resource 2.");
    assert!(
        r.get("resultType").is_none(),
        "legacy results carry no resultType"
    );

    // A template's URI reads, listed or not.
    let r = peer
        .ok(3, "resources/read", json!({"uri": "test://greeting/bob"}))
        .await;
    assert_eq!(text_of(&r), "Hello, bob!");
    let r = peer
        .ok(4, "resources/read", json!({"uri": "test://text/4242"}))
        .await;
    assert_eq!(text_of(&r), "This is text resource 4242.");

    let r = peer
        .ok(5, "resources/read", json!({"uri": "test://blob/1"}))
        .await;
    let blob: BlobResourceContents = serde_json::from_value(r["contents"][0].clone()).unwrap();
    let bytes = blob.bytes().unwrap();
    assert_eq!(bytes.len(), 8);
    assert!(std::str::from_utf8(&bytes).is_err(), "{bytes:?}");
    assert_eq!(blob.mime_type.as_deref(), Some("application/octet-stream"));

    let e = peer
        .error(6, "resources/read", json!({"uri": "test://nothing/here"}))
        .await;
    assert_eq!(e["code"], -32002);
    assert_eq!(e["message"], "Resource not found");
    assert_eq!(e["data"]["uri"], "test://nothing/here");

    let e = peer.error(7, "resources/read", json!({})).await;
    assert_eq!(
        (e["code"].clone(), e["data"]["field"].clone()),
        (json!(-32602), json!("uri"))
    );
}

#[tokio::test]
async fn the_large_blob_has_the_size_asked_for() {
    let mut options = ServerOptions::default();
    options.blob_bytes = 100_000;
    let mut peer = Peer::legacy(options).await;
    let r = peer
        .ok(1, "resources/read", json!({"uri": "test://blob/large"}))
        .await;
    let blob: BlobResourceContents = serde_json::from_value(r["contents"][0].clone()).unwrap();
    assert_eq!(blob.bytes().unwrap().len(), 100_000);
}

#[tokio::test]
async fn ten_thousand_resources_page_through() {
    let mut peer = Peer::legacy(paged(1000, 10_000)).await;
    let (resources, pages) = peer.list_all("resources/list", "resources").await;
    assert_eq!(resources.len(), 10_002);
    assert_eq!(pages, 11);
    assert_eq!(resources[9_999]["uri"], "test://text/10000");
}

#[tokio::test]
async fn legacy_updates_reach_subscribers_only() {
    let mut peer = Peer::legacy(ServerOptions::default()).await;
    // Not subscribed: the answer comes with no notification before it.
    let r = peer
        .tool(1, "touch_resource", json!({"uri": "test://text/1"}))
        .await;
    assert_eq!(
        r["content"][0]["text"],
        "test://text/1 is now at revision 2"
    );

    peer.ok(2, "resources/subscribe", json!({"uri": "test://text/1"}))
        .await;
    // Another resource's change is not announced.
    peer.tool(3, "touch_resource", json!({"uri": "test://text/2"}))
        .await;

    peer.request(
        4,
        "tools/call",
        json!({"name": "touch_resource", "arguments": {"uri": "test://text/1"}}),
    )
    .await;
    let n = peer.recv().await;
    assert_eq!(n["method"], "notifications/resources/updated", "{n}");
    assert_eq!(n["params"], json!({"uri": "test://text/1"}));
    assert_eq!(peer.recv().await["id"], 4);
    let r = peer
        .ok(5, "resources/read", json!({"uri": "test://text/1"}))
        .await;
    assert_eq!(text_of(&r), "This is text resource 1. (revision 3)");

    peer.ok(6, "resources/unsubscribe", json!({"uri": "test://text/1"}))
        .await;
    peer.tool(7, "touch_resource", json!({"uri": "test://text/1"}))
        .await;

    let e = peer
        .error(8, "resources/subscribe", json!({"uri": "test://nothing"}))
        .await;
    assert_eq!(e["code"], -32002);
    let r = peer
        .tool(9, "touch_resource", json!({"uri": "test://nothing"}))
        .await;
    assert_eq!(r["isError"], true);
}

#[tokio::test]
async fn an_added_resource_is_announced_and_listed() {
    let mut peer = Peer::legacy(ServerOptions::default()).await;
    peer.request(
        1,
        "tools/call",
        json!({"name": "add_resource", "arguments": {}}),
    )
    .await;
    let n = peer.recv().await;
    assert_eq!(n["method"], "notifications/resources/list_changed", "{n}");
    let r = peer.recv().await;
    assert_eq!(r["result"]["content"][0]["text"], "added test://added/1");
    let list = peer.ok(2, "resources/list", json!({})).await;
    let all = list["resources"].as_array().unwrap();
    assert_eq!(all.len(), 6);
    assert_eq!(all[5]["uri"], "test://added/1");
    let r = peer
        .ok(3, "resources/read", json!({"uri": "test://added/1"}))
        .await;
    assert_eq!(text_of(&r), "This is added resource 1.");
}

#[tokio::test]
async fn prompts_are_listed_in_pages_and_filled_in() {
    let mut peer = Peer::legacy(paged(2, 3)).await;
    let (prompts, pages) = peer.list_all("prompts/list", "prompts").await;
    let names: Vec<&str> = prompts
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, PROMPT_NAMES);
    assert_eq!(pages, 2);
    assert_eq!(
        prompts[1]["arguments"],
        json!([
            {"name": "code", "description": "The code to review.", "required": true},
            {"name": "style", "description": "concise, detailed or friendly.", "required": false}
        ])
    );

    let r = peer
        .ok(
            1,
            "prompts/get",
            json!({"name": "greeting", "arguments": {"name": "bob"}}),
        )
        .await;
    assert_eq!(
        r["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Hello, bob!"}}])
    );
    let r = peer
        .ok(
            2,
            "prompts/get",
            json!({"name": "review", "arguments": {"code": "fn main() {}", "style": "friendly"}}),
        )
        .await;
    let messages = r["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(
        messages[0]["content"]["text"],
        "Please review this code in a friendly style:\n\nfn main() {}"
    );
    assert_eq!(messages[1]["role"], "assistant");

    let e = peer
        .error(
            3,
            "prompts/get",
            json!({"name": "review", "arguments": {"style": "x"}}),
        )
        .await;
    assert_eq!(e["code"], -32602);
    assert_eq!(e["data"]["field"], "arguments.code");
    assert!(e["message"].as_str().unwrap().contains("\"code\""), "{e}");
    let e = peer
        .error(4, "prompts/get", json!({"name": "greeting"}))
        .await;
    assert_eq!(e["data"]["field"], "arguments.name");
    let e = peer.error(5, "prompts/get", json!({"name": "nope"})).await;
    assert_eq!(e["code"], -32602);
    assert!(
        e["message"].as_str().unwrap().contains("unknown prompt"),
        "{e}"
    );
    let e = peer
        .error(
            6,
            "prompts/get",
            json!({"name": "greeting", "arguments": {"name": 3}}),
        )
        .await;
    assert_eq!(e["data"]["field"], "arguments.name");
}

fn prompt_ref(name: &str, argument: &str, value: &str) -> Value {
    json!({"ref": {"type": "ref/prompt", "name": name},
           "argument": {"name": argument, "value": value}})
}

fn template_ref(uri: &str, argument: &str, value: &str) -> Value {
    json!({"ref": {"type": "ref/resource", "uri": uri},
           "argument": {"name": argument, "value": value}})
}

/// The completion checks, the same in every era.
async fn completes(peer: &mut Peer) {
    let c = peer
        .ok(1, "completion/complete", prompt_ref("review", "style", ""))
        .await;
    assert_eq!(
        c["completion"],
        json!({"values": ["concise", "detailed", "friendly"], "total": 3, "hasMore": false})
    );
    let c = peer
        .ok(2, "completion/complete", prompt_ref("review", "style", "f"))
        .await;
    assert_eq!(c["completion"]["values"], json!(["friendly"]));

    let c = peer
        .ok(
            3,
            "completion/complete",
            template_ref("test://greeting/{name}", "name", "b"),
        )
        .await;
    assert_eq!(c["completion"]["values"], json!(["bob"]));

    // `language` depends on the framework already chosen.
    let mut with_context = prompt_ref("scaffold", "language", "");
    with_context["context"] = json!({"arguments": {"framework": "spring"}});
    let c = peer.ok(4, "completion/complete", with_context).await;
    assert_eq!(
        c["completion"],
        json!({"values": ["java", "kotlin"], "total": 2, "hasMore": false})
    );
    let c = peer
        .ok(
            5,
            "completion/complete",
            prompt_ref("scaffold", "language", "k"),
        )
        .await;
    assert_eq!(c["completion"]["values"], json!(["kotlin"]));
    let c = peer
        .ok(
            6,
            "completion/complete",
            prompt_ref("scaffold", "language", ""),
        )
        .await;
    assert_eq!(c["completion"]["total"], 6);

    // At most 100 values; the total counts them all. (250 text resources:
    // 1, 10–19, 100–199 start with "1".)
    let c = peer
        .ok(
            7,
            "completion/complete",
            template_ref("test://text/{id}", "id", "1"),
        )
        .await;
    assert_eq!(c["completion"]["values"].as_array().unwrap().len(), 100);
    assert_eq!(c["completion"]["total"], 111);
    assert_eq!(c["completion"]["hasMore"], true);

    for (id, params, field) in [
        (8, prompt_ref("nope", "x", ""), "ref.name"),
        (9, prompt_ref("review", "colour", ""), "argument.name"),
        (10, template_ref("test://x/{y}", "y", ""), "ref.uri"),
        (
            11,
            template_ref("test://greeting/{name}", "id", ""),
            "argument.name",
        ),
        (
            12,
            json!({"ref": {"type": "ref/prompt", "name": "review"}}),
            "argument",
        ),
    ] {
        let e = peer.error(id, "completion/complete", params).await;
        assert_eq!(e["code"], -32602, "{e}");
        assert_eq!(e["data"]["field"], field, "{e}");
    }
}

#[tokio::test]
async fn completion_filters_caps_and_uses_context_in_the_legacy_era() {
    let mut peer = Peer::legacy(paged(10, 250)).await;
    completes(&mut peer).await;
}

#[tokio::test]
async fn completion_filters_caps_and_uses_context_in_the_modern_era() {
    let mut peer = Peer::modern(paged(10, 250));
    completes(&mut peer).await;
    let c = peer
        .ok(20, "completion/complete", prompt_ref("review", "style", ""))
        .await;
    assert_eq!(c["resultType"], "complete");
}

#[tokio::test]
async fn modern_results_are_complete_and_carry_cache_hints() {
    let mut peer = Peer::modern(paged(4, 3));
    let (resources, pages) = peer.list_all("resources/list", "resources").await;
    assert_eq!(resources.len(), 5);
    assert_eq!(pages, 2);
    for (id, method, params) in [
        (1, "resources/list", json!({})),
        (2, "resources/templates/list", json!({})),
        (3, "resources/read", json!({"uri": "test://text/1"})),
        (4, "prompts/list", json!({})),
    ] {
        let r = peer.ok(id, method, params).await;
        assert_eq!(r["resultType"], "complete", "{method}: {r}");
        assert!(r["ttlMs"].is_u64(), "{method}: {r}");
        assert_eq!(r["cacheScope"], "public", "{method}: {r}");
    }
    let r = peer
        .ok(
            5,
            "prompts/get",
            json!({"name": "greeting", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["messages"][0]["content"]["text"], "Hello, Ada!");

    // 2026-07-28: not found is -32602.
    let e = peer
        .error(6, "resources/read", json!({"uri": "test://nothing"}))
        .await;
    assert_eq!(e["code"], -32602);
    assert_eq!(e["message"], "Resource not found");
    assert_eq!(e["data"]["uri"], "test://nothing");
    // Subscriptions moved to subscriptions/listen.
    for method in ["resources/subscribe", "resources/unsubscribe"] {
        let e = peer.error(7, method, json!({"uri": "test://text/1"})).await;
        assert_eq!(e["code"], -32601, "{method}");
    }
    let e = peer
        .error(8, "prompts/get", json!({"name": "greeting"}))
        .await;
    assert_eq!(e["data"]["field"], "arguments.name");
}

#[tokio::test]
async fn modern_updates_reach_the_listening_subscription_only() {
    let mut peer = Peer::modern(ServerOptions::default());
    peer.request(
        70,
        "subscriptions/listen",
        json!({"notifications": {"resourcesListChanged": true,
            "resourceSubscriptions": ["test://text/1", "test://nothing"]}}),
    )
    .await;
    let ack = peer.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourcesListChanged": true, "resourceSubscriptions": ["test://text/1"]}),
        "unknown URIs are not granted"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        70
    );

    peer.request(
        80,
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": ["test://text/2"]}}),
    )
    .await;
    let ack = peer.recv().await;
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        80
    );

    // Nothing it asks for exists: the field is left out of the acknowledgment.
    peer.request(
        90,
        "subscriptions/listen",
        json!({"notifications": {"promptsListChanged": true,
            "resourceSubscriptions": ["test://nothing"]}}),
    )
    .await;
    let ack = peer.recv().await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"promptsListChanged": true})
    );

    // test://text/1: subscription 70 hears of it, 80 does not.
    peer.request(
        1,
        "tools/call",
        json!({"name": "touch_resource", "arguments": {"uri": "test://text/1"}}),
    )
    .await;
    let n = peer.recv().await;
    assert_eq!(n["method"], "notifications/resources/updated");
    assert_eq!(
        n["params"],
        json!({"uri": "test://text/1",
               "_meta": {"io.modelcontextprotocol/subscriptionId": 70}})
    );
    let r = peer.recv().await;
    assert_eq!(
        (r["id"].clone(), r["result"]["resultType"].clone()),
        (json!(1), json!("complete"))
    );

    // A list change: only 70 asked for those.
    peer.request(
        2,
        "tools/call",
        json!({"name": "add_resource", "arguments": {}}),
    )
    .await;
    let n = peer.recv().await;
    assert_eq!(n["method"], "notifications/resources/list_changed");
    assert_eq!(
        n["params"],
        json!({"_meta": {"io.modelcontextprotocol/subscriptionId": 70}})
    );
    assert_eq!(peer.recv().await["id"], 2);

    // Cancelled, 70 hears nothing more; 80 still hears of test://text/2.
    peer.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 70}}),
    )
    .await;
    peer.tool(3, "touch_resource", json!({"uri": "test://text/1"}))
        .await;
    peer.request(
        4,
        "tools/call",
        json!({"name": "touch_resource", "arguments": {"uri": "test://text/2"}}),
    )
    .await;
    let n = peer.recv().await;
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 80,
        "{n}"
    );
    assert_eq!(peer.recv().await["id"], 4);
}

#[tokio::test]
async fn a_dual_server_answers_each_request_in_its_own_revision() {
    let mut options = ServerOptions::default();
    options.era = Era::Dual;
    let mut peer = Peer::legacy(options).await;
    peer.ok(1, "resources/subscribe", json!({"uri": "test://text/1"}))
        .await;
    let e = peer
        .error(2, "resources/read", json!({"uri": "test://nothing"}))
        .await;
    assert_eq!(e["code"], -32002);

    // The same connection, speaking 2026-07-28.
    peer.modern = true;
    let e = peer
        .error(3, "resources/read", json!({"uri": "test://nothing"}))
        .await;
    assert_eq!(e["code"], -32602);
    let r = peer
        .ok(4, "resources/read", json!({"uri": "test://text/1"}))
        .await;
    assert_eq!(r["resultType"], "complete");
    let e = peer
        .error(5, "resources/subscribe", json!({"uri": "test://text/1"}))
        .await;
    assert_eq!(e["code"], -32601);

    // The legacy subscription still hears of its resource.
    peer.request(
        6,
        "tools/call",
        json!({"name": "touch_resource", "arguments": {"uri": "test://text/1"}}),
    )
    .await;
    let n = peer.recv().await;
    assert_eq!(n["params"], json!({"uri": "test://text/1"}));
    assert_eq!(peer.recv().await["id"], 6);
}
