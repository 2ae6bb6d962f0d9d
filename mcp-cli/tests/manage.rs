//! `mcp add`, `mcp remove` and `mcp list` end to end, on files in a fresh
//! folder: round trips leave the file byte-identical, refusals leave it
//! untouched, the file keeps its permissions (and a link stays a link),
//! `list --status` starts `mcp demo-server` entries and reports a broken one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{MCP, mcp, text};
use serde_json::Value;

/// A fresh folder, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mcp-cli-manage-{}-{}-{name}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn file(&self, name: &str, content: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

const VSCODE: &str = "// Servers for this project\n{\n  \"servers\": {\n    // the demo\n    \"kit\": {\"type\": \"stdio\", \"command\": \"mcp\", \"args\": [\"demo-server\"]},\n  },\n  \"inputs\": [],\n}\n";

const CODEX: &str = "# Codex\nmodel = \"o4-mini\" # small\n\n[mcp_servers.docs]\nurl = 'https://docs.example.com/mcp'\n\n[profiles.fast]   # keep\nmodel = \"mini\"\n";

#[test]
fn add_then_remove_leaves_a_commented_file_byte_identical() {
    let dir = TempDir::new("round");
    let vscode = dir.file(".vscode/mcp.json", VSCODE);
    let o = mcp(&[
        "add",
        "fs",
        "--config",
        s(&vscode),
        "-e",
        "ROOT=${workspaceFolder}",
        "--",
        "npx",
        "-y",
        "@modelcontextprotocol/server-filesystem",
        ".",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("✓ fs added to"), "{}", text(&o));
    let added = read(&vscode);
    assert!(
        added.starts_with("// Servers for this project\n{\n  \"servers\": {\n    // the demo\n"),
        "{added}"
    );
    assert!(added.contains("    \"fs\": {\n      \"type\": \"stdio\",\n      \"command\": \"npx\",\n      \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \".\"],\n      \"env\": {\n        \"ROOT\": \"${workspaceFolder}\"\n      }\n    },\n  },\n  \"inputs\": [],\n}\n"), "{added}");
    let o = mcp(&["remove", "fs", "--config", s(&vscode)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("✓ fs removed from"), "{}", text(&o));
    assert_eq!(read(&vscode), VSCODE);

    // TOML, a URL server with a secret header: never printed.
    let codex = dir.file("config.toml", CODEX);
    let o = mcp(&[
        "add",
        "web",
        "--config",
        s(&codex),
        "--url",
        "https://tools.example.com/mcp",
        "-H",
        "Authorization: Bearer sekrit-token-123",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("sekrit"), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["added"], "web");
    assert_eq!(v["format"], "codex");
    assert_eq!(v["created"], false);
    let added = read(&codex);
    assert!(
        added.starts_with(CODEX.split("[profiles").next().unwrap()),
        "{added}"
    );
    assert!(added.contains("[mcp_servers.web]\nurl = \"https://tools.example.com/mcp\"\nhttp_headers = { Authorization = \"Bearer sekrit-token-123\" }\n"), "{added}");
    let o = mcp(&["remove", "web", "--config", s(&codex), "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["removed"], "web");
    assert_eq!(read(&codex), CODEX);
}

#[test]
fn refusals_leave_the_file_untouched() {
    let dir = TempDir::new("refuse");
    let desktop_text = "{\n\t\"mcpServers\": {\n\t\t\"kit\": {\"command\": \"mcp\"}\n\t}\n}";
    let desktop = dir.file("claude_desktop_config.json", desktop_text);
    let codex = dir.file("config.toml", CODEX);
    let broken = dir.file("mcp.json", "{\"mcpServers\": {\"a\": ");
    let cases: Vec<(Vec<&str>, &str, u8)> = vec![
        (
            vec![
                "add",
                "web",
                "--config",
                s(&desktop),
                "--url",
                "https://h/mcp",
            ],
            "local (stdio) servers only",
            1,
        ),
        (
            vec!["add", "kit", "--config", s(&desktop), "--", "other"],
            "already has a server `kit`",
            1,
        ),
        (
            vec!["add", "a.b", "--config", s(&desktop), "--", "x"],
            "cannot be a server name",
            1,
        ),
        (
            vec![
                "add",
                "w",
                "--config",
                s(&codex),
                "--url",
                "https://h/mcp",
                "-t",
                "sse",
            ],
            "streamable HTTP only",
            1,
        ),
        (
            vec![
                "add",
                "w",
                "--config",
                s(&codex),
                "--url",
                "https://h/mcp",
                "-e",
                "K=V",
            ],
            "--env sets the environment",
            2,
        ),
        (
            vec!["add", "w", "--config", s(&codex)],
            "give the server's command after `--`",
            2,
        ),
        (
            vec!["add", "w", "--config", s(&codex), "--url", "ftp://h"],
            "would not be valid",
            1,
        ),
        (
            vec!["add", "w", "--config", s(&broken), "--", "x"],
            "not valid JSON at line 1",
            1,
        ),
        (
            vec!["remove", "nope", "--config", s(&desktop)],
            "has no server `nope` (it has: kit)",
            1,
        ),
        (
            vec!["remove", "a", "--config", s(&broken)],
            "not valid JSON",
            1,
        ),
    ];
    for (args, says, code) in cases {
        let before: Vec<String> = [&desktop, &codex, &broken]
            .iter()
            .map(|p| read(p))
            .collect();
        let o = mcp(&args);
        assert_eq!(
            o.status.code(),
            Some(i32::from(code)),
            "{args:?}: {}",
            text(&o)
        );
        assert!(text(&o).contains(says), "{args:?}: {}", text(&o));
        let after: Vec<String> = [&desktop, &codex, &broken]
            .iter()
            .map(|p| read(p))
            .collect();
        assert_eq!(before, after, "{args:?}");
    }
    // --json: one object with an error on stdout.
    let o = mcp(&["add", "kit", "--config", s(&desktop), "--json", "--", "x"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "exists");
    assert_eq!(v["error"]["command"], "add");
    // --force replaces in place.
    let o = mcp(&[
        "add",
        "kit",
        "--config",
        s(&desktop),
        "--force",
        "--",
        "other",
        "arg",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("kit replaced in"), "{}", text(&o));
    assert_eq!(
        read(&desktop),
        "{\n\t\"mcpServers\": {\n\t\t\"kit\": {\n\t\t\t\"command\": \"other\",\n\t\t\t\"args\": [\"arg\"]\n\t\t}\n\t}\n}"
    );
    // No temporary file left behind.
    let left: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 3, "{left:?}");
}

#[test]
fn a_missing_file_is_made_only_when_its_format_is_certain() {
    let dir = TempDir::new("create");
    let vscode = dir.0.join(".vscode/mcp.json");
    let o = mcp(&[
        "add",
        "kit",
        "--config",
        s(&vscode),
        "--",
        "mcp",
        "demo-server",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("added to new file"), "{}", text(&o));
    assert_eq!(
        read(&vscode),
        "{\n  \"servers\": {\n    \"kit\": {\n      \"type\": \"stdio\",\n      \"command\": \"mcp\",\n      \"args\": [\"demo-server\"]\n    }\n  }\n}\n"
    );
    let o = mcp(&["remove", "kit", "--config", s(&vscode)]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(read(&vscode), "{\n  \"servers\": {}\n}\n");

    // `mcp.json` or `config.toml` alone could be several clients' files.
    for name in ["mcp.json", "config.toml", "settings.json"] {
        let path = dir.0.join(name);
        let o = mcp(&["add", "kit", "--config", s(&path), "--", "x"]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(text(&o).contains("--format"), "{}", text(&o));
        assert!(!path.exists());
    }
    let toml = dir.0.join("config.toml");
    let o = mcp(&[
        "add",
        "kit",
        "--config",
        s(&toml),
        "--format",
        "codex",
        "--",
        "x",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(read(&toml), "[mcp_servers.kit]\ncommand = \"x\"\n");
}

#[cfg(unix)]
#[test]
fn permissions_stay_and_a_link_stays_a_link() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = TempDir::new("perm");
    let real = dir.file("real/claude_desktop_config.json", "{\"mcpServers\": {}}");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = dir.0.join("claude_desktop_config.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = mcp(&["add", "kit", "--config", s(&link), "--", "x"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(read(&real).contains("\"kit\""));
    let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn list_shows_the_servers_as_written_in_file_order() {
    let dir = TempDir::new("list");
    let path = dir.file(
        "settings.json",
        "{\"mcpServers\": {\"zeta\": {\"command\": \"run me\", \"args\": [\"a b\"], \"env\": {\"K\": \"sekrit-value-1\"}},\n \"alpha\": {\"url\": \"https://u:p@h.example/mcp?key=sekrit\", \"transport\": \"sse\", \"headers\": {\"X-Key\": \"sekrit-value-2\"}},\n \"off\": {\"command\": \"x\", \"enabled\": false}}}",
    );
    let o = mcp(&["list", "--config", s(&path)]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with("zeta ")
            && lines[0].contains("stdio")
            && lines[0].contains("'run me' 'a b'"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("alpha")
            && lines[1].contains("sse")
            && lines[1].contains("https://<redacted>@h.example/mcp?<redacted>"),
        "{out}"
    );
    assert!(lines[2].contains("(disabled)"), "{out}");
    assert!(!text(&o).contains("sekrit"), "{}", text(&o));
    let o = mcp(&["list", "--config", s(&path), "--json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], "openclaw-json");
    let names: Vec<&str> = v["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["zeta", "alpha", "off"]);
    assert_eq!(v["servers"][0]["env"], serde_json::json!(["K"]));
    assert_eq!(v["servers"][1]["headers"], serde_json::json!(["X-Key"]));
    assert_eq!(v["servers"][2]["enabled"], false);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("sekrit"));
    // A file that does not load: an error, as JSON with --json.
    let bad = dir.file("bad.json", "{\"mcpServers\": 1}");
    let o = mcp(&["list", "--config", s(&bad), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "config");
}

#[test]
fn list_status_starts_every_server_and_names_the_broken_ones() {
    let dir = TempDir::new("status");
    let path = dir.file(
        "settings.json",
        &format!(
            "{{\"mcpServers\": {{\n  \"kit\": {{\"command\": {mcp:?}, \"args\": [\"demo-server\"]}},\n  \"kit2\": {{\"command\": {mcp:?}, \"args\": [\"demo-server\"]}},\n  \"broken\": {{\"command\": \"/nonexistent/mcp-server\"}},\n  \"unset\": {{\"command\": \"x\", \"env\": {{\"T\": \"${{MCP_TEST_SURELY_UNSET}}\"}}}},\n  \"off\": {{\"command\": \"x\", \"enabled\": false}}\n}}}}",
            mcp = MCP
        ),
    );
    let started = Instant::now();
    let o = mcp(&[
        "list",
        "--config",
        s(&path),
        "--status",
        "--timeout",
        "20000",
    ]);
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name}: {out}"))
            .to_owned()
    };
    assert!(
        line("kit").contains("✓ ok (") && line("kit").contains("over stdio"),
        "{out}"
    );
    assert!(line("kit2").contains("✓ ok ("), "{out}");
    assert!(
        line("broken").contains("✗ failed: at connect: cannot start `/nonexistent/mcp-server`"),
        "{out}"
    );
    assert!(line("unset").contains("✗ failed: mcpServers.unset.env.T: environment variable `MCP_TEST_SURELY_UNSET` is not set"), "{out}");
    assert!(line("off").contains("- disabled"), "{out}");

    let o = mcp(&[
        "list",
        "--config",
        s(&path),
        "--status",
        "--json",
        "--timeout",
        "20000",
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let status = |name: &str| {
        v["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["status"]
            .clone()
    };
    assert_eq!(status("kit")["state"], "ok");
    assert!(status("kit")["tools"].as_u64().unwrap() > 0);
    assert_eq!(status("broken")["state"], "failed");
    assert_eq!(status("off")["state"], "disabled");

    // Only working servers: success.
    let good = dir.file(
        "good.json",
        &format!(
            "{{\"mcpServers\": {{\"kit\": {{\"command\": {MCP:?}, \"args\": [\"demo-server\"]}}}}}}"
        ),
    );
    let o = mcp(&["list", "--config", s(&good), "--status"]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn list_status_is_bounded_by_the_timeout() {
    let dir = TempDir::new("slow");
    // A server that never answers: `sleep` reads nothing and says nothing.
    let path = dir.file(
        "settings.json",
        "{\"mcpServers\": {\"mute\": {\"command\": \"sleep\", \"args\": [\"30\"]}}}",
    );
    let started = Instant::now();
    let o = mcp(&[
        "list",
        "--config",
        s(&path),
        "--status",
        "--timeout",
        "1000",
    ]);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("mute") && text(&o).contains("✗ failed"),
        "{}",
        text(&o)
    );
}
