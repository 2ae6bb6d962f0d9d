//! `mcp login`'s loopback listener against hostile neighbours: any local
//! process or web page can reach 127.0.0.1, so a forged callback (a wrong
//! or missing `state`), a stray path or a connection that never speaks
//! must neither end the login nor hold up the real redirect. The browser
//! is played by the launcher: it sends the forgeries first, then follows
//! the authorization URL to the testkit's authorization server and brings
//! its redirect to the listener.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stack_auth::agent::{Launcher, LoopbackAgent};
use mcp_stack_auth::client::{OAuthClient, OAuthConfig};
use mcp_stack_auth::store::MemoryStore;
use mcp_stack_testkit::http::{HttpServer, HttpServerOptions, OAuthOptions};
use mcp_stack_transport::http::{HttpOptions, WebClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

async fn start() -> HttpServer {
    HttpServer::start(HttpServerOptions::default().with_oauth(OAuthOptions::new()))
        .await
        .unwrap()
}

/// The browser's tasks, to be awaited once the login is over.
type Browsers = Arc<Mutex<Vec<JoinHandle<()>>>>;

/// A launcher that runs `browser` with the authorization URL on a task of
/// its own (a launcher must not block), kept in `browsers`.
fn launcher<F, Fut>(browsers: &Browsers, browser: F) -> Launcher
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let browsers = Arc::clone(browsers);
    Arc::new(move |url: &str| {
        let task = tokio::spawn(browser(url.to_owned()));
        browsers.lock().unwrap().push(task);
        Ok(())
    })
}

/// Waits (bounded) for the browser's tasks to finish; a panic in one is
/// the test's.
async fn browsers_done(browsers: &Browsers) {
    let tasks = std::mem::take(&mut *browsers.lock().unwrap());
    assert_eq!(tasks.len(), 1, "one authorization, one browser");
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .expect("the browser never finished")
            .unwrap();
    }
}

/// The port of the `redirect_uri` an authorization URL carries.
fn redirect_port(authorization_url: &str) -> u16 {
    let query = authorization_url.split_once('?').unwrap().1;
    let uri = form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "redirect_uri")
        .unwrap()
        .1
        .into_owned();
    let rest = uri.strip_prefix("http://127.0.0.1:").unwrap();
    rest.split('/').next().unwrap().parse().unwrap()
}

/// One raw HTTP/1.1 GET to the listener; the whole answer (it closes).
async fn raw_get(port: u16, target: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let request = format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8(answer).unwrap()
}

/// What a browser does: asks the authorization server, and follows its
/// redirect to the listener.
async fn follow(authorization_url: &str) -> String {
    let web = WebClient::new(&HttpOptions::new()).unwrap();
    let answer = web
        .get(authorization_url, Default::default())
        .await
        .unwrap();
    let location = answer.header("location").unwrap().to_owned();
    let rest = location.strip_prefix("http://127.0.0.1:").unwrap();
    let (port, target) = rest.split_once('/').unwrap();
    raw_get(port.parse().unwrap(), &format!("/{target}")).await
}

fn client(url: &str, agent: LoopbackAgent) -> OAuthClient {
    OAuthClient::new(
        OAuthConfig::new(url),
        &HttpOptions::new(),
        Arc::new(MemoryStore::new()),
        Some(Arc::new(agent)),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_callback_gets_an_error_page_and_the_real_redirect_still_logs_in() {
    let server = start().await;
    let browsers = Browsers::default();
    let answers: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&answers);
    let agent = LoopbackAgent::new(launcher(&browsers, move |url| {
        let seen = Arc::clone(&seen);
        async move {
            let port = redirect_port(&url);
            for target in [
                "/favicon.ico",
                // A wrong state, with markup a careless page would reflect.
                "/callback?code=forged&state=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
                // No state at all.
                "/callback?error=access_denied&error_description=%3Cb%3Eforged%3C%2Fb%3E",
            ] {
                let answer = raw_get(port, target).await;
                seen.lock().unwrap().push(answer);
            }
            let answer = follow(&url).await;
            seen.lock().unwrap().push(answer);
        }
    }))
    .timeout(Duration::from_secs(60));
    let client = client(&server.url(), agent);
    let entry = client.login().await.unwrap();
    assert!(entry.tokens.is_some());
    browsers_done(&browsers).await;

    let answers = answers.lock().unwrap().clone();
    assert_eq!(answers.len(), 4, "{answers:?}");
    assert!(answers[0].starts_with("HTTP/1.1 404 "), "{}", answers[0]);
    for forged in &answers[1..3] {
        assert!(forged.starts_with("HTTP/1.1 400 "), "{forged}");
        assert!(forged.contains("text/html"), "{forged}");
        // Nothing of the request comes back.
        assert!(!forged.contains("script"), "{forged}");
        assert!(!forged.contains("forged"), "{forged}");
        assert!(!forged.contains("access_denied"), "{forged}");
    }
    assert!(answers[3].starts_with("HTTP/1.1 200 "), "{}", answers[3]);
    assert_eq!(
        server.stats().oauth.authorizations.load(Ordering::SeqCst),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_finish_a_request_do_not_hold_up_the_real_redirect() {
    let server = start().await;
    // The silent connections stay open until the login is over.
    let browsers = Browsers::default();
    let held: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
    let hold = Arc::clone(&held);
    let agent = LoopbackAgent::new(launcher(&browsers, move |url| {
        let hold = Arc::clone(&hold);
        async move {
            let port = redirect_port(&url);
            for i in 0..3 {
                let mut silent = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
                if i == 2 {
                    // Half a request head, never finished.
                    silent.write_all(b"GET /callback?state=").await.unwrap();
                }
                hold.lock().unwrap().push(silent);
            }
            let answer = follow(&url).await;
            assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        }
    }))
    // Served one after the other, each silent connection would hold the
    // listener for its whole read bound (10 s): the three of them outlast
    // this wait.
    .timeout(Duration::from_secs(20));
    let client = client(&server.url(), agent);
    let entry = client.login().await.unwrap();
    assert!(entry.tokens.is_some());
    browsers_done(&browsers).await;

    // The listener is gone with the login, and so are its connections.
    let held = std::mem::take(&mut *held.lock().unwrap());
    assert_eq!(held.len(), 3);
    for mut silent in held {
        let mut byte = [0u8; 1];
        let closed = tokio::time::timeout(Duration::from_secs(10), silent.read(&mut byte))
            .await
            .expect("the listener left a connection open");
        assert!(matches!(closed, Ok(0) | Err(_)), "{closed:?}");
    }
}
