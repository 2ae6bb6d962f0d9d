//! The keychain store (feature `keyring`) against the real OS credential
//! store: on Linux a Secret Service (GNOME Keyring) on a session bus.
//! Ignored in a plain `cargo test`, where there may be none:
//! `.ci/keyring-tests.sh` starts one and runs them with `--ignored`.
//!
//! Each test keeps its items under a service name of its own and removes
//! them at the end.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_stack_auth::Secret;
use mcp_stack_auth::agent::{FollowRedirect, UserAgent};
use mcp_stack_auth::client::{OAuthClient, OAuthConfig};
use mcp_stack_auth::store::{
    BlockingStore, FileStore, KeyringStore, LoginKey, StoreError, StoredAuth, StoredClient,
    StoredTokens,
};
use mcp_stack_session::{Session, SessionConfig};
use mcp_stack_testkit::http::{HttpServer, HttpServerOptions, OAuthOptions};
use mcp_stack_transport::http::{HttpOptions, StreamableHttpTransport, WebClient};
use serde_json::json;
use sha2::{Digest, Sha256};

const S: &str = "https://mcp.example.com/mcp";

/// A folder and a service name of this test's own; both emptied on drop.
struct Place {
    dir: PathBuf,
    service: String,
}

impl Place {
    fn new(name: &str) -> Place {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = format!(
            "{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let dir = std::env::temp_dir().join(format!("mcp-auth-keyring-{unique}"));
        let _ = std::fs::remove_dir_all(&dir);
        Place {
            dir,
            service: format!("mcp-stack-test-{unique}"),
        }
    }

    fn store(&self) -> KeyringStore {
        KeyringStore::new(FileStore::new(&self.dir)).service(&self.service)
    }

    /// The raw item under `account`, as the OS store has it.
    fn item(&self, account: &str) -> Option<String> {
        match keyring::Entry::new(&self.service, account)
            .unwrap()
            .get_password()
        {
            Ok(text) => Some(text),
            Err(keyring::Error::NoEntry) => None,
            Err(e) => panic!("the keychain failed: {e}"),
        }
    }

    fn put(&self, account: &str, value: &str) {
        keyring::Entry::new(&self.service, account)
            .unwrap()
            .set_password(value)
            .unwrap();
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let store = self.store();
        if let Ok(all) = store.list() {
            for e in all {
                let _ = store.remove("", &e.server, None);
            }
        }
        let _ = store.remove("", S, None);
        let _ = keyring::Entry::new(&self.service, "index").and_then(|e| e.delete_credential());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The account of a server's entries, as the store's docs lay it out.
fn account(server: &str) -> String {
    let key = json!([null, server]).to_string();
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("server-{hex}")
}

fn entry(server: &str, issuer: &str, token: &str) -> StoredAuth {
    let mut e = StoredAuth::new(server, issuer);
    e.client = Some(StoredClient::new("c1", "dynamic"));
    let mut tokens = StoredTokens::bearer(Secret::new(token));
    tokens.refresh_token = Some(Secret::new(format!("r-{token}")));
    tokens.scopes = vec!["files:read".into()];
    e.tokens = Some(tokens);
    e
}

fn token(entries: &[StoredAuth], issuer: &str) -> String {
    let e = entries.iter().find(|e| e.issuer == issuer).unwrap();
    e.tokens.as_ref().unwrap().access_token.expose().to_owned()
}

#[test]
#[ignore = "needs a Secret Service: .ci/keyring-tests.sh"]
fn keyring_saves_loads_removes_and_lists_by_server_and_issuer() {
    let place = Place::new("roundtrip");
    let store = place.store();
    store.probe().unwrap();
    assert!(store.load("", S).unwrap().is_empty());
    assert!(store.list().unwrap().is_empty());

    store.save(&entry(S, "https://as1", "t1")).unwrap();
    store.save(&entry(S, "https://as2", "t2")).unwrap();
    store
        .save(&entry("https://other", "https://as1", "t3"))
        .unwrap();
    store.save(&entry(S, "https://as1", "t1b")).unwrap();
    let mine = store.load("", S).unwrap();
    assert_eq!(mine.len(), 2);
    assert_eq!(token(&mine, "https://as1"), "t1b");
    let all = store.list().unwrap();
    assert_eq!(all.len(), 3);

    // In the OS store, not on disk.
    assert!(place.item(&account(S)).is_some());
    assert!(FileStore::new(&place.dir).list().unwrap().is_empty());
    // What `mcp auth status` shows of the store has no secret.
    let shown = format!("{all:?} {store:?}");
    assert!(!shown.contains("t1b"), "{shown}");

    assert_eq!(store.remove("", S, Some("https://as2")).unwrap(), 1);
    assert_eq!(store.load("", S).unwrap().len(), 1);
    assert_eq!(store.remove("", S, None).unwrap(), 1);
    assert!(store.load("", S).unwrap().is_empty());
    assert!(place.item(&account(S)).is_none(), "the item is gone");
    let all = store.list().unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].server, "https://other");
    assert_eq!(store.remove("", "https://other", None).unwrap(), 1);
    assert!(store.list().unwrap().is_empty());
}

#[test]
#[ignore = "needs a Secret Service: .ci/keyring-tests.sh"]
fn keyring_splits_a_large_token_into_chunks_within_the_item_limit() {
    let place = Place::new("chunks");
    let store = place.store().chunk_limit(256);
    // A JWT-sized token with claims: far over the limit.
    let big: String = (0..2500)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    store.save(&entry(S, "https://as", &big)).unwrap();

    let manifest: serde_json::Value =
        serde_json::from_str(&place.item(&account(S)).unwrap()).unwrap();
    let chunks = manifest["chunks"].as_u64().unwrap() as usize;
    assert!(chunks > 2500 / 256, "{manifest}");
    let slot = manifest["slot"].as_str().unwrap().to_owned();
    for n in 0..chunks {
        let chunk = place.item(&format!("{}.{slot}.{n}", account(S))).unwrap();
        assert!(chunk.len() <= 256, "chunk {n}: {} bytes", chunk.len());
    }
    // A second store (another process) reads it whole.
    let other = place.store();
    assert_eq!(token(&other.load("", S).unwrap(), "https://as"), big);

    // Rewritten: the other slot; the old chunks are gone.
    let bigger = big.repeat(2);
    store.save(&entry(S, "https://as", &bigger)).unwrap();
    assert_eq!(token(&other.load("", S).unwrap(), "https://as"), bigger);
    assert!(place.item(&format!("{}.{slot}.0", account(S))).is_none());

    // Removed: manifest and every chunk.
    assert_eq!(store.remove("", S, None).unwrap(), 1);
    for slot in ["a", "b"] {
        assert!(place.item(&format!("{}.{slot}.0", account(S))).is_none());
    }
    assert!(place.item(&account(S)).is_none());
}

#[test]
#[ignore = "needs a Secret Service: .ci/keyring-tests.sh"]
fn keyring_stores_share_the_file_stores_cross_process_lock() {
    let place = Place::new("lock");
    let a = place.store();
    let b = place.store();
    let held = a.lock(&login(S)).unwrap();
    // The lock is the file store's, in the same folder: a file store (or
    // a second keychain store, as another process would have) cannot take it.
    let stem: String = Sha256::digest(S.as_bytes())
        .iter()
        .take(12)
        .map(|x| format!("{x:02x}"))
        .collect();
    let path = place.dir.join(format!("server-{stem}.lock"));
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    assert!(matches!(
        file.try_lock(),
        Err(std::fs::TryLockError::WouldBlock)
    ));
    // B waits for A: it takes the lock only once A lets go.
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _held = b.lock(&login(S)).unwrap();
        tx.send(()).unwrap();
    });
    drop(held);
    rx.recv_timeout(Duration::from_secs(10))
        .expect("B takes the lock once A releases it");
    waiter.join().unwrap();
    file.try_lock().unwrap();
}

#[test]
#[ignore = "needs a Secret Service: .ci/keyring-tests.sh"]
fn keyring_a_damaged_entry_is_a_typed_error_until_logged_out() {
    let place = Place::new("damaged");
    let store = place.store();
    store.save(&entry(S, "https://as", "t")).unwrap();
    place.put(&account(S), "{this is not what the store wrote");
    let err = store.load("", S).unwrap_err();
    assert!(matches!(err, StoreError::Damaged { .. }), "{err:?}");
    let shown = err.to_string();
    assert!(
        shown.contains(S) && shown.contains("log in again"),
        "{shown}"
    );
    // Logging out removes it without reading it; then it is simply absent.
    assert_eq!(store.remove("", S, None).unwrap(), 1);
    assert!(store.load("", S).unwrap().is_empty());
    assert!(store.list().unwrap().is_empty());
}

#[test]
#[ignore = "needs a Secret Service: .ci/keyring-tests.sh"]
fn keyring_keeps_tokens_the_file_store_had_and_moves_them_in() {
    let place = Place::new("migrate");
    let files = FileStore::new(&place.dir);
    files.save(&entry(S, "https://as", "on-disk")).unwrap();
    let store = place.store();
    assert_eq!(token(&store.load("", S).unwrap(), "https://as"), "on-disk");
    store.save(&entry(S, "https://as", "refreshed")).unwrap();
    assert!(files.load("", S).unwrap().is_empty(), "off the disk");
    assert_eq!(
        token(&store.load("", S).unwrap(), "https://as"),
        "refreshed"
    );
}

// A login end to end, and a second store (as another process) using it.

fn follow() -> Arc<dyn UserAgent> {
    let web = WebClient::new(&HttpOptions::new()).unwrap();
    Arc::new(FollowRedirect::new(web, "http://127.0.0.1:9/callback"))
}

fn client(url: &str, store: KeyringStore, agent: Option<Arc<dyn UserAgent>>) -> OAuthClient {
    let config = OAuthConfig::new(url).login_hint("run `mcp login`");
    OAuthClient::new(config, &HttpOptions::new(), Arc::new(store), agent).unwrap()
}

async fn echo(url: &str, oauth: &OAuthClient, text: &str) -> (Session, String) {
    let options = HttpOptions::new()
        .request_timeout(Duration::from_secs(10))
        .authorizer(Arc::new(oauth.clone()));
    let transport = StreamableHttpTransport::connect(url, options)
        .await
        .unwrap();
    let session = Session::connect(transport, SessionConfig::new())
        .await
        .unwrap();
    let got = call(&session, text).await;
    (session, got)
}

async fn call(session: &Session, text: &str) -> String {
    let r = session
        .call_tool("echo", json!({"text": text}))
        .await
        .unwrap();
    assert!(!r.is_error(), "{}", r.text());
    r.text()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Secret Service: .ci/keyring-tests.sh"]
async fn keyring_login_is_used_by_a_second_client_and_refreshed_once() {
    let server = HttpServer::start(
        HttpServerOptions::default().with_oauth(OAuthOptions::new().rotate_refresh_tokens(true)),
    )
    .await
    .unwrap();
    let url = server.url();
    let place = Place::new("e2e");
    let o = &server.stats().oauth;

    let a = client(&url, place.store(), Some(follow()));
    let (session_a, got) = echo(&url, &a, "a1").await;
    assert_eq!(got, "a1");
    assert_eq!(o.authorizations.load(Ordering::SeqCst), 1);
    // The token is in the keychain, not in a file.
    assert!(place.item(&account(&url)).is_some());
    assert!(FileStore::new(&place.dir).list().unwrap().is_empty());

    // B has no user agent: it can only use what A stored.
    let b = client(&url, place.store(), None);
    let (session_b, got) = echo(&url, &b, "b1").await;
    assert_eq!(got, "b1");
    assert_eq!(o.authorizations.load(Ordering::SeqCst), 1);

    // Both expired: one refresh, under the shared lock; B adopts A's.
    server.advance_clock(Duration::from_secs(3601));
    assert_eq!(call(&session_a, "a2").await, "a2");
    assert_eq!(call(&session_b, "b2").await, "b2");
    assert_eq!(
        o.refresh_grants.load(Ordering::SeqCst),
        1,
        "B refreshed too"
    );
    assert!(o.token_errors.lock().unwrap().is_empty());
    session_a.close().await;
    session_b.close().await;
}

/// The lock key of the single user's login to `server`.
fn login(server: &str) -> LoginKey {
    LoginKey {
        identity: String::new(),
        server: server.to_owned(),
        issuer: String::new(),
    }
}
