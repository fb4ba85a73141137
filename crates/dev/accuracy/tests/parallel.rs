//! `align_all` (threads natively) gives exactly what aligning each process alone gives, in the
//! input order, on a generated multi-rank run.

use accuracy::{rank_inputs, SCENARIOS};
use align::{align_all, align_process, AlignConfig, ProcessInput};

#[test]
fn parallel_equals_sequential() {
    // A multi-rank run with drops on both sides (table 4.5's last scenario).
    let ranks = accuracy::sweep::generate(&SCENARIOS[3], false, 3).expect("generates");
    assert_eq!(ranks.len(), 4);
    let mut cfg = AlignConfig::rich();
    cfg.consensus = false; // per process only: the sequential reference has no consensus
    let inputs: Vec<ProcessInput<'_>> = ranks.iter().map(|r| r.input()).collect();
    let parallel = align_all(&inputs, &cfg);
    let sequential: Vec<_> = ranks
        .iter()
        .map(|r| align_process(&r.log_ops, &r.kernels, &r.names, &cfg))
        .collect();
    assert_eq!(parallel, sequential);
    // With the consensus, the result still does not depend on the number of threads: the same
    // call twice (threads interleave differently) and a reversed input give the same alignments.
    let a = align_all(&inputs, &AlignConfig::rich());
    let b = align_all(&inputs, &AlignConfig::rich());
    assert_eq!(a, b);
    let rev: Vec<ProcessInput<'_>> = inputs.iter().rev().copied().collect();
    let mut c = align_all(&rev, &AlignConfig::rich());
    c.reverse();
    assert_eq!(a, c);
}

#[test]
fn larger_preset_parallel_equals_sequential() {
    let preset = synth::preset("tp2pp2").expect("the thesis' TP=2/PP=2 preset");
    let run = synth::generate_named(&preset.config, Some("tp2pp2"));
    let ranks = rank_inputs(&run).expect("parses");
    assert!(ranks.len() >= 4);
    let cfg = AlignConfig {
        consensus: false,
        ..AlignConfig::rich()
    };
    let inputs: Vec<ProcessInput<'_>> = ranks.iter().map(|r| r.input()).collect();
    let parallel = align_all(&inputs, &cfg);
    for (r, p) in ranks.iter().zip(&parallel) {
        assert_eq!(p, &align_process(&r.log_ops, &r.kernels, &r.names, &cfg));
    }
}

/// Where the exports hold NCCL's own NVTX ranges, every NCCL kernel is joined exactly to its
/// call and the alignment agrees with the join everywhere (the generator's `dp4-nvtx`).
#[test]
fn nvtx_join_checks_the_alignment() {
    let preset = synth::preset("dp4-nvtx").expect("preset");
    let run = synth::generate_named(&preset.config, Some("dp4-nvtx"));
    let ranks = rank_inputs(&run).expect("parses");
    assert_eq!(ranks.len(), 4);
    let inputs: Vec<ProcessInput<'_>> = ranks.iter().map(|r| r.input()).collect();
    for (r, a) in ranks.iter().zip(align_all(&inputs, &AlignConfig::rich())) {
        let c = a.report.nvtx.expect("NCCL's ranges are in the export");
        let launched = r.kernels.iter().filter(|k| k.launch_ns.is_some()).count();
        assert_eq!(c.joined, launched, "{:?}", r.process);
        assert_eq!(
            (c.agree, c.disagree, c.unmatched),
            (c.joined, 0, 0),
            "{:?}",
            r.process
        );
    }
    // Without the ranges there is nothing to check.
    let plain: Vec<ProcessInput<'_>> = inputs
        .iter()
        .map(|p| ProcessInput { nvtx: &[], ..*p })
        .collect();
    assert!(align_all(&plain, &AlignConfig::rich())
        .iter()
        .all(|a| a.report.nvtx.is_none()));
}
