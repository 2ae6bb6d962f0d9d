//! A tool's answer: `CallToolResult` and the content it carries, read by
//! hand where serde's derive would buffer or copy a large output.

use serde::de::value::SeqAccessDeserializer;
use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
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
                const FIELDS: &[&str] = &["content", "structuredContent", "isError"];
                while let Some(key) = map.next_key_seed(Key(FIELDS))? {
                    match key {
                        Field::Known(0) if content.is_some() => {
                            return Err(A::Error::duplicate_field("content"));
                        }
                        Field::Known(0) => content = Some(map.next_value::<Vec<Content>>()?),
                        Field::Known(1) if structured_content.is_some() => {
                            return Err(A::Error::duplicate_field("structuredContent"));
                        }
                        Field::Known(1) => {
                            structured_content = Some(map.next_value::<Option<Value>>()?);
                        }
                        Field::Known(_) if is_error.is_some() => {
                            return Err(A::Error::duplicate_field("isError"));
                        }
                        Field::Known(_) => is_error = Some(map.next_value::<Option<bool>>()?),
                        Field::Other(key) => {
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
    /// Reads a result from its JSON text: the plain shape most tools send
    /// (text items and perhaps `isError`) without serde, in one pass over
    /// each text; anything else with serde. The same value either way.
    ///
    /// ```
    /// use mcp_stack_protocol::types::CallToolResult;
    ///
    /// let r = CallToolResult::from_json_str(
    ///     r#"{"content": [{"type": "text", "text": "done"}], "isError": false}"#,
    /// )?;
    /// assert_eq!(r.text(), "done");
    /// assert!(!r.is_error());
    /// // Other shapes are serde's, errors included.
    /// assert!(CallToolResult::from_json_str(r#"{"content": 7}"#).is_err());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn from_json_str(text: &str) -> Result<Self, serde_json::Error> {
        match super::plain::call_result(text) {
            Some(result) => Ok(result),
            None => serde_json::from_str(text),
        }
    }

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

    /// The text items of the content, in order, borrowed: no copy of a
    /// large answer is made to read it.
    ///
    /// ```
    /// use mcp_stack_protocol::types::{CallToolResult, Content};
    ///
    /// let result = CallToolResult::new(vec![Content::text("a"), Content::text("b")]);
    /// assert_eq!(result.texts().collect::<Vec<_>>(), ["a", "b"]);
    /// assert_eq!(result.text(), "a\nb");
    /// ```
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.content.iter().filter_map(|c| match c {
            Content::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
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
        d.deserialize_any(ContentVisitor)
    }
}

/// Reads one content item. An object's `type` and `text` are read straight
/// into their strings, so text content (the common case) is built with no
/// intermediate map and its text is moved, not copied (a tool's output can
/// be megabytes); anything else is gathered into a `Value` and classified.
struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Content;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a content item")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Content, A::Error> {
        const FIELDS: &[&str] = &["type", "text"];
        let (mut kind, mut text) = (None, None);
        let mut rest = Map::new();
        // A repeated member: the last one counts, as in a `Value`.
        while let Some(key) = map.next_key_seed(Key(FIELDS))? {
            match key {
                Field::Known(0) => kind = Some(map.next_value::<Value>()?),
                Field::Known(_) => text = Some(map.next_value::<Value>()?),
                Field::Other(key) => {
                    let value = map.next_value::<Value>()?;
                    rest.insert(key, value);
                }
            }
        }
        match (kind, text) {
            (Some(Value::String(kind)), Some(Value::String(text))) if kind == "text" => {
                Ok(Content::Text(TextContent {
                    kind,
                    text,
                    extra: rest,
                }))
            }
            (kind, text) => {
                if let Some(kind) = kind {
                    rest.insert("type".into(), kind);
                }
                if let Some(text) = text {
                    rest.insert("text".into(), text);
                }
                Ok(classify(Value::Object(rest)))
            }
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Content, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(Content::Unknown)
    }

    fn visit_bool<E: Error>(self, v: bool) -> Result<Content, E> {
        Ok(Content::Unknown(Value::Bool(v)))
    }

    fn visit_i64<E: Error>(self, v: i64) -> Result<Content, E> {
        Ok(Content::Unknown(Value::from(v)))
    }

    fn visit_u64<E: Error>(self, v: u64) -> Result<Content, E> {
        Ok(Content::Unknown(Value::from(v)))
    }

    fn visit_f64<E: Error>(self, v: f64) -> Result<Content, E> {
        Ok(Content::Unknown(Value::from(v)))
    }

    fn visit_str<E: Error>(self, v: &str) -> Result<Content, E> {
        Ok(Content::Unknown(Value::from(v)))
    }

    fn visit_string<E: Error>(self, v: String) -> Result<Content, E> {
        Ok(Content::Unknown(Value::String(v)))
    }

    fn visit_unit<E: Error>(self) -> Result<Content, E> {
        Ok(Content::Unknown(Value::Null))
    }

    fn visit_none<E: Error>(self) -> Result<Content, E> {
        Ok(Content::Unknown(Value::Null))
    }
}

/// A content object that is not plain text content, by its `type`. A known
/// type with the wrong fields is kept as unknown rather than failing the
/// whole result.
fn classify(value: Value) -> Content {
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
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
    parsed.unwrap_or(Content::Unknown(value))
}

/// A map key: the index of one of the names a reader knows (read without
/// allocating), or any other name, owned.
pub(super) enum Field {
    Known(usize),
    Other(String),
}

/// Reads a [`Field`] among these names.
pub(super) struct Key(pub(super) &'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Field;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Field, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Field;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: Error>(self, v: &str) -> Result<Field, E> {
        Ok(match self.0.iter().position(|k| *k == v) {
            Some(i) => Field::Known(i),
            None => Field::Other(v.to_owned()),
        })
    }

    fn visit_string<E: Error>(self, v: String) -> Result<Field, E> {
        Ok(match self.0.iter().position(|k| *k == v) {
            Some(i) => Field::Known(i),
            None => Field::Other(v),
        })
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
