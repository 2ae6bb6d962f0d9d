//! The exchanges with the authorization server (and an identity provider):
//! registration, token requests with the agreed client authentication and
//! DPoP, ID-JAG exchanges, and refreshes under the store's lock.

use std::sync::Arc;

use http::header::{HeaderMap, HeaderName, HeaderValue};

use super::*;

impl OAuthClient {
    /// Exchanges the user's ID token at the identity provider for an ID-JAG
    /// naming this authorization server and resource.
    pub(super) async fn id_jag(
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
    pub(super) fn configured_client(&self) -> Result<Client, AuthError> {
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
    pub(super) async fn registered_client(
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
                                .map(|e| format!(
                                    " ({})",
                                    crate::error::peer_text(
                                        &e.error,
                                        crate::error::ERROR_CODE_CHARS
                                    )
                                ))
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
    pub(super) async fn token_request(
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

    /// The store's lock of this client's login at `issuer`, and what the
    /// store holds for it under that lock.
    async fn locked(
        &self,
        issuer: &str,
    ) -> Result<(crate::store::StoreLock, Option<StoredAuth>), AuthError> {
        let mut lock = self
            .inner
            .store
            .lock(&self.login_key(issuer))
            .await
            .map_err(store_error)?;
        let stored = lock.load().await.map_err(store_error)?;
        Ok((lock, stored))
    }

    /// Refreshes the token in use under the store's lock; adopts a newer
    /// token another process (or replica) wrote instead of spending the
    /// refresh token. What the refresh got is written through the lock
    /// before it is released; when that write fails the call fails
    /// ([`AuthError::Store`]) and the tokens are kept in memory, to be
    /// written by the next request (the refresh token they replace is spent).
    pub(super) async fn refresh(&self, flow: &mut Flow) -> Result<(), AuthError> {
        let Some(entry) = flow.entry.clone() else {
            return Err(self.needs_login("no stored login"));
        };
        let (mut lock, stored) = self.locked(&entry.issuer).await?;
        let stored_tokens_now = stored.as_ref().and_then(|s| s.tokens.clone());
        let latest = match (stored, &flow.unsaved_over) {
            // Our unsaved refresh replaced what the store still holds.
            (Some(s), Some(over)) if s.tokens == *over => entry,
            (None, _) => entry,
            (Some(s), _) => s,
        };
        let ours = flow.entry.as_ref().and_then(|e| e.tokens.as_ref());
        if let Some(theirs) = &latest.tokens {
            let newer = ours.is_none_or(|o| o.access_token != theirs.access_token);
            // Not yet due for a refresh by the rule this client uses.
            let usable =
                refresh_at(theirs.expires_at, latest.updated_at).is_none_or(|at| at > now_unix());
            if newer && usable {
                tracing::debug!("adopting a token another process refreshed");
                lock.release().await.map_err(store_error)?;
                self.adopt(flow, latest);
                flow.unsaved_over = None;
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
        let outcome = self
            .token_request(
                &discovered,
                &client,
                &request,
                held.as_deref(),
                key.as_deref(),
            )
            .await;
        let revoked = match outcome {
            Ok(tokens) => {
                entry.tokens = Some(stored_tokens(tokens, Some(refresh_token), key.as_deref()));
                false
            }
            // Revoked or spent: forget the tokens, keep the registration.
            Err(e) if e.is_invalid_grant() => {
                entry.tokens = None;
                true
            }
            Err(e) => return Err(e),
        };
        entry.updated_at = now_unix();
        let written = match lock.save(&entry).await {
            Ok(()) => lock.release().await,
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "a refreshed token could not be stored; kept in memory");
            flow.unsaved_over = Some(stored_tokens_now);
            self.adopt(flow, entry);
            self.set_unsaved(true);
            return Err(store_error(e));
        }
        self.adopt(flow, entry);
        flow.unsaved_over = None;
        if revoked {
            return Err(self.needs_login("the stored login was revoked or has expired"));
        }
        Ok(())
    }

    /// Writes the tokens of a refresh whose write failed, unless the store
    /// moved on since (a login elsewhere): then adopts what it holds.
    pub(super) async fn write_unsaved(&self, flow: &mut Flow) -> Result<(), AuthError> {
        let (Some(entry), Some(over)) = (flow.entry.clone(), flow.unsaved_over.clone()) else {
            self.set_unsaved(false);
            return Ok(());
        };
        let (mut lock, stored) = self.locked(&entry.issuer).await?;
        match stored {
            Some(theirs) if theirs.tokens != over && theirs.tokens.is_some() => {
                lock.release().await.map_err(store_error)?;
                self.adopt(flow, theirs);
            }
            _ => {
                lock.save(&entry).await.map_err(store_error)?;
                lock.release().await.map_err(store_error)?;
                tracing::debug!("stored the tokens of an earlier refresh");
                self.set_unsaved(false);
            }
        }
        flow.unsaved_over = None;
        Ok(())
    }
}
