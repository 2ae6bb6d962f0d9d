//! The persisted catalog: what each server offered, kept in files of the
//! user's cache folder so that a new process starts from it, and the
//! pinned tool definitions beside it ([`pins`]).
//!
//! One file per server and config fingerprint (and, for results a server
//! marks `cacheScope: "private"` or fetches under an authorization, per
//! authorization context: such a file is never read under another
//! context): the `initialize` or `server/discover` result and the tools,
//! resources, resource templates and prompts lists. Its format and its
//! safety (atomic writes, an authenticated versioned envelope, bounded
//! reads) are [`file`]'s.
//!
//! Freshness: a result is fresh for the server's `ttlMs` (2026-07-28's
//! caching hint, taken from its `server/discover` result); a server that
//! gives none (every older revision) is taken as fresh for
//! [`CatalogCache::fresh_for`] (10 minutes by default), then as stale:
//! still handed out at once by the runtime while the server is connected
//! in the background (the spec allows serving stale data while
//! re-fetching), but `mcp tools` goes to the server. A file older than
//! [`CatalogCache::max_age`] (7 days) is not used at all.
//!
//! Size: a file over [`CatalogCache::max_entry_bytes`] is not written (nor
//! read); after a write, when the folder's entries exceed
//! [`CatalogCache::max_total_bytes`], the least recently written are
//! removed, under the folder's lock file. The folder's sizes are read only
//! when this process's writes since the last such scan may pass the bound,
//! or that scan is over 30 s old (other processes write too), so a start
//! that saves one entry per server does not read every entry's size each
//! time. Pins live in their own files and are never evicted.

pub(crate) mod diff;
pub(crate) mod file;
pub mod pins;

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_stack_config::{Fingerprint, ResolvedServer, TransportConfig};
use mcp_stack_session::protocol::results::CacheHints;
use mcp_stack_session::types::{
    InitializeResult, LazyTool, Prompt, Resource, ResourceTemplate, Tool,
};
use serde::{Deserialize, Serialize};

use self::file::{DirLock, Kind};
pub use self::pins::{
    PinEvent, PinListener, PinPolicy, PinReport, PinStatus, PinnedTool, ServerPins,
};

/// The default freshness of a result whose server gave no `ttlMs`.
pub const DEFAULT_FRESH_FOR: Duration = Duration::from_secs(600);
/// The default age past which a persisted file is not used.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// The default bound on one server's file.
pub const DEFAULT_MAX_ENTRY_BYTES: u64 = 8 << 20;
/// The default bound on all the entries of a cache folder.
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 64 << 20;
/// The folder under the user's cache folder.
pub const CACHE_DIR_NAME: &str = "mcp-stack";

const LOCK_NAME: &str = "entries.lock";
const ENTRY_EXT: &str = "entry";

/// Where the catalog persists, how long its results are trusted, and how
/// changed tool definitions are handled. Give it to
/// [`RuntimeOptions::catalog_cache`](crate::RuntimeOptions::catalog_cache).
#[derive(Clone)]
#[non_exhaustive]
pub struct CatalogCache {
    /// The folder (made 0700 if missing).
    pub dir: PathBuf,
    /// Freshness of a result without a `ttlMs` hint. Default 10 minutes.
    pub fresh_for: Duration,
    /// Files older than this are not used. Default 7 days.
    pub max_age: Duration,
    /// The bound on one server's file. Default 8 MiB.
    pub max_entry_bytes: u64,
    /// The bound on the folder's entries (pins not counted). Default 64 MiB.
    pub max_total_bytes: u64,
    /// The authorization context private results are kept under (an
    /// identity, a token's subject…); `None` is one context of its own.
    pub auth_context: Option<String>,
    /// Hand out the persisted catalog at once and connect in the
    /// background (`acquire`). Default on; off, servers are started before
    /// `acquire` returns, as without a cache, and the cache is only
    /// written (and read back for servers that fail to start).
    pub background_connect: bool,
    /// What to do with a tool whose definition differs from its pin.
    /// Default [`PinPolicy::Warn`].
    pub pinning: PinPolicy,
    /// Per server (by its name in the config), a policy other than
    /// `pinning`; wins over the server's `pinning` key in the config, which
    /// wins over `pinning`.
    pub server_pinning: BTreeMap<String, PinPolicy>,
    /// Told of every pin event (a tool changed, added, removed) as it is
    /// first seen. One server's events come in order, from one thread;
    /// several servers are compared at once, on threads of their own, so
    /// their events may interleave.
    pub on_pin_event: Option<PinListener>,
}

impl std::fmt::Debug for CatalogCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CatalogCache")
            .field("dir", &self.dir)
            .field("fresh_for", &self.fresh_for)
            .field("max_age", &self.max_age)
            .field("max_entry_bytes", &self.max_entry_bytes)
            .field("max_total_bytes", &self.max_total_bytes)
            .field("auth_context", &self.auth_context.as_ref().map(|_| "<set>"))
            .field("background_connect", &self.background_connect)
            .field("pinning", &self.pinning)
            .field("server_pinning", &self.server_pinning)
            .finish_non_exhaustive()
    }
}

impl CatalogCache {
    /// A cache in `dir`, with the defaults.
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        CatalogCache {
            dir: dir.into(),
            fresh_for: DEFAULT_FRESH_FOR,
            max_age: DEFAULT_MAX_AGE,
            max_entry_bytes: DEFAULT_MAX_ENTRY_BYTES,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
            auth_context: None,
            background_connect: true,
            pinning: PinPolicy::Warn,
            server_pinning: BTreeMap::new(),
            on_pin_event: None,
        }
    }

    /// The user's cache folder: `$XDG_CACHE_HOME/mcp-stack`, else
    /// `~/.cache/mcp-stack`; `None` when neither variable is set.
    pub fn user_dir() -> Option<PathBuf> {
        let non_empty = |v: std::ffi::OsString| (!v.is_empty()).then_some(v);
        if let Some(x) = std::env::var_os("XDG_CACHE_HOME").and_then(non_empty) {
            return Some(PathBuf::from(x).join(CACHE_DIR_NAME));
        }
        let home = std::env::var_os("HOME").and_then(non_empty)?;
        Some(PathBuf::from(home).join(".cache").join(CACHE_DIR_NAME))
    }

    /// Sets the authorization context private results are kept under.
    pub fn auth_context(mut self, context: Option<String>) -> Self {
        self.auth_context = context;
        self
    }

    /// Sets the freshness of results without a `ttlMs` hint.
    pub fn fresh_for(mut self, fresh_for: Duration) -> Self {
        self.fresh_for = fresh_for;
        self
    }

    /// Sets the size bounds: one file, and the folder's entries in all.
    pub fn max_bytes(mut self, entry: u64, total: u64) -> Self {
        self.max_entry_bytes = entry;
        self.max_total_bytes = total;
        self
    }

    /// Turns background connecting on or off.
    pub fn background_connect(mut self, on: bool) -> Self {
        self.background_connect = on;
        self
    }

    /// Sets the pinning policy of every server without its own.
    pub fn pinning(mut self, policy: PinPolicy) -> Self {
        self.pinning = policy;
        self
    }

    /// Sets one server's pinning policy.
    pub fn server_pinning(mut self, server: impl Into<String>, policy: PinPolicy) -> Self {
        self.server_pinning.insert(server.into(), policy);
        self
    }

    /// Sets the listener of pin events.
    pub fn on_pin_event(mut self, listener: PinListener) -> Self {
        self.on_pin_event = Some(listener);
        self
    }

    /// The policy for `server`: its entry in `server_pinning`, else its
    /// config's `pinning` key, else `pinning`.
    pub(crate) fn policy_for(&self, server: &ResolvedServer) -> PinPolicy {
        if let Some(p) = self.server_pinning.get(&server.name) {
            return *p;
        }
        match server.pinning {
            Some(mcp_stack_config::ToolPinning::Block) => PinPolicy::Block,
            Some(mcp_stack_config::ToolPinning::Off) => PinPolicy::Off,
            Some(mcp_stack_config::ToolPinning::Warn) => PinPolicy::Warn,
            _ => self.pinning,
        }
    }
}

/// One server's lists as persisted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ServerRecord {
    pub(crate) server: String,
    pub(crate) fingerprint: String,
    /// When it was fetched, in milliseconds since the Unix epoch.
    pub(crate) saved_at_ms: u64,
    /// The server's `ttlMs`, if it gave one.
    pub(crate) ttl_ms: Option<u64>,
    pub(crate) private: bool,
    pub(crate) protocol: String,
    /// The `initialize` (or `server/discover`) result, as JSON text: kept
    /// for whoever reads the file, never parsed by a start from the cache,
    /// which has no use for it (the protocol revision is its own field).
    pub(crate) info: Option<Box<serde_json::value::RawValue>>,
    /// Read with their schemas kept as text ([`LazyTool`]): a start from
    /// the cache parses a schema only when something looks into it.
    #[serde(deserialize_with = "lazy_tools")]
    pub(crate) tools: Vec<Tool>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
    pub(crate) prompts: Vec<Prompt>,
    /// Each tool's pin hash ([`pins::definition_hash`]), by name, as
    /// computed when the record was written: a start from the cache
    /// compares them with the pins without writing every definition out
    /// again. The file's MAC covers them with the tools.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) pin_hashes: BTreeMap<String, String>,
}

/// The record's tools, their schemas kept as text. Takes serde_json's own
/// reader ([`ServerRecord::parse`]).
fn lazy_tools<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Tool>, D::Error> {
    Ok(Vec::<LazyTool>::deserialize(d)?
        .into_iter()
        .map(|t| t.0)
        .collect())
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl ServerRecord {
    /// A record from a file's body. The body is checked as UTF-8 once,
    /// whole, then parsed as text: parsing bytes checks every string on
    /// its own, and a record is mostly short strings (names, schema keys).
    pub(crate) fn parse(body: &[u8]) -> Option<ServerRecord> {
        let text = std::str::from_utf8(body).ok()?;
        serde_json::from_str(text).ok()
    }

    /// How long ago it was fetched.
    pub(crate) fn age(&self) -> Duration {
        Duration::from_millis(now_ms().saturating_sub(self.saved_at_ms))
    }

    /// How long it is fresh for: the server's TTL, else the heuristic.
    pub(crate) fn fresh_for(&self, heuristic: Duration) -> Duration {
        self.ttl_ms.map_or(heuristic, Duration::from_millis)
    }

    /// The hints of an `initialize` or `server/discover` result.
    pub(crate) fn hints_of(info: &InitializeResult) -> Option<CacheHints> {
        let value = serde_json::to_value(info).ok()?;
        let has_ttl = value.get("ttlMs").is_some();
        let hints = CacheHints::of(&value);
        (has_ttl || hints.private).then_some(hints)
    }
}

/// Whether a server's results are fetched under an authorization (an
/// OAuth block, or a configured `Authorization` header): then they are kept
/// per authorization context even without a `private` hint.
pub(crate) fn authorized(server: &ResolvedServer) -> bool {
    if server.oauth.is_some() {
        return true;
    }
    match &server.transport {
        TransportConfig::Http { headers, .. } => headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization")),
        _ => false,
    }
}

/// How long a scan of the folder's sizes is trusted, with this process's
/// own writes added to it, before a write scans again.
const RESCAN_AFTER: Duration = Duration::from_secs(30);

/// An open cache folder.
pub(crate) struct Persist {
    pub(crate) options: CatalogCache,
    key: [u8; 32],
    pub(crate) pins: pins::PinStore,
    usage: std::sync::Mutex<Usage>,
}

/// What this process knows of the folder's entries' size: the last scan's
/// total (after eviction) and every byte written since.
#[derive(Default)]
struct Usage {
    bytes: u64,
    scanned: Option<std::time::Instant>,
}

impl std::fmt::Debug for Persist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Persist")
            .field("dir", &self.options.dir)
            .finish_non_exhaustive()
    }
}

impl Persist {
    /// Opens (makes) the folder and its key.
    pub(crate) fn open(options: CatalogCache) -> io::Result<Arc<Persist>> {
        file::create_dir(&options.dir)?;
        let key =
            crate::fingerprint_key::load_or_create_key(&options.dir).map_err(io::Error::other)?;
        let key = *key.expose_bytes();
        let pins = pins::PinStore::new(options.dir.join("pins"), key);
        Ok(Arc::new(Persist {
            options,
            key,
            pins,
            usage: std::sync::Mutex::default(),
        }))
    }

    fn entry_path(
        &self,
        name: &str,
        fingerprint: &Fingerprint,
        private: bool,
        identity: &str,
    ) -> PathBuf {
        // A private result is the authorization context's and the agent
        // session's identity's alone (two users of one runtime never read
        // each other's); a public one is shared.
        let scope = if private {
            serde_json::json!([
                "private",
                self.options.auth_context.as_deref().unwrap_or(""),
                identity
            ])
            .to_string()
        } else {
            "public".to_owned()
        };
        let name = file::hmac(
            &self.key,
            &[
                b"entry\0",
                name.as_bytes(),
                b"\0",
                fingerprint.as_bytes(),
                scope.as_bytes(),
            ],
        );
        let hex = base16ct::lower::encode_string(name.get(..16).unwrap_or_default());
        self.options.dir.join(format!("{hex}.{ENTRY_EXT}"))
    }

    /// The persisted lists of `server` under its fingerprint (and, for
    /// private ones, this cache's authorization context and `identity`, the
    /// agent session's user), if any usable are kept.
    pub(crate) fn load(&self, server: &ResolvedServer, identity: &str) -> Option<ServerRecord> {
        let hex = server.fingerprint.to_hex();
        // One scope's file at a time: a save removes the other scope's (of
        // this identity), so the first file found is the latest. Looked
        // for in the likelier scope first, which is one `open` for most
        // servers: private (this context's and identity's alone) for a
        // server the config authorizes, whose results are always private;
        // public for the others.
        let order = if authorized(server) {
            [true, false]
        } else {
            [false, true]
        };
        for private in order {
            let path = self.entry_path(&server.name, &server.fingerprint, private, identity);
            let body = match file::read(&path, &self.key, Kind::Entry, self.options.max_entry_bytes)
            {
                Ok(Some(b)) => b,
                Ok(None) => continue,
                Err(e) => {
                    tracing::debug!(path = %path.display(), "cannot read persisted MCP catalog: {e}");
                    continue;
                }
            };
            let Some(record) = ServerRecord::parse(&body) else {
                tracing::warn!(path = %path.display(), "persisted MCP catalog does not parse; ignored");
                continue;
            };
            if record.fingerprint != hex
                || record.private != private
                || record.server != server.name
            {
                continue;
            }
            if record.age() > self.options.max_age {
                continue;
            }
            return Some(record);
        }
        None
    }

    /// Persists `record` (atomically), then evicts the oldest entries over
    /// the folder's bound.
    pub(crate) fn save(&self, fingerprint: &Fingerprint, record: &ServerRecord, identity: &str) {
        let body = match serde_json::to_vec(record) {
            Ok(b) => b,
            Err(e) => {
                tracing::debug!(server = %record.server, "cannot encode MCP catalog: {e}");
                return;
            }
        };
        if body.len() as u64 > self.options.max_entry_bytes {
            tracing::info!(
                server = %record.server,
                bytes = body.len(),
                limit = self.options.max_entry_bytes,
                "MCP catalog too large to persist"
            );
            return;
        }
        let path = self.entry_path(&record.server, fingerprint, record.private, identity);
        // The other scope's file of this fingerprint is now out of date.
        let other = self.entry_path(&record.server, fingerprint, !record.private, identity);
        if let Err(e) = file::write(&path, &self.key, Kind::Entry, &body) {
            tracing::warn!(path = %path.display(), "cannot persist MCP catalog: {e}");
            return;
        }
        let _ = fs::remove_file(other);
        if self.over_or_unknown(body.len() as u64) {
            match evict_dir(&self.options.dir, self.options.max_total_bytes) {
                Ok(total) => self.scanned(total),
                Err(e) => {
                    tracing::debug!(dir = %self.options.dir.display(), "cache eviction failed: {e}");
                }
            }
        }
    }

    /// Counts `written` bytes; whether the folder must be scanned (and the
    /// oldest entries evicted): when the count may pass the bound, or the
    /// last scan is too old to trust (other processes write too). A start
    /// saves one entry per server, and a scan per save read every entry's
    /// size each time: 10,000 `stat`s for 100 servers.
    fn over_or_unknown(&self, written: u64) -> bool {
        let mut usage = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        usage.bytes = usage.bytes.saturating_add(written);
        match usage.scanned {
            Some(at) => at.elapsed() >= RESCAN_AFTER || usage.bytes > self.options.max_total_bytes,
            None => true,
        }
    }

    /// Records a scan that left `total` bytes of entries.
    fn scanned(&self, total: u64) {
        let mut usage = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        usage.bytes = total;
        usage.scanned = Some(std::time::Instant::now());
    }
}

/// Entries of `dir` (name, size, modified), oldest first.
fn entries(dir: &Path) -> io::Result<Vec<(PathBuf, u64, SystemTime)>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        let path = e.path();
        if path.extension().and_then(|x| x.to_str()) != Some(ENTRY_EXT) {
            continue;
        }
        let meta = e.metadata()?;
        if meta.is_file() {
            out.push((path, meta.len(), meta.modified().unwrap_or(UNIX_EPOCH)));
        }
    }
    out.sort_by(|a, b| a.2.cmp(&b.2).then_with(|| a.0.cmp(&b.0)));
    Ok(out)
}

/// Evicts the oldest entries of `dir` while they are over `max_total`: the
/// bytes of entries left.
fn evict_dir(dir: &Path, max_total: u64) -> io::Result<u64> {
    let _lock = DirLock::take(dir, LOCK_NAME)?;
    let list = entries(dir)?;
    let mut total: u64 = list.iter().map(|e| e.1).sum();
    for (path, size, _) in list {
        if total <= max_total {
            break;
        }
        match fs::remove_file(&path) {
            Ok(()) => total = total.saturating_sub(size),
            Err(e) if e.kind() == io::ErrorKind::NotFound => total = total.saturating_sub(size),
            Err(e) => return Err(e),
        }
        tracing::debug!(path = %path.display(), "evicted persisted MCP catalog");
    }
    Ok(total)
}

/// The lines that say how the tool definition `new` differs from `old`
/// (JSON text, as [`PinnedTool`] keeps them): `description: "a" → "b"`,
/// `inputSchema.properties.x: added {…}`.
pub fn definition_diff(old: &str, new: &str) -> Vec<String> {
    let parse = |t: &str| serde_json::from_str(t).unwrap_or(serde_json::Value::Null);
    diff::diff(&parse(old), &parse(new))
}

/// Removes every persisted entry of `dir` (pins are kept: see
/// [`pins`]); none when the folder does not exist. For benchmarks and tests.
pub fn clear_cache_dir(dir: &Path) -> io::Result<usize> {
    if !dir.exists() {
        return Ok(0);
    }
    let _lock = DirLock::take(dir, LOCK_NAME)?;
    let list = entries(dir)?;
    let n = list.len();
    for (path, ..) in list {
        let _ = fs::remove_file(path);
    }
    Ok(n)
}

/// Removes the persisted catalogs of `dir` that were fetched under an
/// authorization or marked private (of the server named `server`, or of
/// every server with `None`), whatever the context or identity they were
/// kept for: what a logout calls, so that a catalog only a login could
/// fetch is not listed from the cache after it. Public catalogs and pins
/// are kept. Files that are damaged or not this folder's are left to the
/// next write. How many were removed; none when the folder does not exist.
pub fn forget_private(dir: &Path, server: Option<&str>) -> io::Result<usize> {
    if !dir.exists() {
        return Ok(0);
    }
    let key = crate::fingerprint_key::load_or_create_key(dir).map_err(io::Error::other)?;
    let key = *key.expose_bytes();
    let _lock = DirLock::take(dir, LOCK_NAME)?;
    let mut removed = 0;
    for (path, ..) in entries(dir)? {
        // Bounded by the folder's own bound: no entry this cache keeps is
        // larger, and a planted file is not read whole into memory.
        let Ok(Some(body)) = file::read(&path, &key, Kind::Entry, DEFAULT_MAX_TOTAL_BYTES) else {
            continue;
        };
        let Some(record) = ServerRecord::parse(&body) else {
            continue;
        };
        if record.private && server.is_none_or(|name| record.server == name) {
            match fs::remove_file(&path) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_stack_config::{FingerprintKey, Options, parse_str, resolve_with_key};

    fn server(json: &str) -> ResolvedServer {
        let loaded = parse_str(json, &Options::new()).unwrap();
        let key = FingerprintKey::from_bytes([3; 32]);
        let config = resolve_with_key(&loaded.config, &|_: &str| None, &key).unwrap();
        config.servers.into_values().next().unwrap()
    }

    fn record(server: &ResolvedServer, private: bool) -> ServerRecord {
        let info: InitializeResult = serde_json::from_value(serde_json::json!({
            "protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": {"name": "x", "version": "1"}
        }))
        .unwrap();
        ServerRecord {
            server: server.name.clone(),
            fingerprint: server.fingerprint.to_hex(),
            saved_at_ms: now_ms(),
            ttl_ms: None,
            private,
            protocol: "2025-11-25".into(),
            info: serde_json::value::to_raw_value(&info).ok(),
            tools: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
            pin_hashes: BTreeMap::new(),
        }
    }

    #[test]
    fn a_record_parses_from_its_bytes_and_not_from_invalid_utf8() {
        let s = server(r#"{"mcpServers": {"a": {"command": "x"}}}"#);
        let mut body = serde_json::to_vec(&record(&s, false)).unwrap();
        let parsed = ServerRecord::parse(&body).unwrap();
        assert_eq!((parsed.server.as_str(), parsed.private), ("a", false));
        // A byte that is not UTF-8 inside a string: the whole body is refused.
        let at = body.windows(3).position(|w| w == b"\"a\"").unwrap() + 1;
        body[at] = 0xff;
        assert!(ServerRecord::parse(&body).is_none());
    }

    #[test]
    fn private_results_are_never_read_under_another_authorization_context() {
        let dir = std::env::temp_dir().join(format!("mcp-persist-private-{}", std::process::id()));
        let s = server(
            r#"{"mcpServers": {"h": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer abcdefgh"}}}}"#,
        );
        assert!(authorized(&s));
        let open = |ctx: Option<&str>| {
            Persist::open(CatalogCache::in_dir(&dir).auth_context(ctx.map(str::to_owned))).unwrap()
        };
        open(Some("alice")).save(&s.fingerprint, &record(&s, true), "");
        assert!(open(Some("alice")).load(&s, "").is_some());
        assert!(open(Some("bob")).load(&s, "").is_none());
        assert!(open(None).load(&s, "").is_none());
        // A public record is shared by every context.
        open(Some("alice")).save(&s.fingerprint, &record(&s, false), "");
        assert!(open(Some("bob")).load(&s, "").is_some_and(|r| !r.private));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_save_in_one_scope_replaces_the_other_scopes_file() {
        let dir = std::env::temp_dir().join(format!("mcp-persist-scopes-{}", std::process::id()));
        // Not authorized by its config: a public file is looked for first.
        let s = server(r#"{"mcpServers": {"p": {"url": "https://example.com/p"}}}"#);
        assert!(!authorized(&s));
        let cache = Persist::open(CatalogCache::in_dir(&dir)).unwrap();
        let entries = || {
            fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "entry"))
                .count()
        };
        cache.save(&s.fingerprint, &record(&s, false), "");
        assert!(cache.load(&s, "").is_some_and(|r| !r.private));
        // The server's results turned private: the public file goes.
        cache.save(&s.fingerprint, &record(&s, true), "");
        assert!(cache.load(&s, "").is_some_and(|r| r.private));
        assert!(cache.load(&s, "another").is_none(), "not shared any more");
        assert_eq!(entries(), 1);
        // And public again: the private one goes.
        cache.save(&s.fingerprint, &record(&s, false), "");
        assert!(cache.load(&s, "").is_some_and(|r| !r.private));
        assert_eq!(entries(), 1);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn forgetting_private_catalogs_keeps_public_ones_and_other_servers() {
        let dir = std::env::temp_dir().join(format!("mcp-persist-forget-{}", std::process::id()));
        let authorized = |name: &str| {
            server(&format!(
                r#"{{"mcpServers": {{"{name}": {{"url": "https://example.com/{name}", "headers": {{"Authorization": "Bearer abcdefgh"}}}}}}}}"#
            ))
        };
        let (a, b) = (authorized("a"), authorized("b"));
        let public = server(r#"{"mcpServers": {"p": {"url": "https://example.com/p"}}}"#);
        let cache =
            Persist::open(CatalogCache::in_dir(&dir).auth_context(Some("ctx".into()))).unwrap();
        cache.save(&a.fingerprint, &record(&a, true), "");
        cache.save(&a.fingerprint, &record(&a, true), "user-2");
        cache.save(&b.fingerprint, &record(&b, true), "");
        cache.save(&public.fingerprint, &record(&public, false), "");
        assert_eq!(forget_private(&dir, Some("a")).unwrap(), 2);
        assert!(cache.load(&a, "").is_none() && cache.load(&a, "user-2").is_none());
        assert!(cache.load(&b, "").is_some());
        assert_eq!(forget_private(&dir, None).unwrap(), 1);
        assert!(cache.load(&b, "").is_none());
        assert!(cache.load(&public, "").is_some());
        assert_eq!(forget_private(&dir.join("absent"), None).unwrap(), 0);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_save_scans_the_folder_only_when_its_bound_may_be_passed() {
        let dir = std::env::temp_dir().join(format!("mcp-persist-scan-{}", std::process::id()));
        let cache = Persist::open(CatalogCache::in_dir(&dir).max_bytes(1000, 10_000)).unwrap();
        assert!(cache.over_or_unknown(100), "nothing known yet: scan");
        cache.scanned(4_000);
        assert!(!cache.over_or_unknown(3_000), "7,000 of 10,000: no scan");
        assert!(!cache.over_or_unknown(3_000), "10,000 of 10,000: no scan");
        assert!(cache.over_or_unknown(1), "past the bound: scan");
        cache.scanned(9_000);
        assert!(cache.over_or_unknown(1_500));
        // Real saves: the first scans, and the bound holds.
        let s = server(r#"{"mcpServers": {"p": {"url": "https://example.com/p"}}}"#);
        let fresh = Persist::open(CatalogCache::in_dir(&dir)).unwrap();
        fresh.save(&s.fingerprint, &record(&s, false), "");
        let usage = fresh.usage.lock().unwrap();
        assert!(usage.scanned.is_some() && usage.bytes > 0);
        drop(usage);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn private_results_are_never_read_by_another_identity() {
        let dir = std::env::temp_dir().join(format!("mcp-persist-identity-{}", std::process::id()));
        let s = server(
            r#"{"mcpServers": {"h": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer abcdefgh"}}}}"#,
        );
        let cache = Persist::open(CatalogCache::in_dir(&dir)).unwrap();
        cache.save(&s.fingerprint, &record(&s, true), "tenant-a/user-1");
        assert!(cache.load(&s, "tenant-a/user-1").is_some_and(|r| r.private));
        assert!(cache.load(&s, "tenant-a/user-2").is_none());
        assert!(cache.load(&s, "").is_none());
        // Another identity's own private catalog does not replace the first.
        cache.save(&s.fingerprint, &record(&s, true), "tenant-a/user-2");
        assert!(cache.load(&s, "tenant-a/user-1").is_some());
        let _ = fs::remove_dir_all(&dir);
    }
}
