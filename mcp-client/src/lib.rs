//! A Model Context Protocol client in one dependency.
//!
//! `mcp-stack-client` is the front door of a layered stack: it connects to an MCP
//! server — a command it starts (stdio) or a URL (streamable HTTP, with the
//! older HTTP+SSE transport as a fallback) — and hands back a [`Session`]
//! that lists and calls tools, checking each call's arguments against the
//! tool's JSON Schema before anything is sent.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcp_stack_client::SessionError> {
//! let session = mcp_stack_client::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"]).await?;
//! let result = session.call_tool("echo", serde_json::json!({"message": "hi"})).await?;
//! println!("{}", result.text());
//! # Ok(()) }
//! ```
//!
//! Every MCP revision is spoken (2024-11-05 through 2026-07-28) and you need
//! not know which one a server speaks: the session probes with 2026-07-28's
//! `server/discover` and falls back to the `initialize` handshake, starting a
//! strict legacy stdio server again if it exits on the probe. Every request
//! has a timeout; a server's garbage, crash or silence is a typed
//! [`SessionError`], never a hang or a panic.
//!
//! # Features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `validation` | yes | JSON Schema checks of tool arguments and structured output |
//! | `http` | no | `http()` and `connect_http()`: streamable HTTP and HTTP+SSE, on hyper and rustls |
//! | `config` | no | `mcp_stack_client::config`: the config files users have (Claude Desktop, Cursor, VS Code, Codex, OpenClaw) |
//! | `runtime` | no | `mcp_stack_client::runtime`: per agent session, one set of connections, reused while the config is unchanged |
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

pub use mcp_stack_jsonrpc as jsonrpc;
pub use mcp_stack_protocol as protocol;
pub use mcp_stack_protocol::{ProtocolMode, ProtocolPin, ProtocolVersion, types};
pub use mcp_stack_session::{
    CallOptions, CatalogTool, ClientHandler, DefaultsElicitationHandler, Diagnostics,
    NotificationListener, ProgressListener, SchemaProblem, ServerNotification, Session,
    SessionConfig, SessionError, ToolCatalog, handlers, subscriptions,
};
pub use mcp_stack_transport as transport;
pub use mcp_stack_transport::stdio::StdioConfig;

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
