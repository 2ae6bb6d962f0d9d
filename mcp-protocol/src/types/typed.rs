//! Results read into the caller's own types: a tool's structured content
//! (`CallToolResult::structured`), a tool's failure as an `Err`
//! (`CallToolResult::into_result`), and a resource's text or JSON
//! (`ReadResourceResult::text`, `ReadResourceResult::json`).
//!
//! Nothing here panics on what a server sent: a missing member, a value of
//! another shape or a tool's `isError` is a [`DecodeError`] or a
//! [`ToolError`], each saying what came instead.

use std::fmt;

use serde::de::DeserializeOwned;

use super::{CallToolResult, ReadResourceResult, ResourceContents};
use crate::printable::{Layout, printable};

/// A tool reported a failure: its result had `isError: true`.
///
/// The tool ran and said it failed; this is not a protocol error. It keeps
/// the whole result ([`result`](Self::result)); its text (every text item,
/// joined) is [`text`](Self::text), as the server wrote it. `Display` shows
/// that text through [`printable`] (control characters escaped), so printing
/// the error on a terminal is safe.
///
/// ```
/// use mcp_stack_protocol::types::{CallToolResult, Content};
///
/// let failed = CallToolResult::error(vec![Content::text("no such city\x1b[2J")]);
/// let err = failed.into_result().unwrap_err();
/// assert_eq!(err.text(), "no such city\x1b[2J");
/// assert_eq!(err.to_string(), "the tool reported an error: no such city\\x1b[2J");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    result: CallToolResult,
}

impl ToolError {
    /// The tool's text: every text item of its result, joined with newlines,
    /// as the server wrote it (pass it through [`printable`] before putting
    /// it on a terminal; `Display` does).
    pub fn text(&self) -> String {
        self.result.text()
    }

    /// The whole result the tool returned.
    pub fn result(&self) -> &CallToolResult {
        &self.result
    }

    /// The whole result the tool returned, taken back.
    pub fn into_inner(self) -> CallToolResult {
        self.result
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.result.text();
        if text.is_empty() {
            f.write_str("the tool reported an error (with no text)")
        } else {
            write!(
                f,
                "the tool reported an error: {}",
                printable(&text, Layout::Block)
            )
        }
    }
}

impl std::error::Error for ToolError {}

/// Why a result could not be read into the type asked for.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The tool reported a failure (`isError: true`); its structured
    /// content, if any, was not checked against the output schema and is
    /// not read. The tool's text is in the [`ToolError`].
    #[error(transparent)]
    Tool(ToolError),
    /// The result has nothing of the kind asked for: no `structuredContent`
    /// (a tool without an output schema, or a server that sends text
    /// only), or a resource with no text contents.
    #[error("the result has no {0}")]
    Missing(&'static str),
    /// The value is there but does not have the shape of the type asked for.
    #[error("the {what} does not read as the type asked for: {source}")]
    Invalid {
        /// What was read (`structuredContent`, a resource's text).
        what: &'static str,
        /// Where and why serde refused it.
        #[source]
        source: serde_json::Error,
    },
}

impl CallToolResult {
    /// The result, or the tool's failure as an `Err`: `isError: true`
    /// becomes a [`ToolError`] carrying the tool's text.
    ///
    /// ```
    /// use mcp_stack_protocol::types::{CallToolResult, Content};
    ///
    /// let ok = CallToolResult::new(vec![Content::text("42")]);
    /// assert_eq!(ok.into_result().unwrap().text(), "42");
    /// ```
    pub fn into_result(self) -> Result<CallToolResult, ToolError> {
        if self.is_error() {
            Err(ToolError { result: self })
        } else {
            Ok(self)
        }
    }

    /// The structured content (`structuredContent`) read into `T`.
    ///
    /// A session checks structured content against the tool's output schema
    /// when the result arrives (a mismatch is an error of the call), so
    /// what reaches this is what the tool promised. Errors, never a panic:
    /// the tool's failure ([`DecodeError::Tool`]), no structured content
    /// ([`DecodeError::Missing`]; the text is not parsed in its stead), or
    /// a value `T` does not read ([`DecodeError::Invalid`]).
    ///
    /// ```
    /// use mcp_stack_protocol::types::{CallToolResult, DecodeError};
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize)]
    /// struct Sum { sum: f64 }
    ///
    /// let mut result = CallToolResult::new(vec![]);
    /// assert!(matches!(result.structured::<Sum>(), Err(DecodeError::Missing(_))));
    /// result.structured_content = Some(serde_json::json!({"sum": 5}));
    /// assert_eq!(result.structured::<Sum>().unwrap().sum, 5.0);
    /// ```
    pub fn structured<T: DeserializeOwned>(&self) -> Result<T, DecodeError> {
        const WHAT: &str = "structuredContent";
        if self.is_error() {
            return Err(DecodeError::Tool(ToolError {
                result: self.clone(),
            }));
        }
        let value = self
            .structured_content
            .as_ref()
            .ok_or(DecodeError::Missing(WHAT))?;
        T::deserialize(value).map_err(|source| DecodeError::Invalid { what: WHAT, source })
    }
}

impl ReadResourceResult {
    /// The text of the resource: every text entry of `contents`, joined with
    /// newlines (blob entries are left out). `None` when there is no text
    /// entry.
    ///
    /// ```
    /// use mcp_stack_protocol::types::{ReadResourceResult, ResourceContents};
    ///
    /// let read = ReadResourceResult {
    ///     contents: vec![ResourceContents::text("test://a", "hello")],
    ///     extra: Default::default(),
    /// };
    /// assert_eq!(read.text().as_deref(), Some("hello"));
    /// ```
    pub fn text(&self) -> Option<String> {
        let mut texts = self.contents.iter().filter_map(|c| match c {
            ResourceContents::Text(t) => Some(t.text.as_str()),
            _ => None,
        });
        let first = texts.next()?;
        let mut out = first.to_owned();
        for t in texts {
            out.push('\n');
            out.push_str(t);
        }
        Some(out)
    }

    /// The resource's first text entry parsed as JSON into `T` (a resource
    /// of `application/json`, say). No text entry is
    /// [`DecodeError::Missing`]; text that is not JSON or not a `T` is
    /// [`DecodeError::Invalid`].
    ///
    /// ```
    /// use mcp_stack_protocol::types::{ReadResourceResult, ResourceContents};
    ///
    /// let read = ReadResourceResult {
    ///     contents: vec![ResourceContents::text("test://a", r#"{"n": 3}"#)],
    ///     extra: Default::default(),
    /// };
    /// let value: serde_json::Value = read.json().unwrap();
    /// assert_eq!(value["n"], 3);
    /// ```
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, DecodeError> {
        const WHAT: &str = "text contents";
        let text = self
            .contents
            .iter()
            .find_map(|c| match c {
                ResourceContents::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .ok_or(DecodeError::Missing(WHAT))?;
        serde_json::from_str(text).map_err(|source| DecodeError::Invalid { what: WHAT, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Content;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Count {
        count: u32,
    }

    fn with(structured: serde_json::Value) -> CallToolResult {
        CallToolResult {
            structured_content: Some(structured),
            ..CallToolResult::new(vec![Content::text("x")])
        }
    }

    #[test]
    fn structured_content_reads_into_the_type() {
        assert_eq!(
            with(json!({"count": 3})).structured::<Count>().ok(),
            Some(Count { count: 3 })
        );
    }

    #[test]
    fn a_mismatch_is_invalid_and_says_where() {
        let err = with(json!({"count": "three"}))
            .structured::<Count>()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("structuredContent"), "{err}");
        assert!(err.contains("invalid type"), "{err}");
    }

    #[test]
    fn a_missing_structured_content_is_missing() {
        let err = CallToolResult::new(vec![Content::text("{\"count\": 3}")]).structured::<Count>();
        assert!(matches!(err, Err(DecodeError::Missing(_))), "{err:?}");
    }

    #[test]
    fn a_failed_tool_is_its_error_not_its_content() {
        let mut failed = with(json!({"count": 3}));
        failed.is_error = Some(true);
        let Err(DecodeError::Tool(e)) = failed.structured::<Count>() else {
            panic!("not a tool error")
        };
        assert_eq!(e.text(), "x");
    }

    #[test]
    fn a_tool_error_displays_its_text_made_printable() {
        let err = CallToolResult::error(vec![Content::text("bad\u{9b}2J\nline")])
            .into_result()
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("the tool reported an error: bad\\x9b2J\nline")
        );
        let empty = CallToolResult::error(vec![]).into_result().err();
        assert_eq!(
            empty.map(|e| e.to_string()).as_deref(),
            Some("the tool reported an error (with no text)")
        );
    }

    #[test]
    fn a_resource_reads_as_text_and_json() {
        let read = ReadResourceResult {
            contents: vec![
                ResourceContents::blob("test://b", b"\x00"),
                ResourceContents::text("test://a", "{\"count\": 2}"),
                ResourceContents::text("test://a", "second"),
            ],
            extra: Default::default(),
        };
        assert_eq!(read.text().as_deref(), Some("{\"count\": 2}\nsecond"));
        assert_eq!(read.json::<Count>().ok(), Some(Count { count: 2 }));
        let blob_only = ReadResourceResult {
            contents: vec![ResourceContents::blob("test://b", b"\x00")],
            extra: Default::default(),
        };
        assert_eq!(blob_only.text(), None);
        assert!(matches!(
            blob_only.json::<Count>(),
            Err(DecodeError::Missing(_))
        ));
    }
}
