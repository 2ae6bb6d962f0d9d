//! Resource changes over HTTP: a change made by one request (or session)
//! reaches the subscribers held open by another, and only them.

#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use mcp_stack_testkit::http::{HttpServer, HttpServerOptions};
use mcp_stack_testkit::{Era, ServerOptions};
use serde_json::{Value, json};
use tokio::net::TcpStream;

const LIMIT: Duration = Duration::from_secs(10);

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
           "io.modelcontextprotocol/clientCapabilities": {}})
}

/// POSTs one message on a connection of its own, with the headers a
/// conforming client sends (the 2026-07-28 ones when `modern`).
async fn post(
    addr: SocketAddr,
    body: &Value,
    modern: bool,
    session: Option<&str>,
) -> Response<Incoming> {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut builder = Request::post(format!("http://{addr}/mcp"))
        .header("host", addr.to_string())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if modern {
        builder = builder
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", body["method"].as_str().unwrap());
        let params = &body["params"];
        if let Some(name) = params["name"].as_str().or(params["uri"].as_str()) {
            builder = builder.header("Mcp-Name", name);
        }
    }
    if let Some(id) = session {
        builder = builder.header("mcp-session-id", id);
    }
    let request = builder
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    tokio::time::timeout(LIMIT, sender.send_request(request))
        .await
        .expect("no response head in time")
        .unwrap()
}

/// Reads the messages of an SSE body one by one, as they arrive.
struct Events {
    body: Incoming,
    buffer: String,
}

impl Events {
    fn of(response: Response<Incoming>) -> Events {
        Events {
            body: response.into_body(),
            buffer: String::new(),
        }
    }

    /// The next message; `None` when the body ends.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if data.iter().any(|d| !d.is_empty()) {
                    return Some(serde_json::from_str(&data.join("\n")).unwrap());
                }
                continue;
            }
            let frame = tokio::time::timeout(LIMIT, self.body.frame())
                .await
                .expect("no event in time")?
                .unwrap();
            if let Ok(data) = frame.into_data() {
                self.buffer.push_str(std::str::from_utf8(&data).unwrap());
            }
        }
    }
}

/// The answer in a response body (JSON or the last SSE event).
async fn answer(response: Response<Incoming>) -> Value {
    let sse = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if sse {
        let mut events = Events::of(response);
        let mut last = None;
        while let Some(message) = events.next().await {
            last = Some(message);
        }
        last.expect("no answer")
    } else {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&bytes).unwrap()
    }
}

/// Opens session `id`'s GET stream.
async fn get_stream(addr: SocketAddr, id: &str) -> Response<Incoming> {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let request = Request::get(format!("http://{addr}/mcp"))
        .header("host", addr.to_string())
        .header("accept", "text/event-stream")
        .header("mcp-session-id", id)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = tokio::time::timeout(LIMIT, sender.send_request(request))
        .await
        .expect("no response head in time")
        .unwrap();
    assert_eq!(response.status(), 200);
    response
}

fn modern(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn touch(id: i64, uri: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "touch_resource", "arguments": {"uri": uri}}})
}

async fn server(era: Era) -> HttpServer {
    let mut server = ServerOptions::default();
    server.era = era;
    HttpServer::start(HttpServerOptions {
        server,
        ..HttpServerOptions::default()
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn a_touch_by_one_request_reaches_the_listen_stream_of_another() {
    let server = server(Era::Modern).await;
    let addr = server.addr();
    let listen = post(
        addr,
        &modern(
            7,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": ["test://text/1"]}}),
        ),
        true,
        None,
    )
    .await;
    let mut events = Events::of(listen);
    let ack = events.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");

    // Not subscribed: nothing for the stream. Then subscribed.
    for (id, uri) in [(1, "test://text/2"), (2, "test://text/1")] {
        let mut request = touch(id, uri);
        request["params"]["_meta"] = meta();
        let r = answer(post(addr, &request, true, None).await).await;
        assert_eq!(
            r["result"]["content"][0]["text"],
            format!("{uri} is now at revision 2")
        );
    }
    // The first notification on the stream is test://text/1's: test://text/2's,
    // had it been sent, would have come first.
    let n = events.next().await.unwrap();
    assert_eq!(n["method"], "notifications/resources/updated");
    assert_eq!(
        n["params"],
        json!({"uri": "test://text/1", "_meta": {"io.modelcontextprotocol/subscriptionId": 7}})
    );

    // The change is seen by every request: the instances share the resources.
    let read = answer(
        post(
            addr,
            &modern(3, "resources/read", json!({"uri": "test://text/1"})),
            true,
            None,
        )
        .await,
    )
    .await;
    assert_eq!(
        read["result"]["contents"][0]["text"],
        "This is text resource 1. (revision 2)"
    );
    drop(events);
    server.shutdown().await;
}

#[tokio::test]
async fn legacy_sessions_share_the_resources_and_hear_their_own_subscriptions() {
    let server = server(Era::Legacy).await;
    let addr = server.addr();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let r = post(addr, &init, false, None).await;
        let id = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
        answer(r).await;
        sessions.push(id);
    }
    let (a, b) = (sessions[0].as_str(), sessions[1].as_str());
    let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
                           "params": {"uri": "test://text/1"}});
    let r = answer(post(addr, &subscribe, false, Some(a)).await).await;
    assert_eq!(r["result"], json!({}));
    let mut a_stream = Events::of(get_stream(addr, a).await);

    // Session b touches the resource on a request stream of its own: b is
    // not subscribed, so that stream carries only the answer.
    let mut events = Events::of(post(addr, &touch(2, "test://text/1"), false, Some(b)).await);
    let r = events.next().await.unwrap();
    assert_eq!(r["id"], 2, "{r}");
    assert!(events.next().await.is_none());
    // Session a hears of it on its GET stream.
    let n = a_stream.next().await.unwrap();
    assert_eq!(n["method"], "notifications/resources/updated");
    assert_eq!(n["params"], json!({"uri": "test://text/1"}));

    // Session a reads the new revision.
    let read = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                      "params": {"uri": "test://text/1"}});
    let r = answer(post(addr, &read, false, Some(a)).await).await;
    assert_eq!(
        r["result"]["contents"][0]["text"],
        "This is text resource 1. (revision 2)"
    );
    server.shutdown().await;
}
