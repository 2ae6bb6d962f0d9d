//! The plain HTTP answers: a body, an empty one, a JSON-RPC error, a JSON
//! answer; and reading request headers.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};

use super::discover::Rejection;

/// Every response's body: whole or streamed.
pub(super) type Body = BoxBody<Bytes, Infallible>;

pub(super) fn full(
    status: StatusCode,
    content_type: &str,
    body: impl Into<Bytes>,
) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()).boxed());
    *response.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    response
}

pub(super) fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = status;
    response
}

/// The code the TypeScript SDK's HTTP server answers its own transport
/// errors with (bad request, not acceptable, not initialized): a JSON-RPC
/// implementation-defined server error, not one MCP defines. The testkit
/// answers as that server does, so a client is tested against what it meets.
pub(crate) const SDK_TRANSPORT_ERROR: i64 = mcp_stack_jsonrpc::codes::SERVER_ERROR_MAX;
/// The TypeScript SDK's code for an unknown session and for a missing login.
pub(crate) const SDK_SESSION_NOT_FOUND: i64 = SDK_TRANSPORT_ERROR - 1;

/// A JSON-RPC error with no id, as the HTTP layer refuses a message.
pub(super) fn json_error(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    full(status, "application/json", body.to_string())
}

/// A request's answer as one JSON body; `text/plain` with the
/// `wrong-content-type` misbehaviour.
pub(super) fn json_answer(answer: Bytes, wrong_type: bool) -> Response<Body> {
    let content_type = if wrong_type {
        "text/plain"
    } else {
        "application/json"
    };
    full(StatusCode::OK, content_type, answer)
}

/// A 2026-07-28 request refused before it reached an MCP instance.
pub(super) fn rejection_response(
    rejection: &Rejection,
    id: Option<&mcp_stack_jsonrpc::Id>,
) -> Response<Body> {
    full(
        rejection.status,
        "application/json",
        rejection.body(id).to_string(),
    )
}

/// The `Internal Server Error` of the `status-500` misbehaviour.
pub(super) fn internal_error() -> Response<Body> {
    full(
        StatusCode::INTERNAL_SERVER_ERROR,
        "text/plain",
        "Internal Server Error",
    )
}

/// A header's value, when present and visible ASCII.
pub(super) fn header_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

pub(super) fn header_str<'a>(request: &'a Request<Incoming>, name: &str) -> Option<&'a str> {
    header_value(request.headers(), name)
}
