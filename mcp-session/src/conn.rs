//! The core of a session: the connection every feature sends through.
//!
//! [`Inner`] holds the transport, the state shared with the reader task, the
//! configuration, what the server said about itself and the settled
//! [`Revision`]. Sending (`request.rs`), reading (`reader.rs`), the table of
//! requests in flight (`pending.rs`) and the lifecycle (`connect.rs`,
//! `lifecycle.rs`) work on it; the features (the tool catalog and calls,
//! the list caches, skills, tasks, subscriptions) are objects of their own
//! beside it that send through it. Nothing here knows a feature: where the
//! reader must reach one (a `list_changed`, a subscription's notification),
//! it goes through state the core owns ([`crate::changes`],
//! [`crate::subscribers`]).

use std::sync::Arc;
use std::sync::atomic::AtomicI64;

use std::time::Duration;

use mcp_stack_jsonrpc::{Message, Notification};
use mcp_stack_transport::{SendContext, Transport};
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio::task::JoinHandle;

use mcp_stack_protocol::meta::RequestMeta;
use mcp_stack_protocol::request::Request;
use mcp_stack_protocol::types::ClientCapabilities;
use mcp_stack_protocol::types::InitializeResult;

use crate::config::SessionConfig;
use crate::error::SessionError;
use crate::parse::to_raw_params;
use crate::reader::Shared;
use crate::revision::Revision;

/// The session's core state. Dropping it (with the last handle, task or
/// subscription that holds it) stops the reader task, which drops the
/// transport (a stdio transport then kills its child).
pub(crate) struct Inner {
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) reader: JoinHandle<()>,
    pub(crate) next_id: AtomicI64,
    pub(crate) config: SessionConfig,
    /// The server's `initialize` result, shared with every connection
    /// that got an identical one (see `intern`).
    pub(crate) init: Arc<InitializeResult>,
    /// The revision the lifecycle settled on (before it settles, the one
    /// offered), and what it means for this connection.
    pub(crate) revision: Revision,
    /// Per-request metadata, for a revision whose requests carry it.
    pub(crate) meta: Option<RequestMeta>,
    /// The capabilities the handshake declared (the config's and the
    /// handler's), declared again when the server's session ends and the
    /// handshake runs again.
    pub(crate) capabilities: Arc<ClientCapabilities>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.reader.abort();
        self.shared.server_requests.abort_all();
    }
}

impl Inner {
    /// Whether requests mirror tool arguments into `Mcp-Param-*` headers
    /// (see [`Revision::mirrors_headers`]).
    pub(crate) fn mirrors_headers(&self) -> bool {
        self.revision.mirrors_headers()
    }

    /// Sends request `R` with its params and reads its result, both typed
    /// by the method table.
    pub(crate) async fn send<R: Request>(
        &self,
        params: &R::Params,
        timeout: Duration,
        context: &SendContext,
    ) -> Result<R::Result, SessionError> {
        self.request(R::METHOD, params, timeout, context).await
    }

    /// Sends request `R`, whose result says nothing (`{}`), and does not
    /// read it: a server that answers with something else (`null`, say) is
    /// not thereby wrong.
    pub(crate) async fn send_acknowledged<R: Request>(
        &self,
        params: &R::Params,
        timeout: Duration,
        context: &SendContext,
    ) -> Result<(), SessionError> {
        let _: IgnoredAny = self.request(R::METHOD, params, timeout, context).await?;
        Ok(())
    }

    /// Sends a notification.
    pub(crate) async fn notify(
        &self,
        method: &str,
        params: Option<Value>,
    ) -> Result<(), SessionError> {
        let raw = params.map(|p| to_raw_params(method, &p)).transpose()?;
        let message = Message::Notification(Notification::new(method, raw));
        let context = self.context();
        Ok(self.transport.send_with(&message, &context).await?)
    }
}

/// `Ok` when the server declared what a request needs, else
/// [`SessionError::NotSupported`] naming it (and nothing is sent).
pub(crate) fn require(declared: bool, capability: &'static str) -> Result<(), SessionError> {
    if declared {
        Ok(())
    } else {
        Err(SessionError::NotSupported(capability))
    }
}
