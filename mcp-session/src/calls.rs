//! Calling a tool: `tools/call` with its arguments checked against the
//! catalog first, `input_required` rounds answered through the session's
//! handler, a header mismatch answered by one refetch and retry, and the
//! answer told apart (a result, or a task where the server runs the call as
//! one).

use std::sync::Arc;

use mcp_stack_transport::SendContext;
use serde_json::{Value, json};

use mcp_stack_protocol::meta::RequestMeta;
use mcp_stack_protocol::request::{ElicitationCreate, Request, ToolsCall};
use mcp_stack_protocol::results::{InputRequest, InputRequiredResult, ResultType};
use mcp_stack_protocol::tasks::extension::DetailedTask;
use mcp_stack_protocol::tasks::{CreateTaskResult, Task, TaskMetadata};
use mcp_stack_protocol::types::CallToolResult;
use mcp_stack_protocol::{codes as mcp_codes, x_mcp_header};

use crate::catalog::Tools;
use crate::config::CallOptions;
use crate::conn::Inner;
use crate::error::SessionError;
use crate::parse::{
    CallMeta, CallParams, ResultShape, parse_call_result, parse_result, to_raw_params,
};
use crate::tools::ToolCatalog;

/// A task as the call that created it returned it.
#[derive(Debug, Clone)]
pub(crate) enum StartedTask {
    /// 2025-11-25's `CreateTaskResult`: a task the client asked for.
    Created(Box<Task>),
    /// 2026-07-28's `resultType: "task"` (the tasks extension): the full
    /// task, with its input requests, result or error.
    Detailed(Box<DetailedTask>),
}

impl StartedTask {
    pub(crate) fn summary(&self) -> Task {
        match self {
            StartedTask::Created(t) => (**t).clone(),
            StartedTask::Detailed(t) => t.summary(),
        }
    }
}

/// What a `tools/call` came to.
pub(crate) enum CallAnswer {
    /// The result (its output not yet checked), and the catalog to check it with.
    Complete(CallToolResult, Arc<ToolCatalog>),
    /// A task, whose result comes later.
    Task(StartedTask),
}

/// A call's arguments as JSON: whatever the caller gave, serialized once.
/// A value serde cannot write as JSON is an error of the arguments.
pub(crate) fn arguments_json(
    tool: &str,
    arguments: impl serde::Serialize,
) -> Result<Value, SessionError> {
    serde_json::to_value(arguments).map_err(|e| SessionError::InvalidArguments {
        tool: tool.to_owned(),
        problems: vec![crate::error::SchemaProblem {
            path: String::new(),
            message: format!("cannot be written as JSON: {e}"),
        }],
    })
}

/// A server that asks for a call to be sent again (`input_required`) on a
/// revision that has no input rounds; the call's arguments were not kept.
fn no_second_round(core: &Inner, method: &str) -> SessionError {
    SessionError::InvalidResponse {
        method: method.into(),
        reason: format!(
            "the server asked for the call again (input_required), which protocol {} does not have (only 2026-07-28 has input rounds)",
            core.revision.version().as_str()
        ),
    }
}

/// `base` with the `Mcp-Param-*` headers of a call, for the transport.
fn param_context(
    base: SendContext,
    params: &[x_mcp_header::HeaderParam],
    arguments: &Value,
) -> SendContext {
    x_mcp_header::param_values(params, arguments)
        .into_iter()
        .fold(base, |c, (name, value)| c.param_header(name, value))
}

impl Tools {
    /// Sends `tools/call` (asking for a task with `task` on 2025-11-25),
    /// answering `input_required` rounds, and returns what it came to: a
    /// result (not yet checked against the output schema) with the catalog
    /// it was checked against, or a task.
    pub(crate) async fn call(
        &self,
        core: &Inner,
        name: &str,
        arguments: Value,
        options: &CallOptions,
        task: Option<&TaskMetadata>,
    ) -> Result<CallAnswer, SessionError> {
        let mut catalog = self.catalog_naming(core, name).await?;
        let entry = Tools::checked_entry(core, &catalog, name, &arguments)?;

        let _serial = if core.config.supports_parallel_tool_calls {
            None
        } else {
            Some(self.call_gate.lock().await)
        };
        let method = ToolsCall::METHOD;
        let timeout = options.timeout.unwrap_or(core.config.request_timeout);
        let mirror_headers = core.mirrors_headers();
        let base = core.named_context(name);
        let mut context = if mirror_headers {
            param_context(base.clone(), entry.header_params(), &arguments)
        } else {
            base.clone()
        };
        // The arguments are kept only while a later request may send them
        // again: the retry after a header mismatch, or an input round.
        // Otherwise they are freed once the answer is in, before it is
        // parsed: a call with large arguments and a large result never
        // holds both parsed (and the allocator reuses the arguments' memory
        // for the result).
        let sends_again = mirror_headers || core.revision.has_input_rounds();
        let mut kept = Some(arguments);
        let tasks_by_extension = core.revision.tasks_by_extension();
        let mut refetched = false;
        let mut input: Option<(serde_json::Map<String, Value>, Option<String>)> = None;
        let mut rounds = 0usize;
        loop {
            let arguments = kept.as_ref().ok_or_else(|| no_second_round(core, method))?;
            let id = core.next_id();
            let token = id.id();
            let meta = CallMeta {
                entries: core.meta.as_ref().map(RequestMeta::entries),
                encoded: core.meta.as_ref().and_then(RequestMeta::entries_json),
                progress: options.on_progress.is_some().then_some(&token),
            };
            let params = CallParams {
                name,
                arguments,
                meta: (!meta.is_empty()).then_some(meta),
                input_responses: input.as_ref().map(|(r, _)| r),
                request_state: input.as_ref().and_then(|(_, s)| s.as_deref()),
                task,
            };
            // Written by serde straight into the outgoing frame.
            let sent = core
                .request_params(
                    id,
                    method,
                    &params,
                    timeout,
                    options.on_progress.as_ref(),
                    &context,
                )
                .await;
            if !sends_again {
                kept = None;
            }
            let result = match sent {
                Err(SessionError::Protocol { error, .. })
                    if mirror_headers && !refetched && error.code == mcp_codes::HEADER_MISMATCH =>
                {
                    // The spec's remedy: the tool's schema may have changed;
                    // fetch the catalog again and retry with its headers, once.
                    refetched = true;
                    tracing::info!(server = %core.config.server_name, tool = name, "header mismatch ({}); fetching tools/list again and retrying", error.message);
                    // From here on the new schema is the tool's: the
                    // arguments are checked against it before the retry, and
                    // the output after.
                    catalog = self.refresh(core).await?;
                    let arguments = kept.as_ref().ok_or_else(|| no_second_round(core, method))?;
                    let entry = Tools::checked_entry(core, &catalog, name, arguments)?;
                    context = param_context(base.clone(), entry.header_params(), arguments);
                    continue;
                }
                other => other?,
            };
            // Read as a tool result first, the common case: `resultType` and
            // `task` then sit among its other members. Only when it is not
            // one (or does not read as one) is it read again as what it is.
            let (complete, kind, task_object) = match parse_call_result(method, &result) {
                Ok(r) => {
                    let kind =
                        ResultType::named(r.extra.get(ResultType::KEY).and_then(Value::as_str));
                    let task_object = r.extra.get("task").is_some_and(Value::is_object);
                    (Ok(r), kind, task_object)
                }
                Err(e) => {
                    // A scan that builds nothing says what it is instead.
                    let shape: ResultShape = parse_result(method, &result)?;
                    let kind =
                        ResultType::named(shape.result_type.as_ref().and_then(Value::as_str));
                    (Err(e), kind, shape.task.is_some_and(|t| t.0))
                }
            };
            match kind {
                ResultType::InputRequired => {
                    if !core.revision.has_input_rounds() {
                        return Err(no_second_round(core, method));
                    }
                    rounds += 1;
                    if rounds > core.config.max_input_rounds {
                        return Err(SessionError::InvalidResponse {
                            method: method.into(),
                            reason: format!(
                                "the server still asked for input after {} rounds; gave up",
                                core.config.max_input_rounds
                            ),
                        });
                    }
                    let asked: InputRequiredResult = parse_result(method, &result)?;
                    let mut responses = serde_json::Map::new();
                    for (key, request) in asked.input_requests.iter().flatten() {
                        responses.insert(key.clone(), answer_input(core, request).await?);
                    }
                    // `requestState` goes back exactly as it came, or not at all.
                    input = Some((responses, asked.request_state));
                    continue;
                }
                ResultType::Task if tasks_by_extension => {
                    let task: DetailedTask = parse_result(method, &result)?;
                    return Ok(CallAnswer::Task(StartedTask::Detailed(Box::new(task))));
                }
                _ => {}
            }
            if task.is_some() && task_object {
                let created: CreateTaskResult = parse_result(method, &result)?;
                return Ok(CallAnswer::Task(StartedTask::Created(Box::new(
                    created.task,
                ))));
            }
            return Ok(CallAnswer::Complete(complete?, catalog));
        }
    }
}

/// Answers one of a server's input requests (multi-round-trip results)
/// through the handler. Without a handler, elicitation is declined and
/// anything else is an error.
pub(crate) async fn answer_input(
    core: &Inner,
    request: &InputRequest,
) -> Result<Value, SessionError> {
    let params = match &request.params {
        Some(p) => Some(to_raw_params(&request.method, p)?),
        None => None,
    };
    let answer = match &core.config.handler {
        Some(h) => {
            h.handle(
                &request.method,
                params.as_ref().and_then(|p| p.raw_value().ok()),
            )
            .await
        }
        None => None,
    };
    match answer {
        Some(Ok(value)) => Ok(value),
        Some(Err(error)) => Err(SessionError::InputRequest {
            method: request.method.clone(),
            reason: error.to_string(),
        }),
        None if request.method == ElicitationCreate::METHOD => Ok(json!({"action": "decline"})),
        None => Err(SessionError::InputRequest {
            method: request.method.clone(),
            reason: "this client has no handler for it".into(),
        }),
    }
}
