//! Output for people: marks, colour only on a terminal and without `NO_COLOR`,
//! and summaries of long text. Writing it is `term`'s, the output stage.

use std::borrow::Cow;

use mcp_stack_protocol::printable::Layout;

use crate::term;

/// Whether to colour output.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    color: bool,
}

impl Style {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset (or empty).
    pub(crate) fn detect() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            color: !no_color && term::stdout_is_terminal(),
        }
    }

    /// No colour.
    pub(crate) const fn plain() -> Self {
        Style { color: false }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            term::paint(code, text)
        } else {
            text.to_string()
        }
    }

    pub(crate) fn ok(self, text: &str) -> String {
        self.paint("32", text)
    }

    pub(crate) fn fail(self, text: &str) -> String {
        self.paint("31", text)
    }

    pub(crate) fn warn(self, text: &str) -> String {
        self.paint("33", text)
    }

    pub(crate) fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }

    pub(crate) fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }
}

/// Cuts text to `max` characters, saying how much was left out. Secrets
/// are scrubbed first, so the cut never leaves the start of one.
pub(crate) fn summarize(text: &str, max: usize, full: bool) -> String {
    let text = term::scrub(text);
    if full || text.chars().count() <= max {
        return text.into_owned();
    }
    let cut: String = text.chars().take(max).collect();
    format!(
        "{cut}… ({} bytes in all; --full shows everything)",
        text.len()
    )
}

/// A server's one-line text (a name, a field) with its control characters
/// escaped visibly, newlines included, so it can neither drive the terminal
/// nor fake a line of output. (The output stage escapes every control but
/// newlines and tabs in everything printed anyway; this is the filter of
/// the stack, `mcp_stack_protocol::printable`.)
pub(crate) fn printable(text: &str) -> String {
    mcp_stack_protocol::printable::printable(text, Layout::Line).into_owned()
}

/// A server's text that may have lines (a tool's output, a resource's
/// text): controls escaped, newlines and tabs kept.
pub(crate) fn printable_block(text: &str) -> Cow<'_, str> {
    mcp_stack_protocol::printable::printable(text, Layout::Block)
}

/// A duration for step timings and timeouts: `250 ms`, `1.5 s`.
pub(crate) use mcp_stack_transport::describe_duration as ms;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_cut_and_say_so() {
        assert_eq!(summarize("abc", 5, false), "abc");
        assert!(summarize("abcdef", 3, false).starts_with("abc… (6 bytes"));
        assert_eq!(summarize("abcdef", 3, true), "abcdef");
    }

    #[test]
    fn durations_read_in_ms_below_a_second() {
        use std::time::Duration;
        assert_eq!(ms(Duration::from_millis(999)), "999 ms");
        assert_eq!(ms(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(ms(Duration::ZERO), "0 ms");
    }

    #[test]
    fn no_escape_sequences_reach_the_terminal() {
        assert_eq!(printable("a\x1b[2Jb\nc"), "a\\x1b[2Jb\\nc");
        assert_eq!(printable_block("a\x07b\nc"), "a\\x07b\nc");
    }
}
