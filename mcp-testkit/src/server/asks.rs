//! The tools that ask the client: `ask_user` (elicitation, form or URL
//! mode), `sample` (`sampling/createMessage`) and `list_roots`
//! (`roots/list`).
//!
//! Before 2026-07-28 each sends its request to the client while the call is
//! pending and waits for the answer. In 2026-07-28 the call answers
//! `input_required` with the request in `inputRequests`, and the client's
//! retry carries the answer in `inputResponses` (with the `requestState`
//! echoed). Either way a client that did not declare the capability (or
//! the elicitation mode) is never asked: the tool answers `isError` saying
//! what is missing. An answer that does not fit (an error, content that
//! breaks the form's schema) is an `isError` result too, and bad content is
//! never reported back as if it had been given.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_stack_jsonrpc::{ErrorObject, codes};
use mcp_stack_protocol::notification::{self, Notification as _};
use mcp_stack_protocol::request::{self, Request as _};
use mcp_stack_protocol::results::{InputRequest, InputRequiredResult};
use mcp_stack_protocol::types::{
    CallToolParams, CallToolResult, CreateMessageParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, Extra, ListRootsResult, SamplingMessage,
};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::calls::CallAnswer;
use crate::client::Mode;
use crate::outbox::ProtocolError;
use crate::tools::{self, CallContext};

/// The tools of this module.
pub(super) const NAMES: [&str; 3] = ["ask_user", "sample", "list_roots"];

/// The most tokens `sample` asks for.
const MAX_TOKENS: u64 = 100;

/// Numbers the URL-mode elicitations (`elicitation-N`).
static NEXT_ELICITATION: AtomicU64 = AtomicU64::new(1);

/// Runs one of [`NAMES`].
pub(super) async fn call(
    call: &CallToolParams,
    ctx: &CallContext,
) -> Result<CallAnswer, ProtocolError> {
    let arguments = call.arguments.clone().unwrap_or_default();
    let asking = match call.name.as_str() {
        "ask_user" => ask_user(&arguments, ctx)?,
        "sample" => sample(&arguments, ctx)?,
        _ => list_roots(ctx),
    };
    let asking = match asking {
        Ok(asking) => asking,
        Err(refusal) => {
            return Ok(CallAnswer::Complete(tools::error_result(format!(
                "{}: {refusal}; nothing was asked",
                call.name
            ))));
        }
    };
    if !ctx.discover {
        let answer = ctx.outbox.request(asking.method, &asking.params).await;
        let result = asking.report(answer);
        if let Some(id) = asking.elicitation_id.as_deref()
            && !result.is_error()
            && result
                .structured_content
                .as_ref()
                .is_some_and(|s| s.get("action") == Some(&Value::from("accept")))
        {
            // The out-of-band interaction is over as far as this server
            // cares: the client hears of it (2025-11-25).
            let params = json!({ "elicitationId": id });
            ctx.outbox
                .notify(notification::ElicitationComplete::METHOD, &params)
                .await;
        }
        return Ok(CallAnswer::Complete(result));
    }
    let mut asking = asking;
    if let Some(state) = call.request_state.as_deref() {
        asking.resume(state);
    }
    let answer = call
        .input_responses
        .as_ref()
        .and_then(|r| r.get(asking.key));
    match (answer, call.request_state.as_deref()) {
        (Some(answer), Some(state)) if state == asking.state => {
            Ok(CallAnswer::Complete(asking.report(Ok(answer.clone()))))
        }
        (None, Some(state)) if state == asking.state => asking.input_required(),
        (_, Some(_)) | (Some(_), None) => Err(ProtocolError::invalid_field(
            "requestState",
            "missing or not the one this server handed out for this call",
        )),
        (None, None) => asking.input_required(),
    }
}

/// A request for the client, and how its answer is reported.
struct Asking {
    method: &'static str,
    params: Value,
    /// 2026-07-28: the key in `inputRequests` and the `requestState`.
    key: &'static str,
    state: String,
    /// URL mode before 2026-07-28: the id `notifications/elicitation/complete` names.
    elicitation_id: Option<String>,
    report: fn(&Asking, Value) -> Result<CallToolResult, String>,
    roots_changed: u64,
}

impl Asking {
    fn new<P: Serialize>(
        method: &'static str,
        params: &P,
        key: &'static str,
        state: String,
        report: fn(&Asking, Value) -> Result<CallToolResult, String>,
    ) -> Result<Self, ProtocolError> {
        let params = serde_json::to_value(params)
            .map_err(|e| ProtocolError::new(codes::INTERNAL_ERROR, format!("cannot ask: {e}")))?;
        Ok(Asking {
            method,
            params,
            key,
            state,
            elicitation_id: None,
            report,
            roots_changed: 0,
        })
    }

    /// The tool's result from the client's answer: what it said, or an
    /// `isError` result saying why it cannot be used.
    fn report(&self, answer: Result<Value, ErrorObject>) -> CallToolResult {
        let outcome = match answer {
            Ok(value) => (self.report)(self, value),
            Err(e) => Err(format!(
                "the client answered {} with error {}: {}",
                self.method, e.code, e.message
            )),
        };
        outcome.unwrap_or_else(tools::error_result)
    }

    /// A 2026-07-28 retry of a URL-mode elicitation names its elicitation
    /// in the state handed out: the retry continues that one.
    fn resume(&mut self, state: &str) {
        const URL_STATE: &str = "ask-user:url:";
        let Some(id) = state.strip_prefix(URL_STATE) else {
            return;
        };
        let valid = id
            .strip_prefix("elicitation-")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if self.state.starts_with(URL_STATE) && valid {
            self.state = state.to_owned();
            self.elicitation_id = Some(id.to_owned());
        }
    }

    fn input_required(&self) -> Result<CallAnswer, ProtocolError> {
        let params = match &self.params {
            Value::Object(map) if map.is_empty() => None,
            params => Some(params.clone()),
        };
        let request = InputRequest {
            method: self.method.to_owned(),
            params,
            extra: Extra::new(),
        };
        Ok(CallAnswer::InputRequired(InputRequiredResult::new(
            BTreeMap::from([(self.key.to_owned(), request)]),
            Some(self.state.clone()),
        )))
    }
}

/// A `T` from the client's answer, or why it is not one.
fn answer_as<T: DeserializeOwned>(method: &str, value: Value) -> Result<T, String> {
    T::deserialize(value).map_err(|e| format!("the client's answer to {method} does not fit: {e}"))
}

fn structured(text: String, content: Value) -> CallToolResult {
    CallToolResult {
        structured_content: Some(content),
        ..tools::text_result(text)
    }
}

/// The form `ask_user` asks the user to fill.
fn form_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "description": "Your name."},
            "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
            "subscribe": {"type": "boolean", "title": "Subscribe",
                          "description": "Send me news.", "default": false}
        },
        "required": ["name"]
    })
}

/// Whether form content fits [`form_schema`]: the first problem, if any.
fn form_problem(content: &Map<String, Value>) -> Option<String> {
    match content.get("name") {
        Some(Value::String(_)) => {}
        Some(_) => return Some("name is not a string".into()),
        None => return Some("name is missing".into()),
    }
    if let Some(age) = content.get("age")
        && age.as_u64().is_none_or(|a| a > 150)
    {
        return Some("age is not an integer from 0 to 150".into());
    }
    if content.get("subscribe").is_some_and(|s| !s.is_boolean()) {
        return Some("subscribe is not a boolean".into());
    }
    content
        .keys()
        .find(|k| !["name", "age", "subscribe"].contains(&k.as_str()))
        .map(|k| format!("{k} is not a field of the form"))
}

/// The refusal (capability missing) or the request for `ask_user`.
type Prepared = Result<Result<Asking, String>, ProtocolError>;

fn ask_user(arguments: &Map<String, Value>, ctx: &CallContext) -> Prepared {
    let mode = match arguments.get("mode") {
        None | Some(Value::Null) => Mode::Form,
        Some(Value::String(s)) if s == "form" => Mode::Form,
        Some(Value::String(s)) if s == "url" => Mode::Url,
        Some(_) => {
            return Err(ProtocolError::invalid_field(
                "arguments.mode",
                "expected \"form\" or \"url\"",
            ));
        }
    };
    if let Some(why) = ctx.client.cannot_elicit(mode) {
        return Ok(Err(why));
    }
    let asking = match mode {
        Mode::Form => Asking::new(
            request::ElicitationCreate::METHOD,
            &ElicitRequestParams::form("Tell us about yourself.", form_schema()),
            "user",
            "ask-user:form:v1".into(),
            report_form,
        )?,
        Mode::Url => {
            let id = format!(
                "elicitation-{}",
                NEXT_ELICITATION.fetch_add(1, Ordering::Relaxed)
            );
            let mut extra = Extra::new();
            // 2026-07-28 dropped `elicitationId` (and the completion
            // notification): the retry tells the server the outcome.
            if !ctx.discover {
                extra.insert("elicitationId".into(), Value::from(id.clone()));
            }
            let request = ElicitRequestParams {
                mode: Some("url".into()),
                message: "Connect your example.com account.".into(),
                requested_schema: None,
                url: Some(format!("https://example.com/connect?elicitation={id}")),
                extra,
            };
            let mut asking = Asking::new(
                request::ElicitationCreate::METHOD,
                &request,
                "user",
                format!("ask-user:url:{id}"),
                report_url,
            )?;
            asking.elicitation_id = Some(id);
            asking
        }
    };
    Ok(Ok(asking))
}

fn elicit_answer(value: Value) -> Result<ElicitResult, String> {
    let answer: ElicitResult = answer_as(request::ElicitationCreate::METHOD, value)?;
    if !matches!(answer.action.as_str(), "accept" | "decline" | "cancel") {
        return Err(format!(
            "the client's answer has no valid action ({:?})",
            answer.action
        ));
    }
    Ok(answer)
}

fn report_form(_: &Asking, value: Value) -> Result<CallToolResult, String> {
    let answer = elicit_answer(value)?;
    let mut out = Map::new();
    out.insert("mode".into(), Value::from(Mode::Form.as_str()));
    out.insert("action".into(), Value::from(answer.action.clone()));
    let text = if answer.is_accept() {
        let content = answer.content.unwrap_or_default();
        if let Some(problem) = form_problem(&content) {
            return Err(format!(
                "the client's answer does not match the requested schema ({problem}); \
                 its content was not used"
            ));
        }
        let content = Value::Object(content);
        let text = format!("the user answered accept: {content}");
        out.insert("content".into(), content);
        text
    } else {
        format!("the user answered {}", answer.action)
    };
    Ok(structured(text, Value::Object(out)))
}

fn report_url(asking: &Asking, value: Value) -> Result<CallToolResult, String> {
    let answer = elicit_answer(value)?;
    let id = asking.elicitation_id.clone().unwrap_or_default();
    let text = format!(
        "the user answered {} to opening the URL of {id}",
        answer.action
    );
    Ok(structured(
        text,
        json!({"mode": Mode::Url.as_str(), "action": answer.action, "elicitationId": id}),
    ))
}

fn sample(arguments: &Map<String, Value>, ctx: &CallContext) -> Prepared {
    let prompt = match arguments.get("prompt") {
        Some(Value::String(p)) => p.clone(),
        None | Some(Value::Null) => {
            return Err(ProtocolError::invalid_field("arguments.prompt", "required"));
        }
        Some(_) => {
            return Err(ProtocolError::invalid_field(
                "arguments.prompt",
                "expected a string",
            ));
        }
    };
    if ctx.client.capabilities.sampling.is_none() {
        return Ok(Err(
            "the client did not declare the sampling capability".into()
        ));
    }
    let params = CreateMessageParams {
        messages: vec![SamplingMessage::user_text(prompt)],
        max_tokens: MAX_TOKENS,
        system_prompt: None,
        extra: Extra::new(),
    };
    Ok(Ok(Asking::new(
        request::SamplingCreateMessage::METHOD,
        &params,
        "sample",
        "sample:v1".into(),
        report_sample,
    )?))
}

fn report_sample(_: &Asking, value: Value) -> Result<CallToolResult, String> {
    let answer: CreateMessageResult = answer_as(request::SamplingCreateMessage::METHOD, value)?;
    let text = answer.text();
    let out = json!({"model": answer.model, "role": answer.role, "text": text,
                     "stopReason": answer.stop_reason});
    Ok(structured(text, out))
}

fn list_roots(ctx: &CallContext) -> Result<Asking, String> {
    if ctx.client.capabilities.roots.is_none() {
        return Err("the client did not declare the roots capability".into());
    }
    let mut asking = Asking::new(
        request::RootsList::METHOD,
        &json!({}),
        "roots",
        "list-roots:v1".into(),
        report_roots,
    )
    .map_err(|_| "cannot ask".to_owned())?;
    asking.roots_changed = ctx.roots_changed.load(Ordering::SeqCst);
    Ok(asking)
}

fn report_roots(asking: &Asking, value: Value) -> Result<CallToolResult, String> {
    let answer: ListRootsResult = answer_as(request::RootsList::METHOD, value)?;
    let uris: Vec<&str> = answer.roots.iter().map(|r| r.uri.as_str()).collect();
    let seen = asking.roots_changed;
    let text = format!(
        "{} root(s): {}; notifications/roots/list_changed received: {seen}",
        uris.len(),
        if uris.is_empty() {
            "none".to_owned()
        } else {
            uris.join(", ")
        }
    );
    Ok(structured(
        text,
        json!({"roots": answer.roots, "listChangedSeen": seen}),
    ))
}
