//! Where registrations and tokens are kept: the [`TokenStore`] trait, a
//! [`FileStore`] in the user's config folder (the default), a
//! [`MemoryStore`] for tests and embedding applications and, with the
//! `postgres` feature, a `PostgresStore` that many replicas share.
//!
//! Entries are keyed by an *identity* (the platform's user or tenant id; the
//! empty string for the single user of a machine), the MCP server (its
//! canonical URI) *and* the authorization server's issuer: two users never
//! meet each other's tokens, and a server that moved to another
//! authorization server finds no credentials there and registers afresh,
//! never sending one issuer's client or tokens to another.
//!
//! Two processes (or replicas) that share a store must not both spend a
//! rotating refresh token: a refresh runs under [`TokenStore::lock`] (a
//! cross-process file lock for the file store, a transaction-scoped advisory
//! lock for PostgreSQL), reloads the entry through the lock, adopts a newer
//! token another process wrote instead of refreshing again, and writes what
//! it got through the lock before releasing it.
//!
//! The trait is asynchronous; a store whose calls only block briefly (files,
//! memory, a keychain) implements the simpler [`BlockingStore`] and gets
//! [`TokenStore`] from it (its lock taken on a blocking thread).

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::Secret;

mod file;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod sealed;

pub use file::FileStore;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresStore};
#[cfg(feature = "postgres")]
pub use sealed::{SealingKey, SealingKeys};
#[cfg(feature = "keyring")]
mod keychain;
#[cfg(feature = "keyring")]
pub use keychain::KeyringStore;

/// A client registration: how this client is known to one authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredClient {
    /// The client id.
    pub client_id: String,
    /// The client secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// How the client authenticates at the token endpoint
    /// (`none`, `client_secret_basic`, `client_secret_post`, `private_key_jwt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// How it was had: `dynamic`, `metadata-document`, `pre-registered`.
    pub source: String,
    /// The redirect URIs it was registered with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redirect_uris: Vec<String>,
}

impl StoredClient {
    /// A client known by this id, had from `source`.
    pub fn new(client_id: impl Into<String>, source: impl Into<String>) -> Self {
        StoredClient {
            client_id: client_id.into(),
            client_secret: None,
            token_endpoint_auth_method: None,
            source: source.into(),
            redirect_uris: Vec::new(),
        }
    }
}

/// Tokens as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredTokens {
    /// The access token.
    pub access_token: Secret,
    /// `Bearer` or `DPoP`.
    pub token_type: String,
    /// The refresh token, when one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// When the access token expires (Unix seconds), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted (or asked for, when the answer named none).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// For a DPoP-bound token: the key it is bound to (base64 PKCS#8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<Secret>,
}

impl StoredTokens {
    /// A bearer token with nothing else known (no expiry, no refresh token).
    pub fn bearer(access_token: Secret) -> Self {
        StoredTokens {
            access_token,
            token_type: "Bearer".into(),
            refresh_token: None,
            expires_at: None,
            scopes: Vec::new(),
            dpop_key: None,
        }
    }
}

/// One server's authorization with one issuer, for one identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredAuth {
    /// Whose login this is: the platform's user or tenant id; empty for the
    /// single user of a machine (what files written before identities hold).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity: String,
    /// The MCP server's canonical URI.
    pub server: String,
    /// The authorization server's issuer.
    pub issuer: String,
    /// The registration, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<StoredClient>,
    /// The tokens, when logged in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<StoredTokens>,
    /// When this entry was last written (Unix seconds).
    #[serde(default)]
    pub updated_at: u64,
}

impl StoredAuth {
    /// An empty entry for this server and issuer (the default identity).
    pub fn new(server: impl Into<String>, issuer: impl Into<String>) -> Self {
        StoredAuth {
            identity: String::new(),
            server: server.into(),
            issuer: issuer.into(),
            client: None,
            tokens: None,
            updated_at: 0,
        }
    }

    /// The same entry, for `identity`.
    pub fn for_identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = identity.into();
        self
    }

    /// Its key: identity, server, issuer.
    pub fn key(&self) -> LoginKey {
        LoginKey::new(&self.identity, &self.server, &self.issuer)
    }
}

/// What a login is kept under, and what a refresh locks: one identity's
/// authorization of one server with one issuer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LoginKey {
    /// The identity (empty: the single user).
    pub identity: String,
    /// The MCP server's canonical URI.
    pub server: String,
    /// The authorization server's issuer.
    pub issuer: String,
}

impl LoginKey {
    /// The key of `identity`'s login to `server` with `issuer`.
    pub fn new(identity: &str, server: &str, issuer: &str) -> Self {
        LoginKey {
            identity: identity.to_owned(),
            server: server.to_owned(),
            issuer: issuer.to_owned(),
        }
    }
}

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Reading or writing a file failed.
    #[error("token store {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A file holds something that is not a store entry.
    #[error("token store {path} is damaged ({message}); remove it and log in again")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// No folder to keep tokens in.
    #[error("no folder for the token store: set MCP_AUTH_DIR, XDG_CONFIG_HOME or HOME")]
    NoHome,
    /// The OS credential store (feature `keyring`) failed or refused.
    #[error(
        "OS keychain, item {item}: {message}; unlock the keychain, or keep tokens in files instead"
    )]
    Keychain {
        /// The item (service/account, and the server it is for).
        item: String,
        /// What went wrong (never a secret).
        message: String,
    },
    /// The database could not be reached, or refused a statement; nothing
    /// of the failed operation was written.
    #[error("token store database: {message}; nothing was written, try again")]
    Database {
        /// What the database (or the connection to it) said.
        message: String,
    },
    /// A stored row was sealed with a key this store was not given.
    #[error(
        "the stored login of {what} was encrypted with key `{key_id}`, which this store does \
         not have: add that key to the store's keys (or log in again)"
    )]
    UnknownKey {
        /// Whose login, for which server (no secrets).
        what: String,
        /// The key id the row names.
        key_id: String,
    },
    /// A stored row does not open with the key it names: a wrong key
    /// under that id, or a row altered (or moved to another identity).
    #[error(
        "the stored login of {what} does not decrypt with key `{key_id}`: the key given under \
         that id is the wrong one, or the row was altered; supply the right key or log in again"
    )]
    WrongKey {
        /// Whose login, for which server.
        what: String,
        /// The key id the row names.
        key_id: String,
    },
    /// A stored row is not a login (damaged, or written by something else).
    #[error("the stored login of {what} is damaged ({message}); remove it and log in again")]
    Corrupt {
        /// Whose login, for which server.
        what: String,
        /// What is wrong.
        message: String,
    },
    /// The store was set up wrongly (no encryption key, a bad URL).
    #[error("token store settings: {0}")]
    Settings(String),
}

/// What the store's asynchronous calls return.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A held refresh lock (see [`StoreLock`]), as a store implements it.
pub trait HeldLock: Send + fmt::Debug {
    /// The locked login as it is now (written by anyone), if stored.
    fn load(&mut self) -> StoreFuture<'_, Option<StoredAuth>>;
    /// Writes the locked login (`entry` has its key); durable once
    /// [`release`](Self::release) succeeds.
    fn save<'a>(&'a mut self, entry: &'a StoredAuth) -> StoreFuture<'a, ()>;
    /// Makes what was saved durable and releases the lock.
    fn release(self: Box<Self>) -> StoreFuture<'static, ()>;
}

/// Held while a refresh runs: reads and writes of the locked login go
/// through it. [`release`](Self::release) makes the write durable and frees
/// the lock; dropping it frees the lock too, without making a pending
/// database write durable (the file and memory stores write at once).
#[derive(Debug)]
pub struct StoreLock {
    held: Box<dyn HeldLock>,
}

impl StoreLock {
    /// A lock as a store holds it.
    pub fn new(held: impl HeldLock + 'static) -> Self {
        StoreLock {
            held: Box::new(held),
        }
    }

    /// The locked login as it is now.
    pub async fn load(&mut self) -> Result<Option<StoredAuth>, StoreError> {
        self.held.load().await
    }

    /// Writes the locked login.
    pub async fn save(&mut self, entry: &StoredAuth) -> Result<(), StoreError> {
        self.held.save(entry).await
    }

    /// Makes the write durable and releases the lock.
    pub async fn release(self) -> Result<(), StoreError> {
        self.held.release().await
    }
}

/// Keeps registrations and tokens, by identity, server and issuer.
pub trait TokenStore: Send + Sync + fmt::Debug {
    /// Every entry of one identity for one server (one per issuer).
    fn load<'a>(&'a self, identity: &'a str, server: &'a str) -> StoreFuture<'a, Vec<StoredAuth>>;
    /// Writes an entry (replacing the one with its identity, server and issuer).
    fn save<'a>(&'a self, entry: &'a StoredAuth) -> StoreFuture<'a, ()>;
    /// Removes an identity's entries of a server (one issuer's, or all);
    /// how many went.
    fn remove<'a>(
        &'a self,
        identity: &'a str,
        server: &'a str,
        issuer: Option<&'a str>,
    ) -> StoreFuture<'a, usize>;
    /// Every entry, of every identity.
    fn list(&self) -> StoreFuture<'_, Vec<StoredAuth>>;
    /// Excludes other holders of this login's lock (other processes, other
    /// replicas) until the lock is released or dropped; may wait for one.
    fn lock<'a>(&'a self, key: &'a LoginKey) -> StoreFuture<'a, StoreLock>;
}

/// A store whose calls block only briefly (small files, memory, the OS
/// keychain): implement this and get [`TokenStore`], the lock taken on a
/// blocking thread (hence `Clone`: a handle to the same store).
pub trait BlockingStore: Clone + Send + Sync + fmt::Debug + 'static {
    /// Every entry of one identity for one server.
    fn load(&self, identity: &str, server: &str) -> Result<Vec<StoredAuth>, StoreError>;
    /// Writes an entry (replacing the one with its key).
    fn save(&self, entry: &StoredAuth) -> Result<(), StoreError>;
    /// Removes an identity's entries of a server (one issuer's, or all).
    fn remove(
        &self,
        identity: &str,
        server: &str,
        issuer: Option<&str>,
    ) -> Result<usize, StoreError>;
    /// Every entry.
    fn list(&self) -> Result<Vec<StoredAuth>, StoreError>;
    /// Blocks until this login's lock is held (a lock may cover more than
    /// one login); it is released when the returned guard drops.
    fn lock(&self, key: &LoginKey) -> Result<Box<dyn Send + Sync>, StoreError>;
}

impl<T: BlockingStore> TokenStore for T {
    fn load<'a>(&'a self, identity: &'a str, server: &'a str) -> StoreFuture<'a, Vec<StoredAuth>> {
        Box::pin(async move { BlockingStore::load(self, identity, server) })
    }

    fn save<'a>(&'a self, entry: &'a StoredAuth) -> StoreFuture<'a, ()> {
        Box::pin(async move { BlockingStore::save(self, entry) })
    }

    fn remove<'a>(
        &'a self,
        identity: &'a str,
        server: &'a str,
        issuer: Option<&'a str>,
    ) -> StoreFuture<'a, usize> {
        Box::pin(async move { BlockingStore::remove(self, identity, server, issuer) })
    }

    fn list(&self) -> StoreFuture<'_, Vec<StoredAuth>> {
        Box::pin(async move { BlockingStore::list(self) })
    }

    fn lock<'a>(&'a self, key: &'a LoginKey) -> StoreFuture<'a, StoreLock> {
        let store = self.clone();
        let key = key.clone();
        Box::pin(async move {
            let (store, key, guard) = tokio::task::spawn_blocking(move || {
                let guard = BlockingStore::lock(&store, &key);
                (store, key, guard)
            })
            .await
            .map_err(|e| StoreError::Settings(format!("the lock's thread failed: {e}")))?;
            Ok(StoreLock::new(BlockingLock {
                _guard: guard?,
                store,
                key,
            }))
        })
    }
}

/// A [`BlockingStore`]'s lock: reads and writes go straight to the store.
struct BlockingLock<T> {
    _guard: Box<dyn Send + Sync>,
    store: T,
    key: LoginKey,
}

impl<T: fmt::Debug> fmt::Debug for BlockingLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockingLock")
            .field("store", &self.store)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl<T: BlockingStore> HeldLock for BlockingLock<T> {
    fn load(&mut self) -> StoreFuture<'_, Option<StoredAuth>> {
        Box::pin(async move {
            let all = BlockingStore::load(&self.store, &self.key.identity, &self.key.server)?;
            Ok(entry_for(all, &self.key.issuer))
        })
    }

    fn save<'a>(&'a mut self, entry: &'a StoredAuth) -> StoreFuture<'a, ()> {
        Box::pin(async move { BlockingStore::save(&self.store, entry) })
    }

    fn release(self: Box<Self>) -> StoreFuture<'static, ()> {
        drop(self);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// One entry of a server, by issuer.
pub(crate) fn entry_for(entries: Vec<StoredAuth>, issuer: &str) -> Option<StoredAuth> {
    entries.into_iter().find(|e| e.issuer == issuer)
}

/// An in-memory entry's key.
type MemoryKey = (String, String, String);

/// A store in memory (tests, and applications that keep tokens themselves).
#[derive(Debug, Default, Clone)]
pub struct MemoryStore {
    entries: Arc<Mutex<BTreeMap<MemoryKey, StoredAuth>>>,
    locks: Arc<Mutex<BTreeMap<LoginKey, Arc<tokio::sync::Mutex<()>>>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, BTreeMap<MemoryKey, StoredAuth>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl BlockingStore for MemoryStore {
    fn load(&self, identity: &str, server: &str) -> Result<Vec<StoredAuth>, StoreError> {
        Ok(self
            .entries()
            .values()
            .filter(|e| e.identity == identity && e.server == server)
            .cloned()
            .collect())
    }

    fn save(&self, entry: &StoredAuth) -> Result<(), StoreError> {
        self.entries().insert(
            (
                entry.identity.clone(),
                entry.server.clone(),
                entry.issuer.clone(),
            ),
            entry.clone(),
        );
        Ok(())
    }

    fn remove(
        &self,
        identity: &str,
        server: &str,
        issuer: Option<&str>,
    ) -> Result<usize, StoreError> {
        let mut entries = self.entries();
        let before = entries.len();
        entries.retain(|(id, s, i), _| {
            !(id == identity && s == server && issuer.is_none_or(|want| want == i))
        });
        Ok(before - entries.len())
    }

    fn list(&self) -> Result<Vec<StoredAuth>, StoreError> {
        Ok(self.entries().values().cloned().collect())
    }

    fn lock(&self, key: &LoginKey) -> Result<Box<dyn Send + Sync>, StoreError> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            locks.entry(key.clone()).or_default().clone()
        };
        // Blocking: called on a blocking thread (see the TokenStore impl).
        Ok(Box::new(lock.blocking_lock_owned()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    pub(super) fn entry(server: &str, issuer: &str, token: &str) -> StoredAuth {
        let mut e = StoredAuth::new(server, issuer);
        e.client = Some(StoredClient::new("c1", "dynamic"));
        e.tokens = Some(StoredTokens {
            access_token: Secret::new(token),
            token_type: "Bearer".into(),
            refresh_token: Some(Secret::new("r-".to_owned() + token)),
            expires_at: Some(100),
            scopes: vec!["a".into()],
            dpop_key: None,
        });
        e
    }

    pub(super) fn round_trip(store: &dyn TokenStore) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let s = "https://mcp.example.com/mcp";
            assert!(store.load("", s).await.unwrap().is_empty());
            store.save(&entry(s, "https://as1", "t1")).await.unwrap();
            store.save(&entry(s, "https://as2", "t2")).await.unwrap();
            store
                .save(&entry("https://other", "https://as1", "t3"))
                .await
                .unwrap();
            store.save(&entry(s, "https://as1", "t1b")).await.unwrap();
            // Another identity's login to the same server and issuer.
            let alice = entry(s, "https://as1", "alice-t").for_identity("alice");
            store.save(&alice).await.unwrap();
            let mine = store.load("", s).await.unwrap();
            assert_eq!(mine.len(), 2);
            let as1 = entry_for(mine, "https://as1").unwrap();
            assert_eq!(as1.tokens.unwrap().access_token.expose(), "t1b");
            let hers = store.load("alice", s).await.unwrap();
            assert_eq!(hers, vec![alice.clone()]);
            assert!(store.load("bob", s).await.unwrap().is_empty());
            assert_eq!(store.list().await.unwrap().len(), 4);
            assert_eq!(store.remove("", s, Some("https://as2")).await.unwrap(), 1);
            assert_eq!(store.load("", s).await.unwrap().len(), 1);
            assert_eq!(store.remove("", s, None).await.unwrap(), 1);
            assert!(store.load("", s).await.unwrap().is_empty());
            assert_eq!(store.load("alice", s).await.unwrap().len(), 1);
            assert_eq!(store.remove("alice", s, None).await.unwrap(), 1);
            assert_eq!(store.list().await.unwrap().len(), 1);
            // Writes through a held lock land in the store.
            let key = LoginKey::new("carol", s, "https://as1");
            let mut lock = store.lock(&key).await.unwrap();
            assert!(lock.load().await.unwrap().is_none());
            let carol = entry(s, "https://as1", "carol-t").for_identity("carol");
            lock.save(&carol).await.unwrap();
            assert_eq!(lock.load().await.unwrap(), Some(carol.clone()));
            lock.release().await.unwrap();
            assert_eq!(store.load("carol", s).await.unwrap(), vec![carol]);
        });
    }

    #[test]
    fn memory_store_keys_by_identity_server_and_issuer() {
        round_trip(&MemoryStore::new());
    }

    #[test]
    fn debug_never_shows_tokens() {
        let e = entry("s", "i", "sekrit-token");
        let shown = format!("{e:?}");
        assert!(!shown.contains("sekrit-token"), "{shown}");
    }
}
