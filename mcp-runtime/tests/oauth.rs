//! `StoredLogins` (feature `oauth`): the runtime authorizes an HTTP server
//! with the logins of a token store and never opens a browser, so a server
//! without a login fails to start with the hint, and starts once a login
//! is stored. The server is the testkit's OAuth-protected one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::config;
use mcp_stack_auth::agent::FollowRedirect;
use mcp_stack_auth::client::{OAuthClient, OAuthConfig};
use mcp_stack_auth::store::{MemoryStore, TokenStore};
use mcp_stack_config::{ResolvedConfig, ResolvedServer};
use mcp_stack_runtime::{
    DefaultConnector, LoginHint, RuntimeError, RuntimeManager, RuntimeOptions, StartupStep,
    StoredLogins,
};
use mcp_stack_testkit::http::{HttpServer, HttpServerOptions, OAuthOptions};
use mcp_stack_transport::http::{HttpOptions, WebClient};
use serde_json::json;

fn hint() -> LoginHint {
    Arc::new(|server: &ResolvedServer| format!("run `mcp login --server {}`", server.name))
}

const HINT: &str = "run `mcp login --server kit`";

async fn oauth_server() -> HttpServer {
    HttpServer::start(HttpServerOptions::default().with_oauth(OAuthOptions::new()))
        .await
        .unwrap()
}

fn kit_config(url: &str) -> ResolvedConfig {
    config(&json!({"mcpServers": {"kit": {"type": "streamable-http", "url": url}}}).to_string())
}

/// A manager whose connector authorizes with the logins of `store`; failed
/// servers are retried by the next acquire.
fn manager(store: &Arc<dyn TokenStore>) -> RuntimeManager {
    let logins = StoredLogins::new(store.clone(), hint());
    let connector = DefaultConnector::new().with_authorizers(Arc::new(logins));
    let options = RuntimeOptions::default().retry_backoff(Duration::ZERO, Duration::ZERO);
    RuntimeManager::with_connector(options, Arc::new(connector))
}

/// What `mcp login` does, into `store`: the redirect followed by hand.
async fn log_in(url: &str, store: &Arc<dyn TokenStore>) {
    log_in_as(url, store, "").await;
}

/// [`log_in`] for one identity (a user of a hosted platform).
async fn log_in_as(url: &str, store: &Arc<dyn TokenStore>, identity: &str) {
    let web = WebClient::new(&HttpOptions::new()).unwrap();
    let agent = FollowRedirect::new(web, "http://127.0.0.1:9/callback");
    let client = OAuthClient::new(
        OAuthConfig::new(url).identity(identity),
        &HttpOptions::new(),
        store.clone(),
        Some(Arc::new(agent)),
    )
    .unwrap();
    client.login().await.unwrap();
}

fn n(counter: &AtomicUsize) -> usize {
    counter.load(Ordering::SeqCst)
}

/// Acquires and asserts the server failed to start, naming the hint.
async fn assert_fails_with_hint(m: &RuntimeManager, cfg: &ResolvedConfig) {
    let lease = m.acquire("agent-1", cfg).await.unwrap();
    let catalog = lease.catalog();
    assert!(catalog.get("kit__echo").is_none());
    let failure = catalog
        .failures()
        .iter()
        .find(|f| f.server == "kit")
        .expect("kit failed to start");
    assert_eq!(failure.step, StartupStep::Handshake);
    assert!(failure.message.contains(HINT), "{}", failure.message);
    assert!(failure.to_string().contains(HINT), "{failure}");
    let err = lease
        .call_tool("kit__echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("kit"), "{err}");
}

async fn assert_works(m: &RuntimeManager, cfg: &ResolvedConfig) {
    let lease = m.acquire("agent-1", cfg).await.unwrap();
    assert!(
        lease.catalog().failures().is_empty(),
        "{:?}",
        lease.catalog().failures()
    );
    assert!(lease.catalog().get("kit__echo").is_some());
    let r = lease
        .call_tool("kit__echo", json!({"text": "authorized"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "authorized");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_login_the_server_fails_with_the_hint_and_with_one_it_starts() {
    let server = oauth_server().await;
    let url = server.url();
    let cfg = kit_config(&url);
    let o = &server.stats().oauth;

    // No login: the start fails with the hint; nobody was sent to authorize.
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    let m = manager(&store);
    assert_fails_with_hint(&m, &cfg).await;
    assert_eq!(n(&o.authorizations), 0);
    assert_eq!(o.authorize_requests.lock().unwrap().len(), 0);
    m.dispose_all().await;

    // A login stored (by `mcp login`, say), then the runtime starts.
    log_in(&url, &store).await;
    assert_eq!(n(&o.authorizations), 1);
    let refused = n(&o.unauthorized);
    let m = manager(&store);
    assert_works(&m, &cfg).await;
    assert_eq!(n(&o.authorizations), 1, "the runtime never authorizes");
    assert_eq!(n(&o.unauthorized), refused, "the stored token went first");
    m.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_stored_after_a_failed_start_is_used_by_the_next_acquire() {
    let server = oauth_server().await;
    let url = server.url();
    let cfg = kit_config(&url);
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    let m = manager(&store);
    assert_fails_with_hint(&m, &cfg).await;

    // The user runs `mcp login` while the agent runs; the next request's
    // acquire retries the failed server.
    log_in(&url, &store).await;
    assert_works(&m, &cfg).await;
    assert_eq!(n(&server.stats().oauth.authorizations), 1);
    m.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_identity_uses_its_own_login_and_never_another_users() {
    let server = oauth_server().await;
    let url = server.url();
    let cfg = kit_config(&url);
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    log_in_as(&url, &store, "alice").await;
    let m = manager(&store);

    let alice = m.acquire_as("alice", "alice-1", &cfg).await.unwrap();
    assert_eq!(alice.identity(), "alice");
    let r = alice
        .call_tool("kit__echo", json!({"text": "hers"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "hers");

    // Bob, on the same runtime and server, has no login: Alice's token is
    // not his, so his server fails to start with the hint.
    let bob = m.acquire_as("bob", "bob-1", &cfg).await.unwrap();
    assert_eq!(bob.identity(), "bob");
    let failure = bob
        .catalog()
        .failures()
        .iter()
        .find(|f| f.server == "kit")
        .expect("bob's kit failed to start")
        .clone();
    assert!(failure.message.contains(HINT), "{}", failure.message);
    // Nor is it the single user's (plain `acquire`).
    assert_fails_with_hint(&m, &cfg).await;

    // A session id is one identity's.
    let err = m.acquire_as("bob", "alice-1", &cfg).await.unwrap_err();
    assert!(
        matches!(err, RuntimeError::IdentityMismatch { .. }),
        "{err}"
    );
    assert_eq!(n(&server.stats().oauth.authorizations), 1);
    m.dispose_all().await;
}

/// A manager like [`manager`], over a persisted catalog in `dir`.
fn manager_with_cache(store: &Arc<dyn TokenStore>, dir: &std::path::Path) -> RuntimeManager {
    let logins = StoredLogins::new(store.clone(), hint());
    let connector = DefaultConnector::new().with_authorizers(Arc::new(logins));
    let options = RuntimeOptions::default()
        .retry_backoff(Duration::ZERO, Duration::ZERO)
        .catalog_cache(mcp_stack_runtime::CatalogCache::in_dir(dir));
    RuntimeManager::with_connector(options, Arc::new(connector))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_fetched_with_a_users_login_is_never_handed_to_another_user_from_the_cache() {
    let server = oauth_server().await;
    let url = server.url();
    // No `oauth` block and no header: only the connector's authorizer
    // makes this server's answers a user's own.
    let cfg = kit_config(&url);
    let store: Arc<dyn TokenStore> = Arc::new(MemoryStore::new());
    log_in_as(&url, &store, "alice").await;
    let dir = std::env::temp_dir().join(format!("mcp-runtime-private-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    let first = manager_with_cache(&store, &dir);
    let alice = first.acquire_as("alice", "alice-1", &cfg).await.unwrap();
    assert!(!alice.catalog().tools().is_empty());
    drop(alice);
    first.dispose_all().await;

    // A new process: Alice's catalog comes from the cache at once …
    let second = manager_with_cache(&store, &dir);
    let alice = second.acquire_as("alice", "alice-2", &cfg).await.unwrap();
    assert!(
        alice
            .catalog()
            .tools()
            .iter()
            .any(|t| t.status() == mcp_stack_runtime::ToolStatus::Connecting),
        "alice's catalog was not read from the cache"
    );
    // … and Bob, who has no login, gets none of it: his server fails to
    // start, with nothing listed.
    let bob = second.acquire_as("bob", "bob-1", &cfg).await.unwrap();
    assert!(
        bob.catalog().tools().is_empty(),
        "bob was handed alice's tools: {:?}",
        bob.catalog()
            .tools()
            .iter()
            .map(|t| t.name().to_owned())
            .collect::<Vec<_>>()
    );
    assert!(bob.catalog().failures().iter().any(|f| f.server == "kit"));
    drop((alice, bob));
    second.dispose_all().await;
    let _ = std::fs::remove_dir_all(&dir);
}
