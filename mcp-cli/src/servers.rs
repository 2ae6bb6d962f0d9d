//! What the commands run over: one server's session (`direct`), or the
//! runtime of a config's servers (`agent`), behind one trait, so `tools`,
//! `call`, `resources`, `read`, `prompts` and `prompt` are each written
//! once (`commands`).

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_stack_session::CallOptions;
use mcp_stack_session::types::{
    CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use mcp_stack_transport::BoxFuture;
use serde_json::Value;

use std::process::ExitCode;

use crate::errors::{CliError, cli_words};
use crate::output::{Style, printable, printable_block};
use crate::term::errln;

/// The servers a command talks to.
pub(crate) trait Servers: Send + Sync {
    /// Whether items go by the runtime's namespaced names (`SERVER__NAME`,
    /// every server of a config) rather than a single server's own.
    fn namespaced(&self) -> bool;

    /// Whether a server failed to start (its failure was printed when they
    /// opened): a listing then exits with a failure.
    fn some_failed(&self) -> bool;

    /// The tools.
    fn tools(&self) -> BoxFuture<'_, Result<Listing<Tool>, Failure>>;

    /// The resources and resource templates.
    fn resources(&self) -> BoxFuture<'_, Result<Resources, Failure>>;

    /// The prompts.
    fn prompts(&self) -> BoxFuture<'_, Result<Listing<Prompt>, Failure>>;

    /// Calls a tool; `as_task` runs it as a task (one server only).
    fn call_tool<'a>(
        &'a self,
        name: &'a str,
        arguments: Value,
        options: CallOptions,
        as_task: bool,
    ) -> BoxFuture<'a, Result<CallToolResult, Failure>>;

    /// Reads a resource by URI (or, namespaced, by its name).
    fn read_resource<'a>(
        &'a self,
        name_or_uri: &'a str,
    ) -> BoxFuture<'a, Result<ReadResourceResult, Failure>>;

    /// Gets a prompt with its arguments.
    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        arguments: BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<GetPromptResult, Failure>>;

    /// Closes every server with its close sequence; what a single stdio
    /// server last wrote to stderr.
    fn close(self: Box<Self>) -> BoxFuture<'static, StderrTail>;
}

/// One listed item.
#[derive(Debug)]
pub(crate) struct Listed<T> {
    /// The name the commands take: its own, or the namespaced one.
    pub(crate) name: String,
    /// Namespaced: its server, and its own name there.
    pub(crate) origin: Option<(String, String)>,
    /// The item as its server described it.
    pub(crate) item: Arc<T>,
}

impl<T> Listed<T> {
    /// An item of a single server, under its own name.
    pub(crate) fn own(name: &str, item: Arc<T>) -> Self {
        Listed {
            name: name.to_owned(),
            origin: None,
            item,
        }
    }

    /// `v`, the item as JSON; namespaced, with its `name` and `server`
    /// added (and, when `own_name_key` is given, its own name under that key).
    pub(crate) fn json(&self, mut v: Value, own_name_key: Option<&str>) -> Value {
        if let (Some((server, own)), Value::Object(m)) = (&self.origin, &mut v) {
            m.insert("name".into(), Value::from(self.name.as_str()));
            m.insert("server".into(), Value::from(server.as_str()));
            if let Some(key) = own_name_key {
                m.insert(key.into(), Value::from(own.as_str()));
            }
        }
        v
    }
}

/// A list of one kind, with what its servers said about it.
#[derive(Debug)]
pub(crate) struct Listing<T> {
    /// Notes on the lists (a list that failed to load, a tool left out).
    pub(crate) notes: Vec<String>,
    pub(crate) items: Vec<Listed<T>>,
}

/// Resources and resource templates.
#[derive(Debug)]
pub(crate) struct Resources {
    pub(crate) resources: Listing<Resource>,
    pub(crate) templates: Vec<Listed<ResourceTemplate>>,
}

/// Why a request failed, as the user reads it.
#[derive(Debug, Default)]
pub(crate) struct Failure {
    /// The error (printed after a ✗).
    pub(crate) message: String,
    /// What it probably means, one line each.
    pub(crate) hints: Vec<String>,
    /// The server went away: its last stderr lines (read once it is
    /// closed) say why.
    pub(crate) show_stderr: bool,
    /// Its stable kind for `--json` (`errors::CliError`); `request` when
    /// not set.
    pub(crate) kind: Option<&'static str>,
}

/// The last lines a server wrote to stderr (stdio, one server).
pub(crate) type StderrTail = Vec<String>;

impl Failure {
    /// A failure that is just its message.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            ..Failure::default()
        }
    }

    /// A request's failure, after `what` (`resources/list: …`), of the
    /// kind its error is.
    pub(crate) fn session(what: &str, e: &mcp_stack_session::SessionError) -> Self {
        let message = format!("{what}: {e}");
        Failure {
            kind: Some(CliError::session(e, message.as_str()).kind()),
            message,
            ..Failure::default()
        }
    }

    /// Prints it on stderr, with `stderr_tail` when it matters (in the
    /// CLI's words), keeps it for `--json`; the exit status.
    pub(crate) fn print(&self, style: Style, stderr_tail: &[String]) -> ExitCode {
        let message = cli_words(&self.message);
        errln!("{} {}", style.fail("✗"), printable_block(&message));
        for h in &self.hints {
            errln!("  • {}", printable(h));
        }
        if self.show_stderr && !stderr_tail.is_empty() {
            errln!("  server stderr (last lines):");
            for l in stderr_tail {
                errln!("    │ {}", printable(l));
            }
        }
        CliError::new(self.kind.unwrap_or("request"), message)
            .hints(self.hints.clone())
            .record()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A namespaced item's JSON names its server; a single server's is as
    /// the server sent it.
    #[test]
    fn namespaced_items_carry_their_server_in_json() {
        let tool: Tool = serde_json::from_value(serde_json::json!({
            "name": "echo", "inputSchema": {"type": "object"}
        }))
        .unwrap();
        let tool = Arc::new(tool);
        let sent = serde_json::to_value(&*tool).unwrap();
        let own = Listed::own("echo", Arc::clone(&tool)).json(sent.clone(), Some("serverToolName"));
        assert_eq!(own, sent);
        let namespaced = Listed {
            name: "kit__echo".into(),
            origin: Some(("kit".into(), "echo".into())),
            item: tool,
        };
        let v = namespaced.json(sent.clone(), Some("serverToolName"));
        assert_eq!(v["name"], "kit__echo");
        assert_eq!(v["server"], "kit");
        assert_eq!(v["serverToolName"], "echo");
        assert!(namespaced.json(sent, None).get("serverToolName").is_none());
    }
}
