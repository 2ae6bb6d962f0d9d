//! MCP types for what the client sends and reads.
//!
//! Every struct keeps the fields it does not know in `extra`, and content of
//! an unknown type is kept as [`Content::Unknown`]: a newer server must not
//! break an older client.

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Fields a type does not name, kept as they came.
pub type Extra = Map<String, Value>;

/// Name and version of a client or server implementation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    #[serde(default)]
    pub version: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Other fields (description, icons, websiteUrl …).
    #[serde(flatten)]
    pub extra: Extra,
}

impl Implementation {
    /// An implementation with a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            extra: Extra::new(),
        }
    }
}

/// What the client can do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientCapabilities {
    /// Roots support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<Value>,
    /// Sampling support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Value>,
    /// Elicitation support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<Value>,
    /// Experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Value>,
    /// Other capabilities.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The server's `tools` capability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// The server sends `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// What the server can do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// Tools, when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Resources, when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Value>,
    /// Prompts, when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Value>,
    /// Log messages, when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Value>,
    /// Argument completion, when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<Value>,
    /// Other capabilities.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `initialize` parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The version the client offers.
    pub protocol_version: String,
    /// The client's capabilities.
    pub capabilities: ClientCapabilities,
    /// The client's name and version.
    pub client_info: Implementation,
}

/// `initialize` result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the server chose.
    pub protocol_version: String,
    /// The server's capabilities.
    #[serde(default)]
    pub capabilities: ServerCapabilities,
    /// The server's name and version.
    pub server_info: Implementation,
    /// How to use the server, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Hints about a tool's behaviour. Hints, not guarantees: a server may lie.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling again with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world (the web, for example).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An icon for display.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// Where the icon is (a URL or a data URI).
    pub src: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its sizes ("48x48", "any").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// Other fields (theme …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool the server offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The tool's name, unique on its server.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments.
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, when the tool declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Other fields (`_meta`, `execution` …).
    #[serde(flatten)]
    pub extra: Extra,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

/// `tools/list` result: one page.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// The tools on this page.
    pub tools: Vec<Tool>,
    /// The cursor of the next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `resources/read` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// The contents (text or blob entries, each with its `uri`), as sent.
    pub contents: Vec<Value>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `tools/call` result.
///
/// `is_error: true` means the tool ran and failed (a missing file, a rate
/// limit): the call itself succeeded, and the content says what went wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// What the tool returned.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Structured output, checked against the tool's `outputSchema` when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool reported a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Other fields (`_meta` …).
    #[serde(flatten)]
    pub extra: Extra,
}

impl CallToolResult {
    /// The tool reported a failure (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }

    /// All text content joined with newlines.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.content {
            if let Content::Text(t) = c {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&t.text);
            }
        }
        out
    }
}

/// One piece of tool output.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text(TextContent),
    /// An image, base64-encoded.
    Image(BinaryContent),
    /// Audio, base64-encoded.
    Audio(BinaryContent),
    /// A link to a resource.
    ResourceLink(TaggedFields),
    /// A resource embedded in the result.
    Resource(TaggedFields),
    /// A content type this client does not know, kept as it came.
    Unknown(Value),
}

/// Text content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// Always `"text"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The text.
    pub text: String,
    /// Other fields (annotations, `_meta`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// Image or audio content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BinaryContent {
    /// `"image"` or `"audio"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Base64 data.
    pub data: String,
    /// MIME type.
    pub mime_type: String,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Content whose fields this client passes through (resource links, embedded resources).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaggedFields {
    /// The content type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its fields (`uri`, `name`, `resource` …).
    #[serde(flatten)]
    pub fields: Extra,
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // A known type with the wrong fields is kept as unknown rather than
        // failing the whole result.
        let parsed = match kind {
            "text" => TextContent::deserialize(&value).ok().map(Content::Text),
            "image" => BinaryContent::deserialize(&value).ok().map(Content::Image),
            "audio" => BinaryContent::deserialize(&value).ok().map(Content::Audio),
            "resource_link" => TaggedFields::deserialize(&value)
                .ok()
                .map(Content::ResourceLink),
            "resource" => TaggedFields::deserialize(&value)
                .ok()
                .map(Content::Resource),
            _ => None,
        };
        Ok(parsed.unwrap_or(Content::Unknown(value)))
    }
}

impl Content {
    /// Text content.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(TextContent {
            kind: "text".into(),
            text: text.into(),
            extra: Extra::new(),
        })
    }

    /// The content type (`"text"`, `"image"` …).
    pub fn kind(&self) -> &str {
        match self {
            Content::Text(t) => &t.kind,
            Content::Image(b) | Content::Audio(b) => &b.kind,
            Content::ResourceLink(f) | Content::Resource(f) => &f.kind,
            Content::Unknown(v) => v.get("type").and_then(Value::as_str).unwrap_or("unknown"),
        }
    }
}

/// `notifications/progress` parameters.
///
/// The numbers are kept as the server wrote them (`50` stays `50`); use
/// [`progress`](Self::progress) and [`total`](Self::total) for arithmetic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressParams {
    /// The token the request carried in `_meta.progressToken`.
    pub progress_token: Value,
    /// Progress so far; increases with each notification.
    #[serde(rename = "progress")]
    pub progress_value: serde_json::Number,
    /// The total, when known.
    #[serde(rename = "total", default, skip_serializing_if = "Option::is_none")]
    pub total_value: Option<serde_json::Number>,
    /// A message for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Other fields (`_meta` …).
    #[serde(flatten)]
    pub extra: Extra,
}

impl ProgressParams {
    /// Progress so far.
    pub fn progress(&self) -> f64 {
        self.progress_value.as_f64().unwrap_or(0.0)
    }

    /// The total, when known.
    pub fn total(&self) -> Option<f64> {
        self.total_value
            .as_ref()
            .and_then(serde_json::Number::as_f64)
    }
}

/// `notifications/message` parameters: a log message from the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggingMessageParams {
    /// Severity (`debug` … `emergency`).
    pub level: String,
    /// The logger's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: any JSON.
    #[serde(default)]
    pub data: Value,
}

/// `notifications/cancelled` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledParams {
    /// The request being cancelled.
    pub request_id: mcp_jsonrpc::Id,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_and_content_are_kept() {
        let r: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "text", "text": "hi", "annotations": {"audience": ["user"]}},
                {"type": "hologram", "frames": 3},
                {"type": "image", "data": "AAA=", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///a", "name": "a"},
                {"type": "resource", "resource": {"uri": "file:///b", "text": "b"}},
                {"type": "text"}
            ],
            "structuredContent": {"x": 1},
            "isError": false,
            "futureField": true
        }))
        .unwrap();
        let kinds: Vec<_> = r.content.iter().map(Content::kind).collect();
        assert_eq!(
            kinds,
            [
                "text",
                "hologram",
                "image",
                "resource_link",
                "resource",
                "text"
            ]
        );
        assert!(matches!(r.content[1], Content::Unknown(_)));
        assert!(
            matches!(r.content[5], Content::Unknown(_)),
            "text without text is kept raw"
        );
        assert_eq!(r.extra["futureField"], json!(true));
        let back = serde_json::to_value(&r).unwrap();
        assert_eq!(back["content"][1], json!({"type": "hologram", "frames": 3}));
        assert_eq!(
            back["content"][0]["annotations"],
            json!({"audience": ["user"]})
        );
        assert_eq!(back["futureField"], json!(true));
    }

    #[test]
    fn tool_keeps_schema_annotations_and_extra() {
        let t: Tool = serde_json::from_value(json!({
            "name": "read_file",
            "inputSchema": {"type": "object", "required": ["path"]},
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "destructiveHint": false},
            "icons": [{"src": "https://x/i.png", "sizes": ["48x48"]}],
            "execution": {"taskSupport": "optional"}
        }))
        .unwrap();
        assert_eq!(t.annotations.as_ref().unwrap().read_only_hint, Some(true));
        assert_eq!(
            t.icons.as_ref().unwrap()[0].sizes.as_deref(),
            Some(&["48x48".to_string()][..])
        );
        assert!(t.extra.contains_key("execution"));
        let no_schema: Tool = serde_json::from_value(json!({"name": "x"})).unwrap();
        assert_eq!(no_schema.input_schema, json!({"type": "object"}));
    }
}
