//! One MCP client connection over any [`Transport`](mcp_stack_transport::Transport).
//!
//! A [`Session`] speaks every MCP revision. By default it probes with
//! 2026-07-28's `server/discover` and falls back to the `initialize`
//! handshake (offering 2025-11-25, accepting 2024-11-05 through 2025-11-25)
//! when the server turns out to be a legacy one ([`ProtocolMode`]); then it
//! serves any number of concurrent requests, each with a timeout. It lists tools (every page,
//! cached until the server says the list changed) and calls them, checking
//! the arguments against the tool's JSON Schema before anything is sent.
//!
//! Errors say which layer failed ([`SessionError`]): the transport (with the
//! server's exit status and stderr tail), a timeout (which one — the
//! per-request timeout, the max total timeout progress cannot extend, the
//! handshake's — with its bound and the [`SessionConfig`] method that
//! raises it: [`TimeoutKind`]), the protocol (the server's JSON-RPC error),
//! the client-side checks, or the version.
//!
//! It runs on tokio, with the time driver on (`enable_all()`, or
//! `#[tokio::main]`): a session keeps its requests' deadlines with one timer
//! in its reader task, the task that receives everything from the server.
//! Requests may be made from any thread, `block_on` included.
//!
//! # Example
//!
//! A scripted server on an in-memory transport:
//!
//! ```
//! use mcp_stack_jsonrpc::{Message, Response, to_raw};
//! use mcp_stack_session::{Session, SessionConfig, SessionError};
//! use mcp_stack_transport::{Received, Transport, memory};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let (client, server) = memory::pair();
//! tokio::spawn(async move {
//!     while let Ok(item) = server.recv().await {
//!         let Received::Message(Message::Request(r)) = item else { continue };
//!         let result = match r.method.as_str() {
//!             "initialize" => json!({"protocolVersion": "2025-06-18",
//!                 "capabilities": {"tools": {}}, "serverInfo": {"name": "demo", "version": "1"}}),
//!             "tools/list" => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object",
//!                 "properties": {"text": {"type": "string"}}, "required": ["text"]}}]}),
//!             _ => json!({"content": [{"type": "text", "text": "hi"}]}),
//!         };
//!         server.send(&Message::from(Response::new(r.id, to_raw(&result).unwrap()))).await.unwrap();
//!     }
//! });
//!
//! let session = Session::connect(client, SessionConfig::default()).await?;
//! assert_eq!(session.protocol_version().as_str(), "2025-06-18");
//! let tools = session.list_tools().await?;
//! assert_eq!(tools.len(), 1);
//!
//! // Checked against the schema before sending: nothing reaches the server.
//! let err = session.call_tool("echo", json!({"text": 42})).await.unwrap_err();
//! assert!(matches!(err, SessionError::InvalidArguments { .. }));
//!
//! let result = session.call_tool("echo", json!({"text": "hi"})).await?;
//! assert_eq!(result.text(), "hi");
//! session.close().await;
//! # Ok::<(), SessionError>(())
//! # }).unwrap();
//! ```
//!
//! See the crate's tests for complete exchanges.

// The core: requests, the reader, the pending table, the lifecycle, and
// the state the reader shares with the features. None of these modules
// imports a feature.
mod changes;
mod config;
mod conn;
mod connect;
mod error;
mod intern;
mod lifecycle;
mod paging;
mod parse;
mod pending;
mod queue;
mod reader;
mod rehandshake;
mod renewal;
mod request;
mod revision;
mod skill_problem;
mod subscribers;
// The features beside the core, each with its own state.
mod calls;
mod catalog;
mod features;
mod notifications;
#[cfg(feature = "validation")]
mod simple_schema;
mod skills;
pub mod subscriptions;
pub mod tasks;
mod tools;
// What an application plugs in to answer the server's requests.
mod client_handlers;
pub mod handlers;
// The facade users hold.
mod session;

/// MCP's vocabulary (revisions, methods, `_meta` keys, codes, message
/// types), re-exported from `mcp-stack-protocol`.
pub use mcp_stack_protocol as protocol;
pub use mcp_stack_protocol::types;

pub use client_handlers::{ClientHandlers, Elicitor, RootsProvider, Sampler};
pub use config::{
    CallOptions, ClientHandler, Diagnostics, NotificationListener, ProgressListener,
    ServerNotification, SessionConfig,
};
pub use error::{ListBudget, SchemaProblem, SessionError, TimeoutKind};
pub use handlers::DefaultsElicitationHandler;
pub use mcp_stack_protocol::{ProtocolMode, ProtocolPin, ProtocolVersion, UnknownVersion};
pub use notifications::Notifications;
pub use session::Session;
pub use skill_problem::SkillProblem;
pub use skills::{LoadedSkill, VerifiedFile};
pub use subscriptions::{Subscription, SubscriptionFilter};
pub use tasks::{TaskCall, TaskHandle};
pub use tools::{CatalogTool, ToolCatalog};
