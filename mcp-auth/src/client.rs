//! [`OAuthClient`]: the MCP authorization flow, driven. It implements the
//! HTTP client's [`Authorizer`]: every request gets the current token, and a
//! 401 or 403 runs the part of the flow it calls for (a refresh, a whole
//! authorization, a step-up to more scopes). The decisions are the IO-free
//! functions of this crate; this module only fetches, stores and waits.

use mcp_stack_protocol::endpoint::redact_url;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::header::{HeaderMap, HeaderName, HeaderValue};
use mcp_stack_http::auth::{
    AuthChallenge, AuthDecision, AuthFuture, Authorizer, Credentials, RequestTarget,
};
use mcp_stack_http::{ClientOptions, HttpError, WebClient};
use serde_json::json;

use crate::AuthError;
use crate::Secret;
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
use crate::store::{LoginKey, StoredAuth, StoredClient, StoredTokens, TokenStore, entry_for};
use crate::token::{
    ClientAuthMethod, ClientCredentials, TokenRequest, TokenResponse, Tokens, choose_client_auth,
};

/// How many authorizations one request may cause (the first, then
/// step-ups to more scopes): the spec's "no more than a few times".
pub(crate) const MAX_AUTHORIZATIONS_PER_REQUEST: u32 = 3;

/// How long before expiry a token is refreshed (for a token that lives
/// less than twice this, at half its remaining life instead).
pub(crate) const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// When to refresh a token issued at `issued_at` that expires at
/// `expires_at`: [`REFRESH_MARGIN`] before, or halfway through a short
/// life (a 30 s token is used for 15 s, not refreshed before every request).
fn refresh_at(expires_at: Option<u64>, issued_at: u64) -> Option<u64> {
    let at = expires_at?;
    let lifetime = at.saturating_sub(issued_at);
    let margin = REFRESH_MARGIN.as_secs().min(lifetime / 2);
    Some(at.saturating_sub(margin))
}

mod config;
mod discover;
mod exchange;

pub use config::{Grant, OAuthConfig};

/// The MCP OAuth client (see the module docs). Cheap to clone; clones share
/// their state. Give it to an HTTP transport with `mcp-stack-transport`'s
/// `HttpOptions::authorizer`, or to any [`mcp_stack_http::Client`] with
/// [`ClientOptions::authorizer`].
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
    /// The token in use is not yet in the store (its write failed): the
    /// next request writes it first.
    unsaved: bool,
}

/// What the flow knows (under its lock).
#[derive(Debug, Default)]
struct Flow {
    discovered: Option<Discovered>,
    /// The entry of the issuer in use.
    entry: Option<StoredAuth>,
    /// The generation a refresh was already tried for.
    refreshed_for: Option<u64>,
    /// Whether the store was read (on first use: reading may be IO).
    loaded: bool,
    /// A refresh whose write failed: the tokens of the stored entry it
    /// replaced. While the store still holds those, `entry` (the refreshed
    /// one, in memory only) is the truth and is written next.
    unsaved_over: Option<Option<StoredTokens>>,
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
    /// with `http`'s TLS roots, timeouts and proxy (a [`ClientOptions`], or
    /// a transport's `HttpOptions`; their headers and authorizer are left
    /// out). Tokens already stored for the server (and
    /// [`OAuthConfig::identity`]) are read on the first request. `agent`
    /// lets it send a user
    /// to authorize (a browser and a loopback listener, or a redirect
    /// follower); without one, a needed login is an error that names
    /// [`OAuthConfig::login_hint`] (the runtime never opens a browser).
    pub fn new(
        config: OAuthConfig,
        http: impl Into<ClientOptions>,
        store: Arc<dyn TokenStore>,
        agent: Option<Arc<dyn UserAgent>>,
    ) -> Result<Self, AuthError> {
        let key = crate::canonical::canonical_resource(&config.server_url)?;
        let web = WebClient::new(http).map_err(|e| AuthError::Http(e.to_string()))?;
        let flow = Flow::default();
        let current = Current::default();
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
        flow.loaded = true;
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

    /// The stored entries of this server for this client's identity
    /// (tokens redacted in `Debug`).
    pub async fn stored(&self) -> Result<Vec<StoredAuth>, AuthError> {
        self.load_stored().await
    }

    /// The identity whose logins this client uses ([`OAuthConfig::identity`]).
    pub fn identity(&self) -> &str {
        &self.inner.config.identity
    }

    async fn load_stored(&self) -> Result<Vec<StoredAuth>, AuthError> {
        self.inner
            .store
            .load(&self.inner.config.identity, &self.inner.key)
            .await
            .map_err(store_error)
    }

    /// Reads the stored login on first use (the newest with tokens).
    async fn ensure_loaded(&self, flow: &mut Flow) -> Result<(), AuthError> {
        if flow.loaded {
            return Ok(());
        }
        let newest = self
            .load_stored()
            .await?
            .into_iter()
            .filter(|e| e.tokens.is_some())
            .max_by_key(|e| e.updated_at);
        flow.loaded = true;
        if let Some(entry) = newest
            && flow.entry.is_none()
        {
            self.adopt(flow, entry);
        }
        Ok(())
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

    async fn save(&self, entry: &mut StoredAuth) -> Result<(), AuthError> {
        entry.updated_at = now_unix();
        self.inner.store.save(entry).await.map_err(store_error)
    }

    fn set_unsaved(&self, unsaved: bool) {
        self.inner
            .current
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .unsaved = unsaved;
    }

    /// The key of this client's login with `issuer`.
    pub(crate) fn login_key(&self, issuer: &str) -> LoginKey {
        LoginKey::new(&self.inner.config.identity, &self.inner.key, issuer)
    }

    fn needs_login(&self, why: &str) -> AuthError {
        AuthError::LoginRequired(format!("{why}; {}", self.inner.config.login_hint))
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
        let stored = self.load_stored().await?;
        // Registrations are the issuer's own: another issuer's never apply.
        let mut entry = entry_for(stored, &discovered.issuer).unwrap_or_else(|| {
            StoredAuth::new(&self.inner.key, &discovered.issuer)
                .for_identity(self.inner.config.identity.clone())
        });

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
                            redact_url(&config.server_url),
                            config.login_hint
                        )));
                    }
                    return Err(self.needs_login(&format!(
                        "{} needs a login with {}",
                        redact_url(&config.server_url),
                        redact_url(&discovered.issuer)
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
                tracing::info!(issuer = %redact_url(&discovered.issuer), "authorizing");
                let query = redirect.wait(url, pending.state.clone()).await?;
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
        self.save(&mut entry).await?;
        self.adopt(flow, entry);
        flow.unsaved_over = None;
        Ok(())
    }

    async fn on_challenge(&self, challenge: &AuthChallenge) -> Result<AuthDecision, AuthError> {
        let mut flow = self.inner.flow.lock().await;
        self.ensure_loaded(&mut flow).await?;
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
                // The store failed (nothing written): this request fails,
                // the next one writes what the refresh got.
                Err(e @ AuthError::Store(_)) => return Err(e),
                Err(e) => tracing::debug!(error = %e, "refresh failed; authorizing again"),
            }
        }
        // A login stored since (`mcp login` while an agent runs, another
        // process): use it before authorizing anew.
        if let Some(entry) = self.stored_login_other_than_current().await? {
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
    async fn stored_login_other_than_current(&self) -> Result<Option<StoredAuth>, AuthError> {
        let held = self.read_current().header;
        let entries = self.load_stored().await?;
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
        let mut current = self.read_current();
        if current.header.is_none() || current.unsaved {
            // First use (read the store), or a refreshed token the store
            // has not got yet (write it, or fail this request: another
            // replica must not spend the refresh token it replaced).
            let mut flow = self.inner.flow.lock().await;
            self.ensure_loaded(&mut flow).await?;
            if self.read_current().unsaved {
                self.write_unsaved(&mut flow).await?;
            }
            drop(flow);
            current = self.read_current();
        }
        let Some(header) = current.header.clone() else {
            return Ok(None);
        };
        let expiring = current.refresh_at.is_some_and(|at| now_unix() >= at);
        if expiring && current.refreshable {
            let mut flow = self.inner.flow.lock().await;
            // Still the same token after the wait: refresh it (failures
            // leave it to the server's 401, but a store that failed fails
            // the request: its write is retried by the next one).
            if self.generation().0 == current.generation
                && let Err(e) = self.refresh(&mut flow).await
            {
                if matches!(e, AuthError::Store(_)) {
                    return Err(e);
                }
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
        unsaved: false,
    }
}

/// A store's failure as the flow reports it.
pub(crate) fn store_error(e: crate::store::StoreError) -> AuthError {
    AuthError::Store(e.to_string())
}

fn transport_error(target: &RequestTarget, e: AuthError) -> HttpError {
    HttpError::Unauthorized {
        url: format!("{} {}", target.method, redact_url(&target.uri)),
        message: e.to_string(),
    }
}

impl Authorizer for OAuthClient {
    fn credentials<'a>(
        &'a self,
        target: &'a RequestTarget,
    ) -> AuthFuture<'a, Result<Option<Credentials>, HttpError>> {
        Box::pin(async move {
            self.credentials_now(target)
                .await
                .map_err(|e| transport_error(target, e))
        })
    }

    fn challenged<'a>(
        &'a self,
        challenge: &'a AuthChallenge,
    ) -> AuthFuture<'a, Result<AuthDecision, HttpError>> {
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
