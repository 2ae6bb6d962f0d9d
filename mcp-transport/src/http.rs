//! MCP over HTTP: streamable HTTP, the legacy HTTP+SSE transport, and
//! automatic fallback between them (cargo feature `http`, on by default).
//!
//! * [`StreamableHttpTransport`]: the transport of protocol revisions
//!   2025-03-26 and later. Every message is a POST; answers come as JSON or
//!   as an SSE stream; sessions (`Mcp-Session-Id`), the GET stream,
//!   resumption with `Last-Event-ID`, an expired session reported
//!   ([`Received::SessionExpired`]) for the layer above to initialize
//!   again, DELETE on close; for protocol 2026-07-28 requests, no session
//!   and the request metadata headers (`Mcp-Method`, `Mcp-Name`,
//!   `Mcp-Param-*`).
//! * [`SseTransport`]: the HTTP+SSE transport of 2024-11-05. A GET opens the
//!   event stream, whose `endpoint` event says where to POST. A dropped
//!   stream is reconnected (backoff, `Last-Event-ID`, at most
//!   [`HttpOptions::max_reconnects`] attempts in a row), a new endpoint
//!   reported as a new session for the layer above to initialize; the
//!   requests in flight on the dropped stream fail at once.
//! * [`auto::connect`]: tries streamable HTTP and falls back to SSE on 400,
//!   404 or 405, remembering the choice in a [`auto::TransportCache`].
//!
//! All three share [`HttpOptions`]: extra headers (values never logged or
//! shown, CR/LF rejected), connect and request timeouts, the SSE event bound,
//! TLS roots (webpki roots, the operating system's trust store, and an
//! optional extra CA file; verification is always on), the HTTP [`Proxy`]
//! (the environment's `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and
//! `NO_PROXY` as curl reads them, an explicit proxy, or none; every server
//! is reached through a `CONNECT` tunnel, TLS inside it; a refusal is
//! [`TransportError::ProxyRefused`]),
//! and an observer that sees each HTTP exchange (for `--trace`).
//!
//! Redirects are never followed: a 3xx answer is an error naming the status,
//! so headers are never sent to another origin.
//!
//! # Example
//!
//! ```no_run
//! use mcp_stack_transport::http::{HttpOptions, StreamableHttpTransport};
//!
//! # async fn demo() -> Result<(), mcp_stack_transport::TransportError> {
//! let options = HttpOptions::new()
//!     .header("Authorization", "Bearer secret-token")
//!     .request_timeout(std::time::Duration::from_secs(30));
//! let transport = StreamableHttpTransport::connect("https://example.com/mcp", options).await?;
//! # Ok(()) }
//! ```

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper::Uri;
use mcp_stack_jsonrpc::{Malformed, Payload, excerpt, parse_frame_with};

use crate::{BatchGate, InvalidFrame, Received, TransportError, batch_to_received};

/// The HTTP client's authorization hook ([`mcp_stack_http::auth`]): an
/// [`Authorizer`](auth::Authorizer) gives each request its credentials and
/// hears each 401 and 403.
pub use mcp_stack_http::auth;
pub mod auto;
mod client;
mod legacy_sse;
mod mirror;
mod streamable;

pub use legacy_sse::SseTransport;
pub use mcp_stack_http::{
    ClientOptions, DEFAULT_CONNECT_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, HttpError, HttpObserver,
    HttpTrace, Proxy, WEB_BODY_LIMIT, WebClient, WebResponse, redact_url,
};
pub use streamable::StreamableHttpTransport;
/// Default wait before reconnecting a dropped SSE stream when the server gave no `retry`.
pub const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// Default number of reconnection attempts for one dropped SSE stream.
pub const DEFAULT_MAX_RECONNECTS: u32 = 5;
/// Default bound on silence on a long-lived SSE stream (streamable HTTP's
/// GET stream, the legacy transport's stream): no byte, not even a comment,
/// for this long and the stream is treated as dropped.
pub const DEFAULT_IDLE_STREAM_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// Default bound on the `DELETE` that ends a session at close.
pub const DEFAULT_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
/// Default time `send` waits for the head of a request's answer before
/// returning (the answer then arrives through `recv` all the same).
pub const DEFAULT_ACCEPT_WAIT: Duration = Duration::from_secs(1);

/// Settings shared by the HTTP transports. `HttpOptions::new()` gives the
/// documented defaults.
///
/// ```
/// use mcp_stack_transport::http::HttpOptions;
/// let options = HttpOptions::new().header("Authorization", "Bearer s3cret");
/// assert!(!format!("{options:?}").contains("s3cret"));
/// ```
#[derive(Clone)]
pub struct HttpOptions {
    headers: Vec<(String, String)>,
    connect_timeout: Duration,
    request_timeout: Duration,
    accept_wait: Duration,
    max_event_size: usize,
    max_batch_elements: usize,
    extra_ca_file: Option<PathBuf>,
    extra_ca_pem: Option<Vec<u8>>,
    os_roots: bool,
    http2: bool,
    default_retry: Duration,
    max_reconnects: u32,
    idle_stream_timeout: Duration,
    close_timeout: Duration,
    get_stream: bool,
    observer: Option<HttpObserver>,
    server_name: Option<String>,
    authorizer: Option<Arc<dyn auth::Authorizer>>,
    proxy: Proxy,
}

/// The client's part of a transport's settings: what a [`WebClient`] (or
/// `mcp-stack-auth`'s OAuth client) built from them uses.
impl From<&HttpOptions> for ClientOptions {
    fn from(options: &HttpOptions) -> Self {
        let mut client = ClientOptions::new()
            .headers(options.headers.iter().cloned())
            .connect_timeout(options.connect_timeout)
            .request_timeout(options.request_timeout)
            .os_roots(options.os_roots)
            .http2(options.http2)
            .observer_arc(options.observer.clone())
            .proxy(options.proxy.clone());
        if let Some(path) = &options.extra_ca_file {
            client = client.extra_ca_file(path.clone());
        }
        if let Some(pem) = &options.extra_ca_pem {
            client = client.extra_ca_pem(pem.clone());
        }
        if let Some(name) = &options.server_name {
            client = client.server_name(name.clone());
        }
        if let Some(authorizer) = &options.authorizer {
            client = client.authorizer(Arc::clone(authorizer));
        }
        client
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, _)| (k.as_str(), "<redacted>"))
            .collect();
        f.debug_struct("HttpOptions")
            .field("headers", &headers)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("accept_wait", &self.accept_wait)
            .field("max_event_size", &self.max_event_size)
            .field("max_batch_elements", &self.max_batch_elements)
            .field("extra_ca_file", &self.extra_ca_file)
            .field("extra_ca_pem", &self.extra_ca_pem.as_ref().map(Vec::len))
            .field("os_roots", &self.os_roots)
            .field("http2", &self.http2)
            .field("default_retry", &self.default_retry)
            .field("max_reconnects", &self.max_reconnects)
            .field("idle_stream_timeout", &self.idle_stream_timeout)
            .field("close_timeout", &self.close_timeout)
            .field("get_stream", &self.get_stream)
            .field("observer", &self.observer.as_ref().map(|_| "<fn>"))
            .field("server_name", &self.server_name)
            .field("authorizer", &self.authorizer)
            .field("proxy", &self.proxy)
            .finish()
    }
}

impl HttpOptions {
    /// The defaults: no extra headers, 10 s connect timeout, 60 s request
    /// timeout, 16 MiB events, webpki roots, 1 s default retry, 5 reconnects,
    /// 5 min idle streams, a GET stream when the server offers one.
    pub fn new() -> Self {
        HttpOptions {
            headers: Vec::new(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            accept_wait: DEFAULT_ACCEPT_WAIT,
            max_event_size: crate::sse::DEFAULT_MAX_EVENT_SIZE,
            max_batch_elements: crate::DEFAULT_MAX_BATCH_ELEMENTS,
            extra_ca_file: None,
            extra_ca_pem: None,
            os_roots: true,
            http2: true,
            default_retry: DEFAULT_RETRY,
            max_reconnects: DEFAULT_MAX_RECONNECTS,
            idle_stream_timeout: DEFAULT_IDLE_STREAM_TIMEOUT,
            close_timeout: DEFAULT_CLOSE_TIMEOUT,
            get_stream: true,
            observer: None,
            server_name: None,
            authorizer: None,
            proxy: Proxy::from_env(),
        }
    }

    /// Adds a header sent with every request (an `Authorization` token, say).
    /// Its value is never logged, traced or shown in errors; a value with CR,
    /// LF or NUL makes `connect` fail.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Whether the configured headers include `Authorization`: a static
    /// token, which wins over any [`authorizer`](Self::authorizer). Callers
    /// that would build an OAuth client ask this first.
    ///
    /// ```
    /// use mcp_stack_transport::http::HttpOptions;
    /// assert!(HttpOptions::new().header(" authorization ", "Bearer t").has_authorization_header());
    /// assert!(!HttpOptions::new().header("X-Api-Key", "k").has_authorization_header());
    /// ```
    pub fn has_authorization_header(&self) -> bool {
        mcp_stack_http::has_authorization(&self.headers)
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

    /// Bound on waiting for an answer's head, a JSON body, or a 202 (default 60 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long `send` of a request (other than `initialize`) waits for the
    /// head of the answer before returning (default 1 s). Errors that come
    /// later arrive through `recv` as an error response to that request, so
    /// the caller's own request timeout starts on time and nothing hangs.
    pub fn accept_wait(mut self, wait: Duration) -> Self {
        self.accept_wait = wait;
        self
    }

    /// Bound on one SSE event or JSON body, in bytes (default 16 MiB).
    pub fn max_event_size(mut self, bytes: usize) -> Self {
        self.max_event_size = bytes;
        self
    }

    /// The largest batch accepted in a JSON body or an SSE event, in
    /// elements (default 1,024; 0 refuses every batch), where batches are
    /// accepted at all: only once a message's context names protocol
    /// revision 2025-03-26. A batch is also refused when its elements,
    /// parsed, would take more than [`max_event_size`](Self::max_event_size)
    /// (each is charged [`mcp_stack_jsonrpc::BATCH_ELEMENT_COST`] plus its text).
    pub fn max_batch_elements(mut self, elements: usize) -> Self {
        self.max_batch_elements = elements;
        self
    }

    /// Trusts the CA certificates in this PEM file too (on top of the webpki roots).
    pub fn extra_ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.extra_ca_file = Some(path.into());
        self
    }

    /// Whether the operating system's trust store is trusted too, beside
    /// the bundled webpki roots (default true: corporate machines put their
    /// CAs there; `SSL_CERT_FILE` and `SSL_CERT_DIR` are honoured). Off, only
    /// the bundled roots and the extra CAs are.
    pub fn os_roots(mut self, trust: bool) -> Self {
        self.os_roots = trust;
        self
    }

    /// Whether HTTP/2 is offered to TLS servers (ALPN `h2` beside
    /// `http/1.1`; default true): a server that takes it gets HTTP/2, any
    /// other HTTP/1.1 as before. Plain `http://` is always HTTP/1.1.
    pub fn http2(mut self, offer: bool) -> Self {
        self.http2 = offer;
        self
    }

    /// Trusts the CA certificates in this PEM text too.
    pub fn extra_ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.extra_ca_pem = Some(pem.into());
        self
    }

    /// Wait before reconnecting a dropped SSE stream (streamable HTTP's GET
    /// and request streams, the legacy transport's stream) when the server
    /// sent no `retry` (default 1 s); the long-lived streams (the GET
    /// stream, the legacy stream) back off from it, doubling with jitter up
    /// to 30 s, and only a stream that lived
    /// [`HEALTHY_STREAM_LIFE`](crate::backoff::HEALTHY_STREAM_LIFE) starts
    /// that afresh. A server's `retry` wins, but on the long-lived streams
    /// never below [`MIN_STREAM_RETRY`](crate::backoff::MIN_STREAM_RETRY).
    pub fn default_retry(mut self, wait: Duration) -> Self {
        self.default_retry = wait;
        self
    }

    /// Reconnection attempts in a row for one dropped SSE stream (default
    /// 5); a successful reconnection counts from zero again. 0 turns
    /// reconnecting off: the legacy transport then closes when its stream drops.
    pub fn max_reconnects(mut self, attempts: u32) -> Self {
        self.max_reconnects = attempts;
        self
    }

    /// Bound on silence on a long-lived SSE stream (default 5 min): when no
    /// byte arrives for this long (not even a keep-alive comment) on
    /// streamable HTTP's GET stream or the legacy transport's stream, the
    /// stream is treated as dropped and reconnected, and the trace and the
    /// errors name this timeout. A silent proxy or a half-open connection
    /// is found this way. A POST's SSE answer has no idle bound of its own:
    /// the session's request timeout bounds it (and cancels the request).
    pub fn idle_stream_timeout(mut self, timeout: Duration) -> Self {
        self.idle_stream_timeout = timeout;
        self
    }

    /// Bound on the session `DELETE` at close (default 2 s).
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// Whether streamable HTTP opens the GET stream for server-initiated
    /// messages after initialization (default true).
    pub fn get_stream(mut self, open: bool) -> Self {
        self.get_stream = open;
        self
    }

    /// Sees every HTTP exchange, redacted (for tracing).
    pub fn observer(mut self, observer: impl Fn(&HttpTrace) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// Authorizes every request (POST, GET stream, DELETE, the legacy SSE
    /// GET and its POSTs) and answers the server's 401 and 403 challenges:
    /// `mcp-stack-auth`'s OAuth client, or an application's own
    /// [`Authorizer`](auth::Authorizer).
    ///
    /// A configured `Authorization` header (a static token, see
    /// [`has_authorization_header`](Self::has_authorization_header)) wins:
    /// the authorizer is then never asked.
    pub fn authorizer(mut self, authorizer: Arc<dyn auth::Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// Which HTTP proxy requests go through (default
    /// [`Proxy::from_env`]: `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and
    /// `NO_PROXY`, read when the transport's client is built). The OAuth
    /// exchanges of a [`WebClient`] built from these options go through the
    /// same proxy. See [`Proxy`] for the rules.
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        self.proxy = proxy;
        self
    }

    /// The name used in logs.
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(name.into());
        self
    }

    fn name(&self) -> &str {
        self.server_name.as_deref().unwrap_or("http")
    }

    fn observe(&self, trace: HttpTrace) {
        if let Some(observer) = &self.observer {
            observer(&trace);
        }
    }
}

/// Parses a URL for the HTTP transports: `http` or `https`, with a host.
pub(crate) fn parse_url(url: &str) -> Result<Uri, TransportError> {
    Ok(mcp_stack_http::parse_url(url)?)
}

use mcp_stack_http::same_origin;

/// A message as the body of a POST.
fn encode(message: &mcp_stack_jsonrpc::Message) -> Result<bytes::Bytes, TransportError> {
    message
        .to_vec()
        .map(bytes::Bytes::from)
        .map_err(|e| TransportError::Io(std::io::Error::other(e)))
}

/// Parses one JSON body or SSE `data`, a batch only as far as the gate
/// allows now (read only when the payload is a batch), its parsed elements
/// within `budget` bytes. The messages' raw members are slices of `bytes`.
fn parse_gated(
    bytes: &bytes::Bytes,
    gate: &BatchGate,
    budget: usize,
) -> Result<Payload, mcp_stack_jsonrpc::MessageError> {
    parse_frame_with(bytes, || gate.batches(budget))
}

/// Turns one JSON body or SSE `data` into what `recv` hands out (taking the
/// data over: the messages' raw members are slices of it).
fn payload_to_received(
    bytes: impl Into<bytes::Bytes>,
    gate: &BatchGate,
    budget: usize,
    out: &mut Vec<Received>,
) {
    let bytes = bytes.into();
    parsed_to_received(parse_gated(&bytes, gate, budget), &bytes, out);
}

/// [`payload_to_received`] for a payload already parsed from `bytes`.
fn parsed_to_received(
    parsed: Result<Payload, mcp_stack_jsonrpc::MessageError>,
    bytes: &[u8],
    out: &mut Vec<Received>,
) {
    match parsed {
        Ok(Payload::Single(m)) => out.push(Received::Message(m)),
        Ok(Payload::Batch(items)) => batch_to_received(items, out),
        Ok(_) => {}
        Err(reason) => out.push(Received::Invalid(InvalidFrame::Malformed(Malformed {
            reason,
            excerpt: excerpt(bytes),
            len: bytes.len(),
        }))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    mod bodies {
        use super::*;
        use crate::{Message, SendContext};
        use mcp_stack_jsonrpc::{
            ErrorObject, ErrorResponse, Notification, RawJson, Request, Response,
        };
        use proptest::prelude::*;

        fn raw() -> impl Strategy<Value = String> {
            prop_oneof![
                Just("{}".to_owned()),
                Just("[1, {\"a\": \"\\n\"}]".to_owned()),
                "[a-z é\"]{0,16}".prop_map(|t| serde_json::json!({ "text": t }).to_string()),
                Just("{\n  \"pretty\": true\n}".to_owned()),
            ]
        }

        fn message() -> impl Strategy<Value = String> {
            let raw_json = || raw().prop_map(|t| RawJson::from_string(t).unwrap());
            prop_oneof![
                (any::<i64>(), prop::option::of(raw_json()))
                    .prop_map(|(id, p)| Message::from(Request::new(id, "m", p))),
                prop::option::of(raw_json()).prop_map(|p| Message::from(Notification::new("n", p))),
                (any::<i64>(), raw_json()).prop_map(|(id, r)| Message::from(Response::new(id, r))),
                (any::<i64>(), prop::option::of(raw_json())).prop_map(|(id, d)| {
                    let mut e = ErrorObject::new(-1, "e");
                    e.data = d;
                    Message::from(ErrorResponse::new(Some(id.into()), e))
                }),
            ]
            .prop_map(|m| String::from_utf8(m.to_vec().unwrap()).unwrap())
        }

        fn raw_members(r: &Received) -> Vec<&RawJson> {
            match r {
                Received::Message(Message::Request(r)) => r.params.iter().collect(),
                Received::Message(Message::Notification(n)) => n.params.iter().collect(),
                Received::Message(Message::Response(r)) => vec![&r.result],
                Received::Message(Message::Error(e)) => e.error.data.iter().collect(),
                _ => Vec::new(),
            }
        }

        proptest! {
            /// An HTTP body or SSE event parses to what the copying parse
            /// gives, its messages' raw members slices of the body.
            #[test]
            fn bodies_parse_as_copies_do(
                messages in prop::collection::vec(message(), 1..4),
                batch in any::<bool>(),
                junk in any::<bool>(),
            ) {
                let mut text = if batch {
                    format!("[{}]", messages.join(","))
                } else {
                    messages[0].clone()
                };
                if junk {
                    text.push('x');
                }
                let gate = BatchGate::new(16);
                gate.follow(&SendContext::new().revision(mcp_stack_protocol::ProtocolVersion::V2025_03_26));
                let body = bytes::Bytes::from(text.clone().into_bytes());
                let mut sliced = Vec::new();
                payload_to_received(body.clone(), &gate, 1 << 20, &mut sliced);
                let mut copied = Vec::new();
                parsed_to_received(
                    mcp_stack_jsonrpc::parse_payload_with(text.as_bytes(), || gate.batches(1 << 20)),
                    text.as_bytes(),
                    &mut copied,
                );
                prop_assert_eq!(format!("{sliced:?}"), format!("{copied:?}"));
                let range = body.as_ptr_range();
                for r in sliced.iter().flat_map(raw_members) {
                    let p = r.as_bytes().as_ptr_range();
                    prop_assert!(range.start <= p.start && p.end <= range.end);
                }
            }
        }
    }

    #[test]
    fn the_client_options_are_the_transport_options_client_part() {
        let options = HttpOptions::new()
            .header("X-Key", "k3y")
            .connect_timeout(Duration::from_secs(3))
            .server_name("srv")
            .proxy(Proxy::none());
        let client = ClientOptions::from(&options);
        let shown = format!("{client:?}");
        assert!(shown.contains("X-Key") && !shown.contains("k3y"), "{shown}");
        assert!(shown.contains("connect_timeout: 3s"), "{shown}");
        assert!(shown.contains("\"srv\""), "{shown}");
        assert!(shown.contains("Proxy::none()"), "{shown}");
        assert!(client.has_authorization_header() == options.has_authorization_header());
    }
}
