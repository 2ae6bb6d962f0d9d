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

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_session::protocol::{ProtocolMode, ProtocolPin};
use mcp_session::{ListBudget, Session, SessionConfig, SessionError};
use mcp_testkit::{Misbehaviour, ServerOptions, serve};
use mcp_transport::stream::StreamTransport;

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    LIVE.fetch_sub(bytes, Ordering::Relaxed);
}

// SAFETY: every method hands its arguments unchanged to `System`, which
// keeps the `GlobalAlloc` contract, and returns what `System` returned; the
// bookkeeping around it only touches two atomics (it never allocates, so it
// cannot re-enter the allocator) and counts only what `System` did
// allocate or free.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees for `layout` are `System`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, that is from `System`,
        // with this `layout`.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` with `layout`; the caller's
        // guarantees for `new_size` are `System`'s.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

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
    let config = config.protocol(ProtocolPin::Mode(ProtocolMode::Legacy));
    let session = Session::connect(StreamTransport::new(r, w), config)
        .await
        .unwrap();
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let error = session.list_tools().await.unwrap_err();
    let grown = PEAK.load(Ordering::Relaxed).saturating_sub(before);
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

#[allow(clippy::cast_precision_loss)]
fn mib(bytes: usize) -> f64 {
    bytes as f64 / MIB as f64
}
