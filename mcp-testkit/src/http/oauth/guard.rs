//! The MCP endpoint as a resource server: the bearer token of every
//! request, and the scopes a `tools/call` needs.

use std::sync::atomic::Ordering;

use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Response, StatusCode};
use mcp_stack_jsonrpc::Message;
use mcp_stack_protocol::request::{self, Request as _};
use serde_json::Value;

use super::super::response::Body;
use super::super::{Shared, lock};
use super::store::TokenProblem;
use super::wire::{bearer, challenge, error};
use super::{OAuth, external};

/// Why a request is refused.
enum Refusal<'a> {
    /// No bearer token: a bare challenge (RFC 6750 3.1).
    NoToken,
    /// `invalid_token`, with a description.
    Invalid(&'a str),
    /// `insufficient_scope`, naming the scopes needed.
    Scope(Vec<String>),
}

impl OAuth {
    /// The 401 or 403 answer.
    fn refuse(&self, endpoint_path: &str, refusal: Refusal<'_>) -> Response<Body> {
        let metadata = self.resource_metadata_url(endpoint_path);
        let mut params: Vec<(&str, &str)> = Vec::new();
        let (status, code, description, scope) = match refusal {
            Refusal::NoToken => (
                StatusCode::UNAUTHORIZED,
                "invalid_token",
                "an access token is required (Authorization: Bearer)",
                self.options.scopes.join(" "),
            ),
            Refusal::Invalid(why) => {
                params.push(("error", "invalid_token"));
                params.push(("error_description", why));
                (
                    StatusCode::UNAUTHORIZED,
                    "invalid_token",
                    why,
                    self.options.scopes.join(" "),
                )
            }
            Refusal::Scope(needed) => {
                params.push(("error", "insufficient_scope"));
                (
                    StatusCode::FORBIDDEN,
                    "insufficient_scope",
                    "the access token lacks a scope this request needs",
                    needed.join(" "),
                )
            }
        };
        if self.options.challenge_resource_metadata {
            params.push(("resource_metadata", &metadata));
        }
        let scoped = status == StatusCode::FORBIDDEN || self.options.challenge_scope;
        if scoped && !scope.is_empty() {
            params.push(("scope", &scope));
        }
        let mut response = error(status, code, description);
        if let Ok(v) = HeaderValue::from_str(&challenge(&params)) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        response
    }

    /// The scopes a valid token for `resource` holds, or why it is refused.
    fn granted(
        &self,
        headers: &HeaderMap,
        resource: &str,
    ) -> Result<Vec<String>, Refusal<'static>> {
        let Some(token) = bearer(headers) else {
            return Err(Refusal::NoToken);
        };
        if let Some(external) = &self.options.external {
            let now = external::unix_now(lock(&self.store).offset());
            return external
                .verify(token, resource, now)
                .map_err(|p| Refusal::Invalid(p.describe()));
        }
        match lock(&self.store).check_access(token, resource) {
            Ok(scopes) => Ok(scopes.to_vec()),
            Err(TokenProblem::Unknown) => Err(Refusal::Invalid("the access token is not valid")),
            Err(TokenProblem::Expired) => Err(Refusal::Invalid("the access token expired")),
            Err(TokenProblem::OtherResource) => Err(Refusal::Invalid(
                "the access token was issued for another resource",
            )),
        }
    }

    /// The scopes a request needs that `granted` lacks: the base scopes,
    /// and a called tool's own.
    fn missing(&self, granted: &[String], tool: Option<&str>) -> Option<Vec<String>> {
        let mut needed = self.options.scopes.clone();
        if let Some(scope) = tool.and_then(|t| self.options.tool_scopes.get(t))
            && !needed.contains(scope)
        {
            needed.push(scope.clone());
        }
        needed
            .iter()
            .any(|s| !granted.contains(s))
            .then_some(needed)
    }
}

/// The tool a `tools/call` message calls.
fn called_tool(message: &Message) -> Option<String> {
    let Message::Request(request) = message else {
        return None;
    };
    if request.method != request::ToolsCall::METHOD {
        return None;
    }
    let params: Value = serde_json::from_str(request.params.as_ref()?.get()).ok()?;
    params.get("name")?.as_str().map(str::to_owned)
}

impl Shared {
    /// Checks the bearer token of a request to the MCP endpoint at `path`
    /// (a protected `resource`): the 401 or 403 answer when it fails, `None`
    /// when the request may go on.
    pub(super) fn check_bearer(
        &self,
        oauth: &OAuth,
        headers: &HeaderMap,
        path: &str,
        resource: &str,
    ) -> Option<Response<Body>> {
        let endpoint_path = if path == "/messages" { "/sse" } else { path };
        let stats = &self.stats.oauth;
        let refusal = match oauth.granted(headers, resource) {
            Ok(granted) => match oauth.missing(&granted, None) {
                None => {
                    stats.authorized.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
                Some(needed) => Refusal::Scope(needed),
            },
            Err(refusal) => refusal,
        };
        let counter = match refusal {
            Refusal::Scope(_) => &stats.forbidden,
            _ => &stats.unauthorized,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Some(oauth.refuse(endpoint_path, refusal))
    }

    /// With OAuth, the 403 for a `tools/call` of a tool whose scope the
    /// request's token lacks (its token was checked already).
    pub(in super::super) fn insufficient_scope(
        &self,
        headers: &HeaderMap,
        endpoint_path: &str,
        message: &Message,
    ) -> Option<Response<Body>> {
        let oauth = self.oauth.as_ref()?;
        let tool = called_tool(message)?;
        let resource = oauth.resource_for(endpoint_path)?;
        let granted = oauth.granted(headers, &resource).ok()?;
        let needed = oauth.missing(&granted, Some(&tool))?;
        self.stats.oauth.forbidden.fetch_add(1, Ordering::Relaxed);
        Some(oauth.refuse(endpoint_path, Refusal::Scope(needed)))
    }
}
