//! Time and peak heap of the banded aligner (`nw::align_fast`) against sequence length, and of
//! the full-matrix reference (`nw::align_full`) where it fits, with the rich scoring over
//! realistic symbols (op mix of a training step, three datatypes, 10 % of each side dropped).
//! Release build:
//!
//! `cargo run --release -p align --example bench_scale [-- MAX_LEN [FULL_MAX_LEN]] [--sizes=N,N,...] [--tsv]`
//!
//! Defaults: lengths 10³ … 10⁶ per side; the full matrix up to 10⁴ (one 32-bit back-pointer per
//! cell: 400 MB at 10⁴ × 10⁴, 40 GB at 10⁵). `--sizes` lists the lengths instead (each still
//! at most MAX_LEN); `--tsv` prints one tab-separated line per length for `ncclscope-bench`: n,
//! banded wall s, CPU s, peak heap bytes, then the same for the full matrix (`-` where not run),
//! and whether the scores agree.

mod bench_common;

use align::nw::{align_fast, align_full};
use align::scoring::{Scorer, Scoring};
use std::time::Instant;

#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;

/// CPU seconds of this process so far (Linux `/proc`, 10 ms ticks): the machine is shared, so
/// wall time alone says more about the neighbours than about the aligner.
fn cpu_secs() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which ends with ')'): utime and stime are 12th and 13th.
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    f.iter().sum::<f64>() / 100.0
}

/// One measurement: wall seconds, CPU seconds, peak heap above the start.
struct Cost {
    wall: f64,
    cpu: f64,
    heap: usize,
}

impl std::fmt::Display for Cost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.4} s ({:.4} s CPU) | {:.1} MB",
            self.wall,
            self.cpu,
            self.heap as f64 / 1e6
        )
    }
}

/// Runs `f` `reps` times (small inputs: enough to see CPU ticks), returning its result and
/// the cost of one run.
fn measure<R>(reps: usize, f: impl Fn() -> R) -> (R, Cost) {
    let base = counting_alloc::live();
    counting_alloc::take_peak();
    let (t, c) = (Instant::now(), cpu_secs());
    let mut r = f();
    for _ in 1..reps {
        r = f();
    }
    let cost = Cost {
        wall: t.elapsed().as_secs_f64() / reps as f64,
        cpu: (cpu_secs() - c) / reps as f64,
        heap: counting_alloc::peak() - base,
    };
    (r, cost)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let max = numbers.first().copied().unwrap_or(1_000_000);
    let full_max = numbers.get(1).copied().unwrap_or(10_000);
    let tsv = args.iter().any(|a| a == "--tsv");
    let sizes: Vec<usize> = match args.iter().find_map(|a| a.strip_prefix("--sizes=")) {
        Some(list) => list.split(',').filter_map(|n| n.parse().ok()).collect(),
        None => std::iter::successors(Some(1_000), |n| Some(n * 10))
            .take_while(|&n| n <= max)
            .collect(),
    };
    let scoring = Scoring::rich();
    if !tsv {
        println!("| operations per side | banded time | banded peak heap | full-matrix time | full-matrix peak heap | CPU time ratio full / banded | same score |");
        println!("|---|---|---|---|---|---|---|");
    }
    for n in sizes.into_iter().filter(|&n| n <= max) {
        let (k, l) = bench_common::sequences(n, n as u64);
        let sc = Scorer {
            scoring: &scoring,
            kernels: &k,
            log: &l,
            time: None,
        };
        let (fast, cf) = measure((100_000 / n).max(1), || align_fast(&sc, k.len(), l.len()));
        let full = (n <= full_max)
            .then(|| measure((10_000 / n).max(1), || align_full(&sc, k.len(), l.len())));
        if tsv {
            let (full_cost, same) = match &full {
                Some((f, cr)) => (
                    format!("{}\t{}\t{}", cr.wall, cr.cpu, cr.heap),
                    (f.score == fast.score).to_string(),
                ),
                None => ("-\t-\t-".to_string(), "-".to_string()),
            };
            println!(
                "{n}\t{}\t{}\t{}\t{full_cost}\t{same}",
                cf.wall, cf.cpu, cf.heap
            );
            continue;
        }
        match full {
            Some((full, cr)) => println!(
                "| {n} | {cf} | {cr} | {:.0}× | {} |",
                cr.cpu / cf.cpu.max(1e-4),
                full.score == fast.score
            ),
            None => println!(
                "| {n} | {cf} | not run (would need {:.0} GB) | | | |",
                (4 * (k.len() + 1) * (l.len() + 1)) as f64 / 1e9
            ),
        }
    }
}
