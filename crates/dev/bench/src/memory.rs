//! Memory: the bytes a loaded and analysed run holds per log operation, and its load's peak,
//! against issue 11's budget (10 million enriched operations in under 1 GB of wasm memory: under
//! 100 bytes an operation). Measured by this crate's `memory` example (its counting allocator;
//! this crate keeps no allocator of its own), built and run as a child process on the end-to-end
//! benchmark's 64-rank runs; the page's own wasm memory is in the end-to-end section.

use crate::end_to_end::Run;
use crate::growth::exponent;
use crate::report::{Report, Verdict};
use std::path::Path;

/// The budget per operation: 1 GB for 10⁷ operations.
const BUDGET_BYTES_PER_OP: f64 = 100.0;

/// One run's figures, in bytes.
struct Row {
    label: String,
    ops: f64,
    loaded: f64,
    analysed: f64,
    held: f64,
    peak: f64,
}

pub fn run(runs: &[Run<'_>], report: &mut Report) {
    report.section(
        "Memory held per operation (issue 11)",
        "Every log and export of a run loaded, analysed and its timeline built, as the page's \
         loading worker does, under a counting allocator (`crates/dev/bench/examples/memory.rs`, \
         run as a child process on the 64-rank runs of the end-to-end section): the bytes live \
         after each stage and the peak, per log operation (the requested sizes; the allocator's own \
         overhead is not in them). Target (issue 11): 10 million enriched operations in under \
         1 GB of wasm memory, i.e. under 100 B an operation held and at the peak (a wasm memory \
         never shrinks: its size is the peak's).",
    );
    let rows: Result<Vec<Row>, String> = crate::example::built("ncclscope-bench", "memory")
        .and_then(|binary| runs.iter().map(|r| measure(&binary, r)).collect());
    let rows = match rows {
        Ok(rows) if !rows.is_empty() => rows,
        Ok(_) => {
            report.line("Not measured: no 64-rank run.");
            return;
        }
        Err(e) => {
            report.line(&format!("Not measured: {e}."));
            return;
        }
    };
    report.row(&[
        "run",
        "operations",
        "loaded B/op",
        "+ analysis B/op",
        "+ timeline B/op",
        "held B/op",
        "peak B/op",
        "peak MB",
    ]);
    for r in &rows {
        let per = |b: f64| format!("{:.0}", b / r.ops);
        report.row(&[
            &r.label,
            &format!("{:.0}", r.ops),
            &per(r.loaded),
            &per(r.analysed - r.loaded),
            &per(r.held - r.analysed),
            &per(r.held),
            &per(r.peak),
            &format!("{:.1}", r.peak / 1e6),
        ]);
    }
    let pts = |f: &dyn Fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter().map(|r| (r.ops, f(r))).collect()
    };
    report.growth("bytes held vs operations", exponent(&pts(&|r| r.held)));
    report.growth("peak bytes vs operations", exponent(&pts(&|r| r.peak)));
    let last = rows.last().expect("rows");
    let (held, peak) = (last.held / last.ops, last.peak / last.ops);
    report.target(
        "10 million enriched operations in under 1 GB of wasm memory (issue 11)",
        format!(
            "{held:.0} B held and {peak:.0} B at the peak per operation natively ({} operations): \
             {:.1} / {:.1} GB at 10⁷",
            last.ops,
            held * 1e7 / 1e9,
            peak * 1e7 / 1e9
        ),
        Verdict::of(
            true,
            held <= BUDGET_BYTES_PER_OP && peak <= BUDGET_BYTES_PER_OP,
        ),
    );
}

/// Runs the built `memory DIR --tsv` on one run.
fn measure(binary: &Path, run: &Run<'_>) -> Result<Row, String> {
    let text = crate::example::output(
        binary,
        &[run.dir().display().to_string(), "--tsv".to_string()],
    )?;
    let f: Vec<f64> = text
        .lines()
        .last()
        .unwrap_or_default()
        .split('\t')
        .filter_map(|x| x.parse().ok())
        .collect();
    let [ops, loaded, analysed, held, peak] = f[..] else {
        return Err(format!("the memory example printed {text:?}"));
    };
    Ok(Row {
        label: format!("{} × {} ops", run.layout.label, run.ops_per_rank),
        ops,
        loaded,
        analysed,
        held,
        peak,
    })
}
