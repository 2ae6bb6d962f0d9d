//! `bench stdio --instructions` and `bench http --instructions`: the
//! instructions one sequential `tools/call` costs each client, counted by
//! valgrind's callgrind, so that a reviewer on a noisy machine (or one
//! without hardware counters) gets the same figures twice.
//!
//! Each client runs alone in a child process (this program again, with
//! `--only CLIENT --rounds 1 --sequential-only`) under
//! `valgrind --tool=callgrind --trace-children=no`, once with N1 calls and
//! once with N2; (I(N2) − I(N1)) / (N2 − N1) is the cost of one call, with
//! the start-up, the handshake and the warm-up (the same in both runs)
//! cancelled out. Only the client process is counted: the stdio server is its
//! child and not traced, and the HTTP server runs here, outside valgrind.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::args::{HttpArgs, PayloadArgs, StdioArgs};

/// How long one child run under valgrind may take.
const CHILD_LIMIT: Duration = Duration::from_secs(600);

/// The clients counted (the TS SDK's runs under node, which valgrind
/// counts as node's JIT, not the SDK: it is left out).
const CLIENTS: [(&str, &str); 3] = [
    ("ours", "ours (mcp-stack-session)"),
    ("rmcp", "rmcp 3"),
    ("floor", "floor"),
];

/// `bench payload`: the floor writes its request from the text given, as
/// every client must; the floor formatted once before the loop (the floor
/// until #28) is counted beside it.
const PAYLOAD_CLIENTS: [(&str, &str); 4] = [
    CLIENTS[0],
    CLIENTS[1],
    ("floor", "floor (per call)"),
    ("floor-fixed", "floor, pre-formatted"),
];

/// Over stdio, the async floor too: what tokio's I/O costs on its own.
const STDIO_CLIENTS: [(&str, &str); 4] = [
    CLIENTS[0],
    CLIENTS[1],
    CLIENTS[2],
    ("tokio-floor", "tokio-floor (async)"),
];

pub(super) fn stdio(args: &StdioArgs) -> Result<(), String> {
    let (n1, n2) = calls(&args.instructions_calls)?;
    let valgrind = valgrind()?;
    let servers = super::stdio::servers(&args.server, args.testkit.clone())?;
    header("stdio", &valgrind, n1, n2, &args.runtime);
    println!(
        "  the server is the client's child process and is not traced (--trace-children=no): \
         only the client's instructions count."
    );
    for (name, program, _) in &servers {
        println!();
        println!("server: {name}");
        let server: Vec<String> = match *name {
            "mcp-testkit" => vec![
                "--server".into(),
                "testkit".into(),
                "--testkit".into(),
                program.clone(),
            ],
            _ => vec!["--server".into(), "fast".into()],
        };
        table(&STDIO_CLIENTS, n1, n2, |client, n| {
            child_args("stdio", client, n, &args.runtime, &server)
        })?;
    }
    footer();
    Ok(())
}

/// The arguments of one counted child: `bench KIND` for one client, one
/// round of `n` sequential calls, then what the kind needs (`extra`).
fn child_args(kind: &str, client: &str, n: usize, runtime: &str, extra: &[String]) -> Vec<String> {
    let mut a: Vec<String> = ["bench", kind, "--only", client, "--rounds", "1"]
        .map(String::from)
        .to_vec();
    a.extend([
        "--sequential-only".into(),
        "--n".into(),
        n.to_string(),
        "--runtime".into(),
        runtime.to_owned(),
    ]);
    a.extend(extra.iter().cloned());
    a
}

pub(super) fn http(args: &HttpArgs) -> Result<(), String> {
    let (n1, n2) = calls(&args.instructions_calls)?;
    let valgrind = valgrind()?;
    if args.auth {
        return Err("--instructions does not combine with --auth".into());
    }
    // The server runs here, natively: valgrind counts only the child clients.
    let server = super::http::start_server(args)?;
    let url = server.url().to_owned();
    header("http", &valgrind, n1, n2, &args.runtime);
    println!(
        "  the server (mcp-testkit streamable HTTP, answers {}, era {}) runs in this process at \
         {url}, outside valgrind: only the client's instructions count.",
        args.answers, args.era
    );
    println!();
    let extra = [
        "--era".into(),
        args.era.clone(),
        "--url".into(),
        url.clone(),
    ];
    let result = table(&CLIENTS, n1, n2, |client, n| {
        child_args("http", client, n, &args.runtime, &extra)
    });
    server.stop();
    result?;
    footer();
    Ok(())
}

/// `bench payload --instructions`: per size, the instructions of one
/// `tools/call` `echo` of that size, each client alone (`--only`) against
/// the fast echo server.
pub(super) fn payload(args: &PayloadArgs) -> Result<(), String> {
    let (n1, n2) = calls(&args.instructions_calls)?;
    let valgrind = valgrind()?;
    header("payload", &valgrind, n1, n2, "multi");
    println!(
        "  against the fast blocking echo server, the client's child, not traced: only the \
         client's instructions count. The text echoed is the size given (the request carries \
         it too)."
    );
    for &size in &args.sizes {
        println!();
        println!("size: {size} bytes");
        let per_call = table(&PAYLOAD_CLIENTS, n1, n2, |client, n| {
            ["bench", "payload", "--only", client, "--calls"]
                .map(String::from)
                .into_iter()
                .chain([n.to_string(), "--sizes".into(), size.to_string()])
                .collect()
        })?;
        let of = |label: &str| per_call.iter().find(|(l, _)| *l == label).map(|r| r.1);
        if let (Some(ours), Some(fixed)) = (of(CLIENTS[0].1), of(PAYLOAD_CLIENTS[3].1)) {
            println!(
                "  ours vs the pre-formatted floor: {:.2}x",
                ours / fixed.max(1.0)
            );
        }
    }
    footer();
    Ok(())
}

/// `--instructions-calls N1,N2`, checked.
fn calls(given: &[usize]) -> Result<(usize, usize), String> {
    match given {
        &[n1, n2] if n1 >= 1 && n2 > n1 => Ok((n1, n2)),
        _ => Err("--instructions-calls: give two counts N1,N2 with 1 <= N1 < N2".into()),
    }
}

/// Valgrind's version; an error (so a non-zero exit) when it is missing.
fn valgrind() -> Result<String, String> {
    let out = Command::new("valgrind")
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| {
            format!(
                "--instructions needs valgrind, which is not installed or not on PATH ({e}); \
                 install it (e.g. `apt-get install valgrind`)"
            )
        })?;
    if !out.status.success() {
        return Err(format!("`valgrind --version` failed ({})", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn header(what: &str, valgrind: &str, n1: usize, n2: usize, runtime: &str) {
    println!(
        "bench {what} --instructions: instructions per sequential tools/call `echo`, counted by \
         {valgrind} (callgrind), in the client process only: (I({n2} calls) - I({n1} calls)) / {}, \
         which cancels start-up, handshake and warm-up; client runtime: tokio {runtime}",
        n2 - n1
    );
}

fn footer() {
    println!();
    println!(
        "  Sequential calls only: valgrind runs a process's threads one at a time, so calls in"
    );
    println!(
        "  flight measure its scheduler more than the client. Instructions are not time (cache"
    );
    println!(
        "  misses, system calls' kernel work and waiting are not in them), but they repeat: the"
    );
    println!("  figures are the same on a busy machine. The TS SDK runs under node: not counted.");
}

/// Runs every client twice under callgrind and prints its row; each
/// client's label and instructions per call.
fn table<'l>(
    clients: &[(&str, &'l str)],
    n1: usize,
    n2: usize,
    child_args: impl Fn(&str, usize) -> Vec<String>,
) -> Result<Vec<(&'l str, f64)>, String> {
    println!(
        "{:<20} {:>16} {:>16} {:>12} {:>9} {:>9}",
        "client",
        format!("I({n1})"),
        format!("I({n2})"),
        "instr/call",
        "vs rmcp",
        "vs floor"
    );
    let mut per_call = Vec::new();
    for &(client, label) in clients {
        let started = Instant::now();
        let i1 = count(client, n1, &child_args(client, n1))?;
        let i2 = count(client, n2, &child_args(client, n2))?;
        let each = i2.saturating_sub(i1) as f64 / (n2 - n1) as f64;
        per_call.push((label, i1, i2, each, started.elapsed()));
    }
    let of = |name: &str| {
        per_call
            .iter()
            .find(|(label, ..)| label.starts_with(name))
            .map(|r| r.3)
    };
    let (rmcp, floor) = (of("rmcp"), of("floor"));
    let ratio = |a: f64, b: Option<f64>| match b {
        Some(b) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".to_owned(),
    };
    for (label, i1, i2, each, took) in &per_call {
        println!(
            "{label:<20} {i1:>16} {i2:>16} {each:>12.0} {:>9} {:>9}   ({:.0} s under valgrind)",
            ratio(*each, rmcp),
            ratio(*each, floor),
            took.as_secs_f64()
        );
    }
    println!("  (ratios are instructions: below 1.00x is fewer than the other client)");
    Ok(per_call
        .into_iter()
        .map(|(label, _, _, each, _)| (label, each))
        .collect())
}

/// The instructions the child `args` executes under callgrind.
fn count(client: &str, n: usize, args: &[String]) -> Result<u64, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let dir = std::env::temp_dir();
    let stem = format!("xtask-callgrind-{}-{client}-{n}", std::process::id());
    let out = dir.join(format!("{stem}.out"));
    let log = dir.join(format!("{stem}.log"));
    let result = run_child(&me, args, &out, &log).and_then(|()| totals(&out));
    let result = result.map_err(|e| {
        let tail = std::fs::read_to_string(&log)
            .map(|t| {
                let lines: Vec<&str> = t.lines().collect();
                lines
                    .get(lines.len().saturating_sub(15)..)
                    .unwrap_or_default()
                    .join("\n")
            })
            .unwrap_or_default();
        format!("{client} with {n} calls under valgrind: {e}\n{tail}")
    });
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&log);
    result
}

fn run_child(me: &Path, args: &[String], out: &Path, log: &Path) -> Result<(), String> {
    let log_file =
        std::fs::File::create(log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let mut child = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg("--trace-children=no")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg("--")
        .arg(me)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .map_err(|e| format!("cannot start valgrind: {e}"))?;
    let deadline = Instant::now() + CHILD_LIMIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("the run failed ({status})")),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the run took longer than {} s and was stopped",
                    CHILD_LIMIT.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("cannot wait for valgrind: {e}")),
        }
    }
}

/// The `totals:` (else `summary:`) line of a callgrind output file: the
/// first event, instructions (`Ir`).
fn totals(path: &PathBuf) -> Result<u64, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read callgrind's output {}: {e}", path.display()))?;
    parse_totals(&text).ok_or_else(|| format!("no totals in {}", path.display()))
}

fn parse_totals(text: &str) -> Option<u64> {
    let field = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
    };
    field("totals:").or_else(|| field("summary:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_callgrind_totals() {
        let text = "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 1234\n\nfn=main\n1 5\ntotals: 1234\n";
        assert_eq!(parse_totals(text), Some(1234));
        assert_eq!(parse_totals("summary: 77 3\n"), Some(77));
        assert_eq!(parse_totals("events: Ir\n"), None);
        assert_eq!(parse_totals("totals: lots\n"), None);
    }

    #[test]
    fn call_counts_are_checked() {
        assert_eq!(calls(&[500, 2500]), Ok((500, 2500)));
        assert!(calls(&[2500, 500]).is_err());
        assert!(calls(&[0, 5]).is_err());
        assert!(calls(&[5]).is_err());
    }
}
