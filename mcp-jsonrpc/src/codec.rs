//! The newline-framed codec: one JSON-RPC message (or batch) per `\n`-terminated line.

use std::fmt;
use std::io;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::Id;
use crate::batch::{BatchSwitch, Batches, DEFAULT_MAX_BATCH_ELEMENTS};
use crate::message::{
    Message, MessageError, OutgoingRequest, Payload, excerpt_str, parse_frame_with, write_compact,
};

/// The default maximum frame length: 16 MiB.
pub const DEFAULT_MAX_FRAME_LENGTH: usize = 16 * 1024 * 1024;

/// How many characters of a bad line an excerpt keeps.
const EXCERPT_CHARS: usize = 80;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A tokio-util codec for newline-delimited JSON-RPC.
///
/// Decoding yields [`Frame`]s. A line that is not a JSON-RPC message is an
/// item ([`Frame::Malformed`]), not an error: an error would end a
/// `FramedRead`, and one stray log line on a server's stdout must not end the
/// connection. Only IO errors are errors.
///
/// * Lines longer than the maximum are reported once ([`Frame::Oversized`]) and
///   skipped up to the next newline; memory stays within the maximum plus one read.
/// * `\r\n` line ends, blank lines and a UTF-8 byte-order mark at the start of a
///   line are accepted.
/// * Each byte is scanned for the newline once, however the stream is split.
/// * An unterminated tail at end of stream is a [`Frame::Truncated`].
/// * A batch is parsed as far as the codec's batch setting allows (see
///   [`Batches`]): by default at most [`DEFAULT_MAX_BATCH_ELEMENTS`]
///   elements, each charged against the frame limit for what it costs once
///   parsed; [`with_max_batch_elements`](Self::with_max_batch_elements)
///   changes the bound (0 refuses batches), and
///   [`with_batch_switch`](Self::with_batch_switch) lets another party
///   change it while the codec runs. A batch refused or over a bound is one
///   [`Frame::Malformed`] whose reason counts its elements; none of them is
///   built.
///
/// Encoding writes compact JSON and a `\n`, never an embedded newline, and
/// refuses a message longer than the maximum.
#[derive(Debug, Clone)]
pub struct NewlineCodec {
    max_frame_length: usize,
    /// Where the newline search resumes: everything before it has been scanned.
    next_index: usize,
    /// Skipping the rest of an oversized line.
    discarding: bool,
    /// The largest batch accepted; read only for a line that is a batch.
    batches: BatchGate,
}

/// Where a codec's batch bound comes from.
#[derive(Debug, Clone)]
enum BatchGate {
    Fixed(usize),
    Shared(BatchSwitch),
}

impl Default for NewlineCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl NewlineCodec {
    /// A codec with the default maximum frame length (16 MiB).
    pub fn new() -> Self {
        Self::with_max_frame_length(DEFAULT_MAX_FRAME_LENGTH)
    }

    /// A codec with a maximum frame length in bytes, line end excluded.
    pub fn with_max_frame_length(max_frame_length: usize) -> Self {
        NewlineCodec {
            max_frame_length,
            next_index: 0,
            discarding: false,
            batches: BatchGate::Fixed(DEFAULT_MAX_BATCH_ELEMENTS),
        }
    }

    /// The same codec, accepting batches of at most `max_elements`
    /// elements (0: no batches; a batch is then one [`Frame::Malformed`]).
    pub fn with_max_batch_elements(mut self, max_elements: usize) -> Self {
        self.batches = BatchGate::Fixed(max_elements);
        self
    }

    /// The same codec, its batch bound read from `switch` whenever a line
    /// is a batch (and only then), so the party that holds the switch's
    /// other clone can turn batches on or off while the codec runs.
    pub fn with_batch_switch(mut self, switch: BatchSwitch) -> Self {
        self.batches = BatchGate::Shared(switch);
        self
    }

    /// The maximum frame length in bytes.
    pub fn max_frame_length(&self) -> usize {
        self.max_frame_length
    }

    /// The batch setting now: the bound, within the frame limit.
    pub fn batches(&self) -> Batches {
        let max_elements = match &self.batches {
            BatchGate::Fixed(n) => *n,
            BatchGate::Shared(switch) => switch.max_elements(),
        };
        Batches::up_to(max_elements).within(self.max_frame_length)
    }

    /// Parses a line split off the read buffer: the messages' raw members
    /// are slices of it.
    fn frame(&self, line: &Bytes) -> Frame {
        match parse_frame_with(line, || self.batches()) {
            Ok(Payload::Single(m)) => Frame::Message(m),
            Ok(Payload::Batch(items)) => Frame::Batch(items),
            Err(reason) => Frame::Malformed(Malformed {
                reason,
                excerpt: excerpt(line),
                len: line.len(),
            }),
        }
    }
}

/// One decoded frame.
#[derive(Debug)]
#[non_exhaustive]
pub enum Frame {
    /// A JSON-RPC message.
    Message(Message),
    /// A batch within the codec's bounds: each element parsed on its own.
    Batch(Vec<Result<Message, MessageError>>),
    /// A line that is not a JSON-RPC message (not UTF-8, not JSON, or not JSON-RPC).
    Malformed(Malformed),
    /// A line longer than the maximum; it was skipped.
    Oversized(Oversized),
    /// Bytes after the last newline when the stream ended.
    Truncated(Truncated),
}

/// A line that could not be used, with a reason and a short, safe excerpt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// Why the line was rejected.
    pub reason: MessageError,
    /// The first characters of the line, lossily decoded, control characters escaped.
    pub excerpt: String,
    /// The line's length in bytes.
    pub len: usize,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} bytes: {:?})",
            self.reason, self.len, self.excerpt
        )
    }
}

/// A line longer than the maximum frame length.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Oversized {
    /// The maximum that was exceeded.
    pub limit: usize,
    /// The `id` its first bytes give at the top level, when they give one
    /// (`{"jsonrpc":"2.0","id":7,"result":…`): the request whose answer was
    /// skipped, so a client can fail it at once instead of at its timeout.
    pub id: Option<Id>,
}

impl Oversized {
    /// An oversized line whose id is not known.
    pub fn new(limit: usize) -> Self {
        Oversized { limit, id: None }
    }

    /// An oversized line whose first bytes are `head`: the id is taken from
    /// them when they name one at the top level.
    ///
    /// ```
    /// use mcp_stack_jsonrpc::{Id, Oversized};
    /// let o = Oversized::of(40, br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"id":1"#);
    /// assert_eq!(o.id, Some(Id::from(7)));
    /// assert_eq!(Oversized::of(40, br#"{"result":{"id":1,"x":"#).id, None);
    /// ```
    pub fn of(limit: usize, head: &[u8]) -> Self {
        // Never past the limit: every line reported has that much, however
        // it arrived in chunks, so the answer does not depend on chunking.
        let head = head.get(..limit).unwrap_or(head);
        Oversized {
            limit,
            id: leading_id(head),
        }
    }
}

impl fmt::Display for Oversized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a line longer than the {}-byte limit was skipped",
            self.limit
        )?;
        if let Some(id) = &self.id {
            write!(f, " (the answer to request {id})")?;
        }
        Ok(())
    }
}

/// How far into an oversized line [`leading_id`] looks.
const ID_SCAN: usize = 4096;

/// The value of the top-level `"id"` member among the first bytes of a JSON
/// object, when it comes before anything too long to scan: a number or a
/// string without escapes. Strings elsewhere are skipped whole, so an `"id"`
/// inside `result` is never taken for the message's.
fn leading_id(head: &[u8]) -> Option<Id> {
    let head = head.get(..ID_SCAN).unwrap_or(head);
    let mut depth = 0usize;
    let mut i = 0usize;
    let mut key_at_top: Option<(usize, usize)> = None;
    while let Some(&b) = head.get(i) {
        match b {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.checked_sub(1)?,
            b'"' => {
                let start = i + 1;
                let mut j = start;
                loop {
                    match head.get(j)? {
                        b'\\' => j += 2,
                        b'"' => break,
                        _ => j += 1,
                    }
                }
                if depth == 1 {
                    key_at_top = Some((start, j));
                }
                i = j;
            }
            b':' if depth == 1 => {
                if let Some((s, e)) = key_at_top.take()
                    && head.get(s..e) == Some(b"id".as_slice())
                {
                    return id_value(head.get(i + 1..)?);
                }
            }
            b',' => key_at_top = None,
            _ => {}
        }
        i += 1;
    }
    None
}

/// A JSON number or escape-free string at the start of `rest` (after
/// whitespace), as an [`Id`].
fn id_value(rest: &[u8]) -> Option<Id> {
    let start = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    let rest = rest.get(start..)?;
    let end = match rest.first()? {
        b'"' => {
            rest.iter()
                .skip(1)
                .position(|b| *b == b'"' || *b == b'\\')?
                + 2
        }
        _ => {
            let end = rest
                .iter()
                .position(|b| !(b.is_ascii_digit() || *b == b'-'))?;
            // An integer ends the value; `1.5` or `1e3` is no id of ours.
            if !matches!(rest.get(end)?, b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n') {
                return None;
            }
            end
        }
    };
    serde_json::from_slice(rest.get(..end)?).ok()
}

/// An unterminated tail at end of stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncated {
    /// The first characters of the tail.
    pub excerpt: String,
    /// The tail's length in bytes.
    pub len: usize,
}

impl fmt::Display for Truncated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stream ended inside a message ({} bytes: {:?})",
            self.len, self.excerpt
        )
    }
}

/// A short, safe excerpt of some bytes.
pub fn excerpt(bytes: &[u8]) -> String {
    // Four bytes per character at most: decoding more is wasted work.
    let head = bytes.get(..EXCERPT_CHARS * 4).unwrap_or(bytes);
    let mut text = excerpt_str(&String::from_utf8_lossy(head), EXCERPT_CHARS);
    if head.len() < bytes.len() && !text.ends_with('…') {
        text.push('…');
    }
    text
}

/// Strips the line end, a leading byte-order mark; `None` for a blank line.
fn content(line: &[u8]) -> Option<&[u8]> {
    content_range(line).and_then(|(start, end)| line.get(start..end))
}

/// Where [`content`] lies in `line`.
fn content_range(line: &[u8]) -> Option<(usize, usize)> {
    let end = line.len() - usize::from(line.ends_with(b"\r"));
    let start = if line.starts_with(BOM) && end >= BOM.len() {
        BOM.len()
    } else {
        0
    };
    let text = line.get(start..end)?;
    if text.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        None
    } else {
        Some((start, end))
    }
}

impl Decoder for NewlineCodec {
    type Item = Frame;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<Frame>> {
        loop {
            if self.discarding {
                match memchr::memchr(b'\n', buf) {
                    Some(i) => {
                        buf.advance(i + 1);
                        self.discarding = false;
                    }
                    None => {
                        buf.clear();
                        return Ok(None);
                    }
                }
            }
            let start = self.next_index.min(buf.len());
            let found = buf
                .get(start..)
                .and_then(|rest| memchr::memchr(b'\n', rest))
                .map(|i| start + i);
            let Some(newline) = found else {
                // `+ 1`: a line of exactly the maximum may still be waiting for
                // the `\n` after its `\r`.
                if buf.len() > self.max_frame_length.saturating_add(1) {
                    // Over the limit with no end in sight: report once, then
                    // drop bytes until the next newline.
                    let oversized = Oversized::of(self.max_frame_length, buf);
                    buf.clear();
                    self.next_index = 0;
                    self.discarding = true;
                    return Ok(Some(Frame::Oversized(oversized)));
                }
                self.next_index = buf.len();
                return Ok(None);
            };
            self.next_index = 0;
            let line = buf.get(..newline).unwrap_or_default();
            if line.strip_suffix(b"\r").unwrap_or(line).len() > self.max_frame_length {
                let oversized = Oversized::of(self.max_frame_length, line);
                buf.advance(newline + 1);
                return Ok(Some(Frame::Oversized(oversized)));
            }
            let Some((start, end)) = content_range(line) else {
                // A blank line: look for the next one.
                buf.advance(newline + 1);
                continue;
            };
            // The line leaves the buffer as a frozen `Bytes` (no copy): the
            // messages' raw members are slices of it, each read once more
            // only by the layer that knows its type.
            let mut line = buf.split_to(newline + 1).freeze();
            line.truncate(end);
            line.advance(start);
            return Ok(Some(self.frame(&line)));
            // A blank line: look for the next one.
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> io::Result<Option<Frame>> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        self.next_index = 0;
        if self.discarding {
            self.discarding = false;
            buf.clear();
            return Ok(None);
        }
        let tail = content(buf).map(|line| Truncated {
            excerpt: excerpt(line),
            len: line.len(),
        });
        buf.clear();
        Ok(tail.map(Frame::Truncated))
    }
}

/// Why a message could not be encoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// The encoded message is longer than the maximum frame length.
    #[error("message of {len} bytes exceeds the {limit}-byte frame limit")]
    TooLarge {
        /// The encoded length.
        len: usize,
        /// The maximum frame length.
        limit: usize,
    },
    /// Serialization failed (a map with non-string keys, for example).
    #[error("cannot serialize message: {0}")]
    Json(#[from] serde_json::Error),
    /// Writing failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl NewlineCodec {
    /// Writes one message with `write`, then checks its length and turns
    /// the newlines raw members may hold into spaces; on failure `dst` is
    /// as it was.
    fn encode_with(
        &self,
        dst: &mut BytesMut,
        hint: usize,
        write: impl FnOnce(&mut bytes::buf::Writer<&mut BytesMut>) -> Result<(), serde_json::Error>,
    ) -> Result<(), EncodeError> {
        let start = dst.len();
        dst.reserve(hint);
        if let Err(e) = write(&mut dst.writer()) {
            dst.truncate(start);
            return Err(e.into());
        }
        let len = dst.len() - start;
        if len > self.max_frame_length {
            dst.truncate(start);
            return Err(EncodeError::TooLarge {
                len,
                limit: self.max_frame_length,
            });
        }
        // serde_json escapes newlines inside strings, but raw values are copied
        // verbatim and may hold newlines as whitespace between tokens. Whitespace
        // is interchangeable, so turn them into spaces.
        if let Some(written) = dst.get_mut(start..) {
            for i in memchr::memchr2_iter(b'\n', b'\r', written).collect::<Vec<_>>() {
                if let Some(b) = written.get_mut(i) {
                    *b = b' ';
                }
            }
        }
        dst.put_u8(b'\n');
        Ok(())
    }
}

impl Encoder<&Message> for NewlineCodec {
    type Error = EncodeError;

    fn encode(&mut self, item: &Message, dst: &mut BytesMut) -> Result<(), EncodeError> {
        self.encode_with(dst, item.encoded_len_hint(), |w| write_compact(item, w))
    }
}

/// A request's params are written by serde straight into `dst`, byte for
/// byte what the same request as a [`Message`] with [`to_raw`](crate::to_raw)
/// params gives.
impl Encoder<&OutgoingRequest<'_>> for NewlineCodec {
    type Error = EncodeError;

    fn encode(
        &mut self,
        item: &OutgoingRequest<'_>,
        dst: &mut BytesMut,
    ) -> Result<(), EncodeError> {
        self.encode_with(dst, 128 + item.method().len(), |w| item.write(w))
    }
}

impl Encoder<Message> for NewlineCodec {
    type Error = EncodeError;

    fn encode(&mut self, item: Message, dst: &mut BytesMut) -> Result<(), EncodeError> {
        self.encode(&item, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leading_id_is_the_top_level_one_only() {
        let cases: &[(&[u8], Option<Id>)] = &[
            (br#"{"jsonrpc":"2.0","id":7,"result":{"#, Some(Id::from(7))),
            (
                br#"{ "id" : "req-9" , "result": ["#,
                Some(Id::from("req-9".to_string())),
            ),
            (br#"{"jsonrpc":"2.0","id":-3,"#, Some(Id::from(-3))),
            (br#"{"result":{"id":1,"content":"#, None),
            (br#"{"result":"has \"id\": 4 inside","#, None),
            (br#"{"jsonrpc":"2.0","id":1.5,"result":"#, None),
            (br#"{"jsonrpc":"2.0","id":"a\"b","result":"#, None),
            (br#"{"jsonrpc":"2.0","id":12"#, None),
            (b"not json at all", None),
            (br#"[{"id":1}"#, None),
        ];
        for (head, want) in cases {
            assert_eq!(leading_id(head), *want, "{}", String::from_utf8_lossy(head));
        }
    }

    #[test]
    fn an_oversized_answer_names_its_request() {
        let mut codec = NewlineCodec::with_max_frame_length(32);
        let mut buf = BytesMut::from(
            &br#"{"jsonrpc":"2.0","id":5,"result":{"text":"far too long for the limit"}}
"#[..],
        );
        let Some(Frame::Oversized(o)) = codec.decode(&mut buf).unwrap() else {
            panic!("not oversized");
        };
        assert_eq!((o.limit, o.id), (32, Some(Id::from(5))));
    }
}
