//! The `SKILL.md` frontmatter: a strict reader of the YAML that skills use,
//! and the field-by-field comparison a host makes with a skill's entry.
//!
//! The block opens the file with a `---` line and ends at the next `---`
//! line. Inside, the reader takes what the Agent Skills specification
//! writes: `key: value` lines whose value is a plain, single-quoted or
//! double-quoted scalar, and `key:` followed by indented `key: value` lines
//! (one level, as `metadata` is). Plain scalars are typed as YAML 1.2's core
//! schema types them (`true`, `12`, `1.5`, `null` and `~`), so they compare
//! with the JSON the server rendered the same YAML to. Anything else (block
//! scalars, flow collections, sequences, anchors, tags, multi-line plain
//! scalars, duplicate keys, tabs) is an error, not a guess: a host that
//! cannot read the frontmatter cannot verify it, and refuses the skill.
//!
//! ```
//! use mcp_stack_protocol::skills::frontmatter;
//! use serde_json::json;
//!
//! let text = "---\nname: pdf-processing\ndescription: 'Fill PDF forms'\nmetadata:\n  version: \"2.1\"\n---\n\n# Body\n";
//! let (fields, body) = frontmatter::parse(text).unwrap();
//! assert_eq!(body, "\n# Body\n");
//! let entry = json!({"name": "pdf-processing", "description": "Fill PDF forms",
//!                    "metadata": {"version": "2.1"}});
//! assert!(frontmatter::differences(&fields, entry.as_object().unwrap()).is_empty());
//! ```

use std::collections::BTreeSet;

use serde_json::{Map, Number, Value};

/// Why a frontmatter block could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrontmatterError {
    /// The file does not begin with a `---` line.
    #[error("the file does not begin with a `---` frontmatter line")]
    Missing,
    /// No `---` line closes the block.
    #[error("no `---` line closes the frontmatter")]
    Unterminated,
    /// A line the reader does not take.
    #[error("frontmatter line {line}: {reason}")]
    Line {
        /// Its number in the file, from 1.
        line: usize,
        /// What is wrong, or what YAML feature it uses that is not read.
        reason: String,
    },
}

/// The frontmatter as JSON, and the rest of the file (the body).
pub fn parse(text: &str) -> Result<(Map<String, Value>, &str), FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = Lines { rest: text, n: 0 };
    match lines.next() {
        Some(first) if is_delimiter(first) => {}
        _ => return Err(FrontmatterError::Missing),
    }
    let mut fields = Map::new();
    // A top-level key whose value is the indented mapping that follows.
    let mut open: Option<(String, Map<String, Value>, Option<usize>)> = None;
    loop {
        let Some(line) = lines.next() else {
            return Err(FrontmatterError::Unterminated);
        };
        let n = lines.n;
        let err = |reason: &str| FrontmatterError::Line {
            line: n,
            reason: reason.to_string(),
        };
        if is_delimiter(line) {
            break;
        }
        let trimmed = line.trim_start_matches(' ');
        if trimmed.trim().is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if line.contains('\t') {
            return Err(err("tabs are not read (indent with spaces)"));
        }
        let indent = line.len() - trimmed.len();
        if indent > 0 {
            let Some((_, nested, level)) = open.as_mut() else {
                return Err(err(
                    "an indented line continues a value (multi-line values are not read)",
                ));
            };
            if *level.get_or_insert(indent) != indent {
                return Err(err("inconsistent indentation (one nested level is read)"));
            }
            let (key, value) = key_value(trimmed).map_err(|r| err(&r))?;
            if value.is_empty() {
                return Err(err("a mapping nested two levels deep is not read"));
            }
            if nested.contains_key(&key) {
                return Err(err(&format!("duplicate key `{key}`")));
            }
            let value = scalar(value).map_err(|r| err(&r))?;
            nested.insert(key, value);
            continue;
        }
        if let Some((key, nested, _)) = open.take() {
            fields.insert(key, mapping_or_null(nested));
        }
        let (key, value) = key_value(line).map_err(|r| err(&r))?;
        if fields.contains_key(&key) {
            return Err(err(&format!("duplicate key `{key}`")));
        }
        if value.is_empty() {
            open = Some((key, Map::new(), None));
        } else {
            let value = scalar(value).map_err(|r| err(&r))?;
            fields.insert(key, value);
        }
    }
    if let Some((key, nested, _)) = open.take() {
        fields.insert(key, mapping_or_null(nested));
    }
    Ok((fields, lines.rest))
}

/// The fields, over both sides, whose values differ between a file's
/// frontmatter and an entry's (a field only one side has differs). Numbers
/// compare by value (`2` and `2.0` are equal).
pub fn differences(file: &Map<String, Value>, entry: &Map<String, Value>) -> Vec<String> {
    let keys: BTreeSet<&String> = file.keys().chain(entry.keys()).collect();
    keys.into_iter()
        .filter(|k| !same(file.get(*k), entry.get(*k)))
        .map(|k| k.to_string())
        .collect()
}

fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => same_value(a, b),
        _ => false,
    }
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => differences(x, y).is_empty(),
        _ => a == b,
    }
}

fn mapping_or_null(nested: Map<String, Value>) -> Value {
    if nested.is_empty() {
        Value::Null
    } else {
        Value::Object(nested)
    }
}

/// Lines without their `\n` (and `\r`), counting, keeping the rest.
struct Lines<'a> {
    rest: &'a str,
    n: usize,
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        self.n += 1;
        let (line, rest) = match self.rest.split_once('\n') {
            Some((line, rest)) => (line, rest),
            None => (self.rest, ""),
        };
        self.rest = rest;
        Some(line.strip_suffix('\r').unwrap_or(line))
    }
}

fn is_delimiter(line: &str) -> bool {
    line.trim_end_matches([' ', '\t']) == "---"
}

/// `key: value` (or `key:`) → the key and the value's text, trimmed.
fn key_value(line: &str) -> Result<(String, &str), String> {
    if line.starts_with(['"', '\'']) {
        return Err("quoted keys are not read".into());
    }
    if line.starts_with("- ") || line == "-" {
        return Err("sequences are not read".into());
    }
    if line.starts_with(['?', '[', '{', '&', '*', '!', '|', '>', '%', '@', '`']) {
        return Err(format!(
            "`{}` starts YAML this reader does not take",
            &line[..1]
        ));
    }
    let colon = line
        .char_indices()
        .find(|&(i, c)| c == ':' && line[i + 1..].chars().next().is_none_or(|n| n == ' '))
        .map(|(i, _)| i)
        .ok_or_else(|| "not a `key: value` line".to_string())?;
    let key = line[..colon].trim_end();
    if key.is_empty() {
        return Err("an empty key".into());
    }
    let value = line[colon + 1..].trim();
    // A comment alone after `key:` leaves the value empty.
    let value = if value.starts_with('#') { "" } else { value };
    Ok((key.to_string(), value))
}

/// One scalar value, typed.
fn scalar(text: &str) -> Result<Value, String> {
    if let Some(rest) = text.strip_prefix('\'') {
        return single_quoted(rest).map(Value::String);
    }
    if let Some(rest) = text.strip_prefix('"') {
        return double_quoted(rest).map(Value::String);
    }
    if text.starts_with(['[', '{']) {
        return Err("flow collections are not read".into());
    }
    if text.starts_with(['|', '>']) {
        return Err("block scalars are not read".into());
    }
    if text.starts_with(['&', '*', '!', '%', '@', '`', ',', ']', '}']) {
        return Err(format!(
            "a value starting with `{}` is not read",
            &text[..1]
        ));
    }
    if text.starts_with("- ") || text == "-" {
        return Err("sequences are not read".into());
    }
    // A comment ends a plain scalar.
    let text = match text.find(" #") {
        Some(i) => text[..i].trim_end(),
        None => text,
    };
    if text.contains(": ") || text.ends_with(':') {
        return Err("a plain value containing `: ` is not YAML (quote it)".into());
    }
    Ok(plain(text))
}

/// YAML 1.2 core schema: null, booleans, numbers, else a string.
fn plain(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    let unsigned = text.trim_start_matches('+');
    if !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && let Ok(i) = unsigned.parse::<i64>()
    {
        return Value::Number(i.into());
    }
    if is_float(digits)
        && let Some(n) = unsigned.parse::<f64>().ok().and_then(Number::from_f64)
    {
        return Value::Number(n);
    }
    Value::String(text.to_string())
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, sign already removed.
fn is_float(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let all_digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match frac {
        Some(f) => all_digits(int) && all_digits(f) && !(int.is_empty() && f.is_empty()),
        None => !int.is_empty() && all_digits(int),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && all_digits(e)
    });
    mantissa_ok && exponent_ok
}

/// After the opening `'`: `''` is a quote; nothing but a comment may follow
/// the closing one.
fn single_quoted(rest: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = rest.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().map(|&(_, n)| n) == Some('\'') {
                chars.next();
                out.push('\'');
                continue;
            }
            return after_quote(&rest[i + 1..]).map(|()| out);
        }
        out.push(c);
    }
    Err("a single-quoted value is not closed on its line".into())
}

/// After the opening `"`: JSON-like escapes.
fn double_quoted(rest: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return after_quote(&rest[i + 1..]).map(|()| out),
            '\\' => {
                let Some((_, e)) = chars.next() else { break };
                out.push(match e {
                    '\\' => '\\',
                    '"' => '"',
                    '/' => '/',
                    '\'' => '\'',
                    ' ' => ' ',
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    '0' => '\0',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    'u' => {
                        let hex: String = (0..4)
                            .filter_map(|_| chars.next().map(|(_, h)| h))
                            .collect();
                        u32::from_str_radix(&hex, 16)
                            .ok()
                            .filter(|_| hex.len() == 4)
                            .and_then(char::from_u32)
                            .ok_or_else(|| format!("`\\u{hex}` is not a character"))?
                    }
                    other => return Err(format!("the escape `\\{other}` is not read")),
                });
            }
            c => out.push(c),
        }
    }
    Err("a double-quoted value is not closed on its line".into())
}

fn after_quote(tail: &str) -> Result<(), String> {
    let tail = tail.trim_start();
    if tail.is_empty() || tail.starts_with('#') {
        Ok(())
    } else {
        Err(format!("text after a quoted value: `{tail}`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(text: &str) -> Value {
        Value::Object(parse(text).unwrap().0)
    }

    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn the_skill_format_is_read() {
        let text = "\u{feff}---\r\nname: pdf-processing\r\ndescription: Extract, fill, and assemble PDF documents\r\n---\r\n\r\nSkill body.\r\n";
        let (f, body) = parse(text).unwrap();
        assert_eq!(
            Value::Object(f),
            json!({"name": "pdf-processing",
                   "description": "Extract, fill, and assemble PDF documents"})
        );
        assert_eq!(body, "\r\nSkill body.\r\n");

        let text = "---\nname: refunds   # the name\n# a comment\n\ndescription: \"Say \\\"no\\\" \\u00e9\"\nlicense: 'Apache-2.0'\nquote: 'it''s'\nallowed-tools: Bash(git:*) Read\ncompatibility:\nmetadata:\n  version: 2.1.0\n  count: 3\n  ratio: 1.5\n  on: true\n  none: ~\n---\n";
        assert_eq!(
            fields(text),
            json!({
                "name": "refunds",
                "description": "Say \"no\" é",
                "license": "Apache-2.0",
                "quote": "it's",
                "allowed-tools": "Bash(git:*) Read",
                "compatibility": null,
                "metadata": {"version": "2.1.0", "count": 3, "ratio": 1.5, "on": true,
                             "none": null}
            })
        );
        // Nothing after the closing line, and a closing line with spaces.
        assert_eq!(fields("---\nname: a\n---   "), json!({"name": "a"}));
        assert_eq!(fields("---\n---\n"), json!({}));
    }

    #[test]
    fn what_is_not_read_is_an_error() {
        assert!(matches!(parse("name: a\n"), Err(FrontmatterError::Missing)));
        assert!(matches!(parse(""), Err(FrontmatterError::Missing)));
        assert!(matches!(
            parse("---\nname: a\n"),
            Err(FrontmatterError::Unterminated)
        ));
        for (text, why) in [
            ("---\ndescription: |\n  long\n---\n", "block scalars"),
            ("---\ndescription: >\n  long\n---\n", "block scalars"),
            ("---\ntags: [a, b]\n---\n", "flow collections"),
            ("---\nmeta: {a: 1}\n---\n", "flow collections"),
            ("---\ntags:\n- a\n---\n", "sequences"),
            ("---\ntags:\n  - a\n---\n", "sequences"),
            ("---\nname: a\nname: b\n---\n", "duplicate key `name`"),
            ("---\nm:\n  a: 1\n  a: 2\n---\n", "duplicate key `a`"),
            ("---\nname: a\n  more\n---\n", "multi-line"),
            ("---\nname: a\n  x: 1\n---\n", "multi-line"),
            (
                "---\nm:\n  a: 1\n    b: 2\n---\n",
                "inconsistent indentation",
            ),
            ("---\nm:\n  a:\n    b: 2\n---\n", "two levels"),
            ("---\nname:\ta\n---\n", "tabs"),
            ("---\ndescription: Use when: asked\n---\n", "quote it"),
            ("---\nname: 'a\n---\n", "not closed"),
            ("---\nname: \"a\\q\"\n---\n", "escape"),
            ("---\nname: 'a' b\n---\n", "text after"),
            ("---\nname: &x a\n---\n", "starting with `&`"),
            ("---\n\"name\": a\n---\n", "quoted keys"),
            ("---\njust text\n---\n", "not a `key: value` line"),
        ] {
            let e = error(text);
            assert!(e.contains(why), "{text:?}: {e}");
        }
        assert_eq!(
            parse("---\nname: a\nx: [1]\n---\n").unwrap_err(),
            FrontmatterError::Line {
                line: 3,
                reason: "flow collections are not read".into()
            }
        );
    }

    #[test]
    fn plain_scalars_are_typed_as_yaml_types_them() {
        for (text, value) in [
            ("12", json!(12)),
            ("-3", json!(-3)),
            ("+4", json!(4)),
            ("1.5", json!(1.5)),
            (".5", json!(0.5)),
            ("1e3", json!(1000.0)),
            ("2.1.0", json!("2.1.0")),
            ("1.", json!(1.0)),
            ("TRUE", json!(true)),
            ("false", json!(false)),
            ("yes", json!("yes")),
            ("Null", json!(null)),
            ("1_000", json!("1_000")),
            ("0x1f", json!("0x1f")),
            ("a#b", json!("a#b")),
            ("http://x.y/z", json!("http://x.y/z")),
        ] {
            assert_eq!(
                fields(&format!("---\nk: {text}\n---\n"))["k"],
                value,
                "{text}"
            );
        }
        // Quoted, a string whatever it looks like.
        assert_eq!(fields("---\nk: '12'\n---\n")["k"], json!("12"));
    }

    #[test]
    fn differences_name_each_field_either_side() {
        let file = json!({"name": "a", "description": "d", "metadata": {"v": 2}, "extra": 1});
        let entry = json!({"name": "a", "description": "other", "metadata": {"v": 2.0},
                           "license": "MIT"});
        let d = differences(file.as_object().unwrap(), entry.as_object().unwrap());
        assert_eq!(d, ["description", "extra", "license"]);
        let same = json!({"name": "a", "list": [1, "x"]});
        assert!(differences(same.as_object().unwrap(), same.as_object().unwrap()).is_empty());
        // A field present as null on one side only is a difference.
        let a = json!({"name": "a", "compatibility": null});
        let b = json!({"name": "a"});
        assert_eq!(
            differences(a.as_object().unwrap(), b.as_object().unwrap()),
            ["compatibility"]
        );
    }
}
