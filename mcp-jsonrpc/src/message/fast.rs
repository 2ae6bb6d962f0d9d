//! The answer most frames are, read without serde: an object of exactly
//! `jsonrpc` (`"2.0"`), `id` (an integer) and `result`, in any order. The
//! result is checked as JSON by a scan that skips clean runs of a string 64
//! bytes at a time (the compact writer's search), where serde_json's
//! `RawValue` goes a word at a time; its text stays a slice of the frame.
//!
//! The scan only ever says "this is that answer, and here is its result",
//! or "not sure": anything else (another member, an escaped key, a string
//! id, a negative or long number, deep nesting, whitespace the scan does not
//! expect, any error) goes to the full parse, which gives the same message
//! or the precise reason. So every text this path accepts, the full parse
//! accepts as the same response (property-tested below), and every text it
//! declines is parsed as before.

use super::parse::Source;
use super::{Message, Response};
use crate::compact::find_escape;
use crate::id::Id;

/// How deep the result may nest here; deeper ones go to the full parse
/// (whose own limit is 128 for the whole message).
const MAX_DEPTH: usize = 64;

/// The longest integer id read here: any 18 digits fit an `i64`.
const MAX_ID_DIGITS: usize = 18;

/// The message, when the frame is a plain success response; `None` when
/// the full parse must decide.
pub(super) fn response(source: &Source<'_>) -> Option<Message> {
    let text = source.text;
    let mut scan = Scan {
        b: text.as_bytes(),
        i: 0,
    };
    scan.ws();
    scan.eat(b'{')?;
    let (mut version, mut id, mut result) = (false, None, None);
    loop {
        scan.ws();
        let key = scan.plain_key()?;
        scan.ws();
        scan.eat(b':')?;
        scan.ws();
        match key {
            b"jsonrpc" if !version => {
                scan.literal(b"\"2.0\"")?;
                version = true;
            }
            b"id" if id.is_none() => id = Some(scan.id()?),
            b"result" if result.is_none() => {
                let start = scan.i;
                scan.value(0)?;
                result = Some(text.get(start..scan.i)?);
            }
            _ => return None,
        }
        scan.ws();
        match scan.next()? {
            b',' => {}
            b'}' => break,
            _ => return None,
        }
    }
    scan.ws();
    if scan.i != scan.b.len() || !version {
        return None;
    }
    Some(Message::Response(Response {
        id: id?,
        result: source.keep_str(result?),
    }))
}

/// A cursor over the frame's bytes.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// JSON's whitespace.
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.i += 1;
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i.checked_add(word.len())?;
        (self.b.get(self.i..end)? == word).then(|| self.i = end)
    }

    /// A key without escapes, its bytes.
    fn plain_key(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.i;
        let bytes: &'a [u8] = self.b;
        let rest = bytes.get(start..)?;
        let at = find_escape(rest)?;
        if rest.get(at) != Some(&b'"') {
            return None;
        }
        self.i = start + at + 1;
        rest.get(..at)
    }

    /// A non-negative integer id without leading zeros, short enough to fit.
    fn id(&mut self) -> Option<Id> {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        let digits = self.b.get(start..self.i)?;
        if digits.is_empty()
            || digits.len() > MAX_ID_DIGITS
            || (digits.len() > 1 && digits.first() == Some(&b'0'))
        {
            return None;
        }
        let n = std::str::from_utf8(digits).ok()?.parse::<i64>().ok()?;
        Some(Id::from(n))
    }

    /// Skips one JSON value, checking it as serde_json does; `None` when it
    /// is not one (or is too deep to say here).
    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string(),
            b'{' => {
                self.i += 1;
                self.ws();
                if self.peek()? == b'}' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.string()?;
                    self.ws();
                    self.eat(b':')?;
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => self.ws(),
                        b'}' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.i += 1;
                self.ws();
                if self.peek()? == b']' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.value(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => self.ws(),
                        b']' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// A string: clean runs skipped by blocks; escapes checked; a raw
    /// control character is no JSON. The text is UTF-8 already.
    fn string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            let rest = self.b.get(self.i..)?;
            self.i += find_escape(rest)?;
            match self.next()? {
                b'"' => return Some(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            if !self.next()?.is_ascii_hexdigit() {
                                return None;
                            }
                        }
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`; what follows is the
    /// caller's to check.
    fn number(&mut self) -> Option<()> {
        if self.peek()? == b'-' {
            self.i += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.some_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.some_digits()?;
        }
        // `01`, `1.5.2`, `1x`: the next byte is not one a value may be
        // followed by, and the caller declines.
        Some(())
    }

    fn digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.i;
        self.digits();
        (self.i > start).then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::{Source, parse_text_in_full};
    use super::*;
    use crate::batch::Batches;
    use crate::message::Payload;
    use bytes::Bytes;
    use proptest::prelude::*;

    fn fast(text: &str) -> Option<Message> {
        response(&Source { frame: None, text })
    }

    fn full(text: &str) -> Option<Message> {
        match parse_text_in_full(Source { frame: None, text }, Batches::default) {
            Ok(Payload::Single(m)) => Some(m),
            _ => None,
        }
    }

    /// What this path accepts, the full parse accepts as the same response.
    fn agrees(text: &str) -> Result<(), TestCaseError> {
        if let Some(Message::Response(ours)) = fast(text) {
            let Some(Message::Response(theirs)) = full(text) else {
                return Err(TestCaseError::fail(format!(
                    "the fast path took what the full parse does not: {text:?}"
                )));
            };
            prop_assert_eq!(&ours.id, &theirs.id);
            prop_assert_eq!(ours.result.get(), theirs.result.get());
        }
        Ok(())
    }

    #[test]
    fn plain_answers_take_the_fast_path() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
            r#"{"id":12,"jsonrpc":"2.0","result":[1,-2.5e+3,true,false,null,"\u00e9\n",{}]}"#,
            r#" { "result" : "x" , "jsonrpc" : "2.0" , "id" : 0 } "#,
            r#"{"jsonrpc":"2.0","id":3,"result":null}"#,
        ] {
            let Some(Message::Response(r)) = fast(text) else {
                panic!("not taken: {text}");
            };
            let Some(Message::Response(f)) = full(text) else {
                panic!("not a response: {text}");
            };
            assert_eq!((r.id, r.result.get()), (f.id, f.result.get()));
        }
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":9,"result":{{"text":"{}\"{}"}}}}"#,
            "a".repeat(1000),
            "b".repeat(70)
        );
        assert!(fast(&long).is_some());
    }

    #[test]
    fn anything_else_goes_to_the_full_parse() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":""}}"#,
            r#"{"jsonrpc":"2.0","id":"a","result":1}"#,
            r#"{"jsonrpc":"2.0","id":-1,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":01,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1,"result":2}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":01}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":[1,]}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":1,}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":"\x"}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\u{1}\"}",
            r#"{"jsonrpc":"2.0","id":1,"result":"\u12g4"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1} x"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":1}"#,
            r#"{"json\u0072pc":"2.0","id":1,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":tru}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":-}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1.}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1e}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":"#,
        ] {
            assert!(fast(text).is_none(), "taken: {text}");
        }
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{}{}}}"#,
            "[".repeat(MAX_DEPTH + 2),
            "]".repeat(MAX_DEPTH + 2)
        );
        assert!(fast(&deep).is_none());
        assert!(full(&deep).is_some());
    }

    #[test]
    fn the_result_is_a_slice_of_the_frame() {
        let frame = Bytes::from_static(br#"{"jsonrpc":"2.0","id":4,"result":{"a":[1]}}"#);
        let text = std::str::from_utf8(&frame).unwrap();
        let Some(Message::Response(r)) = response(&Source {
            frame: Some(&frame),
            text,
        }) else {
            panic!("not taken");
        };
        assert_eq!(r.result.get(), r#"{"a":[1]}"#);
        assert_eq!(
            r.result.as_bytes().as_ptr(),
            frame.get(33..).unwrap().as_ptr()
        );
    }

    /// Answers made of JSON-ish pieces, then bytes edited: every one the
    /// fast path takes, the full parse takes as the same response.
    fn answer() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "{", "}", "[", "]", ",", ":", " ", "\"", "\"k\":", "\"a b\"", "\\\"", "\\\\", "\\/",
            "\\n", "\\u00e9", "\\ud800", "\\udc00x", "\\u12", "\\x", "\u{1}", "\u{1f}", "é", "😀",
            "0", "-0", "12", "01", "1.5", "1.", "-", "2e9", "1E+2", "3e-", "true", "false", "null",
            "tru", "nul",
        ]);
        let body = prop::collection::vec(piece, 0..24).prop_map(|p| p.concat());
        let long = ("[a-z]{60,140}", "[\"\\\\\u{1}a]").prop_map(|(a, b)| format!("\"{a}{b}{a}\""));
        let result = prop_oneof![3 => body, 1 => long, 1 => any::<String>()];
        (
            result,
            prop::sample::select(vec![0usize, 1, 2, 3, 4, 5]),
            prop::sample::select(vec!["1", "77", "0", "\"s\"", "1.0", "-3"]),
        )
            .prop_map(|(result, order, id)| {
                let members = [
                    r#""jsonrpc":"2.0""#.to_string(),
                    format!(r#""id":{id}"#),
                    format!(r#""result":{result}"#),
                ];
                let [a, b, c] = match order {
                    0 => [0, 1, 2],
                    1 => [0, 2, 1],
                    2 => [1, 0, 2],
                    3 => [1, 2, 0],
                    4 => [2, 0, 1],
                    _ => [2, 1, 0],
                };
                let pick = |i: usize| members.get(i).cloned().unwrap_or_default();
                format!("{{{},{},{}}}", pick(a), pick(b), pick(c))
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn what_the_fast_path_takes_the_full_parse_takes_alike(text in answer()) {
            agrees(&text)?;
        }

        #[test]
        fn real_answers_take_the_fast_path(value in json_value(), id in 0u32..1_000_000) {
            let text = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{}}}"#,
                serde_json::to_string(&value).unwrap()
            );
            prop_assert!(fast(&text).is_some(), "declined: {}", text);
            agrees(&text)?;
            let pretty = format!(
                "{{ \"result\" :\n{},\r\n\t\"id\": {id}, \"jsonrpc\":\"2.0\" }}",
                serde_json::to_string_pretty(&value).unwrap()
            );
            prop_assert!(fast(&pretty).is_some(), "declined: {}", pretty);
            agrees(&pretty)?;
        }
    }

    /// A real answer with a few bytes replaced, inserted or removed.
    fn edited_answer() -> impl Strategy<Value = String> {
        let edit = (
            any::<prop::sample::Index>(),
            0..3u8,
            prop::sample::select(b"\"\\{}[],:0123456789-.eE+tfnu \x01/ab".to_vec()),
        );
        (json_value(), prop::collection::vec(edit, 1..3)).prop_filter_map(
            "still UTF-8",
            |(value, edits)| {
                let mut t = format!(
                    r#"{{"jsonrpc":"2.0","id":5,"result":{}}}"#,
                    serde_json::to_string(&value).ok()?
                )
                .into_bytes();
                for (at, kind, byte) in edits {
                    let i = at.index(t.len());
                    match kind {
                        0 => *t.get_mut(i)? = byte,
                        1 => t.insert(i, byte),
                        _ => {
                            t.remove(i);
                        }
                    }
                }
                String::from_utf8(t).ok()
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn edited_answers_are_taken_only_when_the_full_parse_takes_them(text in edited_answer()) {
            agrees(&text)?;
        }
    }

    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::Value;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            any::<String>().prop_map(Value::from),
            "[a-z\"\\\\\u{0}-\u{1f}é]{0,90}".prop_map(Value::from),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
                prop::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
