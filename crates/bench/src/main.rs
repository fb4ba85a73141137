//! `ncclscope-bench`: the benchmarks behind docs/PERFORMANCE.md, in one command.
//!
//! Every figure is measured beside a reference in the same run (this machine is shared and
//! noisy, so ratios mean more than absolute times), at three or more sizes with the fitted growth
//! exponent. Output: Markdown on standard output, and with `--out FILE` into that file.
//!
//! ```text
//! cargo run --release -p ncclscope-bench -- [--quick] [--out FILE] [parse] [sqlite] [e2e]
//! ```
//! With no benchmark named, all of them run. `--quick` uses small inputs (a smoke run).
//! Inputs are generated once into `target/bench-inputs/`.

mod end_to_end;
mod growth;
mod inputs;
mod parse;
mod regex_baseline;
mod sqlite;

use std::fmt::Write as _;
use std::time::Instant;

/// The Markdown report being written.
#[derive(Default)]
pub struct Report {
    text: String,
}

impl Report {
    pub fn section(&mut self, title: &str, what: &str) {
        let text = format!("\n### {title}\n\n{what}\n\n");
        print!("{text}");
        self.text.push_str(&text);
    }

    /// A table row; the first row of a section is its header.
    pub fn row(&mut self, cells: &[&str]) {
        let header = !self.text.ends_with("|\n");
        let mut line = format!("| {} |\n", cells.join(" | "));
        if header {
            line.push_str(&format!("|{}\n", "---|".repeat(cells.len())));
        }
        print!("{line}");
        self.text.push_str(&line);
    }

    pub fn growth(&mut self, what: &str, k: Option<f64>) {
        let k = k.map_or("n/a".to_string(), |k| format!("{k:.2}"));
        let line = format!("\nGrowth ({what}): time ∝ size^{k}.\n");
        print!("{line}");
        self.text.push_str(&line);
    }
}

/// The best wall time of `n` runs of `f`, seconds.
pub fn best_of(n: usize, mut f: impl FnMut()) -> f64 {
    (0..n.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

/// What the figures were measured on.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mem_gb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1e6);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().next().unwrap_or("?");
    format!("{cpu}, {cores} cores, {mem_gb:.0} GB RAM; load average {load} at the start")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let named: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| ["parse", "sqlite", "e2e"].contains(a))
        .collect();
    let wants = |b: &str| named.is_empty() || named.contains(&b);

    let mut report = Report::default();
    let _ = writeln!(report.text, "Machine: {}.", machine());
    println!("{}", report.text.trim_end());
    if wants("parse") {
        let sizes: &[usize] = if quick { &[5, 10, 20] } else { &[40, 160, 640] };
        parse::run(sizes, &mut report);
    }
    if wants("sqlite") {
        let iterations: &[u32] = if quick { &[1, 2, 4] } else { &[10, 40, 160] };
        sqlite::run(iterations, &mut report);
    }
    if wants("e2e") {
        let runs = end_to_end::standard_runs(if quick { 0.02 } else { 1.0 });
        end_to_end::run(&runs, &mut report);
    }
    if let Some(path) = out {
        std::fs::write(&path, &report.text).unwrap_or_else(|e| {
            eprintln!("ncclscope-bench: {path}: {e}");
            std::process::exit(2);
        });
    }
}
