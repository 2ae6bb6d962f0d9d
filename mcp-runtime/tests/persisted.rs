//! The persisted catalog and the tool pins: several runtimes (as several
//! processes would) sharing one cache folder, the catalog handed out from
//! it while servers connect in the background, a damaged file, a server
//! that no longer starts, and tool definitions that change between runs
//! under each pinning policy.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_stack_config::{FingerprintKey, Options, ResolvedConfig, parse_str, resolve_with_key};
use mcp_stack_runtime::persist::pins;
use mcp_stack_runtime::{
    CatalogCache, ConnectError, PinPolicy, PinReport, PinStatus, RuntimeError, RuntimeLease,
    RuntimeManager, RuntimeOptions, ToolStatus,
};
use mcp_stack_testkit::{InProcessConnector, ServerOptions};
use serde_json::json;

mod common;
use common::scripted::{Script, Scripted, options as scripted_options};

/// One key for every "run": fingerprints hold across them, as with the
/// user's key file.
fn config(json: &str) -> ResolvedConfig {
    let loaded = parse_str(json, &Options::new()).unwrap();
    let key = FingerprintKey::from_bytes([9; 32]);
    resolve_with_key(&loaded.config, &|_: &str| None, &key).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "mcp-persisted-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn runtime(cache: CatalogCache, kit: Arc<InProcessConnector>) -> RuntimeManager {
    RuntimeManager::with_connector(RuntimeOptions::default().catalog_cache(cache), kit)
}

/// A run: a fresh manager (a new process, as far as the cache knows) that
/// acquires `cfg`.
async fn run(cache: CatalogCache, cfg: &ResolvedConfig) -> (RuntimeManager, RuntimeLease) {
    let m = runtime(cache, Arc::new(InProcessConnector::new()));
    let lease = m.acquire("s", cfg).await.unwrap();
    (m, lease)
}

/// Acquires until `f` holds of the catalog, within 10 s.
async fn until(
    m: &RuntimeManager,
    cfg: &ResolvedConfig,
    f: impl Fn(&RuntimeLease) -> bool,
) -> RuntimeLease {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let lease = m.acquire("s", cfg).await.unwrap();
        if f(&lease) {
            return lease;
        }
        drop(lease);
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not reached"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "entry"))
        .collect()
}

const SLOW: &str =
    r#"{"mcpServers": {"a": {"command": "kit", "args": ["--startup-delay-ms", "300"]}}}"#;

#[tokio::test]
async fn a_new_runtime_lists_from_the_cache_and_a_call_waits_for_its_server() {
    let dir = temp_dir("background");
    let cfg = config(SLOW);
    let (m1, first) = run(CatalogCache::in_dir(&dir), &cfg).await;
    assert!(
        first
            .catalog()
            .tools()
            .iter()
            .all(|t| t.status() == ToolStatus::Ready)
    );
    assert_eq!(first.catalog().connected().len(), 1);
    drop(first);
    m1.dispose_all().await;
    assert_eq!(entries(&dir).len(), 1, "one server, one file");

    // The next run: the catalog at once, from the file; nothing connected yet.
    let kit = Arc::new(InProcessConnector::new());
    let m2 = runtime(CatalogCache::in_dir(&dir), kit.clone());
    let lease = m2.acquire("s", &cfg).await.unwrap();
    let echo = lease
        .catalog()
        .get("a__echo")
        .expect("listed from the cache");
    assert_eq!(echo.status(), ToolStatus::Connecting);
    assert!(lease.catalog().connected().is_empty());
    // The call waits for the background connection (the server takes 300 ms).
    let result = lease
        .call_tool("a__echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(result.text(), "hi");
    assert_eq!(kit.connects("a"), 1);
    // Then the catalog is the server's, installed as a list change would be.
    let fresh = until(&m2, &cfg, |l| {
        l.catalog()
            .get("a__echo")
            .is_some_and(|t| t.status() == ToolStatus::Ready)
    })
    .await;
    assert_eq!(fresh.catalog().connected().len(), 1);
    assert_eq!(kit.connects("a"), 1, "one connection, not one per call");
    drop((lease, fresh));
    m2.dispose_all().await;
    assert_eq!(m2.stats().connections, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_persisted_catalog_says_its_age_and_freshness() {
    let dir = temp_dir("age");
    let cfg = config(
        r#"{"mcpServers": {"a": {"command": "kit"}, "b": {"command": "kit", "args": ["--tag", "b"]}}}"#,
    );
    let m0 = runtime(
        CatalogCache::in_dir(&dir),
        Arc::new(InProcessConnector::new()),
    );
    assert!(
        m0.persisted_catalog(&cfg).is_none(),
        "nothing persisted yet"
    );
    let (m1, lease) = run(CatalogCache::in_dir(&dir), &cfg).await;
    drop(lease);
    m1.dispose_all().await;
    let fresh = m0.persisted_catalog(&cfg).unwrap();
    assert!(fresh.fresh);
    assert!(fresh.age < Duration::from_secs(60));
    assert!(fresh.catalog.get("b__echo").is_some());
    let stale = runtime(
        CatalogCache::in_dir(&dir).fresh_for(Duration::ZERO),
        Arc::new(InProcessConnector::new()),
    )
    .persisted_catalog(&cfg)
    .unwrap();
    assert!(!stale.fresh, "no ttlMs: the heuristic decides");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_persisted_catalog_parses_no_schema_until_one_is_looked_into() {
    let dir = temp_dir("lazy-schemas");
    // Definitions of this test alone: equal tools are shared process-wide,
    // and another test's live (parsed) ones would stand in for ours.
    let unique = dir.file_name().unwrap().to_string_lossy().into_owned();
    let kit = Scripted::new();
    kit.serve(
        "a",
        Script {
            tools: (0..3)
                .map(|i| {
                    json!({
                        "name": format!("t{i}"),
                        "description": unique,
                        "inputSchema": {
                            "type": "object",
                            "properties": {
                                format!("param{i}"): {"type": "string", "description": "findable"}
                            },
                            "required": [format!("param{i}")]
                        }
                    })
                })
                .collect(),
            ..Script::full()
        },
    );
    let cfg = config(r#"{"mcpServers": {"a": {"command": "x"}}}"#);
    let cache = || scripted_options().catalog_cache(CatalogCache::in_dir(&dir));
    let m1 = RuntimeManager::with_connector(cache(), kit);
    let lease = m1.acquire("s", &cfg).await.unwrap();
    let live: Vec<(String, serde_json::Value)> = lease
        .catalog()
        .tools()
        .iter()
        .map(|t| (t.name().to_owned(), t.input_schema().clone()))
        .collect();
    assert_eq!(live.len(), 3);
    drop(lease);
    m1.dispose_all().await;

    let m0 = RuntimeManager::with_connector(cache(), Scripted::new());
    let listed = m0.persisted_catalog(&cfg).unwrap();
    let tools = listed.catalog.tools();
    assert_eq!(tools.len(), live.len());
    // Read, pinned, checked and catalogued: not one schema parsed.
    for t in tools {
        assert!(
            t.tool().input_schema.is_unparsed(),
            "{} was parsed",
            t.name()
        );
    }
    // Searched, by a parameter's name and by its description: the index
    // reads them from the schemas' text, which stays unparsed.
    let found = listed.catalog.search_tools("param1", 3).unwrap();
    assert_eq!(found.first().map(|m| m.tool().name()), Some("a__t1"));
    assert_eq!(listed.catalog.search_tools("findable", 5).unwrap().len(), 3);
    for t in tools {
        assert!(
            t.tool().input_schema.is_unparsed(),
            "{} was parsed",
            t.name()
        );
    }
    // Looked into, each is the server's.
    for (name, schema) in &live {
        let t = listed.catalog.get(name).unwrap();
        assert_eq!(t.input_schema(), schema, "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_server_that_fails_to_start_keeps_its_cached_tools_marked_unavailable() {
    let dir = temp_dir("failing");
    let cfg = config(
        r#"{"mcpServers": {"a": {"command": "kit"}, "ok": {"command": "kit", "args": ["--tag", "ok"]}}}"#,
    );
    let failing = Arc::new(AtomicBool::new(false));
    let kit = || {
        let failing = failing.clone();
        Arc::new(InProcessConnector::with_options_for(move |server| {
            if server.name == "a" && failing.load(Ordering::SeqCst) {
                Err(ConnectError::Unsupported("the server is gone".into()))
            } else {
                Ok(ServerOptions::default())
            }
        }))
    };
    let m1 = runtime(CatalogCache::in_dir(&dir), kit());
    drop(m1.acquire("s", &cfg).await.unwrap());
    m1.dispose_all().await;
    failing.store(true, Ordering::SeqCst);

    // In the background: listed as connecting, then unavailable with the diagnosis.
    let m2 = runtime(CatalogCache::in_dir(&dir), kit());
    let lease = m2.acquire("s", &cfg).await.unwrap();
    assert_eq!(
        lease.catalog().get("a__echo").unwrap().status(),
        ToolStatus::Connecting
    );
    let err = lease
        .call_tool("a__echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RuntimeError::Unavailable { ref server, .. } if server == "a"),
        "{err}"
    );
    assert!(err.to_string().contains("the server is gone"), "{err}");
    let after = until(&m2, &cfg, |l| !l.catalog().failures().is_empty()).await;
    let echo = after.catalog().get("a__echo").unwrap();
    assert_eq!(echo.status(), ToolStatus::Unavailable);
    assert_eq!(after.catalog().failures()[0].server, "a");
    assert!(
        after.catalog().failures()[0]
            .message
            .contains("the server is gone")
    );
    assert_eq!(
        after.catalog().get("ok__echo").unwrap().status(),
        ToolStatus::Ready
    );
    let again = after
        .call_tool("a__echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    assert!(matches!(again, RuntimeError::Unavailable { .. }), "{again}");
    assert_eq!(
        after
            .call_tool("ok__echo", json!({"text": "y"}))
            .await
            .unwrap()
            .text(),
        "y"
    );
    drop((lease, after));
    m2.dispose_all().await;

    // Connecting before acquire returns: failed at once, the tools still listed.
    let m3 = runtime(CatalogCache::in_dir(&dir).background_connect(false), kit());
    let lease = m3.acquire("s", &cfg).await.unwrap();
    assert_eq!(
        lease.catalog().get("a__echo").unwrap().status(),
        ToolStatus::Unavailable
    );
    assert_eq!(lease.catalog().failures().len(), 1);
    drop(lease);
    m3.dispose_all().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_damaged_or_foreign_file_is_ignored_and_replaced() {
    let dir = temp_dir("damaged");
    let cfg = config(r#"{"mcpServers": {"a": {"command": "kit"}}}"#);
    let (m1, lease) = run(CatalogCache::in_dir(&dir), &cfg).await;
    drop(lease);
    m1.dispose_all().await;
    let file = entries(&dir).pop().unwrap();
    let good = std::fs::read(&file).unwrap();
    let other_key = temp_dir("foreign");
    for bad in [
        b"garbage".to_vec(),
        {
            // One bit flipped in the tools.
            let mut b = good.clone();
            let at = b.len() - 10;
            b[at] ^= 0x20;
            b
        },
        good[..good.len() / 2].to_vec(),
    ] {
        std::fs::write(&file, &bad).unwrap();
        let kit = Arc::new(InProcessConnector::new());
        let m = runtime(CatalogCache::in_dir(&dir), kit.clone());
        let lease = m.acquire("s", &cfg).await.unwrap();
        // Not trusted: the server was started before acquire returned.
        assert_eq!(
            lease.catalog().get("a__echo").unwrap().status(),
            ToolStatus::Ready
        );
        assert_eq!(kit.connects("a"), 1);
        drop(lease);
        m.dispose_all().await;
        // And replaced with a good one.
        assert_ne!(std::fs::read(&file).unwrap(), bad);
        std::fs::write(&file, &good).unwrap();
    }
    // A file written under another folder's key is foreign.
    let (m, lease) = run(CatalogCache::in_dir(&other_key), &cfg).await;
    drop(lease);
    m.dispose_all().await;
    let foreign = std::fs::read(entries(&other_key).pop().unwrap()).unwrap();
    std::fs::write(&file, &foreign).unwrap();
    let kit = Arc::new(InProcessConnector::new());
    let m = runtime(CatalogCache::in_dir(&dir), kit.clone());
    let lease = m.acquire("s", &cfg).await.unwrap();
    assert_eq!(
        lease.catalog().get("a__echo").unwrap().status(),
        ToolStatus::Ready
    );
    drop(lease);
    m.dispose_all().await;
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&other_key);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn several_runtimes_share_one_folder() {
    let dir = temp_dir("shared");
    let configs: Vec<ResolvedConfig> = (0..6)
        .map(|i| config(&format!(r#"{{"mcpServers": {{"s{i}": {{"command": "kit"}}, "common": {{"command": "kit"}}}}}}"#)))
        .collect();
    let mut tasks = Vec::new();
    for round in 0..3 {
        for cfg in &configs {
            let (dir, cfg) = (dir.clone(), cfg.clone());
            tasks.push(tokio::spawn(async move {
                let m = runtime(
                    CatalogCache::in_dir(&dir),
                    Arc::new(InProcessConnector::new()),
                );
                let lease = m.acquire("s", &cfg).await.unwrap();
                let r = lease
                    .call_tool("common__echo", json!({"text": "x"}))
                    .await
                    .unwrap();
                assert_eq!(r.text(), "x");
                drop(lease);
                m.dispose_all().await;
                round
            }));
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    // Every file whole and ours: each config is served from it.
    assert_eq!(entries(&dir).len(), 7);
    for cfg in &configs {
        let m = runtime(
            CatalogCache::in_dir(&dir),
            Arc::new(InProcessConnector::new()),
        );
        let p = m.persisted_catalog(cfg).expect("every server persisted");
        assert!(p.catalog.get("common__echo").is_some());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_folder_is_bounded_and_eviction_spares_the_pins() {
    let dir = temp_dir("evict");
    let one = config(r#"{"mcpServers": {"a": {"command": "kit"}}}"#);
    let (m, lease) = run(CatalogCache::in_dir(&dir), &one).await;
    drop(lease);
    m.dispose_all().await;
    let size = std::fs::metadata(&entries(&dir)[0]).unwrap().len();
    // Room for one entry: the second server's write evicts the first.
    let cache = CatalogCache::in_dir(&dir).max_bytes(1 << 20, size + size / 2);
    let two = config(r#"{"mcpServers": {"b": {"command": "kit", "args": ["--tag", "b"]}}}"#);
    std::thread::sleep(Duration::from_millis(20));
    let (m, lease) = run(cache.clone(), &two).await;
    drop(lease);
    m.dispose_all().await;
    assert_eq!(entries(&dir).len(), 1);
    let m = runtime(cache.clone(), Arc::new(InProcessConnector::new()));
    assert!(
        m.persisted_catalog(&one).is_none(),
        "the older entry was evicted"
    );
    assert!(m.persisted_catalog(&two).is_some());
    let servers: Vec<String> = pins::list(&dir)
        .unwrap()
        .into_iter()
        .map(|p| p.server)
        .collect();
    assert_eq!(servers, ["a", "b"], "pins are never evicted");
    // A file over the per-file bound is not written at all.
    let tiny = CatalogCache::in_dir(temp_dir("tiny")).max_bytes(100, 1 << 20);
    let (m, lease) = run(tiny.clone(), &one).await;
    drop(lease);
    m.dispose_all().await;
    assert!(entries(&tiny.dir).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&tiny.dir);
}

const ORIGINAL: &str = r#"{"mcpServers": {"a": {"command": "kit"}}}"#;
const REVISED: &str = r#"{"mcpServers": {"a": {"command": "kit", "args": ["--revise-tools"]}}}"#;

/// Runs the original tools, then the revised ones under `policy`: the
/// revised run's lease and the events told.
async fn revised_under(
    policy: PinPolicy,
    dir: &Path,
) -> (RuntimeManager, RuntimeLease, Vec<PinReport>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let cache = CatalogCache::in_dir(dir)
        .pinning(policy)
        .on_pin_event(Arc::new(move |e: &PinReport| {
            sink.lock().unwrap().push(e.clone())
        }));
    let (m, lease) = run(cache.clone(), &config(ORIGINAL)).await;
    assert!(
        lease.catalog().pin_reports().is_empty(),
        "first sight: pinned silently"
    );
    drop(lease);
    m.dispose_all().await;
    assert!(events.lock().unwrap().is_empty());
    let (m, lease) = run(cache, &config(REVISED)).await;
    let told = events.lock().unwrap().clone();
    (m, lease, told)
}

fn report<'a>(reports: &'a [PinReport], tool: &str) -> &'a PinReport {
    reports
        .iter()
        .find(|r| r.tool == tool)
        .unwrap_or_else(|| panic!("no report for {tool}: {reports:?}"))
}

#[tokio::test]
async fn changed_definitions_under_warn_are_used_and_reported() {
    let dir = temp_dir("warn");
    let (m, lease, told) = revised_under(PinPolicy::Warn, &dir).await;
    let reports = lease.catalog().pin_reports();
    let echo = report(reports, "echo");
    assert_eq!(echo.status, PinStatus::Changed);
    assert_eq!(
        echo.diff,
        [
            "description: \"Returns the given text unchanged.\" → \"Returns the given text unchanged (revised).\""
        ]
    );
    let add = report(reports, "add");
    assert!(
        add.diff
            .iter()
            .any(|l| l.starts_with("inputSchema.properties.c: added")),
        "{:?}",
        add.diff
    );
    assert_eq!(report(reports, "added_tool").status, PinStatus::Added);
    assert_eq!(report(reports, "fail").status, PinStatus::Removed);
    // The new definitions are offered and callable, marked changed.
    let t = lease.catalog().get("a__echo").unwrap();
    assert!(t.description().unwrap().contains("revised"));
    assert_eq!(t.definition_changed().unwrap().len(), 1);
    assert!(
        lease
            .catalog()
            .get("a__add")
            .unwrap()
            .definition_changed()
            .is_some()
    );
    assert!(
        lease
            .catalog()
            .get("a__read_file")
            .unwrap()
            .definition_changed()
            .is_none()
    );
    assert!(lease.catalog().get("a__added_tool").is_some());
    assert_eq!(
        lease
            .call_tool("a__echo", json!({"text": "w"}))
            .await
            .unwrap()
            .text(),
        "w"
    );
    // Each event told once.
    let mut names: Vec<&str> = told.iter().map(|e| e.tool.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "added_tool", "echo", "fail"]);
    drop(lease);
    m.dispose_all().await;
    // Still changed next run (not approved), but not told again.
    let events = Arc::new(AtomicUsize::new(0));
    let count = events.clone();
    let cache = CatalogCache::in_dir(&dir)
        .background_connect(false)
        .on_pin_event(Arc::new(move |_: &PinReport| {
            count.fetch_add(1, Ordering::SeqCst);
        }));
    let (m, lease) = run(cache, &config(REVISED)).await;
    assert_eq!(
        report(lease.catalog().pin_reports(), "echo").status,
        PinStatus::Changed
    );
    assert_eq!(events.load(Ordering::SeqCst), 0);
    drop(lease);
    m.dispose_all().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn changed_definitions_under_block_are_withheld_until_approved() {
    let dir = temp_dir("block");
    let (m, lease, told) = revised_under(PinPolicy::Block, &dir).await;
    let reports = lease.catalog().pin_reports();
    assert_eq!(report(reports, "echo").status, PinStatus::Blocked);
    assert_eq!(report(reports, "add").status, PinStatus::Blocked);
    assert_eq!(told.len(), 4);
    // Neither offered nor callable.
    assert!(lease.catalog().get("a__echo").is_none());
    assert!(lease.catalog().get("a__add").is_none());
    let err = lease
        .call_tool("a__echo", json!({"text": "w"}))
        .await
        .unwrap_err();
    assert!(matches!(err, RuntimeError::UnknownTool { .. }), "{err}");
    // Unchanged and new tools are offered.
    assert!(lease.catalog().get("a__read_file").is_some());
    assert!(lease.catalog().get("a__added_tool").is_some());
    drop(lease);
    m.dispose_all().await;

    assert!(pins::approve(&dir, "a", "echo").unwrap());
    assert!(
        !pins::approve(&dir, "a", "echo").unwrap(),
        "nothing left to approve"
    );
    let cache = CatalogCache::in_dir(&dir)
        .pinning(PinPolicy::Block)
        .background_connect(false);
    let (m, lease) = run(cache.clone(), &config(REVISED)).await;
    assert!(
        lease
            .catalog()
            .get("a__echo")
            .unwrap()
            .description()
            .unwrap()
            .contains("revised")
    );
    assert!(
        lease.catalog().get("a__add").is_none(),
        "only what was approved"
    );
    assert_eq!(
        lease
            .call_tool("a__echo", json!({"text": "ok"}))
            .await
            .unwrap()
            .text(),
        "ok"
    );
    drop(lease);
    m.dispose_all().await;
    // Reset: the next list is pinned as first seen.
    assert_eq!(pins::reset(&dir, Some("a")).unwrap(), 1);
    let (m, lease) = run(cache, &config(REVISED)).await;
    assert!(lease.catalog().get("a__add").is_some());
    assert!(lease.catalog().pin_reports().is_empty());
    drop(lease);
    m.dispose_all().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn per_server_policy_and_off() {
    let dir = temp_dir("off");
    let (m, lease, told) = revised_under(PinPolicy::Off, &dir).await;
    assert!(lease.catalog().pin_reports().is_empty());
    assert!(told.is_empty());
    assert!(
        lease
            .catalog()
            .get("a__echo")
            .unwrap()
            .definition_changed()
            .is_none()
    );
    drop(lease);
    m.dispose_all().await;
    assert!(pins::list(&dir).unwrap().is_empty(), "off keeps no pins");

    // A server's own policy wins over the runtime's.
    let dir = temp_dir("per-server");
    let cache = CatalogCache::in_dir(&dir)
        .pinning(PinPolicy::Warn)
        .server_pinning("a", PinPolicy::Block);
    let (m, lease) = run(cache.clone(), &config(ORIGINAL)).await;
    drop(lease);
    m.dispose_all().await;
    let (m, lease) = run(cache, &config(REVISED)).await;
    assert!(lease.catalog().get("a__echo").is_none());
    drop(lease);
    m.dispose_all().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_server_s_pinning_key_in_the_config_sets_its_policy() {
    let dir = temp_dir("config-key");
    let cache = CatalogCache::in_dir(&dir).pinning(PinPolicy::Warn);
    let (m, lease) = run(cache.clone(), &config(ORIGINAL)).await;
    drop(lease);
    m.dispose_all().await;
    let revised = config(
        r#"{"mcpServers": {"a": {"command": "kit", "args": ["--revise-tools"], "pinning": "block"}}}"#,
    );
    let (m, lease) = run(cache, &revised).await;
    assert!(
        lease.catalog().get("a__echo").is_none(),
        "the config's block wins over warn"
    );
    assert_eq!(
        report(lease.catalog().pin_reports(), "echo").status,
        PinStatus::Blocked
    );
    drop(lease);
    m.dispose_all().await;
    // Not part of the fingerprint; a wrong value is a config error.
    let plain = config(r#"{"mcpServers": {"a": {"command": "kit"}}}"#);
    let pinned = config(r#"{"mcpServers": {"a": {"command": "kit", "pinning": "off"}}}"#);
    assert_eq!(plain.fingerprint, pinned.fingerprint);
    let bad = parse_str(
        r#"{"mcpServers": {"a": {"command": "kit", "pinning": "never"}}}"#,
        &Options::new(),
    );
    let text = match bad {
        Ok(loaded) => format!("{:?}", loaded.report.problems),
        Err(e) => e.to_string(),
    };
    assert!(text.contains("must be block, warn or off"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
