//! What a client receives: the server's requests and notifications, each
//! read once into its type ([`ServerRequest::parse`],
//! [`ServerNotification::parse`]; the conventions are in
//! [`incoming`](crate::incoming)).
//!
//! ```
//! use mcp_stack_protocol::from_server::ServerNotification;
//! use mcp_stack_jsonrpc::RawValue;
//!
//! let params = RawValue::from_string(r#"{"uri": "file:///a"}"#.into()).unwrap();
//! let n = ServerNotification::parse("notifications/resources/updated", Some(&params)).unwrap();
//! assert!(matches!(n, ServerNotification::ResourceUpdated(u) if u.uri == "file:///a"));
//! let other = ServerNotification::parse("notifications/later", None).unwrap();
//! assert_eq!(other.method(), "notifications/later");
//! ```

use mcp_stack_jsonrpc::RawValue;

use crate::incoming::{ParamsError, keep, read};
use crate::notification::{self as n, Notification};
use crate::request::{self as r, Request};
use crate::subscriptions::SubscriptionParams;
use crate::tasks::Task;
use crate::tasks::extension::DetailedTask;
use crate::types::{
    CancelledParams, CreateMessageParams, ElicitRequestParams, ElicitationCompleteParams,
    LoggingMessageParams, ProgressParams, ResourceUpdatedParams,
};

/// A request from the server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ServerRequest {
    /// `ping` (params not read).
    Ping,
    /// `elicitation/create`: ask the user.
    ElicitationCreate(ElicitRequestParams),
    /// `sampling/createMessage`: ask the client's model.
    SamplingCreateMessage(CreateMessageParams),
    /// `roots/list` (params not read).
    RootsList,
    /// A method a server does not send, or the table does not know.
    Other {
        /// Its method.
        method: String,
        /// Its params, as they came.
        params: Option<Box<RawValue>>,
    },
}

impl ServerRequest {
    /// The request `method` with `params`, read into its type.
    pub fn parse(method: &str, params: Option<&RawValue>) -> Result<Self, ParamsError> {
        Ok(match method {
            r::Ping::METHOD => ServerRequest::Ping,
            r::ElicitationCreate::METHOD => ServerRequest::ElicitationCreate(read(method, params)?),
            r::SamplingCreateMessage::METHOD => {
                ServerRequest::SamplingCreateMessage(read(method, params)?)
            }
            r::RootsList::METHOD => ServerRequest::RootsList,
            _ => ServerRequest::Other {
                method: method.to_owned(),
                params: keep(params),
            },
        })
    }

    /// Its method, as on the wire.
    pub fn method(&self) -> &str {
        match self {
            ServerRequest::Ping => r::Ping::METHOD,
            ServerRequest::ElicitationCreate(_) => r::ElicitationCreate::METHOD,
            ServerRequest::SamplingCreateMessage(_) => r::SamplingCreateMessage::METHOD,
            ServerRequest::RootsList => r::RootsList::METHOD,
            ServerRequest::Other { method, .. } => method,
        }
    }
}

/// A notification from the server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ServerNotification {
    /// Progress of one of the client's requests.
    Progress(ProgressParams),
    /// The tool list changed (params not read).
    ToolsListChanged,
    /// The resource list changed (params not read).
    ResourcesListChanged,
    /// The prompt list changed (params not read).
    PromptsListChanged,
    /// A subscribed resource changed (read it again to see how).
    ResourceUpdated(ResourceUpdatedParams),
    /// A URL-mode elicitation finished (`notifications/elicitation/complete`,
    /// 2025-11-25): the user did what the page asked.
    ElicitationComplete(ElicitationCompleteParams),
    /// A log message.
    Log(LoggingMessageParams),
    /// The server cancelled a request it had sent.
    Cancelled(CancelledParams),
    /// A task's status changed (`notifications/tasks/status`, 2025-11-25).
    TaskStatus(Task),
    /// A task's status changed, with its inline result or input requests
    /// (`notifications/tasks`, 2026-07-28's tasks extension).
    TaskDetail(Box<DetailedTask>),
    /// A `subscriptions/listen` stream is open, with what the server agreed
    /// to send (2026-07-28).
    SubscriptionsAcknowledged(SubscriptionParams),
    /// Any other notification.
    Other {
        /// Its method.
        method: String,
        /// Its params, as they came.
        params: Option<Box<RawValue>>,
    },
}

impl ServerNotification {
    /// The notification `method` with `params`, read into its type.
    pub fn parse(method: &str, params: Option<&RawValue>) -> Result<Self, ParamsError> {
        use ServerNotification as N;
        Ok(match method {
            n::Progress::METHOD => N::Progress(read(method, params)?),
            n::ToolsListChanged::METHOD => N::ToolsListChanged,
            n::ResourcesListChanged::METHOD => N::ResourcesListChanged,
            n::PromptsListChanged::METHOD => N::PromptsListChanged,
            n::ResourcesUpdated::METHOD => N::ResourceUpdated(read(method, params)?),
            n::ElicitationComplete::METHOD => N::ElicitationComplete(read(method, params)?),
            n::LoggingMessage::METHOD => N::Log(read(method, params)?),
            n::Cancelled::METHOD => N::Cancelled(read(method, params)?),
            n::TasksStatus::METHOD => N::TaskStatus(read(method, params)?),
            n::Tasks::METHOD => N::TaskDetail(Box::new(read(method, params)?)),
            n::SubscriptionsAcknowledged::METHOD => {
                N::SubscriptionsAcknowledged(read(method, params)?)
            }
            _ => N::Other {
                method: method.to_owned(),
                params: keep(params),
            },
        })
    }

    /// Its method, as on the wire.
    pub fn method(&self) -> &str {
        use ServerNotification as N;
        match self {
            N::Progress(_) => n::Progress::METHOD,
            N::ToolsListChanged => n::ToolsListChanged::METHOD,
            N::ResourcesListChanged => n::ResourcesListChanged::METHOD,
            N::PromptsListChanged => n::PromptsListChanged::METHOD,
            N::ResourceUpdated(_) => n::ResourcesUpdated::METHOD,
            N::ElicitationComplete(_) => n::ElicitationComplete::METHOD,
            N::Log(_) => n::LoggingMessage::METHOD,
            N::Cancelled(_) => n::Cancelled::METHOD,
            N::TaskStatus(_) => n::TasksStatus::METHOD,
            N::TaskDetail(_) => n::Tasks::METHOD,
            N::SubscriptionsAcknowledged(_) => n::SubscriptionsAcknowledged::METHOD,
            N::Other { method, .. } => method,
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
    fn requests_read_into_their_types_and_name_their_method() {
        let p = raw(r#"{"message": "who?", "requestedSchema": {"type": "object"}}"#);
        let e = ServerRequest::parse("elicitation/create", Some(&p)).unwrap();
        assert!(matches!(&e, ServerRequest::ElicitationCreate(q) if q.message == "who?"));
        assert_eq!(e.method(), "elicitation/create");
        // Garbled params of a method that carries nothing are not read.
        let ping = ServerRequest::parse("ping", Some(&raw("[1]"))).unwrap();
        assert!(matches!(ping, ServerRequest::Ping) && ping.method() == "ping");
        let roots = ServerRequest::parse("roots/list", None).unwrap();
        assert!(matches!(roots, ServerRequest::RootsList) && roots.method() == "roots/list");
        let s = raw(r#"{"messages": [], "maxTokens": 5}"#);
        let s = ServerRequest::parse("sampling/createMessage", Some(&s)).unwrap();
        assert!(matches!(&s, ServerRequest::SamplingCreateMessage(c) if c.max_tokens == 5));
        assert_eq!(s.method(), "sampling/createMessage");
    }

    #[test]
    fn unknown_requests_are_kept_and_misfits_name_the_method() {
        let p = raw(r#"{"a": 1}"#);
        let other = ServerRequest::parse("tools/list", Some(&p)).unwrap();
        assert!(
            matches!(&other, ServerRequest::Other { params: Some(p), .. } if p.get() == r#"{"a": 1}"#)
        );
        assert_eq!(other.method(), "tools/list");
        let bad = ServerRequest::parse("elicitation/create", Some(&raw("{}"))).unwrap_err();
        assert_eq!(bad.method(), "elicitation/create");
    }

    #[test]
    fn every_notification_reads_into_its_variant_and_names_its_method() {
        let cases = [
            (
                "notifications/progress",
                r#"{"progressToken": 1, "progress": 2}"#,
            ),
            ("notifications/tools/list_changed", "[]"),
            ("notifications/resources/list_changed", "{}"),
            ("notifications/prompts/list_changed", "{}"),
            ("notifications/resources/updated", r#"{"uri": "u"}"#),
            (
                "notifications/elicitation/complete",
                r#"{"elicitationId": "e"}"#,
            ),
            ("notifications/message", r#"{"level": "info", "data": 1}"#),
            ("notifications/cancelled", r#"{"requestId": 1}"#),
            (
                "notifications/tasks/status",
                r#"{"taskId": "t", "status": "working", "createdAt": "a", "lastUpdatedAt": "b", "ttl": null}"#,
            ),
            (
                "notifications/tasks",
                r#"{"taskId": "t", "status": "working"}"#,
            ),
            (
                "notifications/subscriptions/acknowledged",
                r#"{"notifications": {"toolsListChanged": true}}"#,
            ),
            ("notifications/unheard_of", r#"{"x": 1}"#),
        ];
        for (method, params) in cases {
            let params = raw(params);
            let n = ServerNotification::parse(method, Some(&params)).unwrap();
            assert_eq!(n.method(), method);
            assert_eq!(
                matches!(n, ServerNotification::Other { .. }),
                method == "notifications/unheard_of"
            );
        }
        let bad =
            ServerNotification::parse("notifications/progress", Some(&raw("{}"))).unwrap_err();
        assert_eq!(bad.method(), "notifications/progress");
    }
}
