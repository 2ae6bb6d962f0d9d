#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! Each client's own config, read as that client reads it: detection, the
//! label, every field, and the errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_stack_config::{
    ConfigError, Format, HttpKind, InputKind, Loaded, Options, Resolve, ResolvedConfig, Secret,
    TransportConfig, load_path, parse_str,
};

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(p)
}

fn load(p: &str) -> Loaded {
    let loaded = load_path(&fixture(p), &Options::new()).unwrap();
    assert!(loaded.report.is_empty(), "{p}: {}", loaded.report);
    loaded
}

fn env(name: &str) -> Option<String> {
    let v = match name {
        "HOME" => "/home/dev",
        "FIXTURE_LOG_LEVEL" => "debug",
        "DB_CONNECTION_STRING" => "postgres://db",
        "EXTERNAL_API_KEY" => "ext-key",
        "GITHUB_PAT" => "ghp-pat",
        "GITHUB_TOKEN" => "ghp-token",
        "AUTH_TOKEN" => "figma-token",
        "ZED_TOKEN" => "zed-token",
        "MY_ENV_VAR" => "mine",
        "CONTEXT7_API_KEY" => "c7-key",
        "API_KEY" => "api-key",
        _ => return None,
    };
    Some(v.to_owned())
}

fn stdio(r: &ResolvedConfig, name: &str) -> (String, Vec<String>, BTreeMap<String, String>) {
    let TransportConfig::Stdio {
        command, args, env, ..
    } = &r.servers[name].transport
    else {
        panic!("{name} is not stdio")
    };
    let env = env
        .iter()
        .map(|(k, v)| (k.clone(), v.expose().to_owned()))
        .collect();
    (command.clone(), args.clone(), env)
}

fn http(r: &ResolvedConfig, name: &str) -> (String, HttpKind, BTreeMap<String, String>) {
    let TransportConfig::Http {
        url, kind, headers, ..
    } = &r.servers[name].transport
    else {
        panic!("{name} is not HTTP")
    };
    let headers = headers
        .iter()
        .map(|(k, v)| (k.clone(), v.expose().to_owned()))
        .collect();
    (url.clone(), *kind, headers)
}

#[test]
fn every_fixture_is_detected_and_labelled_as_its_client() {
    let cases = [
        ("vscode-inputs/.vscode/mcp.json", Format::VsCode, "VS Code"),
        (
            "vscode-settings/.vscode/settings.json",
            Format::VsCode,
            "VS Code",
        ),
        ("claude-code/.mcp.json", Format::ClaudeCode, "Claude Code"),
        (
            "claude-code-user/.claude.json",
            Format::ClaudeCode,
            "Claude Code",
        ),
        (
            "gemini/.gemini/settings.json",
            Format::GeminiCli,
            "Gemini CLI",
        ),
        ("windsurf/mcp_config.json", Format::Windsurf, "Windsurf"),
        ("zed/settings.json", Format::Zed, "Zed"),
        ("opencode/opencode.jsonc", Format::OpenCode, "OpenCode"),
        (
            "opencode-servers/opencode.json",
            Format::OpenCode,
            "OpenCode",
        ),
        ("cursor-envfile/.cursor/mcp.json", Format::Cursor, "Cursor"),
    ];
    for (p, format, client) in cases {
        let loaded = load(p);
        assert_eq!(loaded.config.format, format, "{p}");
        assert_eq!(format.client(), client);
        assert_eq!(format.name().parse::<Format>(), Ok(format));
    }
    // A folder holding Claude Code's `.mcp.json` is read like the file.
    assert_eq!(load("claude-code").config.format, Format::ClaudeCode);
    assert_eq!(load("gemini").config.format, Format::GeminiCli);
    assert_eq!(load("windsurf").config.format, Format::Windsurf);
    assert_eq!(load("opencode").config.format, Format::OpenCode);
}

fn vscode_inputs() -> BTreeMap<String, Secret> {
    [("api-key", "pplx-123"), ("region", "us")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Secret::new(v)))
        .collect()
}

#[test]
fn vscode_inputs_are_declared_and_used() {
    let loaded = load("vscode-inputs/.vscode/mcp.json");
    let c = &loaded.config;
    assert_eq!(c.inputs.len(), 2);
    let key = &c.inputs[0];
    assert_eq!(
        (key.id.as_str(), key.kind, key.password),
        ("api-key", InputKind::PromptString, true)
    );
    assert_eq!(key.description.as_deref(), Some("Perplexity API Key"));
    let region = &c.inputs[1];
    assert_eq!(region.kind, InputKind::PickString);
    assert_eq!(region.options, ["eu", "us"]);
    assert_eq!(region.default.as_deref(), Some("eu"));
    // Which inputs a server needs: asked for only when used.
    let ids = |only| {
        c.inputs_used(only)
            .iter()
            .map(|i| i.id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(None), ["api-key", "region"]);
    assert_eq!(ids(Some("github")), ["api-key"]);
    assert!(ids(Some("fs")).is_empty());
}

#[test]
fn vscode_variables_expand_as_vscode_does() {
    let loaded = load("vscode-inputs/.vscode/mcp.json");
    let inputs = vscode_inputs();
    let r = Resolve::new(&env)
        .inputs(&inputs)
        .run(&loaded.config)
        .unwrap();
    let (_, args, envs) = stdio(&r, "perplexity");
    assert_eq!(args, ["-y", "server-perplexity-ask", "--region", "us"]);
    assert_eq!(envs["PERPLEXITY_API_KEY"], "pplx-123");
    let (_, _, headers) = http(&r, "github");
    assert_eq!(headers["Authorization"], "Bearer pplx-123");
    // `${workspaceFolder}` is the folder holding `.vscode/`; `${userHome}`
    // and `${env:NAME}` come from the environment; `envFile` is read, `env` wins.
    let workspace = fixture("vscode-inputs").display().to_string();
    let (_, args, envs) = stdio(&r, "fs");
    assert_eq!(
        args,
        [
            format!("{workspace}/tools/fs-server.js"),
            "--home".into(),
            "/home/dev".into()
        ]
    );
    assert_eq!(envs["LOG_LEVEL"], "debug");
    assert_eq!(envs["FS_ROOT"], "/srv/data");
    assert_eq!(envs["FS_MODE"], "read only");
}

#[test]
fn a_missing_input_is_an_error_naming_it_and_its_description() {
    let loaded = load("vscode-inputs/.vscode/mcp.json");
    let err = Resolve::new(&env)
        .only("github")
        .run(&loaded.config)
        .unwrap_err();
    let report = err.report().unwrap();
    assert_eq!(report.problems.len(), 1, "{report}");
    assert_eq!(
        report.problems[0].path,
        "servers.github.headers.Authorization"
    );
    assert!(
        report.problems[0]
            .message
            .starts_with("input `api-key` (Perplexity API Key) has no value"),
        "{report}"
    );
    // A pickString value must be one of its options; the value is not quoted.
    let mut bad = vscode_inputs();
    bad.insert("region".into(), Secret::new("mars"));
    let err = Resolve::new(&env)
        .inputs(&bad)
        .only("perplexity")
        .run(&loaded.config)
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("input `region` must be one of eu, us"),
        "{text}"
    );
    // Outside a `.vscode` folder, `${workspaceFolder}` has no value.
    let text = r#"{"servers": {"a": {"command": "${workspaceFolder}/x"}}}"#;
    let loaded = parse_str(text, &Options::new()).unwrap();
    let err = mcp_stack_config::resolve(&loaded.config, &env)
        .unwrap_err()
        .to_string();
    assert!(err.contains("`${workspaceFolder}` has no value"), "{err}");
    // An input nobody declared, and a malformed declaration.
    let text = r#"{"servers": {"a": {"command": "${input:nope}"}}}"#;
    let loaded = parse_str(text, &Options::new()).unwrap();
    let err = mcp_stack_config::resolve(&loaded.config, &env)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`${input:nope}` names no input; declare it under `inputs`"),
        "{err}"
    );
    let text = r#"{"inputs": [{"type": "pickString", "id": "p", "default": "z"}], "servers": {}}"#;
    let err = parse_str(text, &Options::new()).unwrap_err();
    let report = err.report().unwrap();
    assert_eq!(report.error_count(), 2, "{report}");
    assert!(report.find("inputs[0]").is_some(), "{report}");
    assert!(report.find("inputs[0].default").is_some(), "{report}");
}

#[test]
fn vscode_settings_json_holds_servers_under_mcp() {
    let loaded = load("vscode-settings/.vscode/settings.json");
    assert_eq!(loaded.config.location("docs"), "mcp.servers.docs");
    assert_eq!(loaded.config.inputs[0].id, "token");
    let inputs = [("token".to_owned(), Secret::new("t"))].into();
    let r = Resolve::new(&env)
        .inputs(&inputs)
        .run(&loaded.config)
        .unwrap();
    let (url, kind, headers) = http(&r, "docs");
    assert_eq!(
        (url.as_str(), kind),
        ("https://docs.example.com/sse", HttpKind::Sse)
    );
    assert_eq!(headers["X-Token"], "t");
    assert_eq!(stdio(&r, "local").0, "uvx");
}

#[test]
fn claude_code_project_file() {
    let loaded = load("claude-code/.mcp.json");
    let r = mcp_stack_config::resolve(&loaded.config, &env).unwrap();
    let (_, args, _) = stdio(&r, "shared-db");
    assert_eq!(args[3], "postgres://localhost/dev");
    let (url, kind, headers) = http(&r, "api-server");
    assert_eq!(url, "https://api.example.com/mcp");
    assert_eq!(kind, HttpKind::StreamableHttpWithSseFallback);
    assert_eq!(headers["Authorization"], "Bearer api-key");
    assert_eq!(http(&r, "events").1, HttpKind::Sse);
}

#[test]
fn claude_code_user_and_local_scopes() {
    let file = fixture("claude-code-user/.claude.json");
    // Without a project: the user scope.
    let user = load_path(&file, &Options::new()).unwrap().config;
    assert_eq!(user.servers.keys().collect::<Vec<_>>(), ["notes", "sentry"]);
    // In a project: its local scope too, winning on a name both have.
    let local = load_path(&file, &Options::new().project("/home/dev/app"))
        .unwrap()
        .config;
    assert_eq!(
        local.servers.keys().collect::<Vec<_>>(),
        ["app-db", "notes", "sentry"]
    );
    assert_eq!(local.servers["notes"].args, ["--project", "/home/dev/app"]);
    assert_eq!(
        local.location("notes"),
        "projects./home/dev/app.mcpServers.notes"
    );
    assert_eq!(local.location("sentry"), "mcpServers.sentry");
    // A problem in the local scope is reported at its own path.
    let text = r#"{"mcpServers": {}, "projects": {"/p": {"mcpServers": {"x": {"args": []}}}}}"#;
    let err = parse_str(text, &Options::new().project("/p")).unwrap_err();
    assert!(
        err.report()
            .unwrap()
            .find("projects./p.mcpServers.x")
            .is_some(),
        "{err}"
    );
}

#[test]
fn gemini_cli_fields() {
    let loaded = load("gemini/.gemini/settings.json");
    let c = &loaded.config;
    assert_eq!(c.servers["github"].trust, Some(true));
    assert_eq!(c.servers["pythonTools"].trust, Some(false));
    let r = mcp_stack_config::resolve(c, &env).unwrap();
    let py = &r.servers["pythonTools"];
    let TransportConfig::Stdio { env: e, cwd, .. } = &py.transport else {
        panic!()
    };
    // Gemini CLI expands `$VAR` as well as `${VAR}`.
    assert_eq!(e["DATABASE_URL"].expose(), "postgres://db");
    assert_eq!(e["API_KEY"].expose(), "ext-key");
    assert_eq!(cwd.as_deref(), Some(Path::new("./mcp-servers/python")));
    assert_eq!(py.request_timeout, Duration::from_millis(15000));
    assert!(py.tools.allows("safe_tool") && !py.tools.allows("dangerous_tool"));
    assert!(!py.tools.allows("other_tool"));
    assert_eq!(py.trust, Some(false));
    // `httpUrl`: streamable HTTP; `url`: SSE.
    let (url, kind, headers) = http(&r, "github");
    assert_eq!(
        (url.as_str(), kind),
        (
            "https://api.githubcopilot.com/mcp/",
            HttpKind::StreamableHttp
        )
    );
    assert_eq!(headers["Authorization"], "Bearer ghp-pat");
    assert_eq!(
        r.servers["github"].request_timeout,
        Duration::from_millis(5000)
    );
    assert_eq!(http(&r, "events").1, HttpKind::Sse);
    // `httpUrl` and `url` are one setting: both is an error.
    let text = r#"{"mcpServers": {"a": {"httpUrl": "https://h/mcp", "url": "https://h/sse"}}}"#;
    let err = parse_str(text, &Options::new().format(Format::GeminiCli)).unwrap_err();
    assert!(err.to_string().contains("already sets the URL"), "{err}");
}

#[test]
fn windsurf_server_url_and_disabled_tools() {
    let loaded = load("windsurf/mcp_config.json");
    let r = mcp_stack_config::resolve(&loaded.config, &env).unwrap();
    assert_eq!(
        stdio(&r, "github").2["GITHUB_PERSONAL_ACCESS_TOKEN"],
        "ghp-token"
    );
    assert!(!r.servers["github"].tools.allows("delete_repository"));
    let (url, kind, headers) = http(&r, "figma");
    assert_eq!(url, "https://mcp.figma.com/mcp");
    assert_eq!(kind, HttpKind::StreamableHttpWithSseFallback);
    assert_eq!(headers["Authorization"], "Bearer figma-token");
    assert!(r.disabled.contains("off"));
}

#[test]
fn zed_context_servers_in_both_forms() {
    let loaded = load("zed/settings.json");
    let r = mcp_stack_config::resolve(&loaded.config, &env).unwrap();
    let (command, args, envs) = stdio(&r, "local-tools");
    assert_eq!(
        (command.as_str(), args.as_slice()),
        ("some-mcp", &["--stdio".to_owned()][..])
    );
    assert_eq!(envs["MODE"], "fast");
    let (command, args, envs) = stdio(&r, "legacy-form");
    assert_eq!(command, "/usr/local/bin/legacy-mcp");
    assert_eq!(args, ["serve"]);
    assert_eq!(envs["LEVEL"], "2");
    assert_eq!(http(&r, "remote").2["Authorization"], "Bearer zed-token");
    assert_eq!(loaded.config.location("remote"), "context_servers.remote");
    let text = r#"{"context_servers": {"a": {"command": {"args": []}, "args": ["x"]}}}"#;
    let err = parse_str(text, &Options::new()).unwrap_err();
    let report = err.report().unwrap();
    assert!(
        report.find("context_servers.a.command").is_some(),
        "{report}"
    );
    assert!(
        report.find("context_servers.a.command.args").is_some(),
        "{report}"
    );
}

#[test]
fn opencode_local_and_remote_with_comments_and_trailing_commas() {
    let loaded = load("opencode/opencode.jsonc");
    let r = mcp_stack_config::resolve(&loaded.config, &env).unwrap();
    let (command, args, envs) = stdio(&r, "everything");
    assert_eq!(command, "npx");
    assert_eq!(args, ["-y", "@modelcontextprotocol/server-everything"]);
    // OpenCode's `{env:NAME}`.
    assert_eq!(envs["MY_ENV_VAR"], "mine");
    let (url, _, headers) = http(&r, "context7");
    assert_eq!(url, "https://mcp.context7.com/mcp");
    assert_eq!(headers["CONTEXT7_API_KEY"], "c7-key");
    // OpenCode's `timeout` is how long it waits for the server's tools.
    assert_eq!(
        r.servers["context7"].handshake_timeout,
        Duration::from_millis(10000)
    );
    assert!(r.disabled.contains("off"));
    // A command list and `args` both is an error; an empty list too.
    let text = r#"{"mcp": {"a": {"type": "local", "command": ["x"], "args": ["y"]}, "b": {"type": "local", "command": []}}}"#;
    let err = parse_str(text, &Options::new()).unwrap_err();
    let report = err.report().unwrap();
    assert!(report.find("mcp.a.command").is_some(), "{report}");
    assert_eq!(
        report.find("mcp.b.command").unwrap().message,
        "must start with the program to run"
    );
}

#[test]
fn opencode_servers_layout_with_disabled() {
    let loaded = load("opencode-servers/opencode.json");
    assert_eq!(loaded.config.location("my-server"), "mcp.servers.my-server");
    let r = mcp_stack_config::resolve(&loaded.config, &env).unwrap();
    assert_eq!(stdio(&r, "my-server").1, ["-y", "example-mcp-server"]);
    assert!(r.disabled.contains("paused"));
}

#[test]
fn cursor_env_file_is_read_not_warned_about() {
    let loaded = load("cursor-envfile/.cursor/mcp.json");
    let r = mcp_stack_config::resolve(&loaded.config, &env).unwrap();
    let (_, args, envs) = stdio(&r, "with-env-file");
    assert_eq!(args[3], fixture("cursor-envfile").display().to_string());
    assert_eq!(envs["CURSOR_TOKEN"], "from-env-file");
    assert_eq!(envs["EXPLICIT"], "yes");
    // A missing file is an error with its path.
    let text = r#"{"mcpServers": {"a": {"command": "x", "envFile": "/nonexistent/.env"}}}"#;
    let loaded = parse_str(text, &Options::new().format(Format::Cursor)).unwrap();
    let err = mcp_stack_config::resolve(&loaded.config, &env).unwrap_err();
    let p = &err.report().unwrap().problems[0];
    assert_eq!(p.path, "mcpServers.a.envFile");
    assert!(
        p.message
            .starts_with("cannot read the env file /nonexistent/.env"),
        "{p}"
    );
}

#[test]
fn secrets_from_inputs_and_env_files_stay_out_of_debug() {
    let loaded = load("vscode-inputs/.vscode/mcp.json");
    let inputs = vscode_inputs();
    let r = Resolve::new(&env)
        .inputs(&inputs)
        .run(&loaded.config)
        .unwrap();
    let debug = format!("{r:?}");
    assert!(!debug.contains("pplx-123"), "{debug}");
    assert!(!debug.contains("/srv/data"), "{debug}");
    // An error about an input never quotes the value given.
    let mut bad = vscode_inputs();
    bad.insert("region".into(), Secret::new("s3cret-region"));
    let err = Resolve::new(&env)
        .inputs(&bad)
        .run(&loaded.config)
        .unwrap_err();
    assert!(!err.to_string().contains("s3cret-region"), "{err}");
    assert!(matches!(err, ConfigError::Unresolved { .. }));
}

/// Tool filters, from every format that has them, are part of the server:
/// a changed filter is a changed fingerprint; the order written is not.
#[test]
fn tool_filters_of_every_format_enter_the_fingerprint() {
    let fp = |text: &str, format: Format| {
        let loaded = parse_str(text, &Options::new().format(format)).unwrap();
        let r = mcp_stack_config::resolve(&loaded.config, &env).unwrap();
        (r.servers["a"].fingerprint, r.servers["a"].tools.clone())
    };
    let codex = |tools: &str| {
        fp(
            &format!("[mcp_servers.a]\ncommand = \"x\"\n{tools}"),
            Format::Codex,
        )
    };
    let gemini = |tools: &str| {
        fp(
            &format!(r#"{{"mcpServers": {{"a": {{"command": "x"{tools}}}}}}}"#),
            Format::GeminiCli,
        )
    };
    let windsurf = |tools: &str| {
        fp(
            &format!(r#"{{"mcpServers": {{"a": {{"command": "x"{tools}}}}}}}"#),
            Format::Windsurf,
        )
    };
    let (open, filter) = codex("");
    assert!(filter.allows("anything"));
    let (only_a, filter) = codex("enabled_tools = [\"a\", \"b\"]");
    assert!(filter.allows("a") && !filter.allows("c"));
    let (not_b, filter) = codex("disabled_tools = [\"b\"]");
    assert!(!filter.allows("b") && filter.allows("a"));
    assert_ne!(open, only_a);
    assert_ne!(open, not_b);
    assert_ne!(only_a, not_b);
    assert_eq!(only_a, codex("enabled_tools = [\"b\", \"a\"]").0);
    // Gemini's includeTools is Codex's enabled_tools; excludeTools its disabled_tools.
    assert_eq!(gemini(r#", "includeTools": ["a", "b"]"#).0, only_a);
    assert_eq!(gemini(r#", "excludeTools": ["b"]"#).0, not_b);
    // Windsurf's disabledTools too.
    assert_eq!(windsurf(r#", "disabledTools": ["b"]"#).0, not_b);
}
