//! The HTTP client under the MCP transports and the OAuth flow: what both
//! need to reach a server over HTTP, and nothing of MCP's messages.
//!
//! * [`Client`]: a pooled keep-alive client on hyper (HTTP/1.1 connections
//!   reused one request at a time, one shared HTTP/2 connection per origin),
//!   rustls with the bundled web PKI roots, the operating system's trust
//!   store and extra CAs ([`ClientOptions`]), the request timeout on each
//!   answer's head, and an observer that sees each exchange, redacted
//!   ([`HttpTrace`]).
//! * [`Proxy`]: the environment's `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`
//!   and `NO_PROXY` as curl reads them, an explicit `http://` proxy, or
//!   none; every server is reached through a `CONNECT` tunnel, TLS inside.
//! * [`auth::Authorizer`]: the hook that gives each request its credentials
//!   and hears each 401 and 403 (`mcp-stack-auth`'s OAuth client implements it).
//! * [`WebClient`]: the same client for the exchanges around MCP (OAuth
//!   metadata, registration, tokens): bodies capped, none of the configured
//!   headers sent.
//! * [`redact_url`] and [`parse_url`]: the one way a URL is shown and the
//!   one rule a URL must meet (both from `mcp_stack_protocol::endpoint`, where
//!   the IO-free layers use them too).
//!
//! Redirects are never followed: a 3xx answer comes back as it is, so
//! headers are never sent to another origin. Errors are [`HttpError`]s; the
//! transports turn each into their `TransportError` of the same name.
//!
//! # Example
//!
//! ```no_run
//! use mcp_stack_http::{ClientOptions, Proxy, WebClient};
//!
//! # async fn demo() -> Result<(), mcp_stack_http::HttpError> {
//! let options = ClientOptions::new()
//!     .proxy(Proxy::none())
//!     .request_timeout(std::time::Duration::from_secs(10));
//! let web = WebClient::new(&options)?;
//! let answer = web
//!     .get("https://auth.example.com/.well-known/oauth-authorization-server", Default::default())
//!     .await?;
//! assert!(answer.is_success());
//! # Ok(()) }
//! ```
//!
//! `examples/fetch.rs` runs a [`WebClient`] against a server of its own on
//! 127.0.0.1.

pub mod auth;
mod client;
mod error;
mod options;
mod pool;
mod proxy;
mod tls;
mod web;

pub use client::{Client, content_type, read_body};
pub use error::HttpError;
pub use mcp_stack_protocol::endpoint::redact_url;
pub use options::{
    ClientOptions, DEFAULT_CONNECT_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, HttpObserver, HttpTrace,
    has_authorization,
};
pub use proxy::Proxy;
pub use web::{WEB_BODY_LIMIT, WebClient, WebResponse};

use hyper::Uri;

/// Parses a URL for a request: `http` or `https`, with a host (the rule
/// of `mcp_stack_protocol::endpoint::check_url`, which the config validator
/// applies too, so a URL one accepts the other does not refuse).
pub fn parse_url(url: &str) -> Result<Uri, HttpError> {
    mcp_stack_protocol::endpoint::check_url(url.trim())
        .map_err(|problem| HttpError::InvalidConfig(format!("{} {problem}", redact_url(url))))
}

/// Whether two URLs have the same scheme, host and port.
pub fn same_origin(a: &Uri, b: &Uri) -> bool {
    fn port(u: &Uri) -> Option<u16> {
        u.port_u16().or(match u.scheme_str() {
            Some("https") => Some(443),
            Some("http") => Some(80),
            _ => None,
        })
    }
    a.scheme() == b.scheme()
        && a.host().map(str::to_ascii_lowercase) == b.host().map(str::to_ascii_lowercase)
        && port(a) == port(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_redacted() {
        let uri = parse_url("https://user:pw@example.com:8443/mcp?token=abc").unwrap();
        assert_eq!(
            redact_url(&uri),
            "https://<redacted>@example.com:8443/mcp?<redacted>"
        );
        assert!(parse_url("ftp://example.com/").is_err());
        let err = parse_url("not a url?token=abc").unwrap_err();
        assert!(!err.to_string().contains("abc"), "{err}");
    }

    #[test]
    fn origins() {
        let a: Uri = "http://127.0.0.1:80/sse".parse().unwrap();
        assert!(same_origin(
            &a,
            &"http://127.0.0.1/messages?x=1".parse().unwrap()
        ));
        assert!(!same_origin(&a, &"http://127.0.0.1:81/".parse().unwrap()));
        assert!(!same_origin(&a, &"https://127.0.0.1:80/".parse().unwrap()));
        assert!(!same_origin(&a, &"http://evil.example/".parse().unwrap()));
    }
}
