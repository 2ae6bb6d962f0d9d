//! Turning a resolved server into a transport.

use std::fmt;
use std::sync::Arc;

use mcp_config::{ResolvedServer, TransportConfig};
use mcp_transport::stdio::{StdioConfig, StdioTransport};
use mcp_transport::{BoxFuture, Transport};

use crate::error::ConnectError;

/// Opens the transport to one server. The runtime runs the handshake on it.
///
/// The default, [`DefaultConnector`], starts stdio servers. Tests and
/// benchmarks inject their own (an in-process server over a duplex stream,
/// say), and an embedder can wrap the default to add transports.
pub trait Connector: Send + Sync + fmt::Debug + 'static {
    /// Opens a transport to `server`. The runtime bounds this by the server's
    /// handshake timeout.
    fn connect<'a>(
        &'a self,
        server: &'a ResolvedServer,
    ) -> BoxFuture<'a, Result<Arc<dyn Transport>, ConnectError>>;
}

/// Starts stdio servers as child processes ([`StdioTransport`]): the
/// program directly (no shell), its own process group, the environment
/// allowlist plus the variables its config names. HTTP servers are not
/// available yet and fail with a clear diagnostic.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultConnector;

/// The stdio settings for a resolved stdio server (`None` for other transports).
pub fn stdio_config(server: &ResolvedServer) -> Option<StdioConfig> {
    let TransportConfig::Stdio {
        command,
        args,
        env,
        cwd,
    } = &server.transport
    else {
        return None;
    };
    let mut config = StdioConfig::new(command.clone())
        .args(args.iter().cloned())
        .envs(env.iter().map(|(k, v)| (k.clone(), v.expose().to_owned())))
        .server_name(server.name.clone());
    if let Some(cwd) = cwd {
        config = config.cwd(cwd.clone());
    }
    Some(config)
}

impl Connector for DefaultConnector {
    fn connect<'a>(
        &'a self,
        server: &'a ResolvedServer,
    ) -> BoxFuture<'a, Result<Arc<dyn Transport>, ConnectError>> {
        Box::pin(async move {
            match (&server.transport, stdio_config(server)) {
                (_, Some(config)) => {
                    let t: Arc<dyn Transport> = Arc::new(StdioTransport::spawn(config)?);
                    Ok(t)
                }
                (TransportConfig::Http { kind, .. }, None) => {
                    Err(ConnectError::Unsupported(format!(
                        "the {} transport is not available in this build yet; \
                         use a stdio server (`command`) for now",
                        kind.name()
                    )))
                }
                _ => Err(ConnectError::Unsupported(
                    "this kind of transport is not available in this build".into(),
                )),
            }
        })
    }
}
