//! A tool's answer: `CallToolResult` and the content it carries, read by
//! hand where serde's derive would buffer or copy a large output.

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Extra;

/// `tools/call` result.
///
/// `is_error: true` means the tool ran and failed (a missing file, a rate
/// limit): the call itself succeeded, and the content says what went wrong.
// Deserialize by hand: `#[serde(flatten)]` would buffer the whole result
// (a tool's output can be megabytes) before reading it.
#[derive(Debug, Clone, PartialEq, Serialize)]
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

impl<'de> Deserialize<'de> for CallToolResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, MapAccess, Visitor};
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = CallToolResult;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a tools/call result object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CallToolResult, A::Error> {
                let mut content = None;
                let mut structured_content = None;
                let mut is_error = None;
                let mut extra = Extra::new();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "content" if content.is_some() => {
                            return Err(A::Error::duplicate_field("content"));
                        }
                        "content" => content = Some(map.next_value::<Vec<Content>>()?),
                        "structuredContent" if structured_content.is_some() => {
                            return Err(A::Error::duplicate_field("structuredContent"));
                        }
                        "structuredContent" => {
                            structured_content = Some(map.next_value::<Option<Value>>()?);
                        }
                        "isError" if is_error.is_some() => {
                            return Err(A::Error::duplicate_field("isError"));
                        }
                        "isError" => is_error = Some(map.next_value::<Option<bool>>()?),
                        _ => {
                            let value = map.next_value::<Value>()?;
                            extra.insert(key, value);
                        }
                    }
                }
                Ok(CallToolResult {
                    content: content.unwrap_or_default(),
                    structured_content: structured_content.flatten(),
                    is_error: is_error.flatten(),
                    extra,
                })
            }
        }
        d.deserialize_map(Fields)
    }
}

impl CallToolResult {
    /// A result with this content (no structured content, not an error).
    pub fn new(content: Vec<Content>) -> Self {
        CallToolResult {
            content,
            structured_content: None,
            is_error: None,
            extra: Extra::new(),
        }
    }

    /// A result that reports the tool's failure (`isError: true`) with
    /// this content.
    pub fn error(content: Vec<Content>) -> Self {
        CallToolResult {
            is_error: Some(true),
            ..Self::new(content)
        }
    }

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
        // Text, the common case, is taken apart in place: its text is
        // moved, not copied (a tool's output can be megabytes).
        let value = match value {
            Value::Object(map) => match text_content(map) {
                Ok(text) => return Ok(Content::Text(text)),
                Err(map) => Value::Object(map),
            },
            other => other,
        };
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

/// `map` as text content, moving its members, when it is one: `type` is
/// `"text"` and `text` a string; otherwise `map` back, untouched.
fn text_content(mut map: Map<String, Value>) -> Result<TextContent, Map<String, Value>> {
    let is_text = map.get("type").and_then(Value::as_str) == Some("text")
        && map.get("text").is_some_and(Value::is_string);
    if !is_text {
        return Err(map);
    }
    match (map.remove("type"), map.remove("text")) {
        (Some(Value::String(kind)), Some(Value::String(text))) => Ok(TextContent {
            kind,
            text,
            extra: map,
        }),
        // Checked above; kept total rather than trusted.
        _ => Err(map),
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
