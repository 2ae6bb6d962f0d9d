//! `elicitation/create` (2025-06-18 and later): the server asks the user,
//! through the client, for a form's values or (2025-11-25) to visit a URL.
//! On 2026-07-28 the request travels inside an `input_required` result.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Extra;

/// `elicitation/create` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequestParams {
    /// `"form"` (what an absent mode means) or `"url"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What to tell the user.
    pub message: String,
    /// Form mode: the JSON Schema of the answer (an object of primitive
    /// properties).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<Value>,
    /// URL mode: the page the user is sent to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Other fields (`elicitationId`, `_meta` …).
    #[serde(flatten)]
    pub extra: Extra,
}

impl ElicitRequestParams {
    /// A form-mode request: `message` and the schema of the answer.
    pub fn form(message: impl Into<String>, requested_schema: Value) -> Self {
        ElicitRequestParams {
            mode: Some("form".into()),
            message: message.into(),
            requested_schema: Some(requested_schema),
            url: None,
            extra: Extra::new(),
        }
    }
}

/// The answer to `elicitation/create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// `"accept"`, `"decline"` or `"cancel"`.
    pub action: String,
    /// Form mode, accepted: the values, by property name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
    /// Other fields (`_meta` …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `notifications/elicitation/complete` parameters (2025-11-25): a
/// URL-mode elicitation is done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteParams {
    /// The `elicitationId` of the `elicitation/create` that sent the user
    /// to a URL.
    pub elicitation_id: String,
    /// Other fields (`_meta` …).
    #[serde(flatten)]
    pub extra: Extra,
}

impl ElicitResult {
    /// The user accepted (`"action": "accept"`).
    pub fn is_accept(&self) -> bool {
        self.action == "accept"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn form_and_url_requests_round_trip() {
        let form = ElicitRequestParams::form(
            "What is your name?",
            json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        );
        let value = serde_json::to_value(&form).unwrap();
        assert_eq!(value["mode"], "form");
        assert_eq!(
            value["requestedSchema"]["properties"]["name"]["type"],
            "string"
        );
        assert_eq!(
            serde_json::from_value::<ElicitRequestParams>(value).unwrap(),
            form
        );

        let url = json!({"mode": "url", "url": "https://x/y", "message": "go",
                         "elicitationId": "e1"});
        let parsed: ElicitRequestParams = serde_json::from_value(url.clone()).unwrap();
        assert_eq!(parsed.url.as_deref(), Some("https://x/y"));
        assert_eq!(parsed.requested_schema, None);
        assert_eq!(parsed.extra["elicitationId"], "e1");
        assert_eq!(serde_json::to_value(&parsed).unwrap(), url);
    }

    #[test]
    fn results_keep_content_and_extra() {
        let accept = json!({"action": "accept", "content": {"name": "octocat"}, "x": 1});
        let parsed: ElicitResult = serde_json::from_value(accept.clone()).unwrap();
        assert!(parsed.is_accept());
        assert_eq!(parsed.content.as_ref().unwrap()["name"], "octocat");
        assert_eq!(serde_json::to_value(&parsed).unwrap(), accept);
        let decline: ElicitResult = serde_json::from_value(json!({"action": "decline"})).unwrap();
        assert!(!decline.is_accept());
        assert_eq!(decline.content, None);
        assert!(serde_json::from_value::<ElicitResult>(json!({"content": {}})).is_err());
    }
}
