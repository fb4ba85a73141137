//! On-Off periodicity on generated runs: the steps are the generator's iterations (from the
//! exports' NVTX ranges), a clean run breaks no pattern, a run with kernels missing is flagged,
//! and without NVTX each communicator's own period finds the same steps.

mod support;

use analyses::patterns::{periodicity, Prepared, StepSource};

/// The presets whose kernels all made it into the exports, each with its log line (a kernel
/// whose line was dropped names no communicator, and is missing from its blocks).
fn clean(cfg: &synth::RunConfig) -> bool {
    let i = &cfg.imperfections;
    i.drop_kernel_pct == 0.0 && i.drop_log_pct == 0.0 && i.orphan_sendrecv_kernels == 0
}

#[test]
fn nvtx_steps_are_the_generator_iterations_and_clean_runs_break_no_pattern() {
    for name in support::small_presets() {
        let cfg = support::preset(name);
        let (run, session, analysis) = support::analysed(&cfg);
        let p = periodicity(
            &session,
            &analysis,
            &Prepared::of(&session, &analysis),
            StepSource::Nvtx,
        );
        assert_eq!(p.step_source, StepSource::Nvtx, "{name}");
        assert!(!p.comms.is_empty(), "{name}");
        let iterations = run.truth.model.iterations;
        for c in &p.comms {
            assert_eq!(c.steps, iterations, "{name}: {}", c.comm);
            assert_eq!(c.per_step.len() as u32, iterations, "{name}");
            assert!(c.blocks_per_step >= 1, "{name}: {c:?}");
            if clean(&cfg) {
                assert_eq!(c.count_consistency, 1.0, "{name}: {}", c.comm);
                assert!(c.flagged_steps.is_empty(), "{name}: {:?}", c.flagged_steps);
                assert!(c.flagged_ranks.is_empty(), "{name}: {:?}", c.flagged_ranks);
            }
        }
        // Every communicator repeats with the run's one period (a step's length).
        let periods: Vec<i64> = p.comms.iter().filter_map(|c| c.period_ns).collect();
        if iterations > 1 {
            assert_eq!(periods.len(), p.comms.len(), "{name}");
            let (lo, hi) = (periods.iter().min().unwrap(), periods.iter().max().unwrap());
            assert!(
                (*hi - *lo) as f64 <= 0.02 * *lo as f64,
                "{name}: periods {lo}..{hi}"
            );
        }
    }
}

/// A fifth of the kernels dropped from the exports: the communicator's blocks break their
/// pattern and the ranks or steps at fault are named.
#[test]
fn missing_kernels_are_flagged() {
    for name in ["align-kdrop20", "align-bothdrop20"] {
        let cfg = support::preset(name);
        let (_run, session, analysis) = support::analysed(&cfg);
        let p = periodicity(
            &session,
            &analysis,
            &Prepared::of(&session, &analysis),
            StepSource::Nvtx,
        );
        let busiest = p.comms.iter().max_by_key(|c| c.kernels).unwrap();
        assert!(
            !busiest.flagged_ranks.is_empty() || busiest.flagged_step_count > 0,
            "{name}: {busiest:?}"
        );
    }
    // More steps: a preset with drops over two iterations flags the steps too.
    let mut cfg = support::preset("tp4");
    cfg.imperfections.drop_kernel_pct = 5.0;
    let (_run, session, analysis) = support::analysed(&cfg);
    let p = periodicity(
        &session,
        &analysis,
        &Prepared::of(&session, &analysis),
        StepSource::Nvtx,
    );
    let busiest = p.comms.iter().max_by_key(|c| c.kernels).unwrap();
    assert!(busiest.flagged_step_count > 0, "{busiest:?}");
    assert!(busiest.count_consistency < 1.0);
}

/// Without NVTX (the period forced), the communicators are cut into the same steps: the one
/// that sets the ranks' rhythm repeats every NVTX step's count of blocks, every communicator
/// finds the iterations (all but the first and the last at worst: only whole periods between
/// two boundaries count), with the NVTX period, and breaks no pattern.
#[test]
fn the_blocks_own_period_finds_the_iterations() {
    for name in support::small_presets() {
        let cfg = support::preset(name);
        if cfg.model.iterations < 4 || !clean(&cfg) {
            continue;
        }
        let (_run, session, analysis) = support::analysed(&cfg);
        let prepared = Prepared::of(&session, &analysis);
        let nvtx = periodicity(&session, &analysis, &prepared, StepSource::Nvtx);
        let own = periodicity(&session, &analysis, &prepared, StepSource::Period);
        assert_eq!(own.step_source, StepSource::Period);
        // The collective-only communicator with the most kernels sets its ranks' steps: its
        // period in blocks is its NVTX steps' count.
        let busiest = |p: &analyses::patterns::Periodicity| {
            p.comms
                .iter()
                .filter(|c| c.symmetric)
                .max_by_key(|c| c.kernels)
                .unwrap()
                .clone()
        };
        let (a, b) = (busiest(&nvtx), busiest(&own));
        assert_eq!(a.comm, b.comm);
        assert_eq!(b.lag_blocks, Some(a.blocks_per_step), "{name}: {b:?}");
        // Every communicator, cut by its ranks' steps, finds the iterations and the period.
        for (a, b) in nvtx.comms.iter().zip(&own.comms) {
            assert!(
                b.steps + 2 >= cfg.model.iterations && b.steps <= cfg.model.iterations,
                "{name} {}: {} steps of {}",
                b.comm,
                b.steps,
                cfg.model.iterations
            );
            let (pa, pb) = (a.period_ns.unwrap() as f64, b.period_ns.unwrap() as f64);
            assert!((pa - pb).abs() <= 0.02 * pa, "{name}: period {pb} vs {pa}");
            assert!(b.flagged_steps.is_empty(), "{name}: {:?}", b.flagged_steps);
        }
    }
}
