//! Ranked search over tools, IO-free: [`ToolIndex`].
//!
//! An agent with twenty servers has hundreds or thousands of tools; handing
//! the model every definition costs context and accuracy. The index finds
//! the few a task needs from a query in words (`"open a pull request"`).
//!
//! # What is indexed
//!
//! Each tool is a document of six fields, each tokenized on its own (split at
//! non-alphanumerics and case changes, so `create_pull_request`,
//! `createPullRequest` and `create-pull-request` are the same three words;
//! lowercased; plurals folded; a few stopwords dropped):
//!
//! | field | from | weight `w` | `b` | pivot length |
//! |---|---|---|---|---|
//! | name | the tool's own name | 4.0 | 0.3 | 3 |
//! | title | `title` | 3.0 | 0.3 | 4 |
//! | parameter names | `inputSchema` property names (nested ones too) | 1.5 | 0.5 | 4 |
//! | server | the server's name in the config | 1.0 | 0 | 1 |
//! | description | `description` | 1.0 | 0.75 | 24 |
//! | parameter descriptions | those properties' `description`s and `title`s | 0.5 | 0.75 | 24 |
//!
//! # Ranking: BM25F with fixed pivots
//!
//! BM25F (Robertson, Zaragoza, Taylor 2004, "Simple BM25 extension to
//! multiple weighted fields") scores a document for query terms `t` as
//!
//! ```text
//! tf~(t) = Σ_fields w_f · tf_f(t) / (1 − b_f + b_f · len_f / pivot_f)
//! score  = Σ_t idf(t) · tf~(t) / (k1 + tf~(t)),   k1 = 1.2
//! idf(t) = ln((N + 1) / (df(t) + 0.5))
//! ```
//!
//! Why this and these numbers:
//!
//! * **Fields, weighted before saturation.** A word in a tool's name says far
//!   more than the same word in a long description; BM25F adds the fields'
//!   weighted frequencies *before* the `k1` saturation, so a term that is in
//!   the name and repeated in the description does not count twice (plain
//!   BM25 over one concatenated text, or a sum of per-field BM25 scores, let
//!   descriptions that repeat a word outrank the tool named after it).
//!   Names weigh most, then titles (written for people, short and exact),
//!   then parameter names (`repository`, `branch` often say what a tool acts
//!   on), descriptions, and parameter descriptions last (long, generic).
//! * **Fixed pivots instead of the collection's average lengths.** Classic
//!   BM25 normalizes a field's length by its average over the collection.
//!   A catalog mixes servers of very different styles, changes whenever one
//!   of them says `list_changed`, and a tool's score should not move because
//!   another server was added. With a fixed pivot (typical lengths of MCP
//!   tool text: a name of 2–3 words, a description of a sentence or two) a
//!   tool's `tf~` depends on that tool alone. Two things follow: it is
//!   computed once, when the tool is indexed, and kept in the postings (a
//!   query is then one multiply-add per posting), and an index can be
//!   updated by re-analyzing only the tools that changed
//!   ([`ToolIndex::update`]). `b` is low for names and titles (their length
//!   says little) and the usual 0.75 for prose.
//! * **This idf** is the Robertson–Spärck Jones one with its `+1` inside the
//!   logarithm (as Lucene has it), simplified: it is positive for every term
//!   (no negative scores for words in most tools), finite, and collection
//!   size enters only as `ln(N + 1)`, the same for every term.
//! * **An exact name ranks first.** A query whose words are exactly a tool's
//!   name (`"create issue"`, `create_issue`, `github__create_issue`) is
//!   almost always asking for that tool; such tools come before every other
//!   result ([`SearchHit::exact_name`]), ordered by score among themselves.
//!
//! Better than plain BM25 for this text, and with no model to ship: dense
//! embeddings would catch synonyms ("remove" for "delete") but need a model
//! and milliseconds per query; the plural folding catches the commonest
//! near-misses.
//!
//! # Invariants (property-tested)
//!
//! * Every score is finite and positive; results come sorted (exact names
//!   first, then by score, then by catalog order), at most `k`, each sharing
//!   a term with the query.
//! * A tool whose name is the query ranks first.
//! * Adding a tool that shares no term with a query leaves every other
//!   result of it in the list, adds nothing, and raises each score by at most
//!   `ln((N + 2)/(N + 1)) · q` (`q` the number of query terms): only the
//!   idf's `ln(N + 1)` moves, and each term's `tf~/(k1 + tf~)` is below 1.
//!   So two results whose scores differ by more than that keep their order,
//!   and for a one-word query the order never changes.
//!
//! # Budgets
//!
//! Tool text is the servers', so everything is bounded: at most
//! [`MAX_QUERY_BYTES`] of query (longer is [`SearchError::QueryTooLong`]) and
//! its first [`MAX_QUERY_TERMS`] distinct terms; at most [`MAX_RESULTS`]
//! results; at most [`MAX_INDEXED_TOOLS`] tools (the rest are counted in
//! [`ToolIndex::omitted`]); per tool, the first [`MAX_FIELD_TERMS`] terms of
//! each field and the first [`MAX_PARAMETERS`] properties of its schema, to
//! a depth of [`MAX_SCHEMA_DEPTH`].

mod index;
mod params;
#[cfg(test)]
mod tests;
mod tokenize;

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use mcp_stack_session::types::Tool;

pub use index::ToolIndex;
pub(crate) use index::schema_bytes_as;

/// The longest query, in bytes.
pub const MAX_QUERY_BYTES: usize = 1024;
/// The most distinct query terms scored; further ones are ignored.
pub const MAX_QUERY_TERMS: usize = 32;
/// The most results a search returns, whatever `k` asks.
pub const MAX_RESULTS: usize = 200;
/// The most tools an index holds.
pub const MAX_INDEXED_TOOLS: usize = 100_000;
/// The most terms indexed per field of a tool.
pub const MAX_FIELD_TERMS: usize = 256;
/// The most schema properties indexed per tool.
pub const MAX_PARAMETERS: usize = 64;
/// How deep nested properties (`properties`, `items`) are followed.
pub const MAX_SCHEMA_DEPTH: usize = 4;

/// One tool to index: its namespaced name (what the agent calls), its
/// server's name, and its definition.
#[derive(Debug, Clone, Copy)]
pub struct IndexEntry<'a> {
    /// The name the agent calls (`SERVER__TOOL` in a runtime's catalog).
    pub name: &'a str,
    /// The server's name.
    pub server: &'a str,
    /// The definition, as the server gave it.
    pub tool: &'a Arc<Tool>,
}

/// One result of a search: which tool (its position in what was indexed)
/// and how well it matched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchHit {
    index: usize,
    score: f32,
    exact_name: bool,
}

impl SearchHit {
    /// The tool's position among the entries the index was built from.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The BM25F score (finite, positive; higher is better).
    pub fn score(&self) -> f32 {
        self.score
    }

    /// The query's words are exactly the tool's name (own or namespaced):
    /// such hits come first.
    pub fn exact_name(&self) -> bool {
        self.exact_name
    }
}

/// Why a search was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The query is longer than [`MAX_QUERY_BYTES`].
    #[error(
        "the search query has {len} bytes, more than the {max} allowed: search with a few words"
    )]
    QueryTooLong {
        /// Its length in bytes.
        len: usize,
        /// The most allowed.
        max: usize,
    },
}

/// A catalog's index, built on its first search; a catalog that replaces
/// another (after `list_changed`) is given the old index, so its own is an
/// update of it (only changed tools re-analyzed) rather than a fresh build.
#[derive(Debug, Default)]
pub(crate) struct IndexCell {
    built: OnceLock<Arc<ToolIndex>>,
    prior: Mutex<Option<Arc<ToolIndex>>>,
}

impl IndexCell {
    /// The index, built (or updated from the prior one) on first use.
    pub(crate) fn get_or_build<'a>(
        &self,
        entries: impl FnOnce() -> Vec<IndexEntry<'a>>,
    ) -> &Arc<ToolIndex> {
        self.built.get_or_init(|| {
            let prior = self
                .prior
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            let entries = entries();
            Arc::new(match prior {
                Some(p) => p.update(entries),
                None => ToolIndex::build(entries),
            })
        })
    }

    /// Hands `from`'s index (if it was ever built) to this cell, to update.
    pub(crate) fn inherit(&self, from: &IndexCell) {
        let index = from.built.get().cloned().or_else(|| {
            from.prior
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        });
        if index.is_some() && self.built.get().is_none() {
            *self.prior.lock().unwrap_or_else(PoisonError::into_inner) = index;
        }
    }
}
