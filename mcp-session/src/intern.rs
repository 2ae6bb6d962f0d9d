//! One copy of each distinct server description per process.
//!
//! An agent platform connects the same servers for many agent sessions: a
//! thousand sessions of the same GitHub server hold a thousand identical
//! tool lists and `initialize` results. Each tool (its schemas are
//! `serde_json::Value` trees, a few hundred bytes per object, and its
//! compiled validators) and each `initialize` result is kept once in an
//! [`Interner`], and every connection that got an identical one shares it:
//! a schema is compiled once per process, not once per connection.
//!
//! The tables hold weak references only: a value no connection holds any
//! more is freed, and its entry is dropped at a later sweep. Values are
//! matched by a keyed hash (taken before the table's lock, in place: no
//! serializing) and then compared whole, so a server cannot make two
//! different values share an entry.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// A process-wide table of shared `S`s (each wrapping the value it was
/// made from, which [`intern`](Interner::intern)'s `key` gives back).
pub(crate) struct Interner<S> {
    table: OnceLock<Keyed<S>>,
}

/// The table and its hash keys, which need no lock. foldhash's quality
/// variant, seeded per process: a server cannot aim for collisions it
/// cannot compute, and a collision costs only a longer candidate list,
/// each candidate compared whole.
struct Keyed<S> {
    keys: foldhash::quality::RandomState,
    table: Mutex<Table<S>>,
}

impl<S> fmt::Debug for Interner<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interner").finish_non_exhaustive()
    }
}

struct Table<S> {
    by_hash: HashMap<u64, Vec<Weak<S>>>,
    /// Inserts since the last sweep, and what the sweep left.
    inserts: usize,
    kept: usize,
}

impl<S> Interner<S> {
    /// An empty table, for a `static`.
    pub(crate) const fn new() -> Self {
        Interner {
            table: OnceLock::new(),
        }
    }

    /// The shared entry for `value`: an existing one if an identical value
    /// is held somewhere now, else `make(value)`, which is kept for the
    /// next.
    pub(crate) fn intern<T: Hash + Eq>(
        &self,
        value: T,
        key: impl Fn(&S) -> &T,
        make: impl FnOnce(T) -> S,
    ) -> Arc<S> {
        let keyed = self.table.get_or_init(|| Keyed {
            keys: foldhash::quality::RandomState::default(),
            table: Mutex::new(Table {
                by_hash: HashMap::new(),
                inserts: 0,
                kept: 0,
            }),
        });
        // Hashed before the lock: connections that start together do not
        // wait for each other's hashing.
        let hash = keyed.keys.hash_one(&value);
        let mut table = keyed.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = table.by_hash.get(&hash).and_then(|candidates| {
            candidates
                .iter()
                .filter_map(Weak::upgrade)
                .find(|c| *key(c) == value)
        }) {
            return found;
        }
        let entry = Arc::new(make(value));
        table
            .by_hash
            .entry(hash)
            .or_default()
            .push(Arc::downgrade(&entry));
        table.inserts += 1;
        // Sweep when the inserts since the last sweep outnumber what it
        // kept: the work stays proportional to the inserts.
        if table.inserts > table.kept.max(64) {
            table.by_hash.retain(|_, candidates| {
                candidates.retain(|c| c.strong_count() > 0);
                !candidates.is_empty()
            });
            table.kept = table.by_hash.values().map(Vec::len).sum();
            table.inserts = 0;
        }
        entry
    }

    /// How many entries the table holds now, live or not yet swept.
    #[cfg(test)]
    fn entries(&self) -> usize {
        self.table.get().map_or(0, |t| {
            let table = t.table.lock().unwrap_or_else(|p| p.into_inner());
            table.by_hash.values().map(Vec::len).sum()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A wrapper, as the catalog wraps a tool with its validators.
    struct Wrapped(Value);

    fn intern(table: &Interner<Wrapped>, value: Value) -> Arc<Wrapped> {
        table.intern(value, |w| &w.0, Wrapped)
    }

    #[test]
    fn equal_values_share_one_entry_and_different_ones_do_not() {
        static TABLE: Interner<Wrapped> = Interner::new();
        let schema = json!({"name": "a", "inputSchema": {"type": "object"}});
        let a = intern(&TABLE, schema.clone());
        let b = intern(&TABLE, schema);
        assert!(Arc::ptr_eq(&a, &b), "the same value twice is one entry");
        let other = intern(&TABLE, json!({"name": "a", "inputSchema": {}}));
        assert!(!Arc::ptr_eq(&a, &other));
        assert_eq!(other.0["inputSchema"], json!({}));
    }

    #[test]
    fn a_value_nobody_holds_is_freed_and_swept() {
        static TABLE: Interner<Wrapped> = Interner::new();
        let first = intern(&TABLE, json!({"name": "freed"}));
        let weak = Arc::downgrade(&first);
        drop(first);
        assert!(
            weak.upgrade().is_none(),
            "the table holds no strong reference"
        );
        for i in 0..300 {
            drop(intern(&TABLE, json!({ "name": format!("churn-{i}") })));
        }
        // Without sweeps there would be 301 entries.
        assert!(TABLE.entries() <= 65, "{} entries", TABLE.entries());
        let again = intern(&TABLE, json!({"name": "freed"}));
        assert_eq!(again.0["name"], "freed");
    }
}
