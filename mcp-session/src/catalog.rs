//! The tool catalog feature: the session's cached [`ToolCatalog`], its
//! fetch (every page of `tools/list`, one at a time however many callers
//! wait), and the checks a call makes against it (the tool known, its
//! arguments and its structured output valid). Calling a tool is in
//! `calls.rs`.

use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use mcp_stack_protocol::request::ToolsList;
use mcp_stack_protocol::types::{CallToolResult, Extra, ListToolsResult, Tool};
use mcp_stack_protocol::x_mcp_header;

use crate::conn::Inner;
use crate::error::SessionError;
use crate::paging::Page;
use crate::tools::{CatalogTool, Checked, ToolCatalog};

impl Page for ListToolsResult {
    type Item = Tool;
    fn into_parts(self) -> (Vec<Tool>, Option<String>, Extra) {
        (self.tools, self.next_cursor, self.extra)
    }
}

/// The catalog and how long it stays fresh.
pub(crate) struct CachedCatalog {
    pub(crate) catalog: Arc<ToolCatalog>,
    /// `None`: until the server says the list changed (revisions without
    /// cache hints give no TTL). `Some`: the server's `ttlMs` from the fetch.
    pub(crate) fresh_until: Option<Instant>,
    /// The count of list changes the fetch started at (`catalog_changes`).
    pub(crate) changes: u64,
}

/// The tools feature of a session: its catalog and the locks around it.
#[derive(Default)]
pub(crate) struct Tools {
    /// The tools catalog, read without waiting on every call.
    cached: RwLock<Option<CachedCatalog>>,
    /// Held while the catalog is fetched: concurrent callers wait for one
    /// fetch instead of each making their own.
    fetch: tokio::sync::Mutex<()>,
    /// Held by a call when the server does not take parallel tool calls.
    pub(crate) call_gate: tokio::sync::Mutex<()>,
}

/// Leaves out the tools whose `x-mcp-header` annotations are invalid, as
/// the 2026-07-28 spec requires over HTTP; says why for each.
pub(crate) fn drop_invalid_header_tools(server: &str, tools: &mut Vec<Tool>) -> Vec<String> {
    let mut diagnostics = Vec::new();
    tools.retain(|tool| match x_mcp_header::annotations(&tool.input_schema) {
        Ok(_) => true,
        Err(why) => {
            tracing::warn!(server, tool = %tool.name, "tool left out: {why}");
            diagnostics.push(format!(
                "tool `{}` left out: {why} (the 2026-07-28 spec excludes tools with invalid \
                 x-mcp-header annotations)",
                tool.name
            ));
            false
        }
    });
    diagnostics
}

impl Tools {
    /// The catalog, fetched when missing or invalidated by
    /// `notifications/tools/list_changed`; when `honour_ttl`, also when a
    /// 2026-07-28 server's `ttlMs` has run out. (A call only needs the schemas to
    /// check its arguments, so it uses a catalog past its TTL rather than
    /// fetching before every call.)
    pub(crate) async fn catalog(
        &self,
        core: &Inner,
        honour_ttl: bool,
    ) -> Result<Arc<ToolCatalog>, SessionError> {
        // The common case, every call: a current catalog, read under a
        // shared lock that is never held across an await.
        let changes = &core.shared.catalog_changes;
        if let Some(catalog) = self.cached_catalog(honour_ttl, changes.load(Ordering::Acquire)) {
            return Ok(catalog);
        }
        let _fetching = self.fetch.lock().await;
        let seen = changes.load(Ordering::Acquire);
        if let Some(catalog) = self.cached_catalog(honour_ttl, seen) {
            // Fetched by the caller we waited for.
            return Ok(catalog);
        }
        let fetched = self.fetch_tools(core).await;
        let mut cached = self
            .cached
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match fetched {
            Ok((catalog, ttl)) => {
                let catalog = Arc::new(catalog);
                // A change announced during the fetch leaves it stale.
                *cached = Some(CachedCatalog {
                    catalog: Arc::clone(&catalog),
                    fresh_until: ttl.map(|ttl| Instant::now() + ttl),
                    changes: seen,
                });
                Ok(catalog)
            }
            Err(e) => {
                // The change is used up all the same: later calls go on
                // with the catalog they had, rather than each failing on
                // a server whose `tools/list` fails.
                if let Some(c) = cached.as_mut() {
                    c.changes = seen;
                }
                Err(e)
            }
        }
    }

    /// The cached catalog, unless there is none, the tools list changed
    /// since it was fetched (`changes` is the current count), or (with
    /// `honour_ttl`) its TTL ran out.
    fn cached_catalog(&self, honour_ttl: bool, changes: u64) -> Option<Arc<ToolCatalog>> {
        let cached = self
            .cached
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let c = cached.as_ref().filter(|c| c.changes == changes)?;
        let expired = honour_ttl && c.fresh_until.is_some_and(|t| Instant::now() >= t);
        (!expired).then(|| Arc::clone(&c.catalog))
    }

    /// The catalog, fetched again when it does not hold `name` (the server
    /// may have added the tool since it was fetched).
    pub(crate) async fn catalog_naming(
        &self,
        core: &Inner,
        name: &str,
    ) -> Result<Arc<ToolCatalog>, SessionError> {
        let catalog = self.catalog(core, false).await?;
        if catalog.get(name).is_some() {
            return Ok(catalog);
        }
        self.refresh(core).await
    }

    /// Fetches the catalog again, whatever the cache holds.
    pub(crate) async fn refresh(&self, core: &Inner) -> Result<Arc<ToolCatalog>, SessionError> {
        core.shared.catalog_changes.fetch_add(1, Ordering::AcqRel);
        self.catalog(core, true).await
    }

    /// Every page of `tools/list`, and (where the revision gives cache hints) how long the
    /// result stays fresh: the shortest `ttlMs` of its pages, 0 when absent.
    async fn fetch_tools(
        &self,
        core: &Inner,
    ) -> Result<(ToolCatalog, Option<Duration>), SessionError> {
        if core.init.capabilities.tools.is_none() {
            let why = "tools/list is empty: the server did not declare the `tools` capability, so it offers no tools";
            return Ok((ToolCatalog::new(Vec::new(), vec![why.to_string()]), None));
        }
        let (mut tools, ttl) = core.pages::<ToolsList>().await?;
        let diagnostics = if core.mirrors_headers() {
            drop_invalid_header_tools(&core.config.server_name, &mut tools)
        } else {
            Vec::new()
        };
        Ok((ToolCatalog::new(tools, diagnostics), ttl))
    }

    /// `result`, unless its `structuredContent` does not match the tool's
    /// output schema.
    pub(crate) fn checked_output(
        catalog: &ToolCatalog,
        name: &str,
        result: CallToolResult,
    ) -> Result<CallToolResult, SessionError> {
        if let (Some(structured), false) = (&result.structured_content, result.is_error())
            && let Some(entry) = catalog.get(name)
            && let Checked::Invalid(problems) = entry.check_output(structured)
        {
            return Err(SessionError::InvalidOutput {
                tool: name.to_string(),
                problems,
            });
        }
        Ok(result)
    }

    /// The catalog's entry for `name`, with `arguments` checked against its
    /// input schema: an unknown tool or invalid arguments are errors, and
    /// nothing is sent.
    pub(crate) fn checked_entry<'c>(
        core: &Inner,
        catalog: &'c ToolCatalog,
        name: &str,
        arguments: &Value,
    ) -> Result<&'c CatalogTool, SessionError> {
        let Some(entry) = catalog.get(name) else {
            return Err(SessionError::UnknownTool {
                name: name.to_string(),
                known: catalog.some_names(20),
            });
        };
        match entry.check_arguments(arguments) {
            Checked::Valid | Checked::Disabled => Ok(entry),
            Checked::Invalid(problems) => Err(SessionError::InvalidArguments {
                tool: name.to_string(),
                problems,
            }),
            Checked::Unchecked(why) => {
                tracing::warn!(server = %core.config.server_name, tool = name, "arguments not checked: {why}");
                Ok(entry)
            }
        }
    }
}
