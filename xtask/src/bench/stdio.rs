//! `bench stdio`: `tools/call` round trips to a child-process server, with
//! this stack (`mcp-stack-session` over `mcp-stack-transport`'s stdio transport), with the
//! `rmcp` SDK's client, and with a raw floor (blocking pipe I/O and one
//! `serde_json` parse per response), sequentially and with 8 calls in flight.
//!
//! Every client talks to its own copy of the same server program, spawned
//! once and warmed up; the clients then take turns, round after round, so
//! that noise from elsewhere on the machine hits them alike.
//!
//! Two servers: `mcp-testkit` (this workspace's test server, a tokio
//! current-thread server that spawns a task per call) and `fast`, this very
//! binary in a hidden mode (`bench stdio --serve=echo`): blocking reads, a
//! `Value` parse and a buffered write per message, so that the server costs
//! as little as a server can and the clients' differences show.

use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_stack_session::ProtocolVersion;
use mcp_stack_transport::stdio::{StdioConfig, StdioTransport};
use serde_json::{Value, json};

use super::clients::{Ours, Rmcp, TEXT};
use super::rounds::{
    Mode, Results, Row, RunConfig, Timed, modes, noise_note, print_rows, ratio_in, run_rounds,
    verdict,
};
use crate::args::StdioArgs;

/// Calls in flight in the concurrent mode the targets name.
pub(super) const IN_FLIGHT: usize = 8;

pub(crate) fn run(args: StdioArgs) -> Result<(), String> {
    if let Some(serve) = args.serve {
        return match serve.as_str() {
            "echo" => serve_echo().map_err(|e| format!("echo server: {e}")),
            other => Err(format!("--serve: unknown server `{other}` (known: echo)")),
        };
    }
    if args.instructions {
        return super::instructions::stdio(&args);
    }
    let StdioArgs {
        n,
        n_inflight,
        rounds,
        server,
        runtime: flavor,
        only,
        in_flight,
        sequential_only,
        testkit,
        ..
    } = args;
    let n_inflight = n_inflight.unwrap_or(n.saturating_mul(4));
    let only = only.unwrap_or_default();
    let clients = match only.as_str() {
        "" => vec![true; 5],
        "ours" => vec![true, false, false, false, false],
        "rmcp" => vec![false, true, false, false, false],
        "floor" => vec![false, false, true, false, false],
        "ts" => vec![false, false, false, true, false],
        "tokio-floor" => vec![false, false, false, false, true],
        other => {
            return Err(format!(
                "--only: unknown client `{other}` (known: ours, rmcp, floor, ts, tokio-floor)"
            ));
        }
    };
    let modes = modes(&in_flight, sequential_only)?;
    let run = RunConfig {
        n,
        n_inflight,
        rounds,
        clients,
        modes,
    };
    if n == 0 || n_inflight < run.widest() || rounds == 0 {
        return Err(
            "--n and --rounds must be at least 1, --n-inflight at least the widest --in-flight"
                .into(),
        );
    }

    let servers = servers(&server, testkit)?;
    let (runtime, runtime_name) = client_runtime(&flavor)?;
    let ts = if run.clients.get(3).copied().unwrap_or(false) {
        match super::ts::find() {
            Ok(found) => Some(found),
            Err(why) => {
                println!("TS SDK: {why}");
                None
            }
        }
    } else {
        None
    };

    let widths: Vec<String> = run
        .modes
        .iter()
        .filter_map(|m| match m {
            Mode::InFlight(k) => Some(k.to_string()),
            Mode::Sequential => None,
        })
        .collect();
    let in_flight_text = match widths.as_slice() {
        [] => String::new(),
        w => format!(" and {n_inflight} with {} in flight", w.join(", ")),
    };
    println!(
        "bench stdio: tools/call `echo` round trips over stdio; {n} sequential calls{in_flight_text} \
         per run; best and median of {rounds} interleaved rounds after a warm-up; clients on a \
         {runtime_name} runtime"
    );
    let mut ts_version = None;
    for (name, program, args) in &servers {
        let (results, version) = bench_server(&runtime, program, args, &run, ts.as_ref())?;
        ts_version = ts_version.or(version);
        print_table(name, program, &results, &CLIENTS, &run.modes);
    }
    println!();
    println!(
        "  ours: mcp_stack_session::Session::call_tool over mcp_stack_transport::stdio::StdioTransport"
    );
    println!("    (the tool's input schema is checked on every call, as in real use).");
    println!("  rmcp: rmcp::Peer::call_tool over rmcp::transport::TokioChildProcess.");
    println!("  floor: std::process pipes, one write_all per request, BufReader::read_line and");
    println!("    serde_json::from_str::<Value> per response, nothing else. With K in flight it");
    println!("    pipelines: writes K requests at once, then reads the K responses; a call's");
    println!("    latency runs from its batch's write to its response.");
    println!("  tokio-floor: the floor's protocol over tokio::process pipes on the runtime ours");
    println!("    runs on, one task: what async I/O itself costs (readiness, epoll), with no");
    println!("    reader task, no id table, no schema, no typed parse.");
    match (&ts, ts_version) {
        (Some(_), Some(v)) => {
            println!("  ts: the TypeScript SDK's Client.callTool over StdioClientTransport ({v}),");
            println!("    in node (xtask/bench/ts_client.mjs); its own clock times each run.");
        }
        (Some(_), None) | (None, _) if run.clients.get(3).copied().unwrap_or(false) => {
            println!("  ts: not measured (see above).");
        }
        _ => {}
    }
    println!("  K in flight: K tasks share the connection, each calling in a loop.");
    Ok(())
}

/// A server to start: its name, the program and its arguments.
pub(super) type ServerProgram = (&'static str, String, Vec<String>);

/// The servers of `--server`: a name, the program and its arguments.
pub(super) fn servers(server: &str, testkit: Option<String>) -> Result<Vec<ServerProgram>, String> {
    let mut servers = Vec::new();
    if matches!(server, "testkit" | "both") {
        let program = match testkit {
            Some(path) => path,
            None => build_testkit()?,
        };
        servers.push(("mcp-testkit", program, Vec::new()));
    }
    if matches!(server, "fast" | "both") {
        servers.push(fast_server()?);
    }
    if servers.is_empty() {
        return Err(format!(
            "--server: unknown `{server}` (known: testkit, fast, both)"
        ));
    }
    Ok(servers)
}

/// This very program as the fast echo server.
pub(super) fn fast_server() -> Result<ServerProgram, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let args = ["bench", "stdio", "--serve=echo"]
        .map(String::from)
        .to_vec();
    Ok(("fast (blocking echo)", me.display().to_string(), args))
}

/// The clients' tokio runtime (`--runtime`) and how to name it.
pub(super) fn client_runtime(flavor: &str) -> Result<(tokio::runtime::Runtime, String), String> {
    let runtime = match flavor {
        "multi" => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build(),
        "current" => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build(),
        other => {
            return Err(format!(
                "--runtime: unknown `{other}` (known: multi, current)"
            ));
        }
    }
    .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
    let name = match flavor {
        "multi" => format!(
            "tokio multi-thread ({} workers)",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        ),
        _ => "tokio current-thread".to_owned(),
    };
    Ok((runtime, name))
}

const CLIENTS: [&str; 5] = [
    "ours (mcp-stack-session)",
    "rmcp 3",
    "floor (raw pipes)",
    "ts (TS SDK, node)",
    "tokio-floor (async)",
];

fn bench_server(
    rt: &tokio::runtime::Runtime,
    program: &str,
    args: &[String],
    run: &RunConfig,
    ts: Option<&super::ts::Found>,
) -> Result<(Results, Option<String>), String> {
    let on = |c: usize| run.clients.get(c).copied().unwrap_or(false);
    let ours = match on(0) {
        true => Some(rt.block_on(connect_ours(program, args))?),
        false => None,
    };
    let rmcp = match on(1) {
        true => Some(rt.block_on(connect_rmcp(program, args))?),
        false => None,
    };
    let mut floor = match on(2) {
        true => Some(Floor::spawn(program, args)?),
        false => None,
    };
    let mut tokio_floor = match on(4) {
        true => Some(rt.block_on(TokioFloor::spawn(program, args))?),
        false => None,
    };
    // The TS SDK never fails the bench: without it, its row is left out.
    let mut ts_client = match ts {
        Some(found) if on(3) => match super::ts::TsClient::spawn(found, program, args) {
            Ok(client) => Some(client),
            Err(e) => {
                println!("TS SDK: cannot run its client, row left out: {e}");
                None
            }
        },
        _ => None,
    };
    let version = ts_client.as_ref().map(|c| c.version.clone());
    let mut one_run = |c: usize, mode: Mode, calls: usize| -> Result<Timed, String> {
        if c == 3 {
            return match ts_client.as_mut() {
                Some(ts) => ts.run(mode.width(), calls),
                None => Ok(Timed::default()),
            };
        }
        if c == 4 {
            // On a worker, as the other clients' callers run.
            let Some(f) = tokio_floor.take() else {
                return Ok(Timed::default());
            };
            let (f, latencies) = rt
                .block_on(rt.spawn(f.run(mode.width(), calls)))
                .map_err(|e| format!("tokio-floor: the task failed: {e}"))?;
            tokio_floor = Some(f);
            return latencies.map(Timed::from);
        }
        match (c, mode, &ours, &rmcp, &mut floor) {
            (0, Mode::Sequential, Some(ours), _, _) => rt.block_on(ours.sequential(calls)),
            (0, Mode::InFlight(k), Some(ours), _, _) => rt.block_on(ours.in_flight(rt, k, calls)),
            (1, Mode::Sequential, _, Some(rmcp), _) => rt.block_on(rmcp.sequential(calls)),
            (1, Mode::InFlight(k), _, Some(rmcp), _) => rt.block_on(rmcp.in_flight(rt, k, calls)),
            (2, mode, _, _, Some(floor)) => floor.run(mode.width(), calls),
            _ => Ok(Vec::new()),
        }
        .map(Timed::from)
    };

    let results = run_rounds(run, &mut one_run)?;
    if let Some(ours) = ours {
        rt.block_on(ours.close());
    }
    if let Some(rmcp) = rmcp {
        rt.block_on(rmcp.close());
    }
    if let Some(floor) = floor {
        floor.close();
    }
    if let Some(f) = tokio_floor {
        rt.block_on(f.close());
    }
    if let Some(ts) = ts_client {
        ts.close();
    }
    Ok((results, version))
}

fn print_table(server: &str, program: &str, results: &Results, labels: &[&str], modes: &[Mode]) {
    println!();
    println!("server: {server} ({program})");
    let ratios = print_rows(results, labels, modes, "vs rmcp");
    let eight = Mode::InFlight(IN_FLIGHT);
    println!(
        "targets (best runs): sequential >= 1.5x rmcp: {}; 8 in flight >= 1.3x rmcp: {}; \
         sequential >= 0.85x floor: {}; 8 in flight >= 0.9x the pipelined floor: {}",
        verdict(ratio_in(&ratios, Mode::Sequential, 0), 1.5),
        verdict(ratio_in(&ratios, eight, 0), 1.3),
        verdict(ratio_in(&ratios, Mode::Sequential, 1), 0.85),
        verdict(ratio_in(&ratios, eight, 1), 0.9),
    );
    noise_note(results, labels, modes);
    print_cpu(results, labels, modes);
}

/// This process's CPU time per call of each client that runs in it (the
/// server is another process): steadier than wall time on a busy machine,
/// and it shows whether a gap is work in the client (user) or in the
/// kernel (system: syscalls, wakeups).
fn print_cpu(results: &Results, labels: &[&str], modes: &[Mode]) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mut lines = Vec::new();
    for (m, &mode) in modes.iter().enumerate() {
        let cpu = |c: usize| {
            results
                .get(c)
                .and_then(|r| r.get(m))
                .and_then(Row::median_cpu)
        };
        let shown: Vec<String> = labels
            .iter()
            .enumerate()
            .filter_map(|(c, label)| {
                let t = cpu(c)?;
                let name = label.split(' ').next().unwrap_or(label);
                Some(format!(
                    "{name} {:.1} µs ({:.1} + {:.1})",
                    us(t.total()),
                    us(t.user),
                    us(t.system)
                ))
            })
            .collect();
        if shown.is_empty() {
            continue;
        }
        let against = |c: usize, name: &str| match (cpu(0), cpu(c)) {
            (Some(ours), Some(floor)) if !floor.total().is_zero() => format!(
                "; ours/{name} {:.2}x",
                ours.total().as_secs_f64() / floor.total().as_secs_f64()
            ),
            _ => String::new(),
        };
        let ratio = against(2, "floor") + &against(4, "tokio-floor");
        lines.push(format!(
            "  {:<13} {}{ratio}",
            mode.label(),
            shown.join(", ")
        ));
    }
    if lines.is_empty() {
        // Only clients in other processes ran.
        return;
    }
    println!(
        "CPU per call in this process, median round (the server's is not counted; the total is \
         exact, its split into user + system is sampled at the kernel's tick):"
    );
    for line in lines {
        println!("{line}");
    }
}

/// Builds `mcp-testkit` in release mode and returns its path (from cargo's
/// own report, so any target directory works).
pub(super) fn build_testkit() -> Result<String, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let workspace = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let out = Command::new(cargo)
        .current_dir(workspace)
        .args([
            "build",
            "--release",
            "--quiet",
            "--package",
            "mcp-stack-testkit",
            "--bin",
            "mcp-testkit",
            "--message-format=json",
        ])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!("building mcp-testkit failed ({})", out.status));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m.pointer("/target/name").and_then(Value::as_str) == Some("mcp-testkit"))
        .find_map(|m| {
            m.get("executable")
                .and_then(Value::as_str)
                .map(String::from)
        })
        .ok_or_else(|| "cargo built mcp-testkit but did not say where".to_owned())
}

/// Runs `calls` calls one after the other in a task of the runtime (where an
/// application's work runs, rather than on the thread blocked in `block_on`);
/// returns every call's latency.
pub(super) async fn spawn_sequential<F, Fut>(calls: usize, call: F) -> Result<Vec<Duration>, String>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    let task = tokio::spawn(async move {
        let mut latencies = Vec::with_capacity(calls);
        for _ in 0..calls {
            let start = Instant::now();
            call().await?;
            latencies.push(start.elapsed());
        }
        Ok::<_, String>(latencies)
    });
    task.await
        .map_err(|e| format!("the caller task failed: {e}"))?
}

/// Runs `calls` calls from `width` tasks sharing a counter; returns every call's latency.
pub(super) async fn spawn_in_flight<F, Fut>(
    rt: &tokio::runtime::Runtime,
    width: usize,
    calls: usize,
    call: F,
) -> Result<Vec<Duration>, String>
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let width = width.max(1);
    let tasks: Vec<_> = (0..width)
        .map(|_| {
            let next = Arc::clone(&next);
            let call = call.clone();
            rt.spawn(async move {
                let mut latencies = Vec::with_capacity(calls / width + 1);
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    let start = Instant::now();
                    call().await?;
                    latencies.push(start.elapsed());
                }
                Ok::<_, String>(latencies)
            })
        })
        .collect();
    let mut all = Vec::with_capacity(calls);
    for task in tasks {
        all.extend(
            task.await
                .map_err(|e| format!("a caller task failed: {e}"))??,
        );
    }
    Ok(all)
}

/// This stack over stdio.
pub(super) async fn connect_ours(program: &str, args: &[String]) -> Result<Ours, String> {
    let transport = StdioTransport::spawn(
        StdioConfig::new(program)
            .args(args.iter().cloned())
            .server_name("bench"),
    )
    .map_err(|e| format!("ours: {e}"))?;
    Ours::over(transport).await
}

/// `rmcp` over its child-process transport.
pub(super) async fn connect_rmcp(program: &str, args: &[String]) -> Result<Rmcp, String> {
    use rmcp::ServiceExt;
    let mut command = tokio::process::Command::new(program);
    command.args(args);
    let (transport, _stderr) = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("rmcp: cannot start the server: {e}"))?;
    let service = ().serve(transport).await.map_err(|e| format!("rmcp: {e}"))?;
    Rmcp::checked(service).await
}

/// The floor: blocking pipe I/O and a `Value` parse per response.
pub(super) struct Floor {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    out: Vec<u8>,
    line: String,
}

impl Floor {
    pub(super) fn spawn(program: &str, args: &[String]) -> Result<Self, String> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("floor: cannot start the server: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("floor: the child's pipes are missing".into());
        };
        let mut floor = Floor {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            next_id: 0,
            out: Vec::with_capacity(4096),
            line: String::with_capacity(4096),
        };
        floor.handshake().map_err(|e| format!("floor: {e}"))?;
        Ok(floor)
    }

    fn handshake(&mut self) -> io::Result<()> {
        self.write(&initialize_line()?)?;
        let answer = self.read()?;
        if answer.get("result").is_none() {
            return Err(io::Error::other(format!("initialize failed: {answer}")));
        }
        self.write(INITIALIZED)?;
        self.next_id = 1;
        Ok(())
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(bytes),
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    fn read(&mut self) -> io::Result<Value> {
        self.line.clear();
        if self.stdout.read_line(&mut self.line)? == 0 {
            return Err(io::Error::other("the server closed stdout"));
        }
        Ok(serde_json::from_str::<Value>(&self.line)?)
    }

    fn push_request(&mut self) {
        push_call(&mut self.out, &mut self.next_id);
    }

    fn check(answer: &Value) -> io::Result<()> {
        if answer.get("result").is_some() {
            Ok(())
        } else {
            Err(io::Error::other(format!("tools/call failed: {answer}")))
        }
    }

    /// Writes the output buffer.
    fn flush_out(&mut self) -> io::Result<()> {
        let out = std::mem::take(&mut self.out);
        let written = self.write(&out);
        self.out = out;
        self.out.clear();
        written
    }

    /// `calls` calls in batches of `width` (1: sequential): each batch's
    /// requests written at once, then its answers read.
    fn run(&mut self, width: usize, calls: usize) -> Result<Vec<Duration>, String> {
        let mut latencies = Vec::with_capacity(calls);
        let mut batches = || -> io::Result<()> {
            for batch in batch_sizes(width, calls) {
                let start = Instant::now();
                for _ in 0..batch {
                    self.push_request();
                }
                self.flush_out()?;
                for _ in 0..batch {
                    Self::check(&self.read()?)?;
                    latencies.push(start.elapsed());
                }
            }
            Ok(())
        };
        batches().map_err(|e| format!("floor: {e}"))?;
        Ok(latencies)
    }

    /// One `tools/call` of `echo` with `text`, its request written from the
    /// text given, as any client given arguments must: the text checked
    /// once for bytes that JSON escapes and, having none, written as it is
    /// between the request's head and tail with vectored writes (no copy;
    /// otherwise serde_json escapes it into the buffer). The answer is
    /// parsed into a `Value` and checked; the echoed text's length.
    pub(super) fn echo_call(&mut self, text: &str) -> Result<usize, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut round_trip = || -> io::Result<usize> {
            self.out.clear();
            let _ = write!(
                self.out,
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"#
            );
            const TAIL: &[u8] = b"}}}\n";
            let Some(stdin) = self.stdin.as_mut() else {
                return Err(io::ErrorKind::BrokenPipe.into());
            };
            if json_clean(text.as_bytes()) {
                let mut parts = [
                    io::IoSlice::new(&self.out),
                    io::IoSlice::new(b"\""),
                    io::IoSlice::new(text.as_bytes()),
                    io::IoSlice::new(b"\""),
                    io::IoSlice::new(TAIL),
                ];
                write_all_vectored(stdin, &mut parts)?;
            } else {
                serde_json::to_writer(&mut self.out, text)?;
                self.out.extend_from_slice(TAIL);
                stdin.write_all(&self.out)?;
            }
            self.out.clear();
            let answer = self.read()?;
            Self::check(&answer)?;
            Ok(answer
                .pointer("/result/content/0/text")
                .and_then(Value::as_str)
                .map_or(0, str::len))
        };
        round_trip().map_err(|e| format!("floor: {e}"))
    }

    /// One request of `method` with `params` (raw JSON), its answer parsed
    /// and checked; the answer's length in bytes.
    pub(super) fn raw_call(&mut self, method: &str, params: &str) -> Result<usize, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut round_trip = || -> io::Result<usize> {
            let _ = writeln!(
                self.out,
                r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
            );
            self.flush_out()?;
            Self::check(&self.read()?)?;
            Ok(self.line.len())
        };
        round_trip().map_err(|e| format!("floor: {e}"))
    }

    pub(super) fn close(mut self) {
        // End of input ends the server.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// Whether JSON writes `text` as it is, with nothing to escape (no `"`,
/// `\\` or control character): one pass, each block folded without an early
/// exit so that the compiler compares many bytes per instruction.
fn json_clean(text: &[u8]) -> bool {
    text.chunks(4096).all(|block| {
        !block.iter().fold(false, |bad, &b| {
            bad | (b < 0x20) | (b == b'"') | (b == b'\\')
        })
    })
}

/// `write_all` over several buffers, with as few `writev` calls as the
/// pipe allows.
fn write_all_vectored(w: &mut impl Write, mut parts: &mut [io::IoSlice<'_>]) -> io::Result<()> {
    while !parts.is_empty() {
        match w.write_vectored(parts) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => io::IoSlice::advance_slices(&mut parts, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// How the floors cut `calls` calls into batches of `width` (at least 1).
fn batch_sizes(width: usize, calls: usize) -> impl Iterator<Item = usize> {
    let width = width.max(1);
    (0..calls.div_ceil(width)).map(move |i| width.min(calls - i * width))
}

/// The floors' `initialize` request, as a line.
fn initialize_line() -> io::Result<Vec<u8>> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": ProtocolVersion::LATEST_HANDSHAKE.as_str(), "capabilities": {},
        "clientInfo": {"name": "bench-floor", "version": "0"}}});
    let mut out = serde_json::to_vec(&init)?;
    out.push(b'\n');
    Ok(out)
}

const INITIALIZED: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

/// Appends one `tools/call` request to `out`, with the next id.
fn push_call(out: &mut Vec<u8>, next_id: &mut u64) {
    let id = *next_id;
    *next_id += 1;
    let _ = writeln!(
        out,
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{TEXT}"}}}}}}"#
    );
}

/// The floor's protocol over tokio's pipes, in one task on the runtime the
/// other in-process clients use: the cost of async I/O itself.
struct TokioFloor {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
    next_id: u64,
    out: Vec<u8>,
    line: String,
}

impl TokioFloor {
    async fn spawn(program: &str, args: &[String]) -> Result<Self, String> {
        let fail = |e: io::Error| format!("tokio-floor: {e}");
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(fail)?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("tokio-floor: the child's pipes are missing".into());
        };
        let mut floor = TokioFloor {
            child,
            stdin: Some(stdin),
            stdout: tokio::io::BufReader::new(stdout),
            next_id: 0,
            out: Vec::with_capacity(4096),
            line: String::with_capacity(4096),
        };
        floor
            .write(&initialize_line().map_err(fail)?)
            .await
            .map_err(fail)?;
        let answer = floor.read().await.map_err(fail)?;
        if answer.get("result").is_none() {
            return Err(format!("tokio-floor: initialize failed: {answer}"));
        }
        floor.write(INITIALIZED).await.map_err(fail)?;
        floor.next_id = 1;
        Ok(floor)
    }

    async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        use tokio::io::AsyncWriteExt;
        match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(bytes).await,
            None => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    async fn read(&mut self) -> io::Result<Value> {
        use tokio::io::AsyncBufReadExt;
        self.line.clear();
        if self.stdout.read_line(&mut self.line).await? == 0 {
            return Err(io::Error::other("the server closed stdout"));
        }
        Ok(serde_json::from_str::<Value>(&self.line)?)
    }

    /// `calls` calls in batches of `width` (1: sequential), pipelined as
    /// the blocking floor's are; it is handed back with the latencies.
    async fn run(mut self, width: usize, calls: usize) -> (Self, Result<Vec<Duration>, String>) {
        let latencies = self.batches(width, calls).await;
        (self, latencies)
    }

    async fn batches(&mut self, width: usize, calls: usize) -> Result<Vec<Duration>, String> {
        let mut latencies = Vec::with_capacity(calls);
        for batch in batch_sizes(width, calls) {
            let start = Instant::now();
            for _ in 0..batch {
                push_call(&mut self.out, &mut self.next_id);
            }
            let out = std::mem::take(&mut self.out);
            let written = self.write(&out).await;
            self.out = out;
            self.out.clear();
            written.map_err(|e| format!("tokio-floor: {e}"))?;
            for _ in 0..batch {
                let answer = self.read().await.map_err(|e| format!("tokio-floor: {e}"))?;
                Floor::check(&answer).map_err(|e| format!("tokio-floor: {e}"))?;
                latencies.push(start.elapsed());
            }
        }
        Ok(latencies)
    }

    async fn close(mut self) {
        // End of input ends the server.
        drop(self.stdin.take());
        let _ = self.child.wait().await;
    }
}

/// The fast server: blocking reads, one `Value` parse per message, buffered
/// writes flushed whenever no more input is waiting.
fn serve_echo() -> io::Result<()> {
    // Our own buffer (large reads bypass stdin's), to see whether input is waiting.
    let mut input = BufReader::with_capacity(64 * 1024, io::stdin().lock());
    let mut output = BufWriter::new(io::stdout().lock());
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return output.flush();
        }
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        // Notifications need no answer.
        let Some(id) = message.get("id") else {
            continue;
        };
        let params = message.get("params");
        let answer = match message.get("method").and_then(Value::as_str) {
            Some("tools/call") => {
                let text = params
                    .and_then(|p| p.pointer("/arguments/text"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                json!({"jsonrpc": "2.0", "id": id,
                    "result": {"content": [{"type": "text", "text": text}]}})
            }
            Some("initialize") => {
                let asked = params
                    .and_then(|p| p.get("protocolVersion"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let version = ProtocolVersion::HANDSHAKE
                    .into_iter()
                    .find(|v| v.as_str() == asked)
                    .unwrap_or(ProtocolVersion::LATEST_HANDSHAKE)
                    .as_str();
                json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "bench-echo", "version": "0"}}})
            }
            Some("tools/list") => json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{
                "name": "echo", "description": "Returns the given text.",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                    "required": ["text"]}}]}}),
            Some("ping") => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            _ => json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "method not found"}}),
        };
        serde_json::to_writer(&mut output, &answer)?;
        output.write_all(b"\n")?;
        if input.buffer().is_empty() {
            output.flush()?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::batch_sizes;

    #[test]
    fn batches_cover_every_call_and_never_exceed_the_width() {
        let cut = |w, n| batch_sizes(w, n).collect::<Vec<_>>();
        assert_eq!(cut(1, 3), [1, 1, 1]);
        assert_eq!(cut(8, 20), [8, 8, 4]);
        assert_eq!(cut(8, 16), [8, 8]);
        assert_eq!(cut(0, 2), [1, 1], "a width of 0 counts as 1");
        assert!(cut(8, 0).is_empty());
    }
}
