//! Tasks, in both designs: 2025-11-25's (a `tools/call` with `params.task`
//! on a session that negotiated 2025-11-25; `tasks/get`, the blocking
//! `tasks/result`, `tasks/list`, `tasks/cancel`, `notifications/tasks/status`)
//! and 2026-07-28's extension (`countdown` answers with a task when the
//! request declares `io.modelcontextprotocol/tasks`; `tasks/get` carries the
//! result or error; `tasks/update`; `tasks/cancel` acknowledges).
//!
//! Deterministic by design: a `countdown` task completes at the `polls`th
//! `tasks/get` (its own clock is the client's polling, not time), and a
//! `slow` task when its sleep ends. The tasks live in the [`World`], so the
//! instances of an HTTP server share them.
//!
//! [`World`]: crate::resources::World

use std::sync::Arc;

use mcp_stack_jsonrpc::Id;
use mcp_stack_protocol::codes as mcp_codes;
use mcp_stack_protocol::meta;
use mcp_stack_protocol::request::{self, Request as _};
use mcp_stack_protocol::results::ResultType;
use mcp_stack_protocol::tasks::extension::{self, DetailedTask, UpdateTaskParams};
use mcp_stack_protocol::tasks::{
    CreateTaskResult, ListTasksResult, Task, TaskIdParams, TaskMetadata,
};
use mcp_stack_protocol::types::{CallToolParams, EmptyResult, Extra, PaginatedParams};
use serde_json::{Map, Value, json};

use super::params::typed;
use super::{Server, tools_list};
use crate::outbox::{ProtocolError, raw};
use crate::tools::{self, CallContext, MAX_POLLS};

/// Whether a modern request declares the tasks extension in its `_meta`.
pub(super) fn declares_extension(params: &Map<String, Value>) -> bool {
    params
        .get(meta::KEY)
        .and_then(|m| m.get(meta::CLIENT_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(extension::ID))
        .is_some_and(|v| !v.is_null())
}

/// `-32021` for a modern task request without the extension declared.
fn missing_extension() -> ProtocolError {
    ProtocolError::with_data(
        mcp_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "Missing required client capability",
        json!({"requiredCapabilities": {"extensions": {extension::ID: {}}}}),
    )
}

/// The `countdown` arguments: how many polls, and whether it fails.
fn countdown_args(call: &CallToolParams) -> Result<(u64, bool), ProtocolError> {
    let args = call.arguments.clone().unwrap_or_default();
    let polls = match args.get("polls") {
        None | Some(Value::Null) => 2,
        Some(v) => v.as_u64().filter(|n| *n <= MAX_POLLS).ok_or_else(|| {
            ProtocolError::invalid_field(
                "arguments.polls",
                format!("expected an integer from 0 to {MAX_POLLS}"),
            )
        })?,
    };
    let fail = match args.get("fail") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(ProtocolError::invalid_field(
                "arguments.fail",
                "expected a boolean",
            ));
        }
    };
    Ok((polls, fail))
}

impl Server {
    /// Whether a `tools/call` runs as a task, and if so starts it and
    /// answers with it (`true`). 2025-11-25: the session negotiated
    /// 2025-11-25 and the call carries `task`; a tool that does not run as
    /// a task is `-32601`. 2026-07-28: `countdown`, when the request
    /// declares the extension.
    pub(super) async fn maybe_task(
        &mut self,
        id: &Id,
        call: &CallToolParams,
        discover: bool,
        declared: bool,
    ) -> bool {
        let augmented = call.extra.get("task").filter(|t| t.is_object());
        let wanted = if discover {
            declared && call.name == "countdown"
        } else {
            augmented.is_some() && self.speaks_tasks()
        };
        if !wanted {
            return false;
        }
        let answer = self.start_task(call, discover, augmented).await;
        self.outbox.respond(id.clone(), answer).await;
        true
    }

    /// Whether this (legacy) session negotiated 2025-11-25, the revision with tasks.
    pub(super) fn speaks_tasks(&self) -> bool {
        self.negotiated == Some(mcp_stack_protocol::ProtocolVersion::V2025_11_25)
    }

    async fn start_task(
        &mut self,
        call: &CallToolParams,
        discover: bool,
        augmented: Option<&Value>,
    ) -> Result<mcp_stack_jsonrpc::RawJson, ProtocolError> {
        let ttl = augmented
            .and_then(|t| serde_json::from_value::<TaskMetadata>(t.clone()).ok())
            .and_then(|t| t.ttl);
        let store = &self.world.tasks;
        match call.name.as_str() {
            "countdown" => {
                let countdown = countdown_args(call)?;
                let notify = (!discover).then(|| self.outbox.clone());
                let task = store.create(discover, ttl, Some(countdown), notify);
                self.log(&format!("task {} started (countdown)", task.task_id));
                task_answer(task, discover)
            }
            "slow" if !discover => {
                let task = store.create(false, ttl, None, Some(self.outbox.clone()));
                let ctx = CallContext {
                    workspace: self.workspace.clone(),
                    outbox: self.outbox.clone(),
                    progress_token: None,
                    discover,
                    world: Arc::clone(&self.world),
                    client: self.client.clone(),
                    roots_changed: Arc::clone(&self.roots_changed),
                };
                let world = Arc::clone(&self.world);
                let (name, arguments) = (call.name.clone(), call.arguments.clone());
                let task_id = task.task_id.clone();
                let runner = tokio::spawn(async move {
                    let outcome = tools::call(&name, &arguments.unwrap_or_default(), ctx).await;
                    world.tasks.complete(&task_id, outcome).await;
                });
                store.set_runner(&task.task_id, runner.abort_handle());
                self.log(&format!("task {} started (slow)", task.task_id));
                task_answer(task, false)
            }
            other => Err(ProtocolError::method_not_found(
                request::ToolsCall::METHOD,
                &format!(
                    " as a task: tool {other:?} does not run as a task (execution.taskSupport)"
                ),
            )),
        }
    }

    /// The task methods; `None` for other methods (and for those of the
    /// other design), `Some(None)` when the answer comes later.
    pub(super) async fn task_method(
        &mut self,
        id: &Id,
        method: &str,
        params: &Result<Map<String, Value>, ProtocolError>,
        discover: bool,
    ) -> Option<Option<Result<mcp_stack_jsonrpc::RawJson, ProtocolError>>> {
        let legacy_only = matches!(
            method,
            request::TasksResult::METHOD | request::TasksList::METHOD
        );
        let known = matches!(
            method,
            request::TasksGet::METHOD
                | request::TasksCancel::METHOD
                | request::TasksResult::METHOD
                | request::TasksList::METHOD
        ) || (discover && method == request::TasksUpdate::METHOD);
        if !known || (discover && legacy_only) || (!discover && !self.speaks_tasks()) {
            return None;
        }
        let params = match params {
            Ok(p) => p.clone(),
            Err(_) => {
                return Some(Some(Err(ProtocolError::invalid_field(
                    "params",
                    "expected an object",
                ))));
            }
        };
        if discover && !declares_extension(&params) {
            return Some(Some(Err(missing_extension())));
        }
        let store = &self.world.tasks;
        Some(Some(match method {
            request::TasksList::METHOD => typed::<PaginatedParams>(params, |p| {
                super::params::expect(
                    p,
                    "cursor",
                    super::params::Presence::Optional,
                    Value::is_string,
                    "a string",
                )
            })
            .and_then(|p| {
                let all = store.legacy_tasks();
                let (range, next_cursor) =
                    tools_list::page(p.cursor.as_deref(), all.len(), self.options().page_size)?;
                raw(&ListTasksResult {
                    tasks: all.get(range).unwrap_or_default().to_vec(),
                    next_cursor,
                    extra: Extra::new(),
                })
            }),
            request::TasksUpdate::METHOD => {
                typed::<UpdateTaskParams>(params, |_| None).and_then(|p| {
                    // These tasks never ask for input: answers are acknowledged and ignored.
                    store.known(&p.task_id)?;
                    raw(&complete(EmptyResult::default()))
                })
            }
            request::TasksResult::METHOD => {
                let p = match typed::<TaskIdParams>(params, |_| None) {
                    Ok(p) => p,
                    Err(e) => return Some(Some(Err(e))),
                };
                // Blocks until the task ends: answered from a task of its own.
                let world = Arc::clone(&self.world);
                self.spawn_answer(id.clone(), async move {
                    world.tasks.result(&p.task_id).await.and_then(|r| raw(&r))
                });
                return Some(None);
            }
            _ => {
                let p = match typed::<TaskIdParams>(params, |_| None) {
                    Ok(p) => p,
                    Err(e) => return Some(Some(Err(e))),
                };
                let entry = if method == request::TasksGet::METHOD {
                    store.get(&p.task_id).await
                } else {
                    store.cancel(&p.task_id).await
                };
                entry.and_then(|e| match (discover, method) {
                    (true, request::TasksCancel::METHOD) => raw(&complete(EmptyResult::default())),
                    (true, _) => {
                        let mut d = e.detailed();
                        ResultType::Complete.write(&mut d.extra);
                        raw(&d)
                    }
                    (false, _) => raw(&e.task),
                })
            }
        }))
    }
}

/// An empty result marked complete (2026-07-28).
fn complete(mut result: EmptyResult) -> EmptyResult {
    ResultType::Complete.write(&mut result.extra);
    result
}

/// The answer that creates a task, in the request's design.
fn task_answer(task: Task, discover: bool) -> Result<mcp_stack_jsonrpc::RawJson, ProtocolError> {
    if discover {
        let mut d = DetailedTask::new(task.task_id, task.status, task.created_at);
        d.status_message = task.status_message;
        d.ttl_ms = task.ttl;
        d.poll_interval_ms = task.poll_interval;
        raw(&d.created())
    } else {
        raw(&CreateTaskResult {
            task,
            meta: None,
            extra: Extra::new(),
        })
    }
}
