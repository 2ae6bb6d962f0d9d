//! The rate at which the long-lived event streams (streamable HTTP's GET
//! stream, the legacy SSE stream) are opened again, against testkit
//! servers that answer each stream and hang up at once — with `retry: 0`
//! first (`retry-zero-close`) or without (`accept-and-drop`). On paused
//! time, the tests count the streams the client opens in two virtual
//! minutes, stopping early once the count is past what pacing allows (a
//! hot loop never lets virtual time move on). Without the floor under
//! `retry` a `retry: 0` server is reconnected in a loop; without young
//! streams keeping the backoff growing, an accept-and-drop server is
//! reconnected about once a second for ever.
//!
//! Paced, the waits are the floor (1 s) or 0.5–1 s, then the backoff
//! doubling per attempt up to 30 s: at most 12 reopenings in 120 s.

#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_stack_jsonrpc::{Message, Notification, Request, to_raw};
use mcp_stack_testkit::http::{HttpMisbehaviour, HttpMode, HttpServer, HttpServerOptions};
use mcp_stack_transport::http::{HttpOptions, HttpTrace, SseTransport, StreamableHttpTransport};
use mcp_stack_transport::{Lifecycle, SendContext, Transport};
use serde_json::json;
use tokio::sync::mpsc;

/// The virtual window the streams are counted in.
const WINDOW: Duration = Duration::from_secs(120);
/// The most reopenings pacing allows in it (see the module's docs).
const PACED: usize = 12;

/// What the observer saw, one line each: `GET` for each GET request, the
/// notes as they are.
fn observed() -> (HttpOptions, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let options = HttpOptions::new().observer(move |trace| {
        let line = match trace {
            HttpTrace::Request { method, .. } => method.clone(),
            HttpTrace::Note(note) => note.clone(),
            _ => return,
        };
        let _ = tx.send(line);
    });
    (options, rx)
}

/// Counts the GET requests within [`WINDOW`] of virtual time, stopping
/// early once past `PACED + 1` (the first stream and its reopenings); the
/// notes seen meanwhile are returned too.
async fn count_gets(lines: &mut mpsc::UnboundedReceiver<String>) -> (usize, Vec<String>) {
    let deadline = tokio::time::Instant::now() + WINDOW;
    let (mut gets, mut notes) = (0, Vec::new());
    loop {
        tokio::select! {
            line = lines.recv() => {
                let line = line.expect("the observer is gone");
                if line == "GET" {
                    gets += 1;
                    if gets > PACED + 1 {
                        return (gets, notes);
                    }
                } else {
                    notes.push(line);
                }
            }
            () = tokio::time::sleep_until(deadline) => return (gets, notes),
        }
    }
}

/// A streamable session: `initialize`, then `notifications/initialized`,
/// which opens the GET stream.
async fn streamable(server: &HttpServer, options: HttpOptions) -> StreamableHttpTransport {
    let t = StreamableHttpTransport::connect(&server.url(), options)
        .await
        .unwrap();
    let init = Message::from(Request::new(
        0,
        "initialize",
        Some(
            to_raw(&json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}))
            .unwrap(),
        ),
    ));
    t.send_with(&init, &SendContext::new().lifecycle(Lifecycle::Initialize))
        .await
        .unwrap();
    t.recv().await.unwrap();
    let initialized = Message::from(Notification::new("notifications/initialized", None));
    let context = SendContext::new()
        .revision("2025-06-18".parse().unwrap())
        .lifecycle(Lifecycle::Initialized);
    t.send_with(&initialized, &context).await.unwrap();
    t
}

async fn server(mode: HttpMode, misbehaviour: HttpMisbehaviour) -> HttpServer {
    HttpServer::start(HttpServerOptions {
        mode,
        ..HttpServerOptions::misbehaving(misbehaviour)
    })
    .await
    .unwrap()
}

/// Asserts that `gets` GETs (the first stream and its reopenings) is paced
/// and not nothing.
fn assert_paced(what: &str, gets: usize, notes: &[String]) {
    assert!(
        gets <= PACED + 1,
        "{what}: {gets} streams opened within {WINDOW:?} (a reconnection loop); the last \
         notes: {:?}",
        notes.iter().rev().take(3).collect::<Vec<_>>()
    );
    assert!(gets >= 4, "{what}: only {gets} streams opened: {notes:?}");
}

/// A `tracing` subscriber that keeps each event's fields as one line, in
/// [`EVENTS`]: the process's global one (a thread's own default would miss
/// events whose callsites another test's thread registered first).
struct Recorder;

static EVENTS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The `tracing` events so far that mention `server="NAME"`.
fn events_of(server: &str) -> Vec<String> {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| tracing::subscriber::set_global_default(Recorder).unwrap());
    let tag = format!("server={server:?}");
    EVENTS
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.contains(&tag))
        .cloned()
        .collect()
}

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={value:?} ", field.name());
    }
}

impl tracing::Subscriber for Recorder {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        EVENTS.lock().unwrap().push(fields.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test(start_paused = true)]
async fn a_get_stream_closed_after_retry_zero_is_reopened_at_a_paced_rate() {
    const NAME: &str = "retry-zero-get";
    events_of(NAME);
    let s = server(HttpMode::Streamable, HttpMisbehaviour::RetryZeroClose).await;
    let (options, mut lines) = observed();
    let t = streamable(&s, options.server_name(NAME)).await;
    let (gets, notes) = count_gets(&mut lines).await;
    assert_paced("retry: 0 and close", gets, &notes);
    assert!(s.stats().get_streams.load(Ordering::SeqCst) >= gets - 1);
    // The trace names each wait, the floor under the server's retry and
    // the cap of the backoff, as notes and as tracing events.
    let first = notes
        .iter()
        .find(|n| n.starts_with("the GET stream ended"))
        .expect("no note of the GET stream's end");
    assert!(first.contains("reopening it in 1000 ms"), "{first}");
    assert!(first.contains("raised to the 1000 ms floor"), "{first}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("young") && n.contains("backoff up to 30 s")),
        "{notes:?}"
    );
    let events = events_of(NAME);
    let paced: Vec<&String> = events
        .iter()
        .filter(|e| e.contains("wait_ms=") && e.contains("stream=\"GET\""))
        .collect();
    assert!(!paced.is_empty(), "{events:?}");
    assert!(paced[0].contains("wait_ms=1000 "), "{}", paced[0]);
    assert!(paced[0].contains("retry_ms=0 "), "{}", paced[0]);
    assert!(paced[0].contains("retry_floor_ms=1000"), "{}", paced[0]);
    assert!(paced[0].contains("backoff_cap_ms=30000"), "{}", paced[0]);
    t.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_get_stream_accepted_and_dropped_is_reopened_less_and_less_often() {
    let s = server(HttpMode::Streamable, HttpMisbehaviour::AcceptAndDrop).await;
    let (options, mut lines) = observed();
    let t = streamable(&s, options).await;
    let (gets, notes) = count_gets(&mut lines).await;
    assert_paced("accept and drop", gets, &notes);
    t.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_legacy_stream_closed_after_retry_zero_is_reconnected_at_a_paced_rate() {
    let s = server(HttpMode::LegacySse, HttpMisbehaviour::RetryZeroClose).await;
    let (options, mut lines) = observed();
    let t = SseTransport::connect(&s.url(), options).await.unwrap();
    let (gets, notes) = count_gets(&mut lines).await;
    assert_paced("retry: 0 and close", gets, &notes);
    let first = notes
        .iter()
        .find(|n| n.starts_with("reconnecting the SSE stream"))
        .expect("no note of a reconnection");
    assert!(first.contains("raised to the 1000 ms floor"), "{first}");
    t.close().await;
}

#[tokio::test(start_paused = true)]
async fn a_legacy_stream_accepted_and_dropped_is_reconnected_less_and_less_often() {
    let s = server(HttpMode::LegacySse, HttpMisbehaviour::AcceptAndDrop).await;
    let (options, mut lines) = observed();
    let t = SseTransport::connect(&s.url(), options).await.unwrap();
    let (gets, notes) = count_gets(&mut lines).await;
    assert_paced("accept and drop", gets, &notes);
    assert!(
        notes.iter().any(|n| n.contains("backoff up to 30 s")),
        "{notes:?}"
    );
    t.close().await;
}
