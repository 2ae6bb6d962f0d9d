//! Project tasks, run with `cargo xtask <task>`.
//!
//! ```text
//! cargo xtask bench codec [--mb N] [--iters K] [--seed S]
//! cargo xtask bench stdio [--n N] [--n-inflight N] [--rounds K] [--server testkit|fast|both]
//!                         [--in-flight 1,8,64] [--only ours|rmcp|floor|ts]
//! cargo xtask bench stdio --instructions [--instructions-calls N1,N2] [--server …]
//! cargo xtask bench http [--n N] [--n-inflight N] [--rounds K] [--answers json|sse] [--in-flight K,…]
//! cargo xtask bench http --instructions [--instructions-calls N1,N2]
//! cargo xtask bench payload [--sizes 100,10000,1000000] [--mb M] [--rounds K]
//! cargo xtask bench catalog [--tools 1,100,10000] [--budget N]
//! cargo xtask bench runtime [--warm-iters N] [--cold-iters N] [--registered N,N…] [--sessions N,N…] [--servers N]
//! cargo xtask bench resources [--resources N] [--page-size N] [--blob-bytes N] [--rounds K]
//! cargo xtask conformance [--only suite|draft|servers] [--timeout SECS]
//! cargo xtask layout
//! cargo xtask msrv
//! cargo xtask soak [--short] [--sessions N] [--servers-per-session N] [--duration SECS]
//!                  [--seed S] [--fault-rate P]
//! ```
//!
//! Benchmarks always run an optimized build with the `peers` feature (the
//! SDK clients they compare against): when this binary was built otherwise
//! (as `cargo xtask` builds it), `bench` runs itself again through
//! `cargo run --release --features peers`.

// A command-line tool: printing is its job.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod bench;
mod conformance;
// The codec benchmark's input; its tests run in every build.
#[cfg_attr(not(feature = "peers"), allow(dead_code))]
mod corpus;
mod layout;
mod msrv;
mod soak;

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = <args::Cli as clap::Parser>::parse();
    let result = match cli.task {
        Some(args::Task::Bench { what }) => bench::run(what),
        Some(args::Task::Conformance(args)) => conformance::run(args),
        Some(args::Task::Soak(args)) => soak::run(args),
        Some(args::Task::Layout) => layout::run(),
        Some(args::Task::Msrv) => msrv::run(),
        Some(args::Task::ConformanceClient(args)) => conformance::client::main(args),
        None => <args::Cli as clap::CommandFactory>::command()
            .print_help()
            .map_err(|e| format!("cannot print the help: {e}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
