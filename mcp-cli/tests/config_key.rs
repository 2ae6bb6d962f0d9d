//! `mcp config show`'s fingerprints end to end: keyed by the user's
//! fingerprint key beside the token store, the same from run to run, another
//! with another key, and still printed when no key file can be had.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// A fresh folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mcp-cli-key-{}-{}-{name}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A config with a weak secret from the environment, as a PIN would be.
fn config(dir: &Path) -> PathBuf {
    let path = dir.join("settings.json");
    std::fs::write(
        &path,
        r#"{"mcpServers": {"pin": {"command": "pin-server", "env": {"PIN": "${PIN}"}}}}"#,
    )
    .unwrap();
    path
}

fn show_command(config: &Path, auth_dir: &Path) -> Command {
    let mut c = Command::new(MCP);
    c.args(["config", "show", config.to_str().unwrap()])
        .env("NO_COLOR", "1")
        .env("PIN", "000417")
        .env("MCP_AUTH_DIR", auth_dir);
    c
}

/// The fingerprint lines of a successful `config show`.
fn fingerprints(out: &Output) -> Vec<String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains("000417"), "{stdout}");
    let lines: Vec<String> = stdout
        .lines()
        .filter(|l| l.contains("fingerprint: "))
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    lines
}

fn show(config: &Path, auth_dir: &Path) -> Output {
    show_command(config, auth_dir).output().expect("run mcp")
}

#[test]
fn config_show_fingerprints_hold_per_key_file_and_differ_across_them() {
    let tmp = TempDir::new("show");
    let config = config(&tmp.0);
    let auth_a = tmp.0.join("a").join("auth");
    let auth_b = tmp.0.join("b").join("auth");

    let first = show(&config, &auth_a);
    let a = fingerprints(&first);
    assert_eq!(a, fingerprints(&show(&config, &auth_a)));
    let b = fingerprints(&show(&config, &auth_b));
    assert!(a.iter().zip(&b).all(|(a, b)| a != b), "{a:?} {b:?}");

    let stdout = String::from_utf8_lossy(&first.stdout);
    let key_file = auth_a.join("fingerprint.key");
    assert!(
        stdout.contains(&format!("fingerprint key: {}", key_file.display())),
        "{stdout}"
    );

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&key_file), 0o600);
        assert_eq!(mode(&auth_a), 0o700);
    }
}

/// Several `mcp` processes making the key at once: one key, so one
/// fingerprint, whichever process made it.
#[test]
fn racing_processes_agree_on_one_key() {
    let tmp = TempDir::new("race");
    let config = config(&tmp.0);
    let auth = tmp.0.join("auth");
    let children: Vec<_> = (0..6)
        .map(|_| {
            show_command(&config, &auth)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Vec<String>> = children
        .into_iter()
        .map(|c| fingerprints(&c.wait_with_output().unwrap()))
        .collect();
    assert!(outs.iter().all(|o| *o == outs[0]), "{outs:?}");
    assert_eq!(outs[0], fingerprints(&show(&config, &auth)));
    let names: Vec<_> = std::fs::read_dir(&auth)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["fingerprint.key"]);
}

/// No key file can be made (the folder would be under a file): a warning,
/// fingerprints under a key for this run only, and success.
#[test]
fn without_a_key_file_config_show_warns_and_still_prints() {
    let tmp = TempDir::new("nokey");
    let config = config(&tmp.0);
    let blocker = tmp.0.join("not-a-folder");
    std::fs::write(&blocker, "x").unwrap();
    let out = show(&config, &blocker.join("auth"));
    let lines = fingerprints(&out);
    assert!(lines.iter().all(|l| l.len() > "fingerprint: ".len() + 60));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("fingerprint key: this run only"),
        "{stdout}"
    );
    assert!(
        stderr.contains("not-a-folder") && stderr.contains("for this run only"),
        "{stderr}"
    );
}
