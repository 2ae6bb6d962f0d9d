//! Tool search over a session's catalog, and deferred tool loading: the
//! model starts with a `search_tools` tool and the tools the application
//! keeps always on; the tools its searches find become callable.
//!
//! The index ([`ToolIndex`], see [`crate::search`]) belongs to a catalog
//! snapshot and is built on its first search. When a server says its list
//! changed, the fresh catalog inherits the old index and updates it,
//! analyzing again only the tools that changed.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use mcp_stack_session::types::{CallToolResult, Content, Extra, Tool};
use serde_json::{Value, json};

use crate::catalog::{RuntimeCatalog, RuntimeTool};
use crate::error::RuntimeError;
use crate::lease::SessionRuntime;
use crate::search::{IndexEntry, MAX_RESULTS, SearchError, ToolIndex};

/// A tool a search found, with how well it matched.
#[derive(Debug, Clone)]
pub struct ToolMatch {
    tool: RuntimeTool,
    score: f32,
    exact_name: bool,
}

impl ToolMatch {
    /// The tool (its namespaced name, server, definition).
    pub fn tool(&self) -> &RuntimeTool {
        &self.tool
    }

    /// Its BM25F score (finite, positive; higher is better).
    pub fn score(&self) -> f32 {
        self.score
    }

    /// The query was the tool's name (such matches come first).
    pub fn exact_name(&self) -> bool {
        self.exact_name
    }
}

impl RuntimeCatalog {
    /// The search index of this catalog's tools, built on first use (or
    /// updated from the catalog this one replaced).
    pub fn tool_index(&self) -> &Arc<ToolIndex> {
        self.search.get_or_build(|| {
            self.tools()
                .iter()
                .map(|t| IndexEntry {
                    name: t.name(),
                    server: t.server(),
                    tool: t.tool(),
                })
                .collect()
        })
    }

    /// The `k` tools of every server that match `query` best (see
    /// [`crate::search`] for the ranking).
    pub fn search_tools(&self, query: &str, k: usize) -> Result<Vec<ToolMatch>, SearchError> {
        let index = self.tool_index();
        let hits = index.search(query, k)?;
        // The index was built from `tools()`, in order.
        Ok(hits
            .into_iter()
            .filter_map(|h| {
                Some(ToolMatch {
                    tool: self.tools().get(h.index())?.clone(),
                    score: h.score(),
                    exact_name: h.exact_name(),
                })
            })
            .collect())
    }

    /// Hands `replaced`'s search index to this catalog, which updates it on
    /// its first search instead of building one afresh.
    pub(crate) fn inherit_search(&self, replaced: &RuntimeCatalog) {
        self.search.inherit(&replaced.search);
    }
}

impl SessionRuntime {
    /// Ranked search over the names, titles, descriptions and parameters of
    /// the tools of every server of the session: the `k` best (at most
    /// [`MAX_RESULTS`]), exact names first. A [`RuntimeLease`](crate::RuntimeLease)
    /// derefs here: `lease.search_tools("create issue", 5)`.
    pub fn search_tools(&self, query: &str, k: usize) -> Result<Vec<ToolMatch>, SearchError> {
        self.catalog.search_tools(query, k)
    }
}

/// The name of the search tool [`DeferredTools`] hands the model.
pub const SEARCH_TOOLS: &str = "search_tools";

/// How many tools a `search_tools` call returns unless it asks (`limit`).
pub const DEFAULT_SEARCH_RESULTS: usize = 5;

/// The most tools one `search_tools` call may ask for.
pub const MAX_SEARCH_LIMIT: usize = 20;

/// The schema bytes deferred loading saved: what handing the model the
/// whole catalog at each listing would have cost, against what it was
/// handed (the listings and the definitions search results carried).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaSavings {
    /// Listings handed out ([`DeferredTools::tools`] calls).
    pub listings: u64,
    /// `search_tools` calls answered.
    pub searches: u64,
    /// The JSON bytes of the full catalog, summed over the listings.
    pub full_bytes: u64,
    /// The JSON bytes handed out: the listings (with `search_tools`) and
    /// the search results.
    pub handed_bytes: u64,
}

impl SchemaSavings {
    /// Bytes not handed to the model.
    pub fn saved_bytes(&self) -> u64 {
        self.full_bytes.saturating_sub(self.handed_bytes)
    }
}

/// Why a deferred call was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeferredError {
    /// The tool exists but no search has surfaced it yet (and it is not
    /// always on): the model has not seen its definition.
    #[error(
        "tool `{name}` has not been found by a search yet: call `{SEARCH_TOOLS}` with what you \
         need (its result gives the tool's definition), then call the tool"
    )]
    NotSurfaced {
        /// The tool's namespaced name.
        name: String,
    },
    /// The call itself failed (an unknown tool, the server's error …).
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// Deferred tool loading for one agent conversation.
///
/// Instead of every tool of every server, the model is handed
/// ([`tools`](Self::tools)) the `search_tools` tool, the tools the
/// application keeps [always on](Self::always_on), and those earlier
/// searches surfaced. [`call_tool`](Self::call_tool) answers `search_tools`
/// itself (its result lists the tools found, with their input schemas;
/// from then on they are callable and listed) and routes the other calls to
/// the runtime. A tool that exists but was not surfaced is refused with
/// [`DeferredError::NotSurfaced`], which tells the model to search first:
/// it has not seen the tool's schema. [`savings`](Self::savings) counts the
/// schema bytes that were not handed out.
///
/// It holds no runtime: give it the session's lease at each call, so a
/// catalog refreshed meanwhile (`list_changed`) is the one used.
///
/// # Example
///
/// An agent loop wires it in where it lists tools for the model and where
/// it runs the model's tool calls:
///
/// ```
/// use std::sync::Arc;
/// use mcp_stack_config::{Options, parse_str, resolve};
/// use mcp_stack_runtime::{DeferredError, DeferredTools, RuntimeManager, RuntimeOptions, SEARCH_TOOLS};
/// use mcp_stack_testkit::InProcessConnector;
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// # let text = r#"{"mcpServers": {"kit": {"command": "mcp-testkit"}}}"#;
/// # let config = resolve(&parse_str(text, &Options::new()).unwrap().config, &|_: &str| None).unwrap();
/// let manager = RuntimeManager::with_connector(
///     RuntimeOptions::default(),
///     Arc::new(InProcessConnector::new()),
/// );
/// // One per conversation: what its model is handed and may call.
/// let deferred = DeferredTools::new().always_on(["kit__echo"]);
///
/// // Each turn: the session's runtime, and the tools to hand the model.
/// let lease = manager.acquire("agent-1", &config).await?;
/// let offered = deferred.tools(&lease);
/// assert_eq!(offered[0].name, SEARCH_TOOLS);
/// assert_eq!(offered[1].name, "kit__echo");
///
/// // Every tool call the model makes goes through `call_tool`.
/// let found = deferred
///     .call_tool(&lease, SEARCH_TOOLS, json!({"query": "add numbers", "limit": 1}))
///     .await?;
/// assert!(found.text().contains("kit__add"));
/// let sum = deferred.call_tool(&lease, "kit__add", json!({"a": 2, "b": 3})).await?;
/// assert_eq!(sum.text(), "5");
///
/// // A tool the model did not search for is refused; the error's text,
/// // handed back as the call's result, tells it to search first.
/// match deferred.call_tool(&lease, "kit__slow", json!({"ms": 1})).await {
///     Err(e @ DeferredError::NotSurfaced { .. }) => assert!(e.to_string().contains(SEARCH_TOOLS)),
///     other => panic!("{other:?}"),
/// }
///
/// // What the model was not handed, in JSON bytes of tool definitions.
/// assert!(deferred.savings().saved_bytes() > 0);
/// drop(lease);
/// manager.dispose_all().await;
/// # Ok::<(), DeferredError>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct DeferredTools {
    always_on: BTreeSet<String>,
    results: usize,
    surfaced: Mutex<BTreeSet<String>>,
    listings: AtomicU64,
    searches: AtomicU64,
    full_bytes: AtomicU64,
    handed_bytes: AtomicU64,
}

impl Default for DeferredTools {
    fn default() -> Self {
        DeferredTools::new()
    }
}

impl DeferredTools {
    /// Nothing always on, [`DEFAULT_SEARCH_RESULTS`] per search.
    pub fn new() -> Self {
        DeferredTools {
            always_on: BTreeSet::new(),
            results: DEFAULT_SEARCH_RESULTS,
            surfaced: Mutex::new(BTreeSet::new()),
            listings: AtomicU64::new(0),
            searches: AtomicU64::new(0),
            full_bytes: AtomicU64::new(0),
            handed_bytes: AtomicU64::new(0),
        }
    }

    /// Tools (namespaced names) handed to the model from the start and
    /// always callable.
    pub fn always_on<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.always_on.extend(names.into_iter().map(Into::into));
        self
    }

    /// How many tools a search returns when the model does not say (1 to
    /// [`MAX_SEARCH_LIMIT`]).
    pub fn search_results(mut self, k: usize) -> Self {
        self.results = k.clamp(1, MAX_SEARCH_LIMIT);
        self
    }

    /// The `search_tools` tool's definition, as the model gets it.
    pub fn search_tool() -> Tool {
        Tool {
            name: SEARCH_TOOLS.to_owned(),
            title: Some("Search tools".to_owned()),
            description: Some(
                "Finds tools for a task among all the tools available, by what they do. Only \
                 the tools found this way can be called: the result gives each one's name, \
                 description and input schema."
                    .to_owned(),
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What the tool should do, in a few words (\"create a github issue\"), or a tool's name."
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_SEARCH_LIMIT,
                        "description": "How many tools to return."
                    }
                },
                "required": ["query"]
            })
            .into(),
            output_schema: None,
            annotations: None,
            icons: None,
            extra: Extra::new(),
        }
    }

    /// The tools surfaced by searches so far (namespaced names, sorted).
    pub fn surfaced(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }

    /// Whether the model may call `name` now.
    pub fn is_callable(&self, name: &str) -> bool {
        name == SEARCH_TOOLS || self.always_on.contains(name) || self.lock().contains(name)
    }

    /// The tools to hand the model now: `search_tools` first, then the
    /// always-on and surfaced tools of `runtime`'s catalog (by name), each
    /// under its namespaced name. Counts the listing in
    /// [`savings`](Self::savings).
    pub fn tools(&self, runtime: &SessionRuntime) -> Vec<Tool> {
        let catalog = runtime.catalog();
        let search = Self::search_tool();
        let mut handed = crate::search::schema_bytes_as(&search, SEARCH_TOOLS);
        let mut out = vec![search];
        let names: BTreeSet<String> = self.lock().union(&self.always_on).cloned().collect();
        for name in &names {
            if let Some(t) = catalog.get(name) {
                handed += crate::search::schema_bytes_as(t.tool(), t.name());
                out.push(model_facing(t));
            }
        }
        let full = catalog.tool_index().full_schema_bytes();
        self.listings.fetch_add(1, Ordering::Relaxed);
        self.full_bytes.fetch_add(full, Ordering::Relaxed);
        self.handed_bytes.fetch_add(handed, Ordering::Relaxed);
        out
    }

    /// Searches `runtime`'s tools as `search_tools` does, surfacing the
    /// tools found (the application's own search box, say). Not counted in
    /// [`savings`](Self::savings): nothing is handed to the model.
    pub fn search(
        &self,
        runtime: &SessionRuntime,
        query: &str,
        k: usize,
    ) -> Result<Vec<ToolMatch>, SearchError> {
        let found = runtime.search_tools(query, k)?;
        self.lock()
            .extend(found.iter().map(|m| m.tool().name().to_owned()));
        Ok(found)
    }

    /// Handles the model's call of `name`: `search_tools` is answered here;
    /// a tool that is always on or was surfaced is called through
    /// `runtime`; a tool of the catalog that is neither is
    /// [`DeferredError::NotSurfaced`]; an unknown name is the runtime's
    /// [`RuntimeError::UnknownTool`].
    ///
    /// A `search_tools` call with bad arguments, or a query over the
    /// budget, is a tool result with `isError` (the model reads it and
    /// tries again), not an error.
    pub async fn call_tool(
        &self,
        runtime: &SessionRuntime,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, DeferredError> {
        if name == SEARCH_TOOLS {
            return Ok(self.answer_search(runtime, &arguments));
        }
        if !self.is_callable(name) && runtime.catalog().get(name).is_some() {
            return Err(DeferredError::NotSurfaced {
                name: name.to_owned(),
            });
        }
        Ok(runtime.call_tool(name, arguments).await?)
    }

    /// The savings so far.
    pub fn savings(&self) -> SchemaSavings {
        SchemaSavings {
            listings: self.listings.load(Ordering::Relaxed),
            searches: self.searches.load(Ordering::Relaxed),
            full_bytes: self.full_bytes.load(Ordering::Relaxed),
            handed_bytes: self.handed_bytes.load(Ordering::Relaxed),
        }
    }

    fn answer_search(&self, runtime: &SessionRuntime, arguments: &Value) -> CallToolResult {
        let Some(query) = arguments.get("query").and_then(Value::as_str) else {
            return CallToolResult::error(vec![Content::text(format!(
                "`{SEARCH_TOOLS}` needs `query`, a string: what the tool should do"
            ))]);
        };
        let k = match arguments.get("limit") {
            None | Some(Value::Null) => self.results,
            Some(v) => match v.as_u64() {
                Some(n) => usize::try_from(n)
                    .unwrap_or(MAX_SEARCH_LIMIT)
                    .clamp(1, MAX_SEARCH_LIMIT),
                None => {
                    return CallToolResult::error(vec![Content::text(format!(
                        "`limit` must be a whole number from 1 to {MAX_SEARCH_LIMIT}"
                    ))]);
                }
            },
        };
        let found = match self.search(runtime, query, k.min(MAX_RESULTS)) {
            Ok(found) => found,
            Err(e) => return CallToolResult::error(vec![Content::text(e.to_string())]),
        };
        self.searches.fetch_add(1, Ordering::Relaxed);
        let text = if found.is_empty() {
            format!("No tool matches {query:?}; try other words.")
        } else {
            let tools: Vec<Value> = found.iter().map(|m| found_tool(m.tool())).collect();
            let listed = serde_json::to_string(&json!({ "tools": tools })).unwrap_or_default();
            format!("These tools can now be called:\n{listed}")
        };
        self.handed_bytes
            .fetch_add(text.len() as u64, Ordering::Relaxed);
        CallToolResult::new(vec![Content::text(text)])
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.surfaced.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A catalog tool's definition under the name the model calls.
fn model_facing(t: &RuntimeTool) -> Tool {
    Tool {
        name: t.name().to_owned(),
        ..Tool::clone(t.tool())
    }
}

/// What a search result says of a tool: enough to call it.
fn found_tool(t: &RuntimeTool) -> Value {
    let mut v = serde_json::Map::new();
    v.insert("name".into(), json!(t.name()));
    if let Some(title) = &t.tool().title {
        v.insert("title".into(), json!(title));
    }
    if let Some(d) = t.description() {
        v.insert("description".into(), json!(d));
    }
    v.insert("inputSchema".into(), t.input_schema().clone());
    Value::Object(v)
}
