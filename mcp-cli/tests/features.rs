//! `mcp resources`, `read`, `prompts`, `prompt`, `complete`, `listen` and
//! `call --progress`, end to end against the built-in demo server (stdio)
//! and its HTTP mode.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::{MCP, mcp};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn all(o: &Output) -> String {
    format!("{}{}", stdout(o), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn resources_read_prompts_prompt_and_complete_on_the_demo_server() {
    let o = mcp(&["resources"]);
    assert!(o.status.success(), "{}", all(&o));
    let out = stdout(&o);
    assert!(
        out.contains("test://text/1") && out.contains("test://blob/1"),
        "{out}"
    );
    assert!(
        out.contains("test://greeting/{name}") && out.contains("(template: name)"),
        "{out}"
    );

    let o = mcp(&["read", "test://greeting/Ada"]);
    assert!(o.status.success(), "{}", all(&o));
    assert!(stdout(&o).contains("Hello, Ada!"), "{}", all(&o));

    // A blob is summarized, and written as bytes with --out.
    let o = mcp(&["read", "test://blob/1"]);
    assert!(stdout(&o).contains("[8 bytes"), "{}", all(&o));
    let file = std::env::temp_dir().join(format!("mcp-blob-{}", std::process::id()));
    let o = mcp(&["read", "test://blob/1", "--out", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", all(&o));
    assert_eq!(std::fs::read(&file).unwrap().len(), 8);
    std::fs::remove_file(&file).unwrap();
    // An unknown resource fails, naming it.
    let o = mcp(&["read", "test://nothing/here"]);
    assert!(!o.status.success());
    assert!(all(&o).contains("test://nothing/here"), "{}", all(&o));

    let o = mcp(&["prompts"]);
    assert!(o.status.success(), "{}", all(&o));
    assert!(stdout(&o).contains("review(code, [style])"), "{}", all(&o));

    let o = mcp(&["prompt", "greeting", "--args", r#"{"name": "Ada"}"#]);
    assert!(o.status.success(), "{}", all(&o));
    assert!(stdout(&o).contains("user: Hello, Ada!"), "{}", all(&o));
    // A missing required argument is refused before anything is sent.
    let o = mcp(&["prompt", "review", "--args", r#"{"style": "concise"}"#]);
    assert!(!o.status.success());
    assert!(all(&o).contains("`code` is required"), "{}", all(&o));

    // Completion, with a context argument narrowing it.
    let o = mcp(&[
        "complete",
        "--prompt",
        "scaffold",
        "--arg",
        "language",
        "--context",
        r#"{"framework": "spring"}"#,
    ]);
    assert!(o.status.success(), "{}", all(&o));
    let printed = stdout(&o);
    let values: Vec<&str> = printed.lines().map(str::trim).collect();
    assert_eq!(values, ["java", "kotlin"], "{}", all(&o));
    let o = mcp(&[
        "complete",
        "--resource",
        "test://greeting/{name}",
        "--arg",
        "name",
        "--value",
        "a",
        "--json",
    ]);
    let completion: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        completion["values"].as_array().unwrap().iter().all(|v| v
            .as_str()
            .unwrap()
            .to_lowercase()
            .starts_with('a')),
        "{completion}"
    );

    // The probe reports what the server offers beside tools.
    let o = mcp(&["probe"]);
    assert!(
        all(&o).contains("features") && all(&o).contains("resources"),
        "{}",
        all(&o)
    );
}

#[test]
fn call_progress_prints_each_step_when_not_a_terminal() {
    let o = mcp(&[
        "call",
        "progress",
        "--args",
        r#"{"steps": 3}"#,
        "--progress",
    ]);
    assert!(o.status.success(), "{}", all(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    for step in 1..=3 {
        assert!(err.contains(&format!("progress {step}/3")), "{err}");
    }
}

/// Without a terminal nobody can answer: `mcp call` declines the demo
/// server's elicitations (form and URL mode) and the tool says so, in both
/// eras. It declares no sampling or roots, so those tools are refused.
#[test]
fn call_ask_user_without_a_terminal_declines() {
    let modern = format!("{MCP} demo-server --era modern");
    for target in [None, Some(modern.as_str())] {
        for mode in ["form", "url"] {
            let args = format!(r#"{{"mode": "{mode}"}}"#);
            let mut argv = vec!["call"];
            if let Some(server) = target {
                argv.extend(["--stdio", server]);
            }
            argv.extend(["ask_user", "--args", &args]);
            let o = mcp(&argv);
            assert!(o.status.success(), "{target:?} {mode}: {}", all(&o));
            assert!(
                stdout(&o).contains("the user answered decline"),
                "{target:?} {mode}: {}",
                all(&o)
            );
        }
        let mut argv = vec!["call"];
        if let Some(server) = target {
            argv.extend(["--stdio", server]);
        }
        argv.extend(["sample", "--args", r#"{"prompt": "hi"}"#]);
        let o = mcp(&argv);
        assert!(
            all(&o).contains("did not declare the sampling capability"),
            "{target:?}: {}",
            all(&o)
        );
    }
}

/// The HTTP demo server on 127.0.0.1, killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(MCP)
            // Both eras, so the modern listen has a modern server.
            .args(["demo-server", "--http", "127.0.0.1:0", "--era", "dual"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the demo server");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let line = lines.next().unwrap().unwrap();
        let url = line
            .strip_prefix("mcp-testkit: listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line}"))
            .to_owned();
        Server { child, url }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Lines of a child's stream, as they come, through a channel.
fn lines_of(stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits (bounded) for a line containing `needle`.
fn wait_for(rx: &mpsc::Receiver<String>, needle: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return line,
            Ok(_) => continue,
            Err(e) => panic!("no line with {needle:?}: {e}"),
        }
    }
}

#[test]
fn listen_prints_the_updates_of_a_subscribed_resource() {
    for protocol in ["legacy", "modern"] {
        let server = Server::start();
        let mut listener = Command::new(MCP)
            .args([
                "listen",
                "--url",
                &server.url,
                "--protocol",
                protocol,
                "--resource",
                "test://text/1",
                "--for",
                "60",
            ])
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = lines_of(listener.stdout.take().unwrap());
        let err = lines_of(listener.stderr.take().unwrap());
        wait_for(&err, "listening");
        // Another client changes the resource.
        let o = mcp(&[
            "call",
            "--url",
            &server.url,
            "--protocol",
            protocol,
            "touch_resource",
            "--args",
            r#"{"uri": "test://text/1"}"#,
        ]);
        assert!(o.status.success(), "{protocol}: {}", all(&o));
        let line = wait_for(&out, "updated");
        assert!(line.contains("test://text/1"), "{protocol}: {line}");
        let _ = listener.kill();
        let _ = listener.wait();
    }
}

#[test]
fn with_a_config_resources_and_prompts_are_namespaced_and_routed() {
    let config = std::env::temp_dir().join(format!("mcp-two-{}.json", std::process::id()));
    std::fs::write(
        &config,
        format!(
            r#"{{"mcpServers": {{"a": {{"command": "{MCP}", "args": ["demo-server"]}},
                "b": {{"command": "{MCP}", "args": ["demo-server"]}}}}}}"#
        ),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let o = mcp(&["resources", "--config", cfg]);
    assert!(o.status.success(), "{}", all(&o));
    let out = stdout(&o);
    assert!(
        out.contains("a__text-1  test://text/1") && out.contains("b__text-1  test://text/1"),
        "{out}"
    );
    // A URI two servers list is ambiguous; its namespaced names are not.
    let o = mcp(&["read", "test://text/1", "--config", cfg]);
    assert!(!o.status.success());
    assert!(all(&o).contains("a__text-1, b__text-1"), "{}", all(&o));
    let o = mcp(&["read", "b__text-1", "--config", cfg]);
    assert!(o.status.success(), "{}", all(&o));
    assert!(stdout(&o).contains("text resource 1"), "{}", all(&o));
    let o = mcp(&["prompts", "--config", cfg]);
    assert!(
        stdout(&o).contains("a__greeting(name)") && stdout(&o).contains("b__review(code, [style])"),
        "{}",
        all(&o)
    );
    let o = mcp(&[
        "prompt",
        "b__greeting",
        "--args",
        r#"{"name": "Bo"}"#,
        "--config",
        cfg,
    ]);
    assert!(o.status.success(), "{}", all(&o));
    assert!(stdout(&o).contains("Hello, Bo!"), "{}", all(&o));
    std::fs::remove_file(&config).unwrap();
}

#[test]
fn call_task_runs_the_tool_as_a_task_in_each_era_and_prints_its_statuses() {
    let demo = |era: &str| format!("{MCP} demo-server --era {era}");
    for era in ["legacy", "modern"] {
        let o = mcp(&[
            "call",
            "countdown",
            "--args",
            r#"{"polls": 2}"#,
            "--task",
            "--stdio",
            &demo(era),
        ]);
        assert!(o.status.success(), "{era}: {}", all(&o));
        assert!(
            stdout(&o).contains("countdown finished"),
            "{era}: {}",
            all(&o)
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("task task-"), "{era}: {err}");
        assert!(err.contains("working"), "{era}: {err}");
        assert!(err.contains("completed"), "{era}: {err}");
    }
    // A tool that does not run as a task is refused before anything is sent.
    let o = mcp(&["call", "echo", "--args", r#"{"text": "x"}"#, "--task"]);
    assert!(!o.status.success());
    assert!(all(&o).contains("does not run as a task"), "{}", all(&o));
    // A task that fails is an error naming it.
    let o = mcp(&[
        "call",
        "countdown",
        "--args",
        r#"{"polls": 1, "fail": true}"#,
        "--task",
    ]);
    assert!(!o.status.success());
    assert!(
        all(&o).contains("failed: countdown was told to fail"),
        "{}",
        all(&o)
    );
}
