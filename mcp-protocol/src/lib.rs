//! The Model Context Protocol's vocabulary, in one IO-free crate.
//!
//! Everything MCP itself defines and that a client, a server or a test needs
//! to agree on lives here, so that no other crate of the stack spells it out
//! again:
//!
//! * [`ProtocolVersion`]: the five revisions and their order;
//!   [`ProtocolMode`]: which lifecycle a client uses; [`ProtocolPin`]: how
//!   configs pin either.
//! * The method table, as lsp-types has one: [`request`] and
//!   [`notification`] hold one type per method of every revision, whose
//!   [`Request`](request::Request) or
//!   [`Notification`](notification::Notification) impl names the method,
//!   the [`Revisions`] that have it and the types of its params and result.
//!   [`from_server`] (`ServerRequest`, `ServerNotification`) and
//!   [`from_client`] (`ClientRequest`, `ClientNotification`): a received
//!   message read once, from its method and raw params, into its type
//!   ([`incoming`]: how; [`ParamsError`]: params that do not fit).
//! * [`meta`]: the `_meta` keys and the per-request metadata of 2026-07-28;
//!   [`codes`]: the error codes MCP adds to JSON-RPC's.
//! * [`types`]: the message types (capabilities, tools, content, results,
//!   request parameters, elicitation), for a client and a server alike.
//!   2026-07-28's data, read and written: [`discover`] (`server/discover`'s
//!   result, the `-32022` error's data), [`results`] (`resultType`,
//!   `input_required` results, cache hints), [`subscriptions`]
//!   (`subscriptions/listen`'s filter and params). [`tasks`]: tasks, as
//!   2025-11-25 has them and as 2026-07-28's extension does.
//! * [`skills`]: the skills extension (`io.modelcontextprotocol/skills`,
//!   SEP-2640): skill entries with their file digests, `skills/list`,
//!   `skills/get`, `resources/directory/read`, and the strict `SKILL.md`
//!   frontmatter reader hosts verify with.
//! * [`x_mcp_header`]: the request metadata headers of streamable HTTP and
//!   the `x-mcp-header` rules for mirroring tool arguments.
//! * [`defaults`]: the timeouts and settings every layer defaults to;
//!   [`endpoint`]: what a server URL must be, one rule for config and transport.
//! * [`printable`]: a peer's text made safe to show on a terminal (control
//!   characters escaped visibly), the one filter every program of the stack
//!   prints a server's strings through; [`secret`]: a value that never shows.
//!
//! It depends on serde, the JSON-RPC message model, base64 (the header
//! encoding) and `http` (its URI parser): no async runtime, no transport, no
//! JSON-RPC framing.
//!
//! # Example
//!
//! ```
//! use mcp_stack_protocol::types::{CallToolResult, Content};
//! use mcp_stack_protocol::ProtocolVersion;
//! use mcp_stack_protocol::request::{Request, ToolsCall};
//!
//! let v: ProtocolVersion = "2025-06-18".parse().unwrap();
//! assert!(v.has_handshake() && v < ProtocolVersion::V2026_07_28);
//! assert_eq!(ToolsCall::METHOD, "tools/call");
//! assert!(ToolsCall::exists_in(v));
//!
//! let result: CallToolResult = serde_json::from_str(
//!     r#"{"content": [{"type": "text", "text": "hi"}, {"type": "hologram"}]}"#,
//! ).unwrap();
//! assert_eq!(result.text(), "hi");
//! assert!(matches!(result.content[1], Content::Unknown(_))); // kept, not an error
//! ```

pub mod codes;
pub mod defaults;
pub mod discover;
pub mod endpoint;
pub mod from_client;
pub mod from_server;
pub mod incoming;
pub mod meta;
pub mod notification;
pub mod printable;
pub mod request;
pub mod results;
pub mod secret;
pub mod skills;
pub mod subscriptions;
pub mod tasks;
pub mod types;
mod version;
pub mod x_mcp_header;

pub use incoming::ParamsError;
pub use version::{
    Listening, ProtocolMode, ProtocolPin, ProtocolVersion, Revisions, TaskModel, UnknownVersion,
};
