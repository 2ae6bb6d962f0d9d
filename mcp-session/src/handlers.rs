//! Ready-made [`ClientHandler`]s.
//!
//! * [`DefaultsElicitationHandler`]: answers form-mode `elicitation/create`
//!   by accepting with the defaults of the requested schema. For clients with
//!   no person to ask (tests, batch agents, conformance runs) that still want
//!   servers to offer their elicitation tools.

use mcp_stack_jsonrpc::{ErrorObject, RawValue, codes};
use mcp_stack_transport::BoxFuture;
use serde_json::{Map, Value, json};

use crate::config::ClientHandler;
use mcp_stack_protocol::from_server::ServerRequest;
use mcp_stack_protocol::request::{ElicitationCreate, Request as _};
use mcp_stack_protocol::types::ClientCapabilities;

/// Answers `elicitation/create` (form mode) by accepting with the requested
/// schema's default values, and declares the `elicitation` capability (form
/// mode).
///
/// * Every property with a `default` gets that default; properties without
///   one are left out.
/// * A required property without a default cannot be answered without a
///   person: the request is declined (`"action": "decline"`).
/// * URL-mode requests are declined: this handler opens no browser.
/// * Other server requests get "method not found".
///
/// ```
/// use mcp_stack_session::{DefaultsElicitationHandler, SessionConfig};
///
/// let config = SessionConfig::new().handler(DefaultsElicitationHandler::new());
/// assert!(config.handler.is_some());
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct DefaultsElicitationHandler {}

impl DefaultsElicitationHandler {
    /// A handler.
    pub fn new() -> Self {
        DefaultsElicitationHandler {}
    }

    /// The answer to one `elicitation/create` request's parameters.
    pub fn answer(&self, params: &Value) -> Result<Value, ErrorObject> {
        if params.get("mode").and_then(Value::as_str) == Some("url") {
            return Ok(json!({"action": "decline"}));
        }
        let Some(schema) = params.get("requestedSchema").and_then(Value::as_object) else {
            return Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                "elicitation/create: `requestedSchema` is missing or not an object",
            ));
        };
        let empty = Map::new();
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut content = Map::new();
        for (name, property) in properties {
            if let Some(default) = property.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let missing = required
            .iter()
            .filter_map(Value::as_str)
            .any(|name| !content.contains_key(name));
        if missing {
            tracing::debug!("declined an elicitation: a required field has no default");
            return Ok(json!({"action": "decline"}));
        }
        Ok(json!({"action": "accept", "content": content}))
    }
}

impl ClientHandler for DefaultsElicitationHandler {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: Some(json!({"form": {}})),
            ..ClientCapabilities::default()
        }
    }

    fn handle<'a>(
        &'a self,
        method: &'a str,
        params: Option<&'a RawValue>,
    ) -> BoxFuture<'a, Option<Result<Value, ErrorObject>>> {
        Box::pin(async move {
            match ServerRequest::parse(method, params) {
                Ok(ServerRequest::ElicitationCreate(request)) => Some(
                    serde_json::to_value(&request)
                        .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))
                        .and_then(|params| self.answer(&params)),
                ),
                Err(e) if e.method() == ElicitationCreate::METHOD => Some(Err(e.into())),
                _ => None,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_with_the_defaults() {
        let h = DefaultsElicitationHandler::new();
        let answer = h
            .answer(&json!({
                "message": "who?",
                "requestedSchema": {"type": "object", "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "verified": {"type": "boolean", "default": true},
                    "status": {"type": "string", "enum": ["a", "b"], "default": "b"},
                    "nickname": {"type": "string"}
                }, "required": ["name"]}
            }))
            .unwrap();
        assert_eq!(
            answer,
            json!({"action": "accept", "content": {
                "name": "John Doe", "age": 30, "verified": true, "status": "b"
            }})
        );
    }

    #[test]
    fn declines_what_it_cannot_fill() {
        let h = DefaultsElicitationHandler::new();
        let no_default = json!({"message": "m", "requestedSchema": {"type": "object",
            "properties": {"email": {"type": "string"}}, "required": ["email"]}});
        assert_eq!(h.answer(&no_default).unwrap(), json!({"action": "decline"}));
        let url = json!({"mode": "url", "message": "m", "url": "https://example.com",
            "elicitationId": "1"});
        assert_eq!(h.answer(&url).unwrap(), json!({"action": "decline"}));
        let err = h.answer(&json!({"message": "m"})).unwrap_err();
        assert_eq!(err.code, codes::INVALID_PARAMS);
    }

    #[test]
    fn declares_form_elicitation_and_ignores_other_methods() {
        let h = DefaultsElicitationHandler::new();
        assert_eq!(h.capabilities().elicitation, Some(json!({"form": {}})));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(
            rt.block_on(h.handle("sampling/createMessage", None))
                .is_none()
        );
        let raw = RawValue::from_string(
            r#"{"message":"m","requestedSchema":{"type":"object","properties":{"x":{"type":"number","default":1.5}}}}"#
                .to_string(),
        )
        .unwrap();
        let answer = rt
            .block_on(h.handle("elicitation/create", Some(&raw)))
            .unwrap()
            .unwrap();
        assert_eq!(answer, json!({"action": "accept", "content": {"x": 1.5}}));
    }
}
