//! The JSON-RPC error codes MCP defines, beside the ones of JSON-RPC itself
//! (those are in `mcp_stack_jsonrpc::codes`).
//!
//! Plain `i64` constants: a peer may send any integer, and a code we do not
//! know must still round-trip unchanged.

/// Up to 2025-11-25: the requested resource does not exist. Revision
/// 2026-07-28 answers `-32602` (invalid params) instead; clients should
/// accept both.
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// 2026-07-28: HTTP headers do not match the request body.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request needs a client capability that was not declared.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28: the request's protocol version is not supported.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// 2025-11-25: the server needs the user to complete a URL-mode elicitation first.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;

/// A short human name for a code MCP defines, for diagnostics.
///
/// ```
/// use mcp_stack_protocol::codes;
/// assert_eq!(codes::name(codes::HEADER_MISMATCH), Some("header mismatch"));
/// assert_eq!(codes::name(-32601), None); // JSON-RPC's own: mcp_stack_jsonrpc::codes::name
/// ```
pub fn name(code: i64) -> Option<&'static str> {
    Some(match code {
        RESOURCE_NOT_FOUND => "resource not found",
        HEADER_MISMATCH => "header mismatch",
        MISSING_REQUIRED_CLIENT_CAPABILITY => "missing required client capability",
        UNSUPPORTED_PROTOCOL_VERSION => "unsupported protocol version",
        URL_ELICITATION_REQUIRED => "URL elicitation required",
        _ => return None,
    })
}
