//! A hostile server's text on the terminal, end to end: the testkit's
//! `escape-text` misbehaviour puts escape sequences (screen clear, window
//! title, OSC 52 clipboard write, C1 controls, a carriage return) in its
//! name, a tool, a JSON-RPC error, a log notification, a progress message
//! and its stderr; `print-env` is a server with a tool that shows its whole
//! environment. Whatever `mcp` prints — text, `--json`, `--trace`,
//! `--verbose`, errors and diagnoses — carries no control byte from the
//! server and none of the secrets the user started it with, while the text
//! around them is still shown.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::{MCP, mcp, text};
use std::process::{Command, Output};

use mcp_stack_testkit::{ESCAPE_TEXT, ESCAPE_TOOL, PRINT_ENV_TOOL};
use serde_json::Value;

/// Secrets handed to the server with `--env`: one plain, one with the
/// characters JSON escapes.
const API_KEY: &str = "s3cr3t-value";
const DB_PASSWORD: &str = r#"pa"ss\word-42"#;

/// The first byte a terminal would act on: a C0 control other than newline
/// and tab (ESC, BEL, CR …), DEL, or a C1 control (U+0080–U+009F, in UTF-8
/// `0xC2 0x80..=0x9F`).
fn control_byte(bytes: &[u8]) -> Option<(usize, String)> {
    bytes.iter().enumerate().find_map(|(i, &b)| {
        let c0 = (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f;
        let c1 = b == 0xc2 && bytes.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n));
        (c0 || c1).then(|| {
            let from = i.saturating_sub(40);
            let to = (i + 40).min(bytes.len());
            (i, String::from_utf8_lossy(&bytes[from..to]).into_owned())
        })
    })
}

/// Neither stream has a control byte.
fn assert_clean(o: &Output) {
    for (name, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        if let Some((at, around)) = control_byte(bytes) {
            panic!(
                "a control byte reached {name} at {at}: {around:?}\n--- all of it:\n{}",
                text(o)
            );
        }
    }
}

/// What the filter shows of [`ESCAPE_TEXT`]: the visible escapes.
fn escaped_visibly(t: &str) -> bool {
    t.contains("esc-start\\x1b[2J\\x1b[H\\x1b]0;pwned\\x07\\x1b]52;c;")
        && t.contains("\\x9b31mred\\x9d0;c1-title\\x9c\\r\\x7f\\x85esc-end")
}

fn escape_server() -> String {
    format!("{MCP} demo-server --misbehave escape-text")
}

#[test]
fn probe_text_shows_the_hostile_text_without_its_controls() {
    let out = mcp(&["probe", "--stdio", &escape_server()]);
    let t = text(&out);
    assert_clean(&out);
    // The server's name, the tool list, and the failing call (the tool the
    // probe picks answers a JSON-RPC error): its message, the diagnosis with
    // the error's data, and the server's stderr.
    assert!(t.contains("escape-server esc-start"), "{t}");
    assert!(t.contains("the tool failed: esc-start"), "{t}");
    assert!(t.contains("server says:"), "{t}");
    assert!(t.contains("stderr esc-start"), "{t}");
    assert!(escaped_visibly(&t), "{t}");
}

#[test]
fn probe_json_is_the_servers_data_escaped() {
    let out = mcp(&["probe", "--json", "--stdio", &escape_server()]);
    assert_clean(&out);
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    // The data is the server's, exactly: the escapes are JSON's own.
    assert_eq!(
        report["server"]["serverInfo"]["name"],
        format!("escape-server {ESCAPE_TEXT}")
    );
    assert_eq!(report["tools"][0]["name"], ESCAPE_TOOL);
    assert_eq!(
        report["tools"][0]["description"],
        format!("description {ESCAPE_TEXT}")
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\\u009b31mred"), "{stdout}");
}

#[test]
fn trace_shows_every_message_without_controls() {
    let out = mcp(&["probe", "--trace", "--stdio", &escape_server()]);
    let t = text(&out);
    assert_clean(&out);
    // The log notification before the answer, and the error, as JSON text.
    assert!(t.contains("\"method\":\"notifications/message\""), "{t}");
    assert!(
        t.contains("\"message\":\"the tool failed: esc-start\\u001b[2J"),
        "{t}"
    );
    assert!(
        t.contains("\\u009d0;c1-title\\u009c\\r\\u007f\\u0085esc-end"),
        "{t}"
    );
    // The server's stderr, traced as it comes.
    assert!(t.contains("stderr│ stderr esc-start"), "{t}");
}

#[test]
fn tools_json_and_text_show_names_and_descriptions_safely() {
    let out = mcp(&["tools", "--json", "--stdio", &escape_server()]);
    assert_clean(&out);
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(tools[0]["title"], ESCAPE_TEXT);

    let out = mcp(&["tools", "--stdio", &escape_server()]);
    let t = text(&out);
    assert_clean(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("esc\\x1b[31m_tool\\x9b0m"), "{t}");
    assert!(t.contains("description esc-start"), "{t}");
}

#[test]
fn a_failing_call_shows_the_servers_error_safely() {
    for extra in [&[][..], &["--trace"], &["--json"]] {
        let mut args = vec!["call", "--stdio"];
        let server = escape_server();
        args.push(&server);
        args.extend_from_slice(extra);
        args.push(ESCAPE_TOOL);
        let out = mcp(&args);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{t}");
        assert_clean(&out);
        assert!(t.contains("the tool failed: esc-start"), "{extra:?}: {t}");
    }
    // With the client's own logs too.
    let out = mcp(&[
        "--verbose",
        "call",
        "--stdio",
        &escape_server(),
        ESCAPE_TOOL,
    ]);
    assert_clean(&out);
    assert!(text(&out).contains("the tool failed: esc-start"));
}

#[test]
fn progress_and_results_of_a_call_are_shown_safely() {
    let hostile_args = r#"{"text": "fine \u001b]52;c;aGk=\u0007 \u009b2J"}"#;
    let out = mcp(&[
        "call",
        "--json",
        "--stdio",
        &escape_server(),
        "echo",
        "--args",
        hostile_args,
    ]);
    assert_clean(&out);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        result["content"][0]["text"],
        "fine \u{1b}]52;c;aGk=\u{7} \u{9b}2J"
    );

    let out = mcp(&[
        "call",
        "--progress",
        "--stdio",
        &escape_server(),
        "echo",
        "--args",
        hostile_args,
    ]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert_clean(&out);
    assert!(t.contains("progress esc-start"), "{t}");
    assert!(t.contains("fine \\x1b]52;c;aGk=\\x07 \\x9b2J"), "{t}");
}

fn print_env_server() -> String {
    format!("{MCP} demo-server --misbehave print-env")
}

fn env_args(args: &[&str]) -> Vec<String> {
    let mut all: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
    all.extend([
        "--env".to_owned(),
        format!("API_KEY={API_KEY}"),
        "--env".to_owned(),
        format!("DB_PASSWORD={DB_PASSWORD}"),
    ]);
    all
}

fn mcp_owned(args: &[String]) -> Output {
    mcp(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// No form of the secrets shows: as they are, or as JSON text has them.
fn assert_no_secret(o: &Output) {
    let t = text(o);
    let json_form = serde_json::to_string(DB_PASSWORD).unwrap();
    let json_form = json_form.trim_matches('"');
    for secret in [API_KEY, DB_PASSWORD, json_form] {
        assert!(!t.contains(secret), "{secret:?} was printed:\n{t}");
    }
}

#[test]
fn the_probe_does_not_call_a_tool_that_shows_the_environment() {
    let server = print_env_server();
    for extra in [&[][..], &["--json"], &["--trace"]] {
        let mut args = vec!["probe", "--stdio", &server];
        args.extend_from_slice(extra);
        let out = mcp_owned(&env_args(&args));
        let t = text(&out);
        assert_no_secret(&out);
        assert!(t.contains(PRINT_ENV_TOOL), "{extra:?}: {t}");
        assert!(
            !t.contains(&format!("{PRINT_ENV_TOOL} →")),
            "{extra:?}: {t}"
        );
    }
}

#[test]
fn secrets_are_scrubbed_from_what_a_tool_returns() {
    let server = print_env_server();
    for extra in [&[][..], &["--json"], &["--trace"], &["--full"]] {
        // The whole environment.
        let mut args = vec!["call", "--stdio", &server];
        args.extend_from_slice(extra);
        args.push(PRINT_ENV_TOOL);
        let out = mcp_owned(&env_args(&args));
        let t = text(&out);
        assert!(out.status.success(), "{t}");
        assert_no_secret(&out);
        assert!(t.contains("API_KEY=<redacted>"), "{extra:?}: {t}");
        assert!(t.contains("DB_PASSWORD=<redacted>"), "{extra:?}: {t}");
        // One variable, by name.
        let mut args = vec!["call", "--stdio", &server];
        args.extend_from_slice(extra);
        args.extend(["get_env", "--args", r#"{"name": "DB_PASSWORD"}"#]);
        let out = mcp_owned(&env_args(&args));
        assert!(out.status.success(), "{}", text(&out));
        assert_no_secret(&out);
        assert!(text(&out).contains("<redacted>"), "{}", text(&out));
    }
    // The probe, told to call it, shows it scrubbed too.
    let out = mcp_owned(&env_args(&[
        "probe",
        "--json",
        "--stdio",
        &server,
        "--call",
        "get_env",
        "--args",
        r#"{"name": "API_KEY"}"#,
    ]));
    assert_no_secret(&out);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["call"]["content"][0]["text"], "<redacted>");
}

#[test]
fn a_configs_secrets_are_scrubbed_through_the_runtime_too() {
    let dir = std::env::temp_dir().join(format!("mcp-cli-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("settings.json");
    let env = serde_json::json!({"API_KEY": API_KEY, "DB_PASSWORD": DB_PASSWORD});
    let file = serde_json::json!({"mcpServers": {"s": {
        "command": MCP,
        "args": ["demo-server", "--misbehave", "print-env"],
        "env": env
    }}});
    std::fs::write(&config, file.to_string()).unwrap();
    let config = config.to_str().unwrap();
    for extra in [&[][..], &["--json"], &["--trace"]] {
        let mut args = vec!["call", "--config", config];
        args.extend_from_slice(extra);
        args.push("s__printEnv");
        let out = mcp(&args);
        assert!(out.status.success(), "{}", text(&out));
        assert_no_secret(&out);
        assert!(text(&out).contains("API_KEY=<redacted>"), "{}", text(&out));
    }
    let out = mcp(&["probe", "--config", config]);
    assert_no_secret(&out);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The demo server over streamable HTTP, killed when dropped.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl HttpServer {
    fn start(extra: &[&str]) -> HttpServer {
        use std::io::BufRead as _;
        let mut child = Command::new(MCP)
            .args(["demo-server", "--http", "127.0.0.1:0"])
            .args(extra)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start the demo server");
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let line = lines.next().unwrap().unwrap();
        let url = line
            .strip_prefix("mcp-testkit: listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line}"))
            .to_owned();
        HttpServer { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn over_http_too() {
    let server = HttpServer::start(&["--misbehave", "escape-text"]);
    for extra in [&["--trace"][..], &["--json"]] {
        let mut args = vec!["probe", "--url", &server.url];
        args.extend_from_slice(extra);
        let out = mcp(&args);
        assert_clean(&out);
        assert!(text(&out).contains("esc-start"), "{}", text(&out));
    }
    let out = mcp(&["call", "--url", &server.url, ESCAPE_TOOL]);
    assert_eq!(out.status.code(), Some(1));
    assert_clean(&out);
    assert!(
        text(&out).contains("the tool failed: esc-start"),
        "{}",
        text(&out)
    );
}
