//! A scripted in-memory MCP peer shared by the session's tests.
#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stack_jsonrpc::{
    ErrorObject, ErrorResponse, Id, Message, Notification, Request, Response, to_raw,
};
use mcp_stack_session::SessionConfig;
use mcp_stack_transport::{Received, Transport, memory};
use serde_json::{Value, json};

/// What the scripted server does with one request.
pub enum Reply {
    Ok(Value),
    Err(i64, &'static str),
    /// An error with data.
    ErrData(i64, &'static str, Value),
    /// Send nothing.
    Silence,
    /// Send these messages, then the result.
    Then(Vec<Message>, Value),
    /// Wait, then answer.
    After(Duration, Value),
    /// Send these messages and no answer.
    Only(Vec<Message>),
}

pub type Script = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

/// A scripted server: records every message it receives.
pub struct Fake {
    pub seen: Arc<Mutex<Vec<Message>>>,
    pub server: Arc<memory::MemoryTransport>,
}

impl Fake {
    /// Sends the client a notification.
    pub async fn notify(&self, method: &str, params: Value) {
        let note = Notification::new(method, Some(to_raw(&params).unwrap()));
        self.server.send(&Message::from(note)).await.unwrap();
    }

    pub fn methods(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter_map(|m| m.method().map(str::to_string))
            .collect()
    }
}

pub fn init_result(version: &str, caps: Value) -> Value {
    json!({"protocolVersion": version, "capabilities": caps,
           "serverInfo": {"name": "fake", "version": "0.0.1"}, "instructions": "be nice"})
}

pub fn start(script: Script) -> (Arc<memory::MemoryTransport>, Fake) {
    let (client, server) = memory::pair();
    let server = Arc::new(server);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (s, log) = (Arc::clone(&server), Arc::clone(&seen));
    tokio::spawn(async move {
        while let Ok(item) = s.recv().await {
            let Received::Message(m) = item else { continue };
            log.lock().unwrap().push(m.clone());
            let Message::Request(r) = m else { continue };
            let send = |v: Value, id: Id| Message::from(Response::new(id, to_raw(&v).unwrap()));
            match script(&r) {
                Reply::Ok(v) => s.send(&send(v, r.id)).await.unwrap(),
                Reply::Err(code, msg) => s
                    .send(&Message::from(ErrorResponse::new(
                        Some(r.id),
                        ErrorObject::new(code, msg),
                    )))
                    .await
                    .unwrap(),
                Reply::ErrData(code, msg, data) => {
                    let mut error = ErrorObject::new(code, msg);
                    error.data = Some(to_raw(&data).unwrap());
                    s.send(&Message::from(ErrorResponse::new(Some(r.id), error)))
                        .await
                        .unwrap()
                }
                Reply::Silence => {}
                Reply::Only(messages) => {
                    for m in messages {
                        s.send(&m).await.unwrap();
                    }
                }
                Reply::Then(before, v) => {
                    for m in before {
                        s.send(&m).await.unwrap();
                    }
                    s.send(&send(v, r.id)).await.unwrap();
                }
                Reply::After(d, v) => {
                    let s = Arc::clone(&s);
                    tokio::spawn(async move {
                        tokio::time::sleep(d).await;
                        let _ = s.send(&send(v, r.id)).await;
                    });
                }
            }
        }
    });
    (Arc::new(client), Fake { seen, server })
}

/// The JSON parameters of a request.
pub fn params(r: &Request) -> Value {
    r.params
        .as_ref()
        .map(|p| serde_json::from_str(p.get()).unwrap())
        .unwrap_or_default()
}

// Helpers of the session tests (session.rs, deadlines.rs).

pub fn tools_server(extra: impl Fn(&Request) -> Option<Reply> + Send + Sync + 'static) -> Script {
    Arc::new(move |r: &Request| {
        if let Some(reply) = extra(r) {
            return reply;
        }
        match r.method.as_str() {
            "initialize" => Reply::Ok(init_result(
                "2025-11-25",
                json!({"tools": {"listChanged": true}}),
            )),
            "ping" => Reply::Ok(json!({})),
            "tools/list" => Reply::Ok(json!({"tools": [
                {"name": "echo", "inputSchema": {"type": "object",
                    "properties": {"text": {"type": "string"}}, "required": ["text"]}},
                {"name": "add", "inputSchema": {"type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
                 "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}}
            ]})),
            "tools/call" => {
                let p: Value = serde_json::from_str(r.params.as_ref().unwrap().get()).unwrap();
                match p["name"].as_str() {
                    Some("echo") => Reply::Ok(
                        json!({"content": [{"type": "text", "text": p["arguments"]["text"]}]}),
                    ),
                    Some("add") => {
                        let sum = p["arguments"]["a"].as_f64().unwrap()
                            + p["arguments"]["b"].as_f64().unwrap();
                        Reply::Ok(
                            json!({"content": [{"type": "text", "text": sum.to_string()}], "structuredContent": {"sum": sum}}),
                        )
                    }
                    _ => Reply::Err(-32602, "unknown tool"),
                }
            }
            _ => Reply::Err(-32601, "method not found"),
        }
    })
}

/// These tests cover handshake-era sessions, so they skip the default
/// `server/discover` probe (tests/modern.rs covers the probe).
pub fn config() -> SessionConfig {
    SessionConfig::new()
        .server_name("fake")
        .protocol(mcp_stack_session::ProtocolPin::Mode(
            mcp_stack_session::ProtocolMode::Handshake,
        ))
}

/// A handler that never answers, counting the answers it is working on; a
/// count goes down only when its future is dropped (the task aborted).
pub struct Hangs(pub Arc<std::sync::atomic::AtomicUsize>);

pub struct Working(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Working {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl mcp_stack_session::ClientHandler for Hangs {
    fn handle<'a>(
        &'a self,
        _method: &'a str,
        _params: Option<&'a mcp_stack_jsonrpc::RawValue>,
    ) -> mcp_stack_transport::BoxFuture<'a, Option<Result<Value, mcp_stack_jsonrpc::ErrorObject>>>
    {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let working = Working(Arc::clone(&self.0));
        Box::pin(async move {
            let _working = working;
            std::future::pending().await
        })
    }
}

/// Waits (up to 10 s of real time) until `done` holds.
pub async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "gave up waiting: {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

pub fn server_request(id: &str, method: &str) -> Message {
    Message::Request(Request {
        id: Id::from(id.to_string()),
        method: method.into(),
        params: Some(to_raw(&json!({})).unwrap()),
    })
}
