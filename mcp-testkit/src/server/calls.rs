//! `tools/call` (each call a task of its own, cancellable by id), the
//! multi-round-trip `ask_name`, and `subscriptions/listen` (tool, prompt
//! and resource list changes, resource updates).

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};

use mcp_stack_jsonrpc::{Id, codes};
use mcp_stack_protocol::meta;
use mcp_stack_protocol::request::{self, Request as _};
use mcp_stack_protocol::results::{InputRequest, InputRequiredResult, ResultType};
use mcp_stack_protocol::subscriptions::{SubscriptionFilter, SubscriptionParams};
use mcp_stack_protocol::types::{
    CallToolParams, CallToolResult, ElicitRequestParams, ElicitResult, Extra,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::misbehave::CallMisbehaviours;
use super::params::{Presence, expect, typed};
use super::{InFlight, Server, asks};
use crate::client::ClientSide;
use crate::outbox::{ProtocolError, raw};
use crate::tools::{self, CallContext};

/// The `requestState` the `ask_name` tool hands out and expects back.
const ASK_NAME_STATE: &str = "ask-name:v1";

/// `tools/call`'s params, with a progress token the tools can use (a
/// string or an integer).
pub(super) fn parse_call(params: Map<String, Value>) -> Result<CallToolParams, ProtocolError> {
    let call: CallToolParams = typed(params, |p| {
        let object = |field| expect(p, field, Presence::Optional, Value::is_object, "an object");
        expect(p, "name", Presence::Required, Value::is_string, "a string")
            .or_else(|| object("arguments"))
            .or_else(|| object(meta::KEY))
            .or_else(|| object("inputResponses"))
            .or_else(|| {
                expect(
                    p,
                    "requestState",
                    Presence::Optional,
                    Value::is_string,
                    "a string",
                )
            })
    })?;
    match call.progress_token() {
        None | Some(Value::String(_) | Value::Number(_)) => Ok(call),
        Some(_) => Err(ProtocolError::invalid_field(
            "_meta.progressToken",
            "expected a string or an integer",
        )),
    }
}

/// What a call answers: its result, or (2026-07-28) an interim result
/// asking for input first.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum CallAnswer {
    Complete(CallToolResult),
    InputRequired(InputRequiredResult),
}

/// Runs the tool; a modern final result says that it is complete.
async fn run_call(
    call: CallToolParams,
    ctx: CallContext,
    discover: bool,
) -> Result<CallAnswer, ProtocolError> {
    let answer = if call.name == "ask_name" {
        ask_name(
            discover,
            call.input_responses.as_ref(),
            call.request_state.as_deref(),
        )?
    } else if asks::NAMES.contains(&call.name.as_str()) {
        asks::call(&call, &ctx).await?
    } else {
        let arguments = call.arguments.unwrap_or_default();
        CallAnswer::Complete(tools::call(&call.name, &arguments, ctx).await?)
    };
    Ok(match answer {
        CallAnswer::Complete(mut result) if discover => {
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
    pub(super) fn spawn_call(&mut self, id: Id, call: CallToolParams, discover: bool) {
        let ctx = CallContext {
            workspace: self.workspace.clone(),
            outbox: self.outbox.clone(),
            progress_token: call.progress_token().cloned(),
            discover,
            world: Arc::clone(&self.world),
            client: if discover {
                ClientSide::discover(call.meta.as_ref())
            } else {
                self.client.clone()
            },
            roots_changed: Arc::clone(&self.roots_changed),
        };
        let misbehaviours = CallMisbehaviours::of(self.options());
        let hostile = super::hostile::OnCall::of(self.options());
        let progress_token = call.progress_token().cloned();
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
            let result = match hostile.answer(&call) {
                Some(answer) => answer.map(|mut result| {
                    if discover {
                        ResultType::Complete.write(&mut result.extra);
                    }
                    CallAnswer::Complete(result)
                }),
                None => run_call(call, ctx, discover).await,
            };
            misbehaviours.before_answer(&outbox).await;
            hostile
                .before_answer(&outbox, progress_token.as_ref())
                .await;
            forget(&in_flight, &task_id, task);
            // Past this point a cancellation finds nothing: the answer goes out whole.
            outbox.respond(task_id, result.and_then(|r| raw(&r))).await;
        });
        table.insert(id, (task, handle));
    }

    /// Answers a request from a task of its own (an answer that waits),
    /// registered by id so that `notifications/cancelled` can abort it.
    pub(super) fn spawn_answer(
        &mut self,
        id: Id,
        answer: impl Future<Output = Result<mcp_stack_jsonrpc::RawJson, ProtocolError>> + Send + 'static,
    ) {
        let outbox = self.outbox.clone();
        let in_flight = Arc::clone(&self.in_flight);
        self.next_task += 1;
        let task = self.next_task;
        let task_id = id.clone();
        let mut table = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let handle = self.tasks.spawn(async move {
            let result = answer.await;
            forget(&in_flight, &task_id, task);
            outbox.respond(task_id, result).await;
        });
        table.insert(id, (task, handle));
    }

    /// `subscriptions/listen`: acknowledges what this server can send (list
    /// changes of tools and prompts, which never change, and of resources;
    /// updates of the resources asked for that exist), then keeps the
    /// request open until the client cancels it (on HTTP: closes the
    /// stream) or the server stops. Resource notifications carry the
    /// subscription's id.
    pub(super) async fn listen(
        &mut self,
        id: Id,
        params: Result<Map<String, Value>, ProtocolError>,
    ) {
        // Lenient: params that do not fit ask for nothing, and get an
        // acknowledgment of nothing.
        let asked = params
            .and_then(|p| typed::<SubscriptionParams>(p, |_| None))
            .unwrap_or_default()
            .notifications;
        let yes = |asked: Option<bool>| (asked == Some(true)).then_some(true);
        let granted = SubscriptionFilter {
            tools_list_changed: yes(asked.tools_list_changed),
            prompts_list_changed: yes(asked.prompts_list_changed),
            resources_list_changed: yes(asked.resources_list_changed),
            // Only the resources there are; none: the field is left out.
            resource_subscriptions: asked
                .resource_subscriptions
                .map(|uris| {
                    uris.into_iter()
                        .filter(|uri| self.world.exists(uri))
                        .collect::<Vec<_>>()
                })
                .filter(|uris| !uris.is_empty()),
            ..SubscriptionFilter::default()
        };
        // Acknowledged by the world, so that no change is announced to the
        // subscription before its acknowledgment, nor missed after it.
        self.world
            .listen(self.conn, &self.outbox, &id, granted)
            .await;
        self.log(&format!("subscription {id} open"));
        let mut table = self
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.next_task += 1;
        // The task ending (aborted by a cancellation, or with the server)
        // ends the subscription.
        let guard = Unlisten {
            world: Arc::clone(&self.world),
            conn: self.conn,
            id: id.clone(),
        };
        let handle = self.tasks.spawn(async move {
            let _guard = guard;
            std::future::pending::<()>().await;
        });
        table.insert(id, (self.next_task, handle));
    }
}

/// Ends a `subscriptions/listen` subscription when dropped.
struct Unlisten {
    world: Arc<crate::resources::World>,
    conn: u64,
    id: Id,
}

impl Drop for Unlisten {
    fn drop(&mut self) {
        self.world.unlisten(self.conn, &self.id);
    }
}

/// `ask_name`: asks for a name with an elicitation input request (a
/// multi-round-trip result), then greets whoever answered.
fn ask_name(
    discover: bool,
    responses: Option<&BTreeMap<String, Value>>,
    state: Option<&str>,
) -> Result<CallAnswer, ProtocolError> {
    if !discover {
        return Ok(CallAnswer::Complete(tools::error_result(
            "ask_name needs 2026-07-28 multi-round-trip results",
        )));
    }
    let answer = responses.and_then(|r| r.get("name"));
    match (answer, state) {
        (Some(answer), Some(ASK_NAME_STATE)) => {
            let text = match ElicitResult::deserialize(answer) {
                Ok(answer) if answer.is_accept() => format!(
                    "hello {}",
                    answer
                        .content
                        .as_ref()
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
                method: request::ElicitationCreate::METHOD.to_owned(),
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
