//! `bench payload`: large messages over stdio, from 100 B to 1 MB, with this
//! stack, `rmcp`'s client and the raw floor of `bench stdio`:
//!
//! - `tools/call` of `echo` with a text of the size (the request carries the
//!   text and the result returns it), against the fast blocking echo server
//!   (this program), so that the clients' costs show;
//! - `tools/list` of a catalog of about the size: `mcp-testkit` with
//!   `--extra-tools K` generated tools (its 14 real ones come first, so the
//!   smallest list is a few kB, whatever the size asked).
//!
//! Each size and kind gets its own rounds, interleaved between the clients
//! as in `bench stdio`; calls per run shrink as the size grows (`--mb` of
//! payload per run). A run of `tools/call` is awaited in one task on the
//! client runtime, as `bench stdio`'s are (`--caller task`, the default);
//! `--caller main` awaits each call in `block_on` on the main thread, which
//! on a multi-thread runtime adds a wake-up of that thread per call (tokio's
//! IO driver runs on the workers), for every client alike. The floor is one
//! blocking thread either way.
//!
//! On a VM with idle cores the floor's rows vary by 2–3x between runs (a
//! wake-up across cores costs tens of microseconds, and whether a round
//! trip pays it is luck); `taskset -c 0` gives figures that repeat.
//!
//! The floor of `tools/call` is the least work any client given the text
//! must do for the same call: write the request from the text (check it
//! once for bytes JSON escapes; with none, write it between the request's
//! head and tail with vectored writes, copying nothing), read the answer's
//! line, parse it into a `Value` and take the text's length from it. Until
//! #28 the floor wrote a request line formatted once, before the timed loop,
//! which no client given arguments can do; that floor is still printed
//! ("floor, pre-formatted") so that older figures can be compared. At small
//! sizes the two are the same; at 1 MB the per-call floor checks the text
//! but copies nothing, so it is not weaker than the pre-formatted one.

use super::clients::Rmcp;
use super::rounds::{Mode, Results, RunConfig, Timed, run_rounds, show};
use super::stdio::{Floor, build_testkit, client_runtime, connect_ours, connect_rmcp, fast_server};
use crate::args::PayloadArgs;

/// About how many bytes one generated tool adds to `tools/list`'s answer.
const BYTES_PER_TOOL: usize = 330;

const CLIENTS: [&str; 4] = [
    "ours (mcp-stack-session)",
    "rmcp 3",
    "floor (raw pipes)",
    "floor, pre-formatted",
];

pub(crate) fn run(args: PayloadArgs) -> Result<(), String> {
    if args.sizes.is_empty() || args.sizes.iter().any(|&s| s == 0 || s > 8_000_000) {
        return Err("--sizes: give sizes from 1 byte to 8 MB".into());
    }
    if args.instructions {
        return super::instructions::payload(&args);
    }
    if let Some(client) = &args.only {
        return only(client, &args.sizes, args.calls, &args.runtime);
    }
    let PayloadArgs {
        sizes,
        mb,
        rounds,
        runtime,
        caller,
        ..
    } = args;
    let in_task = match caller.as_str() {
        "main" => false,
        "task" => true,
        other => return Err(format!("--caller: unknown `{other}` (known: main, task)")),
    };
    if !(mb > 0.0 && mb <= 1000.0) || rounds == 0 {
        return Err("--mb must be in (0, 1000], --rounds at least 1".into());
    }
    let (rt, runtime_name) = client_runtime(&runtime)?;
    let testkit = build_testkit()?;
    let (_, fast, fast_args) = fast_server()?;
    println!(
        "bench payload: one request at a time over stdio, {mb} MB of payload per run (10 to 5000 \
         calls), best and median of {rounds} interleaved rounds after a warm-up; clients on a \
         {runtime_name} runtime{}",
        if in_task {
            " (the tools/call rows of ours and rmcp awaited in a task on it)"
        } else {
            ""
        }
    );
    println!();
    println!(
        "{:<24} {:>10} {:<20} {:>10} {:>10} {:>9} {:>9} {:>9} {:>10}",
        "kind",
        "bytes",
        "client",
        "best /s",
        "median /s",
        "MB/s",
        "vs rmcp",
        "vs floor",
        "vs pre-fmt"
    );

    // tools/call echo: one connection per client for every size.
    let ours = rt.block_on(connect_ours(&fast, &fast_args))?;
    let rmcp = rt.block_on(connect_rmcp(&fast, &fast_args))?;
    let mut floor = Floor::spawn(&fast, &fast_args)?;
    for &size in &sizes {
        let text = text_of(size);
        let params = format!(r#"{{"name":"echo","arguments":{{"text":"{text}"}}}}"#);
        let calls = calls_for(size, mb);
        let one_run = |c: usize, _: Mode, calls: usize| -> Result<Timed, String> {
            if in_task && c < 2 {
                // The whole run in one task on the runtime, as bench stdio's.
                let (ours, peer, text) = (ours.clone(), rmcp.peer(), text.clone());
                let run = rt.spawn(async move {
                    let mut latencies = Vec::with_capacity(calls);
                    for _ in 0..calls {
                        let start = std::time::Instant::now();
                        let got = if c == 0 {
                            ours.echo(&text).await?
                        } else {
                            Rmcp::echo_on(&peer, &text).await?
                        };
                        check(size, got)?;
                        latencies.push(start.elapsed());
                    }
                    Ok::<_, String>(latencies)
                });
                let latencies = rt
                    .block_on(run)
                    .map_err(|e| format!("the calls' task failed: {e}"))??;
                return Ok(latencies.into());
            }
            let mut latencies = Vec::with_capacity(calls);
            for _ in 0..calls {
                let start = std::time::Instant::now();
                let got = match c {
                    0 => rt.block_on(ours.echo(&text))?,
                    1 => rt.block_on(rmcp.echo(&text))?,
                    2 => floor.echo_call(&text)?,
                    _ => {
                        floor.raw_call("tools/call", &params)?;
                        size
                    }
                };
                check(size, got)?;
                latencies.push(start.elapsed());
            }
            Ok(latencies.into())
        };
        let results = run_rounds(&config(calls, rounds, 4), one_run)?;
        print_rows("tools/call", size, &results);
    }
    rt.block_on(ours.close());
    rt.block_on(rmcp.close());
    floor.close();

    // tools/list: a server per size, a connection per client.
    for &size in &sizes {
        let extra = size / BYTES_PER_TOOL;
        let args = vec!["--extra-tools".to_owned(), extra.to_string()];
        let ours = rt.block_on(connect_ours(&testkit, &args))?;
        let rmcp = rt.block_on(connect_rmcp(&testkit, &args))?;
        let mut floor = Floor::spawn(&testkit, &args)?;
        let bytes = floor.raw_call("tools/list", "{}")?;
        let tools = rt.block_on(ours.list_tools())?;
        let calls = calls_for(bytes, mb);
        let one_run = |c: usize, _: Mode, calls: usize| -> Result<Timed, String> {
            let mut latencies = Vec::with_capacity(calls);
            for _ in 0..calls {
                let start = std::time::Instant::now();
                let got = match c {
                    0 => rt.block_on(ours.list_tools())?,
                    1 => rt.block_on(rmcp.list_tools())?,
                    _ => {
                        floor.raw_call("tools/list", "{}")?;
                        tools
                    }
                };
                if got != tools {
                    return Err(format!("tools/list had {got} tools, not {tools}"));
                }
                latencies.push(start.elapsed());
            }
            Ok(latencies.into())
        };
        // No arguments to write: the two floors are one.
        let results = run_rounds(&config(calls, rounds, 3), one_run);
        rt.block_on(ours.close());
        rt.block_on(rmcp.close());
        floor.close();
        print_rows(&format!("tools/list ({tools} tools)"), bytes, &results?);
    }
    println!();
    println!("  bytes: the echoed text (the request carries it too), or the tools/list answer's");
    println!("    line as the floor read it. MB/s: those bytes per second (10^6 bytes).");
    println!("  ours: Session::call_tool (input schema checked) and Session::refresh_tools (every");
    println!("    page fetched, the ToolCatalog built; the tools are interned, so a catalog equal");
    println!("    to the one it replaces shares its tools). rmcp: Peer::call_tool and");
    println!(
        "    Peer::list_all_tools. floor: the request written from the text (checked once for"
    );
    println!(
        "    bytes to escape, then written with writev, no copy), read_line, serde_json::from_str"
    );
    println!(
        "    ::<Value>, the text's length. floor, pre-formatted: the same with the request line"
    );
    println!(
        "    formatted once before the timed loop (the floor until #28; vs pre-fmt compares)."
    );
    println!(
        "  servers: tools/call against the fast blocking echo server, tools/list against \
         mcp-testkit --extra-tools K."
    );
    Ok(())
}

/// One client alone, `calls` echo calls of each size, nothing printed (what
/// `--instructions` counts under valgrind).
fn only(client: &str, sizes: &[usize], calls: usize, runtime: &str) -> Result<(), String> {
    let (rt, _) = client_runtime(runtime)?;
    let (_, fast, fast_args) = fast_server()?;
    for &size in sizes {
        let text = text_of(size);
        let params = format!(r#"{{"name":"echo","arguments":{{"text":"{text}"}}}}"#);
        match client {
            "ours" => {
                let ours = rt.block_on(connect_ours(&fast, &fast_args))?;
                for _ in 0..calls {
                    check(size, rt.block_on(ours.echo(&text))?)?;
                }
                rt.block_on(ours.close());
            }
            "rmcp" => {
                let rmcp = rt.block_on(connect_rmcp(&fast, &fast_args))?;
                for _ in 0..calls {
                    check(size, rt.block_on(rmcp.echo(&text))?)?;
                }
                rt.block_on(rmcp.close());
            }
            "floor" => {
                let mut floor = Floor::spawn(&fast, &fast_args)?;
                for _ in 0..calls {
                    check(size, floor.echo_call(&text)?)?;
                }
                floor.close();
            }
            "floor-fixed" => {
                let mut floor = Floor::spawn(&fast, &fast_args)?;
                for _ in 0..calls {
                    floor.raw_call("tools/call", &params)?;
                }
                floor.close();
            }
            other => {
                return Err(format!(
                    "--only: no client {other:?} (ours, rmcp, floor, floor-fixed)"
                ));
            }
        }
    }
    Ok(())
}

/// Whether an echo call answered the whole text.
fn check(size: usize, got: usize) -> Result<(), String> {
    if got == size {
        Ok(())
    } else {
        Err(format!("echo answered {got} bytes of {size}"))
    }
}

/// A text of `size` ASCII letters (nothing to escape in JSON).
fn text_of(size: usize) -> String {
    (0..size)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect()
}

/// Calls per run: `mb` megabytes of payload, between 10 and 5000 calls.
fn calls_for(bytes: usize, mb: f64) -> usize {
    ((mb * 1e6 / bytes.max(1) as f64) as usize).clamp(10, 5000)
}

/// `clients`: how many of [`CLIENTS`] run (the last, the pre-formatted
/// floor, only where there are arguments to write).
fn config(calls: usize, rounds: usize, clients: usize) -> RunConfig {
    RunConfig {
        n: calls,
        n_inflight: calls,
        rounds,
        clients: vec![true; clients],
        modes: vec![Mode::Sequential],
    }
}

fn print_rows(kind: &str, bytes: usize, results: &Results) {
    let best = |c: usize| {
        results
            .get(c)
            .and_then(|r| r.first())
            .filter(|r| !r.rates.is_empty())
            .map(|r| (r.best(), r.median()))
    };
    for (c, client) in CLIENTS.iter().enumerate() {
        let Some((rate, median)) = best(c) else {
            continue;
        };
        let ratio = |other: usize| best(other).map(|(o, _)| rate / o);
        println!(
            "{kind:<24} {bytes:>10} {client:<20} {rate:>10.0} {median:>10.0} {:>9.1} {:>9} {:>9} {:>10}",
            rate * bytes as f64 / 1e6,
            show(ratio(1)),
            show(ratio(2)),
            show(ratio(3)),
        );
    }
}
