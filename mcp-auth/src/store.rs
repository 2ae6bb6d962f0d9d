//! Where registrations and tokens are kept: the [`TokenStore`] trait, a
//! [`FileStore`] in the user's config folder (the default) and a
//! [`MemoryStore`] for tests and embedding applications.
//!
//! Entries are keyed by the MCP server (its canonical URI) *and* the
//! authorization server's issuer: a server that moved to another
//! authorization server finds no credentials there and registers afresh,
//! never sending one issuer's client or tokens to another.
//!
//! Two processes that share a store must not both spend a rotating refresh
//! token: a refresh runs under [`TokenStore::lock`] (a cross-process file
//! lock for the file store), reloads the entry, and adopts a newer token
//! another process wrote instead of refreshing again.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Secret;

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

/// One server's authorization with one issuer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredAuth {
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
    /// An empty entry for this server and issuer.
    pub fn new(server: impl Into<String>, issuer: impl Into<String>) -> Self {
        StoredAuth {
            server: server.into(),
            issuer: issuer.into(),
            client: None,
            tokens: None,
            updated_at: 0,
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
}

/// Held while a refresh runs; dropping it releases the lock.
pub struct StoreLock {
    _guard: Box<dyn Send + Sync>,
}

impl fmt::Debug for StoreLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StoreLock")
    }
}

impl StoreLock {
    /// A lock held while `guard` lives (a mutex guard, a lock file, a
    /// database transaction): what a [`TokenStore`] of an application's
    /// own returns from [`lock`](TokenStore::lock).
    ///
    /// ```
    /// use mcp_stack_auth::store::StoreLock;
    ///
    /// // Whatever keeps other writers out until it is dropped (an advisory
    /// // lock on this file, an owned mutex guard, a transaction).
    /// let file = std::fs::File::create(std::env::temp_dir().join("my-app-tokens.lock"))?;
    /// let lock = StoreLock::new(file);
    /// drop(lock); // released
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(guard: impl Send + Sync + 'static) -> StoreLock {
        StoreLock {
            _guard: Box::new(guard),
        }
    }
}

/// Keeps registrations and tokens. Blocking calls: they read and write
/// small files; [`lock`](Self::lock) may wait for another process.
pub trait TokenStore: Send + Sync + fmt::Debug {
    /// Every entry of one server (one per issuer).
    fn load(&self, server: &str) -> Result<Vec<StoredAuth>, StoreError>;
    /// Writes an entry (replacing the one with its server and issuer).
    fn save(&self, entry: &StoredAuth) -> Result<(), StoreError>;
    /// Removes a server's entries (one issuer's, or all); how many went.
    fn remove(&self, server: &str, issuer: Option<&str>) -> Result<usize, StoreError>;
    /// Every entry.
    fn list(&self) -> Result<Vec<StoredAuth>, StoreError>;
    /// Excludes other holders of this server's lock (other processes, for
    /// the file store) until the guard drops.
    fn lock(&self, server: &str) -> Result<StoreLock, StoreError>;
}

/// One entry of a server, by issuer.
pub(crate) fn entry_for(entries: Vec<StoredAuth>, issuer: &str) -> Option<StoredAuth> {
    entries.into_iter().find(|e| e.issuer == issuer)
}

/// A store in memory (tests, and applications that keep tokens themselves).
#[derive(Debug, Default, Clone)]
pub struct MemoryStore {
    entries: Arc<Mutex<BTreeMap<(String, String), StoredAuth>>>,
    locks: Arc<Mutex<BTreeMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), StoredAuth>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TokenStore for MemoryStore {
    fn load(&self, server: &str) -> Result<Vec<StoredAuth>, StoreError> {
        Ok(self
            .entries()
            .values()
            .filter(|e| e.server == server)
            .cloned()
            .collect())
    }

    fn save(&self, entry: &StoredAuth) -> Result<(), StoreError> {
        self.entries()
            .insert((entry.server.clone(), entry.issuer.clone()), entry.clone());
        Ok(())
    }

    fn remove(&self, server: &str, issuer: Option<&str>) -> Result<usize, StoreError> {
        let mut entries = self.entries();
        let before = entries.len();
        entries.retain(|(s, i), _| !(s == server && issuer.is_none_or(|want| want == i)));
        Ok(before - entries.len())
    }

    fn list(&self) -> Result<Vec<StoredAuth>, StoreError> {
        Ok(self.entries().values().cloned().collect())
    }

    fn lock(&self, server: &str) -> Result<StoreLock, StoreError> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            locks.entry(server.to_owned()).or_default().clone()
        };
        // Blocking: callers take store locks off the async threads.
        let guard = lock.blocking_lock_owned();
        Ok(StoreLock {
            _guard: Box::new(guard),
        })
    }
}

/// The default store: one JSON file per server in a folder of the user's
/// (`$MCP_AUTH_DIR`, else `$XDG_CONFIG_HOME/mcp/auth`, else
/// `~/.config/mcp/auth`), readable by the user only (0600 in a 0700
/// folder), written atomically (a temporary file renamed over the old one).
#[derive(Debug, Clone)]
pub struct FileStore {
    dir: PathBuf,
}

/// The file a server's entries live in.
#[derive(Debug, Serialize, Deserialize, Default)]
struct ServerFile {
    server: String,
    #[serde(default)]
    entries: Vec<StoredAuth>,
}

impl FileStore {
    /// A store in this folder (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        FileStore { dir: dir.into() }
    }

    /// The store in the user's default folder (see the type's docs).
    pub fn default_location() -> Result<Self, StoreError> {
        Ok(Self::new(default_dir()?))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn stem(server: &str) -> String {
        let digest = Sha256::digest(server.as_bytes());
        let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
        format!("server-{hex}")
    }

    fn path(&self, server: &str) -> PathBuf {
        self.dir.join(format!("{}.json", Self::stem(server)))
    }

    fn read(&self, path: &Path) -> Result<Option<ServerFile>, StoreError> {
        let text = match std::fs::read(path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(StoreError::Io {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        serde_json::from_slice(&text)
            .map(Some)
            .map_err(|e| StoreError::Damaged {
                path: path.to_owned(),
                message: e.to_string(),
            })
    }

    fn write(&self, server: &str, file: &ServerFile) -> Result<(), StoreError> {
        let path = self.path(server);
        let io_err = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        create_private_dir(&self.dir).map_err(io_err)?;
        if file.entries.is_empty() {
            return match std::fs::remove_file(&path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(io_err(e)),
            };
        }
        let bytes = serde_json::to_vec_pretty(file).map_err(|e| StoreError::Damaged {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let tmp = self.dir.join(format!(
            ".{}.{}.tmp",
            Self::stem(server),
            std::process::id()
        ));
        let result = (|| {
            let mut out = private_file(&tmp)?;
            out.write_all(&bytes)?;
            out.sync_all()?;
            std::fs::rename(&tmp, &path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(io_err)
    }
}

impl TokenStore for FileStore {
    fn load(&self, server: &str) -> Result<Vec<StoredAuth>, StoreError> {
        Ok(self
            .read(&self.path(server))?
            .map(|f| f.entries)
            .unwrap_or_default())
    }

    fn save(&self, entry: &StoredAuth) -> Result<(), StoreError> {
        let mut file = self.read(&self.path(&entry.server))?.unwrap_or_default();
        file.server = entry.server.clone();
        file.entries.retain(|e| e.issuer != entry.issuer);
        file.entries.push(entry.clone());
        self.write(&entry.server, &file)
    }

    fn remove(&self, server: &str, issuer: Option<&str>) -> Result<usize, StoreError> {
        let Some(mut file) = self.read(&self.path(server))? else {
            return Ok(0);
        };
        let before = file.entries.len();
        file.entries
            .retain(|e| issuer.is_some_and(|want| want != e.issuer));
        let removed = before - file.entries.len();
        self.write(server, &file)?;
        Ok(removed)
    }

    fn list(&self) -> Result<Vec<StoredAuth>, StoreError> {
        let dir = match std::fs::read_dir(&self.dir) {
            Ok(dir) => dir,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(StoreError::Io {
                    path: self.dir.clone(),
                    source,
                });
            }
        };
        let mut out = Vec::new();
        for item in dir.flatten() {
            let path = item.path();
            let name = item.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("server-")
                && name.ends_with(".json")
                && let Some(file) = self.read(&path)?
            {
                out.extend(file.entries);
            }
        }
        out.sort_by(|a, b| (&a.server, &a.issuer).cmp(&(&b.server, &b.issuer)));
        Ok(out)
    }

    fn lock(&self, server: &str) -> Result<StoreLock, StoreError> {
        let path = self.dir.join(format!("{}.lock", Self::stem(server)));
        let io_err = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        create_private_dir(&self.dir).map_err(io_err)?;
        let file = private_file_keep(&path).map_err(io_err)?;
        file.lock().map_err(io_err)?;
        Ok(StoreLock {
            _guard: Box::new(file),
        })
    }
}

fn default_dir() -> Result<PathBuf, StoreError> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("MCP_AUTH_DIR") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = var("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(dir).join("mcp").join("auth"));
    }
    if let Some(home) = var("HOME").or_else(|| var("USERPROFILE")) {
        return Ok(PathBuf::from(home).join(".config").join("mcp").join("auth"));
    }
    Err(StoreError::NoHome)
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

/// A new file only the user can read, truncated.
fn private_file(path: &Path) -> io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// A file only the user can read, kept as it is (for locks).
fn private_file_keep(path: &Path) -> io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn entry(server: &str, issuer: &str, token: &str) -> StoredAuth {
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

    fn round_trip(store: &dyn TokenStore) {
        let s = "https://mcp.example.com/mcp";
        assert!(store.load(s).unwrap().is_empty());
        store.save(&entry(s, "https://as1", "t1")).unwrap();
        store.save(&entry(s, "https://as2", "t2")).unwrap();
        store
            .save(&entry("https://other", "https://as1", "t3"))
            .unwrap();
        store.save(&entry(s, "https://as1", "t1b")).unwrap();
        let mine = store.load(s).unwrap();
        assert_eq!(mine.len(), 2);
        let as1 = entry_for(mine, "https://as1").unwrap();
        assert_eq!(as1.tokens.unwrap().access_token.expose(), "t1b");
        assert_eq!(store.list().unwrap().len(), 3);
        assert_eq!(store.remove(s, Some("https://as2")).unwrap(), 1);
        assert_eq!(store.load(s).unwrap().len(), 1);
        assert_eq!(store.remove(s, None).unwrap(), 1);
        assert!(store.load(s).unwrap().is_empty());
        assert_eq!(store.list().unwrap().len(), 1);
    }

    #[test]
    fn memory_store_keys_by_server_and_issuer() {
        round_trip(&MemoryStore::new());
    }

    #[test]
    fn file_store_keys_by_server_and_issuer_and_keeps_files_private() {
        let dir = std::env::temp_dir().join(format!("mcp-auth-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = FileStore::new(&dir);
        round_trip(&store);
        let path = store.path("https://other");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("t3"), "the token is stored");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        // No temporary files are left behind.
        let leftovers = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .count();
        assert_eq!(leftovers, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_file_says_what_to_do() {
        let dir = std::env::temp_dir().join(format!("mcp-auth-damaged-{}", std::process::id()));
        let store = FileStore::new(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(store.path("s"), b"{not json").unwrap();
        let err = store.load("s").unwrap_err();
        assert!(err.to_string().contains("log in again"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_file_lock_excludes_a_second_holder_until_released() {
        let dir = std::env::temp_dir().join(format!("mcp-auth-lock-{}", std::process::id()));
        let store = FileStore::new(&dir);
        let held = store.lock("s").unwrap();
        // A second open file description of the same lock file cannot take it.
        let path = dir.join(format!("{}.lock", FileStore::stem("s")));
        let other = private_file_keep(&path).unwrap();
        assert!(matches!(
            other.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop(held);
        other.try_lock().unwrap();
        drop(other);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn debug_never_shows_tokens() {
        let e = entry("s", "i", "sekrit-token");
        let shown = format!("{e:?}");
        assert!(!shown.contains("sekrit-token"), "{shown}");
    }
}
