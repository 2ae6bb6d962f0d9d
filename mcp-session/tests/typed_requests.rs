//! Requests of the method table (`Session::call::<R>`): params written
//! straight into the outgoing frame, results parsed once from the frame's
//! bytes. Over the in-memory pair (messages passed as values) and over a
//! newline-framed stream, where the frames are real.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::{config, params, start, tools_server};
use mcp_stack_jsonrpc::{Message, Response, to_raw};
use mcp_stack_protocol::request::{Ping, ToolsCall, ToolsList};
use mcp_stack_protocol::types::{CallToolParams, EmptyParams, PaginatedParams};
use mcp_stack_session::{Session, SessionError};
use mcp_stack_transport::stream::StreamTransport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test]
async fn a_typed_request_sends_its_params_and_reads_its_result() {
    let (t, fake) = start(tools_server(|_| None));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let page = s
        .call::<ToolsList>(&PaginatedParams {
            cursor: Some("c1".into()),
            ..PaginatedParams::default()
        })
        .await
        .unwrap();
    assert_eq!(page.tools.len(), 2);
    assert_eq!(page.tools[0].name, "echo");
    s.call::<Ping>(&EmptyParams::default()).await.unwrap();
    let seen = fake.seen.lock().unwrap().clone();
    let Some(Message::Request(list)) = seen.iter().find(|m| m.method() == Some("tools/list"))
    else {
        panic!("no tools/list sent")
    };
    assert_eq!(params(list), json!({"cursor": "c1"}));
}

#[tokio::test]
async fn a_typed_request_the_server_refuses_is_a_protocol_error() {
    let (t, _fake) = start(tools_server(|_| None));
    let s = Session::connect_shared(t, config()).await.unwrap();
    let params: CallToolParams =
        serde_json::from_value(json!({"name": "nope", "arguments": {}})).unwrap();
    let err = s.call::<ToolsCall>(&params).await.unwrap_err();
    assert!(
        matches!(&err, SessionError::Protocol { method, error } if method == "tools/call" && error.code == -32602),
        "{err:?}"
    );
}

/// A server on the other end of a byte stream: answers the handshake, and
/// `tools/call` `echo` with its text; records each request line as read.
async fn framed_server(
    io: tokio::io::DuplexStream,
    lines: tokio::sync::mpsc::UnboundedSender<Value>,
) {
    let (read, mut write) = tokio::io::split(io);
    let mut read = BufReader::new(read);
    let mut line = String::new();
    loop {
        line.clear();
        if read.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let Ok(Message::Request(r)) = Message::from_slice(line.trim_end().as_bytes()) else {
            continue;
        };
        let p = params(&r);
        let _ = lines.send(json!({"method": r.method, "params": p}));
        let result = match r.method.as_str() {
            "initialize" => common::init_result("2025-11-25", json!({"tools": {}})),
            "tools/call" => json!({"content": [{"type": "text", "text": p["arguments"]["text"]}]}),
            _ => json!({}),
        };
        let mut answer = Message::from(Response::new(r.id, to_raw(&result).unwrap()))
            .to_vec()
            .unwrap();
        answer.push(b'\n');
        if write.write_all(&answer).await.is_err() {
            return;
        }
    }
}

#[tokio::test]
async fn over_a_framed_stream_params_go_straight_into_the_frame_and_results_come_back_whole() {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(framed_server(theirs, tx));
    let (read, write) = tokio::io::split(ours);
    let s = Session::connect(StreamTransport::new(read, write), config())
        .await
        .unwrap();
    // A text larger than a read, with characters JSON escapes and
    // multi-byte ones: the answer spans many reads, the request many writes.
    let text: String = "línea \"1\"\n\\ 😀 ".repeat(20_000);
    let params: CallToolParams =
        serde_json::from_value(json!({"name": "echo", "arguments": {"text": text}})).unwrap();
    let result = s.call::<ToolsCall>(&params).await.unwrap();
    assert_eq!(result.text(), text);
    let sent: Vec<Value> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    let call = sent.iter().find(|l| l["method"] == "tools/call").unwrap();
    assert_eq!(call["params"]["arguments"]["text"], text);
    s.close().await;
}
