//! The session-scoped MCP runtime manager.
//!
//! Each agent session owns its own MCP connections; one manager (usually the
//! process-wide [`RuntimeManager::global`]) registers, reuses and reclaims
//! them:
//!
//! * **Reuse by fingerprint.** [`RuntimeManager::acquire`] takes an agent
//!   session id and that session's [`ResolvedConfig`](mcp_stack_config::ResolvedConfig).
//!   Same session, same fingerprint: the existing connections and catalog,
//!   with no handshake, no process start, no `tools/list`. A changed
//!   fingerprint restarts only the servers whose own fingerprint changed.
//!   Two sessions with the same config get separate connections. Concurrent
//!   requests for a new session start its servers once.
//! * **Leases.** The runtime comes under a [`RuntimeLease`]; while one is
//!   held the runtime is never reclaimed. Teardown of a replaced server waits
//!   for its in-flight calls, up to a bound.
//! * **Idle TTL.** Unused for [`RuntimeOptions::idle_ttl`] (default 10
//!   minutes; zero disables), a runtime is reclaimed: stdio children get the
//!   transport's full close sequence and their stderr listeners are detached.
//!   The reaper only touches what expires. [`RuntimeManager::dispose_session`]
//!   and [`RuntimeManager::dispose_all`] end sessions explicitly.
//! * **Failures are visible.** A server that fails to start is in the
//!   catalog's [`failures`](RuntimeCatalog::failures) (which server, which
//!   step, why) and is retried with backoff by a later request; the other
//!   servers start concurrently and are not held up.
//! * **The catalog.** Every tool is named `SERVER__TOOL`, sanitized to
//!   `[A-Za-z0-9_-]`, at most 64 characters ([`naming`]), sorted, filtered by
//!   the config's include/exclude lists, with its schema, annotations and
//!   server. Calling a namespaced name routes to its server, honouring its
//!   `requestTimeoutMs` and `supportsParallelToolCalls`. Resources, resource
//!   templates and prompts of servers that declare them are named by the
//!   same rules, each kind on its own; [`SessionRuntime::read_resource`]
//!   (a namespaced name, or a URI exactly one server lists),
//!   [`get_prompt`](SessionRuntime::get_prompt) and the completions route
//!   the same way. A list that fails to load is a catalog note, not a failed
//!   start.
//! * **Fresh lists.** When a server says a list changed
//!   (`notifications/…/list_changed`), that list is fetched again in the
//!   background and a runtime with a fresh catalog is installed, which the
//!   next `acquire` returns (leases keep their snapshot);
//!   [`RuntimeManager::refresh_catalog`] does it on demand.
//! * **Tool search.** [`SessionRuntime::search_tools`] ranks the tools of
//!   every server of the session for a query ([`search`]: BM25F over names,
//!   titles, descriptions and parameters); [`DeferredTools`] hands a model
//!   a `search_tools` tool instead of every definition (with an example).
//! * **Handlers.** [`RuntimeManager::acquire_with_handlers`] gives an agent
//!   session its own handlers of server requests (elicitation, roots,
//!   sampling), which every server of that session gets.
//!
//! * **Fingerprints that hold across runs.** `mcp-stack-config` keys fingerprints
//!   with a secret [`FingerprintKey`](mcp_stack_config::FingerprintKey), random per
//!   process unless the program gives one; reuse within a process needs no
//!   more. [`load_or_create_key`] keeps a key in a 0600 file of a folder of
//!   the user's (made once, atomically, whatever processes race for it), for
//!   [`resolve_with_key`](mcp_stack_config::resolve_with_key) and fingerprints
//!   compared from one run to the next.
//!
//! Servers are opened by a [`Connector`]: [`DefaultConnector`] starts stdio
//! servers and connects HTTP ones (streamable HTTP or HTTP+SSE, with the
//! `http` feature); tests inject in-process ones. A stdio server that exits
//! on the 2026-07-28 probe is started again for the handshake
//! (`Session::connect_with`), and the era each server spoke is remembered.
//!
//! # Example
//!
//! Any [`Connector`] will do; here the test server's
//! (`mcp_stack_testkit::InProcessConnector`, `mcp-testkit`'s cargo feature
//! `runtime`) starts each server in-process and counts connects:
//!
//! ```
//! use std::sync::Arc;
//! use mcp_stack_config::{Options, parse_str, resolve};
//! use mcp_stack_runtime::{RuntimeManager, RuntimeOptions};
//! use mcp_stack_testkit::InProcessConnector;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let text = r#"{"mcpServers": {"kit": {"command": "mcp-testkit"}}}"#;
//! let config = resolve(&parse_str(text, &Options::new()).unwrap().config, &|_: &str| None).unwrap();
//!
//! let connector = Arc::new(InProcessConnector::new());
//! let manager = RuntimeManager::with_connector(RuntimeOptions::default(), connector.clone());
//! let lease = manager.acquire("agent-1", &config).await?;
//! assert!(lease.catalog().get("kit__echo").is_some());
//! let result = lease.call_tool("kit__echo", serde_json::json!({"text": "hi"})).await?;
//! assert_eq!(result.text(), "hi");
//! drop(lease);
//!
//! // Same session, same fingerprint: no new connection.
//! let again = manager.acquire("agent-1", &config).await?;
//! assert_eq!(connector.total_connects(), 1);
//! // Another session: its own connection.
//! let other = manager.acquire("agent-2", &config).await?;
//! assert_eq!(connector.total_connects(), 2);
//! drop((again, other));
//! manager.dispose_all().await;
//! assert_eq!(manager.stats().connections, 0);
//! # Ok::<(), mcp_stack_runtime::RuntimeError>(())
//! # }).unwrap();
//! ```
//!
//! # Shutdown
//!
//! An application that embeds the runtime calls [`RuntimeManager::dispose_all`]
//! before it exits: at the end of its work, and when it is told to stop
//! (`SIGINT`, `SIGTERM`, `SIGHUP`: `tokio::signal`). It ends every agent
//! session and closes every server with its transport's close sequence (for
//! a stdio server: stdin closed, then `SIGTERM`, then `SIGKILL` to the
//! server's whole process group, grandchildren included, then the child
//! reaped; each step bounded), waits for the teardowns already under way (a
//! replaced or reaped session's), and returns when no server process of the
//! manager is left.
//!
//! Stop the agent work first (drop its leases, abort or finish its tasks):
//! a call still in flight holds its server's close for up to
//! [`RuntimeOptions::drain_timeout`] (30 s by default), then fails as the
//! server closes. Without `dispose_all`, a server is killed (its group gets
//! `SIGKILL`, with no close sequence) only once the last clone of the manager
//! and the last lease are dropped; if the process dies outright, its stdio
//! servers see their stdin close and, on Linux, get `SIGTERM`
//! ([`StdioConfig::parent_death_signal`](mcp_stack_transport::stdio::StdioConfig::parent_death_signal)),
//! nothing more.
//!
//! ```
//! use std::sync::Arc;
//! use mcp_stack_config::{Options, ResolvedConfig, parse_str, resolve};
//! use mcp_stack_runtime::{RuntimeError, RuntimeManager, RuntimeOptions};
//! use mcp_stack_testkit::InProcessConnector;
//!
//! /// The application's work: agents acquiring runtimes and calling tools.
//! async fn serve_agents(manager: &RuntimeManager, config: &ResolvedConfig) -> Result<(), RuntimeError> {
//!     let lease = manager.acquire("agent-1", config).await?;
//!     lease.call_tool("kit__echo", serde_json::json!({"text": "hi"})).await?;
//!     Ok(())
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! # let text = r#"{"mcpServers": {"kit": {"command": "mcp-testkit"}}}"#;
//! # let config = resolve(&parse_str(text, &Options::new()).unwrap().config, &|_: &str| None).unwrap();
//! let manager = RuntimeManager::with_connector(
//!     RuntimeOptions::default(),
//!     Arc::new(InProcessConnector::new()),
//! );
//! // The work, until it is done or the user presses Ctrl-C (dropping it
//! // stops it: its leases and calls end)…
//! tokio::select! {
//!     done = serve_agents(&manager, &config) => done?,
//!     _ = tokio::signal::ctrl_c() => {}
//! }
//! // …then, either way, every server closed before the process exits.
//! manager.dispose_all().await;
//! assert_eq!(manager.stats().connections, 0);
//! assert_eq!(manager.stats().sessions, 0);
//! # Ok::<(), RuntimeError>(())
//! # }).unwrap();
//! ```

mod build;
mod catalog;
mod clock;
mod connector;
mod deferred;
mod error;
mod expiry;
mod fingerprint_key;
mod lease;
mod lists;
mod manager;
pub mod naming;
#[cfg(feature = "oauth")]
mod oauth;
mod options;
mod par;
pub mod persist;
mod plan;
mod reaper;
pub mod search;
mod settings;

pub use catalog::{
    ConnectedServer, RuntimeCatalog, RuntimePrompt, RuntimeResource, RuntimeResourceTemplate,
    RuntimeTool, ServerFailure, ServerNote, StartupStep, ToolStatus,
};
pub use clock::IdleClock;
#[cfg(feature = "http")]
pub use connector::AuthorizerSource;
pub use connector::{Connector, DefaultConnector};
pub use deferred::{
    DEFAULT_SEARCH_RESULTS, DeferredError, DeferredTools, MAX_SEARCH_LIMIT, SEARCH_TOOLS,
    SchemaSavings, ToolMatch,
};
pub use error::{ConnectError, EntryKind, RuntimeError};
pub use fingerprint_key::{KEY_FILE_NAME, KeyFileError, load_or_create_key};
pub use lease::{RuntimeLease, SessionRuntime};
pub use manager::{PersistedCatalog, RuntimeManager};
#[cfg(feature = "oauth")]
pub use oauth::{LoginHint, StoredLogins, oauth_config};
pub use options::{
    DEFAULT_DRAIN_TIMEOUT, DEFAULT_IDLE_TTL, DEFAULT_MAX_SESSIONS, DEFAULT_RETRY_INITIAL,
    DEFAULT_RETRY_MAX, RuntimeOptions, RuntimeStats,
};
pub use persist::{CatalogCache, PinPolicy, PinReport, PinStatus};
#[cfg(feature = "http")]
pub use settings::{HttpSettings, http_proxy};
pub use settings::{ServerSettings, TransportSettings, session_settings, stdio_config};
