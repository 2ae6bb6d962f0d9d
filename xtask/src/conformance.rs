//! `cargo xtask conformance`: the official conformance suite and the
//! reference servers, against our client stack.
//!
//! 1. Prepares the cache (`<target>/conformance/cache`): Node 22 when the
//!    machine's Node is older, the pinned npm packages, a Python virtualenv
//!    with the pinned `mcp` package. A second run reuses it, offline.
//! 2. Part 1 ([`suite`]): every client scenario of
//!    `@modelcontextprotocol/conformance`, each run against our client
//!    (`xtask conformance-client`, [`client`]); then the client scenarios of
//!    the suite's alpha line that apply at protocol revision 2026-07-28
//!    (`auth/` aside), run at that revision's wire (rows `draft/…`).
//! 3. Part 2 ([`servers`]): our stack against the reference servers and a
//!    Python SDK server; then ([`interop`]) our OAuth client against an
//!    authorization server from npm that this project did not write
//!    (rows `interop/oauth/…`).
//! 4. The report ([`report`]): a table of checks, judged against
//!    `xtask/conformance/expected-failures.toml`, printed and written to
//!    `<target>/conformance/report.md`. The run fails on a new failure and on
//!    a listed failure that now passes.
//!
//! Every process started runs in its own process group and is ended at the
//! end of its step, on timeout, on Ctrl-C, and when the overall bound
//! (`--timeout`, default 15 minutes) is reached.

pub(crate) mod client;
mod fill;
mod http;
mod interop;
mod process;
mod report;
mod servers;
mod setup;
mod suite;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::args::ConformanceArgs;
use report::{Report, Row};

/// The expected-failures file, read at run time (editing it needs no rebuild).
const EXPECTED_FAILURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/conformance/expected-failures.toml"
);

/// Where things go.
#[derive(Debug)]
struct Paths {
    /// `<target>/conformance`
    root: PathBuf,
    cache: PathBuf,
    results: PathBuf,
    report: PathBuf,
}

impl Paths {
    /// Under the workspace's target folder: `CARGO_TARGET_DIR` when set,
    /// else `target/` beside the workspace manifest.
    fn find() -> Result<Self, String> {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .ok_or("xtask has no parent folder")?
            .to_path_buf();
        let target = match std::env::var_os("CARGO_TARGET_DIR") {
            Some(t) if !t.is_empty() => {
                let t = PathBuf::from(t);
                if t.is_absolute() {
                    t
                } else {
                    std::env::current_dir()
                        .map_err(|e| format!("no current folder: {e}"))?
                        .join(t)
                }
            }
            _ => workspace.join("target"),
        };
        let root = target.join("conformance");
        Ok(Paths {
            cache: root.join("cache"),
            results: root.join("results"),
            report: root.join("report.md"),
            root,
        })
    }
}

/// Node (22 or later) and the `node_modules` with the TypeScript SDK, as an
/// earlier `cargo xtask conformance` left them in its cache; installs
/// nothing (`bench stdio`'s TS SDK row).
#[cfg(feature = "peers")]
pub(crate) fn installed_node_sdk() -> Result<(PathBuf, PathBuf), String> {
    let paths = Paths::find()?;
    setup::installed(&paths.cache)
        .ok_or_else(|| "not installed; run `cargo xtask conformance` first".to_owned())
}

/// Which parts to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Only {
    All,
    /// Part 1: the release's scenarios and the draft ones.
    Suite,
    /// Only the draft scenarios of part 1.
    Draft,
    /// Part 2: the reference servers and the interop rows.
    Servers,
    /// Only the interop rows of part 2.
    Interop,
}

impl Only {
    fn release_suite(self) -> bool {
        matches!(self, Only::All | Only::Suite)
    }

    fn draft_suite(self) -> bool {
        matches!(self, Only::All | Only::Suite | Only::Draft)
    }

    fn servers(self) -> bool {
        matches!(self, Only::All | Only::Servers)
    }

    fn interop(self) -> bool {
        matches!(self, Only::All | Only::Servers | Only::Interop)
    }
}

/// Runs `conformance [--only suite|draft|servers] [--timeout SECS]`.
pub(crate) fn run(args: ConformanceArgs) -> Result<(), String> {
    let only = match args.only.as_deref().unwrap_or_default() {
        "" => Only::All,
        "suite" => Only::Suite,
        "draft" => Only::Draft,
        "servers" => Only::Servers,
        "interop" => Only::Interop,
        other => {
            return Err(format!(
                "--only: `{other}` is not `suite`, `draft`, `servers` or `interop`"
            ));
        }
    };
    let timeout = Duration::from_secs(args.timeout);
    let paths = Paths::find()?;
    let expected = report::parse_expected(
        &std::fs::read_to_string(EXPECTED_FAILURES)
            .map_err(|e| format!("cannot read {EXPECTED_FAILURES}: {e}"))?,
    )?;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let started = Instant::now();
    let outcome = rt.block_on(async {
        tokio::select! {
            r = tokio::time::timeout(timeout, run_parts(&paths, only)) => r.map_err(|_| {
                format!("the run did not finish within {} s (--timeout); every process it started was ended", timeout.as_secs())
            }),
            _ = tokio::signal::ctrl_c() => Err("interrupted; every process started was ended".to_string()),
        }
    });
    // Dropping the runtime drops every task still running, and with them
    // the processes they own.
    rt.shutdown_timeout(Duration::from_secs(5));
    let (header, rows) = outcome??;

    let mut ran = Vec::new();
    if only.release_suite() {
        ran.push("suite/");
    }
    if only.draft_suite() {
        ran.extend(["draft/", "alpha/"]);
    }
    if only.servers() {
        ran.extend([
            "everything/",
            "filesystem/",
            "memory/",
            "python/",
            "interop/",
        ]);
    }
    let report = Report::judge(rows, &expected, &ran);
    let header = format!(
        "{header}\n\nRun by `cargo xtask conformance` in {:.0} s. Expected failures: `xtask/conformance/expected-failures.toml`.",
        started.elapsed().as_secs_f64()
    );
    let markdown = report.markdown(&header);
    std::fs::write(&paths.report, &markdown)
        .map_err(|e| format!("cannot write {}: {e}", paths.report.display()))?;
    println!("\n{markdown}");
    println!("report: {}", paths.report.display());
    println!("{}", report.closing_line());
    if report.failed() {
        Err(format!(
            "conformance failed: {} (new failures, or expected failures that now pass)",
            report.totals()
        ))
    } else {
        Ok(())
    }
}

/// The extensions the client implements, as the report states them (the
/// alpha line's extension scenarios for them run in the `alpha/` part).
const EXTENSIONS: &str = "Extensions the client implements: \
    io.modelcontextprotocol/oauth-client-credentials (secret and private_key_jwt), \
    io.modelcontextprotocol/enterprise-managed-authorization, \
    io.modelcontextprotocol/auth/dpop, io.modelcontextprotocol/auth/wif, \
    io.modelcontextprotocol/skills (SEP-2640), io.modelcontextprotocol/tasks (SEP-2663).";

async fn run_parts(paths: &Paths, only: Only) -> Result<(String, Vec<Row>), String> {
    std::fs::create_dir_all(&paths.root)
        .map_err(|e| format!("cannot create {}: {e}", paths.root.display()))?;
    // Results of an earlier run would only confuse.
    let _ = std::fs::remove_dir_all(&paths.results);
    let suite_results = paths.results.join("suite");
    let draft_results = paths.results.join("draft");
    let logs = paths.results.join("logs");
    let scratch = paths.results.join("scratch");
    for dir in [&suite_results, &draft_results, &logs, &scratch] {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }

    println!("== preparing {}", paths.cache.display());
    let tools = setup::prepare(&paths.cache).await?;
    let node_version = process::run(
        {
            let mut c = process::command(&tools.node);
            c.arg("--version");
            c
        },
        Duration::from_secs(30),
    )
    .await
    .map(|o| o.stdout.trim().to_string())
    .unwrap_or_default();
    let pins: Vec<String> = setup::NPM_PACKAGES
        .iter()
        .map(|(p, v)| format!("`{p}@{v}`"))
        .chain([
            format!(
                "`{}@{}` (draft scenarios, at {})",
                setup::DRAFT_SUITE.0,
                setup::DRAFT_SUITE.1,
                suite::DRAFT_VERSION
            ),
            format!(
                "`{}@{}` (interop authorization server)",
                setup::INTEROP_AS.0,
                setup::INTEROP_AS.1
            ),
            format!("`mcp=={}` (PyPI)", setup::PYPI_MCP),
        ])
        .collect();
    let header = format!(
        "Pinned: {}; Node {node_version}. HTTP transports: {}.\n\n{EXTENSIONS}",
        pins.join(", "),
        if http::AVAILABLE {
            "built"
        } else {
            "not in this build (HTTP checks pending)"
        }
    );

    let mut rows = Vec::new();
    if only.release_suite() || only.draft_suite() {
        let exe = std::env::current_exe().map_err(|e| format!("where is this program? {e}"))?;
        let exe = exe.to_string_lossy();
        // The suite splits the client command on spaces.
        let client =
            (!exe.chars().any(char::is_whitespace)).then(|| format!("{exe} conformance-client"));
        let no_client = format!("the suite cannot run a client whose path has spaces: {exe}");
        if only.release_suite() {
            println!("== part 1: the official conformance suite, client scenarios");
            match &client {
                Some(client) => {
                    let suite = suite::Suite::release(&tools);
                    rows.extend(
                        suite::run(&tools, &suite, client, &suite_results, http::AVAILABLE).await,
                    );
                }
                None => rows.push(Row::fail("suite/setup", no_client.clone())),
            }
        }
        if only.draft_suite() {
            println!(
                "== part 1b: the suite's draft client scenarios ({}@{}, at {})",
                setup::DRAFT_SUITE.0,
                setup::DRAFT_SUITE.1,
                suite::DRAFT_VERSION
            );
            let started = Instant::now();
            match (&client, &tools.draft_node_modules) {
                (Some(client), Ok(node_modules)) => {
                    let suite = suite::Suite::draft(node_modules.clone());
                    rows.extend(
                        suite::run(&tools, &suite, client, &draft_results, http::AVAILABLE).await,
                    );
                    println!(
                        "== part 1c: the alpha line's other scenarios, each at its own \
                         revision (authorization back-compat and extensions; the skills \
                         extension's client scenarios)"
                    );
                    let suite = suite::Suite::alpha(node_modules.clone());
                    rows.extend(
                        suite::run(&tools, &suite, client, &draft_results, http::AVAILABLE).await,
                    );
                }
                (None, _) => rows.push(Row::fail("draft/setup", no_client)),
                (_, Err(e)) => rows.push(Row::fail("draft/setup", e.clone())),
            }
            println!(
                "   draft scenarios took {:.0} s",
                started.elapsed().as_secs_f64()
            );
        }
    }
    if only.servers() {
        println!("== part 2: reference servers");
        rows.extend(servers::run(&tools, &scratch, &logs).await);
    }
    if only.interop() {
        println!(
            "== part 2b: our OAuth client against {}@{} (an authorization server we did not write)",
            setup::INTEROP_AS.0,
            setup::INTEROP_AS.1
        );
        rows.extend(interop::run(&tools, &logs).await);
    }
    Ok((header, rows))
}
