//! The OAuth wire formats, written for the testkit alone (no code shared
//! with the client): forms, JSON answers and errors, redirect URIs, HTTP
//! Basic client credentials.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode, Uri};
use serde_json::Value;

use super::super::response::{Body, full};

/// The most a form or registration body may hold.
const BODY_LIMIT: usize = 64 * 1024;

/// A request's body, at most [`BODY_LIMIT`] bytes.
pub(super) async fn read_body(request: Request<Incoming>) -> Option<(HeaderMap, Bytes)> {
    let (parts, body) = request.into_parts();
    let bytes = Limited::new(body, BODY_LIMIT).collect().await.ok()?;
    Some((parts.headers, bytes.to_bytes()))
}

/// Sets a member of a JSON object (nothing when `doc` is not one).
pub(super) fn set(doc: &mut Value, key: &str, value: Value) {
    if let Value::Object(map) = doc {
        map.insert(key.to_owned(), value);
    }
}

/// A JSON answer that no cache keeps (RFC 6749 5.1).
pub(super) fn json(status: StatusCode, value: &Value) -> Response<Body> {
    let mut r = full(status, "application/json", value.to_string());
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// An OAuth error answer: `{"error", "error_description"}`.
pub(super) fn error(status: StatusCode, code: &str, description: &str) -> Response<Body> {
    json(
        status,
        &serde_json::json!({"error": code, "error_description": description}),
    )
}

/// Whether the content type (parameters aside) is `expected`.
pub(super) fn content_type_is(headers: &HeaderMap, expected: &str) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(expected))
}

/// An `application/x-www-form-urlencoded` form (or query). `Err` names a
/// parameter given twice, which RFC 6749 3.1 forbids.
pub(super) fn parse_form(bytes: &[u8]) -> Result<Vec<(String, String)>, String> {
    let mut form: Vec<(String, String)> = Vec::new();
    for (k, v) in form_urlencoded::parse(bytes) {
        if form.iter().any(|(seen, _)| *seen == k) {
            return Err(k.into_owned());
        }
        form.push((k.into_owned(), v.into_owned()));
    }
    Ok(form)
}

/// A parameter's value; an empty value counts as absent (RFC 6749 3.1).
pub(super) fn field<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// A space-separated scope list.
pub(super) fn scope_list(scope: Option<&str>) -> Vec<String> {
    scope
        .unwrap_or_default()
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The host of a loopback URL (`127.0.0.1`, `[::1]`, `localhost`).
fn loopback(host: &str) -> bool {
    matches!(host, "127.0.0.1" | "[::1]" | "::1" | "localhost")
}

/// Whether a redirect URI may be registered: absolute, no fragment, and
/// HTTPS or HTTP on a loopback host (OAuth 2.1, RFC 8252).
pub(super) fn redirect_uri_allowed(uri: &str) -> bool {
    if uri.contains('#') {
        return false;
    }
    let Ok(parsed) = uri.parse::<Uri>() else {
        return false;
    };
    match (parsed.scheme_str(), parsed.host()) {
        (Some("https"), Some(host)) => !host.is_empty(),
        (Some("http"), Some(host)) => loopback(host),
        _ => false,
    }
}

/// Whether a redirect URI given in a request matches a registered one:
/// exactly, or for a loopback HTTP URI on any port (RFC 8252 7.3, OAuth 2.1).
pub(super) fn redirect_uri_matches(registered: &str, given: &str) -> bool {
    if registered == given {
        return true;
    }
    let (Ok(r), Ok(g)) = (registered.parse::<Uri>(), given.parse::<Uri>()) else {
        return false;
    };
    let without_port = |u: &Uri| {
        (
            u.scheme_str().map(str::to_owned),
            u.host().map(str::to_owned),
            u.path_and_query().map(|p| p.as_str().to_owned()),
        )
    };
    r.scheme_str() == Some("http")
        && r.host().is_some_and(loopback)
        && !given.contains('#')
        && without_port(&r) == without_port(&g)
}

/// `uri` with form-encoded parameters added to its query.
pub(super) fn with_query(uri: &str, params: &[(&str, &str)]) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        query.append_pair(k, v);
    }
    let separator = if uri.contains('?') { '&' } else { '?' };
    format!("{uri}{separator}{}", query.finish())
}

/// A `302 Found` to `location`.
pub(super) fn found(location: &str) -> Response<Body> {
    let mut r = full(StatusCode::FOUND, "text/plain", "Found");
    if let Ok(v) = HeaderValue::from_str(location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// One form-urlencoded component, decoded (RFC 6749 2.3.1 encodes the
/// id and secret so before Basic).
fn form_decode(component: &str) -> String {
    let escaped = component.replace('&', "%26").replace('=', "%3D");
    form_urlencoded::parse(escaped.as_bytes())
        .next()
        .map(|(k, _)| k.into_owned())
        .unwrap_or_default()
}

/// The id and secret of an `Authorization: Basic` header: `None` without
/// one, `Some(Err)` when it does not decode.
pub(super) fn basic_credentials(headers: &HeaderMap) -> Option<Result<(String, String), ()>> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, rest) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = STANDARD
        .decode(rest.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok());
    Some(
        decoded
            .as_deref()
            .and_then(|d| d.split_once(':'))
            .map(|(id, secret)| (form_decode(id), form_decode(secret)))
            .ok_or(()),
    )
}

/// The token of an `Authorization: Bearer` header.
pub(super) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A `WWW-Authenticate: Bearer …` value from its parameters.
pub(super) fn challenge(params: &[(&str, &str)]) -> String {
    let params: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    if params.is_empty() {
        "Bearer".to_owned()
    } else {
        format!("Bearer {}", params.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_refuse_repeats_and_treat_empty_as_absent() {
        let form = parse_form(b"a=1&b=&c=x+y%21").unwrap();
        assert_eq!(field(&form, "a"), Some("1"));
        assert_eq!(field(&form, "b"), None);
        assert_eq!(field(&form, "c"), Some("x y!"));
        assert_eq!(parse_form(b"a=1&a=2"), Err("a".to_owned()));
    }

    #[test]
    fn redirect_uris() {
        assert!(redirect_uri_allowed("http://127.0.0.1:8080/cb"));
        assert!(redirect_uri_allowed("http://localhost/cb?x=1"));
        assert!(redirect_uri_allowed("https://app.example/cb"));
        assert!(!redirect_uri_allowed("http://app.example/cb"));
        assert!(!redirect_uri_allowed("http://127.0.0.1/cb#frag"));
        assert!(!redirect_uri_allowed("/cb"));
        assert!(redirect_uri_matches(
            "http://127.0.0.1/cb",
            "http://127.0.0.1:5555/cb"
        ));
        assert!(!redirect_uri_matches(
            "http://127.0.0.1/cb",
            "http://127.0.0.1:5555/other"
        ));
        assert!(!redirect_uri_matches(
            "https://app.example/cb",
            "https://app.example:444/cb"
        ));
        assert_eq!(
            with_query(
                "http://127.0.0.1/cb?a=1",
                &[("code", "x y"), ("iss", "http://i")]
            ),
            "http://127.0.0.1/cb?a=1&code=x+y&iss=http%3A%2F%2Fi"
        );
    }

    #[test]
    fn credentials_and_challenges() {
        let mut headers = HeaderMap::new();
        // "a%3Ab:p+w" in Basic: id "a:b", secret "p w".
        let value = format!("Basic {}", STANDARD.encode("a%3Ab:p+w"));
        headers.insert(header::AUTHORIZATION, value.parse().unwrap());
        assert_eq!(
            basic_credentials(&headers),
            Some(Ok(("a:b".to_owned(), "p w".to_owned())))
        );
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, "bearer  tok ".parse().unwrap());
        assert_eq!(bearer(&headers), Some("tok"));
        assert_eq!(
            challenge(&[("error", "invalid_token"), ("scope", "a b")]),
            r#"Bearer error="invalid_token", scope="a b""#
        );
        assert_eq!(challenge(&[]), "Bearer");
    }
}
