//! The `tools/call` result most tools send, read without serde: an object
//! of `content` (text items, each exactly `type` and `text`) and perhaps
//! `isError`. Its texts are found with [`find_escape`], which passes over a
//! clean run well under one instruction a byte, where serde_json's string
//! reader takes more than two; a tool's output can be megabytes, and this is
//! its one read.
//!
//! The reader only ever says "this is that result" or "not sure": another
//! member, an escape anywhere (in a key or a text), a control character,
//! a repeated member, a number, whitespace outside JSON's four, any doubt
//! goes to serde, which gives the same result or the precise error. So
//! every text it takes, serde takes as the same value (property-tested
//! below).

use mcp_stack_jsonrpc::find_escape;

use super::{CallToolResult, Content, Extra, TextContent};

/// The result, when `text` is a plain one; `None` when serde must decide.
pub(super) fn call_result(text: &str) -> Option<CallToolResult> {
    let mut r = Reader { text, i: 0 };
    r.ws();
    r.eat(b'{')?;
    let (mut content, mut is_error) = (None, None);
    r.ws();
    if r.peek()? != b'}' {
        loop {
            r.ws();
            match r.string()? {
                "content" if content.is_none() => {
                    r.colon()?;
                    content = Some(r.items()?);
                }
                "isError" if is_error.is_none() => {
                    r.colon()?;
                    is_error = Some(r.boolean()?);
                }
                _ => return None,
            }
            r.ws();
            match r.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
    } else {
        r.next()?;
    }
    r.ws();
    if r.i != text.len() {
        return None;
    }
    Some(CallToolResult {
        content: content.unwrap_or_default(),
        structured_content: None,
        is_error,
        extra: Extra::new(),
    })
}

/// A cursor over the result's text.
struct Reader<'a> {
    text: &'a str,
    i: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// JSON's whitespace: space, tab, line feed, carriage return.
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn colon(&mut self) -> Option<()> {
        self.ws();
        self.eat(b':')?;
        self.ws();
        Some(())
    }

    /// A string without escapes or control characters, borrowed.
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let rest = self.text.as_bytes().get(self.i..)?;
        let len = find_escape(rest)?;
        if rest.get(len) != Some(&b'"') {
            return None;
        }
        // `"` is ASCII: both ends are character boundaries.
        let s = self.text.get(self.i..self.i + len)?;
        self.i += len + 1;
        Some(s)
    }

    fn boolean(&mut self) -> Option<bool> {
        let rest = self.text.as_bytes().get(self.i..)?;
        if rest.starts_with(b"true") {
            self.i += 4;
            Some(true)
        } else if rest.starts_with(b"false") {
            self.i += 5;
            Some(false)
        } else {
            None
        }
    }

    /// `[` text items `]`.
    fn items(&mut self) -> Option<Vec<Content>> {
        self.eat(b'[')?;
        let mut items = Vec::new();
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(items);
        }
        loop {
            self.ws();
            items.push(Content::Text(self.text_item()?));
            self.ws();
            match self.next()? {
                b',' => {}
                b']' => return Some(items),
                _ => return None,
            }
        }
    }

    /// `{"type": "text", "text": "…"}`, the two members in either order.
    fn text_item(&mut self) -> Option<TextContent> {
        self.eat(b'{')?;
        let (mut kind, mut text) = (false, None);
        loop {
            self.ws();
            match self.string()? {
                "type" if !kind => {
                    self.colon()?;
                    if self.string()? != "text" {
                        return None;
                    }
                    kind = true;
                }
                "text" if text.is_none() => {
                    self.colon()?;
                    text = Some(self.string()?);
                }
                _ => return None,
            }
            self.ws();
            match self.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
        match (kind, text) {
            (true, Some(text)) => Some(TextContent {
                kind: "text".to_owned(),
                text: text.to_owned(),
                extra: Extra::new(),
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn serde(text: &str) -> Option<CallToolResult> {
        serde_json::from_str(text).ok()
    }

    /// What the plain reader takes, serde takes as the same result.
    fn agrees(text: &str) -> Result<(), TestCaseError> {
        if let Some(fast) = call_result(text) {
            prop_assert_eq!(Some(fast), serde(text), "{}", text);
        }
        Ok(())
    }

    #[test]
    fn plain_results_are_read_here() {
        for text in [
            r#"{"content":[{"type":"text","text":"hi"}]}"#,
            r#"{"content":[{"type":"text","text":"a"},{"text":"b","type":"text"}],"isError":true}"#,
            r#" { "isError" : false , "content" : [ ] } "#,
            "{\n\t\"content\": [{\"type\": \"text\", \"text\": \"ünïcødé ✓\"}]\r\n}",
            r#"{}"#,
        ] {
            let fast = call_result(text).unwrap_or_else(|| panic!("not taken: {text}"));
            assert_eq!(Some(fast), serde(text), "{text}");
        }
    }

    #[test]
    fn anything_else_goes_to_serde() {
        for text in [
            r#"{"content":[{"type":"text","text":"a\"b"}]}"#,
            r#"{"content":[{"type":"text","text":"a\nb"}]}"#,
            "{\"content\":[{\"type\":\"text\",\"text\":\"a\u{1}b\"}]}",
            r#"{"content":[{"type":"image","data":"x","mimeType":"image/png"}]}"#,
            r#"{"content":[{"type":"text","text":"a","annotations":{}}]}"#,
            r#"{"content":[{"type":"text","text":"a","text":"b"}]}"#,
            r#"{"content":[],"content":[]}"#,
            r#"{"content":[],"structuredContent":{"a":1}}"#,
            r#"{"content":[],"_meta":{}}"#,
            r#"{"content":[],"isError":null}"#,
            r#"{"content":[{"type":"text"}]}"#,
            r#"{"content":[{"type":"text","text":"a"}],}"#,
            r#"{"content":[{"type":"text","text":"a"},]}"#,
            r#"{"cont\u0065nt":[]}"#,
            r#"{"content":[]} x"#,
            "{\"content\":[]}\u{a0}",
            r#"{"content":[{"type":"text","text":"a"}]"#,
            r#"[]"#,
            r#""#,
        ] {
            assert!(call_result(text).is_none(), "taken: {text}");
        }
    }

    #[test]
    fn a_megabyte_of_text_is_read_whole() {
        let big = "x".repeat(1 << 20);
        let text = format!(r#"{{"content":[{{"type":"text","text":"{big}"}}]}}"#);
        let fast = call_result(&text).unwrap();
        assert_eq!(fast.texts().next(), Some(big.as_str()));
    }

    /// Results of the plain shape and near it, written with and without
    /// whitespace: texts with escapes, controls and any character.
    fn result() -> impl Strategy<Value = String> {
        let text = prop_oneof![
            "[a-z ]{0,12}",
            "\\PC{0,12}",
            any::<String>(),
            Just("\u{7f}\u{1f}\"\\".to_owned()),
        ];
        let item = (text, any::<bool>(), 0u8..6).prop_map(|(t, type_first, extra)| {
            let t = serde_json::to_string(&t).unwrap_or_default();
            let mut members = if type_first {
                vec![r#""type":"text""#.to_owned(), format!(r#""text":{t}"#)]
            } else {
                vec![format!(r#""text":{t}"#), r#""type":"text""#.to_owned()]
            };
            match extra {
                0 => members.push(r#""annotations":{"priority":1}"#.to_owned()),
                1 => members[0] = r#""type":"image""#.to_owned(),
                2 => members.truncate(1),
                _ => {}
            }
            format!("{{{}}}", members.join(","))
        });
        let ws = prop_oneof![Just(""), Just(" "), Just("\n\t "), Just("\u{a0}")];
        (
            proptest::collection::vec(item, 0..4),
            proptest::option::of(any::<bool>()),
            ws,
            0u8..8,
        )
            .prop_map(|(items, is_error, ws, extra)| {
                let mut members = vec![format!(
                    "{ws}\"content\"{ws}:{ws}[{ws}{}{ws}]",
                    items.join(&format!("{ws},{ws}"))
                )];
                if let Some(e) = is_error {
                    members.push(format!("{ws}\"isError\"{ws}:{ws}{e}"));
                }
                match extra {
                    0 => members.push(r#""structuredContent":{"n":1}"#.to_owned()),
                    1 => members.push(r#""_meta":{}"#.to_owned()),
                    2 => members.reverse(),
                    _ => {}
                }
                format!("{ws}{{{}}}{ws}", members.join(","))
            })
    }

    proptest! {
        #[test]
        fn what_the_plain_reader_takes_serde_takes_alike(text in result()) {
            agrees(&text)?;
        }

        #[test]
        fn serialized_plain_results_are_taken(
            texts in proptest::collection::vec("\\PC{0,20}", 0..4),
            is_error in proptest::option::of(any::<bool>()),
        ) {
            let mut result = CallToolResult::new(texts.iter().map(|t| Content::text(t.as_str())).collect());
            result.is_error = is_error;
            let text = serde_json::to_string(&result).unwrap_or_default();
            let clean = texts.iter().all(|t| find_escape(t.as_bytes()).is_none());
            let fast = call_result(&text);
            prop_assert_eq!(fast.is_some(), clean, "{}", text);
            agrees(&text)?;
        }
    }
}
