//! The pooled hyper client: configured headers, the authorizer, the
//! request timeout, tracing, and errors named for what failed.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, Uri};
use hyper_util::client::legacy::connect::HttpConnector;

use crate::auth::{AuthDecision, MAX_AUTH_RETRIES, RequestTarget, challenge_of};
use crate::error::timed_out;
use crate::pool::{Pool, PoolError};
use crate::proxy::{Failure, ProxyConnector, TunnelError};
use crate::{ClientOptions, HttpError, HttpTrace, redact_url};

/// Headers that traces show (values of configured headers and of
/// `Authorization` are redacted).
const SHOWN: &[&str] = &[
    "content-type",
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "last-event-id",
    "location",
    "www-authenticate",
    "authorization",
];

/// A pooled keep-alive client with TLS: concurrent requests go out on
/// separate connections (or share one HTTP/2 connection), idle ones are
/// reused. Cloning it shares the pool.
///
/// Every request goes through [`send`](Self::send): the configured
/// headers, the [`Authorizer`](crate::auth::Authorizer)'s credentials and
/// its answer to a 401 or 403, the request timeout on the answer's head,
/// and the observer's trace.
#[derive(Clone)]
pub struct Client {
    pool: Arc<Pool>,
    options: Arc<ClientOptions>,
    /// The configured headers, checked.
    headers: HeaderMap,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client with these settings: the TLS roots read (once per process
    /// for the bundled and system ones), the headers checked, the proxy
    /// chosen. Nothing is connected yet.
    pub fn new(options: impl Into<ClientOptions>) -> Result<Self, HttpError> {
        let mut options = options.into();
        if options.has_authorization_header() && options.authorizer.take().is_some() {
            tracing::debug!(
                server = options.name(),
                "a configured Authorization header wins over the authorizer"
            );
        }
        let headers = options.header_map()?;
        let tls = crate::tls::config(&options)?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(options.connect_timeout));
        // Under TLS, so TLS to an https server runs inside a proxy's tunnel.
        let rules = options.proxy.rules()?;
        if rules.any() {
            tracing::debug!(server = options.name(), proxy = ?rules, "proxy settings");
        }
        let http = ProxyConnector::new(http, rules, options.connect_timeout);
        // ALPN offers h2 and http/1.1 over TLS (HTTP/2 when the server
        // takes it); plain http stays HTTP/1.1.
        let https = if options.http2 {
            hyper_rustls::HttpsConnectorBuilder::new()
                .with_tls_config(tls)
                .https_or_http()
                .enable_http1()
                .enable_http2()
                .wrap_connector(http)
        } else {
            hyper_rustls::HttpsConnectorBuilder::new()
                .with_tls_config(tls)
                .https_or_http()
                .enable_http1()
                .wrap_connector(http)
        };
        Ok(Client {
            pool: Arc::new(Pool::new(https)),
            options: Arc::new(options),
            headers,
        })
    }

    #[cfg(test)]
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The settings it was built with (the authorizer dropped when a
    /// configured `Authorization` header wins).
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// A request with the configured headers; `extra` headers are added
    /// after them, and a body is sent as `application/json`.
    pub fn build(
        &self,
        method: Method,
        uri: &Uri,
        extra: HeaderMap,
        body: Option<Bytes>,
    ) -> Request<Full<Bytes>> {
        // Built in place: `extra` is the request's map when no headers are
        // configured (the common case), so no map is made and refilled.
        let mut headers = if self.headers.is_empty() {
            extra
        } else {
            let mut headers = self.headers.clone();
            headers.extend(extra);
            headers
        };
        if body.is_some() {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        let mut request = Request::new(Full::new(body.unwrap_or_default()));
        *request.method_mut() = method;
        *request.uri_mut() = uri.clone();
        *request.headers_mut() = headers;
        request
    }

    /// Sends a request and waits (bounded by the request timeout) for the
    /// head of the answer, tracing both. With an authorizer, the request
    /// carries its credentials, and a 401 or 403 goes to the authorizer,
    /// which may have the request sent again (a bounded number of times).
    pub async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, HttpError> {
        let Some(authorizer) = self.options.authorizer.clone() else {
            return self.send_once(request).await;
        };
        let (parts, body) = request.into_parts();
        let target = RequestTarget {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
        };
        let mut retries = 0;
        loop {
            let credentials = authorizer.credentials(&target).await?;
            let mut request = Request::new(body.clone());
            *request.method_mut() = parts.method.clone();
            *request.uri_mut() = parts.uri.clone();
            *request.version_mut() = parts.version;
            *request.headers_mut() = parts.headers.clone();
            let generation = credentials.map(|c| {
                request.headers_mut().extend(c.headers);
                c.generation
            });
            let response = self.send_once(request).await?;
            let status = response.status().as_u16();
            if !matches!(status, 401 | 403) || retries >= MAX_AUTH_RETRIES {
                return Ok(response);
            }
            let challenge = challenge_of(
                status,
                target.clone(),
                response.headers(),
                generation,
                retries,
            );
            match authorizer.challenged(&challenge).await? {
                AuthDecision::Retry => retries += 1,
                _ => return Ok(response),
            }
        }
    }

    /// Sends a request once, as it is. The trace (and the description of
    /// the request an error carries) is only made when it is used: an
    /// answered request formats nothing.
    async fn send_once(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, HttpError> {
        let observing = self.options.observer.is_some();
        // Cheap: a `Method` is an enum, a `Uri` shares its bytes.
        let (method, uri) = (request.method().clone(), request.uri().clone());
        let what = || format!("{method} {}", redact_url(&uri));
        if observing {
            self.options.observe(HttpTrace::Request {
                method: method.to_string(),
                url: redact_url(&uri),
                headers: self.shown(request.headers()),
            });
        }
        let timeout = self.options.request_timeout;
        let result = match tokio::time::timeout(timeout, self.pool.request(request)).await {
            Err(_) => Err(HttpError::Timeout {
                what: format!(
                    "the first byte of the answer to {} (the request timeout)",
                    what()
                ),
                after: timeout,
            }),
            // A proxy's refusal or failure, named as the proxy's.
            Ok(Err(e)) => Err(match tunnel_error(&e) {
                Some(tunnel) => proxy_error(tunnel, &what()),
                // Named as the connect timeout, not as a generic client error.
                None if matches!(e, PoolError::Connect(_)) && timed_out(&e) => HttpError::Timeout {
                    what: format!(
                        "a connection for {} (the connect timeout; is the host reachable?)",
                        what()
                    ),
                    after: self.options.connect_timeout,
                },
                None => HttpError::Http {
                    url: what(),
                    message: describe_client_error(&e),
                },
            }),
            Ok(Ok(response)) => Ok(response),
        };
        if observing {
            match &result {
                Ok(response) => self.options.observe(HttpTrace::Response {
                    method: method.to_string(),
                    url: redact_url(&uri),
                    status: response.status().as_u16(),
                    headers: self.shown(response.headers()),
                }),
                Err(e) => self.options.observe(HttpTrace::Failed {
                    method: method.to_string(),
                    url: redact_url(&uri),
                    error: e.to_string(),
                }),
            }
        }
        result
    }

    fn shown(&self, headers: &HeaderMap) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (name, value) in headers {
            let n = name.as_str();
            let configured = self.headers.contains_key(name);
            if !configured && !SHOWN.contains(&n) && !n.starts_with("mcp-param-") {
                continue;
            }
            let value = if configured || n == "authorization" || value.is_sensitive() {
                "<redacted>".to_owned()
            } else if n == "location" {
                // An authorization redirect carries the code and state in its query.
                redact_url(&*String::from_utf8_lossy(value.as_bytes()))
            } else {
                String::from_utf8_lossy(value.as_bytes()).into_owned()
            };
            out.push((canonical(n), value));
        }
        out
    }
}

/// `mcp-session-id` → `Mcp-Session-Id`.
fn canonical(name: &str) -> String {
    name.split('-')
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
        .replace("Mcp-Protocol", "MCP-Protocol")
        .replace("Www-", "WWW-")
}

/// The proxy's failure among an error's sources, when there is one.
fn tunnel_error<'e>(e: &'e (dyn std::error::Error + 'static)) -> Option<&'e TunnelError> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = next {
        if let Some(tunnel) = err.downcast_ref::<TunnelError>() {
            return Some(tunnel);
        }
        next = err.source();
    }
    None
}

/// The typed error for a proxy's failure.
fn proxy_error(tunnel: &TunnelError, what: &str) -> HttpError {
    match &tunnel.failure {
        Failure::Refused(status) => HttpError::ProxyRefused {
            proxy: tunnel.proxy.clone(),
            target: tunnel.target.clone(),
            status: *status,
            credentials_sent: tunnel.credentials_sent,
        },
        Failure::Timeout(after) => HttpError::Timeout {
            what: format!(
                "a tunnel through the proxy {} for {what} (the connect timeout covers the \
                 proxy's connect and CONNECT; is the proxy reachable?)",
                tunnel.proxy
            ),
            after: *after,
        },
        Failure::Unusable(problem) => HttpError::InvalidConfig(format!(
            "{problem}; fix or unset it, put the host in NO_PROXY, or set this server's proxy"
        )),
        _ => HttpError::Http {
            url: what.to_owned(),
            message: tunnel.to_string(),
        },
    }
}

fn describe_client_error(e: &PoolError) -> String {
    use std::error::Error as _;
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    if message.contains("certificate") {
        message.push_str(
            " (the server's certificate is not trusted: add its CA with an extra CA file)",
        );
    }
    message
}

/// Reads a whole body, bounded in size and time; `what` (the method and
/// the redacted URL) names the request in errors.
pub async fn read_body(
    body: Incoming,
    limit: usize,
    timeout: Duration,
    what: &str,
) -> Result<Bytes, HttpError> {
    let read = async {
        let mut body = body;
        let mut out = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| HttpError::Http {
                url: what.to_owned(),
                message: format!("reading the body: {e}"),
            })?;
            if let Ok(data) = frame.into_data() {
                if out.len().saturating_add(data.len()) > limit {
                    return Err(HttpError::Http {
                        url: what.to_owned(),
                        message: format!("the body is larger than the {limit}-byte limit"),
                    });
                }
                out.extend_from_slice(&data);
            }
        }
        Ok(Bytes::from(out))
    };
    tokio::time::timeout(timeout, read)
        .await
        .map_err(|_| HttpError::Timeout {
            what: format!("the body of {what} (the request timeout)"),
            after: timeout,
        })?
}

/// The media type of an answer, lowercased, without parameters: borrowed
/// from the header unless it has capitals (every answer asks this).
pub fn content_type(response: &Response<Incoming>) -> Cow<'_, str> {
    let media = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map_or("", str::trim);
    if media.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(media.to_ascii_lowercase())
    } else {
        Cow::Borrowed(media)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct NeverAsked;
    impl crate::auth::Authorizer for NeverAsked {
        fn credentials<'a>(
            &'a self,
            _: &'a crate::auth::RequestTarget,
        ) -> crate::auth::AuthFuture<'a, Result<Option<crate::auth::Credentials>, HttpError>>
        {
            Box::pin(async { Ok(None) })
        }
        fn challenged<'a>(
            &'a self,
            _: &'a crate::auth::AuthChallenge,
        ) -> crate::auth::AuthFuture<'a, Result<crate::auth::AuthDecision, HttpError>> {
            Box::pin(async { Ok(crate::auth::AuthDecision::GiveUp) })
        }
    }

    #[test]
    fn a_static_authorization_header_wins_over_the_authorizer() {
        let with = |options: ClientOptions| {
            Client::new(
                options
                    .proxy(crate::Proxy::none())
                    .authorizer(Arc::new(NeverAsked)),
            )
            .unwrap()
        };
        let oauth = with(ClientOptions::new().header("X-Api-Key", "k"));
        assert!(oauth.options().authorizer.is_some());
        let token = with(ClientOptions::new().header("authorization", "Bearer t"));
        assert!(token.options().authorizer.is_none());
    }

    #[test]
    fn canonical_names() {
        assert_eq!(canonical("mcp-session-id"), "Mcp-Session-Id");
        assert_eq!(canonical("mcp-protocol-version"), "MCP-Protocol-Version");
        assert_eq!(canonical("last-event-id"), "Last-Event-Id");
    }

    #[test]
    fn configured_and_authorization_values_are_redacted() {
        let client = Client::new(ClientOptions::new().header("X-Api-Key", "k3y")).unwrap();
        let mut h = HeaderMap::new();
        h.insert("x-api-key", HeaderValue::from_static("k3y"));
        h.insert("authorization", HeaderValue::from_static("Bearer t0ken"));
        h.insert("mcp-session-id", HeaderValue::from_static("abc"));
        h.insert("cookie", HeaderValue::from_static("c"));
        h.insert(
            "location",
            HeaderValue::from_static("http://127.0.0.1:9/callback?code=c0de&state=s"),
        );
        let shown = client.shown(&h);
        let text = format!("{shown:?}");
        assert!(!text.contains("k3y") && !text.contains("t0ken") && !text.contains("cookie"));
        assert!(!text.contains("c0de"), "{text}");
        assert!(text.contains("abc") && text.contains("/callback"));
    }
}
