//! Pinned tool definitions: trust on first use, then every change reported.
//!
//! The first time a server's tools are seen, each tool's definition (name,
//! title, description, input and output schemas, annotations) is pinned by
//! its SHA-256 (the definition kept beside it, for the diff). A later list
//! is compared with the pins: a changed definition is reported with the
//! fields that changed and handled by the [`PinPolicy`]; a tool that
//! appears is pinned and reported; one that disappears is reported. A
//! changed definition stays reported until approved ([`approve`]), which
//! pins it.
//!
//! Pins are keyed per server by its name and what it runs (the command, or
//! the URL without its query and user info), not by the config fingerprint:
//! an edited argument or environment value keeps the pins, another program
//! under the same name gets its own. They live in `pins/` of the cache
//! folder, one authenticated file per server (the envelope of `persist/file.rs`), and are
//! never evicted. Every read-modify-write holds the folder's `pins.lock`.
//!
//! Beside each pin file, its *index* (`.pidx`, authenticated too): the
//! hashes alone, a tenth of the size, which is all a check of an unchanged
//! list reads. A write removes the index first and writes it again after
//! the pin file, and a reset removes it first: an index is never newer than
//! its pin file, and a missing one only sends the check the long way
//! (which writes it again).
//!
//! Above the indexes, one *summary* for the folder (`listed.psum`): for each
//! pin file whose index was found to hold exactly a list (every tool
//! pinned with the hash listed, present, nothing offered in its place), a
//! digest of that list. A start from the persisted catalog reads it once
//! and decides every unchanged server by it, instead of an index file per
//! server (at 100 servers that was a quarter of the start). The same
//! discipline as the index keeps it from ever vouching for pins it has
//! not seen: every write of a pin file (a check, an approval, a reset)
//! removes that file's entry first, under the folder's lock; an entry is
//! added only under that lock, after the index is read again there and
//! still holds the list.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_stack_config::{ResolvedServer, TransportConfig, redact_url};
use mcp_stack_session::types::Tool;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::diff;
use super::file::{self, DirLock, Kind};

mod summary;

pub(crate) use self::summary::{PinSummary, Verified};
use self::summary::{digest_of, list_digest};

const LOCK_NAME: &str = "pins.lock";
const PIN_EXT: &str = "pins";
const INDEX_EXT: &str = "pidx";
/// A pin file holds definitions: bounded like an entry.
const MAX_PIN_BYTES: u64 = 16 << 20;

/// What to do with a tool whose definition differs from its pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PinPolicy {
    /// The new definition is used; a diagnostic and an event say what
    /// changed. The default.
    #[default]
    Warn,
    /// The changed tool is neither offered nor callable until approved.
    Block,
    /// No pins are kept or compared.
    Off,
}

impl PinPolicy {
    /// The policy named `block`, `warn` or `off`.
    pub fn parse(s: &str) -> Option<PinPolicy> {
        match s {
            "warn" => Some(PinPolicy::Warn),
            "block" => Some(PinPolicy::Block),
            "off" => Some(PinPolicy::Off),
            _ => None,
        }
    }
}

impl fmt::Display for PinPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PinPolicy::Warn => "warn",
            PinPolicy::Block => "block",
            PinPolicy::Off => "off",
        })
    }
}

/// What became of a pinned tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PinStatus {
    /// Its definition differs from the pin; offered (policy `warn`).
    Changed,
    /// Its definition differs from the pin; withheld (policy `block`).
    Blocked,
    /// It appeared (and is now pinned).
    Added,
    /// It disappeared.
    Removed,
}

impl fmt::Display for PinStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PinStatus::Changed => "changed",
            PinStatus::Blocked => "changed, blocked until approved",
            PinStatus::Added => "added",
            PinStatus::Removed => "removed",
        })
    }
}

/// A tool whose definition is not the one pinned, or that came or went.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PinReport {
    /// The server's name in the config.
    pub server: String,
    /// The tool's own name on the server.
    pub tool: String,
    /// What became of it.
    pub status: PinStatus,
    /// The fields that changed (`description: "a" → "b"`, `inputSchema.properties.x: added …`).
    pub diff: Vec<String>,
}

impl fmt::Display for PinReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tool `{}` of `{}` {}",
            self.tool, self.server, self.status
        )?;
        for line in &self.diff {
            write!(f, "\n  {line}")?;
        }
        Ok(())
    }
}

/// A pin event, as first seen (a change is told once, not on every list).
pub type PinEvent = PinReport;

/// A listener of pin events.
pub type PinListener = Arc<dyn Fn(&PinEvent) + Send + Sync>;

/// One pinned tool.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[non_exhaustive]
pub struct PinnedTool {
    /// SHA-256 of the pinned definition.
    pub hash: String,
    /// The pinned definition, as canonical JSON text (kept as text: a
    /// check of an unchanged list parses none of them).
    pub definition: String,
    /// A different definition the server offered since, not approved.
    pub offered: Option<String>,
    /// Its hash.
    pub offered_hash: Option<String>,
    /// Whether the server listed it last time.
    pub present: bool,
}

/// One server's pins.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct PinFile {
    pub(crate) server: String,
    pub(crate) target: String,
    pub(crate) tools: BTreeMap<String, PinnedTool>,
}

/// What comparing a list with the pins gave.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    /// Tools withheld (policy `block`).
    pub(crate) blocked: BTreeMap<String, Vec<String>>,
    /// Every report that holds now (changed, blocked) and what came and
    /// went in this comparison.
    pub(crate) reports: Vec<PinReport>,
    /// The list was found as pinned by its index, which the summary did
    /// not say yet: worth [`PinStore::remember_listed`].
    pub(crate) verified: Option<Verified>,
}

fn hash(definition: &str) -> String {
    base16ct::lower::encode_string(&Sha256::digest(definition.as_bytes()))
}

/// A tool's pinned definition (the fields a pin covers, as canonical JSON
/// text) and its hash; `None` for a tool that cannot be written as JSON.
pub(crate) fn definition_hash(tool: &Tool) -> Option<(String, String)> {
    let value = serde_json::to_value(tool).ok()?;
    let def = diff::definition(&value).to_string();
    let h = hash(&def);
    Some((def, h))
}

/// A pin file's hashes alone: what a check of an unchanged list needs,
/// written beside the pin file as its index.
#[derive(Serialize, Deserialize)]
struct PinIndex {
    tools: BTreeMap<String, PinHashes>,
}

#[derive(Serialize, Deserialize)]
struct PinHashes {
    hash: String,
    offered_hash: Option<String>,
    present: bool,
}

impl PinIndex {
    /// The digest of the list this index holds exactly: its present tools,
    /// when none has a definition offered in place of its pin.
    fn listed_digest(&self) -> Option<String> {
        let present = || self.tools.iter().filter(|(_, p)| p.present);
        if present().any(|(_, p)| p.offered_hash.is_some()) {
            return None;
        }
        Some(list_digest(
            present().map(|(n, p)| (n.as_str(), p.hash.as_str())),
        ))
    }

    fn of(pins: &PinFile) -> PinIndex {
        let tools = pins
            .tools
            .iter()
            .map(|(name, pin)| {
                let hashes = PinHashes {
                    hash: pin.hash.clone(),
                    offered_hash: pin.offered_hash.clone(),
                    present: pin.present,
                };
                (name.clone(), hashes)
            })
            .collect();
        PinIndex { tools }
    }
}

/// A pinned definition's text, parsed for a diff.
fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// What the server runs, for its pin key: the command, or the URL redacted.
fn target(server: &ResolvedServer) -> String {
    match &server.transport {
        TransportConfig::Stdio { command, .. } => format!("stdio:{command}"),
        TransportConfig::Http { url, .. } => {
            let shown = redact_url(url);
            let without_query = shown.split('?').next().unwrap_or_default().to_owned();
            format!("http:{without_query}")
        }
        #[allow(unreachable_patterns)]
        _ => "other".to_owned(),
    }
}

/// The pins folder.
pub(crate) struct PinStore {
    dir: PathBuf,
    key: [u8; 32],
}

impl PinStore {
    pub(crate) fn new(dir: PathBuf, key: [u8; 32]) -> Self {
        PinStore { dir, key }
    }

    fn path(&self, server: &str, target: &str) -> PathBuf {
        let name = file::hmac(
            &self.key,
            &[b"pins\0", server.as_bytes(), b"\0", target.as_bytes()],
        );
        let hex = base16ct::lower::encode_string(name.get(..16).unwrap_or_default());
        self.dir.join(format!("{hex}.{PIN_EXT}"))
    }

    fn read(&self, path: &Path) -> Option<PinFile> {
        let body = file::read(path, &self.key, Kind::Pins, MAX_PIN_BYTES).ok()??;
        serde_json::from_slice(&body).ok()
    }

    /// The index beside the pin file at `path`.
    fn index_path(path: &Path) -> PathBuf {
        path.with_extension(INDEX_EXT)
    }

    /// Removes the index of the pin file at `path`, if there is one.
    fn remove_index(path: &Path) -> io::Result<()> {
        match std::fs::remove_file(Self::index_path(path)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Writes the index of `pins` beside the pin file at `path`.
    fn write_index(&self, path: &Path, pins: &PinFile) -> io::Result<()> {
        let body = serde_json::to_vec(&PinIndex::of(pins)).map_err(io::Error::other)?;
        file::write(&Self::index_path(path), &self.key, Kind::PinIndex, &body)
    }

    /// Replaces the pin file at `path`, and its index: the summary's entry
    /// and the old index go first, so that no reader takes either for the
    /// new file's. Under the folder's lock.
    fn write(&self, path: &Path, pins: &PinFile) -> io::Result<()> {
        let body = serde_json::to_vec(pins).map_err(io::Error::other)?;
        self.forget_listed(path)?;
        Self::remove_index(path)?;
        file::write(path, &self.key, Kind::Pins, &body)?;
        self.write_index(path, pins)
    }

    /// Whether the index of the pin file at `path` holds exactly the list
    /// of digest `digest`: every tool pinned with the hash listed, nothing
    /// else pinned marked present, and nothing offered in place of a pin.
    /// Then a check has nothing to report or write. Reads the file's index
    /// only (no index: not known unchanged).
    fn unchanged(&self, path: &Path, digest: &str) -> bool {
        let index = Self::index_path(path);
        let Ok(Some(body)) = file::read(&index, &self.key, Kind::PinIndex, MAX_PIN_BYTES) else {
            return false;
        };
        let Ok(index) = serde_json::from_slice::<PinIndex>(&body) else {
            return false;
        };
        index.listed_digest().is_some_and(|d| d == digest)
    }

    /// Compares `tools` with the server's pins under `policy`, pinning what
    /// is new, and tells `listener` what it sees for the first time.
    /// `hashes` holds the tools' pin hashes by name where they are known
    /// (the others are computed); `summary` is the folder's, read once for
    /// every server of a catalog.
    pub(crate) fn check(
        &self,
        server: &ResolvedServer,
        tools: &[&Arc<Tool>],
        hashes: &BTreeMap<String, String>,
        policy: PinPolicy,
        listener: Option<&PinListener>,
        summary: &PinSummary,
    ) -> Checked {
        let mut out = Checked::default();
        if policy == PinPolicy::Off {
            return out;
        }
        let target = target(server);
        let path = self.path(&server.name, &target);
        // The common case, a list as pinned: its hashes alone decide, with
        // no lock (pin files, indexes and the summary are replaced whole,
        // by rename, so a reader sees the old file or the new one): by the
        // summary, else by the index. Anything else is compared again, tool
        // by tool, under the lock.
        if let Some(digest) = digest_of(tools, hashes) {
            if summary.holds(&path, &digest) {
                return out;
            }
            if self.unchanged(&path, &digest) {
                out.verified = Some(Verified { path, digest });
                return out;
            }
        }
        let result = (|| -> io::Result<()> {
            file::create_dir(&self.dir)?;
            let _lock = DirLock::take(&self.dir, LOCK_NAME)?;
            let mut pins = self.read(&path).unwrap_or_else(|| PinFile {
                server: server.name.clone(),
                target: target.clone(),
                tools: BTreeMap::new(),
            });
            let first = pins.tools.is_empty();
            let mut dirty = false;
            let mut events = Vec::new();
            let mut seen = std::collections::BTreeSet::new();
            for tool in tools {
                let Some((def, h)) = definition_hash(tool) else {
                    continue;
                };
                seen.insert(tool.name.clone());
                match pins.tools.get_mut(&tool.name) {
                    None => {
                        pins.tools.insert(
                            tool.name.clone(),
                            PinnedTool {
                                hash: h,
                                definition: def,
                                offered: None,
                                offered_hash: None,
                                present: true,
                            },
                        );
                        dirty = true;
                        if !first {
                            let report = PinReport {
                                server: server.name.clone(),
                                tool: tool.name.clone(),
                                status: PinStatus::Added,
                                diff: Vec::new(),
                            };
                            events.push(report.clone());
                            out.reports.push(report);
                        }
                    }
                    Some(pin) if pin.hash == h => {
                        if !pin.present || pin.offered.is_some() {
                            pin.present = true;
                            pin.offered = None;
                            pin.offered_hash = None;
                            dirty = true;
                        }
                    }
                    Some(pin) => {
                        let lines = diff::diff(&parsed(&pin.definition), &parsed(&def));
                        let status = if policy == PinPolicy::Block {
                            out.blocked.insert(tool.name.clone(), lines.clone());
                            PinStatus::Blocked
                        } else {
                            PinStatus::Changed
                        };
                        let report = PinReport {
                            server: server.name.clone(),
                            tool: tool.name.clone(),
                            status,
                            diff: lines,
                        };
                        if pin.offered_hash.as_deref() != Some(h.as_str()) || !pin.present {
                            pin.offered = Some(def);
                            pin.offered_hash = Some(h);
                            pin.present = true;
                            dirty = true;
                            events.push(report.clone());
                        }
                        out.reports.push(report);
                    }
                }
            }
            for (name, pin) in &mut pins.tools {
                if pin.present && !seen.contains(name) {
                    pin.present = false;
                    dirty = true;
                    let report = PinReport {
                        server: server.name.clone(),
                        tool: name.clone(),
                        status: PinStatus::Removed,
                        diff: Vec::new(),
                    };
                    events.push(report.clone());
                    out.reports.push(report);
                }
            }
            if dirty {
                self.write(&path, &pins)?;
            } else if path.exists() && !Self::index_path(&path).exists() {
                // A pin file from before indexes, or one whose index a
                // crash left unwritten.
                self.forget_listed(&path)?;
                self.write_index(&path, &pins)?;
            }
            drop(_lock);
            for e in &events {
                tracing::warn!(server = %e.server, tool = %e.tool, status = %e.status, diff = ?e.diff, "MCP tool definition {}", e.status);
                if let Some(l) = listener {
                    l(e);
                }
            }
            Ok(())
        })();
        if let Err(e) = result {
            tracing::warn!(server = %server.name, dir = %self.dir.display(), "cannot read or write MCP tool pins: {e}");
        }
        out
    }
}

/// One server's pins, as [`list`] shows them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerPins {
    /// The server's name.
    pub server: String,
    /// What it runs (the command, or the URL without query).
    pub target: String,
    /// Its pinned tools by name.
    pub tools: BTreeMap<String, PinnedTool>,
}

fn pin_store(cache_dir: &Path) -> io::Result<PinStore> {
    let key = crate::fingerprint_key::load_or_create_key(cache_dir).map_err(io::Error::other)?;
    Ok(PinStore::new(cache_dir.join("pins"), *key.expose_bytes()))
}

fn each_file(store: &PinStore) -> io::Result<Vec<(PathBuf, PinFile)>> {
    let mut out = Vec::new();
    let read = match std::fs::read_dir(&store.dir) {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e),
    };
    for e in read {
        let path = e?.path();
        if path.extension().and_then(|x| x.to_str()) != Some(PIN_EXT) {
            continue;
        }
        if let Some(f) = store.read(&path) {
            out.push((path, f));
        }
    }
    out.sort_by(|a, b| (&a.1.server, &a.1.target).cmp(&(&b.1.server, &b.1.target)));
    Ok(out)
}

/// Every server's pins in the cache folder `cache_dir`.
pub fn list(cache_dir: &Path) -> io::Result<Vec<ServerPins>> {
    let store = pin_store(cache_dir)?;
    Ok(each_file(&store)?
        .into_iter()
        .map(|(_, f)| ServerPins {
            server: f.server,
            target: f.target,
            tools: f.tools,
        })
        .collect())
}

/// Approves the definition `server` now offers for `tool` (it becomes the
/// pin). Whether there was one to approve.
pub fn approve(cache_dir: &Path, server: &str, tool: &str) -> io::Result<bool> {
    let store = pin_store(cache_dir)?;
    file::create_dir(&store.dir)?;
    let _lock = DirLock::take(&store.dir, LOCK_NAME)?;
    let mut any = false;
    for (path, mut f) in each_file(&store)? {
        if f.server != server {
            continue;
        }
        let Some(pin) = f.tools.get_mut(tool) else {
            continue;
        };
        let (Some(def), Some(h)) = (pin.offered.take(), pin.offered_hash.take()) else {
            continue;
        };
        pin.definition = def;
        pin.hash = h;
        store.write(&path, &f)?;
        any = true;
    }
    Ok(any)
}

/// Forgets the pins of `server` (every server's with `None`): the next
/// list is pinned as first seen. How many servers' pins were removed.
pub fn reset(cache_dir: &Path, server: Option<&str>) -> io::Result<usize> {
    let store = pin_store(cache_dir)?;
    file::create_dir(&store.dir)?;
    let _lock = DirLock::take(&store.dir, LOCK_NAME)?;
    if server.is_none() {
        store.write_summary(&PinSummary::default())?;
    }
    let mut n = 0;
    for (path, f) in each_file(&store)? {
        if server.is_none_or(|s| s == f.server) {
            store.forget_listed(&path)?;
            PinStore::remove_index(&path)?;
            std::fs::remove_file(path)?;
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use mcp_stack_config::{FingerprintKey, Options, parse_str, resolve_with_key};
    use serde_json::json;

    use super::*;

    fn server() -> ResolvedServer {
        let text = r#"{"mcpServers": {"files": {"command": "files-server"}}}"#;
        let loaded = parse_str(text, &Options::new()).unwrap();
        let key = FingerprintKey::from_bytes([3; 32]);
        let cfg = resolve_with_key(&loaded.config, &|_: &str| None, &key).unwrap();
        cfg.servers["files"].clone()
    }

    fn tools(description: &str) -> Vec<Arc<Tool>> {
        ["read", "write"]
            .iter()
            .map(|name| {
                let tool = json!({"name": name, "description": description, "inputSchema": {"type": "object"}});
                Arc::new(serde_json::from_value(tool).unwrap())
            })
            .collect()
    }

    fn hashes(tools: &[Arc<Tool>]) -> BTreeMap<String, String> {
        tools
            .iter()
            .map(|t| (t.name.clone(), definition_hash(t).unwrap().1))
            .collect()
    }

    /// Checks `tools` under `Warn` with the folder's summary, then has the
    /// summary remember the list if its index was found to hold it, as a
    /// catalog build does: the statuses reported, by tool.
    fn check(store: &PinStore, tools: &[Arc<Tool>]) -> Vec<(String, PinStatus)> {
        let checked = check_only(store, tools);
        store.remember_listed(checked.verified.as_slice());
        reports(checked)
    }

    /// Checks `tools` under `Warn` with the folder's summary.
    fn check_only(store: &PinStore, tools: &[Arc<Tool>]) -> Checked {
        let refs: Vec<&Arc<Tool>> = tools.iter().collect();
        let summary = store.summary();
        store.check(
            &server(),
            &refs,
            &hashes(tools),
            PinPolicy::Warn,
            None,
            &summary,
        )
    }

    fn reports(checked: Checked) -> Vec<(String, PinStatus)> {
        checked
            .reports
            .into_iter()
            .map(|r| (r.tool, r.status))
            .collect()
    }

    fn store(name: &str) -> (PinStore, PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("mcp-pins-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = PinStore::new(dir.join("pins"), [5; 32]);
        let s = server();
        let path = store.path(&s.name, &target(&s));
        let index = PinStore::index_path(&path);
        (store, path, index)
    }

    #[test]
    fn an_unchanged_list_is_decided_by_its_index_alone() {
        let (store, path, index) = store("index-alone");
        assert!(check(&store, &tools("v1")).is_empty(), "first seen: pinned");
        assert!(path.exists() && index.exists());
        // Without the summary's word for it.
        std::fs::remove_file(store.summary_path()).ok();
        // A pin file the long way would not read (and would write again).
        std::fs::write(&path, b"damaged").unwrap();
        assert!(check(&store, &tools("v1")).is_empty());
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"damaged",
            "not read, not written"
        );
        let _ = std::fs::remove_dir_all(store.dir.parent().unwrap());
    }

    #[test]
    fn a_pin_file_without_its_index_is_read_whole_and_indexed() {
        let (store, path, index) = store("no-index");
        assert!(check(&store, &tools("v1")).is_empty());
        // A pin file from before indexes.
        std::fs::remove_file(&index).unwrap();
        assert!(check(&store, &tools("v1")).is_empty());
        assert!(index.exists(), "indexed again");
        std::fs::remove_file(&index).unwrap();
        let reports = check(&store, &tools("v2"));
        assert_eq!(
            reports,
            [
                ("read".to_owned(), PinStatus::Changed),
                ("write".to_owned(), PinStatus::Changed),
            ]
        );
        // The index now holds what is offered: the next check of the same
        // list goes the long way again (it is still changed) and says so.
        assert!(index.exists());
        assert_eq!(check(&store, &tools("v2")).len(), 2);
        assert!(path.exists());
        let _ = std::fs::remove_dir_all(store.dir.parent().unwrap());
    }

    #[test]
    fn an_index_is_no_pin_file_and_a_reset_removes_both() {
        let (store, path, index) = store("reset");
        assert!(check(&store, &tools("v1")).is_empty());
        // The index's envelope is its own kind: as a pin file it is refused.
        std::fs::copy(&index, &path).unwrap();
        assert!(store.read(&path).is_none());
        assert!(check(&store, &tools("v1")).is_empty());
        let cache = store.dir.parent().unwrap().to_path_buf();
        let store = pin_store(&cache).unwrap();
        let s = server();
        let path = store.path(&s.name, &target(&s));
        let index = PinStore::index_path(&path);
        assert!(check(&store, &tools("v1")).is_empty());
        assert!(path.exists() && index.exists());
        assert_eq!(reset(&cache, Some("files")).unwrap(), 1);
        assert!(!path.exists() && !index.exists(), "both gone");
        // Forgotten: a changed list is pinned as first seen.
        assert!(check(&store, &tools("v2")).is_empty());
        let _ = std::fs::remove_dir_all(&cache);
    }

    /// A store opened as `approve` and `reset` open it, and its cache folder.
    fn cache_store(name: &str) -> (PinStore, PathBuf) {
        let (store, ..) = store(name);
        let cache = store.dir.parent().unwrap().to_path_buf();
        (pin_store(&cache).unwrap(), cache)
    }

    #[test]
    fn an_unchanged_list_is_decided_by_the_summary_once_its_index_held_it() {
        let (store, path, index) = store("summary");
        assert!(check(&store, &tools("v1")).is_empty(), "first seen: pinned");
        assert!(
            !store.summary_path().exists(),
            "a first pin vouches for nothing yet"
        );
        // The index holds the list: the summary is told, under the lock.
        let found = check_only(&store, &tools("v1"));
        assert!(found.reports.is_empty() && found.verified.is_some());
        store.remember_listed(found.verified.as_slice());
        assert!(store.summary_path().exists());
        // Now neither the pin file nor its index is read.
        std::fs::write(&path, b"damaged").unwrap();
        std::fs::write(&index, b"damaged").unwrap();
        let decided = check_only(&store, &tools("v1"));
        assert!(decided.reports.is_empty() && decided.verified.is_none());
        assert_eq!(std::fs::read(&index).unwrap(), b"damaged", "not written");
        // A file of another kind (an index's envelope) is no summary.
        std::fs::remove_dir_all(&store.dir).unwrap();
        assert!(check(&store, &tools("v1")).is_empty());
        assert!(store.read(&path).is_some(), "pinned again, with its index");
        std::fs::copy(&index, store.summary_path()).unwrap();
        assert!(store.summary().listed.is_empty());
        let _ = std::fs::remove_dir_all(store.dir.parent().unwrap());
    }

    #[test]
    fn the_summary_never_vouches_for_a_list_the_pins_no_longer_hold() {
        let (store, cache) = cache_store("summary-stale");
        assert!(check(&store, &tools("v1")).is_empty());
        assert!(check(&store, &tools("v1")).is_empty());
        assert!(store.summary_path().exists(), "v1 remembered");
        // v2 offered: changed; approved, it is the pin.
        assert_eq!(check(&store, &tools("v2")).len(), 2);
        assert!(approve(&cache, "files", "read").unwrap());
        assert!(approve(&cache, "files", "write").unwrap());
        // v1 again is a change from the approved pins, whatever the
        // summary said of v1 before.
        assert_eq!(
            check(&store, &tools("v1")),
            [
                ("read".to_owned(), PinStatus::Changed),
                ("write".to_owned(), PinStatus::Changed),
            ]
        );
        let _ = std::fs::remove_dir_all(&cache);
    }

    #[test]
    fn a_list_found_before_a_write_is_not_remembered_after_it() {
        let (store, cache) = cache_store("summary-race");
        assert!(check(&store, &tools("v1")).is_empty());
        // Found as pinned, not yet remembered…
        let found = check_only(&store, &tools("v1"));
        assert!(found.verified.is_some());
        // …when another process resets the pins and pins v2 as first seen.
        assert_eq!(reset(&cache, Some("files")).unwrap(), 1);
        assert!(check(&store, &tools("v2")).is_empty());
        // The late word about v1 is checked again under the lock: refused.
        store.remember_listed(found.verified.as_slice());
        assert_eq!(check_only(&store, &tools("v1")).reports.len(), 2);
        let _ = std::fs::remove_dir_all(&cache);
    }

    #[test]
    fn a_reset_of_every_server_removes_the_summary() {
        let (store, cache) = cache_store("summary-reset");
        assert!(check(&store, &tools("v1")).is_empty());
        assert!(check(&store, &tools("v1")).is_empty());
        assert!(store.summary_path().exists());
        assert_eq!(reset(&cache, None).unwrap(), 1);
        assert!(!store.summary_path().exists());
        // Forgotten: a changed list is pinned as first seen.
        assert!(check(&store, &tools("v2")).is_empty());
        let _ = std::fs::remove_dir_all(&cache);
    }
}
