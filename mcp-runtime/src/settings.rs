//! A configured server as connection settings: the one mapping from a
//! config entry ([`ResolvedServer`]) to the transport's settings, the
//! session's and the OAuth client's. The runtime's [`DefaultConnector`]
//! and the `mcp` command both start from it (the command then lays its
//! flags on top: `--timeout`, `--protocol`, tracing).
//!
//! [`DefaultConnector`]: crate::DefaultConnector

use mcp_stack_config::{ResolvedServer, TransportConfig};
use mcp_stack_session::SessionConfig;
use mcp_stack_transport::stdio::StdioConfig;

/// How to reach one configured server and talk to it.
#[derive(Debug)]
#[non_exhaustive]
pub struct ServerSettings {
    /// The transport to open.
    pub transport: TransportSettings,
    /// The session over it: the defaults given, with the server's name,
    /// timeouts, parallel-calls flag and protocol pin.
    pub session: SessionConfig,
}

impl ServerSettings {
    /// The settings for `server`, its session built on `defaults`.
    pub fn new(server: &ResolvedServer, defaults: &SessionConfig) -> Self {
        ServerSettings {
            transport: TransportSettings::new(server),
            session: session_settings(defaults, server),
        }
    }
}

/// The transport side of [`ServerSettings`].
#[derive(Debug)]
#[non_exhaustive]
pub enum TransportSettings {
    /// A child process: the program directly (no shell), the environment
    /// allowlist plus the variables the config names.
    Stdio(StdioConfig),
    /// An HTTP endpoint.
    #[cfg(feature = "http")]
    Http(HttpSettings),
    /// A transport this build cannot open, and why.
    Unsupported(String),
}

impl TransportSettings {
    /// The transport settings for `server`.
    pub fn new(server: &ResolvedServer) -> Self {
        match &server.transport {
            TransportConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut config = StdioConfig::new(command.clone())
                    .args(args.iter().cloned())
                    .envs(env.iter().map(|(k, v)| (k.clone(), v.expose().to_owned())))
                    .server_name(server.name.clone());
                if let Some(cwd) = cwd {
                    config = config.cwd(cwd.clone());
                }
                TransportSettings::Stdio(config)
            }
            #[cfg(feature = "http")]
            TransportConfig::Http { .. } => match HttpSettings::of(server) {
                Some(http) => TransportSettings::Http(http),
                None => TransportSettings::Unsupported("not an HTTP server".into()),
            },
            #[cfg(not(feature = "http"))]
            TransportConfig::Http { kind, .. } => TransportSettings::Unsupported(format!(
                "the {} transport needs mcp-stack-runtime's `http` feature",
                kind.name()
            )),
            _ => TransportSettings::Unsupported(
                "this kind of transport is not available in this build".into(),
            ),
        }
    }
}

/// The session settings for `server`: `defaults` with its name, request
/// and handshake timeouts, parallel-calls flag and protocol pin (parsed
/// when the config was validated).
pub fn session_settings(defaults: &SessionConfig, server: &ResolvedServer) -> SessionConfig {
    let mut c = defaults.clone();
    c.server_name = server.name.clone();
    c.request_timeout = server.request_timeout;
    c.handshake_timeout = server.handshake_timeout;
    c.supports_parallel_tool_calls = server.supports_parallel_tool_calls;
    match server.protocol_version {
        Some(pin) => c.protocol(pin),
        None => c,
    }
}

/// The stdio settings for a resolved stdio server (`None` for other transports).
pub fn stdio_config(server: &ResolvedServer) -> Option<StdioConfig> {
    match TransportSettings::new(server) {
        TransportSettings::Stdio(config) => Some(config),
        _ => None,
    }
}

#[cfg(feature = "http")]
pub use http::{HttpSettings, http_proxy};

#[cfg(feature = "http")]
mod http {
    use super::*;
    use mcp_stack_config::{HttpKind, OAuthSettings, ProxySetting};
    use mcp_stack_transport::http::{
        HttpOptions, Proxy, SseTransport, StreamableHttpTransport, auto::TransportCache,
    };
    use mcp_stack_transport::{Transport, TransportError};
    use std::sync::Arc;

    /// An HTTP server's settings: where, which transport, the options
    /// (server name, request timeout, proxy, configured headers) and its
    /// OAuth settings.
    #[derive(Debug, Clone)]
    #[non_exhaustive]
    pub struct HttpSettings {
        /// The MCP endpoint (or the SSE URL).
        pub url: String,
        /// Streamable HTTP, HTTP+SSE, or the first falling back to the second.
        pub kind: HttpKind,
        /// The transport's options, without an authorizer.
        pub options: HttpOptions,
        /// The config's OAuth settings (the defaults when it has none: on).
        pub oauth: OAuthSettings,
    }

    impl HttpSettings {
        /// Settings for an endpoint no config names (a URL given on a
        /// command line): OAuth with the default settings.
        pub fn new(url: impl Into<String>, kind: HttpKind, options: HttpOptions) -> Self {
            HttpSettings {
                url: url.into(),
                kind,
                options,
                oauth: OAuthSettings::default(),
            }
        }

        /// The settings for a configured HTTP server (`None` for other
        /// transports).
        pub fn of(server: &ResolvedServer) -> Option<Self> {
            let TransportConfig::Http {
                url, headers, kind, ..
            } = &server.transport
            else {
                return None;
            };
            let options = HttpOptions::new()
                .server_name(server.name.clone())
                .request_timeout(server.request_timeout)
                .proxy(http_proxy(server))
                .headers(
                    headers
                        .iter()
                        .map(|(k, v)| (k.clone(), v.expose().to_owned())),
                );
            Some(HttpSettings {
                url: url.clone(),
                kind: *kind,
                options,
                oauth: server.oauth.clone().unwrap_or_default(),
            })
        }

        /// Whether an OAuth client should authorize it: OAuth is on and no
        /// configured `Authorization` header (a static token) carries the
        /// credentials already.
        pub fn wants_oauth(&self) -> bool {
            self.oauth.is_enabled() && !self.options.has_authorization_header()
        }

        /// Connects with the transport its kind names; `cache` remembers,
        /// per URL, which one worked when it falls back.
        pub async fn connect(
            &self,
            cache: &TransportCache,
        ) -> Result<Arc<dyn Transport>, TransportError> {
            let options = self.options.clone();
            let transport: Arc<dyn Transport> = match self.kind {
                HttpKind::StreamableHttp => {
                    Arc::new(StreamableHttpTransport::connect(&self.url, options).await?)
                }
                HttpKind::Sse => Arc::new(SseTransport::connect(&self.url, options).await?),
                _ => Arc::new(
                    mcp_stack_transport::http::auto::connect(&self.url, options, cache).await?,
                ),
            };
            Ok(transport)
        }
    }

    /// The proxy an HTTP server's requests (and its OAuth exchanges) go
    /// through: its `proxy` setting, else the environment's (`HTTPS_PROXY`,
    /// `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`, read when its client is built).
    pub fn http_proxy(server: &ResolvedServer) -> Proxy {
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
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use mcp_stack_config::{Options, ResolvedConfig, parse_str, resolve};
    use mcp_stack_session::{ProtocolMode, ProtocolVersion};

    fn config(text: &str) -> ResolvedConfig {
        let loaded = parse_str(text, &Options::new()).unwrap();
        resolve(&loaded.config, &|_: &str| None).unwrap()
    }

    /// A server's `proxy` reaches the transport's options; without one
    /// the environment decides (credentials never shown).
    #[cfg(feature = "http")]
    #[test]
    fn the_config_proxy_becomes_the_transport_proxy() {
        let resolved = config(
            r#"{"mcpServers": {
            "a": {"url": "https://h/mcp", "proxy": "http://u:pw-secret@proxy:3128"},
            "b": {"url": "https://h/mcp", "proxy": "none"},
            "c": {"url": "https://h/mcp"}
        }}"#,
        );
        let shown = |name: &str| format!("{:?}", http_proxy(&resolved.servers[name]));
        assert_eq!(shown("a"), r#"Proxy::url("http://<redacted>@proxy:3128")"#);
        assert!(!shown("a").contains("pw-secret"));
        assert_eq!(shown("b"), "Proxy::none()");
        assert_eq!(shown("c"), "Proxy::from_env()");
    }

    /// The session takes the server's name, timeouts, parallel flag and
    /// pin; what the config does not say keeps the defaults'.
    #[test]
    fn the_session_settings_come_from_the_entry() {
        let resolved = config(
            r#"{"mcpServers": {
            "pinned": {"command": "a", "requestTimeoutMs": 1500, "handshakeTimeoutMs": 700,
                       "supportsParallelToolCalls": true, "protocolVersion": "2025-06-18"},
            "plain": {"command": "b"}
        }}"#,
        );
        let defaults = SessionConfig::new().log_level("debug");
        let pinned = ServerSettings::new(&resolved.servers["pinned"], &defaults).session;
        assert_eq!(pinned.server_name, "pinned");
        assert_eq!(
            pinned.request_timeout,
            std::time::Duration::from_millis(1500)
        );
        assert_eq!(
            pinned.handshake_timeout,
            std::time::Duration::from_millis(700)
        );
        assert!(pinned.supports_parallel_tool_calls);
        assert_eq!(
            (pinned.mode(), pinned.offered_version()),
            (ProtocolMode::Handshake, ProtocolVersion::V2025_06_18)
        );
        assert!(pinned.log_level.is_some(), "the defaults' settings stay");
        let plain = ServerSettings::new(&resolved.servers["plain"], &defaults).session;
        assert_eq!(plain.mode(), defaults.mode());
    }

    /// A stdio entry becomes the program, its arguments, environment and
    /// folder; an HTTP entry its URL, kind, headers and OAuth settings.
    #[test]
    fn the_transport_settings_come_from_the_entry() {
        let resolved = config(
            r#"{"mcpServers": {
            "local": {"command": "srv", "args": ["--x"], "env": {"K": "v"}},
            "remote": {"url": "https://h/mcp", "transport": "sse",
                       "headers": {"Authorization": "Bearer t"}}
        }}"#,
        );
        match TransportSettings::new(&resolved.servers["local"]) {
            TransportSettings::Stdio(c) => {
                assert_eq!(c.program(), "srv");
            }
            other => panic!("not stdio: {other:?}"),
        }
        #[cfg(feature = "http")]
        match TransportSettings::new(&resolved.servers["remote"]) {
            TransportSettings::Http(h) => {
                assert_eq!(h.url, "https://h/mcp");
                assert_eq!(h.kind, mcp_stack_config::HttpKind::Sse);
                assert!(h.options.has_authorization_header());
                assert!(!h.wants_oauth(), "a configured token wins over OAuth");
            }
            other => panic!("not HTTP: {other:?}"),
        }
    }
}
