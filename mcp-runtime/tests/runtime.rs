//! The manager with in-process testkit servers: reuse, rebuilds, single
//! flight, leases, the idle TTL on tokio's paused clock, failures, routing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::config;
use mcp_stack_runtime::{
    IdleClock, RuntimeError, RuntimeManager, RuntimeOptions, RuntimeStats, StartupStep,
};
use mcp_stack_testkit::InProcessConnector;
use serde_json::json;
use tokio::time::Instant;

const TWO: &str = r#"{"mcpServers": {
    "a": {"command": "kit"},
    "b": {"command": "kit", "args": ["--tag", "1"]}
}}"#;

const TWO_B_CHANGED: &str = r#"{"mcpServers": {
    "a": {"command": "kit"},
    "b": {"command": "kit", "args": ["--tag", "2"]}
}}"#;

fn manager(options: RuntimeOptions) -> (RuntimeManager, Arc<InProcessConnector>) {
    let kit = Arc::new(InProcessConnector::new());
    (RuntimeManager::with_connector(options, kit.clone()), kit)
}

/// Lets spawned tasks (the reaper, teardowns) run.
async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

/// Waits (virtual time) until `f` holds of the stats.
async fn until(m: &RuntimeManager, f: impl Fn(&RuntimeStats) -> bool) -> RuntimeStats {
    for _ in 0..200 {
        let s = m.stats();
        if f(&s) {
            return s;
        }
        settle().await;
    }
    panic!("condition not reached: {:?}", m.stats());
}

#[tokio::test(start_paused = true)]
async fn same_fingerprint_reuses_everything() {
    let (m, kit) = manager(RuntimeOptions::default());
    let cfg = config(TWO);
    let first = m.acquire("s1", &cfg).await.unwrap();
    assert_eq!((kit.connects("a"), kit.connects("b")), (1, 1));
    let names: Vec<&str> = first.catalog().tools().iter().map(|t| t.name()).collect();
    assert!(
        names.contains(&"a__echo") && names.contains(&"b__add"),
        "{names:?}"
    );
    drop(first);

    let second = m.acquire("s1", &cfg).await.unwrap();
    assert_eq!(
        kit.total_connects(),
        2,
        "no new connection on a fingerprint hit"
    );
    let s = m.stats();
    assert_eq!(
        (s.sessions, s.connections, s.reuses, s.builds),
        (1, 2, 1, 1)
    );
    assert_eq!(second.fingerprint(), cfg.fingerprint);
    drop(second);
    m.dispose_all().await;
    assert_eq!(m.stats().connections, 0);
}

#[tokio::test(start_paused = true)]
async fn parallel_sessions_get_their_own_connections() {
    let (m, kit) = manager(RuntimeOptions::default());
    let cfg = config(TWO);
    let l1 = m.acquire("s1", &cfg).await.unwrap();
    let l2 = m.acquire("s2", &cfg).await.unwrap();
    assert_eq!((kit.connects("a"), kit.connects("b")), (2, 2));
    assert_eq!(m.stats().connections, 4);
    // Ending one session leaves the other's connections alone.
    drop(l1);
    assert!(m.dispose_session("s1").await);
    assert!(!m.dispose_session("s1").await);
    assert_eq!(m.stats().connections, 2);
    let r = l2
        .call_tool("a__echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "still here");
    drop(l2);
    m.dispose_all().await;
}

#[tokio::test(start_paused = true)]
async fn a_changed_server_is_the_only_one_restarted() {
    let (m, kit) = manager(RuntimeOptions::default());
    drop(m.acquire("s", &config(TWO)).await.unwrap());
    let changed = config(TWO_B_CHANGED);
    let lease = m.acquire("s", &changed).await.unwrap();
    assert_eq!((kit.connects("a"), kit.connects("b")), (1, 2));
    assert_eq!(lease.fingerprint(), changed.fingerprint);
    // The old `b` is closed; `a` and the new `b` stay.
    until(&m, |s| s.connections == 2).await;
    lease
        .call_tool("b__echo", json!({"text": "x"}))
        .await
        .unwrap();

    // A removed server is closed; the rest stays.
    let only_a = config(r#"{"mcpServers": {"a": {"command": "kit"}}}"#);
    drop(lease);
    let lease = m.acquire("s", &only_a).await.unwrap();
    assert_eq!(kit.total_connects(), 3);
    until(&m, |s| s.connections == 1).await;
    assert!(lease.catalog().get("b__echo").is_none());
    drop(lease);
    m.dispose_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_for_a_new_session_start_each_server_once() {
    let (m, kit) = manager(RuntimeOptions::default());
    let cfg = Arc::new(config(TWO));
    let mut tasks = Vec::new();
    for _ in 0..100 {
        let (m, cfg) = (m.clone(), Arc::clone(&cfg));
        tasks.push(tokio::spawn(async move {
            let lease = m.acquire("shared", &cfg).await.unwrap();
            lease.catalog().len()
        }));
    }
    for t in tasks {
        assert!(t.await.unwrap() > 0);
    }
    assert_eq!((kit.connects("a"), kit.connects("b")), (1, 1));
    let s = m.stats();
    assert_eq!((s.builds, s.connects, s.leases), (1, 2, 0));
    m.dispose_all().await;
}

#[tokio::test(start_paused = true)]
async fn reaped_after_the_ttl_and_not_before() {
    let ttl = Duration::from_secs(600);
    // Paused time: the exact clock follows it (the coarse one cannot).
    let options = RuntimeOptions::default().idle_ttl(ttl);
    let (m, kit) = manager(options.idle_clock(IdleClock::Exact));
    let cfg = config(TWO);
    drop(m.acquire("s", &cfg).await.unwrap());
    let idle_from = Instant::now();

    tokio::time::advance(ttl - Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(m.stats().sessions, 1, "not before the TTL");

    // Use refreshes the idle time: the reaper wakes at the first expiry,
    // finds the session used since, and leaves it (waiting for its pass
    // first, so the check cannot pass before the reaper has looked).
    drop(m.acquire("s", &cfg).await.unwrap());
    let passes = m.stats().reaper_passes;
    tokio::time::advance(Duration::from_secs(2)).await;
    until(&m, |s| s.reaper_passes > passes).await;
    assert_eq!(m.stats().sessions, 1, "used a moment ago");
    assert!(idle_from.elapsed() > ttl);

    tokio::time::advance(ttl).await;
    let s = until(&m, |s| s.sessions == 0 && s.connections == 0).await;
    assert_eq!(s.reaped_sessions, 1);

    // A new request builds again.
    drop(m.acquire("s", &cfg).await.unwrap());
    assert_eq!(kit.total_connects(), 4);
    m.dispose_all().await;
}

#[tokio::test(start_paused = true)]
async fn never_reaped_while_leased_or_calling() {
    let ttl = Duration::from_secs(60);
    let options = RuntimeOptions::default().idle_ttl(ttl);
    let (m, _kit) = manager(options.idle_clock(IdleClock::Exact));
    let cfg = config(r#"{"mcpServers": {"k": {"command": "kit", "requestTimeoutMs": 3600000}}}"#);
    let lease = m.acquire("s", &cfg).await.unwrap();
    let passes = m.stats().reaper_passes;
    tokio::time::advance(ttl * 10).await;
    until(&m, |s| s.reaper_passes > passes).await;
    assert_eq!(m.stats().sessions, 1, "a held lease keeps it");

    // A long call: in flight across many TTLs.
    let call = tokio::spawn(async move {
        let r = lease.call_tool("k__slow", json!({"ms": 600_000})).await;
        (r, lease)
    });
    settle().await;
    assert_eq!(m.stats().in_flight_calls, 1);
    let passes = m.stats().reaper_passes;
    tokio::time::advance(ttl * 5).await;
    until(&m, |s| s.reaper_passes > passes).await;
    assert_eq!(m.stats().sessions, 1, "a call in flight keeps it");
    let (r, lease) = call.await.unwrap();
    assert_eq!(r.unwrap().text(), "done after 600000 ms");
    drop(lease);

    // Released: reaped one TTL later.
    tokio::time::advance(ttl).await;
    until(&m, |s| s.sessions == 0).await;
    m.dispose_all().await;
}

/// A lease taken before a config change holds the replaced runtime: it
/// keeps the session from being reaped, and its release is the session's
/// last use.
#[tokio::test(start_paused = true)]
async fn a_lease_on_a_replaced_runtime_keeps_the_session() {
    let ttl = Duration::from_secs(60);
    let options = RuntimeOptions::default().idle_ttl(ttl);
    let (m, _kit) = manager(options.idle_clock(IdleClock::Exact));
    let old = m.acquire("s", &config(TWO)).await.unwrap();
    let changed = config(TWO_B_CHANGED);
    drop(m.acquire("s", &changed).await.unwrap());
    assert_eq!(m.stats().leases, 1, "the old lease is still counted");

    let passes = m.stats().reaper_passes;
    tokio::time::advance(ttl * 3).await;
    until(&m, |s| s.reaper_passes > passes).await;
    assert_eq!(m.stats().sessions, 1, "the old lease keeps it");

    // The reaper looks next one TTL after its last pass; the old lease is
    // dropped half-way there, so that pass finds it used since.
    tokio::time::advance(ttl / 2).await;
    drop(old);
    assert_eq!(m.stats().leases, 0);
    let passes = m.stats().reaper_passes;
    tokio::time::advance(ttl / 2).await;
    until(&m, |s| s.reaper_passes > passes).await;
    assert_eq!(m.stats().sessions, 1, "the old lease's release was a use");

    tokio::time::advance(ttl / 2).await;
    until(&m, |s| s.sessions == 0).await;
    assert_eq!(
        m.acquire("s", &changed).await.unwrap().fingerprint(),
        changed.fingerprint
    );
    m.dispose_all().await;
}

/// The default, coarse idle clock, in real time: a session is reclaimed,
/// and never before its TTL has passed since the lease was dropped.
#[tokio::test]
async fn the_coarse_idle_clock_never_reaps_early() {
    let ttl = Duration::from_millis(200);
    let (m, _kit) = manager(RuntimeOptions::default().idle_ttl(ttl));
    let cfg = config(TWO);
    drop(m.acquire("s", &cfg).await.unwrap());
    // Used again a moment later: the idle time starts from this release.
    let lease = m.acquire("s", &cfg).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(lease);
    let released = Instant::now();
    let deadline = released + Duration::from_secs(30);
    while m.stats().sessions > 0 {
        assert!(Instant::now() < deadline, "never reaped: {:?}", m.stats());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        released.elapsed() >= ttl,
        "reaped {:?} after the release, before the TTL ({ttl:?})",
        released.elapsed()
    );
    m.dispose_all().await;
}

#[tokio::test(start_paused = true)]
async fn zero_ttl_disables_reaping() {
    let (m, _kit) = manager(RuntimeOptions::default().idle_ttl(Duration::ZERO));
    drop(m.acquire("s", &config(TWO)).await.unwrap());
    tokio::time::advance(Duration::from_secs(365 * 24 * 3600)).await;
    settle().await;
    assert_eq!(m.reap_expired().await, 0);
    assert_eq!(m.stats().sessions, 1);
    m.dispose_all().await;
}

#[tokio::test(start_paused = true)]
async fn teardown_of_a_replaced_server_waits_for_its_calls() {
    let (m, _kit) = manager(RuntimeOptions::default());
    let old = m.acquire("s", &config(TWO)).await.unwrap();
    let call = tokio::spawn(async move {
        let r = old.call_tool("b__slow", json!({"ms": 5000})).await;
        drop(old);
        r
    });
    settle().await;
    let new = m.acquire("s", &config(TWO_B_CHANGED)).await.unwrap();
    settle().await;
    assert_eq!(m.stats().connections, 3, "the old `b` waits for its call");
    let r = call.await.unwrap().unwrap();
    assert_eq!(r.text(), "done after 5000 ms");
    until(&m, |s| s.connections == 2).await;
    drop(new);
    m.dispose_all().await;
}

#[tokio::test(start_paused = true)]
async fn teardown_waits_only_up_to_the_drain_bound() {
    let options = RuntimeOptions::default().drain_timeout(Duration::from_secs(1));
    let (m, _kit) = manager(options);
    let lease = m.acquire("s", &config(TWO)).await.unwrap();
    let call = tokio::spawn(async move {
        let r = lease.call_tool("a__slow", json!({"ms": 50_000})).await;
        drop(lease);
        r
    });
    settle().await;
    let started = Instant::now();
    m.dispose_all().await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let err = call.await.unwrap().unwrap_err();
    assert!(err.session_error().unwrap().is_closed(), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_failing_server_is_a_diagnostic_and_retried_with_backoff() {
    let options =
        RuntimeOptions::default().retry_backoff(Duration::from_secs(1), Duration::from_secs(60));
    let (m, kit) = manager(options);
    let cfg = config(
        r#"{"mcpServers": {
            "good": {"command": "kit"},
            "bad": {"command": "kit", "args": ["--misbehave", "exit-immediately"]},
            "slowpoke": {"command": "kit", "args": ["--misbehave", "never-answer-initialize"],
                         "handshakeTimeoutMs": 2000}
        }}"#,
    );
    let lease = m.acquire("s", &cfg).await.unwrap();
    let cat = lease.catalog();
    assert!(
        cat.get("good__echo").is_some(),
        "the good server is not held up"
    );
    let bad = cat.failures().iter().find(|f| f.server == "bad").unwrap();
    assert_eq!(bad.step, StartupStep::Handshake);
    assert_eq!(bad.attempts, 1);
    assert!(
        bad.to_string().contains("server `bad` failed at handshake"),
        "{bad}"
    );
    let slow = cat
        .failures()
        .iter()
        .find(|f| f.server == "slowpoke")
        .unwrap();
    assert_eq!(slow.step, StartupStep::Handshake);
    assert!(
        slow.message.contains("timed out") && slow.message.contains("stdout"),
        "{}",
        slow.message
    );
    let err = lease
        .call_tool("bad__echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(matches!(err, RuntimeError::UnknownTool { .. }));
    assert!(err.to_string().contains("bad"), "{err}");
    drop(lease);

    // It closed during the 2026-07-28 probe, so it was started once more
    // for the handshake (some legacy servers exit on the probe); it died again.
    assert_eq!(kit.connects("bad"), 2);
    // Before the backoff: no new attempt.
    drop(m.acquire("s", &cfg).await.unwrap());
    assert_eq!(kit.connects("bad"), 2);
    // After it: retried (only the failed ones), backoff doubled.
    tokio::time::advance(Duration::from_secs(3)).await;
    let lease = m.acquire("s", &cfg).await.unwrap();
    assert_eq!((kit.connects("good"), kit.connects("bad")), (1, 4));
    let bad = lease
        .catalog()
        .failures()
        .iter()
        .find(|f| f.server == "bad")
        .unwrap();
    // Doubled to 2 s, jittered to between half and all of it.
    assert_eq!(bad.attempts, 2);
    assert!(
        bad.retry_after >= Duration::from_secs(1) && bad.retry_after <= Duration::from_secs(2),
        "{:?}",
        bad.retry_after
    );
    assert_eq!(m.stats().failed_starts, 4);
    drop(lease);
    m.dispose_all().await;
}

#[tokio::test(start_paused = true)]
async fn filters_routing_and_server_settings() {
    let (m, _kit) = manager(RuntimeOptions::default());
    let cfg = config(
        r#"{"mcpServers": {
            "math": {"command": "kit", "includeTools": ["add", "slow"], "requestTimeoutMs": 500},
            "serial": {"command": "kit", "excludeTools": ["fail"], "supportsParallelToolCalls": false}
        }}"#,
    );
    let lease = m.acquire("s", &cfg).await.unwrap();
    let names: Vec<&str> = lease.catalog().tools().iter().map(|t| t.name()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "stable sorted order");
    assert!(
        names
            .iter()
            .all(|n| !n.starts_with("math__") || *n == "math__add" || *n == "math__slow")
    );
    assert!(!names.contains(&"serial__fail") && names.contains(&"serial__echo"));
    let add = lease.catalog().get("math__add").unwrap();
    assert_eq!((add.server(), add.tool_name()), ("math", "add"));
    assert!(add.input_schema()["properties"]["a"].is_object());

    let r = lease
        .call_tool("math__add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(
        r.structured_content
            .as_ref()
            .and_then(|v| v["sum"].as_f64()),
        Some(5.0)
    );
    assert!(r.text().contains('5'));

    // requestTimeoutMs of `math` bounds its calls.
    let err = lease
        .call_tool("math__slow", json!({"ms": 2000}))
        .await
        .unwrap_err();
    assert!(err.session_error().unwrap().is_timeout(), "{err}");

    // supportsParallelToolCalls: false runs calls one at a time.
    let started = Instant::now();
    let (r1, r2) = tokio::join!(
        lease.call_tool("serial__slow", json!({"ms": 1000})),
        lease.call_tool("serial__slow", json!({"ms": 1000})),
    );
    r1.unwrap();
    r2.unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );

    let err = lease.call_tool("nope__x", json!({})).await.unwrap_err();
    assert!(matches!(err, RuntimeError::UnknownTool { .. }), "{err}");
    drop(lease);
    m.dispose_all().await;
}

#[tokio::test(start_paused = true)]
async fn the_cap_on_live_runtimes_is_a_clear_error() {
    let (m, _kit) = manager(RuntimeOptions::default().max_sessions(2));
    let cfg = config(r#"{"mcpServers": {}}"#);
    let _a = m.acquire("a", &cfg).await.unwrap();
    let _b = m.acquire("b", &cfg).await.unwrap();
    let err = m.acquire("c", &cfg).await.unwrap_err();
    assert!(matches!(err, RuntimeError::TooManySessions { limit: 2 }));
    assert!(err.to_string().contains("max_sessions"), "{err}");
    // Existing sessions are still served.
    m.acquire("a", &cfg).await.unwrap();
    m.dispose_session("b").await;
    m.acquire("c", &cfg).await.unwrap();
}

/// Counts the `server/discover` probes sent through it.
#[derive(Debug)]
struct CountProbes {
    inner: Arc<dyn mcp_stack_transport::Transport>,
    probes: Arc<std::sync::atomic::AtomicUsize>,
}

impl mcp_stack_transport::Transport for CountProbes {
    fn send_with<'a>(
        &'a self,
        message: &'a mcp_stack_transport::Message,
        context: &'a mcp_stack_transport::SendContext,
    ) -> mcp_stack_transport::BoxFuture<'a, Result<(), mcp_stack_transport::TransportError>> {
        if message.method() == Some("server/discover") {
            self.probes
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        self.inner.send_with(message, context)
    }
    fn recv(
        &self,
    ) -> mcp_stack_transport::BoxFuture<
        '_,
        Result<mcp_stack_transport::Received, mcp_stack_transport::TransportError>,
    > {
        self.inner.recv()
    }
    fn close(&self) -> mcp_stack_transport::BoxFuture<'_, ()> {
        self.inner.close()
    }
    fn kind(&self) -> mcp_stack_transport::TransportKind {
        self.inner.kind()
    }
}

#[derive(Debug)]
struct ProbeCounter {
    kit: InProcessConnector,
    probes: Arc<std::sync::atomic::AtomicUsize>,
}

impl mcp_stack_runtime::Connector for ProbeCounter {
    fn connect<'a>(
        &'a self,
        server: &'a mcp_stack_config::ResolvedServer,
    ) -> mcp_stack_transport::BoxFuture<
        'a,
        Result<Arc<dyn mcp_stack_transport::Transport>, mcp_stack_runtime::ConnectError>,
    > {
        Box::pin(async move {
            let inner = self.kit.connect(server).await?;
            let t: Arc<dyn mcp_stack_transport::Transport> = Arc::new(CountProbes {
                inner,
                probes: Arc::clone(&self.probes),
            });
            Ok(t)
        })
    }
}

#[tokio::test(start_paused = true)]
async fn the_auto_probe_runs_once_per_server() {
    let probes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let connector = Arc::new(ProbeCounter {
        kit: InProcessConnector::new(),
        probes: Arc::clone(&probes),
    });
    let m = RuntimeManager::with_connector(RuntimeOptions::default(), connector);
    let cfg = config(
        r#"{"mcpServers": {
            "old": {"command": "kit", "protocolVersion": "auto"},
            "new": {"command": "kit", "args": ["--era", "modern"], "protocolVersion": "auto"}
        }}"#,
    );
    let first = m.acquire("s1", &cfg).await.unwrap();
    assert_eq!(probes.load(std::sync::atomic::Ordering::Relaxed), 2);
    let v = |lease: &mcp_stack_runtime::RuntimeLease, s: &str| {
        lease
            .session(s)
            .unwrap()
            .protocol_version()
            .as_str()
            .to_owned()
    };
    assert_eq!(
        (v(&first, "old"), v(&first, "new")),
        ("2025-11-25".into(), "2026-07-28".into())
    );
    // Another agent session with the same servers: no probe, same eras.
    let second = m.acquire("s2", &cfg).await.unwrap();
    assert_eq!(
        probes.load(std::sync::atomic::Ordering::Relaxed),
        3,
        "only the modern server's discover"
    );
    assert_eq!(
        (v(&second, "old"), v(&second, "new")),
        ("2025-11-25".into(), "2026-07-28".into())
    );
    let r = second
        .call_tool("new__echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "hi");
    drop((first, second));
    m.dispose_all().await;
}

/// Handlers given with `acquire_with_handlers` answer the testkit's
/// `ask_user`, `sample` and `list_roots` of every server, in both eras (a
/// legacy server asks while the call is pending, a 2026-07-28 one with an
/// `input_required` result); a session without handlers declares nothing
/// and is never asked.
#[tokio::test]
async fn handlers_given_at_acquire_reach_every_server() {
    use mcp_stack_session::types::{ElicitRequestParams, ElicitResult, Root};
    use mcp_stack_session::{ClientHandler, ClientHandlers, Elicitor, Sampler};
    use mcp_stack_transport::BoxFuture;

    struct Form;
    impl Elicitor for Form {
        fn elicit<'a>(&'a self, _: &'a ElicitRequestParams) -> BoxFuture<'a, ElicitResult> {
            Box::pin(async {
                serde_json::from_value(json!({"action": "accept", "content": {"name": "Grace"}}))
                    .unwrap()
            })
        }
    }
    struct Model;
    impl Sampler for Model {
        fn create_message<'a>(
            &'a self,
            _: &'a serde_json::Value,
        ) -> BoxFuture<'a, Result<serde_json::Value, mcp_stack_jsonrpc::ErrorObject>> {
            Box::pin(async {
                Ok(json!({"role": "assistant", "model": "m",
                          "content": {"type": "text", "text": "sampled"}}))
            })
        }
    }

    let (m, _kit) = manager(RuntimeOptions::default());
    let cfg = config(
        r#"{"mcpServers": {
            "old": {"command": "kit"},
            "new": {"command": "kit", "args": ["--era", "modern"]}
        }}"#,
    );
    let handlers: Arc<dyn ClientHandler> = Arc::new(
        ClientHandlers::new()
            .elicitation(Form)
            .sampling(Model)
            .roots(vec![Root::new("file:///srv", None)]),
    );
    let lease = m.acquire_with_handlers("s", &cfg, &handlers).await.unwrap();
    for server in ["old", "new"] {
        let asked = lease
            .call_tool(&format!("{server}__ask_user"), json!({}))
            .await
            .unwrap();
        assert_eq!(
            asked.structured_content.unwrap()["content"],
            json!({"name": "Grace"}),
            "{server}"
        );
        let sampled = lease
            .call_tool(&format!("{server}__sample"), json!({"prompt": "p"}))
            .await
            .unwrap();
        assert_eq!(sampled.text(), "sampled", "{server}");
        let roots = lease
            .call_tool(&format!("{server}__list_roots"), json!({}))
            .await
            .unwrap();
        assert_eq!(
            roots.structured_content.unwrap()["roots"],
            json!([{"uri": "file:///srv"}]),
            "{server}"
        );
    }
    drop(lease);

    let plain = m.acquire("other", &cfg).await.unwrap();
    for server in ["old", "new"] {
        let r = plain
            .call_tool(&format!("{server}__ask_user"), json!({}))
            .await
            .unwrap();
        assert!(r.is_error(), "{server}: {}", r.text());
    }
    drop(plain);
    m.dispose_all().await;
}

/// Connects through the testkit once its gate opens.
#[derive(Debug)]
struct Gated {
    kit: InProcessConnector,
    gate: tokio::sync::Semaphore,
}

impl mcp_stack_runtime::Connector for Gated {
    fn connect<'a>(
        &'a self,
        server: &'a mcp_stack_config::ResolvedServer,
    ) -> mcp_stack_transport::BoxFuture<
        'a,
        Result<Arc<dyn mcp_stack_transport::Transport>, mcp_stack_runtime::ConnectError>,
    > {
        Box::pin(async move {
            drop(self.gate.acquire().await);
            self.kit.connect(server).await
        })
    }
}

/// `dispose_all` while a session's first build is still connecting: the
/// build finds its session gone and closes what it opened, and
/// `dispose_all` returns only after that, with nothing left open.
#[tokio::test(flavor = "current_thread")]
async fn dispose_all_waits_for_a_build_in_progress() {
    let gated = Arc::new(Gated {
        kit: InProcessConnector::new(),
        gate: tokio::sync::Semaphore::new(0),
    });
    let m = Arc::new(RuntimeManager::with_connector(
        RuntimeOptions::default(),
        gated.clone(),
    ));
    let cfg = config(r#"{"mcpServers": {"a": {"command": "kit"}}}"#);
    let acquiring = tokio::spawn({
        let m = Arc::clone(&m);
        async move { m.acquire("s", &cfg).await.map(drop) }
    });
    until(&m, |s| s.sessions == 1).await;
    // What dispose_all left, read the moment it returns.
    let disposing = tokio::spawn({
        let (m, gated) = (Arc::clone(&m), Arc::clone(&gated));
        async move {
            m.dispose_all().await;
            (gated.kit.connects("a"), m.stats())
        }
    });
    until(&m, |s| s.sessions == 0).await;
    gated.gate.add_permits(1);
    let (connects, left) = tokio::time::timeout(Duration::from_secs(30), disposing)
        .await
        .expect("dispose_all returned")
        .unwrap();
    assert_eq!(
        connects, 1,
        "dispose_all returned before the build connected"
    );
    assert_eq!((left.sessions, left.connections), (0, 0), "{left:?}");
    assert!(matches!(
        acquiring.await.unwrap(),
        Err(RuntimeError::Disposed { .. })
    ));
}
