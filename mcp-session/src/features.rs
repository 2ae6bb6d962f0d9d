//! Resources, prompts and completion: what a server offers beside tools.
//!
//! Lists are fetched page by page with the same guards as `tools/list` (a
//! repeated cursor stops the paging with an error, and so does a fetch over
//! its budget of pages, bytes or entries: [`SessionError::ListTooLarge`]), cached
//! until the server says the list changed (`notifications/…/list_changed`)
//! or, on 2026-07-28, until its `ttlMs` runs out. A request for a feature
//! the server did not declare fails at once with
//! [`SessionError::NotSupported`], without going out.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mcp_protocol::methods;
use mcp_protocol::results::CacheHints;
use mcp_protocol::types::{
    CompleteParams, CompleteResult, Completion, CompletionArgument, CompletionContext,
    CompletionReference, Extra, GetPromptParams, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, Prompt, Resource,
    ResourceTemplate, Tool,
};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::parse::parse_result;
use crate::{ListBudget, Session, SessionError};

/// One page of a paginated list.
pub(crate) trait Page: DeserializeOwned {
    /// What the list holds.
    type Item;
    /// The items, the next cursor, the other fields.
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>, Extra);
}

impl Page for ListToolsResult {
    type Item = Tool;
    fn into_parts(self) -> (Vec<Tool>, Option<String>, Extra) {
        (self.tools, self.next_cursor, self.extra)
    }
}

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

impl Page for mcp_protocol::tasks::ListTasksResult {
    type Item = mcp_protocol::tasks::Task;
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>, Extra) {
        (self.tasks, self.next_cursor, self.extra)
    }
}

/// A cached list: the items, and until when they are fresh.
#[derive(Debug)]
pub(crate) struct Cached<T> {
    items: Arc<Vec<T>>,
    /// `None`: until the server says the list changed; `Some`: a modern
    /// server's `ttlMs`.
    fresh_until: Option<Instant>,
}

/// The cache of one list, with the flag `list_changed` sets.
#[derive(Debug)]
pub(crate) struct ListCache<T> {
    slot: tokio::sync::Mutex<Option<Cached<T>>>,
}

impl<T> Default for ListCache<T> {
    fn default() -> Self {
        ListCache {
            slot: tokio::sync::Mutex::new(None),
        }
    }
}

/// The caches of the lists beside tools.
#[derive(Debug, Default)]
pub(crate) struct FeatureCaches {
    pub(crate) resources: ListCache<Resource>,
    pub(crate) templates: ListCache<ResourceTemplate>,
    pub(crate) prompts: ListCache<Prompt>,
    pub(crate) skills: ListCache<mcp_protocol::skills::SkillEntry>,
}

/// Which lists the server said changed (set by the reader task).
#[derive(Debug, Default)]
pub(crate) struct Staleness {
    pub(crate) resources: AtomicBool,
    pub(crate) templates: AtomicBool,
    pub(crate) prompts: AtomicBool,
    /// The extension defines no notification of its own; skills are
    /// resources, so a change of those, or a file that failed verification
    /// (the listing may be stale), refetches them.
    pub(crate) skills: AtomicBool,
}

impl Staleness {
    /// `notifications/resources/list_changed`: resources, templates, skills.
    pub(crate) fn resources_changed(&self) {
        self.resources.store(true, Ordering::Release);
        self.templates.store(true, Ordering::Release);
        self.skills.store(true, Ordering::Release);
    }
}

impl Session {
    /// Every page of a list, and (for a modern server) how long the result
    /// stays fresh: the shortest `ttlMs` of its pages, 0 when absent.
    pub(crate) async fn pages<P: Page>(
        &self,
        method: &'static str,
    ) -> Result<(Vec<P::Item>, Option<Duration>), SessionError> {
        self.pages_with::<P>(method, serde_json::Map::new()).await
    }

    /// [`pages`](Self::pages) of a request with these other parameters
    /// (`resources/directory/read`'s `uri`).
    ///
    /// One fetch is bounded three ways, each a [`SessionConfig`] setting
    /// ([`SessionError::ListTooLarge`] names the one that ran out): pages
    /// (`max_list_pages`), bytes (`max_list_bytes`, the raw JSON of each
    /// answer as received, counted before it is parsed) and entries
    /// (`max_list_items`). A server that pages on for ever is so stopped
    /// with at most about one page past the budget in memory.
    ///
    /// [`SessionConfig`]: crate::SessionConfig
    pub(crate) async fn pages_with<P: Page>(
        &self,
        method: &'static str,
        base: serde_json::Map<String, serde_json::Value>,
    ) -> Result<(Vec<P::Item>, Option<Duration>), SessionError> {
        let cache_hints = self.inner.version.has_result_types();
        let config = &self.inner.config;
        let over = |budget: ListBudget, limit: usize, pages: usize| {
            tracing::warn!(
                server = %config.server_name,
                method,
                pages,
                limit,
                setting = budget.setting(),
                "a paged list went over its budget; stopped paging"
            );
            SessionError::ListTooLarge {
                method: method.into(),
                budget,
                limit,
                pages,
            }
        };
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        let mut ttl: Option<Duration> = None;
        let mut bytes = 0usize;
        let timeout = config.request_timeout;
        for page in 1..=config.max_list_pages {
            let mut params = base.clone();
            if let Some(c) = &cursor {
                params.insert("cursor".into(), json!(c));
            }
            let raw = self.inner.params(method, &params)?;
            let context = self.inner.context();
            let answer = self
                .inner
                .request_raw(
                    self.inner.next_id(),
                    method,
                    Some(raw),
                    timeout,
                    None,
                    &context,
                )
                .await?;
            // The answer's size as it came, before it is parsed.
            bytes = bytes.saturating_add(answer.get().len());
            if bytes > config.max_list_bytes {
                return Err(over(ListBudget::Bytes, config.max_list_bytes, page));
            }
            let parsed: P = parse_result(method, &answer)?;
            drop(answer);
            let (page_items, next, extra) = parsed.into_parts();
            if items.len().saturating_add(page_items.len()) > config.max_list_items {
                return Err(over(ListBudget::Items, config.max_list_items, page));
            }
            if cache_hints {
                let page_ttl = CacheHints::of_map(&extra).ttl;
                ttl = Some(ttl.map_or(page_ttl, |t| t.min(page_ttl)));
            }
            items.extend(page_items);
            match next {
                None => return Ok((items, ttl)),
                Some(next) => {
                    if !seen.insert(next.clone()) {
                        return Err(SessionError::InvalidResponse {
                            method: method.into(),
                            reason: format!(
                                "the server repeated the cursor {next:?}; stopped paging"
                            ),
                        });
                    }
                    cursor = Some(next);
                }
            }
        }
        Err(over(
            ListBudget::Pages,
            config.max_list_pages,
            config.max_list_pages,
        ))
    }

    /// A list from its cache, or fetched (every page) when missing, marked
    /// stale, or past a modern server's TTL.
    pub(crate) async fn cached_list<P: Page>(
        &self,
        method: &'static str,
        cache: &ListCache<P::Item>,
        stale: &AtomicBool,
    ) -> Result<Arc<Vec<P::Item>>, SessionError> {
        let mut slot = cache.slot.lock().await;
        let invalidated = stale.swap(false, Ordering::AcqRel);
        if let Some(c) = slot.as_ref() {
            let expired = c.fresh_until.is_some_and(|t| Instant::now() >= t);
            if !invalidated && !expired {
                return Ok(Arc::clone(&c.items));
            }
        }
        let (items, ttl) = self.pages::<P>(method).await?;
        let items = Arc::new(items);
        *slot = Some(Cached {
            items: Arc::clone(&items),
            fresh_until: ttl.map(|ttl| Instant::now() + ttl),
        });
        Ok(items)
    }

    pub(crate) fn require(
        &self,
        declared: bool,
        capability: &'static str,
    ) -> Result<(), SessionError> {
        if declared {
            Ok(())
        } else {
            Err(SessionError::NotSupported(capability))
        }
    }

    fn has_resources(&self) -> Result<(), SessionError> {
        self.require(
            self.inner.init.capabilities.resources.is_some(),
            "resources",
        )
    }

    fn has_prompts(&self) -> Result<(), SessionError> {
        self.require(self.inner.init.capabilities.prompts.is_some(), "prompts")
    }

    /// The server's resources: every page, cached until
    /// `notifications/resources/list_changed` (or a modern server's TTL).
    pub async fn list_resources(&self) -> Result<Arc<Vec<Resource>>, SessionError> {
        self.has_resources()?;
        let f = self.inner.features();
        self.cached_list::<ListResourcesResult>(
            methods::RESOURCES_LIST,
            &f.resources,
            &self.inner.shared.stale.resources,
        )
        .await
    }

    /// Marks the cached resources, templates and prompts stale, as a
    /// `list_changed` would: the next listing fetches them again.
    pub fn mark_lists_stale(&self) {
        let stale = &self.inner.shared.stale;
        stale.resources_changed();
        stale.prompts.store(true, Ordering::Release);
    }

    /// The server's resource templates, cached like the resources.
    pub async fn list_resource_templates(
        &self,
    ) -> Result<Arc<Vec<ResourceTemplate>>, SessionError> {
        self.has_resources()?;
        let f = self.inner.features();
        self.cached_list::<ListResourceTemplatesResult>(
            methods::RESOURCES_TEMPLATES_LIST,
            &f.templates,
            &self.inner.shared.stale.templates,
        )
        .await
    }

    /// Asks for `notifications/resources/updated` about `uri` (revisions
    /// before 2026-07-28, whose servers declare `resources.subscribe`; on
    /// 2026-07-28 use [`listen`](Self::listen) with a resource filter). The
    /// updates arrive through the notification listener.
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), SessionError> {
        self.resource_subscription(methods::RESOURCES_SUBSCRIBE, uri)
            .await
    }

    /// Stops the updates [`subscribe_resource`](Self::subscribe_resource) asked for.
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), SessionError> {
        self.resource_subscription(methods::RESOURCES_UNSUBSCRIBE, uri)
            .await
    }

    async fn resource_subscription(
        &self,
        method: &'static str,
        uri: &str,
    ) -> Result<(), SessionError> {
        let subscribe = self
            .inner
            .init
            .capabilities
            .resources
            .as_ref()
            .and_then(|r| r.subscribe)
            == Some(true);
        self.require(subscribe, "resources.subscribe")?;
        if self.inner.version.listening() == mcp_protocol::Listening::Stream {
            return Err(SessionError::NotSupported(
                "resources/subscribe on 2026-07-28 (use listen with a resource filter)",
            ));
        }
        let timeout = self.inner.config.request_timeout;
        let _: serde_json::Value = self
            .inner
            .request(
                method,
                &json!({ "uri": uri }),
                timeout,
                &self.inner.named_context(uri),
            )
            .await?;
        Ok(())
    }

    /// The server's prompts: every page, cached until
    /// `notifications/prompts/list_changed` (or a modern server's TTL).
    pub async fn list_prompts(&self) -> Result<Arc<Vec<Prompt>>, SessionError> {
        self.has_prompts()?;
        let f = self.inner.features();
        self.cached_list::<ListPromptsResult>(
            methods::PROMPTS_LIST,
            &f.prompts,
            &self.inner.shared.stale.prompts,
        )
        .await
    }

    /// Gets a prompt with these arguments. When the prompt is in the list,
    /// the arguments are checked against its declared ones first (required
    /// ones present, none undeclared): a mistake is
    /// [`SessionError::InvalidPromptArguments`] and nothing is sent. A
    /// prompt the list does not hold is sent as asked (the server decides).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<GetPromptResult, SessionError> {
        let prompts = self.list_prompts().await?;
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
        let timeout = self.inner.config.request_timeout;
        self.inner
            .request(
                methods::PROMPTS_GET,
                &params,
                timeout,
                &self.inner.named_context(name),
            )
            .await
    }

    /// Tells the server the roots changed
    /// (`notifications/roots/list_changed`); it asks for them again.
    /// Roots are deprecated by 2026-07-28 (see
    /// [`ClientHandlers::roots`](crate::ClientHandlers::roots)).
    pub async fn roots_changed(&self) -> Result<(), SessionError> {
        self.notify(methods::ROOTS_LIST_CHANGED, None).await
    }

    /// Sets the level of the log messages the server sends
    /// (`logging/setLevel`). Deprecated by 2026-07-28 (SEP-2577), whose
    /// migration note is for servers to log to stderr (stdio) or through
    /// OpenTelemetry; offered only to a server that declares `logging`. The messages reach `tracing` (`server log`
    /// events at their level, with the server's name) and the
    /// notification listener.
    pub async fn set_log_level(
        &self,
        level: mcp_protocol::types::LoggingLevel,
    ) -> Result<(), SessionError> {
        self.require(self.inner.init.capabilities.logging.is_some(), "logging")?;
        let timeout = self.inner.config.request_timeout;
        let _: serde_json::Value = self
            .inner
            .request(
                methods::LOGGING_SET_LEVEL,
                &json!({ "level": level }),
                timeout,
                &self.inner.context(),
            )
            .await?;
        Ok(())
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
        self.require(
            self.inner.init.capabilities.completions.is_some(),
            "completions",
        )?;
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
        let timeout = self.inner.config.request_timeout;
        let result: CompleteResult = self
            .inner
            .request(
                methods::COMPLETION_COMPLETE,
                &params,
                timeout,
                &self.inner.context(),
            )
            .await?;
        Ok(result.completion)
    }
}
