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

use std::collections::BTreeMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_jsonrpc::{Id, codes};
use mcp_protocol::results::ResultType;
use mcp_protocol::tasks::extension::{self, DetailedTask, UpdateTaskParams};
use mcp_protocol::tasks::{
    CreateTaskResult, ListTasksResult, RELATED_TASK, Task, TaskIdParams, TaskMetadata, TaskStatus,
};
use mcp_protocol::types::{CallToolParams, CallToolResult, EmptyResult, Extra, PaginatedParams};
use mcp_protocol::{codes as mcp_codes, meta, methods};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::params::typed;
use super::{Outbox, ProtocolError, Server, raw, tools_list};
use crate::tools::{self, CallContext};

/// The poll interval every task suggests, in milliseconds.
pub(crate) const POLL_INTERVAL_MS: u64 = 20;
/// How long a task is kept when the request names no TTL: one hour.
const DEFAULT_TTL_MS: u64 = 60 * 60 * 1000;
/// The most polls a `countdown` takes.
pub(crate) const MAX_POLLS: u64 = 10_000;

/// How a task finished.
#[derive(Debug, Clone)]
enum Outcome {
    Result(CallToolResult),
    Error { code: i64, message: String },
}

#[derive(Debug)]
struct Entry {
    /// Made by a 2026-07-28 request (its shapes and rules).
    modern: bool,
    task: Task,
    outcome: Option<Outcome>,
    /// `countdown`: the polls left before it completes, and whether it then fails.
    countdown: Option<(u64, bool)>,
    /// 2025-11-25: where status notifications go.
    notify: Option<Outbox>,
    /// Wakes `tasks/result` waiters when the task ends.
    done: Arc<Notify>,
    /// A running tool's task, aborted on cancellation.
    runner: Option<AbortHandle>,
}

/// The tasks of one server.
#[derive(Debug, Default)]
pub(crate) struct TaskStore {
    entries: Mutex<BTreeMap<String, Entry>>,
    ids: RandomState,
    next: Mutex<u64>,
}

/// A status change to announce (2025-11-25).
struct Announcement {
    outbox: Outbox,
    task: Task,
}

impl Announcement {
    async fn send(self) {
        self.outbox.notify(methods::TASKS_STATUS, &self.task).await;
    }
}

/// Now, in ISO 8601 (UTC, whole seconds).
fn now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

fn not_found(task_id: &str) -> ProtocolError {
    ProtocolError::with_data(
        codes::INVALID_PARAMS,
        format!("Failed to retrieve task: no task {task_id:?}"),
        json!({"taskId": task_id}),
    )
}

impl Entry {
    /// Ends the task (unless it has ended already); what to announce.
    fn finish(&mut self, outcome: Option<Outcome>, status: TaskStatus) -> Option<Announcement> {
        if self.task.status.is_terminal() {
            return None;
        }
        self.task.status = status;
        self.task.status_message = Some(match (&self.task.status, &outcome) {
            (TaskStatus::Cancelled, _) => "The task was cancelled by request.".to_owned(),
            (_, Some(Outcome::Error { message, .. })) => message.clone(),
            _ => "The task completed.".to_owned(),
        });
        self.task.last_updated_at = now();
        self.outcome = outcome;
        if let Some(runner) = self.runner.take() {
            runner.abort();
        }
        self.done.notify_waiters();
        self.notify.clone().map(|outbox| Announcement {
            outbox,
            task: self.task.clone(),
        })
    }

    /// The 2026-07-28 view: the result or error inline.
    fn detailed(&self) -> DetailedTask {
        let mut d = DetailedTask::new(
            self.task.task_id.clone(),
            self.task.status.clone(),
            self.task.created_at.clone(),
        );
        d.status_message.clone_from(&self.task.status_message);
        d.last_updated_at.clone_from(&self.task.last_updated_at);
        d.ttl_ms = self.task.ttl;
        d.poll_interval_ms = self.task.poll_interval;
        match &self.outcome {
            Some(Outcome::Result(r)) => d.result = serde_json::to_value(r).ok(),
            Some(Outcome::Error { code, message }) => {
                d.error = Some(json!({"code": code, "message": message}));
            }
            None => {}
        }
        d
    }
}

impl TaskStore {
    fn entries(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh, unguessable id.
    fn new_id(&self) -> String {
        let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
        *next += 1;
        format!("task-{:016x}-{}", self.ids.hash_one(*next), *next)
    }

    fn create(
        &self,
        modern: bool,
        ttl: Option<u64>,
        countdown: Option<(u64, bool)>,
        notify: Option<Outbox>,
    ) -> Task {
        let mut task = Task::new(self.new_id(), TaskStatus::Working, now());
        task.status_message = Some("The operation is now in progress.".to_owned());
        task.ttl = Some(ttl.unwrap_or(DEFAULT_TTL_MS));
        task.poll_interval = Some(POLL_INTERVAL_MS);
        let entry = Entry {
            modern,
            task: task.clone(),
            outcome: None,
            countdown,
            notify,
            done: Arc::new(Notify::new()),
            runner: None,
        };
        self.entries().insert(task.task_id.clone(), entry);
        task
    }

    /// Ends a task with its tool's outcome (a `slow` runner finishing).
    async fn complete(&self, task_id: &str, outcome: Result<CallToolResult, ProtocolError>) {
        let announcement = self.entries().get_mut(task_id).and_then(|e| match outcome {
            Ok(result) => e.finish(Some(Outcome::Result(result)), TaskStatus::Completed),
            Err(error) => e.finish(
                Some(Outcome::Error {
                    code: error.code(),
                    message: error.message().to_owned(),
                }),
                TaskStatus::Failed,
            ),
        });
        if let Some(a) = announcement {
            a.send().await;
        }
    }

    /// `tasks/get`: counts a `countdown` poll.
    async fn get(&self, task_id: &str) -> Result<Entry, ProtocolError> {
        let (view, announcement) = {
            let mut entries = self.entries();
            let entry = entries.get_mut(task_id).ok_or_else(|| not_found(task_id))?;
            let mut announcement = None;
            if let (Some((left, fail)), false) = (entry.countdown, entry.task.status.is_terminal())
            {
                let left = left.saturating_sub(1);
                entry.countdown = Some((left, fail));
                if left == 0 {
                    announcement = if fail {
                        entry.finish(
                            Some(Outcome::Error {
                                code: codes::INTERNAL_ERROR,
                                message: "countdown was told to fail".to_owned(),
                            }),
                            TaskStatus::Failed,
                        )
                    } else {
                        entry.finish(
                            Some(Outcome::Result(tools::text_result("countdown finished"))),
                            TaskStatus::Completed,
                        )
                    };
                }
            }
            (entry.snapshot(), announcement)
        };
        if let Some(a) = announcement {
            a.send().await;
        }
        Ok(view)
    }

    async fn cancel(&self, task_id: &str) -> Result<Entry, ProtocolError> {
        let (view, announcement) = {
            let mut entries = self.entries();
            let entry = entries.get_mut(task_id).ok_or_else(|| not_found(task_id))?;
            if entry.task.status.is_terminal() {
                return Err(ProtocolError::with_data(
                    codes::INVALID_PARAMS,
                    format!(
                        "task {task_id} is {} and cannot be cancelled",
                        entry.task.status
                    ),
                    json!({"taskId": task_id}),
                ));
            }
            let announcement = entry.finish(None, TaskStatus::Cancelled);
            (entry.snapshot(), announcement)
        };
        if let Some(a) = announcement {
            a.send().await;
        }
        Ok(view)
    }

    /// `tasks/result` (2025-11-25): waits for the task to end.
    async fn result(&self, task_id: &str) -> Result<CallToolResult, ProtocolError> {
        loop {
            let done = {
                let entries = self.entries();
                let entry = entries.get(task_id).ok_or_else(|| not_found(task_id))?;
                match (&entry.task.status, &entry.outcome) {
                    (TaskStatus::Cancelled, _) => {
                        return Err(ProtocolError::new(
                            codes::INVALID_PARAMS,
                            format!("task {task_id} was cancelled"),
                        ));
                    }
                    (_, Some(Outcome::Result(r))) => {
                        let mut r = r.clone();
                        let mut m = Map::new();
                        m.insert(RELATED_TASK.into(), json!({"taskId": task_id}));
                        r.extra.insert(meta::KEY.into(), Value::Object(m));
                        return Ok(r);
                    }
                    (_, Some(Outcome::Error { code, message })) => {
                        return Err(ProtocolError::new(*code, message.clone()));
                    }
                    _ => Arc::clone(&entry.done),
                }
            };
            // Registered before the state is looked at again, so no wake is lost.
            let notified = done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let ended = self
                .entries()
                .get(task_id)
                .is_none_or(|e| e.task.status.is_terminal());
            if !ended {
                notified.await;
            }
        }
    }

    fn set_runner(&self, task_id: &str, runner: AbortHandle) {
        if let Some(entry) = self.entries().get_mut(task_id) {
            if entry.task.status.is_terminal() {
                runner.abort();
            } else {
                entry.runner = Some(runner);
            }
        }
    }

    fn legacy_tasks(&self) -> Vec<Task> {
        self.entries()
            .values()
            .filter(|e| !e.modern)
            .map(|e| e.task.clone())
            .collect()
    }
}

impl Entry {
    /// A copy of what a request reports.
    fn snapshot(&self) -> Entry {
        Entry {
            modern: self.modern,
            task: self.task.clone(),
            outcome: self.outcome.clone(),
            countdown: self.countdown,
            notify: None,
            done: Arc::clone(&self.done),
            runner: None,
        }
    }
}

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
        modern: bool,
        declared: bool,
    ) -> bool {
        let augmented = call.extra.get("task").filter(|t| t.is_object());
        let wanted = if modern {
            declared && call.name == "countdown"
        } else {
            augmented.is_some() && self.speaks_tasks()
        };
        if !wanted {
            return false;
        }
        let answer = self.start_task(call, modern, augmented).await;
        self.outbox.respond(id.clone(), answer).await;
        true
    }

    /// Whether this (legacy) session negotiated 2025-11-25, the revision with tasks.
    pub(super) fn speaks_tasks(&self) -> bool {
        self.negotiated == Some(mcp_protocol::ProtocolVersion::V2025_11_25)
    }

    async fn start_task(
        &mut self,
        call: &CallToolParams,
        modern: bool,
        augmented: Option<&Value>,
    ) -> Result<mcp_jsonrpc::RawJson, ProtocolError> {
        let ttl = augmented
            .and_then(|t| serde_json::from_value::<TaskMetadata>(t.clone()).ok())
            .and_then(|t| t.ttl);
        let store = &self.world.tasks;
        match call.name.as_str() {
            "countdown" => {
                let countdown = countdown_args(call)?;
                let notify = (!modern).then(|| self.outbox.clone());
                let task = store.create(modern, ttl, Some(countdown), notify);
                self.log(&format!("task {} started (countdown)", task.task_id));
                task_answer(task, modern)
            }
            "slow" if !modern => {
                let task = store.create(false, ttl, None, Some(self.outbox.clone()));
                let ctx = CallContext {
                    workspace: self.workspace.clone(),
                    outbox: self.outbox.clone(),
                    progress_token: None,
                    modern,
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
                methods::TOOLS_CALL,
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
        modern: bool,
    ) -> Option<Option<Result<mcp_jsonrpc::RawJson, ProtocolError>>> {
        let legacy_only = matches!(method, methods::TASKS_RESULT | methods::TASKS_LIST);
        let known = matches!(
            method,
            methods::TASKS_GET
                | methods::TASKS_CANCEL
                | methods::TASKS_RESULT
                | methods::TASKS_LIST
        ) || (modern && method == methods::TASKS_UPDATE);
        if !known || (modern && legacy_only) || (!modern && !self.speaks_tasks()) {
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
        if modern && !declares_extension(&params) {
            return Some(Some(Err(missing_extension())));
        }
        let store = &self.world.tasks;
        Some(Some(match method {
            methods::TASKS_LIST => typed::<PaginatedParams>(params, |p| {
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
            methods::TASKS_UPDATE => typed::<UpdateTaskParams>(params, |_| None).and_then(|p| {
                // These tasks never ask for input: answers are acknowledged and ignored.
                store
                    .entries()
                    .get(&p.task_id)
                    .map(|_| ())
                    .ok_or_else(|| not_found(&p.task_id))?;
                raw(&complete(EmptyResult::default()))
            }),
            methods::TASKS_RESULT => {
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
                let entry = if method == methods::TASKS_GET {
                    store.get(&p.task_id).await
                } else {
                    store.cancel(&p.task_id).await
                };
                entry.and_then(|e| match (modern, method) {
                    (true, methods::TASKS_CANCEL) => raw(&complete(EmptyResult::default())),
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
fn task_answer(task: Task, modern: bool) -> Result<mcp_jsonrpc::RawJson, ProtocolError> {
    if modern {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601() {
        let t = now();
        assert_eq!(t.len(), "2025-11-25T10:30:00Z".len(), "{t}");
        assert!(
            t.starts_with("20") && t.ends_with('Z') && t.as_bytes()[10] == b'T',
            "{t}"
        );
    }
}
