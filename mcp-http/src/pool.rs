//! The connections a [`Client`](crate::Client) keeps:
//! HTTP/1.1 connections reused one request at a time, and one shared
//! HTTP/2 connection per origin where TLS negotiated `h2`.
//!
//! Why not hyper-util's pooled client: a client here talks to one origin
//! (two with a legacy SSE server whose message endpoint lives elsewhere,
//! rarely more), so a short list compared by scheme and authority does
//! what a hash map keyed by them does, without hashing the authority byte
//! by byte on every checkout and return, and without a spawned task per
//! request to put the connection back. A connection goes back into the
//! list as soon as the head of its answer arrives, and is taken again
//! once hyper says it is ready (its last body was read). That was about
//! 7,000 instructions of a 57,000-instruction `tools/call` over
//! streamable HTTP (`cargo xtask bench http --instructions`).
//!
//! What it keeps of the pooled client's behaviour:
//! * a request that never left on a reused connection (the server closed
//!   it while idle) is sent again on another one;
//! * HTTP/1.1 requests carry `Host` and an origin-form target; HTTP/2 ones
//!   their full URI;
//! * connections idle for longer than [`IDLE_TIMEOUT`] are not reused;
//! * the connector is the same (TCP or a proxy's `CONNECT` tunnel, under
//!   TLS), so connect timeouts, proxies and certificates are unchanged.

use std::fmt;
use std::future::poll_fn;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper::header::{self, HeaderValue};
use hyper::http::uri::{Authority, PathAndQuery, Scheme};
use hyper::{Request, Response, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::Connection as _;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tower_service::Service;

use crate::proxy::ProxyConnector;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Body = Full<Bytes>;

/// A connection unused for this long is closed rather than reused
/// (servers commonly drop idle keep-alive connections sooner or later).
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// HTTP/1.1 connections kept per origin; more may be open at once, but
/// those beyond it are closed after their request.
const MAX_KEPT: usize = 64;
/// Origins remembered; the oldest is forgotten first.
const MAX_ORIGINS: usize = 8;
/// Sends of one request: a request that never left a stale connection is
/// tried on the next one, and the last attempt always opens a new one.
const MAX_ATTEMPTS: usize = 4;

/// Why a request got no answer head.
#[derive(Debug)]
pub(crate) enum PoolError {
    /// No connection: TCP, the proxy's tunnel or TLS failed.
    Connect(BoxError),
    /// The HTTP handshake on a new connection failed.
    Handshake(hyper::Error),
    /// The request failed on its connection.
    Send(hyper::Error),
    /// The URI has no scheme or no host.
    NotAbsolute,
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PoolError::Connect(_) => f.write_str("cannot connect"),
            PoolError::Handshake(_) => f.write_str("the HTTP handshake failed"),
            PoolError::Send(_) => f.write_str("the request failed"),
            PoolError::NotAbsolute => f.write_str("the URL has no scheme or no host"),
        }
    }
}

impl std::error::Error for PoolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PoolError::Connect(e) => Some(e.as_ref()),
            PoolError::Handshake(e) | PoolError::Send(e) => Some(e),
            PoolError::NotAbsolute => None,
        }
    }
}

/// Connections by origin.
pub(crate) struct Pool {
    connector: HttpsConnector<ProxyConnector>,
    origins: Mutex<Vec<Origin>>,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool").finish_non_exhaustive()
    }
}

struct Origin {
    scheme: Scheme,
    authority: Authority,
    /// The `Host` header of its HTTP/1.1 requests.
    host: HeaderValue,
    /// HTTP/1.1 connections, busy or idle.
    h1: Vec<Kept>,
    /// The HTTP/2 connection every request shares.
    h2: Option<http2::SendRequest<Body>>,
}

impl Origin {
    /// Compared as written: `Authority`'s own `==` ignores case byte by
    /// byte, and two spellings of one host only cost a second connection.
    fn is(&self, scheme: &Scheme, authority: &Authority) -> bool {
        self.authority.as_str() == authority.as_str() && self.scheme == *scheme
    }
}

struct Kept {
    sender: http1::SendRequest<Body>,
    since: Instant,
}

/// A connection for one request.
enum Conn {
    H1(http1::SendRequest<Body>),
    H2(http2::SendRequest<Body>),
}

impl Pool {
    pub(crate) fn new(connector: HttpsConnector<ProxyConnector>) -> Self {
        Pool {
            connector,
            origins: Mutex::new(Vec::new()),
        }
    }

    /// Sends a request (its URI absolute) and waits for the head of the
    /// answer.
    pub(crate) async fn request(
        &self,
        mut request: Request<Body>,
    ) -> Result<Response<Incoming>, PoolError> {
        let uri = request.uri().clone();
        let (Some(scheme), Some(authority)) = (uri.scheme(), uri.authority()) else {
            return Err(PoolError::NotAbsolute);
        };
        if uri.host().is_none_or(str::is_empty) {
            return Err(PoolError::NotAbsolute);
        }
        let mut attempt = 1;
        loop {
            let last = attempt >= MAX_ATTEMPTS;
            // Only a connection taken from the list can be stale.
            let (conn, host, reused) = match self.take(scheme, authority, last) {
                Some((conn, host)) => (conn, host, true),
                // Boxed: the handshakes' states are large, and a request
                // future that held them inline would be copied whole on
                // every request (measured: ~20,000 instructions of memcpy).
                None => {
                    let conn = Box::pin(self.connect(&uri)).await?;
                    if let Conn::H2(sender) = &conn {
                        self.keep_h2(scheme, authority, sender);
                    }
                    (conn, host_value(&uri), false)
                }
            };
            let sent = match conn {
                Conn::H1(mut sender) => {
                    if !request.headers().contains_key(header::HOST)
                        && let Some(host) = host
                    {
                        request.headers_mut().insert(header::HOST, host);
                    }
                    *request.uri_mut() = origin_form(&uri);
                    let answer = sender.try_send_request(request).await;
                    if answer.is_ok() {
                        self.put_back(scheme, authority, sender);
                    }
                    answer
                }
                Conn::H2(mut sender) => sender.try_send_request(request).await,
            };
            match sent {
                Ok(response) => return Ok(response),
                Err(mut e) => match e.take_message() {
                    Some(back) if reused => {
                        tracing::debug!(error = %e.error(), "a reused connection was closed; sending again");
                        request = back;
                        *request.uri_mut() = uri.clone();
                        attempt += 1;
                    }
                    _ => return Err(PoolError::Send(e.into_error())),
                },
            }
        }
    }

    /// HTTP/1.1 connections kept that are not closed, over every origin.
    #[cfg(test)]
    fn open_h1(&self) -> usize {
        let origins = self.origins.lock().unwrap_or_else(|p| p.into_inner());
        origins
            .iter()
            .flat_map(|o| &o.h1)
            .filter(|k| !k.sender.is_closed())
            .count()
    }

    /// A connection of this origin that can take a request now (and the
    /// `Host` value of the origin), unless `fresh` asks for a new one.
    fn take(
        &self,
        scheme: &Scheme,
        authority: &Authority,
        fresh: bool,
    ) -> Option<(Conn, Option<HeaderValue>)> {
        let mut origins = self.origins.lock().unwrap_or_else(|p| p.into_inner());
        let origin = origins.iter_mut().find(|o| o.is(scheme, authority))?;
        if fresh {
            return None;
        }
        if let Some(h2) = &origin.h2 {
            if !h2.is_closed() {
                return Some((Conn::H2(h2.clone()), None));
            }
            origin.h2 = None;
        }
        let now = Instant::now();
        let mut i = 0;
        while let Some(kept) = origin.h1.get(i) {
            if kept.sender.is_closed() || now.duration_since(kept.since) > IDLE_TIMEOUT {
                origin.h1.swap_remove(i);
            } else if kept.sender.is_ready() {
                let kept = origin.h1.swap_remove(i);
                return Some((Conn::H1(kept.sender), Some(origin.host.clone())));
            } else {
                i += 1;
            }
        }
        None
    }

    /// Keeps an HTTP/1.1 connection whose answer head arrived: it is taken
    /// again once its body has been read.
    fn put_back(&self, scheme: &Scheme, authority: &Authority, sender: http1::SendRequest<Body>) {
        let mut origins = self.origins.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(origin) = origin_entry(&mut origins, scheme, authority)
            && origin.h1.len() < MAX_KEPT
        {
            origin.h1.push(Kept {
                sender,
                since: Instant::now(),
            });
        }
    }

    /// Keeps a new HTTP/2 connection for every later request to its origin.
    fn keep_h2(&self, scheme: &Scheme, authority: &Authority, sender: &http2::SendRequest<Body>) {
        let mut origins = self.origins.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(origin) = origin_entry(&mut origins, scheme, authority) {
            origin.h2 = Some(sender.clone());
        }
    }

    /// A new connection to the server of `uri`: HTTP/2 when TLS negotiated
    /// it (then kept for every later request to the origin), else HTTP/1.1.
    async fn connect(&self, uri: &Uri) -> Result<Conn, PoolError> {
        let mut connector = self.connector.clone();
        poll_fn(|cx| connector.poll_ready(cx))
            .await
            .map_err(PoolError::Connect)?;
        let io = connector
            .call(uri.clone())
            .await
            .map_err(PoolError::Connect)?;
        if io.connected().is_negotiated_h2() {
            let (mut sender, connection) = http2::Builder::new(TokioExecutor::new())
                .timer(TokioTimer::new())
                .handshake(io)
                .await
                .map_err(PoolError::Handshake)?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::debug!(error = %e, "an HTTP/2 connection ended");
                }
            });
            sender.ready().await.map_err(PoolError::Handshake)?;
            Ok(Conn::H2(sender))
        } else {
            let (sender, connection) = http1::handshake(io).await.map_err(PoolError::Handshake)?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::debug!(error = %e, "an HTTP/1.1 connection ended");
                }
            });
            // Not waiting until it is ready: a new connection takes its first
            // request at once (hyper queues it until the connection task
            // runs), which spares a round through the scheduler.
            Ok(Conn::H1(sender))
        }
    }
}

/// The entry of an origin, made (the oldest forgotten when there are
/// [`MAX_ORIGINS`]) when there is none; `None` for an authority no `Host`
/// value can be made of.
fn origin_entry<'a>(
    origins: &'a mut Vec<Origin>,
    scheme: &Scheme,
    authority: &Authority,
) -> Option<&'a mut Origin> {
    let at = match origins.iter().position(|o| o.is(scheme, authority)) {
        Some(at) => at,
        None => {
            let host = host_of(authority, scheme).ok()?;
            if origins.len() >= MAX_ORIGINS {
                origins.remove(0);
            }
            origins.push(Origin {
                scheme: scheme.clone(),
                authority: authority.clone(),
                host,
                h1: Vec::new(),
                h2: None,
            });
            origins.len() - 1
        }
    };
    origins.get_mut(at)
}

/// The `Host` value of a URI's authority: the host, and the port unless it
/// is the scheme's default; no user information.
fn host_of(
    authority: &Authority,
    scheme: &Scheme,
) -> Result<HeaderValue, header::InvalidHeaderValue> {
    let default = if *scheme == Scheme::HTTPS { 443 } else { 80 };
    match authority.port_u16() {
        Some(port) if port != default => {
            HeaderValue::from_str(&format!("{}:{port}", authority.host()))
        }
        _ => HeaderValue::from_str(authority.host()),
    }
}

fn host_value(uri: &Uri) -> Option<HeaderValue> {
    let (scheme, authority) = (uri.scheme()?, uri.authority()?);
    host_of(authority, scheme).ok()
}

/// The request target of an HTTP/1.1 request: path and query.
fn origin_form(uri: &Uri) -> Uri {
    let path = uri
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    Uri::from(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{Client, read_body};
    use crate::{ClientOptions, Proxy};
    use hyper::Method;
    use hyper::header::HeaderMap;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// What the test server does after each answer.
    #[derive(Clone, Copy, PartialEq)]
    enum After {
        /// Keeps the connection for the next request.
        KeepAlive,
        /// Says `Connection: close` and closes.
        SayClose,
        /// Closes without a word, as a server reaping idle connections does.
        Drop,
    }

    /// A bare HTTP/1.1 server: counts connections, keeps each request head,
    /// answers every request with `{"n": …}`.
    struct Server {
        url: String,
        accepted: Arc<AtomicUsize>,
        heads: Arc<Mutex<Vec<String>>>,
    }

    async fn serve(after: After) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (count, seen) = (Arc::clone(&accepted), Arc::clone(&heads));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(answer_all(stream, after, Arc::clone(&seen)));
            }
        });
        Server {
            url,
            accepted,
            heads,
        }
    }

    async fn answer_all(mut stream: TcpStream, after: After, heads: Arc<Mutex<Vec<String>>>) {
        let mut buf = Vec::new();
        loop {
            let Some(end) = read_head(&mut stream, &mut buf).await else {
                return;
            };
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + length {
                let mut chunk = [0u8; 4096];
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            buf.drain(..end + 4 + length);
            let n = {
                let mut heads = heads.lock().unwrap();
                heads.push(head);
                heads.len()
            };
            let body = format!("{{\"n\":{n}}}");
            let close = if after == After::SayClose {
                "connection: close\r\n"
            } else {
                ""
            };
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{close}\r\n{body}",
                body.len()
            );
            if stream.write_all(answer.as_bytes()).await.is_err() || after != After::KeepAlive {
                return;
            }
        }
    }

    /// Reads until the end of a request head; its length.
    async fn read_head(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<usize> {
        loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                return Some(end);
            }
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    fn client() -> Client {
        Client::new(ClientOptions::new().proxy(Proxy::none())).unwrap()
    }

    /// One POST, its whole body read; the body.
    async fn post(client: &Client, url: &str) -> String {
        let uri: Uri = url.parse().unwrap();
        let request = client.build(
            Method::POST,
            &uri,
            HeaderMap::new(),
            Some(Bytes::from_static(b"{}")),
        );
        let response = client.send(request).await.unwrap();
        assert_eq!(response.status(), 200);
        let body = read_body(response.into_body(), 1024, Duration::from_secs(10), "test")
            .await
            .unwrap();
        String::from_utf8(body.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn requests_one_after_another_share_one_connection() {
        let server = serve(After::KeepAlive).await;
        let client = client();
        for n in 1..=5 {
            assert_eq!(post(&client, &server.url).await, format!("{{\"n\":{n}}}"));
        }
        assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
        let heads = server.heads.lock().unwrap().clone();
        let port = server
            .url
            .split(':')
            .nth(2)
            .unwrap()
            .trim_end_matches("/mcp");
        for head in &heads {
            assert!(head.starts_with("post /mcp http/1.1\r\n"), "{head}");
            assert!(
                head.contains(&format!("\r\nhost: 127.0.0.1:{port}")),
                "{head}"
            );
        }
    }

    #[tokio::test]
    async fn requests_in_flight_together_get_a_connection_each() {
        let server = serve(After::KeepAlive).await;
        let client = client();
        let (a, b, c) = tokio::join!(
            post(&client, &server.url),
            post(&client, &server.url),
            post(&client, &server.url)
        );
        let mut answers = [a, b, c];
        answers.sort();
        assert_eq!(answers, [r#"{"n":1}"#, r#"{"n":2}"#, r#"{"n":3}"#]);
        assert_eq!(server.accepted.load(Ordering::SeqCst), 3);
        // All three are kept and reused: three more at once open none.
        let _ = tokio::join!(
            post(&client, &server.url),
            post(&client, &server.url),
            post(&client, &server.url)
        );
        assert_eq!(server.accepted.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_connection_the_server_closes_is_not_reused() {
        let server = serve(After::SayClose).await;
        let client = client();
        for _ in 0..3 {
            post(&client, &server.url).await;
        }
        assert_eq!(server.accepted.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_connection_closed_while_idle_is_replaced() {
        let server = serve(After::Drop).await;
        let client = client();
        post(&client, &server.url).await;
        // Wait (bounded) until the client has seen the close.
        tokio::time::timeout(Duration::from_secs(10), async {
            while client.pool().open_h1() > 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the closed connection is noticed");
        post(&client, &server.url).await;
        assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_url_without_a_host_is_refused() {
        let pool = client();
        let request = Request::new(Full::new(Bytes::new()));
        let err = pool.pool().request(request).await.unwrap_err();
        assert!(matches!(err, PoolError::NotAbsolute), "{err}");
    }

    #[test]
    fn host_values_leave_out_default_ports_and_user_information() {
        let host = |u: &str| host_value(&u.parse::<Uri>().unwrap()).unwrap();
        assert_eq!(host("http://example.com/mcp"), "example.com");
        assert_eq!(host("http://example.com:80/mcp"), "example.com");
        assert_eq!(host("https://example.com:443/"), "example.com");
        assert_eq!(host("https://example.com:8443/"), "example.com:8443");
        assert_eq!(host("http://127.0.0.1:3000/mcp"), "127.0.0.1:3000");
        assert_eq!(host("http://[::1]:3000/mcp"), "[::1]:3000");
        assert_eq!(host("http://u:p@example.com/"), "example.com");
    }

    #[test]
    fn origin_form_keeps_path_and_query() {
        let form = |u: &str| origin_form(&u.parse::<Uri>().unwrap()).to_string();
        assert_eq!(form("http://h:1/mcp?x=1"), "/mcp?x=1");
        assert_eq!(form("http://h:1"), "/");
    }
}
