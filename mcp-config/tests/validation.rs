#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! Each validation rule, with its exact path and message.

use mcp_stack_config::{
    ConfigError, Format, Options, Problem, Severity, is_mcp_config_record, parse_str, validate,
};
use serde_json::{Value, json};

const P: &str = "mcpServers.remote-tools";

fn problems(record: Value) -> Vec<(Severity, String, String)> {
    is_mcp_config_record(&record, P)
        .into_iter()
        .map(
            |Problem {
                 severity,
                 path,
                 message,
             }| (severity, path, message),
        )
        .collect()
}

fn one_error(record: Value, path: &str, message: &str) {
    assert_eq!(
        problems(record),
        vec![(Severity::Error, path.to_owned(), message.to_owned())]
    );
}

#[test]
fn not_an_object() {
    one_error(
        json!("npx server"),
        P,
        "must be an object (a server record with `command` or `url`), found a string",
    );
}

#[test]
fn both_command_and_url() {
    one_error(
        json!({"command": "node", "url": "https://h/mcp"}),
        P,
        "has both `command` and `url`; a server is either a local process (`command`) or a remote endpoint (`url`), not both",
    );
}

#[test]
fn neither_command_nor_url() {
    one_error(
        json!({"args": ["x"]}),
        P,
        "has neither `command` nor `url`; add `command` to run a local server or `url` to reach a remote one",
    );
}

#[test]
fn unknown_transport() {
    one_error(
        json!({"url": "https://h/mcp", "transport": "websocket"}),
        "mcpServers.remote-tools.transport",
        "unknown transport `websocket`; use stdio, streamable-http, http or sse",
    );
    one_error(
        json!({"url": "https://h/mcp", "type": "grpc"}),
        "mcpServers.remote-tools.type",
        "unknown transport `grpc`; use stdio, streamable-http, http or sse",
    );
}

#[test]
fn transport_that_contradicts_command_or_url() {
    one_error(
        json!({"url": "https://h/mcp", "type": "stdio"}),
        "mcpServers.remote-tools.type",
        "is `stdio` but there is no `command`",
    );
    one_error(
        json!({"command": "node", "transport": "sse"}),
        "mcpServers.remote-tools.transport",
        "is `sse` but there is no `url`",
    );
}

#[test]
fn args_not_a_list_of_strings() {
    one_error(
        json!({"command": "node", "args": "a b"}),
        "mcpServers.remote-tools.args",
        "must be a list of strings, found a string",
    );
    one_error(
        json!({"command": "node", "args": ["a", 2]}),
        "mcpServers.remote-tools.args[1]",
        "must be a string, found a number",
    );
}

#[test]
fn url_not_http() {
    one_error(
        json!({"url": "ftp://h/mcp"}),
        "mcpServers.remote-tools.url",
        "must be an http:// or https:// URL",
    );
    one_error(
        json!({"url": "https:///mcp"}),
        "mcpServers.remote-tools.url",
        "has no host; write it as https://host/path",
    );
}

#[test]
fn header_values_with_line_breaks_or_bad_bytes() {
    one_error(
        json!({"url": "https://h/mcp", "headers": {"Authorization": "Bearer x\r\nX-Evil: 1"}}),
        "mcpServers.remote-tools.headers.Authorization",
        "header value contains a line break (CR or LF), which would split the HTTP request; remove it",
    );
    one_error(
        json!({"url": "https://h/mcp", "headers": {"X-A": "a\u{0}b"}}),
        "mcpServers.remote-tools.headers.X-A",
        "header value contains a control character; remove it",
    );
    one_error(
        json!({"url": "https://h/mcp", "headers": {"X-A": "café"}}),
        "mcpServers.remote-tools.headers.X-A",
        "header value contains a non-ASCII character; header values must be ASCII",
    );
}

#[test]
fn header_names_that_are_not_tokens() {
    one_error(
        json!({"url": "https://h/mcp", "headers": {"Bad Header": "v"}}),
        "mcpServers.remote-tools.headers.Bad Header",
        "header name is not a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only)",
    );
    one_error(
        json!({"url": "https://h/mcp", "headers": {"X\r\nY": "v"}}),
        "mcpServers.remote-tools.headers.X\\r\\nY",
        "header name is not a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only)",
    );
    one_error(
        json!({"url": "https://h/mcp", "headers": {"": "v"}}),
        "mcpServers.remote-tools.headers.",
        "header name is empty",
    );
    one_error(
        json!({"url": "https://h/mcp", "headers": {"X-A": "1", "x-a": "2"}}),
        "mcpServers.remote-tools.headers.x-a",
        "repeats the header `X-A` (header names are case-insensitive); keep one",
    );
    one_error(
        json!({"url": "https://h/mcp", "bearer_token_env_var": "T", "http_headers": {"authorization": "x"}}),
        "mcpServers.remote-tools.http_headers.authorization",
        "repeats the header `Authorization` (header names are case-insensitive); keep one",
    );
}

#[test]
fn zero_or_negative_timeouts() {
    one_error(
        json!({"command": "node", "timeoutMs": 0}),
        "mcpServers.remote-tools.timeoutMs",
        "must be greater than zero, found 0",
    );
    one_error(
        json!({"command": "node", "handshakeTimeoutMs": -5}),
        "mcpServers.remote-tools.handshakeTimeoutMs",
        "must be greater than zero, found -5",
    );
    one_error(
        json!({"command": "node", "tool_timeout_sec": "60"}),
        "mcpServers.remote-tools.tool_timeout_sec",
        "must be a number of seconds, found a string",
    );
    one_error(
        json!({"command": "node", "requestTimeoutMs": 1e300}),
        "mcpServers.remote-tools.requestTimeoutMs",
        "is too large",
    );
}

#[test]
fn values_of_the_wrong_type() {
    one_error(
        json!({"command": 5}),
        "mcpServers.remote-tools.command",
        "must be a string, found a number",
    );
    one_error(
        json!({"command": "node", "env": ["A=1"]}),
        "mcpServers.remote-tools.env",
        "must be an object of variable names to string values, found a list",
    );
    one_error(
        json!({"command": "node", "env": {"PORT": 8080}}),
        "mcpServers.remote-tools.env.PORT",
        "must be a string, found a number",
    );
    one_error(
        json!({"command": "node", "supportsParallelToolCalls": "yes"}),
        "mcpServers.remote-tools.supportsParallelToolCalls",
        "must be true or false, found a string",
    );
    one_error(
        json!({"url": "https://h", "headers": {"X": null}}),
        "mcpServers.remote-tools.headers.X",
        "must be a string, found null",
    );
    one_error(
        json!({"url": "https://h", "bearer_token_env_var": "not a name"}),
        "mcpServers.remote-tools.bearer_token_env_var",
        "must name an environment variable (letters, digits and `_`, not starting with a digit)",
    );
    one_error(
        json!({"command": "node", "env": {"A=B": "x"}}),
        "mcpServers.remote-tools.env.A=B",
        "environment variable name must be non-empty and contain no `=` or NUL",
    );
    one_error(
        json!({"command": " "}),
        "mcpServers.remote-tools.command",
        "must not be empty",
    );
}

#[test]
fn the_same_setting_twice() {
    one_error(
        json!({"command": "node", "enabled": true, "disabled": true}),
        "mcpServers.remote-tools.enabled",
        "`disabled` already sets whether the server is enabled; keep one of the two",
    );
}

#[test]
fn protocol_version_pins() {
    assert!(problems(json!({"command": "n", "protocolVersion": "2025-06-18"})).is_empty());
    assert!(problems(json!({"command": "n", "protocol_version": "legacy"})).is_empty());
    assert!(problems(json!({"command": "n", "protocolVersion": "auto"})).is_empty());
    one_error(
        json!({"command": "n", "protocolVersion": "2025-01-01"}),
        "mcpServers.remote-tools.protocolVersion",
        "unknown protocol version `2025-01-01`; use one of 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28, handshake, discover, auto",
    );
}

#[test]
fn bad_templates() {
    one_error(
        json!({"command": "node", "env": {"K": "${UNCLOSED"}}),
        "mcpServers.remote-tools.env.K",
        "`${` at character 1 is not closed by `}` (write `$${` for a literal `${`)",
    );
    one_error(
        json!({"command": "node", "args": ["--x=${9LIVES}"]}),
        "mcpServers.remote-tools.args[0]",
        "`${…}` at character 5 does not hold a variable name (letters, digits and `_`, not starting with a digit; `${NAME:-default}` for a default)",
    );
}

#[test]
fn a_misspelt_key_gets_a_did_you_mean() {
    assert_eq!(
        problems(json!({"command": "node", "arsg": ["x"]})),
        vec![(
            Severity::Warning,
            "mcpServers.remote-tools.arsg".to_owned(),
            "unknown key `arsg` is ignored; did you mean `args`?".to_owned()
        )]
    );
    let oauth = problems(json!({"url": "https://h", "oauth": {"scoeps": ["a"]}}));
    assert!(
        oauth
            .iter()
            .any(|(_, _, m)| m.ends_with("did you mean `scopes`?")),
        "{oauth:?}"
    );
}

#[test]
fn unknown_and_ignored_keys_are_warnings() {
    assert_eq!(
        problems(json!({"command": "node", "autoRestart": true})),
        vec![(
            Severity::Warning,
            "mcpServers.remote-tools.autoRestart".to_owned(),
            "unknown key `autoRestart` is ignored".to_owned()
        )]
    );
    assert_eq!(
        problems(json!({"url": "https://h", "env": {}})),
        vec![(
            Severity::Warning,
            "mcpServers.remote-tools.env".to_owned(),
            "is ignored: only stdio servers (with `command`) use it".to_owned()
        )]
    );
    assert_eq!(
        problems(json!({"command": "n", "headers": {}})),
        vec![(
            Severity::Warning,
            "mcpServers.remote-tools.headers".to_owned(),
            "is ignored: only HTTP servers (with `url`) use it".to_owned()
        )]
    );
    // `envFile` is read (VS Code, Cursor), for stdio servers only.
    assert_eq!(problems(json!({"command": "n", "envFile": ".env"})), vec![]);
    assert_eq!(
        problems(json!({"url": "https://h/mcp", "envFile": ".env"})),
        vec![(
            Severity::Warning,
            "mcpServers.remote-tools.envFile".to_owned(),
            "is ignored: only stdio servers (with `command`) use it".to_owned()
        )]
    );
}

#[test]
fn strict_mode_makes_warnings_errors() {
    let doc = json!({"mcpServers": {"a": {"command": "node", "autoRestart": true}}});
    let lax = validate(&doc, Format::ClaudeDesktop, false);
    assert!(!lax.has_errors() && lax.problems.len() == 1);
    let strict = validate(&doc, Format::ClaudeDesktop, true);
    assert!(strict.has_errors());
    assert_eq!(strict.problems[0].path, "mcpServers.a.autoRestart");

    let text = doc.to_string();
    assert!(parse_str(&text, &Options::new()).is_ok());
    let err = parse_str(&text, &Options::new().strict(true)).unwrap_err();
    assert!(matches!(err, ConfigError::Invalid { .. }));
}

#[test]
fn server_names() {
    let doc = json!({"mcpServers": {"my server": {"command": "n"}, "": {"command": "n"}, "ok_name-1": {"command": "n"}}});
    let r = validate(&doc, Format::Cursor, false);
    assert_eq!(r.problems.len(), 2, "{r}");
    assert_eq!(
        r.find("mcpServers").unwrap().message,
        "has a server with an empty name"
    );
    assert_eq!(
        r.find("mcpServers.my server").unwrap().message,
        "server name `my server` may only use letters, digits, `_` and `-`"
    );
}

#[test]
fn document_level_problems() {
    let r = validate(&json!([1]), Format::Cursor, false);
    assert_eq!(r.problems[0].path, "");
    assert_eq!(
        r.problems[0].message,
        "the file must hold an object (a table of settings), found a list"
    );
    let r = validate(&json!({"servers": []}), Format::VsCode, false);
    assert_eq!(r.problems[0].path, "servers");
    assert_eq!(
        r.problems[0].message,
        "must be an object mapping server names to server records, found a list"
    );
    let r = validate(
        &json!({"agent": {"toolCallTimeoutMs": 0}, "mcpServers": {}}),
        Format::OpenClawJson,
        false,
    );
    assert_eq!(r.problems[0].path, "agent.toolCallTimeoutMs");
    assert_eq!(r.problems[0].message, "must be greater than zero, found 0");
}

#[test]
fn every_problem_is_reported_at_once() {
    let doc = json!({"mcpServers": {
        "a": {"command": "n", "args": [1], "timeoutMs": -1},
        "b": {"url": "ws://x", "headers": {"A": "x\ny"}},
    }});
    let r = validate(&doc, Format::Cursor, false);
    let paths: Vec<_> = r.problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "mcpServers.a.args[0]",
            "mcpServers.a.timeoutMs",
            "mcpServers.b.headers.A",
            "mcpServers.b.url"
        ]
    );
    assert_eq!(r.lines().last().unwrap(), "4 error(s), 0 warning(s)");
    assert_eq!(
        r.lines()[0],
        "error: mcpServers.a.args[0]: must be a string, found a number"
    );
}

#[test]
fn toml_records_use_toml_paths() {
    let text = "[mcp_servers.x]\ncommand = \"n\"\ntimeout_ms = 0\n";
    let err = parse_str(text, &Options::new().format(Format::OpenClawToml)).unwrap_err();
    let report = err.report().unwrap();
    assert_eq!(report.problems[0].path, "mcp_servers.x.timeout_ms");
}
