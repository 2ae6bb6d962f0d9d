//! [`ClientHandlers`]: what an application plugs in to answer a server's
//! requests — elicitation (form and URL), roots, sampling — each declared
//! as a capability only when given.
//!
//! The same handlers answer on every revision: as server requests
//! (`elicitation/create`, `roots/list`, `sampling/createMessage`) before
//! 2026-07-28, and inside `input_required` results on 2026-07-28.
//!
//! A form-mode answer is checked against the schema the server asked for
//! before it is sent (with the `validation` feature): an answer that does
//! not match is never sent; the server gets an error saying so.
//!
//! Roots and sampling are what older servers in the field still use;
//! 2026-07-28 servers ask through `input_required` instead, which the same
//! handlers answer.

use std::fmt;
use std::sync::Arc;

use mcp_stack_jsonrpc::{ErrorObject, RawValue, codes};
use mcp_stack_protocol::from_server::ServerRequest;
use mcp_stack_protocol::request::{ElicitationCreate, Request as _, SamplingCreateMessage};
use mcp_stack_protocol::types::{ClientCapabilities, ElicitRequestParams, ElicitResult, Root};
use mcp_stack_transport::BoxFuture;
use serde_json::{Map, Value, json};

use crate::config::ClientHandler;
use crate::tools::{Checked, check_once};

/// Asks the user what a server wants to know (elicitation). Implemented by
/// an application: a dialog, a terminal prompt, a browser for URL mode.
pub trait Elicitor: Send + Sync + 'static {
    /// Whether it can send the user to a URL (URL mode, 2025-11-25 and
    /// later). Form mode is always offered.
    fn handles_urls(&self) -> bool {
        false
    }

    /// Asks. Form mode: `request.requested_schema` is the form; answer
    /// `accept` with the content, `decline` or `cancel`. URL mode:
    /// `request.url` is the page to send the user to (show
    /// `request.message`, the reason, and the URL's host); `accept` means
    /// the user agreed to go, and the server confirms the end with
    /// `notifications/elicitation/complete`.
    fn elicit<'a>(&'a self, request: &'a ElicitRequestParams) -> BoxFuture<'a, ElicitResult>;
}

/// Gives the roots (folders, files) the client exposes to servers.
pub trait RootsProvider: Send + Sync + 'static {
    /// The current roots.
    fn roots(&self) -> BoxFuture<'_, Vec<Root>>;
}

/// A fixed list of roots.
impl RootsProvider for Vec<Root> {
    fn roots(&self) -> BoxFuture<'_, Vec<Root>> {
        let roots = self.clone();
        Box::pin(async move { roots })
    }
}

/// Answers `sampling/createMessage` (a server asking the client's model
/// for a completion). The parameters and the result are passed as JSON;
/// a refusal is an error object (the user declined: code -1 by the spec).
pub trait Sampler: Send + Sync + 'static {
    /// Creates the message.
    fn create_message<'a>(&'a self, params: &'a Value)
    -> BoxFuture<'a, Result<Value, ErrorObject>>;
}

/// The application's answers to server requests (see the module docs).
///
/// ```
/// use mcp_stack_session::{ClientHandlers, SessionConfig};
/// use mcp_stack_session::types::Root;
///
/// let handlers = ClientHandlers::new()
///     .roots(vec![Root::new("file:///home/me/project", Some("project".into()))]);
/// let config = SessionConfig::new().handler(handlers);
/// assert!(config.handler.is_some());
/// ```
#[derive(Clone, Default)]
pub struct ClientHandlers {
    elicitor: Option<Arc<dyn Elicitor>>,
    roots: Option<Arc<dyn RootsProvider>>,
    sampler: Option<Arc<dyn Sampler>>,
}

impl fmt::Debug for ClientHandlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientHandlers")
            .field("elicitation", &self.elicitor.is_some())
            .field("roots", &self.roots.is_some())
            .field("sampling", &self.sampler.is_some())
            .finish()
    }
}

impl ClientHandlers {
    /// No handlers: every server request gets "method not found".
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers elicitation.
    pub fn elicitation(mut self, elicitor: impl Elicitor) -> Self {
        self.elicitor = Some(Arc::new(elicitor));
        self
    }

    /// Answers `roots/list` (declares `roots` with `listChanged`; tell
    /// servers of a change with [`Session::roots_changed`](crate::Session::roots_changed)).
    ///
    /// Deprecated by the 2026-07-28 revision (SEP-2577), for servers still
    /// in the field: its migration note is to pass directories or files
    /// through tool parameters, resource URIs or server configuration.
    pub fn roots(mut self, provider: impl RootsProvider) -> Self {
        self.roots = Some(Arc::new(provider));
        self
    }

    /// Answers `sampling/createMessage`.
    ///
    /// Deprecated by the 2026-07-28 revision (SEP-2577), for servers still
    /// in the field: its migration note is for servers to integrate with
    /// model providers' APIs directly.
    pub fn sampling(mut self, sampler: impl Sampler) -> Self {
        self.sampler = Some(Arc::new(sampler));
        self
    }

    async fn elicit(&self, request: ElicitRequestParams) -> Result<Value, ErrorObject> {
        let Some(elicitor) = &self.elicitor else {
            return Err(not_found(ElicitationCreate::METHOD));
        };
        let url_mode = request.mode.as_deref() == Some("url");
        if url_mode && (!elicitor.handles_urls() || request.url.is_none()) {
            return Err(ErrorObject::new(
                codes::INVALID_PARAMS,
                "elicitation/create: URL mode was not declared by this client, or the URL is missing",
            ));
        }
        let answer = elicitor.elicit(&request).await;
        if !matches!(answer.action.as_str(), "accept" | "decline" | "cancel") {
            return Err(ErrorObject::new(
                codes::INTERNAL_ERROR,
                format!(
                    "the client's answer has no valid action ({:?})",
                    answer.action
                ),
            ));
        }
        if answer.is_accept() && !url_mode {
            let schema = request.requested_schema.clone().unwrap_or(Value::Null);
            let content = Value::Object(answer.content.clone().unwrap_or_default());
            if let Checked::Invalid(problems) = check_once(&schema, &content) {
                let list: Vec<String> = problems
                    .iter()
                    .map(|p| format!("{} {}", p.path, p.message).trim().to_owned())
                    .collect();
                tracing::warn!(problems = ?list, "an elicitation answer did not match the requested schema; not sent");
                // The server hears where, never what: the problems quote
                // the values, which are the content not sent.
                let mut paths: Vec<String> = problems
                    .iter()
                    .map(|p| {
                        if p.path.is_empty() {
                            "/".to_owned()
                        } else {
                            p.path.clone()
                        }
                    })
                    .collect();
                paths.dedup();
                return Err(ErrorObject::new(
                    codes::INTERNAL_ERROR,
                    format!(
                        "the client's answer does not match the requested schema (at {})",
                        paths.join(", ")
                    ),
                ));
            }
        }
        serde_json::to_value(&answer)
            .map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))
    }
}

fn not_found(method: &str) -> ErrorObject {
    ErrorObject::new(
        codes::METHOD_NOT_FOUND,
        format!("{method}: this client has no handler for it"),
    )
}

impl ClientHandler for ClientHandlers {
    fn capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if let Some(e) = &self.elicitor {
            let mut modes = Map::new();
            modes.insert("form".into(), json!({}));
            if e.handles_urls() {
                modes.insert("url".into(), json!({}));
            }
            caps.elicitation = Some(Value::Object(modes));
        }
        if self.roots.is_some() {
            caps.roots = Some(json!({"listChanged": true}));
        }
        if self.sampler.is_some() {
            caps.sampling = Some(json!({}));
        }
        caps
    }

    fn handle<'a>(
        &'a self,
        method: &'a str,
        params: Option<&'a RawValue>,
    ) -> BoxFuture<'a, Option<Result<Value, ErrorObject>>> {
        Box::pin(async move {
            let request = match ServerRequest::parse(method, params) {
                Ok(request) => request,
                // Params that do not fit: invalid, unless nobody here
                // answers the method anyway.
                Err(e) => {
                    return match e.method() {
                        ElicitationCreate::METHOD if self.elicitor.is_none() => None,
                        SamplingCreateMessage::METHOD if self.sampler.is_none() => {
                            Some(Err(no_sampler()))
                        }
                        _ => Some(Err(e.into())),
                    };
                }
            };
            match request {
                ServerRequest::ElicitationCreate(request) if self.elicitor.is_some() => {
                    Some(self.elicit(request).await)
                }
                ServerRequest::RootsList => {
                    let provider = self.roots.as_ref()?;
                    let roots = provider.roots().await;
                    Some(Ok(json!({ "roots": roots })))
                }
                ServerRequest::SamplingCreateMessage(params) => {
                    let Some(sampler) = &self.sampler else {
                        return Some(Err(no_sampler()));
                    };
                    let params = match serde_json::to_value(&params) {
                        Ok(p) => p,
                        Err(e) => {
                            return Some(Err(ErrorObject::new(
                                codes::INTERNAL_ERROR,
                                e.to_string(),
                            )));
                        }
                    };
                    Some(sampler.create_message(&params).await)
                }
                _ => None,
            }
        })
    }
}

fn no_sampler() -> ErrorObject {
    ErrorObject::new(
        codes::METHOD_NOT_FOUND,
        "sampling/createMessage: this client has no model to sample from \
         (the application supplies no sampling handler)",
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    struct Fixed(ElicitResult, bool);

    impl Elicitor for Fixed {
        fn handles_urls(&self) -> bool {
            self.1
        }
        fn elicit<'a>(&'a self, _: &'a ElicitRequestParams) -> BoxFuture<'a, ElicitResult> {
            let answer = self.0.clone();
            Box::pin(async move { answer })
        }
    }

    fn accept(content: Value) -> ElicitResult {
        serde_json::from_value(json!({"action": "accept", "content": content})).unwrap()
    }

    fn raw(v: Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).unwrap()
    }

    fn form() -> Box<RawValue> {
        raw(json!({"message": "who?", "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name"]
        }}))
    }

    #[tokio::test]
    async fn a_matching_form_answer_is_sent() {
        let h = ClientHandlers::new().elicitation(Fixed(accept(json!({"name": "Ada"})), false));
        let p = form();
        let answer = h
            .handle("elicitation/create", Some(&p))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            answer,
            json!({"action": "accept", "content": {"name": "Ada"}})
        );
        assert_eq!(h.capabilities().elicitation, Some(json!({"form": {}})));
    }

    #[cfg(feature = "validation")]
    #[tokio::test]
    async fn a_form_answer_that_breaks_the_schema_is_never_sent() {
        let h = ClientHandlers::new().elicitation(Fixed(accept(json!({"age": "old"})), false));
        let p = form();
        let err = h
            .handle("elicitation/create", Some(&p))
            .await
            .unwrap()
            .unwrap_err();
        assert!(
            err.message.contains("does not match the requested schema"),
            "{}",
            err.message
        );
    }

    #[tokio::test]
    async fn url_mode_only_when_declared() {
        let url = raw(json!({"mode": "url", "message": "connect your account",
            "url": "https://example.com/connect", "elicitationId": "e1"}));
        let without = ClientHandlers::new().elicitation(Fixed(accept(json!({})), false));
        assert!(
            without
                .handle("elicitation/create", Some(&url))
                .await
                .unwrap()
                .is_err()
        );
        let with = ClientHandlers::new().elicitation(Fixed(
            serde_json::from_value(json!({"action": "accept"})).unwrap(),
            true,
        ));
        assert_eq!(
            with.capabilities().elicitation,
            Some(json!({"form": {}, "url": {}}))
        );
        let answer = with
            .handle("elicitation/create", Some(&url))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(answer, json!({"action": "accept"}));
    }

    #[tokio::test]
    async fn roots_and_sampling() {
        let h = ClientHandlers::new().roots(vec![Root::new("file:///p", Some("p".into()))]);
        assert_eq!(h.capabilities().roots, Some(json!({"listChanged": true})));
        assert!(h.capabilities().sampling.is_none());
        let answer = h.handle("roots/list", None).await.unwrap().unwrap();
        assert_eq!(
            answer,
            json!({"roots": [{"uri": "file:///p", "name": "p"}]})
        );
        // No sampler: a clear error, not silence.
        let err = h
            .handle("sampling/createMessage", None)
            .await
            .unwrap()
            .unwrap_err();
        assert!(err.message.contains("no model"), "{}", err.message);
        // Other methods: not handled.
        assert!(h.handle("something/else", None).await.is_none());
        // No roots provider: not handled (the server gets method not found).
        assert!(
            ClientHandlers::new()
                .handle("roots/list", None)
                .await
                .is_none()
        );
    }

    #[tokio::test]
    async fn params_that_do_not_fit_are_invalid_only_where_a_handler_answers() {
        let bad = raw(json!({"requestedSchema": {"type": "object"}}));
        let with = ClientHandlers::new().elicitation(Fixed(accept(json!({})), false));
        let err = with
            .handle("elicitation/create", Some(&bad))
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(err.code, codes::INVALID_PARAMS);
        assert!(
            err.message
                .starts_with("elicitation/create: the parameters are not valid"),
            "{}",
            err.message
        );
        // Nobody here answers it: not handled, whatever the params.
        let without = ClientHandlers::new();
        assert!(
            without
                .handle("elicitation/create", Some(&bad))
                .await
                .is_none()
        );
        let err = without
            .handle("sampling/createMessage", Some(&raw(json!({"messages": 5}))))
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(err.code, codes::METHOD_NOT_FOUND);
        // A garbled roots/list is still answered: its params are not read.
        let roots = ClientHandlers::new().roots(Vec::<Root>::new());
        let answer = roots
            .handle("roots/list", Some(&raw(json!([1]))))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(answer, json!({"roots": []}));
    }
}
