//! The 2025-03-26 fallback, driven end to end: a server that publishes no
//! protected resource metadata gets its authorization server metadata read
//! at its own origin, and that document must name the origin as its
//! issuer (RFC 8414 §3.3). An honest server still logs in (with the
//! metadata, and with the default endpoints when there is none); one that
//! claims another authorization server's issuer is refused before the
//! client registers, authorizes or sends a code anywhere.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_stack_auth::AuthError;
use mcp_stack_auth::agent::{FollowRedirect, UserAgent};
use mcp_stack_auth::client::{OAuthClient, OAuthConfig};
use mcp_stack_auth::store::MemoryStore;
use mcp_stack_session::{Session, SessionConfig};
use mcp_stack_testkit::http::{
    AuthServerMetadata, HttpServer, HttpServerOptions, OAuthMisbehaviour, OAuthOptions, OAuthStats,
    ResourceMetadataAt,
};
use mcp_stack_transport::http::{HttpOptions, StreamableHttpTransport, WebClient};
use serde_json::json;

/// Any loopback redirect URI: `FollowRedirect` reads the 302's `Location`.
const REDIRECT: &str = "http://127.0.0.1:9/callback";

async fn start(oauth: OAuthOptions) -> HttpServer {
    HttpServer::start(HttpServerOptions::default().with_oauth(oauth))
        .await
        .unwrap()
}

/// A 2025-03-26 server: no protected resource metadata anywhere.
fn legacy() -> OAuthOptions {
    OAuthOptions::new().resource_metadata_at(ResourceMetadataAt::Nowhere)
}

fn client(url: &str) -> OAuthClient {
    let web = WebClient::new(&HttpOptions::new()).unwrap();
    let agent: Arc<dyn UserAgent> = Arc::new(FollowRedirect::new(web, REDIRECT));
    OAuthClient::new(
        OAuthConfig::new(url),
        &HttpOptions::new(),
        Arc::new(MemoryStore::new()),
        Some(agent),
    )
    .unwrap()
}

fn n(counter: &AtomicUsize) -> usize {
    counter.load(Ordering::SeqCst)
}

fn token_requests(stats: &OAuthStats) -> usize {
    stats.token_requests.lock().unwrap().len()
}

fn authorize_requests(stats: &OAuthStats) -> usize {
    stats.authorize_requests.lock().unwrap().len()
}

/// `http://127.0.0.1:PORT` of a server URL `http://127.0.0.1:PORT/mcp`.
fn origin(url: &str) -> String {
    url.strip_suffix("/mcp").unwrap().to_owned()
}

/// Connects through the OAuth client and calls a tool.
async fn connect_and_echo(url: &str, client: &OAuthClient) {
    let options = HttpOptions::new()
        .request_timeout(Duration::from_secs(10))
        .authorizer(Arc::new(client.clone()));
    let transport = StreamableHttpTransport::connect(url, options)
        .await
        .unwrap();
    let session = Session::connect(transport, SessionConfig::new())
        .await
        .unwrap();
    let r = session
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert!(!r.is_error(), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fallback_refuses_metadata_claiming_another_issuer_before_anything_is_sent() {
    // The mix-up of issue #25: the server's own metadata claims another
    // authorization server's issuer, and authorization responses carry that
    // issuer as `iss` (as the real server's would), while every endpoint —
    // the token endpoint above all — is this server. A client that checks
    // the issuer only against the document itself sends the code and the
    // PKCE verifier here.
    let server = start(
        legacy()
            .misbehave(OAuthMisbehaviour::WrongIssuer)
            .misbehave(OAuthMisbehaviour::WrongIss),
    )
    .await;
    let url = server.url();
    let err = client(&url).login().await.unwrap_err();
    let AuthError::IssuerMismatch { expected, found } = &err else {
        panic!("not an issuer mismatch: {err}");
    };
    assert_eq!(expected, &origin(&url));
    assert_eq!(found, "http://wrong-issuer.invalid");
    let text = err.to_string();
    assert!(text.contains("http://wrong-issuer.invalid"), "{text}");
    assert!(text.contains(&origin(&url)), "{text}");
    let o = &server.stats().oauth;
    // The document was read (at the origin), and nothing more happened.
    assert_eq!(o.fetches("/.well-known/oauth-authorization-server"), 1);
    assert_eq!(n(&o.registrations), 0);
    assert_eq!(authorize_requests(o), 0);
    assert_eq!(token_requests(o), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_honest_fallback_server_with_metadata_at_its_origin_logs_in() {
    let server = start(legacy()).await;
    let url = server.url();
    let client = client(&url);
    let entry = client.login().await.unwrap();
    assert_eq!(entry.issuer, origin(&url));
    connect_and_echo(&url, &client).await;
    let o = &server.stats().oauth;
    assert_eq!(o.fetches("/.well-known/oauth-authorization-server"), 1);
    assert_eq!(n(&o.resource_metadata_fetches), 0);
    assert_eq!(n(&o.code_grants), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_honest_fallback_server_without_any_metadata_uses_the_default_endpoints() {
    let server = start(legacy().metadata(AuthServerMetadata::None)).await;
    let url = server.url();
    let client = client(&url);
    let entry = client.login().await.unwrap();
    assert_eq!(entry.issuer, origin(&url));
    connect_and_echo(&url, &client).await;
    let o = &server.stats().oauth;
    assert_eq!(n(&o.server_metadata_fetches), 0);
    assert_eq!(n(&o.registrations), 1);
    assert_eq!(n(&o.code_grants), 1);
}
