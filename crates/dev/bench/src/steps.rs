//! The step analysis (issue 32): StageFrontier over a stage matrix built from stage records,
//! against a plain per-stage max/mean pass over the same records (what a dashboard computes),
//! measured in the same run; and reading the records from a stage file (reported, no target).

use crate::growth::exponent;
use crate::report::{Report, Verdict};
use crate::{best_kept, Options, Scale};
use analyses::steps::{frontier, MatrixBuilder, Settings};
use ingest_stages::StageFile;

const TARGET: &str =
    "steps: 256 ranks × 1 000 steps × 8 stages (2 M records) analysed < 1 s natively (issue 32)";

/// (ranks, steps, stages) per size.
pub fn sizes(scale: Scale) -> Vec<(u32, u64, u32)> {
    match scale {
        Scale::Quick => vec![(64, 50, 8), (64, 100, 8), (64, 200, 8)],
        Scale::Standard => vec![(256, 250, 8), (256, 500, 8), (256, 1000, 8)],
    }
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

/// Ours: the matrix from the records, then the frontier, as the command runs it.
fn analyse(f: &StageFile) -> (usize, f64) {
    let mut b = MatrixBuilder::new();
    let ids: Vec<u32> = f.stage_names.iter().map(|n| b.stage(n)).collect();
    for r in &f.records {
        b.push(r.step, r.rank, ids[r.stage as usize], r.duration_ms);
    }
    let m = b.finish();
    let fr = frontier(&m, &Settings::default());
    (fr.per_step.len(), fr.window.frontier_ms)
}

/// The reference: per step and stage, the maximum and the mean over ranks, summed (M and A).
fn max_mean(f: &StageFile) -> (f64, f64) {
    let stages = f.stage_names.len();
    let steps = f.records.iter().map(|r| r.step).max().map_or(0, |s| s + 1) as usize;
    let mut max = vec![0.0f64; steps * stages];
    let mut sum = vec![0.0f64; steps * stages];
    let mut n = vec![0u32; steps * stages];
    for r in &f.records {
        let i = r.step as usize * stages + r.stage as usize;
        max[i] = max[i].max(r.duration_ms);
        sum[i] += r.duration_ms;
        n[i] += 1;
    }
    let mean: f64 = sum
        .iter()
        .zip(&n)
        .map(|(s, &n)| s / f64::from(n.max(1)))
        .sum();
    (max.iter().sum(), mean)
}

pub fn run(opts: &Options, report: &mut Report) {
    report.section(
        "Step analysis (issue 32)",
        "Ours: the stage matrix built from the records (steps and ranks indexed, repeats expanded \
         per microbatch, flaws checked) and StageFrontier over it (frontier, advances, leaders, \
         slack, shares, routing, bounds, windows), as `ncclscope analyze` runs it on a stage \
         file. Reference: one pass computing each step's per-stage maximum and mean over ranks \
         (a dashboard's M and A). Best of 3 each. Reading: the stage file's CSV parsed into the \
         records (`ingest_stages`, no target). Records: generated, 8 stages per rank and step.",
    );
    report.row(&[
        "ranks × steps × stages",
        "records",
        "read CSV s",
        "ours s",
        "max/mean s",
        "ours / max-mean",
    ]);
    let mut points = Vec::new();
    let mut at_target: Option<f64> = None;
    for (ranks, steps, stages) in sizes(opts.scale) {
        let text = stage_file(ranks, steps, stages);
        let (read_s, file) = best_kept(1, || {
            ingest_stages::read_stage_file("bench.csv", text.as_bytes())
        });
        drop(text);
        let records = file.records.len();
        let (ours_s, (n, _)) = best_kept(3, || analyse(&file));
        assert_eq!(n as u64, steps, "every step analysed");
        let (ref_s, _) = best_kept(3, || max_mean(&file));
        points.push((records as f64, ours_s));
        if ranks == 256 && steps == 1000 && stages == 8 {
            at_target = Some(ours_s);
        }
        report.row(&[
            &format!("{ranks} × {steps} × {stages}"),
            &format!("{:.2} M", records as f64 / 1e6),
            &format!("{read_s:.2}"),
            &format!("{ours_s:.3}"),
            &format!("{ref_s:.3}"),
            &format!("{:.1}×", ours_s / ref_s),
        ]);
    }
    report.growth("time of ours vs records", exponent(&points));
    match at_target {
        Some(t) => report.target(TARGET, format!("{t:.2} s"), Verdict::of(true, t < 1.0)),
        None => {
            // A quick run projects the largest size linearly from its own.
            let (n, t) = points.last().copied().unwrap_or((1.0, 0.0));
            let projected = t * 2_048_000.0 / n;
            report.target(
                TARGET,
                format!("{projected:.2} s projected from {:.2} M records", n / 1e6),
                Verdict::NotMeasured,
            );
        }
    }
}
