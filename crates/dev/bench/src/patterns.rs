//! Communication patterns (issue 34): the rank-to-rank matrix and the run's own performance
//! model of the end-to-end benchmark's 256-rank runs (`huge-1024`'s model on 32 nodes, TP8 PP4
//! DP8), natively, against issue 34's target: the matrix and the model of the target run (about
//! 3.6 million kernels) in under 2 s. The On-Off periodicity is timed beside them (no target).
//!
//! Each run is loaded and analysed first (`pipeline::analyse`, as `ncclscope analyze`; not in the
//! figures), then timed, best of three: `Prepared::of` (every logged operation summed per call
//! site, every matched kernel's time attributed) with `comm_matrix` and `perf_model`. Reference:
//! one walk over every matched kernel reading its times and first line's call (the least any
//! analysis of every kernel costs), so the ratio says how many such walks the analyses cost.

use crate::end_to_end::{Layout, Run};
use crate::growth::exponent;
use crate::report::{Report, Verdict};
use crate::{best_kept, best_of, Scale};
use analyses::patterns::{comm_matrix, perf_model, periodicity, Prepared, StepSource};
use load::Session;
use pipeline::{analyse, UserSizes};
use std::time::Instant;

/// Issue 34's target for the matrix and the model, seconds.
const TARGET_S: f64 = 2.0;

/// The 256-rank runs of the end-to-end layouts.
pub fn runs(layouts: &[Layout]) -> Vec<Run<'_>> {
    crate::end_to_end::runs(layouts)
        .into_iter()
        .filter(|r| r.layout.label == "256 ranks")
        .collect()
}

/// One run's figures.
struct Row {
    label: String,
    target: bool,
    ops_per_rank: u64,
    ops: usize,
    kernels: u64,
    load_s: f64,
    /// Best of three: the prepared sums, the matrix, the model, and all three.
    prepare_s: f64,
    matrix_s: f64,
    model_s: f64,
    total_s: f64,
    periodicity_s: f64,
    walk_s: f64,
    entries: usize,
    groups: usize,
}

pub fn run(layouts: &[Layout], scale: Scale, report: &mut Report) {
    report.section(
        "Communication patterns (issue 34)",
        "The rank-to-rank matrix and the run's own α-β model (`analyses::patterns`) of the \
         end-to-end benchmark's 256-rank runs, natively, after the run is loaded and analysed \
         (not timed here): `Prepared::of` (every logged operation summed per call site and \
         tuning, every matched kernel's time attributed), `comm_matrix` and `perf_model`, best \
         of three. Periodicity (the On-Off blocks and steps) beside them, one round. \
         Reference: one walk over every matched kernel reading its times and its first line's \
         call. Target (issue 34): the matrix and the model of the target run (256 × 2·10⁴ \
         operations, about 3.6 M kernels) in under 2 s.",
    );
    let rows: Vec<Row> = runs(layouts).iter().map(measure).collect();
    report.row(&[
        "run",
        "log ops",
        "matched kernels",
        "load + analyse s",
        "prepare s",
        "matrix s",
        "model s",
        "matrix + model s",
        "periodicity s",
        "walk s",
        "ratio",
        "entries / groups",
    ]);
    for r in &rows {
        report.row(&[
            &r.label,
            &r.ops.to_string(),
            &r.kernels.to_string(),
            &format!("{:.1}", r.load_s),
            &format!("{:.2}", r.prepare_s),
            &format!("{:.3}", r.matrix_s),
            &format!("{:.2}", r.model_s),
            &format!("{:.2}", r.total_s),
            &format!("{:.2}", r.periodicity_s),
            &format!("{:.3}", r.walk_s),
            &format!("{:.1}", r.total_s / r.walk_s),
            &format!("{} / {}", r.entries, r.groups),
        ]);
    }
    let pts: Vec<(f64, f64)> = rows.iter().map(|r| (r.kernels as f64, r.total_s)).collect();
    let k = exponent(&pts);
    report.growth("matrix + model time vs matched kernels", k);
    let what = "Issue 34: matrix and model of the 256-rank run (3.6 M kernels) natively < 2 s";
    match (rows.iter().find(|r| r.target), rows.last()) {
        (Some(t), _) => report.target(
            what,
            format!("{:.2} s ({} kernels)", t.total_s, t.kernels),
            Verdict::of(true, t.total_s < TARGET_S),
        ),
        (None, Some(last)) if scale == Scale::Quick => {
            // Projected from the largest size with the fitted growth (linear when unknown).
            let target_kernels = last.kernels as f64 * 20_000.0 / last.ops_per_rank as f64;
            let projected =
                last.total_s * (target_kernels / last.kernels as f64).powf(k.unwrap_or(1.0));
            report.target(
                what,
                format!("{projected:.2} s projected from {} kernels", last.kernels),
                Verdict::NotMeasured,
            );
        }
        _ => report.target(what, "—".into(), Verdict::NotMeasured),
    }
}

fn measure(run: &Run) -> Row {
    let dir = run.dir();
    let logs = crate::inputs::files(&dir, ".log");
    let exports = crate::inputs::files(&dir, ".sqlite");
    let t = Instant::now();
    let mut session = Session::default();
    for f in logs.iter().chain(&exports) {
        ncclscope_cli::inputs::load(&mut session, f);
    }
    let analysis = analyse(&session, &UserSizes::default());
    let load_s = t.elapsed().as_secs_f64();
    let ops = session.logs().iter().map(|l| l.parsed.ops.len()).sum();
    let kernels = analysis
        .alignments
        .processes
        .iter()
        .map(|p| p.matched_kernels())
        .sum();
    let hw = analyses::hardware_from_topology(&session).unwrap_or_else(theory::Hardware::a100);
    let (mut prepare_s, mut matrix_s, mut model_s) = (f64::MAX, f64::MAX, f64::MAX);
    let (total_s, (entries, groups)) = best_kept(3, || {
        let t = Instant::now();
        let prepared = Prepared::of(&session, &analysis);
        let a = t.elapsed().as_secs_f64();
        let m = comm_matrix(&prepared);
        let b = t.elapsed().as_secs_f64();
        let model = perf_model(&analysis, &prepared, &hw);
        let c = t.elapsed().as_secs_f64();
        prepare_s = prepare_s.min(a);
        matrix_s = matrix_s.min(b - a);
        model_s = model_s.min(c - b);
        (m.entries.len(), model.groups.len())
    });
    let prepared = Prepared::of(&session, &analysis);
    let periodicity_s = best_of(1, || {
        std::hint::black_box(periodicity(
            &session,
            &analysis,
            &prepared,
            StepSource::Nvtx,
        ));
    });
    let walk_s = best_of(3, || {
        let mut sum = 0i64;
        for pm in &analysis.alignments.processes {
            for (k, m) in pm.matched_spans() {
                let call = pm.log_ops.call(m.first_line());
                sum += k.end_ns - k.start_ns + call.map_or(0, |c| c.count as i64);
            }
        }
        std::hint::black_box(sum);
    });
    let mark = if run.ops_per_rank == run.layout.target_ops_per_rank {
        " (target)"
    } else {
        ""
    };
    Row {
        label: format!("{} × {} ops{mark}", run.layout.label, run.ops_per_rank),
        target: run.ops_per_rank == run.layout.target_ops_per_rank,
        ops_per_rank: run.ops_per_rank,
        ops,
        kernels,
        load_s,
        prepare_s,
        matrix_s,
        model_s,
        total_s,
        periodicity_s,
        walk_s,
        entries,
        groups,
    }
}
