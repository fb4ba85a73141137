//! The two passes the step benchmark times (issue 32), shared word for word by the native
//! benchmark (`steps.rs`) and the wasm benchmark page (`crates/dev/bench/wasm`, which includes
//! this file), so that the native and in-page figures time the same code.

use analyses::steps::{frontier, MatrixBuilder, Settings};
use ingest_stages::StageFile;

/// Ours: the matrix from the records, then the frontier, as the command runs it; (steps
/// analysed, the window's frontier in ms).
pub fn analyse(f: &StageFile) -> (usize, f64) {
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
pub fn max_mean(f: &StageFile) -> (f64, f64) {
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
