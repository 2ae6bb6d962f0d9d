//! [`OAuthClient`]: the MCP authorization flow, driven. It implements the
//! transport's [`Authorizer`]: every request gets the current token, and a
//! 401 or 403 runs the part of the flow it calls for (a refresh, a whole
//! authorization, a step-up to more scopes). The decisions are the IO-free
//! functions of this crate; this module only fetches, stores and waits.

use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::header::{HeaderMap, HeaderName, HeaderValue};
use mcp_transport::TransportError;
use mcp_transport::http::auth::{
    AuthChallenge, AuthDecision, AuthFuture, Authorizer, Credentials, RequestTarget,
};
use mcp_transport::http::{HttpOptions, WebClient};
use serde_json::json;

use crate::AuthError;
use crate::agent::UserAgent;
use crate::authorize::{AuthorizationRequest, PendingAuthorization};
use crate::challenge::BearerChallenge;
use crate::discovery::{
    authorization_server_metadata_urls, legacy_default_endpoints, legacy_metadata_url,
    protected_resource_metadata_urls,
};
use crate::dpop::{DPOP_SCHEME, DpopKey};
use crate::jwt::{SigningKey, client_assertion};
use crate::metadata::{AuthorizationServerMetadata, ProtectedResourceMetadata};
use crate::pkce::{Pkce, random_state};
use crate::registration::{
    DynamicRegistrationRequest, RegisteredClient, Registration, choose_registration,
};
use crate::scope::{initial_scopes, step_up_scopes};
use crate::secret::Secret;
use crate::store::{StoredAuth, StoredClient, StoredTokens, TokenStore, entry_for};
use crate::token::{
    ClientAuthMethod, ClientCredentials, TokenRequest, TokenResponse, Tokens, choose_client_auth,
};

/// How many authorizations one request may cause (the first, then
/// step-ups to more scopes): the spec's "no more than a few times".
pub const MAX_AUTHORIZATIONS_PER_REQUEST: u32 = 3;

/// How long before expiry a token is refreshed (for a token that lives
/// less than twice this, at half its remaining life instead).
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// When to refresh a token issued at `issued_at` that expires at
/// `expires_at`: [`REFRESH_MARGIN`] before, or halfway through a short
/// life (a 30 s token is used for 15 s, not refreshed before every request).
fn refresh_at(expires_at: Option<u64>, issued_at: u64) -> Option<u64> {
    let at = expires_at?;
    let lifetime = at.saturating_sub(issued_at);
    let margin = REFRESH_MARGIN.as_secs().min(lifetime / 2);
    Some(at.saturating_sub(margin))
}

/// Which grant obtains tokens.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Grant {
    /// A user authorizes in a browser (authorization code with PKCE).
    #[default]
    AuthorizationCode,
    /// The client acts on its own behalf (client credentials: a secret or a
    /// private key); no user, no browser.
    ClientCredentials,
    /// Workload identity: a JWT the workload's platform issued it, traded
    /// with the JWT bearer grant (RFC 7523); no user, no browser, no
    /// client secret. A refused assertion is final: the grant is neither
    /// retried nor swapped for another.
    JwtBearer {
        /// The workload's assertion (its audience: the authorization server).
        assertion: Secret,
    },
    /// Enterprise-managed authorization: the user's ID token from the
    /// enterprise identity provider is exchanged there for an ID-JAG for
    /// the authorization server (RFC 8693), which the JWT bearer grant
    /// trades for an access token; no browser. The client authenticates at
    /// the authorization server with its configured id and secret.
    EnterpriseManaged {
        /// The identity provider's token endpoint.
        idp_token_endpoint: String,
        /// This client's id at the identity provider.
        idp_client_id: String,
        /// The user's ID token from the identity provider.
        id_token: Secret,
    },
}

impl Grant {
    /// Whether a person takes part (the authorization code grant).
    fn has_user(&self) -> bool {
        matches!(self, Grant::AuthorizationCode)
    }
}

/// How this client identifies itself to authorization servers, and what
/// it asks for.
#[derive(Clone)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// The MCP server's URL.
    pub server_url: String,
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret (a confidential client).
    pub client_secret: Option<Secret>,
    /// A private key (PKCS#8 PEM) for `private_key_jwt`, and its algorithm
    /// (`ES256` or `RS256`).
    pub private_key: Option<(Secret, String)>,
    /// The HTTPS URL of this client's metadata document, used as its client
    /// id where the authorization server supports that.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for in place of the spec's choice.
    pub scopes: Option<Vec<String>>,
    /// The name given in dynamic registration.
    pub client_name: String,
    /// Which grant.
    pub grant: Grant,
    /// What to tell the user to run when a login is needed and no user
    /// agent is at hand ("run `mcp login --url …`").
    pub login_hint: String,
    /// Bind tokens to a key (DPoP, RFC 9449) when the authorization server
    /// offers it (default true).
    pub dpop: bool,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("server_url", &crate::uri::redact(&self.server_url))
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field(
                "private_key",
                &self.private_key.as_ref().map(|(_, alg)| alg),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("grant", &self.grant)
            .finish_non_exhaustive()
    }
}

impl OAuthConfig {
    /// Settings for this server: no pre-registration, the spec's scope
    /// choice, the authorization-code grant.
    pub fn new(server_url: impl Into<String>) -> Self {
        OAuthConfig {
            server_url: server_url.into(),
            client_id: None,
            client_secret: None,
            private_key: None,
            client_metadata_url: None,
            scopes: None,
            client_name: "mcp-client".into(),
            grant: Grant::AuthorizationCode,
            login_hint: "log in again".into(),
            dpop: true,
        }
    }

    /// A pre-registered client id (and secret).
    pub fn client(mut self, id: impl Into<String>, secret: Option<Secret>) -> Self {
        self.client_id = Some(id.into());
        self.client_secret = secret;
        self
    }

    /// A private key for `private_key_jwt` (PKCS#8 PEM, `ES256` or `RS256`).
    pub fn private_key(mut self, pem: Secret, alg: impl Into<String>) -> Self {
        self.private_key = Some((pem, alg.into()));
        self
    }

    /// This client's metadata document URL (used as its client id).
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// Scopes to ask for.
    pub fn scopes(mut self, scopes: Vec<String>) -> Self {
        self.scopes = Some(scopes);
        self
    }

    /// The grant.
    pub fn grant(mut self, grant: Grant) -> Self {
        self.grant = grant;
        self
    }

    /// The name given in dynamic registration.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// What to tell the user when a login is needed (see the field).
    pub fn login_hint(mut self, hint: impl Into<String>) -> Self {
        self.login_hint = hint.into();
        self
    }
}

/// The MCP OAuth client (see the module docs). Cheap to clone; clones share
/// their state. Give it to the transport with
/// [`HttpOptions::authorizer`](mcp_transport::http::HttpOptions::authorizer).
#[derive(Clone, Debug)]
pub struct OAuthClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: OAuthConfig,
    /// The key of the store's entries: the server's canonical URI.
    key: String,
    web: WebClient,
    store: Arc<dyn TokenStore>,
    agent: Option<Arc<dyn UserAgent>>,
    current: RwLock<Current>,
    flow: tokio::sync::Mutex<Flow>,
}

/// What every request reads: the header to send.
#[derive(Debug, Default, Clone)]
struct Current {
    header: Option<HeaderValue>,
    generation: u64,
    /// When to refresh it ([`refresh_at`]).
    refresh_at: Option<u64>,
    refreshable: bool,
    /// For a DPoP-bound token: its key, the token (for `ath`), and the MCP
    /// server's latest nonce.
    dpop: Option<Arc<DpopKey>>,
    access: Option<Secret>,
    nonce: Option<String>,
}

/// What the flow knows (under its lock).
#[derive(Debug, Default)]
struct Flow {
    discovered: Option<Discovered>,
    /// The entry of the issuer in use.
    entry: Option<StoredAuth>,
    /// The generation a refresh was already tried for.
    refreshed_for: Option<u64>,
}

#[derive(Debug, Clone)]
struct Discovered {
    /// The `resource` to send: the metadata's, verbatim, else the canonical URI.
    resource: String,
    prm_scopes: Option<Vec<String>>,
    issuer: String,
    meta: AuthorizationServerMetadata,
    /// Nothing was published: the 2025-03-26 default endpoints are a guess
    /// (the server may not use OAuth at all).
    guessed: bool,
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl OAuthClient {
    /// A client for one server, keeping its state in `store` and fetching
    /// with `http`'s TLS roots and timeouts. Tokens already stored for the
    /// server are used from the first request. `agent` lets it send a user
    /// to authorize (a browser and a loopback listener, or a redirect
    /// follower); without one, a needed login is an error that names
    /// [`OAuthConfig::login_hint`] (the runtime never opens a browser).
    pub fn new(
        config: OAuthConfig,
        http: &HttpOptions,
        store: Arc<dyn TokenStore>,
        agent: Option<Arc<dyn UserAgent>>,
    ) -> Result<Self, AuthError> {
        let key = crate::canonical::canonical_resource(&config.server_url)?;
        let web = WebClient::new(http).map_err(|e| AuthError::Http(e.to_string()))?;
        let mut flow = Flow::default();
        let mut current = Current::default();
        let entries = store
            .load(&key)
            .map_err(|e| AuthError::Store(e.to_string()))?;
        if let Some(entry) = entries
            .into_iter()
            .filter(|e| e.tokens.is_some())
            .max_by_key(|e| e.updated_at)
        {
            current = current_of(&entry, 1);
            flow.entry = Some(entry);
        }
        Ok(OAuthClient {
            inner: Arc::new(Inner {
                config,
                key,
                web,
                store,
                agent,
                current: RwLock::new(current),
                flow: tokio::sync::Mutex::new(flow),
            }),
        })
    }

    /// Authorizes now (`mcp login`): asks the server for its challenge with
    /// an unauthenticated request, then runs the whole flow, whatever
    /// tokens are stored.
    pub async fn login(&self) -> Result<StoredAuth, AuthError> {
        let challenge = self.probe_challenge().await;
        let mut flow = self.inner.flow.lock().await;
        flow.discovered = None;
        let (metadata_url, scopes) = match &challenge {
            Some(c) => (c.resource_metadata.clone(), c.scope.clone()),
            None => (None, None),
        };
        self.authorize(&mut flow, metadata_url.as_deref(), scopes, None)
            .await?;
        flow.entry
            .clone()
            .ok_or_else(|| AuthError::Store("the login left no entry".into()))
    }

    /// The stored entries of this server (tokens redacted in `Debug`).
    pub fn stored(&self) -> Result<Vec<StoredAuth>, AuthError> {
        self.inner
            .store
            .load(&self.inner.key)
            .map_err(|e| AuthError::Store(e.to_string()))
    }

    /// The store key of this server: its canonical URI.
    pub fn server_key(&self) -> &str {
        &self.inner.key
    }

    /// POSTs a `ping` without credentials to learn the server's challenge.
    async fn probe_challenge(&self) -> Option<BearerChallenge> {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "ping"}).to_string();
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        let answer = self
            .inner
            .web
            .post(
                &self.inner.config.server_url,
                headers,
                "application/json",
                body,
            )
            .await
            .ok()?;
        let values: Vec<&str> = answer
            .headers
            .get_all(http::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        BearerChallenge::from_headers(&values)
    }

    fn generation(&self) -> (u64, bool) {
        let current = self.read_current();
        (current.generation, current.header.is_some())
    }

    fn read_current(&self) -> Current {
        self.inner
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Makes `entry` the one in use, and its token the one sent.
    fn adopt(&self, flow: &mut Flow, entry: StoredAuth) {
        let mut current = self
            .inner
            .current
            .write()
            .unwrap_or_else(|e| e.into_inner());
        *current = current_of(&entry, current.generation + 1);
        flow.entry = Some(entry);
    }

    fn save(&self, entry: &mut StoredAuth) -> Result<(), AuthError> {
        entry.updated_at = now_unix();
        self.inner
            .store
            .save(entry)
            .map_err(|e| AuthError::Store(e.to_string()))
    }

    fn needs_login(&self, why: &str) -> AuthError {
        AuthError::LoginRequired(format!("{why}; {}", self.inner.config.login_hint))
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
    ) -> Result<Option<T>, AuthError> {
        let answer = self
            .inner
            .web
            .get(url, HeaderMap::new())
            .await
            .map_err(|e| AuthError::Http(e.to_string()))?;
        if !answer.is_success() {
            tracing::debug!(url = %crate::uri::redact(url), status = answer.status, "metadata not here");
            return Ok(None);
        }
        serde_json::from_slice(&answer.body)
            .map(Some)
            .map_err(|e| AuthError::InvalidMetadata {
                what: "metadata document",
                reason: format!("{} is not valid metadata: {e}", crate::uri::redact(url)),
            })
    }

    /// Finds the authorization server: protected resource metadata, then
    /// the issuer's metadata; a 2025-03-26 server without the former gets
    /// the latter at its own origin, else the default endpoints.
    async fn discover(&self, metadata_url: Option<&str>) -> Result<Discovered, AuthError> {
        let server = &self.inner.config.server_url;
        let mut prm: Option<ProtectedResourceMetadata> = None;
        for url in protected_resource_metadata_urls(server, metadata_url)? {
            crate::discovery::check_endpoint_url(&url)?;
            if let Some(doc) = self.get_json::<ProtectedResourceMetadata>(&url).await? {
                doc.check(server)?;
                prm = Some(doc);
                break;
            }
        }
        let Some(prm) = prm else {
            return self.discover_legacy().await;
        };
        let issuer = prm.authorization_servers.first().cloned().ok_or_else(|| {
            AuthError::InvalidMetadata {
                what: "protected resource metadata",
                reason: "it names no authorization server".into(),
            }
        })?;
        for url in authorization_server_metadata_urls(&issuer)? {
            crate::discovery::check_endpoint_url(&url)?;
            if let Some(meta) = self.get_json::<AuthorizationServerMetadata>(&url).await? {
                if self.inner.config.grant.has_user() {
                    meta.check(&issuer)?;
                } else {
                    // No authorization endpoint, no PKCE: the grant is
                    // made at the token endpoint alone.
                    meta.check_for_client_credentials(&issuer)?;
                }
                return Ok(Discovered {
                    resource: prm.resource.clone(),
                    prm_scopes: prm.scopes_supported.clone(),
                    issuer,
                    meta,
                    guessed: false,
                });
            }
        }
        Err(AuthError::InvalidMetadata {
            what: "authorization server metadata",
            reason: format!(
                "none at any well-known URL of the issuer {}",
                crate::uri::redact(&issuer)
            ),
        })
    }

    /// The 2025-03-26 way: no protected resource metadata.
    async fn discover_legacy(&self) -> Result<Discovered, AuthError> {
        let server = &self.inner.config.server_url;
        let resource = crate::canonical::canonical_resource(server)?;
        let url = legacy_metadata_url(server)?;
        let origin = url
            .strip_suffix(crate::discovery::OAUTH_WELL_KNOWN)
            .unwrap_or(&url)
            .to_owned();
        if let Some(meta) = self.get_json::<AuthorizationServerMetadata>(&url).await? {
            // 2025-03-26 predates the issuer check against the discovery
            // URL, and its servers put the issuer where they like (the
            // suite's own puts it under /oauth): checked against itself,
            // so only the endpoints' HTTPS rule and PKCE apply.
            let own = meta.issuer.clone();
            meta.check(&own)?;
            return Ok(Discovered {
                resource,
                prm_scopes: None,
                issuer: meta.issuer.clone(),
                meta,
                guessed: false,
            });
        }
        let endpoints = legacy_default_endpoints(server)?;
        let meta: AuthorizationServerMetadata = serde_json::from_value(json!({
            "issuer": origin,
            "authorization_endpoint": endpoints.authorization,
            "token_endpoint": endpoints.token,
            "registration_endpoint": endpoints.registration,
            "code_challenge_methods_supported": ["S256"],
        }))
        .map_err(|e| AuthError::InvalidMetadata {
            what: "default endpoints",
            reason: e.to_string(),
        })?;
        Ok(Discovered {
            resource,
            prm_scopes: None,
            issuer: origin,
            meta,
            guessed: true,
        })
    }

    /// The whole flow: discovery (unless known), registration, the grant,
    /// and the store. `challenge_scopes`: the challenge's; `step_up`: the
    /// union for a 403; neither lets the spec's choice decide.
    async fn authorize(
        &self,
        flow: &mut Flow,
        metadata_url: Option<&str>,
        challenge_scopes: Option<Vec<String>>,
        step_up: Option<Vec<String>>,
    ) -> Result<(), AuthError> {
        let discovered = match &flow.discovered {
            Some(d) => d.clone(),
            None => {
                let d = self.discover(metadata_url).await?;
                flow.discovered = Some(d.clone());
                d
            }
        };
        let config = &self.inner.config;
        let stored = self
            .inner
            .store
            .load(&self.inner.key)
            .map_err(|e| AuthError::Store(e.to_string()))?;
        // Registrations are the issuer's own: another issuer's never apply.
        let mut entry = entry_for(stored, &discovered.issuer)
            .unwrap_or_else(|| StoredAuth::new(&self.inner.key, &discovered.issuer));

        let scopes = match (&step_up, &config.scopes) {
            (Some(union), _) => Some(union.clone()),
            (None, Some(configured)) => Some(configured.clone()),
            (None, None) => initial_scopes(
                challenge_scopes.as_deref(),
                discovered.prm_scopes.as_deref(),
                discovered.meta.scopes_supported.as_deref(),
                true,
            ),
        };

        // DPoP when the authorization server offers ES256 proofs: a new key
        // for each authorization, the token bound to it.
        let dpop = match discovered.meta.dpop_signing_alg_values_supported.as_deref() {
            Some(algs) if config.dpop && algs.iter().any(|a| a == "ES256") => {
                Some(DpopKey::generate()?)
            }
            _ => None,
        };
        let tokens = match &config.grant {
            Grant::JwtBearer { assertion } => {
                let client = self.configured_client()?;
                let request = TokenRequest::JwtBearer {
                    assertion: assertion.clone(),
                    resource: discovered.resource.clone(),
                    scopes: scopes.clone(),
                };
                self.token_request(
                    &discovered,
                    &client,
                    &request,
                    scopes.as_deref(),
                    dpop.as_ref(),
                )
                .await?
            }
            Grant::EnterpriseManaged {
                idp_token_endpoint,
                idp_client_id,
                id_token,
            } => {
                let grant = self
                    .id_jag(
                        &discovered,
                        idp_token_endpoint,
                        idp_client_id,
                        id_token,
                        &scopes,
                    )
                    .await?;
                let client = self.configured_client()?;
                let request = TokenRequest::JwtBearer {
                    assertion: grant,
                    resource: discovered.resource.clone(),
                    scopes: scopes.clone(),
                };
                self.token_request(
                    &discovered,
                    &client,
                    &request,
                    scopes.as_deref(),
                    dpop.as_ref(),
                )
                .await?
            }
            Grant::ClientCredentials => {
                let client = self.configured_client()?;
                let request =
                    TokenRequest::client_credentials(scopes.clone(), discovered.resource.clone());
                self.token_request(
                    &discovered,
                    &client,
                    &request,
                    scopes.as_deref(),
                    dpop.as_ref(),
                )
                .await?
            }
            Grant::AuthorizationCode => {
                let Some(agent) = self.inner.agent.clone() else {
                    if discovered.guessed {
                        return Err(AuthError::LoginRequired(format!(
                            "{} refused the request and publishes no OAuth metadata: if it \
                             takes an API key or a token, pass it in a header; if it uses \
                             OAuth, {}",
                            crate::uri::redact(&config.server_url),
                            config.login_hint
                        )));
                    }
                    return Err(self.needs_login(&format!(
                        "{} needs a login with {}",
                        crate::uri::redact(&config.server_url),
                        crate::uri::redact(&discovered.issuer)
                    )));
                };
                let redirect = agent.prepare().await?;
                let client = self
                    .registered_client(&discovered, &mut entry, redirect.redirect_uri(), &scopes)
                    .await?;
                let pkce = Pkce::generate()?;
                let state = random_state()?;
                let request = AuthorizationRequest {
                    authorization_endpoint: endpoint(
                        &discovered.meta.authorization_endpoint,
                        "authorization_endpoint",
                    )?,
                    client_id: client.id.clone(),
                    redirect_uri: redirect.redirect_uri().to_owned(),
                    scopes: scopes.clone(),
                    resource: discovered.resource.clone(),
                    code_challenge: pkce.challenge.clone(),
                    state: state.clone(),
                };
                let pending = PendingAuthorization {
                    state,
                    verifier: pkce.verifier.clone(),
                    issuer: discovered.issuer.clone(),
                    iss_supported: discovered
                        .meta
                        .authorization_response_iss_parameter_supported,
                    redirect_uri: redirect.redirect_uri().to_owned(),
                    resource: discovered.resource.clone(),
                    scopes: scopes.clone(),
                };
                let url = request.url()?;
                tracing::info!(issuer = %crate::uri::redact(&discovered.issuer), "authorizing");
                let query = redirect.wait(url).await?;
                let code = pending.accept(&query)?;
                // The registration is kept once a code proves it works.
                if entry.client.is_none() && client.source != "configured" {
                    entry.client = Some(client.stored());
                }
                let request = TokenRequest::authorization_code(
                    code,
                    pending.redirect_uri.clone(),
                    pending.verifier.clone(),
                    discovered.resource.clone(),
                );
                self.token_request(
                    &discovered,
                    &client,
                    &request,
                    scopes.as_deref(),
                    dpop.as_ref(),
                )
                .await?
            }
        };
        entry.tokens = Some(stored_tokens(tokens, None, dpop.as_ref()));
        self.save(&mut entry)?;
        self.adopt(flow, entry);
        Ok(())
    }

    /// Exchanges the user's ID token at the identity provider for an ID-JAG
    /// naming this authorization server and resource.
    async fn id_jag(
        &self,
        discovered: &Discovered,
        idp_token_endpoint: &str,
        idp_client_id: &str,
        id_token: &Secret,
        scopes: &Option<Vec<String>>,
    ) -> Result<Secret, AuthError> {
        crate::discovery::check_endpoint_url(idp_token_endpoint)?;
        let request = TokenRequest::IdJagExchange {
            id_token: id_token.clone(),
            audience: discovered.issuer.clone(),
            resource: discovered.resource.clone(),
            scopes: scopes.clone(),
        };
        let form = request.form(
            &ClientCredentials::public(idp_client_id),
            ClientAuthMethod::None,
        )?;
        let answer = self
            .inner
            .web
            .post(
                idp_token_endpoint,
                HeaderMap::new(),
                "application/x-www-form-urlencoded",
                form.body.expose().to_owned(),
            )
            .await
            .map_err(|e| AuthError::Http(e.to_string()))?;
        if !answer.is_success() && crate::token::TokenError::parse(&answer.body).is_none() {
            return Err(AuthError::Http(format!(
                "the identity provider's token endpoint answered {}",
                answer.status
            )));
        }
        Ok(crate::token::IdJagResponse::parse(&answer.body)?.access_token)
    }

    /// The configured client (pre-registered; client credentials need one).
    fn configured_client(&self) -> Result<Client, AuthError> {
        let config = &self.inner.config;
        let id = config
            .client_id
            .clone()
            .ok_or_else(|| AuthError::NoRegistration {
                reason: "no client id is configured for this server".into(),
            })?;
        let key = match &config.private_key {
            Some((pem, alg)) => Some(Arc::new(SigningKey::from_pem(pem.expose(), alg)?)),
            None => None,
        };
        Ok(Client {
            id,
            secret: config.client_secret.clone(),
            key,
            method: None,
            source: "configured",
        })
    }

    /// A client id for this issuer, in the spec's order: pre-registered,
    /// the stored registration, a metadata document, dynamic registration.
    async fn registered_client(
        &self,
        discovered: &Discovered,
        entry: &mut StoredAuth,
        redirect_uri: &str,
        scopes: &Option<Vec<String>>,
    ) -> Result<Client, AuthError> {
        let config = &self.inner.config;
        if config.client_id.is_some() {
            return self.configured_client();
        }
        if let Some(client) = &entry.client {
            // A dynamic registration names its redirect URIs; a loopback
            // one on another port still matches (RFC 8252 §7.3).
            return Ok(Client::of(client));
        }
        let choice = choose_registration(
            false,
            config.client_metadata_url.as_deref(),
            &discovered.meta,
        );
        match choice {
            Registration::ClientIdMetadataDocument(url) => Ok(Client {
                id: url,
                secret: None,
                key: None,
                method: Some("none".into()),
                source: "metadata-document",
            }),
            Registration::Dynamic(endpoint) => {
                let request = DynamicRegistrationRequest::native(
                    config.client_name.clone(),
                    vec![redirect_uri.to_owned()],
                    scopes.as_deref(),
                );
                let body =
                    serde_json::to_vec(&request).map_err(|e| AuthError::InvalidRegistration {
                        reason: e.to_string(),
                    })?;
                let answer = self
                    .inner
                    .web
                    .post(&endpoint, HeaderMap::new(), "application/json", body)
                    .await
                    .map_err(|e| AuthError::Http(e.to_string()))?;
                if !answer.is_success() {
                    return Err(AuthError::InvalidRegistration {
                        reason: format!(
                            "the registration endpoint answered {}{}",
                            answer.status,
                            crate::token::TokenError::parse(&answer.body)
                                .map(|e| format!(" ({})", e.error))
                                .unwrap_or_default()
                        ),
                    });
                }
                let registered = RegisteredClient::parse(&answer.body)?;
                Ok(Client {
                    id: registered.client_id,
                    secret: registered.client_secret,
                    key: None,
                    method: registered.token_endpoint_auth_method,
                    source: "dynamic",
                })
            }
            other => other.into_result().map(|_| Client {
                id: String::new(),
                secret: None,
                key: None,
                method: None,
                source: "none",
            }),
        }
    }

    /// POSTs a token request with the client authentication the server
    /// and the client agree on, and reads the tokens.
    async fn token_request(
        &self,
        discovered: &Discovered,
        client: &Client,
        request: &TokenRequest,
        requested: Option<&[String]>,
        dpop: Option<&DpopKey>,
    ) -> Result<Tokens, AuthError> {
        let token_endpoint = endpoint(&discovered.meta.token_endpoint, "token_endpoint")?;
        let method = match client
            .method
            .as_deref()
            .and_then(ClientAuthMethod::from_name)
        {
            Some(ClientAuthMethod::Basic | ClientAuthMethod::Post) if client.secret.is_none() => {
                ClientAuthMethod::None
            }
            Some(m) => m,
            None => choose_client_auth(
                discovered
                    .meta
                    .token_endpoint_auth_methods_supported
                    .as_deref(),
                client.secret.is_some(),
                client.key.is_some(),
            )?,
        };
        let assertion = match (method, &client.key) {
            (ClientAuthMethod::PrivateKeyJwt, Some(key)) => {
                let jti = random_state()?;
                Some(client_assertion(
                    &client.id,
                    &discovered.issuer,
                    key,
                    now_unix(),
                    &jti,
                )?)
            }
            _ => None,
        };
        let credentials = ClientCredentials {
            client_id: client.id.clone(),
            client_secret: client.secret.clone(),
            client_assertion: assertion,
        };
        let form = request.form(&credentials, method)?;
        let mut base = HeaderMap::new();
        for (name, value) in &form.headers {
            if name.eq_ignore_ascii_case("content-type") {
                continue;
            }
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value.expose()),
            ) {
                base.insert(name, value);
            }
        }
        // With DPoP, a fresh proof per attempt; a `use_dpop_nonce` answer
        // is tried once more with the server's nonce (RFC 9449 §8).
        let mut nonce: Option<String> = None;
        let answer = loop {
            let mut headers = base.clone();
            if let Some(key) = dpop {
                let proof = key.proof(
                    "POST",
                    &token_endpoint,
                    now_unix(),
                    &random_state()?,
                    None,
                    nonce.as_deref(),
                )?;
                if let Ok(value) = HeaderValue::from_str(proof.expose()) {
                    headers.insert(HeaderName::from_static("dpop"), value);
                }
            }
            let answer = self
                .inner
                .web
                .post(
                    &token_endpoint,
                    headers,
                    "application/x-www-form-urlencoded",
                    form.body.expose().to_owned(),
                )
                .await
                .map_err(|e| AuthError::Http(e.to_string()))?;
            let asks_nonce = dpop.is_some()
                && nonce.is_none()
                && crate::token::TokenError::parse(&answer.body)
                    .is_some_and(|e| crate::dpop::is_nonce_error(Some(&e.error)));
            match (asks_nonce, answer.header("dpop-nonce")) {
                (true, Some(n)) => nonce = Some(n.to_owned()),
                _ => break answer,
            }
        };
        if !answer.is_success() && crate::token::TokenError::parse(&answer.body).is_none() {
            return Err(AuthError::Http(format!(
                "the token endpoint answered {}",
                answer.status
            )));
        }
        let response = TokenResponse::parse(&answer.body)?;
        Tokens::from_response(response, requested, now_unix())
    }

    /// Refreshes the token in use under the store's lock; adopts a newer
    /// token another process wrote instead of spending the refresh token.
    async fn refresh(&self, flow: &mut Flow) -> Result<(), AuthError> {
        let Some(entry) = flow.entry.clone() else {
            return Err(self.needs_login("no stored login"));
        };
        let store = self.inner.store.clone();
        let key = self.inner.key.clone();
        let lock = tokio::task::spawn_blocking(move || store.lock(&key))
            .await
            .map_err(|e| AuthError::Store(e.to_string()))?
            .map_err(|e| AuthError::Store(e.to_string()))?;
        let latest = self
            .inner
            .store
            .load(&self.inner.key)
            .map_err(|e| AuthError::Store(e.to_string()))
            .map(|all| entry_for(all, &entry.issuer))?
            .unwrap_or(entry);
        let ours = flow.entry.as_ref().and_then(|e| e.tokens.as_ref());
        if let Some(theirs) = &latest.tokens {
            let newer = ours.is_none_or(|o| o.access_token != theirs.access_token);
            let fresh = theirs
                .expires_at
                .is_none_or(|at| at > now_unix() + REFRESH_MARGIN.as_secs());
            if newer && fresh {
                tracing::debug!("adopting a token another process refreshed");
                self.adopt(flow, latest);
                drop(lock);
                return Ok(());
            }
        }
        let Some(refresh_token) = latest.tokens.as_ref().and_then(|t| t.refresh_token.clone())
        else {
            return Err(self.needs_login("the stored login cannot be refreshed"));
        };
        let discovered = match &flow.discovered {
            Some(d) if d.issuer == latest.issuer => d.clone(),
            _ => {
                let d = self.discover(None).await?;
                if d.issuer != latest.issuer {
                    return Err(
                        self.needs_login("the server moved to another authorization server")
                    );
                }
                flow.discovered = Some(d.clone());
                d
            }
        };
        let client = match &latest.client {
            Some(c) if self.inner.config.client_id.is_none() => Client::of(c),
            _ => self.configured_client()?,
        };
        let held = latest.tokens.as_ref().map(|t| t.scopes.clone());
        // A DPoP-bound token is refreshed with proofs of the same key.
        let key = self.read_current().dpop;
        let request =
            TokenRequest::refresh(refresh_token.clone(), discovered.resource.clone(), None);
        let mut entry = latest;
        match self
            .token_request(
                &discovered,
                &client,
                &request,
                held.as_deref(),
                key.as_deref(),
            )
            .await
        {
            Ok(tokens) => {
                entry.tokens = Some(stored_tokens(tokens, Some(refresh_token), key.as_deref()));
                self.save(&mut entry)?;
                self.adopt(flow, entry);
                drop(lock);
                Ok(())
            }
            Err(e) if e.is_invalid_grant() => {
                // Revoked or spent: forget the tokens, keep the registration.
                entry.tokens = None;
                self.save(&mut entry)?;
                self.adopt(flow, entry);
                drop(lock);
                Err(self.needs_login("the stored login was revoked or has expired"))
            }
            Err(e) => Err(e),
        }
    }

    async fn on_challenge(&self, challenge: &AuthChallenge) -> Result<AuthDecision, AuthError> {
        let mut flow = self.inner.flow.lock().await;
        let (generation, has_token) = self.generation();
        // Another request changed the credentials since this one was sent:
        // send it again with those.
        if has_token && challenge.generation != Some(generation) {
            return Ok(AuthDecision::Retry);
        }
        let values: Vec<&str> = challenge
            .www_authenticate
            .iter()
            .map(String::as_str)
            .collect();
        let bearer = BearerChallenge::from_headers(&values);
        if challenge.retries >= MAX_AUTHORIZATIONS_PER_REQUEST {
            return Err(AuthError::LoginRequired(format!(
                "the server still refuses the request after {} fresh credentials{}; {}",
                challenge.retries,
                bearer
                    .as_ref()
                    .and_then(|b| b.scope.as_ref())
                    .map(|s| format!(" (it asks for the scopes {})", s.join(" ")))
                    .unwrap_or_default(),
                self.inner.config.login_hint
            )));
        }
        // A DPoP nonce challenge (RFC 9449 §9): the same token, a proof
        // with the server's nonce; not a reason to authorize again.
        if let (401, Some(nonce), Some(b)) = (challenge.status, &challenge.dpop_nonce, &bearer)
            && crate::dpop::is_nonce_error(b.error.as_deref())
        {
            let mut current = self
                .inner
                .current
                .write()
                .unwrap_or_else(|e| e.into_inner());
            if current.dpop.is_some() && current.nonce.as_deref() != Some(nonce.as_str()) {
                current.nonce = Some(nonce.clone());
                return Ok(AuthDecision::Retry);
            }
        }
        let metadata_url = bearer.as_ref().and_then(|b| b.resource_metadata.clone());
        let scopes = bearer.as_ref().and_then(|b| b.scope.clone());
        if challenge.status == 403 {
            let Some(b) = bearer.filter(BearerChallenge::is_insufficient_scope) else {
                return Ok(AuthDecision::GiveUp);
            };
            let held = flow
                .entry
                .as_ref()
                .and_then(|e| e.tokens.as_ref())
                .map(|t| t.scopes.clone())
                .unwrap_or_default();
            let union = step_up_scopes(&held, b.scope.as_deref().unwrap_or_default());
            self.authorize(&mut flow, metadata_url.as_deref(), scopes, Some(union))
                .await?;
            return Ok(AuthDecision::Retry);
        }
        // 401: refresh once per token, then a whole authorization with
        // fresh discovery (the server may have moved to another
        // authorization server).
        let refreshable = self.read_current().refreshable;
        if has_token && refreshable && flow.refreshed_for != Some(generation) {
            flow.refreshed_for = Some(generation);
            match self.refresh(&mut flow).await {
                Ok(()) => return Ok(AuthDecision::Retry),
                Err(e) => tracing::debug!(error = %e, "refresh failed; authorizing again"),
            }
        }
        // A login stored since (`mcp login` while an agent runs, another
        // process): use it before authorizing anew.
        if let Some(entry) = self.stored_login_other_than_current()? {
            tracing::debug!("using a login stored since this client last looked");
            self.adopt(&mut flow, entry);
            return Ok(AuthDecision::Retry);
        }
        flow.discovered = None;
        self.authorize(&mut flow, metadata_url.as_deref(), scopes, None)
            .await?;
        Ok(AuthDecision::Retry)
    }

    /// The newest stored entry of this server with a token other than the
    /// one in use (the one just refused), if there is one.
    fn stored_login_other_than_current(&self) -> Result<Option<StoredAuth>, AuthError> {
        let held = self.read_current().header;
        let entries = self
            .inner
            .store
            .load(&self.inner.key)
            .map_err(|e| AuthError::Store(e.to_string()))?;
        let newest = entries
            .into_iter()
            .filter(|e| e.tokens.is_some())
            .max_by_key(|e| e.updated_at);
        Ok(newest.filter(|e| {
            let candidate = current_of(e, 0).header;
            candidate.is_some() && candidate != held
        }))
    }

    async fn credentials_now(
        &self,
        target: &RequestTarget,
    ) -> Result<Option<Credentials>, AuthError> {
        let current = self.read_current();
        let Some(header) = current.header.clone() else {
            return Ok(None);
        };
        let expiring = current.refresh_at.is_some_and(|at| now_unix() >= at);
        if expiring && current.refreshable {
            let mut flow = self.inner.flow.lock().await;
            // Still the same token after the wait: refresh it (failures
            // leave it to the server's 401).
            if self.generation().0 == current.generation
                && let Err(e) = self.refresh(&mut flow).await
            {
                tracing::debug!(error = %e, "refresh before expiry failed");
            }
            drop(flow);
            let fresh = self.read_current();
            return match fresh.header.clone() {
                Some(h) => credentials(h, &fresh, target).map(Some),
                None => Ok(None),
            };
        }
        credentials(header, &current, target).map(Some)
    }
}

/// A client as the flow uses it: who it is and how it authenticates.
#[derive(Debug, Clone)]
struct Client {
    id: String,
    secret: Option<Secret>,
    key: Option<Arc<SigningKey>>,
    /// The token endpoint method it registered with, when known.
    method: Option<String>,
    /// `configured`, `dynamic`, `metadata-document`.
    source: &'static str,
}

impl Client {
    fn of(stored: &StoredClient) -> Client {
        Client {
            id: stored.client_id.clone(),
            secret: stored.client_secret.clone(),
            key: None,
            method: stored.token_endpoint_auth_method.clone(),
            source: if stored.source == "metadata-document" {
                "metadata-document"
            } else {
                "dynamic"
            },
        }
    }

    fn stored(&self) -> StoredClient {
        let mut c = StoredClient::new(self.id.clone(), self.source);
        c.client_secret = self.secret.clone();
        c.token_endpoint_auth_method = self.method.clone();
        c
    }
}

/// An endpoint the metadata must have (its check made sure it does).
fn endpoint(value: &Option<String>, name: &'static str) -> Result<String, AuthError> {
    value.clone().ok_or(AuthError::InvalidMetadata {
        what: "authorization server metadata",
        reason: format!("it has no {name}"),
    })
}

/// Tokens as stored; a refresh that issued no new refresh token keeps
/// `old`; a DPoP-bound token keeps its key.
fn stored_tokens(tokens: Tokens, old: Option<Secret>, dpop: Option<&DpopKey>) -> StoredTokens {
    let bound = tokens.token_type.scheme().eq_ignore_ascii_case(DPOP_SCHEME);
    StoredTokens {
        access_token: tokens.access,
        token_type: tokens.token_type.scheme().to_owned(),
        refresh_token: tokens.refresh.or(old),
        expires_at: tokens.expires_at_unix,
        scopes: tokens.scopes,
        dpop_key: dpop.filter(|_| bound).map(DpopKey::to_stored),
    }
}

/// The headers of one request: the token, and for a DPoP-bound one a
/// fresh proof for this method and URL.
fn credentials(
    header: HeaderValue,
    current: &Current,
    target: &RequestTarget,
) -> Result<Credentials, AuthError> {
    let mut headers = HeaderMap::new();
    headers.insert(http::header::AUTHORIZATION, header);
    if let Some(key) = &current.dpop {
        let proof = key.proof(
            target.method.as_str(),
            &target.uri.to_string(),
            now_unix(),
            &random_state()?,
            current.access.as_ref(),
            current.nonce.as_deref(),
        )?;
        if let Ok(value) = HeaderValue::from_str(proof.expose()) {
            headers.insert(HeaderName::from_static("dpop"), value);
        }
    }
    Ok(Credentials::new(headers, current.generation))
}

fn current_of(entry: &StoredAuth, generation: u64) -> Current {
    let Some(tokens) = &entry.tokens else {
        return Current {
            generation,
            ..Current::default()
        };
    };
    let dpop = match (
        &tokens.dpop_key,
        tokens.token_type.eq_ignore_ascii_case(DPOP_SCHEME),
    ) {
        (Some(stored), true) => match DpopKey::from_stored(stored) {
            Ok(key) => Some(Arc::new(key)),
            Err(e) => {
                tracing::warn!(error = %e, "the stored DPoP key is unusable; log in again");
                None
            }
        },
        _ => None,
    };
    let scheme = if dpop.is_some() {
        DPOP_SCHEME
    } else {
        "Bearer"
    };
    let header = HeaderValue::from_str(&format!("{scheme} {}", tokens.access_token.expose()))
        .ok()
        .map(|mut h| {
            h.set_sensitive(true);
            h
        });
    Current {
        header,
        generation,
        // The entry was written when its tokens arrived.
        refresh_at: refresh_at(tokens.expires_at, entry.updated_at),
        refreshable: tokens.refresh_token.is_some(),
        access: dpop.as_ref().map(|_| tokens.access_token.clone()),
        dpop,
        nonce: None,
    }
}

fn transport_error(target: &RequestTarget, e: AuthError) -> TransportError {
    TransportError::Unauthorized {
        url: format!(
            "{} {}",
            target.method,
            crate::uri::redact(&target.uri.to_string())
        ),
        message: e.to_string(),
    }
}

impl Authorizer for OAuthClient {
    fn credentials<'a>(
        &'a self,
        target: &'a RequestTarget,
    ) -> AuthFuture<'a, Result<Option<Credentials>, TransportError>> {
        Box::pin(async move {
            self.credentials_now(target)
                .await
                .map_err(|e| transport_error(target, e))
        })
    }

    fn challenged<'a>(
        &'a self,
        challenge: &'a AuthChallenge,
    ) -> AuthFuture<'a, Result<AuthDecision, TransportError>> {
        Box::pin(async move {
            self.on_challenge(challenge)
                .await
                .map_err(|e| transport_error(&challenge.target, e))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_refresh_a_minute_before_expiry_or_halfway_through_a_short_life() {
        // An hour-long token: a minute before it expires.
        assert_eq!(refresh_at(Some(10_000 + 3600), 10_000), Some(10_000 + 3540));
        // A 30 s token: after 15 s, not at once.
        assert_eq!(refresh_at(Some(1030), 1000), Some(1015));
        // Issued an hour ago with 5 s left: now-ish (the margin applies).
        assert_eq!(refresh_at(Some(5005), 1405), Some(4945));
        // No expiry: never before a 401.
        assert_eq!(refresh_at(None, 1000), None);
        // An entry of unknown age (updated_at 0): the full margin.
        assert_eq!(refresh_at(Some(500_000), 0), Some(499_940));
    }
}
