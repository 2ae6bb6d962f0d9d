//! Where the HTTP transports plug in: the conformance client and the
//! HTTP modes of the reference servers connect through here, so nothing else
//! in this task names an HTTP type.

use std::sync::Arc;
use std::time::Duration;

use mcp_stack_auth::Secret;
use mcp_stack_auth::agent::FollowRedirect;
use mcp_stack_auth::client::{Grant, OAuthClient, OAuthConfig};
use mcp_stack_auth::store::MemoryStore;
use mcp_stack_transport::Transport;
use mcp_stack_transport::http::{
    HttpOptions, SseTransport, StreamableHttpTransport, WebClient, auto,
};
use serde_json::Value;

/// The build has the HTTP transports (mcp-stack-transport's `http` feature).
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

/// Where the suite's authorization servers redirect to. Nothing listens:
/// [`FollowRedirect`] reads the redirect's `Location` (the suite's servers
/// approve at once, without a person).
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The client id metadata document URL the suite expects a client to have
/// (`auth/basic-cimd`); it is never fetched.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// How the conformance client authorizes: as a user of this library would
/// configure it, from what the suite tells any client
/// (`MCP_CONFORMANCE_CONTEXT`: a pre-registered client, a client-credentials
/// secret or key). The grant follows the scenario's name for the
/// client-credentials extension, as a user configures it per server.
pub(crate) fn authorizer(
    url: &str,
    scenario: &str,
    context: &Value,
) -> Result<Arc<dyn mcp_stack_transport::http::auth::Authorizer>, String> {
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut config = OAuthConfig::new(url)
        .client_name("mcp-client-rs-conformance")
        .client_metadata_url(CLIENT_METADATA_URL);
    if let Some(id) = text("client_id") {
        config = config.client(id, text("client_secret").map(Secret::new));
    }
    if let Some(pem) = text("private_key_pem") {
        let alg = text("signing_algorithm").unwrap_or_else(|| "ES256".into());
        config = config.private_key(Secret::new(pem), alg);
    }
    if scenario.contains("client-credentials") {
        config = config.grant(Grant::ClientCredentials);
    }
    // Enterprise-managed authorization: the user's ID token from the
    // identity provider the context names.
    if let (Some(endpoint), Some(idp_client), Some(id_token)) = (
        text("idp_token_endpoint"),
        text("idp_client_id"),
        text("idp_id_token"),
    ) {
        config = config.grant(Grant::EnterpriseManaged {
            idp_token_endpoint: endpoint,
            idp_client_id: idp_client,
            id_token: Secret::new(id_token),
        });
    }
    // Workload identity: the workload's own assertion (the valid one; the
    // context's others are for clients that test their own refusals).
    if let Some(jwt) = text("valid_jwt") {
        config = config.grant(Grant::JwtBearer {
            assertion: Secret::new(jwt),
        });
    }
    let options = options("conformance-auth");
    let web = WebClient::new(&options).map_err(|e| e.to_string())?;
    let agent = Arc::new(FollowRedirect::new(web, REDIRECT_URI));
    let client = OAuthClient::new(config, &options, Arc::new(MemoryStore::new()), Some(agent))
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(client))
}

/// Connects to `url` with the transport `mode` names.
pub(crate) async fn connect(
    url: &str,
    mode: Mode,
    name: &str,
) -> Result<Arc<dyn Transport>, String> {
    connect_with(url, mode, options(name)).await
}

/// Connects with an authorizer.
pub(crate) async fn connect_authorized(
    url: &str,
    mode: Mode,
    name: &str,
    authorizer: Arc<dyn mcp_stack_transport::http::auth::Authorizer>,
) -> Result<Arc<dyn Transport>, String> {
    connect_with(url, mode, options(name).authorizer(authorizer)).await
}

async fn connect_with(
    url: &str,
    mode: Mode,
    options: HttpOptions,
) -> Result<Arc<dyn Transport>, String> {
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
