//! One ad-hoc session, for command-line tools: the same names and routing an
//! agent gets, without the process-wide manager.

use std::sync::Arc;

use mcp_config::ResolvedConfig;
use mcp_session::CallOptions;
use mcp_session::types::CallToolResult;
use serde_json::Value;

use crate::catalog::RuntimeCatalog;
use crate::connector::{Connector, DefaultConnector};
use crate::error::RuntimeError;
use crate::{RuntimeLease, RuntimeManager, RuntimeOptions};

/// The session id an [`AdHocRuntime`] uses.
pub const AD_HOC_SESSION: &str = "ad-hoc";

/// A runtime for one session, built at once from a config, with reaping off.
/// Used by `mcp tools` and `mcp call`. Call [`close`](Self::close) at the end
/// (dropping it kills the servers without their close sequence).
#[derive(Debug)]
pub struct AdHocRuntime {
    manager: RuntimeManager,
    lease: RuntimeLease,
}

impl AdHocRuntime {
    /// Starts every server of `config` (concurrently) with the default connector.
    pub async fn open(config: &ResolvedConfig) -> Result<Self, RuntimeError> {
        Self::open_with(config, Arc::new(DefaultConnector::new())).await
    }

    /// Like [`open`](Self::open) with another connector.
    pub async fn open_with(
        config: &ResolvedConfig,
        connector: Arc<dyn Connector>,
    ) -> Result<Self, RuntimeError> {
        let options = RuntimeOptions::default().idle_ttl(std::time::Duration::ZERO);
        let manager = RuntimeManager::with_connector(options, connector);
        let lease = manager.acquire(AD_HOC_SESSION, config).await?;
        Ok(AdHocRuntime { manager, lease })
    }

    /// The tools under their namespaced names, and the servers that failed.
    pub fn catalog(&self) -> &RuntimeCatalog {
        self.lease.catalog()
    }

    /// The runtime (for its sessions).
    pub fn runtime(&self) -> &RuntimeLease {
        &self.lease
    }

    /// Calls a tool by namespaced name (`SERVER__TOOL`).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, RuntimeError> {
        self.lease.call_tool(name, arguments).await
    }

    /// Calls a tool by namespaced name, with per-call options.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallToolResult, RuntimeError> {
        self.lease.call_tool_with(name, arguments, options).await
    }

    /// Closes every server with its close sequence.
    pub async fn close(self) {
        let AdHocRuntime { manager, lease } = self;
        drop(lease);
        manager.dispose_all().await;
    }
}
