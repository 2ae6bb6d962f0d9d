//! Method names, as on the wire.
//!
//! Requests first, then notifications, each with the revision that added it
//! when that is not the first one.

/// Client → server: the handshake (2024-11-05 to 2025-11-25).
pub const INITIALIZE: &str = "initialize";
/// Client → server, 2026-07-28: what the server speaks and offers (no handshake).
pub const SERVER_DISCOVER: &str = "server/discover";
/// Either way: liveness.
pub const PING: &str = "ping";
/// Client → server: one page of tools.
pub const TOOLS_LIST: &str = "tools/list";
/// Client → server: call a tool.
pub const TOOLS_CALL: &str = "tools/call";
/// Client → server: one page of resources.
pub const RESOURCES_LIST: &str = "resources/list";
/// Client → server: one page of resource templates.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// Client → server: read a resource.
pub const RESOURCES_READ: &str = "resources/read";
/// Client → server (before 2026-07-28): updates of one resource.
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// Client → server (before 2026-07-28): no more updates of one resource.
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// Client → server, skills extension: one page of skills.
pub const SKILLS_LIST: &str = "skills/list";
/// Client → server, skills extension: one skill's entry, by its `SKILL.md` URI.
pub const SKILLS_GET: &str = "skills/get";
/// Client → server, skills extension (`directoryRead`): one page of a
/// directory resource's children.
pub const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";
/// Client → server: one page of prompts.
pub const PROMPTS_LIST: &str = "prompts/list";
/// Client → server: a prompt with its arguments filled in.
pub const PROMPTS_GET: &str = "prompts/get";
/// Client → server: completions for a prompt or template argument.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// Client → server (before 2026-07-28): the log level to send at.
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// Client → server, 2026-07-28: a long-lived stream of notifications.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// Client → server (2025-11-25; 2026-07-28's tasks extension): a task's state.
pub const TASKS_GET: &str = "tasks/get";
/// Client → server (2025-11-25 only): a task's result, waiting for it.
pub const TASKS_RESULT: &str = "tasks/result";
/// Client → server (2025-11-25 only): one page of tasks.
pub const TASKS_LIST: &str = "tasks/list";
/// Client → server (2025-11-25; 2026-07-28's tasks extension): cancel a task.
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// Client → server (2026-07-28's tasks extension): answers to a task's
/// input requests.
pub const TASKS_UPDATE: &str = "tasks/update";
/// Server → client: ask the user (2025-06-18 and later).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// Server → client: ask the client's model.
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// Server → client: the client's roots.
pub const ROOTS_LIST: &str = "roots/list";

/// Client → server: the handshake is over (2024-11-05 to 2025-11-25).
pub const INITIALIZED: &str = "notifications/initialized";
/// Either way: a request was cancelled.
pub const CANCELLED: &str = "notifications/cancelled";
/// Either way: progress of a request that offered a progress token.
pub const PROGRESS: &str = "notifications/progress";
/// Server → client: a log message.
pub const MESSAGE: &str = "notifications/message";
/// Server → client: the tool list changed.
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// Server → client: the resource list changed.
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// Server → client: a subscribed resource changed.
pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// Server → client: the prompt list changed.
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// Client → server: the client's roots changed.
pub const ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
/// Server → client (2025-11-25): a URL-mode elicitation completed.
pub const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// Server → client, 2026-07-28: a `subscriptions/listen` stream is open.
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// Server → client (2025-11-25): a task's status changed.
pub const TASKS_STATUS: &str = "notifications/tasks/status";
/// Server → client (2026-07-28's tasks extension, on a
/// `subscriptions/listen` stream): a task's status changed.
pub const TASKS_NOTIFICATION: &str = "notifications/tasks";
