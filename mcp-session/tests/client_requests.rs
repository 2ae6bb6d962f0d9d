//! The client's handlers (elicitation, sampling, roots) end to end against
//! the testkit's `ask_user`, `sample` and `list_roots`, in both eras: server
//! requests answered while the call is pending before 2026-07-28,
//! `input_required` results answered on the retry in 2026-07-28; in-process
//! over a duplex stream, and over streamable HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use mcp_stack_jsonrpc::ErrorObject;
use mcp_stack_session::types::{ElicitRequestParams, ElicitResult, Root};
use mcp_stack_session::{
    ClientHandlers, Elicitor, ProtocolMode, ProtocolPin, Sampler, Session, SessionConfig,
    SessionError,
};
use mcp_stack_testkit::http::{HttpServer, HttpServerOptions};
use mcp_stack_testkit::{Era, ServerOptions, serve};
use mcp_stack_transport::BoxFuture;
use mcp_stack_transport::http::{HttpOptions, StreamableHttpTransport};
use mcp_stack_transport::stream::StreamTransport;
use serde_json::{Value, json};

/// Answers every elicitation with a fixed answer (URL mode too).
struct Fixed(Value);

impl Elicitor for Fixed {
    fn handles_urls(&self) -> bool {
        true
    }
    fn elicit<'a>(&'a self, request: &'a ElicitRequestParams) -> BoxFuture<'a, ElicitResult> {
        let answer = if request.mode.as_deref() == Some("url") {
            json!({"action": "accept"})
        } else {
            self.0.clone()
        };
        Box::pin(async move { serde_json::from_value(answer).unwrap() })
    }
}

/// A model that repeats the prompt.
struct Parrot;

impl Sampler for Parrot {
    fn create_message<'a>(
        &'a self,
        params: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ErrorObject>> {
        let prompt = params["messages"][0]["content"]["text"].clone();
        Box::pin(async move {
            Ok(
                json!({"role": "assistant", "model": "parrot-1", "stopReason": "endTurn",
                      "content": {"type": "text", "text": format!("you said {}", prompt.as_str().unwrap_or("?"))}}),
            )
        })
    }
}

fn ada() -> Value {
    json!({"action": "accept", "content": {"name": "Ada", "age": 36, "subscribe": true}})
}

fn all_handlers(answer: Value) -> ClientHandlers {
    ClientHandlers::new()
        .elicitation(Fixed(answer))
        .sampling(Parrot)
        .roots(vec![
            Root::new("file:///work/project", Some("project".into())),
            Root::new("file:///work/notes", None),
        ])
}

const ERAS: [(Era, ProtocolMode); 2] = [
    (Era::Legacy, ProtocolMode::Handshake),
    (Era::Modern, ProtocolMode::Discover),
];

/// A session with the testkit in-process, in `era`, with these handlers.
async fn connect(era: Era, mode: ProtocolMode, handlers: Option<ClientHandlers>) -> Session {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (r, w) = tokio::io::split(server);
    let mut options = ServerOptions::default();
    options.era = era;
    tokio::spawn(serve(options, r, w));
    let (r, w) = tokio::io::split(client);
    let mut config = SessionConfig::new()
        .protocol(ProtocolPin::Mode(mode))
        .server_name("kit");
    if let Some(h) = handlers {
        config = config.handler(h);
    }
    Session::connect(StreamTransport::new(r, w), config)
        .await
        .unwrap()
}

/// Each tool returns what the handlers answered.
async fn every_tool_reports_the_handlers_answers(s: &Session, era: Era) {
    let form = s.call_tool("ask_user", json!({})).await.unwrap();
    assert!(!form.is_error(), "{era:?}: {}", form.text());
    assert_eq!(
        form.structured_content.unwrap(),
        json!({"mode": "form", "action": "accept",
               "content": {"name": "Ada", "age": 36, "subscribe": true}}),
        "{era:?}"
    );

    let url = s
        .call_tool("ask_user", json!({"mode": "url"}))
        .await
        .unwrap();
    let url = url.structured_content.unwrap();
    assert_eq!(url["action"], "accept", "{era:?}");
    assert!(
        url["elicitationId"]
            .as_str()
            .unwrap()
            .starts_with("elicitation-")
    );

    let sampled = s
        .call_tool("sample", json!({"prompt": "hello"}))
        .await
        .unwrap();
    assert_eq!(sampled.text(), "you said hello", "{era:?}");
    assert_eq!(sampled.structured_content.unwrap()["model"], "parrot-1");

    let roots = s.call_tool("list_roots", json!({})).await.unwrap();
    assert_eq!(
        roots.structured_content.unwrap()["roots"],
        json!([{"uri": "file:///work/project", "name": "project"}, {"uri": "file:///work/notes"}]),
        "{era:?}"
    );
}

#[tokio::test]
async fn handlers_answer_every_tool_in_both_eras() {
    for (era, mode) in ERAS {
        let s = connect(era, mode, Some(all_handlers(ada()))).await;
        assert_eq!(!s.protocol_version().has_handshake(), era == Era::Modern);
        every_tool_reports_the_handlers_answers(&s, era).await;
        s.close().await;
    }
}

#[tokio::test]
async fn the_server_hears_of_changed_roots() {
    let s = connect(
        Era::Legacy,
        ProtocolMode::Handshake,
        Some(all_handlers(ada())),
    )
    .await;
    let before = s.call_tool("list_roots", json!({})).await.unwrap();
    assert_eq!(before.structured_content.unwrap()["listChangedSeen"], 0);
    s.roots_changed().await.unwrap();
    s.roots_changed().await.unwrap();
    let after = s.call_tool("list_roots", json!({})).await.unwrap();
    assert_eq!(
        after.structured_content.as_ref().unwrap()["listChangedSeen"],
        2
    );
    assert!(after.text().contains("received: 2"), "{}", after.text());
    s.close().await;
}

#[tokio::test]
async fn an_answer_that_breaks_the_schema_never_reaches_the_server() {
    let bad = json!({"action": "accept", "content": {"name": 7, "age": "old"}});
    // Before 2026-07-28 the server's request gets an error instead.
    let s = connect(
        Era::Legacy,
        ProtocolMode::Handshake,
        Some(all_handlers(bad.clone())),
    )
    .await;
    let r = s.call_tool("ask_user", json!({})).await.unwrap();
    assert!(r.is_error(), "{}", r.text());
    assert!(
        r.text().contains("does not match the requested schema"),
        "{}",
        r.text()
    );
    assert!(!r.text().contains("old"), "{}", r.text());
    assert_eq!(r.structured_content, None);
    s.close().await;

    // In 2026-07-28 the call is not retried: the error is the caller's.
    let s = connect(Era::Modern, ProtocolMode::Discover, Some(all_handlers(bad))).await;
    let err = s.call_tool("ask_user", json!({})).await.unwrap_err();
    match &err {
        SessionError::InputRequest { method, reason } => {
            assert_eq!(method, "elicitation/create");
            assert!(
                reason.contains("does not match the requested schema"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    s.close().await;
}

#[tokio::test]
async fn without_handlers_the_tools_say_the_capability_is_missing() {
    for (era, mode) in ERAS {
        for handlers in [None, Some(ClientHandlers::new())] {
            let s = connect(era, mode, handlers).await;
            for (tool, args, missing) in [
                ("ask_user", json!({}), "elicitation"),
                ("sample", json!({"prompt": "x"}), "sampling"),
                ("list_roots", json!({}), "roots"),
            ] {
                let r = s.call_tool(tool, args).await.unwrap();
                assert!(r.is_error(), "{era:?} {tool}: {}", r.text());
                assert!(
                    r.text()
                        .contains(&format!("did not declare the {missing} capability")),
                    "{era:?} {tool}: {}",
                    r.text()
                );
            }
            s.close().await;
        }
    }
}

#[tokio::test]
async fn an_elicitor_without_urls_is_never_sent_one() {
    struct FormOnly;
    impl Elicitor for FormOnly {
        fn elicit<'a>(&'a self, _: &'a ElicitRequestParams) -> BoxFuture<'a, ElicitResult> {
            Box::pin(async { serde_json::from_value(ada()).unwrap() })
        }
    }
    for (era, mode) in ERAS {
        let s = connect(era, mode, Some(ClientHandlers::new().elicitation(FormOnly))).await;
        let r = s
            .call_tool("ask_user", json!({"mode": "url"}))
            .await
            .unwrap();
        assert!(
            r.is_error() && r.text().contains("URL mode"),
            "{era:?}: {}",
            r.text()
        );
        let r = s.call_tool("ask_user", json!({})).await.unwrap();
        assert_eq!(r.structured_content.unwrap()["action"], "accept");
        s.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_answer_over_streamable_http_in_both_eras() {
    for era in [Era::Legacy, Era::Modern] {
        let mut options = HttpServerOptions::default();
        options.server.era = era;
        let server = HttpServer::start(options).await.unwrap();
        let transport = StreamableHttpTransport::connect(&server.url(), HttpOptions::new())
            .await
            .unwrap();
        let config = SessionConfig::new().handler(all_handlers(ada()));
        let s = Session::connect(transport, config).await.unwrap();
        assert_eq!(!s.protocol_version().has_handshake(), era == Era::Modern);
        every_tool_reports_the_handlers_answers(&s, era).await;
        s.close().await;
        server.shutdown().await;
    }
}
