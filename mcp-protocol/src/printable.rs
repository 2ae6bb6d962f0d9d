//! Text from a peer, made safe to show on a terminal.
//!
//! A server chooses its name, its tools' names and descriptions, its error
//! messages, its log lines and its stderr. Written to a terminal as they
//! came, control characters in them are commands, not text: `ESC [ 2 J`
//! clears the screen, `ESC ] 0 ; … BEL` retitles the window, `ESC ] 52 ; …`
//! writes the clipboard, a carriage return overwrites the line before it, and
//! the C1 controls (U+0080 to U+009F: U+009B is a one-character `ESC [`)
//! do the same on terminals that read them. The library crates return such
//! text as data; a program that prints it passes it through [`printable`]
//! first (and JSON it prints through [`escape_json_text`]).
//!
//! Every control character (Unicode category Cc: C0, DEL and C1) is shown as
//! a visible escape — `\n`, `\r`, `\t` and `\x1b`-style for the rest — rather
//! than dropped or replaced with U+FFFD, so a person debugging a server sees
//! what it sent (`\x1b]52;c;…` says "a clipboard write") and can tell one
//! control from another. [`Layout::Block`] keeps newlines and tabs (tool
//! output, stderr, multi-line messages), [`Layout::Line`] escapes them too
//! (a name or a one-line field, where a newline could fake a line of the
//! program's own output).
//!
//! ```
//! use mcp_stack_protocol::printable::{Layout, escape_json_text, printable};
//!
//! assert_eq!(printable("a\x1b[2Jb\u{9b}c", Layout::Block), "a\\x1b[2Jb\\x9bc");
//! assert_eq!(printable("two\nlines", Layout::Block), "two\nlines");
//! assert_eq!(printable("two\nlines", Layout::Line), "two\\nlines");
//! // JSON text keeps its meaning: the controls serde_json leaves raw become `\u` escapes.
//! assert_eq!(escape_json_text("{\"a\":\"x\u{9b}y\"}"), "{\"a\":\"x\\u009by\"}");
//! ```

use std::borrow::Cow;
use std::fmt::Write as _;

/// Where the text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Layout {
    /// A block of text that may have lines: newlines and tabs are kept.
    Block,
    /// One line (a name, a field): newlines and tabs are escaped too.
    Line,
}

/// Whether `c` must not reach a terminal raw in this layout.
pub fn is_unsafe(c: char, layout: Layout) -> bool {
    c.is_control() && !(layout == Layout::Block && (c == '\n' || c == '\t'))
}

/// Whether a byte may start a control character's UTF-8 encoding: C0 and
/// DEL are one byte, C1 is `0xC2` followed by `0x80..=0x9F`.
fn may_start_control(b: u8) -> bool {
    b < 0x20 || b == 0x7f || b == 0xc2
}

/// `text` with every control character escaped visibly (see the module
/// docs); borrowed when there is none.
pub fn printable(text: &str, layout: Layout) -> Cow<'_, str> {
    if !needs_escaping(text, layout) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !is_unsafe(c, layout) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Every control character is below U+0100.
            c => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
        }
    }
    Cow::Owned(out)
}

fn needs_escaping(text: &str, layout: Layout) -> bool {
    // A byte scan first: most text has no candidate at all.
    text.bytes().any(may_start_control) && text.chars().any(|c| is_unsafe(c, layout))
}

/// JSON text (what `serde_json` writes) made safe to print, with its meaning
/// unchanged: `serde_json` escapes C0 controls inside strings but writes DEL
/// and the C1 controls raw; here every control character other than a
/// newline or tab (the layout of pretty-printed JSON) becomes a `\u00XX`
/// escape. Controls can only stand inside strings in valid JSON, where the
/// escape means the same character.
pub fn escape_json_text(json: &str) -> Cow<'_, str> {
    if !needs_escaping(json, Layout::Block) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_unsafe(c, Layout::Block) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte values a terminal may act on: C0, DEL, and C1's second byte
    /// after `0xC2` (C1 in UTF-8).
    fn has_control_bytes(text: &str, layout: Layout) -> bool {
        let bytes = text.as_bytes();
        bytes.iter().enumerate().any(|(i, &b)| {
            let c0 =
                (b < 0x20 || b == 0x7f) && !(layout == Layout::Block && (b == b'\n' || b == b'\t'));
            let c1 = b == 0xc2 && bytes.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n));
            c0 || c1
        })
    }

    #[test]
    fn every_kind_of_control_is_escaped_visibly() {
        let hostile = "a\x1b]52;c;aGk=\x07b\u{9b}2Jc\r\x7f\u{85}d\0";
        assert_eq!(
            printable(hostile, Layout::Block),
            "a\\x1b]52;c;aGk=\\x07b\\x9b2Jc\\r\\x7f\\x85d\\x00"
        );
        assert_eq!(printable("x\n\ty", Layout::Line), "x\\n\\ty");
        assert_eq!(printable("x\n\ty", Layout::Block), "x\n\ty");
    }

    #[test]
    fn clean_text_is_borrowed() {
        for text in ["", "plain", "héllo wörld ✓ — 日本語", "Ââ\u{a0}\u{c2}"] {
            assert!(
                matches!(printable(text, Layout::Line), Cow::Borrowed(_)),
                "{text:?}"
            );
            assert!(
                matches!(escape_json_text(text), Cow::Borrowed(_)),
                "{text:?}"
            );
        }
    }

    #[test]
    fn json_keeps_its_meaning() {
        let value = serde_json::json!({"k\u{9b}": ["\u{1b}[2J\u{7f}\u{85}", "ok\nline"]});
        for text in [
            serde_json::to_string(&value).unwrap(),
            serde_json::to_string_pretty(&value).unwrap(),
        ] {
            let safe = escape_json_text(&text);
            assert!(!has_control_bytes(&safe, Layout::Block), "{safe:?}");
            let again: serde_json::Value = serde_json::from_str(&safe).unwrap();
            assert_eq!(again, value);
        }
    }

    proptest::proptest! {
        #[test]
        fn no_control_survives_and_the_rest_is_kept(text in "\\PC*|[\\x00-\\x{a0}a-z\\n\\t]*") {
            for layout in [Layout::Block, Layout::Line] {
                let shown = printable(&text, layout);
                proptest::prop_assert!(!has_control_bytes(&shown, layout), "{:?}", shown);
                // What is not a control is kept, in order.
                let kept: String = text.chars().filter(|c| !is_unsafe(*c, layout)).collect();
                let visible: String = shown
                    .chars()
                    .filter(|c| !is_unsafe(*c, layout))
                    .collect();
                proptest::prop_assert!(is_subsequence(&kept, &visible));
                // Filtering twice changes nothing more.
                proptest::prop_assert_eq!(printable(&shown, layout), shown.clone());
            }
        }

        #[test]
        fn json_text_round_trips(text in "[\\x00-\\x{a0}a-z\"\\\\]*") {
            let json = serde_json::to_string(&text).unwrap();
            let safe = escape_json_text(&json);
            proptest::prop_assert!(!has_control_bytes(&safe, Layout::Block));
            let back: String = serde_json::from_str(&safe).unwrap();
            proptest::prop_assert_eq!(back, text);
        }
    }

    fn is_subsequence(needle: &str, hay: &str) -> bool {
        let mut hay = hay.chars();
        needle.chars().all(|c| hay.any(|h| h == c))
    }
}
