//! A Server-Sent Events parser, as the HTML standard describes the
//! `text/event-stream` format.
//!
//! [`SseParser`] is pure (no IO): push bytes in with [`SseParser::push`], take
//! items out with [`SseParser::next_item`]. It handles `event`, `data`
//! (several lines joined with `\n`), `id`, `retry`, comments, a leading
//! byte-order mark, and CRLF, CR or LF line ends, however the bytes are
//! chunked. One event (its data plus the line being read) is bounded by
//! [`SseParser::max_event_size`] (default [`DEFAULT_MAX_EVENT_SIZE`]): an event
//! over the bound is skipped whole and reported as [`SseItem::Oversized`], and
//! the parser's memory stays within about the bound plus one pushed chunk.
//!
//! ```
//! use mcp_stack_transport::sse::{SseItem, SseParser};
//!
//! let mut parser = SseParser::new();
//! parser.push(b": a comment\r\nid: 7\r\nretry: 1500\r\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n");
//! let Some(SseItem::Event(event)) = parser.next_item() else { panic!() };
//! assert_eq!(event.event, "message");
//! assert_eq!(event.data, b"{\"a\":\n1}");
//! assert_eq!(event.id.as_deref(), Some("7"));
//! assert_eq!(parser.retry(), Some(std::time::Duration::from_millis(1500)));
//! assert!(parser.next_item().is_none());
//! ```

use std::fmt;
use std::time::Duration;

use bytes::{Buf, BytesMut};

/// The default bound on one event, in bytes: 16 MiB.
pub const DEFAULT_MAX_EVENT_SIZE: usize = 16 * 1024 * 1024;

/// Why a stream was given up for silence, naming the setting and its bound.
#[cfg(feature = "http")]
pub(crate) fn idle_message(bound: std::time::Duration) -> String {
    format!(
        "the SSE stream sent nothing for {} (the idle stream timeout, \
         HttpOptions::idle_stream_timeout)",
        crate::describe_duration(bound)
    )
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched event.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SseEvent {
    /// The event type: `message` unless an `event` field said otherwise.
    pub event: String,
    /// The data lines joined with `\n`, as bytes (not checked for UTF-8 here).
    pub data: Vec<u8>,
    /// The last event id when the event was dispatched (it carries over
    /// from earlier events), if any was set.
    pub id: Option<String>,
}

impl fmt::Debug for SseEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseEvent")
            .field("event", &self.event)
            .field("data", &String::from_utf8_lossy(&self.data))
            .field("id", &self.id)
            .finish()
    }
}

/// What the parser hands out.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SseItem {
    /// A complete event.
    Event(SseEvent),
    /// An event larger than the bound was skipped.
    Oversized {
        /// The bound that was exceeded, in bytes.
        limit: usize,
    },
}

/// An incremental `text/event-stream` parser. See the [module docs](self).
#[derive(Debug)]
pub struct SseParser {
    max_event_size: usize,
    /// Bytes not yet consumed (at most one partial line after `next_item` returns `None`).
    buf: BytesMut,
    /// Where to go on scanning `buf` for a line end.
    scan_from: usize,
    /// The previous line ended with CR: a LF right after it belongs to that line end.
    skip_lf: bool,
    /// The start of the stream was checked for a byte-order mark.
    bom_done: bool,
    /// The event being read is over the bound: skip lines until a blank one.
    discarding: bool,
    /// The start of the line being read was dropped (it was part of a skipped event).
    in_dropped_line: bool,
    data: Vec<u8>,
    has_data: bool,
    event_type: String,
    last_event_id: Option<String>,
    retry: Option<Duration>,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// A parser with the default event bound.
    pub fn new() -> Self {
        Self::with_max_event_size(DEFAULT_MAX_EVENT_SIZE)
    }

    /// A parser that skips events larger than `max` bytes.
    pub fn with_max_event_size(max: usize) -> Self {
        SseParser {
            max_event_size: max.max(1),
            buf: BytesMut::new(),
            scan_from: 0,
            skip_lf: false,
            bom_done: false,
            discarding: false,
            in_dropped_line: false,
            data: Vec::new(),
            has_data: false,
            event_type: String::new(),
            last_event_id: None,
            retry: None,
        }
    }

    /// The bound on one event, in bytes.
    pub fn max_event_size(&self) -> usize {
        self.max_event_size
    }

    /// The last event id seen (set by an `id` field, even on an event with no data).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// Sets the last event id (for a parser reading a resumed stream).
    pub fn set_last_event_id(&mut self, id: Option<String>) {
        self.last_event_id = id;
    }

    /// The reconnection delay the server asked for with `retry`, if any.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Appends bytes from the stream.
    ///
    /// Take every item out with [`next_item`](Self::next_item) after each
    /// push: that is what keeps the buffer bounded.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete item, or `None` until more bytes arrive.
    pub fn next_item(&mut self) -> Option<SseItem> {
        loop {
            if !self.bom_done {
                if self.buf.len() < BOM.len() && BOM.starts_with(&self.buf) {
                    return None;
                }
                if self.buf.starts_with(BOM) {
                    self.buf.advance(BOM.len());
                }
                self.bom_done = true;
            }
            if self.skip_lf && !self.buf.is_empty() {
                if self.buf.first() == Some(&b'\n') {
                    self.buf.advance(1);
                }
                self.skip_lf = false;
            }
            let tail = self.buf.get(self.scan_from..).unwrap_or_default();
            let Some(pos) = memchr::memchr2(b'\r', b'\n', tail) else {
                self.scan_from = self.buf.len();
                if self.discarding && !self.buf.is_empty() {
                    // Nothing of a skipped event is kept.
                    self.buf.clear();
                    self.scan_from = 0;
                    self.in_dropped_line = true;
                } else if self.too_big(self.buf.len()) {
                    // A line that can never fit: drop it and the rest of its event.
                    self.start_discarding();
                    self.buf.clear();
                    self.scan_from = 0;
                    self.in_dropped_line = true;
                    return Some(SseItem::Oversized {
                        limit: self.max_event_size,
                    });
                }
                return None;
            };
            let end = self.scan_from + pos;
            let line = self.buf.split_to(end);
            let cr = self.buf.first() == Some(&b'\r');
            self.buf.advance(1);
            self.scan_from = 0;
            if cr {
                self.skip_lf = true;
            }
            if std::mem::take(&mut self.in_dropped_line) {
                // The end of a line whose start was dropped: not a blank line.
                continue;
            }
            if let Some(item) = self.line(&line) {
                return Some(item);
            }
        }
    }

    /// Call at the end of the stream: an unfinished event is dropped, as the
    /// standard says. The parser can then be reused for a new stream (the
    /// last event id and retry are kept).
    pub fn finish(&mut self) {
        self.buf.clear();
        self.scan_from = 0;
        self.skip_lf = false;
        self.bom_done = false;
        self.discarding = false;
        self.in_dropped_line = false;
        self.reset_event();
    }

    /// Whether a line of `len` bytes would take the current event over the bound.
    fn too_big(&self, len: usize) -> bool {
        self.data.len().saturating_add(len) > self.max_event_size
    }

    fn start_discarding(&mut self) {
        self.discarding = true;
        self.data = Vec::new();
        self.has_data = false;
        self.event_type.clear();
    }

    fn reset_event(&mut self) {
        if self.data.capacity() > 64 * 1024 {
            self.data = Vec::new();
        } else {
            self.data.clear();
        }
        self.has_data = false;
        self.event_type.clear();
    }

    fn line(&mut self, line: &[u8]) -> Option<SseItem> {
        if line.is_empty() {
            if self.discarding {
                self.discarding = false;
                self.reset_event();
                return None;
            }
            if !self.has_data {
                self.reset_event();
                return None;
            }
            let data = std::mem::take(&mut self.data);
            let event = if self.event_type.is_empty() {
                "message".to_owned()
            } else {
                std::mem::take(&mut self.event_type)
            };
            self.reset_event();
            return Some(SseItem::Event(SseEvent {
                event,
                data,
                id: self.last_event_id.clone(),
            }));
        }
        if self.discarding {
            return None;
        }
        if self.too_big(line.len()) {
            self.start_discarding();
            return Some(SseItem::Oversized {
                limit: self.max_event_size,
            });
        }
        if line.first() == Some(&b':') {
            return None;
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let (name, rest) = line.split_at(i);
                let value = rest.get(1..).unwrap_or_default();
                (name, value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.event_type = String::from_utf8_lossy(value).into_owned(),
            b"id" if !value.contains(&0) => {
                self.last_event_id = if value.is_empty() {
                    None
                } else {
                    Some(String::from_utf8_lossy(value).into_owned())
                };
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                let ms = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse::<u64>().ok())
                    .unwrap_or(u64::MAX);
                self.retry = Some(Duration::from_millis(ms));
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all(parser: &mut SseParser) -> Vec<SseItem> {
        std::iter::from_fn(|| parser.next_item()).collect()
    }

    fn parse_chunks(chunks: &[&[u8]], max: usize) -> Vec<SseItem> {
        let mut p = SseParser::with_max_event_size(max);
        let mut out = Vec::new();
        for c in chunks {
            p.push(c);
            out.extend(all(&mut p));
        }
        out
    }

    fn event(ty: &str, data: &str, id: Option<&str>) -> SseItem {
        SseItem::Event(SseEvent {
            event: ty.into(),
            data: data.as_bytes().to_vec(),
            id: id.map(Into::into),
        })
    }

    #[test]
    fn fields_comments_and_line_ends() {
        let input = b"\xEF\xBB\xBF: hi\n\ndata:a\rdata: b\r\n\r\nevent: endpoint\nid:1\ndata\n\nretry: x\nretry: 20\nid: \0bad\ndata:  two spaces\n\n";
        let mut p = SseParser::new();
        p.push(input);
        assert_eq!(
            all(&mut p),
            vec![
                event("message", "a\nb", None),
                event("endpoint", "", Some("1")),
                event("message", " two spaces", Some("1")),
            ]
        );
        assert_eq!(p.retry(), Some(Duration::from_millis(20)));
    }

    #[test]
    fn id_without_data_is_remembered_but_not_dispatched() {
        let mut p = SseParser::new();
        p.push(b"id: prime-1\nretry: 500\n\n");
        assert!(all(&mut p).is_empty());
        assert_eq!(p.last_event_id(), Some("prime-1"));
        p.push(b"id\n\n");
        assert!(all(&mut p).is_empty());
        assert_eq!(p.last_event_id(), None);
    }

    #[test]
    fn unfinished_event_is_dropped_at_end() {
        let mut p = SseParser::new();
        p.push(b"data: x\n");
        assert!(all(&mut p).is_empty());
        p.finish();
        p.push(b"data: y\n\n");
        assert_eq!(all(&mut p), vec![event("message", "y", None)]);
    }

    #[test]
    fn oversized_events_are_skipped() {
        let big = format!("data: {}\n\ndata: ok\n\n", "x".repeat(100));
        for split in [1, 7, 50, big.len()] {
            let chunks: Vec<&[u8]> = big.as_bytes().chunks(split).collect();
            let items = parse_chunks(&chunks, 32);
            assert_eq!(
                items,
                vec![
                    SseItem::Oversized { limit: 32 },
                    event("message", "ok", None)
                ],
                "split {split}"
            );
        }
        // Many data lines that add up to too much.
        let many = format!("{}\ndata: ok\n\n", "data: 0123456789\n".repeat(10));
        assert_eq!(
            parse_chunks(&[many.as_bytes()], 32),
            vec![
                SseItem::Oversized { limit: 32 },
                event("message", "ok", None)
            ]
        );
    }

    fn chunked(input: Vec<u8>) -> impl Strategy<Value = (Vec<u8>, Vec<usize>)> {
        let len = input.len();
        (Just(input), proptest::collection::vec(0..=len, 0..8))
    }

    fn split_at(input: &[u8], mut cuts: Vec<usize>) -> Vec<&[u8]> {
        cuts.sort_unstable();
        let mut out = Vec::new();
        let mut last = 0;
        for c in cuts {
            out.push(&input[last..c]);
            last = c;
        }
        out.push(&input[last..]);
        out
    }

    fn sse_stream() -> impl Strategy<Value = Vec<u8>> {
        let line = prop_oneof![
            "[a-z{}\":, ]{0,20}".prop_map(|s| format!("data: {s}")),
            "[a-z]{0,5}".prop_map(|s| format!("event: {s}")),
            "[0-9a-z-]{0,5}".prop_map(|s| format!("id: {s}")),
            "[0-9]{1,4}".prop_map(|s| format!("retry: {s}")),
            "[ -~]{0,10}".prop_map(|s| format!(":{s}")),
            Just(String::new()),
        ];
        let end = prop_oneof![Just("\n"), Just("\r"), Just("\r\n")];
        proptest::collection::vec((line, end), 0..30).prop_map(|lines| {
            let mut s = String::new();
            for (l, e) in lines {
                s.push_str(&l);
                s.push_str(e);
            }
            s.into_bytes()
        })
    }

    proptest! {
        #[test]
        fn any_chunking_gives_the_same_events((input, cuts) in sse_stream().prop_flat_map(chunked)) {
            let whole = parse_chunks(&[&input], 64);
            let pieces = parse_chunks(&split_at(&input, cuts), 64);
            prop_assert_eq!(whole, pieces);
        }

        #[test]
        fn byte_by_byte_is_the_same(input in sse_stream()) {
            let whole = parse_chunks(&[&input], 40);
            let bytes: Vec<&[u8]> = input.chunks(1).collect();
            prop_assert_eq!(whole, parse_chunks(&bytes, 40));
        }

        #[test]
        fn arbitrary_bytes_never_panic_and_memory_is_bounded(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..20)
        ) {
            let mut p = SseParser::with_max_event_size(64);
            for c in &chunks {
                p.push(c);
                while let Some(item) = p.next_item() {
                    if let SseItem::Event(e) = item {
                        prop_assert!(e.data.len() <= 64);
                    }
                }
                prop_assert!(p.buf.len() <= 64);
                prop_assert!(p.data.len() <= 64);
            }
        }
    }
}
