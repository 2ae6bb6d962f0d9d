//! The tools: their definitions (`tools/list`) and what they do (`tools/call`).

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use mcp_stack_protocol::notification::{self, Notification as _};
use mcp_stack_protocol::types::{
    CallToolResult, Content, Extra, ProgressParams, Tool, ToolAnnotations,
};
use serde_json::{Map, Value, json};
use tokio::io::AsyncReadExt;

use crate::client::ClientSide;
use crate::outbox::{Outbox, ProtocolError};

/// The names of the tools, in `tools/list` order.
pub const TOOL_NAMES: &[&str] = &[
    "echo",
    "add",
    "read_file",
    "slow",
    "fail",
    "progress",
    "get_env",
    "bad_output",
    "touch_resource",
    "add_resource",
    "countdown",
    "ask_user",
    "sample",
    "list_roots",
];

/// The names of the tools a modern (2026-07-28) client sees, in `tools/list`
/// order: [`TOOL_NAMES`] plus `ask_name` (a multi-round-trip call), `route`
/// (arguments mirrored into `Mcp-Param-Region` and `Mcp-Param-Shard` headers
/// over HTTP) and `bad_header` (an invalid `x-mcp-header` annotation, which a
/// conforming HTTP client drops from its catalog).
pub const MODERN_TOOL_NAMES: &[&str] = &[
    "echo",
    "add",
    "read_file",
    "slow",
    "fail",
    "progress",
    "get_env",
    "bad_output",
    "touch_resource",
    "add_resource",
    "countdown",
    "ask_user",
    "sample",
    "list_roots",
    "ask_name",
    "route",
    "bad_header",
];

/// The largest JSON-safe integer (2^53 - 1), the most `route`'s `shard` takes.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The largest `maxBytes` `read_file` accepts: 8 MiB, well inside a 16 MiB frame.
const MAX_READ_BYTES: u64 = 8 * 1024 * 1024;
/// `read_file`'s default `maxBytes`: 1 MiB.
const DEFAULT_READ_BYTES: u64 = 1024 * 1024;
/// The longest `slow` sleeps: one day.
const MAX_SLOW_MS: u64 = 24 * 60 * 60 * 1000;
/// The most steps `progress` takes.
const MAX_STEPS: u64 = 10_000;
/// The longest interval between `progress` steps: one minute.
const MAX_INTERVAL_MS: u64 = 60_000;

/// The annotations of a tool that only reads.
fn read_only() -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(true),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    }
}

/// The most polls a `countdown` takes.
pub(crate) const MAX_POLLS: u64 = 10_000;

/// A read-only tool with no output schema; `input_schema` is its JSON
/// Schema (a schema is JSON by nature: [`Tool::input_schema`] is a `Value`,
/// kept as a [`Schema`](mcp_stack_protocol::types::Schema)).
pub(crate) fn tool(name: &str, title: &str, description: &str, input_schema: Value) -> Tool {
    Tool {
        name: name.to_owned(),
        title: Some(title.to_owned()),
        description: Some(description.to_owned()),
        input_schema: input_schema.into(),
        output_schema: None,
        annotations: Some(read_only()),
        icons: None,
        extra: Extra::new(),
    }
}

/// The tools a modern (2026-07-28) client sees ([`MODERN_TOOL_NAMES`]): the
/// others plus `ask_name` (multi-round-trip results), `route` (`x-mcp-header`
/// annotations) and `bad_header` (an invalid annotation).
pub(crate) static DISCOVER_DEFINITIONS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
    let mut all = DEFINITIONS.clone();
    all.push(tool(
        "ask_name",
        "Ask name",
        "Asks for your name (an elicitation input request), then greets you.",
        json!({"type": "object", "properties": {}}),
    ));
    all.push(tool(
        "route",
        "Route",
        "Says where a query would run. Over HTTP, `region` and `shard` are \
            mirrored into the Mcp-Param-Region and Mcp-Param-Shard headers.",
        json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region",
                           "description": "The region to run in."},
                "shard": {"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INTEGER,
                          "x-mcp-header": "Shard", "description": "The shard to run on."},
                "query": {"type": "string", "description": "The query."}
            },
            "required": ["query"]
        }),
    ));
    all.push(tool(
        "bad_header",
        "Bad header",
        "Has an invalid x-mcp-header annotation (on a `number` property): \
            a conforming HTTP client leaves this tool out of its catalog.",
        json!({
            "type": "object",
            "properties": {
                "weight": {"type": "number", "x-mcp-header": "Weight"}
            }
        }),
    ));
    all
});

/// The tools `tools/list` shows: the era's definitions, then `extra`
/// generated ones ([`crate::ServerOptions::extra_tools`]). Built once per
/// era and count and shared, so that a benchmark of a large catalog does
/// not time the server building it.
#[cfg(test)]
pub(crate) fn listed(discover: bool, extra: usize) -> Arc<[Tool]> {
    listed_revision(discover, extra, false)
}

/// [`listed`], or with `revised` the second revision of the definitions
/// ([`crate::ServerOptions::revise_tools`]).
pub(crate) fn listed_revision(discover: bool, extra: usize, revised: bool) -> Arc<[Tool]> {
    type Built = Vec<((bool, usize, bool), Arc<[Tool]>)>;
    static BUILT: Mutex<Built> = Mutex::new(Vec::new());
    let mut built = BUILT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, all)) = built
        .iter()
        .find(|(key, _)| *key == (discover, extra, revised))
    {
        return Arc::clone(all);
    }
    let base: &[Tool] = if discover {
        &DISCOVER_DEFINITIONS
    } else {
        &DEFINITIONS
    };
    let all: Arc<[Tool]> = base
        .iter()
        .cloned()
        .chain((1..=extra).map(|i| {
            tool(
                &format!("extra_{i}"),
                &format!("Extra {i}"),
                "A generated tool for benchmarks of large catalogs; listed only.",
                json!({
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "Any text."}},
                    "required": ["text"]
                }),
            )
        }))
        .collect();
    let all = if revised { revise(&all) } else { all };
    built.push(((discover, extra, revised), Arc::clone(&all)));
    all
}

/// The second revision: `echo`'s description edited, `add`'s input schema
/// widened, `added_tool` added, `fail` removed.
fn revise(tools: &[Tool]) -> Arc<[Tool]> {
    let mut out: Vec<Tool> = tools
        .iter()
        .filter(|t| t.name != "fail")
        .cloned()
        .map(|mut t| {
            if t.name == "echo" {
                t.description = Some("Returns the given text unchanged (revised).".to_owned());
            }
            if t.name == "add"
                && let Some(props) = t
                    .input_schema
                    .get_mut("properties")
                    .and_then(|p| p.as_object_mut())
            {
                props.insert(
                    "c".to_owned(),
                    json!({"type": "number", "description": "An optional third addend."}),
                );
            }
            t
        })
        .collect();
    out.push(tool(
        "added_tool",
        "Added tool",
        "A tool the revised definitions add; listed only.",
        json!({"type": "object", "properties": {}}),
    ));
    out.into()
}

/// The `tools/list` entries a legacy client sees, in order ([`TOOL_NAMES`]).
pub(crate) static DEFINITIONS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
    vec![
        tool(
            "echo",
            "Echo",
            "Returns the given text unchanged.",
            json!({
                "type": "object",
                "properties": {"text": {"type": "string", "description": "The text to echo."}},
                "required": ["text"]
            }),
        ),
        Tool {
            output_schema: Some(
                json!({
                    "type": "object",
                    "properties": {"sum": {"type": "number"}},
                    "required": ["sum"]
                })
                .into(),
            ),
            ..tool(
                "add",
                "Add",
                "Adds two numbers; the sum is also returned as structured content.",
                json!({
                    "type": "object",
                    "properties": {
                        "a": {"type": "number", "description": "The first addend."},
                        "b": {"type": "number", "description": "The second addend."}
                    },
                    "required": ["a", "b"]
                }),
            )
        },
        tool(
            "read_file",
            "Read file",
            "Reads a text file inside the server's workspace folder. \
                Absolute paths, `..` and symlinks leading out of the workspace are refused.",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A path relative to the workspace."},
                    "maxBytes": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": MAX_READ_BYTES,
                        "description": "Read at most this many bytes (default 1 MiB)."
                    }
                },
                "required": ["path"]
            }),
        ),
        task_capable(tool(
            "slow",
            "Slow",
            "Sleeps for the given number of milliseconds, then answers. On 2025-11-25 it \
                may run as a task (execution.taskSupport: optional).",
            json!({
                "type": "object",
                "properties": {
                    "ms": {"type": "integer", "minimum": 0, "maximum": MAX_SLOW_MS,
                           "description": "How long to sleep."}
                },
                "required": ["ms"]
            }),
        )),
        tool(
            "fail",
            "Fail",
            "Always fails: returns a result with isError: true.",
            json!({
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "The error message to return."}
                }
            }),
        ),
        tool(
            "progress",
            "Progress",
            "Counts through steps, sending notifications/progress for each \
                when the request carries a progress token.",
            json!({
                "type": "object",
                "properties": {
                    "steps": {"type": "integer", "minimum": 0, "maximum": MAX_STEPS},
                    "intervalMs": {"type": "integer", "minimum": 0, "maximum": MAX_INTERVAL_MS,
                                   "description": "Pause between steps (default 10 ms)."}
                },
                "required": ["steps"]
            }),
        ),
        tool(
            "get_env",
            "Get environment variable",
            "Returns the value of one of the server's environment variables.",
            json!({
                "type": "object",
                "properties": {"name": {"type": "string", "description": "The variable name."}},
                "required": ["name"]
            }),
        ),
        Tool {
            output_schema: Some(
                json!({
                    "type": "object",
                    "properties": {"count": {"type": "integer"}},
                    "required": ["count"]
                })
                .into(),
            ),
            ..tool(
                "bad_output",
                "Bad output",
                "Returns structured content that violates its own outputSchema \
                    (for testing client-side output validation).",
                json!({"type": "object", "properties": {}}),
            )
        },
        Tool {
            annotations: Some(changes()),
            ..tool(
                "touch_resource",
                "Touch resource",
                "Makes a new revision of a resource (its text says which) and sends \
                    notifications/resources/updated to the clients subscribed to it.",
                json!({
                    "type": "object",
                    "properties": {"uri": {"type": "string", "description": "The resource's URI."}},
                    "required": ["uri"]
                }),
            )
        },
        Tool {
            annotations: Some(changes()),
            ..tool(
                "add_resource",
                "Add resource",
                "Adds a text resource (test://added/N) and sends \
                    notifications/resources/list_changed.",
                json!({"type": "object", "properties": {}}),
            )
        },
        task_capable(tool(
            "countdown",
            "Countdown",
            "Run as a task (2025-11-25: asked for; 2026-07-28: whenever the client declares \
                the tasks extension), completes at the `polls`th tasks/get (or fails, with \
                `fail`). Called plainly, answers at once.",
            json!({
                "type": "object",
                "properties": {
                    "polls": {"type": "integer", "minimum": 0, "maximum": MAX_POLLS,
                              "description": "The tasks/get polls before it ends (default 2)."},
                    "fail": {"type": "boolean", "description": "End failed instead."}
                }
            }),
        )),
        Tool {
            annotations: Some(asks()),
            ..tool(
                "ask_user",
                "Ask user",
                "Asks the user through the client (elicitation): a form (name, age, \
                    subscribe) or a URL to open; reports what the client answered.",
                json!({
                    "type": "object",
                    "properties": {
                        "mode": {"type": "string", "enum": ["form", "url"], "default": "form",
                                 "description": "Form or URL mode."}
                    }
                }),
            )
        },
        Tool {
            annotations: Some(asks()),
            ..tool(
                "sample",
                "Sample",
                "Asks the client's model to answer a prompt (sampling/createMessage); \
                    reports the answer.",
                json!({
                    "type": "object",
                    "properties": {"prompt": {"type": "string", "description": "What to ask."}},
                    "required": ["prompt"]
                }),
            )
        },
        Tool {
            annotations: Some(asks()),
            ..tool(
                "list_roots",
                "List roots",
                "Asks the client for its roots (roots/list); reports them and how many \
                    notifications/roots/list_changed this connection received.",
                json!({"type": "object", "properties": {}}),
            )
        },
    ]
});

/// `tool`, which may run as a task (`execution.taskSupport: "optional"`).
fn task_capable(mut tool: Tool) -> Tool {
    mcp_stack_protocol::tasks::TaskSupport::Optional.write(&mut tool);
    tool
}

/// The annotations of the tools that ask the client: they change nothing,
/// but each call asks again (and may get another answer).
fn asks() -> ToolAnnotations {
    ToolAnnotations {
        idempotent_hint: Some(false),
        ..read_only()
    }
}

/// The annotations of the tools that change the resources (each call
/// changes them again).
fn changes() -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(false),
        idempotent_hint: Some(false),
        ..read_only()
    }
}

/// What a tool needs besides its arguments.
pub(crate) struct CallContext {
    /// The folder `read_file` is confined to.
    pub(crate) workspace: PathBuf,
    /// Where progress notifications go.
    pub(crate) outbox: Outbox,
    /// The request's `_meta.progressToken`, when it has one.
    pub(crate) progress_token: Option<Value>,
    /// Whether the call is a 2026-07-28 one (the modern-only tools exist).
    pub(crate) discover: bool,
    /// The resources `touch_resource` and `add_resource` change.
    pub(crate) world: std::sync::Arc<crate::resources::World>,
    /// What the client declared (for the tools that ask it).
    pub(crate) client: ClientSide,
    /// The `notifications/roots/list_changed` the connection received so far.
    pub(crate) roots_changed: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

pub(crate) fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::new(vec![Content::text(text)])
}

pub(crate) fn error_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![Content::text(text)])
}

/// The arguments of a call, with accessors that name the field on failure.
struct Args<'a>(&'a Map<String, Value>);

impl<'a> Args<'a> {
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    fn required(&self, name: &str) -> Result<&'a Value, ProtocolError> {
        self.get(name)
            .ok_or_else(|| ProtocolError::invalid_field(format!("arguments.{name}"), "required"))
    }

    fn string(&self, name: &str) -> Result<&'a str, ProtocolError> {
        self.required(name)?.as_str().ok_or_else(|| {
            ProtocolError::invalid_field(format!("arguments.{name}"), "expected a string")
        })
    }

    fn opt_string(&self, name: &str) -> Result<Option<&'a str>, ProtocolError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v.as_str().map(Some).ok_or_else(|| {
                ProtocolError::invalid_field(format!("arguments.{name}"), "expected a string")
            }),
        }
    }

    fn number(&self, name: &str) -> Result<&'a serde_json::Number, ProtocolError> {
        match self.required(name)? {
            Value::Number(n) => Ok(n),
            _ => Err(ProtocolError::invalid_field(
                format!("arguments.{name}"),
                "expected a number",
            )),
        }
    }

    fn opt_integer(&self, name: &str, max: u64) -> Result<Option<u64>, ProtocolError> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        let n = value.as_u64().or_else(|| {
            // JSON Schema's "integer" includes 5.0.
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u64::MAX as f64)
                .map(|f| f as u64)
        });
        match n {
            Some(n) if n <= max => Ok(Some(n)),
            Some(_) => Err(ProtocolError::invalid_field(
                format!("arguments.{name}"),
                format!("must be at most {max}"),
            )),
            None => Err(ProtocolError::invalid_field(
                format!("arguments.{name}"),
                "expected a non-negative integer",
            )),
        }
    }

    fn integer(&self, name: &str, max: u64) -> Result<u64, ProtocolError> {
        self.required(name)?;
        self.opt_integer(name, max).map(|n| n.unwrap_or_default())
    }
}

/// Runs one tool. `Ok` is its result (possibly with `isError: true`); `Err`
/// is a protocol error (unknown tool, arguments that break the schema).
pub(crate) async fn call(
    name: &str,
    arguments: &Map<String, Value>,
    ctx: CallContext,
) -> Result<CallToolResult, ProtocolError> {
    let args = Args(arguments);
    match name {
        "echo" => Ok(text_result(args.string("text")?)),
        "add" => add(&args),
        "read_file" => {
            let path = args.string("path")?;
            let max = args
                .opt_integer("maxBytes", MAX_READ_BYTES)?
                .unwrap_or(DEFAULT_READ_BYTES);
            Ok(match read_file(&ctx.workspace, path, max).await {
                Ok(text) => text_result(text),
                Err(message) => error_result(message),
            })
        }
        "slow" => {
            let ms = args.integer("ms", MAX_SLOW_MS)?;
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok(text_result(format!("done after {ms} ms")))
        }
        "fail" => {
            let message = args
                .opt_string("message")?
                .unwrap_or("the fail tool always fails");
            Ok(error_result(message))
        }
        "progress" => progress(&args, &ctx).await,
        "get_env" => Ok(get_env(args.string("name")?)),
        "touch_resource" => {
            let uri = args.string("uri")?;
            Ok(match ctx.world.touch(uri).await {
                Some(revision) => text_result(format!("{uri} is now at revision {revision}")),
                None => error_result(format!("no resource {uri:?}; resources/list shows them")),
            })
        }
        "add_resource" => Ok(text_result(format!("added {}", ctx.world.add().await))),
        // Called as a task it counts the client's polls (server/tasks.rs);
        // called plainly there is nothing to count.
        "countdown" => {
            args.opt_integer("polls", MAX_POLLS)?;
            Ok(text_result("countdown finished (not run as a task)"))
        }
        "route" if ctx.discover => {
            let query = args.string("query")?;
            let region = args.opt_string("region")?.unwrap_or("any");
            let shard = args
                .opt_integer("shard", MAX_SAFE_INTEGER)?
                .map_or_else(|| "any".to_owned(), |n| n.to_string());
            Ok(text_result(format!(
                "routed query {query:?} to region {region}, shard {shard}"
            )))
        }
        "bad_header" if ctx.discover => Ok(text_result(
            "bad_header ran: a conforming HTTP client should have dropped this tool",
        )),
        // Well-formed JSON-RPC and MCP; only its structured content breaks
        // the tool's own output schema.
        "bad_output" => Ok(CallToolResult {
            structured_content: Some(json!({"count": "three"})),
            ..text_result(r#"{"count":"three"}"#)
        }),
        _ => Err(ProtocolError::invalid_field(
            "name",
            format!("unknown tool {name:?}; tools/list shows the tools"),
        )),
    }
}

fn add(args: &Args<'_>) -> Result<CallToolResult, ProtocolError> {
    let (a, b) = (args.number("a")?, args.number("b")?);
    let sum: serde_json::Number = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) if a.checked_add(b).is_some() => a.saturating_add(b).into(),
        _ => {
            let sum = a.as_f64().unwrap_or(f64::NAN) + b.as_f64().unwrap_or(f64::NAN);
            serde_json::Number::from_f64(sum).ok_or_else(|| {
                ProtocolError::invalid_field("arguments", "the sum is not a finite number")
            })?
        }
    };
    Ok(CallToolResult {
        structured_content: Some(json!({ "sum": sum })),
        ..text_result(sum.to_string())
    })
}

/// Resolves `path` inside `workspace`, refusing escapes; the error is a message
/// for an `isError` result.
pub(crate) async fn resolve_in_workspace(workspace: &Path, path: &str) -> Result<PathBuf, String> {
    if path.is_empty() {
        return Err("the path is empty".to_owned());
    }
    let relative = Path::new(path);
    for component in relative.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => {
                return Err(format!(
                    "refused {path:?}: absolute paths are not allowed; give a path relative to the workspace"
                ));
            }
            Component::ParentDir => {
                return Err(format!(
                    "refused {path:?}: `..` is not allowed; the path must stay inside the workspace"
                ));
            }
            Component::CurDir | Component::Normal(_) => {}
        }
    }
    let root = tokio::fs::canonicalize(workspace)
        .await
        .map_err(|e| format!("the workspace {} is not usable: {e}", workspace.display()))?;
    let full = tokio::fs::canonicalize(root.join(relative))
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("no such file in the workspace: {path}"),
            _ => format!("cannot open {path}: {e}"),
        })?;
    if !full.starts_with(&root) {
        return Err(format!(
            "refused {path:?}: it leads outside the workspace (through a symlink)"
        ));
    }
    Ok(full)
}

async fn read_file(workspace: &Path, path: &str, max: u64) -> Result<String, String> {
    let full = resolve_in_workspace(workspace, path).await?;
    let file = tokio::fs::File::open(&full)
        .await
        .map_err(|e| format!("cannot open {path}: {e}"))?;
    let is_file = file
        .metadata()
        .await
        .map(|m| m.is_file())
        .map_err(|e| format!("cannot open {path}: {e}"))?;
    if !is_file {
        return Err(format!("{path} is not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(max)
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

async fn progress(args: &Args<'_>, ctx: &CallContext) -> Result<CallToolResult, ProtocolError> {
    let steps = args.integer("steps", MAX_STEPS)?;
    let interval = args
        .opt_integer("intervalMs", MAX_INTERVAL_MS)?
        .unwrap_or(10);
    for i in 1..=steps {
        tokio::time::sleep(Duration::from_millis(interval)).await;
        if let Some(token) = &ctx.progress_token {
            let params = ProgressParams {
                progress_token: token.clone(),
                progress_value: i.into(),
                total_value: Some(steps.into()),
                message: Some(format!("step {i} of {steps}")),
                extra: Extra::new(),
            };
            ctx.outbox
                .notify(notification::Progress::METHOD, &params)
                .await;
        }
    }
    Ok(text_result(format!("completed {steps} steps")))
}

fn get_env(name: &str) -> CallToolResult {
    if name.is_empty() || name.contains(['=', '\0']) {
        return error_result(format!("{name:?} is not a valid environment variable name"));
    }
    match std::env::var(name) {
        Ok(value) => text_result(value),
        Err(std::env::VarError::NotPresent) => {
            error_result(format!("environment variable {name} is not set"))
        }
        Err(std::env::VarError::NotUnicode(_)) => {
            error_result(format!("environment variable {name} is not valid UTF-8"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_match_names() {
        let names: Vec<&str> = DEFINITIONS.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, TOOL_NAMES);
        for d in DEFINITIONS.iter() {
            assert_eq!(d.input_schema["type"], "object", "{}", d.name);
        }
        let discover: Vec<&str> = DISCOVER_DEFINITIONS
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(discover, MODERN_TOOL_NAMES);
        assert_eq!(discover.get(..TOOL_NAMES.len()), Some(TOOL_NAMES));
    }

    #[test]
    fn integers_accept_integral_floats_only() {
        let map = json!({"a": 5.0, "b": 5.5, "c": -1, "d": "5", "e": 7})
            .as_object()
            .unwrap()
            .clone();
        let args = Args(&map);
        assert_eq!(args.opt_integer("a", 10).unwrap(), Some(5));
        assert!(args.opt_integer("b", 10).is_err());
        assert!(args.opt_integer("c", 10).is_err());
        assert!(args.opt_integer("d", 10).is_err());
        assert!(args.opt_integer("e", 6).is_err());
        assert_eq!(args.opt_integer("missing", 6).unwrap(), None);
        assert!(args.integer("missing", 6).is_err());
    }

    #[test]
    fn add_keeps_integers_and_handles_overflow() {
        let sum = |a: Value, b: Value| {
            let map = json!({"a": a, "b": b}).as_object().unwrap().clone();
            let result = add(&Args(&map)).unwrap();
            assert_eq!(
                result.text(),
                result.structured_content.as_ref().unwrap()["sum"].to_string()
            );
            result.structured_content.unwrap()["sum"].clone()
        };
        assert_eq!(sum(json!(2), json!(3)), json!(5));
        assert_eq!(sum(json!(0.5), json!(0.25)), json!(0.75));
        assert!(sum(json!(i64::MAX), json!(1)).is_f64());
    }

    #[test]
    fn env_names_are_checked() {
        assert!(get_env("A=B").is_error());
        assert!(get_env("").is_error());
    }
}
