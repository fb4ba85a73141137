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
//!
//! In the page (issue 34: under 5 s): what a user waits for, the patterns step of the page's own
//! loading worker after a real load of the same run (`Insights::build` times each analysis; the
//! page shows the times in `data-insights-ms`, `tests/browser/bench/load.mjs --insights` reads
//! them). It is the whole `analyses::patterns::patterns` (prepared sums, matrix, predicted
//! matrix, periodicity, model), so natively the same call is timed beside it. The end-to-end
//! family's loads of these runs give it when they ran; else this family loads them itself.

use crate::end_to_end::{Layout, Run};
use crate::growth::exponent;
use crate::report::{Report, Verdict};
use crate::{best_kept, best_of, browser, Options, Scale};
use analyses::patterns::{comm_matrix, perf_model, periodicity, Prepared, StepSource};
use load::Session;
use pipeline::{analyse, UserSizes};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Issue 34's target for the matrix and the model, seconds.
const TARGET_S: f64 = 2.0;
/// Issue 34's target in the page, seconds.
const PAGE_TARGET_S: f64 = 5.0;

/// The page's loads of runs (their directories) as `load.mjs --json --insights` reported them.
pub type PageLoads = Vec<(PathBuf, Value)>;

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
    /// `analyses::patterns::patterns` whole, as the page's worker calls it, best of three.
    whole_s: f64,
    /// The page worker's patterns step and all its insights, seconds.
    page: Result<(f64, f64), String>,
}

pub fn run(layouts: &[Layout], opts: &Options, loads: &PageLoads, report: &mut Report) {
    let scale = opts.scale;
    report.section(
        "Communication patterns (issue 34)",
        "The rank-to-rank matrix and the run's own α-β model (`analyses::patterns`) of the \
         end-to-end benchmark's 256-rank runs, natively, after the run is loaded and analysed \
         (not timed here): `Prepared::of` (every logged operation summed per call site and \
         tuning, every matched kernel's time attributed), `comm_matrix` and `perf_model`, best \
         of three. Periodicity (the On-Off blocks and steps) beside them, one round. \
         Reference: one walk over every matched kernel reading its times and its first line's \
         call. Target (issue 34): the matrix and the model of the target run (256 × 2·10⁴ \
         operations, about 3.6 M kernels) in under 2 s. Whole: `analyses::patterns::patterns` \
         (all of the above and the predicted matrix), as the page's worker calls it. Page: the \
         patterns step of the page's loading worker after the page loaded the same run \
         (`load.mjs --insights`; the end-to-end family's load when it ran), and all its \
         insights (diagnosis, steps, patterns, identity); target (issue 34): under 5 s.",
    );
    let rows: Vec<Row> = runs(layouts)
        .iter()
        .map(|r| {
            let mut row = measure(r);
            // After the native figures, with their session freed: the page's load needs the
            // memory.
            row.page = in_page(&r.dir(), opts, loads);
            row
        })
        .collect();
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
        "whole s",
        "page: patterns s",
        "page: all insights s",
        "page / native (whole)",
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
            &format!("{:.2}", r.whole_s),
            &r.page
                .as_ref()
                .map_or_else(|e| format!("not measured: {e}"), |p| format!("{:.2}", p.0)),
            &r.page
                .as_ref()
                .map_or(String::new(), |p| format!("{:.2}", p.1)),
            &r.page
                .as_ref()
                .map_or(String::new(), |p| format!("{:.1}", p.0 / r.whole_s)),
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
    page_target(&rows, report);
}

/// Issue 34's target in the page, at the target run (no projection: the page's load is real).
fn page_target(rows: &[Row], report: &mut Report) {
    let what = "Issue 34: matrix and model of the 256-rank run (3.6 M kernels) in the page < 5 s";
    match rows.iter().find(|r| r.target).map(|r| (r, &r.page)) {
        Some((r, Ok((p, _)))) => report.target(
            what,
            format!(
                "{p:.2} s, the worker's whole patterns step ({:.1}× native's {:.2} s)",
                p / r.whole_s,
                r.whole_s
            ),
            Verdict::of(true, *p < PAGE_TARGET_S),
        ),
        Some((_, Err(e))) => report.target(what, e.clone(), Verdict::NotMeasured),
        None => report.target(what, "—".into(), Verdict::NotMeasured),
    }
}

/// The page worker's patterns step and all its insights (seconds) for the run in `dir`: from the
/// end-to-end family's load when it has them, else from a load of its own.
fn in_page(dir: &Path, opts: &Options, loads: &PageLoads) -> Result<(f64, f64), String> {
    let of = |v: &Value| -> Result<(f64, f64), String> {
        let ms = v.get("insights_ms").filter(|m| !m.is_null());
        let ms = ms.ok_or("the page sent no insights")?;
        Ok((
            browser::num(ms, "patterns") / 1e3,
            browser::num(ms, "total") / 1e3,
        ))
    };
    if let Some((_, v)) = loads.iter().find(|(d, _)| d == dir) {
        return of(v);
    }
    if !opts.browser {
        return Err("browser measurements are off in this run".into());
    }
    let args = [
        "--json".to_string(),
        "--insights".into(),
        "--timeout-s=600".into(),
        dir.display().to_string(),
    ];
    of(&browser::run("load.mjs", &args)?)
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
    let options = analyses::patterns::Options {
        hardware: &hw,
        theory: None,
        steps: StepSource::Nvtx,
    };
    let whole_s = best_of(3, || {
        std::hint::black_box(analyses::patterns::patterns(&session, &analysis, &options));
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
        whole_s,
        page: Err("not measured yet".into()),
    }
}
