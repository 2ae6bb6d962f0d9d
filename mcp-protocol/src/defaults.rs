//! The client-side defaults every layer agrees on: a config that leaves a
//! setting out, a session built without one, and the runtime all use these.

use std::time::Duration;

/// Bound on each request without progress (`requestTimeoutMs`).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Bound on the lifecycle: the handshake or `server/discover` (`handshakeTimeoutMs`).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// Bound on a request however much progress it reports.
pub const MAX_TOTAL_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a silent `server/discover` probe waits before the server is
/// taken for a legacy one.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// Whether calls to one server may run concurrently
/// (`supportsParallelToolCalls`): JSON-RPC multiplexes requests by id, so
/// this is safe for the protocol; a server whose tools share state opts out.
pub const SUPPORTS_PARALLEL_TOOL_CALLS: bool = true;

/// A duration as every message of the stack writes it: milliseconds below a
/// second, else seconds with one decimal. Here, the lowest crate every layer
/// that writes messages depends on (the transports, the HTTP client, the
/// session, the runtime, the OAuth driver, the CLI).
///
/// ```
/// use std::time::Duration;
/// use mcp_stack_protocol::defaults::describe_duration;
/// assert_eq!(describe_duration(Duration::from_millis(250)), "250 ms");
/// assert_eq!(describe_duration(Duration::from_millis(1500)), "1.5 s");
/// ```
pub fn describe_duration(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}
