//! The index's ranking, budgets and updates (unit tests), and its
//! invariants (property tests).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::sync::Arc;

use mcp_stack_session::types::Tool;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::tokenize::terms;
use super::*;

fn tool(name: &str, description: &str, params: &[(&str, &str)]) -> Arc<Tool> {
    let properties: serde_json::Map<String, Value> = params
        .iter()
        .map(|(p, d)| ((*p).to_owned(), json!({"type": "string", "description": d})))
        .collect();
    Arc::new(
        serde_json::from_value(json!({
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": properties}
        }))
        .unwrap(),
    )
}

/// (server, tool) → the index over them, named `SERVER__TOOL`.
struct Catalog {
    rows: Vec<(String, String, Arc<Tool>)>,
}

impl Catalog {
    fn new(tools: Vec<(&str, Arc<Tool>)>) -> Self {
        Catalog {
            rows: tools
                .into_iter()
                .map(|(s, t)| (format!("{s}__{}", t.name), s.to_owned(), t))
                .collect(),
        }
    }

    fn entries(&self) -> Vec<IndexEntry<'_>> {
        self.rows
            .iter()
            .map(|(name, server, tool)| IndexEntry { name, server, tool })
            .collect()
    }

    fn index(&self) -> ToolIndex {
        ToolIndex::build(self.entries())
    }
}

fn names(index: &ToolIndex, query: &str, k: usize) -> Vec<String> {
    index
        .search(query, k)
        .unwrap()
        .iter()
        .map(|h| index.name(h.index()).unwrap().to_owned())
        .collect()
}

fn realistic() -> Catalog {
    Catalog::new(vec![
        (
            "github",
            tool(
                "create_issue",
                "Create a new issue in a GitHub repository.",
                &[
                    ("owner", "Repository owner"),
                    ("repo", "Repository name"),
                    ("title", "Issue title"),
                ],
            ),
        ),
        (
            "github",
            tool(
                "list_issues",
                "List issues in a GitHub repository, filtered by state and labels.",
                &[
                    ("owner", "Repository owner"),
                    ("repo", "Repository name"),
                    ("state", "open or closed"),
                ],
            ),
        ),
        (
            "github",
            tool(
                "create_pull_request",
                "Open a pull request to merge one branch into another.",
                &[
                    ("head", "The branch with the changes"),
                    ("base", "The branch to merge into"),
                ],
            ),
        ),
        (
            "slack",
            tool(
                "postMessage",
                "Send a message to a channel or a person.",
                &[("channel", "Channel id"), ("text", "The message")],
            ),
        ),
        (
            "files",
            tool(
                "read_file",
                "Read a text file.",
                &[("path", "Where the file is")],
            ),
        ),
        (
            "files",
            tool(
                "write_file",
                "Write text to a file, replacing it.",
                &[("path", "Where"), ("content", "What to write")],
            ),
        ),
        (
            "calendar",
            tool(
                "create_event",
                "Create a calendar event with attendees; issues an invitation to each.",
                &[("start", "Start time"), ("attendees", "Email addresses")],
            ),
        ),
    ])
}

#[test]
fn finds_tools_by_name_description_and_parameters() {
    let index = realistic().index();
    assert_eq!(index.len(), 7);
    assert_eq!(names(&index, "create issue", 1), ["github__create_issue"]);
    assert_eq!(
        names(&index, "open a pull request", 1),
        ["github__create_pull_request"]
    );
    assert_eq!(
        names(&index, "send a message to a channel", 1),
        ["slack__postMessage"]
    );
    assert_eq!(names(&index, "post_message", 1), ["slack__postMessage"]);
    assert_eq!(names(&index, "branch", 1), ["github__create_pull_request"]);
    assert_eq!(names(&index, "attendees", 1), ["calendar__create_event"]);
    // Parameter names and the server's name count.
    let repo = names(&index, "repository owner", 3);
    assert_eq!(repo.len(), 2, "{repo:?}");
    assert!(repo.iter().all(|n| n.starts_with("github__")));
    assert_eq!(names(&index, "slack", 5), ["slack__postMessage"]);
    // Nothing shares a word: nothing found.
    assert!(names(&index, "weather forecast", 5).is_empty());
    assert!(names(&index, "", 5).is_empty());
    assert!(names(&index, "the of a", 5).is_empty());
}

#[test]
fn a_name_outranks_a_description_that_repeats_the_words() {
    let catalog = Catalog::new(vec![
        (
            "a",
            tool(
                "helper",
                "Search issues. Search issues fast: search issues, search issues everywhere.",
                &[("search", "search issues"), ("issues", "issues to search")],
            ),
        ),
        ("b", tool("search_issues", "Looks things up.", &[])),
    ]);
    let index = catalog.index();
    let hits = index.search("search issues", 5).unwrap();
    assert_eq!(index.name(hits[0].index()), Some("b__search_issues"));
    assert!(hits[0].exact_name());
    assert!(!hits[1].exact_name());
    // The namespaced name is a name too.
    let hits = index.search("a__helper", 5).unwrap();
    assert!(hits[0].exact_name());
    assert_eq!(index.name(hits[0].index()), Some("a__helper"));
    // A field's weight counts before saturation: a term in the name alone
    // beats the same term once in a description.
    let catalog = Catalog::new(vec![
        ("x", tool("report", "Weather for a city.", &[])),
        ("y", tool("weather", "Reports for a city.", &[])),
    ]);
    assert_eq!(
        names(&catalog.index(), "weather", 2),
        ["y__weather", "x__report"]
    );
}

#[test]
fn budgets_hold() {
    let index = realistic().index();
    let long = "word ".repeat(MAX_QUERY_BYTES);
    assert_eq!(
        index.search(&long, 5),
        Err(SearchError::QueryTooLong {
            len: long.len(),
            max: MAX_QUERY_BYTES
        })
    );
    assert!(index.search("file", 0).unwrap().is_empty());
    assert_eq!(index.search("file", usize::MAX).unwrap().len(), 2);
    // A huge description and a deep, wide schema cost their bounds only.
    let mut properties = serde_json::Map::new();
    for i in 0..500 {
        properties.insert(format!("param{i}"), json!({"type": "string"}));
    }
    let mut deep = json!({"type": "object", "properties": {"leaf": {"type": "string"}}});
    for _ in 0..10 {
        deep = json!({"type": "object", "properties": {"nest": deep}});
    }
    let big: Arc<Tool> = Arc::new(
        serde_json::from_value(json!({
            "name": "big",
            "description": "blah ".repeat(100_000),
            "inputSchema": {"type": "object", "properties": properties, "items": deep}
        }))
        .unwrap(),
    );
    let index = ToolIndex::build([IndexEntry {
        name: "s__big",
        server: "s",
        tool: &big,
    }]);
    // name, server, one description word, at most MAX_PARAMETERS names.
    assert!(index.terms() <= 3 + MAX_PARAMETERS + 2, "{}", index.terms());
    assert!(index.search("leaf", 1).unwrap().is_empty());
    assert_eq!(index.search("blah", 1).unwrap().len(), 1);
}

#[test]
fn schema_bytes_are_the_model_facing_json() {
    let catalog = realistic();
    let index = catalog.index();
    let mut total = 0;
    for (i, (name, _, tool)) in catalog.rows.iter().enumerate() {
        let facing = Tool {
            name: name.clone(),
            ..Tool::clone(tool)
        };
        let bytes = serde_json::to_vec(&facing).unwrap().len() as u64;
        assert_eq!(index.schema_bytes(i), Some(bytes));
        total += bytes;
    }
    assert_eq!(index.full_schema_bytes(), total);
}

#[test]
fn an_update_reanalyzes_only_what_changed_and_ranks_as_a_build() {
    let before = realistic();
    let old = before.index();
    let mut after = realistic();
    // One description edited, one tool removed, one added; the rest are
    // new `Arc`s of the same definitions (a server's list fetched again).
    after.rows[0].2 = tool("create_issue", "File a bug report.", &[]);
    after.rows.remove(3);
    after.rows.push((
        "weather__forecast".into(),
        "weather".into(),
        tool("forecast", "Weather forecast for a city.", &[("city", "")]),
    ));
    let updated = old.update(after.entries());
    let built = after.index();
    assert_eq!(updated.reused(), 5);
    assert_eq!(built.reused(), 0);
    for q in [
        "create issue",
        "bug report",
        "message",
        "weather city",
        "file",
        "repository",
    ] {
        let a = updated.search(q, 10).unwrap();
        let b = built.search(q, 10).unwrap();
        assert_eq!(a, b, "{q}");
    }
    assert_eq!(names(&updated, "bug", 1), ["github__create_issue"]);
    assert!(names(&updated, "slack", 5).is_empty());
    assert_eq!(updated.full_schema_bytes(), built.full_schema_bytes());
}

#[test]
fn a_cell_builds_once_and_updates_from_the_index_it_inherits() {
    let catalog = realistic();
    let first = IndexCell::default();
    let a = Arc::clone(first.get_or_build(|| catalog.entries()));
    let b = first.get_or_build(|| panic!("built twice"));
    assert!(Arc::ptr_eq(&a, b));
    let second = IndexCell::default();
    second.inherit(&first);
    let updated = second.get_or_build(|| catalog.entries());
    assert_eq!(updated.reused(), catalog.rows.len());
    // A cell whose predecessor never searched builds afresh.
    let (unused, third) = (IndexCell::default(), IndexCell::default());
    third.inherit(&unused);
    assert_eq!(third.get_or_build(|| catalog.entries()).reused(), 0);
}

// ---- properties ----

const WORDS: &[&str] = &[
    "create", "list", "get", "update", "delete", "issue", "pull", "request", "file", "repo",
    "user", "channel", "message", "event", "calendar", "search", "query", "table", "row", "branch",
];
/// Words no query is made of: what an unrelated tool says.
const OTHER: &[&str] = &["zebra", "quartz", "violin", "meadow", "harbor", "lantern"];

fn words(
    pool: &'static [&'static str],
    n: std::ops::Range<usize>,
) -> impl Strategy<Value = Vec<&'static str>> {
    prop::collection::vec(prop::sample::select(pool), n)
}

fn any_tool(
    pool: &'static [&'static str],
) -> impl Strategy<
    Value = (
        Vec<&'static str>,
        Vec<&'static str>,
        Vec<&'static str>,
        bool,
    ),
> {
    (
        words(pool, 1..4),
        words(pool, 0..12),
        words(pool, 0..4),
        any::<bool>(),
    )
}

fn make(name: &[&str], description: &[&str], params: &[&str], camel: bool) -> Arc<Tool> {
    let name = if camel {
        name.iter()
            .enumerate()
            .map(|(i, w)| {
                if i == 0 {
                    (*w).to_owned()
                } else {
                    let mut c = w.chars();
                    c.next()
                        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                        .unwrap_or_default()
                }
            })
            .collect::<String>()
    } else {
        name.join("_")
    };
    let params: Vec<(&str, &str)> = params.iter().map(|p| (*p, "")).collect();
    tool(&name, &description.join(" "), &params)
}

type Spec = (
    Vec<&'static str>,
    Vec<&'static str>,
    Vec<&'static str>,
    bool,
);

fn catalog_of(specs: &[Spec]) -> Catalog {
    let servers = ["alpha", "beta", "gamma"];
    let mut seen = std::collections::BTreeSet::new();
    let mut tools = Vec::new();
    for (i, (n, d, p, camel)) in specs.iter().enumerate() {
        let t = make(n, d, p, *camel);
        let server = servers[i % servers.len()];
        if seen.insert(format!("{server}__{}", t.name)) {
            tools.push((server, t));
        }
    }
    Catalog::new(tools)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn scores_are_finite_positive_sorted_and_bounded(
        specs in prop::collection::vec(any_tool(WORDS), 1..40),
        query in words(WORDS, 1..5),
        k in 0usize..20,
    ) {
        let catalog = catalog_of(&specs);
        let index = catalog.index();
        let hits = index.search(&query.join(" "), k).unwrap();
        prop_assert!(hits.len() <= k);
        let query_terms = terms(&query.join(" "), 64);
        for h in &hits {
            prop_assert!(h.score().is_finite() && h.score() > 0.0, "{h:?}");
            let (name, server, tool) = &catalog.rows[h.index()];
            let text = format!("{name} {server} {} {}", tool.description.as_deref().unwrap_or(""), tool.input_schema);
            let doc_terms = terms(&text, usize::MAX);
            prop_assert!(query_terms.iter().any(|t| doc_terms.contains(t)));
        }
        for pair in hits.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            prop_assert!(a.exact_name() >= b.exact_name());
            if a.exact_name() == b.exact_name() {
                prop_assert!(a.score() > b.score() || (a.score() == b.score() && a.index() < b.index()));
            }
        }
    }

    #[test]
    fn a_tool_named_by_the_query_ranks_first(
        specs in prop::collection::vec(any_tool(WORDS), 1..40),
        pick in any::<prop::sample::Index>(),
    ) {
        let catalog = catalog_of(&specs);
        let index = catalog.index();
        let target = pick.index(catalog.rows.len());
        let (_, _, tool) = &catalog.rows[target];
        let hits = index.search(&tool.name, 200).unwrap();
        prop_assert!(hits[0].exact_name());
        // The target is among the tools so named, which all come first.
        let named = hits.iter().take_while(|h| h.exact_name()).count();
        prop_assert!(hits[..named].iter().any(|h| h.index() == target));
        for h in &hits[..named] {
            let other = &catalog.rows[h.index()].2.name;
            prop_assert!(terms(other, 64) == terms(&tool.name, 64) || terms(&catalog.rows[h.index()].0, 64) == terms(&tool.name, 64));
        }
    }

    #[test]
    fn an_unrelated_tool_moves_scores_by_at_most_the_idf_shift(
        specs in prop::collection::vec(any_tool(WORDS), 1..40),
        unrelated in any_tool(OTHER),
        query in words(WORDS, 1..5),
    ) {
        let before = catalog_of(&specs);
        let mut after = catalog_of(&specs);
        let (n, d, p, camel) = &unrelated;
        after.rows.push(("zzz__unrelated".into(), "zzz".into(), make(n, d, p, *camel)));
        let (old, new) = (before.index(), after.index());
        let q = query.join(" ");
        let a = old.search(&q, 200).unwrap();
        let b = new.search(&q, 200).unwrap();
        // The same tools, never the new one.
        let mut ia: Vec<usize> = a.iter().map(SearchHit::index).collect();
        let mut ib: Vec<usize> = b.iter().map(SearchHit::index).collect();
        ia.sort_unstable();
        ib.sort_unstable();
        prop_assert_eq!(&ia, &ib);
        // Each score rises by at most ln((N+2)/(N+1)) per distinct query term.
        let count = before.rows.len() as f64;
        let distinct = {
            let mut t = terms(&q, 64);
            t.sort();
            t.dedup();
            t.len() as f64
        };
        let shift = ((count + 2.0) / (count + 1.0)).ln() * distinct;
        let score = |hits: &[SearchHit], i: usize| hits.iter().find(|h| h.index() == i).unwrap().score() as f64;
        for &i in &ia {
            let (s0, s1) = (score(&a, i), score(&b, i));
            let eps = 1e-4 * s0.max(1.0);
            prop_assert!(s1 >= s0 - eps && s1 <= s0 + shift + eps, "{s0} → {s1}, shift {shift}");
        }
        // So two results further apart than that keep their order, and a
        // one-word query keeps its whole order.
        let position = |hits: &[SearchHit], i: usize| hits.iter().position(|h| h.index() == i).unwrap();
        for x in &a {
            for y in &a {
                if x.exact_name() == y.exact_name() && x.score() as f64 > y.score() as f64 + shift + 1e-4 {
                    prop_assert!(position(&b, x.index()) < position(&b, y.index()));
                }
            }
        }
        if distinct == 1.0 {
            prop_assert_eq!(a.iter().map(SearchHit::index).collect::<Vec<_>>(), b.iter().map(SearchHit::index).collect::<Vec<_>>());
        }
    }

    #[test]
    fn an_update_ranks_as_a_fresh_build(
        specs in prop::collection::vec(any_tool(WORDS), 1..30),
        changed in prop::collection::vec(any_tool(WORDS), 1..30),
        query in words(WORDS, 1..4),
    ) {
        let old = catalog_of(&specs).index();
        let next = catalog_of(&changed);
        let updated = old.update(next.entries());
        let built = next.index();
        let q = query.join(" ");
        prop_assert_eq!(updated.search(&q, 50).unwrap(), built.search(&q, 50).unwrap());
    }
}
