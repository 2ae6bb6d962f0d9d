//! The request half of the method table: one type per request method of
//! every revision, each naming its method, the revisions that have it, and
//! the types of its params and of its result.
//!
//! A request is sent and answered through its type, never by a method
//! string paired with types by hand:
//!
//! ```
//! use mcp_stack_protocol::request::{Request, ToolsList};
//! use mcp_stack_protocol::types::{ListToolsResult, PaginatedParams};
//! use mcp_stack_protocol::ProtocolVersion;
//!
//! fn send<R: Request>(params: &R::Params) -> String {
//!     format!("{} {}", R::METHOD, serde_json::to_string(params).unwrap())
//! }
//! assert_eq!(send::<ToolsList>(&PaginatedParams::default()), "tools/list {}");
//! let page: <ToolsList as Request>::Result =
//!     serde_json::from_str(r#"{"tools": []}"#).unwrap();
//! let _: ListToolsResult = page;
//! assert!(ToolsList::exists_in(ProtocolVersion::V2024_11_05));
//! ```
//!
//! # Conventions
//!
//! * The types are uninhabited (`enum X {}`): they exist to be named, as
//!   `X::METHOD` or `R: Request`.
//! * A request without params of its own (`ping`, `server/discover`,
//!   `roots/list`) takes [`EmptyParams`], which keeps `_meta`; absent params
//!   read as `{}`.
//! * A result with nothing to say (`ping`, `logging/setLevel`,
//!   `resources/subscribe` …) is [`EmptyResult`].
//! * [`Request::Result`] is the final answer. On 2026-07-28 a
//!   `tools/call`, `prompts/get` or `resources/read` may first answer
//!   `input_required` or, with the tasks extension, with a task
//!   ([`crate::results::ResultType`] tells which); the session reads those
//!   before the typed result.
//! * Where the result's shape depends on the revision (`tasks/get`:
//!   a [`Task`](crate::tasks::Task) on 2025-11-25, a
//!   [`DetailedTask`](crate::tasks::extension::DetailedTask) on
//!   2026-07-28; `tasks/cancel`: a task, or an empty acknowledgment), the
//!   result is a [`Value`], to be read as the revision says.
//! * [`Request::REVISIONS`] are the revisions whose schema defines the
//!   method. An extension's method (skills, 2026-07-28's tasks) exists
//!   where the extension does, and only with a server that declares it.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::discover::DiscoverResult;
use crate::skills::{
    DirectoryReadParams, DirectoryReadResult, GetSkillParams, GetSkillResult, ListSkillsResult,
};
use crate::subscriptions::SubscriptionParams;
use crate::tasks::extension::UpdateTaskParams;
use crate::tasks::{ListTasksResult, TaskIdParams};
use crate::types::{
    CallToolParams, CallToolResult, CompleteParams, CompleteResult, CreateMessageParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, EmptyParams, EmptyResult,
    GetPromptParams, GetPromptResult, InitializeParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListRootsResult, ListToolsResult,
    PaginatedParams, ReadResourceResult, ResourceParams, SetLevelParams,
};
use crate::{ProtocolVersion, Revisions};

/// A request method: its name on the wire, the revisions that have it, and
/// what it carries each way.
pub trait Request {
    /// The method, as on the wire (`"tools/list"`).
    const METHOD: &'static str;
    /// The revisions whose schema defines it.
    const REVISIONS: Revisions;
    /// What the request carries (`params`).
    type Params: Serialize + DeserializeOwned + Send + Sync + 'static;
    /// What a successful answer carries (`result`).
    type Result: Serialize + DeserializeOwned + Send + Sync + 'static;

    /// Whether `revision` has this method.
    fn exists_in(revision: ProtocolVersion) -> bool {
        Self::REVISIONS.contains(revision)
    }
}

/// Declares the request types: doc, name, method, revisions, params, result.
macro_rules! requests {
    ($(
        $(#[$doc:meta])*
        $name:ident = $method:literal, $revisions:expr, $params:ty => $result:ty;
    )*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
            pub enum $name {}

            impl Request for $name {
                const METHOD: &'static str = $method;
                const REVISIONS: Revisions = $revisions;
                type Params = $params;
                type Result = $result;
            }
        )*

        /// Every request of the table: method and revisions.
        #[cfg(test)]
        pub(crate) const ALL: &[(&str, Revisions)] = &[$(($method, $revisions)),*];
    };
}

use ProtocolVersion::{V2025_06_18, V2025_11_25, V2026_07_28};

requests! {
    /// `initialize`, client → server: the handshake (2024-11-05 to
    /// 2025-11-25).
    Initialize = "initialize", Revisions::until(V2025_11_25),
        InitializeParams => InitializeResult;
    /// `server/discover`, client → server (2026-07-28): what the server
    /// speaks and offers.
    ServerDiscover = "server/discover", Revisions::since(V2026_07_28),
        EmptyParams => DiscoverResult;
    /// `ping`, either way: liveness (dropped by 2026-07-28).
    Ping = "ping", Revisions::until(V2025_11_25), EmptyParams => EmptyResult;
    /// `tools/list`, client → server: one page of tools.
    ToolsList = "tools/list", Revisions::ALL, PaginatedParams => ListToolsResult;
    /// `tools/call`, client → server: call a tool.
    ToolsCall = "tools/call", Revisions::ALL, CallToolParams => CallToolResult;
    /// `resources/list`, client → server: one page of resources.
    ResourcesList = "resources/list", Revisions::ALL,
        PaginatedParams => ListResourcesResult;
    /// `resources/templates/list`, client → server: one page of resource
    /// templates.
    ResourcesTemplatesList = "resources/templates/list", Revisions::ALL,
        PaginatedParams => ListResourceTemplatesResult;
    /// `resources/read`, client → server: read a resource.
    ResourcesRead = "resources/read", Revisions::ALL, ResourceParams => ReadResourceResult;
    /// `resources/subscribe`, client → server (before 2026-07-28): updates
    /// of one resource.
    ResourcesSubscribe = "resources/subscribe", Revisions::until(V2025_11_25),
        ResourceParams => EmptyResult;
    /// `resources/unsubscribe`, client → server (before 2026-07-28): no
    /// more updates of one resource.
    ResourcesUnsubscribe = "resources/unsubscribe", Revisions::until(V2025_11_25),
        ResourceParams => EmptyResult;
    /// `resources/directory/read`, client → server, skills extension
    /// (`directoryRead`): one page of a directory resource's children.
    ResourcesDirectoryRead = "resources/directory/read", Revisions::ALL,
        DirectoryReadParams => DirectoryReadResult;
    /// `skills/list`, client → server, skills extension: one page of skills.
    SkillsList = "skills/list", Revisions::ALL, PaginatedParams => ListSkillsResult;
    /// `skills/get`, client → server, skills extension: one skill's entry,
    /// by its `SKILL.md` URI.
    SkillsGet = "skills/get", Revisions::ALL, GetSkillParams => GetSkillResult;
    /// `prompts/list`, client → server: one page of prompts.
    PromptsList = "prompts/list", Revisions::ALL, PaginatedParams => ListPromptsResult;
    /// `prompts/get`, client → server: a prompt with its arguments filled in.
    PromptsGet = "prompts/get", Revisions::ALL, GetPromptParams => GetPromptResult;
    /// `completion/complete`, client → server: completions for a prompt or
    /// template argument.
    CompletionComplete = "completion/complete", Revisions::ALL,
        CompleteParams => CompleteResult;
    /// `logging/setLevel`, client → server (before 2026-07-28, which asks
    /// for a level per request in `_meta`): the log level to send at.
    LoggingSetLevel = "logging/setLevel", Revisions::until(V2025_11_25),
        SetLevelParams => EmptyResult;
    /// `subscriptions/listen`, client → server (2026-07-28): a long-lived
    /// stream of notifications; its result ends the stream.
    SubscriptionsListen = "subscriptions/listen", Revisions::since(V2026_07_28),
        SubscriptionParams => EmptyResult;
    /// `tasks/get`, client → server (2025-11-25; 2026-07-28's tasks
    /// extension): a task's state, whose shape depends on the revision.
    TasksGet = "tasks/get", Revisions::since(V2025_11_25), TaskIdParams => Value;
    /// `tasks/result`, client → server (2025-11-25 only): a task's result,
    /// waiting for it.
    TasksResult = "tasks/result", Revisions::only(V2025_11_25),
        TaskIdParams => CallToolResult;
    /// `tasks/list`, client → server (2025-11-25 only): one page of tasks.
    TasksList = "tasks/list", Revisions::only(V2025_11_25),
        PaginatedParams => ListTasksResult;
    /// `tasks/cancel`, client → server (2025-11-25: answered with the task;
    /// 2026-07-28's tasks extension: an acknowledgment).
    TasksCancel = "tasks/cancel", Revisions::since(V2025_11_25), TaskIdParams => Value;
    /// `tasks/update`, client → server (2026-07-28's tasks extension):
    /// answers to a task's input requests.
    TasksUpdate = "tasks/update", Revisions::since(V2026_07_28),
        UpdateTaskParams => EmptyResult;
    /// `elicitation/create`, server → client (2025-06-18 and later; on
    /// 2026-07-28 inside an `input_required` result): ask the user.
    ElicitationCreate = "elicitation/create", Revisions::since(V2025_06_18),
        ElicitRequestParams => ElicitResult;
    /// `sampling/createMessage`, server → client: ask the client's model.
    SamplingCreateMessage = "sampling/createMessage", Revisions::ALL,
        CreateMessageParams => CreateMessageResult;
    /// `roots/list`, server → client: the client's roots.
    RootsList = "roots/list", Revisions::ALL, EmptyParams => ListRootsResult;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_method_is_unique() {
        let mut seen = std::collections::HashSet::new();
        for (method, _) in ALL {
            assert!(seen.insert(*method), "{method} twice in the table");
        }
        assert_eq!(ALL.len(), 26);
    }

    #[test]
    fn revisions_follow_the_schemas() {
        assert!(!Initialize::exists_in(V2026_07_28));
        assert!(Initialize::exists_in(ProtocolVersion::V2024_11_05));
        assert!(ServerDiscover::exists_in(V2026_07_28));
        assert!(!ServerDiscover::exists_in(V2025_11_25));
        assert!(!Ping::exists_in(V2026_07_28));
        assert!(!ElicitationCreate::exists_in(ProtocolVersion::V2025_03_26));
        assert!(TasksList::exists_in(V2025_11_25) && !TasksList::exists_in(V2026_07_28));
        assert!(TasksUpdate::exists_in(V2026_07_28) && !TasksUpdate::exists_in(V2025_11_25));
        assert!(TasksGet::exists_in(V2026_07_28) && TasksGet::exists_in(V2025_11_25));
        assert!(!TasksGet::exists_in(V2025_06_18));
        // The handshake revisions all ping; the others discover instead.
        for v in ProtocolVersion::ALL {
            assert_eq!(Ping::exists_in(v), v.has_ping(), "{v}");
            assert_eq!(Initialize::exists_in(v), v.has_handshake(), "{v}");
            assert_eq!(ServerDiscover::exists_in(v), !v.has_handshake(), "{v}");
        }
    }

    /// Params and a result of `R`, read from the wire and written back
    /// unchanged.
    fn round_trip<R: Request>(params: Value, result: Value) {
        let typed: R::Params = serde_json::from_value(params.clone()).unwrap();
        assert_eq!(
            serde_json::to_value(&typed).unwrap(),
            params,
            "{}",
            R::METHOD
        );
        let typed: R::Result = serde_json::from_value(result.clone()).unwrap();
        assert_eq!(
            serde_json::to_value(&typed).unwrap(),
            result,
            "{}",
            R::METHOD
        );
    }

    #[test]
    fn params_and_results_round_trip() {
        round_trip::<Ping>(json!({}), json!({}));
        round_trip::<ServerDiscover>(
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
            json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}),
        );
        round_trip::<ToolsList>(
            json!({"cursor": "c2"}),
            json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}], "nextCursor": "c3"}),
        );
        round_trip::<ToolsCall>(
            json!({"name": "echo", "arguments": {"text": "hi"}}),
            json!({"content": [{"type": "text", "text": "hi"}], "isError": false}),
        );
        round_trip::<ResourcesSubscribe>(json!({"uri": "file:///a"}), json!({}));
        round_trip::<LoggingSetLevel>(json!({"level": "warning"}), json!({}));
        round_trip::<SkillsGet>(
            json!({"uri": "skill://a/SKILL.md"}),
            json!({"skill": {"uri": "skill://a/SKILL.md",
                             "frontmatter": {"name": "a", "description": "A."},
                             "resources": "dynamic"}}),
        );
        round_trip::<TasksGet>(
            json!({"taskId": "t1"}),
            json!({"taskId": "t1", "status": "working", "createdAt": "now"}),
        );
        round_trip::<TasksUpdate>(
            json!({"taskId": "t1", "inputResponses": {"k": {"action": "decline"}}}),
            json!({}),
        );
        round_trip::<SubscriptionsListen>(
            json!({"notifications": {"toolsListChanged": true}}),
            json!({}),
        );
        round_trip::<ElicitationCreate>(
            json!({"message": "Name?", "requestedSchema": {"type": "object"}}),
            json!({"action": "accept", "content": {"name": "Ada"}}),
        );
        round_trip::<RootsList>(json!({}), json!({"roots": [{"uri": "file:///w"}]}));
    }

    #[test]
    fn empty_params_keep_their_meta() {
        let params: EmptyParams =
            serde_json::from_value(json!({"_meta": {"progressToken": 1}, "x": 2})).unwrap();
        assert_eq!(params.meta.unwrap()["progressToken"], 1);
        assert_eq!(params.extra["x"], 2);
    }
}
