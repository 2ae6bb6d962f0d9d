//! `cargo xtask bench <what>`: benchmarks, always in an optimized build.

mod clients;
mod codec;
mod http;
mod runtime;
mod stdio;

use std::process::Command;
use std::time::Duration;

use crate::args::Bench;

/// Runs `bench <what> [options]`.
pub(crate) fn run(what: Bench) -> Result<(), String> {
    if cfg!(debug_assertions) {
        return rerun_optimized();
    }
    match what {
        Bench::Codec(args) => codec::run(args),
        Bench::Http(args) => http::run(args),
        Bench::Runtime(args) => runtime::run(args),
        Bench::Stdio(args) => stdio::run(args),
    }
}

/// Numbers from a debug build mean nothing: build and run this task again
/// with `--release`, passing the arguments on.
fn rerun_optimized() -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let workspace = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let status = Command::new(cargo)
        .current_dir(workspace)
        .args(["run", "--release", "--quiet", "--package", "xtask", "--"])
        // `bench …`, as given.
        .args(std::env::args_os().skip(1))
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the optimized benchmark run failed ({status})"))
    }
}

/// The median of sorted durations.
pub(crate) fn median(sorted: &[Duration]) -> Duration {
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// Megabytes (10^6 bytes) per second.
pub(crate) fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64().max(1e-9)
}
