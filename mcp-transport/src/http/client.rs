//! The transports' side of [`mcp_stack_http::Client`]: the client built from an
//! [`HttpOptions`] (which it keeps, for the transports' own settings), its
//! errors as [`TransportError`]s, and what an MCP answer's status or body
//! means.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap};
use hyper::{Method, Request, Response, Uri};

pub(crate) use mcp_stack_http::content_type;

use super::HttpOptions;
use crate::TransportError;

/// The shared [`mcp_stack_http::Client`] of a transport, with the transport's
/// settings beside it.
#[derive(Debug, Clone)]
pub(crate) struct HttpClient {
    inner: mcp_stack_http::Client,
    options: Arc<HttpOptions>,
}

impl HttpClient {
    pub(crate) fn new(options: HttpOptions) -> Result<Self, TransportError> {
        Ok(HttpClient {
            inner: mcp_stack_http::Client::new(&options)?,
            options: Arc::new(options),
        })
    }

    pub(crate) fn options(&self) -> &HttpOptions {
        &self.options
    }

    /// A request with the configured headers; `extra` headers are added after them.
    pub(crate) fn build(
        &self,
        method: Method,
        uri: &Uri,
        extra: HeaderMap,
        body: Option<Bytes>,
    ) -> Request<Full<Bytes>> {
        self.inner.build(method, uri, extra, body)
    }

    /// [`mcp_stack_http::Client::send`]: the authorizer, the request timeout, the trace.
    pub(crate) async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, TransportError> {
        Ok(self.inner.send(request).await?)
    }
}

/// Reads a whole body, bounded in size and time.
pub(crate) async fn read_body(
    body: Incoming,
    limit: usize,
    timeout: Duration,
    what: &str,
) -> Result<Bytes, TransportError> {
    Ok(mcp_stack_http::read_body(body, limit, timeout, what).await?)
}

/// The error for an answer with an error status: the status and the start of the body.
pub(crate) async fn status_error(response: Response<Incoming>, what: &str) -> TransportError {
    match status_answer(response, what).await {
        Ok((error, _)) | Err(error) => error,
    }
}

/// Reads an error status: the error, and the JSON-RPC error response the
/// body holds when it holds one (a 2026-07-28 server explains its 4xx that way).
pub(crate) async fn status_answer(
    response: Response<Incoming>,
    what: &str,
) -> Result<(TransportError, mcp_stack_jsonrpc::ErrorResponse), TransportError> {
    let status = response.status().as_u16();
    let location = if response.headers().contains_key(header::LOCATION) {
        " (a redirect; redirects are not followed)"
    } else {
        ""
    };
    let body = read_body(
        response.into_body(),
        64 * 1024,
        Duration::from_secs(2),
        what,
    )
    .await
    .unwrap_or_default();
    let error = TransportError::HttpStatus {
        status,
        url: what.to_owned(),
        body: format!("{}{location}", mcp_stack_jsonrpc::excerpt(&body))
            .trim()
            .to_owned(),
    };
    match mcp_stack_jsonrpc::Message::from_slice(&body) {
        Ok(mcp_stack_jsonrpc::Message::Error(answer)) => Ok((error, answer)),
        _ => Err(error),
    }
}

/// The body of an answer that must be an SSE stream: a success status and
/// `Content-Type: text/event-stream`, else the error saying which it lacked.
pub(crate) async fn event_stream(
    response: Response<Incoming>,
    what: &str,
) -> Result<Incoming, TransportError> {
    if !response.status().is_success() {
        return Err(status_error(response, what).await);
    }
    let ct = content_type(&response);
    if ct != "text/event-stream" {
        return Err(TransportError::Http {
            url: what.to_owned(),
            message: format!(
                "the stream was answered with Content-Type {ct:?}, not text/event-stream"
            ),
        });
    }
    Ok(response.into_body())
}
