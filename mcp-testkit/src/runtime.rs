//! The test server behind `mcp-stack-runtime`'s [`Connector`] (cargo feature
//! `runtime`): each connect starts a [`serve`](crate::serve) instance
//! in-process over a duplex stream, so runtime tests, examples and
//! benchmarks need no child process.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_stack_config::{ResolvedServer, TransportConfig};
use mcp_stack_runtime::{ConnectError, Connector};
use mcp_stack_transport::stream::StreamTransport;
use mcp_stack_transport::{BoxFuture, Transport};

use crate::ServerOptions;

/// The size of each in-process duplex stream's buffers.
const BUFFER: usize = 64 * 1024;

/// Turns a resolved server into the options of its test server.
type OptionsFn = dyn Fn(&ResolvedServer) -> Result<ServerOptions, ConnectError> + Send + Sync;

/// Where a connect's [`ServerOptions`] come from.
enum Source {
    /// The stdio server's `args`, as the `mcp-testkit` command would take them.
    Args,
    /// The same options for every server, whatever its config says.
    Fixed(ServerOptions),
    /// A function of the server's config.
    PerServer(Box<OptionsFn>),
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Args => f.write_str("Args"),
            Source::Fixed(options) => f.debug_tuple("Fixed").field(options).finish(),
            Source::PerServer(_) => f.write_str("PerServer(..)"),
        }
    }
}

/// A [`Connector`] that runs the test server in-process: each connect
/// spawns [`serve`](crate::serve) on the current tokio runtime over a
/// duplex stream and hands the runtime a [`StreamTransport`] to it. The
/// server ends when the runtime closes or drops the transport.
///
/// By default ([`InProcessConnector::new`]) a server's options are its
/// stdio config's `args`, parsed as the `mcp-testkit` command would
/// ([`ServerOptions::from_args`]), so a config such as
/// `{"command": "kit", "args": ["--era", "modern"]}` starts a modern
/// server. A `--tag VALUE` pair is skipped: it only makes two configs (and
/// so their fingerprints) differ. Servers of other transports are refused
/// with [`ConnectError::Unsupported`]; use
/// [`InProcessConnector::with_options`] or
/// [`InProcessConnector::with_options_for`] to serve any config.
///
/// It counts connects per server name (failed ones too), so tests can
/// check when the runtime reused a connection.
///
/// ```
/// use std::sync::Arc;
/// use mcp_stack_config::{Options, parse_str, resolve};
/// use mcp_stack_runtime::{RuntimeManager, RuntimeOptions};
/// use mcp_stack_testkit::InProcessConnector;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let text = r#"{"mcpServers": {"kit": {"command": "kit", "args": ["--page-size", "2"]}}}"#;
/// let config = resolve(&parse_str(text, &Options::new()).unwrap().config, &|_: &str| None).unwrap();
///
/// let connector = Arc::new(InProcessConnector::new());
/// let manager = RuntimeManager::with_connector(RuntimeOptions::default(), connector.clone());
/// let lease = manager.acquire("agent-1", &config).await.unwrap();
/// assert_eq!(lease.call_tool("kit__echo", serde_json::json!({"text": "hi"})).await.unwrap().text(), "hi");
/// assert_eq!(connector.connects("kit"), 1);
/// drop(lease);
/// manager.dispose_all().await;
/// # });
/// ```
#[derive(Debug)]
pub struct InProcessConnector {
    source: Source,
    connects: Mutex<BTreeMap<String, usize>>,
}

impl Default for InProcessConnector {
    fn default() -> Self {
        Self::new()
    }
}

impl InProcessConnector {
    /// Options from each stdio server's `args` (see the type's docs).
    pub fn new() -> Self {
        Self::from_source(Source::Args)
    }

    /// The same options for every server, whatever its config (its `args`
    /// and transport are ignored).
    pub fn with_options(options: ServerOptions) -> Self {
        Self::from_source(Source::Fixed(options))
    }

    /// Options chosen per server by `options`; its error fails that connect.
    pub fn with_options_for<F>(options: F) -> Self
    where
        F: Fn(&ResolvedServer) -> Result<ServerOptions, ConnectError> + Send + Sync + 'static,
    {
        Self::from_source(Source::PerServer(Box::new(options)))
    }

    fn from_source(source: Source) -> Self {
        InProcessConnector {
            source,
            connects: Mutex::default(),
        }
    }

    /// How many times the runtime connected the server named `server`.
    pub fn connects(&self, server: &str) -> usize {
        self.counts().get(server).copied().unwrap_or(0)
    }

    /// How many times the runtime connected any server.
    pub fn total_connects(&self) -> usize {
        self.counts().values().sum()
    }

    /// The connects so far, by server name.
    pub fn connects_by_server(&self) -> BTreeMap<String, usize> {
        self.counts().clone()
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, usize>> {
        self.connects.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The options of `server`'s test server.
    fn options_for(&self, server: &ResolvedServer) -> Result<ServerOptions, ConnectError> {
        match &self.source {
            Source::Args => options_from_args(server),
            Source::Fixed(options) => Ok(options.clone()),
            Source::PerServer(options) => options(server),
        }
    }
}

/// A stdio server's `args` as test server options, without `--tag VALUE`.
fn options_from_args(server: &ResolvedServer) -> Result<ServerOptions, ConnectError> {
    let TransportConfig::Stdio { args, .. } = &server.transport else {
        return Err(ConnectError::Unsupported(
            "the in-process testkit takes its options from a stdio server's args".into(),
        ));
    };
    let mut kept = Vec::with_capacity(args.len());
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--tag" {
            args.next();
        } else {
            kept.push(arg.clone());
        }
    }
    ServerOptions::from_args(kept.into_iter()).map_err(|e| ConnectError::Unsupported(e.to_string()))
}

impl Connector for InProcessConnector {
    fn connect<'a>(
        &'a self,
        server: &'a ResolvedServer,
    ) -> BoxFuture<'a, Result<Arc<dyn Transport>, ConnectError>> {
        Box::pin(async move {
            *self.counts().entry(server.name.clone()).or_default() += 1;
            let options = self.options_for(server)?;
            let (client, server) = tokio::io::duplex(BUFFER);
            let (server_read, server_write) = tokio::io::split(server);
            tokio::spawn(crate::serve(options, server_read, server_write));
            let (client_read, client_write) = tokio::io::split(client);
            let transport: Arc<dyn Transport> =
                Arc::new(StreamTransport::new(client_read, client_write));
            Ok(transport)
        })
    }
}
