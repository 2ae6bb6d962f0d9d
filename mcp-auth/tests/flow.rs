//! The OAuth client driven end to end: a real `Session` over streamable
//! HTTP (and legacy HTTP+SSE) with an `OAuthClient` as the transport's
//! authorizer, against the testkit's OAuth-protected server and its own
//! authorization server. Every assertion is on what the server counted or
//! on the client's errors; time moves with `advance_clock`, never a sleep.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_stack_auth::Secret;
use mcp_stack_auth::agent::{FollowRedirect, UserAgent};
use mcp_stack_auth::client::{Grant, OAuthClient, OAuthConfig};
use mcp_stack_auth::store::{FileStore, MemoryStore, TokenStore};
use mcp_stack_session::{Session, SessionConfig, SessionError};
use mcp_stack_testkit::http::{
    HttpMode, HttpServer, HttpServerOptions, OAuthMisbehaviour, OAuthOptions, OAuthStats,
};
use mcp_stack_transport::http::{HttpOptions, SseTransport, StreamableHttpTransport, WebClient};
use serde_json::json;

/// Any loopback redirect URI: `FollowRedirect` never listens on it, it
/// reads the authorization server's 302 `Location`.
const REDIRECT: &str = "http://127.0.0.1:9/callback";
/// The login hint a `LoginRequired` error must carry.
const HINT: &str = "run `mcp login --url <the test server>`";

async fn start(oauth: OAuthOptions) -> HttpServer {
    start_with(HttpServerOptions::default().with_oauth(oauth)).await
}

async fn start_with(options: HttpServerOptions) -> HttpServer {
    HttpServer::start(options).await.unwrap()
}

fn follow() -> Arc<dyn UserAgent> {
    let web = WebClient::new(&HttpOptions::new()).unwrap();
    Arc::new(FollowRedirect::new(web, REDIRECT))
}

fn config(url: &str) -> OAuthConfig {
    OAuthConfig::new(url).login_hint(HINT)
}

fn client_with(
    config: OAuthConfig,
    store: Arc<dyn TokenStore>,
    agent: Option<Arc<dyn UserAgent>>,
) -> OAuthClient {
    OAuthClient::new(config, &HttpOptions::new(), store, agent).unwrap()
}

fn client(url: &str, store: Arc<dyn TokenStore>, agent: Option<Arc<dyn UserAgent>>) -> OAuthClient {
    client_with(config(url), store, agent)
}

fn memory() -> Arc<dyn TokenStore> {
    Arc::new(MemoryStore::new())
}

fn options(client: &OAuthClient) -> HttpOptions {
    HttpOptions::new()
        .request_timeout(Duration::from_secs(10))
        .authorizer(Arc::new(client.clone()))
}

async fn connect(url: &str, client: &OAuthClient) -> Result<Session, SessionError> {
    let transport = StreamableHttpTransport::connect(url, options(client)).await?;
    Session::connect(transport, SessionConfig::new()).await
}

fn n(counter: &AtomicUsize) -> usize {
    counter.load(Ordering::SeqCst)
}

/// The value of a query parameter of the `i`th authorize request.
fn authorize_param(stats: &OAuthStats, i: usize, name: &str) -> Option<String> {
    stats.authorize_requests.lock().unwrap()[i]
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

fn authorize_requests(stats: &OAuthStats) -> usize {
    stats.authorize_requests.lock().unwrap().len()
}

fn token_requests(stats: &OAuthStats) -> usize {
    stats.token_requests.lock().unwrap().len()
}

async fn echo(session: &Session, text: &str) -> Result<String, SessionError> {
    let r = session.call_tool("echo", json!({"text": text})).await?;
    assert!(!r.is_error(), "{}", r.text());
    Ok(r.text())
}

/// Waits (bounded) until `f` holds; for things that happen on a spawned
/// task, such as the GET stream opening.
async fn until(what: &str, f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A fresh folder under the system's temp folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mcp-auth-flow-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// a. The whole flow.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_flow_registers_authorizes_once_and_every_request_carries_the_token() {
    let server = start(OAuthOptions::new()).await;
    let url = server.url();
    let store = memory();
    let oauth = client(&url, store.clone(), Some(follow()));
    let session = connect(&url, &oauth).await.unwrap();
    let tools = session.list_tools().await.unwrap();
    assert!(tools.get("echo").is_some());
    assert_eq!(echo(&session, "hi").await.unwrap(), "hi");
    // The GET stream is opened by a task of its own after the handshake.
    let stats = server.stats();
    until("the GET stream opened", || n(&stats.get_streams) >= 1).await;
    session.close().await;

    let o = &stats.oauth;
    assert_eq!(n(&o.registrations), 1);
    assert_eq!(n(&o.authorizations), 1);
    assert_eq!(n(&o.code_grants), 1);
    assert_eq!(n(&o.refresh_grants), 0);
    assert_eq!(token_requests(o), 1, "one token request: the code grant");
    // Only the very first request went without a token: the server checks
    // the token before routing, so the GET stream and the DELETE, counted
    // by the routes, carried a valid one.
    assert_eq!(n(&o.unauthorized), 1);
    assert_eq!(n(&o.forbidden), 0);
    assert_eq!(n(&stats.get_streams), 1);
    assert_eq!(n(&stats.deletes), 1, "the DELETE at close was authorized");
    assert_eq!(n(&stats.initializes), 1);
    // Every POST that reached the MCP server, the GET and the DELETE.
    assert!(
        n(&o.authorized) >= n(&stats.posts) + n(&stats.get_streams) + n(&stats.deletes),
        "authorized {} < posts {} + gets {} + deletes {}",
        n(&o.authorized),
        n(&stats.posts),
        n(&stats.get_streams),
        n(&stats.deletes)
    );

    // The authorization request: RFC 8707 resource, PKCE S256, state.
    assert_eq!(authorize_requests(o), 1);
    assert_eq!(
        authorize_param(o, 0, "resource").as_deref(),
        Some(url.as_str())
    );
    assert_eq!(
        authorize_param(o, 0, "code_challenge_method").as_deref(),
        Some("S256")
    );
    assert!(authorize_param(o, 0, "code_challenge").is_some_and(|c| c.len() >= 43));
    assert!(authorize_param(o, 0, "state").is_some_and(|s| !s.is_empty()));
    assert_eq!(
        authorize_param(o, 0, "redirect_uri").as_deref(),
        Some(REDIRECT)
    );
    assert_eq!(authorize_param(o, 0, "scope").as_deref(), Some("mcp"));
    // The code grant named the resource and carried the verifier.
    let form = o.token_requests.lock().unwrap()[0].clone();
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    assert_eq!(field("grant_type").as_deref(), Some("authorization_code"));
    assert_eq!(field("resource").as_deref(), Some(url.as_str()));
    assert!(field("code_verifier").is_some());

    // The login is stored under the server's canonical URI and issuer.
    let stored = store.list().await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].server, url);
    assert_eq!(Some(stored[0].issuer.clone()), server.issuer());
    assert!(stored[0].tokens.is_some());
    assert_eq!(stored[0].client.as_ref().unwrap().source, "dynamic");
}

// b. Refresh.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_refreshed_once_on_the_401_without_a_new_authorization() {
    let server = start(OAuthOptions::new().access_token_lifetime(600)).await;
    let url = server.url();
    let oauth = client(&url, memory(), Some(follow()));
    let session = connect(&url, &oauth).await.unwrap();
    assert_eq!(echo(&session, "one").await.unwrap(), "one");
    let o = &server.stats().oauth;
    assert_eq!(n(&o.unauthorized), 1);

    // Past expiry on the server's clock (the client still thinks it fresh).
    server.advance_clock(Duration::from_secs(601));
    assert_eq!(echo(&session, "two").await.unwrap(), "two");
    assert_eq!(n(&o.refresh_grants), 1);
    assert_eq!(o.token_requests_for("refresh_token"), 1);
    assert_eq!(n(&o.authorizations), 1, "no new authorization");
    assert_eq!(n(&o.registrations), 1);
    // The expired token was refused once: that 401 caused the refresh.
    assert_eq!(n(&o.unauthorized), 2);
    // The refreshed token keeps working.
    assert_eq!(echo(&session, "three").await.unwrap(), "three");
    assert_eq!(n(&o.refresh_grants), 1);
    assert_eq!(n(&o.unauthorized), 2);
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
    let server = start(OAuthOptions::new()).await;
    let url = server.url();
    let store = memory();
    client(&url, store.clone(), Some(follow()))
        .login()
        .await
        .unwrap();
    let o = &server.stats().oauth;
    assert_eq!(n(&o.code_grants), 1);
    // The stored token expires within the refresh margin (on the
    // client's clock, the one it decides by).
    let mut entry = store.list().await.unwrap().remove(0);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // Issued an hour ago, five seconds left.
    entry.tokens.as_mut().unwrap().expires_at = Some(now + 5);
    entry.updated_at = now - 3600;
    store.save(&entry).await.unwrap();

    // A client started from the store refreshes before its first request.
    let oauth = client(&url, store.clone(), None);
    let session = connect(&url, &oauth).await.unwrap();
    assert_eq!(echo(&session, "hi").await.unwrap(), "hi");
    session.close().await;
    assert_eq!(n(&o.refresh_grants), 1);
    assert_eq!(n(&o.authorizations), 1);
    // The login's probe was the only request ever refused: the old token
    // was never sent.
    assert_eq!(n(&o.unauthorized), 1);
    let stored = store.list().await.unwrap().remove(0).tokens.unwrap();
    assert!(
        stored.expires_at.unwrap() > now + 60,
        "the refreshed token was stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_lived_token_is_used_rather_than_refreshed_before_every_request() {
    let server = start(OAuthOptions::new().access_token_lifetime(30)).await;
    let url = server.url();
    let oauth = client(&url, memory(), Some(follow()));
    let session = connect(&url, &oauth).await.unwrap();
    for text in ["a", "b", "c"] {
        assert_eq!(echo(&session, text).await.unwrap(), text);
    }
    session.close().await;
    let o = &server.stats().oauth;
    assert_eq!(n(&o.authorizations), 1);
    // Nothing expired on the server's clock: no refresh was needed.
    assert_eq!(n(&o.unauthorized), 1);
    assert_eq!(
        n(&o.refresh_grants),
        0,
        "refreshed a 30 s token that was still good"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_the_server_never_accepts_end_in_an_error_not_a_loop() {
    let server = start(OAuthOptions::new().misbehave(OAuthMisbehaviour::ExpireImmediately)).await;
    let url = server.url();
    let err = connect(&url, &client(&url, memory(), Some(follow())))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("needs authorization"), "{err}");
    let o = &server.stats().oauth;
    // Bounded by the transport's retries of the one refused request.
    let bound = 1 + mcp_stack_transport::http::auth::MAX_AUTH_RETRIES as usize;
    assert!(
        token_requests(o) <= bound,
        "{} token requests",
        token_requests(o)
    );
    assert!(
        n(&o.unauthorized) <= bound,
        "{} refusals",
        n(&o.unauthorized)
    );
    assert!(
        n(&o.authorizations) <= 3,
        "{} authorizations",
        n(&o.authorizations)
    );
}

// c. A revoked login.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_login_without_a_user_agent_says_to_log_in_and_does_not_loop() {
    let server = start(OAuthOptions::new()).await;
    let url = server.url();
    let store = memory();
    client(&url, store.clone(), Some(follow()))
        .login()
        .await
        .unwrap();
    let o = &server.stats().oauth;

    // A client without a user agent (as the runtime has) uses the login.
    let headless = client(&url, store.clone(), None);
    let session = connect(&url, &headless).await.unwrap();
    assert_eq!(echo(&session, "before").await.unwrap(), "before");
    assert_eq!((n(&o.authorizations), token_requests(o)), (1, 1));

    server.revoke_tokens();
    let err = echo(&session, "after").await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains(HINT), "{text}");
    // One refresh was tried (refused), no authorization: no loop.
    assert_eq!(n(&o.authorizations), 1);
    assert_eq!(authorize_requests(o), 1);
    assert_eq!(token_requests(o), 2);
    assert_eq!(o.token_requests_for("refresh_token"), 1);
    assert_eq!(o.token_errors.lock().unwrap().as_slice(), ["invalid_grant"]);
    // Again: the forgotten tokens are not refreshed again; still the hint.
    let err = echo(&session, "again").await.unwrap_err();
    assert!(err.to_string().contains(HINT), "{err}");
    assert_eq!(token_requests(o), 2);
    assert_eq!(authorize_requests(o), 1);
    session.close().await;

    // With a user agent it authorizes again, once, reusing the registration.
    let with_agent = client(&url, store.clone(), Some(follow()));
    let session = connect(&url, &with_agent).await.unwrap();
    assert_eq!(echo(&session, "back").await.unwrap(), "back");
    session.close().await;
    assert_eq!(n(&o.authorizations), 2);
    assert_eq!(n(&o.code_grants), 2);
    assert_eq!(n(&o.registrations), 1, "the stored registration was reused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_login_with_a_user_agent_reauthorizes_once_and_the_call_succeeds() {
    let server = start(OAuthOptions::new()).await;
    let url = server.url();
    let oauth = client(&url, memory(), Some(follow()));
    let session = connect(&url, &oauth).await.unwrap();
    assert_eq!(echo(&session, "before").await.unwrap(), "before");
    let o = &server.stats().oauth;
    assert_eq!(n(&o.authorizations), 1);

    server.revoke_tokens();
    assert_eq!(echo(&session, "after").await.unwrap(), "after");
    assert_eq!(n(&o.authorizations), 2);
    assert_eq!(
        o.token_requests_for("refresh_token"),
        1,
        "tried once, refused"
    );
    assert_eq!(n(&o.refresh_grants), 0);
    assert_eq!(n(&o.code_grants), 2);
    assert_eq!(n(&o.registrations), 1);
    session.close().await;
}

// d. Step-up.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_403_insufficient_scope_steps_up_to_the_union_of_scopes() {
    let server = start(OAuthOptions::new().tool_scope("add", "math")).await;
    let url = server.url();
    let oauth = client(&url, memory(), Some(follow()));
    let session = connect(&url, &oauth).await.unwrap();
    assert_eq!(echo(&session, "hi").await.unwrap(), "hi");
    let o = &server.stats().oauth;
    assert_eq!(authorize_param(o, 0, "scope").as_deref(), Some("mcp"));

    let r = session
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(!r.is_error(), "{}", r.text());
    assert!(r.text().contains('5'), "{}", r.text());
    assert_eq!(n(&o.forbidden), 1);
    assert_eq!(n(&o.authorizations), 2);
    let scope = authorize_param(o, 1, "scope").unwrap();
    let scopes: Vec<&str> = scope.split(' ').collect();
    assert!(
        scopes.contains(&"mcp") && scopes.contains(&"math"),
        "the step-up asked for {scope:?}"
    );
    // The new token serves both.
    let r = session
        .call_tool("add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert!(r.text().contains('2'), "{}", r.text());
    assert_eq!(echo(&session, "still").await.unwrap(), "still");
    assert_eq!(n(&o.forbidden), 1);
    assert_eq!(n(&o.authorizations), 2);
    session.close().await;
}

// e. Refusals.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_naming_another_issuer_is_refused_before_any_token_request() {
    let server = start(OAuthOptions::new().misbehave(OAuthMisbehaviour::WrongIssuer)).await;
    let url = server.url();
    let err = connect(&url, &client(&url, memory(), Some(follow())))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("issuer") || text.contains("identifies itself"),
        "{text}"
    );
    assert!(text.contains("wrong-issuer.invalid"), "{text}");
    let o = &server.stats().oauth;
    assert_eq!(token_requests(o), 0);
    assert_eq!(authorize_requests(o), 0);
    assert_eq!(n(&o.registrations), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authorization_server_without_pkce_is_refused_before_authorizing() {
    let server = start(OAuthOptions::new().misbehave(OAuthMisbehaviour::NoPkce)).await;
    let url = server.url();
    let err = connect(&url, &client(&url, memory(), Some(follow())))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("PKCE"), "{err}");
    let o = &server.stats().oauth;
    assert_eq!(authorize_requests(o), 0);
    assert_eq!(token_requests(o), 0);
    assert_eq!(n(&o.registrations), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authorization_response_with_the_wrong_iss_is_refused() {
    let server = start(OAuthOptions::new().misbehave(OAuthMisbehaviour::WrongIss)).await;
    let url = server.url();
    let err = connect(&url, &client(&url, memory(), Some(follow())))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("wrong-issuer.invalid"), "{text}");
    let o = &server.stats().oauth;
    // The server issued a code; the client never exchanged it.
    assert_eq!(n(&o.authorizations), 1);
    assert_eq!(token_requests(o), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authorization_response_missing_the_promised_iss_is_refused() {
    let server = start(OAuthOptions::new().misbehave(OAuthMisbehaviour::NoIss)).await;
    let url = server.url();
    let err = connect(&url, &client(&url, memory(), Some(follow())))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no `iss`"), "{err}");
    let o = &server.stats().oauth;
    assert_eq!(n(&o.authorizations), 1);
    assert_eq!(token_requests(o), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_metadata_for_another_resource_is_refused_before_authorizing() {
    let server = start(OAuthOptions::new().misbehave(OAuthMisbehaviour::WrongResource)).await;
    let url = server.url();
    let err = connect(&url, &client(&url, memory(), Some(follow())))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("protected resource metadata"), "{text}");
    let o = &server.stats().oauth;
    assert_eq!(n(&o.resource_metadata_fetches), 1);
    assert_eq!(n(&o.server_metadata_fetches), 0);
    assert_eq!(n(&o.registrations), 0);
    assert_eq!(authorize_requests(o), 0);
    assert_eq!(token_requests(o), 0);
}

// f. Two processes, one file store, rotating refresh tokens.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_sharing_a_file_store_spend_a_rotating_refresh_token_once() {
    let server = start(OAuthOptions::new().rotate_refresh_tokens(true)).await;
    let url = server.url();
    let dir = TempDir::new("shared");
    let store_a: Arc<dyn TokenStore> = Arc::new(FileStore::new(&dir.0));
    let store_b: Arc<dyn TokenStore> = Arc::new(FileStore::new(&dir.0));

    let a = client(&url, store_a, Some(follow()));
    let session_a = connect(&url, &a).await.unwrap();
    assert_eq!(echo(&session_a, "a1").await.unwrap(), "a1");
    // B starts from the store now: it holds A's first token.
    let b = client(&url, store_b, None);
    let session_b = connect(&url, &b).await.unwrap();
    assert_eq!(echo(&session_b, "b1").await.unwrap(), "b1");
    let o = &server.stats().oauth;
    assert_eq!((n(&o.authorizations), n(&o.refresh_grants)), (1, 0));

    server.advance_clock(Duration::from_secs(3601));
    assert_eq!(echo(&session_a, "a2").await.unwrap(), "a2");
    assert_eq!(n(&o.refresh_grants), 1);
    // B's token is expired too: it must adopt what A wrote, not spend the
    // refresh token A's refresh rotated out.
    assert_eq!(echo(&session_b, "b2").await.unwrap(), "b2");
    assert_eq!(n(&o.refresh_grants), 1, "B refreshed as well");
    assert_eq!(o.token_requests_for("refresh_token"), 1);
    assert!(o.token_errors.lock().unwrap().is_empty());
    assert_eq!(n(&o.authorizations), 1);
    session_a.close().await;
    session_b.close().await;
}

// g. Client credentials.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_need_no_authorization_request() {
    let server = start(OAuthOptions::new().preregistered_client(
        "svc",
        Some("s3cret"),
        Vec::<String>::new(),
    ))
    .await;
    let url = server.url();
    let config = config(&url)
        .client("svc", Some(Secret::new("s3cret")))
        .grant(Grant::ClientCredentials);
    let oauth = client_with(config, memory(), None);
    let session = connect(&url, &oauth).await.unwrap();
    assert_eq!(echo(&session, "hi").await.unwrap(), "hi");
    let o = &server.stats().oauth;
    assert_eq!(authorize_requests(o), 0);
    assert_eq!(n(&o.client_credentials_grants), 1);
    assert_eq!(token_requests(o), 1);
    assert_eq!(n(&o.registrations), 0);
    assert_eq!(n(&o.unauthorized), 1);

    // No refresh token: once expired, the grant is simply run again.
    server.advance_clock(Duration::from_secs(3601));
    assert_eq!(echo(&session, "later").await.unwrap(), "later");
    assert_eq!(n(&o.client_credentials_grants), 2);
    assert_eq!(n(&o.refresh_grants), 0);
    assert_eq!(authorize_requests(o), 0);
    session.close().await;
}

// h. Legacy HTTP+SSE.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_sse_is_authorized_end_to_end() {
    let server = start_with(
        HttpServerOptions {
            mode: HttpMode::Both,
            ..HttpServerOptions::default()
        }
        .with_oauth(OAuthOptions::new()),
    )
    .await;
    let sse_url = format!("http://{}/sse", server.addr());
    let oauth = client(&sse_url, memory(), Some(follow()));
    let transport = SseTransport::connect(&sse_url, options(&oauth))
        .await
        .unwrap();
    let session = Session::connect(transport, SessionConfig::new())
        .await
        .unwrap();
    assert_eq!(echo(&session, "sse").await.unwrap(), "sse");
    session.close().await;
    let stats = server.stats();
    let o = &stats.oauth;
    assert_eq!(n(&stats.legacy_streams), 1);
    assert_eq!(
        n(&o.unauthorized),
        1,
        "only the first GET went without a token"
    );
    assert_eq!(n(&o.authorizations), 1);
    assert_eq!(
        authorize_param(o, 0, "resource").as_deref(),
        Some(sse_url.as_str())
    );
    // The stream GET (after the first, refused) and every POST carried it.
    assert!(n(&o.authorized) >= n(&stats.legacy_streams) + n(&stats.posts));
}
