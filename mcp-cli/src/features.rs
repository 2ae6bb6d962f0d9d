//! `mcp complete` and `mcp listen`, on one server (`--stdio`, `--url`, or
//! `--config` with `--server`), and the arguments of `mcp read` and
//! `mcp prompt` (`commands` runs those).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use mcp_stack_session::protocol::request::{CompletionComplete, Request as _};
use mcp_stack_session::types::CompletionReference;
use mcp_stack_session::{Session, SessionError};
use serde_json::{Value, json};

use crate::direct::connect_one;
use crate::errors::{CliError, usage_error};
use crate::output::{Style, printable};
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
    /// Its arguments, a JSON object of strings; `@FILE` reads it from a
    /// file, `-` from stdin.
    #[arg(long, value_name = "JSON|@FILE|-", default_value = "{}")]
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
pub(crate) fn string_map(flag: &str, text: &str) -> Result<BTreeMap<String, String>, String> {
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
    CliError::session(e, format!("{what}: {e}")).report(style)
}

fn print_json(value: Value) {
    term::print_json(&value, true);
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
        Err(e) => return failed(style, CompletionComplete::METHOD, &e),
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
fn notification_json(n: &mcp_stack_session::ServerNotification) -> Value {
    use mcp_stack_session::ServerNotification as N;
    let params = match n {
        N::Progress(p) => json!(p),
        N::ToolsListChanged | N::ResourcesListChanged | N::PromptsListChanged => {
            return json!({"method": n.method()});
        }
        N::ResourceUpdated(u) => json!(u),
        N::Log(m) => json!(m),
        N::Cancelled(c) => json!(c),
        N::ElicitationComplete(e) => json!(e),
        N::Other { params, .. } => json!(params),
        _ => return json!({"method": "unknown"}),
    };
    json!({"method": n.method(), "params": params})
}

/// One notification as a line for people.
fn notification_line(n: &mcp_stack_session::ServerNotification) -> String {
    use mcp_stack_session::ServerNotification as N;
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
        N::ElicitationComplete(e) => {
            format!("elicitation {} complete", printable(&e.elicitation_id))
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
    let printer = move |n: &mcp_stack_session::ServerNotification| {
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
    let mut filter = mcp_stack_session::protocol::subscriptions::SubscriptionFilter::new()
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
