//! A small client for the HTTP exchanges around MCP rather than in it:
//! OAuth metadata, registration and token requests. The same pooled
//! [`Client`], TLS roots, timeouts and tracing as the transports; bodies capped;
//! redirects never followed (a 3xx comes back with its `Location`).

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request};

use crate::client::{Client, read_body};
use crate::{ClientOptions, HttpError, parse_url, redact_url};

/// The largest body a [`WebClient`] reads: metadata documents and token
/// answers are a few KiB.
pub const WEB_BODY_LIMIT: usize = 1024 * 1024;

/// An HTTP client for the exchanges around MCP: OAuth metadata,
/// registration and token requests. Bodies are capped at
/// [`WEB_BODY_LIMIT`]; redirects are never followed (a 3xx comes back with
/// its `Location`). It sends none of the configured headers and no authorization:
/// those are for the MCP server, and these requests go to other origins.
#[derive(Debug, Clone)]
pub struct WebClient {
    client: Client,
}

/// An answer: status, headers, and the whole body (at most
/// [`WEB_BODY_LIMIT`] bytes).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WebResponse {
    /// The status code.
    pub status: u16,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
}

impl WebResponse {
    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// A header's value as text, when it has one that is.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

impl WebClient {
    /// A client with these options' TLS roots, timeouts, proxy and
    /// observer (their headers and authorizer are left out): a
    /// [`ClientOptions`], or a transport's options.
    pub fn new(options: impl Into<ClientOptions>) -> Result<Self, HttpError> {
        let mut options = options.into();
        options.headers.clear();
        options.authorizer = None;
        Ok(WebClient {
            client: Client::new(options)?,
        })
    }

    /// `GET url` with these extra headers.
    pub async fn get(&self, url: &str, headers: HeaderMap) -> Result<WebResponse, HttpError> {
        self.exchange(Method::GET, url, headers, None).await
    }

    /// `POST url` with this body and content type (`application/json`,
    /// `application/x-www-form-urlencoded`).
    pub async fn post(
        &self,
        url: &str,
        headers: HeaderMap,
        content_type: &'static str,
        body: impl Into<Bytes>,
    ) -> Result<WebResponse, HttpError> {
        self.exchange(
            Method::POST,
            url,
            headers,
            Some((content_type, body.into())),
        )
        .await
    }

    async fn exchange(
        &self,
        method: Method,
        url: &str,
        headers: HeaderMap,
        body: Option<(&'static str, Bytes)>,
    ) -> Result<WebResponse, HttpError> {
        let uri = parse_url(url)?;
        let what = format!("{method} {}", redact_url(&uri));
        let mut request = Request::new(Full::new(Bytes::new()));
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        let h = request.headers_mut();
        h.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        if let Some((content_type, bytes)) = body {
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            *request.body_mut() = Full::new(bytes);
        }
        for (name, mut value) in headers {
            if let Some(name) = name {
                value.set_sensitive(true);
                request.headers_mut().insert(name, value);
            }
        }
        let response = self.client.send(request).await?;
        let status = response.status().as_u16();
        let (parts, body) = response.into_parts();
        let timeout = self.client.options().request_timeout;
        let body = read_body(body, WEB_BODY_LIMIT, timeout, &what).await?;
        Ok(WebResponse {
            status,
            headers: parts.headers,
            body,
        })
    }
}
