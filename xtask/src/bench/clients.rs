//! The clients the stdio and HTTP benchmarks share: this stack and `rmcp`,
//! each calling `echo`; the benchmarks differ only in how they connect.

use std::time::Duration;

use mcp_stack_session::{Session, SessionConfig};
use mcp_stack_transport::Transport;
use serde_json::{Value, json};

use super::stdio::{spawn_in_flight, spawn_sequential};

/// The text every benchmark call echoes.
pub(super) const TEXT: &str = "hello, bench";

/// This stack.
#[derive(Clone)]
pub(super) struct Ours {
    session: Session,
}

impl Ours {
    /// A session over `transport`, checked with one echo call.
    pub(super) async fn over(transport: impl Transport) -> Result<Self, String> {
        let session = Session::connect(transport, SessionConfig::default())
            .await
            .map_err(|e| format!("ours: {e}"))?;
        let result = session
            .call_tool("echo", json!({"text": TEXT}))
            .await
            .map_err(|e| format!("ours: {e}"))?;
        if result.text() != TEXT {
            return Err(format!("ours: echo answered {:?}", result.text()));
        }
        Ok(Ours { session })
    }

    async fn call(session: &Session) -> Result<(), String> {
        let result = session
            .call_tool("echo", json!({"text": TEXT}))
            .await
            .map_err(|e| format!("ours: {e}"))?;
        std::hint::black_box(result);
        Ok(())
    }

    pub(super) async fn sequential(&self, calls: usize) -> Result<Vec<Duration>, String> {
        let session = self.session.clone();
        spawn_sequential(calls, move || {
            let session = session.clone();
            async move { Self::call(&session).await }
        })
        .await
    }

    pub(super) async fn in_flight(
        &self,
        rt: &tokio::runtime::Runtime,
        width: usize,
        calls: usize,
    ) -> Result<Vec<Duration>, String> {
        let session = self.session.clone();
        spawn_in_flight(rt, width, calls, move || {
            let session = session.clone();
            async move { Self::call(&session).await }
        })
        .await
    }
}

impl Ours {
    /// One `echo` call with this text; the length of the text answered.
    pub(super) async fn echo(&self, text: &str) -> Result<usize, String> {
        /// The arguments, borrowed: `call_tool` takes any `Serialize`, so
        /// the text is not copied into a `json!` value first (rmcp's
        /// arguments are an owned map: its row pays that copy).
        #[derive(serde::Serialize)]
        struct Echo<'a> {
            text: &'a str,
        }
        let result = self
            .session
            .call_tool("echo", Echo { text })
            .await
            .map_err(|e| format!("ours: {e}"))?;
        // The first text block, borrowed, as the rmcp row reads it.
        Ok(result.texts().next().map_or(0, str::len))
    }

    /// Fetches the tool catalog again (`tools/list`, every page, the
    /// catalog built); how many tools it has.
    pub(super) async fn list_tools(&self) -> Result<usize, String> {
        let catalog = self
            .session
            .refresh_tools()
            .await
            .map_err(|e| format!("ours: {e}"))?;
        Ok(catalog.len())
    }

    /// The protocol revision the session negotiated.
    pub(super) fn protocol(&self) -> mcp_stack_session::ProtocolVersion {
        self.session.protocol_version()
    }

    /// Closes the session and its server.
    pub(super) async fn close(self) {
        self.session.close().await;
    }
}

/// The `rmcp` SDK's client, over whichever transport.
pub(super) struct Rmcp {
    service: rmcp::service::RunningService<rmcp::RoleClient, ()>,
}

impl Rmcp {
    /// A running rmcp client, checked with one echo call.
    pub(super) async fn checked(
        service: rmcp::service::RunningService<rmcp::RoleClient, ()>,
    ) -> Result<Self, String> {
        let result = service
            .peer()
            .call_tool(Self::params())
            .await
            .map_err(|e| format!("rmcp: {e}"))?;
        let text = result
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.as_str());
        if text != Some(TEXT) {
            return Err(format!("rmcp: echo answered {:?}", result.content));
        }
        Ok(Rmcp { service })
    }

    fn params() -> rmcp::model::CallToolRequestParams {
        let mut arguments = serde_json::Map::new();
        arguments.insert("text".into(), Value::String(TEXT.into()));
        rmcp::model::CallToolRequestParams::new("echo").with_arguments(arguments)
    }

    async fn call(peer: &rmcp::Peer<rmcp::RoleClient>) -> Result<(), String> {
        let result = peer
            .call_tool(Self::params())
            .await
            .map_err(|e| format!("rmcp: {e}"))?;
        std::hint::black_box(result);
        Ok(())
    }

    pub(super) async fn sequential(&self, calls: usize) -> Result<Vec<Duration>, String> {
        let peer = self.service.peer().clone();
        spawn_sequential(calls, move || {
            let peer = peer.clone();
            async move { Self::call(&peer).await }
        })
        .await
    }

    pub(super) async fn in_flight(
        &self,
        rt: &tokio::runtime::Runtime,
        width: usize,
        calls: usize,
    ) -> Result<Vec<Duration>, String> {
        let peer = self.service.peer().clone();
        spawn_in_flight(rt, width, calls, move || {
            let peer = peer.clone();
            async move { Self::call(&peer).await }
        })
        .await
    }

    /// One `echo` call with this text; the length of the text answered.
    pub(super) async fn echo(&self, text: &str) -> Result<usize, String> {
        Self::echo_on(self.service.peer(), text).await
    }

    /// A handle to the client that a task can own (`echo_on` calls through it).
    pub(super) fn peer(&self) -> rmcp::Peer<rmcp::RoleClient> {
        self.service.peer().clone()
    }

    /// [`echo`](Self::echo) through a peer handle.
    pub(super) async fn echo_on(
        peer: &rmcp::Peer<rmcp::RoleClient>,
        text: &str,
    ) -> Result<usize, String> {
        let mut arguments = serde_json::Map::new();
        arguments.insert("text".into(), Value::String(text.to_owned()));
        let params = rmcp::model::CallToolRequestParams::new("echo").with_arguments(arguments);
        let result = peer
            .call_tool(params)
            .await
            .map_err(|e| format!("rmcp: {e}"))?;
        Ok(result
            .content
            .first()
            .and_then(|c| c.as_text())
            .map_or(0, |t| t.text.len()))
    }

    /// `tools/list`, every page; how many tools it has.
    pub(super) async fn list_tools(&self) -> Result<usize, String> {
        let tools = self
            .service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("rmcp: {e}"))?;
        Ok(tools.len())
    }

    pub(super) async fn close(self) {
        let _ = self.service.cancel().await;
    }
}
