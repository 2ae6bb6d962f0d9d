//! MCP test servers over HTTP, on 127.0.0.1 (cargo feature `http`, on by default).
//!
//! Each MCP session is one [`crate::serve`] instance behind the HTTP layer, so
//! the HTTP servers answer exactly like the stdio server (same tools, same
//! [`Misbehaviour`](crate::Misbehaviour)s), and add HTTP behaviours and
//! misbehaviours of their own ([`HttpMisbehaviour`]).
//!
//! * Streamable HTTP at `/mcp`: stateful (an `Mcp-Session-Id` per
//!   `initialize`) or stateless; answers as SSE streams (with event ids, so
//!   they can be resumed with `Last-Event-ID`) or as JSON; a GET stream for
//!   server-initiated messages; DELETE ends a session.
//! * Legacy HTTP+SSE (2024-11-05): GET `/sse` opens a stream whose first
//!   event is `endpoint` (`/messages?sessionId=…`); messages are POSTed there
//!   and answered on the stream. A legacy-only server answers POST `/sse`
//!   with 405 and anything at `/mcp` with 404, so fallback can be tested.
//!
//! A stateful server answers a POST without a session id that is not
//! `initialize` as the TypeScript SDK does: 400 with
//! `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`,
//! so a legacy-era server (the default, [`Era::Legacy`](crate::Era::Legacy)) refuses a
//! 2026-07-28 request the way clients falling back expect.
//!
//! # 2026-07-28 (modern) streamable HTTP
//!
//! With [`ServerOptions::era`](crate::ServerOptions::era) [`Era::Modern`](crate::Era::Modern)
//! (every POST) or [`Era::Dual`](crate::Era::Dual)
//! (a request whose `params._meta` names
//! `io.modelcontextprotocol/protocolVersion`, a `server/discover`, or a
//! notification without a session id that says it is modern), `/mcp` serves
//! POSTs statelessly: no `Mcp-Session-Id` is minted or needed (one sent is
//! ignored), and each request runs on an MCP instance of its own, which ends
//! with the answer. Multi-round-trip retries (the `ask_name` tool) are new
//! POSTs carrying the self-contained `requestState`, so this is all they need.
//! The answer comes as an SSE stream scoped to the request (notifications
//! such as progress, then the response; no event ids, no resumption) or as
//! JSON with [`HttpServerOptions::json_response`]. In the modern era GET and
//! DELETE answer 405; a dual-era server keeps them for its legacy sessions.
//!
//! Before a modern request reaches the MCP instance, its headers are checked
//! against its body as the spec's "Server Validation" says (header names in
//! any case):
//!
//! * `MCP-Protocol-Version` must be present and equal the `_meta` version,
//!   else 400 + `-32020` (`HeaderMismatch`); a version other than
//!   2026-07-28 gets 400 + `-32022` with `data: {"supported", "requested"}`
//!   (a dual-era server lists the legacy versions too);
//! * `Mcp-Method` must equal `method`; an unknown method then gets 404 +
//!   `-32601`;
//! * `Mcp-Name` must equal `params.name` (`tools/call`, `prompts/get`) or
//!   `params.uri` (`resources/read`), after decoding the Base64 sentinel
//!   form `=?base64?…?=`;
//! * for `tools/call`, `Mcp-Param-{Name}` for every argument of the tool
//!   annotated `x-mcp-header: Name` (reached through `properties` only):
//!   required when the argument has a non-null value, equal to it after
//!   decoding (integers numerically, booleans as `true`/`false`), absent
//!   otherwise.
//!
//! A failed check is 400 + `-32020` naming the header (`data: {"header"}`),
//! with the request's id. An `initialize` to a modern-only server gets 400 +
//! `-32022` naming the versions it speaks.
//!
//! Closing a request's SSE stream (or the connection) before the answer is
//! its cancellation: the instance and its work are dropped and
//! [`HttpStats::disconnect_cancels`] counts it. Notification POSTs are
//! answered 202 and counted in [`HttpStats::modern_notifications`] (a
//! conforming client sends no `notifications/cancelled` over HTTP). The
//! modern-only tools are `ask_name`, `route` (arguments `region` and `shard`
//! mirrored into `Mcp-Param-Region` and `Mcp-Param-Shard`) and `bad_header`
//! (an invalid annotation: a conforming HTTP client drops it from its
//! catalog). The `status-500`, `slow-head` and `wrong-content-type`
//! misbehaviours apply to modern requests too; with `drop-stream`, a
//! `tools/call` stream ends with no answer.
//!
//! # OAuth
//!
//! With [`HttpServerOptions::oauth`] set ([`HttpServerOptions::with_oauth`]):
//!
//! * Every request to the MCP endpoint (`/mcp`; `/sse` and `/messages` in
//!   the legacy mode) needs `Authorization: Bearer <token>` with a token the
//!   server issued for that endpoint (`resource`), unexpired and holding the
//!   required [scopes](OAuthOptions::scopes). Without one: 401 and
//!   `WWW-Authenticate: Bearer resource_metadata="…", scope="…"`; with an
//!   unknown, expired or other-resource token the same plus
//!   `error="invalid_token"`. A `tools/call` of a tool with a
//!   [scope of its own](OAuthOptions::tool_scope) the token lacks: 403 and
//!   `error="insufficient_scope", scope="<every scope the call needs>"`.
//! * Protected resource metadata (RFC 9728) at
//!   `/.well-known/oauth-protected-resource/mcp` and/or at the root:
//!   `resource` (the endpoint's URL), `authorization_servers` (the issuer),
//!   `scopes_supported`, `bearer_methods_supported`.
//! * The authorization server, issuer `http://127.0.0.1:PORT` (plus an
//!   optional [path](OAuthOptions::issuer_path)): RFC 8414 metadata at
//!   `/.well-known/oauth-authorization-server{path}` and/or OpenID
//!   discovery, or none (the 2025-03-26 default endpoints); `/register`
//!   (RFC 7591), `/authorize` (code flow, PKCE S256, `resource` required,
//!   no user interaction: an immediate 302 with `code`, `state` and `iss`),
//!   `/token` (`authorization_code`, `refresh_token`, `client_credentials`;
//!   clients authenticated as they registered: `client_secret_basic`,
//!   `client_secret_post` or `none`).
//!
//! Redirect URIs are HTTPS or loopback HTTP (a loopback one matches on any
//! port); codes are single-use; refresh tokens are rotated on request.
//! [`OAuthMisbehaviour`]s break one thing each (a wrong `issuer`, no PKCE
//! advertised, a missing or wrong `iss`, tokens expired from the start,
//! refused refreshes, a wrong `resource`).
//!
//! With [`OAuthOptions::external_authorization_server`] the listener is a
//! resource server only: the protected resource metadata names an
//! authorization server the testkit does not run, and the endpoint accepts
//! the RS256 JWT access tokens that server signs for it (checked against
//! its JWKS: signature, `iss`, `exp`, `nbf`, `aud`; see
//! [`ExternalAuthorizationServer`]).
//!
//! The testkit's own tokens are random opaque strings. The server's clock can be moved
//! forward ([`HttpServer::advance_clock`])
//! and every token revoked ([`HttpServer::revoke_tokens`]),
//! so expiry is tested without waiting. What the client did is counted in
//! [`OAuthStats`].
//!
//! ```
//! use mcp_stack_testkit::http::{HttpServer, HttpServerOptions};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let server = HttpServer::start(HttpServerOptions::default()).await.unwrap();
//! assert!(server.url().starts_with("http://127.0.0.1:"));
//! assert!(server.url().ends_with("/mcp"));
//! server.shutdown().await;
//! # });
//! ```
//!
//! A modern server answers `server/discover` without any session:
//!
//! ```
//! use mcp_stack_testkit::http::{HttpServer, HttpServerOptions};
//! use mcp_stack_testkit::{Era, ServerOptions};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let mut server = ServerOptions::default();
//! server.era = Era::Modern;
//! let options = HttpServerOptions { server, json_response: true, ..HttpServerOptions::default() };
//! let server = HttpServer::start(options).await.unwrap();
//!
//! let body = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{
//!     "io.modelcontextprotocol/protocolVersion":"2026-07-28",
//!     "io.modelcontextprotocol/clientInfo":{"name":"doc","version":"1"},
//!     "io.modelcontextprotocol/clientCapabilities":{}}}}"#;
//! let request = format!(
//!     "POST /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
//!      Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
//!      MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\n\
//!      Content-Length: {}\r\n\r\n{body}",
//!     server.addr(),
//!     body.len()
//! );
//! let mut tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
//! tcp.write_all(request.as_bytes()).await.unwrap();
//! let mut response = String::new();
//! tcp.read_to_string(&mut response).await.unwrap();
//! assert!(response.starts_with("HTTP/1.1 200"), "{response}");
//! assert!(!response.to_ascii_lowercase().contains("mcp-session-id"));
//! assert!(response.contains(r#""supportedVersions":["2026-07-28"]"#), "{response}");
//! server.shutdown().await;
//! # });
//! ```

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::task::{AbortHandle, JoinSet};

mod discover;
mod discover_post;
mod legacy_sse;
#[cfg(feature = "oauth")]
mod oauth;
mod options;
mod response;
mod session;
mod sse;
mod stats;
mod streamable;

#[cfg(feature = "oauth")]
pub use oauth::{
    AuthServerMetadata, ExternalAuthorizationServer, OAuthMisbehaviour, OAuthOptions,
    ResourceMetadataAt,
};
pub use options::{HttpMisbehaviour, HttpMode, HttpServerOptions};
pub use stats::{HttpStats, OAuthStats};

use response::{Body, empty, full, header_str, json_error};
use session::{Session, SessionKind};

/// A running HTTP test server. Dropping it stops it.
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: AbortHandle,
}

/// What the connections of one server share: its options, its sessions and
/// what it saw. The handlers are `impl Shared` blocks in the submodules.
#[derive(Debug)]
struct Shared {
    options: HttpServerOptions,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// The one session of a stateless server.
    stateless: Mutex<Option<Arc<Session>>>,
    next_session: AtomicU64,
    expired_once: AtomicBool,
    /// The `drop-sse-stream` misbehaviour has chosen its stream.
    dropped_once: AtomicBool,
    stats: HttpStats,
    connections: Mutex<JoinSet<()>>,
    /// The OAuth side, when [`HttpServerOptions::oauth`] is set.
    #[cfg(feature = "oauth")]
    oauth: Option<oauth::OAuth>,
    /// The resources every session and request instance shares: a change
    /// one makes is announced to the subscribers of the others.
    world: Arc<crate::resources::World>,
}

#[cfg(not(feature = "oauth"))]
impl Shared {
    /// Without the OAuth-protected mode no request lacks a scope.
    fn insufficient_scope(
        &self,
        _headers: &hyper::HeaderMap,
        _endpoint_path: &str,
        _message: &mcp_stack_jsonrpc::Message,
    ) -> Option<Response<Body>> {
        None
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// The resources shared by the instances.
    fn world(&self) -> Option<Arc<crate::resources::World>> {
        Some(Arc::clone(&self.world))
    }

    /// A new session with an id of its own, registered.
    fn new_session(&self, kind: SessionKind) -> Arc<Session> {
        let n = self.next_session.fetch_add(1, Ordering::Relaxed) + 1;
        let id = format!("testkit-session-{n}-{:x}", std::process::id());
        let session = Session::start(id.clone(), kind, self.options.server.clone(), self.world());
        lock(&self.sessions).insert(id, Arc::clone(&session));
        session
    }

    /// Routes a request to its handler by method and path.
    async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        if let Some((name, value)) = &self.options.require_header
            && header_str(&request, name) != Some(value.as_str())
        {
            let mut r = json_error(
                StatusCode::UNAUTHORIZED,
                response::SDK_SESSION_NOT_FOUND,
                "Unauthorized",
            );
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
        #[cfg(feature = "oauth")]
        let request = match self.oauth_route(request).await {
            Ok(answered) => return answered,
            Err(request) => request,
        };
        let streamable = matches!(self.options.mode, HttpMode::Streamable | HttpMode::Both);
        let legacy = matches!(self.options.mode, HttpMode::LegacySse | HttpMode::Both);
        let path = request.uri().path().to_owned();
        match (request.method().clone(), path.as_str()) {
            (Method::POST, "/mcp") if streamable => self.post(request).await,
            (Method::GET, "/mcp") if streamable => self.get(request),
            (Method::DELETE, "/mcp") if streamable => self.delete(&request),
            (_, "/mcp") if streamable => empty(StatusCode::METHOD_NOT_ALLOWED),
            (Method::GET, "/sse") if legacy => self.legacy_stream(),
            (Method::POST, "/messages") if legacy => self.legacy_post(request).await,
            (_, "/sse" | "/messages") if legacy => empty(StatusCode::METHOD_NOT_ALLOWED),
            _ => full(StatusCode::NOT_FOUND, "text/plain", "Not Found"),
        }
    }

    fn serve_connection<IO>(self: &Arc<Self>, io: IO)
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Arc::clone(self);
        let service = service_fn(move |request| {
            let shared = Arc::clone(&shared);
            async move { Ok::<_, Infallible>(shared.handle(request).await) }
        });
        let mut connections = lock(&self.connections);
        while connections.try_join_next().is_some() {}
        connections.spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(io), service)
                .await;
        });
    }

    /// One connection over HTTP/2.
    fn serve_connection_h2<IO>(self: &Arc<Self>, io: IO)
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Arc::clone(self);
        let service = service_fn(move |request| {
            let shared = Arc::clone(&shared);
            async move { Ok::<_, Infallible>(shared.handle(request).await) }
        });
        let mut connections = lock(&self.connections);
        while connections.try_join_next().is_some() {}
        connections.spawn(async move {
            let _ = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                .serve_connection(TokioIo::new(io), service)
                .await;
        });
    }
}

impl HttpServer {
    /// Starts a server on 127.0.0.1 with a free port.
    pub async fn start(options: HttpServerOptions) -> io::Result<HttpServer> {
        Self::bind(SocketAddr::from(([127, 0, 0, 1], 0)), options).await
    }

    /// Starts a server on an address (use a loopback address).
    pub async fn bind(addr: SocketAddr, options: HttpServerOptions) -> io::Result<HttpServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        #[cfg(feature = "oauth")]
        let oauth = options
            .oauth
            .clone()
            .map(|o| oauth::OAuth::new(o, addr, options.mode));
        let world = Arc::new(crate::resources::World::new(&options.server));
        let shared = Arc::new(Shared {
            options,
            sessions: Mutex::default(),
            stateless: Mutex::default(),
            next_session: AtomicU64::new(0),
            expired_once: AtomicBool::new(false),
            dropped_once: AtomicBool::new(false),
            stats: HttpStats::default(),
            connections: Mutex::new(JoinSet::new()),
            world,
            #[cfg(feature = "oauth")]
            oauth,
        });
        let accept_shared = Arc::clone(&shared);
        let accept = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                accept_shared.serve_connection(stream);
            }
        });
        Ok(HttpServer {
            addr,
            shared,
            accept: accept.abort_handle(),
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL a client connects to: `/mcp` for streamable HTTP (and both),
    /// `/sse` for a legacy-only server.
    pub fn url(&self) -> String {
        match self.shared.options.mode {
            HttpMode::LegacySse => format!("http://{}/sse", self.addr),
            _ => format!("http://{}/mcp", self.addr),
        }
    }

    /// What the server saw.
    pub fn stats(&self) -> &HttpStats {
        &self.shared.stats
    }

    /// With OAuth (feature `oauth`): the authorization server's issuer identifier
    /// (`http://127.0.0.1:PORT` plus the issuer path).
    #[cfg(feature = "oauth")]
    pub fn issuer(&self) -> Option<String> {
        self.shared.oauth.as_ref().map(|o| o.issuer().to_owned())
    }

    /// With OAuth: the protected resource metadata URL the 401 challenges
    /// of [`HttpServer::url`] name.
    #[cfg(feature = "oauth")]
    pub fn resource_metadata_url(&self) -> Option<String> {
        let path = match self.shared.options.mode {
            HttpMode::LegacySse => "/sse",
            _ => "/mcp",
        };
        self.shared
            .oauth
            .as_ref()
            .map(|o| o.resource_metadata_url(path))
    }

    /// With OAuth: revokes every access token, refresh token and unused
    /// authorization code. MCP requests then get 401 `invalid_token` and
    /// refreshes `invalid_grant`, as after a server-side logout.
    #[cfg(feature = "oauth")]
    pub fn revoke_tokens(&self) {
        if let Some(o) = &self.shared.oauth {
            o.revoke_all();
        }
    }

    /// With OAuth: moves the server's clock forward, so tokens (and codes)
    /// expire without anyone waiting.
    #[cfg(feature = "oauth")]
    pub fn advance_clock(&self, by: std::time::Duration) {
        if let Some(o) = &self.shared.oauth {
            o.advance_clock(by);
        }
    }

    /// With OAuth: an access token for [`HttpServer::url`] with `scopes`,
    /// issued without any flow (for a client configured with a static
    /// token). `None` without OAuth.
    #[cfg(feature = "oauth")]
    pub fn mint_token<S: Into<String>>(
        &self,
        scopes: impl IntoIterator<Item = S>,
    ) -> Option<String> {
        let scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
        self.shared.oauth.as_ref().map(|o| o.mint(&scopes))
    }

    /// Serves one connection accepted elsewhere (a TLS stream, say).
    pub fn serve_connection<IO>(&self, io: IO)
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        self.shared.serve_connection(io);
    }

    /// Serves one connection over HTTP/2 (a TLS stream that negotiated `h2`
    /// with ALPN, say): the same server, the other protocol.
    pub fn serve_connection_h2<IO>(&self, io: IO)
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        self.shared.serve_connection_h2(io);
    }

    /// Stops accepting, ends every connection and session.
    pub async fn shutdown(self) {
        drop(self);
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.accept.abort();
        lock(&self.shared.connections).abort_all();
        lock(&self.shared.sessions).clear();
        lock(&self.shared.stateless).take();
    }
}
