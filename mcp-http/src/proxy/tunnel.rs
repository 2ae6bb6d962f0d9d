//! The connector under TLS: straight to the server, or an HTTP `CONNECT`
//! tunnel through a proxy, as the client's [`ProxyRules`] say.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tower_service::Service;

use super::{ProxyEndpoint, ProxyRules, Route};
use crate::error::timed_out;

/// The largest answer head to `CONNECT` read before giving up.
const MAX_HEAD: usize = 8 * 1024;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Wraps the TCP connector: a request whose route is a proxy gets a
/// connection to the proxy with a `CONNECT` tunnel to its server, within
/// the connect timeout (proxy connect and `CONNECT` exchange together);
/// any other a direct connection.
#[derive(Clone, Debug)]
pub(crate) struct ProxyConnector {
    direct: HttpConnector,
    rules: Arc<ProxyRules>,
    connect_timeout: Duration,
}

impl ProxyConnector {
    pub(crate) fn new(
        direct: HttpConnector,
        rules: Arc<ProxyRules>,
        connect_timeout: Duration,
    ) -> Self {
        ProxyConnector {
            direct,
            rules,
            connect_timeout,
        }
    }
}

impl Service<Uri> for ProxyConnector {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.direct.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, target: Uri) -> Self::Future {
        match self.rules.route(&target) {
            Route::Direct => {
                let connecting = self.direct.call(target);
                Box::pin(async move { connecting.await.map_err(Into::into) })
            }
            Route::Unusable(problem) => Box::pin(async move {
                Err(Box::new(TunnelError {
                    proxy: String::new(),
                    target: authority(&target),
                    credentials_sent: false,
                    failure: Failure::Unusable(problem),
                }) as BoxError)
            }),
            Route::Via(proxy) => {
                let mut direct = self.direct.clone();
                let bound = self.connect_timeout;
                Box::pin(async move {
                    let target_authority = authority(&target);
                    let error = |failure| TunnelError {
                        proxy: proxy.shown().to_owned(),
                        target: target_authority.clone(),
                        credentials_sent: proxy.has_credentials(),
                        failure,
                    };
                    let attempt = async {
                        let io = direct.call(proxy.dial.clone()).await.map_err(|e| {
                            if timed_out(&e) {
                                error(Failure::Timeout(bound))
                            } else {
                                error(Failure::Connect(chain(&e)))
                            }
                        })?;
                        let mut tcp = io.into_inner();
                        tracing::debug!(proxy = %proxy.shown(), target = %target_authority, "opening a CONNECT tunnel");
                        open_tunnel(&mut tcp, &target_authority, &proxy)
                            .await
                            .map_err(error)?;
                        Ok::<_, TunnelError>(TokioIo::new(tcp))
                    };
                    match tokio::time::timeout(bound, attempt).await {
                        Ok(Ok(io)) => Ok(io),
                        Ok(Err(e)) => Err(Box::new(e) as BoxError),
                        Err(_) => Err(Box::new(error(Failure::Timeout(bound))) as BoxError),
                    }
                })
            }
        }
    }
}

/// An error and its sources, one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        out.push_str(": ");
        out.push_str(&s.to_string());
        next = s.source();
    }
    out
}

/// `host:port` of a target, the default port of its scheme filled in
/// (IPv6 addresses keep their brackets).
fn authority(target: &Uri) -> String {
    let https = target.scheme_str() == Some("https");
    let port = target.port_u16().unwrap_or(if https { 443 } else { 80 });
    format!("{}:{port}", target.host().unwrap_or(""))
}

/// Sends `CONNECT` and reads the answer's head; a 2xx opens the tunnel.
async fn open_tunnel(
    tcp: &mut TcpStream,
    target: &str,
    proxy: &ProxyEndpoint,
) -> Result<(), Failure> {
    let mut head = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n").into_bytes();
    if let Some(auth) = &proxy.authorization {
        head.extend_from_slice(b"Proxy-Authorization: ");
        head.extend_from_slice(auth.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    tcp.write_all(&head)
        .await
        .map_err(|e| Failure::Io(e.to_string()))?;
    let mut answer = Vec::with_capacity(256);
    let mut chunk = [0u8; 1024];
    let end = loop {
        let n = tcp
            .read(&mut chunk)
            .await
            .map_err(|e| Failure::Io(e.to_string()))?;
        if n == 0 {
            return Err(Failure::Malformed("closed the connection before answering"));
        }
        answer.extend_from_slice(chunk.get(..n).unwrap_or_default());
        if let Some(end) = memchr::memmem::find(&answer, b"\r\n\r\n") {
            break end + 4;
        }
        if answer.len() > MAX_HEAD {
            return Err(Failure::Malformed("sent an answer head over 8 KiB"));
        }
    };
    let status = status_of(&answer).ok_or(Failure::Malformed("did not answer in HTTP"))?;
    if !(200..300).contains(&status) {
        return Err(Failure::Refused(status));
    }
    // Neither TLS nor HTTP/1.1 lets the server speak first: bytes after a
    // 2xx head are not the server's.
    if answer.len() > end {
        return Err(Failure::Malformed("sent data after opening the tunnel"));
    }
    Ok(())
}

/// The status code of an HTTP/1.x answer head.
fn status_of(head: &[u8]) -> Option<u16> {
    let line = head.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end_matches('\r');
    let mut parts = line.splitn(3, ' ');
    let version = parts.next()?;
    if !version.starts_with("HTTP/1.") {
        return None;
    }
    let code = parts.next()?;
    if code.len() != 3 {
        return None;
    }
    code.parse().ok().filter(|c| (100..600).contains(c))
}

/// Why a tunnel could not be opened. Travels inside hyper's connect error;
/// the client finds it in the error's sources and makes the typed
/// [`HttpError`](crate::HttpError).
#[derive(Debug)]
pub(crate) struct TunnelError {
    /// The proxy, as shown (`http://host:port`; never user info).
    pub(crate) proxy: String,
    /// `host:port` of the server.
    pub(crate) target: String,
    /// Whether credentials went with the `CONNECT`.
    pub(crate) credentials_sent: bool,
    pub(crate) failure: Failure,
}

#[derive(Debug)]
pub(crate) enum Failure {
    /// Could not reach the proxy.
    Connect(String),
    /// Reading or writing the `CONNECT` exchange.
    Io(String),
    /// The proxy's answer is not one.
    Malformed(&'static str),
    /// A non-2xx answer to `CONNECT`.
    Refused(u16),
    /// Proxy connect and `CONNECT` took longer than the connect timeout.
    Timeout(Duration),
    /// The proxy a variable names cannot be used (why, variable named).
    Unusable(String),
}

impl fmt::Display for TunnelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (proxy, target) = (&self.proxy, &self.target);
        match &self.failure {
            Failure::Connect(e) => write!(f, "cannot reach the proxy {proxy}: {e}"),
            Failure::Io(e) => write!(f, "the proxy {proxy} dropped the tunnel to {target}: {e}"),
            Failure::Malformed(what) => {
                write!(f, "the proxy {proxy} {what} (CONNECT {target})")
            }
            Failure::Refused(status) => {
                write!(f, "the proxy {proxy} answered {status} to CONNECT {target}")
            }
            Failure::Timeout(after) => write!(
                f,
                "no tunnel through the proxy {proxy} to {target} within {after:?}"
            ),
            Failure::Unusable(problem) => write!(f, "{problem}"),
        }
    }
}

impl std::error::Error for TunnelError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines() {
        assert_eq!(
            status_of(b"HTTP/1.1 200 Connection established\r\n\r\n"),
            Some(200)
        );
        assert_eq!(
            status_of(b"HTTP/1.0 407 Proxy Authentication Required\r\n"),
            Some(407)
        );
        assert_eq!(status_of(b"HTTP/1.1 204\r\n\r\n"), Some(204));
        assert_eq!(status_of(b"HTTP/1.1 2000 OK\r\n\r\n"), None);
        assert_eq!(status_of(b"SSH-2.0-OpenSSH\r\n\r\n"), None);
        assert_eq!(status_of(b"\xff\xfe\r\n\r\n"), None);
        assert_eq!(status_of(b""), None);
    }

    #[test]
    fn authorities_get_their_default_port() {
        assert_eq!(authority(&"https://h/x".parse().unwrap()), "h:443");
        assert_eq!(authority(&"http://h/x".parse().unwrap()), "h:80");
        assert_eq!(authority(&"http://[::1]:8/x".parse().unwrap()), "[::1]:8");
    }
}
