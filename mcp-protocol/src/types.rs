//! MCP types for what clients and servers send and read.
//!
//! Every struct keeps the fields it does not know in `extra`, and content of
//! an unknown type is kept as [`Content::Unknown`]: a newer server must not
//! break an older client.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[macro_use]
mod by_hand;
mod content;
mod elicitation;
mod plain;
mod resources;
mod sampling;
mod schema;
mod tool;
mod typed;

pub use content::{BinaryContent, CallToolResult, Content, TaggedFields, TextContent};
pub use elicitation::{ElicitRequestParams, ElicitResult, ElicitationCompleteParams};
pub use resources::{
    BlobResourceContents, CompleteParams, CompleteResult, Completion, CompletionArgument,
    CompletionContext, CompletionReference, GetPromptParams, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, Prompt, PromptArgument, PromptMessage,
    Resource, ResourceContents, ResourceParams, ResourceTemplate, ResourceUpdatedParams,
    TextResourceContents,
};
pub use sampling::{CreateMessageParams, CreateMessageResult, SamplingMessage};
pub use schema::Schema;
pub use tool::LazyTool;
pub use typed::{DecodeError, ToolError};

/// Fields a type does not name, kept as they came.
pub type Extra = Map<String, Value>;

/// Name and version of a client or server implementation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// 2026-07-28: the extensions the client supports, by identifier
    /// (`io.modelcontextprotocol/tasks`), each with its settings object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Other capabilities.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The server's `tools` capability.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// Tools, when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCapability>,
    /// Resources, when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Prompts, when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<PromptsCapability>,
    /// Log messages, when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Value>,
    /// Argument completion, when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<Value>,
    /// 2025-11-25: the task operations served and the requests that may run
    /// as tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<crate::tasks::TasksCapability>,
    /// 2026-07-28: the extensions the server supports, by identifier
    /// (`io.modelcontextprotocol/tasks`), each with its settings object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Other capabilities.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ServerCapabilities {
    /// The settings of an extension the server declared under
    /// `extensions` (SEP-2133), by its identifier (`io.modelcontextprotocol/skills`).
    pub fn extension(&self, id: &str) -> Option<&Value> {
        self.extensions.as_ref()?.get(id)
    }
}

/// The server's `resources` capability.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// The server takes `resources/subscribe` and sends
    /// `notifications/resources/updated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// The server sends `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The server's `prompts` capability.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptsCapability {
    /// The server sends `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A root the client exposes to servers (`roots/list`): a folder or file
/// they may work in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// Its URI (`file:///home/me/project`).
    pub uri: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Root {
    /// A root at this URI, with a name.
    pub fn new(uri: impl Into<String>, name: Option<String>) -> Self {
        Root {
            uri: uri.into(),
            name,
            extra: Extra::new(),
        }
    }
}

/// `roots/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
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
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
// Deserialize: one pass (`by_hand.rs`), not derive's `flatten` buffering.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
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
// Deserialize by hand (`tool.rs`): `#[serde(flatten)]` would buffer every
// member, schemas included, before reading it a second time.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
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
    /// JSON Schema of the arguments (`{"type": "object"}` when the server
    /// gave none).
    pub input_schema: Schema,
    /// JSON Schema of `structuredContent`, when the tool declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Schema>,
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

pub(crate) fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

/// `tools/list` result: one page.
// Deserialize: one pass (`by_hand.rs`), not derive's `flatten` buffering.
#[derive(Debug, Clone, Serialize)]
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
    /// The contents: text or blob entries, each with its `uri` (an entry of
    /// a shape this client does not know is kept as it came).
    #[serde(default)]
    pub contents: Vec<ResourceContents>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
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
    pub request_id: mcp_stack_jsonrpc::Id,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A log message's severity, from the least to the most severe (syslog's
/// levels, RFC 5424).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `notice`.
    Notice,
    /// `warning`.
    Warning,
    /// `error`.
    Error,
    /// `critical`.
    Critical,
    /// `alert`.
    Alert,
    /// `emergency`.
    Emergency,
}

impl LoggingLevel {
    /// Every level, least severe first.
    pub const ALL: [LoggingLevel; 8] = [
        LoggingLevel::Debug,
        LoggingLevel::Info,
        LoggingLevel::Notice,
        LoggingLevel::Warning,
        LoggingLevel::Error,
        LoggingLevel::Critical,
        LoggingLevel::Alert,
        LoggingLevel::Emergency,
    ];

    /// The level as on the wire (`"warning"`).
    pub fn as_str(self) -> &'static str {
        match self {
            LoggingLevel::Debug => "debug",
            LoggingLevel::Info => "info",
            LoggingLevel::Notice => "notice",
            LoggingLevel::Warning => "warning",
            LoggingLevel::Error => "error",
            LoggingLevel::Critical => "critical",
            LoggingLevel::Alert => "alert",
            LoggingLevel::Emergency => "emergency",
        }
    }
}

/// `logging/setLevel` parameters (before 2026-07-28, which asks for a level
/// per request in `_meta` instead).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetLevelParams {
    /// Send log messages at this level and above.
    pub level: LoggingLevel,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The parameters of a list request (`tools/list`, `resources/list`,
/// `prompts/list` …): where the page starts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PaginatedParams {
    /// The previous page's `nextCursor`, as it came; absent for the first page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Request metadata (on 2026-07-28, the revision and the client).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `tools/call` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolParams {
    /// The tool to call.
    pub name: String,
    /// Its arguments; absent (or `null`) for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// 2026-07-28, retrying after an `input_required` result: the client's
    /// answers, by the keys of the result's `inputRequests`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<BTreeMap<String, Value>>,
    /// 2026-07-28, retrying after an `input_required` result: its
    /// `requestState`, echoed unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Request metadata: a progress token, and on 2026-07-28 the revision and
    /// the client ([`RequestMeta`](crate::meta::RequestMeta)).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

impl CallToolParams {
    /// A call of `name` with these arguments.
    pub fn new(name: impl Into<String>, arguments: Map<String, Value>) -> Self {
        CallToolParams {
            name: name.into(),
            arguments: Some(arguments),
            input_responses: None,
            request_state: None,
            meta: None,
            extra: Extra::new(),
        }
    }

    /// The progress token the call offers (`_meta.progressToken`), unless
    /// absent or `null`. The spec allows a string or an integer; which
    /// values to accept is the receiver's decision.
    pub fn progress_token(&self) -> Option<&Value> {
        self.meta
            .as_ref()
            .and_then(|m| m.get(crate::meta::PROGRESS_TOKEN))
            .filter(|token| !token.is_null())
    }
}

/// The parameters of a request or notification that has none of its own
/// (`ping`, `server/discover`, `roots/list`, the `list_changed`
/// notifications …): `{}`, plus whatever metadata or fields it carries.
/// Absent params read as this, empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyParams {
    /// Request or notification metadata (on 2026-07-28, the revision and
    /// the client).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A result with nothing to say (`ping`, `logging/setLevel`): `{}`, plus
/// whatever metadata or fields it carries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Extra,
}

read_by_hand!(
    Icon,
    "an icon object",
    required { src: "src" },
    optional {
        mime_type: "mimeType",
        sizes: "sizes"
    },
    defaulted {},
);
read_by_hand!(
    ListToolsResult,
    "a tools/list result",
    required { tools: "tools" },
    optional {
        next_cursor: "nextCursor"
    },
    defaulted {},
);

#[cfg(test)]
mod tests {

    #[test]
    fn a_tool_result_reads_as_the_derived_reader_did_without_buffering() {
        let r: CallToolResult = serde_json::from_str(
            r#"{"content":[{"type":"text","text":"hi","annotations":{"priority":1}},
                {"type":"image","data":"AA==","mimeType":"image/png"},{"type":"text","text":7}],
                "structuredContent":{"n":1},"isError":false,"_meta":{"m":true},"resultType":"complete"}"#,
        )
        .unwrap();
        assert_eq!(r.content.len(), 3);
        let Content::Text(t) = &r.content[0] else {
            panic!("{:?}", r.content[0])
        };
        assert_eq!((t.kind.as_str(), t.text.as_str()), ("text", "hi"));
        assert_eq!(t.extra["annotations"]["priority"], 1);
        assert!(matches!(r.content[1], Content::Image(_)));
        // A known type with the wrong fields stays, as unknown.
        assert!(matches!(r.content[2], Content::Unknown(_)));
        assert_eq!(r.structured_content, Some(serde_json::json!({"n": 1})));
        assert_eq!(r.is_error, Some(false));
        assert_eq!(r.extra["_meta"]["m"], true);
        assert_eq!(r.extra["resultType"], "complete");
        // Round trip.
        let again: CallToolResult =
            serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(again, r);
        // Absent and null members, as before.
        let empty: CallToolResult =
            serde_json::from_str(r#"{"isError":null,"structuredContent":null}"#).unwrap();
        assert!(empty.content.is_empty() && empty.is_error.is_none());
        assert!(empty.structured_content.is_none() && empty.extra.is_empty());
        // What the derived reader refused, refused.
        for bad in [
            r#"{"content":null}"#,
            r#"{"content":[],"content":[]}"#,
            r#"{"isError":"yes"}"#,
            r#"[]"#,
        ] {
            assert!(
                serde_json::from_str::<CallToolResult>(bad).is_err(),
                "{bad}"
            );
        }
    }
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

    #[test]
    fn logging_levels_are_ordered_and_spelled_as_on_the_wire() {
        for level in LoggingLevel::ALL {
            assert_eq!(serde_json::to_value(level).unwrap(), json!(level.as_str()));
        }
        assert!(LoggingLevel::ALL.windows(2).all(|w| w[0] < w[1]));
        let p: SetLevelParams =
            serde_json::from_value(json!({"level": "warning", "x": 1})).unwrap();
        assert_eq!(p.level, LoggingLevel::Warning);
        assert_eq!(p.extra["x"], 1);
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"level": "warning", "x": 1})
        );
        assert!(serde_json::from_value::<SetLevelParams>(json!({"level": "loud"})).is_err());
    }

    #[test]
    fn paginated_params_keep_cursor_meta_and_extra() {
        let value = json!({"cursor": "c2", "_meta": {"progressToken": 1}, "future": true});
        let p: PaginatedParams = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(p.cursor.as_deref(), Some("c2"));
        assert_eq!(p.meta.as_ref().unwrap()["progressToken"], 1);
        assert_eq!(p.extra["future"], true);
        assert_eq!(serde_json::to_value(&p).unwrap(), value);
        let first: PaginatedParams = serde_json::from_value(json!({"cursor": null})).unwrap();
        assert_eq!(first, PaginatedParams::default());
        assert_eq!(serde_json::to_value(&first).unwrap(), json!({}));
    }

    #[test]
    fn call_tool_params_round_trip() {
        let value = json!({
            "name": "ask",
            "arguments": {"q": 1},
            "inputResponses": {"name": {"action": "decline"}},
            "requestState": "s1",
            "_meta": {"progressToken": "t", "io.modelcontextprotocol/protocolVersion": "2026-07-28"},
            "future": [1]
        });
        let p: CallToolParams = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(p.arguments.as_ref().unwrap()["q"], 1);
        assert_eq!(
            p.input_responses.as_ref().unwrap()["name"]["action"],
            "decline"
        );
        assert_eq!(p.request_state.as_deref(), Some("s1"));
        assert_eq!(p.progress_token(), Some(&json!("t")));
        assert_eq!(p.extra["future"], json!([1]));
        assert_eq!(serde_json::to_value(&p).unwrap(), value);

        let bare: CallToolParams = serde_json::from_value(
            json!({"name": "x", "arguments": null, "_meta": {"progressToken": null}}),
        )
        .unwrap();
        assert_eq!((&bare.arguments, bare.progress_token()), (&None, None));
        let built = CallToolParams::new("echo", Map::new());
        assert_eq!(
            serde_json::to_value(&built).unwrap(),
            json!({"name": "echo", "arguments": {}})
        );
        assert!(serde_json::from_value::<CallToolParams>(json!({"arguments": {}})).is_err());
    }

    #[test]
    fn built_results_serialize_as_sent() {
        assert_eq!(
            serde_json::to_value(EmptyResult::default()).unwrap(),
            json!({})
        );
        let ok = CallToolResult::new(vec![Content::text("hi")]);
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"content": [{"type": "text", "text": "hi"}]})
        );
        let failed = CallToolResult::error(vec![Content::text("no")]);
        assert!(failed.is_error());
        assert_eq!(
            serde_json::to_value(&failed).unwrap(),
            json!({"content": [{"type": "text", "text": "no"}], "isError": true})
        );
    }
}
