//! Turning command-line options into the servers to talk to.

use std::time::Duration;

use mcp_session::SessionConfig;
use mcp_transport::stdio::StdioConfig;

use crate::TargetArgs;
use crate::output::printable;
use crate::trace::TraceOptions;
use crate::words;

/// How to reach one server.
#[derive(Debug)]
pub(crate) enum Connect {
    Stdio(StdioConfig),
    /// A server this build cannot reach yet, and why.
    Unsupported(String),
}

/// One server to probe.
#[derive(Debug)]
pub(crate) struct Target {
    /// What to call it in reports.
    pub(crate) label: String,
    pub(crate) connect: Connect,
    pub(crate) session: SessionConfig,
    /// The built-in demo server: the probe knows a safe sample call.
    pub(crate) is_demo: bool,
}

fn millis(ms: Option<u64>) -> Option<Duration> {
    ms.map(Duration::from_millis)
}

fn session_config(name: &str, args: &TargetArgs) -> SessionConfig {
    let mut c = SessionConfig {
        server_name: name.to_string(),
        client_info: mcp_session::types::Implementation::new("mcp", env!("CARGO_PKG_VERSION")),
        ..SessionConfig::default()
    };
    if let Some(t) = millis(args.timeout) {
        c.request_timeout = t;
    }
    if let Some(t) = millis(args.handshake_timeout) {
        c.handshake_timeout = t;
    }
    c
}

fn with_stderr(config: StdioConfig, trace: TraceOptions) -> StdioConfig {
    if !trace.enabled {
        return config;
    }
    config.stderr_listener(move |line| {
        let mark = trace.style.dim("stderr│");
        trace.line(&format!("{mark} {}", printable(line)));
    })
}

/// The servers the options name; the demo server when they name none.
pub(crate) fn targets(args: &TargetArgs, trace: TraceOptions) -> Result<Vec<Target>, String> {
    if let Some(line) = &args.stdio {
        let words = words::split(line).map_err(|e| format!("--stdio: {}", e.0))?;
        let Some((program, rest)) = words.split_first() else {
            return Err("--stdio: the command is empty".into());
        };
        let mut config = StdioConfig::new(program.clone())
            .args(rest.iter().cloned())
            .server_name(program.clone());
        for kv in &args.env {
            let Some((k, v)) = kv.split_once('=') else {
                return Err(format!("--env {kv:?}: expected KEY=VALUE"));
            };
            config = config.env(k, v);
        }
        return Ok(vec![Target {
            label: format!("stdio: {}", printable(line)),
            connect: Connect::Stdio(with_stderr(config, trace)),
            session: session_config(program, args),
            is_demo: false,
        }]);
    }
    if let Some(path) = &args.config {
        return config_targets(path, args, trace);
    }
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find this program to start the demo server: {e}"))?;
    let config = StdioConfig::new(exe.to_string_lossy().into_owned())
        .arg("demo-server")
        .server_name("demo");
    Ok(vec![Target {
        label: "demo server (mcp-testkit, built in)".into(),
        connect: Connect::Stdio(with_stderr(config, trace)),
        session: session_config("demo", args),
        is_demo: true,
    }])
}

fn config_targets(
    path: &std::path::Path,
    args: &TargetArgs,
    trace: TraceOptions,
) -> Result<Vec<Target>, String> {
    let loaded = mcp_config::load_path(path, &mcp_config::Options::new())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if loaded.report.has_errors() {
        let lines = loaded.report.lines().join("\n  ");
        return Err(format!("{} has errors:\n  {lines}", path.display()));
    }
    let resolved = mcp_config::resolve(&loaded.config, &mcp_config::process_env)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(name) = &args.server
        && !resolved.servers.contains_key(name)
    {
        let known: Vec<_> = resolved.servers.keys().cloned().collect();
        let why = if resolved.disabled.contains(name) {
            " (it is disabled)".to_string()
        } else {
            format!(" (it has: {})", known.join(", "))
        };
        return Err(format!("{} has no server {name:?}{why}", path.display()));
    }
    let mut out = Vec::new();
    for (name, server) in &resolved.servers {
        if args.server.as_ref().is_some_and(|n| n != name) {
            continue;
        }
        let mut session = session_config(name, args);
        session.request_timeout = millis(args.timeout).unwrap_or(server.request_timeout);
        session.handshake_timeout =
            millis(args.handshake_timeout).unwrap_or(server.handshake_timeout);
        session.supports_parallel_tool_calls = server.supports_parallel_tool_calls;
        let connect = match &server.transport {
            mcp_config::TransportConfig::Stdio {
                command,
                args: argv,
                env,
                cwd,
            } => {
                let mut c = StdioConfig::new(command.clone())
                    .args(argv.iter().cloned())
                    .server_name(name.clone())
                    .envs(env.iter().map(|(k, v)| (k.clone(), v.expose().to_string())));
                if let Some(dir) = cwd {
                    c = c.cwd(dir.clone());
                }
                Connect::Stdio(with_stderr(c, trace))
            }
            mcp_config::TransportConfig::Http { url, .. } => Connect::Unsupported(format!(
                "{} is an HTTP server; this build probes stdio servers only",
                mcp_config::redact_url(url)
            )),
            _ => Connect::Unsupported("a transport this build does not know".into()),
        };
        out.push(Target {
            label: format!("{name} ({})", path.display()),
            connect,
            session,
            is_demo: false,
        });
    }
    if out.is_empty() {
        return Err(format!("{} has no enabled servers", path.display()));
    }
    Ok(out)
}
