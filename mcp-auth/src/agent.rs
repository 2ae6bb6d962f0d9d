//! The user's side of an authorization: sending the user to the
//! authorization URL and receiving the redirect back.
//!
//! * [`LoopbackAgent`]: a listener on 127.0.0.1 (an ephemeral port unless
//!   one is fixed) receives the redirect; the URL is handed to a
//!   [`Launcher`] (the CLI opens the system browser, prints the URL, or
//!   runs a `--browser-command`). Only the expected path is accepted, and
//!   the wait is bounded.
//! * [`FollowRedirect`]: no user at all: it fetches the authorization URL
//!   itself and reads the redirect's `Location`. For authorization servers
//!   that approve without a person (test servers, the conformance suite).
//!
//! The runtime never uses either on its own: an embedding application
//! chooses.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::header::HeaderMap;
use mcp_transport::http::WebClient;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::AuthError;
use mcp_transport::http::auth::AuthFuture;

/// Sends the user to an authorization URL and brings back the redirect.
pub trait UserAgent: Send + Sync + fmt::Debug {
    /// Gets ready to receive a redirect (binding a listener, say); the
    /// returned [`Redirect`] names the redirect URI to register and send.
    fn prepare(&self) -> AuthFuture<'_, Result<Box<dyn Redirect>, AuthError>>;
}

/// One authorization's redirect, ready to be received.
pub trait Redirect: Send + fmt::Debug {
    /// The redirect URI.
    fn redirect_uri(&self) -> &str;
    /// Sends the user to `authorization_url` and waits for the redirect;
    /// resolves to the redirect's query string (`code=…&state=…&iss=…`).
    fn wait(
        self: Box<Self>,
        authorization_url: String,
    ) -> AuthFuture<'static, Result<String, AuthError>>;
}

/// Shows an authorization URL to the user (opens a browser, prints it, runs
/// a command). It must not block: the redirect is awaited after it returns.
pub type Launcher = Arc<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// Receives the redirect on a loopback listener (RFC 8252 §7.3).
#[derive(Clone)]
pub struct LoopbackAgent {
    port: u16,
    path: String,
    timeout: Duration,
    launcher: Launcher,
}

impl fmt::Debug for LoopbackAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackAgent")
            .field("port", &self.port)
            .field("path", &self.path)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl LoopbackAgent {
    /// Listens on an ephemeral port at `/callback`, waits up to 5 minutes,
    /// and hands the URL to `launcher`.
    pub fn new(launcher: Launcher) -> Self {
        LoopbackAgent {
            port: 0,
            path: "/callback".into(),
            timeout: Duration::from_secs(300),
            launcher,
        }
    }

    /// A fixed port (an authorization server that registered one exact
    /// redirect URI needs it); 0 for an ephemeral one.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// How long to wait for the user.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

impl UserAgent for LoopbackAgent {
    fn prepare(&self) -> AuthFuture<'_, Result<Box<dyn Redirect>, AuthError>> {
        Box::pin(async move {
            let listener = TcpListener::bind(("127.0.0.1", self.port))
                .await
                .map_err(|e| {
                    AuthError::Interaction(format!(
                        "cannot listen on 127.0.0.1:{} for the redirect: {e}",
                        self.port
                    ))
                })?;
            let port = listener
                .local_addr()
                .map_err(|e| AuthError::Interaction(format!("the redirect listener: {e}")))?
                .port();
            let redirect: Box<dyn Redirect> = Box::new(LoopbackRedirect {
                uri: format!("http://127.0.0.1:{port}{}", self.path),
                path: self.path.clone(),
                listener,
                timeout: self.timeout,
                launcher: self.launcher.clone(),
            });
            Ok(redirect)
        })
    }
}

struct LoopbackRedirect {
    uri: String,
    path: String,
    listener: TcpListener,
    timeout: Duration,
    launcher: Launcher,
}

impl fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackRedirect")
            .field("uri", &self.uri)
            .finish_non_exhaustive()
    }
}

/// The page the browser shows once the redirect arrived.
const DONE_PAGE: &str = "<!doctype html><title>Authorized</title>\
<p>Authorization received. You can close this window and go back to the terminal.</p>";

impl Redirect for LoopbackRedirect {
    fn redirect_uri(&self) -> &str {
        &self.uri
    }

    fn wait(
        self: Box<Self>,
        authorization_url: String,
    ) -> AuthFuture<'static, Result<String, AuthError>> {
        Box::pin(async move {
            (self.launcher)(&authorization_url).map_err(AuthError::Interaction)?;
            let timeout = self.timeout;
            let wait = async {
                loop {
                    let Ok((mut stream, _)) = self.listener.accept().await else {
                        continue;
                    };
                    let Some(target) = read_request_target(&mut stream).await else {
                        continue;
                    };
                    let (path, query) = target.split_once('?').unwrap_or((target.as_str(), ""));
                    if path != self.path {
                        // A favicon, a stray probe: not the redirect.
                        let _ = stream
                            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                            .await;
                        continue;
                    }
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        DONE_PAGE.len()
                    );
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(DONE_PAGE.as_bytes()).await;
                    let _ = stream.shutdown().await;
                    return query.to_owned();
                }
            };
            tokio::time::timeout(timeout, wait).await.map_err(|_| {
                AuthError::Interaction(format!(
                    "no authorization arrived within {}: the browser never came back to {} \
                     (use --no-browser to copy the URL by hand)",
                    mcp_transport::describe_duration(timeout),
                    self.uri
                ))
            })
        })
    }
}

/// Reads an HTTP request head (at most 8 KiB, 10 s) and returns its target.
async fn read_request_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let read = async {
        let mut chunk = [0u8; 1024];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 8192 {
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(chunk.get(..n)?);
        }
        Some(())
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .ok()??;
    let text = std::str::from_utf8(&buf).ok()?;
    let line = text.lines().next()?;
    let mut parts = line.split(' ');
    let method = parts.next()?;
    let target = parts.next()?;
    (method == "GET").then(|| target.to_owned())
}

/// Fetches the authorization URL itself and reads the redirect (see the
/// module docs). The redirect URI is never listened on.
#[derive(Debug, Clone)]
pub struct FollowRedirect {
    web: WebClient,
    redirect_uri: String,
}

impl FollowRedirect {
    /// Follows with this client; `redirect_uri` is what it registers and sends.
    pub fn new(web: WebClient, redirect_uri: impl Into<String>) -> Self {
        FollowRedirect {
            web,
            redirect_uri: redirect_uri.into(),
        }
    }
}

impl UserAgent for FollowRedirect {
    fn prepare(&self) -> AuthFuture<'_, Result<Box<dyn Redirect>, AuthError>> {
        let redirect: Box<dyn Redirect> = Box::new(self.clone());
        Box::pin(async move { Ok(redirect) })
    }
}

impl Redirect for FollowRedirect {
    fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    fn wait(
        self: Box<Self>,
        authorization_url: String,
    ) -> AuthFuture<'static, Result<String, AuthError>> {
        Box::pin(async move {
            let answer = self
                .web
                .get(&authorization_url, HeaderMap::new())
                .await
                .map_err(|e| AuthError::Interaction(format!("the authorization request: {e}")))?;
            let location = answer.header("location").ok_or_else(|| {
                AuthError::Interaction(format!(
                    "the authorization endpoint answered {} without a redirect: it wants a person \
                     (log in with a browser instead)",
                    answer.status
                ))
            })?;
            let rest = location
                .strip_prefix(self.redirect_uri.as_str())
                .filter(|rest| rest.is_empty() || rest.starts_with(['?', '#']));
            let Some(rest) = rest else {
                return Err(AuthError::Interaction(
                    "the authorization endpoint redirected somewhere other than the redirect URI"
                        .into(),
                ));
            };
            Ok(rest
                .split_once('?')
                .map(|(_, q)| q)
                .unwrap_or("")
                .split('#')
                .next()
                .unwrap_or("")
                .to_owned())
        })
    }
}
