//! What a probe found and how it is shown: the steps with their status and
//! time, the diagnosis, the server's last stderr lines, as text for people or
//! as the `--json` report; and the one-line details of the steps (the server
//! and its capabilities, the tool list, a call's result).

use std::process::ExitCode;
use std::time::Duration;

use mcp_stack_session::ToolCatalog;
use mcp_stack_session::types::{CallToolResult, Content, InitializeResult};
use serde_json::{Value, json};

use crate::ShowArgs;
use crate::errors::{self, CliError, cli_words};
use crate::output::{Style, ms, printable, summarize};
use crate::term::{self, outln};

/// How a step went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Pass,
    Warn,
    Fail,
    Skip,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }
}

#[derive(Debug)]
struct Step {
    name: &'static str,
    status: Status,
    elapsed: Option<Duration>,
    detail: String,
}

/// Everything a probe found, for text or JSON.
#[derive(Debug, Default)]
pub(crate) struct Report {
    target: String,
    steps: Vec<Step>,
    /// What the failures probably mean (see `diagnosis`).
    pub(crate) diagnosis: Vec<String>,
    /// The server's last stderr lines (shown when a step failed).
    pub(crate) stderr_tail: Vec<String>,
    /// The server's `initialize` (or `server/discover`) answer.
    pub(crate) server: Option<Value>,
    /// The tools it listed.
    pub(crate) tools: Vec<Value>,
    /// The sample call's result.
    pub(crate) call: Option<Value>,
}

impl Report {
    /// An empty report on `target` (its label).
    pub(crate) fn new(target: &str) -> Self {
        Report {
            target: target.to_owned(),
            ..Report::default()
        }
    }

    /// Records a step.
    pub(crate) fn step(
        &mut self,
        name: &'static str,
        status: Status,
        elapsed: Option<Duration>,
        detail: String,
    ) {
        self.steps.push(Step {
            name,
            status,
            elapsed,
            detail: cli_words(&detail),
        });
    }

    /// Whether a step failed.
    pub(crate) fn failed(&self) -> bool {
        self.steps.iter().any(|s| s.status == Status::Fail)
    }

    /// The first failed step as an error: its kind (`start`, `timeout`,
    /// `handshake`, or the step's own), the step, the diagnosis as hints.
    pub(crate) fn failure(&self) -> CliError {
        let Some(step) = self.steps.iter().find(|s| s.status == Status::Fail) else {
            return CliError::new("failure", format!("{}: no step failed", self.target));
        };
        let kind = if step.detail.contains("timed out") {
            "timeout"
        } else {
            match step.name {
                "start" => "start",
                "initialize" | "discover" | "probe" => "handshake",
                "tools/list" | "tools/call" => "request",
                _ => "failure",
            }
        };
        CliError::new(kind, format!("{}: {}", self.target, step.detail))
            .at(step.name)
            .hints(self.diagnosis.clone())
    }

    fn to_json(&self) -> Value {
        json!({
            "target": self.target,
            "ok": !self.failed(),
            "steps": self.steps.iter().map(|s| json!({
                "name": s.name,
                "status": s.status.name(),
                "ms": s.elapsed.map(|d| d.as_secs_f64() * 1000.0),
                "detail": s.detail,
            })).collect::<Vec<_>>(),
            "diagnosis": self.diagnosis,
            "stderrTail": self.stderr_tail,
            "server": self.server,
            "tools": self.tools,
            "call": self.call,
        })
    }

    /// Prints the report as text.
    pub(crate) fn print(&self, style: Style) {
        // Headed by the command that ran it (`mcp tools` connects as
        // `mcp probe` does).
        let heading = format!("mcp {}", errors::command());
        outln!("{} {}", style.bold(&heading), printable(&self.target));
        for s in &self.steps {
            let mark = match s.status {
                Status::Pass => style.ok("✓"),
                Status::Warn => style.warn("!"),
                Status::Fail => style.fail("✗"),
                Status::Skip => style.dim("-"),
            };
            let time = s.elapsed.map(ms).unwrap_or_default();
            // One line each: a server's text in a detail (an error
            // message) cannot add lines to the report.
            outln!(
                "  {mark} {:<12} {:>8}  {}",
                s.name,
                style.dim(&time),
                printable(&s.detail)
            );
        }
        if !self.diagnosis.is_empty() {
            outln!("  {}", style.bold("diagnosis:"));
            for d in &self.diagnosis {
                outln!("    • {}", printable(d));
            }
        }
        if self.failed() && !self.stderr_tail.is_empty() {
            outln!("  {}", style.bold("server stderr (last lines):"));
            for l in &self.stderr_tail {
                outln!("    │ {}", printable(l));
            }
        }
        let total: Duration = self.steps.iter().filter_map(|s| s.elapsed).sum();
        let passed = self
            .steps
            .iter()
            .filter(|s| s.status == Status::Pass)
            .count();
        let verdict = if self.failed() {
            style.fail("FAIL")
        } else {
            style.ok("PASS")
        };
        outln!(
            "  {verdict} {passed}/{} steps passed in {}",
            self.steps.len(),
            ms(total)
        );
    }
}

/// Prints the reports (text, or one JSON value: an object for one target, an
/// array for several); the exit status is a failure when any step failed.
pub(crate) fn print_reports(reports: &[Report], show: ShowArgs, style: Style) -> ExitCode {
    if show.json {
        let v = if let [one] = reports {
            one.to_json()
        } else {
            Value::Array(reports.iter().map(Report::to_json).collect())
        };
        term::print_json(&v, true);
    } else {
        for (i, r) in reports.iter().enumerate() {
            if i > 0 {
                outln!();
            }
            r.print(style);
        }
    }
    if let Some(failed) = reports.iter().find(|r| r.failed()) {
        failed.failure().record()
    } else {
        ExitCode::SUCCESS
    }
}

/// The handshake step's detail: the server, the revision, its capabilities.
pub(crate) fn describe_init(init: &InitializeResult, version: &str) -> String {
    let c = &init.capabilities;
    let mut caps = Vec::new();
    if let Some(t) = &c.tools {
        caps.push(if t.list_changed == Some(true) {
            "tools(listChanged)".to_string()
        } else {
            "tools".to_string()
        });
    }
    for (name, present) in [
        ("resources", c.resources.is_some()),
        ("prompts", c.prompts.is_some()),
        ("logging", c.logging.is_some()),
        ("completions", c.completions.is_some()),
    ] {
        if present {
            caps.push(name.to_string());
        }
    }
    caps.extend(c.extra.keys().cloned());
    let caps = if caps.is_empty() {
        "none".to_string()
    } else {
        caps.join(", ")
    };
    format!(
        "{} {} · protocol {version} · capabilities: {caps}",
        printable(&init.server_info.name),
        printable(&init.server_info.version)
    )
}

/// The `tools/list` step's detail: how many tools, and (the first ten of)
/// their names.
pub(crate) fn tool_summary(catalog: &ToolCatalog, full: bool) -> String {
    let names: Vec<&str> = catalog.iter().map(|t| t.name.as_str()).collect();
    let shown = if full || names.len() <= 10 {
        names.join(", ")
    } else {
        format!(
            "{}, … and {} more (--full lists all)",
            names.get(..10).unwrap_or_default().join(", "),
            names.len() - 10
        )
    };
    format!("{} tools: {}", names.len(), printable(&shown))
}

/// The `tools/call` step's detail: the result's content, summarised.
pub(crate) fn describe_result(r: &CallToolResult, full: bool) -> String {
    let mut parts = Vec::new();
    for c in &r.content {
        match c {
            Content::Text(t) => parts.push(format!("{:?}", summarize(&t.text, 200, full))),
            other => parts.push(format!("[{}]", other.kind())),
        }
    }
    if r.structured_content.is_some() {
        parts.push("+ structuredContent".into());
    }
    printable(&parts.join(" "))
}
