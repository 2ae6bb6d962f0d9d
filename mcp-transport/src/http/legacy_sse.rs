//! The HTTP+SSE transport of protocol revision 2024-11-05.
//!
//! [`SseTransport::connect`] GETs the SSE URL and waits (bounded by the
//! request timeout) for the `endpoint` event, whose data is resolved against
//! the SSE URL; an endpoint on another origin is refused, so messages and
//! headers never go elsewhere. Each message is then POSTed to the endpoint,
//! and the server's messages arrive as `message` events on the stream. When
//! the stream ends, `recv` reports the connection closed (the old transport
//! has no way to resume).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Uri};
use mcp_jsonrpc::{Message, Oversized};
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::client::{HttpClient, event_stream, status_error};
use super::{HttpOptions, parse_url, payload_to_received, redact_url, same_origin};
use crate::sse::{SseItem, SseParser};
use crate::{
    BoxFuture, InvalidFrame, Received, SendContext, Transport, TransportError, TransportKind,
};

/// A connection to a server speaking the 2024-11-05 HTTP+SSE transport.
pub struct SseTransport {
    client: HttpClient,
    sse_url: Uri,
    endpoint: Uri,
    rx: Mutex<mpsc::Receiver<Received>>,
    reason: Arc<StdMutex<String>>,
    reader: JoinHandle<()>,
    closing: CancellationToken,
    closed: AtomicBool,
}

impl std::fmt::Debug for SseTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseTransport")
            .field("sse_url", &redact_url(&self.sse_url))
            .field("endpoint", &redact_url(&self.endpoint))
            .finish_non_exhaustive()
    }
}

/// Resolves the `endpoint` event's data against the SSE URL.
fn resolve_endpoint(base: &Uri, data: &str) -> Result<Uri, String> {
    let data = data.trim();
    if data.is_empty() {
        return Err("the endpoint event is empty".into());
    }
    let resolved: Uri = if data.starts_with("http://") || data.starts_with("https://") {
        data.parse()
            .map_err(|_| "the endpoint is not a valid URL".to_owned())?
    } else {
        let path = if data.starts_with('/') {
            data.to_owned()
        } else {
            let dir = base.path().rsplit_once('/').map_or("", |(dir, _)| dir);
            format!("{dir}/{data}")
        };
        let mut parts = hyper::http::uri::Parts::default();
        parts.scheme = base.scheme().cloned();
        parts.authority = base.authority().cloned();
        parts.path_and_query = Some(
            path.parse()
                .map_err(|_| "the endpoint is not a valid path".to_owned())?,
        );
        Uri::from_parts(parts).map_err(|_| "the endpoint is not a valid URL".to_owned())?
    };
    if !same_origin(base, &resolved) {
        return Err(format!(
            "the endpoint {} is on another origin than the SSE URL; refusing to send messages there",
            redact_url(&resolved)
        ));
    }
    Ok(resolved)
}

async fn read_stream(
    mut body: Incoming,
    base: Uri,
    max_event_size: usize,
    tx: mpsc::Sender<Received>,
    mut endpoint: Option<oneshot::Sender<Result<Uri, String>>>,
    reason: Arc<StdMutex<String>>,
) {
    let mut parser = SseParser::with_max_event_size(max_event_size);
    let why = loop {
        let data = match body.frame().await {
            None => break "the server closed the SSE stream".to_owned(),
            Some(Err(e)) => break format!("the SSE stream broke: {e}"),
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
        };
        parser.push(&data);
        while let Some(item) = parser.next_item() {
            let event = match item {
                SseItem::Event(event) => event,
                SseItem::Oversized { limit } => {
                    let item = Received::Invalid(InvalidFrame::Oversized(Oversized::new(limit)));
                    if tx.send(item).await.is_err() {
                        return;
                    }
                    continue;
                }
            };
            match event.event.as_str() {
                "endpoint" => {
                    if let Some(tx) = endpoint.take() {
                        let text = String::from_utf8_lossy(&event.data);
                        let _ = tx.send(resolve_endpoint(&base, &text));
                    }
                }
                "message" => {
                    if event.data.trim_ascii().is_empty() {
                        continue;
                    }
                    let mut items = Vec::new();
                    payload_to_received(&event.data, &mut items);
                    for item in items {
                        if tx.send(item).await.is_err() {
                            return;
                        }
                    }
                }
                _ => {}
            }
        }
    };
    *reason.lock().unwrap_or_else(|p| p.into_inner()) = why;
}

impl SseTransport {
    /// Opens the SSE stream at `url` and waits for the `endpoint` event.
    pub async fn connect(url: &str, options: HttpOptions) -> Result<Self, TransportError> {
        let sse_url = parse_url(url)?;
        let client = HttpClient::new(options)?;
        let what = format!("GET {}", redact_url(&sse_url));
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        let request = client.build(Method::GET, &sse_url, headers, None)?;
        let response = client.send(request).await?;
        let body = event_stream(response, &what).await?;
        let (tx, rx) = mpsc::channel(256);
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let reason = Arc::new(StdMutex::new(String::new()));
        let reader = tokio::spawn(read_stream(
            body,
            sse_url.clone(),
            client.options().max_event_size,
            tx,
            Some(endpoint_tx),
            Arc::clone(&reason),
        ));
        let timeout = client.options().request_timeout;
        let endpoint = match tokio::time::timeout(timeout, endpoint_rx).await {
            Ok(Ok(Ok(endpoint))) => endpoint,
            Ok(Ok(Err(message))) => {
                reader.abort();
                return Err(TransportError::Http { url: what, message });
            }
            Ok(Err(_)) => {
                let why = reason.lock().unwrap_or_else(|p| p.into_inner()).clone();
                return Err(TransportError::Http {
                    url: what,
                    message: format!("{why} before sending the endpoint event"),
                });
            }
            Err(_) => {
                reader.abort();
                return Err(TransportError::Timeout {
                    what: format!("the endpoint event on {what}"),
                    after: timeout,
                });
            }
        };
        tracing::debug!(
            server = client.options().name(),
            endpoint = %redact_url(&endpoint),
            "SSE endpoint"
        );
        Ok(SseTransport {
            client,
            sse_url,
            endpoint,
            rx: Mutex::new(rx),
            reason,
            reader,
            closing: CancellationToken::new(),
            closed: AtomicBool::new(false),
        })
    }

    /// Where messages are POSTed (from the `endpoint` event).
    pub fn endpoint(&self) -> String {
        redact_url(&self.endpoint)
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Transport for SseTransport {
    fn send_with<'a>(
        &'a self,
        message: &'a Message,
        _context: &'a SendContext,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            if self.closed.load(Ordering::SeqCst) {
                return Err(TransportError::closed("closed by the client"));
            }
            let body = Bytes::from(
                message
                    .to_vec()
                    .map_err(|e| TransportError::Io(std::io::Error::other(e)))?,
            );
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
            let request = self
                .client
                .build(Method::POST, &self.endpoint, headers, Some(body))?;
            let response = self.client.send(request).await?;
            if !response.status().is_success() {
                let what = format!("POST {}", redact_url(&self.endpoint));
                return Err(status_error(response, &what).await);
            }
            Ok(())
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Received, TransportError>> {
        Box::pin(async move {
            if self.closed.load(Ordering::SeqCst) {
                return Err(TransportError::closed("closed by the client"));
            }
            let mut rx = self.rx.lock().await;
            tokio::select! {
                biased;
                item = rx.recv() => item.ok_or_else(|| {
                    let why = self.reason.lock().unwrap_or_else(|p| p.into_inner()).clone();
                    TransportError::closed(why)
                }),
                () = self.closing.cancelled() => Err(TransportError::closed("closed by the client")),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.closed.store(true, Ordering::SeqCst);
        self.closing.cancel();
        self.reader.abort();
        Box::pin(async {})
    }

    fn kind(&self) -> TransportKind {
        TransportKind::Sse
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_against_the_sse_url() {
        let base: Uri = "http://127.0.0.1:8080/app/sse?x=1".parse().unwrap();
        let r = |d: &str| resolve_endpoint(&base, d).map(|u| u.to_string());
        assert_eq!(
            r("/messages?sessionId=abc").unwrap(),
            "http://127.0.0.1:8080/messages?sessionId=abc"
        );
        assert_eq!(
            r("messages?sessionId=abc").unwrap(),
            "http://127.0.0.1:8080/app/messages?sessionId=abc"
        );
        assert_eq!(
            r("http://127.0.0.1:8080/m").unwrap(),
            "http://127.0.0.1:8080/m"
        );
        assert!(
            r("http://evil.example/m")
                .unwrap_err()
                .contains("another origin")
        );
        assert!(r("https://127.0.0.1:8080/m").is_err());
        assert!(r("").is_err());
    }
}
