//! Per-server work that needs no IO of the async kind (reading the
//! persisted catalog, comparing pins) spread over the machine's cores.

use std::num::NonZeroUsize;
use std::sync::OnceLock;
use std::thread;

/// Fewer items than this per thread are done on the calling thread: a
/// thread costs tens of microseconds, one server's cached lists about a
/// hundred.
const MIN_PER_THREAD: usize = 4;

/// `items.iter().map(f).collect()`, in order, on up to as many threads as
/// the machine has cores (the caller's among them). A thread that cannot
/// be started leaves its share to the caller; a panic in `f` goes on in
/// the caller, as it would have without threads.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = if items.len() < 2 * MIN_PER_THREAD {
        1
    } else {
        cores().min(items.len() / MIN_PER_THREAD)
    };
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    let span = tracing::Span::current();
    thread::scope(|scope| {
        let f = &f;
        let mut chunks = items.chunks(chunk);
        let mine = chunks.next().unwrap_or_default();
        let others: Vec<_> = chunks
            .map(|part| {
                let span = span.clone();
                let run = move || span.in_scope(|| part.iter().map(f).collect::<Vec<R>>());
                (part, thread::Builder::new().spawn_scoped(scope, run).ok())
            })
            .collect();
        let mut out: Vec<R> = mine.iter().map(f).collect();
        for (part, handle) in others {
            match handle {
                Some(h) => match h.join() {
                    Ok(done) => out.extend(done),
                    Err(panic) => std::panic::resume_unwind(panic),
                },
                None => out.extend(part.iter().map(f)),
            }
        }
        out
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
        let threads = Mutex::new(HashSet::new());
        map(&items, |_| {
            threads.lock().unwrap().insert(thread::current().id());
        });
        let cores = thread::available_parallelism().map_or(1, NonZeroUsize::get);
        assert_eq!(
            threads.into_inner().unwrap().len(),
            cores.min(64 / MIN_PER_THREAD)
        );
    }

    #[test]
    fn a_panic_reaches_the_caller() {
        let items: Vec<usize> = (0..64).collect();
        let caught = std::panic::catch_unwind(|| map(&items, |&i| assert!(i != 40, "item 40")));
        assert!(caught.is_err());
    }
}
