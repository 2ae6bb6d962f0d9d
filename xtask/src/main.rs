//! Project tasks, run with `cargo xtask <task>`.
//!
//! ```text
//! cargo xtask bench codec [--mb N] [--iters K] [--seed S]
//! cargo xtask bench stdio [--n N] [--n-inflight N] [--rounds K] [--server testkit|fast|both]
//! cargo xtask bench http [--n N] [--n-inflight N] [--rounds K] [--answers json|sse]
//! cargo xtask bench runtime [--warm-iters N] [--cold-iters N] [--sessions N] [--servers N]
//! cargo xtask conformance [--only suite|draft|servers] [--timeout SECS]
//! ```
//!
//! Benchmarks always run an optimized build: when this binary was built
//! without optimizations (as `cargo xtask` builds it), `bench` runs itself
//! again through `cargo run --release`.

// A command-line tool: printing is its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod bench;
mod conformance;
mod corpus;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <task> [options]

tasks:
  bench codec [--mb N] [--iters K] [--seed S]
      decode a deterministic stream of MCP messages with mcp-jsonrpc's
      NewlineCodec, with LinesCodec + serde_json, and with serde_json alone
      (the floor); print MB/s and ratios
  bench stdio [--n N] [--n-inflight N] [--rounds K] [--server testkit|fast|both]
              [--runtime multi|current] [--only ours|rmcp|floor]
      tools/call round trips to a child-process server over stdio, sequential
      and 8 in flight: this stack, rmcp's client and a raw-pipe floor;
      print calls/s, p50/p99 latency and ratios
  bench http [--n N] [--n-inflight N] [--rounds K] [--answers json|sse]
             [--server-threads N] [--runtime multi|current] [--only ours|rmcp|floor]
      tools/call round trips to mcp-testkit's streamable HTTP server on
      127.0.0.1 (stateful), sequential and 8 in flight: this stack, rmcp's
      streamable HTTP client and a raw hyper floor; print calls/s, p50/p99
      latency and ratios
  bench runtime [--warm-iters N] [--cold-iters N] [--sessions N] [--servers N]
      the session runtime manager's warm path, cold path and idle memory
  conformance [--only suite|draft|servers] [--timeout SECS]
      the official MCP conformance suite's client scenarios against our
      client (the pinned release, then the alpha line's draft scenarios at
      2026-07-28; `--only draft` runs those alone), and our stack against the
      reference servers; prepares Node 22, the pinned npm packages and a
      Python virtualenv under target/conformance/cache; writes
      target/conformance/report.md
  help
      this text
";

fn main() -> ExitCode {
    let mut args = args::Args::from_env();
    let result = match args.next_positional().as_deref() {
        Some("bench") => bench::run(args),
        Some("conformance") => conformance::run(args),
        // What the conformance suite runs (hidden: not a task for people).
        Some("conformance-client") => conformance::client::main(args),
        None | Some("help" | "-h" | "--help") => {
            print!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown task `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
