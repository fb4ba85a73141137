//! `align_all_reusing` keeps what did not change: a process whose inputs and consensus hints are
//! the same as before keeps its whole alignment, and the result is what a fresh call gives.

use align::kept::KeptHints;
use align::{align_all_reusing, warmup, AlignConfig, ProcessInput, Redone};

#[test]
fn unchanged_hints_keep_the_alignment_and_changed_ones_do_not() {
    // Three ranks of one clock domain running the same calls: the consensus hints each one.
    let made = [
        warmup::process(60),
        warmup::process(60),
        warmup::process(60),
    ];
    let inputs: Vec<ProcessInput<'_>> = made
        .iter()
        .map(|p| ProcessInput {
            log_ops: &p.log_ops,
            kernels: &p.kernels,
            names: &p.names,
            clock: 7,
            nvtx: &[],
        })
        .collect();
    let cfg = AlignConfig::rich();
    let fresh = align_all_reusing(&inputs, &cfg, vec![None, None, None]);
    assert!(fresh.iter().all(|a| a.redone == Redone::Inputs));
    assert!(
        fresh
            .iter()
            .all(|a| a.alignment.per_kernel.iter().flatten().count() > 0),
        "every rank matched"
    );
    // Rank 2 aligned again (as if its inputs changed): the domain's consensus is recomputed,
    // gives ranks 0 and 1 the hints they had, and they keep their alignments whole.
    let previous = vec![Some(fresh[0].clone()), Some(fresh[1].clone()), None];
    let again = align_all_reusing(&inputs, &cfg, previous);
    assert_eq!(again[0].redone, Redone::Kept);
    assert_eq!(again[1].redone, Redone::Kept);
    assert_eq!(again[2].redone, Redone::Inputs);
    for (a, f) in again.iter().zip(&fresh) {
        assert_eq!(a.alignment, f.alignment);
        assert_eq!(a.reuse, f.reuse);
    }
    // Rank 0 kept as if its second pass had run without hints: the new hints differ, so that
    // pass runs again, and gives the fresh result.
    let mut stale = fresh[0].clone();
    assert_ne!(stale.reuse.hints, KeptHints::default(), "rank 0 was hinted");
    stale.reuse.hints = KeptHints::default();
    let redone = align_all_reusing(&inputs, &cfg, vec![Some(stale), None, None]);
    assert_eq!(redone[0].redone, Redone::Hints);
    assert_eq!(redone[0].alignment, fresh[0].alignment);
    assert_eq!(redone[0].reuse, fresh[0].reuse);
}
