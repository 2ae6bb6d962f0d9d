//! How a command fails, in one place: a [`CliError`] has a stable `kind`,
//! the message, the step it failed at (when there are steps) and hints.
//! As text it goes to stderr (`✗ mcp COMMAND: message`); with `--json`,
//! stdout holds exactly one JSON object at the end of the command,
//! `{"error": {"kind", "message", "command", "step"?, "hints"?}}`, never
//! text: while a command runs with `--json`, `term` sends its text lines to
//! stderr and keeps the JSON result back, and [`finish`] writes the result
//! (success) or the error, with the result when there is one (failure: a
//! probe's report, a listing some servers are missing from, a tool's
//! `isError` result).
//!
//! The exit statuses (README, "Exit codes"): 0 success; 1 failure; 2 a
//! usage error; 130, 143, 129 a signal (`signals`); 141 a closed stdout.
//!
//! Messages are in the CLI's own words ([`cli_words`]): a timeout names the
//! flag that raises it, not the library's setting.

use std::process::ExitCode;
use std::sync::{Mutex, OnceLock, PoisonError};

use mcp_stack_session::{SessionError, TimeoutKind};
use serde_json::{Map, Value, json};

use crate::output::{Style, printable, printable_block};
use crate::term::{self, errln};

/// Why a command failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CliError {
    /// A stable word for scripts: `usage`, `config`, `start`, `handshake`,
    /// `timeout`, `request`, `tool`, `server`, `not_found`, `io`, `auth`,
    /// `signal`, … (README, "Errors in JSON").
    kind: &'static str,
    message: String,
    /// The step that failed (`start`, `initialize`, `tools/list` …).
    step: Option<String>,
    /// What it probably means.
    hints: Vec<String>,
    /// The exit status.
    code: u8,
}

impl CliError {
    /// A command line that cannot be run: exit status 2.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        CliError {
            kind: "usage",
            message: message.into(),
            step: None,
            hints: Vec::new(),
            code: 2,
        }
    }

    /// A failure of `kind`: exit status 1.
    pub(crate) fn new(kind: &'static str, message: impl Into<String>) -> Self {
        CliError {
            kind,
            message: cli_words(&message.into()),
            step: None,
            hints: Vec::new(),
            code: 1,
        }
    }

    /// A request's failure: `timeout`, `closed`, `protocol` or `request`.
    pub(crate) fn session(e: &SessionError, message: impl Into<String>) -> Self {
        let kind = if e.is_timeout() {
            "timeout"
        } else if e.is_closed() {
            "closed"
        } else if e.protocol_error().is_some() {
            "protocol"
        } else {
            "request"
        };
        CliError::new(kind, message)
    }

    /// The step it failed at.
    pub(crate) fn at(mut self, step: impl Into<String>) -> Self {
        self.step = Some(step.into());
        self
    }

    /// What it probably means.
    pub(crate) fn hints(mut self, hints: Vec<String>) -> Self {
        self.hints = hints;
        self
    }

    /// The stable kind.
    pub(crate) fn kind(&self) -> &'static str {
        self.kind
    }

    /// The error object of `--json`.
    fn to_json(&self, command: &str) -> Value {
        let mut m = Map::new();
        m.insert("kind".into(), Value::from(self.kind));
        m.insert("message".into(), Value::from(self.message.as_str()));
        m.insert("command".into(), Value::from(command));
        if let Some(step) = &self.step {
            m.insert("step".into(), Value::from(step.as_str()));
        }
        if !self.hints.is_empty() {
            m.insert("hints".into(), json!(self.hints));
        }
        Value::Object(m)
    }

    /// Prints it on stderr (`✗ mcp COMMAND: message`, the hints; a usage
    /// error `mcp: message`), keeps it
    /// for `--json` ([`finish`]), and gives the exit status.
    pub(crate) fn report(self, style: Style) -> ExitCode {
        if self.code == 2 {
            // What was wrong with the command line, as before: `mcp: …`.
            errln!("mcp: {}", printable_block(&self.message));
            return self.record();
        }
        errln!(
            "{} mcp {}: {}",
            style.fail("✗"),
            command(),
            printable_block(&self.message)
        );
        for h in &self.hints {
            errln!("  • {}", printable(h));
        }
        self.record()
    }

    /// Keeps it for `--json` without printing it (the command printed it
    /// its own way); the exit status.
    pub(crate) fn record(self) -> ExitCode {
        let code = ExitCode::from(self.code);
        let mut first = RECORDED.lock().unwrap_or_else(PoisonError::into_inner);
        if first.is_none() {
            *first = Some(self);
        }
        code
    }
}

/// A usage error, reported: exit status 2.
pub(crate) fn usage_error(message: &str) -> ExitCode {
    CliError::usage(message).report(Style::plain())
}

/// The command running and whether it is `--json`.
#[derive(Debug)]
struct Mode {
    command: String,
    json: bool,
}

static MODE: OnceLock<Mode> = OnceLock::new();

/// The first failure of the command.
static RECORDED: Mutex<Option<CliError>> = Mutex::new(None);

/// Says which command runs (`tools`, `config check`) and whether with
/// `--json`; from then on `term` keeps stdout for JSON alone.
pub(crate) fn start(command: &str, json: bool) {
    let _ = MODE.set(Mode {
        command: command.to_owned(),
        json,
    });
    term::set_json_mode(json);
}

/// The running command's name (`tools`), as messages are headed.
pub(crate) fn command() -> &'static str {
    MODE.get().map_or("", |m| m.command.as_str())
}

/// Ends a command: with `--json`, writes its one JSON value on stdout (the
/// result, or the error object with the result beside it).
pub(crate) fn finish(code: ExitCode) -> ExitCode {
    let Some(mode) = MODE.get().filter(|m| m.json) else {
        return code;
    };
    let result = term::take_result();
    if code == ExitCode::SUCCESS {
        if let Some(v) = result {
            term::write_json(&v);
        }
        return code;
    }
    let recorded = RECORDED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let error = recorded
        .unwrap_or_else(|| unrecorded(code))
        .to_json(&mode.command);
    term::write_json(&with_error(result, error));
    code
}

/// The error of a command that failed without saying how (a signal, a
/// listing some servers are missing from).
fn unrecorded(code: ExitCode) -> CliError {
    for (signal, status) in [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)] {
        if code == ExitCode::from(status) {
            let mut e = CliError::new("signal", format!("interrupted by {signal}"));
            e.code = status;
            return e;
        }
    }
    CliError::new("failure", "the command failed (stderr says why)")
}

/// The one JSON value of a failed command: the error object, inside the
/// result when it is an object, else beside it.
fn with_error(result: Option<Value>, error: Value) -> Value {
    match result {
        Some(Value::Object(mut m)) => {
            m.entry("error").or_insert(error);
            Value::Object(m)
        }
        Some(other) => json!({"error": error, "result": other}),
        None => json!({"error": error}),
    }
}

/// `text` in the CLI's words: a timeout's library setting
/// (`SessionConfig::request_timeout …`) becomes the flag that raises it.
pub(crate) fn cli_words(text: &str) -> String {
    let mut out = text.to_owned();
    for (kind, flag) in [
        (TimeoutKind::Request, "--timeout MS"),
        (
            TimeoutKind::MaxTotal,
            "--timeout MS (each progress report restarts it, up to the session's cap)",
        ),
        (TimeoutKind::Handshake, "--handshake-timeout MS"),
        (
            TimeoutKind::Probe,
            "--handshake-timeout MS (or skip the probe with --protocol handshake)",
        ),
    ] {
        out = out.replace(kind.setting(), flag);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn timeouts_name_the_flags() {
        let secs = Duration::from_secs;
        for (kind, flag) in [
            (TimeoutKind::Request, "--timeout"),
            (TimeoutKind::Handshake, "--handshake-timeout"),
            (TimeoutKind::Probe, "--handshake-timeout"),
        ] {
            let e = SessionError::timeout("tools/list", kind, secs(1), secs(1));
            let text = cli_words(&e.to_string());
            assert!(text.contains(flag), "{text}");
            assert!(!text.contains("SessionConfig"), "{text}");
            assert_eq!(CliError::session(&e, e.to_string()).kind(), "timeout");
        }
    }

    #[test]
    fn the_error_goes_inside_an_object_result_and_beside_others() {
        let e = json!({"kind": "tool"});
        assert_eq!(
            with_error(Some(json!({"ok": false})), e.clone()),
            json!({"ok": false, "error": {"kind": "tool"}})
        );
        assert_eq!(
            with_error(Some(json!([1])), e.clone()),
            json!({"error": {"kind": "tool"}, "result": [1]})
        );
        assert_eq!(with_error(None, e), json!({"error": {"kind": "tool"}}));
        let usage = CliError::usage("x").at("start").to_json("tools");
        assert_eq!(
            usage,
            json!({"kind": "usage", "message": "x", "command": "tools", "step": "start"})
        );
    }
}
