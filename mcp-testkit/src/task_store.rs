//! The tasks of one server (shared by the instances of an HTTP server, in
//! the [`World`]): their state, how they end, and the status notifications
//! a 2025-11-25 session hears. Deterministic by design: a `countdown` task
//! completes at the `polls`th `tasks/get`. The task methods themselves are
//! the server's (`server/tasks.rs`).
//!
//! [`World`]: crate::resources::World

use std::collections::BTreeMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_stack_jsonrpc::codes;
use mcp_stack_protocol::meta;
use mcp_stack_protocol::notification::{self, Notification as _};
use mcp_stack_protocol::tasks::extension::DetailedTask;
use mcp_stack_protocol::tasks::{RELATED_TASK, Task, TaskStatus};
use mcp_stack_protocol::types::{CallToolResult, Content};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::outbox::{Outbox, ProtocolError};

/// The poll interval every task suggests, in milliseconds.
pub(crate) const POLL_INTERVAL_MS: u64 = 20;
/// How long a task is kept when the request names no TTL: one hour.
const DEFAULT_TTL_MS: u64 = 60 * 60 * 1000;

/// How a task finished.
#[derive(Debug, Clone)]
enum Outcome {
    Result(CallToolResult),
    Error { code: i64, message: String },
}

#[derive(Debug)]
pub(crate) struct Entry {
    /// Made by a 2026-07-28 request (its shapes and rules).
    discover: bool,
    pub(crate) task: Task,
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
    pub(crate) task: Task,
}

impl Announcement {
    async fn send(self) {
        self.outbox
            .notify(notification::TasksStatus::METHOD, &self.task)
            .await;
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
    pub(crate) fn detailed(&self) -> DetailedTask {
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

    pub(crate) fn create(
        &self,
        discover: bool,
        ttl: Option<u64>,
        countdown: Option<(u64, bool)>,
        notify: Option<Outbox>,
    ) -> Task {
        let mut task = Task::new(self.new_id(), TaskStatus::Working, now());
        task.status_message = Some("The operation is now in progress.".to_owned());
        task.ttl = Some(ttl.unwrap_or(DEFAULT_TTL_MS));
        task.poll_interval = Some(POLL_INTERVAL_MS);
        let entry = Entry {
            discover,
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
    pub(crate) async fn complete(
        &self,
        task_id: &str,
        outcome: Result<CallToolResult, ProtocolError>,
    ) {
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
    pub(crate) async fn get(&self, task_id: &str) -> Result<Entry, ProtocolError> {
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
                            Some(Outcome::Result(CallToolResult::new(vec![Content::text(
                                "countdown finished",
                            )]))),
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

    pub(crate) async fn cancel(&self, task_id: &str) -> Result<Entry, ProtocolError> {
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
    pub(crate) async fn result(&self, task_id: &str) -> Result<CallToolResult, ProtocolError> {
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

    /// `Ok` when the task exists, else the error that says it does not.
    pub(crate) fn known(&self, task_id: &str) -> Result<(), ProtocolError> {
        self.entries()
            .get(task_id)
            .map(|_| ())
            .ok_or_else(|| not_found(task_id))
    }

    pub(crate) fn set_runner(&self, task_id: &str, runner: AbortHandle) {
        if let Some(entry) = self.entries().get_mut(task_id) {
            if entry.task.status.is_terminal() {
                runner.abort();
            } else {
                entry.runner = Some(runner);
            }
        }
    }

    pub(crate) fn legacy_tasks(&self) -> Vec<Task> {
        self.entries()
            .values()
            .filter(|e| !e.discover)
            .map(|e| e.task.clone())
            .collect()
    }
}

impl Entry {
    /// A copy of what a request reports.
    fn snapshot(&self) -> Entry {
        Entry {
            discover: self.discover,
            task: self.task.clone(),
            outcome: self.outcome.clone(),
            countdown: self.countdown,
            notify: None,
            done: Arc::clone(&self.done),
            runner: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_tasks_are_told_from_unknown_ones() {
        let store = TaskStore::default();
        let task = store.create(true, None, Some((2, false)), None);
        assert!(store.known(&task.task_id).is_ok());
        let Err(e) = store.known("task-nope") else {
            panic!("an unknown task is known");
        };
        assert_eq!(e.code(), codes::INVALID_PARAMS);
        assert!(e.message().contains("task-nope"), "{}", e.message());
    }

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
