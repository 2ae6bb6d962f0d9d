//! The pins' summary (`listed.psum`): for each pin file whose index was
//! found to hold exactly a list, a digest of that list, so that a start
//! decides every unchanged server with one file read. See [`super`] for
//! how it is kept from vouching for pins it has not seen.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_stack_session::types::Tool;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::super::file::{self, DirLock, Kind};
use super::{LOCK_NAME, MAX_PIN_BYTES, PinStore};

const SUMMARY_NAME: &str = "listed.psum";
/// Entries past this start the summary again (servers that left every
/// config would otherwise stay in it for ever).
const MAX_SUMMARY_ENTRIES: usize = 4096;

/// A pin file whose index was found to hold a list: what the summary may
/// say of it once it is checked again under the lock.
#[derive(Debug, Clone)]
pub(crate) struct Verified {
    pub(super) path: PathBuf,
    pub(super) digest: String,
}

/// The digest of a list as pinned: its (name, hash) pairs in name order,
/// each part length-prefixed (a name may hold any character).
pub(super) fn list_digest<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let mut h = Sha256::new();
    for (name, hash) in pairs {
        for part in [name, hash] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
    }
    base16ct::lower::encode_string(&h.finalize())
}

/// The digest of `tools` with their hashes, when `hashes` holds exactly
/// theirs (else the long way decides).
pub(super) fn digest_of(tools: &[&Arc<Tool>], hashes: &BTreeMap<String, String>) -> Option<String> {
    let exact = hashes.len() == tools.len() && tools.iter().all(|t| hashes.contains_key(&t.name));
    exact.then(|| list_digest(hashes.iter().map(|(n, h)| (n.as_str(), h.as_str()))))
}

/// What the folder's summary says: by pin file (its name's stem), the
/// digest of the list its index was last found to hold exactly.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct PinSummary {
    pub(super) listed: BTreeMap<String, String>,
}

impl PinSummary {
    pub(super) fn holds(&self, path: &Path, digest: &str) -> bool {
        stem(path)
            .and_then(|s| self.listed.get(s))
            .is_some_and(|d| d == digest)
    }
}

/// A pin file's name without its extension: its key in the summary.
fn stem(path: &Path) -> Option<&str> {
    path.file_stem().and_then(|s| s.to_str())
}

impl PinStore {
    pub(super) fn summary_path(&self) -> PathBuf {
        self.dir.join(SUMMARY_NAME)
    }

    /// The summary file's body: `None` when there is none, or none to trust.
    fn read_summary(&self) -> io::Result<Option<Vec<u8>>> {
        file::read(
            &self.summary_path(),
            &self.key,
            Kind::PinSummary,
            MAX_PIN_BYTES,
        )
    }

    /// The folder's summary (empty when there is none, or none to trust).
    pub(crate) fn summary(&self) -> PinSummary {
        self.read_summary()
            .ok()
            .flatten()
            .and_then(|body| serde_json::from_slice(&body).ok())
            .unwrap_or_default()
    }

    /// Replaces the summary. Under the folder's lock.
    pub(super) fn write_summary(&self, summary: &PinSummary) -> io::Result<()> {
        if summary.listed.is_empty() {
            return match std::fs::remove_file(self.summary_path()) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            };
        }
        let body = serde_json::to_vec(summary).map_err(io::Error::other)?;
        file::write(&self.summary_path(), &self.key, Kind::PinSummary, &body)
    }

    /// Takes the pin file at `path` out of the summary, before it or its
    /// index is written or removed. Under the folder's lock. A summary
    /// that cannot be read now (an IO error) may still be read later, so
    /// it is removed whole rather than left to vouch for the old pins.
    pub(super) fn forget_listed(&self, path: &Path) -> io::Result<()> {
        let Some(stem) = stem(path) else {
            return Ok(());
        };
        let mut summary = match self.read_summary() {
            // Absent, or not one to trust: no reader takes its word.
            Ok(None) => return Ok(()),
            Ok(Some(body)) => serde_json::from_slice::<PinSummary>(&body).unwrap_or_default(),
            Err(_) => PinSummary::default(),
        };
        if summary.listed.remove(stem).is_some() || summary.listed.is_empty() {
            self.write_summary(&summary)?;
        }
        Ok(())
    }

    /// Adds to the summary the lists whose index still holds them, read
    /// again under the folder's lock (a write since the check that found
    /// them may have changed it, and it did not know to take them out).
    pub(crate) fn remember_listed(&self, verified: &[Verified]) {
        if verified.is_empty() {
            return;
        }
        let result = (|| -> io::Result<()> {
            let _lock = DirLock::take(&self.dir, LOCK_NAME)?;
            let mut summary = self.summary();
            if summary.listed.len().saturating_add(verified.len()) > MAX_SUMMARY_ENTRIES {
                summary.listed.clear();
            }
            let mut added = false;
            for v in verified {
                if let Some(stem) = stem(&v.path)
                    && self.unchanged(&v.path, &v.digest)
                {
                    summary.listed.insert(stem.to_owned(), v.digest.clone());
                    added = true;
                }
            }
            if added {
                self.write_summary(&summary)?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            tracing::debug!(dir = %self.dir.display(), "cannot write the MCP pins' summary: {e}");
        }
    }
}
