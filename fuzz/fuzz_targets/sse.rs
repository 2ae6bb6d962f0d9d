//! The SSE parser (server-supplied bytes): no panic, events within the
//! bound, memory within the bound, and two chunkings of the same bytes give
//! the same events.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_stack_transport::sse::{SseItem, SseParser};

const MAX: usize = 64;

fn parse(chunks: &[&[u8]]) -> Vec<String> {
    let mut p = SseParser::with_max_event_size(MAX);
    let mut out = Vec::new();
    for c in chunks {
        p.push(c);
        while let Some(item) = p.next_item() {
            if let SseItem::Event(e) = &item {
                assert!(e.data.len() <= MAX, "an event over the bound");
            }
            out.push(format!("{item:?}"));
        }
    }
    p.finish();
    while let Some(item) = p.next_item() {
        out.push(format!("{item:?}"));
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let cut = data.first().map_or(0, |b| *b as usize) % (data.len() + 1);
    let (a, b) = data.split_at(cut);
    assert_eq!(parse(&[data]), parse(&[a, b]), "chunking changed the events");
});
