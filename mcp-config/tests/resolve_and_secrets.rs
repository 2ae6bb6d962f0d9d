#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! `${VAR}` resolution, and no secret in any Debug, Display or error output.

use std::collections::HashMap;
use std::path::Path;

use mcp_stack_config::{
    ConfigError, Format, Options, TransportConfig, has_vars, load_path, parse_str, resolve,
};

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
        "EVIL" => Some("x\r\nInjected: yes".to_owned()),
        _ => None,
    }
}

fn assert_clean(what: &str, text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{what} leaks {s}: {text}");
    }
}

#[test]
fn no_fixture_secret_in_debug_or_errors() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for p in [
        "openclaw/settings.json",
        "openclaw/config.toml",
        "openclaw-remote/settings.json",
        "claude/claude_desktop_config.json",
        "cursor/mcp.json",
        "vscode/.vscode/mcp.json",
        "codex/config.toml",
    ] {
        let loaded = load_path(&fixtures.join(p), &Options::new()).unwrap();
        assert_clean(p, &format!("{loaded:?}"));
        let resolved = resolve(&loaded.config, &env).unwrap();
        assert_clean(p, &format!("{resolved:?} {resolved:#?}"));
        // Errors: resolve with an empty environment, load in strict mode.
        if let Err(e) = resolve(&loaded.config, &|_: &str| None) {
            assert_clean(p, &format!("{e} {e:?}"));
        }
        match load_path(&fixtures.join(p), &Options::new().strict(true)) {
            Ok(strict) => assert_clean(p, &strict.report.to_string()),
            Err(e) => assert_clean(p, &format!("{e} {e:?}")),
        }
    }
}

#[test]
fn missing_variables_are_all_reported_with_their_paths() {
    let text = r#"{"mcpServers": {
        "a": {"command": "${BIN}", "args": ["--k", "${K1}${K2}"], "env": {"X": "${K1}"}},
        "b": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${MCP_TOKEN_B}"}}
    }}"#;
    let loaded = parse_str(text, &Options::new()).unwrap();
    let err = resolve(&loaded.config, &|_: &str| None).unwrap_err();
    let ConfigError::Unresolved { report, .. } = &err else {
        panic!("{err}")
    };
    let got: Vec<(&str, &str)> = report
        .problems
        .iter()
        .map(|p| (p.path.as_str(), p.message.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "mcpServers.a.command",
                "environment variable `BIN` is not set; set it, or write `${BIN:-default}` for a default"
            ),
            (
                "mcpServers.a.args[1]",
                "environment variable `K1` is not set; set it, or write `${K1:-default}` for a default"
            ),
            (
                "mcpServers.a.args[1]",
                "environment variable `K2` is not set; set it, or write `${K2:-default}` for a default"
            ),
            (
                "mcpServers.a.env.X",
                "environment variable `K1` is not set; set it, or write `${K1:-default}` for a default"
            ),
            (
                "mcpServers.b.headers.Authorization",
                "environment variable `MCP_TOKEN_B` is not set; set it, or write `${MCP_TOKEN_B:-default}` for a default"
            ),
        ]
    );
}

#[test]
fn defaults_and_literal_dollars() {
    let text = r#"{"mcpServers": {"a": {"command": "n", "args": ["$${HOME}", "${PORT:-8080}", "cost $5"], "cwd": "${WORK:-/srv}"}}}"#;
    let loaded = parse_str(text, &Options::new()).unwrap();
    let r = resolve(&loaded.config, &|_: &str| None).unwrap();
    let TransportConfig::Stdio { args, cwd, .. } = &r.servers["a"].transport else {
        panic!()
    };
    assert_eq!(args, &["${HOME}", "8080", "cost $5"]);
    assert_eq!(cwd.as_deref(), Some(Path::new("/srv")));
}

#[test]
fn a_variable_that_injects_a_line_break_into_a_header_is_rejected() {
    let text =
        r#"{"mcpServers": {"a": {"url": "https://h/mcp", "headers": {"X-Key": "${EVIL}"}}}}"#;
    let loaded = parse_str(text, &Options::new()).unwrap();
    let err = resolve(&loaded.config, &env).unwrap_err();
    let p = &err.report().unwrap().problems[0];
    assert_eq!(p.path, "mcpServers.a.headers.X-Key");
    assert_eq!(
        p.message,
        "after expansion, header value contains a line break (CR or LF), which would split the HTTP request; remove it"
    );
    assert!(!err.to_string().contains("Injected"));
}

#[test]
fn codex_env_headers_and_bearer_token() {
    let text = r#"
[mcp_servers.r]
url = "https://h/mcp?key=${URL_KEY}"
bearer_token_env_var = "MCP_SERVER_TOKEN"
env_http_headers = { "X-Api-Key" = "MCP_SERVER_TOKEN" }
"#;
    let loaded = parse_str(text, &Options::new()).unwrap();
    assert_eq!(loaded.config.format, Format::Codex);
    let r = resolve(&loaded.config, &env).unwrap();
    let s = &r.servers["r"];
    let TransportConfig::Http { url, headers, .. } = &s.transport else {
        panic!()
    };
    assert_eq!(url, &format!("https://h/mcp?key={}", SECRETS[3]));
    assert_eq!(
        headers["Authorization"].expose(),
        format!("Bearer {}", SECRETS[0])
    );
    assert_eq!(headers["X-Api-Key"].expose(), SECRETS[0]);
    // What came from a variable is shown as written (`mcp config show`).
    assert!(has_vars(loaded.config.servers["r"].url.as_deref().unwrap()));
    assert_clean("debug", &format!("{s:?}"));

    let err = resolve(&loaded.config, &|_: &str| None).unwrap_err();
    let report = err.report().unwrap();
    assert_eq!(
        report
            .find("mcp_servers.r.bearer_token_env_var")
            .unwrap()
            .message,
        "environment variable `MCP_SERVER_TOKEN` (named by `bearer_token_env_var`) is not set; set it"
    );
    assert!(
        report
            .find("mcp_servers.r.env_http_headers.X-Api-Key")
            .is_some()
    );
    assert!(report.find("mcp_servers.r.url").is_some());
}

#[test]
fn codex_env_vars_pass_through_when_set() {
    let text = "[mcp_servers.a]\ncommand = \"n\"\nenv_vars = [\"HOME\", \"NOPE\"]\n";
    let loaded = parse_str(text, &Options::new()).unwrap();
    let vars: HashMap<&str, &str> = [("HOME", "/home/u")].into();
    let r = resolve(&loaded.config, &|n: &str| {
        vars.get(n).map(|v| (*v).to_owned())
    })
    .unwrap();
    let TransportConfig::Stdio { env, .. } = &r.servers["a"].transport else {
        panic!()
    };
    assert_eq!(env.keys().collect::<Vec<_>>(), ["HOME"]);
}

#[test]
fn agent_defaults_apply_and_mcp_enabled_false_disables_all() {
    let text = r#"{"agent": {"toolCallTimeoutMs": 1500, "handshakeTimeoutMs": 5000},
        "mcpServers": {"a": {"command": "n"}, "b": {"command": "n", "timeoutMs": 100}}}"#;
    let r = resolve(&parse_str(text, &Options::new()).unwrap().config, &env).unwrap();
    assert_eq!(r.servers["a"].request_timeout.as_millis(), 1500);
    assert_eq!(r.servers["a"].handshake_timeout.as_millis(), 5000);
    assert_eq!(r.servers["b"].request_timeout.as_millis(), 100);

    let off = r#"{"agent": {"mcpEnabled": false}, "mcpServers": {"a": {"command": "n"}}}"#;
    let r = resolve(&parse_str(off, &Options::new()).unwrap().config, &env).unwrap();
    assert!(r.servers.is_empty());
    assert!(r.disabled.contains("a"));
}

#[test]
fn oauth_settings_are_expanded_and_their_secret_enters_the_fingerprint_only_as_a_hash() {
    let text = r#"{"mcpServers": {"remote": {"url": "https://x.example/mcp",
        "oauth": {"clientId": "app-1", "clientSecret": "${MCP_SERVER_TOKEN}", "scopes": ["read"]}}}}"#;
    let config = parse_str(text, &Options::new()).unwrap().config;
    let resolved = resolve(&config, &env).unwrap();
    let server = &resolved.servers["remote"];
    let oauth = server.oauth.as_ref().unwrap();
    assert_eq!(oauth.client_id.as_deref(), Some("app-1"));
    assert_eq!(oauth.client_secret.as_ref().unwrap().expose(), SECRETS[0]);
    assert_clean("resolved server", &format!("{server:?}"));
    // A different secret is a different server; no OAuth settings, another one again.
    let other = text.replace("${MCP_SERVER_TOKEN}", "another-secret");
    let other = resolve(&parse_str(&other, &Options::new()).unwrap().config, &env).unwrap();
    assert_ne!(other.servers["remote"].fingerprint, server.fingerprint);
    let plain = r#"{"mcpServers": {"remote": {"url": "https://x.example/mcp"}}}"#;
    let plain = resolve(&parse_str(plain, &Options::new()).unwrap().config, &env).unwrap();
    assert_ne!(plain.servers["remote"].fingerprint, server.fingerprint);
    assert!(plain.servers["remote"].oauth.is_none());
}

/// `proxy`: an http:// URL (credentials from `${VAR}` are secrets), or
/// `none`; absent leaves it to the environment. It changes the fingerprint
/// only when set.
#[test]
fn proxy_settings_resolve_and_stay_secret() {
    use mcp_stack_config::ProxySetting;
    let text = r#"{"mcpServers": {
        "via": {"url": "https://h/mcp", "proxy": "http://me:${PROXY_PASSWORD}@proxy.corp:3128"},
        "direct": {"url": "https://h/mcp", "proxy": "none"},
        "from-env": {"url": "https://h/mcp", "proxy": "${MCP_PROXY:-}"},
        "plain": {"url": "https://h/mcp"}
    }}"#;
    let loaded = parse_str(text, &Options::new()).unwrap();
    assert!(loaded.report.problems.is_empty(), "{}", loaded.report);
    let vars: HashMap<&str, &str> = [("PROXY_PASSWORD", "pr0xy-Secret")].into();
    let resolved = resolve(&loaded.config, &|n: &str| {
        vars.get(n).map(|v| (*v).to_owned())
    })
    .unwrap();
    let proxy = |name: &str| match &resolved.servers[name].transport {
        TransportConfig::Http { proxy, .. } => proxy.clone(),
        other => panic!("{other:?}"),
    };
    let Some(ProxySetting::Url(url)) = proxy("via") else {
        panic!()
    };
    assert_eq!(url.expose(), "http://me:pr0xy-Secret@proxy.corp:3128");
    assert_eq!(proxy("direct"), Some(ProxySetting::Direct));
    // `${VAR:-}` unset: empty, which means none (as curl's empty proxy).
    assert_eq!(proxy("from-env"), Some(ProxySetting::Direct));
    assert_eq!(proxy("plain"), None);
    assert!(!format!("{resolved:?}").contains("pr0xy-Secret"));
    let fp = |name: &str| resolved.servers[name].fingerprint;
    assert_ne!(fp("via"), fp("plain"));
    assert_ne!(fp("direct"), fp("plain"));

    // Checked again after expansion, naming the path, never the value.
    let text = r#"{"mcpServers": {"s": {"url": "https://h/mcp", "proxy": "${P}"}}}"#;
    let loaded = parse_str(text, &Options::new()).unwrap();
    let err = resolve(&loaded.config, &|_: &str| {
        Some("socks5://u:pr0xy-Secret@s:1080".to_owned())
    })
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("mcpServers.s.proxy: after expansion, is a SOCKS proxy"),
        "{err}"
    );
    assert!(!err.contains("pr0xy-Secret"), "{err}");

    // TOML (Codex) reads the same key.
    let text = "[mcp_servers.s]\nurl = \"https://h/mcp\"\nproxy = \"http://proxy:8080\"\n";
    let loaded = parse_str(text, &Options::new().format(Format::Codex)).unwrap();
    let resolved = resolve(&loaded.config, &|_: &str| None).unwrap();
    assert!(matches!(
        &resolved.servers["s"].transport,
        TransportConfig::Http {
            proxy: Some(ProxySetting::Url(_)),
            ..
        }
    ));
}
