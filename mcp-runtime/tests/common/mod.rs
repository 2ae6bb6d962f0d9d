//! An in-process connector: each server is `mcp_testkit::serve` over a
//! duplex stream, with the options its config's `args` give. It counts
//! connects per server.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use mcp_config::{Options, ResolvedConfig, ResolvedServer, TransportConfig, parse_str, resolve};
use mcp_runtime::{ConnectError, Connector};
use mcp_testkit::ServerOptions;
use mcp_transport::stream::StreamTransport;
use mcp_transport::{BoxFuture, Transport};

#[derive(Debug, Default)]
pub struct Testkit {
    connects: Mutex<BTreeMap<String, usize>>,
}

impl Testkit {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn connects(&self, server: &str) -> usize {
        self.connects
            .lock()
            .unwrap()
            .get(server)
            .copied()
            .unwrap_or(0)
    }

    pub fn total(&self) -> usize {
        self.connects.lock().unwrap().values().sum()
    }
}

impl Connector for Testkit {
    fn connect<'a>(
        &'a self,
        server: &'a ResolvedServer,
    ) -> BoxFuture<'a, Result<Arc<dyn Transport>, ConnectError>> {
        Box::pin(async move {
            *self
                .connects
                .lock()
                .unwrap()
                .entry(server.name.clone())
                .or_default() += 1;
            let TransportConfig::Stdio { args, .. } = &server.transport else {
                return Err(ConnectError::Unsupported("stdio only".into()));
            };
            // `--tag X` arguments only make fingerprints differ.
            let args: Vec<String> = args
                .chunks(2)
                .filter(|c| c.first().map(String::as_str) != Some("--tag"))
                .flatten()
                .cloned()
                .collect();
            let options = ServerOptions::from_args(args.into_iter())
                .map_err(|e| ConnectError::Unsupported(e.to_string()))?;
            let (client, server) = tokio::io::duplex(64 * 1024);
            let (sr, sw) = tokio::io::split(server);
            tokio::spawn(mcp_testkit::serve(options, sr, sw));
            let (cr, cw) = tokio::io::split(client);
            let t: Arc<dyn Transport> = Arc::new(StreamTransport::new(cr, cw));
            Ok(t)
        })
    }
}

/// Resolves a JSON config (OpenClaw format).
pub fn config(json: &str) -> ResolvedConfig {
    let loaded = parse_str(json, &Options::new()).unwrap();
    resolve(&loaded.config, &|_: &str| None).unwrap()
}
