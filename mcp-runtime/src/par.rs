//! Per-server work that needs no IO of the async kind (reading the
//! persisted catalog, comparing pins) spread over the machine's cores.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::thread;

/// Fewer items than this per thread are done on the calling thread: a
/// thread costs tens of microseconds, one server's cached lists about a
/// hundred.
const MIN_PER_THREAD: usize = 4;

/// `items.iter().map(f).collect()`, in order, on up to as many threads as
/// the machine has cores (the caller's among them). Items are handed out
/// one at a time to whichever thread is free, so a thread that starts late
/// (a core woken from idle can take a millisecond) leaves its items to the
/// others instead of holding the result back; a thread that cannot be
/// started at all just takes none. A panic in `f` goes on in the caller, as
/// it would have without threads.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = if items.len() < 2 * MIN_PER_THREAD {
        1
    } else {
        cores().min(items.len() / MIN_PER_THREAD)
    };
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    // Takes items until none is left; each with its place in `items`.
    let take = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return done;
            };
            done.push((i, f(item)));
        }
    };
    let span = tracing::Span::current();
    let mut all = thread::scope(|scope| {
        let take = &take;
        let others: Vec<_> = (1..threads)
            .filter_map(|_| {
                let span = span.clone();
                thread::Builder::new()
                    .spawn_scoped(scope, move || span.in_scope(take))
                    .ok()
            })
            .collect();
        let mut all = take();
        for handle in others {
            match handle.join() {
                Ok(done) => all.extend(done),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    all.sort_unstable_by_key(|&(i, _)| i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// `(a(), b())`, with `b` on another thread when `apart` (worth a
/// thread's start) and the machine has a second core. Whichever thread is
/// free first takes `b`: the caller does, after `a`, if the other thread
/// has not started by then. A panic in either goes on in the caller.
pub(crate) fn join<RA, RB: Send>(
    apart: bool,
    a: impl FnOnce() -> RA,
    b: impl FnOnce() -> RB + Send,
) -> (RA, RB) {
    if !apart || cores() < 2 {
        let ra = a();
        return (ra, b());
    }
    let b = Mutex::new(Some(b));
    let take_b = || {
        let f = b.lock().unwrap_or_else(PoisonError::into_inner).take();
        f.map(|f| f())
    };
    let span = tracing::Span::current();
    thread::scope(|scope| {
        let take_b = &take_b;
        let other = thread::Builder::new()
            .spawn_scoped(scope, move || span.in_scope(take_b))
            .ok();
        let ra = a();
        let rb = match take_b() {
            Some(rb) => rb,
            // Taken by the other thread (so it was started).
            None => match other.map(thread::ScopedJoinHandle::join) {
                Some(Ok(Some(rb))) => rb,
                Some(Err(panic)) => std::panic::resume_unwind(panic),
                // Neither thread ran `b`: cannot be, it is taken once.
                Some(Ok(None)) | None => unreachable!("b was taken by no thread"),
            },
        };
        (ra, rb)
    })
}

/// The machine's cores, asked once: `available_parallelism` reads the
/// cgroup's CPU quota on Linux (about 20 system calls, 11 µs), and every
/// catalog build calls [`map`].
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| thread::available_parallelism().map_or(1, NonZeroUsize::get))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn keeps_the_order_and_maps_each_item_once() {
        for n in [0, 1, 3, 4, 7, 8, 9, 100, 1001] {
            let items: Vec<usize> = (0..n).collect();
            let seen = Mutex::new(Vec::new());
            let out = map(&items, |&i| {
                seen.lock().unwrap().push(i);
                i * 2
            });
            assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
            let mut seen = seen.into_inner().unwrap();
            seen.sort_unstable();
            assert_eq!(seen, items, "each once");
        }
    }

    #[test]
    fn many_items_use_more_than_one_thread_where_there_are_cores() {
        let items: Vec<usize> = (0..64).collect();
        let want = cores().min(64 / MIN_PER_THREAD);
        let threads = Mutex::new(HashSet::new());
        let deadline = Instant::now() + Duration::from_secs(10);
        map(&items, |_| {
            threads.lock().unwrap().insert(thread::current().id());
            // Each item waits (up to the deadline) for every thread to have
            // started: the caller alone would otherwise take them all.
            while threads.lock().unwrap().len() < want && Instant::now() < deadline {
                thread::yield_now();
            }
        });
        assert_eq!(threads.into_inner().unwrap().len(), want);
    }

    #[test]
    fn a_thread_that_starts_late_leaves_its_items_to_the_others() {
        if cores() < 2 {
            return; // One thread: nothing is handed out.
        }
        let caller = thread::current().id();
        let items: Vec<usize> = (0..64).collect();
        let by_caller = AtomicUsize::new(0);
        let deadline = Instant::now() + Duration::from_secs(10);
        let out = map(&items, |&i| {
            if thread::current().id() == caller {
                by_caller.fetch_add(1, Ordering::SeqCst);
            } else {
                // Late: this thread's first item waits for the caller to
                // have done 60. Fixed shares (half each) never get there.
                while by_caller.load(Ordering::SeqCst) < 60 && Instant::now() < deadline {
                    thread::yield_now();
                }
            }
            i
        });
        assert_eq!(out, items);
        assert!(
            by_caller.load(Ordering::SeqCst) >= 60,
            "the caller did {} items",
            by_caller.load(Ordering::SeqCst)
        );
    }

    #[test]
    fn join_gives_both_results_each_run_once() {
        for apart in [false, true] {
            let runs = AtomicUsize::new(0);
            let (a, b) = join(
                apart,
                || {
                    runs.fetch_add(1, Ordering::SeqCst);
                    1
                },
                || {
                    runs.fetch_add(10, Ordering::SeqCst);
                    "b"
                },
            );
            assert_eq!((a, b), (1, "b"));
            assert_eq!(runs.load(Ordering::SeqCst), 11);
        }
    }

    #[test]
    fn join_apart_runs_b_beside_a() {
        if cores() < 2 {
            return; // One core: `b` runs after `a`, on the caller.
        }
        let caller = thread::current().id();
        let b_done = AtomicUsize::new(0);
        let deadline = Instant::now() + Duration::from_secs(10);
        let (_, b_thread) = join(
            true,
            // `a` waits for `b` to be done: only another thread can do it.
            || {
                while b_done.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
                    thread::yield_now();
                }
            },
            || {
                b_done.store(1, Ordering::SeqCst);
                thread::current().id()
            },
        );
        assert_ne!(b_thread, caller);
    }

    #[test]
    fn join_a_panic_in_b_reaches_the_caller() {
        for apart in [false, true] {
            let caught = std::panic::catch_unwind(|| join(apart, || 1, || panic!("b")));
            assert!(caught.is_err());
        }
    }

    #[test]
    fn a_panic_reaches_the_caller() {
        let items: Vec<usize> = (0..64).collect();
        let caught = std::panic::catch_unwind(|| map(&items, |&i| assert!(i != 40, "item 40")));
        assert!(caught.is_err());
    }
}
