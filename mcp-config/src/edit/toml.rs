//! TOML files, through `toml_edit`: it keeps every comment, blank line and
//! key as written and renders only what changed. A new server becomes a
//! `[mcp_servers.NAME]` table after the last one there (its env and headers
//! as inline tables, as Codex's docs write them), or a member of an inline
//! `mcp_servers = { … }`.

use serde_json::Value;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table};

use super::{EditError, Node, expected};

fn parse(text: &str) -> Result<DocumentMut, EditError> {
    text.parse::<DocumentMut>().map_err(|e| {
        let (line, column) = e
            .span()
            .map_or((0, 0), |s| super::json::line_column(text, s.start));
        // The parser's own Display quotes the line: it may hold a secret.
        EditError::Syntax {
            message: format!(
                "not valid TOML at line {line}, column {column}: {}",
                e.message().trim_end()
            ),
        }
    })
}

/// The document as JSON values, to compare.
pub(super) fn value(text: &str) -> Result<Value, EditError> {
    parse(text)?;
    ::toml::from_str::<Value>(text).map_err(|e| EditError::Syntax {
        message: format!("not valid TOML: {}", e.message().trim_end()),
    })
}

/// The item at `path`; made (as implicit tables, which print nothing of
/// their own) when `create`.
fn servers<'d>(
    doc: &'d mut DocumentMut,
    path: &[&str],
    create: bool,
) -> Result<Option<&'d mut Item>, EditError> {
    let mut item = doc.as_item_mut();
    for (depth, key) in path.iter().enumerate() {
        let not_table = || EditError::NotAnObject {
            key: path.get(..=depth).unwrap_or(path).join("."),
        };
        let table = item.as_table_like_mut().ok_or_else(not_table)?;
        if table.get(key).is_none() {
            if !create {
                return Ok(None);
            }
            let mut new = Table::new();
            new.set_implicit(true);
            table.insert(key, Item::Table(new));
        }
        item = table.get_mut(key).ok_or_else(not_table)?;
        if item.as_table_like().is_none() {
            return Err(not_table());
        }
    }
    Ok(Some(item))
}

fn array(items: &[String]) -> Array {
    items.iter().map(String::as_str).collect()
}

fn inline(node: &Node) -> toml_edit::Value {
    match node {
        Node::Str(s) => s.as_str().into(),
        Node::List(items) => array(items).into(),
        Node::Map(entries) => {
            let mut t = InlineTable::new();
            for (k, v) in entries {
                t.insert(k, inline(v));
            }
            t.into()
        }
    }
}

pub(super) fn insert(
    text: &str,
    path: &[&str],
    name: &str,
    record: &Node,
    replace: bool,
) -> Result<String, EditError> {
    let mut doc = parse(text)?;
    let Node::Map(entries) = record else {
        return Err(EditError::Unchecked {
            name: name.to_owned(),
        });
    };
    let item = servers(&mut doc, path, true)?.ok_or_else(|| EditError::NotAnObject {
        key: path.join("."),
    })?;
    let dotted = item.as_table_like().is_some_and(|t| t.is_dotted());
    if dotted {
        return Err(EditError::Unsupported(format!(
            "`{}` is written with dotted keys (`{0}.NAME.command = …`); add the entry by hand",
            path.join(".")
        )));
    }
    let exists = item.as_table_like().is_some_and(|t| t.contains_key(name));
    if exists && !replace {
        return Err(EditError::Exists {
            name: name.to_owned(),
        });
    }
    match item {
        Item::Table(servers) => {
            if let Some(Item::Table(old)) = servers.get_mut(name) {
                // In place: the header, its comments and position stay.
                old.clear();
                for (k, v) in entries {
                    old.insert(k, Item::Value(inline(v)));
                }
            } else {
                let mut table = Table::new();
                for (k, v) in entries {
                    table.insert(k, Item::Value(inline(v)));
                }
                servers.insert(name, Item::Table(table));
            }
        }
        other => {
            let servers = other
                .as_table_like_mut()
                .ok_or_else(|| EditError::NotAnObject {
                    key: path.join("."),
                })?;
            servers.insert(name, Item::Value(inline(record)));
        }
    }
    let out = rendered(text, &doc);
    if exists || one_splice(text, &out) {
        Ok(out)
    } else {
        Err(EditError::Unchecked {
            name: name.to_owned(),
        })
    }
}

/// The document as text, in the file's newlines: `toml_edit` writes `\n`,
/// so a file written with `\r\n` throughout gets them back.
fn rendered(before: &str, doc: &DocumentMut) -> String {
    let out = doc.to_string();
    let crlf =
        before.contains("\r\n") && before.matches('\n').count() == before.matches("\r\n").count();
    if crlf && !out.contains('\r') {
        out.replace('\n', "\r\n")
    } else {
        out
    }
}

/// Whether `a` and `b` differ by one inserted or removed run of bytes:
/// nothing else of the file moved or changed.
fn one_splice(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let shorter = a.len().min(b.len());
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(shorter - prefix)
        .take_while(|(x, y)| x == y)
        .count();
    prefix + suffix == shorter
}

pub(super) fn remove(text: &str, path: &[&str], name: &str) -> Result<String, EditError> {
    let mut doc = parse(text)?;
    let known = names(text, path)?;
    let removed = servers(&mut doc, path, false)?
        .and_then(Item::as_table_like_mut)
        .and_then(|t| t.remove(name));
    if removed.is_none() {
        return Err(EditError::NotFound {
            name: name.to_owned(),
            known,
        });
    }
    let out = rendered(text, &doc);
    if one_splice(text, &out) {
        Ok(out)
    } else {
        Err(EditError::Unchecked {
            name: name.to_owned(),
        })
    }
}

pub(super) fn names(text: &str, path: &[&str]) -> Result<Vec<String>, EditError> {
    let mut doc = parse(text)?;
    Ok(servers(&mut doc, path, false)?
        .and_then(|i| i.as_table_like())
        .map(|t| t.iter().map(|(k, _)| k.to_owned()).collect())
        .unwrap_or_default())
}

/// Checks that `out`, parsed, is `before` with just the entry changed.
pub(super) fn check(
    before: &str,
    out: &str,
    path: &[&str],
    name: &str,
    record: Option<&Node>,
) -> Result<(), EditError> {
    let want = expected(&value(before)?, path, name, record);
    // An implicit table left empty prints nothing: no `mcp_servers` at all.
    let got = value(out).ok().map(|mut v| {
        if let (Some(w), Value::Object(m)) = (&want, &mut v)
            && let Some(first) = path.first()
            && !m.contains_key(*first)
            && w.get(*first) == Some(&Value::Object(serde_json::Map::new()))
        {
            m.insert((*first).to_owned(), Value::Object(serde_json::Map::new()));
        }
        v
    });
    if got.is_some() && got == want {
        Ok(())
    } else {
        Err(EditError::Unchecked {
            name: name.to_owned(),
        })
    }
}
