//! The step analysis (issue 32): StageFrontier over a stage matrix built from stage records,
//! against a plain per-stage max/mean pass over the same records (what a dashboard computes),
//! measured in the same run; and reading the records from a stage file (reported, no target).
//! The same file read and the same two passes (`stage_passes.rs`) in the wasm benchmark page in
//! a Chromium worker (`tests/browser/bench/wasm.mjs steps`), right after the native ones.

use crate::growth::exponent;
use crate::report::{Report, Verdict};
use crate::stage_passes::{analyse, max_mean};
use crate::{best_kept, browser, Options, Scale};
use serde_json::Value;
use std::path::PathBuf;

const TARGET: &str =
    "steps: 256 ranks × 1 000 steps × 8 stages (2 M records) analysed < 1 s natively (issue 32)";
const PAGE_TARGET: &str =
    "steps: the same 2 M records analysed < 3 s in the page (wasm in a Chromium worker; issue 32)";

/// (ranks, steps, stages) per size.
pub fn sizes(scale: Scale) -> Vec<(u32, u64, u32)> {
    match scale {
        Scale::Quick => vec![(64, 50, 8), (64, 100, 8), (64, 200, 8)],
        Scale::Standard => vec![(256, 250, 8), (256, 500, 8), (256, 1000, 8)],
    }
}

/// The stage file of `ranks × steps × stages` rows, written once into `target/bench-inputs/`.
pub fn stage_file_path(ranks: u32, steps: u64, stages: u32) -> PathBuf {
    let path = crate::inputs::dir().join(format!("steps-{ranks}x{steps}x{stages}.csv"));
    if !crate::inputs::cached(&path) {
        let part = path.with_extension("part");
        std::fs::write(&part, stage_file(ranks, steps, stages)).expect("write a stage file");
        std::fs::rename(&part, &path).expect("rename a stage file into place");
    }
    path
}

/// A stage file of `ranks × steps × stages` rows: stages of a few ms with jitter, one slow rank
/// whose third stage stalls every 50th step.
fn stage_file(ranks: u32, steps: u64, stages: u32) -> String {
    let mut out = String::with_capacity((ranks as u64 * steps * stages as u64 * 24) as usize);
    out.push_str("step,rank,stage,duration_ms\n");
    let mut z: u64 = 0x9E37_79B9_7F4A_7C15;
    for step in 0..steps {
        for rank in 0..ranks {
            for s in 0..stages {
                z ^= z << 13;
                z ^= z >> 7;
                z ^= z << 17;
                let jitter = (z % 1000) as f64 / 1000.0;
                let stall = if rank == 7 && s == 2 && step % 50 == 0 {
                    40.0
                } else {
                    0.0
                };
                let ms = 2.0 + f64::from(s) + jitter + stall;
                out.push_str(&format!("{step},{rank},stage{s},{ms:.3}\n"));
            }
        }
    }
    out
}

pub fn run(opts: &Options, report: &mut Report) {
    report.section(
        "Step analysis (issue 32)",
        "Ours: the stage matrix built from the records (steps and ranks indexed, repeats expanded \
         per microbatch, flaws checked) and StageFrontier over it (frontier, advances, leaders, \
         slack, shares, routing, bounds, windows), as `ncclscope analyze` runs it on a stage \
         file. Reference: one pass computing each step's per-stage maximum and mean over ranks \
         (a dashboard's M and A). Best of 3 each. Reading: the stage file's CSV parsed into the \
         records (`ingest_stages`, no target). Records: generated, 8 stages per rank and step. \
         Page: the same file read and the same two passes (`crates/dev/bench/src/stage_passes.rs`) \
         built for wasm32 with the page's profile (`crates/dev/bench/wasm`), in a Chromium Web \
         Worker (`tests/browser/bench/wasm.mjs steps`), right after the native ones; best of 3.",
    );
    report.row(&[
        "ranks × steps × stages",
        "records",
        "read CSV s",
        "ours s",
        "max/mean s",
        "ours / max-mean",
        "page: read CSV s",
        "page: ours s",
        "page: max/mean s",
        "page ours / max-mean",
        "page / native (ours)",
    ]);
    let (mut points, mut page_points) = (Vec::new(), Vec::new());
    let mut at_target: Option<(f64, Result<f64, String>)> = None;
    for (ranks, steps, stages) in sizes(opts.scale) {
        let path = stage_file_path(ranks, steps, stages);
        let bytes = std::fs::read(&path).expect("read the stage file");
        let (read_s, file) = best_kept(1, || ingest_stages::read_stage_file("bench.csv", &bytes));
        drop(bytes);
        let records = file.records.len();
        let (ours_s, (n, frontier_ms)) = best_kept(3, || analyse(&file));
        assert_eq!(n as u64, steps, "every step analysed");
        let (ref_s, _) = best_kept(3, || max_mean(&file));
        drop(file);
        points.push((records as f64, ours_s));
        let page = in_page(&path, opts).and_then(|v| agrees(v, records, n, frontier_ms));
        let mut cells = vec![
            format!("{ranks} × {steps} × {stages}"),
            format!("{:.2} M", records as f64 / 1e6),
            format!("{read_s:.2}"),
            format!("{ours_s:.3}"),
            format!("{ref_s:.3}"),
            format!("{:.1}×", ours_s / ref_s),
        ];
        match &page {
            Ok(v) => {
                let (read, ours, reference) = (
                    browser::best(v, "read_s"),
                    browser::best(v, "analyse_s"),
                    browser::best(v, "max_mean_s"),
                );
                page_points.push((records as f64, ours));
                cells.extend([
                    format!("{read:.2}"),
                    format!("{ours:.3}"),
                    format!("{reference:.3}"),
                    format!("{:.1}×", ours / reference),
                    format!("{:.1}×", ours / ours_s),
                ]);
            }
            Err(e) => cells.push(format!("not measured: {e}")),
        }
        report.row(&cells.iter().map(String::as_str).collect::<Vec<_>>());
        if ranks == 256 && steps == 1000 && stages == 8 {
            let page_s = page.map(|v| browser::best(&v, "analyse_s"));
            at_target = Some((ours_s, page_s));
        }
    }
    report.growth("time of ours vs records", exponent(&points));
    report.growth(
        "time of ours in the page vs records",
        exponent(&page_points),
    );
    targets(at_target, &points, &page_points, report);
}

/// The wasm benchmark page's read and passes over the stage file at `path`.
fn in_page(path: &std::path::Path, opts: &Options) -> Result<Value, String> {
    if !opts.browser {
        return Err("browser measurements are off in this run".into());
    }
    browser::run(
        "wasm.mjs",
        &[
            "steps".into(),
            path.display().to_string(),
            "--rounds=3".into(),
        ],
    )
}

/// The page's result, if it read as many records, analysed as many steps and found the same
/// frontier as the native build.
fn agrees(v: Value, records: usize, steps: usize, frontier_ms: f64) -> Result<Value, String> {
    let (r, s, f) = (
        browser::num(&v, "records"),
        browser::num(&v, "steps"),
        browser::num(&v, "frontier_ms"),
    );
    if r as usize != records || s as usize != steps || (f - frontier_ms).abs() > 1e-6 * frontier_ms
    {
        return Err(format!(
            "the page read {r} records, {s} steps, frontier {f} ms; natively {records}, {steps}, \
             {frontier_ms}"
        ));
    }
    Ok(v)
}

/// The native and in-page targets, at the target size; a quick run projects the largest size
/// linearly from its own.
fn targets(
    at_target: Option<(f64, Result<f64, String>)>,
    points: &[(f64, f64)],
    page_points: &[(f64, f64)],
    report: &mut Report,
) {
    let projected = |pts: &[(f64, f64)]| {
        let (n, t) = pts.last().copied().unwrap_or((1.0, 0.0));
        format!(
            "{:.2} s projected from {:.2} M records",
            t * 2_048_000.0 / n,
            n / 1e6
        )
    };
    match at_target {
        Some((t, page)) => {
            report.target(TARGET, format!("{t:.2} s"), Verdict::of(true, t < 1.0));
            match page {
                Ok(p) => report.target(
                    PAGE_TARGET,
                    format!("{p:.2} s ({:.1}× native)", p / t),
                    Verdict::of(true, p < 3.0),
                ),
                Err(e) => report.target(PAGE_TARGET, e, Verdict::NotMeasured),
            }
        }
        None => {
            report.target(TARGET, projected(points), Verdict::NotMeasured);
            let page = if page_points.is_empty() {
                "—".into()
            } else {
                projected(page_points)
            };
            report.target(PAGE_TARGET, page, Verdict::NotMeasured);
        }
    }
}
