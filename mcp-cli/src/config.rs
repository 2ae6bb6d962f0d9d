//! `mcp config check` and `mcp config show`: a config's problems, and its
//! resolved servers with their fingerprints, secrets redacted. Loading,
//! validating and resolving are `mcp-stack-config`'s; this module words and prints.
//!
//! `config show`'s fingerprints are keyed by the user's fingerprint key,
//! `fingerprint.key` beside the token store (made on first use; see
//! `mcp_stack_runtime::load_or_create_key`), so they are the same from run to run
//! and, without that file, say nothing about the secrets behind them.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use mcp_stack_config::{
    ConfigError, EnvLookup, FingerprintKey, Loaded, McpConfig, Options, Problem, ProxySetting,
    Report, Resolve, ResolvedConfig, Severity, TransportConfig, has_vars, has_vars_in, load_path,
    redact_url,
};
use serde_json::{Value, json};

use crate::ConfigCommand;
use crate::errors::{CliError, usage_error};
use crate::output::Style;
use crate::term::{self, errln, outln};

/// `mcp config check` and `mcp config show`.
pub(crate) fn run(c: ConfigCommand, style: Style) -> ExitCode {
    match c {
        ConfigCommand::Check {
            file,
            strict,
            format,
            json,
        } => {
            let options = match options(format, strict) {
                Ok(o) => o,
                Err(code) => return code,
            };
            let report = check(
                load_path(&file, &options),
                Some(&mcp_stack_config::process_env),
            );
            let lines = report.lines();
            if json {
                let problems: Vec<Value> = report
                    .problems
                    .iter()
                    .map(|p| {
                        json!({
                            "severity": if p.severity == Severity::Error { "error" } else { "warning" },
                            "path": p.path,
                            "message": p.message,
                        })
                    })
                    .collect();
                let errors = problems.iter().filter(|p| p["severity"] == "error").count();
                term::print_json(
                    &json!({"file": file.display().to_string(), "problems": problems}),
                    true,
                );
                if errors > 0 {
                    return CliError::new("config", format!("{errors} error(s) in the config"))
                        .record();
                }
                return ExitCode::SUCCESS;
            }
            if lines.is_empty() {
                outln!("{} {}: no problems", style.ok("✓"), file.display());
            }
            for line in lines {
                outln!("{line}");
            }
            if report.has_errors() {
                CliError::new("config", "errors in the config").record()
            } else {
                ExitCode::SUCCESS
            }
        }
        ConfigCommand::Show { file, format, json } => {
            let options = match options(format, false) {
                Ok(o) => o,
                Err(code) => return code,
            };
            let key = fingerprint_key();
            if let Some(problem) = &key.problem {
                errln!(
                    "{} {problem}; this run's fingerprints are keyed for this run only",
                    style.warn("!")
                );
            }
            match show(&file, &options, &mcp_stack_config::process_env, &key) {
                Ok(lines) if json => {
                    term::print_json(&json!({"lines": lines}), true);
                    ExitCode::SUCCESS
                }
                Ok(lines) => {
                    for line in lines {
                        outln!("{line}");
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => CliError::new("config", e.to_string()).report(style),
            }
        }
    }
}

/// The key `config show`'s fingerprints are made with, and where it is.
struct ShowKey {
    key: FingerprintKey,
    /// The key file, or `None` for this process's key.
    file: Option<std::path::PathBuf>,
    /// Why the key file could not be had, if it could not.
    problem: Option<String>,
}

/// The user's fingerprint key, beside the token store (`MCP_AUTH_DIR`, else
/// `$XDG_CONFIG_HOME/mcp/auth`, else `~/.config/mcp/auth`); made there on
/// first use. When it cannot be read or made, this process's random key and
/// the reason: the fingerprints then hold for this run only, and the command
/// still runs.
fn fingerprint_key() -> ShowKey {
    let per_process = |problem: String| ShowKey {
        key: FingerprintKey::per_process().clone(),
        file: None,
        problem: Some(problem),
    };
    let dir = match mcp_stack_auth::store::FileStore::default_location() {
        Ok(store) => store.dir().to_owned(),
        Err(e) => return per_process(format!("no folder for the fingerprint key: {e}")),
    };
    match mcp_stack_runtime::load_or_create_key(&dir) {
        Ok(key) => ShowKey {
            key,
            file: Some(dir.join(mcp_stack_runtime::KEY_FILE_NAME)),
            problem: None,
        },
        Err(e) => per_process(e.to_string()),
    }
}

/// `--format` and `--strict`; an unknown format is a usage error. The
/// project (Claude Code's local scope) is the folder `mcp` runs in.
fn options(format: Option<String>, strict: bool) -> Result<Options, ExitCode> {
    let mut options = Options::new().strict(strict);
    if let Ok(dir) = std::env::current_dir() {
        options = options.project(dir);
    }
    if let Some(f) = format {
        match f.parse::<mcp_stack_config::Format>() {
            Ok(f) => options = options.format(f),
            Err(e) => return Err(usage_error(&e.to_string())),
        }
    }
    Ok(options)
}

/// The validation report of a config, as `mcp config check` prints it.
///
/// A load failure (unreadable, bad syntax, ambiguous folder) becomes one
/// error. With `env`, `${VAR}` resolution is checked as well (missing
/// variables are errors).
fn check(loaded: Result<Loaded, ConfigError>, env: Option<EnvLookup<'_>>) -> Report {
    let whole_file = |message: String| Problem {
        severity: Severity::Error,
        path: String::new(),
        message,
    };
    match loaded {
        Ok(Loaded {
            config, mut report, ..
        }) => {
            // Inputs are not asked for: the given ones, else stand-ins.
            let inputs = crate::inputs::for_check(&config);
            if let Some(env) = env
                && let Err(e) = Resolve::new(env).inputs(&inputs).run(&config)
            {
                match e {
                    ConfigError::Unresolved { report: r, .. } => report.problems.extend(r.problems),
                    other => report.problems.push(whole_file(other.to_string())),
                }
            }
            report
        }
        Err(ConfigError::Invalid { report, .. }) => report,
        Err(other) => Report {
            problems: vec![whole_file(other.to_string())],
        },
    }
}

/// Loads and resolves a config for `mcp config show`: its servers, with
/// fingerprints under `key`, then its warnings.
fn show(
    path: &Path,
    options: &Options,
    env: EnvLookup<'_>,
    key: &ShowKey,
) -> Result<Vec<String>, ConfigError> {
    let loaded = load_path(path, options)?;
    let inputs = crate::inputs::for_config(&loaded.config, None);
    let resolved = Resolve::new(env)
        .key(&key.key)
        .inputs(&inputs)
        .run(&loaded.config)?;
    let mut lines = show_lines(&loaded.config, &resolved);
    // Which key the fingerprints hold under: compare them only with ones
    // made under the same.
    lines.insert(
        2.min(lines.len()),
        match &key.file {
            Some(file) => format!("fingerprint key: {}", file.display()),
            None => "fingerprint key: this run only".to_owned(),
        },
    );
    lines.extend(loaded.report.problems.iter().map(ToString::to_string));
    Ok(lines)
}

/// A timeout as a config would write it: `60s`, `1500ms`.
fn human(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.subsec_nanos().is_multiple_of(1_000_000) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{d:?}")
    }
}

/// The resolved servers as `mcp config show` prints them: env and header
/// values redacted, URL user info and query redacted, and any command, arg,
/// cwd or URL that came from `${VAR}` shown as written rather than expanded.
fn show_lines(config: &McpConfig, resolved: &ResolvedConfig) -> Vec<String> {
    let mut out = Vec::new();
    let label = format!("{}, format {}", resolved.format.client(), resolved.format);
    if let Some(src) = &resolved.source {
        out.push(format!("config: {} ({label})", src.display()));
    } else {
        out.push(format!("config: <input> ({label})"));
    }
    out.push(format!("session fingerprint: {}", resolved.fingerprint));
    let as_written = |resolved: &str, raw: Option<&String>| match raw {
        Some(raw) if has_vars(raw) || has_vars_in(config.format, raw) => raw.clone(),
        _ => resolved.to_owned(),
    };
    for (name, s) in &resolved.servers {
        let raw = config.servers.get(name);
        match &s.transport {
            TransportConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                out.push(format!("server {name}: stdio"));
                out.push(format!("  fingerprint: {}", s.fingerprint));
                out.push(format!(
                    "  command: {}",
                    as_written(command, raw.and_then(|r| r.command.as_ref()))
                ));
                let args: Vec<String> = args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| as_written(a, raw.and_then(|r| r.args.get(i))))
                    .collect();
                if !args.is_empty() {
                    out.push(format!("  args: {}", Value::from(args)));
                }
                if let Some(cwd) = cwd {
                    let cwd = cwd.display().to_string();
                    out.push(format!(
                        "  cwd: {}",
                        as_written(&cwd, raw.and_then(|r| r.cwd.as_ref()))
                    ));
                }
                if !env.is_empty() {
                    let e: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    out.push(format!("  env: {}", e.join(", ")));
                }
            }
            TransportConfig::Http {
                url,
                headers,
                kind,
                proxy,
            } => {
                out.push(format!("server {name}: {}", kind.name()));
                out.push(format!("  fingerprint: {}", s.fingerprint));
                // Redacted as written too: a literal `user:password@` or
                // query next to a `${VAR}` is as secret as an expanded one.
                let url = redact_url(&as_written(url, raw.and_then(|r| r.url.as_ref())));
                out.push(format!("  url: {url}"));
                if !headers.is_empty() {
                    let h: Vec<String> = headers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                    out.push(format!("  headers: {}", h.join(", ")));
                }
                match proxy {
                    Some(ProxySetting::Direct) => out.push("  proxy: none".to_owned()),
                    // As written when from `${VAR}`; user info redacted.
                    Some(ProxySetting::Url(p)) => {
                        let written = raw
                            .and_then(|r| r.proxy.as_ref())
                            .map(|w| w.expose().to_owned());
                        let p = redact_url(&as_written(p.expose(), written.as_ref()));
                        out.push(format!("  proxy: {p}"));
                    }
                    _ => {}
                }
            }
            // A transport this build does not know how to show: its name and
            // fingerprint only, so nothing secret is printed.
            _ => {
                out.push(format!("server {name}"));
                out.push(format!("  fingerprint: {}", s.fingerprint));
            }
        }
        out.push(format!(
            "  request timeout: {}, handshake timeout: {}, parallel tool calls: {}",
            human(s.request_timeout),
            human(s.handshake_timeout),
            if s.supports_parallel_tool_calls {
                "yes"
            } else {
                "no"
            }
        ));
        let inc = s.tools.include.as_ref().map_or_else(
            || "all".to_owned(),
            |i| format!("only {}", i.iter().cloned().collect::<Vec<_>>().join(", ")),
        );
        if s.tools.include.is_some() || !s.tools.exclude.is_empty() {
            let exc = if s.tools.exclude.is_empty() {
                String::new()
            } else {
                format!(
                    "; never {}",
                    s.tools
                        .exclude
                        .iter()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            out.push(format!("  tools: {inc}{exc}"));
        }
        if let Some(trust) = s.trust {
            out.push(format!(
                "  trust: {} (nothing is confirmed here either way)",
                if trust { "yes" } else { "no" }
            ));
        }
        if let Some(pv) = &s.protocol_version {
            out.push(format!(
                "  protocol version: {}",
                mcp_stack_config::pin_spelling(*pv)
            ));
        }
    }
    if !resolved.disabled.is_empty() {
        out.push(format!(
            "disabled: {}",
            resolved
                .disabled
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use mcp_stack_config::{parse_str, resolve, resolve_with_key};

    use super::*;

    /// `mcp-stack-config`'s fixtures: one file of each format.
    fn fixture(p: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../mcp-config/tests/fixtures")
            .join(p)
    }

    /// Values in the fixtures (or their environment) that must never be shown.
    const SECRETS: &[&str] = &[
        "tok-Fixture-7f3a9c",
        "ghp_FixtureLiteralSecret0123456789abcd",
        "/tmp/openclaw-workspace",
        "s3cret-in-url",
    ];

    fn env(name: &str) -> Option<String> {
        match name {
            "MCP_SERVER_TOKEN" => Some(SECRETS[0].to_owned()),
            "URL_KEY" => Some(SECRETS[3].to_owned()),
            _ => None,
        }
    }

    /// A key of the test's own, as if read from a key file.
    fn key(byte: u8) -> ShowKey {
        ShowKey {
            key: FingerprintKey::from_bytes([byte; 32]),
            file: Some(PathBuf::from("/keys/fingerprint.key")),
            problem: None,
        }
    }

    fn assert_clean(what: &str, text: &str) {
        for s in SECRETS {
            assert!(!text.contains(s), "{what} leaks {s}: {text}");
        }
    }

    #[test]
    fn no_fixture_secret_in_show_or_check() {
        for p in [
            "openclaw/settings.json",
            "openclaw/config.toml",
            "openclaw-remote/settings.json",
            "claude/claude_desktop_config.json",
            "cursor/mcp.json",
            "vscode/.vscode/mcp.json",
            "codex/config.toml",
        ] {
            let lines = show(&fixture(p), &Options::new(), &env, &key(1)).unwrap();
            assert_clean(p, &lines.join("\n"));
            let strict = Options::new().strict(true);
            assert_clean(
                p,
                &check(load_path(&fixture(p), &strict), Some(&env)).to_string(),
            );
        }
    }

    #[test]
    fn show_prints_redacted_servers_with_fingerprints() {
        let lines = show(&fixture("cursor/mcp.json"), &Options::new(), &env, &key(1)).unwrap();
        let text = lines.join("\n");
        let loaded = load_path(&fixture("cursor/mcp.json"), &Options::new()).unwrap();
        let c = resolve_with_key(&loaded.config, &env, &key(1).key).unwrap();
        assert!(
            text.contains(&format!(
                "session fingerprint: {}\nfingerprint key: /keys/fingerprint.key\n",
                c.fingerprint
            )),
            "{text}"
        );
        assert!(text.contains(&format!(
            "  fingerprint: {}",
            c.servers["local-fs"].fingerprint
        )));
        assert!(
            text.contains("server remote-tools: streamable-http+sse-fallback"),
            "{text}"
        );
        assert!(
            text.contains("  headers: Authorization: <redacted>, MCP-Protocol-Version: <redacted>")
        );
        assert!(text.contains("  env: MCP_AUTH_MODE=<redacted>, MCP_WORKSPACE=<redacted>"));
        assert!(
            text.contains("request timeout: 60s, handshake timeout: 30s, parallel tool calls: yes")
        );
        assert_clean("show", &text);
    }

    /// The fingerprints printed are the ones under the user's key: the same
    /// key prints the same, another key (another user, or no key file) others.
    #[test]
    fn show_prints_fingerprints_under_the_key_it_is_given() {
        let fingerprints = |k: &ShowKey| {
            show(&fixture("cursor/mcp.json"), &Options::new(), &env, k)
                .unwrap()
                .into_iter()
                .filter(|l| l.contains("fingerprint: "))
                .collect::<Vec<_>>()
        };
        let a = fingerprints(&key(1));
        assert_eq!(a.len(), 3, "{a:?}");
        assert_eq!(a, fingerprints(&key(1)));
        let b = fingerprints(&key(2));
        assert!(a.iter().zip(&b).all(|(a, b)| a != b), "{a:?} {b:?}");
        let this_run = ShowKey {
            key: FingerprintKey::per_process().clone(),
            file: None,
            problem: Some("no key file".to_owned()),
        };
        let lines = show(
            &fixture("cursor/mcp.json"),
            &Options::new(),
            &env,
            &this_run,
        )
        .unwrap();
        assert_eq!(lines[2], "fingerprint key: this run only");
    }

    #[test]
    fn show_gives_values_from_variables_as_written() {
        let text = r#"
[mcp_servers.r]
url = "https://h/mcp?key=${URL_KEY}"
bearer_token_env_var = "MCP_SERVER_TOKEN"
env_http_headers = { "X-Api-Key" = "MCP_SERVER_TOKEN" }
"#;
        let loaded = parse_str(text, &Options::new()).unwrap();
        let r = resolve(&loaded.config, &env).unwrap();
        let shown = show_lines(&loaded.config, &r).join("\n");
        assert!(shown.contains("url: https://h/mcp?<redacted>"), "{shown}");
        assert_clean("show", &shown);
    }

    #[test]
    fn show_redacts_literal_credentials_beside_a_variable() {
        let text = r#"{"mcpServers": {"r": {"url": "https://u:s3cret-in-url@h/mcp?token=lit&key=${URL_KEY}"}}}"#;
        let loaded = parse_str(text, &Options::new()).unwrap();
        let r = resolve(&loaded.config, &env).unwrap();
        let shown = show_lines(&loaded.config, &r).join("\n");
        assert!(
            shown.contains("url: https://<redacted>@h/mcp?<redacted>"),
            "{shown}"
        );
        assert!(!shown.contains("token=lit"), "{shown}");
        assert_clean("show", &shown);
    }

    #[test]
    fn show_gives_the_proxy_without_credentials() {
        let text = r#"{"mcpServers": {
            "a": {"url": "https://h/mcp", "proxy": "http://me:s3cret-in-url@proxy.corp:3128"},
            "b": {"url": "https://h/mcp", "proxy": "http://me:${URL_KEY}@proxy.corp:3128"},
            "c": {"url": "https://h/mcp", "proxy": "none"}
        }}"#;
        let loaded = parse_str(text, &Options::new()).unwrap();
        let r = resolve(&loaded.config, &env).unwrap();
        let shown = show_lines(&loaded.config, &r).join("\n");
        assert_eq!(
            shown
                .matches("proxy: http://<redacted>@proxy.corp:3128")
                .count(),
            2,
            "{shown}"
        );
        assert!(shown.contains("  proxy: none"), "{shown}");
        assert_clean("show", &shown);
    }

    #[test]
    fn check_reports_lines_and_load_failures() {
        let r = check(
            parse_str(
                "{\"mcpServers\": {\"a\": {\"command\": \"${NOPE}\"}}}",
                &Options::new(),
            ),
            Some(&env),
        );
        assert!(r.has_errors());
        assert_eq!(
            r.lines(),
            [
                "error: mcpServers.a.command: environment variable `NOPE` is not set; set it, or write `${NOPE:-default}` for a default",
                "1 error(s), 0 warning(s)"
            ]
        );
        let r = check(
            parse_str(
                "{\"mcpServers\": {\"a\": {\"command\": \"n\"}}}",
                &Options::new(),
            ),
            None,
        );
        assert_eq!(r.lines(), ["ok: no problems"]);
        let r = check(parse_str("not json or toml {", &Options::new()), None);
        assert!(
            r.has_errors() && r.lines()[0].starts_with("error: <input>: not valid TOML"),
            "{r}"
        );
    }
}
