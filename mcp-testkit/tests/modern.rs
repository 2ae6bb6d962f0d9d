//! The testkit's 2026-07-28 modes, driven with raw JSON lines.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

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

async fn ask(conn: &mut Conn, request: Value) -> Value {
    let mut line = serde_json::to_vec(&request).unwrap();
    line.push(b'\n');
    conn.1.write_all(&line).await.unwrap();
    serde_json::from_str(&conn.0.next_line().await.unwrap().unwrap()).unwrap()
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
           "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})
}

#[tokio::test]
async fn modern_server_discovers_and_refuses_initialize() {
    let mut c = start(Era::Modern);
    let d = ask(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": meta()}}),
    )
    .await;
    assert_eq!(d["result"]["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(
        d["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcp-testkit"
    );
    assert!(d["result"]["ttlMs"].is_u64());

    let i = ask(&mut c, json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})).await;
    assert_eq!(i["error"]["code"], -32022);
    assert_eq!(i["error"]["data"]["supported"], json!(["2026-07-28"]));

    let l = ask(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": meta()}}),
    )
    .await;
    assert_eq!(l["result"]["resultType"], "complete");
    assert_eq!(l["result"]["cacheScope"], "public");
    assert!(
        l["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "ask_name")
    );

    let bad = ask(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}),
    )
    .await;
    assert_eq!(
        bad["error"]["code"], -32022,
        "a modern request must carry _meta"
    );
}

#[tokio::test]
async fn ask_name_is_a_multi_round_trip_call() {
    let mut c = start(Era::Modern);
    let first = ask(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"_meta": meta(), "name": "ask_name", "arguments": {}}}),
    )
    .await;
    let r = &first["result"];
    assert_eq!(r["resultType"], "input_required");
    assert_eq!(r["inputRequests"]["name"]["method"], "elicitation/create");
    let state = r["requestState"].clone();

    let retry = ask(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "_meta": meta(), "name": "ask_name", "arguments": {},
        "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": state}}),
    )
    .await;
    assert_eq!(retry["result"]["resultType"], "complete");
    assert_eq!(retry["result"]["content"][0]["text"], "hello Ada");

    let forged = ask(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "_meta": meta(), "name": "ask_name", "arguments": {},
        "inputResponses": {"name": {"action": "accept", "content": {"name": "Eve"}}},
        "requestState": "forged"}}),
    )
    .await;
    assert_eq!(forged["error"]["code"], -32602);
}

#[tokio::test]
async fn dual_server_serves_both_eras_and_legacy_knows_no_discover() {
    let mut c = start(Era::Dual);
    let d = ask(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": meta()}}),
    )
    .await;
    let versions = d["result"]["supportedVersions"].as_array().unwrap().clone();
    assert_eq!(versions.first().unwrap(), "2026-07-28");
    assert!(versions.contains(&json!("2024-11-05")));
    let i = ask(&mut c, json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})).await;
    assert_eq!(i["result"]["protocolVersion"], "2025-06-18");

    let mut c = start(Era::Legacy);
    let d = ask(
        &mut c,
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": meta()}}),
    )
    .await;
    assert_eq!(d["error"]["code"], -32601);
}
