//! `ncclscope-bench`: the benchmarks behind docs/PERFORMANCE.md, in one command.
//!
//! Every figure is measured beside a reference in the same run (this machine is shared and
//! noisy, so ratios mean more than absolute times), at three or more sizes with the fitted growth
//! exponent. Output: Markdown on standard output, and with `--out FILE` into that file.
//!
//! ```text
//! cargo run --release -p ncclscope-bench -- [--quick] [--no-browser] [--out FILE]
//!     [parse] [sqlite] [kineto] [align] [memory] [e2e] [render] [patterns] [steps] [diff]
//! ```
//! With no benchmark named, all of them run, the end-to-end ones up to their target sizes (see
//! `end_to_end`). `--quick` uses small inputs (a smoke run); `--no-browser` leaves out every Chromium measurement (their rows then say so). Inputs are
//! generated once into `target/bench-inputs/`, before any benchmark, and that time is reported.
//! `scripts/bench` builds what the browser side needs (the page in `dist/`, the wasm benchmark
//! page in `target/bench-web/`, the aligner's `bench_scale` example) and runs this.

mod align;
mod browser;
mod diff;
mod end_to_end;
mod example;
mod growth;
mod inputs;
mod kineto;
mod kineto_page;
mod memory;
mod parse;
mod patterns;
mod regex_baseline;
mod render;
mod report;
mod sqlite;
mod stage_passes;
mod steps;

use report::Report;
use std::time::Instant;

/// The families, in the order they run (cheapest first, so that a smoke run fails early).
const FAMILIES: [&str; 10] = [
    "parse", "sqlite", "kineto", "align", "memory", "e2e", "render", "patterns", "steps", "diff",
];

/// How big the inputs are.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Scale {
    /// Small inputs: a smoke run of about a minute.
    Quick,
    /// The suite: every family, the end-to-end targets at their own sizes, within 15 minutes
    /// on a 2-core machine.
    Standard,
}

/// What to run and how big.
pub struct Options {
    pub scale: Scale,
    /// Chromium measurements (the wasm parser, sql.js, the page's end to end and frames).
    pub browser: bool,
}

/// The best wall time of `n` runs of `f`, seconds.
pub fn best_of(n: usize, f: impl FnMut()) -> f64 {
    best_kept(n, f).0
}

/// The best wall time of `rounds` runs of `f` (at least one), seconds, and the last run's
/// result. Each result is freed outside the time: freeing a parse's records is not parsing
/// (and `wc -l` keeps nothing).
pub fn best_kept<T>(rounds: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let t = Instant::now();
    let mut last = f();
    let mut best = t.elapsed().as_secs_f64();
    for _ in 1..rounds {
        let t = Instant::now();
        let out = f();
        best = best.min(t.elapsed().as_secs_f64());
        drop(std::mem::replace(&mut last, out));
    }
    (best, last)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .cloned();
    for a in &args {
        let known = ["--quick", "--no-browser", "--out"].contains(&a.as_str())
            || FAMILIES.contains(&a.as_str())
            || Some(a) == out.as_ref();
        if !known {
            eprintln!(
                "ncclscope-bench: unknown argument {a:?}\nusage: ncclscope-bench [--quick] \
                 [--no-browser] [--out FILE] [{}]...",
                FAMILIES.join("] [")
            );
            std::process::exit(2);
        }
    }
    let named: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| FAMILIES.contains(a))
        .collect();
    let wants = |b: &str| named.is_empty() || named.contains(&b);
    let mut opts = Options {
        scale: if args.iter().any(|a| a == "--quick") {
            Scale::Quick
        } else {
            Scale::Standard
        },
        browser: !args.iter().any(|a| a == "--no-browser"),
    };

    let mut report = Report::default();
    report.line(&format!("Machine: {}.", report::machine()));
    if opts.browser {
        if let Err(why) = browser::check() {
            report.line(&format!(
                "Browser measurements skipped: {why}. (`scripts/bench` builds what they need.)"
            ));
            opts.browser = false;
        }
    }
    // Inputs first, so that the benchmarks' own time is measured apart from generating them.
    let quick = opts.scale == Scale::Quick;
    let sizes = parse::sizes(quick);
    let iterations = sqlite::iterations(quick);
    let layouts = end_to_end::layouts(opts.scale);
    let started = Instant::now();
    if wants("parse") {
        sizes.iter().for_each(|&mb| drop(inputs::log_of_size(mb)));
    }
    if wants("sqlite") {
        iterations
            .iter()
            .for_each(|&it| drop(sqlite::export_of(it)));
    }
    let kineto_sizes = kineto::sizes(quick);
    if wants("kineto") {
        kineto_sizes
            .iter()
            .for_each(|&mb| drop(kineto::trace_of_size(mb)));
        drop(kineto_page::traces(kineto_page::mb_per_rank(opts.scale)));
    }
    if wants("e2e") || wants("render") || wants("memory") {
        end_to_end::runs(&layouts)
            .iter()
            .for_each(|r| drop(r.dir()));
    }
    if wants("patterns") {
        patterns::runs(&layouts).iter().for_each(|r| drop(r.dir()));
    }
    if wants("steps") {
        for (ranks, steps, stages) in steps::sizes(opts.scale) {
            drop(steps::stage_file_path(ranks, steps, stages));
        }
    }
    let diff_sizes = diff::sizes(opts.scale);
    if wants("diff") {
        diff_sizes.iter().for_each(|&ops| drop(diff::pair(ops)));
    }
    let (generated, reused) = inputs::counts();
    let inputs_s = started.elapsed().as_secs_f64();
    report.line(&format!(
        "Inputs: {generated} generated in {inputs_s:.0} s, {reused} reused from `target/bench-inputs/` \
         (generated once, then kept)."
    ));

    if wants("parse") {
        parse::run(&sizes, &opts, &mut report);
    }
    if wants("sqlite") {
        sqlite::run(&iterations, &opts, &mut report);
    }
    if wants("kineto") {
        kineto::run(&kineto_sizes, &opts, &mut report);
        kineto_page::run(&opts, &mut report);
    }
    if wants("align") {
        align::run(&opts, &mut report);
    }
    if wants("memory") {
        // The 64-rank layout's runs below its target size (the target run is minutes long).
        let runs: Vec<_> = end_to_end::runs(&layouts)
            .into_iter()
            .filter(|r| {
                r.layout.label == "64 ranks" && r.ops_per_rank < r.layout.target_ops_per_rank
            })
            .collect();
        memory::run(&runs, &mut report);
    }
    let mut page_loads = Vec::new();
    if wants("e2e") || wants("render") {
        let which = (wants("e2e"), wants("render"), wants("patterns"));
        page_loads = end_to_end::run(&layouts, which, &opts, &mut report);
    }
    if wants("patterns") {
        patterns::run(&layouts, &opts, &page_loads, &mut report);
    }
    if wants("steps") {
        steps::run(&opts, &mut report);
    }
    if wants("diff") {
        diff::run(&diff_sizes, &mut report);
    }
    report.targets();
    report.line(&format!(
        "\nBenchmarks (after the inputs): {:.0} s; the machine's load average at the end: {}.",
        started.elapsed().as_secs_f64() - inputs_s,
        report::load_average()
    ));
    if let Some(path) = out {
        std::fs::write(&path, report.text()).unwrap_or_else(|e| {
            eprintln!("ncclscope-bench: {path}: {e}");
            std::process::exit(2);
        });
    }
}
