//! A server that sends a batch bomb (`[0,0,…]`, 1 KiB under the 16 MiB
//! frame limit: about 8 million elements) costs this client a bounded
//! amount of memory, over stdio and over HTTP (SSE events on streamable
//! HTTP and legacy SSE, and a JSON answer), whether or not the negotiated
//! revision has batches; the session goes on, and the frame is counted once.
//!
//! Peak memory is measured, not guessed: this binary counts every byte it
//! allocates (a counting global allocator), so it holds this one test and
//! runs without the test harness. The testkit server is this same binary
//! re-executed (`--testkit …`), in a process of its own, so the bomb it
//! builds is not counted; the scripted HTTP peer of the JSON case runs
//! in-process with its body built before the measurement starts.
//!
//! Before batches were bounded, each of these cases peaked at about 1.6 GB
//! (each element a parsed item, then a `Received`, all alive at once).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::print_stdout,
    clippy::print_stderr
)]

use std::io::BufRead as _;
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_stack_session::{ProtocolPin, ProtocolVersion, Session, SessionConfig, SessionError};
use mcp_stack_testkit::DEFAULT_BATCH_BOMB_BYTES;
use mcp_stack_transport::Transport;
use mcp_stack_transport::http::{HttpOptions, SseTransport, StreamableHttpTransport};
use mcp_stack_transport::stdio::{StdioConfig, StdioTransport};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most a case may add to this process's peak allocation: the bomb is
/// 16 MiB, read into one buffer (which grows by doubling) and checked
/// once; nothing per element. Unbounded batches took about 1.6 GB.
const BOUND: usize = 96 * 1024 * 1024;

// ---------------------------------------------------------------------------
// Counting every allocation.

#[path = "common/heap.rs"]
mod heap;

#[global_allocator]
static HEAP: heap::Counting = heap::Counting;

use heap::{grown_since, mib, start_measuring};

// ---------------------------------------------------------------------------
// The cases.

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--testkit") {
        // The server: this binary again, in its own process.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        return runtime.block_on(mcp_stack_testkit::run(args.into_iter().skip(1)));
    }
    if args.iter().any(|a| a == "--list") {
        println!("batch_bomb_peak_memory: test");
        return ExitCode::SUCCESS;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(batch_bomb_peak_memory());
    println!("test batch_bomb_peak_memory ... ok");
    ExitCode::SUCCESS
}

/// How a case reaches its server.
#[derive(Debug, Clone, Copy)]
enum Via {
    Stdio,
    Streamable,
    LegacySse,
    /// The scripted peer: the bomb is the JSON answer to the call.
    Json,
}

async fn batch_bomb_peak_memory() {
    let bomb = Arc::<[u8]>::from(bomb_body(DEFAULT_BATCH_BOMB_BYTES));
    let json_peer = JsonPeer::start(bomb.clone()).await;
    let cases = [
        (Via::Stdio, ProtocolVersion::V2025_11_25),
        (Via::Stdio, ProtocolVersion::V2025_03_26),
        (Via::Streamable, ProtocolVersion::V2025_11_25),
        (Via::Streamable, ProtocolVersion::V2025_03_26),
        (Via::LegacySse, ProtocolVersion::V2024_11_05),
        (Via::Json, ProtocolVersion::V2025_11_25),
        (Via::Json, ProtocolVersion::V2025_03_26),
    ];
    let mut failures = Vec::new();
    for (via, revision) in cases {
        let peak = one_case(via, revision, &json_peer).await;
        if peak > BOUND {
            failures.push(format!("{via:?} {revision}: +{:.1} MiB", mib(peak)));
        }
    }
    assert!(
        failures.is_empty(),
        "peak memory over the {:.0} MiB bound: {failures:?}",
        mib(BOUND)
    );
    // A real 2025-03-26 batch still works over HTTP: the call's answer
    // comes in a JSON batch with a notification.
    let session = json_peer
        .connect(ProtocolVersion::V2025_03_26, "batch-answer")
        .await;
    let result = session
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(result.text(), "answered in a batch");
    assert_eq!(session.diagnostics().invalid_frames, 0);
    session.close().await;
}

/// Runs one case; returns how much the peak allocation grew over it.
async fn one_case(via: Via, revision: ProtocolVersion, json_peer: &JsonPeer) -> usize {
    let mut child = None;
    let session = match via {
        Via::Stdio => {
            let exe = std::env::current_exe().unwrap();
            let config = StdioConfig::new(exe.to_string_lossy())
                .args(["--testkit", "--misbehave", "batch-bomb"])
                .server_name("bomb");
            connect(StdioTransport::spawn(config).unwrap(), revision).await
        }
        Via::Streamable | Via::LegacySse => {
            let legacy = matches!(via, Via::LegacySse);
            let (process, url) = http_testkit(legacy);
            child = Some(process);
            if legacy {
                let t = SseTransport::connect(&url, HttpOptions::new())
                    .await
                    .unwrap();
                connect(t, revision).await
            } else {
                let t = StreamableHttpTransport::connect(&url, HttpOptions::new())
                    .await
                    .unwrap();
                connect(t, revision).await
            }
        }
        Via::Json => json_peer.connect(revision, "bomb").await,
    };
    // Warm up (pools, the tool catalog), then measure the first bomb (the
    // testkit sends one before each call's answer).
    session.list_tools().await.unwrap();
    let before = start_measuring();
    let started = Instant::now();
    let call = session.call_tool("echo", json!({"text": "after"})).await;
    match via {
        Via::Json => {
            // The bomb was the call's answer: the call fails at once, typed.
            let err = call.unwrap_err();
            assert!(matches!(err, SessionError::Transport(_)), "{err:?}");
            assert!(
                err.to_string().contains("not a usable JSON-RPC message"),
                "{err}"
            );
            assert!(started.elapsed() < Duration::from_secs(20), "{err}");
        }
        _ => assert_eq!(call.unwrap().text(), "after"),
    }
    // On HTTP the bomb may come on the GET stream, after the answer.
    let deadline = Instant::now() + Duration::from_secs(30);
    while session.diagnostics().invalid_frames == 0 {
        assert!(Instant::now() < deadline, "{via:?}: the bomb never arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let peak = grown_since(before);
    println!(
        "batch bomb of {:.1} MiB via {via:?}, revision {revision}: peak +{:.1} MiB (bound {:.0} \
         MiB) {}",
        mib(DEFAULT_BATCH_BOMB_BYTES),
        mib(peak),
        mib(BOUND),
        if peak <= BOUND { "ok" } else { "OVER" }
    );
    let diagnostics = session.diagnostics();
    assert_eq!(
        diagnostics.invalid_frames, 1,
        "{via:?} {revision}: once, not per element"
    );
    let described = diagnostics.last_invalid.join(" | ");
    let expected = if revision.has_batches() {
        "elements; at most 1024 are accepted"
    } else {
        "elements where batches are not accepted"
    };
    assert!(
        described.contains(expected),
        "{via:?} {revision}: {described}"
    );
    // The session goes on (through another bomb, from the testkit).
    let again = session.call_tool("echo", json!({"text": "again"})).await;
    assert_eq!(again.unwrap().text(), "again");
    let bombs = if matches!(via, Via::Json) { 1 } else { 2 };
    while session.diagnostics().invalid_frames < bombs {
        assert!(
            Instant::now() < deadline,
            "{via:?}: the second bomb never arrived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(session.diagnostics().invalid_frames, bombs);
    session.close().await;
    if let Some(mut child) = child {
        let _ = child.kill();
        let _ = child.wait();
    }
    peak
}

async fn connect(transport: impl Transport, revision: ProtocolVersion) -> Session {
    let config = SessionConfig::new()
        .server_name("bomb")
        .protocol(ProtocolPin::Version(revision))
        .request_timeout(Duration::from_secs(60));
    Session::connect(transport, config).await.unwrap()
}

/// Starts this binary as the testkit's HTTP server with the batch bomb;
/// the process and its URL.
fn http_testkit(legacy: bool) -> (std::process::Child, String) {
    let mut args = vec![
        "--testkit",
        "--http",
        "127.0.0.1:0",
        "--misbehave",
        "batch-bomb",
    ];
    if legacy {
        args.push("--legacy-sse");
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufReader::new(stderr).lines();
    let url = loop {
        let line = lines.next().expect("the testkit said nothing").unwrap();
        if let Some(url) = line.strip_prefix("mcp-testkit: listening on ") {
            break url.to_owned();
        }
    };
    // Keep draining its stderr, so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, url)
}

/// `[0,0,…,0]`, `len` bytes.
fn bomb_body(len: usize) -> Vec<u8> {
    let mut body = Vec::with_capacity(len);
    body.push(b'[');
    while body.len() + 2 < len {
        body.extend_from_slice(b"0,");
    }
    body.extend_from_slice(b"0]");
    body
}

// ---------------------------------------------------------------------------
// A scripted streamable HTTP peer that answers `tools/call` with JSON.

/// Answers `initialize`, takes notifications, refuses the GET stream, and
/// answers each `tools/call` with JSON: an echo for the warm-up, then its
/// `mode`'s answer (`bomb`: the bomb as the body; `batch-answer`: a batch
/// of a notification and the result).
struct JsonPeer {
    url: String,
    bomb: Arc<[u8]>,
    mode: Arc<Mutex<&'static str>>,
}

impl JsonPeer {
    async fn start(bomb: Arc<[u8]>) -> JsonPeer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let mode = Arc::new(Mutex::new("bomb"));
        let (body, served_mode) = (bomb.clone(), Arc::clone(&mode));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, body.clone(), Arc::clone(&served_mode)));
            }
        });
        JsonPeer { url, bomb, mode }
    }

    async fn connect(&self, revision: ProtocolVersion, mode: &'static str) -> Session {
        assert!(!self.bomb.is_empty());
        *self.mode.lock().unwrap() = mode;
        let t = StreamableHttpTransport::connect(&self.url, HttpOptions::new())
            .await
            .unwrap();
        connect(t, revision).await
    }
}

/// One connection: HTTP/1.1 requests, one after another.
async fn serve(mut stream: tokio::net::TcpStream, bomb: Arc<[u8]>, mode: Arc<Mutex<&'static str>>) {
    let mut calls = 0usize;
    let mut buf = Vec::new();
    loop {
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let method = head.split(' ').next().unwrap_or("").to_owned();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        while buf.len() < head_end + length {
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body: Value =
            serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null);
        buf.drain(..head_end + length);
        let answer = |result: Value| json!({"jsonrpc": "2.0", "id": body["id"], "result": result});
        let (status, json): (&str, Option<Arc<[u8]>>) = match (
            method.as_str(),
            body["method"].as_str(),
        ) {
            ("get", _) => ("405 Method Not Allowed", None),
            ("delete", _) => ("200 OK", None),
            (_, Some("initialize")) => {
                let result = json!({
                    "protocolVersion": body["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "json-peer", "version": "0"},
                });
                (
                    "200 OK",
                    Some(serde_json::to_vec(&answer(result)).unwrap().into()),
                )
            }
            (_, Some("tools/list")) => {
                let tool = json!({"name": "echo", "inputSchema": {"type": "object"}});
                let result = json!({ "tools": [tool] });
                (
                    "200 OK",
                    Some(serde_json::to_vec(&answer(result)).unwrap().into()),
                )
            }
            (_, Some("tools/call")) => {
                calls += 1;
                let echo = body["params"]["arguments"]["text"].clone();
                let echoed = json!({"content": [{"type": "text", "text": echo}]});
                let mode = *mode.lock().unwrap();
                let reply = match mode {
                    // Only the measured call gets the bomb.
                    "bomb" if echo != "after" => {
                        serde_json::to_vec(&answer(echoed)).unwrap().into()
                    }
                    "bomb" => bomb.clone(),
                    _ => {
                        let done =
                            json!({"content": [{"type": "text", "text": "answered in a batch"}]});
                        let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                            "params": {"level": "info", "data": format!("call {calls}")}});
                        serde_json::to_vec(&json!([note, answer(done)]))
                            .unwrap()
                            .into()
                    }
                };
                ("200 OK", Some(reply))
            }
            (_, Some(_)) if body.get("id").is_some() => (
                "200 OK",
                Some(serde_json::to_vec(&answer(json!({}))).unwrap().into()),
            ),
            _ => ("202 Accepted", None),
        };
        let mut out = format!("HTTP/1.1 {status}\r\n");
        match &json {
            Some(b) => out.push_str(&format!(
                "content-type: application/json\r\ncontent-length: {}\r\n\r\n",
                b.len()
            )),
            None => out.push_str("content-length: 0\r\n\r\n"),
        }
        if stream.write_all(out.as_bytes()).await.is_err() {
            return;
        }
        if let Some(b) = json
            && stream.write_all(&b).await.is_err()
        {
            return;
        }
    }
}
