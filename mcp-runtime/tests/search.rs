//! Tool search over a session's servers and deferred tool loading: ranked
//! results across servers, an index that follows `list_changed` (updated,
//! not rebuilt), and the deferred catalog an agent hands its model.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::config;
use common::scripted::{Script, Scripted, options};
use mcp_stack_runtime::search::{MAX_QUERY_BYTES, SearchError};
use mcp_stack_runtime::{
    DeferredError, DeferredTools, RuntimeError, RuntimeManager, RuntimeOptions, SEARCH_TOOLS,
};
use mcp_stack_testkit::InProcessConnector;
use serde_json::{Value, json};

fn tool(name: &str, description: &str, params: &[&str]) -> Value {
    let properties: serde_json::Map<String, Value> = params
        .iter()
        .map(|p| ((*p).to_owned(), json!({"type": "string"})))
        .collect();
    json!({
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties}
    })
}

const TWO: &str = r#"{"mcpServers": {"github": {"command": "x"}, "billing": {"command": "x"}}}"#;

fn kit() -> Arc<Scripted> {
    let kit = Scripted::new();
    kit.serve(
        "github",
        Script {
            tools: vec![
                tool(
                    "create_issue",
                    "Create an issue in a repository.",
                    &["repo", "title"],
                ),
                tool("list_issues", "List the issues of a repository.", &["repo"]),
                tool(
                    "merge_pull_request",
                    "Merge a pull request.",
                    &["repo", "number"],
                ),
            ],
            ..Script::full()
        },
    );
    kit.serve(
        "billing",
        Script {
            tools: vec![
                tool(
                    "list_invoices",
                    "List a customer's invoices.",
                    &["customerId"],
                ),
                tool(
                    "refund",
                    "Refund a payment, fully or in part.",
                    &["paymentId", "amount"],
                ),
            ],
            ..Script::full()
        },
    );
    kit
}

async fn eventually(mut f: impl AsyncFnMut() -> bool) {
    for _ in 0..400 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("condition not reached");
}

fn found(matches: &[mcp_stack_runtime::ToolMatch]) -> Vec<&str> {
    matches.iter().map(|m| m.tool().name()).collect()
}

#[tokio::test]
async fn search_spans_every_server_and_follows_list_changed() {
    let kit = kit();
    let m = RuntimeManager::with_connector(options(), kit.clone());
    let cfg = config(TWO);
    let before = m.acquire("s", &cfg).await.unwrap();
    // Over both servers, best first; the lease derefs to the runtime.
    let hits = before.search_tools("list invoices", 3).unwrap();
    assert_eq!(found(&hits)[0], "billing__list_invoices");
    assert!(hits[0].exact_name());
    assert!(found(&hits).contains(&"github__list_issues"));
    assert_eq!(
        found(&before.search_tools("refund a payment", 1).unwrap()),
        ["billing__refund"]
    );
    assert_eq!(
        found(&before.search_tools("customer", 5).unwrap()),
        ["billing__list_invoices"]
    );
    assert_eq!(before.catalog().tool_index().reused(), 0);
    let long = "x".repeat(MAX_QUERY_BYTES + 1);
    assert!(matches!(
        before.search_tools(&long, 1),
        Err(SearchError::QueryTooLong { .. })
    ));

    // A tool added on one server: the fresh catalog's index is the old one
    // updated, every unchanged tool carried over.
    kit.edit("billing", |s| {
        s.tools.push(tool(
            "create_invoice",
            "Bill a customer.",
            &["customerId", "lines"],
        ))
    });
    kit.notify("billing", "notifications/tools/list_changed")
        .await;
    eventually(async || {
        m.acquire("s", &cfg)
            .await
            .unwrap()
            .catalog()
            .get("billing__create_invoice")
            .is_some()
    })
    .await;
    let after = m.acquire("s", &cfg).await.unwrap();
    let hits = after.search_tools("create invoice", 2).unwrap();
    assert_eq!(found(&hits)[0], "billing__create_invoice");
    assert_eq!(after.catalog().tool_index().reused(), 5);
    assert_eq!(after.catalog().tool_index().len(), 6);
    // The lease taken before keeps its snapshot, and its index.
    assert!(
        !found(&before.search_tools("create invoice", 5).unwrap())
            .contains(&"billing__create_invoice")
    );
    drop((before, after));
    m.dispose_all().await;
}

const KIT: &str = r#"{"mcpServers": {"kit": {"command": "mcp-testkit"}}}"#;

#[tokio::test]
async fn deferred_tools_hand_out_search_then_what_it_found() {
    let m = RuntimeManager::with_connector(
        RuntimeOptions::default(),
        Arc::new(InProcessConnector::new()),
    );
    let lease = m.acquire("agent", &config(KIT)).await.unwrap();
    let deferred = DeferredTools::new().always_on(["kit__echo"]);

    let first: Vec<String> = deferred.tools(&lease).into_iter().map(|t| t.name).collect();
    assert_eq!(first, [SEARCH_TOOLS, "kit__echo"]);
    // Always on: callable at once.
    let echoed = deferred
        .call_tool(&lease, "kit__echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(echoed.text(), "hi");
    // Not surfaced yet: refused, saying to search first; nothing reached the server.
    let err = deferred
        .call_tool(&lease, "kit__add", json!({"a": 1, "b": 2}))
        .await
        .unwrap_err();
    assert!(matches!(&err, DeferredError::NotSurfaced { name } if name == "kit__add"));
    assert!(err.to_string().contains("call `search_tools`"), "{err}");
    // An unknown name is the runtime's error.
    let err = deferred
        .call_tool(&lease, "kit__nope", json!({}))
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        DeferredError::Runtime(RuntimeError::UnknownTool { .. })
    ));

    // The model searches; the result carries the definitions.
    let result = deferred
        .call_tool(
            &lease,
            SEARCH_TOOLS,
            json!({"query": "add two numbers", "limit": 2}),
        )
        .await
        .unwrap();
    assert!(!result.is_error());
    let text = result.text();
    assert!(text.contains("\"name\":\"kit__add\""), "{text}");
    assert!(text.contains("\"inputSchema\""), "{text}");
    assert!(deferred.is_callable("kit__add"));
    let sum = deferred
        .call_tool(&lease, "kit__add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(sum.text(), "3");
    let second: Vec<String> = deferred.tools(&lease).into_iter().map(|t| t.name).collect();
    assert_eq!(second[0], SEARCH_TOOLS);
    assert!(second.contains(&"kit__add".to_owned()) && second.contains(&"kit__echo".to_owned()));
    assert!(second.len() <= 2 + 2, "{second:?}");

    // Mistakes are tool results the model can read.
    for bad in [
        json!({}),
        json!({"query": 3}),
        json!({"query": "x", "limit": "many"}),
    ] {
        let r = deferred.call_tool(&lease, SEARCH_TOOLS, bad).await.unwrap();
        assert!(r.is_error(), "{}", r.text());
    }
    let long = json!({"query": "y".repeat(MAX_QUERY_BYTES + 1)});
    assert!(
        deferred
            .call_tool(&lease, SEARCH_TOOLS, long)
            .await
            .unwrap()
            .is_error()
    );

    // The bytes: two listings of the full catalog against what was handed.
    let savings = deferred.savings();
    let full = lease.catalog().tool_index().full_schema_bytes();
    assert_eq!((savings.listings, savings.searches), (2, 1));
    assert_eq!(savings.full_bytes, 2 * full);
    assert!(savings.handed_bytes > 0);
    assert!(savings.saved_bytes() > full, "{savings:?}, full {full}");
    assert_eq!(
        savings.saved_bytes(),
        savings.full_bytes - savings.handed_bytes
    );
    drop(lease);
    m.dispose_all().await;
}
