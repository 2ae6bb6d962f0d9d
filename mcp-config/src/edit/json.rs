//! A span-preserving editor of JSON and JSONC: it finds the servers object
//! and inserts, replaces or removes one member, copying the file's
//! indentation, newline and comma style, and leaves every other byte as it
//! was. Comments and trailing commas are read (JSONC); whether the format's
//! client accepts them is the caller's question ([`Doc::jsonc_features`]).
//!
//! Insertion and removal are inverses: a member added (as the last one)
//! and removed again gives back the original bytes. One exception, by
//! choice: an object left with nothing but whitespace inside becomes `{}`
//! (so `{}` round-trips; `{ }` and a `{` and `}` on separate lines come
//! back as `{}`).

use serde_json::Value;

use super::{EditError, Node};

/// Nesting deeper than this is refused (no recursion without a bound).
const MAX_DEPTH: usize = 128;

/// An object: its braces and members.
#[derive(Debug)]
pub(super) struct Obj {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

/// One `"key": value` member.
#[derive(Debug)]
struct Member {
    key: String,
    /// Where the key's opening quote is.
    start: usize,
    value_start: usize,
    value_end: usize,
    /// The object, when the value is one.
    object: Option<Obj>,
    /// The comma after the value, if any.
    comma: Option<usize>,
}

/// A parsed JSON(C) text.
#[derive(Debug)]
pub(super) struct Doc<'t> {
    text: &'t str,
    /// `(start, end)` of every comment, in order.
    comments: Vec<(usize, usize)>,
    /// Byte offsets of trailing commas (before `}` or `]`).
    trailing_commas: Vec<usize>,
    root: Obj,
}

/// Where a path of keys leads.
enum Found<'d> {
    /// To an object.
    Object(&'d Obj),
    /// The object at the deepest existing key, and the keys missing below it.
    Missing(&'d Obj, usize),
}

impl<'t> Doc<'t> {
    /// Parses `text`; the top level must be an object.
    pub(super) fn parse(text: &'t str) -> Result<Self, EditError> {
        let mut p = Parser {
            text,
            bytes: text.as_bytes(),
            at: 0,
            comments: Vec::new(),
            trailing_commas: Vec::new(),
        };
        p.trivia()?;
        if p.peek() != Some(b'{') {
            return Err(p.error("the file must hold one JSON object"));
        }
        let root = p.object(0)?;
        p.trivia()?;
        if p.at < p.bytes.len() {
            return Err(p.error("unexpected text after the top-level object"));
        }
        Ok(Doc {
            text,
            comments: p.comments,
            trailing_commas: p.trailing_commas,
            root,
        })
    }

    /// Where the file uses JSONC: its first comment, else its first trailing
    /// comma, as `(line, column, what)`.
    pub(super) fn jsonc_features(&self) -> Option<(usize, usize, &'static str)> {
        let comment = self.comments.first().map(|c| (c.0, "a comment"));
        let comma = self
            .trailing_commas
            .first()
            .map(|c| (*c, "a trailing comma"));
        let (at, what) = match (comment, comma) {
            (Some(a), Some(b)) => {
                if a.0 <= b.0 {
                    a
                } else {
                    b
                }
            }
            (a, b) => a.or(b)?,
        };
        let (line, column) = line_column(self.text, at);
        Some((line, column, what))
    }

    /// The text as plain JSON (comments and trailing commas blanked out),
    /// parsed.
    pub(super) fn value(&self) -> Result<Value, EditError> {
        let mut plain = self.text.as_bytes().to_vec();
        let blanks = self
            .comments
            .iter()
            .copied()
            .chain(self.trailing_commas.iter().map(|c| (*c, c + 1)));
        for (start, end) in blanks {
            for b in plain.get_mut(start..end).into_iter().flatten() {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
        }
        serde_json::from_slice(&plain).map_err(|e| EditError::Syntax {
            message: format!("not valid JSON: {e}"),
        })
    }

    /// Follows `path` from the top-level object.
    fn find(&self, path: &[&str]) -> Result<Found<'_>, EditError> {
        let mut obj = &self.root;
        for (depth, key) in path.iter().enumerate() {
            let Some(member) = obj.member(key)? else {
                return Ok(Found::Missing(obj, depth));
            };
            match &member.object {
                Some(inner) => obj = inner,
                None => {
                    return Err(EditError::NotAnObject {
                        key: path.get(..=depth).unwrap_or(path).join("."),
                    });
                }
            }
        }
        Ok(Found::Object(obj))
    }

    /// The names in the servers object at `path` (empty when it is missing).
    pub(super) fn names(&self, path: &[&str]) -> Result<Vec<String>, EditError> {
        Ok(match self.find(path)? {
            Found::Object(obj) => obj.members.iter().map(|m| m.key.clone()).collect(),
            Found::Missing(..) => Vec::new(),
        })
    }

    /// The text with `name: record` in the object at `path` (made, with
    /// its parents, when missing): appended as the last member, or, when
    /// `name` is there and `replace`, put in place of the old value.
    pub(super) fn insert(
        &self,
        path: &[&str],
        name: &str,
        record: &Node,
        replace: bool,
    ) -> Result<String, EditError> {
        let style = Style::of(self.text);
        let (obj, key, value) = match self.find(path)? {
            Found::Object(obj) => {
                if let Some(old) = obj.member(name)? {
                    if !replace {
                        return Err(EditError::Exists {
                            name: name.to_owned(),
                        });
                    }
                    let indent = line_indent(self.text, old.start);
                    let pretty = self.multiline(obj);
                    let rendered = style.render(record, indent, pretty);
                    return Ok(splice(
                        self.text,
                        &[(old.value_start, old.value_end, rendered)],
                    ));
                }
                (obj, name.to_owned(), record.clone())
            }
            Found::Missing(obj, depth) => {
                // The missing keys, innermost holding the record.
                let mut value = Node::Map(vec![(name.to_owned(), record.clone())]);
                let missing = path.get(depth..).unwrap_or_default();
                for key in missing.iter().skip(1).rev() {
                    value = Node::Map(vec![((*key).to_owned(), value)]);
                }
                let key = missing
                    .first()
                    .map_or_else(String::new, |k| (*k).to_owned());
                (obj, key, value)
            }
        };
        Ok(self.append(obj, &key, &value, &style))
    }

    /// Whether the members of `obj` go on lines of their own.
    fn multiline(&self, obj: &Obj) -> bool {
        self.text
            .get(obj.open..obj.close)
            .is_some_and(|t| t.contains('\n'))
    }

    /// `obj` with `key: value` appended.
    fn append(&self, obj: &Obj, key: &str, value: &Node, style: &Style) -> String {
        let text = self.text;
        let nl = style.newline;
        let key = json_string(key);
        let Some(last) = obj.members.last() else {
            // Empty: the member on a line of its own, one level in.
            let outer = line_indent(text, obj.open);
            let indent = format!("{outer}{}", style.unit);
            let member = format!("{indent}{key}: {}", style.render(value, &indent, true));
            let inner_end = obj.close;
            // `}` on a line of its own: the member goes on a line before it.
            if let Some(nl_at) = self.last_free_newline(obj.open + 1, inner_end)
                && text
                    .get(nl_at + 1..inner_end)
                    .is_some_and(|t| t.trim().is_empty())
            {
                let at = if nl_at > 0 && text.as_bytes().get(nl_at - 1) == Some(&b'\r') {
                    nl_at - 1
                } else {
                    nl_at
                };
                return splice(text, &[(at, at, format!("{nl}{member}"))]);
            }
            return splice(
                text,
                &[(inner_end, inner_end, format!("{nl}{member}{nl}{outer}"))],
            );
        };
        if !self.multiline(obj) {
            let member = format!("{key}: {}", style.render(value, "", false));
            return match last.comma {
                Some(c) => splice(text, &[(c + 1, c + 1, format!(" {member},"))]),
                None => splice(
                    text,
                    &[(last.value_end, last.value_end, format!(", {member}"))],
                ),
            };
        }
        let indent = line_indent(text, last.start);
        let member = format!("{indent}{key}: {}", style.render(value, indent, true));
        match last.comma {
            Some(c) => {
                let at = self.line_end(c + 1, obj.close);
                splice(text, &[(at, at, format!("{nl}{member},"))])
            }
            None => {
                let at = self.line_end(last.value_end, obj.close);
                splice(
                    text,
                    &[
                        (last.value_end, last.value_end, ",".to_owned()),
                        (at, at, format!("{nl}{member}")),
                    ],
                )
            }
        }
    }

    /// The text without the member `name` of the object at `path`.
    pub(super) fn remove(&self, path: &[&str], name: &str) -> Result<String, EditError> {
        let obj = match self.find(path)? {
            Found::Object(obj) => obj,
            Found::Missing(..) => return Err(self.not_found(path, name)),
        };
        let Some(i) = obj.members.iter().position(|m| m.key == name) else {
            return Err(self.not_found(path, name));
        };
        obj.member(name)?; // refuses a duplicated name
        let text = self.text;
        let (Some(m), prev, next) = (
            obj.members.get(i),
            i.checked_sub(1).and_then(|p| obj.members.get(p)),
            obj.members.get(i + 1),
        ) else {
            return Err(self.not_found(path, name));
        };
        let mut cuts: Vec<(usize, usize, String)> = Vec::new();
        if !self.multiline(obj) {
            match (next, prev, m.comma) {
                (Some(n), _, _) => cuts.push((m.start, n.start, String::new())),
                (None, Some(p), Some(c)) => {
                    let from = p.comma.map_or(p.value_end, |pc| pc + 1);
                    cuts.push((from, c + 1, String::new()));
                }
                (None, Some(p), None) => cuts.push((p.value_end, m.value_end, String::new())),
                (None, None, _) => cuts.push((obj.open + 1, obj.close, String::new())),
            }
            return Ok(splice(text, &cuts));
        }
        let after = m.comma.map_or(m.value_end, |c| c + 1);
        let line = line_start(text, m.start);
        let own_line = text.get(line..m.start).is_some_and(|t| t.trim().is_empty());
        let (start, end) = match next {
            // The next member on the same line: up to it.
            Some(n) if !self.has_free_newline(after, n.start) => {
                (if own_line { line } else { m.start }, n.start)
            }
            // On lines of its own: those lines and the newline before them
            // (what `append` inserts).
            _ if own_line => {
                let before = text.get(..line).map_or(line, |t| {
                    t.strip_suffix("\r\n")
                        .or_else(|| t.strip_suffix('\n'))
                        .map_or(line, str::len)
                });
                (before.max(obj.open + 1), self.line_end(after, obj.close))
            }
            // After something else on its line: from the end of that.
            _ => {
                let from = prev.map_or(obj.open + 1, |p| p.comma.map_or(p.value_end, |c| c + 1));
                (from, self.line_end(after, obj.close))
            }
        };
        if let (None, Some(p)) = (m.comma, prev)
            && let Some(pc) = p.comma
        {
            cuts.push((pc, pc + 1, String::new()));
        }
        cuts.push((start, end, String::new()));
        let mut out = splice(text, &cuts);
        // Nothing but whitespace left inside: `{}`.
        if obj.members.len() == 1 {
            let removed: usize = cuts.iter().map(|(s, e, _)| e - s).sum();
            let close = obj.close - removed;
            if out
                .get(obj.open + 1..close)
                .is_some_and(|t| t.trim().is_empty())
            {
                out.replace_range(obj.open + 1..close, "");
            }
        }
        Ok(out)
    }

    fn not_found(&self, path: &[&str], name: &str) -> EditError {
        EditError::NotFound {
            name: name.to_owned(),
            known: self.names(path).unwrap_or_default(),
        }
    }

    /// Whether `at` is inside a comment.
    fn in_comment(&self, at: usize) -> bool {
        self.comments.iter().any(|(s, e)| (*s..*e).contains(&at))
    }

    /// The first newline in `from..to` outside comments.
    fn free_newline_before(&self, from: usize, to: usize) -> Option<usize> {
        let slice = self.text.get(from..to)?;
        slice
            .match_indices('\n')
            .map(|(i, _)| from + i)
            .find(|i| !self.in_comment(*i))
    }

    /// The last newline in `from..to` outside comments.
    fn last_free_newline(&self, from: usize, to: usize) -> Option<usize> {
        let slice = self.text.get(from..to)?;
        slice
            .rmatch_indices('\n')
            .map(|(i, _)| from + i)
            .find(|i| !self.in_comment(*i))
    }

    fn has_free_newline(&self, from: usize, to: usize) -> bool {
        self.free_newline_before(from, to).is_some()
    }

    /// Where the line holding `from` ends (its `\r\n` or `\n`), comments
    /// on it included; `limit` when that comes first.
    fn line_end(&self, from: usize, limit: usize) -> usize {
        match self.free_newline_before(from, limit) {
            Some(nl) if nl > from && self.text.as_bytes().get(nl - 1) == Some(&b'\r') => nl - 1,
            Some(nl) => nl,
            None => limit,
        }
    }
}

impl Obj {
    /// The member named `key`; a name written twice is refused (which one
    /// a client reads differs).
    fn member(&self, key: &str) -> Result<Option<&Member>, EditError> {
        let mut found = self.members.iter().filter(|m| m.key == key);
        let first = found.next();
        if first.is_some() && found.next().is_some() {
            return Err(EditError::Duplicate {
                name: key.to_owned(),
            });
        }
        Ok(first)
    }
}

/// How the file writes things.
struct Style {
    /// One level of indentation.
    unit: String,
    newline: &'static str,
}

impl Style {
    fn of(text: &str) -> Style {
        let unit = text
            .lines()
            .map(|l| {
                l.get(..l.len() - l.trim_start_matches([' ', '\t']).len())
                    .unwrap_or_default()
            })
            .find(|ws| !ws.is_empty())
            .unwrap_or("  ")
            .to_owned();
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        Style { unit, newline }
    }

    /// `node` as JSON: over lines indented from `indent`, or on one line.
    fn render(&self, node: &Node, indent: &str, pretty: bool) -> String {
        match node {
            Node::Str(s) => json_string(s),
            Node::List(items) => {
                let items: Vec<String> = items.iter().map(|i| json_string(i)).collect();
                format!("[{}]", items.join(", "))
            }
            Node::Map(entries) if entries.is_empty() => "{}".to_owned(),
            Node::Map(entries) => {
                if !pretty {
                    let inner: Vec<String> = entries
                        .iter()
                        .map(|(k, v)| format!("{}: {}", json_string(k), self.render(v, "", false)))
                        .collect();
                    return format!("{{{}}}", inner.join(", "));
                }
                let inner_indent = format!("{indent}{}", self.unit);
                let lines: Vec<String> = entries
                    .iter()
                    .map(|(k, v)| {
                        format!(
                            "{inner_indent}{}: {}",
                            json_string(k),
                            self.render(v, &inner_indent, true)
                        )
                    })
                    .collect();
                let nl = self.newline;
                format!("{{{nl}{}{nl}{indent}}}", lines.join(&format!(",{nl}")))
            }
        }
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// `text` with each `(start, end, replacement)` applied (ranges must not overlap).
fn splice(text: &str, edits: &[(usize, usize, String)]) -> String {
    let mut edits: Vec<&(usize, usize, String)> = edits.iter().collect();
    edits.sort_by_key(|e| e.0);
    let mut out = String::with_capacity(text.len() + 256);
    let mut at = 0;
    for (start, end, with) in edits {
        out.push_str(text.get(at..*start).unwrap_or_default());
        out.push_str(with);
        at = *end;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    out
}

fn line_start(text: &str, at: usize) -> usize {
    text.get(..at)
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |i| i + 1)
}

/// The whitespace that starts the line holding `at`.
fn line_indent(text: &str, at: usize) -> &str {
    let start = line_start(text, at);
    let line = text.get(start..).unwrap_or_default();
    let len = line.len() - line.trim_start_matches([' ', '\t']).len();
    line.get(..len).unwrap_or_default()
}

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

struct Parser<'t> {
    text: &'t str,
    bytes: &'t [u8],
    at: usize,
    comments: Vec<(usize, usize)>,
    trailing_commas: Vec<usize>,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn error(&self, what: &str) -> EditError {
        let (line, column) = line_column(self.text, self.at);
        EditError::Syntax {
            message: format!("not valid JSON at line {line}, column {column}: {what}"),
        }
    }

    /// Skips whitespace and comments.
    fn trivia(&mut self) -> Result<(), EditError> {
        loop {
            match (self.peek(), self.bytes.get(self.at + 1)) {
                (Some(b' ' | b'\t' | b'\n' | b'\r'), _) => self.at += 1,
                (Some(b'/'), Some(b'/')) => {
                    let start = self.at;
                    let rest = self.bytes.get(start..).unwrap_or_default();
                    self.at = start + rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len());
                    self.comments.push((start, self.at));
                }
                (Some(b'/'), Some(b'*')) => {
                    let start = self.at;
                    let body = self.text.get(start + 2..).unwrap_or_default();
                    let Some(end) = body.find("*/") else {
                        return Err(self.error("a comment that never ends"));
                    };
                    self.at = start + 2 + end + 2;
                    self.comments.push((start, self.at));
                }
                _ => return Ok(()),
            }
        }
    }

    fn expect(&mut self, byte: u8, what: &str) -> Result<(), EditError> {
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error(what))
        }
    }

    fn object(&mut self, depth: usize) -> Result<Obj, EditError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        let open = self.at;
        self.expect(b'{', "expected `{`")?;
        let mut members: Vec<Member> = Vec::new();
        loop {
            self.trivia()?;
            if self.peek() == Some(b'}') {
                break;
            }
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a key in double quotes or `}`"));
            }
            let start = self.at;
            let key = self.string()?;
            self.trivia()?;
            self.expect(b':', "expected `:` after the key")?;
            self.trivia()?;
            let value_start = self.at;
            let object = self.value(depth + 1)?;
            let value_end = self.at;
            self.trivia()?;
            let comma = if self.peek() == Some(b',') {
                self.at += 1;
                Some(self.at - 1)
            } else {
                None
            };
            members.push(Member {
                key,
                start,
                value_start,
                value_end,
                object,
                comma,
            });
            if comma.is_none() {
                self.trivia()?;
                if self.peek() != Some(b'}') {
                    return Err(self.error("expected `,` or `}`"));
                }
                break;
            }
        }
        if let Some(c) = members.last().and_then(|m| m.comma) {
            self.trailing_commas.push(c);
        }
        let close = self.at;
        self.at += 1;
        Ok(Obj {
            open,
            close,
            members,
        })
    }

    /// A value; its object, when it is one.
    fn value(&mut self, depth: usize) -> Result<Option<Obj>, EditError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        match self.peek() {
            Some(b'{') => return self.object(depth).map(Some),
            Some(b'[') => {
                self.at += 1;
                loop {
                    self.trivia()?;
                    if self.peek() == Some(b']') {
                        break;
                    }
                    self.value(depth + 1)?;
                    self.trivia()?;
                    if self.peek() == Some(b',') {
                        let comma = self.at;
                        self.at += 1;
                        self.trivia()?;
                        if self.peek() == Some(b']') {
                            self.trailing_commas.push(comma);
                            break;
                        }
                    } else if self.peek() != Some(b']') {
                        return Err(self.error("expected `,` or `]`"));
                    }
                }
                self.at += 1;
            }
            Some(b'"') => {
                self.string()?;
            }
            Some(b'-' | b'0'..=b'9' | b't' | b'f' | b'n') => {
                let start = self.at;
                while self
                    .peek()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.'))
                {
                    self.at += 1;
                }
                let word = self.text.get(start..self.at).unwrap_or_default();
                if serde_json::from_str::<Value>(word).is_err() {
                    self.at = start;
                    return Err(self.error("not a JSON value"));
                }
            }
            _ => return Err(self.error("expected a value")),
        }
        Ok(None)
    }

    /// A string; its value.
    fn string(&mut self) -> Result<String, EditError> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.peek() {
                None => {
                    self.at = start;
                    return Err(self.error("a string that never ends"));
                }
                Some(b'\\') => self.at += 2,
                Some(b'"') => {
                    self.at += 1;
                    break;
                }
                Some(_) => self.at += 1,
            }
        }
        let raw = self.text.get(start..self.at).unwrap_or_default();
        serde_json::from_str::<String>(raw).map_err(|_| {
            self.at = start;
            self.error("not a valid string")
        })
    }
}
