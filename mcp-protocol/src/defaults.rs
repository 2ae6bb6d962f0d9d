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
