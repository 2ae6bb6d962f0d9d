//! One server, connected directly (started and connected like `mcp probe`
//! does): [`OneServer`], the [`Servers`] of `--stdio`, `--url` and the demo
//! (with `--config`, `agent`'s runtime is).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;

use mcp_stack_session::protocol::request::{
    PromptsGet, PromptsList, Request as _, ResourcesList, ResourcesRead, ToolsCall,
};
use mcp_stack_session::types::{CallToolResult, GetPromptResult, ReadResourceResult};
use mcp_stack_session::{CallOptions, Session, SessionConfig, SessionError, TaskCall};
use mcp_stack_transport::BoxFuture;
use serde_json::Value;

use crate::diagnosis;
use crate::errors::usage_error;
use crate::output::{Style, printable};
use crate::probe::{Probed, start_and_connect, trace_options};
use crate::report::Report;
use crate::servers::{Failure, Listed, Listing, Resources, Servers, StderrTail};
use crate::target::targets;
use crate::term::errln;
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
        report.failure().record()
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

/// One server's session, as the commands run over it.
pub(crate) struct OneServer {
    session: Session,
    probed: Probed,
    style: Style,
}

impl OneServer {
    /// Connects to the one target the options name (`adjust` sets the
    /// session up first), or explains why not.
    pub(crate) async fn connect(
        args: &TargetArgs,
        show: ShowArgs,
        style: Style,
        adjust: impl FnOnce(SessionConfig) -> SessionConfig,
    ) -> Result<Self, ExitCode> {
        let (session, probed) = connect_one_with(args, show, style, adjust).await?;
        Ok(OneServer {
            session,
            probed,
            style,
        })
    }
}

/// A request's error, after `what` (`resources/list: …`).
fn failed(what: &str, e: &SessionError) -> Failure {
    Failure::session(what, e)
}

impl Servers for OneServer {
    fn namespaced(&self) -> bool {
        false
    }

    fn some_failed(&self) -> bool {
        false
    }

    fn tools(&self) -> BoxFuture<'_, Result<Listing<mcp_stack_session::types::Tool>, Failure>> {
        Box::pin(async move {
            let catalog = self
                .session
                .list_tools()
                .await
                .map_err(|e| failed("tools/list failed", &e))?;
            Ok(Listing {
                notes: catalog.diagnostics().to_vec(),
                items: catalog
                    .iter()
                    .map(|t| Listed::own(&t.name, Arc::clone(t)))
                    .collect(),
            })
        })
    }

    fn resources(&self) -> BoxFuture<'_, Result<Resources, Failure>> {
        Box::pin(async move {
            let listed = self.session.list_resources().await;
            let templates = self.session.list_resource_templates().await;
            let resources = listed.map_err(|e| failed(ResourcesList::METHOD, &e))?;
            // A server may list resources and refuse templates (older ones).
            let templates = templates.unwrap_or_default();
            Ok(Resources {
                resources: Listing {
                    notes: Vec::new(),
                    items: resources
                        .iter()
                        .map(|r| Listed::own(&r.name, Arc::new(r.clone())))
                        .collect(),
                },
                templates: templates
                    .iter()
                    .map(|t| Listed::own(&t.name, Arc::new(t.clone())))
                    .collect(),
            })
        })
    }

    fn prompts(&self) -> BoxFuture<'_, Result<Listing<mcp_stack_session::types::Prompt>, Failure>> {
        Box::pin(async move {
            let prompts = self
                .session
                .list_prompts()
                .await
                .map_err(|e| failed(PromptsList::METHOD, &e))?;
            Ok(Listing {
                notes: Vec::new(),
                items: prompts
                    .iter()
                    .map(|p| Listed::own(&p.name, Arc::new(p.clone())))
                    .collect(),
            })
        })
    }

    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
        options: CallOptions,
        as_task: bool,
    ) -> BoxFuture<'a, Result<CallToolResult, Failure>> {
        Box::pin(async move {
            let result = if as_task {
                call_as_task(&self.session, name, arguments, options, self.style).await
            } else {
                self.session.call_tool_with(name, arguments, options).await
            };
            result.map_err(|e| Failure {
                message: e.to_string(),
                hints: diagnosis::call(&e).into_iter().collect(),
                show_stderr: e.is_closed(),
                ..Failure::session(ToolsCall::METHOD, &e)
            })
        })
    }

    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
    ) -> BoxFuture<'a, Result<ReadResourceResult, Failure>> {
        Box::pin(async move {
            self.session
                .read_resource(uri)
                .await
                .map_err(|e| failed(ResourcesRead::METHOD, &e))
        })
    }

    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        arguments: BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<GetPromptResult, Failure>> {
        Box::pin(async move {
            self.session
                .get_prompt(name, arguments)
                .await
                .map_err(|e| failed(PromptsGet::METHOD, &e))
        })
    }

    fn close(self: Box<Self>) -> BoxFuture<'static, StderrTail> {
        Box::pin(async move {
            self.session.close().await;
            self.probed.stderr_tail()
        })
    }
}

/// `mcp call --task`: the call as a task, its id and status changes on
/// stderr, waited for within the request timeout (`--timeout`).
async fn call_as_task(
    session: &Session,
    tool: &str,
    arguments: Value,
    options: CallOptions,
    style: Style,
) -> Result<CallToolResult, mcp_stack_session::SessionError> {
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
        _ => Err(mcp_stack_session::SessionError::InvalidResponse {
            method: ToolsCall::METHOD.into(),
            reason: "an answer this client does not know".into(),
        }),
    }
}

/// A task's status and message, for people.
fn task_status(task: &mcp_stack_session::protocol::tasks::Task) -> String {
    match &task.status_message {
        Some(m) => format!("{}: {}", task.status, printable(m)),
        None => task.status.to_string(),
    }
}
