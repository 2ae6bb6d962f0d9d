//! What an HTTP test server saw, for tests to check.

use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

/// What the server saw, for tests to check.
#[derive(Debug, Default)]
pub struct HttpStats {
    /// `initialize` requests received (a new session each, when stateful).
    pub initializes: AtomicUsize,
    /// DELETE requests received.
    pub deletes: AtomicUsize,
    /// GETs that carried `Last-Event-ID`.
    pub resumes: AtomicUsize,
    /// GET streams opened (without `Last-Event-ID`).
    pub get_streams: AtomicUsize,
    /// Legacy SSE streams opened.
    pub legacy_streams: AtomicUsize,
    /// Requests answered 404 or 400 for a stale session.
    pub stale_session_answers: AtomicUsize,
    /// POSTs that reached the MCP server.
    pub posts: AtomicUsize,
    /// The `MCP-Protocol-Version` of each POST after initialize (empty when absent).
    pub protocol_versions: Mutex<Vec<String>>,
    /// The `Last-Event-ID` values seen.
    pub last_event_ids: Mutex<Vec<String>>,
    /// POSTs served the 2026-07-28 way (requests and notifications, refused
    /// or not).
    pub modern_posts: AtomicUsize,
    /// The `MCP-Protocol-Version` and `Mcp-*` headers of each modern POST, in
    /// order: lower-cased names, raw values.
    pub modern_headers: Mutex<Vec<Vec<(String, String)>>>,
    /// Modern requests refused with `400` + `-32020` (`HeaderMismatch`).
    pub header_rejections: AtomicUsize,
    /// Notification POSTs in the 2026-07-28 mode. A conforming client sends
    /// none: it cancels by closing the response stream.
    pub modern_notifications: AtomicUsize,
    /// Modern requests whose client closed the response stream (or the
    /// connection) before the answer; their work was aborted.
    pub disconnect_cancels: AtomicUsize,
    /// What the OAuth-protected mode saw (all zero without it).
    pub oauth: OAuthStats,
}

/// What the OAuth-protected mode ([`super::OAuthOptions`]) saw: what the
/// client asked of the MCP endpoint, the metadata and the authorization
/// server.
#[derive(Debug, Default)]
pub struct OAuthStats {
    /// MCP requests answered 401 (no token, or an invalid or expired one).
    pub unauthorized: AtomicUsize,
    /// MCP requests answered 403 `insufficient_scope`.
    pub forbidden: AtomicUsize,
    /// MCP requests whose bearer token was accepted.
    pub authorized: AtomicUsize,
    /// Every path under a `/.well-known/` the server was asked for (GET),
    /// served or not, in order: the client's discovery, step by step.
    pub well_known: Mutex<Vec<String>>,
    /// Protected resource metadata documents served.
    pub resource_metadata_fetches: AtomicUsize,
    /// Authorization server metadata documents served (RFC 8414 or OpenID).
    pub server_metadata_fetches: AtomicUsize,
    /// Clients registered with `/register`.
    pub registrations: AtomicUsize,
    /// Registrations refused.
    pub registration_errors: AtomicUsize,
    /// The query of each `/authorize` request, in order (name, value).
    pub authorize_requests: Mutex<Vec<Vec<(String, String)>>>,
    /// Authorization codes issued (redirects with a `code`).
    pub authorizations: AtomicUsize,
    /// Authorization requests refused (with a redirect or a 400).
    pub authorization_errors: AtomicUsize,
    /// The form of each `/token` request, in order (name, value), with
    /// `client_secret` replaced by `***`.
    pub token_requests: Mutex<Vec<Vec<(String, String)>>>,
    /// Tokens issued for an `authorization_code` grant.
    pub code_grants: AtomicUsize,
    /// Tokens issued for a `refresh_token` grant.
    pub refresh_grants: AtomicUsize,
    /// Tokens issued for a `client_credentials` grant.
    pub client_credentials_grants: AtomicUsize,
    /// The `error` of each refused token request, in order.
    pub token_errors: Mutex<Vec<String>>,
}

impl OAuthStats {
    /// How many times `path` (such as
    /// `/.well-known/oauth-protected-resource/mcp`) was asked for.
    pub fn fetches(&self, path: &str) -> usize {
        super::lock(&self.well_known)
            .iter()
            .filter(|p| *p == path)
            .count()
    }

    /// How many token requests had `grant_type` (granted or not).
    pub fn token_requests_for(&self, grant_type: &str) -> usize {
        super::lock(&self.token_requests)
            .iter()
            .filter(|form| {
                form.iter()
                    .any(|(k, v)| k == "grant_type" && v == grant_type)
            })
            .count()
    }
}
