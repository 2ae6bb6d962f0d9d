//! The PostgreSQL token store against a real PostgreSQL: the URL comes from
//! `MCP_TEST_POSTGRES_URL` (`.ci/postgres.sh` starts a server and runs these
//! tests). Each test works in its own schema, so they run in parallel.
//! Built only with the `postgres` feature:
//! `cargo test -p mcp-stack-auth --features postgres --test postgres`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_stack_auth::Secret;
use mcp_stack_auth::agent::{FollowRedirect, UserAgent};
use mcp_stack_auth::client::{OAuthClient, OAuthConfig};
use mcp_stack_auth::store::{
    HeldLock, LoginKey, PostgresOptions, PostgresStore, SealingKey, SealingKeys, StoreError,
    StoreFuture, StoreLock, StoredAuth, StoredClient, StoredTokens, TokenStore,
};
use mcp_stack_session::{Session, SessionConfig};
use mcp_stack_testkit::http::{HttpServer, HttpServerOptions, OAuthOptions};
use mcp_stack_transport::http::{HttpOptions, StreamableHttpTransport, WebClient};
use serde_json::json;

const REDIRECT: &str = "http://127.0.0.1:9/callback";

fn url() -> String {
    match std::env::var("MCP_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "MCP_TEST_POSTGRES_URL is not set: these tests need a PostgreSQL server. Run \
             `.ci/postgres.sh` (it installs PostgreSQL if missing, starts one on 127.0.0.1 and \
             runs these tests), or point MCP_TEST_POSTGRES_URL at a database you may create \
             schemas in."
        ),
    }
}

/// The CA that signed the test server's certificate (PEM), from
/// `MCP_TEST_POSTGRES_CA` (`.ci/postgres.sh` makes one and turns TLS on).
fn ca_pem() -> String {
    let path = std::env::var("MCP_TEST_POSTGRES_CA").unwrap_or_default();
    if path.is_empty() {
        panic!(
            "MCP_TEST_POSTGRES_CA is not set: the TLS test needs the CA of a PostgreSQL server \
             with TLS on. `.ci/postgres.sh` makes one and sets it."
        );
    }
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// A schema of this test's own.
fn schema(test: &str) -> String {
    format!("t_{test}_{}", std::process::id())
}

fn keys(id: &str, byte: u8) -> SealingKeys {
    SealingKeys::new(SealingKey::new(id, [byte; 32]).unwrap())
}

async fn store_with(schema: &str, keys: SealingKeys, app: &str) -> PostgresStore {
    let mut options = PostgresOptions::new(url(), keys)
        .schema(schema)
        .pool_size(4)
        .application_name(app);
    // Over TLS where the server has it (`.ci/postgres.sh` turns it on):
    // every test then goes through the store's TLS connector.
    if std::env::var_os("MCP_TEST_POSTGRES_CA").is_some() {
        options = options.ca_pem(ca_pem());
    }
    PostgresStore::connect(options).await.unwrap()
}

async fn store(schema: &str) -> PostgresStore {
    store_with(schema, keys("k1", 1), &format!("mcp-test-{schema}")).await
}

/// A plain connection for looking at (and breaking) things.
async fn admin() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// Terminates the backends of `app` that hold an advisory lock; how many.
async fn kill_lock_holders(admin: &tokio_postgres::Client, app: &str) -> i64 {
    let row = admin
        .query_one(
            // With a timeout the call waits until the backend is gone, so
            // the next statement of the killed session cannot slip in first.
            "SELECT count(pg_terminate_backend(a.pid, 10000)) FROM pg_stat_activity a
             WHERE a.application_name = $1 AND a.pid IN
               (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)",
            &[&app],
        )
        .await
        .unwrap();
    row.get(0)
}

/// Waits (bounded) until a backend of `app` waits for an advisory lock.
async fn until_waiting(admin: &tokio_postgres::Client, app: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let row = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
                 WHERE a.application_name = $1 AND l.locktype = 'advisory' AND NOT l.granted",
                &[&app],
            )
            .await
            .unwrap();
        if row.get::<_, i64>(0) > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "{app} never waited for the lock");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn entry(identity: &str, server: &str, token: &str) -> StoredAuth {
    let mut e = StoredAuth::new(server, "https://as.example").for_identity(identity);
    e.client = Some(StoredClient::new("c1", "dynamic"));
    let mut tokens = StoredTokens::bearer(Secret::new(token));
    tokens.refresh_token = Some(Secret::new(format!("refresh-{token}")));
    tokens.dpop_key = Some(Secret::new(format!("dpop-key-{token}")));
    e.tokens = Some(tokens);
    e.updated_at = 7;
    e
}

fn token(e: &StoredAuth) -> String {
    e.tokens.as_ref().unwrap().access_token.expose().to_owned()
}

#[tokio::test]
async fn postgres_store_keeps_logins_per_identity_sealed_at_rest() {
    let schema = schema("identities");
    let store = store(&schema).await;
    let s = "https://mcp.example/mcp";
    store
        .save(&entry("alice", s, "alice-secret"))
        .await
        .unwrap();
    store.save(&entry("bob", s, "bob-secret")).await.unwrap();
    store.save(&entry("", s, "solo-secret")).await.unwrap();
    let alice = store.load("alice", s).await.unwrap();
    assert_eq!(alice.len(), 1);
    assert_eq!(alice[0], entry("alice", s, "alice-secret"));
    assert_eq!(token(&store.load("bob", s).await.unwrap()[0]), "bob-secret");
    assert!(store.load("carol", s).await.unwrap().is_empty());
    assert_eq!(store.list().await.unwrap().len(), 3);

    // Nothing secret is stored in clear; the key id is.
    let admin = admin().await;
    let rows = admin
        .query(
            &format!("SELECT key_id, sealed FROM \"{schema}\".logins"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        assert_eq!(row.get::<_, String>(0), "k1");
        let sealed: Vec<u8> = row.get(1);
        for needle in [&b"secret"[..], b"dpop-key", b"refresh-"] {
            assert!(!sealed.windows(needle.len()).any(|w| w == needle));
        }
    }

    assert_eq!(store.remove("alice", s, None).await.unwrap(), 1);
    assert!(store.load("alice", s).await.unwrap().is_empty());
    assert_eq!(store.load("bob", s).await.unwrap().len(), 1);
}

#[tokio::test]
async fn postgres_schema_is_made_once_when_replicas_start_together() {
    let schema = schema("migrate");
    let starts = (0..4).map(|i| {
        let schema = schema.clone();
        tokio::spawn(async move { store_with(&schema, keys("k1", 1), &format!("m{i}")).await })
    });
    for start in starts {
        start.await.unwrap();
    }
    let admin = admin().await;
    let row = admin
        .query_one(
            &format!("SELECT count(*), max(version) FROM \"{schema}\".schema_version"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 1, "the migration ran once");
    assert_eq!(row.get::<_, Option<i32>>(1), Some(1));
    // A later start finds nothing to do.
    store(&schema).await;
    let again = admin
        .query_one(
            &format!("SELECT count(*) FROM \"{schema}\".schema_version"),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(again.get::<_, i64>(0), 1);
}

#[tokio::test]
async fn postgres_lock_excludes_another_replica_until_the_write_commits() {
    let schema = schema("lock");
    let s = "https://mcp.example/mcp";
    let a = store_with(&schema, keys("k1", 1), &format!("{schema}-a")).await;
    let b = store_with(&schema, keys("k1", 1), &format!("{schema}-b")).await;
    a.save(&entry("alice", s, "t1")).await.unwrap();
    let key = LoginKey::new("alice", s, "https://as.example");

    let mut held = a.lock(&key).await.unwrap();
    let waiter = {
        let b = b.clone();
        let key = key.clone();
        tokio::spawn(async move {
            let mut lock = b.lock(&key).await.unwrap();
            let seen = lock.load().await.unwrap().unwrap();
            lock.release().await.unwrap();
            token(&seen)
        })
    };
    let admin = admin().await;
    until_waiting(&admin, &format!("{schema}-b")).await;
    // Another identity's lock is not held up.
    let other = LoginKey::new("bob", s, "https://as.example");
    b.lock(&other).await.unwrap().release().await.unwrap();

    held.save(&entry("alice", s, "t2")).await.unwrap();
    held.release().await.unwrap();
    // B waited, then read what A wrote in its locked transaction.
    assert_eq!(waiter.await.unwrap(), "t2");
}

#[tokio::test]
async fn postgres_lock_of_a_crashed_replica_is_released_by_the_database() {
    let schema = schema("crash");
    let s = "https://mcp.example/mcp";
    let app_a = format!("{schema}-a");
    let a = store_with(&schema, keys("k1", 1), &app_a).await;
    let b = store_with(&schema, keys("k1", 1), &format!("{schema}-b")).await;
    a.save(&entry("alice", s, "t1")).await.unwrap();
    let key = LoginKey::new("alice", s, "https://as.example");

    let mut held = a.lock(&key).await.unwrap();
    held.save(&entry("alice", s, "half-written")).await.unwrap();
    let waiter = {
        let key = key.clone();
        tokio::spawn(async move {
            let mut lock = b.lock(&key).await.unwrap();
            let seen = lock.load().await.unwrap().unwrap();
            lock.release().await.unwrap();
            token(&seen)
        })
    };
    let admin = admin().await;
    until_waiting(&admin, &format!("{schema}-b")).await;
    // A's backend dies (as with its replica): the database frees the lock
    // and forgets the uncommitted write.
    assert_eq!(kill_lock_holders(&admin, &app_a).await, 1);
    assert_eq!(waiter.await.unwrap(), "t1");
    let err = held.release().await.unwrap_err();
    assert!(matches!(err, StoreError::Database { .. }), "{err}");
    assert!(err.to_string().contains("nothing was written"), "{err}");
    // A's pool recovers: the next lock works.
    let mut again = a.lock(&key).await.unwrap();
    again.save(&entry("alice", s, "t3")).await.unwrap();
    again.release().await.unwrap();
    assert_eq!(token(&a.load("alice", s).await.unwrap()[0]), "t3");
}

#[tokio::test]
async fn postgres_rows_under_a_wrong_or_unknown_key_or_damaged_are_typed_errors() {
    let schema = schema("keys");
    let s = "https://mcp.example/mcp";
    store(&schema)
        .await
        .save(&entry("alice", s, "t1"))
        .await
        .unwrap();

    let wrong = store_with(&schema, keys("k1", 2), "wrong").await;
    let err = wrong.load("alice", s).await.unwrap_err();
    assert!(matches!(err, StoreError::WrongKey { .. }), "{err}");
    assert!(err.to_string().contains("`k1`"), "{err}");

    let unknown = store_with(&schema, keys("k2", 1), "unknown").await;
    let err = unknown.load("alice", s).await.unwrap_err();
    assert!(matches!(err, StoreError::UnknownKey { .. }), "{err}");

    // Rotated: k2 writes, k1 still reads; rewritten rows carry k2.
    let rotated = store_with(
        &schema,
        keys("k2", 9).with_older(SealingKey::new("k1", [1; 32]).unwrap()),
        "rotated",
    )
    .await;
    let mut e = rotated.load("alice", s).await.unwrap().remove(0);
    assert_eq!(token(&e), "t1");
    e.updated_at = 8;
    rotated.save(&e).await.unwrap();
    let admin = admin().await;
    let table = format!("\"{schema}\".logins");
    let key_id: String = admin
        .query_one(&format!("SELECT key_id FROM {table}"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(key_id, "k2");

    // A damaged row: an error, never garbage.
    admin
        .execute(
            &format!("UPDATE {table} SET sealed = 'garbage'::bytea"),
            &[],
        )
        .await
        .unwrap();
    let err = rotated.load("alice", s).await.unwrap_err();
    assert!(matches!(err, StoreError::WrongKey { .. }), "{err}");
    admin
        .execute(&format!("UPDATE {table} SET nonce = '\\x00'::bytea"), &[])
        .await
        .unwrap();
    let err = rotated.list().await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("log in again"), "{err}");
}

// The OAuth client over the store, against the testkit's servers.

async fn oauth_server(lifetime: u64) -> HttpServer {
    let oauth = OAuthOptions::new()
        .rotate_refresh_tokens(true)
        .access_token_lifetime(lifetime);
    HttpServer::start(HttpServerOptions::default().with_oauth(oauth))
        .await
        .unwrap()
}

fn oauth(url: &str, identity: &str, store: Arc<dyn TokenStore>, login: bool) -> OAuthClient {
    let agent: Option<Arc<dyn UserAgent>> = login.then(|| {
        let web = WebClient::new(&HttpOptions::new()).unwrap();
        Arc::new(FollowRedirect::new(web, REDIRECT)) as Arc<dyn UserAgent>
    });
    let config = OAuthConfig::new(url).identity(identity);
    OAuthClient::new(config, &HttpOptions::new(), store, agent).unwrap()
}

async fn session(url: &str, client: &OAuthClient) -> Session {
    session_with(url, client, HttpOptions::new()).await
}

async fn session_with(url: &str, client: &OAuthClient, options: HttpOptions) -> Session {
    let options = options.authorizer(Arc::new(client.clone()));
    let transport = StreamableHttpTransport::connect(url, options)
        .await
        .unwrap();
    Session::connect(transport, SessionConfig::new())
        .await
        .unwrap()
}

async fn echo(session: &Session, text: &str) -> Result<String, String> {
    let r = session
        .call_tool("echo", json!({"text": text}))
        .await
        .map_err(|e| e.to_string())?;
    Ok(r.text())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_replicas_refresh_a_rotating_token_once_per_expiry() {
    let schema = schema("replicas");
    let server = oauth_server(1).await;
    let url = server.url();
    // Alice logs in once (through one replica); every replica then uses it.
    let first: Arc<dyn TokenStore> = Arc::new(store(&schema).await);
    oauth(&url, "alice", first, true).login().await.unwrap();

    const REPLICAS: usize = 4;
    let run_for = Duration::from_secs(4);
    let started = Instant::now();
    let calls = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for r in 0..REPLICAS {
        let store: Arc<dyn TokenStore> =
            Arc::new(store_with(&schema, keys("k1", 1), &format!("{schema}-{r}")).await);
        let client = oauth(&url, "alice", store, false);
        let url = url.clone();
        let calls = calls.clone();
        tasks.push(tokio::spawn(async move {
            let session = session(&url, &client).await;
            let mut failures = Vec::new();
            let mut i = 0;
            while started.elapsed() < run_for {
                i += 1;
                match echo(&session, &format!("{r}-{i}")).await {
                    Ok(text) => assert_eq!(text, format!("{r}-{i}")),
                    Err(e) => failures.push(e),
                }
                calls.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            session.close().await;
            failures
        }));
    }
    for task in tasks {
        let failures = task.await.unwrap();
        assert!(failures.is_empty(), "calls failed: {failures:?}");
    }
    let elapsed = started.elapsed();
    let o = &server.stats().oauth;
    assert!(
        o.token_errors.lock().unwrap().is_empty(),
        "{:?}",
        o.token_errors
    );
    // Each refresh spent a refresh token nobody had spent (a second spend
    // of a rotated-out token would be `invalid_grant`).
    let spent: Vec<String> = o
        .token_requests
        .lock()
        .unwrap()
        .iter()
        .filter(|form| {
            form.iter()
                .any(|(k, v)| k == "grant_type" && v == "refresh_token")
        })
        .filter_map(|form| {
            form.iter()
                .find(|(k, _)| k == "refresh_token")
                .map(|(_, v)| v.clone())
        })
        .collect();
    let distinct: HashSet<&String> = spent.iter().collect();
    assert_eq!(
        distinct.len(),
        spent.len(),
        "a refresh token was spent twice"
    );
    let refreshes = o.refresh_grants.load(Ordering::SeqCst);
    assert_eq!(refreshes, spent.len());
    // One per expiry: a token lives a second, so no more refreshes than
    // seconds begun during the run (and some did happen).
    let seconds = elapsed.as_secs() as usize + 2;
    assert!(
        (2..=seconds).contains(&refreshes),
        "{refreshes} refreshes in {elapsed:?} ({} calls)",
        calls.load(Ordering::Relaxed)
    );
    assert_eq!(o.authorizations.load(Ordering::SeqCst), 1);
}

/// A store whose next locked write first loses its database connection.
#[derive(Debug, Clone)]
struct Flaky {
    inner: PostgresStore,
    app: String,
    armed: Arc<AtomicBool>,
}

#[derive(Debug)]
struct FlakyLock {
    inner: Option<StoreLock>,
    app: String,
    armed: Arc<AtomicBool>,
}

impl HeldLock for FlakyLock {
    fn load(&mut self) -> StoreFuture<'_, Option<StoredAuth>> {
        Box::pin(async move { self.inner.as_mut().unwrap().load().await })
    }

    fn save<'a>(&'a mut self, entry: &'a StoredAuth) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            if self.armed.swap(false, Ordering::SeqCst) {
                assert_eq!(kill_lock_holders(&admin().await, &self.app).await, 1);
            }
            self.inner.as_mut().unwrap().save(entry).await
        })
    }

    fn release(mut self: Box<Self>) -> StoreFuture<'static, ()> {
        let inner = self.inner.take().unwrap();
        Box::pin(inner.release())
    }
}

impl TokenStore for Flaky {
    fn load<'a>(&'a self, identity: &'a str, server: &'a str) -> StoreFuture<'a, Vec<StoredAuth>> {
        self.inner.load(identity, server)
    }
    fn save<'a>(&'a self, entry: &'a StoredAuth) -> StoreFuture<'a, ()> {
        self.inner.save(entry)
    }
    fn remove<'a>(
        &'a self,
        identity: &'a str,
        server: &'a str,
        issuer: Option<&'a str>,
    ) -> StoreFuture<'a, usize> {
        self.inner.remove(identity, server, issuer)
    }
    fn list(&self) -> StoreFuture<'_, Vec<StoredAuth>> {
        self.inner.list()
    }
    fn lock<'a>(&'a self, key: &'a LoginKey) -> StoreFuture<'a, StoreLock> {
        Box::pin(async move {
            Ok(StoreLock::new(FlakyLock {
                inner: Some(self.inner.lock(key).await?),
                app: self.app.clone(),
                armed: self.armed.clone(),
            }))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_lost_mid_refresh_fails_the_call_writes_nothing_and_the_next_call_recovers() {
    let schema = schema("midrefresh");
    let server = oauth_server(3600).await;
    let url = server.url();
    let app = format!("{schema}-flaky");
    let pg = store_with(&schema, keys("k1", 1), &app).await;
    let armed = Arc::new(AtomicBool::new(false));
    let store: Arc<dyn TokenStore> = Arc::new(Flaky {
        inner: pg.clone(),
        app,
        armed: armed.clone(),
    });
    let client = oauth(&url, "alice", store, true);
    client.login().await.unwrap();
    let before = token(&pg.load("alice", &server.url()).await.unwrap()[0]);
    // No GET stream: its reconnection would be a second request that
    // writes the kept tokens (the recovery this test checks on "three")
    // at a moment of its own choosing.
    let session = session_with(&url, &client, HttpOptions::new().get_stream(false)).await;
    assert_eq!(echo(&session, "one").await.unwrap(), "one");

    // The token expires; the refresh that follows loses the database
    // between spending the refresh token and writing the new one.
    armed.store(true, Ordering::SeqCst);
    server.advance_clock(Duration::from_secs(3601));
    let err = echo(&session, "two").await.unwrap_err();
    assert!(err.contains("token store database"), "{err}");
    let o = &server.stats().oauth;
    assert_eq!(o.refresh_grants.load(Ordering::SeqCst), 1);
    // Nothing half-written: the row is the one before the refresh.
    let stored = pg.load("alice", &server.url()).await.unwrap();
    assert_eq!(token(&stored[0]), before);

    // The next call writes the refreshed token first, then goes through.
    assert_eq!(echo(&session, "three").await.unwrap(), "three");
    let stored = pg.load("alice", &server.url()).await.unwrap();
    assert_ne!(token(&stored[0]), before);
    assert_eq!(o.refresh_grants.load(Ordering::SeqCst), 1);
    assert!(o.token_errors.lock().unwrap().is_empty());
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_two_identities_of_one_server_never_share_a_token() {
    let schema = schema("twousers");
    let server = oauth_server(3600).await;
    let url = server.url();
    let store: Arc<dyn TokenStore> = Arc::new(store(&schema).await);
    oauth(&url, "alice", store.clone(), true)
        .login()
        .await
        .unwrap();
    // Bob has no login: his client finds none, whatever Alice holds.
    let bob = oauth(&url, "bob", store.clone(), false);
    assert!(bob.stored().await.unwrap().is_empty());
    let transport = StreamableHttpTransport::connect(
        &url,
        HttpOptions::new().authorizer(Arc::new(bob.clone())),
    )
    .await
    .unwrap();
    let err = Session::connect(transport, SessionConfig::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("log in"), "{err}");
    let alice = oauth(&url, "alice", store, false);
    assert_eq!(alice.stored().await.unwrap().len(), 1);
    let s = session(&url, &alice).await;
    assert_eq!(echo(&s, "hi").await.unwrap(), "hi");
    s.close().await;
}

#[tokio::test]
async fn postgres_over_tls_trusts_the_platform_ca_and_refuses_an_unknown_one() {
    let schema = schema("tls");
    let app = format!("{schema}-tls");
    let sep = if url().contains('?') { '&' } else { '?' };
    let tls_url = format!("{}{sep}sslmode=require", url());
    let options = || {
        PostgresOptions::new(tls_url.clone(), keys("k1", 1))
            .schema(&schema)
            .pool_size(2)
            .application_name(&app)
    };
    // The throwaway CA is not in the web PKI: the server is not trusted.
    let err = PostgresStore::connect(options()).await.unwrap_err();
    assert!(matches!(err, StoreError::Database { .. }), "{err:?}");
    assert!(err.to_string().contains("certificate"), "{err}");
    assert!(err.to_string().contains("ca_pem"), "{err}");

    // With the platform's CA the store works, and its connections are TLS.
    let store = PostgresStore::connect(options().ca_pem(ca_pem()))
        .await
        .unwrap();
    let s = "https://mcp.example/mcp";
    store.save(&entry("alice", s, "over-tls")).await.unwrap();
    assert_eq!(token(&store.load("alice", s).await.unwrap()[0]), "over-tls");
    let row = admin()
        .await
        .query_one(
            "SELECT count(*), coalesce(bool_and(s.ssl), false) FROM pg_stat_ssl s
             JOIN pg_stat_activity a ON a.pid = s.pid WHERE a.application_name = $1",
            &[&app],
        )
        .await
        .unwrap();
    let (connections, all_tls): (i64, bool) = (row.get(0), row.get(1));
    assert!(connections >= 1, "no connection of the store was found");
    assert!(all_tls, "a connection of the store is not TLS");
}
