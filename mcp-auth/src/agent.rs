//! The user's side of an authorization: sending the user to the
//! authorization URL and receiving the redirect back.
//!
//! * [`LoopbackAgent`]: a listener on 127.0.0.1 (an ephemeral port unless
//!   one is fixed) receives the redirect; the URL is handed to a
//!   [`Launcher`] (the CLI opens the system browser, prints the URL, or
//!   runs a `--browser-command`). Anything on the machine can connect to
//!   it, so it takes only a GET of the expected path whose `state` is this
//!   authorization's: a request without it (a forgery by another process
//!   or a web page) gets an error page, one to another path a 404, and
//!   the wait goes on. Connections are served concurrently, at most 16 at
//!   a time, each with its own bounds (10 s and 8 KiB for the request
//!   head), so a silent one holds up nothing; the whole wait is bounded.
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
use mcp_stack_http::WebClient;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;

use crate::AuthError;
use crate::authorize::constant_time_eq;
use mcp_stack_http::auth::AuthFuture;

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
    /// Sends the user to `authorization_url` and waits for the redirect
    /// that carries `state` (the authorization request's); resolves to its
    /// query string (`code=…&state=…&iss=…`). A receiver that can tell
    /// requests apart (a listener) turns away any without this `state` and
    /// goes on waiting; the flow checks the answer again either way.
    fn wait(
        self: Box<Self>,
        authorization_url: String,
        state: String,
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
                limits: LIMITS,
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
    limits: Limits,
}

impl fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackRedirect")
            .field("uri", &self.uri)
            .finish_non_exhaustive()
    }
}

/// The bounds of the loopback listener: anything on this machine (another
/// user's process, a web page in any browser tab) can connect to it.
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// Connections served at once; more wait in the kernel's backlog until
    /// one ends (each ends within `head_time` + `write_time`).
    connections: usize,
    /// How long a connection has to send its request head.
    head_time: Duration,
    /// How large a request head may be.
    head_bytes: usize,
    /// How long writing an answer may take.
    write_time: Duration,
}

const LIMITS: Limits = Limits {
    connections: 16,
    head_time: Duration::from_secs(10),
    head_bytes: 8 * 1024,
    write_time: Duration::from_secs(5),
};

/// What the listener waits for: a GET of `path` whose query carries `state`.
struct Expected {
    path: String,
    state: String,
}

impl Redirect for LoopbackRedirect {
    fn redirect_uri(&self) -> &str {
        &self.uri
    }

    fn wait(
        self: Box<Self>,
        authorization_url: String,
        state: String,
    ) -> AuthFuture<'static, Result<String, AuthError>> {
        Box::pin(async move {
            (self.launcher)(&authorization_url).map_err(AuthError::Interaction)?;
            let timeout = self.timeout;
            let uri = self.uri.clone();
            tokio::time::timeout(timeout, self.receive(state))
                .await
                .map_err(|_| {
                    AuthError::Interaction(format!(
                        "no authorization arrived within {}: the browser never came back to {uri} \
                         (use --no-browser to copy the URL by hand)",
                        mcp_stack_protocol::defaults::describe_duration(timeout),
                    ))
                })
        })
    }
}

impl LoopbackRedirect {
    /// Serves connections, each on a task of its own, until one brings the
    /// redirect that carries `state`; resolves to its query. Returning
    /// drops the other connections (their tasks are aborted).
    async fn receive(self, state: String) -> String {
        let LoopbackRedirect {
            listener,
            path,
            limits,
            ..
        } = self;
        let expected = Arc::new(Expected { path, state });
        let slots = Arc::new(Semaphore::new(limits.connections));
        let (arrived, mut redirect) = mpsc::channel::<String>(1);
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                biased;
                Some(query) = redirect.recv() => return query,
                // Finished connections are reaped as they end.
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
                accepted = accept(&listener, &slots) => {
                    let Some((stream, slot)) = accepted else {
                        continue;
                    };
                    let expected = Arc::clone(&expected);
                    let arrived = arrived.clone();
                    connections.spawn(async move {
                        if let Some(query) = serve(stream, &expected, limits).await {
                            let _ = arrived.send(query).await;
                        }
                        drop(slot);
                    });
                }
            }
        }
    }
}

/// Accepts a connection once a slot is free; `None` after an error
/// (logged, and followed by a short pause: out of file descriptors, say,
/// is no reason to spin).
async fn accept(
    listener: &TcpListener,
    slots: &Arc<Semaphore>,
) -> Option<(TcpStream, OwnedSemaphorePermit)> {
    let slot = Arc::clone(slots).acquire_owned().await.ok()?;
    match listener.accept().await {
        Ok((stream, _)) => Some((stream, slot)),
        Err(e) => {
            tracing::debug!(error = %e, "the redirect listener could not accept a connection");
            tokio::time::sleep(Duration::from_millis(100)).await;
            None
        }
    }
}

/// One connection: reads its request head (within the limits), answers
/// it, and hands back the query if it is the redirect awaited.
async fn serve(mut stream: TcpStream, expected: &Expected, limits: Limits) -> Option<String> {
    let head = tokio::time::timeout(limits.head_time, read_head(&mut stream, limits.head_bytes))
        .await
        // Silent or slow: dropped without a word.
        .ok()?;
    let (answer, query) = match head {
        Head::Complete(head) => judge(&head, expected),
        Head::TooLarge => (Answer::TooLarge, None),
        Head::Closed => return None,
    };
    if answer == Answer::NotOurs {
        tracing::warn!(
            "a request to the redirect URI without this sign-in's state was turned away; \
             still waiting for the authorization server's redirect"
        );
    }
    let _ = tokio::time::timeout(limits.write_time, answer.write(&mut stream)).await;
    query
}

/// What a connection sent before its request head ended.
enum Head {
    /// The head, up to and including the blank line.
    Complete(Vec<u8>),
    /// More than the limit without the blank line.
    TooLarge,
    /// The connection ended (or failed) first.
    Closed,
}

/// Reads up to the end of the request head (`\r\n\r\n`), at most `limit`
/// bytes of it.
async fn read_head(stream: &mut TcpStream, limit: usize) -> Head {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return Head::Closed,
            Ok(n) => n,
        };
        // Only the bytes that can complete the terminator are searched again.
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
        let end = buf
            .get(from..)
            .and_then(|tail| tail.windows(4).position(|w| w == b"\r\n\r\n"))
            .map(|at| from + at + 4);
        match end {
            Some(end) if end <= limit => {
                buf.truncate(end);
                return Head::Complete(buf);
            }
            _ if buf.len() >= limit => return Head::TooLarge,
            _ => {}
        }
    }
}

/// How a request is answered. None of the pages holds anything of the
/// request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// The redirect awaited.
    Received,
    /// The callback path without this sign-in's `state`.
    NotOurs,
    /// Another path: a favicon, a probe.
    NotFound,
    /// The callback path with another method than GET.
    MethodNotAllowed,
    /// Not an HTTP/1 request line.
    BadRequest,
    /// A request head over the limit.
    TooLarge,
}

/// The page the browser shows once the redirect arrived (what it said is
/// for the terminal to tell).
const DONE_PAGE: &str = "<!doctype html><meta charset=\"utf-8\"><title>Authorization received</title>\
<p>The authorization server's answer has arrived. You can close this window and go back to the \
terminal.</p>";

/// The page of a request to the callback without this sign-in's `state`.
const NOT_OURS_PAGE: &str = "<!doctype html><meta charset=\"utf-8\"><title>Not this sign-in's redirect</title>\
<p>This is not the answer the sign-in waiting here expects (its state does not match), so it was \
ignored, and the sign-in is still waiting. If you came here from your authorization server, go back \
to the terminal and start the sign-in again.</p>";

const NOT_FOUND_PAGE: &str =
    "<!doctype html><meta charset=\"utf-8\"><title>Not found</title><p>Nothing here.</p>";

const BAD_REQUEST_PAGE: &str = "<!doctype html><meta charset=\"utf-8\"><title>Bad request</title>\
<p>This listener only receives an authorization server's redirect.</p>";

impl Answer {
    fn status(self) -> &'static str {
        match self {
            Answer::Received => "200 OK",
            Answer::NotOurs | Answer::BadRequest => "400 Bad Request",
            Answer::NotFound => "404 Not Found",
            Answer::MethodNotAllowed => "405 Method Not Allowed",
            Answer::TooLarge => "431 Request Header Fields Too Large",
        }
    }

    fn page(self) -> &'static str {
        match self {
            Answer::Received => DONE_PAGE,
            Answer::NotOurs => NOT_OURS_PAGE,
            Answer::NotFound => NOT_FOUND_PAGE,
            Answer::MethodNotAllowed | Answer::BadRequest | Answer::TooLarge => BAD_REQUEST_PAGE,
        }
    }

    /// Writes the answer and closes the sending side.
    async fn write(self, stream: &mut TcpStream) -> std::io::Result<()> {
        let page = self.page();
        let allow = if self == Answer::MethodNotAllowed {
            "allow: GET\r\n"
        } else {
            ""
        };
        let head = format!(
            "HTTP/1.1 {}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\
             cache-control: no-store\r\nx-content-type-options: nosniff\r\n\
             referrer-policy: no-referrer\r\ncontent-security-policy: default-src 'none'\r\n\
             {allow}connection: close\r\n\r\n",
            self.status(),
            page.len()
        );
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(page.as_bytes()).await?;
        stream.shutdown().await
    }
}

/// Judges a request head: the answer, and the query when it is the
/// redirect awaited (a GET of the callback path whose query carries the
/// `state` once, equal to ours).
fn judge(head: &[u8], expected: &Expected) -> (Answer, Option<String>) {
    let Some(line) = head
        .split(|&b| b == b'\r')
        .next()
        .and_then(|line| std::str::from_utf8(line).ok())
    else {
        return (Answer::BadRequest, None);
    };
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return (Answer::BadRequest, None);
    };
    if !version.starts_with("HTTP/1.") {
        return (Answer::BadRequest, None);
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != expected.path {
        return (Answer::NotFound, None);
    }
    if method != "GET" {
        return (Answer::MethodNotAllowed, None);
    }
    let mut states = form_urlencoded::parse(query.as_bytes()).filter(|(name, _)| name == "state");
    match (states.next(), states.next()) {
        (Some((_, state)), None)
            if constant_time_eq(state.as_bytes(), expected.state.as_bytes()) =>
        {
            (Answer::Received, Some(query.to_owned()))
        }
        _ => (Answer::NotOurs, None),
    }
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
        _state: String,
    ) -> AuthFuture<'static, Result<String, AuthError>> {
        // The redirect read here is the authorization server's own answer
        // to this request: the flow's check of its state is enough.
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn expected() -> Expected {
        Expected {
            path: "/callback".into(),
            state: "s1".into(),
        }
    }

    fn judged(head: &str) -> (Answer, Option<String>) {
        judge(head.as_bytes(), &expected())
    }

    #[test]
    fn only_a_get_of_the_callback_with_our_state_is_the_redirect() {
        assert_eq!(
            judged("GET /callback?code=c&state=s1&iss=x HTTP/1.1\r\nHost: h\r\n\r\n"),
            (Answer::Received, Some("code=c&state=s1&iss=x".into()))
        );
        assert_eq!(
            judged("GET /callback?error=access_denied&state=s%31 HTTP/1.0\r\n\r\n"),
            (
                Answer::Received,
                Some("error=access_denied&state=s%31".into())
            )
        );
        for (head, answer) in [
            (
                "GET /callback?code=c&state=s2 HTTP/1.1\r\n\r\n",
                Answer::NotOurs,
            ),
            (
                "GET /callback?code=c&state=s HTTP/1.1\r\n\r\n",
                Answer::NotOurs,
            ),
            (
                "GET /callback?code=c&state= HTTP/1.1\r\n\r\n",
                Answer::NotOurs,
            ),
            ("GET /callback?code=c HTTP/1.1\r\n\r\n", Answer::NotOurs),
            ("GET /callback HTTP/1.1\r\n\r\n", Answer::NotOurs),
            (
                "GET /callback?state=s1&state=s1 HTTP/1.1\r\n\r\n",
                Answer::NotOurs,
            ),
            (
                "GET /callback?state=s2&state=s1 HTTP/1.1\r\n\r\n",
                Answer::NotOurs,
            ),
            ("GET /favicon.ico HTTP/1.1\r\n\r\n", Answer::NotFound),
            ("GET /callback/?state=s1 HTTP/1.1\r\n\r\n", Answer::NotFound),
            ("GET /Callback?state=s1 HTTP/1.1\r\n\r\n", Answer::NotFound),
            (
                "POST /callback?state=s1 HTTP/1.1\r\n\r\n",
                Answer::MethodNotAllowed,
            ),
            ("GET /callback?state=s1\r\n\r\n", Answer::BadRequest),
            ("GET /callback?state=s1 SPDY/3\r\n\r\n", Answer::BadRequest),
            (
                "GET  /callback?state=s1 HTTP/1.1\r\n\r\n",
                Answer::BadRequest,
            ),
            ("\r\n\r\n", Answer::BadRequest),
        ] {
            assert_eq!(judged(head), (answer, None), "{head:?}");
        }
        assert_eq!(
            judge(b"GET /callback?state=s1\xff HTTP/1.1\r\n\r\n", &expected()),
            (Answer::BadRequest, None)
        );
    }

    #[test]
    fn no_page_depends_on_the_request() {
        for answer in [
            Answer::Received,
            Answer::NotOurs,
            Answer::NotFound,
            Answer::MethodNotAllowed,
            Answer::BadRequest,
            Answer::TooLarge,
        ] {
            assert!(answer.page().starts_with("<!doctype html>"));
            assert!(answer.status().len() > 4);
        }
    }

    /// A redirect on an ephemeral port with these limits, and its port.
    async fn redirect(limits: Limits) -> (LoopbackRedirect, u16) {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let redirect = LoopbackRedirect {
            uri: format!("http://127.0.0.1:{port}/callback"),
            path: "/callback".into(),
            listener,
            timeout: Duration::from_secs(60),
            launcher: Arc::new(|_| Ok(())),
            limits,
        };
        (redirect, port)
    }

    async fn send(port: u16, request: &[u8]) -> TcpStream {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.write_all(request).await.unwrap();
        stream
    }

    async fn answer(mut stream: TcpStream) -> String {
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        String::from_utf8_lossy(&answer).into_owned()
    }

    const REAL: &[u8] = b"GET /callback?code=c&state=s1 HTTP/1.1\r\nHost: h\r\n\r\n";

    #[tokio::test]
    async fn an_oversized_head_is_refused_and_the_wait_goes_on() {
        let (redirect, port) = redirect(LIMITS).await;
        let wait = tokio::spawn(Box::new(redirect).wait("http://as/authorize".into(), "s1".into()));
        let mut huge = b"GET /callback?state=".to_vec();
        huge.resize(LIMITS.head_bytes + 10, b'a');
        let refused = answer(send(port, &huge).await).await;
        assert!(
            refused.is_empty() || refused.starts_with("HTTP/1.1 431 "),
            "{refused}"
        );
        let done = answer(send(port, REAL).await).await;
        assert!(done.starts_with("HTTP/1.1 200 "), "{done}");
        assert_eq!(wait.await.unwrap().unwrap(), "code=c&state=s1");
    }

    #[tokio::test]
    async fn at_the_connection_limit_the_real_redirect_waits_for_a_slot() {
        let limits = Limits {
            connections: 2,
            head_time: Duration::from_secs(60),
            ..LIMITS
        };
        let (redirect, port) = redirect(limits).await;
        let wait = tokio::spawn(Box::new(redirect).wait("http://as/authorize".into(), "s1".into()));
        let first = send(port, b"").await;
        let _second = send(port, b"GET /callback?st").await;
        let real = send(port, REAL).await;
        // A slot frees when a silent connection goes away; the real
        // redirect, queued meanwhile, is served then.
        drop(first);
        let done = tokio::time::timeout(Duration::from_secs(30), answer(real))
            .await
            .unwrap();
        assert!(done.starts_with("HTTP/1.1 200 "), "{done}");
        assert_eq!(wait.await.unwrap().unwrap(), "code=c&state=s1");
    }

    #[tokio::test]
    async fn a_connection_silent_past_its_read_bound_is_dropped() {
        let limits = Limits {
            head_time: Duration::from_millis(50),
            ..LIMITS
        };
        let (redirect, port) = redirect(limits).await;
        let wait = tokio::spawn(Box::new(redirect).wait("http://as/authorize".into(), "s1".into()));
        // Dropped without an answer once its bound has passed.
        let silent = send(port, b"GET /call").await;
        let dropped = tokio::time::timeout(Duration::from_secs(30), answer(silent))
            .await
            .unwrap();
        assert_eq!(dropped, "");
        let done = answer(send(port, REAL).await).await;
        assert!(done.starts_with("HTTP/1.1 200 "), "{done}");
        assert_eq!(wait.await.unwrap().unwrap(), "code=c&state=s1");
    }
}
