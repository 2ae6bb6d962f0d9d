//! Scripted MCP servers for the runtime's tests: a `Connector` that answers
//! each connect with an in-memory transport whose other end is a task
//! answering JSON-RPC by hand from a [`Script`] (what the server offers).
//! It speaks the `initialize` lifecycle only: pin `legacy` in the
//! session defaults ([`options`]).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use mcp_stack_config::ResolvedServer;
use mcp_stack_jsonrpc::{
    ErrorObject, ErrorResponse, Message, Notification, Request, Response, to_raw,
};
use mcp_stack_runtime::{ConnectError, Connector, RuntimeOptions};
use mcp_stack_session::{ProtocolMode, ProtocolPin, SessionConfig};
use mcp_stack_transport::memory::{self, MemoryTransport};
use mcp_stack_transport::{BoxFuture, Received, Transport};
use serde_json::{Value, json};

/// What one scripted server offers.
#[derive(Debug, Clone, Default)]
pub struct Script {
    /// The `capabilities` of its `initialize` result.
    pub capabilities: Value,
    pub tools: Vec<Value>,
    pub resources: Vec<Value>,
    pub templates: Vec<Value>,
    pub prompts: Vec<Value>,
    /// `resources/list` and `resources/templates/list` answer an error.
    pub fail_resources: bool,
}

impl Script {
    /// Every capability: tools, resources, prompts, completions.
    pub fn full() -> Self {
        Script {
            capabilities: json!({
                "tools": {"listChanged": true},
                "resources": {"listChanged": true},
                "prompts": {"listChanged": true},
                "completions": {}
            }),
            tools: vec![json!({"name": "ping", "inputSchema": {"type": "object"}})],
            ..Script::default()
        }
    }
}

/// A request a scripted server received: method and parameters.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub params: Value,
}

#[derive(Default)]
struct Server {
    script: Mutex<Script>,
    seen: Mutex<Vec<Seen>>,
    /// Answers the client sent to the server's own requests.
    answers: Mutex<Vec<Value>>,
    /// The server end of its latest connection.
    live: Mutex<Option<Arc<MemoryTransport>>>,
    connects: Mutex<usize>,
}

/// The connector: servers by their name in the config.
#[derive(Default)]
pub struct Scripted {
    servers: Mutex<HashMap<String, Arc<Server>>>,
}

impl fmt::Debug for Scripted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Scripted")
    }
}

/// Runtime options for scripted servers: the `initialize` lifecycle, no reaping.
pub fn options() -> RuntimeOptions {
    let mut o = RuntimeOptions::default().idle_ttl(std::time::Duration::ZERO);
    o.session_defaults = SessionConfig::new().protocol(ProtocolPin::Mode(ProtocolMode::Handshake));
    o
}

impl Scripted {
    pub fn new() -> Arc<Self> {
        Arc::new(Scripted::default())
    }

    /// Adds (or replaces) the server `name`.
    pub fn serve(&self, name: &str, script: Script) {
        let server = Server {
            script: Mutex::new(script),
            ..Server::default()
        };
        self.servers
            .lock()
            .unwrap()
            .insert(name.to_owned(), Arc::new(server));
    }

    fn server(&self, name: &str) -> Arc<Server> {
        Arc::clone(&self.servers.lock().unwrap()[name])
    }

    /// Changes what `name` offers (its next answers).
    pub fn edit(&self, name: &str, f: impl FnOnce(&mut Script)) {
        f(&mut self.server(name).script.lock().unwrap());
    }

    /// The requests `name` received, over all its connections.
    pub fn seen(&self, name: &str) -> Vec<Seen> {
        self.server(name).seen.lock().unwrap().clone()
    }

    /// The methods `name` received.
    pub fn methods(&self, name: &str) -> Vec<String> {
        self.seen(name).into_iter().map(|s| s.method).collect()
    }

    /// How often `name` was connected.
    pub fn connects(&self, name: &str) -> usize {
        *self.server(name).connects.lock().unwrap()
    }

    /// The client's answers to the requests `name` sent it.
    pub fn answers(&self, name: &str) -> Vec<Value> {
        self.server(name).answers.lock().unwrap().clone()
    }

    /// Sends a message from `name` to the client over its latest connection.
    pub async fn send(&self, name: &str, message: Message) {
        let live = self.server(name).live.lock().unwrap().clone().unwrap();
        live.send(&message).await.unwrap();
    }

    /// Sends a notification from `name`.
    pub async fn notify(&self, name: &str, method: &str) {
        self.send(name, Message::from(Notification::new(method, None)))
            .await;
    }

    /// Sends a request from `name` (its answer lands in [`answers`](Self::answers)).
    pub async fn request(&self, name: &str, id: i64, method: &str) {
        self.send(name, Message::from(Request::new(id, method, None)))
            .await;
    }
}

fn params(r: &Request) -> Value {
    r.params
        .as_ref()
        .map(|p| serde_json::from_str(p.get()).unwrap())
        .unwrap_or_default()
}

/// The answer of a scripted server to one request.
fn answer(name: &str, script: &Script, r: &Request) -> Result<Value, ErrorObject> {
    let p = params(r);
    let s = |key: &str| p.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
    match r.method.as_str() {
        "initialize" => Ok(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": script.capabilities,
            "serverInfo": {"name": name, "version": "1"}
        })),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({ "tools": script.tools })),
        "resources/list" | "resources/templates/list" if script.fail_resources => {
            Err(ErrorObject::new(-32603, "the index is broken"))
        }
        "resources/list" => Ok(json!({ "resources": script.resources })),
        "resources/templates/list" => Ok(json!({ "resourceTemplates": script.templates })),
        "prompts/list" => Ok(json!({ "prompts": script.prompts })),
        "resources/read" => {
            let uri = s("uri");
            Ok(json!({"contents": [{"uri": uri, "text": format!("{name} read {uri}")}]}))
        }
        "prompts/get" => {
            let args = p.get("arguments").cloned().unwrap_or_default();
            Ok(
                json!({"messages": [{"role": "user", "content": {"type": "text",
                "text": format!("{name} prompt {} {args}", s("name"))}}]}),
            )
        }
        "completion/complete" => {
            let reference = &p["ref"];
            let what = reference
                .get("name")
                .or_else(|| reference.get("uri"))
                .cloned()
                .unwrap_or_default();
            let arg = &p["argument"];
            let context = p.get("context").cloned().unwrap_or_default();
            Ok(json!({"completion": {"values": [
                format!("{name}:{}:{}", reference["type"].as_str().unwrap_or(""), what.as_str().unwrap_or("")),
                format!("{}={}", arg["name"].as_str().unwrap_or(""), arg["value"].as_str().unwrap_or("")),
                context.to_string()
            ]}}))
        }
        other => Err(ErrorObject::new(-32601, format!("no method {other}"))),
    }
}

async fn run(name: String, server: Arc<Server>, end: Arc<MemoryTransport>) {
    while let Ok(item) = end.recv().await {
        let Received::Message(m) = item else { continue };
        let r = match m {
            Message::Request(r) => r,
            Message::Response(a) => {
                let v: Value = serde_json::from_str(a.result.get()).unwrap();
                server.answers.lock().unwrap().push(v);
                continue;
            }
            Message::Error(e) => {
                let v = json!({"error": e.error.message});
                server.answers.lock().unwrap().push(v);
                continue;
            }
            Message::Notification(n) => {
                server.seen.lock().unwrap().push(Seen {
                    method: n.method,
                    params: Value::Null,
                });
                continue;
            }
            _ => continue,
        };
        server.seen.lock().unwrap().push(Seen {
            method: r.method.clone(),
            params: params(&r),
        });
        let script = server.script.lock().unwrap().clone();
        let reply = match answer(&name, &script, &r) {
            Ok(v) => Message::from(Response::new(r.id, to_raw(&v).unwrap())),
            Err(e) => Message::from(ErrorResponse::new(Some(r.id), e)),
        };
        if end.send(&reply).await.is_err() {
            break;
        }
    }
}

impl Connector for Scripted {
    fn connect<'a>(
        &'a self,
        server: &'a ResolvedServer,
    ) -> BoxFuture<'a, Result<Arc<dyn Transport>, ConnectError>> {
        Box::pin(async move {
            let Some(s) = self.servers.lock().unwrap().get(&server.name).cloned() else {
                return Err(ConnectError::Unsupported(format!(
                    "no scripted server `{}`",
                    server.name
                )));
            };
            let (client, end) = memory::pair();
            let end = Arc::new(end);
            *s.connects.lock().unwrap() += 1;
            *s.live.lock().unwrap() = Some(Arc::clone(&end));
            tokio::spawn(run(server.name.clone(), s, end));
            Ok(Arc::new(client) as Arc<dyn Transport>)
        })
    }
}
