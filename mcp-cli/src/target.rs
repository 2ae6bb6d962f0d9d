//! Turning command-line options into the servers to talk to.

use std::time::Duration;

use mcp_stack_config::HttpKind;
use mcp_stack_runtime::{HttpSettings, ServerSettings, TransportSettings};
use mcp_stack_session::{ProtocolPin, SessionConfig};
use mcp_stack_transport::http::{HttpOptions, HttpTrace};
use mcp_stack_transport::stdio::StdioConfig;

use crate::TargetArgs;
use crate::oauth;
use crate::output::printable;
use crate::term;
use crate::trace::TraceOptions;
use crate::words;

/// `--transport`: which HTTP transport to use for `--url`.
fn http_kind(text: &str) -> Result<HttpKind, String> {
    match text {
        "streamable-http" | "streamable_http" | "streamableHttp" | "http" => {
            Ok(HttpKind::StreamableHttp)
        }
        "sse" => Ok(HttpKind::Sse),
        "auto" => Ok(HttpKind::StreamableHttpWithSseFallback),
        other => Err(format!(
            "--transport {other:?}: expected streamable-http, sse or auto"
        )),
    }
}

/// HTTP options with the CLI's flags on top: `--timeout`, and the trace
/// hook with `--trace`.
fn http_options(mut options: HttpOptions, args: &TargetArgs, trace: TraceOptions) -> HttpOptions {
    if let Some(t) = millis(args.timeout) {
        options = options.request_timeout(t);
    }
    if trace.enabled {
        options = options.observer(move |event| {
            let mark = trace.style.dim("http│");
            let line = match event {
                HttpTrace::Request {
                    method,
                    url,
                    headers,
                } => format!("{mark} → {method} {url}{}", show_headers(headers)),
                HttpTrace::Response {
                    method,
                    url,
                    status,
                    headers,
                } => format!(
                    "{mark} ← {status} ({method} {url}){}",
                    show_headers(headers)
                ),
                HttpTrace::Failed { method, url, error } => {
                    format!("{mark} ✗ {method} {url}: {}", printable(error))
                }
                HttpTrace::Note(note) => format!("{mark} {}", printable(note)),
                _ => return,
            };
            trace.line(&line);
        });
    }
    options
}

fn show_headers(headers: &[(String, String)]) -> String {
    if headers.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = headers
        .iter()
        .map(|(k, v)| format!("{k}: {}", printable(v)))
        .collect();
    format!("  [{}]", parts.join("; "))
}

/// One server to probe.
#[derive(Debug)]
pub(crate) struct Target {
    /// What to call it in reports.
    pub(crate) label: String,
    pub(crate) connect: TransportSettings,
    pub(crate) session: SessionConfig,
    /// The built-in demo server: the probe knows a safe sample call.
    pub(crate) is_demo: bool,
}

fn millis(ms: Option<u64>) -> Option<Duration> {
    ms.map(Duration::from_millis)
}

/// `--protocol`: `handshake`, `discover`, `auto`, or a revision date.
fn parse_protocol(pin: &str) -> Result<ProtocolPin, String> {
    pin.parse().map_err(|_| {
        format!(
            "--protocol: unknown protocol {pin:?}: use handshake, discover, auto or a revision ({})",
            mcp_stack_session::ProtocolVersion::ALL
                .map(mcp_stack_session::ProtocolVersion::as_str)
                .join(", ")
        )
    })
}

/// The session defaults of every target: this program's name.
fn session_defaults() -> SessionConfig {
    SessionConfig::new().client_info(mcp_stack_session::types::Implementation::new(
        "mcp",
        env!("CARGO_PKG_VERSION"),
    ))
}

/// The CLI's flags on top of a session's settings: `--timeout`,
/// `--handshake-timeout`, `--protocol`.
fn session_flags(mut c: SessionConfig, args: &TargetArgs) -> Result<SessionConfig, String> {
    if let Some(t) = millis(args.timeout) {
        c.request_timeout = t;
    }
    if let Some(t) = millis(args.handshake_timeout) {
        c.handshake_timeout = t;
    }
    if let Some(pin) = &args.protocol {
        c = c.protocol(parse_protocol(pin)?);
    }
    Ok(c)
}

/// The session for a target no config names.
fn session_config(name: &str, args: &TargetArgs) -> Result<SessionConfig, String> {
    session_flags(session_defaults().server_name(name), args)
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
            term::keep_secret(v);
            config = config.env(k, v);
        }
        return Ok(vec![Target {
            label: format!("stdio: {}", printable(line)),
            connect: TransportSettings::Stdio(with_stderr(config, trace)),
            session: session_config(program, args)?,
            is_demo: false,
        }]);
    }
    if let Some(url) = &args.url {
        let kind = http_kind(&args.transport)?;
        let mut options = http_options(HttpOptions::new().server_name("http"), args, trace);
        for header in &args.header {
            let Some((name, value)) = header.split_once(':') else {
                return Err(format!(
                    "--header: expected 'Name: value' (got a header without a colon, {})",
                    header
                        .split_whitespace()
                        .next()
                        .map(printable)
                        .unwrap_or_default()
                ));
            };
            term::keep_credential(value.trim());
            options = options.header(name.trim(), value.trim());
        }
        let mut http = HttpSettings::new(url.clone(), kind, options);
        // A token given by hand is used as it is; otherwise stored OAuth
        // logins are, and a 401 names the `mcp login` to run.
        if let Some(a) = oauth::authorizer(&http, &oauth::login_hint(url, None)) {
            http.options = http.options.authorizer(a);
        }
        let shown = mcp_stack_config::redact_url(url);
        return Ok(vec![Target {
            label: format!("http: {shown}"),
            connect: TransportSettings::Http(http),
            session: session_config("http", args)?,
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
        connect: TransportSettings::Stdio(with_stderr(config, trace)),
        session: session_config("demo", args)?,
        is_demo: true,
    }])
}

/// Loads, validates and resolves a config; with `server`, only that server:
/// another server's problems are printed as warnings (each once, with its
/// path) and nothing of it is resolved.
pub(crate) fn load_config(
    path: &std::path::Path,
    server: Option<&str>,
) -> Result<mcp_stack_config::ResolvedConfig, String> {
    load_config_keyed(path, server, None)
}

/// [`load_config`], fingerprints keyed by `key` when given (the catalog
/// cache's, so they hold across runs).
pub(crate) fn load_config_keyed(
    path: &std::path::Path,
    server: Option<&str>,
    key: Option<&mcp_stack_config::FingerprintKey>,
) -> Result<mcp_stack_config::ResolvedConfig, String> {
    let mut options = mcp_stack_config::Options::new();
    if let Some(name) = server {
        options = options.server(name);
    }
    // Claude Code's local scope: the project is the folder `mcp` runs in.
    if let Ok(dir) = std::env::current_dir() {
        options = options.project(dir);
    }
    // Each error names the file itself.
    let loaded = mcp_stack_config::load_path(path, &options).map_err(config_error)?;
    for problem in &loaded.report.problems {
        term::errln!("mcp: {}: {problem}", path.display());
    }
    let env = mcp_stack_config::process_env;
    let inputs = crate::inputs::for_config(&loaded.config, server);
    let mut how = mcp_stack_config::Resolve::new(&env).inputs(&inputs);
    if let Some(name) = server {
        how = how.only(name);
    }
    if let Some(key) = key {
        how = how.key(key);
    }
    let resolved = how.run(&loaded.config).map_err(config_error)?;
    for server in resolved.servers.values() {
        keep_secrets_of(server);
    }
    Ok(resolved)
}

/// A config's error; a server name it does not have gets the closest it
/// has.
fn config_error(e: mcp_stack_config::ConfigError) -> String {
    match &e {
        mcp_stack_config::ConfigError::UnknownServer {
            name,
            known,
            disabled: false,
            ..
        } => format!(
            "{e}{}",
            mcp_stack_config::suggest::did_you_mean(name, known.iter().map(String::as_str))
        ),
        _ => e.to_string(),
    }
}

/// Registers a configured server's secrets with the output stage, so they
/// are scrubbed from everything printed: env and header values, the proxy
/// URL (and its password alone), the OAuth client secret.
pub(crate) fn keep_secrets_of(server: &mcp_stack_config::ResolvedServer) {
    match &server.transport {
        mcp_stack_config::TransportConfig::Stdio { env, .. } => {
            env.values().for_each(|v| term::keep_secret(v.expose()));
        }
        mcp_stack_config::TransportConfig::Http { headers, proxy, .. } => {
            headers
                .values()
                .for_each(|v| term::keep_credential(v.expose()));
            if let Some(mcp_stack_config::ProxySetting::Url(url)) = proxy {
                let url = url.expose();
                term::keep_secret(url);
                let user_info = url
                    .split_once("://")
                    .and_then(|(_, rest)| rest.split_once('@'))
                    .map(|(info, _)| info);
                if let Some(info) = user_info {
                    term::keep_secret(info);
                    if let Some((_, password)) = info.split_once(':') {
                        term::keep_secret(password);
                    }
                }
            }
        }
        _ => {}
    }
    if let Some(secret) = server.oauth.as_ref().and_then(|o| o.client_secret.as_ref()) {
        term::keep_secret(secret.expose());
    }
}

fn config_targets(
    path: &std::path::Path,
    args: &TargetArgs,
    trace: TraceOptions,
) -> Result<Vec<Target>, String> {
    let resolved = load_config(path, args.server.as_deref())?;
    let mut out = Vec::new();
    for (name, server) in &resolved.servers {
        // The runtime's mapping of a config entry, the flags on top.
        let settings = ServerSettings::new(server, &session_defaults());
        let session = session_flags(settings.session, args)?;
        let connect = match settings.transport {
            TransportSettings::Stdio(c) => TransportSettings::Stdio(with_stderr(c, trace)),
            TransportSettings::Http(mut http) => {
                http.options = http_options(http.options, args, trace);
                let hint = oauth::login_hint(&http.url, Some((path, name)));
                if let Some(a) = oauth::authorizer(&http, &hint) {
                    http.options = http.options.authorizer(a);
                }
                TransportSettings::Http(http)
            }
            other => other,
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_configs_secrets_are_registered_for_scrubbing() {
        let text = r#"{"mcpServers": {
            "remote": {
                "url": "https://mcp.example.com/mcp",
                "headers": {"Authorization": "Bearer hdr-token-91c2e0", "X-Api-Key": "hdr-key-5d1f7a"},
                "proxy": "http://proxyuser:pr0xy-pass-8b@proxy.example.com:3128"
            },
            "local": {"command": "server", "env": {"API_KEY": "env-key-2a9e4c"}}
        }}"#;
        let loaded = mcp_stack_config::parse_str(text, &mcp_stack_config::Options::new()).unwrap();
        let resolved = mcp_stack_config::resolve(&loaded.config, &|_: &str| None).unwrap();
        let shown = "hdr-token-91c2e0 hdr-key-5d1f7a pr0xy-pass-8b env-key-2a9e4c \
                     proxyuser:pr0xy-pass-8b";
        assert_eq!(term::scrub(shown), shown, "nothing registered yet");
        for server in resolved.servers.values() {
            keep_secrets_of(server);
        }
        assert_eq!(
            term::scrub(shown),
            "<redacted> <redacted> <redacted> <redacted> <redacted>"
        );
    }
}
