//! The authorization server's endpoints: `/register` (RFC 7591),
//! `/authorize` (the code flow with PKCE, no user interaction) and `/token`.

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde_json::{Map, Value, json};

use super::super::response::Body;
use super::super::{Shared, lock};
use super::options::WRONG_ISSUER;
use super::store::{AuthMethod, Client, pkce_shaped, s256, same_secret};
use super::wire::{
    basic_credentials, content_type_is, error, field, found, json, parse_form, read_body,
    redirect_uri_allowed, redirect_uri_matches, scope_list, set, with_query,
};
use super::{OAuth, OAuthMisbehaviour};

/// The grant types a client may register.
const GRANT_TYPES: [&str; 3] = ["authorization_code", "refresh_token", "client_credentials"];

/// A refused token request (RFC 6749 5.2).
#[derive(Debug)]
struct TokenError {
    status: StatusCode,
    code: &'static str,
    description: String,
    /// The client tried `Authorization: Basic`: a 401 says `WWW-Authenticate: Basic`.
    basic: bool,
}

fn refused(code: &'static str, description: impl Into<String>) -> TokenError {
    TokenError {
        status: StatusCode::BAD_REQUEST,
        code,
        description: description.into(),
        basic: false,
    }
}

fn invalid_client(description: impl Into<String>, basic: bool) -> TokenError {
    TokenError {
        status: StatusCode::UNAUTHORIZED,
        code: "invalid_client",
        description: description.into(),
        basic,
    }
}

/// A client from a client ID metadata document: its `client_id` must be
/// the URL (HTTPS, with a path) and it must list `redirect_uris`.
fn document_client(url: &str, doc: &Value) -> Result<Client, String> {
    let has_path = url
        .strip_prefix("https://")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(_, path)| !path.is_empty());
    if !has_path {
        return Err("a client ID metadata document URL is HTTPS with a path".into());
    }
    if doc.get("client_id").and_then(Value::as_str) != Some(url) {
        return Err("the client ID metadata document names another client_id".into());
    }
    let redirect_uris = strings(doc.get("redirect_uris"))
        .filter(|u| !u.is_empty())
        .ok_or("the client ID metadata document lists no redirect_uris")?;
    match doc
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
    {
        None | Some("none") => {}
        Some(_) => return Err("only public clients (none) may use a metadata document".into()),
    }
    Ok(Client {
        id: url.to_owned(),
        secret: None,
        auth: AuthMethod::None,
        redirect_uris,
        grant_types: strings(doc.get("grant_types"))
            .unwrap_or_else(|| vec!["authorization_code".to_owned()]),
    })
}

/// An array of strings, if that is what `value` is.
fn strings(value: Option<&Value>) -> Option<Vec<String>> {
    value?
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}

impl OAuth {
    /// A client by id: registered, pre-registered, or from a metadata document.
    fn client(&self, id: &str) -> Result<Client, String> {
        if let Some(client) = lock(&self.store).clients.get(id) {
            return Ok(client.clone());
        }
        match self.options.metadata_documents.get(id) {
            Some(doc) => document_client(id, doc),
            None => Err(format!("unknown client_id {id:?}")),
        }
    }

    /// The `iss` of authorization responses (RFC 9207), as misbehaviours say.
    fn iss(&self) -> Option<&str> {
        if self.options.has(OAuthMisbehaviour::NoIss) {
            None
        } else if self.options.has(OAuthMisbehaviour::WrongIss) {
            Some(WRONG_ISSUER)
        } else {
            Some(&self.issuer)
        }
    }

    /// The scopes of a request (the base ones when it names none), each
    /// one the server knows; `Err` names one it does not.
    fn requested_scopes(&self, scope: Option<&str>) -> Result<Vec<String>, String> {
        let requested = scope_list(scope);
        if requested.is_empty() {
            return Ok(self.options.scopes.clone());
        }
        let known = self.known_scopes();
        match requested.iter().find(|s| !known.contains(s)) {
            Some(unknown) => Err(unknown.clone()),
            None => Ok(requested),
        }
    }

    fn lifetime(&self) -> Duration {
        Duration::from_secs(self.options.access_token_lifetime)
    }

    /// Issues an access token (and maybe a refresh token) and answers with them.
    fn tokens(
        &self,
        client_id: &str,
        scopes: &[String],
        resource: &str,
        refresh: bool,
    ) -> (String, Option<String>) {
        let expired = self.options.has(OAuthMisbehaviour::ExpireImmediately);
        lock(&self.store).issue_tokens(
            client_id,
            scopes,
            resource,
            self.lifetime(),
            expired,
            refresh,
        )
    }

    fn token_answer(
        &self,
        access: &str,
        refresh: Option<&str>,
        scopes: &[String],
    ) -> Response<Body> {
        let mut body = json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.options.access_token_lifetime,
            "scope": scopes.join(" "),
        });
        if let Some(refresh) = refresh {
            set(&mut body, "refresh_token", json!(refresh));
        }
        let mut r = json(StatusCode::OK, &body);
        r.headers_mut()
            .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
        r
    }

    /// Authenticates the client of a token request, by the method it registered.
    fn authenticate(
        &self,
        headers: &HeaderMap,
        form: &[(String, String)],
    ) -> Result<Client, TokenError> {
        let basic = match basic_credentials(headers) {
            None => None,
            Some(Ok(credentials)) => Some(credentials),
            Some(Err(())) => return Err(invalid_client("malformed Basic credentials", true)),
        };
        let tried_basic = basic.is_some();
        let form_id = field(form, "client_id");
        let form_secret = field(form, "client_secret");
        if tried_basic && form_secret.is_some() {
            return Err(refused(
                "invalid_request",
                "more than one client authentication method",
            ));
        }
        let id = match (&basic, form_id) {
            (Some((b, _)), Some(f)) if b != f => {
                return Err(invalid_client(
                    "client_id differs from the Basic credentials",
                    true,
                ));
            }
            (Some((b, _)), _) => b.as_str(),
            (None, Some(f)) => f,
            (None, None) => return Err(invalid_client("no client_id", false)),
        };
        let client = self
            .client(id)
            .map_err(|why| invalid_client(why, tried_basic))?;
        let secret_ok = |given: &str| {
            client
                .secret
                .as_deref()
                .is_some_and(|s| same_secret(s, given))
        };
        match (client.auth, &basic, form_secret) {
            (AuthMethod::None, None, None) => Ok(client),
            (AuthMethod::None, _, _) => Err(invalid_client(
                "a public client (none) sends no secret",
                tried_basic,
            )),
            (AuthMethod::Basic, Some((_, s)), None) if secret_ok(s) => Ok(client),
            (AuthMethod::Basic, _, _) => Err(invalid_client(
                "client_secret_basic authentication failed",
                tried_basic,
            )),
            (AuthMethod::Post, None, Some(s)) if secret_ok(s) => Ok(client),
            (AuthMethod::Post, _, _) => Err(invalid_client(
                "client_secret_post authentication failed",
                tried_basic,
            )),
        }
    }

    /// `grant_type=authorization_code`.
    fn code_grant(
        &self,
        client: &Client,
        form: &[(String, String)],
    ) -> Result<Response<Body>, TokenError> {
        let code_value =
            field(form, "code").ok_or_else(|| refused("invalid_request", "no code"))?;
        let code = lock(&self.store)
            .code(code_value)
            .cloned()
            .ok_or_else(|| refused("invalid_grant", "the code is unknown, used or expired"))?;
        if code.client_id != client.id {
            return Err(refused(
                "invalid_grant",
                "the code was issued to another client",
            ));
        }
        if field(form, "redirect_uri") != Some(code.redirect_uri.as_str()) {
            return Err(refused(
                "invalid_grant",
                "redirect_uri differs from the authorization request's",
            ));
        }
        if let Some(challenge) = &code.challenge {
            let verifier = field(form, "code_verifier")
                .ok_or_else(|| refused("invalid_grant", "no code_verifier (PKCE)"))?;
            if !pkce_shaped(verifier) || s256(verifier) != *challenge {
                return Err(refused(
                    "invalid_grant",
                    "the code_verifier does not match the code_challenge",
                ));
            }
        }
        match field(form, "resource") {
            None => return Err(refused("invalid_target", "resource is required (RFC 8707)")),
            Some(r) if r != code.resource => {
                return Err(refused(
                    "invalid_target",
                    "resource differs from the authorization request's",
                ));
            }
            Some(_) => {}
        }
        lock(&self.store).take_code(code_value);
        let (access, refresh) = self.tokens(
            &client.id,
            &code.scopes,
            &code.resource,
            self.options.refresh_tokens,
        );
        Ok(self.token_answer(&access, refresh.as_deref(), &code.scopes))
    }

    /// `grant_type=refresh_token`, rotating the refresh token if asked to.
    fn refresh_grant(
        &self,
        client: &Client,
        form: &[(String, String)],
    ) -> Result<Response<Body>, TokenError> {
        let token = field(form, "refresh_token")
            .ok_or_else(|| refused("invalid_request", "no refresh_token"))?;
        if self.options.has(OAuthMisbehaviour::RefuseRefresh) {
            return Err(refused("invalid_grant", "refresh refused"));
        }
        let grant = lock(&self.store)
            .refresh_grant(token)
            .cloned()
            .ok_or_else(|| {
                refused(
                    "invalid_grant",
                    "the refresh token is unknown, revoked or rotated out",
                )
            })?;
        if grant.client_id != client.id {
            return Err(refused(
                "invalid_grant",
                "the refresh token was issued to another client",
            ));
        }
        let requested = scope_list(field(form, "scope"));
        let scopes = if requested.is_empty() {
            grant.scopes.clone()
        } else if let Some(s) = requested.iter().find(|s| !grant.scopes.contains(s)) {
            return Err(refused(
                "invalid_scope",
                format!("{s} was not granted to this refresh token"),
            ));
        } else {
            requested
        };
        if field(form, "resource").is_some_and(|r| r != grant.resource) {
            return Err(refused(
                "invalid_target",
                "resource differs from the refresh token's",
            ));
        }
        let (access, _) = self.tokens(&client.id, &scopes, &grant.resource, false);
        let refresh = if self.options.rotate_refresh_tokens {
            let mut store = lock(&self.store);
            store.drop_refresh(token);
            store.issue_refresh(grant)
        } else {
            token.to_owned()
        };
        Ok(self.token_answer(&access, Some(&refresh), &scopes))
    }

    /// `grant_type=client_credentials`: a confidential client on its own behalf.
    fn client_credentials_grant(
        &self,
        client: &Client,
        form: &[(String, String)],
    ) -> Result<Response<Body>, TokenError> {
        if client.secret.is_none() || !client.may("client_credentials") {
            return Err(refused(
                "unauthorized_client",
                "this client may not use client_credentials",
            ));
        }
        let resource = field(form, "resource")
            .ok_or_else(|| refused("invalid_target", "resource is required (RFC 8707)"))?;
        if !self.is_resource(resource) {
            return Err(refused("invalid_target", "not a resource of this server"));
        }
        let scopes = self
            .requested_scopes(field(form, "scope"))
            .map_err(|s| refused("invalid_scope", format!("unknown scope {s}")))?;
        let (access, _) = self.tokens(&client.id, &scopes, resource, false);
        Ok(self.token_answer(&access, None, &scopes))
    }

    /// A whole token request, after its form was read.
    fn token_request(
        &self,
        headers: &HeaderMap,
        form: &[(String, String)],
    ) -> Result<(Response<Body>, &'static str), TokenError> {
        let client = self.authenticate(headers, form)?;
        match field(form, "grant_type") {
            Some("authorization_code") => Ok((self.code_grant(&client, form)?, "code")),
            Some("refresh_token") => Ok((self.refresh_grant(&client, form)?, "refresh")),
            Some("client_credentials") => {
                Ok((self.client_credentials_grant(&client, form)?, "client"))
            }
            Some(other) => Err(refused(
                "unsupported_grant_type",
                format!("unsupported grant_type {other:?}"),
            )),
            None => Err(refused("invalid_request", "no grant_type")),
        }
    }

    /// Registers a client from its metadata (RFC 7591 2), or says why not.
    fn register_client(&self, body: &[u8]) -> Result<Value, (&'static str, String)> {
        let bad = |why: &str| ("invalid_client_metadata", why.to_owned());
        let Ok(Value::Object(mut metadata)) = serde_json::from_slice::<Value>(body) else {
            return Err(bad("the body is not a JSON object"));
        };
        let method_name = match metadata.get("token_endpoint_auth_method") {
            None => "client_secret_basic".to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(bad("token_endpoint_auth_method is not a string")),
        };
        let auth = AuthMethod::from_name(&method_name).ok_or_else(|| {
            bad("token_endpoint_auth_method must be none, client_secret_basic or client_secret_post")
        })?;
        let grant_types = match metadata.get("grant_types") {
            None => vec!["authorization_code".to_owned()],
            v => strings(v).ok_or_else(|| bad("grant_types is not an array of strings"))?,
        };
        if let Some(g) = grant_types
            .iter()
            .find(|g| !GRANT_TYPES.contains(&g.as_str()))
        {
            return Err(bad(&format!("unsupported grant type {g:?}")));
        }
        let response_types = match metadata.get("response_types") {
            None => vec!["code".to_owned()],
            v => strings(v).ok_or_else(|| bad("response_types is not an array of strings"))?,
        };
        if response_types.iter().any(|r| r != "code") {
            return Err(bad("the only response type is code"));
        }
        let code_flow = grant_types.iter().any(|g| g == "authorization_code");
        if code_flow && response_types.is_empty() {
            return Err(bad("authorization_code needs the response type code"));
        }
        if auth == AuthMethod::None && grant_types.iter().any(|g| g == "client_credentials") {
            return Err(bad("a public client (none) cannot use client_credentials"));
        }
        let redirect_uris = match metadata.get("redirect_uris") {
            None => Vec::new(),
            v => strings(v).ok_or((
                "invalid_redirect_uri",
                "redirect_uris is not an array of strings".to_owned(),
            ))?,
        };
        if code_flow && redirect_uris.is_empty() {
            return Err((
                "invalid_redirect_uri",
                "the authorization_code grant needs redirect_uris".to_owned(),
            ));
        }
        if let Some(u) = redirect_uris.iter().find(|u| !redirect_uri_allowed(u)) {
            return Err((
                "invalid_redirect_uri",
                format!("{u:?} is neither HTTPS nor HTTP on a loopback host"),
            ));
        }
        let mut store = lock(&self.store);
        let id = store.random("client_");
        let secret = (auth != AuthMethod::None).then(|| store.random("secret_"));
        let issued_at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let answer: &mut Map<String, Value> = &mut metadata;
        answer.insert("client_id".into(), json!(id));
        answer.insert("client_id_issued_at".into(), json!(issued_at));
        answer.insert("token_endpoint_auth_method".into(), json!(method_name));
        answer.insert("grant_types".into(), json!(grant_types));
        answer.insert("response_types".into(), json!(response_types));
        if let Some(secret) = &secret {
            answer.insert("client_secret".into(), json!(secret));
            answer.insert("client_secret_expires_at".into(), json!(0));
        }
        store.clients.insert(
            id.clone(),
            Client {
                id,
                secret,
                auth,
                redirect_uris,
                grant_types,
            },
        );
        Ok(Value::Object(metadata))
    }
}

impl Shared {
    /// GET `/authorize`: validates the request and, with no user to ask,
    /// redirects at once with a code (or an error, once the redirect URI is
    /// known to be the client's; before that, 400).
    pub(super) fn authorize(&self, oauth: &OAuth, request: &Request<Incoming>) -> Response<Body> {
        let stats = &self.stats.oauth;
        let query = request.uri().query().unwrap_or_default();
        let bad = |why: &str| {
            stats.authorization_errors.fetch_add(1, Ordering::Relaxed);
            error(StatusCode::BAD_REQUEST, "invalid_request", why)
        };
        let form = match parse_form(query.as_bytes()) {
            Ok(form) => form,
            Err(name) => return bad(&format!("{name} is given more than once")),
        };
        lock(&stats.authorize_requests).push(form.clone());
        let Some(client_id) = field(&form, "client_id") else {
            return bad("no client_id");
        };
        let client = match oauth.client(client_id) {
            Ok(client) => client,
            Err(why) => return bad(&why),
        };
        let Some(redirect_uri) = field(&form, "redirect_uri") else {
            return bad("no redirect_uri");
        };
        if !client
            .redirect_uris
            .iter()
            .any(|r| redirect_uri_matches(r, redirect_uri))
        {
            return bad("redirect_uri is not one the client registered");
        }
        let state = field(&form, "state");
        let redirect = |params: &[(&str, &str)]| {
            let mut params = params.to_vec();
            if let Some(state) = state {
                params.push(("state", state));
            }
            if let Some(iss) = oauth.iss() {
                params.push(("iss", iss));
            }
            found(&with_query(redirect_uri, &params))
        };
        let refuse = |code: &str, why: &str| {
            stats.authorization_errors.fetch_add(1, Ordering::Relaxed);
            redirect(&[("error", code), ("error_description", why)])
        };
        match field(&form, "response_type") {
            None => return refuse("invalid_request", "no response_type"),
            Some("code") => {}
            Some(_) => {
                return refuse(
                    "unsupported_response_type",
                    "the only response_type is code",
                );
            }
        }
        let challenge = if oauth.options.has(OAuthMisbehaviour::NoPkce) {
            None
        } else {
            let Some(challenge) = field(&form, "code_challenge") else {
                return refuse("invalid_request", "code_challenge is required (PKCE)");
            };
            if field(&form, "code_challenge_method") != Some("S256") {
                return refuse("invalid_request", "code_challenge_method must be S256");
            }
            if !pkce_shaped(challenge) {
                return refuse(
                    "invalid_request",
                    "code_challenge is not 43 to 128 characters",
                );
            }
            Some(challenge.to_owned())
        };
        let Some(resource) = field(&form, "resource") else {
            return refuse("invalid_target", "resource is required (RFC 8707)");
        };
        if !oauth.is_resource(resource) {
            return refuse(
                "invalid_target",
                "resource is not this server's MCP endpoint",
            );
        }
        let scopes = match oauth.requested_scopes(field(&form, "scope")) {
            Ok(scopes) => scopes,
            Err(unknown) => return refuse("invalid_scope", &format!("unknown scope {unknown}")),
        };
        if !client.may("authorization_code") {
            return refuse(
                "unauthorized_client",
                "this client did not register the authorization_code grant",
            );
        }
        let code =
            lock(&oauth.store).issue_code(&client.id, redirect_uri, challenge, resource, scopes);
        stats.authorizations.fetch_add(1, Ordering::Relaxed);
        redirect(&[("code", &code)])
    }

    /// POST `/token`.
    pub(super) async fn token(&self, oauth: &OAuth, request: Request<Incoming>) -> Response<Body> {
        let stats = &self.stats.oauth;
        let result = match read_body(request).await {
            None => Err(refused("invalid_request", "the body could not be read")),
            Some((headers, _))
                if !content_type_is(&headers, "application/x-www-form-urlencoded") =>
            {
                Err(refused(
                    "invalid_request",
                    "the body must be application/x-www-form-urlencoded",
                ))
            }
            Some((headers, body)) => match parse_form(&body) {
                Err(name) => Err(refused(
                    "invalid_request",
                    format!("{name} is given more than once"),
                )),
                Ok(form) => {
                    let recorded = form
                        .iter()
                        .map(|(k, v)| {
                            let v = if k == "client_secret" { "***" } else { v };
                            (k.clone(), v.to_owned())
                        })
                        .collect();
                    lock(&stats.token_requests).push(recorded);
                    oauth.token_request(&headers, &form)
                }
            },
        };
        match result {
            Ok((answer, grant)) => {
                let counter = match grant {
                    "code" => &stats.code_grants,
                    "refresh" => &stats.refresh_grants,
                    _ => &stats.client_credentials_grants,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                answer
            }
            Err(e) => {
                lock(&stats.token_errors).push(e.code.to_owned());
                let mut r = error(e.status, e.code, &e.description);
                if e.status == StatusCode::UNAUTHORIZED && e.basic {
                    r.headers_mut().insert(
                        header::WWW_AUTHENTICATE,
                        HeaderValue::from_static("Basic realm=\"mcp-testkit\""),
                    );
                }
                r
            }
        }
    }

    /// POST `/register` (RFC 7591).
    pub(super) async fn register(
        &self,
        oauth: &OAuth,
        request: Request<Incoming>,
    ) -> Response<Body> {
        let stats = &self.stats.oauth;
        let result = match read_body(request).await {
            None => Err((
                "invalid_client_metadata",
                "the body could not be read".to_owned(),
            )),
            Some((headers, _)) if !content_type_is(&headers, "application/json") => Err((
                "invalid_client_metadata",
                "the body must be application/json".to_owned(),
            )),
            Some((_, body)) => oauth.register_client(&body),
        };
        match result {
            Ok(client) => {
                stats.registrations.fetch_add(1, Ordering::Relaxed);
                json(StatusCode::CREATED, &client)
            }
            Err((code, why)) => {
                stats.registration_errors.fetch_add(1, Ordering::Relaxed);
                error(StatusCode::BAD_REQUEST, code, &why)
            }
        }
    }
}
