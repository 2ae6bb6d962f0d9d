//! `mcp tools` and `mcp call` on one server, connected directly (started
//! and connected like `mcp probe` does; with `--config` they go through
//! `agent` instead), and the printing of tools and results both share.

use std::process::ExitCode;

use mcp_session::types::{CallToolResult, Content, ToolAnnotations};
use mcp_session::{CallOptions, Session, SessionConfig, TaskCall};
use serde_json::Value;

use crate::diagnosis;
use crate::output::{Style, printable, printable_block, summarize, usage_error};
use crate::probe::{Probed, start_and_connect, trace_options};
use crate::report::Report;
use crate::target::targets;
use crate::term::{self, errln, outln};
use crate::{ShowArgs, TargetArgs};

/// Connects to the one target the options name, or explains why not.
pub(crate) async fn connect_one(
    args: &TargetArgs,
    show: ShowArgs,
    style: Style,
) -> Result<(Session, Probed), ExitCode> {
    connect_one_with(args, show, style, |c| c).await
}

/// [`connect_one`] with the session's settings adjusted first (a
/// notification listener, say).
pub(crate) async fn connect_one_with(
    args: &TargetArgs,
    show: ShowArgs,
    style: Style,
    adjust: impl FnOnce(SessionConfig) -> SessionConfig,
) -> Result<(Session, Probed), ExitCode> {
    let mut targets = targets(args, trace_options(show, style)).map_err(|e| usage_error(&e))?;
    if targets.len() != 1 {
        return Err(usage_error(
            "this config has several servers: choose one with --server NAME",
        ));
    }
    let mut target = targets.remove(0);
    target.session = adjust(target.session);
    let mut report = Report::new(&target.label);
    let failed = |report: Report| {
        report.print(style);
        ExitCode::FAILURE
    };
    let trace = trace_options(show, style);
    let Some((probed, connected, _)) = start_and_connect(&target, trace, &mut report).await else {
        return Err(failed(report));
    };
    match connected {
        Ok(s) => Ok((s, probed)),
        Err(e) => {
            probed.handshake_failed(&e, None, &mut report).await;
            Err(failed(report))
        }
    }
}

/// `mcp tools`.
pub(crate) async fn tools(args: TargetArgs, show: ShowArgs, style: Style) -> ExitCode {
    if args.config.is_some() {
        return crate::agent::tools(args, show, style).await;
    }
    let (session, _probed) = match connect_one(&args, show, style).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let result = session.list_tools().await;
    session.close().await;
    let catalog = match result {
        Ok(c) => c,
        Err(e) => {
            errln!(
                "{} tools/list failed: {}",
                style.fail("✗"),
                printable_block(&e.to_string())
            );
            return ExitCode::FAILURE;
        }
    };
    if show.json {
        let tools: Vec<Value> = catalog
            .iter()
            .filter_map(|t| serde_json::to_value(&**t).ok())
            .collect();
        term::print_json(&Value::Array(tools), true);
        return ExitCode::SUCCESS;
    }
    for d in catalog.diagnostics() {
        outln!("{} {}", style.warn("!"), printable(d));
    }
    for t in catalog.iter() {
        let hints = t.annotations.as_ref().map(tool_hints).unwrap_or_default();
        let description = t
            .description
            .as_deref()
            .and_then(|d| d.lines().next())
            .unwrap_or_default();
        outln!(
            "{}  {}{}",
            style.bold(&printable(&t.name)),
            printable(&summarize(description, 100, show.full)),
            if hints.is_empty() {
                String::new()
            } else {
                style.dim(&format!("  [{hints}]"))
            }
        );
        if show.full {
            let schema = serde_json::to_string(&t.input_schema).unwrap_or_default();
            outln!("    input: {}", printable(&schema));
        }
    }
    ExitCode::SUCCESS
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
        errln!(
            "{} the tool reported a failure (isError: true): a tool error, not a protocol error",
            style.warn("!")
        );
        ExitCode::FAILURE
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

/// `mcp call --task`: the call as a task, its id and status changes on
/// stderr, waited for within the request timeout (`--timeout`).
async fn call_as_task(
    session: &Session,
    tool: &str,
    arguments: Value,
    options: CallOptions,
    style: Style,
) -> Result<CallToolResult, mcp_session::SessionError> {
    let timeout = session.config().request_timeout;
    match session.call_tool_as_task(tool, arguments, options).await? {
        TaskCall::Task(mut handle) => {
            let task = handle.last();
            errln!(
                "{} task {} {}",
                style.dim("…"),
                printable(&task.task_id),
                task_status(task)
            );
            let id = printable(handle.id());
            handle
                .wait_with(timeout, |task| {
                    errln!("{} task {id} {}", style.dim("…"), task_status(task));
                })
                .await
        }
        TaskCall::Complete(result) => {
            errln!(
                "{} the server answered at once, without a task",
                style.dim("…")
            );
            Ok(result)
        }
        _ => Err(mcp_session::SessionError::InvalidResponse {
            method: "tools/call".into(),
            reason: "an answer this client does not know".into(),
        }),
    }
}

/// A task's status and message, for people.
fn task_status(task: &mcp_session::protocol::tasks::Task) -> String {
    match &task.status_message {
        Some(m) => format!("{}: {}", task.status, printable(m)),
        None => task.status.to_string(),
    }
}

/// `mcp call`.
pub(crate) async fn call(
    args: TargetArgs,
    show: ShowArgs,
    style: Style,
    tool: String,
    arguments: String,
    progress: bool,
    task: bool,
) -> ExitCode {
    let arguments: Value = match serde_json::from_str(&arguments) {
        Ok(v) => v,
        Err(e) => return usage_error(&format!("--args is not JSON: {e}")),
    };
    if task && args.config.is_some() {
        return usage_error("--task runs a tool on one server: use --stdio, --url or the demo");
    }
    if args.config.is_some() {
        return crate::agent::call(args, show, style, tool, arguments).await;
    }
    // A server that asks the user something mid-call gets the user (on a
    // terminal), or a decline.
    let handlers = mcp_session::ClientHandlers::new()
        .elicitation(crate::elicit::TerminalElicitor::new(show.json));
    let (session, probed) =
        match connect_one_with(&args, show, style, |c| c.handler(handlers)).await {
            Ok(c) => c,
            Err(code) => return code,
        };
    let options = if progress {
        CallOptions::new().on_progress(crate::features::progress_printer())
    } else {
        CallOptions::new()
    };
    let result = if task {
        call_as_task(&session, &tool, arguments, options, style).await
    } else {
        session.call_tool_with(&tool, arguments, options).await
    };
    if progress {
        crate::features::progress_done();
    }
    session.close().await;
    match result {
        Ok(r) => print_call_result(&r, show, style),
        Err(e) => {
            errln!("{} {}", style.fail("✗"), printable_block(&e.to_string()));
            if let Some(d) = diagnosis::call(&e) {
                errln!("  • {}", printable(&d));
            }
            let tail = probed.stderr_tail();
            if e.is_closed() && !tail.is_empty() {
                errln!("  server stderr (last lines):");
                for l in tail {
                    errln!("    │ {}", printable(&l));
                }
            }
            ExitCode::FAILURE
        }
    }
}
