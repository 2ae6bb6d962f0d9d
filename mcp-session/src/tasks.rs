//! Tasks: calling a tool whose result comes later, and following it.
//!
//! What is offered depends on the server, and nothing goes out that the
//! server did not offer:
//!
//! * **2025-11-25**: the server declares `tasks.requests.tools.call` and the
//!   tool's `execution.taskSupport` is `optional` or `required`. The call
//!   carries `params.task`; the answer is the task. [`TaskHandle::wait`]
//!   polls `tasks/get` (at the server's `pollInterval`) until the task ends
//!   or needs input, then fetches the result with `tasks/result` (whose wait
//!   for input is served by the session's
//!   [`ClientHandler`](crate::ClientHandler)). `tasks/list` and
//!   `tasks/cancel` need `tasks.list` and `tasks.cancel`.
//! * **2026-07-28**: the server declares the `io.modelcontextprotocol/tasks`
//!   extension, and this client declares it on every request (unless
//!   [`SessionConfig::tasks_extension`](crate::SessionConfig::tasks_extension)
//!   is off). The server decides per call whether to answer with a task;
//!   [`TaskCall`] holds either. Waiting polls `tasks/get` (at
//!   `pollIntervalMs`) until the task ends, whose answer carries the result;
//!   a task that needs input gets it through the handler and `tasks/update`
//!   (each request answered once). No `tasks/result`, no `tasks/list`.
//!   [`Session::call_tool`](crate::Session::call_tool) follows a task the server returns unasked, so
//!   plain callers keep working.
//!
//! Every wait is bounded; when the bound passes, the wait ends with
//! [`SessionError::TaskTimeout`] and polls no more (the task goes on on the
//! server: wait again, or cancel it).

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcp_stack_jsonrpc::ErrorObject;
use mcp_stack_protocol::request::{
    Request, TasksCancel, TasksGet, TasksList, TasksResult, TasksUpdate,
};
use mcp_stack_protocol::tasks::extension::{self, DetailedTask, UpdateTaskParams};
use mcp_stack_protocol::tasks::{
    ListTasksResult, Task, TaskIdParams, TaskMetadata, TaskStatus, TaskSupport,
};
use mcp_stack_protocol::types::{CallToolResult, Extra};
use serde_json::Value;
use tokio::time::Instant;

use crate::calls::{CallAnswer, StartedTask, answer_input};
use crate::catalog::Tools;
use crate::config::CallOptions;
use crate::conn::Inner;
use crate::error::SessionError;
use crate::paging::Page;
use crate::parse::{parse_call_result, parse_value};
use crate::pending::Deadline;

/// How often to poll a task that gives no interval.
const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The shortest interval between polls, whatever the server says.
const MIN_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// What [`Session::call_tool_as_task`](crate::Session::call_tool_as_task) came to: a task, or (the server's
/// choice on 2026-07-28, or a 2025-11-25 server ignoring the request) the
/// result itself.
#[derive(Debug)]
#[non_exhaustive]
pub enum TaskCall {
    /// The call runs as a task.
    Task(TaskHandle),
    /// The server answered at once; the output is checked.
    Complete(CallToolResult),
}

impl TaskCall {
    /// The result: the one given at once, or the task's, waiting at most
    /// `timeout` for it ([`TaskHandle::wait`]).
    pub async fn wait(self, timeout: Duration) -> Result<CallToolResult, SessionError> {
        match self {
            TaskCall::Complete(result) => Ok(result),
            TaskCall::Task(mut handle) => handle.wait(timeout).await,
        }
    }
}

/// A task on the server: its last known state, and the operations on it.
///
/// Holds the session open while it lives.
pub struct TaskHandle {
    core: Arc<Inner>,
    /// The session's catalog, for the output check.
    tools: Arc<Tools>,
    /// The tool it runs, when known (for the output check).
    tool: Option<String>,
    task: Task,
    /// 2026-07-28: the last full answer (input requests, result, error).
    detail: Option<Box<DetailedTask>>,
    /// Run by the tasks extension (2026-07-28): polled to its end, whose
    /// answer carries the result; input requests answered with
    /// `tasks/update`.
    by_extension: bool,
    /// 2026-07-28: the input requests already answered, by key.
    answered: BTreeSet<String>,
}

impl fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("task_id", &self.task.task_id)
            .field("status", &self.task.status)
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

impl TaskHandle {
    pub(crate) fn new(
        core: Arc<Inner>,
        tools: Arc<Tools>,
        tool: &str,
        started: StartedTask,
    ) -> Self {
        let (task, detail, by_extension) = match started {
            StartedTask::Created(task) => (*task, None, false),
            StartedTask::Detailed(detail) => (detail.summary(), Some(detail), true),
        };
        TaskHandle {
            core,
            tools,
            tool: Some(tool.to_owned()),
            task,
            detail,
            by_extension,
            answered: BTreeSet::new(),
        }
    }

    /// The task's id.
    pub fn id(&self) -> &str {
        &self.task.task_id
    }

    /// The tool it runs, when known (a handle from
    /// [`Session::task_handle`](crate::Session::task_handle) does not know it).
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// The task's state when last seen (no request).
    pub fn last(&self) -> &Task {
        &self.task
    }

    /// Asks the server for the task's state (`tasks/get`), bounded by the
    /// request timeout.
    pub async fn status(&mut self) -> Result<&Task, SessionError> {
        let timeout = self.core.config.request_timeout;
        self.poll(timeout).await?;
        Ok(&self.task)
    }

    /// Waits at most `timeout` for the task's result, polling `tasks/get`
    /// at the server's interval (see the [module](self)). A task that
    /// failed is [`SessionError::TaskFailed`], one cancelled
    /// [`SessionError::TaskCancelled`], and running out of time
    /// [`SessionError::TaskTimeout`], after which nothing more is sent.
    pub async fn wait(&mut self, timeout: Duration) -> Result<CallToolResult, SessionError> {
        self.wait_with(timeout, |_| {}).await
    }

    /// [`wait`](Self::wait), calling `on_change` with the task's state each
    /// time a poll finds its status or status message changed.
    pub async fn wait_with(
        &mut self,
        timeout: Duration,
        mut on_change: impl FnMut(&Task) + Send,
    ) -> Result<CallToolResult, SessionError> {
        let mut deadline = Deadline::new(Instant::now(), timeout, timeout);
        self.wait_until(&mut deadline, false, &mut on_change).await
    }

    /// The task's result. On 2025-11-25, `tasks/result`, which the server
    /// answers when the task has ended; on 2026-07-28, which has no such
    /// method, [`wait`](Self::wait). Either is bounded by the request
    /// timeout.
    pub async fn result(&mut self) -> Result<CallToolResult, SessionError> {
        let timeout = self.core.config.request_timeout;
        if self.by_extension {
            return self.wait(timeout).await;
        }
        let mut deadline = Deadline::new(Instant::now(), timeout, timeout);
        self.fetch_result(&mut deadline).await
    }

    /// Asks the server to cancel the task (`tasks/cancel`). On 2025-11-25
    /// the answer is the cancelled task (see [`last`](Self::last)); on
    /// 2026-07-28 an acknowledgment: the task may still end otherwise.
    pub async fn cancel(&mut self) -> Result<(), SessionError> {
        let inner = &self.core;
        if !self.by_extension
            && !inner
                .init
                .capabilities
                .tasks
                .as_ref()
                .is_some_and(|t| t.cancel_supported())
        {
            return Err(SessionError::NotSupported("tasks/cancel (tasks.cancel)"));
        }
        let params = TaskIdParams::new(self.id());
        let context = inner.named_context(self.id());
        let answer = inner
            .send::<TasksCancel>(&params, inner.config.request_timeout, &context)
            .await?;
        if !self.by_extension {
            self.task = parse_value(TasksCancel::METHOD, answer)?;
        }
        Ok(())
    }

    /// One `tasks/get`, bounded by `timeout`.
    async fn poll(&mut self, timeout: Duration) -> Result<(), SessionError> {
        let inner = &self.core;
        let method = TasksGet::METHOD;
        let params = TaskIdParams::new(self.id());
        let context = inner.named_context(self.id());
        let answer = inner.send::<TasksGet>(&params, timeout, &context).await?;
        if self.by_extension {
            let detail: DetailedTask = parse_value(method, answer)?;
            self.task = detail.summary();
            self.detail = Some(Box::new(detail));
        } else {
            self.task = parse_value(method, answer)?;
        }
        Ok(())
    }

    fn poll_interval(&self) -> Duration {
        self.task
            .poll_interval
            .map_or(DEFAULT_POLL_INTERVAL, Duration::from_millis)
            .max(MIN_POLL_INTERVAL)
    }

    fn timed_out(&self, deadline: &Deadline) -> SessionError {
        SessionError::TaskTimeout {
            task_id: self.task.task_id.clone(),
            after: deadline.elapsed(Instant::now()),
            status: self.task.status.to_string(),
        }
    }

    /// What is left before `deadline`, or the timeout error.
    fn remaining(&self, deadline: &Deadline) -> Result<Duration, SessionError> {
        let left = deadline.at().saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(self.timed_out(deadline))
        } else {
            Ok(left)
        }
    }

    /// Polls until the task ends (or, on 2025-11-25, needs input), then
    /// returns its result. With `extend`, each change of the task's state
    /// pushes the deadline out (as progress does for a request).
    pub(crate) async fn wait_until(
        &mut self,
        deadline: &mut Deadline,
        extend: bool,
        on_change: &mut (dyn FnMut(&Task) + Send),
    ) -> Result<CallToolResult, SessionError> {
        let request_timeout = self.core.config.request_timeout;
        loop {
            let status = self.task.status.clone();
            if status.is_terminal() || (!self.by_extension && status == TaskStatus::InputRequired) {
                return self.finish(deadline).await;
            }
            let answered = if self.by_extension && status == TaskStatus::InputRequired {
                self.answer_inputs(deadline).await?
            } else {
                false
            };
            if !answered {
                let wake = Instant::now() + self.poll_interval();
                tokio::time::sleep_until(wake.min(deadline.at())).await;
            }
            let left = self.remaining(deadline)?;
            let before = (
                self.task.status.clone(),
                self.task.status_message.clone(),
                self.task.last_updated_at.clone(),
            );
            match self.poll(left.min(request_timeout)).await {
                Err(e) if e.is_timeout() && Instant::now() >= deadline.at() => {
                    return Err(self.timed_out(deadline));
                }
                other => other?,
            }
            let after = (
                &self.task.status,
                &self.task.status_message,
                &self.task.last_updated_at,
            );
            if (&before.0, &before.1) != (after.0, after.1) {
                on_change(&self.task);
            }
            if extend && (&before.0, &before.1, &before.2) != after {
                deadline.on_progress(Instant::now());
            }
        }
    }

    /// 2026-07-28: answers the input requests not answered yet, with one
    /// `tasks/update`. Whether anything was sent.
    async fn answer_inputs(&mut self, deadline: &Deadline) -> Result<bool, SessionError> {
        let asked: Vec<_> = self
            .detail
            .as_ref()
            .and_then(|d| d.input_requests.as_ref())
            .into_iter()
            .flatten()
            .filter(|(key, _)| !self.answered.contains(*key))
            .map(|(key, request)| (key.clone(), request.clone()))
            .collect();
        if asked.is_empty() {
            return Ok(false);
        }
        let mut responses = BTreeMap::new();
        for (key, request) in &asked {
            responses.insert(key.clone(), answer_input(&self.core, request).await?);
        }
        let left = self.remaining(deadline)?;
        let inner = &self.core;
        let params = UpdateTaskParams {
            task_id: self.task.task_id.clone(),
            input_responses: responses,
            meta: None,
            extra: Extra::new(),
        };
        let context = inner.named_context(self.id());
        let timeout = left.min(inner.config.request_timeout);
        inner
            .send_acknowledged::<TasksUpdate>(&params, timeout, &context)
            .await?;
        self.answered.extend(asked.into_iter().map(|(key, _)| key));
        Ok(true)
    }

    /// The result of a task that has ended (or, on 2025-11-25, needs input).
    async fn finish(&mut self, deadline: &mut Deadline) -> Result<CallToolResult, SessionError> {
        if self.task.status == TaskStatus::Cancelled {
            return Err(SessionError::TaskCancelled {
                task_id: self.task.task_id.clone(),
                message: self.task.status_message.clone(),
            });
        }
        if !self.by_extension {
            return self.fetch_result(deadline).await;
        }
        let detail = self.detail.take().unwrap_or_else(|| {
            // Not reached: an extension handle always has its last answer.
            Box::new(DetailedTask::new(self.id(), self.task.status.clone(), ""))
        });
        let outcome = match (&detail.status, &detail.result, &detail.error) {
            (TaskStatus::Completed, Some(result), _) => {
                let result: CallToolResult = parse_value(TasksGet::METHOD, result.clone())?;
                self.checked(result).await
            }
            (TaskStatus::Completed, None, _) => Err(SessionError::InvalidResponse {
                method: TasksGet::METHOD.into(),
                reason: format!("task {} completed without a result", detail.task_id),
            }),
            (_, _, error) => Err(SessionError::TaskFailed {
                task_id: detail.task_id.clone(),
                error: error
                    .as_ref()
                    .and_then(|e| serde_json::from_value::<ErrorObject>(e.clone()).ok())
                    .map(Box::new),
                message: detail.status_message.clone(),
            }),
        };
        self.detail = Some(detail);
        outcome
    }

    /// 2025-11-25: `tasks/result`, within the deadline.
    async fn fetch_result(
        &mut self,
        deadline: &mut Deadline,
    ) -> Result<CallToolResult, SessionError> {
        let left = self.remaining(deadline)?;
        let inner = &self.core;
        let method = TasksResult::METHOD;
        let params = inner.params(method, &TaskIdParams::new(self.id()))?;
        let id = inner.next_id();
        match inner
            .request_raw(id, method, Some(params), left, None, &inner.context())
            .await
        {
            Ok(raw) => {
                let result: <TasksResult as Request>::Result = parse_call_result(method, &raw)?;
                self.checked(result).await
            }
            Err(SessionError::Protocol { error, .. }) => Err(SessionError::TaskFailed {
                task_id: self.task.task_id.clone(),
                message: self.task.status_message.clone(),
                error: Some(Box::new(error)),
            }),
            Err(e) if e.is_timeout() && Instant::now() >= deadline.at() => {
                Err(self.timed_out(deadline))
            }
            Err(e) => Err(e),
        }
    }

    /// The output check `call_tool` makes, when the tool is known.
    async fn checked(&self, result: CallToolResult) -> Result<CallToolResult, SessionError> {
        let Some(tool) = &self.tool else {
            return Ok(result);
        };
        let catalog = self.tools.catalog(&self.core, false).await?;
        Tools::checked_output(&catalog, tool, result)
    }
}

impl Page for ListTasksResult {
    type Item = Task;
    fn into_parts(self) -> (Vec<Task>, Option<String>, Extra) {
        (self.tasks, self.next_cursor, self.extra)
    }
}

/// The tasks feature of a session: tool calls run as tasks, and handles on
/// tasks. It keeps no state of its own: a task's is its [`TaskHandle`]'s.
pub(crate) struct Tasks<'a> {
    core: &'a Arc<Inner>,
    tools: &'a Arc<Tools>,
    /// The session's revision runs tasks by the extension (2026-07-28),
    /// not by request (2025-11-25): asked of the revision once, here.
    by_extension: bool,
}

impl<'a> Tasks<'a> {
    /// The tasks feature over this core and catalog.
    pub(crate) fn new(core: &'a Arc<Inner>, tools: &'a Arc<Tools>) -> Self {
        Tasks {
            core,
            tools,
            by_extension: core.revision.tasks_by_extension(),
        }
    }

    /// Behind [`Session::call_tool_as_task`](crate::Session::call_tool_as_task).
    pub(crate) async fn call_as_task(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<TaskCall, SessionError> {
        let metadata;
        self.offered()?;
        let task = if self.by_extension {
            None
        } else {
            let catalog = self.tools.catalog_naming(self.core, name).await?;
            let entry = Tools::checked_entry(self.core, &catalog, name, &arguments)?;
            if TaskSupport::of(entry.tool().as_ref()) == TaskSupport::Forbidden {
                return Err(SessionError::TaskForbidden {
                    tool: name.to_owned(),
                });
            }
            metadata = TaskMetadata {
                ttl: options
                    .task_ttl
                    .map(|ttl| u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)),
                extra: Extra::new(),
            };
            Some(&metadata)
        };
        match self
            .tools
            .call(self.core, name, arguments, &options, task)
            .await?
        {
            CallAnswer::Complete(result, catalog) => Ok(TaskCall::Complete(Tools::checked_output(
                &catalog, name, result,
            )?)),
            CallAnswer::Task(started) => Ok(TaskCall::Task(TaskHandle::new(
                Arc::clone(self.core),
                Arc::clone(self.tools),
                name,
                started,
            ))),
        }
    }

    /// Behind [`Session::task_handle`](crate::Session::task_handle).
    pub(crate) async fn handle(&self, task_id: &str) -> Result<TaskHandle, SessionError> {
        self.offered()?;
        let by_extension = self.by_extension;
        let placeholder = Task::new(task_id, TaskStatus::Working, "");
        let mut handle = TaskHandle {
            core: Arc::clone(self.core),
            tools: Arc::clone(self.tools),
            tool: None,
            detail: by_extension
                .then(|| Box::new(DetailedTask::new(task_id, TaskStatus::Working, ""))),
            task: placeholder,
            by_extension,
            answered: BTreeSet::new(),
        };
        handle.status().await?;
        Ok(handle)
    }

    /// Behind [`Session::list_tasks`](crate::Session::list_tasks).
    pub(crate) async fn list(&self) -> Result<Vec<Task>, SessionError> {
        if self.by_extension {
            return Err(SessionError::NotSupported(
                "tasks/list on 2026-07-28 (the tasks extension has no list: keep the ids of the \
                 tasks you create)",
            ));
        }
        let declared = self
            .core
            .init
            .capabilities
            .tasks
            .as_ref()
            .is_some_and(|t| t.list_supported());
        if !declared {
            return Err(SessionError::NotSupported("tasks/list (tasks.list)"));
        }
        Ok(self.core.pages::<TasksList>().await?.0)
    }

    /// Whether tool calls may run as tasks on this server, in this
    /// session's revision.
    fn offered(&self) -> Result<(), SessionError> {
        let caps = &self.core.init.capabilities;
        if self.by_extension {
            if !extension::offered_by(caps) {
                return Err(SessionError::NotSupported(
                    "tasks (the io.modelcontextprotocol/tasks extension)",
                ));
            }
            if !self.core.config.tasks_extension {
                return Err(SessionError::NotSupported(
                    "tasks with this client's settings (SessionConfig::tasks_extension is off, \
                     so the extension is not declared)",
                ));
            }
            return Ok(());
        }
        if caps
            .tasks
            .as_ref()
            .is_some_and(|t| t.tool_calls_supported())
        {
            Ok(())
        } else {
            Err(SessionError::NotSupported(
                "tasks for tool calls (tasks.requests.tools.call)",
            ))
        }
    }
}
