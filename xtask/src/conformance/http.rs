//! Where the HTTP transports plug in: the conformance client and the
//! HTTP modes of the reference servers connect through here, so nothing else
//! in this task names an HTTP type.

use std::sync::Arc;
use std::time::Duration;

use mcp_transport::Transport;
use mcp_transport::http::{HttpOptions, SseTransport, StreamableHttpTransport, auto};

/// The build has the HTTP transports (mcp-transport's `http` feature).
pub(crate) const AVAILABLE: bool = true;

/// Which HTTP transport to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Streamable HTTP (2025-03-26 and later).
    Streamable,
    /// The HTTP+SSE transport of 2024-11-05.
    Sse,
    /// Streamable HTTP, falling back to HTTP+SSE, as a client configured
    /// with a bare URL does.
    Auto,
}

fn options(name: &str) -> HttpOptions {
    HttpOptions::new()
        .server_name(name)
        .connect_timeout(Duration::from_secs(10))
        .request_timeout(Duration::from_secs(30))
}

/// Connects to `url` with the transport `mode` names.
pub(crate) async fn connect(
    url: &str,
    mode: Mode,
    name: &str,
) -> Result<Arc<dyn Transport>, String> {
    let options = options(name);
    let transport: Arc<dyn Transport> = match mode {
        Mode::Streamable => Arc::new(
            StreamableHttpTransport::connect(url, options)
                .await
                .map_err(|e| e.to_string())?,
        ),
        Mode::Sse => Arc::new(
            SseTransport::connect(url, options)
                .await
                .map_err(|e| e.to_string())?,
        ),
        Mode::Auto => Arc::new(
            auto::connect(url, options, &auto::TransportCache::new())
                .await
                .map_err(|e| e.to_string())?,
        ),
    };
    Ok(transport)
}
