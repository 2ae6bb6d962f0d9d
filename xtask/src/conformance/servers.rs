//! Part 2: our stack against servers we did not write — the reference
//! servers (`server-everything` over stdio, streamable HTTP and SSE;
//! `server-filesystem` and `server-memory` over stdio) and a server on the
//! official Python SDK (stdio and streamable HTTP). HTTP servers listen on
//! 127.0.0.1 and nothing else is ever connected to.
//!
//! Each server gets the same checks:
//!
//! * `handshake`: initialize, a protocol version we speak;
//! * `tools/list`: every page, walked by hand and by the session, agreeing;
//! * `call/<tool>`: each tool the server documents as safe (annotated
//!   read-only and not open-world, and not task-only), with valid
//!   arguments; results with `structuredContent` are checked against the
//!   tool's `outputSchema` by the session;
//! * `progress`: the long-running tool, with its progress notifications;
//! * `invalid-arguments`: a call with a wrongly typed argument, caught
//!   client-side (nothing sent), and the session still answers a ping;
//! * `shutdown`: the session closes within bounds and no process is left.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stack_session::types::Tool;
use mcp_stack_session::{
    CallOptions, DefaultsElicitationHandler, Session, SessionConfig, SessionError,
};
use mcp_stack_transport::Transport;
use mcp_stack_transport::stdio::{StdioConfig, StdioTransport};
use serde_json::{Value, json};

use super::fill;
use super::http;
use super::process::{self, Background, Group};
use super::report::Row;
use super::setup::Tools;

/// Bound on all the checks of one server.
const SERVER_TIMEOUT: Duration = Duration::from_secs(150);

/// Bound on a clean close.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

/// How one server is reached.
enum Start {
    Stdio(StdioConfig),
    /// A server process told to listen on `port`, reached at
    /// `http://127.0.0.1:{port}{path}`.
    Http {
        command: Box<dyn Fn(u16) -> tokio::process::Command + Send + Sync>,
        path: &'static str,
        mode: http::Mode,
    },
}

/// One server in one mode, and what to call on it.
struct Target {
    /// `everything/stdio` …
    id: String,
    start: Start,
    /// Arguments for tools whose schema alone does not say enough (paths),
    /// and (named `prompt:NAME`) for prompts whose required arguments the
    /// server offers no completion for.
    arguments: Vec<(&'static str, Value)>,
    /// Calls made first, so that the safe calls find something (not checked
    /// as rows of their own).
    setup: Vec<(&'static str, Value)>,
    /// The long-running tool and its arguments.
    progress: Option<(&'static str, Value)>,
}

/// Runs every server check. `scratch` is a folder for temporary files.
pub(crate) async fn run(tools: &Tools, scratch: &Path, logs: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    let fs_root = match filesystem_fixture(scratch) {
        Ok(p) => p,
        Err(e) => {
            rows.push(Row::fail("filesystem/stdio/setup", e));
            scratch.to_path_buf()
        }
    };
    for target in targets(tools, &fs_root, scratch, logs) {
        let target = match target {
            Ok(t) => t,
            Err(row) => {
                println!("   {:<50} {}", row.id, verdict_word(&row));
                rows.push(row);
                continue;
            }
        };
        let id = target.id.clone();
        let got = match tokio::time::timeout(SERVER_TIMEOUT, check(target, logs)).await {
            Ok(r) => r,
            Err(_) => vec![Row::fail(
                format!("{id}/all"),
                format!(
                    "the checks did not finish within {} s",
                    SERVER_TIMEOUT.as_secs()
                ),
            )],
        };
        for row in got {
            println!("   {:<50} {}", row.id, verdict_word(&row));
            rows.push(row);
        }
    }
    rows
}

fn verdict_word(row: &Row) -> &'static str {
    match row.outcome {
        super::report::Outcome::Pass => "pass",
        super::report::Outcome::Fail => "fail",
        super::report::Outcome::Pending => "pending",
    }
}

fn node_stdio(tools: &Tools, package: &str, name: &str) -> StdioConfig {
    StdioConfig::new(tools.node.to_string_lossy())
        .arg(
            tools
                .package_file(package, "dist/index.js")
                .to_string_lossy(),
        )
        .server_name(name)
        .stdin_close_timeout(Duration::from_secs(2))
}

fn node_http(
    tools: &Tools,
    package: &'static str,
    arg: &'static str,
) -> impl Fn(u16) -> tokio::process::Command + Send + Sync + 'static {
    let node = tools.node.clone();
    let loopback = tools.loopback.clone();
    let script = tools.package_file(package, "dist/index.js");
    move |port| {
        let mut cmd = process::command(&node);
        // The everything server listens on all interfaces and takes no host
        // setting: the preload binds it to 127.0.0.1.
        cmd.arg("--import").arg(&loopback).arg(&script).arg(arg);
        cmd.env_clear()
            .envs(allowlisted_env())
            .env("PORT", port.to_string());
        cmd
    }
}

fn allowlisted_env() -> Vec<(String, String)> {
    mcp_stack_transport::stdio::ENV_ALLOWLIST
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| ((*k).to_string(), v)))
        .collect()
}

const EVERYTHING: &str = "@modelcontextprotocol/server-everything";
const FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem";
const MEMORY: &str = "@modelcontextprotocol/server-memory";

fn everything_arguments() -> Vec<(&'static str, Value)> {
    vec![
        ("echo", json!({"message": "hello from mcp-client-rs"})),
        ("get-sum", json!({"a": 2, "b": 3})),
        ("get-structured-content", json!({"location": "Chicago"})),
        // Documented: a positive integer (the template's id), no completion.
        (
            "prompt:resource-prompt",
            json!({"resourceType": "Text", "resourceId": "1"}),
        ),
    ]
}

fn everything_progress() -> Option<(&'static str, Value)> {
    Some((
        "trigger-long-running-operation",
        json!({"duration": 1, "steps": 4}),
    ))
}

fn targets(
    tools: &Tools,
    fs_root: &Path,
    scratch: &Path,
    _logs: &Path,
) -> Vec<Result<Target, Row>> {
    let fs = fs_root.to_string_lossy().to_string();
    let file = |name: &str| fs_root.join(name).to_string_lossy().to_string();
    let mut list = vec![
        Ok(Target {
            id: "everything/stdio".into(),
            start: Start::Stdio(node_stdio(tools, EVERYTHING, "everything").arg("stdio")),
            arguments: everything_arguments(),
            setup: vec![],
            progress: everything_progress(),
        }),
        Ok(Target {
            id: "everything/streamable-http".into(),
            start: Start::Http {
                command: Box::new(node_http(tools, EVERYTHING, "streamableHttp")),
                path: "/mcp",
                mode: http::Mode::Streamable,
            },
            arguments: everything_arguments(),
            setup: vec![],
            progress: everything_progress(),
        }),
        Ok(Target {
            id: "everything/sse".into(),
            start: Start::Http {
                command: Box::new(node_http(tools, EVERYTHING, "sse")),
                path: "/sse",
                mode: http::Mode::Sse,
            },
            arguments: everything_arguments(),
            setup: vec![],
            progress: everything_progress(),
        }),
        Ok(Target {
            id: "filesystem/stdio".into(),
            start: Start::Stdio(node_stdio(tools, FILESYSTEM, "filesystem").arg(&fs)),
            arguments: vec![
                ("read_file", json!({"path": file("notes.txt")})),
                (
                    "read_text_file",
                    json!({"path": file("notes.txt"), "head": 1}),
                ),
                ("read_media_file", json!({"path": file("pixel.png")})),
                (
                    "read_multiple_files",
                    json!({"paths": [file("notes.txt"), file("data/numbers.json")]}),
                ),
                ("list_directory", json!({"path": fs})),
                ("list_directory_with_sizes", json!({"path": fs})),
                ("directory_tree", json!({"path": fs})),
                ("search_files", json!({"path": fs, "pattern": "*.txt"})),
                ("get_file_info", json!({"path": file("notes.txt")})),
            ],
            setup: vec![],
            progress: None,
        }),
        Ok(Target {
            id: "memory/stdio".into(),
            start: Start::Stdio(node_stdio(tools, MEMORY, "memory").env(
                "MEMORY_FILE_PATH",
                scratch.join("memory.jsonl").to_string_lossy(),
            )),
            arguments: vec![
                ("search_nodes", json!({"query": "xtask"})),
                ("open_nodes", json!({"names": ["xtask"]})),
            ],
            setup: vec![(
                "create_entities",
                json!({"entities": [{"name": "xtask", "entityType": "test",
                    "observations": ["written by cargo xtask conformance"]}]}),
            )],
            progress: None,
        }),
    ];
    match &tools.python {
        Ok(python) => {
            let script = tools.python_server.to_string_lossy().to_string();
            list.push(Ok(Target {
                id: "python/stdio".into(),
                start: Start::Stdio(
                    StdioConfig::new(python.to_string_lossy())
                        .args([script.as_str(), "stdio"])
                        .server_name("python"),
                ),
                arguments: vec![],
                setup: vec![],
                progress: Some(("countdown", json!({"steps": 4}))),
            }));
            let python = python.clone();
            let script2 = script.clone();
            list.push(Ok(Target {
                id: "python/streamable-http".into(),
                start: Start::Http {
                    command: Box::new(move |port| {
                        let mut cmd = process::command(&python);
                        // The script binds 127.0.0.1 itself.
                        cmd.arg(&script2)
                            .args(["streamable-http", "--port", &port.to_string()])
                            .env_clear()
                            .envs(allowlisted_env());
                        cmd
                    }),
                    path: "/mcp",
                    mode: http::Mode::Streamable,
                },
                arguments: vec![],
                setup: vec![],
                progress: Some(("countdown", json!({"steps": 4}))),
            }));
        }
        Err(e) => {
            for mode in ["stdio", "streamable-http"] {
                list.push(Err(Row::fail(
                    format!("python/{mode}/handshake"),
                    format!("no Python with the `mcp` package: {e}"),
                )));
            }
        }
    }
    list
}

/// A folder with a few files for the filesystem server.
fn filesystem_fixture(scratch: &Path) -> Result<PathBuf, String> {
    let root = scratch.join("filesystem");
    let io = |e: std::io::Error| format!("cannot prepare {}: {e}", root.display());
    std::fs::create_dir_all(root.join("data")).map_err(io)?;
    std::fs::write(
        root.join("notes.txt"),
        "hello\nfrom cargo xtask conformance\n",
    )
    .map_err(io)?;
    std::fs::write(root.join("data/numbers.json"), "[1, 2, 3]\n").map_err(io)?;
    std::fs::write(root.join("pixel.png"), PIXEL_PNG).map_err(io)?;
    // The server resolves symlinks; give it the real path.
    root.canonicalize().map_err(io)
}

/// A 1×1 PNG.
const PIXEL_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// What keeps a server alive while it is checked.
enum Running {
    Stdio { pid: u32 },
    Http { server: Box<Background> },
}

fn session_config(name: &str) -> SessionConfig {
    SessionConfig::new()
        .server_name(name.to_string())
        .request_timeout(Duration::from_secs(20))
        .handshake_timeout(Duration::from_secs(30))
        .handler(DefaultsElicitationHandler::new())
}

async fn connect(target: &Target, logs: &Path) -> Result<(Session, Running), String> {
    match &target.start {
        Start::Stdio(config) => {
            let transport =
                Arc::new(StdioTransport::spawn(config.clone()).map_err(|e| e.to_string())?);
            let pid = transport.pid();
            let session = Session::connect_shared(transport, session_config(&target.id))
                .await
                .map_err(|e| e.to_string())?;
            Ok((session, Running::Stdio { pid }))
        }
        Start::Http {
            command,
            path,
            mode,
        } => {
            if !http::AVAILABLE {
                return Err("pending: this build has no HTTP transport".into());
            }
            let port = process::free_port()?;
            let log = logs.join(format!("{}.log", target.id.replace('/', "-")));
            let mut server = Background::spawn(command(port), &target.id, &log)?;
            process::wait_for_port(port, &mut server, Duration::from_secs(30)).await?;
            let url = format!("http://127.0.0.1:{port}{path}");
            let transport = http::connect(&url, *mode, &target.id).await?;
            let session = Session::connect_shared(transport, session_config(&target.id))
                .await
                .map_err(|e| format!("{e} (server log: {})", log.display()))?;
            Ok((
                session,
                Running::Http {
                    server: Box::new(server),
                },
            ))
        }
    }
}

fn is_safe(tool: &Tool) -> bool {
    let a = tool.annotations.as_ref();
    let read_only = a.and_then(|a| a.read_only_hint) == Some(true);
    let open_world = a.and_then(|a| a.open_world_hint) == Some(true);
    let task_only = tool
        .extra
        .get("execution")
        .and_then(|e| e.get("taskSupport"))
        .and_then(Value::as_str)
        == Some("required");
    read_only && !open_world && !task_only
}

async fn check(target: Target, logs: &Path) -> Vec<Row> {
    let id = target.id.clone();
    let row = |check: &str| format!("{id}/{check}");
    let (session, running) = match connect(&target, logs).await {
        Ok(s) => s,
        Err(e) if e.starts_with("pending:") => return vec![Row::pending(row("all"), e)],
        Err(e) => return vec![Row::fail(row("handshake"), e)],
    };
    let mut rows = Vec::new();
    let server = session.server();
    rows.push(Row::pass(
        row("handshake"),
        format!(
            "{} {}, protocol {}, over {}",
            server.server_info.name,
            server.server_info.version,
            session.protocol_version(),
            session.transport().kind()
        ),
    ));

    let tools = match list_tools(&session).await {
        Ok((tools, detail)) => {
            let safe: Vec<&Tool> = tools.iter().filter(|t| is_safe(t)).collect();
            let skipped: Vec<&str> = tools
                .iter()
                .filter(|t| !is_safe(t))
                .map(|t| t.name.as_str())
                .collect();
            rows.push(Row::pass(
                row("tools/list"),
                format!(
                    "{detail}; {} documented safe; not called (not read-only, open-world or task-only): {}",
                    safe.len(),
                    if skipped.is_empty() { "none".to_string() } else { skipped.join(", ") }
                ),
            ));
            tools
        }
        Err(e) => {
            rows.push(Row::fail(row("tools/list"), e));
            Vec::new()
        }
    };

    for (name, arguments) in &target.setup {
        if let Err(e) = session.call_tool(name, arguments.clone()).await {
            rows.push(Row::fail(row(&format!("setup/{name}")), e.to_string()));
        }
    }

    let progress_tool = target.progress.as_ref().map(|(n, _)| *n);
    for tool in tools.iter().filter(|t| is_safe(t)) {
        if Some(tool.name.as_str()) == progress_tool {
            continue;
        }
        let arguments = target
            .arguments
            .iter()
            .find(|(n, _)| *n == tool.name)
            .map(|(_, a)| a.clone())
            .unwrap_or_else(|| fill::arguments(&tool.input_schema));
        rows.push(Row::from_result(
            row(&format!("call/{}", tool.name)),
            call(&session, tool, arguments).await,
        ));
    }

    if let Some((name, arguments)) = &target.progress {
        rows.push(Row::from_result(
            row("progress"),
            progress(&session, name, arguments.clone()).await,
        ));
    }

    rows.push(Row::from_result(
        row("invalid-arguments"),
        invalid_arguments(&session, &tools).await,
    ));

    // Beside tools: what the server declares, each checked.
    let caps = session.server().capabilities.clone();
    if caps.resources.is_some() {
        rows.push(Row::from_result(
            row("resources"),
            resources(&session).await,
        ));
    }
    if caps.prompts.is_some() {
        rows.push(Row::from_result(
            row("prompts"),
            prompts(&session, &target.arguments).await,
        ));
    }

    rows.push(Row::from_result(
        row("shutdown"),
        shutdown(session, running).await,
    ));
    rows
}

/// Lists every resource and template and reads every resource (text and
/// blob contents checked to be what they claim).
async fn resources(session: &Session) -> Result<String, String> {
    use mcp_stack_session::types::ResourceContents;
    let listed = session
        .list_resources()
        .await
        .map_err(|e| format!("resources/list: {e}"))?;
    let templates = session
        .list_resource_templates()
        .await
        .map_err(|e| format!("resources/templates/list: {e}"))?;
    let (mut texts, mut blobs) = (0usize, 0usize);
    for r in listed.iter() {
        let read = session
            .read_resource(&r.uri)
            .await
            .map_err(|e| format!("resources/read {}: {e}", r.uri))?;
        if read.contents.is_empty() {
            return Err(format!("resources/read {}: no contents", r.uri));
        }
        for c in &read.contents {
            match c {
                ResourceContents::Text(_) => texts += 1,
                ResourceContents::Blob(b) => {
                    b.bytes()
                        .map_err(|e| format!("{}: a blob that is not base64 ({e})", r.uri))?;
                    blobs += 1;
                }
                other => return Err(format!("{}: contents of an unknown kind: {other:?}", r.uri)),
            }
        }
    }
    Ok(format!(
        "{} resources read ({texts} text, {blobs} blob contents), {} templates",
        listed.len(),
        templates.len()
    ))
}

/// Lists every prompt and gets each, its required arguments filled with
/// the target's documented values, else the server's own first completion
/// (or a placeholder where it offers none).
async fn prompts(session: &Session, given: &[(&str, Value)]) -> Result<String, String> {
    use std::collections::BTreeMap;

    use mcp_stack_session::types::CompletionReference;
    let listed = session
        .list_prompts()
        .await
        .map_err(|e| format!("prompts/list: {e}"))?;
    let completes = session.server().capabilities.completions.is_some();
    let mut completed = 0usize;
    for p in listed.iter() {
        let mut arguments = BTreeMap::new();
        let key = format!("prompt:{}", p.name);
        let known = given.iter().find(|(n, _)| *n == key).map(|(_, v)| v);
        for a in p.arguments.iter().flatten() {
            if let Some(v) = known.and_then(|k| k.get(&a.name)).and_then(Value::as_str) {
                arguments.insert(a.name.clone(), v.to_owned());
                continue;
            }
            if a.required != Some(true) {
                continue;
            }
            let mut value = "example".to_owned();
            if completes {
                let reference = CompletionReference::Prompt {
                    name: p.name.clone(),
                };
                let c = session
                    .complete(reference, &a.name, "", arguments.clone())
                    .await
                    .map_err(|e| format!("completion/complete {}.{}: {e}", p.name, a.name))?;
                if let Some(first) = c.values.first() {
                    value = first.clone();
                    completed += 1;
                }
            }
            arguments.insert(a.name.clone(), value);
        }
        let got = session
            .get_prompt(&p.name, arguments)
            .await
            .map_err(|e| format!("prompts/get {}: {e}", p.name))?;
        if got.messages.is_empty() {
            return Err(format!("prompts/get {}: no messages", p.name));
        }
    }
    Ok(format!(
        "{} prompts got; {completed} required arguments filled from the server's completions",
        listed.len()
    ))
}

/// Walks every page of tools/list by hand, then lets the session do it, and
/// compares.
async fn list_tools(session: &Session) -> Result<(Vec<Tool>, String), String> {
    let mut pages = 0usize;
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        pages += 1;
        if pages > 100 {
            return Err("more than 100 pages".into());
        }
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let raw = session
            .request("tools/list", Some(params), None)
            .await
            .map_err(|e| e.to_string())?;
        let page: Value =
            serde_json::from_str(raw.get()).map_err(|e| format!("tools/list: {e}"))?;
        for t in page
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(n) = t.get("name").and_then(Value::as_str) {
                names.push(n.to_string());
            }
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let catalog = session.refresh_tools().await.map_err(|e| e.to_string())?;
    let from_session: Vec<String> = catalog.iter().map(|t| t.name.clone()).collect();
    if from_session != names {
        return Err(format!(
            "the session's catalog ({}) differs from the pages ({})",
            from_session.join(", "),
            names.join(", ")
        ));
    }
    if names.is_empty() {
        return Err("the server lists no tools".into());
    }
    let tools = catalog.iter().map(|t| (**t).clone()).collect();
    Ok((tools, format!("{} tools in {pages} page(s)", names.len())))
}

async fn call(session: &Session, tool: &Tool, arguments: Value) -> Result<String, String> {
    let result = session
        .call_tool(&tool.name, arguments.clone())
        .await
        .map_err(|e| format!("{e} (arguments {arguments})"))?;
    if result.is_error() {
        return Err(format!(
            "the tool reported an error: {}",
            short(&result.text())
        ));
    }
    let kinds: Vec<&str> = result.content.iter().map(|c| c.kind()).collect();
    let mut detail = format!(
        "content: {}",
        if kinds.is_empty() {
            "none".to_string()
        } else {
            kinds.join(", ")
        }
    );
    match (&tool.output_schema, &result.structured_content) {
        (Some(_), Some(_)) => detail.push_str("; structuredContent matches outputSchema"),
        (Some(_), None) => {
            return Err(format!(
                "the tool declares an outputSchema but returned no structuredContent ({detail})"
            ));
        }
        (None, Some(_)) => detail.push_str("; structuredContent (no outputSchema)"),
        (None, None) => {}
    }
    Ok(detail)
}

/// One progress notification: progress, total.
type Step = (f64, Option<f64>);

async fn progress(session: &Session, name: &str, arguments: Value) -> Result<String, String> {
    let seen: Arc<Mutex<Vec<Step>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let options = CallOptions::new().on_progress(move |p| {
        sink.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((p.progress(), p.total()));
    });
    let result = session
        .call_tool_with(name, arguments, options)
        .await
        .map_err(|e| e.to_string())?;
    if result.is_error() {
        return Err(format!(
            "{name} reported an error: {}",
            short(&result.text())
        ));
    }
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let Some(last) = seen.last() else {
        return Err(format!("{name} finished without a progress notification"));
    };
    if seen.windows(2).any(|w| matches!(w, [a, b] if b.0 <= a.0)) {
        return Err(format!("progress did not increase: {seen:?}"));
    }
    Ok(format!(
        "{name}: {} progress notifications, last {}{}",
        seen.len(),
        last.0,
        last.1.map(|t| format!(" of {t}")).unwrap_or_default()
    ))
}

/// A value of the wrong type for a property schema.
fn wrong_value(property: &Value) -> Value {
    match property.get("type").and_then(Value::as_str) {
        Some("string") => json!(42),
        Some("array" | "object" | "boolean") => json!("not the right type"),
        Some("number" | "integer") => json!("not a number"),
        _ => json!({"not": "expected"}),
    }
}

async fn invalid_arguments(session: &Session, tools: &[Tool]) -> Result<String, String> {
    // The first tool with a typed, required property.
    let pick = tools.iter().find_map(|t| {
        let required = t.input_schema.get("required")?.as_array()?;
        let name = required.iter().filter_map(Value::as_str).find(|n| {
            t.input_schema
                .get("properties")
                .and_then(|p| p.get(*n))
                .and_then(|p| p.get("type"))
                .is_some()
        })?;
        let property = t.input_schema.get("properties")?.get(name)?;
        Some((t, name.to_string(), wrong_value(property)))
    });
    let Some((tool, field, value)) = pick else {
        return Err("no tool has a typed required property to get wrong".into());
    };
    let mut arguments = fill::arguments(&tool.input_schema);
    if let Some(o) = arguments.as_object_mut() {
        o.insert(field.clone(), value.clone());
    }
    match session.call_tool(&tool.name, arguments).await {
        Err(SessionError::InvalidArguments { problems, .. }) => {
            session
                .ping()
                .await
                .map_err(|e| format!("caught client-side, but then ping failed: {e}"))?;
            let first = problems
                .first()
                .map(ToString::to_string)
                .unwrap_or_default();
            Ok(format!(
                "{}({field}: {value}) caught before sending: {}",
                tool.name,
                short(&first)
            ))
        }
        Err(e) => Err(format!("expected a client-side schema error, got: {e}")),
        Ok(_) => Err(format!(
            "{}({field}: {value}) was sent and answered",
            tool.name
        )),
    }
}

async fn shutdown(session: Session, running: Running) -> Result<String, String> {
    let transport: Arc<dyn Transport> = Arc::clone(session.transport());
    if tokio::time::timeout(CLOSE_TIMEOUT, session.close())
        .await
        .is_err()
    {
        return Err(format!(
            "close took more than {} s",
            CLOSE_TIMEOUT.as_secs()
        ));
    }
    drop(session);
    match running {
        Running::Stdio { pid } => {
            let exit = transport
                .process()
                .and_then(|p| p.exit_info())
                .map(|e| e.to_string())
                .unwrap_or_else(|| "no exit status".into());
            // Give the group a moment to be reaped.
            let group = Group::from_pid(pid);
            let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
            while group.alive() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            if group.alive() {
                return Err(format!(
                    "closed ({exit}), but processes of its group are left"
                ));
            }
            Ok(format!(
                "closed; server exited ({exit}); no process left in its group"
            ))
        }
        Running::Http { server } => {
            server.stop().await?;
            Ok("session closed; server stopped; no process left in its group".into())
        }
    }
}

fn short(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 160 {
        format!("{}…", one.chars().take(160).collect::<String>())
    } else {
        one
    }
}
