//! Resources, prompts and completion: the server features beside tools
//! (every revision; 2025-06-18 added `title`, 2025-11-25 `icons`).
//!
//! Unknown fields are kept in each type's `extra`, and a content entry of a
//! kind this client does not know is kept as it came, never refused.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::{Content, Extra, Icon};

/// A resource a server offers (`resources/list`).
// Deserialize: one pass (`by_hand.rs`), not derive's `flatten` buffering.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// Its URI, the key to read it by.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A display name (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Other fields (annotations, `_meta`).
    #[serde(flatten)]
    pub extra: Extra,
}

impl Resource {
    /// A resource with this URI and name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: None,
            extra: Extra::new(),
        }
    }
}

/// A family of resources named by an RFC 6570 URI template
/// (`resources/templates/list`).
// Deserialize: one pass (`by_hand.rs`), not derive's `flatten` buffering.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// The template (`file:///{path}`).
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it gives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of what it gives, when all share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ResourceTemplate {
    /// A template with this pattern and name.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            extra: Extra::new(),
        }
    }

    /// The template's variables, in order (`{path}`, `{+path}`, `{?a,b}`
    /// give `path`, `path`, `a`, `b`): what completion can fill.
    pub fn variables(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = self.uri_template.as_str();
        while let Some(open) = rest.find('{') {
            let after = rest.get(open + 1..).unwrap_or_default();
            let Some(close) = after.find('}') else { break };
            let inner = after.get(..close).unwrap_or_default();
            let inner = inner.trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
            for name in inner.split(',') {
                let name = name.trim_end_matches('*');
                let name = name.split(':').next().unwrap_or(name);
                if !name.is_empty() && !out.iter().any(|n| n == name) {
                    out.push(name.to_owned());
                }
            }
            rest = after.get(close + 1..).unwrap_or_default();
        }
        out
    }
}

/// `resources/list` result: one page.
// Deserialize: one pass (`by_hand.rs`), not derive's `flatten` buffering.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourcesResult {
    /// This page's resources.
    #[serde(default)]
    pub resources: Vec<Resource>,
    /// Where the next page starts; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Other fields (on 2026-07-28, cache hints).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `resources/templates/list` result: one page.
// Deserialize: one pass (`by_hand.rs`), not derive's `flatten` buffering.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListResourceTemplatesResult {
    /// This page's templates.
    #[serde(default)]
    pub resource_templates: Vec<ResourceTemplate>,
    /// Where the next page starts; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `resources/read` (and `resources/subscribe`, `resources/unsubscribe`)
/// parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceParams {
    /// The resource.
    pub uri: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ResourceParams {
    /// For this URI.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceParams {
            uri: uri.into(),
            meta: None,
            extra: Extra::new(),
        }
    }
}

/// One entry of a resource's contents.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum ResourceContents {
    /// Text.
    Text(TextResourceContents),
    /// Binary data, base64 (decoded only when asked: [`BlobResourceContents::bytes`]).
    Blob(BlobResourceContents),
    /// An entry of a shape this client does not know, kept as it came.
    Unknown(Value),
}

/// Text contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextResourceContents {
    /// The URI these contents are of.
    pub uri: String,
    /// The MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text.
    pub text: String,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Binary contents, kept base64 until [`bytes`](Self::bytes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlobResourceContents {
    /// The URI these contents are of.
    pub uri: String,
    /// The MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The data, base64.
    pub blob: String,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl BlobResourceContents {
    /// The data, decoded (standard base64, padding optional). An error
    /// says the server sent something that is not base64.
    pub fn bytes(&self) -> Result<Vec<u8>, base64::DecodeError> {
        let engine = base64::engine::GeneralPurpose::new(
            &base64::alphabet::STANDARD,
            base64::engine::GeneralPurposeConfig::new()
                .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
        );
        engine.decode(self.blob.trim())
    }

    /// The decoded size, computed from the base64 length (no decoding).
    pub fn decoded_len(&self) -> usize {
        let b = self.blob.trim();
        let pad = b.bytes().rev().take_while(|&c| c == b'=').count();
        (b.len() * 3 / 4).saturating_sub(pad)
    }
}

impl<'de> Deserialize<'de> for ResourceContents {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let parsed = if value.get("text").is_some() {
            TextResourceContents::deserialize(&value)
                .ok()
                .map(ResourceContents::Text)
        } else if value.get("blob").is_some() {
            BlobResourceContents::deserialize(&value)
                .ok()
                .map(ResourceContents::Blob)
        } else {
            None
        };
        Ok(parsed.unwrap_or(ResourceContents::Unknown(value)))
    }
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents::Text(TextResourceContents {
            uri: uri.into(),
            mime_type: None,
            text: text.into(),
            extra: Extra::new(),
        })
    }

    /// Binary contents from bytes (encoded here).
    pub fn blob(uri: impl Into<String>, bytes: &[u8]) -> Self {
        ResourceContents::Blob(BlobResourceContents {
            uri: uri.into(),
            mime_type: None,
            blob: base64::engine::general_purpose::STANDARD.encode(bytes),
            extra: Extra::new(),
        })
    }

    /// The URI the entry is of, when it names one.
    pub fn uri(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(t) => Some(&t.uri),
            ResourceContents::Blob(b) => Some(&b.uri),
            ResourceContents::Unknown(v) => v.get("uri").and_then(Value::as_str),
        }
    }

    /// The MIME type, when given.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(t) => t.mime_type.as_deref(),
            ResourceContents::Blob(b) => b.mime_type.as_deref(),
            ResourceContents::Unknown(v) => v.get("mimeType").and_then(Value::as_str),
        }
    }

    /// The text, for text contents.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ResourceContents::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

/// `notifications/resources/updated` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceUpdatedParams {
    /// The resource that changed (or one under a subscribed URI).
    pub uri: String,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A prompt template a server offers (`prompts/list`).
// Deserialize: one pass (`by_hand.rs`), not derive's `flatten` buffering.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// Its name, the key to get it by.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Icons (2025-11-25 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Prompt {
    /// A prompt with this name and no arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Prompt {
            name: name.into(),
            title: None,
            description: None,
            arguments: None,
            icons: None,
            extra: Extra::new(),
        }
    }

    /// Checks arguments against the declared ones before they are sent:
    /// every required one present, none undeclared. The error names each
    /// problem and the arguments there are.
    pub fn check_arguments(&self, given: &BTreeMap<String, String>) -> Result<(), String> {
        let declared = self.arguments.as_deref().unwrap_or_default();
        let mut problems = Vec::new();
        for arg in declared {
            if arg.required == Some(true) && !given.contains_key(&arg.name) {
                problems.push(format!("`{}` is required", arg.name));
            }
        }
        for name in given.keys() {
            if !declared.iter().any(|a| &a.name == name) {
                problems.push(format!("`{name}` is not an argument of this prompt"));
            }
        }
        if problems.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = declared
            .iter()
            .map(|a| {
                if a.required == Some(true) {
                    format!("{} (required)", a.name)
                } else {
                    a.name.clone()
                }
            })
            .collect();
        let known = if names.is_empty() {
            "it takes none".to_owned()
        } else {
            format!("it takes {}", names.join(", "))
        };
        Err(format!("{}; {known}", problems.join(", ")))
    }
}

/// One argument of a prompt.
// Deserialize: one pass (`by_hand.rs`), not derive's `flatten` buffering.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl PromptArgument {
    /// An argument, required or not.
    pub fn new(name: impl Into<String>, required: bool) -> Self {
        PromptArgument {
            name: name.into(),
            title: None,
            description: None,
            required: Some(required),
            extra: Extra::new(),
        }
    }
}

/// `prompts/list` result: one page.
// Deserialize: one pass (`by_hand.rs`), not derive's `flatten` buffering.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPromptsResult {
    /// This page's prompts.
    #[serde(default)]
    pub prompts: Vec<Prompt>,
    /// Where the next page starts; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `prompts/get` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetPromptParams {
    /// The prompt.
    pub name: String,
    /// Its arguments (string values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `prompts/get` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetPromptResult {
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages, to put before the model.
    #[serde(default)]
    pub messages: Vec<PromptMessage>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// What it says.
    pub content: Content,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// What a completion is for: a prompt's argument or a resource template's
/// variable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum CompletionReference {
    /// A prompt, by name.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// A resource template, by its template.
    #[serde(rename = "ref/resource")]
    Resource {
        /// The template (`uri` on the wire).
        uri: String,
    },
}

/// The argument being completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionArgument {
    /// Its name.
    pub name: String,
    /// What has been typed so far.
    pub value: String,
}

/// Arguments already chosen, for completions that depend on them
/// (2025-06-18 and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionContext {
    /// Their values, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<BTreeMap<String, String>>,
}

/// `completion/complete` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteParams {
    /// What the completion is for.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument.
    pub argument: CompletionArgument,
    /// Arguments already chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// `completion/complete` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteResult {
    /// The suggestions.
    pub completion: Completion,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Suggested values (at most 100 per answer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// The values, best first.
    #[serde(default)]
    pub values: Vec<String>,
    /// How many there are in all, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn contents_of_every_kind_are_read_and_unknown_ones_kept() {
        let v = json!([
            {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hi"},
            {"uri": "file:///b.bin", "blob": "AAEC"},
            {"uri": "x:y", "something": 1}
        ]);
        let c: Vec<ResourceContents> = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(c[0].as_text(), Some("hi"));
        assert_eq!(c[0].mime_type(), Some("text/plain"));
        let ResourceContents::Blob(b) = &c[1] else {
            panic!()
        };
        assert_eq!(b.bytes().unwrap(), [0, 1, 2]);
        assert_eq!(b.decoded_len(), 3);
        assert!(matches!(c[2], ResourceContents::Unknown(_)));
        assert_eq!(c[2].uri(), Some("x:y"));
        // Written back as they came.
        assert_eq!(serde_json::to_value(&c).unwrap(), v);
        let bad = BlobResourceContents {
            uri: "u".into(),
            mime_type: None,
            blob: "not base64!".into(),
            extra: Extra::new(),
        };
        assert!(bad.bytes().is_err());
        assert_eq!(ResourceContents::blob("u", b"hello").uri(), Some("u"));
    }

    #[test]
    fn template_variables() {
        let t = ResourceTemplate::new("file:///{+path}{?a,b*}/x/{id:3}", "t");
        assert_eq!(t.variables(), ["path", "a", "b", "id"]);
        assert!(
            ResourceTemplate::new("plain://x", "t")
                .variables()
                .is_empty()
        );
        assert!(
            ResourceTemplate::new("broken://{x", "t")
                .variables()
                .is_empty()
        );
    }

    #[test]
    fn prompt_arguments_are_checked_before_sending() {
        let mut p = Prompt::new("review");
        p.arguments = Some(vec![
            PromptArgument::new("code", true),
            PromptArgument::new("style", false),
        ]);
        let args = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert!(p.check_arguments(&args(&[("code", "x")])).is_ok());
        let e = p
            .check_arguments(&args(&[("style", "x"), ("colour", "y")]))
            .unwrap_err();
        assert!(e.contains("`code` is required"), "{e}");
        assert!(e.contains("`colour` is not an argument"), "{e}");
        assert!(e.contains("it takes code (required), style"), "{e}");
        assert!(
            Prompt::new("bare")
                .check_arguments(&args(&[("x", "1")]))
                .is_err()
        );
    }

    #[test]
    fn completion_wire_form() {
        let p = CompleteParams {
            reference: CompletionReference::Prompt {
                name: "review".into(),
            },
            argument: CompletionArgument {
                name: "language".into(),
                value: "py".into(),
            },
            context: Some(CompletionContext {
                arguments: Some([("framework".to_owned(), "flask".to_owned())].into()),
            }),
            meta: None,
        };
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"ref": {"type": "ref/prompt", "name": "review"},
                   "argument": {"name": "language", "value": "py"},
                   "context": {"arguments": {"framework": "flask"}}})
        );
        let r: CompleteResult =
            serde_json::from_value(json!({"completion": {"values": ["python"], "hasMore": false}}))
                .unwrap();
        assert_eq!(r.completion.values, ["python"]);
        assert_eq!(r.completion.has_more, Some(false));
        let reference: CompletionReference =
            serde_json::from_value(json!({"type": "ref/resource", "uri": "file:///{path}"}))
                .unwrap();
        assert!(matches!(reference, CompletionReference::Resource { .. }));
    }

    #[test]
    fn prompt_messages_carry_content() {
        let r: GetPromptResult = serde_json::from_value(json!({
            "description": "d",
            "messages": [{"role": "user", "content": {"type": "text", "text": "hello"}}]
        }))
        .unwrap();
        assert_eq!(r.messages[0].role, "user");
        assert_eq!(r.messages[0].content.kind(), "text");
    }
}

read_by_hand!(
    Resource,
    "a resource object",
    required {
        uri: "uri",
        name: "name"
    },
    optional {
        title: "title",
        description: "description",
        mime_type: "mimeType",
        size: "size",
        icons: "icons"
    },
    defaulted {},
);
read_by_hand!(
    ResourceTemplate,
    "a resource template object",
    required {
        uri_template: "uriTemplate",
        name: "name"
    },
    optional {
        title: "title",
        description: "description",
        mime_type: "mimeType"
    },
    defaulted {},
);
read_by_hand!(
    ListResourcesResult,
    "a resources/list result",
    required {},
    optional {
        next_cursor: "nextCursor"
    },
    defaulted {
        resources: "resources"
    },
);
read_by_hand!(
    ListResourceTemplatesResult,
    "a resources/templates/list result",
    required {},
    optional {
        next_cursor: "nextCursor"
    },
    defaulted {
        resource_templates: "resourceTemplates"
    },
);
read_by_hand!(
    Prompt,
    "a prompt object",
    required { name: "name" },
    optional {
        title: "title",
        description: "description",
        arguments: "arguments",
        icons: "icons"
    },
    defaulted {},
);
read_by_hand!(
    PromptArgument,
    "a prompt argument object",
    required { name: "name" },
    optional {
        title: "title",
        description: "description",
        required: "required"
    },
    defaulted {},
);
read_by_hand!(
    ListPromptsResult,
    "a prompts/list result",
    required {},
    optional {
        next_cursor: "nextCursor"
    },
    defaulted { prompts: "prompts" },
);
