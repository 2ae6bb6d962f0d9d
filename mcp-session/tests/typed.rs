//! Typed calls and streams end to end against the testkit (in-process, over
//! a duplex stream): arguments from `Serialize` structs, results read into
//! the caller's types, `isError` as an `Err` with the tool's text, typed
//! prompt arguments and resource contents; the notifications as a stream
//! (list changes, resource updates, progress, log messages) and
//! subscriptions as streams, in both eras; dropping a stream closes it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_core::Stream;
use mcp_stack_session::types::{DecodeError, ProgressParams};
use mcp_stack_session::{
    CallOptions, ProtocolMode, ProtocolPin, ServerNotification, Session, SessionConfig,
    SessionError, SubscriptionFilter,
};
use mcp_stack_testkit::{Era, Misbehaviour, ServerOptions, serve};
use mcp_stack_transport::stream::StreamTransport;
use serde::{Deserialize, Serialize};
use serde_json::json;

const ERAS: [(Era, ProtocolMode); 2] = [
    (Era::Legacy, ProtocolMode::Handshake),
    (Era::Modern, ProtocolMode::Discover),
];

async fn connect_with(options: ServerOptions, mode: ProtocolMode) -> Session {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (r, w) = tokio::io::split(server);
    tokio::spawn(serve(options, r, w));
    let (r, w) = tokio::io::split(client);
    let config = SessionConfig::new()
        .protocol(ProtocolPin::Mode(mode))
        .server_name("kit");
    Session::connect(StreamTransport::new(r, w), config)
        .await
        .unwrap()
}

async fn connect(era: Era, mode: ProtocolMode) -> Session {
    let mut options = ServerOptions::default();
    options.era = era;
    connect_with(options, mode).await
}

/// Waits (bounded) for the next item of a stream.
async fn next<S: Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    let next = std::future::poll_fn(|cx| Pin::new(&mut *stream).poll_next(cx));
    tokio::time::timeout(Duration::from_secs(20), next)
        .await
        .expect("no item within 20 s")
}

#[derive(Serialize)]
struct Add {
    a: f64,
    b: f64,
}

#[derive(Debug, Deserialize, PartialEq)]
struct Sum {
    sum: f64,
}

#[derive(Debug, Deserialize)]
struct NotASum {
    #[allow(dead_code)]
    total: String,
}

#[tokio::test]
async fn a_struct_goes_in_and_the_structured_content_comes_out_typed() {
    for (era, mode) in ERAS {
        let s = connect(era, mode).await;
        let result = s.call_tool("add", Add { a: 2.0, b: 3.5 }).await.unwrap();
        assert_eq!(
            result.structured::<Sum>().unwrap(),
            Sum { sum: 5.5 },
            "{era:?}"
        );
        // A type the content does not fit: typed, saying what.
        let err = result.structured::<NotASum>().unwrap_err();
        assert!(
            matches!(
                &err,
                DecodeError::Invalid {
                    what: "structuredContent",
                    ..
                }
            ),
            "{era:?}: {err:?}"
        );
        assert!(err.to_string().contains("missing field `total`"), "{err}");
        // No structured content at all (echo has no output schema).
        #[derive(Serialize)]
        struct Echo<'a> {
            text: &'a str,
        }
        let echoed = s.call_tool("echo", Echo { text: "hi" }).await.unwrap();
        assert_eq!(echoed.text(), "hi");
        let missing = echoed.structured::<Sum>().unwrap_err();
        assert!(
            matches!(missing, DecodeError::Missing("structuredContent")),
            "{missing:?}"
        );
        // Through `?` both become a SessionError.
        let via_question_mark = async {
            let sum: Sum = s
                .call_tool("add", json!({"a": 1, "b": 1}))
                .await?
                .into_result()?
                .structured()?;
            Ok::<_, SessionError>(sum)
        };
        assert_eq!(via_question_mark.await.unwrap(), Sum { sum: 2.0 });
        let as_session_error: SessionError = missing_into(echoed);
        assert!(
            matches!(as_session_error, SessionError::Decode(_)),
            "{as_session_error:?}"
        );
        s.close().await;
    }
}

fn missing_into(result: mcp_stack_session::types::CallToolResult) -> SessionError {
    let read = || -> Result<Sum, SessionError> { Ok(result.structured()?) };
    read().unwrap_err()
}

#[tokio::test]
async fn struct_arguments_are_checked_against_the_schema_before_sending() {
    #[derive(Serialize)]
    struct Wrong {
        a: &'static str,
        b: f64,
    }
    let s = connect(Era::Legacy, ProtocolMode::Handshake).await;
    let err = s
        .call_tool("add", Wrong { a: "two", b: 3.0 })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, SessionError::InvalidArguments { tool, problems } if tool == "add" && problems[0].path == "/a"),
        "{err:?}"
    );
    // A value serde cannot write as JSON is an error of the arguments too.
    let mut bad = BTreeMap::new();
    bad.insert((1, 2), "x");
    let err = s.call_tool("echo", bad).await.unwrap_err();
    assert!(
        matches!(&err, SessionError::InvalidArguments { problems, .. } if problems[0].message.contains("cannot be written as JSON")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_failed_tool_is_an_err_carrying_its_text() {
    for (era, mode) in ERAS {
        let s = connect(era, mode).await;
        let result = s
            .call_tool("fail", json!({"message": "the disk is full"}))
            .await
            .unwrap();
        assert!(result.is_error());
        let err = result.clone().into_result().unwrap_err();
        assert_eq!(err.text(), "the disk is full");
        assert_eq!(
            err.to_string(),
            "the tool reported an error: the disk is full"
        );
        assert_eq!(err.result(), &result);
        // structured() on a failure is the failure, not its content.
        assert!(matches!(
            result.structured::<Sum>(),
            Err(DecodeError::Tool(e)) if e.text() == "the disk is full"
        ));
        let through: Result<_, SessionError> = async {
            Ok(s.call_tool("fail", json!({"message": "nope"}))
                .await?
                .into_result()?)
        }
        .await;
        let Err(SessionError::Tool(e)) = through else {
            panic!("{era:?}: not a tool error: {through:?}")
        };
        assert_eq!(e.text(), "nope");
        // A successful call passes through unchanged.
        let ok = s.call_tool("echo", json!({"text": "fine"})).await.unwrap();
        assert_eq!(ok.into_result().unwrap().text(), "fine");
        s.close().await;
    }
}

#[tokio::test]
async fn prompts_take_typed_arguments_and_resources_read_typed() {
    #[derive(Serialize)]
    struct Greeting<'a> {
        name: &'a str,
    }
    #[derive(Serialize)]
    struct Review {
        code: &'static str,
        style: Option<&'static str>,
    }
    for (era, mode) in ERAS {
        let s = connect(era, mode).await;
        let prompt = s
            .get_prompt("greeting", Greeting { name: "Ada" })
            .await
            .unwrap();
        let text = serde_json::to_string(&prompt.messages).unwrap();
        assert!(text.contains("Ada"), "{era:?}: {text}");
        // An unset Option is left out: `style` is optional.
        s.get_prompt(
            "review",
            Review {
                code: "x = 1",
                style: None,
            },
        )
        .await
        .unwrap();
        // A number is sent as its text.
        let numbered = s.get_prompt("greeting", json!({"name": 42})).await.unwrap();
        assert!(
            serde_json::to_string(&numbered.messages)
                .unwrap()
                .contains("42")
        );
        // Nested values are not prompt arguments: nothing is sent.
        let err = s
            .get_prompt("greeting", json!({"name": {"first": "Ada"}}))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, SessionError::InvalidPromptArguments { problems, .. } if problems.contains("`name` is an object")),
            "{err:?}"
        );
        // A required argument missing is still caught against the list.
        let err = s.get_prompt("greeting", ()).await.unwrap_err();
        assert!(
            matches!(err, SessionError::InvalidPromptArguments { .. }),
            "{err:?}"
        );

        let read = s.read_resource("test://text/1").await.unwrap();
        let text = read.text().unwrap();
        assert!(!text.is_empty());
        // Its text is not JSON: typed, not a panic.
        assert!(matches!(
            read.json::<serde_json::Value>(),
            Err(DecodeError::Invalid { .. })
        ));
        let blob = s.read_resource("test://blob/1").await.unwrap();
        assert_eq!(blob.text(), None);
        assert!(matches!(
            blob.json::<serde_json::Value>(),
            Err(DecodeError::Missing(_))
        ));
        s.close().await;
    }
}

#[tokio::test]
async fn the_notifications_stream_carries_list_changes_updates_progress_and_logs() {
    for (era, mode) in ERAS {
        let mut options = ServerOptions::default();
        options.era = era;
        options.misbehaviours = vec![Misbehaviour::FloodNotifications];
        options.flood_count = 3;
        let s = connect_with(options, mode).await;
        let mut all = s.notifications();
        assert_eq!(s.diagnostics().notification_streams, 1);
        // 2026-07-28 sends list changes and updates only on a listen stream;
        // before it, list changes come unasked and updates once subscribed.
        let mut sub = s
            .listen(
                SubscriptionFilter::new()
                    .resources_list_changed()
                    .resource("test://text/1"),
            )
            .await
            .unwrap();

        // Each tools/call sends three log messages first (the flood, kept small).
        s.call_tool("add_resource", json!({})).await.unwrap();
        let mut logs = 0;
        let mut list_changed = false;
        while logs < 3 || !list_changed {
            match next(&mut all).await.unwrap() {
                ServerNotification::Log(_) => logs += 1,
                ServerNotification::ResourcesListChanged => list_changed = true,
                other => panic!("{era:?}: unexpected {other:?}"),
            }
        }

        // Progress of a call reaches the stream as well as the call's listener.
        let heard = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = Arc::clone(&heard);
        let options = CallOptions::new().on_progress(move |_: &ProgressParams| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
        s.call_tool_with("progress", json!({"steps": 2, "intervalMs": 0}), options)
            .await
            .unwrap();
        let mut progress = 0;
        while progress < 2 {
            match next(&mut all).await.unwrap() {
                ServerNotification::Progress(_) => progress += 1,
                ServerNotification::Log(_) => {}
                other => panic!("{era:?}: unexpected {other:?}"),
            }
        }
        assert_eq!(heard.load(std::sync::atomic::Ordering::Relaxed), 2);

        // A resource update, through the subscription consumed as a stream
        // (the list change came first); the session-wide stream sees it too.
        s.call_tool("touch_resource", json!({"uri": "test://text/1"}))
            .await
            .unwrap();
        match next(&mut sub).await {
            Some(Ok(ServerNotification::ResourcesListChanged)) => {}
            other => panic!("{era:?}: {other:?}"),
        }
        match next(&mut sub).await {
            Some(Ok(ServerNotification::ResourceUpdated(u))) => {
                assert_eq!(u.uri, "test://text/1")
            }
            other => panic!("{era:?}: {other:?}"),
        }
        loop {
            match next(&mut all).await.unwrap() {
                ServerNotification::ResourceUpdated(u) => {
                    assert_eq!(u.uri, "test://text/1");
                    break;
                }
                ServerNotification::Log(_) => {}
                other => panic!("{era:?}: unexpected {other:?}"),
            }
        }
        assert_eq!(all.dropped(), 0);
        assert_eq!(sub.dropped(), 0);
        drop(sub);

        // Dropping the stream closes it at once.
        drop(all);
        assert_eq!(s.diagnostics().notification_streams, 0);
        // A stream ends when the connection closes.
        let mut late = s.notifications();
        s.close().await;
        assert!(next(&mut late).await.is_none(), "{era:?}");
        assert_eq!(s.diagnostics().notification_streams, 0);
    }
}

#[tokio::test]
async fn a_stream_that_falls_behind_drops_the_oldest_and_counts_them() {
    let mut options = ServerOptions::default();
    options.misbehaviours = vec![Misbehaviour::FloodNotifications];
    options.flood_count = 300;
    let s = connect_with(options, ProtocolMode::Handshake).await;
    let mut all = s.notifications();
    // Nobody reads while 300 log messages arrive before the answer.
    s.call_tool("echo", json!({"text": "x"})).await.unwrap();
    let mut kept = Vec::new();
    while (kept.len() as u64) + all.dropped() < 300 {
        match next(&mut all).await.unwrap() {
            ServerNotification::Log(m) => kept.push(m.data.as_str().unwrap_or("").to_owned()),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(kept.len(), 256);
    assert_eq!(all.dropped(), 44);
    assert!(s.diagnostics().dropped_notifications >= 44);
    // The oldest went; the newest stayed, in order.
    assert_eq!(kept[0], "flood notification 45 of 300");
    assert_eq!(kept[255], "flood notification 300 of 300");
}

#[tokio::test]
async fn dropping_a_subscription_stream_unsubscribes() {
    use common::{Reply, init_result, start};
    let (t, fake) = start(Arc::new(|r: &mcp_stack_jsonrpc::Request| {
        match r.method.as_str() {
            "initialize" => Reply::Ok(init_result(
                "2025-11-25",
                json!({"resources": {"subscribe": true}}),
            )),
            _ => Reply::Ok(json!({})),
        }
    }));
    let config = SessionConfig::new().protocol(ProtocolPin::Mode(ProtocolMode::Handshake));
    let s = Session::connect_shared(t, config).await.unwrap();
    let mut sub = s
        .listen(SubscriptionFilter::new().resource("file:///a"))
        .await
        .unwrap();
    use mcp_stack_transport::Transport as _;
    fake.server
        .send(&mcp_stack_jsonrpc::Message::from(
            mcp_stack_jsonrpc::Notification::new(
                "notifications/resources/updated",
                Some(mcp_stack_jsonrpc::to_raw(&json!({"uri": "file:///a"})).unwrap()),
            ),
        ))
        .await
        .unwrap();
    assert!(matches!(
        next(&mut sub).await,
        Some(Ok(ServerNotification::ResourceUpdated(_)))
    ));
    let count = |m: &str| fake.methods().iter().filter(|x| *x == m).count();
    assert_eq!(count("resources/subscribe"), 1);
    assert_eq!(count("resources/unsubscribe"), 0);
    drop(sub);
    common::until("resources/unsubscribe after the drop", || {
        count("resources/unsubscribe") == 1
    })
    .await;
}
