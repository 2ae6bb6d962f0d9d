//! `mcp probe`: talk to a server step by step (start, handshake,
//! `tools/list`, a sample `tools/call`, close), recording each step in a
//! [`Report`] and, when one fails, what it probably means (`diagnosis`).
//! Starting and connecting are shared with `mcp tools` and `mcp call`
//! (`direct`).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_stack_config::HttpKind;
use mcp_stack_runtime::TransportSettings;
use mcp_stack_session::types::InitializeResult;
use mcp_stack_session::{ProtocolMode, Session, SessionError, ToolCatalog};
use mcp_stack_transport::http::auto;
use mcp_stack_transport::stdio::StdioTransport;
use mcp_stack_transport::{Transport, TransportError};
use serde_json::{Value, json};

use crate::diagnosis;
use crate::errors::usage_error;
use crate::output::{Style, printable};
use crate::report::{Report, Status, describe_init, describe_result, print_reports, tool_summary};
use crate::target::{Target, targets};
use crate::trace::{Noise, TraceOptions, Traced};
use crate::{ShowArgs, TargetArgs};

/// What the tools/call step calls.
#[derive(Debug, Clone)]
pub(crate) enum SampleCall {
    /// Pick a safe tool, if there is one.
    Auto,
    /// This tool with these arguments (JSON text).
    Named(String, Option<String>),
}

impl SampleCall {
    pub(crate) fn from_args(tool: Option<String>, args: Option<String>) -> Self {
        match tool {
            Some(t) => SampleCall::Named(t, args),
            None => SampleCall::Auto,
        }
    }
}

/// A connection being probed: the session plus what the diagnosis needs.
pub(crate) struct Probed {
    transport: Arc<dyn Transport>,
    traced: Arc<Traced>,
}

impl Probed {
    /// The server's last stderr lines (stdio only).
    pub(crate) fn stderr_tail(&self) -> Vec<String> {
        self.transport
            .process()
            .map(|p| p.stderr_tail())
            .unwrap_or_default()
    }

    /// How the server process ended, once it has (stdio only).
    fn exit_info(&self) -> Option<mcp_stack_transport::ExitInfo> {
        self.transport.process().and_then(|p| p.exit_info())
    }

    /// What was seen on the wire that was not a message.
    fn noise(&self) -> Noise {
        self.traced
            .noise
            .lock()
            .map(|n| n.clone())
            .unwrap_or_default()
    }

    /// Records a failed handshake with its diagnosis, closes the transport
    /// and keeps the server's last stderr lines.
    pub(crate) async fn handshake_failed(
        &self,
        e: &SessionError,
        elapsed: Option<Duration>,
        report: &mut Report,
    ) {
        report.step("initialize", Status::Fail, elapsed, e.to_string());
        let found = diagnosis::handshake(e, self.exit_info().as_ref(), &self.noise());
        report.diagnosis.extend(found);
        self.transport.close().await;
        report.stderr_tail = self.stderr_tail();
    }
}

/// How `--trace`, `--json` and `--full` shape the trace.
pub(crate) fn trace_options(show: ShowArgs, style: Style) -> TraceOptions {
    TraceOptions {
        enabled: show.trace,
        to_stderr: show.json,
        full: show.full,
        style,
    }
}

/// Starts the server; on failure, records the step and the diagnosis.
async fn start(target: &Target, trace: TraceOptions, report: &mut Report) -> Option<Probed> {
    let t0 = Instant::now();
    match &target.connect {
        TransportSettings::Stdio(config) => match StdioTransport::spawn(config.clone()) {
            Ok(t) => {
                let detail = format!("pid {} · {}", t.pid(), printable(config.program()));
                report.step("start", Status::Pass, Some(t0.elapsed()), detail);
                let transport: Arc<dyn Transport> = Arc::new(t);
                crate::signals::track(&transport);
                let traced = Arc::new(Traced::new(Arc::clone(&transport), trace));
                Some(Probed { transport, traced })
            }
            Err(e) => {
                report.step("start", Status::Fail, Some(t0.elapsed()), e.to_string());
                report.diagnosis.push(diagnosis::spawn(&e));
                None
            }
        },
        TransportSettings::Http(http) => {
            let connected = http.connect(&auto::TransportCache::new()).await;
            let shown = mcp_stack_config::redact_url(&http.url);
            match connected {
                Ok(transport) => {
                    crate::signals::track(&transport);
                    let how = match http.kind {
                        HttpKind::StreamableHttp => "streamable HTTP",
                        HttpKind::Sse => "HTTP+SSE",
                        _ => "streamable HTTP, SSE fallback",
                    };
                    report.step(
                        "start",
                        Status::Pass,
                        Some(t0.elapsed()),
                        format!("{shown} · {how}"),
                    );
                    let traced = Arc::new(Traced::new(Arc::clone(&transport), trace));
                    Some(Probed { transport, traced })
                }
                Err(e) => {
                    report.step("start", Status::Fail, Some(t0.elapsed()), e.to_string());
                    if let Some(d) = diagnosis::http(&e) {
                        report.diagnosis.push(d);
                    }
                    None
                }
            }
        }
        TransportSettings::Unsupported(why) => {
            report.step("start", Status::Skip, None, why.clone());
            None
        }
        _ => {
            report.step(
                "start",
                Status::Skip,
                None,
                "a transport this build does not know".into(),
            );
            None
        }
    }
}
/// Words that say a tool may show its environment or a credential: such a
/// tool is never the probe's own pick (server-everything's `get-env`
/// returned the `--env API_KEY` the server was started with). `--call`
/// still calls one when asked, and what it prints is scrubbed.
const REVEALING_WORDS: &[&str] = &[
    "env",
    "environ",
    "environment",
    "getenv",
    "printenv",
    "secret",
    "secrets",
    "token",
    "tokens",
    "key",
    "keys",
    "apikey",
    "password",
    "passwords",
    "passwd",
    "credential",
    "credentials",
];

/// The words of a name or a sentence, lower case: split at every character
/// that is not a letter or digit and at camelCase humps (`printEnv`,
/// `get-env`, `API_KEY` → print env, get env, api key).
fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Whether a tool's name, title or description says it may echo the
/// environment or a credential.
fn may_reveal_secrets(tool: &mcp_stack_session::types::Tool) -> bool {
    [
        Some(tool.name.as_str()),
        tool.title.as_deref(),
        tool.description.as_deref(),
    ]
    .into_iter()
    .flatten()
    .flat_map(words)
    .any(|w| REVEALING_WORDS.contains(&w.as_str()))
}

/// Picks a call that is safe to make on someone's server: the demo's echo,
/// or a read-only tool with no required arguments that does not look like
/// it shows the environment or a credential (see [`REVEALING_WORDS`]).
fn pick_sample(
    target: &Target,
    server: &InitializeResult,
    catalog: &ToolCatalog,
) -> Option<(String, Value)> {
    let testkit = target.is_demo || server.server_info.name == mcp_stack_testkit::SERVER_NAME;
    if testkit && catalog.get("echo").is_some() {
        return Some(("echo".into(), json!({"text": "hello from mcp probe"})));
    }
    catalog.iter().find_map(|t| {
        let read_only = t
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        let no_required = t
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .is_none_or(|r| r.is_empty());
        (read_only && no_required && !may_reveal_secrets(t)).then(|| (t.name.clone(), json!({})))
    })
}

/// Starts the target and connects, through [`Session::connect_with`]: a
/// stdio server that exits during the 2026-07-28 probe (some legacy servers
/// exit when the first request is not `initialize`) is started once more and
/// gets the handshake straight away; the report says so. `None` when the
/// target did not start (the report says why).
pub(crate) async fn start_and_connect(
    target: &Target,
    trace: TraceOptions,
    report: &mut Report,
) -> Option<(Probed, Result<Session, SessionError>, Instant)> {
    // The opener writes to the report and keeps what it started; the session
    // may call it twice.
    let report = tokio::sync::Mutex::new(report);
    let started: std::sync::Mutex<Option<(Probed, Instant)>> = std::sync::Mutex::new(None);
    let lock = |m: &std::sync::Mutex<Option<(Probed, Instant)>>| {
        m.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    };
    let connected = Session::connect_with(
        || async {
            let mut report = report.lock().await;
            if let Some((previous, t0)) = lock(&started) {
                let why = previous
                    .exit_info()
                    .map(|x| format!(" ({x})"))
                    .unwrap_or_default();
                report.step(
                    "probe",
                    Status::Warn,
                    Some(t0.elapsed()),
                    format!(
                        "the server exited during the 2026-07-28 probe{why}; started again for \
                         the initialize handshake, in case it is a legacy server that refuses \
                         any other first request (--protocol legacy skips the probe)"
                    ),
                );
            }
            match start(target, trace, &mut report).await {
                Some(probed) => {
                    let traced = Arc::clone(&probed.traced) as Arc<dyn Transport>;
                    *started
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) =
                        Some((probed, Instant::now()));
                    Ok(traced)
                }
                None => Err(TransportError::closed("the server did not start")),
            }
        },
        target.session.clone(),
    )
    .await;
    let (probed, t0) = lock(&started)?;
    Some((probed, connected, t0))
}

async fn probe_one(target: &Target, show: ShowArgs, style: Style, sample: &SampleCall) -> Report {
    let trace = trace_options(show, style);
    let mut report = Report::new(&target.label);
    let Some((probed, connected, t0)) = start_and_connect(target, trace, &mut report).await else {
        return report;
    };
    let session = match connected {
        Ok(s) => s,
        Err(e) => {
            probed
                .handshake_failed(&e, Some(t0.elapsed()), &mut report)
                .await;
            return report;
        }
    };
    let negotiated = session.protocol_version();
    // 2026-07-28 has no handshake: server/discover told us who the server is.
    let (first, initialized) = if !negotiated.has_handshake() {
        (
            "discover",
            (
                Status::Skip,
                "not in 2026-07-28 (every request carries its _meta instead)",
            ),
        )
    } else {
        ("initialize", (Status::Pass, "notification sent"))
    };
    let mut detail = describe_init(session.server(), negotiated.as_str());
    if negotiated.has_handshake() && target.session.mode() == ProtocolMode::Auto {
        detail.push_str(" · 2026-07-28 probe declined, fell back to the handshake");
    }
    report.step(first, Status::Pass, Some(t0.elapsed()), detail);
    report.server = serde_json::to_value(session.server()).ok();
    report.step("initialized", initialized.0, None, initialized.1.into());

    let t0 = Instant::now();
    let catalog = match session.list_tools().await {
        Ok(c) => c,
        Err(e) => {
            report.step(
                "tools/list",
                Status::Fail,
                Some(t0.elapsed()),
                e.to_string(),
            );
            report.diagnosis.extend(diagnosis::too_large(&e));
            return finish(report, &session, &probed).await;
        }
    };
    report.tools = catalog
        .iter()
        .filter_map(|t| serde_json::to_value(&**t).ok())
        .collect();
    if catalog.is_empty() {
        report.step(
            "tools/list",
            Status::Warn,
            Some(t0.elapsed()),
            "no tools".into(),
        );
        let declares_tools = session.server().capabilities.tools.is_some();
        report.diagnosis.extend(diagnosis::no_tools(declares_tools));
    } else {
        report.step(
            "tools/list",
            Status::Pass,
            Some(t0.elapsed()),
            tool_summary(&catalog, show.full),
        );
    }
    report
        .diagnosis
        .extend(catalog.diagnostics().iter().cloned());

    let call = match sample {
        SampleCall::Named(tool, args) => {
            match args
                .as_deref()
                .map(serde_json::from_str::<Value>)
                .transpose()
            {
                Ok(a) => Some((tool.clone(), a.unwrap_or_else(|| json!({})))),
                Err(e) => {
                    report.step(
                        "tools/call",
                        Status::Fail,
                        None,
                        format!("--args is not JSON: {e}"),
                    );
                    return finish(report, &session, &probed).await;
                }
            }
        }
        SampleCall::Auto => pick_sample(target, session.server(), &catalog),
    };
    match call {
        None => report.step(
            "tools/call",
            Status::Skip,
            None,
            "no tool known to be safe to call (read-only, no required arguments, nothing that \
             looks like it shows the environment or a credential); use --call TOOL --args JSON"
                .into(),
        ),
        Some((tool, args)) => {
            let t0 = Instant::now();
            match session.call_tool(&tool, args).await {
                Ok(r) if r.is_error() => {
                    report.step(
                        "tools/call",
                        Status::Warn,
                        Some(t0.elapsed()),
                        format!("{tool} → isError: {}", describe_result(&r, show.full)),
                    );
                    report
                        .diagnosis
                        .push(diagnosis::tool_error(&tool, &r, show.full));
                    report.call = serde_json::to_value(&r).ok();
                }
                Ok(r) => {
                    report.step(
                        "tools/call",
                        Status::Pass,
                        Some(t0.elapsed()),
                        format!("{tool} → {}", describe_result(&r, show.full)),
                    );
                    report.call = serde_json::to_value(&r).ok();
                }
                Err(e) => {
                    report.step(
                        "tools/call",
                        Status::Fail,
                        Some(t0.elapsed()),
                        e.to_string(),
                    );
                    report.diagnosis.extend(diagnosis::call(&e));
                }
            }
        }
    }
    probe_features(&session, &mut report).await;
    finish(report, &session, &probed).await
}

/// What the server offers beside tools, when it declares any: the counts
/// of resources, templates, prompts and skills, and one safe probe of each
/// (the first resource read; the first prompt that needs no argument got;
/// skills only listed, never loaded).
async fn probe_features(session: &Session, report: &mut Report) {
    let caps = &session.server().capabilities;
    let skills = session.skills_settings().is_ok();
    if caps.resources.is_none() && caps.prompts.is_none() && !skills {
        return;
    }
    let t0 = Instant::now();
    let mut facts = Vec::new();
    let mut problems = Vec::new();
    if caps.resources.is_some() {
        match session.list_resources().await {
            Ok(resources) => {
                facts.push(format!("{} resources", resources.len()));
                if let Some(first) = resources.first() {
                    match session.read_resource(&first.uri).await {
                        Ok(r) => facts.push(format!(
                            "read {} ({} content item(s))",
                            printable(&first.uri),
                            r.contents.len()
                        )),
                        Err(e) => problems.push(format!("resources/read {}: {e}", first.uri)),
                    }
                }
            }
            Err(e) => problems.push(format!("resources/list: {e}")),
        }
        match session.list_resource_templates().await {
            Ok(t) => facts.push(format!("{} templates", t.len())),
            Err(e) => problems.push(format!("resources/templates/list: {e}")),
        }
    }
    if caps.prompts.is_some() {
        match session.list_prompts().await {
            Ok(prompts) => {
                facts.push(format!("{} prompts", prompts.len()));
                let free = prompts.iter().find(|p| {
                    !p.arguments
                        .iter()
                        .flatten()
                        .any(|a| a.required == Some(true))
                });
                if let Some(p) = free {
                    match session.get_prompt(&p.name, ()).await {
                        Ok(got) => facts.push(format!(
                            "got {} ({} message(s))",
                            printable(&p.name),
                            got.messages.len()
                        )),
                        Err(e) => problems.push(format!("prompts/get {}: {e}", p.name)),
                    }
                }
            }
            Err(e) => problems.push(format!("prompts/list: {e}")),
        }
    }
    if skills {
        // Listed only: a skill's files are fetched when it is loaded.
        match session.list_skills().await {
            Ok(list) => facts.push(format!("{} skills (not loaded)", list.len())),
            Err(e) => problems.push(format!("skills/list: {e}")),
        }
    }
    let (status, mut detail) = if problems.is_empty() {
        (Status::Pass, facts.join(" · "))
    } else {
        (Status::Warn, problems.join("; "))
    };
    if status == Status::Warn && !facts.is_empty() {
        detail = format!("{detail} ({})", facts.join(" · "));
    }
    report.step("features", status, Some(t0.elapsed()), detail);
}

/// Closes the session, reporting how the server ended.
async fn finish(mut report: Report, session: &Session, probed: &Probed) -> Report {
    report
        .diagnosis
        .extend(diagnosis::stdout_noise(&probed.noise()));
    let t0 = Instant::now();
    session.close().await;
    let how = probed
        .exit_info()
        .map(|x| format!("server ended ({x})"))
        .unwrap_or_else(|| "closed".into());
    report.step("close", Status::Pass, Some(t0.elapsed()), how);
    report.stderr_tail = probed.stderr_tail();
    report
}

/// `mcp probe`.
pub(crate) async fn probe(
    args: TargetArgs,
    show: ShowArgs,
    style: Style,
    sample: SampleCall,
) -> ExitCode {
    let targets = match targets(&args, trace_options(show, style)) {
        Ok(t) => t,
        Err(e) => return usage_error(&e),
    };
    let mut reports = Vec::new();
    for t in &targets {
        reports.push(probe_one(t, show, style, &sample).await);
    }
    print_reports(&reports, show, style)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> mcp_stack_session::types::Tool {
        serde_json::from_value(json!({
            "name": name,
            "description": description,
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}
        }))
        .unwrap()
    }

    #[test]
    fn words_split_names_and_sentences() {
        assert_eq!(words("printEnv"), ["print", "env"]);
        assert_eq!(words("get-env"), ["get", "env"]);
        assert_eq!(words("API_KEY"), ["api", "key"]);
        assert_eq!(words("getAPIKey"), ["get", "apikey"]);
        assert_eq!(
            words("The server's environment."),
            ["the", "server", "s", "environment"]
        );
    }

    #[test]
    fn tools_that_may_show_secrets_are_recognized() {
        for (name, description) in [
            ("get-env", "Returns all environment variables"),
            ("printEnv", "Prints the environment"),
            ("whoami", "Shows the access token"),
            ("read_config", "Reads the API key from the config"),
            ("credentials", ""),
        ] {
            assert!(may_reveal_secrets(&tool(name, description)), "{name}");
        }
        for (name, description) in [
            ("echo", "Echoes the input"),
            ("search", "Search by keyword in the monkey's keyboard notes"),
            ("add", "Adds two numbers"),
        ] {
            assert!(!may_reveal_secrets(&tool(name, description)), "{name}");
        }
    }

    #[test]
    fn the_probe_never_picks_a_tool_that_shows_the_environment() {
        let target = Target {
            label: "t".into(),
            connect: TransportSettings::Unsupported("test".into()),
            session: mcp_stack_session::SessionConfig::new(),
            is_demo: false,
        };
        let server: InitializeResult = serde_json::from_value(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "everything", "version": "1"}
        }))
        .unwrap();
        let listed = |tools| ToolCatalog::new(tools, Vec::new());
        let catalog = listed(vec![
            tool("get-env", "Returns all environment variables"),
            tool("echo", "Echoes the input"),
        ]);
        let picked = pick_sample(&target, &server, &catalog).map(|(name, _)| name);
        assert_eq!(picked.as_deref(), Some("echo"));
        // With nothing else, nothing is called.
        let catalog = listed(vec![tool("printEnv", "Prints the environment")]);
        assert_eq!(pick_sample(&target, &server, &catalog), None);
    }
}
