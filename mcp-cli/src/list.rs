//! `mcp list`: the servers of a config file, as written (`${VAR}` not
//! expanded, env and header values never shown), and with `--status`
//! whether each one answers: every server started through the runtime, as
//! `mcp tools --config` starts them, all at once, each within `--timeout`.
//! A server whose entry cannot be resolved (an unset `${VAR}`) fails alone.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use mcp_stack_config::{DeclaredTransport, McpConfig, ServerConfig, redact_url};
use mcp_stack_runtime::{DefaultConnector, RuntimeManager, RuntimeOptions};
use serde_json::{Value, json};

use crate::errors::CliError;
use crate::manage::{config_file, format_arg};
use crate::output::{Style, printable};
use crate::term::{self, outln};

/// `mcp list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// The config file (or a folder holding one).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// The file's format, when its content does not say.
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// Start each server (all at once) and say whether it answers.
    #[arg(long)]
    status: bool,
    /// With --status: how long each server gets to start and list its
    /// tools, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    timeout: u64,
    /// Print the servers as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A server's status.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Status {
    Disabled,
    Ok { tools: usize, detail: String },
    Failed(String),
}

/// `mcp list`.
pub(crate) async fn list(args: ListArgs, style: Style) -> ExitCode {
    let loaded = (|| -> Result<mcp_stack_config::Loaded, CliError> {
        let format = format_arg(args.format.as_deref())?;
        let path = config_file(&args.config, format)?;
        let mut options = mcp_stack_config::Options::new();
        if let Some(f) = format {
            options = options.format(f);
        }
        mcp_stack_config::load_path(&path, &options)
            .map_err(|e| CliError::new("config", e.to_string()))
    })();
    let config = match loaded {
        Ok(l) => l.config,
        Err(f) => return f.report(style),
    };
    let order = file_order(&config);
    let statuses = if args.status {
        Some(statuses(&config, Duration::from_millis(args.timeout.max(1))).await)
    } else {
        None
    };
    let failed = statuses
        .as_ref()
        .is_some_and(|s| s.values().any(|s| matches!(s, Status::Failed(_))));
    if args.json {
        print_json(&config, &order, statuses.as_ref());
    } else {
        print_text(&config, &order, statuses.as_ref(), style);
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `stdio`, `http`, `sse`, `streamable-http`.
fn transport_name(s: &ServerConfig) -> &'static str {
    match (s.command.is_some(), s.transport) {
        (true, _) => "stdio",
        (false, Some(DeclaredTransport::Sse)) => "sse",
        (false, Some(DeclaredTransport::StreamableHttp)) => "streamable-http",
        _ => "http",
    }
}

/// The command line or the URL (its user info and query redacted).
fn target(s: &ServerConfig) -> String {
    match (&s.command, &s.url) {
        (Some(c), _) => std::iter::once(c.as_str())
            .chain(s.args.iter().map(String::as_str))
            .map(|w| {
                if w.is_empty() || w.contains([' ', '\'', '"']) {
                    format!("'{}'", w.replace('\'', "'\\''"))
                } else {
                    w.to_owned()
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
        (None, Some(u)) => redact_url(u),
        (None, None) => String::new(),
    }
}

/// The server names in the order the file has them (sorted when it
/// cannot be read again).
fn file_order(config: &McpConfig) -> Vec<String> {
    let from_file = config.source.as_ref().and_then(|p| {
        let text = std::fs::read_to_string(p).ok()?;
        mcp_stack_config::edit::server_names(&text, config.format).ok()
    });
    match from_file {
        Some(names)
            if names.iter().all(|n| config.servers.contains_key(n))
                && names.len() == config.servers.len() =>
        {
            names
        }
        _ => config.servers.keys().cloned().collect(),
    }
}

fn print_text(
    config: &McpConfig,
    order: &[String],
    statuses: Option<&BTreeMap<String, Status>>,
    style: Style,
) {
    if config.servers.is_empty() {
        outln!("no servers in {}", source(config));
        return;
    }
    let width = config
        .servers
        .keys()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0);
    let servers = order
        .iter()
        .filter_map(|n| Some((n, config.servers.get(n)?)));
    for (name, server) in servers {
        let mut line = format!(
            "{}  {:<15}  {}",
            style.bold(&format!("{name:<width$}")),
            transport_name(server),
            printable(&target(server))
        );
        if server.enabled == Some(false) && statuses.is_none() {
            line.push_str(&style.dim("  (disabled)"));
        }
        match statuses.and_then(|s| s.get(name)) {
            Some(Status::Ok { tools, detail }) => line.push_str(&format!(
                "  {} ok ({tools} tool{}; {detail})",
                style.ok("✓"),
                if *tools == 1 { "" } else { "s" }
            )),
            Some(Status::Failed(why)) => {
                line.push_str(&format!("  {} failed: {}", style.fail("✗"), printable(why)));
            }
            Some(Status::Disabled) => line.push_str(&style.dim("  - disabled")),
            None => {}
        }
        outln!("{line}");
    }
}

fn source(config: &McpConfig) -> String {
    config
        .source
        .as_ref()
        .map_or_else(|| "<input>".to_owned(), |p| p.display().to_string())
}

fn print_json(config: &McpConfig, order: &[String], statuses: Option<&BTreeMap<String, Status>>) {
    let servers: Vec<Value> = order
        .iter()
        .filter_map(|n| Some((n, config.servers.get(n)?)))
        .map(|(name, s)| {
            let mut v = json!({
                "name": name,
                "transport": transport_name(s),
                "enabled": s.enabled != Some(false),
            });
            if let Value::Object(m) = &mut v {
                if let Some(c) = &s.command {
                    m.insert("command".into(), json!(c));
                    m.insert("args".into(), json!(s.args));
                    // Names only: the values may be secrets.
                    m.insert("env".into(), json!(s.env.keys().collect::<Vec<_>>()));
                }
                if let Some(u) = &s.url {
                    m.insert("url".into(), json!(redact_url(u)));
                    m.insert(
                        "headers".into(),
                        json!(s.headers.keys().collect::<Vec<_>>()),
                    );
                }
                if let Some(status) = statuses.and_then(|st| st.get(name)) {
                    let st = match status {
                        Status::Ok { tools, detail } => {
                            json!({"state": "ok", "tools": tools, "connection": detail})
                        }
                        Status::Failed(why) => json!({"state": "failed", "error": why}),
                        Status::Disabled => json!({"state": "disabled"}),
                    };
                    m.insert("status".into(), st);
                }
            }
            v
        })
        .collect();
    term::print_json(
        &json!({
            "file": source(config),
            "format": config.format.name(),
            "servers": servers,
        }),
        true,
    );
}

/// Starts every enabled server through one ad-hoc runtime session, each
/// within `timeout`; what became of each.
async fn statuses(config: &McpConfig, timeout: Duration) -> BTreeMap<String, Status> {
    let mut out = BTreeMap::new();
    let env = mcp_stack_config::process_env;
    // Each server resolved on its own: an unset variable fails that one alone.
    let mut good = config.clone();
    for name in config.servers.keys() {
        let mut one = config.clone();
        one.servers.retain(|n, _| n == name);
        match mcp_stack_config::resolve(&one, &env) {
            Ok(r) if r.disabled.contains(name) => {
                out.insert(name.clone(), Status::Disabled);
            }
            Ok(_) => {}
            Err(e) => {
                let why = match e.report() {
                    Some(r) => r
                        .problems
                        .iter()
                        .filter(|p| p.severity == mcp_stack_config::Severity::Error)
                        .map(|p| format!("{}: {}", p.path, p.message))
                        .collect::<Vec<_>>()
                        .join("; "),
                    None => e.to_string(),
                };
                out.insert(name.clone(), Status::Failed(why));
            }
        }
    }
    good.servers.retain(|n, _| !out.contains_key(n));
    if good.servers.is_empty() {
        return out;
    }
    let Ok(mut resolved) = mcp_stack_config::resolve(&good, &env) else {
        return out;
    };
    for server in resolved.servers.values_mut() {
        crate::target::keep_secrets_of(server);
        server.handshake_timeout = server.handshake_timeout.min(timeout);
        server.request_timeout = server.request_timeout.min(timeout);
    }
    let options = RuntimeOptions::default().idle_ttl(Duration::ZERO);
    let manager = RuntimeManager::with_connector(options, Arc::new(DefaultConnector::new()));
    crate::signals::track_runtime(&manager);
    // The handshake and the first lists are each bounded; this bounds the whole.
    let started = tokio::time::timeout(
        timeout.saturating_mul(2) + Duration::from_secs(1),
        manager.acquire("list-status", &resolved),
    )
    .await;
    match started {
        Ok(Ok(lease)) => {
            let catalog = lease.catalog();
            for c in catalog.connected() {
                let tools = catalog
                    .tools()
                    .iter()
                    .filter(|t| t.server() == c.server)
                    .count();
                out.insert(
                    c.server.clone(),
                    Status::Ok {
                        tools,
                        detail: format!("protocol {} over {}", c.protocol, c.transport),
                    },
                );
            }
            for f in catalog.failures() {
                let mut why = format!("at {}: {}", f.step, f.message);
                if let Some(last) = f.stderr_tail.last() {
                    why.push_str(&format!(" (last stderr line: {last})"));
                }
                out.insert(f.server.clone(), Status::Failed(why));
            }
        }
        Ok(Err(e)) => {
            for name in resolved.servers.keys() {
                out.insert(name.clone(), Status::Failed(e.to_string()));
            }
        }
        Err(_) => {}
    }
    for name in resolved.servers.keys() {
        out.entry(name.clone()).or_insert_with(|| {
            Status::Failed(format!(
                "no answer within {} (--timeout)",
                crate::output::ms(timeout)
            ))
        });
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), manager.dispose_all()).await;
    out
}
