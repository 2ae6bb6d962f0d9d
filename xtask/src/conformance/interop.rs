//! Part 2b: our OAuth client against an authorization server this project
//! did not write (issue #12): `oauth2-mock-server` from npm
//! ([`super::setup::INTEROP_AS`]), started by `conformance/oauth_as.mjs` on
//! 127.0.0.1, protects an `mcp-testkit` HTTP server run in-process that
//! serves no authorization server of its own: its protected resource
//! metadata names the external issuer, and it accepts only the RS256 JWTs
//! that issuer signed for it (checked against the issuer's JWKS: signature,
//! `iss`, `exp`, `nbf`, `aud`; see `mcp_stack_testkit::http::ExternalAuthorizationServer`).
//!
//! Rows, under `interop/oauth/`:
//!
//! * `discovery`: the server's OpenID configuration names the issuer we
//!   started and PKCE S256, and its JWKS has an RSA signing key;
//! * `authorization-code/…`: an [`OAuthClient`] with a pre-registered
//!   client id (the server has no dynamic registration) and a
//!   [`FollowRedirect`] agent (the server approves at once):
//!   `handshake` (the 401, discovery, the code flow with PKCE S256 and
//!   `resource`, the token, the retried `initialize`), `tools/list`,
//!   `call/echo`, `shutdown`;
//! * `client-credentials/…`: the same client with the client credentials
//!   grant (no user, no agent): `handshake`, `call/echo`, `shutdown`;
//! * `resource-server`: the testkit refuses what it must (a forged copy of
//!   a real token, and a real token the server issued for another resource),
//!   so the passes above mean something.
//!
//! Everything is bounded by [`INTEROP_TIMEOUT`]; the server's process group
//! is ended at the end.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hyper::HeaderMap;
use mcp_stack_auth::agent::FollowRedirect;
use mcp_stack_auth::client::{Grant, OAuthClient, OAuthConfig};
use mcp_stack_auth::store::MemoryStore;
use mcp_stack_session::types::Content;
use mcp_stack_session::{Session, SessionConfig};
use mcp_stack_testkit::http::{
    ExternalAuthorizationServer, HttpServer, HttpServerOptions, OAuthOptions,
};
use mcp_stack_transport::http::{HttpOptions, StreamableHttpTransport, WebClient};
use serde_json::{Value, json};

use super::process::{self, Background};
use super::report::Row;
use super::setup::{INTEROP_AS, Tools};

/// Bound on every interop check together.
const INTEROP_TIMEOUT: Duration = Duration::from_secs(60);

/// Bound on a clean close.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

/// The client id we use; the server takes any (it authenticates no client).
const CLIENT_ID: &str = "mcp-client-rs-interop";

/// Where the server redirects; nothing listens ([`FollowRedirect`] reads
/// the redirect's `Location`).
const REDIRECT_URI: &str = "http://127.0.0.1/callback";

/// The scope the MCP endpoint requires.
const SCOPE: &str = "mcp";

const PREFIX: &str = "interop/oauth";

/// Runs the interop rows.
pub(crate) async fn run(tools: &Tools, logs: &Path) -> Vec<Row> {
    let rows = match tokio::time::timeout(INTEROP_TIMEOUT, checks(tools, logs)).await {
        Ok(rows) => rows,
        Err(_) => vec![Row::fail(
            format!("{PREFIX}/all"),
            format!(
                "the interop checks did not finish within {} s",
                INTEROP_TIMEOUT.as_secs()
            ),
        )],
    };
    for row in &rows {
        println!(
            "   {:<50} {}",
            row.id,
            match row.outcome {
                super::report::Outcome::Pass => "pass",
                super::report::Outcome::Fail => "fail",
                super::report::Outcome::Pending => "pending",
            }
        );
    }
    rows
}

fn id(check: &str) -> String {
    format!("{PREFIX}/{check}")
}

fn web_options(name: &str) -> HttpOptions {
    HttpOptions::new()
        .server_name(name)
        .connect_timeout(Duration::from_secs(10))
        .request_timeout(Duration::from_secs(20))
}

async fn checks(tools: &Tools, logs: &Path) -> Vec<Row> {
    let node_modules = match &tools.interop_node_modules {
        Ok(p) => p.clone(),
        Err(e) => return vec![Row::fail(id("setup"), e.clone())],
    };
    let port = match process::free_port() {
        Ok(p) => p,
        Err(e) => return vec![Row::fail(id("setup"), e)],
    };
    let log = logs.join("interop-oauth2-mock-server.log");
    let mut cmd = process::command(&tools.node);
    cmd.arg(&tools.oauth_as_script)
        .arg(&node_modules)
        .arg(port.to_string())
        .env_clear()
        .envs(
            mcp_stack_transport::stdio::ENV_ALLOWLIST
                .iter()
                .filter_map(|k| std::env::var(k).ok().map(|v| (*k, v))),
        );
    let mut server = match Background::spawn(cmd, INTEROP_AS.0, &log) {
        Ok(s) => s,
        Err(e) => return vec![Row::fail(id("setup"), e)],
    };
    if let Err(e) = process::wait_for_port(port, &mut server, Duration::from_secs(30)).await {
        return vec![Row::fail(
            id("setup"),
            format!("{e} (log: {})", log.display()),
        )];
    }
    let issuer = format!("http://127.0.0.1:{port}");
    let web = match WebClient::new(&web_options("oauth2-mock-server")) {
        Ok(w) => w,
        Err(e) => return vec![Row::fail(id("setup"), e.to_string())],
    };

    let mut rows = Vec::new();
    let external = match discovery(&web, &issuer).await {
        Ok((external, detail)) => {
            rows.push(Row::pass(id("discovery"), detail));
            external
        }
        Err(e) => {
            rows.push(Row::fail(id("discovery"), e));
            return rows;
        }
    };
    let options = HttpServerOptions::default().with_oauth(
        OAuthOptions::new()
            .scopes([SCOPE])
            .external_authorization_server(external),
    );
    let mcp = match HttpServer::start(options).await {
        Ok(s) => s,
        Err(e) => {
            rows.push(Row::fail(
                id("setup"),
                format!("cannot start the testkit: {e}"),
            ));
            return rows;
        }
    };
    let url = mcp.url();

    let token = authorization_code(&web, &issuer, &url, &mcp, &mut rows).await;
    client_credentials(&url, &mut rows).await;
    rows.push(Row::from_result(
        id("resource-server"),
        refusals(&web, &issuer, &url, token.as_deref()).await,
    ));

    mcp.shutdown().await;
    if let Err(e) = server.stop().await {
        rows.push(Row::fail(id("teardown"), e));
    }
    rows
}

/// Reads the server's OpenID configuration and JWKS; checks what our
/// client and the testkit rely on.
async fn discovery(
    web: &WebClient,
    issuer: &str,
) -> Result<(ExternalAuthorizationServer, String), String> {
    let config = get_json(web, &format!("{issuer}/.well-known/openid-configuration")).await?;
    let named = config.get("issuer").and_then(Value::as_str);
    if named != Some(issuer) {
        return Err(format!(
            "its issuer is {named:?}, not the {issuer} it was started as"
        ));
    }
    let list = |key: &str| -> Vec<String> {
        config
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let pkce = list("code_challenge_methods_supported");
    if !pkce.iter().any(|m| m == "S256") {
        return Err(format!(
            "code_challenge_methods_supported is {pkce:?}, without S256"
        ));
    }
    let jwks_uri = config
        .get("jwks_uri")
        .and_then(Value::as_str)
        .ok_or("its OpenID configuration has no jwks_uri")?;
    let jwks = get_json(web, jwks_uri).await?;
    let external = ExternalAuthorizationServer::new(issuer, &jwks)?;
    let grants: Vec<String> = list("grant_types_supported")
        .iter()
        .map(|g| {
            g.trim_start_matches("urn:ietf:params:oauth:grant-type:")
                .to_owned()
        })
        .collect();
    Ok((
        external,
        format!(
            "issuer {issuer} (OpenID configuration only); PKCE {}; grants {}; client auth {}; \
             registration endpoint: {}; JWKS: {} key(s)",
            pkce.join(","),
            grants.join(","),
            list("token_endpoint_auth_methods_supported").join(","),
            if config.get("registration_endpoint").is_some() {
                "yes"
            } else {
                "none"
            },
            jwks.get("keys")
                .and_then(Value::as_array)
                .map_or(0, Vec::len),
        ),
    ))
}

async fn get_json(web: &WebClient, url: &str) -> Result<Value, String> {
    let answer = web
        .get(url, HeaderMap::new())
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    if !answer.is_success() {
        return Err(format!("GET {url}: {}", answer.status));
    }
    serde_json::from_slice(&answer.body).map_err(|e| format!("GET {url}: not JSON: {e}"))
}

fn session_config(name: &str) -> SessionConfig {
    SessionConfig::new()
        .server_name(name.to_string())
        .request_timeout(Duration::from_secs(20))
        .handshake_timeout(Duration::from_secs(30))
}

async fn connect(url: &str, name: &str, client: &OAuthClient) -> Result<Session, String> {
    let options = web_options(name).authorizer(Arc::new(client.clone()));
    let transport = StreamableHttpTransport::connect(url, options)
        .await
        .map_err(|e| e.to_string())?;
    Session::connect(transport, session_config(name))
        .await
        .map_err(|e| e.to_string())
}

/// The stored token, described (no secret).
async fn token_summary(client: &OAuthClient) -> String {
    match client.stored().await {
        Ok(entries) => entries
            .iter()
            .find_map(|e| {
                let t = e.tokens.as_ref()?;
                Some(format!(
                    "{} token, scopes [{}], {}",
                    t.token_type,
                    t.scopes.join(" "),
                    if t.refresh_token.is_some() {
                        "with a refresh token"
                    } else {
                        "no refresh token"
                    }
                ))
            })
            .unwrap_or_else(|| "no token stored".into()),
        Err(e) => format!("the store: {e}"),
    }
}

async fn access_token(client: &OAuthClient) -> Option<String> {
    client
        .stored()
        .await
        .ok()?
        .into_iter()
        .find_map(|e| Some(e.tokens?.access_token.expose().to_owned()))
}

/// The authorization code rows; returns the access token for the
/// resource server's checks.
async fn authorization_code(
    web: &WebClient,
    issuer: &str,
    url: &str,
    mcp: &HttpServer,
    rows: &mut Vec<Row>,
) -> Option<String> {
    let group = "authorization-code";
    let row = |check: &str| id(&format!("{group}/{check}"));
    let options = web_options("interop-auth-code");
    let client = WebClient::new(&options)
        .map_err(|e| e.to_string())
        .and_then(|agent_web| {
            let agent = Arc::new(FollowRedirect::new(agent_web, REDIRECT_URI));
            OAuthClient::new(
                OAuthConfig::new(url)
                    .client(CLIENT_ID, None)
                    .client_name("mcp-client-rs-interop"),
                &options,
                Arc::new(MemoryStore::new()),
                Some(agent),
            )
            .map_err(|e| e.to_string())
        });
    let client = match client {
        Ok(c) => c,
        Err(e) => {
            rows.push(Row::fail(row("handshake"), e));
            return None;
        }
    };
    let session = match connect(url, "interop-auth-code", &client).await {
        Ok(s) => s,
        Err(e) => {
            rows.push(Row::fail(
                row("handshake"),
                format!("{e} (server log: interop-oauth2-mock-server.log)"),
            ));
            return None;
        }
    };
    let seen = get_json(web, &format!("{issuer}/xtask/requests"))
        .await
        .unwrap_or(Value::Null);
    let summary = token_summary(&client).await;
    rows.push(Row::from_result(
        row("handshake"),
        authorization_seen(&seen, url).map(|what| {
            let stats = &mcp.stats().oauth;
            format!(
                "protocol {}; {what}; {}; the testkit: {} answered 401, {} accepted",
                session.protocol_version(),
                summary,
                stats.unauthorized.load(Ordering::Relaxed),
                stats.authorized.load(Ordering::Relaxed),
            )
        }),
    ));
    rows.push(Row::from_result(
        row("tools/list"),
        match session.list_tools().await {
            Ok(catalog) if !catalog.is_empty() => Ok(format!("{} tools", catalog.len())),
            Ok(_) => Err("no tools listed".into()),
            Err(e) => Err(e.to_string()),
        },
    ));
    rows.push(Row::from_result(row("call/echo"), echo(&session).await));
    let token = access_token(&client).await;
    rows.push(Row::from_result(row("shutdown"), close(session).await));
    token
}

/// What the authorization and token requests carried, as the server saw
/// them: response type `code`, PKCE S256 and the resource at `/authorize`;
/// a verifier and the resource at `/token`.
fn authorization_seen(seen: &Value, resource: &str) -> Result<String, String> {
    let first = |key: &str| {
        seen.get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.first())
    };
    let authorize = first("authorize").ok_or("the server saw no authorization request")?;
    let token = seen
        .get("token")
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .find(|t| t.get("grant_type") == Some(&json!("authorization_code")))
        })
        .ok_or("the server issued no token for an authorization_code grant")?;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let params = |v: &Value| -> Vec<String> {
        v.get("params")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    if text(authorize, "response_type").as_deref() != Some("code") {
        return Err(format!("the authorization request: {authorize}"));
    }
    if text(authorize, "code_challenge_method").as_deref() != Some("S256") {
        return Err(format!(
            "the authorization request's code_challenge_method is {:?}, not S256",
            text(authorize, "code_challenge_method")
        ));
    }
    for (what, v) in [("authorization", authorize), ("token", token)] {
        if text(v, "resource").as_deref() != Some(resource) {
            return Err(format!(
                "the {what} request's resource is {:?}, not {resource}",
                text(v, "resource")
            ));
        }
    }
    if !params(token).iter().any(|p| p == "code_verifier") {
        return Err("the token request carried no code_verifier".into());
    }
    Ok(format!(
        "/authorize: PKCE S256, resource, scope {}; /token: code_verifier (verified by the server), resource",
        text(authorize, "scope").unwrap_or_else(|| "none".into()),
    ))
}

async fn echo(session: &Session) -> Result<String, String> {
    let text = "hello through oauth2-mock-server";
    let result = session
        .call_tool("echo", json!({"text": text}))
        .await
        .map_err(|e| e.to_string())?;
    if result.is_error == Some(true) {
        return Err(format!("the tool reported an error: {:?}", result.content));
    }
    match result.content.first() {
        Some(Content::Text(t)) if t.text == text => Ok("echoed".into()),
        other => Err(format!("unexpected content: {other:?}")),
    }
}

async fn close(session: Session) -> Result<String, String> {
    match tokio::time::timeout(CLOSE_TIMEOUT, session.close()).await {
        Ok(()) => Ok("session closed".into()),
        Err(_) => Err(format!(
            "close took more than {} s",
            CLOSE_TIMEOUT.as_secs()
        )),
    }
}

async fn client_credentials(url: &str, rows: &mut Vec<Row>) {
    let group = "client-credentials";
    let row = |check: &str| id(&format!("{group}/{check}"));
    let options = web_options("interop-client-credentials");
    let client = match OAuthClient::new(
        OAuthConfig::new(url)
            .client(CLIENT_ID, None)
            .grant(Grant::ClientCredentials),
        &options,
        Arc::new(MemoryStore::new()),
        None,
    ) {
        Ok(c) => c,
        Err(e) => {
            rows.push(Row::fail(row("handshake"), e.to_string()));
            return;
        }
    };
    let session = match connect(url, "interop-client-credentials", &client).await {
        Ok(s) => s,
        Err(e) => {
            rows.push(Row::fail(row("handshake"), e));
            return;
        }
    };
    let summary = token_summary(&client).await;
    rows.push(Row::pass(
        row("handshake"),
        format!(
            "protocol {}; {}; client authentication `none` (the server authenticates no client)",
            session.protocol_version(),
            summary
        ),
    ));
    rows.push(Row::from_result(row("call/echo"), echo(&session).await));
    rows.push(Row::from_result(row("shutdown"), close(session).await));
}

/// The testkit refuses a forged copy of a real token and a real token for
/// another resource; and accepts the real one.
async fn refusals(
    web: &WebClient,
    issuer: &str,
    url: &str,
    token: Option<&str>,
) -> Result<String, String> {
    let token = token.ok_or("no token from the authorization code rows")?;
    let status = |token: String| async move {
        let mut headers = HeaderMap::new();
        let value = format!("Bearer {token}")
            .parse()
            .map_err(|e| format!("{e}"))?;
        headers.insert(hyper::header::AUTHORIZATION, value);
        headers.insert(
            hyper::header::ACCEPT,
            hyper::header::HeaderValue::from_static("application/json, text/event-stream"),
        );
        let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
        web.post(url, headers, "application/json", ping)
            .await
            .map(|a| a.status)
            .map_err(|e| e.to_string())
    };
    // The real token gets past the guard (the session is gone: a 4xx of
    // the MCP layer, not 401).
    let real = status(token.to_owned()).await?;
    if real == 401 {
        return Err("the testkit refuses the token our client was given".into());
    }
    // A forged copy: the claims altered, the signature kept.
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    if let Some(payload) = parts.get_mut(1) {
        let last = payload.pop().unwrap_or('A');
        payload.push(if last == 'A' { 'B' } else { 'A' });
    }
    let forged = status(parts.join(".")).await?;
    // A real token of the server for another resource.
    let form = format!(
        "grant_type=client_credentials&client_id={CLIENT_ID}&scope={SCOPE}&resource={}",
        form_escape(&format!("{url}-other"))
    );
    let answer = web
        .post(
            &format!("{issuer}/token"),
            HeaderMap::new(),
            "application/x-www-form-urlencoded",
            form,
        )
        .await
        .map_err(|e| e.to_string())?;
    let other: Value =
        serde_json::from_slice(&answer.body).map_err(|e| format!("the token answer: {e}"))?;
    let other = other
        .get("access_token")
        .and_then(Value::as_str)
        .ok_or("the server gave no token for another resource")?;
    let elsewhere = status(other.to_owned()).await?;
    if forged != 401 || elsewhere != 401 {
        return Err(format!(
            "the testkit answered {forged} to a forged token and {elsewhere} to one for another resource (401 expected)"
        ));
    }
    Ok(format!(
        "the real token passes ({real} past the guard); a forged copy: 401; the server's token for another resource: 401"
    ))
}

fn form_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
