//! Error codes: the ones JSON-RPC 2.0 defines, and the ones MCP adds.
//!
//! Codes are plain `i64` constants rather than an enum: a peer may send any
//! integer, and a code we do not know must still round-trip unchanged.

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal JSON-RPC error.
pub const INTERNAL_ERROR: i64 = -32603;

/// MCP (up to 2025-11-25): the requested resource does not exist. Revision
/// 2026-07-28 uses [`INVALID_PARAMS`] instead; clients should accept both.
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// MCP 2026-07-28: HTTP headers do not match the request body.
pub const HEADER_MISMATCH: i64 = -32020;
/// MCP 2026-07-28: the request needs a client capability that was not declared.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// MCP 2026-07-28: the request's protocol version is not supported.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// MCP 2025-11-25: the server needs the user to complete a URL-mode elicitation first.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;

/// Lowest code of the range JSON-RPC reserves for implementation-defined server errors.
pub const SERVER_ERROR_MIN: i64 = -32099;
/// Highest code of the range JSON-RPC reserves for implementation-defined server errors.
pub const SERVER_ERROR_MAX: i64 = -32000;

/// A short human name for a known code, for diagnostics.
///
/// ```
/// assert_eq!(mcp_jsonrpc::codes::name(-32601), Some("method not found"));
/// assert_eq!(mcp_jsonrpc::codes::name(7), None);
/// ```
pub fn name(code: i64) -> Option<&'static str> {
    Some(match code {
        PARSE_ERROR => "parse error",
        INVALID_REQUEST => "invalid request",
        METHOD_NOT_FOUND => "method not found",
        INVALID_PARAMS => "invalid params",
        INTERNAL_ERROR => "internal error",
        RESOURCE_NOT_FOUND => "resource not found",
        HEADER_MISMATCH => "header mismatch",
        MISSING_REQUIRED_CLIENT_CAPABILITY => "missing required client capability",
        UNSUPPORTED_PROTOCOL_VERSION => "unsupported protocol version",
        URL_ELICITATION_REQUIRED => "URL elicitation required",
        SERVER_ERROR_MIN..=SERVER_ERROR_MAX => "server error",
        _ => return None,
    })
}
