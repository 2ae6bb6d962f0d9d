//! The rounds every client-comparing benchmark runs (`bench stdio`, `http`,
//! `payload`): warm-up, interleaved rounds (a different client first each
//! round), each client's rates, latencies and CPU time per call, and the
//! table of rows and ratios.

use std::time::{Duration, Instant};

use super::Cpu;

/// The modes of `--in-flight` (1 is the sequential mode), sorted, without repeats.
pub(super) fn modes(widths: &[usize], sequential_only: bool) -> Result<Vec<Mode>, String> {
    if sequential_only {
        return Ok(vec![Mode::Sequential]);
    }
    let mut widths = widths.to_vec();
    widths.sort_unstable();
    widths.dedup();
    if widths.is_empty() || widths.contains(&0) || widths.iter().any(|&k| k > 1024) {
        return Err("--in-flight: give widths from 1 to 1024, e.g. 1,8,64".into());
    }
    Ok(widths
        .into_iter()
        .map(|k| match k {
            1 => Mode::Sequential,
            k => Mode::InFlight(k),
        })
        .collect())
}

/// What one run does.
#[derive(Debug)]
pub(super) struct RunConfig {
    /// Sequential calls per round.
    pub(super) n: usize,
    /// Calls per round with several in flight.
    pub(super) n_inflight: usize,
    pub(super) rounds: usize,
    /// Which clients run, by index (ours, the second, the floor, …).
    pub(super) clients: Vec<bool>,
    /// The modes, one row each.
    pub(super) modes: Vec<Mode>,
}

impl RunConfig {
    /// The most calls in flight of any mode.
    pub(super) fn widest(&self) -> usize {
        self.modes.iter().map(|m| m.width()).max().unwrap_or(1)
    }
}

/// Which way of calling a row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Sequential,
    /// This many calls in flight.
    InFlight(usize),
}

impl Mode {
    /// Calls in flight.
    pub(super) fn width(self) -> usize {
        match self {
            Mode::Sequential => 1,
            Mode::InFlight(k) => k,
        }
    }

    pub(super) fn label(self) -> String {
        match self {
            Mode::Sequential => "sequential".to_owned(),
            Mode::InFlight(k) => format!("{k} in flight"),
        }
    }
}

/// What one run of one client returns: every call's latency and, for a
/// client that times itself (in another process), its own elapsed time.
#[derive(Debug, Default)]
pub(super) struct Timed {
    pub(super) latencies: Vec<Duration>,
    pub(super) elapsed: Option<Duration>,
}

impl From<Vec<Duration>> for Timed {
    fn from(latencies: Vec<Duration>) -> Self {
        Timed {
            latencies,
            elapsed: None,
        }
    }
}

/// One client's timings in one mode: calls/s of each round, every call's
/// latency, and this process's CPU time per call in each round (for clients
/// that run in this process).
#[derive(Debug, Default)]
pub(super) struct Row {
    pub(super) rates: Vec<f64>,
    pub(super) latencies: Vec<Duration>,
    pub(super) cpu: Vec<Cpu>,
}

impl Row {
    pub(super) fn best(&self) -> f64 {
        self.rates.iter().copied().fold(0.0, f64::max)
    }

    pub(super) fn median(&self) -> f64 {
        let mut r = self.rates.clone();
        r.sort_by(f64::total_cmp);
        r.get(r.len() / 2).copied().unwrap_or_default()
    }

    pub(super) fn percentile(&self, q: f64) -> Duration {
        // Sorted by `finish`.
        let i = ((self.latencies.len().saturating_sub(1)) as f64 * q).round() as usize;
        self.latencies.get(i).copied().unwrap_or_default()
    }

    pub(super) fn finish(&mut self) {
        self.latencies.sort();
        self.cpu.sort_by_key(|c| c.total());
    }

    /// The round with the median CPU time per call.
    pub(super) fn median_cpu(&self) -> Option<Cpu> {
        self.cpu.get(self.cpu.len() / 2).copied()
    }
}

/// Results by client (ours first, then the peers and the floor, as each
/// benchmark lists them) and mode (as in [`RunConfig::modes`]).
pub(super) type Results = Vec<Vec<Row>>;

/// Warms every client up, then runs the rounds, interleaved (a different
/// client first each round, so machine noise hits them alike), and collects
/// each client's rates and latencies per mode.
pub(super) fn run_rounds(
    run: &RunConfig,
    mut one_run: impl FnMut(usize, Mode, usize) -> Result<Timed, String>,
) -> Result<Results, String> {
    let clients = run.clients.len();
    let on = |c: usize| run.clients.get(c).copied().unwrap_or(false);
    let calls_of = |mode: Mode| match mode {
        Mode::Sequential => run.n,
        Mode::InFlight(_) => run.n_inflight,
    };
    // Warm-up: connections, caches, schemas, the allocator, the server.
    for c in (0..clients).filter(|&c| on(c)) {
        for &mode in &run.modes {
            let calls = match mode {
                Mode::Sequential => run.n.min(500),
                Mode::InFlight(_) => run.n_inflight.min(2000),
            };
            one_run(c, mode, calls)?;
        }
    }

    let mut results: Results = (0..clients)
        .map(|_| run.modes.iter().map(|_| Row::default()).collect())
        .collect();
    for round in 0..run.rounds {
        for (m, &mode) in run.modes.iter().enumerate() {
            let calls = calls_of(mode);
            // A different client goes first each round.
            for k in 0..clients {
                let c = (round + k) % clients;
                if !on(c) {
                    continue;
                }
                let cpu = Cpu::now();
                let start = Instant::now();
                let timed = one_run(c, mode, calls)?;
                let elapsed = timed.elapsed.unwrap_or_else(|| start.elapsed());
                // A client that times itself runs in another process: this
                // process's CPU time is not its own.
                let cpu = match (timed.elapsed, cpu, Cpu::now()) {
                    (None, Some(before), Some(after)) => Some(after.per_call_since(before, calls)),
                    _ => None,
                };
                if timed.latencies.is_empty() {
                    // A client that is not there.
                    continue;
                }
                if let Some(row) = results.get_mut(c).and_then(|r| r.get_mut(m)) {
                    row.rates
                        .push(calls as f64 / elapsed.as_secs_f64().max(1e-9));
                    row.latencies.extend(timed.latencies);
                    row.cpu.extend(cpu);
                }
            }
        }
    }
    for row in results.iter_mut().flatten() {
        row.finish();
    }
    Ok(results)
}

/// The best-run ratios of client 0 (ours) against clients 1 and 2 in each mode.
pub(super) type Ratios = Vec<(Mode, [Option<f64>; 2])>;

/// Prints the rows of every mode and client; `second` heads the column of
/// ratios against client 1.
pub(super) fn print_rows(
    results: &Results,
    labels: &[&str],
    modes: &[Mode],
    second: &str,
) -> Ratios {
    println!(
        "{:<13} {:<20} {:>10} {:>12} {:>9} {:>9} {:>8} {:>9}",
        "mode", "client", "best /s", "median /s", "p50 µs", "p99 µs", second, "vs floor"
    );
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let ratio = |a: &Row, b: Option<&Row>| match b {
        Some(b) if !a.rates.is_empty() && !b.rates.is_empty() => Some(a.best() / b.best()),
        _ => None,
    };
    let mut ratios = Vec::new();
    for (m, &mode) in modes.iter().enumerate() {
        let row = |c: usize| results.get(c).and_then(|r| r.get(m));
        for (c, client) in labels.iter().enumerate() {
            let Some(r) = row(c).filter(|r| !r.rates.is_empty()) else {
                continue;
            };
            println!(
                "{:<13} {client:<20} {:>10.0} {:>12.0} {:>9.1} {:>9.1} {:>8} {:>9}",
                mode.label(),
                r.best(),
                r.median(),
                us(r.percentile(0.5)),
                us(r.percentile(0.99)),
                show(ratio(r, row(1))),
                show(ratio(r, row(2))),
            );
        }
        if let Some(ours) = row(0) {
            ratios.push((mode, [ratio(ours, row(1)), ratio(ours, row(2))]));
        }
    }
    ratios
}

/// Says so when a client's rounds spread widely (its median round under
/// 80% of its best): then the machine was busy or its CPUs' wakeups slow,
/// and the ratios between best runs move from run to run.
pub(super) fn noise_note(results: &Results, labels: &[&str], modes: &[Mode]) {
    let mut widest: Option<(f64, &str, Mode)> = None;
    for (c, client) in labels.iter().enumerate() {
        for (m, &mode) in modes.iter().enumerate() {
            let Some(r) = results.get(c).and_then(|r| r.get(m)) else {
                continue;
            };
            if r.rates.is_empty() || r.best() <= 0.0 {
                continue;
            }
            let kept = r.median() / r.best();
            if widest.is_none_or(|(w, _, _)| kept < w) {
                widest = Some((kept, client, mode));
            }
        }
    }
    if let Some((kept, client, mode)) = widest.filter(|(kept, _, _)| *kept < 0.8) {
        println!(
            "noisy run: {client}'s median round ({}) reached {:.0}% of its best; ratios of best \
             runs move between runs like this one. The CPU per call, a run pinned to one CPU \
             (taskset -c 0) or --instructions repeat better.",
            mode.label().trim(),
            kept * 100.0
        );
    }
}

/// A ratio, or `-`.
pub(super) fn show(r: Option<f64>) -> String {
    r.map_or_else(|| "-".to_owned(), |r| format!("{r:.2}x"))
}

/// A ratio against its target.
pub(super) fn verdict(r: Option<f64>, target: f64) -> String {
    match r {
        Some(r) if r >= target => format!("{r:.2}x, met"),
        Some(r) => format!("{r:.2}x, NOT met"),
        None => "not measured".to_owned(),
    }
}

/// Ours against client `i` (0: the second client, 1: the floor) in `mode`.
pub(super) fn ratio_in(ratios: &Ratios, mode: Mode, i: usize) -> Option<f64> {
    ratios
        .iter()
        .find(|(m, _)| *m == mode)
        .and_then(|(_, r)| r.get(i).copied().flatten())
}
