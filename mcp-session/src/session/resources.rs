//! The facade's resources, prompts, completion, logging and roots: each
//! handed to the list caches (`features.rs`) or the subscriptions feature.

use std::collections::BTreeMap;

use serde::Serialize;
use std::sync::Arc;

use mcp_stack_protocol::notification::{Notification, RootsListChanged};
use mcp_stack_protocol::request::{ResourcesSubscribe, ResourcesUnsubscribe};
use mcp_stack_protocol::types::{
    Completion, CompletionReference, GetPromptResult, LoggingLevel, Prompt, ReadResourceResult,
    Resource, ResourceTemplate,
};

use super::Session;
use crate::error::SessionError;
use crate::{features, subscriptions};

impl Session {
    /// Reads a resource. A resource the server does not have is
    /// [`SessionError::ResourceNotFound`], whichever code the server's
    /// revision uses for it (-32602 from 2026-07-28 on, -32002 before).
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, SessionError> {
        features::read_resource(self.core(), uri).await
    }

    /// The server's resources: every page, cached until
    /// `notifications/resources/list_changed` (or the TTL a 2026-07-28 server gives).
    pub async fn list_resources(&self) -> Result<Arc<Vec<Resource>>, SessionError> {
        self.inner.lists().resources(self.core()).await
    }

    /// Marks the cached resources, templates and prompts stale, as a
    /// `list_changed` would: the next listing fetches them again.
    pub fn mark_lists_stale(&self) {
        features::mark_lists_stale(self.core());
    }

    /// The server's resource templates, cached like the resources.
    pub async fn list_resource_templates(
        &self,
    ) -> Result<Arc<Vec<ResourceTemplate>>, SessionError> {
        self.inner.lists().templates(self.core()).await
    }

    /// Asks for `notifications/resources/updated` about `uri` (revisions
    /// before 2026-07-28, whose servers declare `resources.subscribe`; on
    /// 2026-07-28 use [`listen`](Self::listen) with a resource filter). The
    /// updates arrive through the notification listener.
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), SessionError> {
        subscriptions::resource_subscription::<ResourcesSubscribe>(self.core(), uri).await
    }

    /// Stops the updates [`subscribe_resource`](Self::subscribe_resource) asked for.
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), SessionError> {
        subscriptions::resource_subscription::<ResourcesUnsubscribe>(self.core(), uri).await
    }

    /// The server's prompts: every page, cached until
    /// `notifications/prompts/list_changed` (or the TTL a 2026-07-28 server gives).
    pub async fn list_prompts(&self) -> Result<Arc<Vec<Prompt>>, SessionError> {
        self.inner.lists().prompts(self.core()).await
    }

    /// Gets a prompt with these arguments. When the prompt is in the list,
    /// the arguments are checked against its declared ones first (required
    /// ones present, none undeclared): a mistake is
    /// [`SessionError::InvalidPromptArguments`] and nothing is sent. A
    /// prompt the list does not hold is sent as asked (the server decides).
    ///
    /// The arguments are anything serde writes as a JSON object whose
    /// members are strings (MCP's prompt arguments are strings): a
    /// `BTreeMap<String, String>`, a `#[derive(Serialize)]` struct, a
    /// `json!` object. Numbers and booleans are sent as their JSON text, a
    /// `null` member (an unset `Option`) is left out; a nested object or
    /// array is [`SessionError::InvalidPromptArguments`]. No arguments: `()`.
    ///
    /// ```no_run
    /// # async fn f(session: mcp_stack_session::Session) -> Result<(), mcp_stack_session::SessionError> {
    /// #[derive(serde::Serialize)]
    /// struct Review<'a> { code: &'a str, style: Option<&'a str> }
    ///
    /// let prompt = session.get_prompt("review", Review { code: "fn main() {}", style: None }).await?;
    /// println!("{} messages", prompt.messages.len());
    /// # Ok(()) }
    /// ```
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<GetPromptResult, SessionError> {
        let arguments = features::prompt_arguments(name, arguments)?;
        self.inner
            .lists()
            .get_prompt(self.core(), name, arguments)
            .await
    }

    /// Tells the server the roots changed
    /// (`notifications/roots/list_changed`); it asks for them again.
    /// Roots are deprecated by 2026-07-28 (see
    /// [`ClientHandlers::roots`](crate::ClientHandlers::roots)).
    pub async fn roots_changed(&self) -> Result<(), SessionError> {
        self.notify(RootsListChanged::METHOD, None).await
    }

    /// Sets the level of the log messages the server sends
    /// (`logging/setLevel`). Deprecated by 2026-07-28 (SEP-2577), whose
    /// migration note is for servers to log to stderr (stdio) or through
    /// OpenTelemetry; offered only to a server that declares `logging`. The messages reach `tracing` (`server log`
    /// events at their level, with the server's name) and the
    /// notification listener.
    pub async fn set_log_level(&self, level: LoggingLevel) -> Result<(), SessionError> {
        features::set_log_level(self.core(), level).await
    }

    /// Suggestions for an argument of a prompt or a variable of a resource
    /// template, given what was typed (`value`) and the arguments already
    /// chosen (`context`, 2025-06-18 and later).
    pub async fn complete(
        &self,
        reference: CompletionReference,
        argument: &str,
        value: &str,
        context: BTreeMap<String, String>,
    ) -> Result<Completion, SessionError> {
        features::complete(self.core(), reference, argument, value, context).await
    }
}
