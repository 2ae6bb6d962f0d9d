//! Fuzzes the batch path: any bytes as one frame, parsed with batch bounds
//! taken from the first two bytes (refused, or 1 to 16 elements, within a
//! budget of 0 to 64 KiB), then as a stream through `NewlineCodec` whose
//! `BatchSwitch` is flipped between lines. No panic; the setting is asked
//! for only when the frame is an array; a batch is never longer than its
//! bound nor costs more than its budget, and an accepted one has the
//! elements an unbounded parse finds; a refused or over-bound batch is one
//! error that counts its elements; the codec never hands out a batch longer
//! than the switch allowed when the line was read.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use mcp_stack_jsonrpc::{
    BATCH_ELEMENT_COST, BatchSwitch, Batches, Frame, MessageError, NewlineCodec, Payload,
    parse_payload_with,
};
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    let Some((&[a, b], frame)) = data.split_first_chunk::<2>() else {
        return;
    };
    let max = usize::from(a % 17);
    let budget = usize::from(b) * 256;
    let batches = Batches::up_to(max).within(budget);

    let mut asked = false;
    let parsed = parse_payload_with(frame, || {
        asked = true;
        batches
    });
    let is_array = std::str::from_utf8(frame)
        .ok()
        .and_then(|t| t.trim_start_matches([' ', '\t', '\n', '\r']).bytes().next())
        == Some(b'[');
    assert!(!asked || is_array, "asked for a frame that is no array");
    match &parsed {
        Ok(Payload::Single(_)) => assert!(!asked),
        Ok(Payload::Batch(items)) => {
            assert!(asked);
            assert!(!items.is_empty() && items.len() <= max, "{} > {max}", items.len());
            assert!(items.len() * BATCH_ELEMENT_COST <= budget);
            let unbounded = parse_payload_with(frame, || {
                Batches::up_to(usize::MAX).within(usize::MAX)
            });
            let Ok(Payload::Batch(all)) = unbounded else {
                panic!("accepted within bounds, refused without: {unbounded:?}");
            };
            assert_eq!(all.len(), items.len());
        }
        Err(MessageError::BatchRefused { elements }) => {
            assert!(asked && max == 0 && *elements > 0);
        }
        Err(MessageError::BatchTooLong { elements, limit }) => {
            assert!(asked && *limit == max && elements > limit);
        }
        Err(MessageError::BatchOverBudget { elements, budget: b }) => {
            assert!(asked && *b == budget && *elements > 0);
        }
        _ => {}
    }

    // The same bytes as a stream of lines, the switch flipped between them.
    let switch = BatchSwitch::new(max);
    let mut codec = NewlineCodec::with_max_frame_length(4096).with_batch_switch(switch.clone());
    let mut buf = BytesMut::from(frame);
    let mut flips = u32::from(a) << 8 | u32::from(b);
    loop {
        let bound = switch.max_elements();
        let Some(decoded) = codec.decode(&mut buf).expect("decode never fails on bytes") else {
            break;
        };
        if let Frame::Batch(items) = &decoded {
            assert!(!items.is_empty() && items.len() <= bound, "{} > {bound}", items.len());
        }
        switch.set(if flips & 1 == 1 { max } else { 0 });
        flips = flips.rotate_right(1);
    }
    let bound = switch.max_elements();
    while let Some(decoded) = codec.decode_eof(&mut buf).expect("decode_eof never fails") {
        if let Frame::Batch(items) = &decoded {
            assert!(items.len() <= bound);
        }
    }
    assert!(buf.is_empty());
});
