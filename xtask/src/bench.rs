//! `cargo xtask bench <what>`: benchmarks, always in an optimized build
//! with the `peers` feature (the SDK clients they compare against).
//!
//! The plain `cargo xtask` build (the one CI uses for conformance) compiles
//! none of the peers: `bench` then builds and runs itself again.

#[cfg(feature = "peers")]
mod catalog;
#[cfg(feature = "peers")]
mod clients;
#[cfg(feature = "peers")]
mod codec;
#[cfg(feature = "peers")]
// The counting global allocator is the one place that needs `unsafe`.
#[allow(unsafe_code)]
mod heap;
#[cfg(feature = "peers")]
mod http;
#[cfg(feature = "peers")]
mod instructions;
#[cfg(feature = "peers")]
mod payload;
#[cfg(feature = "peers")]
mod resources;
#[cfg(feature = "peers")]
mod rounds;
#[cfg(feature = "peers")]
mod runtime;
mod search;
#[cfg(feature = "peers")]
mod start;
#[cfg(feature = "peers")]
mod stdio;
#[cfg(feature = "peers")]
mod token_store;
#[cfg(feature = "peers")]
mod ts;

use std::process::Command;
#[cfg(feature = "peers")]
use std::time::Duration;

use crate::args::Bench;

/// Runs `bench <what> [options]`.
#[cfg(feature = "peers")]
pub(crate) fn run(what: Bench) -> Result<(), String> {
    let what = match what {
        Bench::Search(args) => return search::run(args),
        other => other,
    };
    if cfg!(debug_assertions) && !matches!(&what, Bench::Start(a) if a.debug_check) {
        return rerun_optimized();
    }
    match what {
        Bench::Start(args) => start::run(args),
        Bench::Catalog(args) => catalog::run(args),
        Bench::Codec(args) => codec::run(args),
        Bench::Payload(args) => payload::run(args),
        Bench::Http(args) => http::run(args),
        Bench::Resources(args) => resources::run(args),
        Bench::Runtime(args) => runtime::run(args),
        Bench::Stdio(args) => stdio::run(args),
        Bench::Search(args) => search::run(args),
    }
}

/// Runs `bench <what> [options]`: in this build, by building the one that can.
#[cfg(not(feature = "peers"))]
pub(crate) fn run(what: Bench) -> Result<(), String> {
    match what {
        // IO-free and on this workspace alone: no peers to build.
        Bench::Search(args) => search::run(args),
        _ => rerun_optimized(),
    }
}

/// Numbers from a debug build mean nothing, and a build without the peers
/// has nothing to compare: build and run this task again with `--release
/// --features peers`, passing the arguments on.
fn rerun_optimized() -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let workspace = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let status = Command::new(cargo)
        .current_dir(workspace)
        .args(["run", "--release", "--quiet", "--package", "xtask"])
        .args(["--features", "peers", "--"])
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
#[cfg(feature = "peers")]
pub(crate) fn median(sorted: &[Duration]) -> Duration {
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// Megabytes (10^6 bytes) per second.
#[cfg(feature = "peers")]
pub(crate) fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64().max(1e-9)
}

/// CPU time used so far: user and system.
#[cfg(feature = "peers")]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Cpu {
    pub(crate) user: Duration,
    pub(crate) system: Duration,
}

#[cfg(feature = "peers")]
impl Cpu {
    /// This process's CPU time so far, every thread (child processes, such
    /// as the servers the clients talk to, are not included); `None` where
    /// it cannot be read.
    #[cfg(unix)]
    #[allow(unsafe_code)]
    pub(crate) fn now() -> Option<Cpu> {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage(2) writes one `rusage` to the pointer it is
        // given, which points to a zeroed one of ours; it is read only if
        // the call succeeded.
        let usage = unsafe {
            if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
                return None;
            }
            usage.assume_init()
        };
        let time = |t: libc::timeval| {
            Duration::from_secs(u64::try_from(t.tv_sec).ok()?)
                .checked_add(Duration::from_micros(u64::try_from(t.tv_usec).ok()?))
        };
        Some(Cpu {
            user: time(usage.ru_utime)?,
            system: time(usage.ru_stime)?,
        })
    }

    /// Not measured here.
    #[cfg(not(unix))]
    pub(crate) fn now() -> Option<Cpu> {
        None
    }

    /// The time used since `earlier`, divided over `calls`.
    pub(crate) fn per_call_since(self, earlier: Cpu, calls: usize) -> Cpu {
        let n = u32::try_from(calls.max(1)).unwrap_or(u32::MAX);
        Cpu {
            user: self.user.saturating_sub(earlier.user) / n,
            system: self.system.saturating_sub(earlier.system) / n,
        }
    }

    /// User and system time together.
    pub(crate) fn total(self) -> Duration {
        self.user + self.system
    }
}
