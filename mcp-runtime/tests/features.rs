//! Resources, resource templates, prompts and completion through the
//! runtime, against scripted servers: namespacing across servers, routing
//! to the right one, unknown and ambiguous names, servers without the
//! capabilities, list failures as notes, refresh on `list_changed`, and the
//! session's handlers reaching every server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::config;
use common::scripted::{Script, Scripted, options};
use mcp_stack_runtime::{EntryKind, RuntimeError, RuntimeManager};
use mcp_stack_session::types::Root;
use mcp_stack_session::{ClientHandler, ClientHandlers, SessionError};
use serde_json::{Value, json};

const FOUR: &str = r#"{"mcpServers": {
    "a": {"command": "x"},
    "b": {"command": "x"},
    "c": {"command": "x"},
    "d": {"command": "x"}
}}"#;

fn kit() -> Arc<Scripted> {
    let kit = Scripted::new();
    for name in ["a", "b"] {
        kit.serve(
            name,
            Script {
                resources: vec![
                    json!({"uri": "file:///shared", "name": "readme"}),
                    json!({"uri": format!("{name}://only"), "name": "only"}),
                ],
                templates: vec![
                    json!({"uriTemplate": format!("{name}://items/{{id}}"), "name": "item"}),
                ],
                prompts: vec![
                    json!({"name": "greet", "arguments": [{"name": "who", "required": true}]}),
                ],
                ..Script::full()
            },
        );
    }
    // Tools only: no resources, prompts or completions declared.
    kit.serve(
        "c",
        Script {
            capabilities: json!({"tools": {}}),
            ..Script::full()
        },
    );
    // Its resource lists fail; its prompts work.
    kit.serve(
        "d",
        Script {
            prompts: vec![json!({"name": "summarize"})],
            fail_resources: true,
            ..Script::full()
        },
    );
    kit
}

fn names<T>(items: &[T], name: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|i| name(i).to_owned()).collect()
}

fn args(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A result as JSON text.
macro_rules! text {
    ($v:expr) => {
        serde_json::to_string($v).unwrap()
    };
}

/// Waits (real time, briefly) until `f` holds.
async fn eventually(mut f: impl AsyncFnMut() -> bool) {
    for _ in 0..400 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("condition not reached");
}

#[tokio::test]
async fn entries_are_namespaced_across_servers_and_failures_are_notes() {
    let kit = kit();
    let m = RuntimeManager::with_connector(options(), kit.clone());
    let lease = m.acquire("s", &config(FOUR)).await.unwrap();
    let cat = lease.catalog();
    assert!(cat.failures().is_empty(), "{:?}", cat.failures());
    assert_eq!(
        names(cat.resources(), |r| r.name()),
        ["a__only", "a__readme", "b__only", "b__readme"]
    );
    assert_eq!(
        names(cat.resource_templates(), |t| t.name()),
        ["a__item", "b__item"]
    );
    assert_eq!(
        names(cat.prompts(), |p| p.name()),
        ["a__greet", "b__greet", "d__summarize"]
    );
    let r = cat.resource("b__readme").unwrap();
    assert_eq!((r.server(), r.uri()), ("b", "file:///shared"));
    assert_eq!(cat.prompt("a__greet").unwrap().arguments()[0].name, "who");
    // The tools are still there, and named apart from the other kinds.
    assert_eq!(cat.len(), 4);
    // `c` declares none of them: nothing listed, nothing asked, no note.
    assert!(
        !kit.methods("c")
            .iter()
            .any(|m| m.starts_with("resources/") || m.starts_with("prompts/"))
    );
    assert!(
        cat.notes().iter().all(|n| n.server != "c"),
        "{:?}",
        cat.notes()
    );
    // `d`'s failing lists are notes, the build went on, its prompts are there.
    let d_notes: Vec<&str> = cat
        .notes()
        .iter()
        .filter(|n| n.server == "d")
        .map(|n| n.message.as_str())
        .collect();
    assert_eq!(d_notes.len(), 2, "{d_notes:?}");
    assert!(
        d_notes[0].starts_with("resources/list failed")
            && d_notes[0].contains("the index is broken"),
        "{d_notes:?}"
    );
    assert!(
        d_notes[1].starts_with("resources/templates/list failed"),
        "{d_notes:?}"
    );
    drop(lease);
    m.dispose_all().await;
}

#[tokio::test]
async fn read_get_and_complete_go_to_the_right_server() {
    let kit = kit();
    let m = RuntimeManager::with_connector(options(), kit.clone());
    let lease = m.acquire("s", &config(FOUR)).await.unwrap();

    // By namespaced name: the server and URI behind it.
    let read = lease.read_resource("b__readme").await.unwrap();
    assert!(
        text!(&read).contains("b read file:///shared"),
        "{}",
        text!(&read)
    );
    // By URI, when one server lists it.
    let read = lease.read_resource("a://only").await.unwrap();
    assert!(text!(&read).contains("a read a://only"), "{}", text!(&read));
    // A URI filled in from a template: to the server named.
    let read = lease.read_resource_at("a", "a://items/7").await.unwrap();
    assert!(text!(&read).contains("a read a://items/7"));

    let prompt = lease
        .get_prompt("b__greet", args(&[("who", "Ada")]))
        .await
        .unwrap();
    assert!(
        text!(&prompt).contains(r#"b prompt greet {\"who\":\"Ada\"}"#),
        "{}",
        text!(&prompt)
    );
    // The prompt's declared arguments are checked before anything is sent.
    let err = lease
        .get_prompt("a__greet", BTreeMap::new())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err.session_error(),
            Some(SessionError::InvalidPromptArguments { .. })
        ),
        "{err}"
    );

    let c = lease
        .complete_prompt_argument("a__greet", "who", "A", args(&[("lang", "en")]))
        .await
        .unwrap();
    assert_eq!(c.values[0], "a:ref/prompt:greet");
    assert_eq!(c.values[1], "who=A");
    assert!(c.values[2].contains("lang"), "{:?}", c.values);
    let c = lease
        .complete_resource_variable("b__item", "id", "4", BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(c.values[0], "b:ref/resource:b://items/{id}");

    // Each request went to its server only.
    let reads = |s: &str| {
        kit.seen(s)
            .into_iter()
            .filter(|x| x.method == "resources/read")
            .map(|x| x.params["uri"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(reads("a"), ["a://only", "a://items/7"]);
    assert_eq!(reads("b"), ["file:///shared"]);
    assert!(!kit.methods("a").contains(&"prompts/get".to_owned()));
    assert_eq!(m.stats().in_flight_calls, 0);
    drop(lease);
    m.dispose_all().await;
}

#[tokio::test]
async fn unknown_and_ambiguous_names_are_typed_errors() {
    let kit = kit();
    let m = RuntimeManager::with_connector(options(), kit.clone());
    let lease = m.acquire("s", &config(FOUR)).await.unwrap();

    match lease.read_resource("file:///shared").await.unwrap_err() {
        RuntimeError::AmbiguousResource { uri, candidates } => {
            assert_eq!(uri, "file:///shared");
            assert_eq!(candidates, ["a__readme", "b__readme"]);
        }
        other => panic!("{other}"),
    }
    let err = lease.read_resource("file:///nowhere").await.unwrap_err();
    assert!(
        matches!(&err, RuntimeError::UnknownEntry { kind: EntryKind::Resource, known, .. } if known.contains(&"a__readme".to_owned())),
        "{err}"
    );
    assert!(
        err.to_string().contains("known resources include: a__only"),
        "{err}"
    );
    let err = lease
        .get_prompt("c__greet", BTreeMap::new())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            RuntimeError::UnknownEntry {
                kind: EntryKind::Prompt,
                ..
            }
        ),
        "{err}"
    );
    let err = lease
        .complete_resource_variable("a__greet", "id", "", BTreeMap::new())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            RuntimeError::UnknownEntry {
                kind: EntryKind::ResourceTemplate,
                ..
            }
        ),
        "{err}"
    );
    let err = lease.read_resource_at("zz", "a://x").await.unwrap_err();
    assert!(
        matches!(&err, RuntimeError::UnknownServer { connected, .. } if connected.len() == 4),
        "{err}"
    );
    // Nothing unknown reached a server.
    assert!(!kit.methods("a").contains(&"completion/complete".to_owned()));
    assert!(!kit.methods("a").contains(&"resources/read".to_owned()));
    drop(lease);
    m.dispose_all().await;
}

#[tokio::test]
async fn list_changed_refreshes_the_catalog() {
    let kit = kit();
    let m = RuntimeManager::with_connector(options(), kit.clone());
    let cfg = config(FOUR);
    let before = m.acquire("s", &cfg).await.unwrap();
    assert!(before.catalog().resource("a__new").is_none());

    kit.edit("a", |s| {
        s.resources.push(json!({"uri": "a://new", "name": "new"}));
        s.prompts.clear();
    });
    // Without a notification the session's caches hold: nothing new.
    assert!(!m.refresh_catalog("s").await);
    kit.notify("a", "notifications/resources/list_changed")
        .await;
    kit.notify("a", "notifications/prompts/list_changed").await;
    eventually(async || {
        let lease = m.acquire("s", &cfg).await.unwrap();
        lease.catalog().resource("a__new").is_some() && lease.catalog().prompt("a__greet").is_none()
    })
    .await;
    let after = m.acquire("s", &cfg).await.unwrap();
    assert_eq!(
        after.read_resource("a__new").await.unwrap().contents.len(),
        1
    );
    // The lease taken before keeps its snapshot; no server was restarted.
    assert!(before.catalog().resource("a__new").is_none());
    assert!(before.catalog().prompt("a__greet").is_some());
    assert_eq!((kit.connects("a"), kit.connects("b")), (1, 1));
    // Only the lists that changed were fetched again, from that server only.
    let count = |s: &str, method: &str| kit.methods(s).iter().filter(|m| *m == method).count();
    assert_eq!(count("a", "resources/list"), 2);
    assert_eq!(count("a", "prompts/list"), 2);
    assert_eq!(count("a", "tools/list"), 1);
    assert_eq!(count("b", "resources/list"), 1);

    // Tools follow the same path.
    kit.edit("b", |s| {
        s.tools
            .push(json!({"name": "pong", "inputSchema": {"type": "object"}}))
    });
    kit.notify("b", "notifications/tools/list_changed").await;
    eventually(async || {
        m.acquire("s", &cfg)
            .await
            .unwrap()
            .catalog()
            .get("b__pong")
            .is_some()
    })
    .await;
    // An explicit refresh with nothing new changes nothing.
    assert!(!m.refresh_catalog("s").await);
    assert!(!m.refresh_catalog("unknown").await);
    drop((before, after));
    m.dispose_all().await;
}

#[tokio::test]
async fn handlers_given_once_reach_every_server_of_the_session() {
    let kit = kit();
    let m = RuntimeManager::with_connector(options(), kit.clone());
    let cfg = config(FOUR);
    let handlers: Arc<dyn ClientHandler> =
        Arc::new(ClientHandlers::new().roots(vec![Root::new("file:///work", Some("work".into()))]));
    let lease = m.acquire_with_handlers("s", &cfg, &handlers).await.unwrap();
    for server in ["a", "b", "c", "d"] {
        let init = kit
            .seen(server)
            .into_iter()
            .find(|s| s.method == "initialize")
            .unwrap();
        assert_eq!(
            init.params["capabilities"]["roots"],
            json!({"listChanged": true}),
            "{server}"
        );
    }
    // A server asking for the roots gets the session's.
    kit.request("c", 99, "roots/list").await;
    eventually(async || !kit.answers("c").is_empty()).await;
    assert_eq!(kit.answers("c")[0]["roots"][0]["uri"], "file:///work");

    // The same handlers again, or a plain acquire: the same runtime.
    drop(m.acquire_with_handlers("s", &cfg, &handlers).await.unwrap());
    let plain = m.acquire("s", &cfg).await.unwrap();
    assert!(Arc::ptr_eq(lease.catalog(), plain.catalog()));
    assert_eq!(kit.connects("a"), 1);

    // Another session without handlers: the defaults (none), its own connections.
    let other = m.acquire("t", &cfg).await.unwrap();
    let last_init = kit
        .seen("a")
        .into_iter()
        .rfind(|s| s.method == "initialize")
        .unwrap();
    assert_eq!(
        last_init.params["capabilities"].get("roots"),
        None::<&Value>
    );
    assert_eq!(kit.connects("a"), 2);

    // Other handlers for `s`: every server of it starts again to declare them.
    let none: Arc<dyn ClientHandler> = Arc::new(ClientHandlers::new());
    let again = m.acquire_with_handlers("s", &cfg, &none).await.unwrap();
    assert_eq!(kit.connects("a"), 3);
    assert_eq!(kit.connects("d"), 3);
    assert!(again.catalog().resource("a__readme").is_some());
    drop((lease, plain, other, again));
    m.dispose_all().await;
}
