//! `tools/call` (each call a task of its own, cancellable by id), the
//! multi-round-trip `ask_name`, and `subscriptions/listen`.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};

use mcp_jsonrpc::{Id, codes};
use mcp_protocol::modern::{InputRequest, InputRequiredResult, ResultType};
use mcp_protocol::types::{CallToolResult, ElicitRequestParams, Extra};
use mcp_protocol::{meta, methods};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::misbehave::CallMisbehaviours;
use super::{InFlight, ProtocolError, Server, raw};
use crate::tools::{self, CallContext};

/// The `requestState` the `ask_name` tool hands out and expects back.
const ASK_NAME_STATE: &str = "ask-name:v1";

/// The parameters of a `tools/call`.
pub(super) struct Call {
    name: String,
    arguments: Map<String, Value>,
    progress_token: Option<Value>,
    /// A multi-round-trip retry's answers.
    input_responses: Option<Value>,
    /// A multi-round-trip retry's echoed state.
    request_state: Option<Value>,
}

pub(super) fn parse_call(mut params: Map<String, Value>) -> Result<Call, ProtocolError> {
    let name = match params.remove("name") {
        Some(Value::String(name)) => name,
        Some(_) => return Err(ProtocolError::invalid_field("name", "expected a string")),
        None => return Err(ProtocolError::invalid_field("name", "required")),
    };
    let arguments = match params.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map,
        Some(_) => {
            return Err(ProtocolError::invalid_field(
                "arguments",
                "expected an object",
            ));
        }
    };
    let token = params
        .get(meta::KEY)
        .and_then(|m| m.get(meta::PROGRESS_TOKEN));
    let progress_token = match token {
        None | Some(Value::Null) => None,
        Some(token @ (Value::String(_) | Value::Number(_))) => Some(token.clone()),
        Some(_) => {
            return Err(ProtocolError::invalid_field(
                "_meta.progressToken",
                "expected a string or an integer",
            ));
        }
    };
    Ok(Call {
        name,
        arguments,
        progress_token,
        input_responses: params.remove("inputResponses"),
        request_state: params.remove("requestState"),
    })
}

/// What a call answers: its result, or (2026-07-28) an interim result
/// asking for input first.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum CallAnswer {
    Complete(CallToolResult),
    InputRequired(InputRequiredResult),
}

/// Runs the tool; a modern final result says that it is complete.
async fn run_call(call: Call, ctx: CallContext, modern: bool) -> Result<CallAnswer, ProtocolError> {
    let answer = if call.name == "ask_name" {
        ask_name(
            modern,
            call.input_responses.as_ref(),
            call.request_state.as_ref(),
        )?
    } else {
        CallAnswer::Complete(tools::call(&call.name, &call.arguments, ctx).await?)
    };
    Ok(match answer {
        CallAnswer::Complete(mut result) if modern => {
            ResultType::Complete.write(&mut result.extra);
            CallAnswer::Complete(result)
        }
        other => other,
    })
}

/// Removes a finished call's entry, unless a later request reused its id.
fn forget(in_flight: &InFlight, id: &Id, task: u64) {
    let mut table = in_flight.lock().unwrap_or_else(PoisonError::into_inner);
    if table.get(id).is_some_and(|(t, _)| *t == task) {
        table.remove(id);
    }
}

impl Server {
    /// Starts a call as a task, registered by id so that
    /// `notifications/cancelled` can abort it.
    pub(super) fn spawn_call(&mut self, id: Id, mut call: Call, modern: bool) {
        let ctx = CallContext {
            workspace: self.workspace.clone(),
            outbox: self.outbox.clone(),
            progress_token: call.progress_token.take(),
            modern,
        };
        let misbehaviours = CallMisbehaviours::of(self.options());
        let outbox = self.outbox.clone();
        let in_flight = Arc::clone(&self.in_flight);
        self.next_task += 1;
        let task = self.next_task;
        let task_id = id.clone();
        // Held while spawning, so the task cannot finish before it is registered.
        let mut table = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let handle = self.tasks.spawn(async move {
            misbehaviours.delay().await;
            let result = run_call(call, ctx, modern).await;
            misbehaviours.before_answer(&outbox).await;
            forget(&in_flight, &task_id, task);
            // Past this point a cancellation finds nothing: the answer goes out whole.
            outbox.respond(task_id, result.and_then(|r| raw(&r))).await;
        });
        table.insert(id, (task, handle));
    }

    /// `subscriptions/listen`: acknowledges what this server can send (tool
    /// list changes; its tools never change, so nothing follows) and keeps
    /// the request open until the client cancels it (on HTTP: closes the
    /// stream) or the server stops.
    pub(super) async fn listen(&mut self, id: Id, params: Map<String, Value>) {
        let asked = params.get("notifications");
        let mut granted = Map::new();
        if asked.and_then(|n| n.get("toolsListChanged")) == Some(&Value::Bool(true)) {
            granted.insert("toolsListChanged".into(), Value::Bool(true));
        }
        let subscription = serde_json::to_value(&id).unwrap_or(Value::Null);
        self.outbox
            .notify(
                methods::SUBSCRIPTIONS_ACKNOWLEDGED,
                &json!({
                    meta::KEY: {meta::SUBSCRIPTION_ID: subscription},
                    "notifications": granted,
                }),
            )
            .await;
        self.log(&format!("subscription {id} open"));
        let mut table = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.next_task += 1;
        let handle = self.tasks.spawn(std::future::pending());
        table.insert(id, (self.next_task, handle));
    }
}

/// `ask_name`: asks for a name with an elicitation input request (a
/// multi-round-trip result), then greets whoever answered.
fn ask_name(
    modern: bool,
    responses: Option<&Value>,
    state: Option<&Value>,
) -> Result<CallAnswer, ProtocolError> {
    if !modern {
        return Ok(CallAnswer::Complete(tools::error_result(
            "ask_name needs 2026-07-28 multi-round-trip results",
        )));
    }
    let answer = responses.and_then(|r| r.get("name"));
    match (answer, state) {
        (Some(answer), Some(Value::String(s))) if s == ASK_NAME_STATE => {
            let text = match answer.get("action").and_then(Value::as_str) {
                Some("accept") => format!(
                    "hello {}",
                    answer
                        .get("content")
                        .and_then(|c| c.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or("stranger")
                ),
                _ => "no name given".to_owned(),
            };
            Ok(CallAnswer::Complete(tools::text_result(text)))
        }
        (Some(_), _) => Err(ProtocolError::invalid_field(
            "requestState",
            "missing or not the one this server handed out",
        )),
        (None, _) => {
            let ask = ElicitRequestParams::form(
                "What is your name?",
                json!({"type": "object", "properties": {
                    "name": {"type": "string", "default": "octocat"}}, "required": ["name"]}),
            );
            let request = InputRequest {
                method: methods::ELICITATION_CREATE.to_owned(),
                params: Some(serde_json::to_value(&ask).map_err(|e| {
                    ProtocolError::new(codes::INTERNAL_ERROR, format!("cannot ask: {e}"))
                })?),
                extra: Extra::new(),
            };
            Ok(CallAnswer::InputRequired(InputRequiredResult::new(
                BTreeMap::from([("name".to_owned(), request)]),
                Some(ASK_NAME_STATE.to_owned()),
            )))
        }
    }
}
