//! Properties of the newline codec: round trips, chunking, oversized lines,
//! arbitrary input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use bytes::BytesMut;
use mcp_stack_jsonrpc::{
    EncodeError, ErrorObject, ErrorResponse, Frame, Id, Message, NewlineCodec, Notification,
    Payload, RawJson, Request, Response, parse_frame_with, parse_payload,
};
use proptest::prelude::*;
use serde_json::Value;
use tokio_util::codec::{Decoder, Encoder};

// ---------------------------------------------------------------------------
// Generators.

/// Text with the characters that break naive framing: newlines, carriage
/// returns, quotes, backslashes, control characters, BOMs, line separators and
/// any other Unicode scalar.
fn text() -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        3 => any::<char>(),
        1 => prop::sample::select(vec![
            '\n', '\r', '"', '\\', '\t', '\u{0}', '\u{1b}', '\u{feff}', '\u{2028}', '{', '}',
        ]),
        2 => prop::char::range('a', 'z'),
    ];
    prop::collection::vec(ch, 0..24).prop_map(String::from_iter)
}

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        any::<i64>().prop_map(Id::from),
        any::<u64>().prop_map(Id::from),
        prop::sample::select(vec![0, 1, -1, i64::MIN, i64::MAX]).prop_map(Id::from),
        prop::sample::select(vec![1u64 << 63, u64::MAX]).prop_map(Id::from),
        text().prop_map(Id::from),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| {
            serde_json::Number::from_f64(f).map(Value::Number)
        }),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Raw JSON for a value: compact, or pretty with `\n` or `\r\n` between tokens
/// (raw values keep their text, whitespace included).
fn raw(value: Value) -> impl Strategy<Value = RawJson> {
    (0..3u8).prop_map(move |style| {
        let text = match style {
            0 => serde_json::to_string(&value).unwrap(),
            // Pretty output has newlines only between tokens: strings escape theirs.
            1 => serde_json::to_string_pretty(&value).unwrap(),
            _ => serde_json::to_string_pretty(&value)
                .unwrap()
                .replace('\n', "\r\n"),
        };
        RawJson::from_string(text).unwrap()
    })
}

/// `params` must be structured: an object or an array.
fn params() -> impl Strategy<Value = Option<RawJson>> {
    let structured = json().prop_map(|v| match v {
        v @ (Value::Object(_) | Value::Array(_)) => v,
        other => serde_json::json!({ "v": other }),
    });
    prop::option::of(structured.prop_flat_map(raw))
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (id(), text(), params()).prop_map(|(id, m, p)| Message::from(Request::new(id, m, p))),
        (text(), params()).prop_map(|(m, p)| Message::from(Notification::new(m, p))),
        (id(), json().prop_flat_map(raw)).prop_map(|(id, r)| Message::from(Response::new(id, r))),
        (
            prop::option::of(id()),
            any::<i64>(),
            text(),
            prop::option::of(json().prop_flat_map(raw)),
        )
            .prop_map(|(id, code, msg, data)| {
                let mut error = ErrorObject::new(code, msg);
                error.data = data;
                Message::from(ErrorResponse::new(id, error))
            }),
    ]
}

/// Cuts `bytes` into chunks whose sizes cycle through `sizes` (each at least 1).
fn chunks<'a>(bytes: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut rest = bytes;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes[i % sizes.len()].clamp(1, rest.len());
        let (head, tail) = rest.split_at(n);
        out.push(head);
        rest = tail;
        i += 1;
    }
    out
}

// ---------------------------------------------------------------------------
// Comparing.

/// A message as a JSON value, with raw members parsed: equal for messages that
/// mean the same, whatever whitespace their raw members had.
fn semantic(m: &Message) -> Value {
    serde_json::from_slice(&m.to_vec().unwrap()).unwrap()
}

/// A frame as comparable text.
fn describe(frame: &Frame) -> String {
    match frame {
        Frame::Message(m) => format!(
            "message {}",
            String::from_utf8(m.to_vec().unwrap()).unwrap()
        ),
        Frame::Batch(items) => {
            let items: Vec<String> = items
                .iter()
                .map(|i| match i {
                    Ok(m) => String::from_utf8(m.to_vec().unwrap()).unwrap(),
                    Err(e) => format!("error {e}"),
                })
                .collect();
            format!("batch {items:?}")
        }
        Frame::Malformed(m) => format!("malformed {m}"),
        Frame::Oversized(o) => format!("oversized {o}"),
        Frame::Truncated(t) => format!("truncated {t}"),
        other => format!("{other:?}"),
    }
}

/// Feeds `chunks` as a reader would, decoding until `None` after each, then
/// drains at end of stream. Checks the buffer bound after every call.
fn decode_chunked(codec: &mut NewlineCodec, chunks: &[&[u8]]) -> Vec<Frame> {
    let max = codec.max_frame_length();
    let bound = |chunk: usize| max + 1 + chunk;
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut largest = 0;
    for chunk in chunks {
        largest = largest.max(chunk.len());
        buf.extend_from_slice(chunk);
        while let Some(frame) = codec.decode(&mut buf).unwrap() {
            assert!(
                buf.len() <= bound(chunk.len()),
                "{} > {}",
                buf.len(),
                bound(chunk.len())
            );
            out.push(frame);
        }
        assert!(
            buf.len() <= bound(0),
            "after None: {} > {}",
            buf.len(),
            bound(0)
        );
    }
    while let Some(frame) = codec.decode_eof(&mut buf).unwrap() {
        out.push(frame);
    }
    assert!(buf.is_empty(), "decode_eof left {} bytes", buf.len());
    out
}

fn encode_all(codec: &mut NewlineCodec, messages: &[Message]) -> BytesMut {
    let mut buf = BytesMut::new();
    for m in messages {
        codec.encode(m, &mut buf).unwrap();
    }
    buf
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// (a) Encode then decode gives back the same message.
    #[test]
    fn any_message_round_trips(m in message()) {
        let mut codec = NewlineCodec::new();
        let mut buf = BytesMut::new();
        codec.encode(&m, &mut buf).unwrap();
        // One line: exactly one newline, at the end, and no carriage return.
        prop_assert_eq!(memchr::memchr_iter(b'\n', &buf).count(), 1);
        prop_assert_eq!(buf.last(), Some(&b'\n'));
        prop_assert!(!buf.contains(&b'\r'));
        let Some(Frame::Message(back)) = codec.decode(&mut buf).unwrap() else {
            panic!("not a message");
        };
        prop_assert!(buf.is_empty());
        prop_assert_eq!(std::mem::discriminant(&back), std::mem::discriminant(&m));
        prop_assert_eq!(back.id(), m.id());
        prop_assert_eq!(back.method(), m.method());
        prop_assert_eq!(semantic(&back), semantic(&m));
    }

    /// The encoder's own path for requests and notifications writes, byte
    /// for byte, what `serde_json` writes (raw members' newlines aside,
    /// which both turn into spaces).
    #[test]
    fn encoding_is_serde_jsons_compact_output(m in message()) {
        let mut codec = NewlineCodec::new();
        let mut buf = BytesMut::new();
        codec.encode(&m, &mut buf).unwrap();
        let mut expected = serde_json::to_vec(&m).unwrap();
        prop_assert_eq!(m.to_vec().unwrap(), expected.clone(), "Message::to_vec");
        for b in &mut expected {
            if matches!(*b, b'\n' | b'\r') {
                *b = b' ';
            }
        }
        expected.push(b'\n');
        prop_assert_eq!(String::from_utf8_lossy(&buf), String::from_utf8_lossy(&expected));
    }

    /// (b) However a stream of frames is cut into reads, it decodes the same.
    #[test]
    fn chunking_does_not_change_frames(
        messages in prop::collection::vec(message(), 1..8),
        noise in prop::collection::vec(
            prop::sample::select(vec!["", "\r", "  \t", "log: starting", "\u{feff}", "[]", "{"]),
            8,
        ),
        crlf in any::<bool>(),
        sizes in prop::collection::vec(1..200usize, 1..16),
    ) {
        let mut codec = NewlineCodec::new();
        let mut stream = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            let mut line = m.to_vec().unwrap();
            // Raw members may hold newlines between tokens: make the line one line
            // the way the encoder does.
            for b in &mut line {
                if matches!(*b, b'\n' | b'\r') {
                    *b = b' ';
                }
            }
            stream.extend_from_slice(&line);
            stream.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
            stream.extend_from_slice(noise[i % noise.len()].as_bytes());
            stream.push(b'\n');
        }
        let whole: Vec<String> =
            decode_chunked(&mut codec, &[&stream]).iter().map(describe).collect();
        // The stream holds the messages, in order.
        let found: Vec<&String> = whole.iter().filter(|d| d.starts_with("message ")).collect();
        prop_assert_eq!(found.len(), messages.len());
        let cut: Vec<String> = decode_chunked(&mut NewlineCodec::new(), &chunks(&stream, &sizes))
            .iter()
            .map(describe)
            .collect();
        prop_assert_eq!(&cut, &whole);
        let bytewise: Vec<String> = decode_chunked(&mut NewlineCodec::new(), &chunks(&stream, &[1]))
            .iter()
            .map(describe)
            .collect();
        prop_assert_eq!(&bytewise, &whole);
        // Encoder output decodes the same as the hand-built stream's messages.
        let encoded = encode_all(&mut codec, &messages);
        let from_encoder: Vec<String> = decode_chunked(&mut NewlineCodec::new(), &chunks(&encoded, &sizes))
            .iter()
            .map(describe)
            .collect();
        prop_assert_eq!(from_encoder.iter().collect::<Vec<_>>(), found);
    }

    /// (c) An oversized line is reported exactly once, then decoding goes on.
    #[test]
    fn oversized_line_then_valid_one(
        max in 64..200usize, // the valid line (at most 56 bytes) fits
        extra in 2..400usize,
        fill in prop::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 1..64),
        crlf in any::<bool>(),
        sizes in prop::collection::vec(1..300usize, 1..8),
        id in any::<i64>(),
    ) {
        let len = max + extra;
        let mut stream: Vec<u8> = fill.iter().copied().cycle().take(len).collect();
        stream.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
        let valid = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
        stream.extend_from_slice(valid.as_bytes());
        stream.push(b'\n');
        for sizes in [&sizes[..], &[1]] {
            let mut codec = NewlineCodec::with_max_frame_length(max);
            let frames = decode_chunked(&mut codec, &chunks(&stream, sizes));
            prop_assert_eq!(frames.len(), 2, "{:?}", frames);
            prop_assert!(matches!(&frames[0], Frame::Oversized(o) if o.limit == max));
            let Frame::Message(Message::Response(r)) = &frames[1] else {
                panic!("{:?}", frames[1]);
            };
            prop_assert_eq!(&r.id, &Id::from(id));
        }
    }

    /// (d) Arbitrary bytes, cut arbitrarily, never panic and never grow the
    /// buffer past the maximum plus one read.
    #[test]
    fn arbitrary_bytes_are_bounded(
        max in 0..64usize,
        stream in prop::collection::vec(
            prop_oneof![
                4 => any::<u8>(),
                1 => Just(b'\n'),
                1 => Just(b'\r'),
                1 => prop::sample::select(b"{}[]\":,0 ".to_vec()),
            ],
            0..600,
        ),
        sizes in prop::collection::vec(1..100usize, 1..8),
    ) {
        let mut codec = NewlineCodec::with_max_frame_length(max);
        let frames = decode_chunked(&mut codec, &chunks(&stream, &sizes));
        // Nothing is reported that the stream did not hold: at most one frame a line.
        prop_assert!(frames.len() <= memchr::memchr_iter(b'\n', &stream).count() + 1);
        // And chunking does not matter here either.
        let whole = decode_chunked(&mut NewlineCodec::with_max_frame_length(max), &[&stream]);
        prop_assert_eq!(
            frames.iter().map(describe).collect::<Vec<_>>(),
            whole.iter().map(describe).collect::<Vec<_>>()
        );
    }
}

// ---------------------------------------------------------------------------
// Zero copy: raw members as slices of the frame.

/// The raw members of a message.
fn raw_members(m: &Message) -> Vec<&RawJson> {
    match m {
        Message::Request(r) => r.params.iter().collect(),
        Message::Notification(n) => n.params.iter().collect(),
        Message::Response(r) => vec![&r.result],
        Message::Error(e) => e.error.data.iter().collect(),
        _ => Vec::new(),
    }
}

/// Whether every raw member of `parsed` lies inside `frame`.
fn all_in_frame(
    parsed: &Result<Payload, mcp_stack_jsonrpc::MessageError>,
    frame: &bytes::Bytes,
) -> bool {
    let range = frame.as_ptr_range();
    let inside = |m: &Message| {
        raw_members(m).iter().all(|r| {
            let p = r.as_bytes().as_ptr_range();
            range.start <= p.start && p.end <= range.end
        })
    };
    match parsed {
        Ok(Payload::Single(m)) => inside(m),
        Ok(Payload::Batch(items)) => items.iter().flatten().all(inside),
        _ => true,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// A frame held in `Bytes` parses to what the copying parse gives, with
    /// every raw member a slice of the frame, for single messages, batches
    /// and the text around them.
    #[test]
    fn frame_slices_parse_as_copies_do(
        messages in prop::collection::vec(message(), 1..4),
        batch in any::<bool>(),
        pad in prop::sample::select(vec!["", " ", "\t\r\n "]),
    ) {
        let texts: Vec<String> = messages
            .iter()
            .map(|m| String::from_utf8(m.to_vec().unwrap()).unwrap())
            .collect();
        let body = if batch {
            format!("{pad}[{}]{pad}", texts.join(","))
        } else {
            format!("{pad}{}{pad}", texts[0])
        };
        let frame = bytes::Bytes::from(body.clone().into_bytes());
        let sliced = parse_frame_with(&frame, mcp_stack_jsonrpc::Batches::default);
        let copied = parse_payload(body.as_bytes());
        prop_assert_eq!(format!("{sliced:?}"), format!("{copied:?}"));
        prop_assert!(sliced.is_ok());
        prop_assert!(all_in_frame(&sliced, &frame));
        if !batch {
            prop_assert_eq!(
                format!("{:?}", Message::from_bytes(&frame)),
                format!("{:?}", Message::from_slice(body.as_bytes()))
            );
        }
    }

    /// The codec's frames (lines split off its read buffer) parse as the
    /// copying parse of each line does.
    #[test]
    fn codec_frames_parse_as_copies_do(messages in prop::collection::vec(message(), 1..6)) {
        let mut codec = NewlineCodec::new();
        let mut buf = encode_all(&mut codec, &messages);
        let lines: Vec<Vec<u8>> = buf[..]
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        for line in lines {
            let Some(Frame::Message(m)) = codec.decode(&mut buf).unwrap() else {
                panic!("not a message")
            };
            let reference = Message::from_slice(&line).unwrap();
            prop_assert_eq!(format!("{m:?}"), format!("{reference:?}"));
        }
        prop_assert!(codec.decode(&mut buf).unwrap().is_none());
    }
}

proptest! {
    /// A request whose params serde writes straight into the frame encodes
    /// to the very line the same request as a `Message` does (raw params
    /// with newlines between tokens included).
    #[test]
    fn outgoing_requests_encode_as_messages_do(id in id(), method in text(), params in params()) {
        let message = Message::from(Request::new(id.clone(), method.clone(), params.clone()));
        let mut outgoing = mcp_stack_jsonrpc::OutgoingRequest::new(id, &method);
        if let Some(p) = &params {
            outgoing = outgoing.params(p);
        }
        let mut codec = NewlineCodec::new();
        let (mut a, mut b) = (BytesMut::new(), BytesMut::new());
        codec.encode(&message, &mut a).unwrap();
        codec.encode(&outgoing, &mut b).unwrap();
        prop_assert_eq!(a, b);
    }
}

// ---------------------------------------------------------------------------
// Encoder edges.

#[test]
fn encoder_flattens_newlines_in_raw_values() {
    let params = RawJson::from_string("{\n \"a\" :\r\n 1,\n\"b\":\"x\\ny\"}".to_owned()).unwrap();
    let m = Message::from(Request::new(1, "m", Some(params)));
    let mut codec = NewlineCodec::new();
    let mut buf = BytesMut::new();
    codec.encode(&m, &mut buf).unwrap();
    let text = std::str::from_utf8(&buf).unwrap();
    assert_eq!(text.matches('\n').count(), 1, "{text:?}");
    assert!(text.ends_with('\n'));
    assert!(!text.contains('\r'), "{text:?}");
    let Some(Frame::Message(Message::Request(back))) = codec.decode(&mut buf).unwrap() else {
        panic!()
    };
    let params: Value = serde_json::from_str(back.params.unwrap().get()).unwrap();
    assert_eq!(params, serde_json::json!({"a": 1, "b": "x\ny"}));
}

#[test]
fn encoder_refuses_messages_over_the_limit() {
    let m = Message::from(Request::new(1, "abc", None));
    let len = m.to_vec().unwrap().len();
    let mut buf = BytesMut::from(&b"earlier\n"[..]);

    let mut exact = NewlineCodec::with_max_frame_length(len);
    exact.encode(&m, &mut buf).unwrap();
    assert_eq!(buf.len(), 8 + len + 1);

    let before = buf.clone();
    let mut small = NewlineCodec::with_max_frame_length(len - 1);
    match small.encode(&m, &mut buf) {
        Err(EncodeError::TooLarge { len: l, limit }) => {
            assert_eq!((l, limit), (len, len - 1));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(buf, before, "a refused message leaves the buffer as it was");
}

// ---------------------------------------------------------------------------
// Batches.

/// A batch element's text: a message, or something that is not one (a
/// scalar, an object without a version, a nested array).
fn element() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => message().prop_map(|m| String::from_utf8(m.to_vec().unwrap()).unwrap()),
        1 => prop::sample::select(vec!["0", "null", "\"x\"", "true", "{}", "[1,[2]]"])
            .prop_map(str::to_owned),
        1 => json().prop_map(|v| v.to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// A batch is refused whole (its elements counted), refused whole over
    /// the element bound, or parsed element by element exactly as each
    /// element parses alone; a bigger budget never refuses what a smaller
    /// one accepted, and a budget below the per-element cost accepts
    /// nothing.
    #[test]
    fn batches_are_bounded_and_parse_as_their_elements(
        elements in prop::collection::vec(element(), 1..12),
        max in 0usize..14,
        budget in 0usize..8192,
    ) {
        use mcp_stack_jsonrpc::{BATCH_ELEMENT_COST, Batches, MessageError, Payload, parse_payload_with};
        let n = elements.len();
        let line = format!("[{}]", elements.join(","));
        let parse = |batches: Batches| parse_payload_with(line.as_bytes(), || batches);
        // Refused: one error, whatever the elements.
        match parse(Batches::REFUSED) {
            Err(MessageError::BatchRefused { elements }) => prop_assert_eq!(elements, n),
            // An element with a member of the wrong type fails the whole
            // batch, and so does a refused one when a skipped element is not JSON.
            Err(_) => {}
            Ok(p) => prop_assert!(false, "refused batch parsed: {p:?}"),
        }
        let unbounded = parse(Batches::up_to(64).within(usize::MAX));
        let Ok(Payload::Batch(items)) = unbounded else {
            // A member of the wrong type inside an element: the whole
            // batch fails whatever the bounds.
            prop_assert!(unbounded.is_err());
            return Ok(());
        };
        prop_assert_eq!(items.len(), n);
        for (item, text) in items.iter().zip(&elements) {
            let alone = Message::from_slice(text.as_bytes());
            match (item, alone) {
                (Ok(a), Ok(b)) => prop_assert_eq!(semantic(a), semantic(&b)),
                (
                    Err(MessageError::NotAnObject("array inside a batch")),
                    Err(MessageError::UnexpectedBatch | MessageError::EmptyBatch),
                ) => {}
                (Err(a), Err(b)) => prop_assert_eq!(a, &b),
                (a, b) => prop_assert!(false, "{a:?} in the batch, {b:?} alone"),
            }
        }
        match parse(Batches::up_to(max).within(usize::MAX)) {
            Ok(Payload::Batch(items)) => prop_assert!(max >= n && items.len() == n),
            Err(MessageError::BatchRefused { elements }) => prop_assert!(max == 0 && elements == n),
            Err(MessageError::BatchTooLong { elements, limit }) => {
                prop_assert!(max > 0 && max < n && elements == n && limit == max);
            }
            other => prop_assert!(false, "{other:?}"),
        }
        let within = |b: usize| parse(Batches::up_to(64).within(b));
        match within(budget) {
            Ok(_) => prop_assert!(within(budget + 1000).is_ok()),
            Err(MessageError::BatchOverBudget { elements, budget: b }) => {
                prop_assert_eq!((elements, b), (n, budget));
            }
            Err(e) => prop_assert!(false, "{e:?}"),
        }
        if budget < n * BATCH_ELEMENT_COST {
            prop_assert!(within(budget).is_err());
        }
    }
}
