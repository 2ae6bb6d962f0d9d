//! What a server receives: the client's requests and notifications, each
//! read once into its type ([`ClientRequest::parse`],
//! [`ClientNotification::parse`]; the conventions are in
//! [`incoming`](crate::incoming)).
//!
//! ```
//! use mcp_stack_protocol::from_client::ClientRequest;
//! use mcp_stack_jsonrpc::RawValue;
//!
//! let params = RawValue::from_string(r#"{"name": "echo", "arguments": {}}"#.into()).unwrap();
//! let call = ClientRequest::parse("tools/call", Some(&params)).unwrap();
//! assert!(matches!(&call, ClientRequest::ToolsCall(c) if c.name == "echo"));
//! assert_eq!(call.method(), "tools/call");
//! ```

use mcp_stack_jsonrpc::RawValue;

use crate::incoming::{ParamsError, keep, read};
use crate::notification::{self as n, Notification};
use crate::request::{self as r, Request};
use crate::skills::{DirectoryReadParams, GetSkillParams};
use crate::subscriptions::SubscriptionParams;
use crate::tasks::TaskIdParams;
use crate::tasks::extension::UpdateTaskParams;
use crate::types::{
    CallToolParams, CancelledParams, CompleteParams, EmptyParams, GetPromptParams,
    InitializeParams, PaginatedParams, ProgressParams, ResourceParams, SetLevelParams,
};

/// Declares [`ClientRequest`]: variant, request type, params.
macro_rules! client_requests {
    ($( $(#[$doc:meta])* $variant:ident($params:ty) = $request:ty; )*) => {
        /// A request from the client.
        #[derive(Debug, Clone)]
        #[non_exhaustive]
        pub enum ClientRequest {
            $( $(#[$doc])* $variant($params), )*
            /// A method a client does not send, or the table does not know.
            Other {
                /// Its method.
                method: String,
                /// Its params, as they came.
                params: Option<Box<RawValue>>,
            },
        }

        impl ClientRequest {
            /// The request `method` with `params`, read into its type.
            pub fn parse(method: &str, params: Option<&RawValue>) -> Result<Self, ParamsError> {
                Ok(match method {
                    $( <$request>::METHOD => ClientRequest::$variant(read(method, params)?), )*
                    _ => ClientRequest::Other { method: method.to_owned(), params: keep(params) },
                })
            }

            /// Its method, as on the wire.
            pub fn method(&self) -> &str {
                match self {
                    $( ClientRequest::$variant(_) => <$request>::METHOD, )*
                    ClientRequest::Other { method, .. } => method,
                }
            }
        }
    };
}

client_requests! {
    /// `initialize`.
    Initialize(InitializeParams) = r::Initialize;
    /// `server/discover`.
    ServerDiscover(EmptyParams) = r::ServerDiscover;
    /// `ping`.
    Ping(EmptyParams) = r::Ping;
    /// `tools/list`.
    ToolsList(PaginatedParams) = r::ToolsList;
    /// `tools/call`.
    ToolsCall(CallToolParams) = r::ToolsCall;
    /// `resources/list`.
    ResourcesList(PaginatedParams) = r::ResourcesList;
    /// `resources/templates/list`.
    ResourcesTemplatesList(PaginatedParams) = r::ResourcesTemplatesList;
    /// `resources/read`.
    ResourcesRead(ResourceParams) = r::ResourcesRead;
    /// `resources/subscribe`.
    ResourcesSubscribe(ResourceParams) = r::ResourcesSubscribe;
    /// `resources/unsubscribe`.
    ResourcesUnsubscribe(ResourceParams) = r::ResourcesUnsubscribe;
    /// `resources/directory/read`.
    ResourcesDirectoryRead(DirectoryReadParams) = r::ResourcesDirectoryRead;
    /// `skills/list`.
    SkillsList(PaginatedParams) = r::SkillsList;
    /// `skills/get`.
    SkillsGet(GetSkillParams) = r::SkillsGet;
    /// `prompts/list`.
    PromptsList(PaginatedParams) = r::PromptsList;
    /// `prompts/get`.
    PromptsGet(GetPromptParams) = r::PromptsGet;
    /// `completion/complete`.
    CompletionComplete(CompleteParams) = r::CompletionComplete;
    /// `logging/setLevel`.
    LoggingSetLevel(SetLevelParams) = r::LoggingSetLevel;
    /// `subscriptions/listen`.
    SubscriptionsListen(SubscriptionParams) = r::SubscriptionsListen;
    /// `tasks/get`.
    TasksGet(TaskIdParams) = r::TasksGet;
    /// `tasks/result`.
    TasksResult(TaskIdParams) = r::TasksResult;
    /// `tasks/list`.
    TasksList(PaginatedParams) = r::TasksList;
    /// `tasks/cancel`.
    TasksCancel(TaskIdParams) = r::TasksCancel;
    /// `tasks/update`.
    TasksUpdate(UpdateTaskParams) = r::TasksUpdate;
}

/// A notification from the client.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ClientNotification {
    /// The handshake is over (params not read).
    Initialized,
    /// The client cancelled a request it had sent.
    Cancelled(CancelledParams),
    /// Progress of one of the server's requests.
    Progress(ProgressParams),
    /// The client's roots changed (params not read).
    RootsListChanged,
    /// Any other notification.
    Other {
        /// Its method.
        method: String,
        /// Its params, as they came.
        params: Option<Box<RawValue>>,
    },
}

impl ClientNotification {
    /// The notification `method` with `params`, read into its type.
    pub fn parse(method: &str, params: Option<&RawValue>) -> Result<Self, ParamsError> {
        Ok(match method {
            n::Initialized::METHOD => ClientNotification::Initialized,
            n::Cancelled::METHOD => ClientNotification::Cancelled(read(method, params)?),
            n::Progress::METHOD => ClientNotification::Progress(read(method, params)?),
            n::RootsListChanged::METHOD => ClientNotification::RootsListChanged,
            _ => ClientNotification::Other {
                method: method.to_owned(),
                params: keep(params),
            },
        })
    }

    /// Its method, as on the wire.
    pub fn method(&self) -> &str {
        match self {
            ClientNotification::Initialized => n::Initialized::METHOD,
            ClientNotification::Cancelled(_) => n::Cancelled::METHOD,
            ClientNotification::Progress(_) => n::Progress::METHOD,
            ClientNotification::RootsListChanged => n::RootsListChanged::METHOD,
            ClientNotification::Other { method, .. } => method,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn every_client_request_of_the_table_reads_and_names_its_method() {
        let params = [
            (
                "initialize",
                r#"{"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}"#,
            ),
            ("resources/read", r#"{"uri": "u"}"#),
            ("resources/subscribe", r#"{"uri": "u"}"#),
            ("resources/unsubscribe", r#"{"uri": "u"}"#),
            ("resources/directory/read", r#"{"uri": "u"}"#),
            ("skills/get", r#"{"uri": "u"}"#),
            ("tools/call", r#"{"name": "t"}"#),
            ("prompts/get", r#"{"name": "p"}"#),
            (
                "completion/complete",
                r#"{"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}}"#,
            ),
            ("logging/setLevel", r#"{"level": "info"}"#),
            ("tasks/get", r#"{"taskId": "t"}"#),
            ("tasks/result", r#"{"taskId": "t"}"#),
            ("tasks/cancel", r#"{"taskId": "t"}"#),
            ("tasks/update", r#"{"taskId": "t", "inputResponses": {}}"#),
        ];
        let client_sent = crate::request::ALL.iter().map(|(m, _)| *m).filter(|m| {
            !matches!(
                *m,
                "elicitation/create" | "sampling/createMessage" | "roots/list"
            )
        });
        for method in client_sent {
            let p = params
                .iter()
                .find(|(m, _)| *m == method)
                .map(|(_, p)| raw(p));
            let request =
                ClientRequest::parse(method, p.as_deref()).unwrap_or_else(|e| panic!("{e}"));
            assert!(!matches!(request, ClientRequest::Other { .. }), "{method}");
            assert_eq!(request.method(), method);
        }
        let other = ClientRequest::parse("roots/list", None).unwrap();
        assert!(matches!(other, ClientRequest::Other { .. }));
        let bad = ClientRequest::parse("tools/call", Some(&raw(r#"{"name": 5}"#))).unwrap_err();
        assert_eq!(bad.method(), "tools/call");
    }

    #[test]
    fn client_notifications_read_and_name_their_method() {
        for (method, params) in [
            ("notifications/initialized", "[]"),
            ("notifications/cancelled", r#"{"requestId": "r"}"#),
            (
                "notifications/progress",
                r#"{"progressToken": "p", "progress": 1}"#,
            ),
            ("notifications/roots/list_changed", "{}"),
            ("notifications/else", "{}"),
        ] {
            let params = raw(params);
            let n = ClientNotification::parse(method, Some(&params)).unwrap();
            assert_eq!(n.method(), method);
        }
        let c =
            ClientNotification::parse("notifications/cancelled", Some(&raw(r#"{"requestId": 3}"#)))
                .unwrap();
        assert!(
            matches!(c, ClientNotification::Cancelled(p) if p.request_id == mcp_stack_jsonrpc::Id::from(3))
        );
    }
}
