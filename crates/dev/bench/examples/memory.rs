//! What a loaded and analysed run holds in memory, per operation: the heap live after each
//! stage (a counting allocator), for the memory figures of docs/PERFORMANCE.md (issue 11).
//!
//! `cargo run --release -p ncclscope-bench --example memory -- DIR [--tsv]` loads every log and export of
//! a generated run, analyses it and builds its timeline, as the page's worker does. `--tsv` adds a
//! last line for the benchmark command (`ncclscope-bench memory`): operations, then the bytes live
//! when loaded, analysed and with the timeline, then the peak.

use load::Session;
use pipeline::{analyse, UserSizes};
use std::path::PathBuf;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

fn main() {
    let dir = PathBuf::from(std::env::args().nth(1).expect("usage: memory DIR"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("log" | "sqlite")
            )
        })
        .collect();
    files.sort();
    let mb = |b: usize| b as f64 / 1e6;
    let mut session = Session::default();
    let (mut log_bytes, mut export_bytes) = (0usize, 0usize);
    for f in &files {
        let before = counting_alloc::live();
        ncclscope_cli::inputs::load(&mut session, f);
        let grew = counting_alloc::live() - before;
        if f.extension().is_some_and(|e| e == "log") {
            log_bytes += grew;
        } else {
            export_bytes += grew;
        }
    }
    let ops: usize = session.logs().iter().map(|l| l.parsed.ops.len()).sum();
    let kernels: usize = session
        .exports()
        .iter()
        .map(|e| e.export.kernels.len())
        .sum();
    let loaded = counting_alloc::live();
    println!(
        "{} files: {ops} log operations, {kernels} NCCL kernels",
        files.len()
    );
    let per = |b: usize| b as f64 / ops.max(1) as f64;
    println!(
        "loaded:   {:8.1} MB live ({:.0} B per operation: logs {:.0} B, exports {:.0} B)",
        mb(loaded),
        per(loaded),
        per(log_bytes),
        per(export_bytes)
    );
    let (mut op_rows, mut kernel_rows, mut nvtx) = (0.0, 0.0, 0usize);
    for l in session.logs() {
        op_rows += l.parsed.ops.bytes_per_op() * l.parsed.ops.len() as f64;
    }
    for e in session.exports() {
        kernel_rows += e.export.kernels.bytes_per_kernel() * e.export.kernels.len() as f64;
        nvtx += e.export.nvtx.len();
    }
    println!(
        "  of which per operation: log operations {:.0} B, NCCL kernels {:.0} B; {:.2} NVTX ranges",
        op_rows / ops.max(1) as f64,
        kernel_rows / ops.max(1) as f64,
        nvtx as f64 / ops.max(1) as f64
    );
    let analysis = analyse(&session, &UserSizes::default());
    let analysed = counting_alloc::live();
    println!(
        "analysed: {:8.1} MB live (+{:.0} B per operation), peak {:.1} MB",
        mb(analysed),
        per(analysed - loaded),
        mb(counting_alloc::peak())
    );
    // The analysis' largest parts, estimated from their sizes.
    let (mut ops_b, mut kern_b, mut match_b) = (0.0, 0.0, 0usize);
    for pm in &analysis.alignments.processes {
        ops_b += pm.log_ops.bytes_per_op() * pm.log_ops.len() as f64;
        kern_b += pm.kernels.bytes_per_kernel() * pm.kernels.len() as f64;
        match_b += pm.alignment.per_kernel.heap_bytes();
    }
    println!(
        "  of which per operation: aligned operations {:.0} B, kernels {:.0} B, kernel matches {:.0} B",
        ops_b / ops.max(1) as f64,
        kern_b / ops.max(1) as f64,
        per(match_b)
    );
    let timeline = timeline::build(&session, &analysis.processes, &analysis.clocks);
    let with_timeline = counting_alloc::live();
    println!(
        "timeline: {:8.1} MB live (+{:.0} B per operation), peak {:.1} MB",
        mb(with_timeline),
        per(with_timeline - analysed),
        mb(counting_alloc::peak())
    );
    println!(
        "in all {:.0} B per operation held; {} tracks",
        per(with_timeline),
        timeline.tracks.len()
    );
    if std::env::args().any(|a| a == "--tsv") {
        println!(
            "{ops}\t{loaded}\t{analysed}\t{with_timeline}\t{}",
            counting_alloc::peak()
        );
    }
}
