//! `mcp-testkit`: an MCP test server over stdio. Run with `--help` for the flags
//! and `--list-misbehaviours` for the ways it can break on purpose.

use std::process::ExitCode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned());
    mcp_stack_testkit::run(args).await
}
