//! Races of acquire, rebuild, call, dispose and reap, on a multi-threaded
//! runtime, many rounds with different seeded schedules: no panic, no
//! deadlock (every round is bounded), every call either answers or fails
//! with a typed error, and after `dispose_all` nothing is left: no session,
//! no connection, no lease, no call in flight.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::config;
use mcp_stack_runtime::{RuntimeError, RuntimeManager, RuntimeOptions};
use mcp_stack_testkit::InProcessConnector;
use serde_json::json;

/// Two configs of one session: the second changes server `b`, so switching
/// between them rebuilds it (and keeps `a`).
const CONFIGS: [&str; 2] = [
    r#"{"mcpServers": {"a": {"command": "kit"}, "b": {"command": "kit", "args": ["--tag", "1"]}}}"#,
    r#"{"mcpServers": {"a": {"command": "kit"}, "b": {"command": "kit", "args": ["--tag", "2"]}}}"#,
];

/// A small deterministic generator (xorshift), seeded per worker and round.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Default)]
struct Outcomes {
    calls_ok: AtomicUsize,
    calls_failed: AtomicUsize,
    acquires: AtomicUsize,
    disposals: AtomicUsize,
    disposed_builds: AtomicUsize,
}

async fn worker(m: Arc<RuntimeManager>, seed: u64, steps: usize, out: Arc<Outcomes>) {
    let mut rng = Rng(seed.max(1));
    let configs = CONFIGS.map(config);
    for _ in 0..steps {
        let session = format!("s{}", rng.below(4));
        match rng.below(10) {
            // Acquire (sometimes the other config: a rebuild) and call.
            0..=6 => {
                let cfg = &configs[rng.below(2) as usize];
                let lease = match m.acquire(&session, cfg).await {
                    Ok(l) => l,
                    // A disposal raced the build: typed, and the session
                    // can be acquired again.
                    Err(RuntimeError::Disposed { .. }) => {
                        out.disposed_builds.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    Err(e) => panic!("acquire failed: {e}"),
                };
                out.acquires.fetch_add(1, Ordering::Relaxed);
                let tool = if rng.below(2) == 0 {
                    "a__echo"
                } else {
                    "b__add"
                };
                let args = if tool == "a__echo" {
                    json!({"text": "x"})
                } else {
                    json!({"a": 1, "b": 2})
                };
                match lease.call_tool(tool, args).await {
                    Ok(_) => out.calls_ok.fetch_add(1, Ordering::Relaxed),
                    // A server torn down under the call (a rebuild or a
                    // disposal racing it) is a typed failure, never a hang.
                    Err(RuntimeError::Call { .. } | RuntimeError::UnknownTool { .. }) => {
                        out.calls_failed.fetch_add(1, Ordering::Relaxed)
                    }
                    Err(e) => panic!("unexpected error: {e}"),
                };
                if rng.below(3) == 0 {
                    tokio::task::yield_now().await;
                }
                drop(lease);
            }
            // Dispose a session (maybe while another worker uses it).
            7 => {
                m.dispose_session(&session).await;
                out.disposals.fetch_add(1, Ordering::Relaxed);
            }
            // Reap whatever is idle (TTL is tiny here).
            _ => {
                m.reap_expired().await;
            }
        }
    }
}

#[test]
fn acquire_rebuild_dispose_and_reap_race_without_leaks() {
    const ROUNDS: u64 = 12;
    const WORKERS: u64 = 6;
    const STEPS: usize = 40;
    for round in 0..ROUNDS {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let kit = Arc::new(InProcessConnector::new());
            let options = RuntimeOptions::default()
                .idle_ttl(Duration::from_millis(1))
                .drain_timeout(Duration::from_secs(5));
            let m = Arc::new(RuntimeManager::with_connector(options, kit));
            let out = Arc::new(Outcomes::default());
            let mut workers = tokio::task::JoinSet::new();
            for w in 0..WORKERS {
                let seed = 0x9E37_79B9_7F4A_7C15u64 ^ (round << 32) ^ (w + 1);
                workers.spawn(worker(Arc::clone(&m), seed, STEPS, Arc::clone(&out)));
            }
            let all = async {
                while let Some(done) = workers.join_next().await {
                    done.expect("a worker panicked");
                }
            };
            tokio::time::timeout(Duration::from_secs(60), all)
                .await
                .unwrap_or_else(|_| panic!("round {round} did not finish within 60 s"));
            m.dispose_all().await;
            let s = m.stats();
            assert_eq!(
                (s.sessions, s.connections, s.leases, s.in_flight_calls),
                (0, 0, 0, 0),
                "round {round}: something left after dispose_all: {s:?}"
            );
            let calls =
                out.calls_ok.load(Ordering::Relaxed) + out.calls_failed.load(Ordering::Relaxed);
            assert_eq!(
                calls,
                out.acquires.load(Ordering::Relaxed),
                "every call answered or failed"
            );
            assert!(
                out.calls_ok.load(Ordering::Relaxed) > 0,
                "round {round}: no call succeeded"
            );
        });
        rt.shutdown_timeout(Duration::from_secs(5));
    }
}
