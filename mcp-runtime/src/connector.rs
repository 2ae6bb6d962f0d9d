//! Turning a resolved server into a transport.

use std::fmt;
use std::sync::Arc;

use mcp_config::{ResolvedServer, TransportConfig};
use mcp_transport::stdio::{StdioConfig, StdioTransport};
use mcp_transport::{BoxFuture, Transport};

use crate::error::ConnectError;

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
    http_kinds: mcp_transport::http::auto::TransportCache,
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
    /// `mcp-auth`'s OAuth client over a token store).
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
    ) -> Option<Arc<dyn mcp_transport::http::auth::Authorizer>>;
}

/// The proxy an HTTP server's requests (and its OAuth exchanges) go
/// through: its `proxy` setting, else the environment's (`HTTPS_PROXY`,
/// `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`, read when its client is built).
#[cfg(feature = "http")]
pub fn http_proxy(server: &ResolvedServer) -> mcp_transport::http::Proxy {
    use mcp_config::ProxySetting;
    use mcp_transport::http::Proxy;
    match &server.transport {
        TransportConfig::Http {
            proxy: Some(ProxySetting::Url(url)),
            ..
        } => Proxy::url(url.expose()),
        TransportConfig::Http {
            proxy: Some(ProxySetting::Direct),
            ..
        } => Proxy::none(),
        _ => Proxy::from_env(),
    }
}

/// Connects an HTTP server with its headers, request timeout and proxy.
#[cfg(feature = "http")]
async fn connect_http(
    server: &ResolvedServer,
    cache: &mcp_transport::http::auto::TransportCache,
    authorizers: Option<&Arc<dyn AuthorizerSource>>,
) -> Result<Arc<dyn Transport>, ConnectError> {
    use mcp_config::HttpKind;
    use mcp_transport::http::{HttpOptions, SseTransport, StreamableHttpTransport, auto};
    let TransportConfig::Http {
        url, headers, kind, ..
    } = &server.transport
    else {
        return Err(ConnectError::Unsupported("not an HTTP server".into()));
    };
    let mut options = HttpOptions::new()
        .server_name(server.name.clone())
        .request_timeout(server.request_timeout)
        .proxy(http_proxy(server))
        .headers(
            headers
                .iter()
                .map(|(k, v)| (k.clone(), v.expose().to_owned())),
        );
    // A configured Authorization header (a static token) wins: no OAuth
    // client is made for it.
    if let (false, Some(source)) = (options.has_authorization_header(), authorizers)
        && let Some(authorizer) = source.authorizer(server)
    {
        options = options.authorizer(authorizer);
    }
    let transport: Arc<dyn Transport> = match kind {
        HttpKind::StreamableHttp => Arc::new(StreamableHttpTransport::connect(url, options).await?),
        HttpKind::Sse => Arc::new(SseTransport::connect(url, options).await?),
        _ => Arc::new(auto::connect(url, options, cache).await?),
    };
    Ok(transport)
}

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
                #[cfg(feature = "http")]
                (TransportConfig::Http { .. }, None) => {
                    connect_http(server, &self.http_kinds, self.authorizers.as_ref()).await
                }
                #[cfg(not(feature = "http"))]
                (TransportConfig::Http { kind, .. }, None) => {
                    Err(ConnectError::Unsupported(format!(
                        "the {} transport needs mcp-runtime's `http` feature",
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

#[cfg(all(test, feature = "http"))]
mod proxy_tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use mcp_config::{Options, parse_str, resolve};

    /// A server's `proxy` reaches the transport's options; without one
    /// the environment decides (credentials never shown).
    #[test]
    fn the_config_proxy_becomes_the_transport_proxy() {
        let text = r#"{"mcpServers": {
            "a": {"url": "https://h/mcp", "proxy": "http://u:pw-secret@proxy:3128"},
            "b": {"url": "https://h/mcp", "proxy": "none"},
            "c": {"url": "https://h/mcp"}
        }}"#;
        let loaded = parse_str(text, &Options::new()).unwrap();
        let resolved = resolve(&loaded.config, &|_: &str| None).unwrap();
        let shown = |name: &str| format!("{:?}", http_proxy(&resolved.servers[name]));
        assert_eq!(shown("a"), r#"Proxy::url("http://proxy:3128")"#);
        assert_eq!(shown("b"), "Proxy::none()");
        assert_eq!(shown("c"), "Proxy::from_env()");
    }
}
