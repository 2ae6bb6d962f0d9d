//! What a [`Client`](crate::Client) is built from, and what its observer sees.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper::header::{HeaderMap, HeaderName, HeaderValue};

use crate::HttpError;
use crate::auth::Authorizer;
use crate::proxy::Proxy;

/// Default bound on establishing a TCP (and TLS) connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default bound on waiting for an HTTP answer's head (and a body): the
/// stack's request timeout.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = mcp_stack_protocol::defaults::REQUEST_TIMEOUT;

/// What an [`HttpObserver`] sees: one line of an HTTP exchange, redacted.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HttpTrace {
    /// A request is going out.
    Request {
        /// `POST`, `GET`, `DELETE`.
        method: String,
        /// The URL, through [`redact_url`](crate::redact_url).
        url: String,
        /// The relevant headers; values of `Authorization` and of every
        /// configured header are `<redacted>`.
        headers: Vec<(String, String)>,
    },
    /// The head of an answer arrived.
    Response {
        /// The method of the request it answers.
        method: String,
        /// The URL, through [`redact_url`](crate::redact_url).
        url: String,
        /// The status code.
        status: u16,
        /// The relevant headers (`Content-Type`, `Mcp-Session-Id`, …).
        headers: Vec<(String, String)>,
    },
    /// A request failed without an answer.
    Failed {
        /// The method.
        method: String,
        /// The URL, through [`redact_url`](crate::redact_url).
        url: String,
        /// Why.
        error: String,
    },
    /// Something a transport did on its own (resume, re-initialize, fall back).
    Note(String),
}

/// Sees every HTTP exchange of a client, redacted (for tracing).
pub type HttpObserver = Arc<dyn Fn(&HttpTrace) + Send + Sync>;

/// The settings of a [`Client`](crate::Client) or a
/// [`WebClient`](crate::WebClient): headers, timeouts, TLS roots, the
/// proxy, the authorizer and the observer. `ClientOptions::new()` gives
/// the documented defaults.
///
/// ```
/// use mcp_stack_http::ClientOptions;
/// let options = ClientOptions::new().header("Authorization", "Bearer s3cret");
/// assert!(!format!("{options:?}").contains("s3cret"));
/// ```
#[derive(Clone)]
pub struct ClientOptions {
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) connect_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) extra_ca_file: Option<PathBuf>,
    pub(crate) extra_ca_pem: Option<Vec<u8>>,
    pub(crate) os_roots: bool,
    pub(crate) http2: bool,
    pub(crate) observer: Option<HttpObserver>,
    pub(crate) server_name: Option<String>,
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    pub(crate) proxy: Proxy,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl From<&ClientOptions> for ClientOptions {
    fn from(options: &ClientOptions) -> Self {
        options.clone()
    }
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, _)| (k.as_str(), "<redacted>"))
            .collect();
        f.debug_struct("ClientOptions")
            .field("headers", &headers)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("extra_ca_file", &self.extra_ca_file)
            .field("extra_ca_pem", &self.extra_ca_pem.as_ref().map(Vec::len))
            .field("os_roots", &self.os_roots)
            .field("http2", &self.http2)
            .field("observer", &self.observer.as_ref().map(|_| "<fn>"))
            .field("server_name", &self.server_name)
            .field("authorizer", &self.authorizer)
            .field("proxy", &self.proxy)
            .finish()
    }
}

impl ClientOptions {
    /// The defaults: no extra headers, 10 s connect timeout, 60 s request
    /// timeout, webpki and system roots, HTTP/2 offered over TLS, the
    /// environment's proxy.
    pub fn new() -> Self {
        ClientOptions {
            headers: Vec::new(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            extra_ca_file: None,
            extra_ca_pem: None,
            os_roots: true,
            http2: true,
            observer: None,
            server_name: None,
            authorizer: None,
            proxy: Proxy::from_env(),
        }
    }

    /// Adds a header sent with every request (an `Authorization` token, say).
    /// Its value is never logged, traced or shown in errors; a value with CR,
    /// LF or NUL makes building the client fail.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Whether the configured headers include `Authorization`: a static
    /// token, which wins over any [`authorizer`](Self::authorizer). Callers
    /// that would build an OAuth client ask this first.
    ///
    /// ```
    /// use mcp_stack_http::ClientOptions;
    /// assert!(ClientOptions::new().header(" authorization ", "Bearer t").has_authorization_header());
    /// assert!(!ClientOptions::new().header("X-Api-Key", "k").has_authorization_header());
    /// ```
    pub fn has_authorization_header(&self) -> bool {
        has_authorization(&self.headers)
    }

    /// Adds headers (see [`header`](Self::header)).
    pub fn headers<I, K, V>(mut self, headers: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.headers
            .extend(headers.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// Bound on establishing a connection, TCP and TLS (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Bound on waiting for an answer's head, and on reading a
    /// [`WebClient`](crate::WebClient)'s body (default 60 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Trusts the CA certificates in this PEM file too (on top of the webpki roots).
    pub fn extra_ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.extra_ca_file = Some(path.into());
        self
    }

    /// Trusts the CA certificates in this PEM text too.
    pub fn extra_ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.extra_ca_pem = Some(pem.into());
        self
    }

    /// Whether the operating system's trust store is trusted too, beside
    /// the bundled webpki roots (default true; `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` are honoured).
    pub fn os_roots(mut self, trust: bool) -> Self {
        self.os_roots = trust;
        self
    }

    /// Whether HTTP/2 is offered to TLS servers (ALPN `h2` beside
    /// `http/1.1`; default true). Plain `http://` is always HTTP/1.1.
    pub fn http2(mut self, offer: bool) -> Self {
        self.http2 = offer;
        self
    }

    /// Sees every HTTP exchange, redacted (for tracing).
    pub fn observer(mut self, observer: impl Fn(&HttpTrace) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// [`observer`](Self::observer), shared.
    pub fn observer_arc(mut self, observer: Option<HttpObserver>) -> Self {
        self.observer = observer;
        self
    }

    /// Authorizes every request and answers the server's 401 and 403
    /// challenges (see [`Authorizer`]). A configured `Authorization`
    /// header wins: the authorizer is then never asked.
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// Which HTTP proxy requests go through (default [`Proxy::from_env`]).
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        self.proxy = proxy;
        self
    }

    /// The name used in logs.
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(name.into());
        self
    }

    pub(crate) fn name(&self) -> &str {
        self.server_name.as_deref().unwrap_or("http")
    }

    pub(crate) fn observe(&self, trace: HttpTrace) {
        if let Some(observer) = &self.observer {
            observer(&trace);
        }
    }

    /// The configured headers, checked: names valid, values free of CR, LF
    /// and NUL, and marked sensitive.
    pub(crate) fn header_map(&self) -> Result<HeaderMap, HttpError> {
        let mut map = HeaderMap::new();
        for (name, value) in &self.headers {
            let header = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
                HttpError::InvalidConfig(format!("{name:?} is not a valid header name"))
            })?;
            if value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
                return Err(HttpError::InvalidConfig(format!(
                    "the value of header {name} contains a line break or NUL; \
                     header values must be one line"
                )));
            }
            let mut value = HeaderValue::from_str(value.trim()).map_err(|_| {
                HttpError::InvalidConfig(format!(
                    "the value of header {name} has characters a header cannot carry"
                ))
            })?;
            value.set_sensitive(true);
            map.append(header, value);
        }
        Ok(map)
    }
}

/// Whether these headers include `Authorization` (the rule lives here once).
pub fn has_authorization(headers: &[(String, String)]) -> bool {
    headers
        .iter()
        .any(|(name, _)| name.trim().eq_ignore_ascii_case("authorization"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_with_line_breaks_are_rejected_without_showing_them() {
        for bad in ["a\r\nX-Evil: 1", "a\nb", "a\rb", "a\0b"] {
            let err = ClientOptions::new()
                .header("Authorization", bad)
                .header_map()
                .unwrap_err();
            assert!(matches!(err, HttpError::InvalidConfig(_)));
            assert!(!err.to_string().contains("Evil"), "{err}");
        }
        let err = ClientOptions::new()
            .header("Bad Name", "x")
            .header_map()
            .unwrap_err();
        assert!(err.to_string().contains("Bad Name"));
        let map = ClientOptions::new()
            .header("X-Key", " v ")
            .header_map()
            .unwrap();
        assert!(map.get("x-key").unwrap().is_sensitive());
        assert_eq!(map.get("x-key").unwrap(), "v");
    }
}
