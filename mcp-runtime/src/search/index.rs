//! The index itself: per-tool analysis (terms and their BM25F pseudo
//! frequencies, exact-name keys, schema size), postings, and the query.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use mcp_stack_session::types::{Schema, Tool};

use super::params::{Param, params};
use super::tokenize::for_each_term;
use super::{
    IndexEntry, MAX_FIELD_TERMS, MAX_INDEXED_TOOLS, MAX_QUERY_BYTES, MAX_QUERY_TERMS, MAX_RESULTS,
    SearchError, SearchHit,
};

type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The fields of a tool, in the order of the weights below.
const NAME: usize = 0;
const TITLE: usize = 1;
const PARAM_NAME: usize = 2;
const SERVER: usize = 3;
const DESCRIPTION: usize = 4;
const PARAM_DESCRIPTION: usize = 5;
const FIELDS: usize = 6;

/// Per field: weight, length normalization `b`, pivot length (the module
/// docs say why).
const WEIGHT: [f32; FIELDS] = [4.0, 3.0, 1.5, 1.0, 1.0, 0.5];
const B: [f32; FIELDS] = [0.3, 0.3, 0.5, 0.0, 0.75, 0.75];
const PIVOT: [f32; FIELDS] = [3.0, 4.0, 4.0, 1.0, 24.0, 24.0];
/// Term-frequency saturation.
const K1: f32 = 1.2;

/// One analyzed tool. The analysis is shared (`Arc`) with the index it is
/// carried over to by [`ToolIndex::update`].
#[derive(Clone)]
struct Doc {
    name: Arc<str>,
    server: Arc<str>,
    tool: Arc<Tool>,
    analysis: Arc<Analysis>,
}

struct Analysis {
    /// Each distinct term with its `tf~` (its fields' weighted, normalized
    /// frequencies).
    terms: Box<[(u32, f32)]>,
    /// The terms of the tool's own name, and of its namespaced name.
    own_key: Box<[u32]>,
    full_key: Box<[u32]>,
    /// The JSON size of the definition as the model gets it (under its
    /// namespaced name).
    schema_bytes: u64,
}

/// The terms known to an index: each one's id.
#[derive(Clone, Default)]
struct Vocabulary {
    ids: Map<Box<str>, u32>,
}

impl Vocabulary {
    fn intern(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        // At most MAX_INDEXED_TOOLS × (6 × MAX_FIELD_TERMS + 2 keys): far
        // below u32::MAX.
        let id = u32::try_from(self.ids.len()).unwrap_or(u32::MAX);
        self.ids.insert(term.into(), id);
        id
    }

    fn get(&self, term: &str) -> Option<u32> {
        self.ids.get(term).copied()
    }

    fn len(&self) -> usize {
        self.ids.len()
    }
}

/// A ranked index over tools (see the [module docs](crate::search)):
/// [`build`](Self::build) it from a catalog, [`search`](Self::search) it,
/// [`update`](Self::update) it when the catalog changes.
pub struct ToolIndex {
    docs: Vec<Doc>,
    vocabulary: Vocabulary,
    /// Per term id: (tool, `tf~`), by tool.
    postings: Vec<Vec<(u32, f32)>>,
    /// Name term sequences → the tools named so, by tool.
    exact: Map<Box<[u32]>, Vec<u32>>,
    omitted: usize,
    reused: usize,
    full_bytes: u64,
}

impl fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.docs.len())
            .field("terms", &self.vocabulary.len())
            .field("omitted", &self.omitted)
            .field("reused", &self.reused)
            .field("full_schema_bytes", &self.full_bytes)
            .finish()
    }
}

/// Counts the bytes written to it.
struct ByteCount(u64);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// Writing to a counter cannot fail; a value that cannot be written (none
// of these) counts as what was written.
fn tool_bytes(tool: &Tool) -> u64 {
    let mut count = ByteCount(0);
    let _ = serde_json::to_writer(&mut count, tool);
    count.0
}

fn string_bytes(text: &str) -> u64 {
    let mut count = ByteCount(0);
    let _ = serde_json::to_writer(&mut count, text);
    count.0
}

/// The JSON size of `tool` under the name `name`, without copying it.
pub(crate) fn schema_bytes_as(tool: &Tool, name: &str) -> u64 {
    (tool_bytes(tool) + string_bytes(name)).saturating_sub(string_bytes(&tool.name))
}

/// Gathers a tool's terms field by field.
struct Analyzer<'v> {
    vocabulary: &'v mut Vocabulary,
    /// (term, field) for every occurrence.
    seen: Vec<(u32, u8)>,
    lengths: [usize; FIELDS],
}

impl Analyzer<'_> {
    fn add(&mut self, field: usize, text: &str) {
        let Some(length) = self.lengths.get_mut(field) else {
            return;
        };
        let room = MAX_FIELD_TERMS.saturating_sub(*length);
        let (vocabulary, seen) = (&mut *self.vocabulary, &mut self.seen);
        let mut added = 0;
        for_each_term(text, room, |t| {
            seen.push((vocabulary.intern(t), field as u8));
            added += 1;
        });
        *length += added;
    }

    fn key(&mut self, text: &str) -> Box<[u32]> {
        let mut key = Vec::new();
        for_each_term(text, MAX_FIELD_TERMS, |t| {
            key.push(self.vocabulary.intern(t))
        });
        key.into_boxed_slice()
    }

    /// Property names and their descriptions, nested ones too, bounded
    /// (`params.rs`: read from the schema's text when it is unparsed).
    fn schema(&mut self, schema: &Schema) {
        for param in params(schema) {
            match param {
                Param::Name(name) => self.add(PARAM_NAME, &name),
                Param::Text(text) => self.add(PARAM_DESCRIPTION, &text),
            }
        }
    }

    fn finish(mut self, own_key: Box<[u32]>, full_key: Box<[u32]>, bytes: u64) -> Analysis {
        self.seen.sort_unstable();
        let norm: [f32; FIELDS] = std::array::from_fn(|f| {
            let (b, pivot) = (B.get(f).copied(), PIVOT.get(f).copied());
            let length = self.lengths.get(f).copied().unwrap_or(0) as f32;
            let (b, pivot) = (b.unwrap_or(0.0), pivot.unwrap_or(1.0));
            1.0 - b + b * length / pivot
        });
        let mut terms: Vec<(u32, f32)> = Vec::new();
        for &(term, field) in &self.seen {
            let f = usize::from(field);
            let add = WEIGHT.get(f).copied().unwrap_or(0.0) / norm.get(f).copied().unwrap_or(1.0);
            match terms.last_mut() {
                Some((t, tf)) if *t == term => *tf += add,
                _ => terms.push((term, add)),
            }
        }
        Analysis {
            terms: terms.into_boxed_slice(),
            own_key,
            full_key,
            schema_bytes: bytes,
        }
    }
}

fn analyze(vocabulary: &mut Vocabulary, entry: &IndexEntry<'_>) -> Analysis {
    let tool = &**entry.tool;
    let mut a = Analyzer {
        vocabulary,
        seen: Vec::new(),
        lengths: [0; FIELDS],
    };
    a.add(NAME, &tool.name);
    a.add(SERVER, entry.server);
    if let Some(title) = &tool.title {
        a.add(TITLE, title);
    }
    if let Some(description) = &tool.description {
        a.add(DESCRIPTION, description);
    }
    a.schema(&tool.input_schema);
    let own_key = a.key(&tool.name);
    let full_key = a.key(entry.name);
    a.finish(own_key, full_key, schema_bytes_as(tool, entry.name))
}

impl ToolIndex {
    /// Indexes these tools (their positions are the [`SearchHit::index`]
    /// of results; at most [`MAX_INDEXED_TOOLS`](super::MAX_INDEXED_TOOLS)).
    pub fn build<'a>(entries: impl IntoIterator<Item = IndexEntry<'a>>) -> ToolIndex {
        let mut vocabulary = Vocabulary::default();
        let mut docs = Vec::new();
        let mut omitted = 0;
        for e in entries {
            if docs.len() >= MAX_INDEXED_TOOLS {
                omitted += 1;
                continue;
            }
            docs.push(Doc {
                analysis: Arc::new(analyze(&mut vocabulary, &e)),
                name: e.name.into(),
                server: e.server.into(),
                tool: Arc::clone(e.tool),
            });
        }
        ToolIndex::assemble(docs, vocabulary, omitted, 0)
    }

    /// The index of `entries`, re-analyzing only the tools that are new or
    /// changed since this one (same namespaced name, server and definition:
    /// its analysis is kept). The same as [`build`](Self::build) would give,
    /// faster when little changed.
    pub fn update<'a>(&self, entries: impl IntoIterator<Item = IndexEntry<'a>>) -> ToolIndex {
        let live = self.postings.iter().filter(|p| !p.is_empty()).count();
        // Terms are never taken out of a vocabulary: start afresh once most
        // of them belong to tools that are gone.
        if self.vocabulary.len() > 2 * live + 1024 {
            return ToolIndex::build(entries);
        }
        let mut vocabulary = self.vocabulary.clone();
        let before: Map<&str, &Doc> = self.docs.iter().map(|d| (&*d.name, d)).collect();
        let mut docs = Vec::new();
        let (mut omitted, mut reused) = (0, 0);
        for e in entries {
            if docs.len() >= MAX_INDEXED_TOOLS {
                omitted += 1;
                continue;
            }
            let same = before.get(e.name).filter(|d| {
                &*d.server == e.server && (Arc::ptr_eq(&d.tool, e.tool) || d.tool == *e.tool)
            });
            let analysis = match same {
                Some(d) => {
                    reused += 1;
                    Arc::clone(&d.analysis)
                }
                None => Arc::new(analyze(&mut vocabulary, &e)),
            };
            docs.push(Doc {
                analysis,
                name: e.name.into(),
                server: e.server.into(),
                tool: Arc::clone(e.tool),
            });
        }
        ToolIndex::assemble(docs, vocabulary, omitted, reused)
    }

    fn assemble(docs: Vec<Doc>, vocabulary: Vocabulary, omitted: usize, reused: usize) -> Self {
        let mut postings: Vec<Vec<(u32, f32)>> = vec![Vec::new(); vocabulary.len()];
        let mut exact: Map<Box<[u32]>, Vec<u32>> = Map::default();
        let mut full_bytes = 0;
        for (i, d) in docs.iter().enumerate() {
            // At most MAX_INDEXED_TOOLS.
            let i = u32::try_from(i).unwrap_or(u32::MAX);
            let a = &d.analysis;
            for &(term, tf) in a.terms.iter() {
                if let Some(p) = postings.get_mut(term as usize) {
                    p.push((i, tf));
                }
            }
            for key in [&a.own_key, &a.full_key] {
                if key.is_empty() {
                    continue;
                }
                let named = exact.entry(key.clone()).or_default();
                if named.last() != Some(&i) {
                    named.push(i);
                }
            }
            full_bytes += a.schema_bytes;
        }
        ToolIndex {
            docs,
            vocabulary,
            postings,
            exact,
            omitted,
            reused,
            full_bytes,
        }
    }

    /// The `k` tools that match `query` best (at most
    /// [`MAX_RESULTS`](super::MAX_RESULTS)): tools named exactly by the
    /// query first, then by BM25F score, then in the order indexed. Tools
    /// that share no term with the query are not results.
    pub fn search(&self, query: &str, k: usize) -> Result<Vec<SearchHit>, SearchError> {
        if query.len() > MAX_QUERY_BYTES {
            return Err(SearchError::QueryTooLong {
                len: query.len(),
                max: MAX_QUERY_BYTES,
            });
        }
        let k = k.min(MAX_RESULTS);
        let mut words: Vec<u32> = Vec::new();
        let mut unknown = false;
        for_each_term(query, MAX_QUERY_BYTES, |t| match self.vocabulary.get(t) {
            Some(id) => words.push(id),
            None => unknown = true,
        });
        if k == 0 || words.is_empty() {
            return Ok(Vec::new());
        }
        // A word no tool has cannot be part of a tool's name.
        let named: &[u32] = if unknown {
            &[]
        } else {
            self.exact.get(words.as_slice()).map_or(&[], Vec::as_slice)
        };
        let mut distinct: Vec<u32> = Vec::new();
        for w in words {
            if !distinct.contains(&w) {
                distinct.push(w);
                if distinct.len() == MAX_QUERY_TERMS {
                    break;
                }
            }
        }
        let n = self.docs.len() as f32;
        let mut scores = vec![0f32; self.docs.len()];
        let mut touched: Vec<u32> = Vec::new();
        for term in distinct {
            let Some(postings) = self.postings.get(term as usize) else {
                continue;
            };
            let idf = ((n + 1.0) / (postings.len() as f32 + 0.5)).ln();
            for &(doc, tf) in postings {
                if let Some(score) = scores.get_mut(doc as usize) {
                    if *score == 0.0 {
                        touched.push(doc);
                    }
                    *score += idf * tf / (K1 + tf);
                }
            }
        }
        let mut hits: Vec<SearchHit> = touched
            .into_iter()
            .map(|doc| SearchHit {
                index: doc as usize,
                score: scores.get(doc as usize).copied().unwrap_or(0.0),
                exact_name: named.binary_search(&doc).is_ok(),
            })
            .collect();
        if hits.len() > k {
            hits.select_nth_unstable_by(k - 1, rank);
            hits.truncate(k);
        }
        hits.sort_unstable_by(rank);
        Ok(hits)
    }

    /// How many tools it holds.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// It holds no tool.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Tools left out: beyond [`MAX_INDEXED_TOOLS`](super::MAX_INDEXED_TOOLS).
    pub fn omitted(&self) -> usize {
        self.omitted
    }

    /// How many tools an [`update`](Self::update) carried over without
    /// analyzing them again (0 for a [`build`](Self::build)).
    pub fn reused(&self) -> usize {
        self.reused
    }

    /// How many distinct terms it knows.
    pub fn terms(&self) -> usize {
        self.vocabulary.len()
    }

    /// The namespaced name of the tool at `index`.
    pub fn name(&self, index: usize) -> Option<&str> {
        self.docs.get(index).map(|d| &*d.name)
    }

    /// The server of the tool at `index`.
    pub fn server(&self, index: usize) -> Option<&str> {
        self.docs.get(index).map(|d| &*d.server)
    }

    /// The definition of the tool at `index`.
    pub fn tool(&self, index: usize) -> Option<&Arc<Tool>> {
        self.docs.get(index).map(|d| &d.tool)
    }

    /// The JSON size of the tool at `index` as the model gets it (its
    /// definition under its namespaced name).
    pub fn schema_bytes(&self, index: usize) -> Option<u64> {
        self.docs.get(index).map(|d| d.analysis.schema_bytes)
    }

    /// The JSON size of every tool's definition: what handing the model the
    /// whole catalog costs.
    pub fn full_schema_bytes(&self) -> u64 {
        self.full_bytes
    }
}

/// Result order: exact names first, then higher scores, then index order.
fn rank(a: &SearchHit, b: &SearchHit) -> Ordering {
    b.exact_name
        .cmp(&a.exact_name)
        .then_with(|| b.score.total_cmp(&a.score))
        .then_with(|| a.index.cmp(&b.index))
}
