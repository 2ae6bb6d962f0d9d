//! `mcp resources`, `mcp read`, `mcp prompts`, `mcp prompt` and
//! `mcp complete`: what a server offers beside tools, on one server
//! (`--stdio`, `--url`, or `--config` with `--server`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use mcp_session::types::{CompletionReference, Content, ResourceContents};
use mcp_session::{Session, SessionError};
use serde_json::{Value, json};

use crate::direct::connect_one;
use crate::output::{Style, printable, printable_block, summarize, usage_error};
use crate::term::{self, errln, outln};
use crate::{ShowArgs, TargetArgs};

/// `mcp read`.
#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    #[command(flatten)]
    pub(crate) show: ShowArgs,
    /// The resource's URI.
    pub(crate) uri: String,
    /// Write the contents to this file (binary contents as bytes) instead
    /// of printing them.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,
}

/// `mcp prompt`.
#[derive(Debug, Args)]
pub(crate) struct PromptArgs {
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    #[command(flatten)]
    pub(crate) show: ShowArgs,
    /// The prompt's name.
    pub(crate) name: String,
    /// Its arguments, a JSON object of strings.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub(crate) args: String,
}

/// `mcp complete`.
#[derive(Debug, Args)]
pub(crate) struct CompleteArgs {
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    #[command(flatten)]
    pub(crate) show: ShowArgs,
    /// Complete an argument of this prompt.
    #[arg(
        long,
        value_name = "NAME",
        conflicts_with = "resource",
        required_unless_present = "resource"
    )]
    pub(crate) prompt: Option<String>,
    /// Complete a variable of this resource template (`test://{id}`).
    #[arg(long, value_name = "TEMPLATE")]
    pub(crate) resource: Option<String>,
    /// The argument or variable.
    #[arg(long, value_name = "NAME")]
    pub(crate) arg: String,
    /// What has been typed so far.
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub(crate) value: String,
    /// Arguments already chosen, a JSON object of strings.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub(crate) context: String,
}

/// A JSON object of strings (`--args`, `--context`).
fn string_map(flag: &str, text: &str) -> Result<BTreeMap<String, String>, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("{flag} is not JSON: {e}"))?;
    let Value::Object(map) = value else {
        return Err(format!("{flag} must be a JSON object of strings"));
    };
    map.into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k, s)),
            other => Err(format!(
                "{flag}: `{k}` must be a string (prompt arguments are strings), not {other}"
            )),
        })
        .collect()
}

async fn session(target: &TargetArgs, show: ShowArgs, style: Style) -> Result<Session, ExitCode> {
    connect_one(target, show, style).await.map(|(s, _)| s)
}

fn failed(style: Style, what: &str, e: &SessionError) -> ExitCode {
    errln!(
        "{} {what}: {}",
        style.fail("✗"),
        printable_block(&e.to_string())
    );
    ExitCode::FAILURE
}

fn print_json(value: Value) {
    term::print_json(&value, true);
}

/// `mcp resources`: the resources and the resource templates (with
/// `--config`: every server's, under their namespaced names).
pub(crate) async fn resources(target: TargetArgs, show: ShowArgs, style: Style) -> ExitCode {
    if target.config.is_some() {
        return crate::agent::resources(target, show, style).await;
    }
    let s = match session(&target, show, style).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let listed = s.list_resources().await;
    let templates = s.list_resource_templates().await;
    s.close().await;
    let resources = match listed {
        Ok(r) => r,
        Err(e) => return failed(style, "resources/list", &e),
    };
    // A server may list resources and refuse templates (older ones).
    let templates = templates.unwrap_or_default();
    if show.json {
        print_json(json!({"resources": &*resources, "resourceTemplates": &*templates}));
        return ExitCode::SUCCESS;
    }
    outln!(
        "{} resources, {} templates",
        resources.len(),
        templates.len()
    );
    for r in resources.iter() {
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
    for t in templates.iter() {
        outln!(
            "{}  {}  {}",
            style.bold(&printable(&t.uri_template)),
            printable(&t.name),
            style.dim(&format!("(template: {})", t.variables().join(", ")))
        );
    }
    ExitCode::SUCCESS
}

/// `mcp read URI` (with `--config`: a namespaced name, or a URI one
/// server lists).
pub(crate) async fn read(a: ReadArgs, style: Style) -> ExitCode {
    let result = if a.target.config.is_some() {
        match crate::agent::read(a.target.clone(), a.show, style, &a.uri).await {
            Ok(r) => r,
            Err(code) => return code,
        }
    } else {
        let s = match session(&a.target, a.show, style).await {
            Ok(s) => s,
            Err(code) => return code,
        };
        let result = s.read_resource(&a.uri).await;
        s.close().await;
        match result {
            Ok(r) => r,
            Err(e) => return failed(style, "resources/read", &e),
        }
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
        print_json(serde_json::to_value(&result).unwrap_or_default());
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
    if target.config.is_some() {
        return crate::agent::prompts(target, show, style).await;
    }
    let s = match session(&target, show, style).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let listed = s.list_prompts().await;
    s.close().await;
    let prompts = match listed {
        Ok(p) => p,
        Err(e) => return failed(style, "prompts/list", &e),
    };
    if show.json {
        print_json(serde_json::to_value(&*prompts).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    for p in prompts.iter() {
        let args: Vec<String> = p
            .arguments
            .iter()
            .flatten()
            .map(|a| match a.required {
                Some(true) => a.name.clone(),
                _ => format!("[{}]", a.name),
            })
            .collect();
        let description = p
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
    ExitCode::SUCCESS
}

/// `mcp prompt NAME --args '{…}'`.
pub(crate) async fn prompt(a: PromptArgs, style: Style) -> ExitCode {
    let arguments = match string_map("--args", &a.args) {
        Ok(m) => m,
        Err(e) => return usage_error(&e),
    };
    let result = if a.target.config.is_some() {
        match crate::agent::prompt(a.target.clone(), a.show, style, &a.name, arguments).await {
            Ok(r) => r,
            Err(code) => return code,
        }
    } else {
        let s = match session(&a.target, a.show, style).await {
            Ok(s) => s,
            Err(code) => return code,
        };
        let result = s.get_prompt(&a.name, arguments).await;
        s.close().await;
        match result {
            Ok(r) => r,
            Err(e) => return failed(style, "prompts/get", &e),
        }
    };
    if a.show.json {
        print_json(serde_json::to_value(&result).unwrap_or_default());
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

/// `mcp complete`.
pub(crate) async fn complete(a: CompleteArgs, style: Style) -> ExitCode {
    let context = match string_map("--context", &a.context) {
        Ok(m) => m,
        Err(e) => return usage_error(&e),
    };
    let reference = match (&a.prompt, &a.resource) {
        (Some(name), None) => CompletionReference::Prompt { name: name.clone() },
        (None, Some(uri)) => CompletionReference::Resource { uri: uri.clone() },
        _ => return usage_error("give --prompt NAME or --resource TEMPLATE"),
    };
    let s = match session(&a.target, a.show, style).await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let result = s.complete(reference, &a.arg, &a.value, context).await;
    s.close().await;
    let completion = match result {
        Ok(c) => c,
        Err(e) => return failed(style, "completion/complete", &e),
    };
    if a.show.json {
        print_json(serde_json::to_value(&completion).unwrap_or_default());
        return ExitCode::SUCCESS;
    }
    for v in &completion.values {
        outln!("{}", printable(v));
    }
    if completion.has_more == Some(true) {
        let total = completion
            .total
            .map(|t| format!(" of {t}"))
            .unwrap_or_default();
        errln!(
            "{}",
            style.dim(&format!(
                "({} shown{total}; type more to narrow)",
                completion.values.len()
            ))
        );
    }
    ExitCode::SUCCESS
}

/// `mcp listen`.
#[derive(Debug, Args)]
pub(crate) struct ListenArgs {
    #[command(flatten)]
    pub(crate) target: TargetArgs,
    #[command(flatten)]
    pub(crate) show: ShowArgs,
    /// Subscribe to updates of this resource (repeatable).
    #[arg(long, value_name = "URI")]
    pub(crate) resource: Vec<String>,
    /// Stop after this many seconds (default: until interrupted or the
    /// server goes away).
    #[arg(long = "for", value_name = "SECS")]
    pub(crate) duration: Option<u64>,
}

/// One notification as JSON (what `--json` prints, a line each).
fn notification_json(n: &mcp_session::ServerNotification) -> Value {
    use mcp_session::ServerNotification as N;
    match n {
        N::Progress(p) => json!({"method": "notifications/progress", "params": p}),
        N::ToolsListChanged => json!({"method": "notifications/tools/list_changed"}),
        N::ResourcesListChanged => json!({"method": "notifications/resources/list_changed"}),
        N::PromptsListChanged => json!({"method": "notifications/prompts/list_changed"}),
        N::ResourceUpdated(u) => {
            json!({"method": "notifications/resources/updated", "params": u})
        }
        N::Log(m) => json!({"method": "notifications/message", "params": m}),
        N::Cancelled(c) => json!({"method": "notifications/cancelled", "params": c}),
        N::ElicitationComplete { elicitation_id } => json!({
            "method": "notifications/elicitation/complete",
            "params": {"elicitationId": elicitation_id}
        }),
        N::Other { method, params } => json!({"method": method, "params": params}),
        _ => json!({"method": "unknown"}),
    }
}

/// One notification as a line for people.
fn notification_line(n: &mcp_session::ServerNotification) -> String {
    use mcp_session::ServerNotification as N;
    match n {
        N::Progress(p) => format!(
            "progress {}{}",
            p.progress(),
            p.total().map(|t| format!("/{t}")).unwrap_or_default()
        ),
        N::ToolsListChanged => "the tool list changed".into(),
        N::ResourcesListChanged => "the resource list changed".into(),
        N::PromptsListChanged => "the prompt list changed".into(),
        N::ResourceUpdated(u) => format!("updated: {}", printable(&u.uri)),
        N::Log(m) => format!(
            "log [{}]: {}",
            printable(&m.level),
            printable(&m.data.to_string())
        ),
        N::Cancelled(c) => format!("cancelled request {}", printable(&c.request_id.to_string())),
        N::ElicitationComplete { elicitation_id } => {
            format!("elicitation {} complete", printable(elicitation_id))
        }
        N::Other { method, .. } => printable(method),
        _ => "a notification".into(),
    }
}

/// `mcp listen`: subscribes through [`Session::listen`] (one
/// `subscriptions/listen` on 2026-07-28; `resources/subscribe` for each
/// `--resource` and the declared list changes before it) and prints what
/// comes.
pub(crate) async fn listen(a: ListenArgs, style: Style) -> ExitCode {
    let json = a.show.json;
    let printer = move |n: &mcp_session::ServerNotification| {
        if json {
            term::print_json(&notification_json(n), false);
        } else {
            outln!("{}", notification_line(n));
        }
    };
    let (session, _probed) = match crate::direct::connect_one_with(&a.target, a.show, style, |c| {
        c.on_notification(printer)
    })
    .await
    {
        Ok(c) => c,
        Err(code) => return code,
    };
    // One call for every revision: subscriptions/listen on 2026-07-28,
    // resources/subscribe and the declared list changes before it.
    let mut filter = mcp_session::protocol::subscriptions::SubscriptionFilter::new()
        .tools_list_changed()
        .resources_list_changed()
        .prompts_list_changed();
    for uri in &a.resource {
        filter = filter.resource(uri.clone());
    }
    let mut subscription = match session.listen(filter).await {
        Ok(s) => s,
        Err(e) => {
            session.close().await;
            return failed(style, "listen", &e);
        }
    };
    let granted = subscription
        .acknowledged()
        .resource_subscriptions
        .clone()
        .unwrap_or_default();
    let refused: Vec<&String> = a.resource.iter().filter(|u| !granted.contains(u)).collect();
    if !refused.is_empty() {
        errln!(
            "{} the server does not take subscriptions to: {}",
            style.warn("!"),
            refused
                .iter()
                .map(|u| printable(u))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    errln!(
        "{}",
        style.dim("listening (Ctrl-C to stop); notifications are printed as they come")
    );
    let until = async {
        match a.duration {
            Some(secs) => tokio::time::sleep(std::time::Duration::from_secs(secs)).await,
            None => std::future::pending().await,
        }
    };
    // The subscription's events reach the listener too (which printed
    // them); the subscription is drained until it ends.
    let events = async { while let Ok(Some(_)) = subscription.next().await {} };
    // Ctrl-C (or SIGTERM, SIGHUP) ends the command from outside: `signals`
    // closes the session's server and exits with 130 (143, 129).
    tokio::select! {
        _ = until => {}
        _ = events => {}
    }
    drop(subscription);
    session.close().await;
    ExitCode::SUCCESS
}

/// Prints a call's progress on stderr: a bar redrawn in place on a
/// terminal, plain lines otherwise.
pub(crate) fn progress_printer()
-> impl Fn(&mcp_session::types::ProgressParams) + Send + Sync + 'static {
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
