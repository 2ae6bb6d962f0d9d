//! The total budget of a paged list, checked by the memory it leaves a
//! client: against the testkit's `endless-tool-pages` (a `tools/list` that
//! never ends, about 256 KiB a page, a new cursor each time), `list_tools`
//! stops at `max_list_bytes` with the typed error naming it, and the peak
//! of the heap stays near that budget. Without the budget the same server
//! is followed to `max_list_pages` (1,000 pages, about 250 MiB): that
//! figure is measured too and printed beside it.
//!
//! Memory is measured by a counting global allocator, which is why this
//! test has a binary of its own (and is its only test: nothing else may
//! allocate while it measures). The testkit runs in-process, so its
//! allocations count too: one page at a time, which the bound allows for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use mcp_stack_session::protocol::{ProtocolMode, ProtocolPin};
use mcp_stack_session::{ListBudget, Session, SessionConfig, SessionError};
use mcp_stack_testkit::{Misbehaviour, ServerOptions, serve};
use mcp_stack_transport::stream::StreamTransport;

#[path = "common/heap.rs"]
mod heap;

#[global_allocator]
static HEAP: heap::Counting = heap::Counting;

use heap::{grown_since, mib, start_measuring};

const MIB: usize = 1024 * 1024;

/// The byte budget the first fetch runs with.
const BUDGET: usize = 4 * MIB;
/// The most the heap may grow during that fetch: the budget, what the
/// parsed tools take beside their JSON, the page that crossed the budget,
/// the testkit's copy of the page it is writing, the stream's buffers.
const BOUND: usize = 16 * MIB;

/// Connects to an in-process testkit with endless tool pages, lists its
/// tools with `config`, and returns the error and how far the heap grew
/// above where it stood when the listing began.
async fn list_endless(config: SessionConfig) -> (SessionError, usize) {
    let (client, server) = tokio::io::duplex(1 << 20);
    let (r, w) = tokio::io::split(server);
    let server = tokio::spawn(serve(
        ServerOptions::misbehaving(Misbehaviour::EndlessToolPages),
        r,
        w,
    ));
    let (r, w) = tokio::io::split(client);
    let config = config.protocol(ProtocolPin::Mode(ProtocolMode::Handshake));
    let session = Session::connect(StreamTransport::new(r, w), config)
        .await
        .unwrap();
    let before = start_measuring();
    let error = session.list_tools().await.unwrap_err();
    let grown = grown_since(before);
    session.close().await;
    server.abort();
    (error, grown)
}

#[tokio::test]
async fn an_endless_tool_list_stops_at_its_byte_budget_and_memory_stays_near_it() {
    let (error, budgeted) = list_endless(SessionConfig::new().max_list_bytes(BUDGET)).await;
    // The same server with no byte or entry budget, as before there was
    // one: followed to the page limit.
    let unbounded = SessionConfig::new()
        .max_list_bytes(usize::MAX)
        .max_list_items(usize::MAX);
    let (unbounded_error, unbudgeted) = list_endless(unbounded).await;
    println!(
        "peak heap growth during tools/list of endless pages: {:.1} MiB with a {} MiB byte \
         budget, {:.1} MiB without (max_list_pages 1,000)",
        mib(budgeted),
        BUDGET / MIB,
        mib(unbudgeted),
    );

    let SessionError::ListTooLarge {
        ref method,
        budget,
        limit,
        pages,
        ..
    } = error
    else {
        panic!("not stopped by a list budget: {error}");
    };
    assert_eq!(
        (method.as_str(), budget, limit),
        ("tools/list", ListBudget::Bytes, BUDGET)
    );
    // Pages of about 256 KiB: the one that crossed 4 MiB is the 17th.
    assert!((15..=18).contains(&pages), "{pages} pages");
    let message = error.to_string();
    assert!(
        message.contains("SessionConfig::max_list_bytes"),
        "{message}"
    );
    assert!(message.contains("4 MiB"), "{message}");
    assert_eq!(
        unbounded_error.list_budget(),
        Some(ListBudget::Pages),
        "{unbounded_error}"
    );

    assert!(
        budgeted < BOUND,
        "{:.1} MiB: the heap grew past {} MiB with a {} MiB budget",
        mib(budgeted),
        BOUND / MIB,
        BUDGET / MIB
    );
    assert!(
        budgeted.saturating_mul(8) < unbudgeted,
        "{:.1} MiB is not far below the {:.1} MiB of an unbudgeted list",
        mib(budgeted),
        mib(unbudgeted)
    );
}
