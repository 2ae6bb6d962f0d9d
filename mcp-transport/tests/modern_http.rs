//! Streamable HTTP for protocol revision 2026-07-28, against a hand-written
//! HTTP/1.1 server on 127.0.0.1 that records every request it sees.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stack_jsonrpc::{Id, Message, Notification, Request, to_raw};
use mcp_stack_transport::http::{HttpOptions, StreamableHttpTransport};
use mcp_stack_transport::{Lifecycle, Received, SendContext, Transport, TransportError};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server answers.
enum Answer {
    /// A status, a content type and a body; the connection stays usable.
    Full(u16, &'static str, String),
    /// An SSE head and these raw bytes, then the connection is held open
    /// until the client goes away.
    HoldSse(String),
    /// An SSE head and these raw bytes, then the connection is closed.
    CloseSse(String),
    /// No answer at all: the connection is held until the client goes away.
    Hang,
}

type Handler = Arc<dyn Fn(&Seen) -> Answer + Send + Sync>;

struct RawServer {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    disconnects: Arc<Mutex<usize>>,
    disconnected: Arc<Notify>,
}

impl RawServer {
    /// The JSON-RPC method of each body posted, in order.
    fn posted_methods(&self) -> Vec<Value> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.body["method"].clone())
            .collect()
    }

    /// The HTTP method of each request seen, in order.
    fn http_methods(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.method.clone())
            .collect()
    }
}

/// Sends the session's cancellation of request `id` and waits (5 s at
/// most) until the server sees the request's stream close.
async fn cancel_and_see_the_stream_close(t: &StreamableHttpTransport, server: &RawServer, id: i64) {
    let cancel = Message::Notification(Notification::new(
        "notifications/cancelled",
        Some(to_raw(&json!({"requestId": id, "reason": "gave up"})).unwrap()),
    ));
    t.send_with(&cancel, &modern().cancels(Id::from(id)))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), server.disconnected.notified())
        .await
        .expect("the server saw the stream close");
}

async fn raw_server(handler: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> RawServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let disconnects = Arc::new(Mutex::new(0));
    let disconnected = Arc::new(Notify::new());
    let handler: Handler = Arc::new(handler);
    let (s, d, n) = (seen.clone(), disconnects.clone(), disconnected.clone());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(connection(
                stream,
                handler.clone(),
                s.clone(),
                d.clone(),
                n.clone(),
            ));
        }
    });
    RawServer {
        url,
        seen,
        disconnects,
        disconnected,
    }
}

async fn connection(
    mut stream: TcpStream,
    handler: Handler,
    seen: Arc<Mutex<Vec<Seen>>>,
    disconnects: Arc<Mutex<usize>>,
    disconnected: Arc<Notify>,
) {
    let mut buf = Vec::new();
    loop {
        // The head.
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let method = lines.next().unwrap().split(' ').next().unwrap().to_owned();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .map_or(0, |(_, v)| v.parse().unwrap());
        while buf.len() < head_end + len {
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = serde_json::from_slice(&buf[head_end..head_end + len]).unwrap_or(Value::Null);
        buf.drain(..head_end + len);
        let request = Seen {
            method,
            headers,
            body,
        };
        seen.lock().unwrap().push(request.clone());
        match handler(&request) {
            Answer::Full(status, content_type, body) => {
                let text = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                if stream.write_all(text.as_bytes()).await.is_err() {
                    return;
                }
            }
            answer @ (Answer::HoldSse(_) | Answer::Hang) => {
                if let Answer::HoldSse(events) = answer {
                    let text = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{events}"
                    );
                    let _ = stream.write_all(text.as_bytes()).await;
                }
                // Held until the client goes away.
                let mut chunk = [0u8; 64];
                while let Ok(n) = stream.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                }
                *disconnects.lock().unwrap() += 1;
                disconnected.notify_one();
                return;
            }
            Answer::CloseSse(events) => {
                let text = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{events}"
                );
                let _ = stream.write_all(text.as_bytes()).await;
                return;
            }
        }
    }
}

const MODERN: &str = "2026-07-28";

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn modern_request(id: i64, method: &str, mut params: Value) -> Message {
    params["_meta"] = meta();
    Message::Request(Request {
        id: Id::from(id),
        method: method.into(),
        params: Some(to_raw(&params).unwrap()),
    })
}

/// The context a modern session gives a request.
fn modern() -> SendContext {
    SendContext::new().revision(MODERN.parse().unwrap())
}

/// Sends a modern request as a session would (`server/discover` marked).
async fn send_modern(t: &dyn Transport, message: &Message) -> Result<(), TransportError> {
    let context = match message.method() {
        Some("server/discover") => modern().lifecycle(Lifecycle::Discover),
        _ => modern(),
    };
    t.send_with(message, &context).await
}

fn ok(id: &Value, result: Value) -> Answer {
    Answer::Full(
        200,
        "application/json",
        json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
    )
}

async fn next_message(t: &dyn Transport) -> Message {
    match tokio::time::timeout(Duration::from_secs(5), t.recv())
        .await
        .expect("an answer within 5 s")
        .unwrap()
    {
        Received::Message(m) => m,
        other => panic!("not a message: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_requests_mirror_their_metadata_into_headers_without_a_session() {
    let server = raw_server(|seen| ok(&seen.body["id"], json!({"content": []}))).await;
    let t = StreamableHttpTransport::connect(&server.url, HttpOptions::new())
        .await
        .unwrap();
    let call = modern_request(
        1,
        "tools/call",
        json!({"name": "get_weather", "arguments": {"region": " padded ", "query": "x"}}),
    );
    let context = modern()
        .name("get_weather")
        .param_header("Region", " padded ")
        .param_header("Shard", "7");
    t.send_with(&call, &context).await.unwrap();
    let answer = next_message(&t).await;
    assert_eq!(answer.id(), Some(&Id::from(1)));

    let read = modern_request(2, "resources/read", json!({"uri": "file:///Café.txt"}));
    t.send_with(&read, &modern().name("file:///Café.txt"))
        .await
        .unwrap();
    next_message(&t).await;
    let list = modern_request(3, "tools/list", json!({}));
    send_modern(&t, &list).await.unwrap();
    next_message(&t).await;

    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    let call = &seen[0];
    assert_eq!(call.method, "POST");
    assert_eq!(call.header("mcp-protocol-version"), Some(MODERN));
    assert_eq!(call.header("mcp-method"), Some("tools/call"));
    assert_eq!(call.header("mcp-name"), Some("get_weather"));
    assert_eq!(
        call.header("mcp-param-region"),
        Some("=?base64?IHBhZGRlZCA=?=")
    );
    assert_eq!(call.header("mcp-param-shard"), Some("7"));
    assert!(call.header("accept").unwrap().contains("application/json"));
    assert_eq!(
        seen[1].header("mcp-name"),
        Some("=?base64?ZmlsZTovLy9DYWbDqS50eHQ=?=")
    );
    assert_eq!(seen[2].header("mcp-method"), Some("tools/list"));
    assert_eq!(seen[2].header("mcp-name"), None);
    for s in &seen {
        assert_eq!(s.header("mcp-session-id"), None, "{s:?}");
    }
    // No DELETE (there is no session) and no GET stream. `close` waits for
    // a DELETE it sends and stops every task of the transport, so once it
    // returns nothing more can reach the server: no wait is needed to see it.
    t.close().await;
    let methods = server.http_methods();
    assert_eq!(methods, ["POST", "POST", "POST"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4xx_with_a_json_rpc_error_is_the_answer_and_a_plain_one_is_an_error() {
    let server = raw_server(|seen| match seen.body["method"].as_str() {
        Some("server/discover") => Answer::Full(
            400,
            "application/json",
            json!({"jsonrpc": "2.0", "id": null, "error": {
                "code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2025-11-25"], "requested": MODERN}}})
            .to_string(),
        ),
        _ => Answer::Full(404, "text/plain", "Not Found".into()),
    })
    .await;
    let t = StreamableHttpTransport::connect(&server.url, HttpOptions::new())
        .await
        .unwrap();
    send_modern(&t, &modern_request(7, "server/discover", json!({})))
        .await
        .unwrap();
    let Message::Error(e) = next_message(&t).await else {
        panic!("expected an error response");
    };
    assert_eq!(e.id, Some(Id::from(7)), "the answer takes the request's id");
    assert_eq!(e.error.code, -32022);
    assert!(e.error.data.unwrap().get().contains("2025-11-25"));

    // The same probe to a server that answers 404 without JSON-RPC: `send`
    // itself fails with the status, so the caller can fall back.
    let other = raw_server(|_| Answer::Full(404, "text/plain", "Not Found".into())).await;
    let t = StreamableHttpTransport::connect(&other.url, HttpOptions::new())
        .await
        .unwrap();
    let err = send_modern(&t, &modern_request(1, "server/discover", json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.http_status(), Some(404));

    // An auth refusal stays an HTTP error even with a JSON-RPC body.
    let auth = raw_server(|_| {
        Answer::Full(
            401,
            "application/json",
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32001, "message": "no token"}})
                .to_string(),
        )
    })
    .await;
    let t = StreamableHttpTransport::connect(&auth.url, HttpOptions::new())
        .await
        .unwrap();
    let err = send_modern(&t, &modern_request(1, "server/discover", json!({})))
        .await
        .unwrap_err();
    assert_eq!(err.http_status(), Some(401));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_closes_the_response_stream_and_posts_nothing() {
    let server = raw_server(|seen| match seen.body["method"].as_str() {
        Some("tools/call") => Answer::HoldSse(": working\n\n".into()),
        _ => Answer::Full(202, "application/json", String::new()),
    })
    .await;
    let t = StreamableHttpTransport::connect(&server.url, HttpOptions::new())
        .await
        .unwrap();
    send_modern(
        &t,
        &modern_request(5, "tools/call", json!({"name": "slow", "arguments": {}})),
    )
    .await
    .unwrap();
    cancel_and_see_the_stream_close(&t, &server, 5).await;
    assert_eq!(*server.disconnects.lock().unwrap(), 1);
    assert_eq!(
        server.posted_methods(),
        [json!("tools/call")],
        "no cancellation was posted"
    );
    t.close().await;
}

/// A modern request is driven on its caller's task: a caller that stops
/// waiting before the answer's head closes the request's connection, which
/// is the cancellation, and the session's `notifications/cancelled` after
/// it is not posted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_request_dropped_before_its_answer_closes_its_stream_and_posts_nothing() {
    let server = raw_server(|seen| match seen.body["method"].as_str() {
        Some("tools/call") => Answer::Hang,
        _ => Answer::Full(202, "application/json", String::new()),
    })
    .await;
    let t = StreamableHttpTransport::connect(&server.url, HttpOptions::new())
        .await
        .unwrap();
    let call = modern_request(6, "tools/call", json!({"name": "slow", "arguments": {}}));
    let context = modern();
    let sending = t.request_with(&call, &context);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    // Driven until the server has the request, then dropped.
    tokio::select! {
        answer = sending => panic!("the server never answers: {answer:?}"),
        () = async {
            while server.seen.lock().unwrap().is_empty() {
                assert!(tokio::time::Instant::now() < deadline, "the POST never arrived");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        } => {}
    }
    cancel_and_see_the_stream_close(&t, &server, 6).await;
    assert_eq!(
        server.posted_methods(),
        [json!("tools/call")],
        "no cancellation was posted"
    );
    t.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_modern_stream_is_not_resumed() {
    let server = raw_server(|seen| match seen.body["method"].as_str() {
        Some("tools/call") => Answer::CloseSse("id: e1\nretry: 10\ndata: \n\n".into()),
        _ => Answer::Full(405, "text/plain", String::new()),
    })
    .await;
    let t = StreamableHttpTransport::connect(&server.url, HttpOptions::new())
        .await
        .unwrap();
    send_modern(
        &t,
        &modern_request(9, "tools/call", json!({"name": "x", "arguments": {}})),
    )
    .await
    .unwrap();
    let failure = match tokio::time::timeout(Duration::from_secs(5), t.recv())
        .await
        .expect("a failure within 5 s")
        .unwrap()
    {
        Received::Failed(f) => f,
        other => panic!("expected a request failure: {other:?}"),
    };
    assert_eq!(failure.id, Id::from(9));
    let message = failure.error.to_string();
    assert!(message.contains("not resumable"), "{message}");
    let methods = server.http_methods();
    assert_eq!(methods, ["POST"], "no GET with Last-Event-ID");
}
