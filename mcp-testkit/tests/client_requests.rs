//! The tools that ask the client (`ask_user`, `sample`, `list_roots`),
//! driven with raw JSON lines: server requests while the call is pending
//! before 2026-07-28, `input_required` results in 2026-07-28.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::time::Duration;

use mcp_stack_testkit::{Era, ServerOptions, serve};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines, ReadHalf, WriteHalf};

type Conn = (
    Lines<BufReader<ReadHalf<tokio::io::DuplexStream>>>,
    WriteHalf<tokio::io::DuplexStream>,
);

fn start(era: Era) -> Conn {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (r, w) = tokio::io::split(server);
    let mut options = ServerOptions::default();
    options.era = era;
    tokio::spawn(serve(options, r, w));
    let (r, w) = tokio::io::split(client);
    (BufReader::new(r).lines(), w)
}

async fn send(conn: &mut Conn, message: Value) {
    let mut line = serde_json::to_vec(&message).unwrap();
    line.push(b'\n');
    conn.1.write_all(&line).await.unwrap();
}

async fn next(conn: &mut Conn) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(10), conn.0.next_line())
        .await
        .expect("the server said nothing")
        .unwrap()
        .unwrap();
    serde_json::from_str(&line).unwrap()
}

async fn ask(conn: &mut Conn, request: Value) -> Value {
    send(conn, request).await;
    next(conn).await
}

const ALL: &str =
    r#"{"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {"listChanged": true}}"#;

/// A legacy connection after `initialize` with these capabilities.
async fn legacy(version: &str, capabilities: Value) -> Conn {
    let mut c = start(Era::Legacy);
    let init = ask(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": capabilities,
        "clientInfo": {"name": "t", "version": "1"}}}),
    )
    .await;
    assert_eq!(init["result"]["protocolVersion"], version);
    send(
        &mut c,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    c
}

fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

fn reply(request: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": request["id"], "result": result})
}

#[tokio::test]
async fn legacy_ask_user_form_sends_elicitation_and_reports_the_answer() {
    let mut c = legacy("2025-11-25", serde_json::from_str(ALL).unwrap()).await;
    send(&mut c, call(1, "ask_user", json!({}))).await;
    let asked = next(&mut c).await;
    assert_eq!(asked["method"], "elicitation/create");
    assert!(asked["id"].is_string(), "{asked}");
    let p = &asked["params"];
    assert_eq!(p["mode"], "form");
    assert_eq!(p["requestedSchema"]["required"], json!(["name"]));
    assert_eq!(
        p["requestedSchema"]["properties"]["subscribe"]["default"],
        false
    );
    send(
        &mut c,
        reply(
            &asked,
            json!({"action": "accept", "content": {"name": "Ada", "age": 36}}),
        ),
    )
    .await;
    let done = next(&mut c).await;
    assert_eq!(done["id"], 1);
    let r = &done["result"];
    assert_eq!(r["isError"], Value::Null, "{done}");
    assert_eq!(
        r["structuredContent"],
        json!({"mode": "form", "action": "accept", "content": {"name": "Ada", "age": 36}})
    );
    assert!(
        r["content"][0]["text"].as_str().unwrap().contains("accept"),
        "{done}"
    );

    // Declined: reported as such.
    send(&mut c, call(2, "ask_user", json!({"mode": "form"}))).await;
    let asked = next(&mut c).await;
    send(&mut c, reply(&asked, json!({"action": "decline"}))).await;
    let done = next(&mut c).await;
    assert_eq!(done["result"]["structuredContent"]["action"], "decline");
    assert_eq!(
        done["result"]["content"][0]["text"],
        "the user answered decline"
    );
}

#[tokio::test]
async fn legacy_bad_answers_are_errors_and_never_reported_as_content() {
    let mut c = legacy("2025-11-25", serde_json::from_str(ALL).unwrap()).await;
    // Content that breaks the schema.
    send(&mut c, call(1, "ask_user", json!({}))).await;
    let asked = next(&mut c).await;
    send(
        &mut c,
        reply(
            &asked,
            json!({"action": "accept", "content": {"name": 7, "secret": "x"}}),
        ),
    )
    .await;
    let done = next(&mut c).await;
    assert_eq!(done["result"]["isError"], true);
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("does not match the requested schema"),
        "{text}"
    );
    assert!(!text.contains("secret"), "{text}");
    assert_eq!(done["result"]["structuredContent"], Value::Null);

    // An error answer (the user refused sampling).
    send(&mut c, call(2, "sample", json!({"prompt": "hi"}))).await;
    let asked = next(&mut c).await;
    assert_eq!(asked["method"], "sampling/createMessage");
    send(
        &mut c,
        json!({"jsonrpc": "2.0", "id": asked["id"],
        "error": {"code": -1, "message": "User rejected sampling request"}}),
    )
    .await;
    let done = next(&mut c).await;
    assert_eq!(done["result"]["isError"], true);
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("User rejected"),
        "{done}"
    );

    // An answer of the wrong shape.
    send(&mut c, call(3, "list_roots", json!({}))).await;
    let asked = next(&mut c).await;
    send(&mut c, reply(&asked, json!({"roots": "nope"}))).await;
    let done = next(&mut c).await;
    assert_eq!(done["result"]["isError"], true);
}

#[tokio::test]
async fn legacy_url_mode_sends_an_id_and_completes_after_accept() {
    let mut c = legacy("2025-11-25", serde_json::from_str(ALL).unwrap()).await;
    send(&mut c, call(1, "ask_user", json!({"mode": "url"}))).await;
    let asked = next(&mut c).await;
    let p = &asked["params"];
    assert_eq!(p["mode"], "url");
    let id = p["elicitationId"].as_str().unwrap().to_owned();
    assert_eq!(
        p["url"],
        format!("https://example.com/connect?elicitation={id}")
    );
    assert_eq!(p["requestedSchema"], Value::Null);
    send(&mut c, reply(&asked, json!({"action": "accept"}))).await;
    let complete = next(&mut c).await;
    assert_eq!(complete["method"], "notifications/elicitation/complete");
    assert_eq!(complete["params"]["elicitationId"], id.as_str());
    let done = next(&mut c).await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"mode": "url", "action": "accept", "elicitationId": id})
    );

    // Declined: no completion.
    send(&mut c, call(2, "ask_user", json!({"mode": "url"}))).await;
    let asked = next(&mut c).await;
    send(&mut c, reply(&asked, json!({"action": "cancel"}))).await;
    let done = next(&mut c).await;
    assert_eq!(done["id"], 2, "no notification before it: {done}");
    assert_eq!(done["result"]["structuredContent"]["action"], "cancel");
}

#[tokio::test]
async fn legacy_sample_and_list_roots() {
    let mut c = legacy("2025-06-18", serde_json::from_str(ALL).unwrap()).await;
    send(&mut c, call(1, "sample", json!({"prompt": "What is 2+2?"}))).await;
    let asked = next(&mut c).await;
    assert_eq!(asked["method"], "sampling/createMessage");
    assert_eq!(
        asked["params"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "What is 2+2?"}}])
    );
    assert!(asked["params"]["maxTokens"].is_u64());
    send(
        &mut c,
        reply(
            &asked,
            json!({"role": "assistant", "model": "test-model",
        "content": {"type": "text", "text": "4"}, "stopReason": "endTurn"}),
        ),
    )
    .await;
    let done = next(&mut c).await;
    assert_eq!(done["result"]["content"][0]["text"], "4");
    assert_eq!(done["result"]["structuredContent"]["model"], "test-model");

    for _ in 0..2 {
        send(
            &mut c,
            json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}),
        )
        .await;
    }
    send(&mut c, call(2, "list_roots", json!({}))).await;
    let asked = next(&mut c).await;
    assert_eq!(asked["method"], "roots/list");
    send(
        &mut c,
        reply(
            &asked,
            json!({"roots": [{"uri": "file:///a", "name": "a"}, {"uri": "file:///b"}]}),
        ),
    )
    .await;
    let done = next(&mut c).await;
    let r = &done["result"];
    assert_eq!(
        r["structuredContent"]["roots"],
        json!([{"uri": "file:///a", "name": "a"}, {"uri": "file:///b"}])
    );
    assert_eq!(r["structuredContent"]["listChangedSeen"], 2);
    assert_eq!(
        r["content"][0]["text"],
        "2 root(s): file:///a, file:///b; notifications/roots/list_changed received: 2"
    );
}

#[tokio::test]
async fn legacy_clients_that_did_not_declare_are_never_asked() {
    // Nothing declared: each tool says so, and its answer is the next line
    // (no request came first).
    let mut c = legacy("2025-11-25", json!({})).await;
    for (id, (tool, args, missing)) in [
        ("ask_user", json!({}), "elicitation capability"),
        ("sample", json!({"prompt": "x"}), "sampling capability"),
        ("list_roots", json!({}), "roots capability"),
    ]
    .into_iter()
    .enumerate()
    {
        let done = ask(&mut c, call(id as u64, tool, args)).await;
        assert_eq!(done["id"], id, "{done}");
        assert_eq!(done["result"]["isError"], true);
        let text = done["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(missing), "{text}");
        assert!(text.contains("nothing was asked"), "{text}");
    }

    // Form mode only (`{}`): URL mode is not asked for.
    let mut c = legacy("2025-11-25", json!({"elicitation": {}})).await;
    let done = ask(&mut c, call(1, "ask_user", json!({"mode": "url"}))).await;
    assert_eq!(done["result"]["isError"], true);
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("URL mode"),
        "{done}"
    );
    // URL mode only: no form.
    let mut c = legacy("2025-11-25", json!({"elicitation": {"url": {}}})).await;
    let done = ask(&mut c, call(1, "ask_user", json!({}))).await;
    assert_eq!(done["result"]["isError"], true);

    // 2025-06-18 has no URL mode, 2025-03-26 no elicitation at all.
    let mut c = legacy("2025-06-18", serde_json::from_str(ALL).unwrap()).await;
    let done = ask(&mut c, call(1, "ask_user", json!({"mode": "url"}))).await;
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("2025-11-25"),
        "{done}"
    );
    let mut c = legacy("2025-03-26", serde_json::from_str(ALL).unwrap()).await;
    let done = ask(&mut c, call(1, "ask_user", json!({}))).await;
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("2025-06-18"),
        "{done}"
    );
    // Bad arguments are protocol errors.
    let bad = ask(&mut c, call(2, "ask_user", json!({"mode": "smoke"}))).await;
    assert_eq!(bad["error"]["data"]["field"], "arguments.mode");
    let bad = ask(&mut c, call(3, "sample", json!({}))).await;
    assert_eq!(bad["error"]["data"]["field"], "arguments.prompt");
}

fn meta(capabilities: Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
           "io.modelcontextprotocol/clientCapabilities": capabilities})
}

fn modern_call(id: u64, name: &str, arguments: Value, capabilities: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"_meta": meta(capabilities.clone()), "name": name, "arguments": arguments}})
}

fn retry(mut first: Value, id: u64, key: &str, answer: Value, state: &Value) -> Value {
    first["id"] = json!(id);
    first["params"]["inputResponses"] = json!({ key: answer });
    first["params"]["requestState"] = state.clone();
    first
}

#[tokio::test]
async fn modern_tools_ask_with_input_required_results() {
    let mut c = start(Era::Modern);
    let all: Value = serde_json::from_str(ALL).unwrap();

    // Form mode.
    let first = modern_call(1, "ask_user", json!({}), &all);
    let r = ask(&mut c, first.clone()).await["result"].clone();
    assert_eq!(r["resultType"], "input_required");
    let asked = &r["inputRequests"]["user"];
    assert_eq!(asked["method"], "elicitation/create");
    assert_eq!(
        asked["params"]["requestedSchema"]["required"],
        json!(["name"])
    );
    let state = r["requestState"].clone();
    let answer = json!({"action": "accept", "content": {"name": "Ada", "subscribe": true}});
    let done = ask(&mut c, retry(first.clone(), 2, "user", answer, &state)).await;
    assert_eq!(done["result"]["resultType"], "complete");
    assert_eq!(
        done["result"]["structuredContent"]["content"],
        json!({"name": "Ada", "subscribe": true})
    );
    // Bad content: an error result, not the content.
    let bad = json!({"action": "accept", "content": {"age": "old"}});
    let done = ask(&mut c, retry(first.clone(), 3, "user", bad, &state)).await;
    assert_eq!(done["result"]["isError"], true);
    // The state, but no answer: asked again.
    let mut again = first.clone();
    again["id"] = json!(4);
    again["params"]["requestState"] = state.clone();
    let r = ask(&mut c, again).await;
    assert_eq!(r["result"]["resultType"], "input_required");
    // A forged state: refused.
    let forged = retry(
        first,
        5,
        "user",
        json!({"action": "decline"}),
        &json!("forged"),
    );
    assert_eq!(ask(&mut c, forged).await["error"]["code"], -32602);

    // URL mode: no elicitationId (2026-07-28 has none), no notification.
    let first = modern_call(6, "ask_user", json!({"mode": "url"}), &all);
    let r = ask(&mut c, first.clone()).await["result"].clone();
    let p = &r["inputRequests"]["user"]["params"];
    assert_eq!(p["mode"], "url");
    assert!(
        p["url"]
            .as_str()
            .unwrap()
            .starts_with("https://example.com/connect?elicitation=")
    );
    assert_eq!(p.get("elicitationId"), None);
    let done = ask(
        &mut c,
        retry(
            first,
            7,
            "user",
            json!({"action": "accept"}),
            &r["requestState"],
        ),
    )
    .await;
    assert_eq!(done["id"], 7);
    assert_eq!(done["result"]["structuredContent"]["action"], "accept");

    // Sampling.
    let first = modern_call(8, "sample", json!({"prompt": "2+2?"}), &all);
    let r = ask(&mut c, first.clone()).await["result"].clone();
    assert_eq!(
        r["inputRequests"]["sample"]["method"],
        "sampling/createMessage"
    );
    let answer =
        json!({"role": "assistant", "model": "m", "content": {"type": "text", "text": "4"}});
    let done = ask(
        &mut c,
        retry(first, 9, "sample", answer, &r["requestState"]),
    )
    .await;
    assert_eq!(done["result"]["content"][0]["text"], "4");

    // Roots.
    let first = modern_call(10, "list_roots", json!({}), &all);
    let r = ask(&mut c, first.clone()).await["result"].clone();
    assert_eq!(r["inputRequests"]["roots"], json!({"method": "roots/list"}));
    let answer = json!({"roots": [{"uri": "file:///p"}]});
    let done = ask(
        &mut c,
        retry(first, 11, "roots", answer, &r["requestState"]),
    )
    .await;
    assert_eq!(
        done["result"]["structuredContent"]["roots"],
        json!([{"uri": "file:///p"}])
    );
}

#[tokio::test]
async fn modern_clients_that_did_not_declare_are_never_asked() {
    let mut c = start(Era::Modern);
    let none = json!({});
    for (id, (tool, args)) in [
        ("ask_user", json!({})),
        ("sample", json!({"prompt": "x"})),
        ("list_roots", json!({})),
    ]
    .into_iter()
    .enumerate()
    {
        let done = ask(&mut c, modern_call(id as u64, tool, args, &none)).await;
        assert_eq!(done["result"]["resultType"], "complete");
        assert_eq!(done["result"]["isError"], true, "{done}");
        assert_eq!(done["result"]["inputRequests"], Value::Null);
    }
    // Form only: no URL mode.
    let form = json!({"elicitation": {"form": {}}});
    let done = ask(
        &mut c,
        modern_call(9, "ask_user", json!({"mode": "url"}), &form),
    )
    .await;
    assert_eq!(done["result"]["isError"], true);
}
