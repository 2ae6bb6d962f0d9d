//! The error codes JSON-RPC 2.0 defines. (Protocols on top add their own:
//! MCP's are in `mcp_stack_protocol::codes`.)
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

/// Lowest code of the range JSON-RPC reserves for implementation-defined server errors.
pub const SERVER_ERROR_MIN: i64 = -32099;
/// Highest code of the range JSON-RPC reserves for implementation-defined server errors.
pub const SERVER_ERROR_MAX: i64 = -32000;

/// A short human name for a known code, for diagnostics.
///
/// ```
/// assert_eq!(mcp_stack_jsonrpc::codes::name(-32601), Some("method not found"));
/// assert_eq!(mcp_stack_jsonrpc::codes::name(7), None);
/// ```
pub fn name(code: i64) -> Option<&'static str> {
    Some(match code {
        PARSE_ERROR => "parse error",
        INVALID_REQUEST => "invalid request",
        METHOD_NOT_FOUND => "method not found",
        INVALID_PARAMS => "invalid params",
        INTERNAL_ERROR => "internal error",
        SERVER_ERROR_MIN..=SERVER_ERROR_MAX => "server error",
        _ => return None,
    })
}
