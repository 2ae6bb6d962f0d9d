//! The OAuth-protected mode: the MCP endpoint as an OAuth 2.1 resource
//! server, and an authorization server on the same listener, as MCP's
//! authorization (2025-11-25 and 2026-07-28) describes them.
//!
//! What it does is described in the `http` module's docs ("OAuth").

use std::net::SocketAddr;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};

mod authz;
mod external;
mod guard;
mod options;
mod store;
mod wire;

pub use external::ExternalAuthorizationServer;
pub use options::{AuthServerMetadata, OAuthMisbehaviour, OAuthOptions, ResourceMetadataAt};

use super::response::{Body, full};
use super::{HttpMode, Shared, lock};
use options::WRONG_ISSUER;
use store::{AuthMethod, Client, Store};
use wire::set;

/// The path of the protected resource metadata (RFC 9728).
const PRM: &str = "/.well-known/oauth-protected-resource";
/// The path of RFC 8414 metadata.
const AS_METADATA: &str = "/.well-known/oauth-authorization-server";
/// The path of OpenID Connect discovery.
const OPENID: &str = "/.well-known/openid-configuration";

/// A running server's OAuth side: its options, names and books.
#[derive(Debug)]
pub(super) struct OAuth {
    options: OAuthOptions,
    /// `http://127.0.0.1:PORT`.
    origin: String,
    /// The origin plus the issuer path.
    issuer: String,
    streamable: bool,
    legacy: bool,
    store: Mutex<Store>,
}

impl OAuth {
    pub(super) fn new(options: OAuthOptions, addr: SocketAddr, mode: HttpMode) -> Self {
        let origin = format!("http://{addr}");
        let issuer = match &options.external {
            Some(external) => external.issuer.clone(),
            None => format!("{origin}{}", options.issuer_path),
        };
        let mut store = Store::new();
        for c in &options.preregistered {
            let client = Client {
                id: c.client_id.clone(),
                secret: c.secret.clone(),
                auth: if c.secret.is_some() {
                    AuthMethod::Basic
                } else {
                    AuthMethod::None
                },
                redirect_uris: c.redirect_uris.clone(),
                grant_types: ["authorization_code", "refresh_token", "client_credentials"]
                    .map(str::to_owned)
                    .to_vec(),
            };
            store.clients.insert(client.id.clone(), client);
        }
        OAuth {
            options,
            origin,
            issuer,
            streamable: matches!(mode, HttpMode::Streamable | HttpMode::Both),
            legacy: matches!(mode, HttpMode::LegacySse | HttpMode::Both),
            store: Mutex::new(store),
        }
    }

    /// The issuer identifier.
    pub(super) fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The issuer the metadata names (wrong with `wrong-issuer`).
    fn advertised_issuer(&self) -> &str {
        if self.options.has(OAuthMisbehaviour::WrongIssuer) {
            WRONG_ISSUER
        } else {
            &self.issuer
        }
    }

    /// The path of the endpoint a resource is (`/mcp` or `/sse`).
    fn endpoint_path(&self) -> &'static str {
        if self.streamable { "/mcp" } else { "/sse" }
    }

    /// The protected resource a request path belongs to, if it is an MCP
    /// endpoint this server serves.
    fn resource_for(&self, path: &str) -> Option<String> {
        match path {
            "/mcp" if self.streamable => Some(format!("{}/mcp", self.origin)),
            "/sse" | "/messages" if self.legacy => Some(format!("{}/sse", self.origin)),
            _ => None,
        }
    }

    /// Every resource a token may be asked for.
    fn is_resource(&self, resource: &str) -> bool {
        ["/mcp", "/sse"]
            .iter()
            .any(|p| self.resource_for(p).as_deref() == Some(resource))
    }

    /// The URL of the protected resource metadata for a resource at
    /// `path` (`/mcp`, `/sse`): the path form unless only the root is served.
    pub(super) fn resource_metadata_url(&self, path: &str) -> String {
        match self.options.resource_metadata_at {
            ResourceMetadataAt::Root => format!("{}{PRM}", self.origin),
            _ => format!("{}{PRM}{path}", self.origin),
        }
    }

    /// The URL of an authorization server endpoint (`authorize`, …).
    fn endpoint(&self, name: &str) -> String {
        format!("{}/{name}", self.issuer)
    }

    /// Which endpoint a path is: under the issuer's path, and at the root
    /// too when no metadata tells a client where they are.
    fn endpoint_named<'a>(&self, path: &'a str) -> Option<&'a str> {
        if self.options.external.is_some() {
            return None;
        }
        let under = |prefix: &str| path.strip_prefix(prefix)?.strip_prefix('/');
        let name = under(&self.options.issuer_path).or_else(|| {
            (self.options.metadata == AuthServerMetadata::None)
                .then(|| path.strip_prefix('/'))
                .flatten()
        })?;
        match name {
            "authorize" | "token" => Some(name),
            "register" if self.options.dynamic_registration => Some(name),
            "jwks" if self.serves_openid() => Some(name),
            _ => None,
        }
    }

    fn serves_openid(&self) -> bool {
        matches!(
            self.options.metadata,
            AuthServerMetadata::OpenId | AuthServerMetadata::Both
        )
    }

    /// Every scope the authorization server grants: the base ones and the
    /// tools' ones.
    fn known_scopes(&self) -> Vec<String> {
        let mut scopes = self.options.scopes.clone();
        for s in self.options.tool_scopes.values() {
            if !scopes.contains(s) {
                scopes.push(s.clone());
            }
        }
        scopes
    }

    /// The protected resource metadata served at `path`, if any.
    fn resource_metadata(&self, path: &str) -> Option<Value> {
        use ResourceMetadataAt::{Both, Path, Root};
        let at = self.options.resource_metadata_at;
        let resource = if path == PRM && matches!(at, Root | Both) {
            self.resource_for(self.endpoint_path())?
        } else {
            let endpoint = path.strip_prefix(PRM)?;
            if !matches!(at, Path | Both) || endpoint == "/messages" {
                return None;
            }
            self.resource_for(endpoint)?
        };
        let resource = if self.options.has(OAuthMisbehaviour::WrongResource) {
            format!("{WRONG_ISSUER}/mcp")
        } else {
            resource
        };
        let mut doc = json!({
            "resource": resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
        });
        if self.options.advertise_scopes && !self.options.scopes.is_empty() {
            set(&mut doc, "scopes_supported", json!(self.options.scopes));
        }
        Some(doc)
    }

    /// The authorization server metadata served at `path`, if any.
    fn server_metadata(&self, path: &str) -> Option<Value> {
        if self.options.external.is_some() {
            return None;
        }
        let tenant = &self.options.issuer_path;
        let oauth = matches!(
            self.options.metadata,
            AuthServerMetadata::OAuth | AuthServerMetadata::Both
        ) && path == format!("{AS_METADATA}{tenant}");
        let openid = self.serves_openid()
            && (path == format!("{OPENID}{tenant}")
                || (!tenant.is_empty() && path == format!("{tenant}{OPENID}")));
        if !oauth && !openid {
            return None;
        }
        let mut doc = json!({
            "issuer": self.advertised_issuer(),
            "authorization_endpoint": self.endpoint("authorize"),
            "token_endpoint": self.endpoint("token"),
            "scopes_supported": self.known_scopes(),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "token_endpoint_auth_methods_supported":
                ["client_secret_basic", "client_secret_post", "none"],
            "authorization_response_iss_parameter_supported": self.options.iss_supported,
            "client_id_metadata_document_supported": !self.options.metadata_documents.is_empty(),
        });
        if !self.options.has(OAuthMisbehaviour::NoPkce) {
            set(
                &mut doc,
                "code_challenge_methods_supported",
                json!(["S256"]),
            );
        }
        if self.options.dynamic_registration {
            set(
                &mut doc,
                "registration_endpoint",
                json!(self.endpoint("register")),
            );
        }
        if openid {
            // What OpenID Connect Discovery requires besides.
            set(&mut doc, "jwks_uri", json!(self.endpoint("jwks")));
            set(&mut doc, "subject_types_supported", json!(["public"]));
            set(
                &mut doc,
                "id_token_signing_alg_values_supported",
                json!(["RS256"]),
            );
        }
        Some(doc)
    }

    /// Forgets every token.
    pub(super) fn revoke_all(&self) {
        lock(&self.store).revoke_all();
    }

    /// Moves the server's clock forward.
    pub(super) fn advance_clock(&self, by: Duration) {
        lock(&self.store).advance(by);
    }

    /// An access token for the endpoint, issued to no client (not accepted
    /// with an external authorization server).
    pub(super) fn mint(&self, scopes: &[String]) -> String {
        let resource = self.resource_for(self.endpoint_path()).unwrap_or_default();
        let lifetime = Duration::from_secs(self.options.access_token_lifetime);
        let (token, _) =
            lock(&self.store).issue_tokens("testkit", scopes, &resource, lifetime, false, false);
        token
    }
}

impl Shared {
    /// The OAuth side of routing: the metadata documents and the
    /// authorization server's endpoints are answered here, and a request to
    /// the MCP endpoint without a good token is refused; anything else
    /// comes back to be routed as usual.
    pub(super) async fn oauth_route(
        &self,
        request: Request<Incoming>,
    ) -> Result<Response<Body>, Request<Incoming>> {
        let Some(oauth) = &self.oauth else {
            return Err(request);
        };
        let path = request.uri().path().to_owned();
        let stats = &self.stats.oauth;
        if request.method() == Method::GET && path.contains("/.well-known/") {
            lock(&stats.well_known).push(path.clone());
            if let Some(doc) = oauth.resource_metadata(&path) {
                stats
                    .resource_metadata_fetches
                    .fetch_add(1, Ordering::Relaxed);
                return Ok(full(StatusCode::OK, "application/json", doc.to_string()));
            }
            if let Some(doc) = oauth.server_metadata(&path) {
                stats
                    .server_metadata_fetches
                    .fetch_add(1, Ordering::Relaxed);
                return Ok(full(StatusCode::OK, "application/json", doc.to_string()));
            }
            return Ok(full(StatusCode::NOT_FOUND, "text/plain", "Not Found"));
        }
        match (request.method().clone(), oauth.endpoint_named(&path)) {
            (Method::GET, Some("authorize")) => return Ok(self.authorize(oauth, &request)),
            (Method::POST, Some("token")) => return Ok(self.token(oauth, request).await),
            (Method::POST, Some("register")) => return Ok(self.register(oauth, request).await),
            (Method::GET, Some("jwks")) => {
                return Ok(full(StatusCode::OK, "application/json", r#"{"keys":[]}"#));
            }
            (_, Some(_)) => return Ok(full(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "")),
            _ => {}
        }
        if let Some(resource) = oauth.resource_for(&path)
            && let Some(refused) = self.check_bearer(oauth, request.headers(), &path, &resource)
        {
            return Ok(refused);
        }
        Err(request)
    }
}
