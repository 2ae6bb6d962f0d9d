//! `mcp login`, `mcp auth status`, `mcp logout`, and the stored login used
//! by `mcp tools`, against the testkit's OAuth-protected server running in
//! this process (so its counters can be read). The login's browser is
//! `curl -L`, which follows the authorization server's immediate 302 to the
//! login's loopback listener.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::print_stderr
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_stack_testkit::http::{HttpServer, HttpServerOptions, OAuthOptions};

const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// The testkit server on a runtime of its own, serving while the test
/// blocks on the `mcp` processes.
struct Kit {
    server: HttpServer,
    _runtime: tokio::runtime::Runtime,
}

impl Kit {
    fn start(oauth: OAuthOptions) -> Kit {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let options = HttpServerOptions::default().with_oauth(oauth);
        let server = runtime.block_on(HttpServer::start(options)).unwrap();
        Kit {
            server,
            _runtime: runtime,
        }
    }

    fn count(&self, f: impl Fn(&mcp_stack_testkit::http::OAuthStats) -> &AtomicUsize) -> usize {
        f(&self.server.stats().oauth).load(Ordering::SeqCst)
    }
}

/// A fresh folder for the token store, removed when dropped.
struct AuthDir(PathBuf);

impl AuthDir {
    fn new(name: &str) -> AuthDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mcp-cli-auth-{}-{}-{name}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        AuthDir(dir)
    }

    /// Runs `mcp` with this store.
    fn mcp(&self, args: &[&str]) -> Output {
        Command::new(MCP)
            .args(args)
            .env("NO_COLOR", "1")
            .env("MCP_AUTH_DIR", &self.0)
            // A catalog cache of its own: a logout drops cached catalogs.
            .env("MCP_CACHE_DIR", self.0.join("cache"))
            .env_remove("MCP_BROWSER")
            .output()
            .expect("run mcp")
    }

    /// The store's files of servers.
    fn server_files(&self) -> Vec<PathBuf> {
        let Ok(dir) = std::fs::read_dir(&self.0) else {
            return Vec::new();
        };
        dir.flatten()
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                name.starts_with("server-") && name.ends_with(".json")
            })
            .collect()
    }
}

impl Drop for AuthDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn have_curl() -> bool {
    Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The secrets of the one stored login, read from its file.
fn stored_secrets(file: &Path) -> Vec<String> {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let tokens = &doc["entries"][0]["tokens"];
    let mut secrets = vec![tokens["access_token"].as_str().unwrap().to_owned()];
    if let Some(r) = tokens["refresh_token"].as_str() {
        secrets.push(r.to_owned());
    }
    secrets
}

#[test]
fn login_status_tools_and_logout_against_an_oauth_server() {
    if !have_curl() {
        eprintln!("skipped: `curl` is not installed (mcp login's --browser-command uses it)");
        return;
    }
    let kit = Kit::start(OAuthOptions::new());
    let url = kit.server.url();
    let issuer = kit.server.issuer().unwrap();
    let auth = AuthDir::new("flow");

    // Before any login: the probe fails and says what to run.
    let out = auth.mcp(&["probe", "--url", &url]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("needs authorization"), "{t}");
    assert!(t.contains(&format!("mcp login --url {url}")), "{t}");
    assert_eq!(kit.count(|o| &o.authorizations), 0);
    assert!(
        auth.server_files().is_empty(),
        "nothing stored without a login"
    );

    // The login: curl plays the browser.
    let out = auth.mcp(&[
        "login",
        "--url",
        &url,
        "--browser-command",
        "curl -s -o /dev/null -L",
        "--timeout",
        "20",
    ]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("logged in"), "{t}");
    assert!(t.contains(&issuer), "{t}");
    assert_eq!(kit.count(|o| &o.registrations), 1);
    assert_eq!(kit.count(|o| &o.authorizations), 1);
    assert_eq!(kit.count(|o| &o.code_grants), 1);

    let files = auth.server_files();
    assert_eq!(files.len(), 1, "{files:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&files[0]).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the store file is the user's only");
        let mode = std::fs::metadata(&auth.0).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "the store folder is the user's only");
    }
    let secrets = stored_secrets(&files[0]);
    assert!(secrets.iter().all(|s| !t.contains(s.as_str())), "{t}");

    // The status names the server and issuer, never a token.
    let out = auth.mcp(&["auth", "status"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains(&url), "{t}");
    assert!(t.contains(&format!("issuer: {issuer}")), "{t}");
    assert!(t.contains("refresh token: yes"), "{t}");
    for secret in &secrets {
        assert!(!t.contains(secret.as_str()), "a token leaked: {t}");
    }

    // The stored login is sent from the first request on.
    let refused = kit.count(|o| &o.unauthorized);
    let out = auth.mcp(&["tools", "--url", &url]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("echo"), "{t}");
    assert_eq!(
        kit.count(|o| &o.unauthorized),
        refused,
        "no request was refused"
    );
    assert_eq!(kit.count(|o| &o.authorizations), 1, "no new authorization");
    assert!(kit.count(|o| &o.authorized) >= 1);
    for secret in &secrets {
        assert!(!t.contains(secret.as_str()), "a token leaked: {t}");
    }

    // Logout removes it.
    let out = auth.mcp(&["logout", "--url", &url]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("removed 1 stored login"), "{t}");
    assert!(auth.server_files().is_empty());
    let out = auth.mcp(&["auth", "status"]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("no stored logins"), "{t}");

    // And the server needs a login again.
    let out = auth.mcp(&["tools", "--url", &url]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains(&format!("mcp login --url {url}")), "{t}");
}

/// `mcp` with this store folder and a keychain service of the test's own.
fn mcp_keyring(auth: &AuthDir, service: &str, env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(MCP)
        .args(args)
        .env("NO_COLOR", "1")
        .env("MCP_AUTH_DIR", &auth.0)
        .env("MCP_CACHE_DIR", auth.0.join("cache"))
        .env("MCP_KEYRING_SERVICE", service)
        .env_remove("MCP_TOKEN_STORE")
        .env_remove("MCP_BROWSER")
        .envs(env.iter().copied())
        .output()
        .expect("run mcp")
}

#[test]
#[ignore = "needs a Secret Service: .ci/keyring-tests.sh"]
fn keyring_login_in_one_process_is_found_by_the_next() {
    assert!(have_curl(), "mcp login's --browser-command uses curl");
    let kit = Kit::start(OAuthOptions::new());
    let url = kit.server.url();
    let auth = AuthDir::new("keyring");
    let service = format!("mcp-stack-cli-test-{}", std::process::id());
    std::fs::create_dir_all(&auth.0).unwrap();
    let config = auth.0.join("servers.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"kit": {"url": url, "oauth": {"tokenStore": "keyring"}}}})
            .to_string(),
    )
    .unwrap();
    let config = config.to_str().unwrap();

    // Logged in through the config, whose server keeps its tokens in the keychain.
    let out = mcp_keyring(
        &auth,
        &service,
        &[],
        &[
            "login",
            "--config",
            config,
            "--server",
            "kit",
            "--browser-command",
            "curl -s -o /dev/null -L",
            "--timeout",
            "20",
        ],
    );
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("logged in"), "{t}");
    assert!(
        auth.server_files().is_empty(),
        "no token file: the keychain has it"
    );

    // Another process finds it: by the environment, by the flag, by the config.
    let refused = kit.count(|o| &o.unauthorized);
    let out = mcp_keyring(
        &auth,
        &service,
        &[("MCP_TOKEN_STORE", "keyring")],
        &["tools", "--url", &url],
    );
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("echo"), "{t}");
    let out = mcp_keyring(&auth, &service, &[], &["tools", "--config", config]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("echo"), "{t}");
    assert_eq!(
        kit.count(|o| &o.unauthorized),
        refused,
        "no request was refused"
    );
    assert_eq!(kit.count(|o| &o.authorizations), 1, "no new authorization");
    // The file store (the default) has no login for it.
    let out = mcp_keyring(&auth, &service, &[], &["tools", "--url", &url]);
    assert!(!out.status.success(), "{}", text(&out));

    let out = mcp_keyring(
        &auth,
        &service,
        &[],
        &["auth", "status", "--token-store", "keyring"],
    );
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains(&url) && t.contains("refresh token: yes"), "{t}");

    let out = mcp_keyring(
        &auth,
        &service,
        &[],
        &["logout", "--config", config, "--server", "kit"],
    );
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("removed 1 stored login"), "{t}");
    // The catalog `tools --config` cached under the login goes with it.
    assert!(
        t.contains("removed 1 catalog(s) cached under a login"),
        "{t}"
    );
    let out = mcp_keyring(
        &auth,
        &service,
        &[],
        &["auth", "status", "--token-store", "keyring"],
    );
    assert!(text(&out).contains("no stored logins"), "{}", text(&out));
    // Logged out, nothing lists the server's tools: not the cache (its
    // catalog was dropped), and not the server, which refuses.
    for args in [
        &["tools", "--config", config][..],
        &["tools", "--config", config, "--refresh"][..],
    ] {
        let out = mcp_keyring(&auth, &service, &[], args);
        let t = text(&out);
        assert!(!out.status.success(), "{args:?}: {t}");
        assert!(!t.contains("echo"), "{args:?}: {t}");
    }
}

#[test]
fn an_unknown_token_store_is_a_usage_error() {
    let auth = AuthDir::new("unknown-store");
    let out = auth.mcp(&["auth", "status", "--token-store", "vault"]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("`keyring` or `file`"), "{t}");
    let out = Command::new(MCP)
        .args(["auth", "status"])
        .env("MCP_AUTH_DIR", &auth.0)
        .env("MCP_TOKEN_STORE", "vault")
        .output()
        .unwrap();
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("MCP_TOKEN_STORE"), "{t}");
}
