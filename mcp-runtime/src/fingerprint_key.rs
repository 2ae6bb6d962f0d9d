//! A [`FingerprintKey`] kept in a file, so fingerprints hold across runs.
//!
//! `mcp-stack-config` computes fingerprints under a key it is given and never
//! writes a file; this is the file. A persisted catalog, or a fingerprint
//! printed today and compared tomorrow, needs the key of today tomorrow:
//! [`load_or_create_key`] reads it from a folder of the user's, or makes it
//! there on first use.
//!
//! The file, `fingerprint.key`, holds 64 hex digits and is readable by its
//! owner only (0600, in a folder created 0700). It is created whole or not at
//! all (written to a temporary file, then linked to its name, which fails if
//! the name exists), so processes racing to create it all end up with the
//! one that was linked first.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_stack_config::{FingerprintKey, KeyUnavailable};

/// The key file's name in its folder.
pub const KEY_FILE_NAME: &str = "fingerprint.key";

/// More than a key file ever holds (64 hex digits and a newline).
const READ_LIMIT: u64 = 256;

/// Why the key in a folder could not be read or made. The caller decides
/// what then: `mcp` warns and keys this run's fingerprints with
/// [`FingerprintKey::per_process`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyFileError {
    /// The folder or the file could not be created or read.
    #[error("cannot read or create the fingerprint key {}: {source}", path.display())]
    Io {
        /// The file (or its folder).
        path: PathBuf,
        /// The IO error.
        #[source]
        source: io::Error,
    },
    /// The file holds something other than a key.
    #[error(
        "the fingerprint key {} is damaged (it should hold 64 hex digits); remove it and a new \
         one is made on next use (fingerprints made before then change)",
        path.display()
    )]
    Damaged {
        /// The file.
        path: PathBuf,
    },
    /// Other users may read the file, so it keeps nothing secret.
    #[error(
        "the fingerprint key {} can be read by other users (mode {mode:o}); remove it and a new \
         one is made on next use, or make it private with `chmod 600`",
        path.display()
    )]
    Exposed {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// No random key could be made.
    #[error(transparent)]
    Random(#[from] KeyUnavailable),
}

/// The key in `dir`'s [`KEY_FILE_NAME`], made there (and `dir` with it,
/// 0700) if it does not exist yet.
///
/// The same folder gives the same key in every run and every process, so
/// fingerprints made with [`mcp_stack_config::resolve_with_key`] under it hold
/// across runs. A file that other users may read is refused
/// ([`KeyFileError::Exposed`]), as is one that does not hold a key; neither
/// is overwritten.
pub fn load_or_create_key(dir: &Path) -> Result<FingerprintKey, KeyFileError> {
    let path = dir.join(KEY_FILE_NAME);
    if let Some(key) = read_key(&path)? {
        return Ok(key);
    }
    create_private_dir(dir).map_err(|source| KeyFileError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let key = FingerprintKey::generate()?;
    let mut text = base16ct::lower::encode_string(key.expose_bytes());
    text.push('\n');
    match publish(dir, &path, text.as_bytes()) {
        Ok(()) => Ok(key),
        // Another process made it first: theirs is the key.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            read_key(&path)?.ok_or(KeyFileError::Io { path, source: e })
        }
        Err(source) => Err(KeyFileError::Io { path, source }),
    }
}

/// The key in `path`, `None` if there is no file.
fn read_key(path: &Path) -> Result<Option<FingerprintKey>, KeyFileError> {
    let io_err = |source| KeyFileError::Io {
        path: path.to_owned(),
        source,
    };
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(e)),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file.metadata().map_err(io_err)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyFileError::Exposed {
                path: path.to_owned(),
                mode,
            });
        }
    }
    let mut text = Vec::new();
    file.take(READ_LIMIT)
        .read_to_end(&mut text)
        .map_err(io_err)?;
    let damaged = || KeyFileError::Damaged {
        path: path.to_owned(),
    };
    let hex = text.trim_ascii();
    let bytes = base16ct::mixed::decode_vec(hex).map_err(|_| damaged())?;
    let bytes: [u8; FingerprintKey::LEN] = bytes.try_into().map_err(|_| damaged())?;
    Ok(Some(FingerprintKey::from_bytes(bytes)))
}

/// Puts `contents` at `path` whole, unless `path` exists (`AlreadyExists`).
fn publish(dir: &Path, path: &Path, contents: &[u8]) -> io::Result<()> {
    static N: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".{KEY_FILE_NAME}.{}.{}.tmp",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    // A file left by a process that crashed with this pid.
    let _ = std::fs::remove_file(&tmp);
    let written = (|| {
        let mut out = new_private_file(&tmp)?;
        out.write_all(contents)?;
        out.sync_all()
    })();
    // A hard link never replaces: exactly one of several racing creators
    // gets the name, and the file behind it is already complete.
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        // A file system without hard links: create the name itself, still
        // exclusively (a racing reader may then see it before it is
        // written, and reports it damaged for that one run).
        Err(_) => {
            let mut out = new_private_file(path)?;
            out.write_all(contents)?;
            out.sync_all()
        }
    }
}

/// A new file (never an existing one) only its owner can read.
fn new_private_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Barrier};

    use super::*;

    /// A fresh folder under the system's temporary one, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            static N: AtomicU64 = AtomicU64::new(0);
            let dir = std::env::temp_dir().join(format!(
                "mcp-runtime-key-{}-{}-{name}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn made_once_private_then_read_back() {
        let tmp = TempDir::new("once");
        let dir = tmp.0.join("nested").join("auth");
        let first = load_or_create_key(&dir).unwrap();
        let again = load_or_create_key(&dir).unwrap();
        assert_eq!(first.expose_bytes(), again.expose_bytes());
        assert_eq!(names(&dir), [KEY_FILE_NAME]);
        let text = std::fs::read_to_string(dir.join(KEY_FILE_NAME)).unwrap();
        assert_eq!(
            text,
            format!("{}\n", base16ct::lower::encode_string(first.expose_bytes()))
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&dir.join(KEY_FILE_NAME)), 0o600);
            assert_eq!(mode(&dir), 0o700);
        }
        // Another folder, another key.
        let other = load_or_create_key(&tmp.0.join("other")).unwrap();
        assert_ne!(first.expose_bytes(), other.expose_bytes());
    }

    #[test]
    fn racing_creators_all_end_with_the_one_key() {
        const THREADS: usize = 8;
        let tmp = TempDir::new("race");
        let barrier = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let dir = tmp.0.clone();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    barrier.wait();
                    *load_or_create_key(&dir).unwrap().expose_bytes()
                })
            })
            .collect();
        let keys: Vec<[u8; 32]> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let on_disk = load_or_create_key(&tmp.0).unwrap();
        assert!(keys.iter().all(|k| k == on_disk.expose_bytes()), "{keys:?}");
        // No temporary file left behind.
        assert_eq!(names(&tmp.0), [KEY_FILE_NAME]);
    }

    #[test]
    fn a_damaged_file_is_refused_and_kept() {
        let tmp = TempDir::new("damaged");
        create_private_dir(&tmp.0).unwrap();
        let path = tmp.0.join(KEY_FILE_NAME);
        for text in [
            "",
            "not hex\n",
            "abcd\n",
            &"ab".repeat(33),
            &"0".repeat(300),
        ] {
            std::fs::remove_file(&path).ok();
            new_private_file(&path)
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
            let e = load_or_create_key(&tmp.0).unwrap_err();
            assert!(matches!(e, KeyFileError::Damaged { .. }), "{text:?}: {e}");
            assert!(e.to_string().contains("remove it"), "{e}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
        // Upper-case hex and surrounding whitespace are still a key.
        std::fs::remove_file(&path).unwrap();
        new_private_file(&path)
            .unwrap()
            .write_all(format!(" {}\r\n", "AB".repeat(32)).as_bytes())
            .unwrap();
        assert_eq!(
            load_or_create_key(&tmp.0).unwrap().expose_bytes(),
            &[0xab; 32]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_key_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = TempDir::new("exposed");
        let key = load_or_create_key(&tmp.0).unwrap();
        let path = tmp.0.join(KEY_FILE_NAME);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = load_or_create_key(&tmp.0).unwrap_err();
        assert!(
            matches!(e, KeyFileError::Exposed { mode: 0o644, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("chmod 600"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            load_or_create_key(&tmp.0).unwrap().expose_bytes(),
            key.expose_bytes()
        );
    }

    #[test]
    fn a_folder_that_cannot_be_made_is_an_error_naming_it() {
        let tmp = TempDir::new("blocked");
        create_private_dir(&tmp.0).unwrap();
        let file = tmp.0.join("a-file");
        std::fs::write(&file, "x").unwrap();
        let e = load_or_create_key(&file.join("auth")).unwrap_err();
        assert!(matches!(e, KeyFileError::Io { .. }), "{e}");
        assert!(e.to_string().contains("a-file"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn debug_and_errors_never_show_the_key() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = TempDir::new("debug");
        let key = load_or_create_key(&tmp.0).unwrap();
        let hex = base16ct::lower::encode_string(key.expose_bytes());
        assert!(!format!("{key:?}").contains(&hex));
        let path = tmp.0.join(KEY_FILE_NAME);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = load_or_create_key(&tmp.0).unwrap_err();
        assert!(!format!("{e} {e:?}").contains(&hex), "{e:?}");
    }
}
