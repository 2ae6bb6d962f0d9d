//! Tasks: a tool call whose result comes later.
//!
//! Two designs share the name:
//!
//! * **2025-11-25** (core, experimental): the client asks for a task
//!   (`params.task` on `tools/call`) when the server declares
//!   [`TasksCapability`] `requests.tools.call` and the tool's
//!   `execution.taskSupport` allows it ([`TaskSupport`]). The answer is a
//!   [`CreateTaskResult`] (`{"task": {…}}`); the client polls `tasks/get`
//!   (a [`Task`]), fetches the result with the blocking `tasks/result`, and
//!   may `tasks/list` and `tasks/cancel`. Status changes may come as
//!   `notifications/tasks/status` (a [`Task`]).
//! * **2026-07-28** ([`extension`]): the extension
//!   `io.modelcontextprotocol/tasks`. The client declares it in its
//!   per-request capabilities; the server decides per request whether to
//!   answer with a task (`resultType: "task"`, the task's fields inline).
//!   Polling `tasks/get` returns a [`DetailedTask`](extension::DetailedTask)
//!   carrying the final result or error, or the input the server needs
//!   (answered with `tasks/update`); there is no `tasks/result` and no
//!   `tasks/list`; `tasks/cancel` is an acknowledgment.
//!
//! Each type keeps the fields it does not know in `extra`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::types::{Extra, Tool};

/// `_meta` key: the task a message belongs to (both designs).
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Where a task is in its life.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskStatus {
    /// Being worked on (every task starts here).
    Working,
    /// The server needs something from the client before it can go on.
    InputRequired,
    /// Finished with a result (a tool's `isError: true` result included).
    Completed,
    /// Finished with a JSON-RPC error.
    Failed,
    /// Cancelled before it finished.
    Cancelled,
    /// A status this client does not know, kept as it came.
    Other(String),
}

impl TaskStatus {
    /// The status as on the wire (`"input_required"`).
    pub fn as_str(&self) -> &str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Other(s) => s,
        }
    }

    /// Completed, failed or cancelled: the task will not change again.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    fn parse(s: &str) -> TaskStatus {
        match s {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            other => TaskStatus::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for TaskStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(TaskStatus::parse(&s))
    }
}

/// A task's state (2025-11-25): the result of `tasks/get` and
/// `tasks/cancel`, an entry of `tasks/list`, the params of
/// `notifications/tasks/status`, and what [`CreateTaskResult`] holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The receiver's id for it.
    pub task_id: String,
    /// Where it is.
    pub status: TaskStatus,
    /// What the status means now, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created (ISO 8601).
    #[serde(default)]
    pub created_at: String,
    /// When it last changed (ISO 8601).
    #[serde(default)]
    pub last_updated_at: String,
    /// How long it is kept from its creation, in milliseconds; `null` for
    /// ever.
    #[serde(default)]
    pub ttl: Option<u64>,
    /// How often to poll it, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<u64>,
    /// Other fields (`_meta` …).
    #[serde(flatten)]
    pub extra: Extra,
}

impl Task {
    /// A task in `status`, created and last updated at `now` (ISO 8601).
    pub fn new(task_id: impl Into<String>, status: TaskStatus, now: impl Into<String>) -> Self {
        let now = now.into();
        Task {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: now.clone(),
            last_updated_at: now,
            ttl: None,
            poll_interval: None,
            extra: Extra::new(),
        }
    }
}

/// What a task-augmented request asks for (`params.task`, 2025-11-25).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskMetadata {
    /// How long to keep the task from its creation, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The answer to a task-augmented request (2025-11-25): the task, not
/// the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateTaskResult {
    /// The task created.
    pub task: Task,
    /// Result metadata (`io.modelcontextprotocol/model-immediate-response` …).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The params of `tasks/get`, `tasks/result` and `tasks/cancel` (both
/// designs): which task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
    /// Request metadata (on 2026-07-28, the revision and the client).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl TaskIdParams {
    /// The params naming `task_id`.
    pub fn new(task_id: impl Into<String>) -> Self {
        TaskIdParams {
            task_id: task_id.into(),
            meta: None,
            extra: Extra::new(),
        }
    }
}

/// `tasks/list` result (2025-11-25): one page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// The tasks on this page.
    pub tasks: Vec<Task>,
    /// The cursor of the next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `tasks` capability (2025-11-25): which task operations a party
/// takes, and which requests it runs as tasks. Each member is present
/// (an object, usually empty) or absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TasksCapability {
    /// `tasks/list` is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<Value>,
    /// `tasks/cancel` is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<Value>,
    /// The requests that may be task-augmented, by category
    /// (`{"tools": {"call": {}}}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<Value>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl TasksCapability {
    /// The capability of a server that runs `tools/call` as tasks and
    /// serves `tasks/list` and `tasks/cancel`.
    pub fn tool_calls() -> Self {
        let empty = || Value::Object(Map::new());
        TasksCapability {
            list: Some(empty()),
            cancel: Some(empty()),
            requests: Some(serde_json::json!({"tools": {"call": {}}})),
            extra: Extra::new(),
        }
    }

    /// `requests.tools.call` is declared.
    pub fn tool_calls_supported(&self) -> bool {
        self.requests
            .as_ref()
            .and_then(|r| r.get("tools"))
            .and_then(|t| t.get("call"))
            .is_some_and(|c| !c.is_null())
    }

    /// `tasks/list` is served.
    pub fn list_supported(&self) -> bool {
        self.list.as_ref().is_some_and(|v| !v.is_null())
    }

    /// `tasks/cancel` is served.
    pub fn cancel_supported(&self) -> bool {
        self.cancel.as_ref().is_some_and(|v| !v.is_null())
    }
}

/// Whether a tool may run as a task: its `execution.taskSupport`
/// (2025-11-25).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    /// Never as a task (also what an absent or unknown value means).
    #[default]
    Forbidden,
    /// As a task or not, as the client likes.
    Optional,
    /// Only as a task.
    Required,
}

impl TaskSupport {
    /// The value as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }

    /// A tool's `execution.taskSupport`; absent or unknown is forbidden.
    pub fn of(tool: &Tool) -> TaskSupport {
        match tool
            .extra
            .get("execution")
            .and_then(|e| e.get("taskSupport"))
            .and_then(Value::as_str)
        {
            Some("optional") => TaskSupport::Optional,
            Some("required") => TaskSupport::Required,
            _ => TaskSupport::Forbidden,
        }
    }

    /// Writes `execution.taskSupport` into a tool (keeping the rest of
    /// `execution`).
    pub fn write(self, tool: &mut Tool) {
        let execution = tool
            .extra
            .entry("execution")
            .or_insert_with(|| Value::Object(Map::new()));
        if !execution.is_object() {
            *execution = Value::Object(Map::new());
        }
        if let Value::Object(e) = execution {
            e.insert("taskSupport".into(), Value::from(self.as_str()));
        }
    }
}

/// The tasks extension of 2026-07-28 (`io.modelcontextprotocol/tasks`,
/// SEP-2663).
pub mod extension {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};
    use serde_json::{Map, Value};

    use super::{Task, TaskStatus};
    use crate::results::{InputRequest, ResultType};
    use crate::types::{ClientCapabilities, Extra, ServerCapabilities};

    /// The extension's identifier, a key of `capabilities.extensions`.
    pub const ID: &str = "io.modelcontextprotocol/tasks";

    /// Whether server capabilities declare the extension.
    pub fn offered_by(capabilities: &ServerCapabilities) -> bool {
        capabilities
            .extensions
            .as_ref()
            .is_some_and(|e| e.get(ID).is_some_and(|v| !v.is_null()))
    }

    /// Whether client capabilities declare the extension.
    pub fn declared_by(capabilities: &ClientCapabilities) -> bool {
        capabilities
            .extensions
            .as_ref()
            .is_some_and(|e| e.get(ID).is_some_and(|v| !v.is_null()))
    }

    /// Adds the extension (no settings) to client capabilities.
    pub fn declare(capabilities: &mut ClientCapabilities) {
        capabilities
            .extensions
            .get_or_insert_with(Map::new)
            .entry(ID)
            .or_insert_with(|| Value::Object(Map::new()));
    }

    /// Adds the extension (no settings) to server capabilities.
    pub fn offer(capabilities: &mut ServerCapabilities) {
        capabilities
            .extensions
            .get_or_insert_with(Map::new)
            .entry(ID)
            .or_insert_with(|| Value::Object(Map::new()));
    }

    /// A task as 2026-07-28 writes it: the answer to `tasks/get`, the
    /// params of `notifications/tasks` and, with `resultType: "task"`, a
    /// `CreateTaskResult`. What the status calls for is inline: the input
    /// requests (`input_required`), the final result (`completed`) or the
    /// JSON-RPC error (`failed`).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct DetailedTask {
        /// The server's id for it.
        pub task_id: String,
        /// Where it is.
        pub status: TaskStatus,
        /// What the status means now, for people.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub status_message: Option<String>,
        /// When it was created (ISO 8601).
        #[serde(default)]
        pub created_at: String,
        /// When it last changed (ISO 8601).
        #[serde(default)]
        pub last_updated_at: String,
        /// How long it is kept from its creation, in milliseconds; `null`
        /// for ever.
        #[serde(default)]
        pub ttl_ms: Option<u64>,
        /// How often to poll it, in milliseconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub poll_interval_ms: Option<u64>,
        /// `input_required`: what the server asks for, by key (answered
        /// with `tasks/update`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub input_requests: Option<BTreeMap<String, InputRequest>>,
        /// `completed`: the request's result (a `CallToolResult`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub result: Option<Value>,
        /// `failed`: the JSON-RPC error.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub error: Option<Value>,
        /// Other fields (`resultType`, `_meta` …).
        #[serde(flatten)]
        pub extra: Extra,
    }

    impl DetailedTask {
        /// A task in `status` created and last updated at `now`.
        pub fn new(task_id: impl Into<String>, status: TaskStatus, now: impl Into<String>) -> Self {
            let now = now.into();
            DetailedTask {
                task_id: task_id.into(),
                status,
                status_message: None,
                created_at: now.clone(),
                last_updated_at: now,
                ttl_ms: None,
                poll_interval_ms: None,
                input_requests: None,
                result: None,
                error: None,
                extra: Extra::new(),
            }
        }

        /// This task as the answer to a request: `resultType: "task"`.
        #[must_use]
        pub fn created(mut self) -> Self {
            ResultType::Task.write(&mut self.extra);
            self
        }

        /// The state common to both designs (without the inline payloads).
        pub fn summary(&self) -> Task {
            let mut extra = self.extra.clone();
            extra.remove(ResultType::KEY);
            Task {
                task_id: self.task_id.clone(),
                status: self.status.clone(),
                status_message: self.status_message.clone(),
                created_at: self.created_at.clone(),
                last_updated_at: self.last_updated_at.clone(),
                ttl: self.ttl_ms,
                poll_interval: self.poll_interval_ms,
                extra,
            }
        }
    }

    /// `tasks/update` params: answers to a task's input requests.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct UpdateTaskParams {
        /// The task.
        pub task_id: String,
        /// The answers, by the keys of the task's `inputRequests`.
        pub input_responses: BTreeMap<String, Value>,
        /// Request metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        pub meta: Option<Map<String, Value>>,
        /// Other fields.
        #[serde(flatten)]
        pub extra: Extra,
    }
}

#[cfg(test)]
mod tests {
    use super::extension::{DetailedTask, UpdateTaskParams};
    use super::*;
    use crate::results::ResultType;
    use crate::types::{ClientCapabilities, ServerCapabilities};
    use serde_json::json;

    #[test]
    fn statuses_are_spelled_as_on_the_wire_and_unknown_ones_kept() {
        for (status, wire, terminal) in [
            (TaskStatus::Working, "working", false),
            (TaskStatus::InputRequired, "input_required", false),
            (TaskStatus::Completed, "completed", true),
            (TaskStatus::Failed, "failed", true),
            (TaskStatus::Cancelled, "cancelled", true),
            (TaskStatus::Other("paused".into()), "paused", false),
        ] {
            assert_eq!(serde_json::to_value(&status).unwrap(), json!(wire));
            assert_eq!(
                serde_json::from_value::<TaskStatus>(json!(wire)).unwrap(),
                status
            );
            assert_eq!(status.is_terminal(), terminal, "{status}");
        }
    }

    #[test]
    fn create_task_result_and_task_round_trip_as_the_spec_writes_them() {
        let wire = json!({"task": {
            "taskId": "786512e2", "status": "working",
            "statusMessage": "The operation is now in progress.",
            "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:40:00Z",
            "ttl": 60000, "pollInterval": 5000}});
        let created: CreateTaskResult = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(created.task.status, TaskStatus::Working);
        assert_eq!(
            (created.task.ttl, created.task.poll_interval),
            (Some(60000), Some(5000))
        );
        assert_eq!(serde_json::to_value(&created).unwrap(), wire);
        // `ttl: null` is unlimited, and is written back as null.
        let unlimited = json!({"taskId": "t", "status": "completed", "createdAt": "a",
                               "lastUpdatedAt": "b", "ttl": null, "future": 1});
        let task: Task = serde_json::from_value(unlimited.clone()).unwrap();
        assert_eq!((task.ttl, &task.extra["future"]), (None, &json!(1)));
        assert_eq!(serde_json::to_value(&task).unwrap(), unlimited);
    }

    #[test]
    fn request_params_and_list_results() {
        assert_eq!(
            serde_json::to_value(TaskMetadata {
                ttl: Some(60000),
                extra: Extra::new()
            })
            .unwrap(),
            json!({"ttl": 60000})
        );
        assert_eq!(
            serde_json::to_value(TaskIdParams::new("t1")).unwrap(),
            json!({"taskId": "t1"})
        );
        let page = json!({"tasks": [{"taskId": "a", "status": "working", "createdAt": "x",
                                     "lastUpdatedAt": "y", "ttl": 30000, "pollInterval": 5000}],
                          "nextCursor": "n"});
        let list: ListTasksResult = serde_json::from_value(page.clone()).unwrap();
        assert_eq!(list.next_cursor.as_deref(), Some("n"));
        assert_eq!(serde_json::to_value(&list).unwrap(), page);
    }

    #[test]
    fn capabilities_say_what_is_offered_and_keep_the_rest() {
        let caps: ServerCapabilities = serde_json::from_value(json!({
            "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}, "future": 1},
            "extensions": {"io.modelcontextprotocol/tasks": {}, "com.example/x": {"a": 1}}
        }))
        .unwrap();
        let tasks = caps.tasks.as_ref().unwrap();
        assert!(tasks.tool_calls_supported() && tasks.list_supported() && tasks.cancel_supported());
        assert_eq!(tasks.extra["future"], 1);
        assert!(extension::offered_by(&caps));
        assert_eq!(
            caps.extensions.as_ref().unwrap()["com.example/x"],
            json!({"a": 1})
        );
        let bare: TasksCapability = serde_json::from_value(json!({"list": {}})).unwrap();
        assert!(!bare.tool_calls_supported() && !bare.cancel_supported());
        assert_eq!(
            serde_json::to_value(TasksCapability::tool_calls()).unwrap(),
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
        );
        let mut server = ServerCapabilities::default();
        assert!(!extension::offered_by(&server));
        extension::offer(&mut server);
        assert_eq!(
            serde_json::to_value(&server).unwrap(),
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        );
        let mut client = ClientCapabilities::default();
        extension::declare(&mut client);
        assert!(extension::declared_by(&client));
        assert_eq!(
            serde_json::to_value(&client).unwrap(),
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        );
    }

    #[test]
    fn task_support_is_read_and_written_on_tools() {
        let mut tool: Tool = serde_json::from_value(json!({"name": "t"})).unwrap();
        assert_eq!(TaskSupport::of(&tool), TaskSupport::Forbidden);
        TaskSupport::Optional.write(&mut tool);
        assert_eq!(TaskSupport::of(&tool), TaskSupport::Optional);
        assert_eq!(
            serde_json::to_value(&tool).unwrap()["execution"],
            json!({"taskSupport": "optional"})
        );
        let required: Tool = serde_json::from_value(
            json!({"name": "t", "execution": {"taskSupport": "required", "x": 1}}),
        )
        .unwrap();
        assert_eq!(TaskSupport::of(&required), TaskSupport::Required);
        let odd: Tool =
            serde_json::from_value(json!({"name": "t", "execution": {"taskSupport": "maybe"}}))
                .unwrap();
        assert_eq!(TaskSupport::of(&odd), TaskSupport::Forbidden);
    }

    #[test]
    fn extension_task_shapes_match_the_extension_spec() {
        let created = json!({"resultType": "task", "taskId": "786512e2", "status": "working",
            "statusMessage": "The operation is now in progress.",
            "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:40:00Z",
            "ttlMs": 60000, "pollIntervalMs": 5000});
        assert_eq!(ResultType::of(&created), ResultType::Task);
        let task: DetailedTask = serde_json::from_value(created.clone()).unwrap();
        assert_eq!(
            (task.ttl_ms, task.poll_interval_ms),
            (Some(60000), Some(5000))
        );
        assert_eq!(serde_json::to_value(&task).unwrap(), created);
        let summary = task.summary();
        assert_eq!(
            (summary.ttl, summary.poll_interval, summary.extra.len()),
            (Some(60000), Some(5000), 0)
        );
        let built = DetailedTask::new("t", TaskStatus::Working, "now").created();
        assert_eq!(
            serde_json::to_value(&built).unwrap(),
            json!({"resultType": "task", "taskId": "t", "status": "working",
                   "createdAt": "now", "lastUpdatedAt": "now", "ttlMs": null})
        );

        let asking = json!({"resultType": "complete", "taskId": "t", "status": "input_required",
            "createdAt": "a", "lastUpdatedAt": "b", "ttlMs": 3600000,
            "inputRequests": {"name": {"method": "elicitation/create",
                "params": {"mode": "form", "message": "Please enter your name."}}}});
        let task: DetailedTask = serde_json::from_value(asking.clone()).unwrap();
        assert_eq!(
            task.input_requests.as_ref().unwrap()["name"].method,
            "elicitation/create"
        );
        assert_eq!(serde_json::to_value(&task).unwrap(), asking);

        let done = json!({"taskId": "t", "status": "completed", "createdAt": "a",
            "lastUpdatedAt": "b", "ttlMs": null,
            "result": {"content": [{"type": "text", "text": "Hello"}], "isError": false}});
        let task: DetailedTask = serde_json::from_value(done).unwrap();
        assert_eq!(task.result.as_ref().unwrap()["content"][0]["text"], "Hello");
        let failed = json!({"taskId": "t", "status": "failed", "createdAt": "a",
            "lastUpdatedAt": "b", "ttlMs": 1, "error": {"code": -32603, "message": "rate limit"}});
        let task: DetailedTask = serde_json::from_value(failed).unwrap();
        assert_eq!(task.error.as_ref().unwrap()["code"], -32603);

        let update = json!({"taskId": "t", "inputResponses": {"name": {"action": "accept",
            "content": {"input": "Luca"}}}});
        let p: UpdateTaskParams = serde_json::from_value(update.clone()).unwrap();
        assert_eq!(p.input_responses["name"]["action"], "accept");
        assert_eq!(serde_json::to_value(&p).unwrap(), update);
    }
}
