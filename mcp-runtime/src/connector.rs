//! Turning a resolved server into a transport.

use std::fmt;
use std::sync::Arc;

use mcp_stack_config::ResolvedServer;
use mcp_stack_transport::stdio::StdioTransport;
use mcp_stack_transport::{BoxFuture, Transport};

use crate::error::ConnectError;
use crate::settings::TransportSettings;

/// Opens the transport to one server. The runtime runs the handshake on it.
///
/// The default, [`DefaultConnector`], starts stdio servers and connects
/// HTTP ones. Tests and
/// benchmarks inject their own (an in-process server over a duplex stream,
/// say), and an embedder can wrap the default to add transports.
pub trait Connector: Send + Sync + fmt::Debug + 'static {
    /// Opens a transport to `server`. The runtime bounds this by the server's
    /// handshake timeout.
    fn connect<'a>(
        &'a self,
        server: &'a ResolvedServer,
    ) -> BoxFuture<'a, Result<Arc<dyn Transport>, ConnectError>>;

    /// Opens a transport to `server` for a session of `identity` (see
    /// [`RuntimeManager::acquire_as`](crate::RuntimeManager::acquire_as)):
    /// credentials, if any, must be that identity's. The default ignores
    /// the identity ([`connect`](Self::connect)); [`DefaultConnector`] asks
    /// its [`AuthorizerSource`] for the identity's authorizer.
    fn connect_as<'a>(
        &'a self,
        server: &'a ResolvedServer,
        identity: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn Transport>, ConnectError>> {
        let _ = identity;
        self.connect(server)
    }

    /// Whether this connector may send credentials of its own to `server`
    /// (an OAuth client, a token of the application's): then what the
    /// server lists may be the identity's alone, and the runtime keeps its
    /// persisted catalog private to the identity, never shared. The
    /// default says so of every HTTP server (a connector of the
    /// application's own may authorize any of them); stdio servers take
    /// their credentials from their config's environment, which their
    /// fingerprint covers.
    fn authorizes(&self, server: &ResolvedServer) -> bool {
        matches!(
            server.transport,
            mcp_stack_config::TransportConfig::Http { .. }
        )
    }
}

/// Starts stdio servers as child processes ([`StdioTransport`]): the
/// program directly (no shell), its own process group, the environment
/// allowlist plus the variables its config names. With the `http` feature
/// (on by default) it also connects HTTP servers: streamable HTTP, legacy
/// HTTP+SSE, or streamable HTTP falling back to SSE, remembering per URL
/// which one worked so later connections skip the attempt.
///
/// HTTP servers that need OAuth get their authorizer from an
/// [`AuthorizerSource`] ([`with_authorizers`](Self::with_authorizers)); the
/// runtime itself never opens a browser, so a server whose login is missing
/// fails to start with an error that says which login to run.
#[derive(Debug, Clone, Default)]
pub struct DefaultConnector {
    #[cfg(feature = "http")]
    http_kinds: mcp_stack_transport::http::auto::TransportCache,
    #[cfg(feature = "http")]
    authorizers: Option<Arc<dyn AuthorizerSource>>,
}

impl DefaultConnector {
    /// A connector with an empty memory of HTTP transport choices.
    pub fn new() -> Self {
        Self::default()
    }

    /// Authorizes HTTP servers with the authorizers `source` gives (an
    /// application's own, or `StoredLogins` with the `oauth` feature:
    /// `mcp-stack-auth`'s OAuth client over a token store).
    #[cfg(feature = "http")]
    pub fn with_authorizers(mut self, source: Arc<dyn AuthorizerSource>) -> Self {
        self.authorizers = Some(source);
        self
    }
}

/// Gives the authorizer for one HTTP server, or `None` to connect it
/// without (its configured headers then carry any credentials).
#[cfg(feature = "http")]
pub trait AuthorizerSource: Send + Sync + fmt::Debug + 'static {
    /// The authorizer for `server`. Called on every connect: return the same
    /// one for the same server (by name and fingerprint) so tokens and
    /// their refreshes carry over reconnections.
    fn authorizer(
        &self,
        server: &ResolvedServer,
    ) -> Option<Arc<dyn mcp_stack_transport::http::auth::Authorizer>>;

    /// The authorizer for `server` in a session of `identity` (a user or
    /// tenant id; `""` for the default). A source that keeps credentials
    /// per user (as `StoredLogins` does) returns that user's, never another
    /// identity's; the default returns [`authorizer`](Self::authorizer),
    /// for sources whose credentials are the application's own.
    fn authorizer_for(
        &self,
        server: &ResolvedServer,
        identity: &str,
    ) -> Option<Arc<dyn mcp_stack_transport::http::auth::Authorizer>> {
        let _ = identity;
        self.authorizer(server)
    }
}

impl Connector for DefaultConnector {
    /// HTTP servers, when it has an [`AuthorizerSource`] (it may give any
    /// of them an authorizer); a configured `Authorization` header counts
    /// wherever the runtime looks at a server.
    fn authorizes(&self, server: &ResolvedServer) -> bool {
        #[cfg(feature = "http")]
        let has_source = self.authorizers.is_some();
        #[cfg(not(feature = "http"))]
        let has_source = false;
        has_source
            && matches!(
                server.transport,
                mcp_stack_config::TransportConfig::Http { .. }
            )
    }

    fn connect<'a>(
        &'a self,
        server: &'a ResolvedServer,
    ) -> BoxFuture<'a, Result<Arc<dyn Transport>, ConnectError>> {
        self.connect_as(server, "")
    }

    fn connect_as<'a>(
        &'a self,
        server: &'a ResolvedServer,
        identity: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn Transport>, ConnectError>> {
        #[cfg(not(feature = "http"))]
        let _ = identity;
        Box::pin(async move {
            match TransportSettings::new(server) {
                TransportSettings::Stdio(config) => {
                    let t: Arc<dyn Transport> = Arc::new(StdioTransport::spawn(config)?);
                    Ok(t)
                }
                #[cfg(feature = "http")]
                TransportSettings::Http(mut http) => {
                    // A configured Authorization header (a static token)
                    // wins: no OAuth client is made for it.
                    if let (true, Some(source)) = (
                        !http.options.has_authorization_header(),
                        self.authorizers.as_ref(),
                    ) && let Some(authorizer) = source.authorizer_for(server, identity)
                    {
                        http.options = http.options.authorizer(authorizer);
                    }
                    Ok(http.connect(&self.http_kinds).await?)
                }
                TransportSettings::Unsupported(why) => Err(ConnectError::Unsupported(why)),
            }
        })
    }
}
