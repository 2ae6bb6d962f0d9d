//! [`FileStore`]: a JSON file per identity and server in the user's folder.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{BlockingStore, LoginKey, StoreError, StoredAuth};

/// The default store: one JSON file per identity and server in a folder of
/// the user's (`$MCP_AUTH_DIR`, else `$XDG_CONFIG_HOME/mcp/auth`, else
/// `~/.config/mcp/auth`), readable by the user only (0600 in a 0700
/// folder), written atomically (a temporary file renamed over the old one).
/// The single user's files (identity `""`) are named as before identities
/// were kept; another identity's add a hash of it to the name.
#[derive(Debug, Clone)]
pub struct FileStore {
    dir: PathBuf,
}

/// The file one identity's entries of one server live in.
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

    fn stem(identity: &str, server: &str) -> String {
        let hex = |text: &str| -> String {
            let digest = Sha256::digest(text.as_bytes());
            digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
        };
        if identity.is_empty() {
            format!("server-{}", hex(server))
        } else {
            format!("user-{}-server-{}", hex(identity), hex(server))
        }
    }

    fn path(&self, identity: &str, server: &str) -> PathBuf {
        self.dir
            .join(format!("{}.json", Self::stem(identity, server)))
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

    fn write(&self, identity: &str, server: &str, file: &ServerFile) -> Result<(), StoreError> {
        let path = self.path(identity, server);
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
            Self::stem(identity, server),
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

impl BlockingStore for FileStore {
    fn load(&self, identity: &str, server: &str) -> Result<Vec<StoredAuth>, StoreError> {
        Ok(self
            .read(&self.path(identity, server))?
            .map(|f| f.entries)
            .unwrap_or_default()
            .into_iter()
            // A file holds one identity's entries; the check costs nothing.
            .filter(|e| e.identity == identity)
            .collect())
    }

    fn save(&self, entry: &StoredAuth) -> Result<(), StoreError> {
        let path = self.path(&entry.identity, &entry.server);
        let mut file = self.read(&path)?.unwrap_or_default();
        file.server = entry.server.clone();
        file.entries.retain(|e| e.issuer != entry.issuer);
        file.entries.push(entry.clone());
        self.write(&entry.identity, &entry.server, &file)
    }

    fn remove(
        &self,
        identity: &str,
        server: &str,
        issuer: Option<&str>,
    ) -> Result<usize, StoreError> {
        let Some(mut file) = self.read(&self.path(identity, server))? else {
            return Ok(0);
        };
        let before = file.entries.len();
        file.entries
            .retain(|e| issuer.is_some_and(|want| want != e.issuer));
        let removed = before - file.entries.len();
        self.write(identity, server, &file)?;
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
            if (name.starts_with("server-") || name.starts_with("user-"))
                && name.ends_with(".json")
                && let Some(file) = self.read(&path)?
            {
                out.extend(file.entries);
            }
        }
        out.sort_by(|a, b| {
            (&a.identity, &a.server, &a.issuer).cmp(&(&b.identity, &b.server, &b.issuer))
        });
        Ok(out)
    }

    /// One lock per identity and server (all its issuers).
    fn lock(&self, key: &LoginKey) -> Result<Box<dyn Send + Sync>, StoreError> {
        let path = self
            .dir
            .join(format!("{}.lock", Self::stem(&key.identity, &key.server)));
        let io_err = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        create_private_dir(&self.dir).map_err(io_err)?;
        let file = private_file_keep(&path).map_err(io_err)?;
        file.lock().map_err(io_err)?;
        Ok(Box::new(file))
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
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::store::tests::round_trip;

    #[test]
    fn file_store_keys_by_identity_server_and_issuer_and_keeps_files_private() {
        let dir = std::env::temp_dir().join(format!("mcp-auth-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = FileStore::new(&dir);
        round_trip(&store);
        let path = store.path("", "https://other");
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
        std::fs::write(store.path("", "s"), b"{not json").unwrap();
        let err = BlockingStore::load(&store, "", "s").unwrap_err();
        assert!(err.to_string().contains("log in again"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_file_lock_excludes_a_second_holder_until_released() {
        let dir = std::env::temp_dir().join(format!("mcp-auth-lock-{}", std::process::id()));
        let store = FileStore::new(&dir);
        let held = BlockingStore::lock(&store, &LoginKey::new("", "s", "i")).unwrap();
        // A second open file description of the same lock file cannot take it.
        let path = dir.join(format!("{}.lock", FileStore::stem("", "s")));
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
    fn single_user_files_keep_their_names_and_read_as_before() {
        let dir = std::env::temp_dir().join(format!("mcp-auth-legacy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // A file as written before identities: no `identity` field.
        let server = "https://mcp.example.com/mcp";
        let digest = Sha256::digest(server.as_bytes());
        let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
        let legacy = serde_json::json!({"server": server, "entries": [{
            "server": server, "issuer": "https://as1",
            "tokens": {"access_token": "old-t", "token_type": "Bearer"}, "updated_at": 5}]});
        std::fs::write(dir.join(format!("server-{hex}.json")), legacy.to_string()).unwrap();
        let store = FileStore::new(&dir);
        let got = BlockingStore::load(&store, "", server).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].identity, "");
        assert_eq!(
            got[0].tokens.as_ref().unwrap().access_token.expose(),
            "old-t"
        );
        // Nobody else sees it.
        assert!(
            BlockingStore::load(&store, "alice", server)
                .unwrap()
                .is_empty()
        );
        // Written back, it keeps the old shape (no identity field).
        BlockingStore::save(&store, &got[0]).unwrap();
        let text = std::fs::read_to_string(dir.join(format!("server-{hex}.json"))).unwrap();
        assert!(!text.contains("identity"), "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
