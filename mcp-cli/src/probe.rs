//! `mcp probe`, `mcp tools` and `mcp call`: talk to a server step by step and
//! say, when a step fails, what probably went wrong.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_session::types::{CallToolResult, Content, InitializeResult};
use mcp_session::{ProtocolMode, Session, SessionError, ToolCatalog};
use mcp_transport::http::{SseTransport, StreamableHttpTransport, auto};
use mcp_transport::stdio::StdioTransport;
use mcp_transport::{Transport, TransportError};
use serde_json::{Value, json};

use crate::output::{Style, ms, printable, summarize};
use crate::target::{Connect, HttpChoice, Target, targets};
use crate::trace::{TraceOptions, Traced};
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
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
struct Report {
    target: String,
    steps: Vec<Step>,
    diagnosis: Vec<String>,
    stderr_tail: Vec<String>,
    server: Option<Value>,
    tools: Vec<Value>,
    call: Option<Value>,
}

impl Report {
    fn step(
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
            detail,
        });
    }

    fn failed(&self) -> bool {
        self.steps.iter().any(|s| s.status == Status::Fail)
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

    fn print(&self, style: Style) {
        println!("{} {}", style.bold("mcp probe"), printable(&self.target));
        for s in &self.steps {
            let mark = match s.status {
                Status::Pass => style.ok("✓"),
                Status::Warn => style.warn("!"),
                Status::Fail => style.fail("✗"),
                Status::Skip => style.dim("-"),
            };
            let time = s.elapsed.map(ms).unwrap_or_default();
            println!(
                "  {mark} {:<12} {:>8}  {}",
                s.name,
                style.dim(&time),
                s.detail
            );
        }
        if !self.diagnosis.is_empty() {
            println!("  {}", style.bold("diagnosis:"));
            for d in &self.diagnosis {
                println!("    • {d}");
            }
        }
        if self.failed() && !self.stderr_tail.is_empty() {
            println!("  {}", style.bold("server stderr (last lines):"));
            for l in &self.stderr_tail {
                println!("    │ {}", printable(l));
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
        println!(
            "  {verdict} {passed}/{} steps passed in {}",
            self.steps.len(),
            ms(total)
        );
    }
}

/// A connection being probed: the session plus what the diagnosis needs.
struct Probed {
    transport: Arc<dyn Transport>,
    traced: Arc<Traced>,
}

impl Probed {
    /// The server's last stderr lines (stdio only).
    fn stderr_tail(&self) -> Vec<String> {
        self.transport
            .process()
            .map(|p| p.stderr_tail())
            .unwrap_or_default()
    }

    /// How the server process ended, once it has (stdio only).
    fn exit_info(&self) -> Option<mcp_transport::ExitInfo> {
        self.transport.process().and_then(|p| p.exit_info())
    }

    fn noise(&self) -> (u64, Vec<String>) {
        self.traced
            .noise
            .lock()
            .map(|n| (n.count, n.examples.clone()))
            .unwrap_or_default()
    }
}

fn trace_options(show: ShowArgs, style: Style) -> TraceOptions {
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
        Connect::Stdio(config) => match StdioTransport::spawn(config.clone()) {
            Ok(t) => {
                let detail = format!("pid {} · {}", t.pid(), printable(config.program()));
                report.step("start", Status::Pass, Some(t0.elapsed()), detail);
                let transport: Arc<dyn Transport> = Arc::new(t);
                let traced = Arc::new(Traced::new(Arc::clone(&transport), trace));
                Some(Probed { transport, traced })
            }
            Err(e) => {
                report.step("start", Status::Fail, Some(t0.elapsed()), e.to_string());
                report.diagnosis.push(spawn_diagnosis(&e));
                None
            }
        },
        Connect::Http { url, options, kind } => {
            let connected: Result<Arc<dyn Transport>, TransportError> = match kind {
                HttpChoice::StreamableHttp => {
                    StreamableHttpTransport::connect(url, options.clone())
                        .await
                        .map(|t| Arc::new(t) as Arc<dyn Transport>)
                }
                HttpChoice::Sse => SseTransport::connect(url, options.clone())
                    .await
                    .map(|t| Arc::new(t) as Arc<dyn Transport>),
                HttpChoice::Auto => {
                    auto::connect(url, options.clone(), &auto::TransportCache::new())
                        .await
                        .map(|t| Arc::new(t) as Arc<dyn Transport>)
                }
            };
            let shown = mcp_config::redact_url(url);
            match connected {
                Ok(transport) => {
                    let how = match kind {
                        HttpChoice::StreamableHttp => "streamable HTTP",
                        HttpChoice::Sse => "HTTP+SSE",
                        HttpChoice::Auto => "streamable HTTP, SSE fallback",
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
                    if let Some(d) = http_diagnosis(&e) {
                        report.diagnosis.push(d);
                    }
                    None
                }
            }
        }
        Connect::Unsupported(why) => {
            report.step("start", Status::Skip, None, why.clone());
            None
        }
    }
}

/// Explains an HTTP failure: status codes, TLS, connection refused.
fn http_diagnosis(e: &TransportError) -> Option<String> {
    match e.http_status() {
        Some(401) => Some(
            "HTTP 401 Unauthorized: check the Authorization header format — `Bearer <token>` \
             with one space — and whether the token expired"
                .into(),
        ),
        Some(403) => Some(
            "HTTP 403 Forbidden: the credentials were accepted but lack access; check the \
             token's scopes (or the server's Origin checks)"
                .into(),
        ),
        Some(404) => Some(
            "HTTP 404: check the URL path (often /mcp for streamable HTTP, /sse for the old \
             HTTP+SSE transport)"
                .into(),
        ),
        Some(s @ (400 | 405)) => Some(format!(
            "HTTP {s}: the server may speak the other HTTP transport; try --transport sse \
             (or streamable-http)"
        )),
        Some(s) if s >= 500 => Some(format!(
            "HTTP {s}: the server failed; its logs should say why"
        )),
        Some(_) => None,
        None => match e {
            TransportError::Http { message, .. } if message.contains("certificate") => Some(
                "the TLS certificate is not trusted: is the URL right? for a private CA, \
                 trust its certificate"
                    .into(),
            ),
            TransportError::Http { message, .. } if message.contains("refused") => Some(
                "nothing is listening there: is the server running, and the port right?".into(),
            ),
            TransportError::InvalidConfig(m) => Some(format!("fix the settings: {m}")),
            _ => None,
        },
    }
}

fn spawn_diagnosis(e: &TransportError) -> String {
    match e {
        TransportError::Spawn { program, source }
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            format!(
                "`{program}` was not found: install it, or give its full path (the server is started directly, not through a shell, with PATH from this environment)"
            )
        }
        _ => format!("the server could not be started: {e}"),
    }
}

fn describe_init(init: &InitializeResult, version: &str) -> String {
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

/// Explains a failed handshake in the seed's troubleshooting terms.
fn handshake_diagnosis(e: &SessionError, probed: &Probed, report: &mut Report) {
    let (noise, examples) = probed.noise();
    let exit = probed.exit_info();
    if let Some(d) = e.transport_error().and_then(http_diagnosis) {
        report.diagnosis.push(d);
        return;
    }
    match e {
        SessionError::Timeout { after, .. } => {
            report.diagnosis.push(format!(
                "the server did not answer initialize within {}: it may be slow to start, or stuck before reading stdin",
                ms(*after)
            ));
        }
        SessionError::VersionMismatch {
            offered, received, ..
        } => {
            report.diagnosis.push(format!(
                "protocol version mismatch: this client offered {offered} and the server answered {received}; upgrade the server (or the client) so they share a version"
            ));
        }
        e if e.is_closed() => {
            let how = exit.as_ref().map(|x| format!(" ({x})")).unwrap_or_default();
            report.diagnosis.push(format!(
                "the server exited during the handshake{how}: often a missing environment variable or a bad argument; its stderr below usually says which"
            ));
        }
        SessionError::LegacyServer { .. } => report.diagnosis.push(
            "the server speaks only the initialize handshake (2025-11-25 or older); probe it with --protocol auto or legacy".into(),
        ),
        SessionError::Protocol { error, .. }
            if error.code == mcp_protocol::codes::UNSUPPORTED_PROTOCOL_VERSION =>
        {
            report.diagnosis.push(format!(
                "the server does not speak the offered protocol version: {}; try --protocol auto, which probes with server/discover (2026-07-28) and falls back to the handshake",
                error.message
            ));
        }
        other => report
            .diagnosis
            .push(format!("the handshake failed: {other}")),
    }
    if noise > 0 {
        let ex = examples.first().cloned().unwrap_or_default();
        report.diagnosis.push(format!(
            "{noise} line(s) on the server's stdout were not JSON-RPC (e.g. {ex}): a stdio server must write logs to stderr, never stdout"
        ));
    }
}

fn call_diagnosis(e: &SessionError) -> Option<String> {
    match e {
        SessionError::InvalidArguments { problems, .. } => Some(format!(
            "the arguments do not match the tool's inputSchema ({}); nothing was sent",
            problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        )),
        SessionError::Protocol { error, .. }
            if error.code == mcp_jsonrpc::codes::INVALID_PARAMS =>
        {
            let field = error
                .data
                .as_deref()
                .and_then(|d| serde_json::from_str::<Value>(d.get()).ok())
                .map(|d| format!(" (server says: {d})"))
                .unwrap_or_default();
            Some(format!(
                "-32602 invalid params: the server rejected the arguments{field}; compare them with the tool's inputSchema from tools/list"
            ))
        }
        SessionError::Timeout { after, .. } => Some(format!(
            "the tool did not answer within {}; raise the timeout (--timeout) if it is just slow",
            ms(*after)
        )),
        e if e.is_closed() => Some(
            "the server went away during the call (it crashed or exited); see its stderr".into(),
        ),
        _ => None,
    }
}

fn tool_summary(catalog: &ToolCatalog, full: bool) -> String {
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

/// Picks a call that is safe to make on someone's server: the demo's echo,
/// or a read-only tool with no required arguments.
fn pick_sample(
    target: &Target,
    server: &InitializeResult,
    catalog: &ToolCatalog,
) -> Option<(String, Value)> {
    let testkit = target.is_demo || server.server_info.name == mcp_testkit::SERVER_NAME;
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
        (read_only && no_required).then(|| (t.name.clone(), json!({})))
    })
}

fn describe_result(r: &CallToolResult, full: bool) -> String {
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

/// Starts the target and connects. A stdio server that exits during the
/// 2026-07-28 probe (some legacy servers exit when the first request is not
/// `initialize`) is started once more and gets the handshake straight away.
/// `None` when the target did not start (the report says why).
async fn start_and_connect(
    target: &Target,
    trace: TraceOptions,
    report: &mut Report,
) -> Option<(Probed, Result<Session, SessionError>, Instant)> {
    let probed = start(target, trace, report).await?;
    let t0 = Instant::now();
    let connected = Session::connect_shared(
        Arc::clone(&probed.traced) as Arc<dyn Transport>,
        target.session.clone(),
    )
    .await;
    match connected {
        Err(e)
            if e.is_closed()
                && target.session.mode() == ProtocolMode::Auto
                && matches!(target.connect, Connect::Stdio(_)) =>
        {
            report.step(
                "probe",
                Status::Warn,
                Some(t0.elapsed()),
                format!(
                    "the server exited during the 2026-07-28 probe ({e}); started again for \
                     the initialize handshake, in case it is a legacy server that refuses any \
                     other first request (--protocol legacy skips the probe)"
                ),
            );
            probed.transport.close().await;
            let probed = start(target, trace, report).await?;
            let t0 = Instant::now();
            let legacy = target
                .session
                .clone()
                .protocol(mcp_session::ProtocolPin::Mode(ProtocolMode::Legacy));
            let connected =
                Session::connect_shared(Arc::clone(&probed.traced) as Arc<dyn Transport>, legacy)
                    .await;
            Some((probed, connected, t0))
        }
        other => Some((probed, other, t0)),
    }
}

async fn probe_one(target: &Target, show: ShowArgs, style: Style, sample: &SampleCall) -> Report {
    let trace = trace_options(show, style);
    let mut report = Report {
        target: target.label.clone(),
        ..Report::default()
    };
    let Some((probed, connected, t0)) = start_and_connect(target, trace, &mut report).await else {
        return report;
    };
    let session = match connected {
        Ok(s) => s,
        Err(e) => {
            report.step(
                "initialize",
                Status::Fail,
                Some(t0.elapsed()),
                e.to_string(),
            );
            handshake_diagnosis(&e, &probed, &mut report);
            probed.transport.close().await;
            report.stderr_tail = probed.stderr_tail();
            return report;
        }
    };
    let negotiated = session.protocol_version();
    // 2026-07-28 has no handshake: server/discover told us who the server is.
    let (first, initialized) = if negotiated.is_modern() {
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
    if !negotiated.is_modern() && target.session.mode() == ProtocolMode::Auto {
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
        // Without the capability the catalog's own diagnostic says why.
        if session.server().capabilities.tools.is_some() {
            report.diagnosis.push(
                "the server declares `tools` but lists none; this client sent notifications/initialized, so the server has registered no tools (check its tool registration)".into(),
            );
        }
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
            "no tool known to be safe to call; use --call TOOL --args JSON".into(),
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
                    report.diagnosis.push(format!(
                        "`{tool}` ran and reported a failure (isError: true, a tool error, not a protocol error): {}",
                        printable(&summarize(&r.text(), 300, show.full))
                    ));
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
                    report.diagnosis.extend(call_diagnosis(&e));
                }
            }
        }
    }
    finish(report, &session, &probed).await
}

/// Closes the session, reporting how the server ended.
async fn finish(mut report: Report, session: &Session, probed: &Probed) -> Report {
    let (noise, examples) = probed.noise();
    if noise > 0 {
        report.diagnosis.push(format!(
            "{noise} line(s) on the server's stdout were not JSON-RPC (e.g. {}): a stdio server must log to stderr",
            examples.first().cloned().unwrap_or_default()
        ));
    }
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

fn print_reports(reports: &[Report], show: ShowArgs, style: Style) -> ExitCode {
    if show.json {
        let v = if let [one] = reports {
            one.to_json()
        } else {
            Value::Array(reports.iter().map(Report::to_json).collect())
        };
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        for (i, r) in reports.iter().enumerate() {
            if i > 0 {
                println!();
            }
            r.print(style);
        }
    }
    if reports.iter().any(Report::failed) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn usage_error(e: &str) -> ExitCode {
    eprintln!("mcp: {e}");
    ExitCode::from(2)
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

/// Connects to the one target the options name, or explains why not.
async fn connect_one(
    args: &TargetArgs,
    show: ShowArgs,
    style: Style,
) -> Result<(Session, Probed), ExitCode> {
    let mut targets = targets(args, trace_options(show, style)).map_err(|e| usage_error(&e))?;
    if targets.len() != 1 {
        return Err(usage_error(
            "this config has several servers: choose one with --server NAME",
        ));
    }
    let target = targets.remove(0);
    let mut report = Report {
        target: target.label.clone(),
        ..Report::default()
    };
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
            report.step("initialize", Status::Fail, None, e.to_string());
            handshake_diagnosis(&e, &probed, &mut report);
            probed.transport.close().await;
            report.stderr_tail = probed.stderr_tail();
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
            eprintln!("{} tools/list failed: {e}", style.fail("✗"));
            return ExitCode::FAILURE;
        }
    };
    if show.json {
        let tools: Vec<Value> = catalog
            .iter()
            .filter_map(|t| serde_json::to_value(&**t).ok())
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&tools).unwrap_or_default()
        );
        return ExitCode::SUCCESS;
    }
    for d in catalog.diagnostics() {
        println!("{} {d}", style.warn("!"));
    }
    for t in catalog.iter() {
        let hints = t.annotations.as_ref().map(tool_hints).unwrap_or_default();
        let description = t
            .description
            .as_deref()
            .and_then(|d| d.lines().next())
            .unwrap_or_default();
        println!(
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
            println!("    input: {}", printable(&schema));
        }
    }
    ExitCode::SUCCESS
}

/// Prints a tool's result; the exit status is a failure when the tool
/// reported one (`isError`).
pub(crate) fn print_call_result(r: &CallToolResult, show: ShowArgs, style: Style) -> ExitCode {
    if show.json {
        println!("{}", serde_json::to_string_pretty(r).unwrap_or_default());
    } else {
        for c in &r.content {
            match c {
                Content::Text(t) => {
                    println!("{}", printable(&summarize(&t.text, 4000, show.full)))
                }
                other => println!("[{} content]", other.kind()),
            }
        }
        if let Some(s) = &r.structured_content {
            let text = serde_json::to_string_pretty(s).unwrap_or_default();
            println!("{}", printable(&summarize(&text, 4000, show.full)));
        }
    }
    if r.is_error() {
        eprintln!(
            "{} the tool reported a failure (isError: true): a tool error, not a protocol error",
            style.warn("!")
        );
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Annotation hints for people: "read-only, idempotent".
pub(crate) fn tool_hints(a: &mcp_session::types::ToolAnnotations) -> String {
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

/// `mcp call`.
pub(crate) async fn call(
    args: TargetArgs,
    show: ShowArgs,
    style: Style,
    tool: String,
    arguments: String,
) -> ExitCode {
    let arguments: Value = match serde_json::from_str(&arguments) {
        Ok(v) => v,
        Err(e) => return usage_error(&format!("--args is not JSON: {e}")),
    };
    if args.config.is_some() {
        return crate::agent::call(args, show, style, tool, arguments).await;
    }
    let (session, probed) = match connect_one(&args, show, style).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let result = session.call_tool(&tool, arguments).await;
    session.close().await;
    match result {
        Ok(r) => print_call_result(&r, show, style),
        Err(e) => {
            eprintln!("{} {e}", style.fail("✗"));
            if let Some(d) = call_diagnosis(&e) {
                eprintln!("  • {d}");
            }
            let tail = probed.stderr_tail();
            if e.is_closed() && !tail.is_empty() {
                eprintln!("  server stderr (last lines):");
                for l in tail {
                    eprintln!("    │ {}", printable(&l));
                }
            }
            ExitCode::FAILURE
        }
    }
}
