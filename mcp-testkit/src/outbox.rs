//! The sending side, below the server and its features: every message goes
//! to the writer as whole lines, preceded by whatever the misbehaviours add
//! to a response; and [`ProtocolError`], the error a request is answered
//! with. The tools, resources and prompts answer and notify through it;
//! `server` reads the frames and dispatches.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::BytesMut;
use mcp_stack_jsonrpc::{
    ErrorObject, ErrorResponse, Id, Message, NewlineCodec, Notification, RawJson, Request,
    Response, codes, to_raw,
};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::Encoder;

use crate::options::{Misbehaviour, ServerOptions};

/// State the request tasks share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) options: ServerOptions,
    /// Counts the unsolicited responses of [`Misbehaviour::UnknownIds`].
    pub(crate) unknown_ids: AtomicU64,
}

/// A JSON-RPC error to answer a request with.
#[derive(Debug)]
pub(crate) struct ProtocolError {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl ProtocolError {
    /// An error with a code and a message, and no `data`.
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        ProtocolError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// An error with `data`.
    pub(crate) fn with_data(code: i64, message: impl Into<String>, data: Value) -> Self {
        ProtocolError {
            data: Some(data),
            ..Self::new(code, message)
        }
    }

    /// `-32602` naming the field that is wrong.
    pub(crate) fn invalid_field(field: impl Into<String>, reason: impl Into<String>) -> Self {
        let (field, reason) = (field.into(), reason.into());
        ProtocolError {
            code: codes::INVALID_PARAMS,
            message: format!("invalid params: {field}: {reason}"),
            data: Some(json!({"field": field, "reason": reason})),
        }
    }

    /// `-32601` naming the method, `why` appended to the message.
    pub(crate) fn method_not_found(method: &str, why: &str) -> Self {
        ProtocolError {
            code: codes::METHOD_NOT_FOUND,
            message: format!("method not found: {method}{why}"),
            data: Some(json!({"method": method})),
        }
    }

    /// The error code.
    pub(crate) fn code(&self) -> i64 {
        self.code
    }

    /// The message.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    fn object(self) -> ErrorObject {
        let mut error = ErrorObject::new(self.code, self.message);
        error.data = self.data.and_then(|d| to_raw(&d).ok());
        error
    }
}

/// A result, serialized for [`Outbox::respond`].
pub(crate) fn raw<T: Serialize + ?Sized>(result: &T) -> Result<RawJson, ProtocolError> {
    to_raw(result).map_err(|e| {
        ProtocolError::new(
            codes::INTERNAL_ERROR,
            format!("cannot serialize the result: {e}"),
        )
    })
}

/// What a client answered to one of our requests: its result, or its error.
pub(crate) type Answer = Result<Value, ErrorObject>;

/// The requests this server sent the client (before 2026-07-28:
/// `elicitation/create`, `sampling/createMessage`, `roots/list` while a
/// call runs) that wait for their answer, by id.
#[derive(Debug, Default)]
struct Asked {
    next: AtomicU64,
    waiting: Mutex<HashMap<Id, oneshot::Sender<Answer>>>,
}

impl Asked {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<Id, oneshot::Sender<Answer>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Forgets a request whose caller stopped waiting (its call was cancelled).
struct Forget<'a> {
    asked: &'a Asked,
    id: Id,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.asked.table().remove(&self.id);
    }
}

/// The sending side of the writer: every message goes through here as whole lines.
#[derive(Debug, Clone)]
pub(crate) struct Outbox {
    tx: mpsc::Sender<Vec<u8>>,
    shared: Arc<Shared>,
    asked: Arc<Asked>,
}

fn encode(message: &Message) -> Result<Vec<u8>, mcp_stack_jsonrpc::EncodeError> {
    let mut buf = BytesMut::new();
    NewlineCodec::new().encode(message, &mut buf)?;
    Ok(buf.to_vec())
}

impl Outbox {
    pub(crate) fn new(tx: mpsc::Sender<Vec<u8>>, shared: Arc<Shared>) -> Self {
        Outbox {
            tx,
            shared,
            asked: Arc::default(),
        }
    }

    /// Sends the client a request and waits for its answer. `Err` with
    /// `INTERNAL_ERROR` when the connection ends first. Ids are strings
    /// (`testkit-N`), apart from anything a client sends.
    pub(crate) async fn request<P: Serialize + ?Sized>(&self, method: &str, params: &P) -> Answer {
        let gone = || ErrorObject::new(codes::INTERNAL_ERROR, "the connection ended first");
        let params = to_raw(params)
            .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, format!("cannot ask: {e}")))?;
        let n = self.asked.next.fetch_add(1, Ordering::Relaxed) + 1;
        let id = Id::from(format!("testkit-{n}"));
        let (tx, rx) = oneshot::channel();
        self.asked.table().insert(id.clone(), tx);
        let _forget = Forget {
            asked: &self.asked,
            id: id.clone(),
        };
        let message = Message::from(Request::new(id, method, Some(params)));
        let bytes = encode(&message).map_err(|_| gone())?;
        self.send_bytes(bytes).await;
        rx.await.unwrap_or_else(|_| Err(gone()))
    }

    /// A response from the client: hands it to the request that waits for
    /// it. Answers to ids we never sent (or no longer wait for) are dropped.
    pub(crate) fn answered(&self, message: Message) {
        let (id, answer) = match message {
            Message::Response(r) => {
                let value = serde_json::from_str::<Value>(r.result.get()).map_err(|e| {
                    ErrorObject::new(codes::PARSE_ERROR, format!("the result is not JSON: {e}"))
                });
                (r.id, value)
            }
            Message::Error(ErrorResponse {
                id: Some(id),
                error,
            }) => (id, Err(error)),
            _ => return,
        };
        if let Some(tx) = self.asked.table().remove(&id) {
            let _ = tx.send(answer);
        }
    }

    /// Queues bytes for the writer; a writer that is gone (client hung up) is ignored.
    pub(crate) async fn send_bytes(&self, bytes: Vec<u8>) {
        let _ = self.tx.send(bytes).await;
    }

    /// Sends a notification.
    pub(crate) async fn notify<P: Serialize + ?Sized>(&self, method: &str, params: &P) {
        let Ok(params) = to_raw(params) else { return };
        let message = Message::from(Notification::new(method, Some(params)));
        if let Ok(bytes) = encode(&message) {
            self.send_bytes(bytes).await;
        }
    }

    /// Sends the response to a request, preceded by whatever the misbehaviours add.
    pub(crate) async fn respond(&self, id: Id, result: Result<RawJson, ProtocolError>) {
        let message = match result {
            Ok(raw) => Message::from(Response::new(id.clone(), raw)),
            Err(e) => Message::from(ErrorResponse::new(Some(id.clone()), e.object())),
        };
        self.send_response(Some(id), message).await;
    }

    /// Sends an error response (to a message that has no usable id: `None`).
    pub(crate) async fn respond_error(&self, id: Option<Id>, error: ProtocolError) {
        let message = Message::from(ErrorResponse::new(id.clone(), error.object()));
        self.send_response(id, message).await;
    }

    async fn send_response(&self, id: Option<Id>, message: Message) {
        let mut bytes = self.garbage_before_response();
        match encode(&message) {
            Ok(line) => bytes.extend_from_slice(&line),
            Err(e) => {
                let error = ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!("the response could not be sent: {e}"),
                );
                if let Ok(line) = encode(&Message::from(ErrorResponse::new(id, error))) {
                    bytes.extend_from_slice(&line);
                }
            }
        }
        self.send_bytes(bytes).await;
    }

    /// What the misbehaviours write before each response: a line that is
    /// not JSON-RPC, one that is not UTF-8, an answer to an id never sent.
    fn garbage_before_response(&self) -> Vec<u8> {
        let options = &self.shared.options;
        let mut bytes = Vec::new();
        if options.has(Misbehaviour::Noise) {
            bytes.extend_from_slice(b"[mcp-testkit] this line is not JSON-RPC\n");
        }
        if options.has(Misbehaviour::InvalidUtf8) {
            bytes.extend_from_slice(b"\xff\xfe not UTF-8: \xc3\x28 \xa0\xa1\n");
        }
        if options.has(Misbehaviour::UnknownIds) {
            let n = self.shared.unknown_ids.fetch_add(1, Ordering::Relaxed) + 1;
            let stray = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":\"mcp-testkit-unknown-{n}\",\"result\":{{}}}}\n"
            );
            bytes.extend_from_slice(stray.as_bytes());
        }
        bytes
    }
}
