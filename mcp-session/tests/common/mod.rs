//! A scripted in-memory MCP peer shared by the session's tests.
#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_jsonrpc::{ErrorObject, ErrorResponse, Id, Message, Request, Response, to_raw};
use mcp_transport::{Received, Transport, memory};
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
