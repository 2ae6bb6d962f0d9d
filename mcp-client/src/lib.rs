//! A Model Context Protocol client in one dependency.
//!
//! `mcp-stack-client` is the front door of a layered stack: it connects to an MCP
//! server — a command it starts (stdio) or a URL (streamable HTTP, with the
//! older HTTP+SSE transport as a fallback) — and hands back a [`Session`]
//! that lists and calls tools, checking each call's arguments against the
//! tool's JSON Schema before anything is sent.
//!
//! ```no_run
//! use mcp_stack_client::serde_json::json;
//!
//! # async fn demo() -> Result<(), mcp_stack_client::SessionError> {
//! let session = mcp_stack_client::stdio("mcp", ["demo-server"]).await?;
//! let result = session.call_tool("echo", json!({"text": "hi"})).await?;
//! println!("{}", result.text());
//! # Ok(()) }
//! ```
//!
//! # Typed calls
//!
//! Arguments are anything serde serializes (a `json!` value, your own
//! `#[derive(Serialize)]` struct); a result reads into your type with
//! [`structured`](types::CallToolResult::structured) (the tool's
//! `structuredContent`, already checked against its output schema) and
//! turns a tool's failure (`isError: true`) into an `Err` with
//! [`into_result`](types::CallToolResult::into_result). Both errors convert
//! into [`SessionError`] with `?`. Prompts take typed arguments
//! ([`Session::get_prompt`]), and a resource reads as text or JSON
//! ([`ReadResourceResult::text`](types::ReadResourceResult::text),
//! [`json`](types::ReadResourceResult::json)).
//!
//! This runs against the test server in-process (the `mcp demo-server` and
//! `mcp-testkit` commands serve the same one):
//!
//! ```
//! use mcp_stack_client::serde::{Deserialize, Serialize};
//! use mcp_stack_client::serde_json::json;
//! use mcp_stack_client::{ServerNotification, Session, SessionConfig, SessionError};
//!
//! #[derive(Serialize)]
//! #[serde(crate = "mcp_stack_client::serde")]
//! struct Add { a: f64, b: f64 }
//!
//! #[derive(Deserialize)]
//! #[serde(crate = "mcp_stack_client::serde")]
//! struct Sum { sum: f64 }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! # let (client, server) = tokio::io::duplex(1 << 16);
//! # let (r, w) = tokio::io::split(server);
//! # tokio::spawn(mcp_stack_testkit::serve(Default::default(), r, w));
//! # let (r, w) = tokio::io::split(client);
//! # let transport = mcp_stack_client::transport::stream::StreamTransport::new(r, w);
//! let session = Session::connect(transport, SessionConfig::new()).await?;
//!
//! let sum: Sum = session.call_tool("add", Add { a: 2.0, b: 3.0 }).await?.into_result()?.structured()?;
//! assert_eq!(sum.sum, 5.0);
//!
//! // A tool's failure is an `Err` carrying its text.
//! let failed = session.call_tool("fail", json!({"message": "no such city"})).await?.into_result();
//! assert_eq!(failed.unwrap_err().text(), "no such city");
//!
//! // Notifications as a stream: here, the resource list changing.
//! let mut notifications = session.notifications();
//! session.call_tool("add_resource", json!({})).await?;
//! assert!(matches!(notifications.next().await, Some(ServerNotification::ResourcesListChanged)));
//! # session.close().await;
//! # Ok::<(), SessionError>(())
//! # }).unwrap();
//! ```
//!
//! # Streams
//!
//! [`Session::notifications`] gives every notification from the server
//! (list changes, resource updates, progress, log messages) as a
//! [`Stream`](futures_core::Stream) of [`ServerNotification`], beside the
//! [`SessionConfig::on_notification`] callback; [`Session::listen`] gives a
//! [`Subscription`] (resource updates, list changes) that is a stream too.
//! Each holds at most 256 notifications and drops the oldest, counted, when
//! you fall behind, and dropping one closes it (a subscription
//! unsubscribes). Both have an inherent `next()`, so no stream crate is
//! needed (a subscription's is `Result<Option<_>, SessionError>`:
//! `while let Some(n) = subscription.next().await? { … }`); with one
//! (`futures::StreamExt`) they combine like any stream.
//!
//! Every MCP revision is spoken (2024-11-05 through 2026-07-28) and you need
//! not know which one a server speaks: the session probes with 2026-07-28's
//! `server/discover` and falls back to the `initialize` handshake, starting a
//! strict legacy stdio server again if it exits on the probe. Every request
//! has a timeout; a server's garbage, crash or silence is a typed
//! [`SessionError`], never a hang or a panic.
//!
//! # One dependency
//!
//! What the signatures here expose is re-exported: [`serde_json`] (for
//! `json!` and `Value`), [`serde`] (to derive `Serialize`/`Deserialize` for
//! arguments and results: add `#[serde(crate = "mcp_stack_client::serde")]`),
//! [`futures_core`] (the `Stream` trait) and [`tokio`] (the runtime the
//! session runs on: `#[mcp_stack_client::tokio::main(crate = "mcp_stack_client::tokio")]`,
//! or depend on `tokio` yourself).
//!
//! # Features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `validation` | yes | JSON Schema checks of tool arguments and structured output |
//! | `http` | no | `http()` and `connect_http()`: streamable HTTP and HTTP+SSE, on hyper and rustls |
//! | `config` | no | `mcp_stack_client::config`: the config files users have (Claude Desktop, Cursor, VS Code, Codex, OpenClaw) |
//! | `runtime` | no | `mcp_stack_client::runtime`: per agent session, one set of connections, reused while the config is unchanged |
//! | `oauth` | no | `mcp_stack_client::auth` (with `http`): OAuth 2.1 for HTTP servers, the login flow with your own browser opener and token store |
//!
//! A build with the default features compiles neither hyper nor rustls.
//!
//! # The layers
//!
//! Each layer is a crate of its own, re-exported here: [`protocol`] (MCP's
//! vocabulary and message types), [`jsonrpc`] (JSON-RPC 2.0 and the
//! newline codec), [`transport`] (stdio child processes, HTTP, in-memory
//! pairs), the session (this crate's root), and with features `config` and
//! `runtime`. Use them directly when you need more control: a transport of
//! your own, say, goes to [`Session::connect`].

use std::sync::Arc;

pub use futures_core;
pub use mcp_stack_jsonrpc as jsonrpc;
pub use mcp_stack_protocol as protocol;
pub use mcp_stack_protocol::types::{DecodeError, ToolError};
pub use mcp_stack_protocol::{ProtocolMode, ProtocolPin, ProtocolVersion, types};
pub use mcp_stack_session::{
    CallOptions, CatalogTool, ClientHandler, ClientHandlers, DefaultsElicitationHandler,
    Diagnostics, Elicitor, NotificationListener, Notifications, ProgressListener, RootsProvider,
    Sampler, SchemaProblem, ServerNotification, Session, SessionConfig, SessionError, Subscription,
    SubscriptionFilter, TaskHandle, TimeoutKind, ToolCatalog, handlers, subscriptions, tasks,
};
pub use mcp_stack_transport as transport;
pub use mcp_stack_transport::stdio::StdioConfig;
pub use serde;
pub use serde_json;
pub use tokio;

#[cfg(feature = "oauth")]
pub use mcp_stack_auth as auth;
#[cfg(feature = "config")]
pub use mcp_stack_config as config;
#[cfg(feature = "runtime")]
pub use mcp_stack_runtime as runtime;

#[cfg(feature = "http")]
pub use mcp_stack_transport::http::HttpOptions;

use mcp_stack_transport::Transport;
use mcp_stack_transport::stdio::StdioTransport;

/// Starts `program` with `args` as a stdio MCP server and connects to it
/// with the default [`SessionConfig`].
///
/// The program is run directly (no shell), in its own process group, with a
/// small allowlist of this process's environment; closing the session (or
/// dropping it) ends the whole group. See [`connect_stdio`] for the
/// environment, the working directory and the session's settings.
///
/// ```no_run
/// use mcp_stack_client::serde_json::json;
///
/// # async fn demo() -> Result<(), mcp_stack_client::SessionError> {
/// // The demo server of the `mcp` command; any stdio MCP server will do.
/// let session = mcp_stack_client::stdio("mcp", ["demo-server"]).await?;
/// let echoed = session.call_tool("echo", json!({"text": "hi"})).await?.into_result()?;
/// assert_eq!(echoed.text(), "hi");
/// session.close().await;
/// # Ok(()) }
/// ```
pub async fn stdio<I, S>(program: &str, args: I) -> Result<Session, SessionError>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    connect_stdio(StdioConfig::new(program).args(args), SessionConfig::new()).await
}

/// Starts a stdio MCP server as `command` says and connects with `config`.
///
/// In the default auto mode a server that exits during the 2026-07-28 probe
/// is started once more and spoken to with the handshake
/// ([`Session::connect_with`]).
///
/// ```no_run
/// use mcp_stack_client::{SessionConfig, StdioConfig};
/// # async fn demo() -> Result<(), mcp_stack_client::SessionError> {
/// let command = StdioConfig::new("python")
///     .args(["server.py"])
///     .env("API_TOKEN", "…")
///     .server_name("weather");
/// let config = SessionConfig::new().request_timeout(std::time::Duration::from_secs(20));
/// let session = mcp_stack_client::connect_stdio(command, config).await?;
/// # let _ = session; Ok(()) }
/// ```
pub async fn connect_stdio(
    command: StdioConfig,
    config: SessionConfig,
) -> Result<Session, SessionError> {
    Session::connect_with(
        || {
            let command = command.clone();
            async move {
                let transport = StdioTransport::spawn(command)?;
                Ok(Arc::new(transport) as Arc<dyn Transport>)
            }
        },
        config,
    )
    .await
}

/// Connects to the MCP server at `url` with the default settings: streamable
/// HTTP, or the 2024-11-05 HTTP+SSE transport when the server refuses it.
///
/// TLS is verified (webpki roots); see [`connect_http`] for headers, extra
/// CAs and timeouts.
///
/// ```no_run
/// # async fn demo() -> Result<(), mcp_stack_client::SessionError> {
/// // `mcp-testkit --http 127.0.0.1:8080` serves the test server there.
/// let session = mcp_stack_client::http("http://127.0.0.1:8080/mcp").await?;
/// for tool in session.list_tools().await?.iter() {
///     println!("{}", tool.name);
/// }
/// # Ok(()) }
/// ```
#[cfg(feature = "http")]
pub async fn http(url: &str) -> Result<Session, SessionError> {
    connect_http(url, HttpOptions::new(), SessionConfig::new()).await
}

/// Connects to the MCP server at `url` with these HTTP options and session
/// settings.
///
/// ```no_run
/// use mcp_stack_client::{HttpOptions, SessionConfig};
/// # async fn demo() -> Result<(), mcp_stack_client::SessionError> {
/// let options = HttpOptions::new().header("Authorization", "Bearer …");
/// let session = mcp_stack_client::connect_http("https://example.com/mcp", options, SessionConfig::new()).await?;
/// # let _ = session; Ok(()) }
/// ```
#[cfg(feature = "http")]
pub async fn connect_http(
    url: &str,
    options: HttpOptions,
    config: SessionConfig,
) -> Result<Session, SessionError> {
    let cache = mcp_stack_transport::http::auto::TransportCache::default();
    let transport = mcp_stack_transport::http::auto::connect(url, options, &cache).await?;
    Session::connect(transport, config).await
}

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ClientReadmeDoctests;
