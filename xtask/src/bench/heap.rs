//! Live heap bytes, counted by the global allocator while a benchmark asks
//! for it: exact and repeatable, where the resident set size moves in pages
//! and does not shrink when memory is freed and reused.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

/// The system allocator, counting while [`counting`] is on. Off, it costs
/// one relaxed load per allocation (the other benchmarks run so).
struct Counting;

static ON: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn note(delta: isize) {
    if ON.load(Ordering::Relaxed) {
        LIVE.fetch_add(delta, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed on to the system allocator unchanged; the
// counter is a side effect that allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(-(layout.size() as isize));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size as isize - layout.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Starts counting from zero. Memory allocated before and freed while
/// counting makes the count go down: measure differences of [`live`]
/// around work that only allocates.
pub(crate) fn counting() {
    LIVE.store(0, Ordering::Relaxed);
    ON.store(true, Ordering::Relaxed);
}

/// Bytes allocated and not freed since [`counting`] began.
pub(crate) fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}
