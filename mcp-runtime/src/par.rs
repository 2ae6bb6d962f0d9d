//! Per-server work that needs no IO of the async kind (reading the
//! persisted catalog, comparing pins) spread over the machine's cores.

use std::num::NonZeroUsize;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

/// Items a thread must have to be worth starting, for work of each kind:
/// a thread takes 40 µs to start running here, and 250 to 350 µs when the
/// machine was idle (a core woken up); `map` then also waits for it to
/// start and end, even when the caller has done every item meanwhile.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cost {
    /// Reading, checking and parsing a server's persisted record: about
    /// 25 µs a server.
    Record,
    /// Comparing a server's tools with its pins: a few µs a server.
    Pins,
}

impl Cost {
    fn min_per_thread(self) -> usize {
        match self {
            Cost::Record => 8,
            Cost::Pins => 128,
        }
    }
}

/// `items.iter().map(f).collect()`, in order, on up to as many threads as
/// the machine has cores (the caller's among them), when there are enough
/// items of this `cost` to be worth a thread. Items are handed out
/// one at a time to whichever thread is free, so a thread that starts late
/// (a core woken from idle can take a millisecond) leaves its items to the
/// others instead of holding the result back; a thread that cannot be
/// started at all just takes none. A panic in `f` goes on in the caller, as
/// it would have without threads.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], cost: Cost, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let min = cost.min_per_thread();
    let threads = if items.len() < 2 * min {
        1
    } else {
        cores().min(items.len() / min)
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
            let out = map(&items, Cost::Record, |&i| {
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
        let want = cores().min(64 / Cost::Record.min_per_thread());
        let threads = Mutex::new(HashSet::new());
        let deadline = Instant::now() + Duration::from_secs(10);
        map(&items, Cost::Record, |_| {
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
        let out = map(&items, Cost::Record, |&i| {
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
    fn cheap_items_stay_on_the_caller_until_they_are_worth_a_thread() {
        let caller = thread::current().id();
        let few: Vec<usize> = (0..2 * Cost::Pins.min_per_thread() - 1).collect();
        let threads = map(&few, Cost::Pins, |_| thread::current().id());
        assert!(threads.iter().all(|t| *t == caller));
        let records: Vec<usize> = (0..2 * Cost::Record.min_per_thread() - 1).collect();
        let threads = map(&records, Cost::Record, |_| thread::current().id());
        assert!(threads.iter().all(|t| *t == caller));
    }

    #[test]
    fn a_panic_reaches_the_caller() {
        let items: Vec<usize> = (0..64).collect();
        let caught = std::panic::catch_unwind(|| {
            map(&items, Cost::Record, |&i| assert!(i != 40, "item 40"))
        });
        assert!(caught.is_err());
    }
}
