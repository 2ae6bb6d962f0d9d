//! `bench codec`: decoding throughput of `NewlineCodec` against the usual
//! pipeline and against serde_json alone.

use std::time::{Duration, Instant};

use bytes::BytesMut;
use mcp_stack_jsonrpc::{DEFAULT_MAX_FRAME_LENGTH, Frame, NewlineCodec};
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio_util::codec::{Decoder, LinesCodec};

use super::{mb_per_s, median};
use crate::args::CodecArgs;
use crate::corpus;

/// Bytes handed to the decoder at a time, as a reader filling its buffer would.
const READ: usize = 64 * 1024;

pub(crate) fn run(args: CodecArgs) -> Result<(), String> {
    let CodecArgs { mb, iters, seed } = args;
    if !(mb > 0.0 && mb <= 4096.0) {
        return Err("--mb must be between 0 and 4096".into());
    }

    let (stream, expected) = corpus::mcp_stream(seed, (mb * 1024.0 * 1024.0) as usize);
    let lines: Vec<&[u8]> = stream
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();

    let check = |name: &str, n: Result<usize, String>| match n {
        Ok(n) if n == expected => Ok(()),
        Ok(n) => Err(format!("{name} decoded {n} messages, expected {expected}")),
        Err(e) => Err(format!("{name} failed: {e}")),
    };
    // Correctness first: every way must see every message.
    check("NewlineCodec", newline_codec(&stream))?;
    check("LinesCodec", lines_codec(&stream))?;
    check("floor (Value)", floor::<Value>(&lines))?;
    check("floor (IgnoredAny)", floor::<IgnoredAny>(&lines))?;

    // Interleaved, so that load from elsewhere on the machine hits every row alike.
    let mut ways: [(&str, Way<'_>); 4] = [
        (
            "mcp-stack-jsonrpc NewlineCodec",
            Box::new(|| newline_codec(&stream)),
        ),
        (
            "LinesCodec + from_str::<Value>",
            Box::new(|| lines_codec(&stream)),
        ),
        (
            "floor: from_slice::<Value>",
            Box::new(|| floor::<Value>(&lines)),
        ),
        (
            "floor: from_slice::<IgnoredAny>",
            Box::new(|| floor::<IgnoredAny>(&lines)),
        ),
    ];
    let times = time_interleaved(iters, &mut ways);
    let best = |i: usize| {
        let t = times
            .get(i)
            .and_then(|t| t.first())
            .copied()
            .unwrap_or_default();
        mb_per_s(stream.len(), t)
    };
    let (ours, pipeline, value_floor) = (best(0), best(1), best(2));

    println!(
        "bench codec: {:.2} MiB, {expected} messages (seed {seed}), fed in {} KiB reads; \
         best and median of {iters} interleaved runs after a warm-up",
        stream.len() as f64 / (1024.0 * 1024.0),
        READ / 1024,
    );
    println!();
    println!(
        "{:<34} {:>10} {:>12} {:>10} {:>13}",
        "decoder", "best MB/s", "median MB/s", "vs floor", "vs LinesCodec"
    );
    for (i, ((name, _), t)) in ways.iter().zip(&times).enumerate() {
        let r = best(i);
        println!(
            "{name:<34} {r:>10.1} {:>12.1} {:>9.2}x {:>12.2}x",
            mb_per_s(stream.len(), median(t)),
            r / value_floor,
            r / pipeline,
        );
    }
    println!();
    println!(
        "headline (best runs): NewlineCodec runs at {:.2}x the floor (from_slice::<Value>) and {:.2}x \
         the LinesCodec pipeline",
        ours / value_floor,
        ours / pipeline,
    );
    println!();
    println!("  NewlineCodec: finds lines in 64 KiB reads, checks each envelope, validates");
    println!("    all JSON, keeps params/result as raw text (the session parses them once).");
    println!("  LinesCodec + from_str::<Value>: the common pipeline, a String per line, then");
    println!("    a full serde_json::Value tree.");
    println!("  floor: from_slice::<Value>: the least work a generic reader does, parsing");
    println!("    pre-split lines into Value trees; splitting is not timed. \"vs floor\" is");
    println!("    against this line.");
    println!("  floor: from_slice::<IgnoredAny>: JSON syntax check only, nothing built, and");
    println!("    not even UTF-8 checked inside strings: a bound no full reader reaches.");
    Ok(())
}

type Way<'a> = Box<dyn FnMut() -> Result<usize, String> + 'a>;

/// Runs each way once as a warm-up, then `iters` rounds of each way once;
/// returns each way's durations, sorted.
fn time_interleaved(iters: usize, ways: &mut [(&str, Way<'_>)]) -> Vec<Vec<Duration>> {
    let mut times = vec![Vec::with_capacity(iters); ways.len()];
    for round in 0..=iters.max(1) {
        for ((_, way), t) in ways.iter_mut().zip(&mut times) {
            let start = Instant::now();
            std::hint::black_box(way().ok());
            if round > 0 {
                t.push(start.elapsed());
            }
        }
    }
    for t in &mut times {
        t.sort();
    }
    times
}

/// `NewlineCodec` over a buffer fed in reads; counts messages.
fn newline_codec(stream: &[u8]) -> Result<usize, String> {
    let mut codec = NewlineCodec::new();
    let mut buf = BytesMut::with_capacity(READ * 2);
    let mut count = 0;
    let mut on_frame = |frame: Frame| match frame {
        Frame::Message(m) => {
            std::hint::black_box(&m);
            count += 1;
            Ok(())
        }
        other => Err(format!("unexpected frame: {other:?}")),
    };
    for chunk in stream.chunks(READ) {
        buf.extend_from_slice(chunk);
        while let Some(frame) = codec.decode(&mut buf).map_err(|e| e.to_string())? {
            on_frame(frame)?;
        }
    }
    while let Some(frame) = codec.decode_eof(&mut buf).map_err(|e| e.to_string())? {
        on_frame(frame)?;
    }
    Ok(count)
}

/// `LinesCodec` over a buffer fed in reads, then `serde_json::Value` per line.
fn lines_codec(stream: &[u8]) -> Result<usize, String> {
    let mut codec = LinesCodec::new_with_max_length(DEFAULT_MAX_FRAME_LENGTH);
    let mut buf = BytesMut::with_capacity(READ * 2);
    let mut count = 0;
    let mut on_line = |line: String| {
        let v: Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
        std::hint::black_box(&v);
        count += 1;
        Ok::<_, String>(())
    };
    for chunk in stream.chunks(READ) {
        buf.extend_from_slice(chunk);
        while let Some(line) = codec.decode(&mut buf).map_err(|e| e.to_string())? {
            on_line(line)?;
        }
    }
    while let Some(line) = codec.decode_eof(&mut buf).map_err(|e| e.to_string())? {
        on_line(line)?;
    }
    Ok(count)
}

/// serde_json alone on lines split beforehand.
fn floor<T: serde::de::DeserializeOwned>(lines: &[&[u8]]) -> Result<usize, String> {
    for line in lines {
        let v: T = serde_json::from_slice(line).map_err(|e| e.to_string())?;
        std::hint::black_box(&v);
    }
    Ok(lines.len())
}
