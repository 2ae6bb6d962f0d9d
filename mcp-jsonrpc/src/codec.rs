//! The newline-framed codec: one JSON-RPC message (or batch) per `\n`-terminated line.

use std::fmt;
use std::io;

use bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::message::{Message, MessageError, Payload, excerpt_str, parse_payload};

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
        }
    }

    /// The maximum frame length in bytes.
    pub fn max_frame_length(&self) -> usize {
        self.max_frame_length
    }
}

/// One decoded frame.
#[derive(Debug)]
#[non_exhaustive]
pub enum Frame {
    /// A JSON-RPC message.
    Message(Message),
    /// A batch: each element parsed on its own.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Oversized {
    /// The maximum that was exceeded.
    pub limit: usize,
}

impl fmt::Display for Oversized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a line longer than the {}-byte limit was skipped",
            self.limit
        )
    }
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
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(BOM).unwrap_or(line);
    if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        None
    } else {
        Some(line)
    }
}

fn frame(line: &[u8]) -> Frame {
    match parse_payload(line) {
        Ok(Payload::Single(m)) => Frame::Message(m),
        Ok(Payload::Batch(items)) => Frame::Batch(items),
        Err(reason) => Frame::Malformed(Malformed {
            reason,
            excerpt: excerpt(line),
            len: line.len(),
        }),
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
                    buf.clear();
                    self.next_index = 0;
                    self.discarding = true;
                    return Ok(Some(Frame::Oversized(Oversized {
                        limit: self.max_frame_length,
                    })));
                }
                self.next_index = buf.len();
                return Ok(None);
            };
            self.next_index = 0;
            let line = buf.get(..newline).unwrap_or_default();
            let out = if line.strip_suffix(b"\r").unwrap_or(line).len() > self.max_frame_length {
                Some(Frame::Oversized(Oversized {
                    limit: self.max_frame_length,
                }))
            } else {
                content(line).map(frame)
            };
            buf.advance(newline + 1);
            if let Some(out) = out {
                return Ok(Some(out));
            }
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

impl Encoder<&Message> for NewlineCodec {
    type Error = EncodeError;

    fn encode(&mut self, item: &Message, dst: &mut BytesMut) -> Result<(), EncodeError> {
        let start = dst.len();
        if let Err(e) = serde_json::to_writer(dst.writer(), item) {
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

impl Encoder<Message> for NewlineCodec {
    type Error = EncodeError;

    fn encode(&mut self, item: Message, dst: &mut BytesMut) -> Result<(), EncodeError> {
        self.encode(&item, dst)
    }
}
