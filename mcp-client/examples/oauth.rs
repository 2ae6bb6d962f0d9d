//! An OAuth login embedded in an application: the application brings its
//! own browser opener (what it does with the authorization URL) and its own
//! token store (where it keeps tokens: its database, its keychain); the
//! stack runs the flow (discovery, registration, PKCE, the loopback
//! redirect, the token exchange, refresh).
//!
//! With no argument it serves the test server's OAuth-protected HTTP mode
//! and its authorization server on 127.0.0.1, and the "browser" is a small
//! HTTP client that follows the authorization server's redirect (the test
//! server asks no questions). Given a URL, it opens the system browser
//! (`xdg-open`, `open`) and waits for you.
//!
//! ```sh
//! cargo run -p mcp-stack-client --features oauth --example oauth
//! cargo run -p mcp-stack-client --features oauth --example oauth -- https://example.com/mcp
//! ```

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_stack_client::auth::agent::{Launcher, LoopbackAgent};
use mcp_stack_client::auth::client::{OAuthClient, OAuthConfig};
use mcp_stack_client::auth::store::{BlockingStore, LoginKey, MemoryStore, StoreError, StoredAuth};
use mcp_stack_client::serde_json::json;
use mcp_stack_client::{HttpOptions, SessionConfig};
use mcp_stack_testkit::http::{HttpServer, HttpServerOptions, OAuthOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The application's token store: here the stack's in-memory map, with a
/// word on what it is asked to keep (a real one writes its database or the
/// OS keychain). Entries are keyed by identity (the application's user;
/// `""` for a single user), server and issuer; `lock` serializes refreshes
/// per login. A store whose calls return at once implements
/// `BlockingStore` and gets `TokenStore`; one on an async driver
/// implements `TokenStore` itself.
#[derive(Debug, Default, Clone)]
struct AppStore {
    kept: MemoryStore,
    saves: Arc<AtomicUsize>,
}

impl BlockingStore for AppStore {
    fn load(&self, identity: &str, server: &str) -> Result<Vec<StoredAuth>, StoreError> {
        BlockingStore::load(&self.kept, identity, server)
    }

    fn save(&self, entry: &StoredAuth) -> Result<(), StoreError> {
        self.saves.fetch_add(1, Ordering::Relaxed);
        // `StoredAuth`'s Debug redacts the tokens: safe to log.
        println!(
            "  store: saving the login for {} (issuer {})",
            entry.server, entry.issuer
        );
        BlockingStore::save(&self.kept, entry)
    }

    fn remove(
        &self,
        identity: &str,
        server: &str,
        issuer: Option<&str>,
    ) -> Result<usize, StoreError> {
        BlockingStore::remove(&self.kept, identity, server, issuer)
    }

    fn list(&self) -> Result<Vec<StoredAuth>, StoreError> {
        BlockingStore::list(&self.kept)
    }

    fn lock(&self, key: &LoginKey) -> Result<Box<dyn Send + Sync>, StoreError> {
        BlockingStore::lock(&self.kept, key)
    }
}

/// A "browser" for the test server: GETs the authorization URL, and then
/// the redirect it answers with (the loopback listener the flow opened).
async fn follow(url: String) -> Result<(), String> {
    let location = http_get(&url)
        .await?
        .ok_or("the authorization server did not redirect")?;
    http_get(&location).await.map(drop)
}

/// A GET of an `http://host:port/path` URL on the loopback; the answer's
/// `Location`, if any.
async fn http_get(url: &str) -> Result<Option<String>, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("not an http URL: {url}"))?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut stream = tokio::net::TcpStream::connect(host)
        .await
        .map_err(|e| format!("{host}: {e}"))?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .await
        .map_err(|e| e.to_string())?;
    let head = String::from_utf8_lossy(&answer);
    Ok(head.lines().take_while(|l| !l.is_empty()).find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_owned())
    }))
}

#[tokio::main]
async fn main() -> ExitCode {
    match tokio::time::timeout(Duration::from_secs(300), run(std::env::args().nth(1))).await {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("error: the login did not finish within 5 minutes");
            ExitCode::FAILURE
        }
    }
}

async fn run(url: Option<String>) -> Result<(), Box<dyn std::error::Error>> {
    let (url, server, opened) = match url {
        Some(url) => (url, None, Arc::new(AtomicUsize::new(0))),
        None => {
            let options = HttpServerOptions::default().with_oauth(OAuthOptions::new());
            let server = HttpServer::start(options).await?;
            (server.url(), Some(server), Arc::new(AtomicUsize::new(0)))
        }
    };
    let test_server = server.is_some();

    // The application's browser opener: it must not block; the flow waits
    // for the redirect on its loopback listener after this returns.
    let count = Arc::clone(&opened);
    let launcher: Launcher = Arc::new(move |authorization_url: &str| {
        count.fetch_add(1, Ordering::Relaxed);
        println!("  browser: opening the authorization page");
        if test_server {
            tokio::spawn(follow(authorization_url.to_owned()));
            Ok(())
        } else {
            let opener = if cfg!(target_os = "macos") {
                "open"
            } else {
                "xdg-open"
            };
            println!("  (if nothing opens, visit {authorization_url})");
            std::process::Command::new(opener)
                .arg(authorization_url)
                .spawn()
                .map(drop)
                .map_err(|e| format!("{opener}: {e}"))
        }
    });
    let agent = LoopbackAgent::new(launcher).timeout(Duration::from_secs(240));
    let store = Arc::new(AppStore::default());

    // Sign in: the application's "log in" button.
    let client = OAuthClient::new(
        OAuthConfig::new(&url),
        &HttpOptions::new(),
        store.clone(),
        Some(Arc::new(agent)),
    )?;
    let login = client.login().await?;
    println!(
        "logged in at {} ({:?})",
        login.issuer,
        login.tokens.is_some()
    );

    // The session sends the token with every request (and refreshes it).
    let options = HttpOptions::new().authorizer(Arc::new(client.clone()));
    let session = mcp_stack_client::connect_http(&url, options, SessionConfig::new()).await?;
    let echoed = session
        .call_tool("echo", json!({"text": "authorized"}))
        .await?
        .into_result()?;
    println!("echo: {}", echoed.text());
    session.close().await;

    // Later (the application started again): the stored login is used, no
    // browser, no agent needed.
    let again = OAuthClient::new(
        OAuthConfig::new(&url),
        &HttpOptions::new(),
        store.clone(),
        None,
    )?;
    let options = HttpOptions::new().authorizer(Arc::new(again));
    let session = mcp_stack_client::connect_http(&url, options, SessionConfig::new()).await?;
    session
        .call_tool("echo", json!({"text": "again"}))
        .await?
        .into_result()?;
    session.close().await;
    println!(
        "connected again with the stored login; the browser opened {} time(s), the store saved {} time(s)",
        opened.load(Ordering::Relaxed),
        store.saves.load(Ordering::Relaxed)
    );
    if opened.load(Ordering::Relaxed) != 1 {
        return Err("expected exactly one browser opening".into());
    }
    Ok(())
}
