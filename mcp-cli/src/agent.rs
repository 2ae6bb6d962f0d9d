//! `mcp tools --config` and `mcp call --config`: through one ad-hoc session
//! of `mcp-runtime`, so the tools carry the namespaced names (`SERVER__TOOL`)
//! an agent sees, and every server of the config starts at once, a failure
//! in one not stopping the others.

use std::process::ExitCode;
use std::sync::Arc;

use mcp_config::{ResolvedConfig, ResolvedServer};
use mcp_runtime::{
    ConnectError, Connector, DefaultConnector, RuntimeCatalog, RuntimeError, RuntimeLease,
    RuntimeManager, RuntimeOptions,
};
use mcp_session::types::CallToolResult;
use mcp_transport::{BoxFuture, Transport};
use serde_json::Value;

use crate::direct::{print_call_result, tool_hints};
use crate::output::{Style, printable, printable_block, summarize};
use crate::target::load_config;
use crate::term::{self, errln, outln};
use crate::trace::{TraceOptions, Traced};
use crate::{ShowArgs, TargetArgs};

/// The agent session id of the CLI's one runtime.
const AD_HOC_SESSION: &str = "ad-hoc";

/// A runtime for one session, built at once from a config, with reaping
/// off: the names and routing an agent gets, without the process-wide
/// manager. Call [`close`](Self::close) at the end (dropping it kills the
/// servers without their close sequence).
#[derive(Debug)]
struct AdHocRuntime {
    manager: RuntimeManager,
    lease: RuntimeLease,
}

impl AdHocRuntime {
    /// Starts every server of `config` (concurrently) through `connector`.
    async fn open(
        config: &ResolvedConfig,
        connector: Arc<dyn Connector>,
    ) -> Result<Self, RuntimeError> {
        let options = RuntimeOptions::default().idle_ttl(std::time::Duration::ZERO);
        let manager = RuntimeManager::with_connector(options, connector);
        // Before anything starts: a signal disposes of it.
        crate::signals::track_runtime(&manager);
        let lease = manager.acquire(AD_HOC_SESSION, config).await?;
        Ok(AdHocRuntime { manager, lease })
    }

    /// The tools under their namespaced names, and the servers that failed.
    fn catalog(&self) -> &RuntimeCatalog {
        self.lease.catalog()
    }

    /// Calls a tool by namespaced name (`SERVER__TOOL`).
    async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, RuntimeError> {
        self.lease.call_tool(name, arguments).await
    }

    /// Closes every server with its close sequence.
    async fn close(self) {
        let AdHocRuntime { manager, lease } = self;
        drop(lease);
        manager.dispose_all().await;
    }
}

/// The default connector, with every transport traced when `--trace` asks.
#[derive(Debug)]
struct TracingConnector {
    inner: DefaultConnector,
    trace: TraceOptions,
}

impl Connector for TracingConnector {
    fn connect<'a>(
        &'a self,
        server: &'a ResolvedServer,
    ) -> BoxFuture<'a, Result<Arc<dyn Transport>, ConnectError>> {
        Box::pin(async move {
            let transport = self.inner.connect(server).await?;
            // The runtime closes it too; a signal during a build must not
            // wait for the runtime to know of it.
            crate::signals::track(&transport);
            if !self.trace.enabled {
                return Ok(transport);
            }
            let traced: Arc<dyn Transport> = Arc::new(Traced::new(transport, self.trace));
            Ok(traced)
        })
    }
}

async fn open(args: &TargetArgs, show: ShowArgs, style: Style) -> Result<AdHocRuntime, ExitCode> {
    let Some(path) = &args.config else {
        return Err(ExitCode::from(2));
    };
    let config = load_config(path, args.server.as_deref()).map_err(|e| {
        errln!("mcp: {}", printable_block(&e));
        ExitCode::from(2)
    })?;
    // Stored OAuth logins for HTTP servers; a missing one names the login.
    let mut inner = DefaultConnector::new();
    if let Ok(store) = mcp_auth::store::FileStore::default_location() {
        let config_path = path.clone();
        let hint: mcp_runtime::LoginHint = Arc::new(move |server: &ResolvedServer| {
            crate::auth::login_hint("", Some((&config_path, &server.name)))
        });
        // Every token sent is scrubbed from what is printed.
        let logins = mcp_runtime::StoredLogins::new(Arc::new(store), hint);
        inner =
            inner.with_authorizers(Arc::new(crate::auth::ScrubbedSource::new(Arc::new(logins))));
    }
    let connector = TracingConnector {
        inner,
        trace: TraceOptions {
            enabled: show.trace,
            to_stderr: show.json,
            full: show.full,
            style,
        },
    };
    let runtime = AdHocRuntime::open(&config, Arc::new(connector))
        .await
        .map_err(|e| {
            errln!("{} {}", style.fail("✗"), printable_block(&e.to_string()));
            ExitCode::FAILURE
        })?;
    for s in runtime.catalog().connected() {
        errln!(
            "{} {}: protocol {} over {}",
            style.dim("·"),
            printable(&s.server),
            s.protocol,
            s.transport
        );
    }
    for f in runtime.catalog().failures() {
        errln!("{} {}", style.fail("✗"), printable_block(&f.to_string()));
    }
    Ok(runtime)
}

/// `mcp tools --config FILE`.
pub(crate) async fn tools(args: TargetArgs, show: ShowArgs, style: Style) -> ExitCode {
    let runtime = match open(&args, show, style).await {
        Ok(r) => r,
        Err(code) => return code,
    };
    let catalog = runtime.catalog();
    let failed = !catalog.failures().is_empty();
    if show.json {
        let tools: Vec<Value> = catalog
            .tools()
            .iter()
            .map(|t| {
                let mut v = serde_json::to_value(&**t.tool()).unwrap_or_default();
                if let Value::Object(m) = &mut v {
                    m.insert("name".into(), Value::from(t.name()));
                    m.insert("server".into(), Value::from(t.server()));
                    m.insert("serverToolName".into(), Value::from(t.tool_name()));
                }
                v
            })
            .collect();
        term::print_json(&Value::Array(tools), true);
    } else {
        for note in catalog.notes() {
            outln!("{} {}", style.warn("!"), printable(&format!("{note:?}")));
        }
        for t in catalog.tools() {
            let description = t
                .description()
                .and_then(|d| d.lines().next())
                .unwrap_or_default();
            let hints = t.annotations().map(tool_hints).unwrap_or_default();
            outln!(
                "{}  {}{}",
                style.bold(&printable(t.name())),
                printable(&summarize(description, 100, show.full)),
                if hints.is_empty() {
                    String::new()
                } else {
                    style.dim(&format!("  [{hints}]"))
                }
            );
        }
    }
    runtime.close().await;
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `mcp call --config FILE SERVER__TOOL`.
pub(crate) async fn call(
    args: TargetArgs,
    show: ShowArgs,
    style: Style,
    tool: String,
    arguments: Value,
) -> ExitCode {
    let runtime = match open(&args, show, style).await {
        Ok(r) => r,
        Err(code) => return code,
    };
    let result = runtime.call_tool(&tool, arguments).await;
    runtime.close().await;
    match result {
        Ok(r) => print_call_result(&r, show, style),
        Err(e) => {
            errln!("{} {}", style.fail("✗"), printable_block(&e.to_string()));
            if let RuntimeError::UnknownTool { .. } = e {
                errln!("  • names are SERVER__TOOL; `mcp tools --config FILE` lists them");
            }
            ExitCode::FAILURE
        }
    }
}

/// `mcp resources --config FILE`: every server's resources and templates,
/// under their namespaced names.
pub(crate) async fn resources(args: TargetArgs, show: ShowArgs, style: Style) -> ExitCode {
    let runtime = match open(&args, show, style).await {
        Ok(r) => r,
        Err(code) => return code,
    };
    let catalog = runtime.catalog();
    if show.json {
        let resources: Vec<Value> = catalog
            .resources()
            .iter()
            .map(|r| {
                let mut v = serde_json::to_value(&**r.resource()).unwrap_or_default();
                if let Value::Object(m) = &mut v {
                    m.insert("name".into(), Value::from(r.name()));
                    m.insert("server".into(), Value::from(r.server()));
                }
                v
            })
            .collect();
        let templates: Vec<Value> = catalog
            .resource_templates()
            .iter()
            .map(|t| {
                let mut v = serde_json::to_value(&**t.template()).unwrap_or_default();
                if let Value::Object(m) = &mut v {
                    m.insert("name".into(), Value::from(t.name()));
                    m.insert("server".into(), Value::from(t.server()));
                }
                v
            })
            .collect();
        let all = serde_json::json!({"resources": resources, "resourceTemplates": templates});
        term::print_json(&all, true);
    } else {
        for note in catalog.notes() {
            outln!("{} {}", style.warn("!"), printable(&format!("{note:?}")));
        }
        for r in catalog.resources() {
            outln!(
                "{}  {}",
                style.bold(&printable(r.name())),
                printable(&r.resource().uri)
            );
        }
        for t in catalog.resource_templates() {
            outln!(
                "{}  {}  {}",
                style.bold(&printable(t.name())),
                printable(t.uri_template()),
                style.dim("(template)")
            );
        }
    }
    let failed = !catalog.failures().is_empty();
    runtime.close().await;
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `mcp prompts --config FILE`: every server's prompts, namespaced.
pub(crate) async fn prompts(args: TargetArgs, show: ShowArgs, style: Style) -> ExitCode {
    let runtime = match open(&args, show, style).await {
        Ok(r) => r,
        Err(code) => return code,
    };
    let catalog = runtime.catalog();
    for p in catalog.prompts() {
        let args: Vec<String> = p
            .prompt()
            .arguments
            .iter()
            .flatten()
            .map(|a| match a.required {
                Some(true) => a.name.clone(),
                _ => format!("[{}]", a.name),
            })
            .collect();
        if show.json {
            let mut v = serde_json::to_value(&**p.prompt()).unwrap_or_default();
            if let Value::Object(m) = &mut v {
                m.insert("name".into(), Value::from(p.name()));
                m.insert("server".into(), Value::from(p.server()));
            }
            term::print_json(&v, false);
        } else {
            outln!(
                "{}({})",
                style.bold(&printable(p.name())),
                printable(&args.join(", "))
            );
        }
    }
    let failed = !catalog.failures().is_empty();
    runtime.close().await;
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `mcp read --config FILE NAME_OR_URI`: routed by namespaced name, or by a
/// URI exactly one server lists.
pub(crate) async fn read(
    args: TargetArgs,
    show: ShowArgs,
    style: Style,
    name_or_uri: &str,
) -> Result<mcp_session::types::ReadResourceResult, ExitCode> {
    let runtime = open(&args, show, style).await?;
    let result = runtime.lease.read_resource(name_or_uri).await;
    runtime.close().await;
    result.map_err(|e| {
        errln!("{} {}", style.fail("✗"), printable_block(&e.to_string()));
        ExitCode::FAILURE
    })
}

/// `mcp prompt --config FILE SERVER__PROMPT`.
pub(crate) async fn prompt(
    args: TargetArgs,
    show: ShowArgs,
    style: Style,
    name: &str,
    arguments: std::collections::BTreeMap<String, String>,
) -> Result<mcp_session::types::GetPromptResult, ExitCode> {
    let runtime = open(&args, show, style).await?;
    let result = runtime.lease.get_prompt(name, arguments).await;
    runtime.close().await;
    result.map_err(|e| {
        errln!("{} {}", style.fail("✗"), printable_block(&e.to_string()));
        ExitCode::FAILURE
    })
}
