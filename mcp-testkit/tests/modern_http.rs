//! Streamable HTTP for 2026-07-28 (stateless requests, header validation,
//! cancellation by disconnect), driven by a raw hyper client.

#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mcp_stack_testkit::http::{HttpServer, HttpServerOptions};
use mcp_stack_testkit::{Era, MODERN_TOOL_NAMES, ServerOptions};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

const LIMIT: Duration = Duration::from_secs(10);

async fn server(era: Era, json_response: bool) -> HttpServer {
    let mut server = ServerOptions::default();
    server.era = era;
    HttpServer::start(HttpServerOptions {
        server,
        json_response,
        ..HttpServerOptions::default()
    })
    .await
    .unwrap()
}

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
           "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})
}

fn request(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The headers a conforming client sends with `body`.
fn headers_for(body: &Value) -> Vec<(String, String)> {
    let mut h = vec![
        ("MCP-Protocol-Version".to_owned(), "2026-07-28".to_owned()),
        (
            "Mcp-Method".to_owned(),
            body["method"].as_str().unwrap().to_owned(),
        ),
    ];
    if let Some(name) = body["params"]["name"].as_str() {
        h.push(("Mcp-Name".to_owned(), name.to_owned()));
    }
    h
}

/// Sends one request on a connection of its own.
async fn send(
    addr: SocketAddr,
    method: Method,
    headers: &[(String, String)],
    body: Bytes,
) -> (Response<Incoming>, JoinHandle<()>) {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    let conn = tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut builder = Request::builder()
        .method(method)
        .uri(format!("http://{addr}/mcp"))
        .header("host", addr.to_string())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (k, v) in headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    let response = tokio::time::timeout(
        LIMIT,
        sender.send_request(builder.body(Full::new(body)).unwrap()),
    )
    .await
    .expect("no response head in time")
    .unwrap();
    (response, conn)
}

fn json_bytes(body: &Value) -> Bytes {
    Bytes::from(body.to_string())
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    /// The JSON body, or the data of each SSE event.
    messages: Vec<Value>,
}

impl Reply {
    fn last(&self) -> &Value {
        self.messages.last().expect("no message in the body")
    }
}

async fn exchange(
    addr: SocketAddr,
    method: Method,
    headers: &[(String, String)],
    body: Bytes,
) -> Reply {
    let (response, conn) = send(addr, method, headers, body).await;
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = tokio::time::timeout(LIMIT, response.into_body().collect())
        .await
        .expect("the body did not end in time")
        .unwrap()
        .to_bytes();
    conn.abort();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let sse = headers
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let messages = if sse {
        text.split("\n\n")
            .filter_map(|event| {
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                (!data.is_empty() && data.iter().any(|d| !d.is_empty()))
                    .then(|| serde_json::from_str(&data.join("\n")).unwrap())
            })
            .collect()
    } else if text.is_empty() {
        Vec::new()
    } else {
        vec![serde_json::from_str(&text).unwrap()]
    };
    Reply {
        status,
        headers,
        messages,
    }
}

/// POSTs `body` with the headers a conforming client sends plus `extra`.
async fn post(addr: SocketAddr, body: &Value, extra: &[(&str, &str)]) -> Reply {
    let mut headers = headers_for(body);
    headers.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    exchange(addr, Method::POST, &headers, json_bytes(body)).await
}

/// POSTs `body` with exactly these headers (besides Accept and Content-Type).
async fn post_raw(addr: SocketAddr, body: &Value, headers: &[(&str, &str)]) -> Reply {
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    exchange(addr, Method::POST, &headers, json_bytes(body)).await
}

fn text(reply: &Reply) -> &str {
    reply.last()["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
}

#[tokio::test]
async fn discover_and_tools_without_a_session() {
    for json_response in [false, true] {
        let s = server(Era::Modern, json_response).await;
        let discover = request(1, "server/discover", json!({}));
        // A session id from an older client is ignored.
        let r = post(s.addr(), &discover, &[("Mcp-Session-Id", "stale-123")]).await;
        assert_eq!(r.status, StatusCode::OK);
        assert!(r.headers.get("mcp-session-id").is_none());
        let expected = if json_response {
            "application/json"
        } else {
            "text/event-stream"
        };
        assert_eq!(r.headers["content-type"], expected);
        assert_eq!(r.messages.len(), 1);
        assert_eq!(r.last()["id"], 1);
        assert_eq!(
            r.last()["result"]["supportedVersions"],
            json!(["2026-07-28"])
        );

        let r = post(s.addr(), &request(2, "tools/list", json!({})), &[]).await;
        let names: Vec<&str> = r.last()["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, MODERN_TOOL_NAMES);

        let echo = request(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        );
        let r = post(s.addr(), &echo, &[]).await;
        assert_eq!(text(&r), "hi");
        assert_eq!(r.last()["result"]["resultType"], "complete");

        let stats = s.stats();
        assert_eq!(stats.modern_posts.load(Ordering::SeqCst), 3);
        assert_eq!(stats.initializes.load(Ordering::SeqCst), 0);
        assert_eq!(stats.header_rejections.load(Ordering::SeqCst), 0);
        assert_eq!(stats.disconnect_cancels.load(Ordering::SeqCst), 0);
        let seen = stats.modern_headers.lock().unwrap().clone();
        assert_eq!(seen.len(), 3);
        for header in [
            ("mcp-session-id", "stale-123"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "server/discover"),
        ] {
            assert!(
                seen[0].contains(&(header.0.to_owned(), header.1.to_owned())),
                "{seen:?}"
            );
        }
        assert!(!seen[0].iter().any(|(k, _)| k == "accept"));
        assert!(seen[2].contains(&("mcp-name".to_owned(), "echo".to_owned())));
    }
}

#[tokio::test]
async fn progress_notifications_precede_the_answer_on_the_request_stream() {
    let s = server(Era::Modern, false).await;
    let mut call = request(
        1,
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 2, "intervalMs": 1}}),
    );
    call["params"]["_meta"]["progressToken"] = json!("p1");
    let r = post(s.addr(), &call, &[]).await;
    assert_eq!(r.headers["x-accel-buffering"], "no");
    assert_eq!(r.messages.len(), 3, "{:?}", r.messages);
    assert_eq!(r.messages[0]["method"], "notifications/progress");
    assert_eq!(r.messages[1]["params"]["progress"], 2);
    assert_eq!(text(&r), "completed 2 steps");
}

/// Checks a refusal: status, JSON-RPC code, the request's id, the header named.
fn assert_refused(r: &Reply, status: StatusCode, code: i64, header: Option<&str>) {
    assert_eq!(r.status, status, "{:?}", r.messages);
    assert_eq!(r.headers["content-type"], "application/json");
    let body = r.last();
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(body["id"], 7, "{body}");
    if let Some(header) = header {
        assert_eq!(body["error"]["data"]["header"], header, "{body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(header),
            "{body}"
        );
    }
}

/// The right headers for the `route` call below (names in odd cases).
const OK_HEADERS: [(&str, &str); 5] = [
    ("mcp-protocol-version", "2026-07-28"),
    ("MCP-METHOD", "tools/call"),
    ("mcp-name", "route"),
    ("Mcp-Param-Region", "eu-west"),
    ("mcp-param-shard", "3"),
];

fn without(skip: &str) -> Vec<(&'static str, &'static str)> {
    OK_HEADERS
        .iter()
        .copied()
        .filter(|(k, _)| !k.eq_ignore_ascii_case(skip))
        .collect()
}

fn replacing(name: &str, value: &'static str) -> Vec<(&'static str, &'static str)> {
    let mut h = without(name);
    let original = OK_HEADERS
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .unwrap();
    h.push((original.0, value));
    h
}

#[tokio::test]
async fn each_header_is_checked_against_the_body() {
    let s = server(Era::Modern, true).await;
    let a = s.addr();
    let bad = StatusCode::BAD_REQUEST;
    let route = request(
        7,
        "tools/call",
        json!({"name": "route", "arguments": {"query": "q", "region": "eu-west", "shard": 3}}),
    );
    let ok_headers = OK_HEADERS;
    // Every header right (names in any case): served.
    let r = post_raw(a, &route, &ok_headers).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(text(&r), r#"routed query "q" to region eu-west, shard 3"#);
    // Integers compare numerically.
    let r = post_raw(a, &route, &replacing("mcp-param-shard", "3.0")).await;
    assert_eq!(r.status, StatusCode::OK);

    let v = "MCP-Protocol-Version";
    assert_refused(
        &post_raw(a, &route, &without(v)).await,
        bad,
        -32020,
        Some(v),
    );
    assert_refused(
        &post_raw(a, &route, &replacing(v, "2025-11-25")).await,
        bad,
        -32020,
        Some(v),
    );
    let m = "Mcp-Method";
    assert_refused(
        &post_raw(a, &route, &without(m)).await,
        bad,
        -32020,
        Some(m),
    );
    assert_refused(
        &post_raw(a, &route, &replacing(m, "tools/list")).await,
        bad,
        -32020,
        Some(m),
    );
    let n = "Mcp-Name";
    assert_refused(
        &post_raw(a, &route, &without(n)).await,
        bad,
        -32020,
        Some(n),
    );
    assert_refused(
        &post_raw(a, &route, &replacing(n, "echo")).await,
        bad,
        -32020,
        Some(n),
    );
    let p = "Mcp-Param-Region";
    assert_refused(
        &post_raw(a, &route, &without(p)).await,
        bad,
        -32020,
        Some(p),
    );
    assert_refused(
        &post_raw(a, &route, &replacing(p, "us-east")).await,
        bad,
        -32020,
        Some(p),
    );
    let sh = "Mcp-Param-Shard";
    assert_refused(
        &post_raw(a, &route, &replacing(sh, "4")).await,
        bad,
        -32020,
        Some(sh),
    );
    assert_refused(
        &post_raw(a, &route, &replacing(sh, "three")).await,
        bad,
        -32020,
        Some(sh),
    );
    assert_refused(
        &post_raw(a, &route, &replacing(n, "=?base64?not base64?=")).await,
        bad,
        -32020,
        Some(n),
    );

    // No value in the body: the header must be absent.
    let no_region = request(
        7,
        "tools/call",
        json!({"name": "route", "arguments": {"query": "q", "region": null}}),
    );
    let r = post(a, &no_region, &[]).await;
    assert_eq!(text(&r), r#"routed query "q" to region any, shard any"#);
    assert_refused(
        &post(a, &no_region, &[(p, "eu-west")]).await,
        bad,
        -32020,
        Some(p),
    );

    // The version: the header must equal the body's; a version the server
    // does not speak gets -32022 naming the ones it does.
    let mut old = route.clone();
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    assert_refused(&post_raw(a, &old, &ok_headers).await, bad, -32020, Some(v));
    let r = post_raw(a, &old, &replacing(v, "2025-11-25")).await;
    assert_refused(&r, bad, -32022, None);
    assert_eq!(
        r.last()["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-11-25"})
    );
    // An unknown method: 404 + -32601.
    let ping = request(7, "ping", json!({}));
    assert_refused(
        &post(a, &ping, &[]).await,
        StatusCode::NOT_FOUND,
        -32601,
        None,
    );

    assert_eq!(s.stats().header_rejections.load(Ordering::SeqCst), 13);
    assert_eq!(s.stats().modern_posts.load(Ordering::SeqCst), 18);
}

#[tokio::test]
async fn a_dual_server_lists_the_legacy_versions_too() {
    let s = server(Era::Dual, false).await;
    let mut body = request(7, "tools/list", json!({}));
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
    let r = post_raw(
        s.addr(),
        &body,
        &[
            ("MCP-Protocol-Version", "1999-01-01"),
            ("Mcp-Method", "tools/list"),
        ],
    )
    .await;
    assert_refused(&r, StatusCode::BAD_REQUEST, -32022, None);
    assert_eq!(
        r.last()["error"]["data"]["supported"],
        json!([
            "2026-07-28",
            "2025-11-25",
            "2025-06-18",
            "2025-03-26",
            "2024-11-05"
        ])
    );
    assert_eq!(r.last()["error"]["data"]["requested"], "1999-01-01");
}

#[tokio::test]
async fn base64_sentinel_names_and_params_are_decoded() {
    let s = server(Era::Modern, false).await;
    let call = request(
        1,
        "tools/call",
        json!({"name": "route", "arguments": {"query": "q", "region": "Zürich "}}),
    );
    let r = post_raw(
        s.addr(),
        &call,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            // "route"
            ("Mcp-Name", "=?base64?cm91dGU=?="),
            // "Zürich " (non-ASCII, trailing space)
            ("Mcp-Param-Region", "=?base64?WsO8cmljaCA=?="),
        ],
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.messages);
    assert_eq!(text(&r), r#"routed query "q" to region Zürich , shard any"#);
    // The raw (encoded) values are what the stats record.
    let seen = s.stats().modern_headers.lock().unwrap().clone();
    assert!(seen[0].contains(&("mcp-name".to_owned(), "=?base64?cm91dGU=?=".to_owned())));
}

#[tokio::test]
async fn get_and_delete_are_405_in_the_modern_era() {
    let s = server(Era::Modern, false).await;
    for method in [Method::GET, Method::DELETE] {
        let r = exchange(s.addr(), method.clone(), &[], Bytes::new()).await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
    }
}

#[tokio::test]
async fn initialize_to_a_modern_server_names_the_versions() {
    let s = server(Era::Modern, false).await;
    let init = json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let r = post_raw(s.addr(), &init, &[]).await;
    assert_refused(&r, StatusCode::BAD_REQUEST, -32022, None);
    assert_eq!(
        r.last()["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-06-18"})
    );
    assert!(r.headers.get("mcp-session-id").is_none());
}

#[tokio::test]
async fn a_legacy_server_answers_a_modern_post_like_the_typescript_sdk() {
    let s = server(Era::Legacy, false).await;
    let r = post(s.addr(), &request(1, "server/discover", json!({})), &[]).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.messages,
        vec![json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32000, "message": "Bad Request: Server not initialized"}})]
    );
    assert_eq!(s.stats().modern_posts.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_dual_server_serves_sessions_and_modern_requests() {
    let s = server(Era::Dual, false).await;
    let a = s.addr();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let r = post_raw(a, &init, &[]).await;
    assert_eq!(r.last()["result"]["protocolVersion"], "2025-06-18");
    let session = r.headers["mcp-session-id"].to_str().unwrap().to_owned();
    let legacy_echo = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "old"}}});
    let r = post_raw(
        a,
        &legacy_echo,
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
    )
    .await;
    assert_eq!(text(&r), "old");
    // Without a session, a legacy request is refused as before initialize.
    let r = post_raw(a, &legacy_echo, &[]).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.last()["error"]["message"],
        "Bad Request: Server not initialized"
    );

    let r = post(a, &request(3, "server/discover", json!({})), &[]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.headers.get("mcp-session-id").is_none());
    assert_eq!(r.last()["result"]["supportedVersions"][0], "2026-07-28");
    let echo = request(
        4,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "new"}}),
    );
    assert_eq!(text(&post(a, &echo, &[]).await), "new");

    let stats = s.stats();
    assert_eq!(stats.initializes.load(Ordering::SeqCst), 1);
    assert_eq!(stats.modern_posts.load(Ordering::SeqCst), 2);
    // GET (the legacy stream) is still offered, to sessions.
    let r = exchange(a, Method::GET, &[], Bytes::new()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn ask_name_round_trips_over_http() {
    for json_response in [false, true] {
        let s = server(Era::Modern, json_response).await;
        let first = request(
            1,
            "tools/call",
            json!({"name": "ask_name", "arguments": {}}),
        );
        let r = post(s.addr(), &first, &[]).await;
        let result = &r.last()["result"];
        assert_eq!(result["resultType"], "input_required");
        assert_eq!(
            result["inputRequests"]["name"]["method"],
            "elicitation/create"
        );
        let retry = request(
            2,
            "tools/call",
            json!({"name": "ask_name", "arguments": {},
                "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}},
                "requestState": result["requestState"]}),
        );
        let r = post(s.addr(), &retry, &[]).await;
        assert_eq!(r.last()["result"]["resultType"], "complete");
        assert_eq!(text(&r), "hello Ada");
    }
}

#[tokio::test]
async fn notifications_are_accepted_and_counted() {
    let s = server(Era::Modern, false).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1}});
    let r = post_raw(s.addr(), &cancel, &[("MCP-Protocol-Version", "2026-07-28")]).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    assert!(r.messages.is_empty());
    assert_eq!(s.stats().modern_notifications.load(Ordering::SeqCst), 1);
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    tokio::time::timeout(LIMIT, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} did not happen in time"));
}

#[tokio::test]
async fn closing_the_stream_cancels_the_call() {
    for json_response in [false, true] {
        let s = server(Era::Modern, json_response).await;
        let slow = request(
            1,
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 60_000}}),
        );
        let headers = headers_for(&slow);
        if json_response {
            // The answer never comes: close the connection while waiting.
            let stream = TcpStream::connect(s.addr()).await.unwrap();
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .unwrap();
            let conn = tokio::spawn(async move {
                let _ = conn.await;
            });
            let mut builder = Request::post(format!("http://{}/mcp", s.addr()))
                .header("accept", "application/json, text/event-stream");
            for (k, v) in &headers {
                builder = builder.header(k.as_str(), v.as_str());
            }
            let pending = tokio::spawn(async move {
                let request = builder
                    .body(Full::new(Bytes::from(slow.to_string())))
                    .unwrap();
                let _ = sender.send_request(request).await;
            });
            until("the request", || {
                s.stats().modern_posts.load(Ordering::SeqCst) == 1
            })
            .await;
            pending.abort();
            conn.abort();
        } else {
            let (response, conn) = send(s.addr(), Method::POST, &headers, json_bytes(&slow)).await;
            assert_eq!(response.status(), StatusCode::OK);
            drop(response);
            conn.abort();
        }
        until("the disconnect cancel", || {
            s.stats().disconnect_cancels.load(Ordering::SeqCst) == 1
        })
        .await;
        // Other requests go on.
        let echo = request(
            2,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "on"}}),
        );
        assert_eq!(text(&post(s.addr(), &echo, &[]).await), "on");
        assert_eq!(s.stats().disconnect_cancels.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn the_binary_serves_modern_http() {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-testkit"))
        .args(["--http", "127.0.0.1:0", "--era", "modern"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let line = tokio::time::timeout(LIMIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let url = line.strip_prefix("mcp-testkit: listening on ").unwrap();
    let addr: SocketAddr = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/mcp"))
        .unwrap()
        .parse()
        .unwrap();
    let r = post(addr, &request(1, "server/discover", json!({})), &[]).await;
    assert_eq!(
        r.last()["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    let r = exchange(addr, Method::GET, &[], Bytes::new()).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    child.kill().await.unwrap();

    let help = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-testkit"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains("--http ADDR") && help.contains("With --era modern"),
        "{help}"
    );
}

#[tokio::test]
async fn pretty_printed_bodies_are_one_message() {
    for era in [Era::Modern, Era::Legacy] {
        let s = server(era, true).await;
        let body = if era == Era::Modern {
            request(1, "server/discover", json!({}))
        } else {
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}})
        };
        let pretty = Bytes::from(
            serde_json::to_string_pretty(&body)
                .unwrap()
                .replace('\n', "\r\n"),
        );
        let r = exchange(s.addr(), Method::POST, &headers_for(&body), pretty).await;
        assert_eq!(r.status, StatusCode::OK, "{era:?}");
        assert!(r.last()["result"].is_object(), "{era:?}: {:?}", r.messages);
    }
}
