//! `xtask conformance-client <url>`: the client the official conformance
//! suite runs, one scenario at a time.
//!
//! It is an agent with nothing particular to do, built from the library:
//! connect over HTTP (streamable HTTP, falling back to HTTP+SSE) with
//! `mcp-session`, list the tools (every page), call each one with arguments
//! drawn from its input schema ([`fill`](super::fill)) while following its
//! progress, answer elicitation with the requested schema's defaults
//! ([`DefaultsElicitationHandler`]), and close. The scenario's name
//! (`MCP_CONFORMANCE_SCENARIO`) is only logged: no scenario is special-cased.
//!
//! The exit status is 0 when every step succeeded. A tool that reports
//! `isError: true` ran and failed; that is the tool's result, not the
//! client's failure.

use std::sync::Arc;
use std::time::Duration;

use mcp_session::types::Implementation;
use mcp_session::{
    CallOptions, DefaultsElicitationHandler, ServerNotification, Session, SessionConfig,
};

use super::fill;
use super::http;
use crate::args::Args;

/// The whole client run is bounded by this (the suite's own limit is 30 s).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(25);

/// Runs the client: the server URL is the last argument.
pub(crate) fn main(args: Args) -> Result<(), String> {
    let url = args
        .remaining()
        .last()
        .cloned()
        .ok_or("usage: xtask conformance-client <server-url>")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    eprintln!("conformance-client: scenario `{scenario}`, server {url}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    rt.block_on(async {
        match tokio::time::timeout(CLIENT_TIMEOUT, run(&url)).await {
            Ok(r) => r,
            Err(_) => Err(format!("gave up after {} s", CLIENT_TIMEOUT.as_secs())),
        }
    })
}

fn config() -> SessionConfig {
    SessionConfig {
        client_info: Implementation::new("mcp-client-rs-conformance", env!("CARGO_PKG_VERSION")),
        server_name: "conformance".into(),
        request_timeout: Duration::from_secs(20),
        handshake_timeout: Duration::from_secs(20),
        handler: Some(Arc::new(DefaultsElicitationHandler::new())),
        on_notification: Some(Arc::new(|n: &ServerNotification| match n {
            ServerNotification::Log(m) => eprintln!("server log [{}]: {}", m.level, m.data),
            ServerNotification::ToolsListChanged => eprintln!("server: the tool list changed"),
            _ => {}
        })),
        ..SessionConfig::default()
    }
}

async fn run(url: &str) -> Result<(), String> {
    if !http::AVAILABLE {
        return Err("this build has no HTTP transport".into());
    }
    let transport = http::connect(url, http::Mode::Auto, "conformance").await?;
    let session = Session::connect_shared(transport, config())
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let server = session.server();
    eprintln!(
        "connected to {} {} (protocol {}, over {})",
        server.server_info.name,
        server.server_info.version,
        session.protocol_version(),
        session.transport().kind()
    );
    let result = use_tools(&session).await;
    session.close().await;
    result
}

async fn use_tools(session: &Session) -> Result<(), String> {
    let catalog = session
        .list_tools()
        .await
        .map_err(|e| format!("tools/list: {e}"))?;
    for note in catalog.diagnostics() {
        eprintln!("tools/list: {note}");
    }
    eprintln!("{} tools", catalog.len());
    let mut failures = Vec::new();
    for tool in catalog.iter() {
        let arguments = fill::arguments(&tool.input_schema);
        eprintln!("calling {} with {arguments}", tool.name);
        let name = tool.name.clone();
        let options = CallOptions {
            on_progress: Some(Arc::new(move |p| {
                eprintln!("progress of {name}: {} / {:?}", p.progress(), p.total());
            })),
            ..CallOptions::default()
        };
        match session.call_tool_with(&tool.name, arguments, options).await {
            Ok(result) if result.is_error() => {
                eprintln!("{} reported an error: {}", tool.name, result.text());
            }
            Ok(result) => eprintln!("{} returned: {}", tool.name, result.text()),
            Err(e) => {
                eprintln!("{} failed: {e}", tool.name);
                failures.push(format!("{}: {e}", tool.name));
            }
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}
