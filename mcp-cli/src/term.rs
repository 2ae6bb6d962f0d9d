//! The one output stage: every byte the CLI writes for people — report
//! lines, listings, tool results, errors, diagnoses, `--json`, `--trace`,
//! `--verbose` logs, prompts, the progress bar — goes through here, and here
//! only (`clippy.toml` of this crate disallows `std::io::stdout` and
//! `std::io::stderr`, and the workspace lints `println!` and `eprintln!`).
//!
//! Two things happen to it, in this order:
//!
//! 1. **Secrets are scrubbed.** Values the user handed over as secrets —
//!    `--env` and `--header` values, a config's `env`, `headers`, `proxy` and
//!    OAuth client secret, the OAuth tokens sent — are registered with
//!    [`keep_secret`] when they are read, and every occurrence is replaced
//!    with [`REDACTED`], whoever wrote it: a tool that echoes its
//!    environment shows `API_KEY=<redacted>`. Overlapping and nested
//!    occurrences are merged into one marker; values shorter than
//!    [`MIN_SECRET_CHARS`] are not scrubbed (see there).
//! 2. **Control characters are escaped**, by the one filter of the stack,
//!    [`mcp_stack_protocol::printable`]: no ESC, BEL, C1 or other control
//!    character (newlines and tabs kept) from a server reaches the terminal.
//!    The CLI's own colours are the one exception, and a server cannot forge
//!    them: [`paint`] marks them with a per-process random token that is
//!    turned into the escape sequence only after the filter ran.
//!
//! JSON (`--json`) is scrubbed value by value (strings, keys, numbers) before
//! it is written, then its text made safe with
//! [`mcp_stack_protocol::printable::escape_json_text`], so it stays valid JSON
//! meaning what the server sent, with `\u` escapes for the controls.
//!
//! Print with [`outln!`] and [`errln!`] (as `println!` and `eprintln!`),
//! [`print_json`], [`prompt`] and [`progress`].

use std::borrow::Cow;
use std::fmt;
use std::io::{IsTerminal as _, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{OnceLock, PoisonError, RwLock};

use mcp_stack_protocol::printable::{Layout, escape_json_text, printable};
use serde_json::Value;
use tokio::sync::Notify;

/// What a scrubbed secret is shown as: the same marker `Secret`'s `Display`
/// writes.
pub(crate) const REDACTED: &str = "<redacted>";

/// Values shorter than this (in characters) are not scrubbed. A value that
/// short cannot be kept from a guesser anyway (a million tries at most for
/// six digits), and scrubbing it would mangle ordinary output: `--env
/// DEBUG=true`, `LOG_LEVEL=debug` or `PORT=8080` would turn every `true`,
/// `debug` or `8080` a server prints (a URL's port, a JSON flag) into the
/// marker, and the pattern of markers would point at the value anyway.
/// Tokens, keys and passwords are longer.
pub(crate) const MIN_SECRET_CHARS: usize = 6;

/// The secrets to scrub: each value in the forms it shows in (as it is,
/// inside JSON text, through the printable filter), longest first.
#[derive(Debug, Default, Clone)]
pub(crate) struct Secrets {
    needles: Vec<String>,
}

impl Secrets {
    const fn new() -> Self {
        Secrets {
            needles: Vec::new(),
        }
    }

    /// Adds a value (ignored when shorter than [`MIN_SECRET_CHARS`]).
    pub(crate) fn add(&mut self, value: &str) {
        if value.chars().count() < MIN_SECRET_CHARS {
            return;
        }
        let mut forms = vec![value.to_owned()];
        // Inside JSON text (a traced message, a tool's JSON output): `"`,
        // `\` and controls escaped.
        if let Ok(json) = serde_json::to_string(value)
            && let Some(inner) = json.strip_prefix('"').and_then(|j| j.strip_suffix('"'))
        {
            forms.push(inner.to_owned());
        }
        // Through the printable filter (a one-line field escapes newlines).
        forms.push(printable(value, Layout::Line).into_owned());
        forms.push(printable(value, Layout::Block).into_owned());
        for form in forms {
            if !self.needles.contains(&form) {
                self.needles.push(form);
            }
        }
        // Longest first: a value that contains another is found whole.
        self.needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
    }

    /// Whether there is nothing to scrub.
    fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every occurrence of a secret replaced by [`REDACTED`].
    /// Occurrences that overlap or touch (two secrets sharing characters,
    /// one inside another) become one marker, so no part of either shows.
    pub(crate) fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut spans = Vec::new();
        for needle in &self.needles {
            let mut from = 0;
            while let Some(at) = text.get(from..).and_then(|t| t.find(needle.as_str())) {
                let start = from + at;
                spans.push((start, start + needle.len()));
                // On by one character: overlapping occurrences of one
                // value (`aaaa` in `aaaaa`) are all found.
                let step = text
                    .get(start..)
                    .and_then(|t| t.chars().next())
                    .map_or(1, char::len_utf8);
                from = start + step;
            }
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        let mut current: Option<(usize, usize)> = None;
        for (start, end) in spans {
            match &mut current {
                Some((_, e)) if start <= *e => *e = (*e).max(end),
                _ => {
                    if let Some((s, e)) = current.take() {
                        out.push_str(text.get(copied..s).unwrap_or_default());
                        out.push_str(REDACTED);
                        copied = e;
                    }
                    current = Some((start, end));
                }
            }
        }
        if let Some((s, e)) = current {
            out.push_str(text.get(copied..s).unwrap_or_default());
            out.push_str(REDACTED);
            copied = e;
        }
        out.push_str(text.get(copied..).unwrap_or_default());
        Cow::Owned(out)
    }

    /// Scrubs a JSON value in place: strings and object keys, and a number
    /// whose digits hold a secret (a numeric PIN) becomes the marker string.
    pub(crate) fn scrub_value(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if let Cow::Owned(clean) = self.scrub(s) {
                    *s = clean;
                }
            }
            Value::Number(n) => {
                if matches!(self.scrub(&n.to_string()), Cow::Owned(_)) {
                    *value = Value::String(REDACTED.to_owned());
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub_value(v)),
            Value::Object(map) => {
                for (key, mut v) in std::mem::take(map) {
                    self.scrub_value(&mut v);
                    map.insert(self.scrub(&key).into_owned(), v);
                }
            }
            Value::Bool(_) | Value::Null => {}
        }
    }
}

/// The process's secrets.
static SECRETS: RwLock<Secrets> = RwLock::new(Secrets::new());

/// Registers a value the user handed over as a secret: from now on it is
/// scrubbed from everything printed.
pub(crate) fn keep_secret(value: &str) {
    // Known already (a token sent with every request): no write lock.
    if SECRETS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .needles
        .iter()
        .any(|n| n == value)
    {
        return;
    }
    SECRETS
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .add(value);
}

/// Registers a credential header's value: the whole value and, for
/// `Scheme token` values (`Bearer …`), the token alone, which a server may
/// echo without its scheme.
pub(crate) fn keep_credential(value: &str) {
    keep_secret(value);
    if let Some((_, token)) = value.trim().split_once(' ') {
        keep_secret(token.trim());
    }
}

/// `text` with the registered secrets scrubbed (before cutting text short,
/// so no prefix of a secret is left at the cut).
pub(crate) fn scrub(text: &str) -> Cow<'_, str> {
    SECRETS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .scrub(text)
}

/// The token that marks the CLI's own colour codes: a private-use
/// character, 16 hex digits random per process, another private-use
/// character. A server cannot guess it, so text it sent can never turn into
/// an escape sequence.
fn colour_mark() -> &'static str {
    static MARK: OnceLock<String> = OnceLock::new();
    MARK.get_or_init(|| {
        use std::hash::{BuildHasher as _, Hasher as _};
        // `RandomState`'s keys come from the operating system's randomness.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        format!("\u{e000}{:016x}\u{e001}", hasher.finish())
    })
}

/// `text` in SGR colour `code` (`"32"`, `"1"`), marked for [`render`].
pub(crate) fn paint(code: &str, text: &str) -> String {
    let mark = colour_mark();
    format!("{mark}{code}m{text}{mark}0m")
}

/// What reaches the terminal: secrets scrubbed, controls escaped, then the
/// CLI's own colour marks turned into escape sequences.
fn render(text: &str) -> String {
    let scrubbed = scrub(text);
    let shown = printable(&scrubbed, Layout::Block);
    let mark = colour_mark();
    if !shown.contains(mark) {
        return shown.into_owned();
    }
    let mut out = String::with_capacity(shown.len());
    let mut parts = shown.split(mark);
    out.push_str(parts.next().unwrap_or_default());
    for part in parts {
        // `paint` wrote `CODEm` right after the mark.
        let code = part
            .find('m')
            .and_then(|i| part.get(..i))
            .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit() || b == b';'));
        match code {
            Some(code) => {
                out.push_str("\x1b[");
                out.push_str(code);
                out.push('m');
                out.push_str(part.get(code.len() + 1..).unwrap_or_default());
            }
            None => out.push_str(part),
        }
    }
    out
}

/// Where a line goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Out,
    Err,
}

/// Whether stdout was found closed (a reader that stopped early:
/// `mcp tools --json | head -c 100`).
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Wakes [`stdout_closing`] when stdout is found closed.
static STDOUT_CLOSED_NOTIFY: Notify = Notify::const_new();

/// The exit status of a command whose stdout was closed under it: 128 +
/// `SIGPIPE`'s number, what a shell reports for `yes | head -1`'s `yes`
/// (Rust ignores `SIGPIPE`, so `mcp` sees the closed pipe as an error and
/// ends itself, quietly, with the same status).
pub(crate) const CLOSED_PIPE_EXIT: u8 = 128 + 13;

/// Whether stdout was found closed: nothing more can be said there, and the
/// command ends with [`CLOSED_PIPE_EXIT`].
pub(crate) fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::SeqCst)
}

/// Returns once stdout is found closed (`signals` ends the command then).
pub(crate) async fn stdout_closing() {
    loop {
        let notified = STDOUT_CLOSED_NOTIFY.notified();
        if stdout_closed() {
            return;
        }
        notified.await;
    }
}

fn mark_stdout_closed() {
    STDOUT_CLOSED.store(true, Ordering::SeqCst);
    STDOUT_CLOSED_NOTIFY.notify_waiters();
}

/// Writes bytes that went through [`render`] (or are the stage's own).
/// A closed stdout (`mcp tools | head`) is remembered ([`stdout_closed`]):
/// nothing more is written there and the command ends quietly; other
/// errors are ignored, as there is nowhere left to say anything.
#[allow(clippy::disallowed_methods)]
fn write_rendered(stream: Stream, bytes: &[u8]) {
    match stream {
        Stream::Out => {
            if stdout_closed() {
                return;
            }
            let mut out = std::io::stdout().lock();
            let written = out.write_all(bytes).and_then(|()| out.flush());
            if written.is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
                mark_stdout_closed();
            }
        }
        Stream::Err => {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(bytes);
            let _ = err.flush();
        }
    }
}

/// Whether the command runs with `--json`: stdout is then kept for JSON
/// alone (text lines go to stderr) and the result is written at the end
/// (`errors::finish`).
static JSON_MODE: AtomicBool = AtomicBool::new(false);

/// The JSON result a `--json` command printed, kept back until it ends.
static RESULT: std::sync::Mutex<Option<Value>> = std::sync::Mutex::new(None);

/// Keeps stdout for JSON alone (see [`JSON_MODE`]).
pub(crate) fn set_json_mode(on: bool) {
    JSON_MODE.store(on, Ordering::SeqCst);
}

/// The JSON result kept back, if any.
pub(crate) fn take_result() -> Option<Value> {
    RESULT.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// One line, through the stage ([`outln!`], [`errln!`]). With `--json`,
/// text meant for stdout goes to stderr: stdout holds JSON only.
pub(crate) fn line(stream: Stream, args: fmt::Arguments<'_>) {
    let mut text = render(&args.to_string());
    text.push('\n');
    let stream = if JSON_MODE.load(Ordering::SeqCst) {
        Stream::Err
    } else {
        stream
    };
    write_rendered(stream, text.as_bytes());
}

/// Prints a line on stdout through the output stage, as `println!` would.
macro_rules! outln {
    () => {
        $crate::term::line($crate::term::Stream::Out, format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::term::line($crate::term::Stream::Out, format_args!($($arg)*))
    };
}

/// Prints a line on stderr through the output stage, as `eprintln!` would.
macro_rules! errln {
    () => {
        $crate::term::line($crate::term::Stream::Err, format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::term::line($crate::term::Stream::Err, format_args!($($arg)*))
    };
}

pub(crate) use {errln, outln};

/// A value as the JSON the CLI prints: scrubbed value by value, its text's
/// controls as `\u` escapes.
pub(crate) fn json_text(value: &Value, pretty: bool) -> String {
    let mut value = value.clone();
    SECRETS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .scrub_value(&mut value);
    let text = if pretty {
        serde_json::to_string_pretty(&value)
    } else {
        serde_json::to_string(&value)
    }
    .unwrap_or_default();
    // Already scrubbed: the text is not scrubbed again, which could cut
    // through JSON's own syntax.
    printable(&escape_json_text(&text), Layout::Block).into_owned()
}

/// Prints a value as JSON on stdout: one line at once (a stream of them,
/// `mcp listen --json`), or pretty, the command's result, written when the
/// command ends (`errors::finish`, which adds the error object to a
/// failure's).
pub(crate) fn print_json(value: &Value, pretty: bool) {
    if pretty && JSON_MODE.load(Ordering::SeqCst) {
        let previous = RESULT
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(value.clone());
        if let Some(previous) = previous {
            write_json(&previous);
        }
        return;
    }
    let mut text = json_text(value, pretty);
    text.push('\n');
    write_rendered(Stream::Out, text.as_bytes());
}

/// Writes a value as pretty JSON on stdout now.
pub(crate) fn write_json(value: &Value) {
    let mut text = json_text(value, true);
    text.push('\n');
    write_rendered(Stream::Out, text.as_bytes());
}

/// Writes a prompt on stderr, without a newline.
pub(crate) fn prompt(text: &str) {
    write_rendered(Stream::Err, render(text).as_bytes());
}

/// A progress line on stderr: on a terminal redrawn in place (a carriage
/// return before, the rest of the line cleared after: the stage's own
/// controls), else a plain line.
pub(crate) fn progress(text: &str, redraw: bool) {
    let text = render(text);
    let text = if redraw {
        format!("\r{text}\x1b[K")
    } else {
        format!("{text}\n")
    };
    write_rendered(Stream::Err, text.as_bytes());
}

/// Whether stdout is a terminal.
#[allow(clippy::disallowed_methods)]
pub(crate) fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// Whether stderr is a terminal.
#[allow(clippy::disallowed_methods)]
pub(crate) fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// The writer of `--verbose` logs: one event per writer, written through
/// the stage when it is dropped (the log's text holds whatever a server
/// sent that a layer logged).
#[derive(Debug, Default)]
pub(crate) struct LogWriter(Vec<u8>);

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        if !self.0.is_empty() {
            let text = render(&String::from_utf8_lossy(&self.0));
            write_rendered(Stream::Err, text.as_bytes());
        }
    }
}

/// A [`LogWriter`] (for `tracing_subscriber`'s `with_writer`).
pub(crate) fn log_writer() -> LogWriter {
    LogWriter::default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn secrets(values: &[&str]) -> Secrets {
        let mut s = Secrets::default();
        for v in values {
            s.add(v);
        }
        s
    }

    #[test]
    fn every_occurrence_is_scrubbed() {
        let s = secrets(&["s3cr3t-value"]);
        assert_eq!(
            s.scrub("API_KEY=s3cr3t-value, again s3cr3t-value."),
            "API_KEY=<redacted>, again <redacted>."
        );
        assert!(matches!(s.scrub("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn short_values_are_left_alone() {
        let s = secrets(&["true", "8080", "debug"]);
        assert!(s.is_empty());
        assert_eq!(
            s.scrub("http://127.0.0.1:8080 true"),
            "http://127.0.0.1:8080 true"
        );
        assert!(!secrets(&["sixsix"]).is_empty());
    }

    #[test]
    fn nested_and_overlapping_values_leave_nothing_behind() {
        // One inside another: the longer is found whole.
        let s = secrets(&["abcdef", "abcdefghij"]);
        assert_eq!(
            s.scrub("[abcdefghij] [abcdef]"),
            "[<redacted>] [<redacted>]"
        );
        // Sharing characters: one marker over both, no tail of either.
        let s = secrets(&["123456XY", "XY7890ab"]);
        assert_eq!(s.scrub("<123456XY7890ab>"), "<<redacted>>");
        // A value overlapping itself.
        let s = secrets(&["aaaaaa"]);
        assert_eq!(s.scrub("xaaaaaaaay"), "x<redacted>y");
    }

    #[test]
    fn values_are_found_inside_json_and_escaped_text() {
        let s = secrets(&["pa\"ss\\word-42", "line one\nline two"]);
        let json = serde_json::to_string(&json!({"v": "pa\"ss\\word-42"})).unwrap();
        assert_eq!(s.scrub(&json), "{\"v\":\"<redacted>\"}");
        assert_eq!(s.scrub("key: line one\\nline two"), "key: <redacted>");
        let mut v = json!({"pa\"ss\\word-42": ["line one\nline two", 7, true], "pin": 12345678});
        secrets(&["12345678"]).scrub_value(&mut v);
        assert_eq!(v["pin"], json!(REDACTED));
        s.scrub_value(&mut v);
        assert_eq!(v, json!({REDACTED: [REDACTED, 7, true], "pin": REDACTED}));
    }

    #[test]
    fn peer_controls_are_escaped_and_our_colours_kept() {
        let painted = paint("31", "✗");
        let line = format!("{painted} failed: \x1b]52;c;aGk=\x07 \u{9b}2J");
        let shown = render(&line);
        assert_eq!(
            shown,
            "\x1b[31m✗\x1b[0m failed: \\x1b]52;c;aGk=\\x07 \\x9b2J"
        );
    }

    #[test]
    fn a_forged_colour_mark_stays_text() {
        // A server that sends the mark's first character (it cannot know
        // the token) gets no escape sequence.
        let forged = "\u{e000}0000000000000000\u{e001}31mred";
        assert!(!render(forged).contains('\x1b'));
    }

    #[test]
    fn json_is_valid_and_has_no_controls() {
        let text = json_text(&json!({"name": "x\u{1b}[2J\u{9b}y\u{7f}"}), true);
        assert!(!text.contains(['\x1b', '\u{9b}', '\u{7f}']), "{text}");
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["name"], "x\u{1b}[2J\u{9b}y\u{7f}");
    }
}
