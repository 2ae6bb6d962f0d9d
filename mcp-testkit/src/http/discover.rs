//! The 2026-07-28 side of streamable HTTP: which POSTs are modern, and the
//! checks of their request metadata headers ("Server Validation").

use std::borrow::Cow;

use hyper::HeaderMap;
use hyper::StatusCode;
use mcp_stack_jsonrpc::{Message, codes};
use mcp_stack_protocol::request::{self, Request as _};
use mcp_stack_protocol::{meta, x_mcp_header};
use serde_json::{Map, Value, json};

use crate::options::{Era, ServerOptions};
use crate::server::lifecycle::{DISCOVER_REVISION, discover_method_known, unsupported_version};
use crate::tools::DISCOVER_DEFINITIONS;

/// Whether a POST is served the 2026-07-28 way (statelessly, headers
/// checked) by a server of `era`: everything when the era is modern; for a
/// dual-era server, a request whose `_meta` names a protocol version (or a
/// `server/discover`), and a notification without a session id that says
/// it is modern.
pub(super) fn speaks_discover(era: Era, headers: &HeaderMap, message: &Message) -> bool {
    match era {
        Era::Legacy => false,
        Era::Modern => true,
        _ => match message {
            Message::Request(r) => {
                r.method == request::ServerDiscover::METHOD
                    || meta_version(r.params.as_ref().map(|p| p.get())).is_some()
            }
            Message::Notification(n) => {
                !headers.contains_key("mcp-session-id")
                    && (headers
                        .get("mcp-protocol-version")
                        .is_some_and(|v| v.as_bytes() == DISCOVER_REVISION.as_str().as_bytes())
                        || meta_version(n.params.as_ref().map(|p| p.get())).is_some())
            }
            _ => false,
        },
    }
}

/// The `_meta` protocol version of raw params, if any.
fn meta_version(params: Option<&str>) -> Option<String> {
    let params: Value = serde_json::from_str(params?).ok()?;
    params
        .get(meta::KEY)?
        .get(meta::PROTOCOL_VERSION)?
        .as_str()
        .map(str::to_owned)
}

/// The `MCP-Protocol-Version` and `Mcp-*` headers of a request, in order:
/// lower-cased names, raw values (lossily decoded).
pub(super) fn recorded_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(name, _)| name.as_str().starts_with("mcp-"))
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// Why a modern request is refused before it reaches the MCP server.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Rejection {
    pub(super) status: StatusCode,
    pub(super) code: i64,
    pub(super) message: String,
    pub(super) data: Option<Value>,
}

impl Rejection {
    /// `400` + `-32020` (`HeaderMismatch`) naming the header.
    fn header(header: &str, message: String) -> Self {
        Rejection {
            status: StatusCode::BAD_REQUEST,
            code: mcp_stack_protocol::codes::HEADER_MISMATCH,
            message: format!("Header mismatch: {message}"),
            data: Some(json!({"header": header})),
        }
    }

    fn missing(header: &str, why: &str) -> Self {
        Self::header(header, format!("the {header} header is required{why}"))
    }

    fn differs(header: &str, header_value: &str, body: &str, body_value: &str) -> Self {
        Self::header(
            header,
            format!("{header} header value {header_value:?} does not match {body} {body_value:?}"),
        )
    }

    /// `400` + `-32022` naming the versions this server speaks.
    fn unsupported(era: Era, requested: Option<&str>) -> Self {
        let (message, data) = unsupported_version(era, requested);
        Rejection {
            status: StatusCode::BAD_REQUEST,
            code: mcp_stack_protocol::codes::UNSUPPORTED_PROTOCOL_VERSION,
            message,
            data: Some(data),
        }
    }

    /// The JSON-RPC error body.
    pub(super) fn body(&self, id: Option<&mcp_stack_jsonrpc::Id>) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let (Some(data), Value::Object(map)) = (&self.data, &mut error) {
            map.insert("data".to_owned(), data.clone());
        }
        json!({"jsonrpc": "2.0", "id": id, "error": error})
    }
}

/// The answer to an `initialize` sent to a modern-only server: `400` +
/// `-32022` naming the versions it speaks, as the spec asks ("legacy
/// clients have no fall-forward mechanism").
pub(super) fn refuse_initialize(era: Era, params: &Map<String, Value>) -> Rejection {
    Rejection::unsupported(era, params.get("protocolVersion").and_then(Value::as_str))
}

/// The one value of a header, as visible ASCII; `None` when absent.
fn single<'a>(
    headers: &'a HeaderMap,
    name: &str,
    display: &str,
) -> Result<Option<&'a str>, Rejection> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Rejection::header(
            display,
            format!("the {display} header appears more than once"),
        ));
    }
    first.to_str().map(Some).map_err(|_| {
        Rejection::header(
            display,
            format!(
                "the {display} header has characters outside visible ASCII \
                 (encode such values as =?base64?…?=)"
            ),
        )
    })
}

/// A header value with the Base64 sentinel form decoded.
fn decoded(value: &str, display: &str) -> Result<String, Rejection> {
    x_mcp_header::decode_value(value)
        .map(Cow::into_owned)
        .ok_or_else(|| {
            Rejection::header(
                display,
                format!("the {display} header is not valid =?base64?…?= (Base64 of UTF-8)"),
            )
        })
}

/// Checks a modern request's headers against its body, in the spec's
/// order: `MCP-Protocol-Version` (present, equal to the `_meta` version,
/// supported), `Mcp-Method`, the method itself (`404` when unknown),
/// `Mcp-Name`, then the `Mcp-Param-*` headers of the called tool.
pub(super) fn validate(
    options: &ServerOptions,
    headers: &HeaderMap,
    method: &str,
    params: &Map<String, Value>,
) -> Result<(), Rejection> {
    check_version(options.era, headers, params)?;
    check_method(options, headers, method)?;
    check_name(headers, method, params)?;
    if method == request::ToolsCall::METHOD {
        check_tool_params(headers, params)?;
    }
    Ok(())
}

/// `MCP-Protocol-Version`: present, equal to the `_meta` version, and the
/// modern revision.
fn check_version(
    era: Era,
    headers: &HeaderMap,
    params: &Map<String, Value>,
) -> Result<(), Rejection> {
    const VERSION: &str = x_mcp_header::PROTOCOL_VERSION;
    let body_version = params
        .get(meta::KEY)
        .and_then(|m| m.get(meta::PROTOCOL_VERSION))
        .and_then(Value::as_str);
    match (
        single(headers, "mcp-protocol-version", VERSION)?,
        body_version,
    ) {
        (None, _) => return Err(Rejection::missing(VERSION, "")),
        (Some(h), Some(b)) if h == b => {}
        // A legacy client's request: its header names the version it wants.
        (Some(h), None) if h != DISCOVER_REVISION.as_str() => {
            return Err(Rejection::unsupported(era, Some(h)));
        }
        (Some(h), b) => {
            return Err(Rejection::differs(
                VERSION,
                h,
                "the body's _meta version",
                b.unwrap_or("(none)"),
            ));
        }
    }
    if body_version != Some(DISCOVER_REVISION.as_str()) {
        return Err(Rejection::unsupported(era, body_version));
    }
    Ok(())
}

/// `Mcp-Method`: present and equal to the body's; then `404` for a method
/// the server does not serve.
fn check_method(
    options: &ServerOptions,
    headers: &HeaderMap,
    method: &str,
) -> Result<(), Rejection> {
    const METHOD: &str = x_mcp_header::METHOD;
    match single(headers, "mcp-method", METHOD)? {
        None => return Err(Rejection::missing(METHOD, "")),
        Some(h) if h != method => {
            return Err(Rejection::differs(METHOD, h, "the body's method", method));
        }
        Some(_) => {}
    }
    if !discover_method_known(options, method) {
        return Err(Rejection {
            status: StatusCode::NOT_FOUND,
            code: codes::METHOD_NOT_FOUND,
            message: format!("Method not found: {method}"),
            data: Some(json!({"method": method})),
        });
    }
    Ok(())
}

/// `Mcp-Name`, for the methods that have one: equal to `params.name` or
/// `params.uri` after decoding.
fn check_name(
    headers: &HeaderMap,
    method: &str,
    params: &Map<String, Value>,
) -> Result<(), Rejection> {
    const NAME: &str = x_mcp_header::NAME;
    let Some(field) = x_mcp_header::name_field(method) else {
        return Ok(());
    };
    let Some(raw) = single(headers, "mcp-name", NAME)? else {
        return Err(Rejection::missing(NAME, &format!(" for {method}")));
    };
    let header = decoded(raw, NAME)?;
    let body = params.get(field).and_then(Value::as_str);
    if body != Some(header.as_str()) {
        return Err(Rejection::differs(
            NAME,
            &header,
            &format!("params.{field}"),
            body.unwrap_or("(none)"),
        ));
    }
    Ok(())
}

/// The `Mcp-Param-*` headers of a `tools/call`, for every argument of the
/// tool annotated `x-mcp-header`.
fn check_tool_params(headers: &HeaderMap, params: &Map<String, Value>) -> Result<(), Rejection> {
    let name = params.get("name").and_then(Value::as_str);
    let tool = DISCOVER_DEFINITIONS
        .iter()
        .find(|t| Some(t.name.as_str()) == name);
    let schema = tool.map(|t| &t.input_schema);
    let arguments = params.get("arguments");
    for (header_name, path) in schema.map(|s| header_annotations(s)).unwrap_or_default() {
        check_param(headers, &header_name, &path, arguments)?;
    }
    Ok(())
}

/// The `x-mcp-header` annotations of an input schema, reached through
/// `properties` only: (header name part, property path).
fn header_annotations(schema: &Value) -> Vec<(String, Vec<String>)> {
    fn walk(schema: &Value, path: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (key, sub) in properties {
            path.push(key.clone());
            if let Some(name) = sub.get(x_mcp_header::KEYWORD).and_then(Value::as_str) {
                out.push((name.to_owned(), path.clone()));
            }
            walk(sub, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), &mut out);
    out
}

/// Checks one `Mcp-Param-{name}` header against the argument at `path`.
fn check_param(
    headers: &HeaderMap,
    name: &str,
    path: &[String],
    arguments: Option<&Value>,
) -> Result<(), Rejection> {
    let display = format!("{}{name}", x_mcp_header::PARAM_PREFIX);
    let lower = display.to_ascii_lowercase();
    let value = path
        .iter()
        .try_fold(arguments, |v, key| v.map(|v| v.get(key)))
        .flatten()
        .filter(|v| !v.is_null());
    let argument = format!("arguments.{}", path.join("."));
    match (value, single(headers, &lower, &display)?) {
        (None, None) => Ok(()),
        (None, Some(_)) => Err(Rejection::header(
            &display,
            format!("the {display} header is sent but {argument} has no value"),
        )),
        (Some(_), None) => Err(Rejection::missing(
            &display,
            &format!(" because {argument} has a value"),
        )),
        (Some(value), Some(raw)) => {
            let header = decoded(raw, &display)?;
            if same_value(value, &header) {
                Ok(())
            } else {
                Err(Rejection::differs(
                    &display,
                    &header,
                    &argument,
                    &match value {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    },
                ))
            }
        }
    }
}

/// Whether a decoded header value stands for a body value: strings as they
/// are, numbers numerically, booleans as `true`/`false`; nothing else.
fn same_value(value: &Value, header: &str) -> bool {
    match value {
        Value::String(s) => s == header,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) => {
            if let (Some(a), Ok(b)) = (n.as_i64(), header.parse::<i64>()) {
                a == b
            } else if let (Some(a), Ok(b)) = (n.as_u64(), header.parse::<u64>()) {
                a == b
            } else {
                match (n.as_f64(), header.parse::<f64>()) {
                    (Some(a), Ok(b)) => a == b,
                    _ => false,
                }
            }
        }
        // Objects and arrays cannot be mirrored into a header.
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::{HeaderName, HeaderValue};

    #[test]
    fn sentinel_values_decode_and_plain_values_stay() {
        assert_eq!(decoded("us-west1", "H").unwrap(), "us-west1");
        assert_eq!(
            decoded("=?base64?SGVsbG8sIOS4lueVjA==?=", "H").unwrap(),
            "Hello, 世界"
        );
        let bad = decoded("=?base64?***?=", "Mcp-Name").unwrap_err();
        assert_eq!(bad.code, -32020);
        assert_eq!(bad.data, Some(json!({"header": "Mcp-Name"})));
        // Base64 of bytes that are not UTF-8.
        assert!(decoded("=?base64?/w==?=", "H").is_err());
        // The markers are case-sensitive.
        assert_eq!(decoded("=?BASE64?Zg==?=", "H").unwrap(), "=?BASE64?Zg==?=");
    }

    #[test]
    fn values_compare_by_type() {
        assert!(same_value(&json!(42), "42"));
        assert!(same_value(&json!(42), "42.0"));
        assert!(same_value(&json!(-7), "-7"));
        assert!(!same_value(&json!(42), "42x"));
        assert!(same_value(&json!(u64::MAX), &u64::MAX.to_string()));
        assert!(same_value(&json!(1.5), "1.5"));
        assert!(same_value(&json!(true), "true"));
        assert!(!same_value(&json!(true), "True"));
        assert!(same_value(&json!("42"), "42"));
        assert!(!same_value(&json!("42"), "42.0"));
    }

    #[test]
    fn annotations_follow_properties_only() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": "A"},
            "nested": {"type": "object", "properties": {
                "b": {"type": "integer", "x-mcp-header": "B"}}},
            "list": {"type": "array", "items": {"x-mcp-header": "C"}},
        }});
        let found = header_annotations(&schema);
        assert_eq!(
            found,
            vec![
                ("A".to_owned(), vec!["a".to_owned()]),
                ("B".to_owned(), vec!["nested".to_owned(), "b".to_owned()]),
            ]
        );
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    fn discover_options() -> ServerOptions {
        ServerOptions {
            era: Era::Modern,
            ..ServerOptions::default()
        }
    }

    fn route_params(arguments: Value) -> Map<String, Value> {
        json!({"name": "route", "arguments": arguments,
               "_meta": {meta::PROTOCOL_VERSION: DISCOVER_REVISION.as_str()}})
        .as_object()
        .unwrap()
        .clone()
    }

    #[test]
    fn param_headers_are_required_exactly_when_the_argument_has_a_value() {
        let o = discover_options();
        let base = [
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "route"),
        ];
        let with = |extra: &[(&str, &str)]| {
            let mut all = base.to_vec();
            all.extend_from_slice(extra);
            headers(&all)
        };
        let p = route_params(json!({"query": "q", "region": "eu", "shard": 3}));
        assert_eq!(
            validate(
                &o,
                &with(&[("mcp-param-region", "eu"), ("MCP-PARAM-SHARD", "3.0")]),
                "tools/call",
                &p
            ),
            Ok(())
        );
        let e = validate(&o, &with(&[("Mcp-Param-Region", "eu")]), "tools/call", &p).unwrap_err();
        assert_eq!(e.data, Some(json!({"header": "Mcp-Param-Shard"})));
        let p = route_params(json!({"query": "q", "region": null}));
        assert_eq!(validate(&o, &with(&[]), "tools/call", &p), Ok(()));
        let e = validate(&o, &with(&[("Mcp-Param-Region", "eu")]), "tools/call", &p).unwrap_err();
        assert_eq!(e.code, -32020);
        // Duplicates are malformed.
        let p = route_params(json!({"query": "q", "region": "eu"}));
        let e = validate(
            &o,
            &with(&[("Mcp-Param-Region", "eu"), ("Mcp-Param-Region", "eu")]),
            "tools/call",
            &p,
        )
        .unwrap_err();
        assert_eq!(e.data, Some(json!({"header": "Mcp-Param-Region"})));
        // Raw non-ASCII bytes are invalid characters (Base64 is the way).
        let mut h = with(&[("Mcp-Param-Region", "eu")]);
        h.insert(
            "mcp-param-region",
            HeaderValue::from_bytes(b"z\xc3\xbcrich").unwrap(),
        );
        let p = route_params(json!({"query": "q", "region": "zürich"}));
        let e = validate(&o, &h, "tools/call", &p).unwrap_err();
        assert_eq!(e.data, Some(json!({"header": "Mcp-Param-Region"})));
        assert!(e.message.contains("visible ASCII"), "{}", e.message);
    }
}
