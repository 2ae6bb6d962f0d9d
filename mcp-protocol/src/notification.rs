//! The notification half of the method table: one type per notification
//! method of every revision, each naming its method, the revisions that
//! have it, and the type of its params.
//!
//! The conventions are the requests' ([`crate::request`]): the types are
//! uninhabited, a notification without params of its own (the
//! `list_changed` ones, `notifications/initialized`) takes
//! [`EmptyParams`], and absent params read as `{}`.
//!
//! ```
//! use mcp_stack_protocol::notification::{Notification, ToolsListChanged};
//! assert_eq!(ToolsListChanged::METHOD, "notifications/tools/list_changed");
//! ```

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::subscriptions::SubscriptionParams;
use crate::tasks::Task;
use crate::tasks::extension::DetailedTask;
use crate::types::{
    CancelledParams, ElicitationCompleteParams, EmptyParams, LoggingMessageParams, ProgressParams,
    ResourceUpdatedParams,
};
use crate::{ProtocolVersion, Revisions};

/// A notification method: its name on the wire, the revisions that have
/// it, and what it carries.
pub trait Notification {
    /// The method, as on the wire (`"notifications/progress"`).
    const METHOD: &'static str;
    /// The revisions whose schema defines it.
    const REVISIONS: Revisions;
    /// What the notification carries (`params`).
    type Params: Serialize + DeserializeOwned + Send + Sync + 'static;

    /// Whether `revision` has this method.
    fn exists_in(revision: ProtocolVersion) -> bool {
        Self::REVISIONS.contains(revision)
    }
}

/// Declares the notification types: doc, name, method, revisions, params.
macro_rules! notifications {
    ($(
        $(#[$doc:meta])*
        $name:ident = $method:literal, $revisions:expr, $params:ty;
    )*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            pub enum $name {}

            impl Notification for $name {
                const METHOD: &'static str = $method;
                const REVISIONS: Revisions = $revisions;
                type Params = $params;
            }
        )*

        /// Every notification of the table: method and revisions.
        #[cfg(test)]
        pub(crate) const ALL: &[(&str, Revisions)] = &[$(($method, $revisions)),*];
    };
}

use ProtocolVersion::{V2025_11_25, V2026_07_28};

notifications! {
    /// `notifications/initialized`, client → server: the handshake is over
    /// (2024-11-05 to 2025-11-25).
    Initialized = "notifications/initialized", Revisions::until(V2025_11_25), EmptyParams;
    /// `notifications/cancelled`, either way: a request was cancelled.
    Cancelled = "notifications/cancelled", Revisions::ALL, CancelledParams;
    /// `notifications/progress`, either way: progress of a request that
    /// offered a progress token.
    Progress = "notifications/progress", Revisions::ALL, ProgressParams;
    /// `notifications/message`, server → client: a log message.
    LoggingMessage = "notifications/message", Revisions::ALL, LoggingMessageParams;
    /// `notifications/tools/list_changed`, server → client: the tool list
    /// changed.
    ToolsListChanged = "notifications/tools/list_changed", Revisions::ALL, EmptyParams;
    /// `notifications/resources/list_changed`, server → client: the
    /// resource list changed.
    ResourcesListChanged = "notifications/resources/list_changed", Revisions::ALL,
        EmptyParams;
    /// `notifications/resources/updated`, server → client: a subscribed
    /// resource changed.
    ResourcesUpdated = "notifications/resources/updated", Revisions::ALL,
        ResourceUpdatedParams;
    /// `notifications/prompts/list_changed`, server → client: the prompt
    /// list changed.
    PromptsListChanged = "notifications/prompts/list_changed", Revisions::ALL, EmptyParams;
    /// `notifications/roots/list_changed`, client → server: the client's
    /// roots changed (dropped by 2026-07-28).
    RootsListChanged = "notifications/roots/list_changed", Revisions::until(V2025_11_25),
        EmptyParams;
    /// `notifications/elicitation/complete`, server → client (2025-11-25):
    /// a URL-mode elicitation completed.
    ElicitationComplete = "notifications/elicitation/complete", Revisions::only(V2025_11_25),
        ElicitationCompleteParams;
    /// `notifications/subscriptions/acknowledged`, server → client
    /// (2026-07-28): a `subscriptions/listen` stream is open, with what the
    /// server agreed to send.
    SubscriptionsAcknowledged = "notifications/subscriptions/acknowledged",
        Revisions::since(V2026_07_28), SubscriptionParams;
    /// `notifications/tasks/status`, server → client (2025-11-25): a task's
    /// status changed.
    TasksStatus = "notifications/tasks/status", Revisions::only(V2025_11_25), Task;
    /// `notifications/tasks`, server → client (2026-07-28's tasks
    /// extension, on a `subscriptions/listen` stream): a task's status
    /// changed, with its inline result or input requests.
    Tasks = "notifications/tasks", Revisions::since(V2026_07_28), DetailedTask;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn every_method_is_unique_and_no_request_has_it() {
        let mut seen = std::collections::HashSet::new();
        for (method, _) in ALL.iter().chain(crate::request::ALL) {
            assert!(seen.insert(*method), "{method} twice in the table");
        }
        assert_eq!(ALL.len(), 13);
        assert!(ALL.iter().all(|(m, _)| m.starts_with("notifications/")));
    }

    #[test]
    fn revisions_follow_the_schemas() {
        assert!(!Initialized::exists_in(V2026_07_28));
        assert!(!RootsListChanged::exists_in(V2026_07_28));
        assert!(SubscriptionsAcknowledged::exists_in(V2026_07_28));
        assert!(!SubscriptionsAcknowledged::exists_in(V2025_11_25));
        assert!(TasksStatus::exists_in(V2025_11_25) && !TasksStatus::exists_in(V2026_07_28));
        assert!(Tasks::exists_in(V2026_07_28) && !Tasks::exists_in(V2025_11_25));
        for v in ProtocolVersion::ALL {
            assert!(Progress::exists_in(v) && Cancelled::exists_in(v), "{v}");
            assert_eq!(Initialized::exists_in(v), v.has_handshake(), "{v}");
        }
    }

    fn round_trip<N: Notification>(params: Value) {
        let typed: N::Params = serde_json::from_value(params.clone()).unwrap();
        assert_eq!(
            serde_json::to_value(&typed).unwrap(),
            params,
            "{}",
            N::METHOD
        );
    }

    #[test]
    fn params_round_trip() {
        round_trip::<Initialized>(json!({}));
        round_trip::<ToolsListChanged>(json!({"_meta": {"x": 1}}));
        round_trip::<Progress>(json!({"progressToken": "p", "progress": 50, "total": 100}));
        round_trip::<LoggingMessage>(json!({"level": "info", "logger": "l", "data": "hi"}));
        round_trip::<Cancelled>(json!({"requestId": 3, "reason": "late"}));
        round_trip::<ResourcesUpdated>(json!({"uri": "file:///a"}));
        round_trip::<ElicitationComplete>(json!({"elicitationId": "e1"}));
        round_trip::<SubscriptionsAcknowledged>(json!({
            "_meta": {"io.modelcontextprotocol/subscriptionId": "l1"},
            "notifications": {"toolsListChanged": true}
        }));
        round_trip::<TasksStatus>(json!({
            "taskId": "t1", "status": "working", "createdAt": "a", "lastUpdatedAt": "b", "ttl": null
        }));
        round_trip::<Tasks>(json!({
            "taskId": "t1", "status": "completed", "createdAt": "a", "lastUpdatedAt": "b",
            "ttlMs": null, "result": {"content": []}
        }));
    }
}
