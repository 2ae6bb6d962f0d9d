//! `cargo xtask layout`: the shape rules ARCHITECTURE.md states, checked.
//!
//! - **No circle of imports** between the top-level modules of a crate (a file
//!   `src/x.rs` and everything under `src/x/` are the module `x`). A core that
//!   imports its features, or commands that call each other, show up as a
//!   cycle. The vocabulary crate (folder `mcp-protocol`), whose data types name each
//!   other by design, is exempt.
//! - **No library file over [`MAX_LINES`] lines** (`xtask` is a program, not a
//!   library, and is exempt).
//!
//! The scan is textual, as a reviewer reads: an edge `x → y` is a file of `x`
//! naming `crate::y` (in a path or a grouped `use crate::{…}`), `super::y`
//! from `src/x.rs` itself, or an item the crate root re-exports from `y`.
//! Comments and `#[cfg(test)] mod tests` blocks are left out: a unit test may
//! reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The most lines a library source file may have.
pub(crate) const MAX_LINES: usize = 900;

/// Crates whose modules may name each other (data types only).
const CYCLES_ALLOWED: [&str; 1] = ["mcp-protocol"];

/// Crates that are programs, not libraries: no line limit.
const NOT_LIBRARIES: [&str; 1] = ["xtask"];

pub(crate) fn run() -> Result<(), String> {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let mut crates: Vec<PathBuf> = fs::read_dir(root)
        .map_err(|e| format!("cannot read the workspace: {e}"))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file() && p.join("src").is_dir())
        .collect();
    crates.sort();
    let mut problems = Vec::new();
    for dir in &crates {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let files = rust_files(&dir.join("src"))?;
        if !NOT_LIBRARIES.contains(&name.as_str()) {
            for (path, text) in &files {
                let lines = text.lines().count();
                if lines > MAX_LINES {
                    problems.push(format!(
                        "{name}: {} has {lines} lines (at most {MAX_LINES}): split it along its seams",
                        path.display()
                    ));
                }
            }
        }
        if CYCLES_ALLOWED.contains(&name.as_str()) {
            continue;
        }
        let graph = Graph::of(&files);
        for cycle in graph.cycles() {
            let mut text = format!("{name}: modules import each other in a circle: {cycle:?}");
            for (from, to, file) in graph.edges_within(&cycle) {
                text.push_str(&format!("\n    {from} -> {to}   ({})", file.display()));
            }
            problems.push(text);
        }
    }
    if problems.is_empty() {
        println!(
            "layout: {} crates, no module cycles, no library file over {MAX_LINES} lines",
            crates.len()
        );
        Ok(())
    } else {
        for p in &problems {
            println!("{p}");
        }
        Err(format!("{} layout problem(s)", problems.len()))
    }
}

/// Every `.rs` file under `src`, relative to `src`, with its text.
fn rust_files(src: &Path) -> Result<Vec<(PathBuf, String)>, String> {
    let mut out = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries =
            fs::read_dir(&dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                let rel = path.strip_prefix(src).unwrap_or(&path).to_path_buf();
                out.push((rel, text));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The top-level module a file belongs to; `None` for the crate root and `bin/`.
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    if matches!(first, "lib.rs" | "main.rs" | "bin") {
        return None;
    }
    Some(first.strip_suffix(".rs").unwrap_or(first).to_owned())
}

/// Imports between a crate's top-level modules.
#[derive(Debug, Default)]
struct Graph {
    modules: BTreeSet<String>,
    /// from → to → the first file that names it.
    edges: BTreeMap<String, BTreeMap<String, PathBuf>>,
}

impl Graph {
    fn of(files: &[(PathBuf, String)]) -> Graph {
        let mut graph = Graph::default();
        for (rel, _) in files {
            if let Some(m) = module_of(rel) {
                graph.modules.insert(m);
            }
        }
        let reexports = files
            .iter()
            .filter(|(rel, _)| module_of(rel).is_none() && rel.components().count() == 1)
            .flat_map(|(_, text)| root_reexports(&strip_comments(text), &graph.modules))
            .collect::<BTreeMap<_, _>>();
        for (rel, text) in files {
            let Some(from) = module_of(rel) else { continue };
            let code = strip_comments(text);
            let code = without_test_module(&code);
            let mut names = crate_paths(code);
            if rel.components().count() == 1 {
                names.extend(prefixed(code, "super::"));
            }
            for name in names {
                let to = if graph.modules.contains(&name) {
                    Some(name)
                } else {
                    reexports.get(&name).cloned()
                };
                if let Some(to) = to.filter(|t| *t != from) {
                    graph
                        .edges
                        .entry(from.clone())
                        .or_default()
                        .entry(to)
                        .or_insert_with(|| rel.clone());
                }
            }
        }
        graph
    }

    /// The strongly connected components with more than one module (Tarjan).
    fn cycles(&self) -> Vec<Vec<String>> {
        struct State<'g> {
            graph: &'g Graph,
            index: BTreeMap<&'g str, usize>,
            low: BTreeMap<&'g str, usize>,
            stack: Vec<&'g str>,
            on_stack: BTreeSet<&'g str>,
            out: Vec<Vec<String>>,
        }
        fn visit<'g>(s: &mut State<'g>, v: &'g str) {
            let n = s.index.len();
            s.index.insert(v, n);
            s.low.insert(v, n);
            s.stack.push(v);
            s.on_stack.insert(v);
            let graph = s.graph;
            for w in graph.edges.get(v).into_iter().flat_map(|e| e.keys()) {
                let w = w.as_str();
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low.get(w).copied().unwrap_or(usize::MAX);
                    if let Some(lv) = s.low.get_mut(v) {
                        *lv = (*lv).min(lw);
                    }
                } else if s.on_stack.contains(w) {
                    let iw = s.index.get(w).copied().unwrap_or(usize::MAX);
                    if let Some(lv) = s.low.get_mut(v) {
                        *lv = (*lv).min(iw);
                    }
                }
            }
            if s.low.get(v) == s.index.get(v) {
                let mut component = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack.remove(w);
                    component.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    s.out.push(component);
                }
            }
        }
        let mut state = State {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            out: Vec::new(),
        };
        for m in &self.modules {
            if !state.index.contains_key(m.as_str()) {
                visit(&mut state, m);
            }
        }
        state.out
    }

    fn edges_within<'a>(
        &'a self,
        component: &'a [String],
    ) -> impl Iterator<Item = (&'a str, &'a str, &'a Path)> + 'a {
        self.edges
            .iter()
            .filter(|(from, _)| component.contains(from))
            .flat_map(move |(from, tos)| {
                tos.iter()
                    .filter(|(to, _)| component.contains(to))
                    .map(move |(to, file)| (from.as_str(), to.as_str(), file.as_path()))
            })
    }
}

/// Code without `//` and `/* */` comments (doc comments included). String
/// literals are not parsed: a `//` inside one cuts the rest of its line,
/// which can only hide an edge on that line, never invent one.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let line_comment = rest.find("//");
        let block_comment = rest.find("/*");
        match (line_comment, block_comment) {
            (Some(l), b) if b.is_none_or(|b| l < b) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |n| &rest[l + n..]);
            }
            (_, Some(b)) => {
                out.push_str(&rest[..b]);
                rest = rest[b + 2..]
                    .find("*/")
                    .map_or("", |e| &rest[b + 2 + e + 2..]);
            }
            _ => {
                out.push_str(rest);
                rest = "";
            }
        }
    }
    out
}

/// The code before a `#[cfg(test)] mod tests` block (unit tests sit at a
/// file's end and may use anything).
fn without_test_module(code: &str) -> &str {
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]") {
        let start = from + at;
        let after = code[start + "#[cfg(test)]".len()..].trim_start();
        if after.starts_with("mod ") {
            return &code[..start];
        }
        from = start + 1;
    }
    code
}

/// Identifiers right after `prefix` (`crate::x`, `super::x`).
fn prefixed(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find(prefix) {
        let start = from + at;
        let boundary = code[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let ident: String = code[start + prefix.len()..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if boundary && !ident.is_empty() {
            out.push(ident);
        }
        from = start + prefix.len();
    }
    out
}

/// The first segment of every `crate::` path, groups included:
/// `use crate::{a, b::c}` names `a` and `b`.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = prefixed(code, "crate::");
    let mut from = 0;
    while let Some(at) = code[from..].find("crate::{") {
        let open = from + at + "crate::{".len();
        let mut depth = 1usize;
        let mut item = String::new();
        for c in code[open..].chars() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            if depth == 0 || (depth == 1 && c == ',') {
                let first = item.trim().split("::").next().unwrap_or("").trim();
                if !first.is_empty() {
                    out.push(first.to_owned());
                }
                item.clear();
                if depth == 0 {
                    break;
                }
            } else if depth == 1 {
                item.push(c);
            } else if depth > 1 && c != '{' {
                // inside a nested group: not a first segment
            }
        }
        from = open;
    }
    out
}

/// Items the crate root re-exports, by the module they come from
/// (`pub use session::Session;` → `Session` → `session`).
fn root_reexports(code: &str, modules: &BTreeSet<String>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for statement in code.split(';') {
        let Some(at) = statement.find("use ") else {
            continue;
        };
        let path = statement[at + 4..].trim();
        let path = path
            .strip_prefix("crate::")
            .or_else(|| path.strip_prefix("self::"))
            .unwrap_or(path);
        let Some((module, rest)) = path.split_once("::") else {
            continue;
        };
        if !modules.contains(module) {
            continue;
        }
        for word in rest.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !word.is_empty() && word != "self" && word != "as" {
                out.push((word.to_owned(), module.to_owned()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
        list.iter()
            .map(|(p, t)| (PathBuf::from(p), (*t).to_owned()))
            .collect()
    }

    #[test]
    fn a_core_that_imports_its_feature_is_a_cycle() {
        let g = Graph::of(&files(&[
            ("lib.rs", "mod core; mod tools;"),
            ("core.rs", "use crate::tools::Catalog;"),
            ("tools.rs", "use crate::core::Core;"),
        ]));
        assert_eq!(
            g.cycles(),
            vec![vec!["core".to_owned(), "tools".to_owned()]]
        );
    }

    #[test]
    fn features_above_a_core_are_no_cycle() {
        let g = Graph::of(&files(&[
            ("lib.rs", "mod core; mod tools; mod session;"),
            ("core.rs", "pub struct Core;"),
            ("tools.rs", "use crate::core::Core;"),
            ("session.rs", "use crate::{core::Core, tools};"),
        ]));
        assert!(g.cycles().is_empty());
        assert_eq!(g.edges.get("session").map(|e| e.len()), Some(2));
    }

    #[test]
    fn grouped_imports_submodules_reexports_and_super_count() {
        let g = Graph::of(&files(&[
            ("lib.rs", "mod a; mod b; mod c;\npub use c::Thing;"),
            ("a.rs", "use super::b::X; mod inner;"),
            ("a/inner.rs", "fn f() -> crate::Thing { todo!() }"),
            ("b.rs", "use crate::{\n  a::{Y, Z},\n};"),
            ("c.rs", "pub struct Thing;"),
        ]));
        let edges: Vec<(&str, &str)> = g
            .edges
            .iter()
            .flat_map(|(f, t)| t.keys().map(move |t| (f.as_str(), t.as_str())))
            .collect();
        assert_eq!(edges, vec![("a", "b"), ("a", "c"), ("b", "a")]);
        assert_eq!(g.cycles(), vec![vec!["a".to_owned(), "b".to_owned()]]);
    }

    #[test]
    fn comments_and_unit_tests_are_not_imports() {
        let g = Graph::of(&files(&[
            ("lib.rs", "mod a; mod b;"),
            (
                "a.rs",
                "/// see [`crate::b::X`]\n// crate::b\n/* crate::b */ fn f() {}",
            ),
            (
                "b.rs",
                "use crate::a;\n#[cfg(test)]\nmod tests { use crate::a; }",
            ),
        ]));
        assert!(!g.edges.contains_key("a"));
        assert!(g.cycles().is_empty());
    }

    #[test]
    fn a_word_that_ends_in_crate_is_not_a_path() {
        assert_eq!(prefixed("mycrate::x crate::y", "crate::"), vec!["y"]);
    }
}
