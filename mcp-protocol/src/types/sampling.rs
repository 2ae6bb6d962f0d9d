//! `sampling/createMessage` (every revision): the server asks the client's
//! model for a completion. On 2026-07-28 the request travels inside an
//! `input_required` result.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Extra;

/// One message of a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// `"user"` or `"assistant"`.
    pub role: String,
    /// A content block (`{"type": "text", "text": …}`, an image …), or
    /// (2025-11-25 and later) an array of them.
    pub content: Value,
    /// Other fields (`_meta` …).
    #[serde(flatten)]
    pub extra: Extra,
}

impl SamplingMessage {
    /// A user message of one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        SamplingMessage {
            role: "user".into(),
            content: json!({"type": "text", "text": text.into()}),
            extra: Extra::new(),
        }
    }
}

/// `sampling/createMessage` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageParams {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens to sample.
    pub max_tokens: u64,
    /// A system prompt the client may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Other fields (`modelPreferences`, `includeContext`, `tools` …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The answer to `sampling/createMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// `"assistant"`, normally.
    pub role: String,
    /// A content block, or an array of them.
    pub content: Value,
    /// The model that answered.
    pub model: String,
    /// Why sampling stopped (`endTurn`, `stopSequence`, `maxTokens` …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Other fields (`_meta` …).
    #[serde(flatten)]
    pub extra: Extra,
}

impl CreateMessageResult {
    /// The text of its text blocks, joined by newlines (empty when it has none).
    pub fn text(&self) -> String {
        let blocks = match &self.content {
            Value::Array(blocks) => blocks.iter().collect(),
            block => vec![block],
        };
        blocks
            .into_iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_results_round_trip() {
        let params = CreateMessageParams {
            messages: vec![SamplingMessage::user_text("What is 2+2?")],
            max_tokens: 100,
            system_prompt: None,
            extra: Extra::new(),
        };
        let value = serde_json::to_value(&params).unwrap();
        assert_eq!(
            value,
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "What is 2+2?"}}],
                   "maxTokens": 100})
        );
        let answer = json!({"role": "assistant", "content": {"type": "text", "text": "4"},
                            "model": "m", "stopReason": "endTurn"});
        let parsed: CreateMessageResult = serde_json::from_value(answer.clone()).unwrap();
        assert_eq!(parsed.text(), "4");
        assert_eq!(serde_json::to_value(&parsed).unwrap(), answer);
        let many: CreateMessageResult = serde_json::from_value(json!({"role": "assistant",
            "content": [{"type": "text", "text": "a"}, {"type": "image", "data": "", "mimeType": "image/png"},
                        {"type": "text", "text": "b"}], "model": "m"}))
        .unwrap();
        assert_eq!(many.text(), "a\nb");
        assert!(
            serde_json::from_value::<CreateMessageResult>(json!({"role": "assistant"})).is_err()
        );
    }
}
