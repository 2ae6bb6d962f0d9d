//! Fuzzes `NewlineCodec`'s decoder: any bytes, delivered in two reads split at
//! a position taken from the first byte, must decode without panicking, keep
//! the buffer within the maximum frame length plus one read, and drain to
//! nothing at end of stream. Every decoded message must re-encode as one line
//! that decodes to the same message.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use mcp_stack_jsonrpc::{Frame, Message, NewlineCodec};
use tokio_util::codec::{Decoder, Encoder};

/// Small, so that the oversized-line paths are reached often.
const MAX: usize = 64;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let at = usize::from(first) % (rest.len() + 1);
    let (a, b) = rest.split_at(at);

    let mut codec = NewlineCodec::with_max_frame_length(MAX);
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    for read in [a, b] {
        buf.extend_from_slice(read);
        while let Some(frame) = codec.decode(&mut buf).expect("decode never fails on bytes") {
            assert!(
                buf.len() <= MAX + 1 + read.len(),
                "buffer {} bytes",
                buf.len()
            );
            frames.push(frame);
        }
        assert!(
            buf.len() <= MAX + 1,
            "buffer {} bytes after a read",
            buf.len()
        );
    }
    while let Some(frame) = codec.decode_eof(&mut buf).expect("decode_eof never fails") {
        frames.push(frame);
    }
    assert!(buf.is_empty(), "{} bytes left at end of stream", buf.len());
    // At most one frame per line, plus the tail.
    assert!(frames.len() <= rest.iter().filter(|b| **b == b'\n').count() + 1);

    for frame in frames {
        if let Frame::Message(m) = frame {
            round_trip(&m);
        }
    }
});

fn round_trip(m: &Message) {
    let mut codec = NewlineCodec::new();
    let mut line = BytesMut::new();
    codec
        .encode(m, &mut line)
        .expect("a decoded message encodes");
    assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
    assert!(!line.contains(&b'\r'));
    let Some(Frame::Message(back)) = codec.decode(&mut line).expect("decodes") else {
        panic!("re-encoded message does not decode: {m:?}");
    };
    assert_eq!(back.id(), m.id());
    assert_eq!(back.method(), m.method());
    let text = |m: &Message| m.to_vec().expect("serializes");
    // Raw members may lose line breaks between tokens, nothing else.
    let flat = |mut v: Vec<u8>| {
        for b in &mut v {
            if matches!(*b, b'\n' | b'\r') {
                *b = b' ';
            }
        }
        v
    };
    assert_eq!(text(&back), flat(text(m)));
}
