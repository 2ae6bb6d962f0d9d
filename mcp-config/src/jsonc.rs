//! JSONC (JSON with comments and trailing commas, as VS Code, Zed and
//! OpenCode write their settings) to JSON: a small pass of our own.
//!
//! Comments and trailing commas become spaces (newlines kept), so a JSON
//! parser's line and column still point into the file as written. Text
//! inside strings is never touched; valid JSON comes out unchanged.

/// JSONC to JSON. What is not JSONC stays as it is, for the JSON parser to
/// report.
pub(crate) fn to_json(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    // Where the last comma outside strings was written, while only
    // whitespace (or comments) followed it.
    let mut pending_comma: Option<usize> = None;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => {
                pending_comma = None;
                let start = i;
                i += 1;
                while let Some(&c) = bytes.get(i) {
                    i += 1;
                    if c == b'\\' {
                        i += 1;
                    } else if c == b'"' {
                        break;
                    }
                }
                out.extend_from_slice(bytes.get(start..i.min(bytes.len())).unwrap_or_default());
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while let Some(&c) = bytes.get(i) {
                    if c == b'\n' {
                        break;
                    }
                    out.push(if c == b'\r' { b'\r' } else { b' ' });
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = text
                    .get(i + 2..)
                    .and_then(|rest| rest.find("*/"))
                    .map_or(bytes.len(), |at| i + 2 + at + 2);
                for &c in bytes.get(i..end).unwrap_or_default() {
                    out.push(if c == b'\n' || c == b'\r' { c } else { b' ' });
                }
                i = end;
            }
            b',' => {
                pending_comma = Some(out.len());
                out.push(b',');
                i += 1;
            }
            b'}' | b']' => {
                if let Some(at) = pending_comma.take()
                    && let Some(c) = out.get_mut(at)
                {
                    *c = b' ';
                }
                out.push(b);
                i += 1;
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                out.push(b);
                i += 1;
            }
            _ => {
                pending_comma = None;
                out.push(b);
                i += 1;
            }
        }
    }
    // Only ASCII bytes were replaced by ASCII: still UTF-8.
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_go_strings_stay() {
        let text = "{\n  // a comment, with \"quotes\"\n  \"a\": \"x // not a comment /* nor this */\",\n  /* block\n  comment */ \"b\": [1, 2,],\n  \"c\": {\"d\": \"e\\\",\",},\n}\n";
        let json = to_json(text);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["a"], "x // not a comment /* nor this */");
        assert_eq!(v["b"], serde_json::json!([1, 2]));
        assert_eq!(v["c"]["d"], "e\",");
        // Lines stay where they were.
        assert_eq!(json.lines().count(), text.lines().count());
    }

    #[test]
    fn an_error_still_points_at_its_line() {
        let text = "{\n// c\n\"a\": 1 2\n}";
        let e = serde_json::from_str::<serde_json::Value>(&to_json(text)).unwrap_err();
        assert_eq!(e.line(), 3);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod props {
    use super::to_json;
    use proptest::prelude::*;
    use serde_json::Value;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            // Strings full of what a comment or comma looks like.
            "[a-z/*,\\\\\"\\] \n{}]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map("[a-z/*,]{0,6}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Comments after every `,`, `[` and `{`, and a trailing comma in every
    /// non-empty list and object, as JSONC allows.
    fn decorate(json: &str) -> String {
        let mut out = String::new();
        let mut in_string = false;
        let mut escaped = false;
        let mut depth_has_items: Vec<bool> = Vec::new();
        for c in json.chars() {
            if in_string {
                out.push(c);
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    in_string = false;
                }
                continue;
            }
            match c {
                '"' => {
                    in_string = true;
                    if let Some(h) = depth_has_items.last_mut() {
                        *h = true;
                    }
                    out.push(c);
                }
                '[' | '{' => {
                    if let Some(h) = depth_has_items.last_mut() {
                        *h = true;
                    }
                    depth_has_items.push(false);
                    out.push(c);
                    out.push_str(" // open, \"x\"\n");
                }
                ']' | '}' => {
                    if depth_has_items.pop() == Some(true) {
                        out.push_str(", /* trailing */ ");
                    }
                    out.push(c);
                }
                ',' => out.push_str(", /* a, b */ "),
                _ => {
                    if let Some(h) = depth_has_items.last_mut()
                        && !c.is_whitespace()
                        && c != ':'
                    {
                        *h = true;
                    }
                    out.push(c);
                }
            }
        }
        out
    }

    proptest! {
        #[test]
        fn jsonc_reads_as_the_json_it_decorates(v in json_value()) {
            for json in [serde_json::to_string(&v).unwrap(), serde_json::to_string_pretty(&v).unwrap()] {
                // Plain JSON comes out unchanged.
                prop_assert_eq!(to_json(&json), json.clone());
                let decorated = decorate(&json);
                let read: Value = serde_json::from_str(&to_json(&decorated)).unwrap();
                prop_assert_eq!(read, v.clone(), "{}", decorated);
            }
        }
    }
}
