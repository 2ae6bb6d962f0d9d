//! What the CLI's end-to-end tests share: running the built `mcp` binary.
#![allow(dead_code, unreachable_pub)]

use std::process::{Command, Output};

/// The `mcp` binary cargo built for these tests.
pub const MCP: &str = env!("CARGO_BIN_EXE_mcp");

/// Runs `mcp ARGS…` without colours and waits for it.
pub fn mcp(args: &[&str]) -> Output {
    Command::new(MCP)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run mcp")
}

/// Everything a run printed: stdout, then stderr.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
