//! Method names, as on the wire: the string constants that came before the
//! method table, kept (defined from it) while their last users move to
//! [`request`] and [`notification`] (`ToolsList::METHOD`, typed calls).
//!
//! Requests first, then notifications, each with the revision that added it
//! when that is not the first one.

use crate::notification::{self, Notification};
use crate::request::{self, Request};

/// Client → server: the handshake (2024-11-05 to 2025-11-25).
pub const INITIALIZE: &str = request::Initialize::METHOD;
/// Client → server, 2026-07-28: what the server speaks and offers (no handshake).
pub const SERVER_DISCOVER: &str = request::ServerDiscover::METHOD;
/// Either way: liveness.
pub const PING: &str = request::Ping::METHOD;
/// Client → server: one page of tools.
pub const TOOLS_LIST: &str = request::ToolsList::METHOD;
/// Client → server: call a tool.
pub const TOOLS_CALL: &str = request::ToolsCall::METHOD;
/// Client → server: one page of resources.
pub const RESOURCES_LIST: &str = request::ResourcesList::METHOD;
/// Client → server: one page of resource templates.
pub const RESOURCES_TEMPLATES_LIST: &str = request::ResourcesTemplatesList::METHOD;
/// Client → server: read a resource.
pub const RESOURCES_READ: &str = request::ResourcesRead::METHOD;
/// Client → server (before 2026-07-28): updates of one resource.
pub const RESOURCES_SUBSCRIBE: &str = request::ResourcesSubscribe::METHOD;
/// Client → server (before 2026-07-28): no more updates of one resource.
pub const RESOURCES_UNSUBSCRIBE: &str = request::ResourcesUnsubscribe::METHOD;
/// Client → server, skills extension: one page of skills.
pub const SKILLS_LIST: &str = request::SkillsList::METHOD;
/// Client → server, skills extension: one skill's entry, by its `SKILL.md` URI.
pub const SKILLS_GET: &str = request::SkillsGet::METHOD;
/// Client → server, skills extension (`directoryRead`): one page of a
/// directory resource's children.
pub const RESOURCES_DIRECTORY_READ: &str = request::ResourcesDirectoryRead::METHOD;
/// Client → server: one page of prompts.
pub const PROMPTS_LIST: &str = request::PromptsList::METHOD;
/// Client → server: a prompt with its arguments filled in.
pub const PROMPTS_GET: &str = request::PromptsGet::METHOD;
/// Client → server: completions for a prompt or template argument.
pub const COMPLETION_COMPLETE: &str = request::CompletionComplete::METHOD;
/// Client → server (before 2026-07-28): the log level to send at.
pub const LOGGING_SET_LEVEL: &str = request::LoggingSetLevel::METHOD;
/// Client → server, 2026-07-28: a long-lived stream of notifications.
pub const SUBSCRIPTIONS_LISTEN: &str = request::SubscriptionsListen::METHOD;
/// Client → server (2025-11-25; 2026-07-28's tasks extension): a task's state.
pub const TASKS_GET: &str = request::TasksGet::METHOD;
/// Client → server (2025-11-25 only): a task's result, waiting for it.
pub const TASKS_RESULT: &str = request::TasksResult::METHOD;
/// Client → server (2025-11-25 only): one page of tasks.
pub const TASKS_LIST: &str = request::TasksList::METHOD;
/// Client → server (2025-11-25; 2026-07-28's tasks extension): cancel a task.
pub const TASKS_CANCEL: &str = request::TasksCancel::METHOD;
/// Client → server (2026-07-28's tasks extension): answers to a task's
/// input requests.
pub const TASKS_UPDATE: &str = request::TasksUpdate::METHOD;
/// Server → client: ask the user (2025-06-18 and later).
pub const ELICITATION_CREATE: &str = request::ElicitationCreate::METHOD;
/// Server → client: ask the client's model.
pub const SAMPLING_CREATE_MESSAGE: &str = request::SamplingCreateMessage::METHOD;
/// Server → client: the client's roots.
pub const ROOTS_LIST: &str = request::RootsList::METHOD;

/// Client → server: the handshake is over (2024-11-05 to 2025-11-25).
pub const INITIALIZED: &str = notification::Initialized::METHOD;
/// Either way: a request was cancelled.
pub const CANCELLED: &str = notification::Cancelled::METHOD;
/// Either way: progress of a request that offered a progress token.
pub const PROGRESS: &str = notification::Progress::METHOD;
/// Server → client: a log message.
pub const MESSAGE: &str = notification::LoggingMessage::METHOD;
/// Server → client: the tool list changed.
pub const TOOLS_LIST_CHANGED: &str = notification::ToolsListChanged::METHOD;
/// Server → client: the resource list changed.
pub const RESOURCES_LIST_CHANGED: &str = notification::ResourcesListChanged::METHOD;
/// Server → client: a subscribed resource changed.
pub const RESOURCES_UPDATED: &str = notification::ResourcesUpdated::METHOD;
/// Server → client: the prompt list changed.
pub const PROMPTS_LIST_CHANGED: &str = notification::PromptsListChanged::METHOD;
/// Client → server: the client's roots changed.
pub const ROOTS_LIST_CHANGED: &str = notification::RootsListChanged::METHOD;
/// Server → client (2025-11-25): a URL-mode elicitation completed.
pub const ELICITATION_COMPLETE: &str = notification::ElicitationComplete::METHOD;
/// Server → client, 2026-07-28: a `subscriptions/listen` stream is open.
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = notification::SubscriptionsAcknowledged::METHOD;
/// Server → client (2025-11-25): a task's status changed.
pub const TASKS_STATUS: &str = notification::TasksStatus::METHOD;
/// Server → client (2026-07-28's tasks extension, on a
/// `subscriptions/listen` stream): a task's status changed.
pub const TASKS_NOTIFICATION: &str = notification::Tasks::METHOD;

#[cfg(test)]
mod tests {
    /// The constants spell what they always did.
    #[test]
    fn constants_are_unchanged() {
        assert_eq!(super::INITIALIZE, "initialize");
        assert_eq!(super::SERVER_DISCOVER, "server/discover");
        assert_eq!(super::PING, "ping");
        assert_eq!(super::TOOLS_LIST, "tools/list");
        assert_eq!(super::TOOLS_CALL, "tools/call");
        assert_eq!(super::RESOURCES_LIST, "resources/list");
        assert_eq!(super::RESOURCES_TEMPLATES_LIST, "resources/templates/list");
        assert_eq!(super::RESOURCES_READ, "resources/read");
        assert_eq!(super::RESOURCES_SUBSCRIBE, "resources/subscribe");
        assert_eq!(super::RESOURCES_UNSUBSCRIBE, "resources/unsubscribe");
        assert_eq!(super::SKILLS_LIST, "skills/list");
        assert_eq!(super::SKILLS_GET, "skills/get");
        assert_eq!(super::RESOURCES_DIRECTORY_READ, "resources/directory/read");
        assert_eq!(super::PROMPTS_LIST, "prompts/list");
        assert_eq!(super::PROMPTS_GET, "prompts/get");
        assert_eq!(super::COMPLETION_COMPLETE, "completion/complete");
        assert_eq!(super::LOGGING_SET_LEVEL, "logging/setLevel");
        assert_eq!(super::SUBSCRIPTIONS_LISTEN, "subscriptions/listen");
        assert_eq!(super::TASKS_GET, "tasks/get");
        assert_eq!(super::TASKS_RESULT, "tasks/result");
        assert_eq!(super::TASKS_LIST, "tasks/list");
        assert_eq!(super::TASKS_CANCEL, "tasks/cancel");
        assert_eq!(super::TASKS_UPDATE, "tasks/update");
        assert_eq!(super::ELICITATION_CREATE, "elicitation/create");
        assert_eq!(super::SAMPLING_CREATE_MESSAGE, "sampling/createMessage");
        assert_eq!(super::ROOTS_LIST, "roots/list");
        assert_eq!(super::INITIALIZED, "notifications/initialized");
        assert_eq!(super::CANCELLED, "notifications/cancelled");
        assert_eq!(super::PROGRESS, "notifications/progress");
        assert_eq!(super::MESSAGE, "notifications/message");
        assert_eq!(
            super::TOOLS_LIST_CHANGED,
            "notifications/tools/list_changed"
        );
        assert_eq!(
            super::RESOURCES_LIST_CHANGED,
            "notifications/resources/list_changed"
        );
        assert_eq!(super::RESOURCES_UPDATED, "notifications/resources/updated");
        assert_eq!(
            super::PROMPTS_LIST_CHANGED,
            "notifications/prompts/list_changed"
        );
        assert_eq!(
            super::ROOTS_LIST_CHANGED,
            "notifications/roots/list_changed"
        );
        assert_eq!(
            super::ELICITATION_COMPLETE,
            "notifications/elicitation/complete"
        );
        assert_eq!(
            super::SUBSCRIPTIONS_ACKNOWLEDGED,
            "notifications/subscriptions/acknowledged"
        );
        assert_eq!(super::TASKS_STATUS, "notifications/tasks/status");
        assert_eq!(super::TASKS_NOTIFICATION, "notifications/tasks");
    }
}
