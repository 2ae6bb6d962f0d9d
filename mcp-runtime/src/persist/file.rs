//! The files of the persisted catalog: a versioned, authenticated envelope,
//! written atomically, read within a bound, locked where a read-modify-write
//! spans processes.
//!
//! A file is `MAGIC`, a format version, its kind, the body's length, an
//! HMAC-SHA256 of all of that and the body under the folder's own key (kept
//! in the folder's `fingerprint.key`, 0600), then the body. A file that is
//! cut short, from another version, of another kind, over the bound, or
//! whose MAC does not verify (damaged, or written by someone without the
//! key: copied from another machine, planted by another user) is treated as
//! absent and replaced by the next write; its bytes are never parsed.
//!
//! Writes go to a temporary file created new in the same folder, are
//! flushed to disk, then renamed over the name: a reader, in this process
//! or another, sees the old file or the new one, never a part.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

/// The first bytes of every file.
pub(crate) const MAGIC: &[u8; 14] = b"mcp-stack-pcat";
/// The format version; a file of another is ignored (and replaced).
pub(crate) const VERSION: u8 = 1;
/// The header's length: magic, version, kind, body length, MAC.
const HEADER: usize = MAGIC.len() + 1 + 1 + 8 + 32;

/// What a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A server's cached lists.
    Entry = 1,
    /// A server's pinned tool definitions.
    Pins = 2,
    /// The hashes of a server's pins alone (`pins.rs`'s index).
    PinIndex = 3,
    /// The servers whose pins were found as listed (`pins.rs`'s summary).
    PinSummary = 4,
}

impl Kind {
    /// Whether a write must be on disk before it takes the file's name.
    ///
    /// Only pins are: a pin lost to a crash would let a changed tool pass
    /// as first seen. Cached lists, a pin file's index and the pins'
    /// summary can be rebuilt,
    /// and a crash that leaves one empty or cut short leaves a file whose
    /// MAC fails, which is ignored and replaced. Not syncing them keeps a
    /// cold start from paying a disk flush per server, one after another on
    /// the task that starts the servers (0.15 ms each on a virtual disk,
    /// milliseconds on many real ones).
    fn durable(self) -> bool {
        self == Kind::Pins
    }
}

/// HMAC-SHA256 (RFC 2104) over `parts`.
pub(crate) fn hmac(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    for p in parts {
        inner.update(p);
    }
    let inner = inner.finalize();
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner);
    outer.finalize().into()
}

fn header(key: &[u8; 32], kind: Kind, body: &[u8]) -> Vec<u8> {
    let len = (body.len() as u64).to_le_bytes();
    let version = [VERSION, kind as u8];
    let mac = hmac(key, &[MAGIC, &version, &len, body]);
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&version);
    out.extend_from_slice(&len);
    out.extend_from_slice(&mac);
    out
}

/// The body of an envelope, if it is one of ours, of this kind, whole and
/// authentic: `bytes` with the header taken off in place (no second copy of
/// the body).
pub(crate) fn open_envelope(key: &[u8; 32], kind: Kind, mut bytes: Vec<u8>) -> Option<Vec<u8>> {
    let authentic = {
        let (head, body) = bytes.split_at_checked(HEADER)?;
        let (magic, rest) = head.split_at_checked(MAGIC.len())?;
        let (version, rest) = rest.split_at_checked(2)?;
        let (len, mac) = rest.split_at_checked(8)?;
        if magic != MAGIC || version != [VERSION, kind as u8] {
            return None;
        }
        let len = u64::from_le_bytes(len.try_into().ok()?);
        if len != body.len() as u64 {
            return None;
        }
        let expected = hmac(key, &[MAGIC, version, &len.to_le_bytes(), body]);
        // Not secret-dependent timing that matters here, but cheap to do right.
        let diff = expected
            .iter()
            .zip(mac)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        diff == 0
    };
    authentic.then(|| {
        bytes.drain(..HEADER);
        bytes
    })
}

/// Reads `path` (at most `limit` bytes: a longer file is ignored) and opens
/// its envelope. `Ok(None)`: absent, or not a file to trust.
pub(crate) fn read(
    path: &Path,
    key: &[u8; 32],
    kind: Kind,
    limit: u64,
) -> io::Result<Option<Vec<u8>>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let bound = limit.saturating_add(HEADER as u64 + 1);
    // Sized from the file's length at once (`take` hides it from
    // `read_to_end`, which would grow the buffer by doubling).
    let size = file.metadata().map_or(0, |m| m.len()).min(bound);
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
    file.take(bound).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit.saturating_add(HEADER as u64) {
        tracing::debug!(path = %path.display(), "persisted MCP catalog file over its bound; ignored");
        return Ok(None);
    }
    let body = open_envelope(key, kind, bytes);
    if body.is_none() {
        tracing::warn!(
            path = %path.display(),
            "persisted MCP catalog file is damaged or not ours; ignored (the next write replaces it)"
        );
    }
    Ok(body)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `body` in an envelope to `path`, atomically: a temporary file
/// created new beside it (0600), flushed to disk when the kind is
/// [durable](Kind::durable), then renamed over it.
pub(crate) fn write(path: &Path, key: &[u8; 32], kind: Kind, body: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!(".tmp-{}-{n}", std::process::id()));
    let result = (|| {
        let mut file = create_new_private(&temp)?;
        file.write_all(&header(key, kind, body))?;
        file.write_all(body)?;
        if kind.durable() {
            file.sync_all()?;
        }
        fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

fn create_new_private(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Makes `dir` (0700 where it is new).
pub(crate) fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// An exclusive lock on a lock file of the folder, across processes,
/// released when dropped.
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    /// Waits for the lock `name` in `dir`.
    pub(crate) fn take(dir: &Path, name: &str) -> io::Result<DirLock> {
        let path: PathBuf = dir.join(name);
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let file = options.open(path)?;
        file.lock()?;
        Ok(DirLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_case_2_shape() {
        // RFC 4231 test case 1 uses a 20-byte key; ours are 32 bytes, so
        // check the construction against a key padded with zeros, which
        // HMAC defines as the same key.
        let mut key = [0u8; 32];
        key[..20].copy_from_slice(&[0x0b; 20]);
        let mac = hmac(&key, &[b"Hi ", b"There"]);
        let hex = base16ct::lower::encode_string(&mac);
        assert_eq!(
            hex,
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
    }

    #[test]
    fn envelopes_refuse_every_damage() {
        let key = [7u8; 32];
        let body = br#"{"a":1}"#;
        let mut file = header(&key, Kind::Entry, body);
        file.extend_from_slice(body);
        assert_eq!(
            open_envelope(&key, Kind::Entry, file.clone()).as_deref(),
            Some(&body[..])
        );
        // Another kind, another key, a flipped bit anywhere, a cut.
        assert!(open_envelope(&key, Kind::Pins, file.clone()).is_none());
        assert!(open_envelope(&[8u8; 32], Kind::Entry, file.clone()).is_none());
        for i in 0..file.len() {
            let mut bad = file.clone();
            bad[i] ^= 1;
            assert!(open_envelope(&key, Kind::Entry, bad).is_none(), "byte {i}");
        }
        for cut in 0..file.len() {
            assert!(open_envelope(&key, Kind::Entry, file[..cut].to_vec()).is_none());
        }
        assert!(open_envelope(&key, Kind::Entry, Vec::new()).is_none());
    }

    #[test]
    fn writes_are_whole_and_reads_bounded() {
        let dir = std::env::temp_dir().join(format!("mcp-persist-file-{}", std::process::id()));
        create_dir(&dir).unwrap();
        let path = dir.join("x.entry");
        let key = [1u8; 32];
        write(&path, &key, Kind::Entry, b"first").unwrap();
        write(&path, &key, Kind::Entry, b"second").unwrap();
        assert_eq!(
            read(&path, &key, Kind::Entry, 100).unwrap().as_deref(),
            Some(&b"second"[..])
        );
        assert_eq!(read(&path, &key, Kind::Entry, 3).unwrap(), None);
        assert_eq!(
            read(&dir.join("none"), &key, Kind::Entry, 100).unwrap(),
            None
        );
        let leftovers = fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".tmp")
            })
            .count();
        assert_eq!(leftovers, 0);
        fs::remove_dir_all(&dir).unwrap();
    }
}
