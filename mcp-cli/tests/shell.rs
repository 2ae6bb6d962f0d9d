//! `mcp` on a terminal: `demo-server` a first-class command with help of
//! its own, shell completions and a man page from the same definitions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use common::{MCP, mcp, text};

fn stdout(args: &[&str]) -> String {
    let o = mcp(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn demo_server_is_listed_and_has_help_of_its_own() {
    let help = stdout(&["--help"]);
    assert!(help.contains("demo-server"), "{help}");
    for args in [&["demo-server", "--help"][..], &["help", "demo-server"]] {
        let own = stdout(args);
        assert!(own.contains("Usage: mcp demo-server"), "{own}");
        // Its own options, not a pointer back to itself.
        assert!(
            own.contains("--misbehave") && own.contains("--http ADDR"),
            "{own}"
        );
        assert!(!own.contains("see `mcp demo-server --help`"), "{own}");
    }
}

#[test]
fn the_demo_server_serves_the_readme_examples_as_a_command() {
    let stdio = format!("{MCP} demo-server");
    let out = stdout(&["call", "--stdio", &stdio, "add", "a=2", "b=3"]);
    assert!(out.contains('5'), "{out}");
    let out = stdout(&["tools", "--stdio", &stdio]);
    assert!(out.contains("echo(text: string)"), "{out}");
}

#[test]
fn completions_cover_every_shell_and_command() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let script = stdout(&["completions", shell]);
        for word in ["tools", "call", "demo-server", "completions", "json"] {
            assert!(script.contains(word), "{shell} completions lack {word}");
        }
    }
    // The bash script is valid bash.
    let script = stdout(&["completions", "bash"]);
    if let Ok(o) = std::process::Command::new("bash")
        .args(["-n", "-c", &script])
        .output()
    {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let o = mcp(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_man_page_is_roff_from_the_same_definitions() {
    let page = stdout(&["man"]);
    assert!(page.contains(".TH mcp 1"), "{page}");
    for word in ["probe", "tools", "call", "completions"] {
        assert!(page.contains(word), "the man page lacks {word}");
    }
    assert!(page.contains("demo\\-server"), "{page}");
}
