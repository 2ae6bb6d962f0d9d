//! The OAuth-protected HTTP mode and its authorization server, driven by a
//! raw hyper client through the whole flow a client follows.

#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{HeaderMap, Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use mcp_stack_testkit::http::{
    AuthServerMetadata, HttpMode, HttpServer, HttpServerOptions, OAuthMisbehaviour, OAuthOptions,
    ResourceMetadataAt,
};
use serde_json::{Value, json};
use tokio::net::TcpStream;

const LIMIT: Duration = Duration::from_secs(10);
/// RFC 7636 appendix B's verifier and S256 challenge.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
const OTHER_VERIFIER: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const REDIRECT: &str = "http://127.0.0.1/callback";
/// The redirect URI a client's loopback listener uses: any port matches.
const REDIRECT_PORT: &str = "http://127.0.0.1:49152/callback";

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&self.body)))
    }

    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .unwrap_or_else(|| panic!("no {name} header"))
            .to_str()
            .unwrap()
    }

    /// The query parameters of the `Location` of a redirect.
    fn redirect_params(&self) -> Vec<(String, String)> {
        assert_eq!(self.status, StatusCode::FOUND, "{:?}", self.body);
        let location = self.header("location");
        let (base, query) = location.split_once('?').unwrap();
        assert_eq!(base, REDIRECT_PORT);
        form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect()
    }
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Sends one request on a connection of its own and reads the whole answer.
async fn send(
    addr: SocketAddr,
    method: Method,
    target: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Reply {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    let conn = tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut builder = Request::builder()
        .method(method)
        .uri(target)
        .header("host", addr.to_string());
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let request = builder.body(Full::new(body.into())).unwrap();
    let response = tokio::time::timeout(LIMIT, sender.send_request(request))
        .await
        .expect("no answer in time")
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = tokio::time::timeout(LIMIT, response.into_body().collect())
        .await
        .expect("the body did not end in time")
        .unwrap()
        .to_bytes();
    conn.abort();
    Reply {
        status,
        headers,
        body,
    }
}

async fn get(addr: SocketAddr, target: &str) -> Reply {
    send(addr, Method::GET, target, &[], Bytes::new()).await
}

fn form(pairs: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

async fn token_request(addr: SocketAddr, pairs: &[(&str, &str)], extra: &[(&str, &str)]) -> Reply {
    let mut headers = vec![("content-type", "application/x-www-form-urlencoded")];
    headers.extend_from_slice(extra);
    send(addr, Method::POST, "/token", &headers, form(pairs)).await
}

/// A JSON-RPC message POSTed to `/mcp` (a stateless, JSON-answering server).
async fn mcp(addr: SocketAddr, token: Option<&str>, body: &Value) -> Reply {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
    ];
    if let Some(b) = &bearer {
        headers.push(("authorization", b));
    }
    send(addr, Method::POST, "/mcp", &headers, body.to_string()).await
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
}

fn call(tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

async fn start(oauth: OAuthOptions) -> HttpServer {
    let options = HttpServerOptions {
        stateless: true,
        json_response: true,
        ..HttpServerOptions::default()
    }
    .with_oauth(oauth);
    HttpServer::start(options).await.unwrap()
}

/// Registers a public client with `/register`.
async fn register_public(addr: SocketAddr) -> String {
    let metadata = json!({
        "client_name": "test", "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": "none", "application_type": "native",
    });
    let r = send(
        addr,
        Method::POST,
        "/register",
        &[("content-type", "application/json")],
        metadata.to_string(),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
    let client = r.json();
    assert!(client.get("client_secret").is_none());
    assert_eq!(client["client_name"], "test");
    assert_eq!(client["token_endpoint_auth_method"], "none");
    client["client_id"].as_str().unwrap().to_owned()
}

/// An authorization request's query.
fn authorize_query(client_id: &str, resource: &str, scope: &str) -> String {
    form(&[
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT_PORT),
        ("code_challenge", CHALLENGE),
        ("code_challenge_method", "S256"),
        ("resource", resource),
        ("scope", scope),
        ("state", "st-1"),
    ])
}

/// Authorizes and exchanges the code: (access token, refresh token).
async fn authorize_and_exchange(
    s: &HttpServer,
    client_id: &str,
    scope: &str,
) -> (String, Option<String>) {
    let url = s.url();
    let r = get(
        s.addr(),
        &format!("/authorize?{}", authorize_query(client_id, &url, scope)),
    )
    .await;
    let params = r.redirect_params();
    let code = param(&params, "code").unwrap();
    let r = token_request(
        s.addr(),
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT_PORT),
            ("code_verifier", VERIFIER),
            ("client_id", client_id),
            ("resource", &url),
        ],
        &[],
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let t = r.json();
    (
        t["access_token"].as_str().unwrap().to_owned(),
        t["refresh_token"].as_str().map(str::to_owned),
    )
}

#[tokio::test]
async fn the_whole_flow_from_401_to_refresh_with_rotation() {
    let s = start(
        OAuthOptions::new()
            .scopes(["mcp"])
            .tool_scope("add", "mcp:write")
            .rotate_refresh_tokens(true),
    )
    .await;
    let addr = s.addr();
    let url = s.url();
    let issuer = format!("http://{addr}");
    assert_eq!(s.issuer().as_deref(), Some(issuer.as_str()));
    let prm_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(s.resource_metadata_url().as_deref(), Some(prm_url.as_str()));

    // 1. No token: 401 with the challenge.
    let r = mcp(addr, None, &initialize()).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        r.header("www-authenticate"),
        format!(r#"Bearer resource_metadata="{prm_url}", scope="mcp""#)
    );
    assert_eq!(s.stats().oauth.unauthorized.load(Ordering::SeqCst), 1);

    // 2. Protected resource metadata.
    let prm = get(addr, "/.well-known/oauth-protected-resource/mcp").await;
    assert_eq!(prm.status, StatusCode::OK);
    let prm = prm.json();
    assert_eq!(prm["resource"], url.as_str());
    assert_eq!(prm["authorization_servers"], json!([issuer]));
    assert_eq!(prm["scopes_supported"], json!(["mcp"]));
    // Only the path form is served by default.
    let root = get(addr, "/.well-known/oauth-protected-resource").await;
    assert_eq!(root.status, StatusCode::NOT_FOUND);

    // 3. Authorization server metadata (RFC 8414).
    let r = get(addr, "/.well-known/oauth-authorization-server").await;
    assert_eq!(r.status, StatusCode::OK);
    let meta = r.json();
    assert_eq!(meta["issuer"], issuer.as_str());
    assert_eq!(
        meta["authorization_endpoint"],
        format!("{issuer}/authorize")
    );
    assert_eq!(meta["token_endpoint"], format!("{issuer}/token"));
    assert_eq!(meta["registration_endpoint"], format!("{issuer}/register"));
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(meta["response_types_supported"], json!(["code"]));
    assert_eq!(meta["scopes_supported"], json!(["mcp", "mcp:write"]));
    assert_eq!(meta["authorization_response_iss_parameter_supported"], true);
    assert_eq!(meta["client_id_metadata_document_supported"], false);
    assert_eq!(
        meta["token_endpoint_auth_methods_supported"],
        json!(["client_secret_basic", "client_secret_post", "none"])
    );
    let openid = get(addr, "/.well-known/openid-configuration").await;
    assert_eq!(openid.status, StatusCode::NOT_FOUND);

    // 4. Dynamic registration.
    let client_id = register_public(addr).await;

    // 5. Authorization: an immediate redirect with code, state and iss.
    let r = get(
        addr,
        &format!("/authorize?{}", authorize_query(&client_id, &url, "mcp")),
    )
    .await;
    let params = r.redirect_params();
    assert_eq!(param(&params, "state"), Some("st-1"));
    assert_eq!(param(&params, "iss"), Some(issuer.as_str()));
    let code = param(&params, "code").unwrap().to_owned();
    let recorded = s.stats().oauth.authorize_requests.lock().unwrap()[0].clone();
    assert!(recorded.contains(&("resource".to_owned(), url.clone())));

    // 6. The token request: a wrong verifier is refused, the right one works, once.
    let exchange = |verifier: &'static str| {
        let code = code.clone();
        let client_id = client_id.clone();
        let url = url.clone();
        async move {
            token_request(
                addr,
                &[
                    ("grant_type", "authorization_code"),
                    ("code", &code),
                    ("redirect_uri", REDIRECT_PORT),
                    ("code_verifier", verifier),
                    ("client_id", &client_id),
                    ("resource", &url),
                ],
                &[],
            )
            .await
        }
    };
    let r = exchange(OTHER_VERIFIER).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.json()["error"], "invalid_grant");
    let r = exchange(VERIFIER).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.header("cache-control"), "no-store");
    let tokens = r.json();
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 3600);
    assert_eq!(tokens["scope"], "mcp");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let r = exchange(VERIFIER).await;
    assert_eq!(r.json()["error"], "invalid_grant", "a code is used once");

    // 7. MCP with the token.
    let r = mcp(addr, Some(&access), &initialize()).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert!(r.json()["result"]["protocolVersion"].is_string());
    let r = mcp(addr, Some(&access), &call("echo", json!({"text": "hi"}))).await;
    assert_eq!(r.json()["result"]["content"][0]["text"], "hi");
    let r = mcp(addr, Some("not-a-token"), &initialize()).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(
        r.header("www-authenticate")
            .starts_with(r#"Bearer error="invalid_token""#)
    );

    // 8. A tool with a scope of its own: 403 naming every scope it needs.
    let r = mcp(addr, Some(&access), &call("add", json!({"a": 1, "b": 2}))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let challenge = r.header("www-authenticate");
    assert!(
        challenge.contains(r#"error="insufficient_scope""#),
        "{challenge}"
    );
    assert!(
        challenge.contains(r#"scope="mcp mcp:write""#),
        "{challenge}"
    );
    assert!(challenge.contains(&format!(r#"resource_metadata="{prm_url}""#)));
    assert_eq!(s.stats().oauth.forbidden.load(Ordering::SeqCst), 1);

    // 9. Refresh with rotation: a new refresh token; the old one is refused.
    let r = token_request(
        addr,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client_id),
            ("resource", &url),
        ],
        &[],
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let rotated = r.json();
    let new_refresh = rotated["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(new_refresh, refresh);
    let new_access = rotated["access_token"].as_str().unwrap();
    assert_eq!(
        mcp(addr, Some(new_access), &initialize()).await.status,
        StatusCode::OK
    );
    let again = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh.as_str()),
        ("client_id", client_id.as_str()),
    ];
    let r = token_request(addr, &again, &[]).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.json()["error"], "invalid_grant");

    // 10. Step-up: a token with both scopes may call `add`.
    let (stepped, _) = authorize_and_exchange(&s, &client_id, "mcp mcp:write").await;
    let r = mcp(addr, Some(&stepped), &call("add", json!({"a": 1, "b": 2}))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["result"]["structuredContent"]["sum"], 3);

    let o = &s.stats().oauth;
    assert_eq!(o.registrations.load(Ordering::SeqCst), 1);
    assert_eq!(o.authorizations.load(Ordering::SeqCst), 2);
    assert_eq!(o.code_grants.load(Ordering::SeqCst), 2);
    assert_eq!(o.refresh_grants.load(Ordering::SeqCst), 1);
    assert_eq!(o.token_requests_for("authorization_code"), 4);
    assert_eq!(o.token_requests_for("refresh_token"), 2);
    assert_eq!(
        *o.token_errors.lock().unwrap(),
        ["invalid_grant", "invalid_grant", "invalid_grant"]
    );
    assert_eq!(o.fetches("/.well-known/oauth-protected-resource/mcp"), 1);
    assert_eq!(o.fetches("/.well-known/oauth-authorization-server"), 1);
    assert_eq!(o.resource_metadata_fetches.load(Ordering::SeqCst), 1);
    assert_eq!(o.server_metadata_fetches.load(Ordering::SeqCst), 1);
    assert_eq!(o.unauthorized.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn expiry_and_revocation_need_no_waiting() {
    let s = start(OAuthOptions::new()).await;
    let addr = s.addr();
    let client_id = register_public(addr).await;
    let (access, refresh) = authorize_and_exchange(&s, &client_id, "mcp").await;
    assert_eq!(
        mcp(addr, Some(&access), &initialize()).await.status,
        StatusCode::OK
    );

    // The server's clock moves past the lifetime: 401 invalid_token.
    s.advance_clock(Duration::from_secs(3601));
    let r = mcp(addr, Some(&access), &initialize()).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.header("www-authenticate").contains("expired"));

    // Without rotation the same refresh token comes back, and works again.
    let refresh = refresh.unwrap();
    let pairs = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh.as_str()),
        ("client_id", client_id.as_str()),
    ];
    let r = token_request(addr, &pairs, &[]).await;
    assert_eq!(r.json()["refresh_token"], refresh.as_str());
    let fresh = r.json()["access_token"].as_str().unwrap().to_owned();
    assert_eq!(
        mcp(addr, Some(&fresh), &initialize()).await.status,
        StatusCode::OK
    );
    assert_eq!(
        token_request(addr, &pairs, &[]).await.status,
        StatusCode::OK
    );

    // Revoked: the access token is refused, and so is the refresh.
    s.revoke_tokens();
    let r = mcp(addr, Some(&fresh), &initialize()).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let r = token_request(addr, &pairs, &[]).await;
    assert_eq!(r.json()["error"], "invalid_grant");

    // A lifetime of 0: expired when issued, and says so.
    let s = start(OAuthOptions::new().access_token_lifetime(0)).await;
    let client_id = register_public(s.addr()).await;
    let (access, _) = authorize_and_exchange(&s, &client_id, "mcp").await;
    let r = mcp(s.addr(), Some(&access), &initialize()).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);

    // A minted token works at once.
    let s = start(OAuthOptions::new()).await;
    let token = s.mint_token(["mcp"]).unwrap();
    assert_eq!(
        mcp(s.addr(), Some(&token), &initialize()).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn confidential_clients_authenticate_as_they_registered() {
    let s = start(OAuthOptions::new()).await;
    let addr = s.addr();
    let url = s.url();
    let register = |method: &'static str, grants: Value| async move {
        let body = json!({"redirect_uris": [REDIRECT], "grant_types": grants,
                          "token_endpoint_auth_method": method});
        let headers = [("content-type", "application/json")];
        send(addr, Method::POST, "/register", &headers, body.to_string())
            .await
            .json()
    };
    // client_secret_basic (the RFC 7591 default when none is named) and
    // client_credentials.
    let basic = register("client_secret_basic", json!(["client_credentials"])).await;
    let id = basic["client_id"].as_str().unwrap();
    let secret = basic["client_secret"].as_str().unwrap();
    assert_eq!(basic["client_secret_expires_at"], 0);
    let auth = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{id}:{secret}")
        )
    );
    let grant = [
        ("grant_type", "client_credentials"),
        ("resource", url.as_str()),
    ];
    let r = token_request(addr, &grant, &[("authorization", &auth)]).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let t = r.json();
    assert!(t.get("refresh_token").is_none());
    let access = t["access_token"].as_str().unwrap();
    assert_eq!(
        mcp(addr, Some(access), &initialize()).await.status,
        StatusCode::OK
    );
    // The wrong secret, or the secret in the form instead: invalid_client.
    let wrong = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("{id}:nope")
        )
    );
    let r = token_request(addr, &grant, &[("authorization", &wrong)]).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(r.json()["error"], "invalid_client");
    assert!(r.header("www-authenticate").starts_with("Basic"));
    let mut in_form = grant.to_vec();
    in_form.extend([("client_id", id), ("client_secret", secret)]);
    let r = token_request(addr, &in_form, &[]).await;
    assert_eq!(r.json()["error"], "invalid_client");

    // client_secret_post.
    let post = register("client_secret_post", json!(["client_credentials"])).await;
    let mut in_form = grant.to_vec();
    in_form.extend([
        ("client_id", post["client_id"].as_str().unwrap()),
        ("client_secret", post["client_secret"].as_str().unwrap()),
    ]);
    assert_eq!(
        token_request(addr, &in_form, &[]).await.status,
        StatusCode::OK
    );
    let recorded = s.stats().oauth.token_requests.lock().unwrap().clone();
    assert!(
        recorded
            .last()
            .unwrap()
            .contains(&("client_secret".to_owned(), "***".to_owned()))
    );

    // A public client may not use client_credentials, nor register for it.
    let public = register("none", json!(["client_credentials"])).await;
    assert_eq!(public["error"], "invalid_client_metadata");
    // Redirect URIs must be HTTPS or loopback.
    let body =
        json!({"redirect_uris": ["http://evil.example/cb"], "token_endpoint_auth_method": "none"});
    let r = send(
        addr,
        Method::POST,
        "/register",
        &[("content-type", "application/json")],
        body.to_string(),
    )
    .await;
    assert_eq!(r.json()["error"], "invalid_redirect_uri");
    assert_eq!(
        s.stats().oauth.registration_errors.load(Ordering::SeqCst),
        2
    );
}

#[tokio::test]
async fn authorization_errors_redirect_once_the_redirect_uri_is_known() {
    let s = start(OAuthOptions::new()).await;
    let addr = s.addr();
    let url = s.url();
    let client_id = register_public(addr).await;
    let ask = |pairs: Vec<(&'static str, String)>| async move {
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        get(addr, &format!("/authorize?{}", form(&pairs))).await
    };
    let base = |skip: &str| {
        [
            ("response_type", "code".to_owned()),
            ("client_id", client_id.clone()),
            ("redirect_uri", REDIRECT_PORT.to_owned()),
            ("code_challenge", CHALLENGE.to_owned()),
            ("code_challenge_method", "S256".to_owned()),
            ("resource", url.clone()),
            ("state", "s".to_owned()),
        ]
        .into_iter()
        .filter(|(k, _)| *k != skip)
        .collect::<Vec<_>>()
    };
    // Unknown client or unregistered redirect URI: 400, no redirect.
    let mut unknown = base("client_id");
    unknown.push(("client_id", "nobody".to_owned()));
    assert_eq!(ask(unknown).await.status, StatusCode::BAD_REQUEST);
    let mut elsewhere = base("redirect_uri");
    elsewhere.push(("redirect_uri", "http://127.0.0.1/other".to_owned()));
    assert_eq!(ask(elsewhere).await.status, StatusCode::BAD_REQUEST);
    // The rest redirect with an error, the state and iss.
    let error_of = |r: Reply| {
        let p = r.redirect_params();
        assert_eq!(param(&p, "state"), Some("s"));
        assert!(param(&p, "iss").is_some());
        assert!(param(&p, "code").is_none());
        param(&p, "error").unwrap().to_owned()
    };
    assert_eq!(
        error_of(ask(base("code_challenge")).await),
        "invalid_request"
    );
    let mut plain = base("code_challenge_method");
    plain.push(("code_challenge_method", "plain".to_owned()));
    assert_eq!(error_of(ask(plain).await), "invalid_request");
    assert_eq!(error_of(ask(base("resource")).await), "invalid_target");
    let mut wrong = base("resource");
    wrong.push(("resource", format!("http://{addr}/other")));
    assert_eq!(error_of(ask(wrong).await), "invalid_target");
    let mut token = base("response_type");
    token.push(("response_type", "token".to_owned()));
    assert_eq!(error_of(ask(token).await), "unsupported_response_type");
    let mut scope = base("");
    scope.push(("scope", "admin".to_owned()));
    assert_eq!(error_of(ask(scope).await), "invalid_scope");
    assert_eq!(
        s.stats().oauth.authorization_errors.load(Ordering::SeqCst),
        8
    );
    assert_eq!(s.stats().oauth.authorizations.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn metadata_variants() {
    // OpenID discovery only, with an issuer path: both OpenID forms, no RFC 8414.
    let s = start(
        OAuthOptions::new()
            .metadata(AuthServerMetadata::OpenId)
            .issuer_path("tenant")
            .resource_metadata_at(ResourceMetadataAt::Root)
            .challenge_scope(false)
            .advertise_scopes(false),
    )
    .await;
    let addr = s.addr();
    let issuer = format!("http://{addr}/tenant");
    let r = mcp(addr, None, &initialize()).await;
    assert_eq!(
        r.header("www-authenticate"),
        format!(r#"Bearer resource_metadata="http://{addr}/.well-known/oauth-protected-resource""#)
    );
    let prm = get(addr, "/.well-known/oauth-protected-resource")
        .await
        .json();
    assert_eq!(prm["authorization_servers"], json!([issuer]));
    assert!(prm.get("scopes_supported").is_none());
    assert_eq!(
        get(addr, "/.well-known/oauth-protected-resource/mcp")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(addr, "/.well-known/oauth-authorization-server/tenant")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    for path in [
        "/.well-known/openid-configuration/tenant",
        "/tenant/.well-known/openid-configuration",
    ] {
        let meta = get(addr, path).await.json();
        assert_eq!(meta["issuer"], issuer.as_str());
        assert_eq!(meta["token_endpoint"], format!("{issuer}/token"));
        assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    }
    assert_eq!(
        *s.stats().oauth.well_known.lock().unwrap(),
        [
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-authorization-server/tenant",
            "/.well-known/openid-configuration/tenant",
            "/tenant/.well-known/openid-configuration",
        ]
    );
    // The endpoints live under the issuer.
    let r = send(
        addr,
        Method::POST,
        "/tenant/register",
        &[("content-type", "application/json")],
        json!({"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}).to_string(),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED);

    // No metadata at all (2025-03-26): the default endpoints at the root.
    let s = start(OAuthOptions::new().metadata(AuthServerMetadata::None)).await;
    assert_eq!(
        get(s.addr(), "/.well-known/oauth-authorization-server")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let client_id = register_public(s.addr()).await;
    let (access, _) = authorize_and_exchange(&s, &client_id, "mcp").await;
    assert_eq!(
        mcp(s.addr(), Some(&access), &initialize()).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn misbehaviours() {
    let s = start(
        OAuthOptions::new()
            .misbehave(OAuthMisbehaviour::WrongIssuer)
            .misbehave(OAuthMisbehaviour::NoPkce)
            .misbehave(OAuthMisbehaviour::WrongResource)
            .misbehave(OAuthMisbehaviour::WrongIss),
    )
    .await;
    let addr = s.addr();
    let meta = get(addr, "/.well-known/oauth-authorization-server")
        .await
        .json();
    assert_eq!(meta["issuer"], "http://wrong-issuer.invalid");
    assert!(meta.get("code_challenge_methods_supported").is_none());
    let prm = get(addr, "/.well-known/oauth-protected-resource/mcp")
        .await
        .json();
    assert_ne!(prm["resource"], s.url().as_str());
    let client_id = register_public(addr).await;
    // No PKCE: the server ignores it; the redirect names the wrong issuer.
    let query = form(&[
        ("response_type", "code"),
        ("client_id", &client_id),
        ("redirect_uri", REDIRECT_PORT),
        ("resource", &s.url()),
    ]);
    let p = get(addr, &format!("/authorize?{query}"))
        .await
        .redirect_params();
    assert_eq!(param(&p, "iss"), Some("http://wrong-issuer.invalid"));
    assert!(param(&p, "code").is_some());

    let s = start(
        OAuthOptions::new()
            .misbehave(OAuthMisbehaviour::NoIss)
            .misbehave(OAuthMisbehaviour::ExpireImmediately)
            .misbehave(OAuthMisbehaviour::RefuseRefresh),
    )
    .await;
    let client_id = register_public(s.addr()).await;
    let r = get(
        s.addr(),
        &format!(
            "/authorize?{}",
            authorize_query(&client_id, &s.url(), "mcp")
        ),
    )
    .await;
    assert!(param(&r.redirect_params(), "iss").is_none());
    let (access, refresh) = authorize_and_exchange(&s, &client_id, "mcp").await;
    let r = mcp(s.addr(), Some(&access), &initialize()).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "expired from the start");
    let pairs = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh.as_deref().unwrap()),
        ("client_id", client_id.as_str()),
    ];
    assert_eq!(
        token_request(s.addr(), &pairs, &[]).await.json()["error"],
        "invalid_grant"
    );
}

#[tokio::test]
async fn legacy_sse_and_every_method_need_the_token() {
    let options = HttpServerOptions {
        mode: HttpMode::Both,
        ..HttpServerOptions::default()
    }
    .with_oauth(OAuthOptions::new());
    let s = HttpServer::start(options).await.unwrap();
    let addr = s.addr();
    for (method, path) in [
        (Method::GET, "/mcp"),
        (Method::DELETE, "/mcp"),
        (Method::GET, "/sse"),
        (Method::POST, "/messages?sessionId=x"),
    ] {
        let r = send(addr, method.clone(), path, &[], Bytes::new()).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{method} {path}");
        let expected = if path == "/mcp" { "/mcp" } else { "/sse" };
        assert!(
            r.header("www-authenticate")
                .contains(&format!("oauth-protected-resource{expected}\"")),
            "{method} {path}"
        );
    }
    // A token for /mcp is not one for /sse.
    let token = s.mint_token(["mcp"]).unwrap();
    let bearer = format!("Bearer {token}");
    let r = send(
        addr,
        Method::DELETE,
        "/mcp",
        &[("authorization", &bearer)],
        Bytes::new(),
    )
    .await;
    assert_ne!(r.status, StatusCode::UNAUTHORIZED);
    let r = send(
        addr,
        Method::POST,
        "/messages?sessionId=x",
        &[("authorization", &bearer)],
        Bytes::new(),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let prm = get(addr, "/.well-known/oauth-protected-resource/sse")
        .await
        .json();
    assert_eq!(prm["resource"], format!("http://{addr}/sse"));
}

#[tokio::test]
async fn the_binary_serves_oauth() {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-testkit"))
        .args([
            "--http",
            "127.0.0.1:0",
            "--oauth-scope",
            "a b",
            "--oauth-rotate-refresh",
            "--oauth-token-lifetime=60",
            "--oauth-tool-scope",
            "add=w",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let line = tokio::time::timeout(LIMIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let url = line.strip_prefix("mcp-testkit: listening on ").unwrap();
    let addr: SocketAddr = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/mcp"))
        .unwrap()
        .parse()
        .unwrap();
    let r = mcp(addr, None, &initialize()).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.header("www-authenticate").ends_with(r#"scope="a b""#));
    let meta = get(addr, "/.well-known/oauth-authorization-server")
        .await
        .json();
    assert_eq!(meta["scopes_supported"], json!(["a", "b", "w"]));
    child.kill().await.unwrap();

    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-testkit"))
        .args(["--http", "127.0.0.1:0", "--oauth-misbehave", "explode"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown OAuth misbehaviour"));
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-testkit"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for flag in [
        "--oauth ",
        "--oauth-scope",
        "--oauth-token-lifetime",
        "--oauth-rotate-refresh",
    ] {
        assert!(help.contains(flag), "{flag} is not in --help");
    }
}

/// A resource server for an authorization server the testkit does not run:
/// tokens signed with a test key, checked against its JWKS.
#[tokio::test]
async fn an_external_authorization_server() {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use mcp_stack_testkit::http::ExternalAuthorizationServer;
    use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair, RsaPublicKeyComponents};

    const ISSUER: &str = "http://127.0.0.1:9/realm";
    let der = STANDARD
        .decode(include_str!("../src/http/oauth/external_test_key.b64").trim())
        .unwrap();
    let key = RsaKeyPair::from_pkcs8(&der).unwrap();
    let public: RsaPublicKeyComponents<Vec<u8>> = key.public().into();
    let jwks = json!({"keys": [{"kty": "RSA", "kid": "k", "use": "sig",
        "n": URL_SAFE_NO_PAD.encode(&public.n), "e": URL_SAFE_NO_PAD.encode(&public.e)}]});
    let sign = |claims: Value| {
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "kid": "k"}).to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let mut signature = vec![0; key.public().modulus_len()];
        key.sign(
            &RSA_PKCS1_SHA256,
            &ring::rand::SystemRandom::new(),
            input.as_bytes(),
            &mut signature,
        )
        .unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
    };
    let external = ExternalAuthorizationServer::new(ISSUER, &jwks).unwrap();
    let s = start(OAuthOptions::new().external_authorization_server(external)).await;
    let addr = s.addr();
    assert_eq!(s.issuer().as_deref(), Some(ISSUER));

    // The metadata names the external issuer; no authorization server here.
    let prm = get(addr, "/.well-known/oauth-protected-resource/mcp").await;
    assert_eq!(prm.json()["authorization_servers"], json!([ISSUER]));
    assert_eq!(prm.json()["resource"], s.url());
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        assert_eq!(
            get(addr, path).await.status,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
    let r = token_request(addr, &[("grant_type", "client_credentials")], &[]).await;
    assert_ne!(r.status, StatusCode::OK);

    // No token: the challenge points at the metadata.
    let r = mcp(addr, None, &initialize()).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.header("www-authenticate").contains("resource_metadata="));

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = |aud: &str, scope: &str| json!({"iss": ISSUER, "aud": aud, "scope": scope, "exp": now + 600, "iat": now});
    let good = sign(claims(&s.url(), "mcp"));
    assert_eq!(
        mcp(addr, Some(&good), &initialize()).await.status,
        StatusCode::OK
    );
    // Without the scope: 403; for another resource, or unsigned: 401.
    let r = mcp(addr, Some(&sign(claims(&s.url(), "other"))), &initialize()).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = mcp(
        addr,
        Some(&sign(claims("http://127.0.0.1:1/mcp", "mcp"))),
        &initialize(),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.header("www-authenticate").contains("another resource"));
    let unsigned = format!("{}.", good.rsplit_once('.').unwrap().0);
    let r = mcp(addr, Some(&unsigned), &initialize()).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    // The server's clock decides expiry.
    s.advance_clock(Duration::from_secs(601));
    let r = mcp(addr, Some(&good), &initialize()).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.header("www-authenticate").contains("expired"));
}
