//! The manager with real stdio child processes: this test binary runs itself
//! as the testkit server (`--serve-testkit …`), which writes `start <pid>` and
//! `initialize <pid>` lines to an instance log, so the tests count process
//! starts and handshakes. Its own binary (no test harness) so that no other
//! test's children are around when it checks that none remain.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcp_stack_config::{Options, ResolvedConfig, parse_str, resolve};
use mcp_stack_runtime::{RuntimeManager, RuntimeOptions};
use serde_json::json;

type Test = (&'static str, fn(&Path));

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("--serve-testkit") {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        return rt.block_on(mcp_stack_testkit::run(args));
    }
    let tests: [Test; 6] = [
        (
            "reuse_and_rebuild_are_visible_in_process_starts",
            reuse_and_rebuild,
        ),
        (
            "a_server_that_exits_on_the_probe_is_restarted_with_the_handshake",
            exits_on_probe,
        ),
        ("concurrent_requests_start_each_server_once", single_flight),
        ("no_child_remains_after_dispose_all", no_child_remains),
        (
            "shutdown_stop_the_work_then_dispose_all_leaves_no_process",
            shutdown_after_stopping_work,
        ),
        (
            "shutdown_with_a_call_in_flight_is_bounded_by_the_drain_timeout",
            shutdown_with_a_call_in_flight,
        ),
    ];
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let mut failed = 0;
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let dir = std::env::temp_dir().join(format!("mcp-runtime-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let outcome = std::panic::catch_unwind(|| test(&dir));
        let _ = std::fs::remove_dir_all(&dir);
        match outcome {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed += 1;
            }
        }
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A stdio server entry running this binary as the testkit.
fn server(log: &Path, extra: &[&str]) -> serde_json::Value {
    let exe = std::env::current_exe().unwrap();
    let mut args = vec![
        json!("--serve-testkit"),
        json!("--instance-log"),
        json!(log.display().to_string()),
    ];
    args.extend(extra.iter().map(|a| json!(a)));
    json!({"command": exe.display().to_string(), "args": args})
}

fn config(servers: serde_json::Value) -> ResolvedConfig {
    let text = json!({"mcpServers": servers}).to_string();
    let loaded = parse_str(&text, &Options::new()).unwrap();
    resolve(&loaded.config, &|_: &str| None).unwrap()
}

/// (process starts, handshakes) in an instance log, and the pids.
fn counts(log: &Path) -> (usize, usize, Vec<u32>) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut pids = Vec::new();
    let (mut starts, mut inits) = (0, 0);
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        match (parts.next(), parts.next().and_then(|p| p.parse().ok())) {
            (Some("start"), Some(pid)) => {
                starts += 1;
                pids.push(pid);
            }
            (Some("initialize"), Some(_)) => inits += 1,
            _ => {}
        }
    }
    (starts, inits, pids)
}

fn logs(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join("a.log"), dir.join("b.log"))
}

fn reuse_and_rebuild(dir: &Path) {
    let (a, b) = logs(dir);
    runtime().block_on(async {
        let m = RuntimeManager::new(RuntimeOptions::default());
        let cfg = config(json!({"a": server(&a, &[]), "b": server(&b, &[])}));
        let lease = m.acquire("s", &cfg).await.unwrap();
        assert_eq!(
            lease
                .call_tool("a__echo", json!({"text": "hi"}))
                .await
                .unwrap()
                .text(),
            "hi"
        );
        assert_eq!((counts(&a).0, counts(&a).1), (1, 1));
        assert_eq!((counts(&b).0, counts(&b).1), (1, 1));
        drop(lease);

        // Same fingerprint: no process start, no handshake.
        let lease = m.acquire("s", &cfg).await.unwrap();
        assert_eq!((counts(&a).0, counts(&a).1), (1, 1));
        assert_eq!((counts(&b).0, counts(&b).1), (1, 1));
        drop(lease);

        // `b` changes: only `b` restarts.
        let changed = config(json!({"a": server(&a, &[]), "b": server(&b, &["--page-size", "2"])}));
        let lease = m.acquire("s", &changed).await.unwrap();
        assert_eq!((counts(&a).0, counts(&a).1), (1, 1));
        assert_eq!((counts(&b).0, counts(&b).1), (2, 2));
        assert!(lease.catalog().get("b__add").is_some());
        drop(lease);
        m.dispose_all().await;
    });
}

fn exits_on_probe(dir: &Path) {
    let (a, _) = logs(dir);
    runtime().block_on(async {
        let m = RuntimeManager::new(RuntimeOptions::default());
        let cfg = config(json!({"a": server(&a, &["--misbehave", "strict-initialize"])}));
        // The default mode probes with server/discover; this server exits on
        // it, so the runtime starts it again with the handshake.
        let lease = m.acquire("s1", &cfg).await.unwrap();
        assert!(
            lease.catalog().failures().is_empty(),
            "{:?}",
            lease.catalog().failures()
        );
        assert_eq!(
            lease.catalog().connected()[0].protocol.as_str(),
            "2025-11-25"
        );
        let r = lease
            .call_tool("a__add", json!({"a": 2, "b": 2}))
            .await
            .unwrap();
        assert!(r.text().contains('4'));
        assert_eq!((counts(&a).0, counts(&a).1), (2, 1));
        drop(lease);
        // Another agent session: the era is remembered, no second probe.
        let lease = m.acquire("s2", &cfg).await.unwrap();
        assert!(lease.catalog().failures().is_empty());
        assert_eq!((counts(&a).0, counts(&a).1), (3, 2));
        drop(lease);
        m.dispose_all().await;
    });
}

fn single_flight(dir: &Path) {
    let (a, b) = logs(dir);
    runtime().block_on(async {
        let m = RuntimeManager::new(RuntimeOptions::default());
        let cfg = Arc::new(config(json!({"a": server(&a, &[]), "b": server(&b, &[])})));
        let tasks: Vec<_> = (0..100)
            .map(|_| {
                let (m, cfg) = (m.clone(), Arc::clone(&cfg));
                tokio::spawn(async move { m.acquire("new", &cfg).await.unwrap().catalog().len() })
            })
            .collect();
        for t in tasks {
            assert!(t.await.unwrap() > 0);
        }
        assert_eq!((counts(&a).0, counts(&a).1), (1, 1));
        assert_eq!((counts(&b).0, counts(&b).1), (1, 1));
        m.dispose_all().await;
    });
}

/// Pids of live processes whose parent is this process.
fn children() -> Vec<u32> {
    let me = std::process::id();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces, so split after ')'.
        let Some(rest) = stat.rsplit_once(')').map(|r| r.1) else {
            continue;
        };
        let ppid: Option<u32> = rest.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        if ppid == Some(me) {
            out.push(pid);
        }
    }
    out
}

fn no_child_remains(dir: &Path) {
    let (a, b) = logs(dir);
    runtime().block_on(async {
        let m = RuntimeManager::new(RuntimeOptions::default());
        let cfg = config(json!({"a": server(&a, &[]), "b": server(&b, &[])}));
        let other = config(json!({"a": server(&a, &["--page-size", "3"])}));
        let l1 = m.acquire("s1", &cfg).await.unwrap();
        let l2 = m.acquire("s2", &cfg).await.unwrap();
        let l3 = m.acquire("s3", &other).await.unwrap();
        let mut pids = counts(&a).2;
        pids.extend(counts(&b).2);
        assert_eq!(pids.len(), 5);
        if cfg!(target_os = "linux") {
            let kids = children();
            assert!(pids.iter().all(|p| kids.contains(p)), "{pids:?} {kids:?}");
        }
        drop((l1, l2, l3));
        m.dispose_all().await;
        assert_eq!(m.stats().connections, 0);
        if cfg!(target_os = "linux") {
            assert_eq!(
                children(),
                Vec::<u32>::new(),
                "children left after dispose_all"
            );
            for pid in pids {
                assert!(
                    !Path::new(&format!("/proc/{pid}")).exists(),
                    "pid {pid} remains"
                );
            }
        }
    });
}

/// The variable that marks the shutdown tests' servers (and their children).
const MARKER: &str = "MCP_RUNTIME_SHUTDOWN_TEST";

/// A stdio server entry: this binary as the testkit behind a shell that
/// leaves a `sleep` grandchild in its group, every process marked.
fn wrapped_server(log: &Path, marker: &str) -> serde_json::Value {
    let exe = std::env::current_exe().unwrap();
    let script = format!(
        "sleep 600 & exec '{}' --serve-testkit --instance-log '{}'",
        exe.display(),
        log.display()
    );
    json!({"command": "sh", "args": ["-c", script], "env": {MARKER: marker}})
}

/// Live (not zombie) processes whose environment holds `MARKER=marker`.
fn marked(marker: &str) -> Vec<u32> {
    mcp_stack_testkit::procs::marked(MARKER, marker)
}

/// The agent work of an application: a lease, and a call that takes long.
async fn agent_work(m: RuntimeManager, cfg: Arc<ResolvedConfig>) -> String {
    let lease = m.acquire("agent", &cfg).await.unwrap();
    match lease.call_tool("a__slow", json!({"ms": 600_000})).await {
        Ok(r) => r.text(),
        Err(e) => e.to_string(),
    }
}

/// What the crate docs tell an application to do on shutdown: stop the
/// agent work (here: abort its task, as a `select!` on a signal drops it),
/// then `dispose_all`. Every server closes at once (no call holds it) and
/// no process is left, grandchildren included.
fn shutdown_after_stopping_work(dir: &Path) {
    if !cfg!(target_os = "linux") {
        return;
    }
    let (a, b) = logs(dir);
    let marker = format!("stop-{}", std::process::id());
    let _cleanup = mcp_stack_testkit::procs::KillMarked::new(MARKER, &marker);
    runtime().block_on(async {
        // A drain timeout far beyond the test's bound: nothing may wait for it.
        let options = RuntimeOptions::default().drain_timeout(Duration::from_secs(600));
        let m = RuntimeManager::new(options);
        let cfg = Arc::new(config(json!({
            "a": wrapped_server(&a, &marker),
            "b": wrapped_server(&b, &marker),
        })));
        let work = tokio::spawn(agent_work(m.clone(), Arc::clone(&cfg)));
        wait_for(|| marked(&marker).len() >= 4 && m.stats().in_flight_calls == 1).await;
        work.abort();
        assert!(work.await.unwrap_err().is_cancelled());
        tokio::time::timeout(BOUND, m.dispose_all())
            .await
            .expect("dispose_all took too long");
        assert_eq!(m.stats().connections, 0);
        assert_eq!(m.stats().sessions, 0);
        wait_for(|| marked(&marker).is_empty()).await;
    });
}

/// `dispose_all` while the work still runs: the call holds its server's
/// close up to the drain timeout, then fails as its server closes; no
/// process is left.
fn shutdown_with_a_call_in_flight(dir: &Path) {
    if !cfg!(target_os = "linux") {
        return;
    }
    let (a, _) = logs(dir);
    let marker = format!("drain-{}", std::process::id());
    let _cleanup = mcp_stack_testkit::procs::KillMarked::new(MARKER, &marker);
    runtime().block_on(async {
        let options = RuntimeOptions::default().drain_timeout(Duration::from_millis(200));
        let m = RuntimeManager::new(options);
        let cfg = Arc::new(config(json!({"a": wrapped_server(&a, &marker)})));
        let work = tokio::spawn(agent_work(m.clone(), Arc::clone(&cfg)));
        wait_for(|| marked(&marker).len() >= 2 && m.stats().in_flight_calls == 1).await;
        tokio::time::timeout(BOUND, m.dispose_all())
            .await
            .expect("dispose_all took too long");
        let outcome = tokio::time::timeout(BOUND, work)
            .await
            .expect("the call outlived dispose_all")
            .unwrap();
        assert!(outcome.contains("closed"), "{outcome}");
        assert_eq!(m.stats().connections, 0);
        wait_for(|| marked(&marker).is_empty()).await;
    });
}

/// A bound for what should happen well before it; hitting it is a failure.
const BOUND: Duration = Duration::from_secs(30);

/// Polls `done` until it holds, failing after [`BOUND`].
async fn wait_for(mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + BOUND;
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "timed out");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
