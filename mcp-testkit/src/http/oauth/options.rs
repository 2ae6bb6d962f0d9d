//! What the OAuth-protected mode is asked to do: its scopes, which metadata
//! it serves where, its authorization server's knobs and misbehaviours.

use std::collections::BTreeMap;
use std::fmt;

use super::external::ExternalAuthorizationServer;

/// Where the protected resource metadata (RFC 9728) is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceMetadataAt {
    /// At the path of the MCP endpoint:
    /// `/.well-known/oauth-protected-resource/mcp` (the default).
    Path,
    /// At the root: `/.well-known/oauth-protected-resource`.
    Root,
    /// Both.
    Both,
    /// Nowhere (the 2025-03-26 authorization, which had none).
    Nowhere,
}

/// Which authorization server metadata documents are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthServerMetadata {
    /// RFC 8414 only: `/.well-known/oauth-authorization-server{issuer path}`
    /// (the default).
    OAuth,
    /// OpenID Connect Discovery only: `/.well-known/openid-configuration`
    /// inserted before the issuer's path and appended after it.
    OpenId,
    /// Both of the above.
    Both,
    /// None: a client of the 2025-03-26 revision falls back to the default
    /// endpoints `/authorize`, `/token` and `/register` at the root.
    None,
}

/// One way the OAuth mode misbehaves on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OAuthMisbehaviour {
    /// `wrong-issuer`: the metadata's `issuer` is not the issuer its URL was
    /// built from (`http://wrong-issuer.invalid`); a client must not use it.
    WrongIssuer,
    /// `no-pkce`: the metadata has no `code_challenge_methods_supported`
    /// (a client must refuse to proceed), and `/authorize` and `/token`
    /// ignore PKCE as a server without it would.
    NoPkce,
    /// `no-iss`: the authorization response has no `iss` although the
    /// metadata says it is supported (a client must reject it).
    NoIss,
    /// `wrong-iss`: the authorization response's `iss` is
    /// `http://wrong-issuer.invalid` (a client must reject it).
    WrongIss,
    /// `expire-immediately`: access tokens say `expires_in` as configured
    /// but are expired from the start.
    ExpireImmediately,
    /// `refuse-refresh`: every `refresh_token` grant gets `invalid_grant`.
    RefuseRefresh,
    /// `wrong-resource`: the protected resource metadata names another
    /// `resource` than the MCP endpoint (a client must not use it).
    WrongResource,
}

impl OAuthMisbehaviour {
    /// Every OAuth misbehaviour.
    pub const ALL: &'static [OAuthMisbehaviour] = &[
        OAuthMisbehaviour::WrongIssuer,
        OAuthMisbehaviour::NoPkce,
        OAuthMisbehaviour::NoIss,
        OAuthMisbehaviour::WrongIss,
        OAuthMisbehaviour::ExpireImmediately,
        OAuthMisbehaviour::RefuseRefresh,
        OAuthMisbehaviour::WrongResource,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            OAuthMisbehaviour::WrongIssuer => "wrong-issuer",
            OAuthMisbehaviour::NoPkce => "no-pkce",
            OAuthMisbehaviour::NoIss => "no-iss",
            OAuthMisbehaviour::WrongIss => "wrong-iss",
            OAuthMisbehaviour::ExpireImmediately => "expire-immediately",
            OAuthMisbehaviour::RefuseRefresh => "refuse-refresh",
            OAuthMisbehaviour::WrongResource => "wrong-resource",
        }
    }

    /// Parses a name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|m| m.name() == name)
    }
}

/// The issuer (and `resource`) the wrong-issuer misbehaviours name.
pub(crate) const WRONG_ISSUER: &str = "http://wrong-issuer.invalid";

/// A client the authorization server knows without registration.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Preregistered {
    pub(crate) client_id: String,
    pub(crate) secret: Option<String>,
    pub(crate) redirect_uris: Vec<String>,
}

/// The OAuth-protected mode of an HTTP test server
/// ([`HttpServerOptions::oauth`](super::super::HttpServerOptions::oauth)): the
/// MCP endpoint wants a bearer token on every request, and the same
/// listener is the authorization server that issues them.
///
/// Built from [`OAuthOptions::new`] (or `default()`) with builder methods;
/// its `Debug` shows no client secrets.
///
/// ```
/// use mcp_stack_testkit::http::{OAuthMisbehaviour, OAuthOptions};
///
/// let oauth = OAuthOptions::new()
///     .scopes(["mcp:read"])
///     .tool_scope("add", "mcp:write")
///     .access_token_lifetime(60)
///     .rotate_refresh_tokens(true)
///     .misbehave(OAuthMisbehaviour::NoIss)
///     .preregistered_client("cli", Some("s3cret"), ["http://127.0.0.1/callback"]);
/// assert!(!format!("{oauth:?}").contains("s3cret"));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct OAuthOptions {
    pub(crate) scopes: Vec<String>,
    pub(crate) tool_scopes: BTreeMap<String, String>,
    pub(crate) challenge_resource_metadata: bool,
    pub(crate) challenge_scope: bool,
    pub(crate) resource_metadata_at: ResourceMetadataAt,
    pub(crate) advertise_scopes: bool,
    pub(crate) metadata: AuthServerMetadata,
    pub(crate) issuer_path: String,
    pub(crate) dynamic_registration: bool,
    pub(crate) access_token_lifetime: u64,
    pub(crate) rotate_refresh_tokens: bool,
    pub(crate) refresh_tokens: bool,
    pub(crate) iss_supported: bool,
    pub(crate) misbehaviours: Vec<OAuthMisbehaviour>,
    pub(crate) preregistered: Vec<Preregistered>,
    pub(crate) metadata_documents: BTreeMap<String, serde_json::Value>,
    pub(crate) external: Option<ExternalAuthorizationServer>,
}

impl Default for OAuthOptions {
    fn default() -> Self {
        OAuthOptions {
            scopes: vec!["mcp".to_owned()],
            tool_scopes: BTreeMap::new(),
            challenge_resource_metadata: true,
            challenge_scope: true,
            resource_metadata_at: ResourceMetadataAt::Path,
            advertise_scopes: true,
            metadata: AuthServerMetadata::OAuth,
            issuer_path: String::new(),
            dynamic_registration: true,
            access_token_lifetime: 3600,
            rotate_refresh_tokens: false,
            refresh_tokens: true,
            iss_supported: true,
            misbehaviours: Vec::new(),
            preregistered: Vec::new(),
            metadata_documents: BTreeMap::new(),
            external: None,
        }
    }
}

impl fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let clients: Vec<&str> = self
            .preregistered
            .iter()
            .map(|c| c.client_id.as_str())
            .collect();
        f.debug_struct("OAuthOptions")
            .field("scopes", &self.scopes)
            .field("tool_scopes", &self.tool_scopes)
            .field(
                "challenge_resource_metadata",
                &self.challenge_resource_metadata,
            )
            .field("challenge_scope", &self.challenge_scope)
            .field("resource_metadata_at", &self.resource_metadata_at)
            .field("advertise_scopes", &self.advertise_scopes)
            .field("metadata", &self.metadata)
            .field("issuer_path", &self.issuer_path)
            .field("dynamic_registration", &self.dynamic_registration)
            .field("access_token_lifetime", &self.access_token_lifetime)
            .field("rotate_refresh_tokens", &self.rotate_refresh_tokens)
            .field("refresh_tokens", &self.refresh_tokens)
            .field("iss_supported", &self.iss_supported)
            .field("misbehaviours", &self.misbehaviours)
            .field("preregistered_clients", &clients)
            .field(
                "metadata_documents",
                &self.metadata_documents.keys().collect::<Vec<_>>(),
            )
            .field("external", &self.external)
            .finish()
    }
}

impl OAuthOptions {
    /// The defaults: every MCP request needs scope `mcp`; the 401 challenge
    /// names `resource_metadata` and `scope`; the protected resource
    /// metadata is served at the endpoint's path; RFC 8414 metadata at the
    /// issuer `http://127.0.0.1:PORT`; dynamic registration; access tokens
    /// for an hour; refresh tokens, not rotated; `iss` in every
    /// authorization response.
    pub fn new() -> Self {
        Self::default()
    }

    /// The scopes every MCP request needs (and that the 401 challenge and
    /// `scopes_supported` name). Empty: any valid token will do.
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// A `tools/call` of `tool` also needs `scope`: without it the call is
    /// answered 403 `insufficient_scope` naming every scope it needs (for
    /// step-up authorization tests).
    pub fn tool_scope(mut self, tool: impl Into<String>, scope: impl Into<String>) -> Self {
        self.tool_scopes.insert(tool.into(), scope.into());
        self
    }

    /// Whether the `WWW-Authenticate` challenges carry `resource_metadata`
    /// (default true); without it a client probes the well-known URIs.
    pub fn challenge_resource_metadata(mut self, on: bool) -> Self {
        self.challenge_resource_metadata = on;
        self
    }

    /// Whether the 401 challenges carry `scope` (default true); without it a
    /// client falls back to `scopes_supported`.
    pub fn challenge_scope(mut self, on: bool) -> Self {
        self.challenge_scope = on;
        self
    }

    /// Where the protected resource metadata is served (default
    /// [`ResourceMetadataAt::Path`]).
    pub fn resource_metadata_at(mut self, at: ResourceMetadataAt) -> Self {
        self.resource_metadata_at = at;
        self
    }

    /// Whether the protected resource metadata lists `scopes_supported`
    /// (default true).
    pub fn advertise_scopes(mut self, on: bool) -> Self {
        self.advertise_scopes = on;
        self
    }

    /// Which authorization server metadata is served (default
    /// [`AuthServerMetadata::OAuth`]).
    pub fn metadata(mut self, metadata: AuthServerMetadata) -> Self {
        self.metadata = metadata;
        self
    }

    /// A path for the issuer, such as `/tenant`: the issuer becomes
    /// `http://127.0.0.1:PORT/tenant` and its endpoints live under it
    /// (`/tenant/authorize`, `/tenant/token`, `/tenant/register`). Empty
    /// (the default): the issuer is the origin.
    pub fn issuer_path(mut self, path: impl Into<String>) -> Self {
        let path = path.into();
        let trimmed = path.trim_end_matches('/');
        self.issuer_path = if trimmed.is_empty() || trimmed.starts_with('/') {
            trimmed.to_owned()
        } else {
            format!("/{trimmed}")
        };
        self
    }

    /// Whether `/register` (RFC 7591) is offered and advertised (default true).
    pub fn dynamic_registration(mut self, on: bool) -> Self {
        self.dynamic_registration = on;
        self
    }

    /// How long access tokens live, in seconds (default 3600). With 0 they
    /// are expired when issued (and say `expires_in: 0`).
    pub fn access_token_lifetime(mut self, seconds: u64) -> Self {
        self.access_token_lifetime = seconds;
        self
    }

    /// Whether each refresh issues a new refresh token and invalidates the
    /// old one (default false: the same refresh token is given back). A
    /// rotated-out token used again gets `invalid_grant`.
    pub fn rotate_refresh_tokens(mut self, on: bool) -> Self {
        self.rotate_refresh_tokens = on;
        self
    }

    /// Whether the authorization code grant issues refresh tokens (default true).
    pub fn refresh_tokens(mut self, on: bool) -> Self {
        self.refresh_tokens = on;
        self
    }

    /// Whether the metadata says `authorization_response_iss_parameter_supported:
    /// true` (default true).
    pub fn iss_supported(mut self, on: bool) -> Self {
        self.iss_supported = on;
        self
    }

    /// Adds a misbehaviour.
    pub fn misbehave(mut self, m: OAuthMisbehaviour) -> Self {
        if !self.misbehaviours.contains(&m) {
            self.misbehaviours.push(m);
        }
        self
    }

    /// A client known without registration. With a secret it authenticates
    /// with `client_secret_basic` (and may use `client_credentials`);
    /// without, it is a public client (`none`). Its redirect URIs are
    /// matched as registered ones are.
    pub fn preregistered_client<S: Into<String>>(
        mut self,
        client_id: impl Into<String>,
        secret: Option<&str>,
        redirect_uris: impl IntoIterator<Item = S>,
    ) -> Self {
        self.preregistered.push(Preregistered {
            client_id: client_id.into(),
            secret: secret.map(str::to_owned),
            redirect_uris: redirect_uris.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// A client ID metadata document the authorization server "fetches"
    /// for the URL `client_id` (the testkit makes no outgoing requests: the
    /// documents it knows are these). Adding one makes the metadata say
    /// `client_id_metadata_document_supported: true`. The document is
    /// checked when used: its `client_id` must equal the URL, it must list
    /// `redirect_uris`, and the client is public.
    pub fn client_id_metadata_document(
        mut self,
        client_id: impl Into<String>,
        document: serde_json::Value,
    ) -> Self {
        self.metadata_documents.insert(client_id.into(), document);
        self
    }

    /// Delegates authorization to a server the testkit does not run: the
    /// protected resource metadata names `server`'s issuer in
    /// `authorization_servers`, no authorization server is served here
    /// (no metadata, `/authorize`, `/token` or `/register`; the
    /// authorization server knobs, misbehaviours and clients above do not
    /// apply), and the MCP endpoint accepts the JWT access tokens `server`
    /// signs for it, checked against its keys as
    /// [`ExternalAuthorizationServer`] describes. The scopes still apply,
    /// read from the token's `scope` claim; [`HttpServer::advance_clock`](super::super::HttpServer::advance_clock)
    /// moves the clock its `exp` is compared with.
    pub fn external_authorization_server(mut self, server: ExternalAuthorizationServer) -> Self {
        self.external = Some(server);
        self
    }

    /// Whether a misbehaviour is selected.
    pub fn has(&self, m: OAuthMisbehaviour) -> bool {
        self.misbehaviours.contains(&m)
    }
}
