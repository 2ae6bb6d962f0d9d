//! Paged lists, and their caches: what every list feature (tools,
//! resources, prompts, skills, tasks) fetches through.
//!
//! A list is fetched page by page (a repeated cursor stops the paging with
//! an error, and so does a fetch over its budget of pages, bytes or
//! entries: [`SessionError::ListTooLarge`]); a [`ListCache`] keeps it until
//! the server says the list changed or, where the revision gives cache
//! hints, until its `ttlMs` runs out.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mcp_stack_protocol::request::Request;
use mcp_stack_protocol::results::CacheHints;
use mcp_stack_protocol::skills::DirectoryReadParams;
use mcp_stack_protocol::types::{Extra, PaginatedParams};
use serde::de::DeserializeOwned;

use crate::conn::Inner;
use crate::error::{ListBudget, SessionError};
use crate::parse::parse_result;

/// One page of a paginated list.
pub(crate) trait Page: DeserializeOwned {
    /// What the list holds.
    type Item;
    /// The items, the next cursor, the other fields.
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>, Extra);
}

/// What one page of request `R` lists.
pub(crate) type PageItem<R> = <<R as Request>::Result as Page>::Item;

/// The params of a paged request: where the cursor goes.
pub(crate) trait PageParams: Clone {
    /// Asks for the page after `cursor` (`None`: the first).
    fn set_cursor(&mut self, cursor: Option<String>);
}

impl PageParams for PaginatedParams {
    fn set_cursor(&mut self, cursor: Option<String>) {
        self.cursor = cursor;
    }
}

impl PageParams for DirectoryReadParams {
    fn set_cursor(&mut self, cursor: Option<String>) {
        self.cursor = cursor;
    }
}

/// A cached list: the items, and until when they are fresh.
#[derive(Debug)]
pub(crate) struct Cached<T> {
    items: Arc<Vec<T>>,
    /// `None`: until the server says the list changed; `Some`: the `ttlMs`
    /// a 2026-07-28 server gave.
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

impl Inner {
    /// Every page of a list, and (where the revision gives cache hints) how long the result
    /// stays fresh: the shortest `ttlMs` of its pages, 0 when absent.
    pub(crate) async fn pages<R: Request>(
        &self,
    ) -> Result<(Vec<PageItem<R>>, Option<Duration>), SessionError>
    where
        R::Params: PageParams + Default,
        R::Result: Page,
    {
        self.pages_with::<R>(R::Params::default()).await
    }

    /// [`pages`](Self::pages) of a request with these other parameters
    /// (`resources/directory/read`'s `uri`); each page's cursor is set on
    /// a copy of `base`.
    ///
    /// One fetch is bounded three ways, each a [`SessionConfig`] setting
    /// ([`SessionError::ListTooLarge`] names the one that ran out): pages
    /// (`max_list_pages`), bytes (`max_list_bytes`, the raw JSON of each
    /// answer as received, counted before it is parsed) and entries
    /// (`max_list_items`). A server that pages on for ever is so stopped
    /// with at most about one page past the budget in memory.
    ///
    /// [`SessionConfig`]: crate::SessionConfig
    pub(crate) async fn pages_with<R: Request>(
        &self,
        base: R::Params,
    ) -> Result<(Vec<PageItem<R>>, Option<Duration>), SessionError>
    where
        R::Params: PageParams,
        R::Result: Page,
    {
        let method = R::METHOD;
        let cache_hints = self.revision.cache_hints();
        let config = &self.config;
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
            params.set_cursor(cursor.clone());
            let raw = self.params(method, &params)?;
            let context = self.context();
            let answer = self
                .request_raw(self.next_id(), method, Some(raw), timeout, None, &context)
                .await?;
            // The answer's size as it came, before it is parsed.
            bytes = bytes.saturating_add(answer.get().len());
            if bytes > config.max_list_bytes {
                return Err(over(ListBudget::Bytes, config.max_list_bytes, page));
            }
            let parsed: R::Result = parse_result(method, &answer)?;
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
    /// stale, or past the TTL the server gave.
    pub(crate) async fn cached_list<R: Request>(
        &self,
        cache: &ListCache<PageItem<R>>,
        stale: &AtomicBool,
    ) -> Result<Arc<Vec<PageItem<R>>>, SessionError>
    where
        R::Params: PageParams + Default,
        R::Result: Page,
    {
        let mut slot = cache.slot.lock().await;
        let invalidated = stale.swap(false, Ordering::AcqRel);
        if let Some(c) = slot.as_ref() {
            let expired = c.fresh_until.is_some_and(|t| Instant::now() >= t);
            if !invalidated && !expired {
                return Ok(Arc::clone(&c.items));
            }
        }
        let (items, ttl) = self.pages::<R>().await?;
        let items = Arc::new(items);
        *slot = Some(Cached {
            items: Arc::clone(&items),
            fresh_until: ttl.map(|ttl| Instant::now() + ttl),
        });
        Ok(items)
    }
}
