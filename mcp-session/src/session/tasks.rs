//! The facade's tasks (see `tasks.rs`).

use serde_json::Value;

use mcp_stack_protocol::tasks::Task;

use super::Session;
use crate::config::CallOptions;
use crate::error::SessionError;
use crate::tasks::{TaskCall, TaskHandle};

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
        self.inner
            .tasks()
            .call_as_task(name, arguments, options)
            .await
    }

    /// A handle on a task this client created before (its id kept, say,
    /// across a restart), with its state from `tasks/get`. The tool is not
    /// known, so its result is not checked against an output schema.
    pub async fn task_handle(&self, task_id: &str) -> Result<TaskHandle, SessionError> {
        self.inner.tasks().handle(task_id).await
    }

    /// The server's tasks, every page (`tasks/list`, 2025-11-25; the
    /// 2026-07-28 extension has no list). Needs the server's `tasks.list`.
    pub async fn list_tasks(&self) -> Result<Vec<Task>, SessionError> {
        self.inner.tasks().list().await
    }
}
