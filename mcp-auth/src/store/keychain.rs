//! [`KeyringStore`]: registrations and tokens in the OS credential store
//! (feature `keyring`): the macOS Keychain, the Windows Credential Manager,
//! the Secret Service (GNOME Keyring, KWallet) on Linux and the BSDs.
//!
//! # Layout
//!
//! Every item lives under one service name (`mcp-stack` unless
//! [`KeyringStore::service`] says otherwise) and an account name:
//!
//! - `server-<hash>`: one MCP server's entries, every issuer's, as JSON
//!   (the same shape as the file store's file). The hash is of the
//!   identity (none yet) and the server's canonical URI, made by one
//!   function ([`account`]), so account names stay short whatever the URI.
//! - `index`: the servers that have entries, for [`TokenStore::list`]
//!   (the OS stores cannot be listed portably). No secrets.
//!
//! A value larger than the platform's item limit (the Windows Credential
//! Manager keeps 2560 bytes) is written as numbered chunks
//! (`<account>.<slot>.<n>`) and a small manifest under the account itself
//! naming the slot, the count and the SHA-256 of the whole. Writes
//! alternate between two slots, `a` and `b`: the new chunks go to the slot
//! the manifest does not name, the manifest is written last, and only then
//! are the old slot's chunks removed. A reader thus sees the old value or
//! the new one, never a mix: one that raced a writer finds a chunk missing
//! or a digest that does not match, and reads again. A value that fits is
//! kept in the manifest itself (one item).
//!
//! # Locks
//!
//! [`TokenStore::lock`] is the file store's lock in the same folder: the
//! refresh lock stays cross-process whatever store holds the tokens. Writes
//! (save, remove) take one more file lock there, so two processes never
//! interleave their read-modify-write of an item or of the index; reads
//! take none.
//!
//! # Moving from the file store
//!
//! Tokens saved before the keychain was chosen stay usable: a server's
//! entries missing from the keychain are read from the file store of the
//! same folder, and saving an entry to the keychain removes its copy from
//! the file (the secret leaves the disk). Removing removes from both.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{BlockingStore, FileStore, LoginKey, StoreError, StoredAuth};

/// The format of what this store writes; a manifest of another is refused.
const FORMAT: u32 = 1;
/// The account of the index of servers.
const INDEX: &str = "index";
/// The key of the file lock that serializes writers (a name no canonical
/// server URI can have).
const WRITE_LOCK: &str = "mcp-stack keyring writes";
/// Reads of a chunked value before a torn one is called damaged.
const READ_ATTEMPTS: usize = 3;
/// The most chunks a manifest may name (a budget against a damaged one).
const MAX_CHUNKS: usize = 1024;
/// The smallest chunk limit: a chunked value's manifest must fit in one item.
const MIN_CHUNK_LIMIT: usize = 256;

/// The largest item this store writes on this platform, in bytes of UTF-8.
/// Windows keeps 2560 bytes of blob, and the text is written as UTF-16 (at
/// most two bytes per UTF-8 byte); elsewhere items are large, the limit
/// only bounds one item.
#[cfg(windows)]
const DEFAULT_CHUNK_LIMIT: usize = 1200;
#[cfg(not(windows))]
const DEFAULT_CHUNK_LIMIT: usize = 32 * 1024;

/// A [`TokenStore`](super::TokenStore) in the OS credential store (see the module docs for its
/// layout, its locks and how it reads tokens the file store kept).
///
/// Calls block (the OS store may ask the user to unlock it); each runs on a
/// thread of its own, so calling from inside an async runtime is safe.
#[derive(Clone)]
pub struct KeyringStore {
    service: String,
    files: FileStore,
    chunk_limit: usize,
    items: Arc<dyn Items>,
}

impl fmt::Debug for KeyringStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyringStore")
            .field("service", &self.service)
            .field("folder", &self.files.dir())
            .field("chunk_limit", &self.chunk_limit)
            .finish_non_exhaustive()
    }
}

impl KeyringStore {
    /// The service name items are kept under unless told otherwise.
    pub const DEFAULT_SERVICE: &'static str = "mcp-stack";

    /// A store in the OS credential store whose locks (and the tokens kept
    /// before, read until replaced) are `files`'s folder.
    pub fn new(files: FileStore) -> Self {
        KeyringStore {
            service: Self::DEFAULT_SERVICE.to_owned(),
            files,
            chunk_limit: DEFAULT_CHUNK_LIMIT,
            items: Arc::new(os::Os {
                service: Self::DEFAULT_SERVICE.to_owned(),
            }),
        }
    }

    /// The store beside the default file store's folder (see
    /// [`FileStore::default_location`]).
    pub fn default_location() -> Result<Self, StoreError> {
        Ok(Self::new(FileStore::default_location()?))
    }

    /// Keeps items under this service name instead (separate stores, tests).
    pub fn service(mut self, name: impl Into<String>) -> Self {
        self.service = name.into();
        self.items = Arc::new(os::Os {
            service: self.service.clone(),
        });
        self
    }

    /// Splits values larger than this many bytes into chunks (default: the
    /// platform's limit; at least 256).
    pub fn chunk_limit(mut self, bytes: usize) -> Self {
        self.chunk_limit = bytes.max(MIN_CHUNK_LIMIT);
        self
    }

    /// The file store beside it (its locks, and tokens kept before).
    pub fn files(&self) -> &FileStore {
        &self.files
    }

    /// Whether the OS credential store answers (reads the index; nothing is
    /// written). A locked store may ask the user to unlock it.
    pub fn probe(&self) -> Result<(), StoreError> {
        self.off_thread(|| {
            self.read_value(INDEX)
                .map(|_| ())
                .map_err(|f| self.error(INDEX, None, f))
        })
    }

    #[cfg(test)]
    fn with_items(files: FileStore, items: Arc<dyn Items>) -> Self {
        KeyringStore {
            service: "test".into(),
            files,
            chunk_limit: DEFAULT_CHUNK_LIMIT,
            items,
        }
    }

    /// Runs `f` on a thread of its own: the Secret Service client blocks on
    /// an executor of its own, which must not be a thread of the caller's
    /// async runtime.
    fn off_thread<T: Send>(
        &self,
        f: impl FnOnce() -> Result<T, StoreError> + Send,
    ) -> Result<T, StoreError> {
        std::thread::scope(|s| {
            s.spawn(f).join().unwrap_or_else(|_| {
                Err(StoreError::Keychain {
                    item: self.service.clone(),
                    message: "the keychain client panicked".into(),
                })
            })
        })
    }

    fn error(&self, account: &str, server: Option<&str>, fault: Fault) -> StoreError {
        let item = match server {
            Some(server) => format!("{}/{account} ({server})", self.service),
            None => format!("{}/{account}", self.service),
        };
        match fault {
            Fault::Keychain(message) => StoreError::Keychain { item, message },
            Fault::Damaged(message) => StoreError::Damaged {
                path: PathBuf::from(format!("keychain item {item}")),
                message,
            },
        }
    }

    // ---- one logical value: a manifest and, when large, its chunks ----

    fn read_value(&self, account: &str) -> Result<Option<String>, Fault> {
        let mut why = String::new();
        for _ in 0..READ_ATTEMPTS {
            let Some(text) = self.items.get(account)? else {
                return Ok(None);
            };
            let manifest = Manifest::parse(&text)?;
            let Some((slot, count, digest)) = manifest.chunked()? else {
                return Ok(manifest.data);
            };
            let mut value = String::new();
            let mut torn = false;
            for n in 0..count {
                match self.items.get(&chunk_account(account, slot, n))? {
                    Some(chunk) => value.push_str(&chunk),
                    None => {
                        torn = true;
                        break;
                    }
                }
            }
            if !torn && hex(&Sha256::digest(value.as_bytes())) == digest {
                return Ok(Some(value));
            }
            why = if torn {
                "a chunk it names is missing".into()
            } else {
                "its chunks do not match its digest".into()
            };
        }
        Err(Fault::Damaged(format!(
            "{why} (read {READ_ATTEMPTS} times)"
        )))
    }

    /// Writes a value; the caller holds the write lock.
    fn write_value(&self, account: &str, value: &str) -> Result<(), Fault> {
        let inline = Manifest::inline(value).to_json()?;
        if inline.len() <= self.chunk_limit {
            self.items.set(account, &inline)?;
            self.sweep(account, Slot::A)?;
            return self.sweep(account, Slot::B);
        }
        // The slot the current manifest does not name (a damaged or inline
        // one names none: start at `a`, swept first of a crashed write's
        // leftovers).
        let old = self
            .items
            .get(account)?
            .and_then(|text| Manifest::parse(&text).ok())
            .and_then(|m| m.slot);
        let slot = old.map_or(Slot::A, Slot::other);
        self.sweep(account, slot)?;
        let chunks = split(value, self.chunk_limit);
        for (n, chunk) in chunks.iter().enumerate() {
            self.items.set(&chunk_account(account, slot, n), chunk)?;
        }
        let manifest = Manifest {
            v: FORMAT,
            data: None,
            slot: Some(slot),
            chunks: chunks.len(),
            sha256: Some(hex(&Sha256::digest(value.as_bytes()))),
        };
        self.items.set(account, &manifest.to_json()?)?;
        self.sweep(account, slot.other())
    }

    /// Removes a value (its manifest first, then both slots' chunks,
    /// without reading the manifest: a damaged value goes too). Whether
    /// there was one.
    fn delete_value(&self, account: &str) -> Result<bool, Fault> {
        let had = self.items.delete(account)?;
        self.sweep(account, Slot::A)?;
        self.sweep(account, Slot::B)?;
        Ok(had)
    }

    /// Removes a slot's chunks (written in order, so they end at the first
    /// missing one).
    fn sweep(&self, account: &str, slot: Slot) -> Result<(), Fault> {
        for n in 0..MAX_CHUNKS {
            if !self.items.delete(&chunk_account(account, slot, n))? {
                break;
            }
        }
        Ok(())
    }

    // ---- the entries of a server, and the index ----

    fn read_server(&self, identity: &str, server: &str) -> Result<Option<ServerItem>, StoreError> {
        let account = account(identity_of(identity), server);
        let fail = |f| self.error(&account, Some(server), f);
        let Some(text) = self.read_value(&account).map_err(fail)? else {
            return Ok(None);
        };
        let item: ServerItem = serde_json::from_str(&text)
            .map_err(|e| fail(Fault::Damaged(format!("not a server's entries: {e}"))))?;
        if item.server != server || item.identity.as_deref().unwrap_or_default() != identity {
            return Err(fail(Fault::Damaged(
                "it holds another server's entries".into(),
            )));
        }
        Ok(Some(item))
    }

    fn write_server(&self, item: &ServerItem) -> Result<(), StoreError> {
        let account = account(item.identity.as_deref(), &item.server);
        let fail = |f| self.error(&account, Some(&item.server), f);
        if item.entries.is_empty() {
            return self.delete_value(&account).map(|_| ()).map_err(fail);
        }
        let text = serde_json::to_string(item)
            .map_err(|e| fail(Fault::Keychain(format!("cannot encode the entry: {e}"))))?;
        self.write_value(&account, &text).map_err(fail)
    }

    fn read_index(&self) -> Result<Index, StoreError> {
        let fail = |f| self.error(INDEX, None, f);
        match self.read_value(INDEX).map_err(fail)? {
            None => Ok(Index::default()),
            Some(text) => serde_json::from_str(&text)
                .map_err(|e| fail(Fault::Damaged(format!("not an index of servers: {e}")))),
        }
    }

    /// Adds or drops a server in the index; the caller holds the write lock.
    fn update_index(&self, identity: &str, server: &str, present: bool) -> Result<(), StoreError> {
        let mut index = self.read_index()?;
        let this = |s: &IndexEntry| {
            s.server == server && s.identity.as_deref().unwrap_or_default() == identity
        };
        let listed = index.servers.iter().any(this);
        if listed == present {
            return Ok(());
        }
        index.servers.retain(|s| !this(s));
        if present {
            index.servers.push(IndexEntry {
                server: server.to_owned(),
                identity: identity_of(identity).map(str::to_owned),
            });
        }
        let fail = |f| self.error(INDEX, None, f);
        let text = serde_json::to_string(&index)
            .map_err(|e| fail(Fault::Keychain(format!("cannot encode the index: {e}"))))?;
        self.write_value(INDEX, &text).map_err(fail)
    }

    fn write_lock(&self) -> Result<Box<dyn Send + Sync>, StoreError> {
        let key = LoginKey {
            identity: String::new(),
            server: WRITE_LOCK.to_owned(),
            issuer: String::new(),
        };
        BlockingStore::lock(&self.files, &key)
    }
}

/// The identity as the items spell it: none for the single user (`""`),
/// so the single user's items keep the names they had before identities.
fn identity_of(identity: &str) -> Option<&str> {
    Some(identity).filter(|i| !i.is_empty())
}

impl BlockingStore for KeyringStore {
    fn load(&self, identity: &str, server: &str) -> Result<Vec<StoredAuth>, StoreError> {
        self.off_thread(|| {
            let mut entries = self
                .read_server(identity, server)?
                .map(|i| i.entries)
                .unwrap_or_default();
            // Kept by the file store before the keychain was chosen.
            for old in BlockingStore::load(&self.files, identity, server)? {
                if !entries.iter().any(|e| e.issuer == old.issuer) {
                    entries.push(old);
                }
            }
            Ok(entries)
        })
    }

    fn save(&self, entry: &StoredAuth) -> Result<(), StoreError> {
        self.off_thread(|| {
            let _writing = self.write_lock()?;
            let mut item = self
                .read_server(&entry.identity, &entry.server)?
                .unwrap_or_else(|| ServerItem {
                    server: entry.server.clone(),
                    identity: identity_of(&entry.identity).map(str::to_owned),
                    entries: Vec::new(),
                });
            item.entries.retain(|e| e.issuer != entry.issuer);
            item.entries.push(entry.clone());
            // Listed first: a crash between leaves a listed server without
            // entries (skipped), never entries nobody lists.
            self.update_index(&entry.identity, &entry.server, true)?;
            self.write_server(&item)?;
            // The secret leaves the disk now that the keychain holds it.
            if let Err(e) = BlockingStore::remove(
                &self.files,
                &entry.identity,
                &entry.server,
                Some(&entry.issuer),
            ) {
                tracing::warn!(error = %e, "the file store's copy of a login moved to the keychain stays");
            }
            Ok(())
        })
    }

    fn remove(
        &self,
        identity: &str,
        server: &str,
        issuer: Option<&str>,
    ) -> Result<usize, StoreError> {
        self.off_thread(|| {
            let _writing = self.write_lock()?;
            let mut removed = BlockingStore::remove(&self.files, identity, server, issuer)?;
            let account = account(identity_of(identity), server);
            match issuer {
                // Everything, without reading it: a damaged item goes too.
                None => {
                    let count = self
                        .read_server(identity, server)
                        .map_or(1, |i| i.map_or(0, |i| i.entries.len()));
                    let had = self
                        .delete_value(&account)
                        .map_err(|f| self.error(&account, Some(server), f))?;
                    removed += if had { count.max(1) } else { 0 };
                }
                Some(issuer) => {
                    if let Some(mut item) = self.read_server(identity, server)? {
                        let before = item.entries.len();
                        item.entries.retain(|e| e.issuer != issuer);
                        removed += before - item.entries.len();
                        self.write_server(&item)?;
                        if !item.entries.is_empty() {
                            return Ok(removed);
                        }
                    }
                }
            }
            self.update_index(identity, server, false)?;
            Ok(removed)
        })
    }

    fn list(&self) -> Result<Vec<StoredAuth>, StoreError> {
        self.off_thread(|| {
            let mut out = Vec::new();
            for listed in self.read_index()?.servers {
                // A listed server whose item is gone (a crash mid-write) has none.
                let identity = listed.identity.as_deref().unwrap_or_default();
                if let Some(item) = self.read_server(identity, &listed.server)? {
                    out.extend(item.entries);
                }
            }
            for old in BlockingStore::list(&self.files)? {
                if !out.iter().any(|e| {
                    e.identity == old.identity && e.server == old.server && e.issuer == old.issuer
                }) {
                    out.push(old);
                }
            }
            out.sort_by(|a, b| {
                (&a.identity, &a.server, &a.issuer).cmp(&(&b.identity, &b.server, &b.issuer))
            });
            Ok(out)
        })
    }

    fn lock(&self, key: &LoginKey) -> Result<Box<dyn Send + Sync>, StoreError> {
        // The file store's: cross-process, whichever store holds the tokens.
        BlockingStore::lock(&self.files, key)
    }
}

/// The account name of a server's entries: from the identity the entries
/// belong to (none yet: one user per store) and the server's canonical URI,
/// hashed so that the name stays short (Windows allows 513 characters).
fn account(identity: Option<&str>, server: &str) -> String {
    let key = serde_json::json!([identity, server]).to_string();
    let digest = Sha256::digest(key.as_bytes());
    let short = digest.get(..12).unwrap_or_default();
    format!("server-{}", hex(short))
}

fn chunk_account(account: &str, slot: Slot, n: usize) -> String {
    format!("{account}.{}.{n}", slot.name())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `value` in pieces of at most `limit` bytes, cut between characters.
fn split(value: &str, limit: usize) -> Vec<&str> {
    let limit = limit.max(4);
    let mut out = Vec::new();
    let mut rest = value;
    while !rest.is_empty() {
        let mut end = limit.min(rest.len());
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (head, tail) = rest.split_at(end);
        out.push(head);
        rest = tail;
    }
    out
}

/// Why an item could not be had.
enum Fault {
    /// The OS store failed or refused (locked, no service, …).
    Keychain(String),
    /// What it holds is not what this store wrote.
    Damaged(String),
}

/// Which chunks are current.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Slot {
    A,
    B,
}

impl Slot {
    fn other(self) -> Slot {
        match self {
            Slot::A => Slot::B,
            Slot::B => Slot::A,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Slot::A => "a",
            Slot::B => "b",
        }
    }
}

/// What the item under an account holds: the value, or where its chunks
/// are. (No `Debug`: `data` is secret.)
#[derive(Serialize, Deserialize)]
struct Manifest {
    v: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    slot: Option<Slot>,
    #[serde(default, skip_serializing_if = "is_zero")]
    chunks: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Manifest {
    fn inline(value: &str) -> Self {
        Manifest {
            v: FORMAT,
            data: Some(value.to_owned()),
            slot: None,
            chunks: 0,
            sha256: None,
        }
    }

    fn parse(text: &str) -> Result<Self, Fault> {
        // serde_json's messages name positions, never the text.
        let manifest: Manifest = serde_json::from_str(text)
            .map_err(|e| Fault::Damaged(format!("not a manifest this store wrote: {e}")))?;
        if manifest.v != FORMAT {
            return Err(Fault::Damaged(format!(
                "written in format {} (this version reads {FORMAT}): a newer version wrote it",
                manifest.v
            )));
        }
        Ok(manifest)
    }

    /// The slot, count and digest of a chunked value; `None` for an inline one.
    fn chunked(&self) -> Result<Option<(Slot, usize, &str)>, Fault> {
        match (&self.data, self.slot, &self.sha256) {
            (Some(_), None, None) if self.chunks == 0 => Ok(None),
            (None, Some(slot), Some(digest)) if (1..=MAX_CHUNKS).contains(&self.chunks) => {
                Ok(Some((slot, self.chunks, digest)))
            }
            _ => Err(Fault::Damaged(
                "its manifest names neither a value nor its chunks".into(),
            )),
        }
    }

    fn to_json(&self) -> Result<String, Fault> {
        serde_json::to_string(self).map_err(|e| Fault::Keychain(format!("cannot encode: {e}")))
    }
}

/// A server's entries, as one item.
#[derive(Serialize, Deserialize)]
struct ServerItem {
    server: String,
    /// Whose entries (room for the identity the key will carry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    identity: Option<String>,
    #[serde(default)]
    entries: Vec<StoredAuth>,
}

/// The servers that have entries.
#[derive(Serialize, Deserialize, Default)]
struct Index {
    #[serde(default)]
    servers: Vec<IndexEntry>,
}

#[derive(Serialize, Deserialize)]
struct IndexEntry {
    server: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    identity: Option<String>,
}

/// Items by account name under one service: the OS store, or memory in
/// the unit tests.
trait Items: Send + Sync {
    /// The item's text, `None` when there is none.
    fn get(&self, account: &str) -> Result<Option<String>, Fault>;
    /// Writes (creates or replaces) the item.
    fn set(&self, account: &str, value: &str) -> Result<(), Fault>;
    /// Removes the item; whether there was one.
    fn delete(&self, account: &str) -> Result<bool, Fault>;
}

mod os {
    //! The OS credential store through the `keyring` crate.

    use super::{Fault, Items};

    /// Items of one service in the OS store.
    pub(super) struct Os {
        pub(super) service: String,
    }

    /// Whether this target has an OS store the `keyring` crate reaches
    /// (elsewhere it would fall back to a store in memory: refused instead).
    const SUPPORTED: bool = cfg!(any(
        target_os = "macos",
        windows,
        target_os = "linux",
        target_os = "freebsd",
        target_os = "openbsd"
    ));

    impl Os {
        fn entry(&self, account: &str) -> Result<keyring::Entry, Fault> {
            if !SUPPORTED {
                return Err(Fault::Keychain(
                    "this platform has no OS credential store this build can use".into(),
                ));
            }
            keyring::Entry::new(&self.service, account).map_err(|e| Fault::Keychain(describe(&e)))
        }
    }

    impl Items for Os {
        fn get(&self, account: &str) -> Result<Option<String>, Fault> {
            match self.entry(account)?.get_password() {
                Ok(text) => Ok(Some(text)),
                Err(keyring::Error::NoEntry) => Ok(None),
                Err(keyring::Error::BadEncoding(_)) => {
                    Err(Fault::Damaged("the item is not UTF-8 text".into()))
                }
                Err(e) => Err(Fault::Keychain(describe(&e))),
            }
        }

        fn set(&self, account: &str, value: &str) -> Result<(), Fault> {
            self.entry(account)?
                .set_password(value)
                .map_err(|e| Fault::Keychain(describe(&e)))
        }

        fn delete(&self, account: &str) -> Result<bool, Fault> {
            match self.entry(account)?.delete_credential() {
                Ok(()) => Ok(true),
                Err(keyring::Error::NoEntry) => Ok(false),
                Err(e) => Err(Fault::Keychain(describe(&e))),
            }
        }
    }

    /// What went wrong, never the item's content (`BadEncoding` carries it).
    fn describe(e: &keyring::Error) -> String {
        match e {
            keyring::Error::NoStorageAccess(inner) => {
                format!("the credential store refused access (is it locked?): {inner}")
            }
            keyring::Error::PlatformFailure(inner) => {
                format!("the credential store failed: {inner}")
            }
            keyring::Error::BadEncoding(_) => "an item is not UTF-8 text".into(),
            keyring::Error::TooLong(what, limit) => {
                format!("{what} is longer than the credential store's limit of {limit}")
            }
            keyring::Error::Invalid(what, why) => format!("{what} is invalid: {why}"),
            keyring::Error::Ambiguous(items) => {
                format!("{} items match one account", items.len())
            }
            keyring::Error::NoEntry => "no such item".into(),
            _ => "the credential store failed".into(),
        }
    }
}

#[cfg(test)]
#[path = "keychain_tests.rs"]
mod tests;
