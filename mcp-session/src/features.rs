//! Resources, prompts and completion: what a server offers beside tools,
//! and the caches of their lists ([`FeatureCaches`]).
//!
//! Lists are fetched page by page with the same guards as `tools/list`
//! (`paging.rs`: a repeated cursor or a fetch over its budget of pages, bytes
//! or entries stops the paging with an error), cached
//! until the server says the list changed (`notifications/…/list_changed`)
//! or, on 2026-07-28, until its `ttlMs` runs out. A request for a feature
//! the server did not declare fails at once with
//! [`SessionError::NotSupported`], without going out.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use mcp_stack_protocol::codes as mcp_codes;
use mcp_stack_protocol::request::{
    CompletionComplete, LoggingSetLevel, PromptsGet, PromptsList, ResourcesList, ResourcesRead,
    ResourcesTemplatesList,
};
use mcp_stack_protocol::types::{
    CompleteParams, Completion, CompletionArgument, CompletionContext, CompletionReference, Extra,
    GetPromptParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, LoggingLevel, Prompt, ReadResourceResult, Resource, ResourceParams,
    ResourceTemplate, SetLevelParams,
};
use serde_json::Value;

use crate::conn::{Inner, require};
use crate::error::SessionError;
use crate::paging::{ListCache, Page};

impl Page for ListResourcesResult {
    type Item = Resource;
    fn into_parts(self) -> (Vec<Resource>, Option<String>, Extra) {
        (self.resources, self.next_cursor, self.extra)
    }
}

impl Page for ListResourceTemplatesResult {
    type Item = ResourceTemplate;
    fn into_parts(self) -> (Vec<ResourceTemplate>, Option<String>, Extra) {
        (self.resource_templates, self.next_cursor, self.extra)
    }
}

impl Page for ListPromptsResult {
    type Item = Prompt;
    fn into_parts(self) -> (Vec<Prompt>, Option<String>, Extra) {
        (self.prompts, self.next_cursor, self.extra)
    }
}

/// The list caches of a session: resources, resource templates and
/// prompts, made on first use (most connections of a runtime never list
/// them).
#[derive(Debug, Default)]
pub(crate) struct FeatureCaches {
    resources: ListCache<Resource>,
    templates: ListCache<ResourceTemplate>,
    prompts: ListCache<Prompt>,
}

fn has_resources(core: &Inner) -> Result<(), SessionError> {
    require(core.init.capabilities.resources.is_some(), "resources")
}

fn has_prompts(core: &Inner) -> Result<(), SessionError> {
    require(core.init.capabilities.prompts.is_some(), "prompts")
}

impl FeatureCaches {
    /// The server's resources, from the cache or fetched.
    pub(crate) async fn resources(&self, core: &Inner) -> Result<Arc<Vec<Resource>>, SessionError> {
        has_resources(core)?;
        core.cached_list::<ResourcesList>(&self.resources, &core.shared.stale.resources)
            .await
    }

    /// The server's resource templates, from the cache or fetched.
    pub(crate) async fn templates(
        &self,
        core: &Inner,
    ) -> Result<Arc<Vec<ResourceTemplate>>, SessionError> {
        has_resources(core)?;
        core.cached_list::<ResourcesTemplatesList>(&self.templates, &core.shared.stale.templates)
            .await
    }

    /// The server's prompts, from the cache or fetched.
    pub(crate) async fn prompts(&self, core: &Inner) -> Result<Arc<Vec<Prompt>>, SessionError> {
        has_prompts(core)?;
        core.cached_list::<PromptsList>(&self.prompts, &core.shared.stale.prompts)
            .await
    }

    /// `prompts/get`, the arguments checked first against the prompt's
    /// declared ones when the list holds it.
    pub(crate) async fn get_prompt(
        &self,
        core: &Inner,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, SessionError> {
        let prompts = self.prompts(core).await?;
        if let Some(prompt) = prompts.iter().find(|p| p.name == name) {
            prompt.check_arguments(&arguments).map_err(|problems| {
                SessionError::InvalidPromptArguments {
                    prompt: name.to_owned(),
                    problems,
                }
            })?;
        }
        let params = GetPromptParams {
            name: name.to_owned(),
            arguments: (!arguments.is_empty()).then_some(arguments),
            meta: None,
            extra: Extra::new(),
        };
        let timeout = core.config.request_timeout;
        core.send::<PromptsGet>(&params, timeout, &core.named_context(name))
            .await
    }
}

/// A prompt's arguments as MCP has them (strings), from whatever the caller
/// serialized: an object whose strings stay, numbers and booleans become
/// their JSON text and `null`s are left out; anything else is an error of
/// the arguments, and nothing is sent.
pub(crate) fn prompt_arguments(
    prompt: &str,
    arguments: impl serde::Serialize,
) -> Result<BTreeMap<String, String>, SessionError> {
    let invalid = |problems: String| SessionError::InvalidPromptArguments {
        prompt: prompt.to_owned(),
        problems,
    };
    let members = match serde_json::to_value(arguments) {
        Ok(Value::Object(members)) => members,
        Ok(Value::Null) => return Ok(BTreeMap::new()),
        Ok(other) => {
            return Err(invalid(format!(
                "the arguments must be an object of strings, not {}",
                json_kind(&other)
            )));
        }
        Err(e) => return Err(invalid(format!("cannot be written as JSON: {e}"))),
    };
    let mut out = BTreeMap::new();
    for (key, value) in members {
        let text = match value {
            Value::String(s) => s,
            Value::Null => continue,
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            other => {
                return Err(invalid(format!(
                    "argument `{key}` is {}; prompt arguments are strings",
                    json_kind(&other)
                )));
            }
        };
        out.insert(key, text);
    }
    Ok(out)
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Marks the cached resources, templates and prompts stale, as a
/// `list_changed` would.
pub(crate) fn mark_lists_stale(core: &Inner) {
    let stale = &core.shared.stale;
    stale.resources_changed();
    stale.prompts.store(true, Ordering::Release);
}

/// Whether an error answer to `resources/read` of `uri` says the resource
/// does not exist: -32002 (before 2026-07-28), or -32602 naming the URI in
/// its data or saying "not found" (an invalid-params error about something
/// else stays a protocol error).
pub(crate) fn is_not_found(error: &mcp_stack_jsonrpc::ErrorObject, uri: &str) -> bool {
    if error.code == mcp_codes::RESOURCE_NOT_FOUND {
        return true;
    }
    if error.code != mcp_stack_jsonrpc::codes::INVALID_PARAMS {
        return false;
    }
    let data: Option<Value> = error.data_as().and_then(Result::ok);
    data.as_ref()
        .and_then(|d| d.get("uri"))
        .and_then(Value::as_str)
        == Some(uri)
        || error.message.to_ascii_lowercase().contains("not found")
}

/// `resources/read`; a resource the server does not have is
/// [`SessionError::ResourceNotFound`], whichever code its revision uses.
pub(crate) async fn read_resource(
    core: &Inner,
    uri: &str,
) -> Result<ReadResourceResult, SessionError> {
    let timeout = core.config.request_timeout;
    let params = ResourceParams::new(uri);
    match core
        .send::<ResourcesRead>(&params, timeout, &core.named_context(uri))
        .await
    {
        Err(SessionError::Protocol { error, .. }) if is_not_found(&error, uri) => {
            Err(SessionError::ResourceNotFound {
                uri: uri.to_string(),
                message: error.message,
            })
        }
        other => other,
    }
}

/// `logging/setLevel`, for a server that declares `logging`.
pub(crate) async fn set_log_level(core: &Inner, level: LoggingLevel) -> Result<(), SessionError> {
    require(core.init.capabilities.logging.is_some(), "logging")?;
    let timeout = core.config.request_timeout;
    let params = SetLevelParams {
        level,
        meta: None,
        extra: Extra::new(),
    };
    core.send_acknowledged::<LoggingSetLevel>(&params, timeout, &core.context())
        .await
}

/// `completion/complete`, for a server that declares `completions`.
pub(crate) async fn complete(
    core: &Inner,
    reference: CompletionReference,
    argument: &str,
    value: &str,
    context: BTreeMap<String, String>,
) -> Result<Completion, SessionError> {
    require(core.init.capabilities.completions.is_some(), "completions")?;
    let params = CompleteParams {
        reference,
        argument: CompletionArgument {
            name: argument.to_owned(),
            value: value.to_owned(),
        },
        context: (!context.is_empty()).then_some(CompletionContext {
            arguments: Some(context),
        }),
        meta: None,
    };
    let timeout = core.config.request_timeout;
    let result = core
        .send::<CompletionComplete>(&params, timeout, &core.context())
        .await?;
    Ok(result.completion)
}
