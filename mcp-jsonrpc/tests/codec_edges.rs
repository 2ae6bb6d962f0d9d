//! The decoder's edges, one by one: ids, batches, line ends, noise, limits,
//! end of stream, and a `FramedRead` that goes on after bad lines.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use bytes::BytesMut;
use futures_util::StreamExt;
use mcp_stack_jsonrpc::{Frame, Id, Message, MessageError, NewlineCodec};
use tokio::io::AsyncWriteExt;
use tokio_util::codec::{Decoder, FramedRead};

/// Decodes a whole stream in one go, end of stream included.
fn decode_all(codec: &mut NewlineCodec, bytes: &[u8]) -> Vec<Frame> {
    let mut buf = BytesMut::from(bytes);
    let mut out = Vec::new();
    while let Some(f) = codec.decode(&mut buf).unwrap() {
        out.push(f);
    }
    while let Some(f) = codec.decode_eof(&mut buf).unwrap() {
        out.push(f);
    }
    out
}

fn frames(bytes: &[u8]) -> Vec<Frame> {
    decode_all(&mut NewlineCodec::new(), bytes)
}

fn one(bytes: &[u8]) -> Frame {
    let mut f = frames(bytes);
    assert_eq!(f.len(), 1, "{f:?}");
    f.remove(0)
}

fn message(bytes: &[u8]) -> Message {
    match one(bytes) {
        Frame::Message(m) => m,
        other => panic!("not a message: {other:?}"),
    }
}

fn malformed(bytes: &[u8]) -> MessageError {
    match one(bytes) {
        Frame::Malformed(m) => m.reason,
        other => panic!("not malformed: {other:?}"),
    }
}

fn text(m: &Message) -> String {
    String::from_utf8(m.to_vec().unwrap()).unwrap()
}

// ---------------------------------------------------------------------------
// Ids.

#[test]
fn integer_ids_cover_i64_and_u64() {
    for (wire, expected) in [
        ("9223372036854775808", i128::from(i64::MAX) + 1), // 2^63
        ("18446744073709551615", i128::from(u64::MAX)),
        ("9223372036854775807", i128::from(i64::MAX)),
        ("-9223372036854775808", i128::from(i64::MIN)),
        ("-1", -1),
        ("0", 0),
    ] {
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{wire},\"method\":\"m\"}}\n");
        let m = message(line.as_bytes());
        assert_eq!(m.id().and_then(Id::as_number), Some(expected), "{wire}");
        // Written back exactly as read: no float, no wrap-around.
        assert!(
            text(&m).contains(&format!("\"id\":{wire},")),
            "{}",
            text(&m)
        );
    }
}

#[test]
fn string_ids_keep_their_text() {
    let m = message(b"{\"jsonrpc\":\"2.0\",\"id\":\"a\\nb \\\"c\\\" \xC3\xA9\",\"result\":1}\n");
    assert_eq!(m.id().and_then(Id::as_str), Some("a\nb \"c\" \u{e9}"));
    let m = message(b"{\"jsonrpc\":\"2.0\",\"id\":\"\",\"result\":1}\n");
    assert_eq!(m.id(), Some(&Id::from("")));
}

#[test]
fn one_and_string_one_are_different_ids() {
    let a = message(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":0}\n");
    let b = message(b"{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":0}\n");
    assert_eq!(a.id(), Some(&Id::from(1)));
    assert_eq!(b.id(), Some(&Id::from("1")));
    assert_ne!(a.id(), b.id());
    assert_eq!(text(&b), r#"{"jsonrpc":"2.0","id":"1","result":0}"#);
}

#[test]
fn null_ids() {
    assert_eq!(
        malformed(b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}\n"),
        MessageError::NullRequestId
    );
    assert_eq!(
        malformed(b"{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}\n"),
        MessageError::ResultWithoutId
    );
    // An error about a request the peer could not read has a null id.
    let m = message(
        b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\"}}\n",
    );
    let Message::Error(e) = m else { panic!() };
    assert_eq!(e.id, None);
}

#[test]
fn float_and_other_ids_are_refused() {
    for id in [
        "1.0",
        "1e3",
        "1.5",
        "-0.5",
        "18446744073709551616",
        "true",
        "[1]",
        "{}",
    ] {
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"m\"}}\n");
        assert!(
            matches!(malformed(line.as_bytes()), MessageError::InvalidId(_)),
            "{id} accepted"
        );
    }
}

// ---------------------------------------------------------------------------
// Error responses and batches.

#[test]
fn error_response_without_id() {
    let m = message(
        b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":\"bad\",\"data\":[1]}}\n",
    );
    let Message::Error(e) = &m else { panic!() };
    assert_eq!(e.id, None);
    assert_eq!(e.error.code, -32600);
    assert_eq!(e.error.data.as_ref().map(|d| d.get()), Some("[1]"));
    assert_eq!(
        text(&m),
        r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"bad","data":[1]}}"#
    );
}

#[test]
fn batch_with_valid_and_invalid_elements() {
    let line = br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"1.0","method":"x"},null,{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":null,"method":"r"}]"#;
    let mut stream = line.to_vec();
    stream.push(b'\n');
    let Frame::Batch(items) = one(&stream) else {
        panic!()
    };
    assert_eq!(items.len(), 5);
    assert!(matches!(items[0], Ok(Message::Response(_))));
    assert!(matches!(items[1], Err(MessageError::WrongVersion(_))));
    assert_eq!(
        items[2].as_ref().unwrap_err(),
        &MessageError::NotAnObject("null")
    );
    assert!(matches!(items[3], Ok(Message::Notification(_))));
    assert_eq!(items[4].as_ref().unwrap_err(), &MessageError::NullRequestId);
}

#[test]
fn empty_batch_is_malformed() {
    assert_eq!(malformed(b"[]\n"), MessageError::EmptyBatch);
    assert_eq!(malformed(b" [ ] \n"), MessageError::EmptyBatch);
}

/// `[0,0,…]` with `n` elements, and a line end.
fn zeros(n: usize) -> Vec<u8> {
    let mut line = b"[0".to_vec();
    for _ in 1..n {
        line.extend_from_slice(b",0");
    }
    line.extend_from_slice(b"]\n");
    line
}

#[test]
fn a_refused_batch_is_one_malformed_frame_that_counts_its_elements() {
    let mut codec = NewlineCodec::new().with_max_batch_elements(0);
    let mut stream = zeros(5000);
    stream.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"after\"}\n");
    let f = decode_all(&mut codec, &stream);
    let [Frame::Malformed(bad), Frame::Message(after)] = &f[..] else {
        panic!("{f:?}")
    };
    assert_eq!(bad.reason, MessageError::BatchRefused { elements: 5000 });
    assert_eq!(bad.len, zeros(5000).len() - 1);
    assert!(bad.excerpt.starts_with("[0,0,0"), "{}", bad.excerpt);
    assert_eq!(after.method(), Some("after"));
    // A refused empty batch is still the empty batch.
    assert_eq!(
        decode_all(&mut codec, b"[]\n")
            .into_iter()
            .map(|f| match f {
                Frame::Malformed(m) => m.reason,
                other => panic!("{other:?}"),
            })
            .collect::<Vec<_>>(),
        [MessageError::EmptyBatch]
    );
}

#[test]
fn a_batch_over_the_element_bound_is_refused_whole() {
    let mut codec = NewlineCodec::new().with_max_batch_elements(3);
    let note = r#"{"jsonrpc":"2.0","method":"n"}"#;
    let batch = |n: usize| format!("[{}]\n", vec![note; n].join(","));
    let f = decode_all(&mut codec, batch(3).as_bytes());
    assert!(
        matches!(&f[..], [Frame::Batch(items)] if items.len() == 3),
        "{f:?}"
    );
    let f = decode_all(&mut codec, batch(4).as_bytes());
    let [Frame::Malformed(bad)] = &f[..] else {
        panic!("{f:?}")
    };
    assert_eq!(
        bad.reason,
        MessageError::BatchTooLong {
            elements: 4,
            limit: 3
        }
    );
    assert_eq!(
        bad.reason.to_string(),
        "a batch of 4 elements; at most 3 are accepted"
    );
}

#[test]
fn every_batch_element_is_charged_against_the_frame_limit() {
    use mcp_stack_jsonrpc::BATCH_ELEMENT_COST;
    // 40 elements of 2 bytes: 81 bytes of line, 40 × 256 once parsed.
    let line = zeros(40);
    let limit = 40 * BATCH_ELEMENT_COST;
    let f = decode_all(&mut NewlineCodec::with_max_frame_length(limit), &line);
    assert!(
        matches!(&f[..], [Frame::Batch(items)] if items.len() == 40),
        "{f:?}"
    );
    let f = decode_all(&mut NewlineCodec::with_max_frame_length(limit - 1), &line);
    let [Frame::Malformed(bad)] = &f[..] else {
        panic!("{f:?}")
    };
    assert_eq!(
        bad.reason,
        MessageError::BatchOverBudget {
            elements: 40,
            budget: limit - 1
        }
    );
    // What an element keeps counts too: one 1000-byte result.
    let big = format!(
        "[{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"{}\"}}]\n",
        "x".repeat(1000)
    );
    let f = decode_all(
        &mut NewlineCodec::with_max_frame_length(1100),
        big.as_bytes(),
    );
    assert!(
        matches!(&f[..], [Frame::Malformed(m)] if matches!(m.reason, MessageError::BatchOverBudget { elements: 1, .. })),
        "{f:?}"
    );
}

#[test]
fn a_batch_switch_is_read_when_a_batch_arrives() {
    use mcp_stack_jsonrpc::BatchSwitch;
    let switch = BatchSwitch::refused();
    let mut codec = NewlineCodec::new().with_batch_switch(switch.clone());
    let line = br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]
"#;
    let f = decode_all(&mut codec, line);
    assert!(
        matches!(&f[..], [Frame::Malformed(m)] if m.reason == MessageError::BatchRefused { elements: 2 }),
        "{f:?}"
    );
    switch.set(8);
    assert_eq!(codec.batches().max_elements(), 8);
    let f = decode_all(&mut codec, line);
    assert!(
        matches!(&f[..], [Frame::Batch(items)] if items.len() == 2),
        "{f:?}"
    );
    switch.set(0);
    let f = decode_all(&mut codec, line);
    assert!(matches!(&f[..], [Frame::Malformed(_)]), "{f:?}");
}

// ---------------------------------------------------------------------------
// Line ends, BOM, blank lines.

#[test]
fn crlf_line_ends() {
    let f = frames(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\r\n{\"jsonrpc\":\"2.0\",\"method\":\"b\"}\r\n",
    );
    let methods: Vec<_> = f
        .iter()
        .map(|f| match f {
            Frame::Message(m) => m.method().unwrap().to_owned(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(methods, ["a", "b"]);
}

#[test]
fn bom_at_stream_start() {
    let m = message(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n");
    assert_eq!(m.method(), Some("a"));
    // Also when the BOM arrives split across reads.
    let mut codec = NewlineCodec::new();
    let mut buf = BytesMut::new();
    for chunk in [
        &b"\xEF"[..],
        b"\xBB",
        b"\xBF{\"jsonrpc\":\"2.0\",",
        b"\"method\":\"a\"}\n",
    ] {
        buf.extend_from_slice(chunk);
        if let Some(Frame::Message(m)) = codec.decode(&mut buf).unwrap() {
            assert_eq!(m.method(), Some("a"));
            return;
        }
    }
    panic!("no message");
}

#[test]
fn blank_and_whitespace_only_lines_are_skipped() {
    let f = frames(b"\n\r\n   \n\t\t\r\n \r \n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n\n");
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(matches!(&f[0], Frame::Message(m) if m.method() == Some("a")));
    assert!(frames(b"\n\n\n").is_empty());
}

// ---------------------------------------------------------------------------
// Noise.

#[test]
fn invalid_utf8_line_then_valid_line() {
    let f = frames(b"\xFF\xFE{\"x\":\xC3}\n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n");
    assert_eq!(f.len(), 2, "{f:?}");
    let Frame::Malformed(bad) = &f[0] else {
        panic!("{f:?}")
    };
    assert_eq!(bad.reason, MessageError::NotUtf8);
    assert_eq!(bad.len, 9);
    assert!(matches!(&f[1], Frame::Message(m) if m.method() == Some("a")));
}

#[test]
fn invalid_utf8_inside_a_valid_looking_message_is_not_utf8() {
    // In a member the parser would skip, and in one it keeps.
    for line in [
        &b"{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"extra\":\"\xFF\"}\n"[..],
        b"{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":{\"k\":\"\xFF\"}}\n",
        b"{\"jsonrpc\":\"2.0\",\"method\":\"\xFF\"}\n",
    ] {
        assert_eq!(
            malformed(line),
            MessageError::NotUtf8,
            "{}",
            String::from_utf8_lossy(line)
        );
    }
}

#[test]
fn log_line_then_valid_line() {
    let f =
        frames(b"INFO server listening on stdio\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
    assert_eq!(f.len(), 2, "{f:?}");
    let Frame::Malformed(bad) = &f[0] else {
        panic!("{f:?}")
    };
    assert!(matches!(bad.reason, MessageError::NotJson(_)));
    assert_eq!(bad.excerpt, "INFO server listening on stdio");
    assert_eq!(bad.len, 30);
    assert!(matches!(&f[1], Frame::Message(Message::Response(_))));
}

#[test]
fn excerpt_of_a_hostile_line_is_short_and_escaped() {
    let mut line = b"\x1b[31mred".to_vec();
    line.extend(std::iter::repeat_n(b'x', 10_000));
    line.push(b'\n');
    let Frame::Malformed(bad) = one(&line) else {
        panic!()
    };
    assert!(bad.excerpt.starts_with("\\u{1b}[31mred"), "{}", bad.excerpt);
    assert!(bad.excerpt.ends_with('…'));
    assert!(bad.excerpt.chars().count() <= 100);
    assert_eq!(bad.len, 10_008);
}

// ---------------------------------------------------------------------------
// End of stream.

#[test]
fn truncated_tail_at_eof() {
    let mut codec = NewlineCodec::new();
    let mut buf =
        BytesMut::from(&b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n{\"jsonrpc\":\"2.0\",\"me"[..]);
    assert!(matches!(
        codec.decode(&mut buf).unwrap(),
        Some(Frame::Message(_))
    ));
    assert!(codec.decode(&mut buf).unwrap().is_none());
    let Some(Frame::Truncated(t)) = codec.decode_eof(&mut buf).unwrap() else {
        panic!()
    };
    assert_eq!(t.len, 20);
    assert_eq!(t.excerpt, "{\"jsonrpc\":\"2.0\",\"me");
    assert!(buf.is_empty());
    assert!(codec.decode_eof(&mut buf).unwrap().is_none());
}

#[test]
fn complete_message_without_newline_at_eof_is_truncated() {
    // The newline is the frame end: without it the peer was cut off.
    let f = frames(b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}");
    assert!(
        matches!(&f[..], [Frame::Truncated(t)] if t.len == 30),
        "{f:?}"
    );
}

#[test]
fn whitespace_tail_at_eof_is_nothing() {
    assert!(frames(b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n  \r").len() == 1);
    assert!(frames(b"\xEF\xBB\xBF").is_empty());
}

// ---------------------------------------------------------------------------
// Limits.

#[test]
fn oversized_line_in_many_chunks_is_reported_once() {
    let mut codec = NewlineCodec::with_max_frame_length(100);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for _ in 0..50 {
        buf.extend_from_slice(&[b'x'; 37]);
        while let Some(f) = codec.decode(&mut buf).unwrap() {
            out.push(f);
        }
        assert!(buf.len() <= 101 + 37);
    }
    buf.extend_from_slice(b"yyy\n{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n");
    while let Some(f) = codec.decode_eof(&mut buf).unwrap() {
        out.push(f);
    }
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(matches!(&out[0], Frame::Oversized(o) if o.limit == 100));
    assert!(matches!(&out[1], Frame::Message(m) if m.method() == Some("a")));
}

#[test]
fn oversized_tail_at_eof_is_reported_once() {
    let mut stream = vec![b'x'; 500];
    stream.splice(
        0..0,
        b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n".iter().copied(),
    );
    let f = decode_all(&mut NewlineCodec::with_max_frame_length(100), &stream);
    assert_eq!(f.len(), 2, "{f:?}");
    assert!(matches!(f[1], Frame::Oversized(_)));
}

#[test]
fn line_of_exactly_the_maximum_is_accepted() {
    let line = br#"{"jsonrpc":"2.0","method":"abc"}"#;
    let max = line.len();
    for end in [&b"\n"[..], b"\r\n"] {
        let mut stream = line.to_vec();
        stream.extend_from_slice(end);
        // Whole, and byte by byte (the `\r` may wait alone for its `\n`).
        let f = decode_all(&mut NewlineCodec::with_max_frame_length(max), &stream);
        assert!(matches!(&f[..], [Frame::Message(_)]), "{f:?}");
        let mut codec = NewlineCodec::with_max_frame_length(max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for b in &stream {
            buf.extend_from_slice(&[*b]);
            while let Some(f) = codec.decode(&mut buf).unwrap() {
                out.push(f);
            }
        }
        assert!(matches!(&out[..], [Frame::Message(_)]), "{out:?}");
    }
    // One byte more is too long.
    let mut stream = br#"{"jsonrpc":"2.0","method":"abcd"}"#.to_vec();
    stream.push(b'\n');
    let f = decode_all(&mut NewlineCodec::with_max_frame_length(max), &stream);
    assert!(matches!(&f[..], [Frame::Oversized(_)]), "{f:?}");
}

// ---------------------------------------------------------------------------
// A stream that keeps going.

fn summary(frame: &Frame) -> String {
    match frame {
        Frame::Message(m) => format!("message {}", m.method().unwrap_or("-")),
        Frame::Batch(items) => format!("batch {}", items.len()),
        Frame::Malformed(_) => "malformed".into(),
        Frame::Oversized(_) => "oversized".into(),
        Frame::Truncated(_) => "truncated".into(),
        other => format!("{other:?}"),
    }
}

const NOISY: &[u8] = b"starting up\n\
{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n\
\xFF\xFF\n\
{\"jsonrpc\":\"2.0\"}\n\
[]\n\
xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n\
[{\"jsonrpc\":\"2.0\",\"method\":\"b\"}]\n\
{\"jsonrpc\":\"2.0\",\"method\":\"c\"}\n\
{\"jsonrpc\"";

const EXPECTED: [&str; 9] = [
    "malformed",
    "message a",
    "malformed",
    "malformed",
    "malformed",
    "oversized",
    // One element is charged BATCH_ELEMENT_COST, over a 64-byte frame's budget.
    "malformed",
    "message c",
    "truncated",
];

#[tokio::test]
async fn framed_read_goes_on_after_bad_lines() {
    let reader = FramedRead::new(NOISY, NewlineCodec::with_max_frame_length(64));
    let out: Vec<String> = reader.map(|f| summary(&f.unwrap())).collect().await;
    assert_eq!(out, EXPECTED);
}

#[tokio::test]
async fn framed_read_over_a_pipe_in_small_writes() {
    let (mut tx, rx) = tokio::io::duplex(16);
    let writer = tokio::spawn(async move {
        for chunk in NOISY.chunks(7) {
            tx.write_all(chunk).await.unwrap();
        }
        // Dropping `tx` ends the stream.
    });
    let mut reader = FramedRead::new(rx, NewlineCodec::with_max_frame_length(64));
    let mut out = Vec::new();
    while let Some(frame) = reader.next().await {
        out.push(summary(&frame.unwrap()));
    }
    writer.await.unwrap();
    assert_eq!(out, EXPECTED);
    assert!(reader.read_buffer().is_empty());
}
