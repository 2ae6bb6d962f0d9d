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
//!   [`Session::call_tool`] follows a task the server returns unasked, so
//!   plain callers keep working.
//!
//! Every wait is bounded; when the bound passes, the wait ends with
//! [`SessionError::TaskTimeout`] and polls no more (the task goes on on the
//! server: wait again, or cancel it).

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use mcp_jsonrpc::ErrorObject;
use mcp_protocol::methods;
use mcp_protocol::tasks::extension::{self, DetailedTask, UpdateTaskParams};
use mcp_protocol::tasks::{
    ListTasksResult, Task, TaskIdParams, TaskMetadata, TaskStatus, TaskSupport,
};
use mcp_protocol::types::{CallToolResult, Extra};
use serde_json::Value;
use tokio::time::Instant;

use crate::config::CallOptions;
use crate::error::SessionError;
use crate::parse::{parse_result, parse_value};
use crate::pending::Deadline;
use crate::session::{CallAnswer, Session};

/// How often to poll a task that gives no interval.
const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The shortest interval between polls, whatever the server says.
const MIN_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// A task as the call that created it returned it.
#[derive(Debug, Clone)]
pub(crate) enum StartedTask {
    /// 2025-11-25's `CreateTaskResult`.
    Legacy(Box<Task>),
    /// 2026-07-28's `resultType: "task"`.
    Modern(Box<DetailedTask>),
}

impl StartedTask {
    pub(crate) fn summary(&self) -> Task {
        match self {
            StartedTask::Legacy(t) => (**t).clone(),
            StartedTask::Modern(t) => t.summary(),
        }
    }
}

/// What [`Session::call_tool_as_task`] came to: a task, or (the server's
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
    session: Session,
    /// The tool it runs, when known (for the output check).
    tool: Option<String>,
    task: Task,
    /// 2026-07-28: the last full answer (input requests, result, error).
    detail: Option<Box<DetailedTask>>,
    modern: bool,
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
    pub(crate) fn new(session: Session, tool: &str, started: StartedTask) -> Self {
        let (task, detail, modern) = match started {
            StartedTask::Legacy(task) => (*task, None, false),
            StartedTask::Modern(detail) => (detail.summary(), Some(detail), true),
        };
        TaskHandle {
            session,
            tool: Some(tool.to_owned()),
            task,
            detail,
            modern,
            answered: BTreeSet::new(),
        }
    }

    /// The task's id.
    pub fn id(&self) -> &str {
        &self.task.task_id
    }

    /// The tool it runs, when known (a handle from
    /// [`Session::task_handle`] does not know it).
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
        let timeout = self.session.inner.config.request_timeout;
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
        let timeout = self.session.inner.config.request_timeout;
        if self.modern {
            return self.wait(timeout).await;
        }
        let mut deadline = Deadline::new(Instant::now(), timeout, timeout);
        self.fetch_result(&mut deadline).await
    }

    /// Asks the server to cancel the task (`tasks/cancel`). On 2025-11-25
    /// the answer is the cancelled task (see [`last`](Self::last)); on
    /// 2026-07-28 an acknowledgment: the task may still end otherwise.
    pub async fn cancel(&mut self) -> Result<(), SessionError> {
        let inner = &self.session.inner;
        if !self.modern
            && !inner
                .init
                .capabilities
                .tasks
                .as_ref()
                .is_some_and(|t| t.cancel_supported())
        {
            return Err(SessionError::NotSupported("tasks/cancel (tasks.cancel)"));
        }
        let method = methods::TASKS_CANCEL;
        let params = TaskIdParams::new(self.id());
        let context = inner.named_context(self.id());
        let answer: Value = inner
            .request(method, &params, inner.config.request_timeout, &context)
            .await?;
        if !self.modern {
            self.task = parse_value(method, answer)?;
        }
        Ok(())
    }

    /// One `tasks/get`, bounded by `timeout`.
    async fn poll(&mut self, timeout: Duration) -> Result<(), SessionError> {
        let inner = &self.session.inner;
        let method = methods::TASKS_GET;
        let params = TaskIdParams::new(self.id());
        let context = inner.named_context(self.id());
        let answer: Value = inner.request(method, &params, timeout, &context).await?;
        if self.modern {
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
        let request_timeout = self.session.inner.config.request_timeout;
        loop {
            let status = self.task.status.clone();
            if status.is_terminal() || (!self.modern && status == TaskStatus::InputRequired) {
                return self.finish(deadline).await;
            }
            let answered = if self.modern && status == TaskStatus::InputRequired {
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
            responses.insert(key.clone(), self.session.answer_input(request).await?);
        }
        let left = self.remaining(deadline)?;
        let inner = &self.session.inner;
        let params = UpdateTaskParams {
            task_id: self.task.task_id.clone(),
            input_responses: responses,
            meta: None,
            extra: Extra::new(),
        };
        let context = inner.named_context(self.id());
        let timeout = left.min(inner.config.request_timeout);
        let _: Value = inner
            .request(methods::TASKS_UPDATE, &params, timeout, &context)
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
        if !self.modern {
            return self.fetch_result(deadline).await;
        }
        let detail = self.detail.take().unwrap_or_else(|| {
            // Not reached: a modern handle always has its last answer.
            Box::new(DetailedTask::new(self.id(), self.task.status.clone(), ""))
        });
        let outcome = match (&detail.status, &detail.result, &detail.error) {
            (TaskStatus::Completed, Some(result), _) => {
                let result: CallToolResult = parse_value(methods::TASKS_GET, result.clone())?;
                self.checked(result).await
            }
            (TaskStatus::Completed, None, _) => Err(SessionError::InvalidResponse {
                method: methods::TASKS_GET.into(),
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
        let inner = &self.session.inner;
        let method = methods::TASKS_RESULT;
        let params = inner.params(method, &TaskIdParams::new(self.id()))?;
        let id = inner.next_id();
        match inner
            .request_raw(id, method, Some(params), left, None, &inner.context())
            .await
        {
            Ok(raw) => {
                let result: CallToolResult = parse_result(method, &raw)?;
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
        let catalog = self.session.catalog(false).await?;
        self.session.checked_output(&catalog, tool, result)
    }
}

impl Session {
    /// Calls a tool as a task (see the [`tasks`](crate::tasks) module):
    /// the arguments are checked as [`call_tool_with`](Self::call_tool_with)
    /// checks them, and `options.task_ttl` asks (2025-11-25) for how long the
    /// server keeps the task.
    ///
    /// A server that does not offer tasks for tool calls (on 2025-11-25, no
    /// `tasks.requests.tools.call`; on 2026-07-28, no tasks extension) is
    /// [`SessionError::NotSupported`], and a 2025-11-25 tool whose
    /// `execution.taskSupport` is absent or `forbidden`
    /// [`SessionError::TaskForbidden`]; nothing is sent.
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<TaskCall, SessionError> {
        let metadata;
        let task = if self.inner.version.tasks() == mcp_protocol::TaskModel::Extension {
            self.tasks_offered()?;
            None
        } else {
            self.tasks_offered()?;
            let mut catalog = self.catalog(false).await?;
            if catalog.get(name).is_none() {
                catalog = self.refresh_tools().await?;
            }
            let entry = self.checked_entry(&catalog, name, &arguments)?;
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
        match self.call_inner(name, &arguments, &options, task).await? {
            CallAnswer::Complete(result, catalog) => Ok(TaskCall::Complete(
                self.checked_output(&catalog, name, result)?,
            )),
            CallAnswer::Task(started) => {
                Ok(TaskCall::Task(TaskHandle::new(self.clone(), name, started)))
            }
        }
    }

    /// A handle on a task this client created before (its id kept, say,
    /// across a restart), with its state from `tasks/get`. The tool is not
    /// known, so its result is not checked against an output schema.
    pub async fn task_handle(&self, task_id: &str) -> Result<TaskHandle, SessionError> {
        self.tasks_offered()?;
        let modern = self.inner.version.tasks() == mcp_protocol::TaskModel::Extension;
        let placeholder = Task::new(task_id, TaskStatus::Working, "");
        let mut handle = TaskHandle {
            session: self.clone(),
            tool: None,
            detail: modern.then(|| Box::new(DetailedTask::new(task_id, TaskStatus::Working, ""))),
            task: placeholder,
            modern,
            answered: BTreeSet::new(),
        };
        handle.status().await?;
        Ok(handle)
    }

    /// The server's tasks, every page (`tasks/list`, 2025-11-25; the
    /// 2026-07-28 extension has no list). Needs the server's `tasks.list`.
    pub async fn list_tasks(&self) -> Result<Vec<Task>, SessionError> {
        if self.inner.version.tasks() == mcp_protocol::TaskModel::Extension {
            return Err(SessionError::NotSupported(
                "tasks/list on 2026-07-28 (the tasks extension has no list: keep the ids of the \
                 tasks you create)",
            ));
        }
        let declared = self
            .inner
            .init
            .capabilities
            .tasks
            .as_ref()
            .is_some_and(|t| t.list_supported());
        if !declared {
            return Err(SessionError::NotSupported("tasks/list (tasks.list)"));
        }
        Ok(self.pages::<ListTasksResult>(methods::TASKS_LIST).await?.0)
    }

    /// Whether tool calls may run as tasks on this server, in this
    /// session's revision.
    fn tasks_offered(&self) -> Result<(), SessionError> {
        let caps = &self.inner.init.capabilities;
        if self.inner.version.tasks() == mcp_protocol::TaskModel::Extension {
            if !extension::offered_by(caps) {
                return Err(SessionError::NotSupported(
                    "tasks (the io.modelcontextprotocol/tasks extension)",
                ));
            }
            if !self.inner.config.tasks_extension {
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
