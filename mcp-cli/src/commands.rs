//! `mcp tools`, `mcp call`, `mcp resources`, `mcp read`, `mcp prompts`
//! and `mcp prompt`, each written once over [`Servers`]: one server's
//! session (`--stdio`, `--url`, the demo) or, with `--config`, the runtime
//! of the config's servers, whose names are namespaced (`SERVER__NAME`).
//! Where the two list differently (a namespaced listing names each item's
//! server, a single server's shows more of each item), the listing says
//! which it is.

use std::process::ExitCode;

use mcp_stack_session::types::{CallToolResult, Content, ResourceContents, ToolAnnotations};
use mcp_stack_session::{CallOptions, SessionConfig};
use serde_json::{Value, json};

use crate::agent;
use crate::direct::OneServer;
use crate::errors::{CliError, usage_error};
use crate::features::{PromptArgs, ReadArgs, string_map};
use crate::output::{Style, printable, printable_block, summarize};
use crate::servers::Servers;
use crate::term::{self, errln, outln};
use crate::{CallArgs, ShowArgs, TargetArgs, arguments};

/// Opens what the options name: the config's servers through the runtime
/// (`--config`), else one server, its session set up by `adjust`.
pub(crate) async fn open(
    target: &TargetArgs,
    show: ShowArgs,
    style: Style,
    adjust: impl FnOnce(SessionConfig) -> SessionConfig,
) -> Result<Box<dyn Servers>, ExitCode> {
    if target.config.is_some() {
        Ok(Box::new(agent::open(target, show, style).await?))
    } else {
        Ok(Box::new(
            OneServer::connect(target, show, style, adjust).await?,
        ))
    }
}

/// The exit status of a listing: a failure when a server did not start.
pub(crate) fn listed(some_failed: bool) -> ExitCode {
    if some_failed {
        CliError::new(
            "server",
            "some servers of the config did not start (stderr says why); the listing lacks theirs",
        )
        .record()
    } else {
        ExitCode::SUCCESS
    }
}

/// A tool's first columns in a listing: its signature (`name(arg: type, …)`)
/// and the first line of its description, both through the printable filter.
pub(crate) fn tool_columns(
    name: &str,
    tool: &mcp_stack_protocol::types::Tool,
    show: ShowArgs,
    style: Style,
) -> String {
    let description = tool
        .description
        .as_deref()
        .and_then(|d| d.lines().next())
        .unwrap_or_default();
    format!(
        "{}  {}",
        style.bold(&printable(&arguments::signature(name, &tool.input_schema))),
        printable(&summarize(description, 100, show.full))
    )
}

/// `mcp tools` (with `--config`: every server's, namespaced).
pub(crate) async fn tools(args: TargetArgs, show: ShowArgs, style: Style) -> ExitCode {
    let servers = match open(&args, show, style, |c| c).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (namespaced, some_failed) = (servers.namespaced(), servers.some_failed());
    let result = servers.tools().await;
    let stderr_tail = servers.close().await;
    let listing = match result {
        Ok(l) => l,
        Err(f) => return f.print(style, &stderr_tail),
    };
    if show.json {
        let tools: Vec<Value> = listing
            .items
            .iter()
            .map(|t| {
                let v = serde_json::to_value(&*t.item).unwrap_or_default();
                t.json(v, Some("serverToolName"))
            })
            .collect();
        term::print_json(&Value::Array(tools), true);
        return listed(some_failed);
    }
    for note in &listing.notes {
        outln!("{} {}", style.warn("!"), printable(note));
    }
    for t in &listing.items {
        let hints = t
            .item
            .annotations
            .as_ref()
            .map(tool_hints)
            .unwrap_or_default();
        outln!(
            "{}{}",
            tool_columns(&t.name, &t.item, show, style),
            if hints.is_empty() {
                String::new()
            } else {
                style.dim(&format!("  [{hints}]"))
            }
        );
        // A single server's listing shows each input schema in full.
        if show.full && !namespaced {
            let schema = serde_json::to_string(&t.item.input_schema).unwrap_or_default();
            outln!("    input: {}", printable(&schema));
        }
    }
    listed(some_failed)
}

/// `mcp call` (with `--config`: by the tool's namespaced name, or its bare
/// name when `--server` picks one server). The tool is looked up first: an
/// unknown name gets the closest known one, and `KEY=VALUE` arguments are
/// read by its input schema (`arguments`).
pub(crate) async fn call(a: CallArgs, style: Style) -> ExitCode {
    let base = match arguments::args_object(a.args.as_deref()) {
        Ok(m) => m,
        Err(e) => return usage_error(&e),
    };
    if a.task && a.target.config.is_some() {
        return usage_error("--task runs a tool on one server: use --stdio, --url or the demo");
    }
    let show = a.show;
    // A server that asks the user something mid-call gets the user (on a
    // terminal), or a decline.
    let handlers = mcp_stack_session::ClientHandlers::new()
        .elicitation(crate::elicit::TerminalElicitor::new(show.json));
    let servers = match open(&a.target, show, style, |c| c.handler(handlers)).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (tool, arguments) = match resolve_call(&*servers, &a, base).await {
        Ok(found) => found,
        Err(e) => {
            servers.close().await;
            return e.report(style);
        }
    };
    let options = if a.progress {
        CallOptions::new().on_progress(progress_printer())
    } else {
        CallOptions::new()
    };
    let result = servers
        .call_tool(&tool, Value::Object(arguments), options, a.task)
        .await;
    if a.progress {
        progress_done();
    }
    let stderr_tail = servers.close().await;
    match result {
        Ok(r) => print_call_result(&r, show, style),
        Err(f) => f.print(style, &stderr_tail),
    }
}

/// The tool `mcp call` names, as the servers list it, and its arguments:
/// an unknown name is refused with the closest known one; with `--server`,
/// a bare name is that server's tool. When the tools cannot be listed, the
/// name goes as given (and `KEY=VALUE` pairs as strings are refused: their
/// types are the schema's).
async fn resolve_call(
    servers: &dyn Servers,
    a: &CallArgs,
    base: serde_json::Map<String, Value>,
) -> Result<(String, serde_json::Map<String, Value>), CliError> {
    let listing = match servers.tools().await {
        Ok(l) => l,
        Err(f) if a.pairs.is_empty() => {
            tracing::debug!("tools/list failed before the call: {}", f.message);
            return Ok((a.tool.clone(), base));
        }
        Err(f) => {
            return Err(CliError::new(
                "request",
                format!("KEY=VALUE arguments need the tool's schema: {}", f.message),
            ));
        }
    };
    let bare = a
        .target
        .server
        .as_ref()
        .filter(|_| servers.namespaced())
        .map(|server| format!("{server}__{}", a.tool));
    let found = listing.items.iter().find(|t| t.name == a.tool).or_else(|| {
        let bare = bare.as_deref()?;
        listing.items.iter().find(|t| t.name == bare)
    });
    let Some(found) = found else {
        let known = listing.items.iter().map(|t| t.name.as_str());
        let names = if servers.namespaced() {
            "; with --config, tools go by SERVER__TOOL names, or by their own with --server"
        } else {
            ""
        };
        return Err(CliError::new(
            "not_found",
            format!(
                "no tool `{}` (`mcp tools` lists them{names}){}",
                a.tool,
                mcp_stack_config::suggest::did_you_mean(&a.tool, known)
            ),
        ));
    };
    let arguments = arguments::with_pairs(&found.name, &found.item.input_schema, &a.pairs, base)
        .map_err(CliError::usage)?;
    Ok((found.name.clone(), arguments))
}

/// Prints a tool's result; the exit status is a failure when the tool
/// reported one (`isError`).
pub(crate) fn print_call_result(r: &CallToolResult, show: ShowArgs, style: Style) -> ExitCode {
    if show.json {
        term::print_json(&serde_json::to_value(r).unwrap_or_default(), true);
    } else {
        for c in &r.content {
            match c {
                Content::Text(t) => {
                    outln!("{}", printable_block(&summarize(&t.text, 4000, show.full)))
                }
                other => outln!("[{} content]", printable(other.kind())),
            }
        }
        if let Some(s) = &r.structured_content {
            let text = term::json_text(s, true);
            outln!("{}", summarize(&text, 4000, show.full));
        }
    }
    if r.is_error() {
        let message =
            "the tool reported a failure (isError: true): a tool error, not a protocol error";
        errln!("{} {message}", style.warn("!"));
        CliError::new("tool", message).record()
    } else {
        ExitCode::SUCCESS
    }
}

/// Annotation hints for people: "read-only, idempotent".
pub(crate) fn tool_hints(a: &ToolAnnotations) -> String {
    let mut h = Vec::new();
    for (name, on) in [
        ("read-only", a.read_only_hint),
        ("destructive", a.destructive_hint),
        ("idempotent", a.idempotent_hint),
        ("open-world", a.open_world_hint),
    ] {
        if on == Some(true) {
            h.push(name);
        }
    }
    h.join(", ")
}

/// `mcp resources`: the resources and the resource templates (with
/// `--config`: every server's, under their namespaced names).
pub(crate) async fn resources(target: TargetArgs, show: ShowArgs, style: Style) -> ExitCode {
    let servers = match open(&target, show, style, |c| c).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (namespaced, some_failed) = (servers.namespaced(), servers.some_failed());
    let result = servers.resources().await;
    let stderr_tail = servers.close().await;
    let listing = match result {
        Ok(l) => l,
        Err(f) => return f.print(style, &stderr_tail),
    };
    let (resources, templates) = (&listing.resources.items, &listing.templates);
    if show.json {
        let resources: Vec<Value> = resources
            .iter()
            .map(|r| r.json(serde_json::to_value(&*r.item).unwrap_or_default(), None))
            .collect();
        let templates: Vec<Value> = templates
            .iter()
            .map(|t| t.json(serde_json::to_value(&*t.item).unwrap_or_default(), None))
            .collect();
        term::print_json(
            &json!({"resources": resources, "resourceTemplates": templates}),
            true,
        );
        return listed(some_failed);
    }
    for note in &listing.resources.notes {
        outln!("{} {}", style.warn("!"), printable(note));
    }
    if namespaced {
        // By the names `mcp read --config` takes.
        for r in resources {
            outln!(
                "{}  {}",
                style.bold(&printable(&r.name)),
                printable(&r.item.uri)
            );
        }
        for t in templates {
            outln!(
                "{}  {}  {}",
                style.bold(&printable(&t.name)),
                printable(&t.item.uri_template),
                style.dim("(template)")
            );
        }
        return listed(some_failed);
    }
    outln!(
        "{} resources, {} templates",
        resources.len(),
        templates.len()
    );
    for r in resources.iter().map(|r| &r.item) {
        let mut facts = Vec::new();
        if let Some(m) = &r.mime_type {
            facts.push(m.clone());
        }
        if let Some(n) = r.size {
            facts.push(format!("{n} bytes"));
        }
        let name = r.title.as_deref().unwrap_or(&r.name);
        outln!(
            "{}  {}{}",
            style.bold(&printable(&r.uri)),
            printable(&summarize(name, 80, show.full)),
            if facts.is_empty() {
                String::new()
            } else {
                style.dim(&format!("  [{}]", facts.join(", ")))
            }
        );
    }
    for t in templates.iter().map(|t| &t.item) {
        outln!(
            "{}  {}  {}",
            style.bold(&printable(&t.uri_template)),
            printable(&t.name),
            style.dim(&format!("(template: {})", t.variables().join(", ")))
        );
    }
    listed(some_failed)
}

/// `mcp read URI` (with `--config`: a namespaced name, or a URI one
/// server lists).
pub(crate) async fn read(a: ReadArgs, style: Style) -> ExitCode {
    let servers = match open(&a.target, a.show, style, |c| c).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let result = servers.read_resource(&a.uri).await;
    let stderr_tail = servers.close().await;
    let result = match result {
        Ok(r) => r,
        Err(f) => return f.print(style, &stderr_tail),
    };
    if let Some(path) = &a.out {
        let mut bytes = Vec::new();
        for c in &result.contents {
            match c {
                ResourceContents::Text(t) => bytes.extend_from_slice(t.text.as_bytes()),
                ResourceContents::Blob(b) => match b.bytes() {
                    Ok(data) => bytes.extend(data),
                    Err(e) => {
                        errln!(
                            "{} {}: the blob is not base64 ({e})",
                            style.fail("✗"),
                            printable(&b.uri)
                        );
                        return ExitCode::FAILURE;
                    }
                },
                _ => {}
            }
        }
        return match std::fs::write(path, &bytes) {
            Ok(()) => {
                errln!("wrote {} bytes to {}", bytes.len(), path.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                errln!("{} cannot write {}: {e}", style.fail("✗"), path.display());
                ExitCode::FAILURE
            }
        };
    }
    if a.show.json {
        term::print_json(&serde_json::to_value(&result).unwrap_or_default(), true);
        return ExitCode::SUCCESS;
    }
    for c in &result.contents {
        match c {
            ResourceContents::Text(t) => {
                outln!(
                    "{}",
                    printable_block(&summarize(&t.text, 4000, a.show.full))
                )
            }
            ResourceContents::Blob(b) => outln!(
                "[{} bytes of {} from {}; --out FILE writes them]",
                b.decoded_len(),
                printable(b.mime_type.as_deref().unwrap_or("binary data")),
                printable(&b.uri)
            ),
            other => outln!(
                "[contents of an unknown kind from {:?}]",
                other.uri().map(printable)
            ),
        }
    }
    ExitCode::SUCCESS
}

/// `mcp prompts` (with `--config`: every server's, namespaced).
pub(crate) async fn prompts(target: TargetArgs, show: ShowArgs, style: Style) -> ExitCode {
    let servers = match open(&target, show, style, |c| c).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (namespaced, some_failed) = (servers.namespaced(), servers.some_failed());
    let result = servers.prompts().await;
    let stderr_tail = servers.close().await;
    let listing = match result {
        Ok(l) => l,
        Err(f) => return f.print(style, &stderr_tail),
    };
    if show.json && !namespaced {
        let all: Vec<Value> = listing
            .items
            .iter()
            .map(|p| serde_json::to_value(&*p.item).unwrap_or_default())
            .collect();
        term::print_json(&Value::Array(all), true);
        return listed(some_failed);
    }
    for p in &listing.items {
        let args: Vec<String> = p
            .item
            .arguments
            .iter()
            .flatten()
            .map(|a| match a.required {
                Some(true) => a.name.clone(),
                _ => format!("[{}]", a.name),
            })
            .collect();
        if show.json {
            // Namespaced: a line of JSON each.
            let v = p.json(serde_json::to_value(&*p.item).unwrap_or_default(), None);
            term::print_json(&v, false);
        } else if namespaced {
            outln!(
                "{}({})",
                style.bold(&printable(&p.name)),
                printable(&args.join(", "))
            );
        } else {
            let description = p
                .item
                .description
                .as_deref()
                .and_then(|d| d.lines().next())
                .unwrap_or_default();
            outln!(
                "{}({})  {}",
                style.bold(&printable(&p.name)),
                printable(&args.join(", ")),
                printable(&summarize(description, 100, show.full))
            );
        }
    }
    listed(some_failed)
}

/// `mcp prompt NAME --args '{…}'` (with `--config`: `SERVER__PROMPT`).
pub(crate) async fn prompt(a: PromptArgs, style: Style) -> ExitCode {
    let arguments = match arguments::args_text(&a.args).and_then(|t| string_map("--args", &t)) {
        Ok(m) => m,
        Err(e) => return usage_error(&e),
    };
    let servers = match open(&a.target, a.show, style, |c| c).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let result = servers.get_prompt(&a.name, arguments).await;
    let stderr_tail = servers.close().await;
    let result = match result {
        Ok(r) => r,
        Err(f) => return f.print(style, &stderr_tail),
    };
    if a.show.json {
        term::print_json(&serde_json::to_value(&result).unwrap_or_default(), true);
        return ExitCode::SUCCESS;
    }
    if let Some(d) = &result.description {
        outln!("{}", style.dim(&printable(d)));
    }
    for m in &result.messages {
        let text = match &m.content {
            Content::Text(t) => {
                printable_block(&summarize(&t.text, 4000, a.show.full)).into_owned()
            }
            other => format!("[{} content]", printable(other.kind())),
        };
        outln!("{}: {text}", style.bold(&printable(&m.role)));
    }
    ExitCode::SUCCESS
}

/// Prints a call's progress on stderr: a bar redrawn in place on a
/// terminal, plain lines otherwise.
pub(crate) fn progress_printer()
-> impl Fn(&mcp_stack_session::types::ProgressParams) + Send + Sync + 'static {
    let terminal = term::stderr_is_terminal();
    move |p| {
        let done = p.progress();
        let total = p.total();
        let message = p.message.as_deref().map(printable).unwrap_or_default();
        let line = match (terminal, total) {
            (true, Some(total)) if total > 0.0 => {
                let fraction = (done / total).clamp(0.0, 1.0);
                let filled = (fraction * 30.0).round() as usize;
                format!(
                    "[{}{}] {:>3.0}% {message}",
                    "#".repeat(filled),
                    " ".repeat(30 - filled.min(30)),
                    fraction * 100.0
                )
            }
            (true, _) => format!("{done} {message}"),
            (false, Some(total)) => format!("progress {done}/{total} {message}"),
            (false, None) => format!("progress {done} {message}"),
        };
        term::progress(&line, terminal);
    }
}

/// Ends a progress bar's line on a terminal.
pub(crate) fn progress_done() {
    if term::stderr_is_terminal() {
        errln!();
    }
}
