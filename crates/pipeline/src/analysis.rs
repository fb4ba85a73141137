//! Everything computed from the loaded inputs, in one pass: alignment per process, logical
//! communicators and global ranks, the parallelism of each communicator, and the per-process
//! summaries the views show. Re-run whenever inputs are added: [`analyse_incremental`] keeps
//! the alignments (the expensive part) of processes whose inputs did not change.

use crate::alignment::{align_session_reusing, Alignments, SessionFiles};
use crate::clocks::synchronise_clocks;
use crate::incremental::Rerun;
use crate::processes::{process_summaries, ProcessSummary};
use align::{AlignConfig, Runner};
use enrich::{ClockSync, Communicators, Hints, LayoutInference, Sizes};
use load::Session;
use model::log::CommInit;
use std::collections::BTreeMap;

/// The analysis of a session.
pub struct Analysis {
    pub alignments: Alignments,
    pub communicators: Communicators,
    pub layout: LayoutInference,
    pub processes: Vec<ProcessSummary>,
    /// Every rank's clock against the lowest rank's, from the aligned collectives' kernels.
    pub clocks: ClockSync,
    /// Training iterations seen (NVTX iteration ranges, else profiler steps), for
    /// per-iteration figures.
    pub iterations: Option<u32>,
    /// Per communicator (same order as `communicators.comms`), the process group profiler
    /// traces name for it; it labels the communicators the inference left unknown.
    pub process_groups: Vec<Option<crate::process_groups::ProcessGroup>>,
    /// Every profiler trace's `ProfilerStep#N` ranges, per rank, in synchronised time.
    pub profiler_steps: Vec<crate::kineto::ProfilerStep>,
    /// What each track of the last timeline built from this analysis (or the one it was
    /// derived from) was built from, by GPU: kept for `timeline::incremental`, which reads and
    /// replaces it; nothing else should.
    pub track_inputs: BTreeMap<(String, u32, u32), TrackInputs>,
}

/// Everything one GPU's track is built from, besides its kernels' records: which exports hold
/// them (index, count; loaded files never change, so within a growing session equal sources
/// mean equal kernels), the process's global rank and host, and its rank's clock (offset and
/// drift bits, reference time). Equal inputs give an equal track.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackInputs {
    /// (host, pid, device).
    pub gpu: (String, u32, u32),
    pub sources: Vec<(u32, u32)>,
    pub rank: Option<(u32, String)>,
    pub clock: Option<(u64, u64, i64)>,
}

/// Parallel sizes as the user gave them (`--tp 2`, a config file): any subset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UserSizes {
    pub tp: Option<u32>,
    pub pp: Option<u32>,
    pub dp: Option<u32>,
    pub ep: Option<u32>,
    pub cp: Option<u32>,
}

impl UserSizes {
    pub fn is_empty(&self) -> bool {
        *self == UserSizes::default()
    }

    /// The full layout for `world` ranks: sizes not given are 1, except DP, which takes what
    /// the others leave (`world / (tp·pp·ep·cp)`) when it was not given. `None` when the given
    /// sizes do not multiply to the world.
    pub fn resolve(&self, world: u32) -> Option<Sizes> {
        if self.is_empty() || world == 0 {
            return None;
        }
        let (tp, pp, ep, cp) = (
            self.tp.unwrap_or(1),
            self.pp.unwrap_or(1),
            self.ep.unwrap_or(1),
            self.cp.unwrap_or(1),
        );
        let others = tp.checked_mul(pp)?.checked_mul(ep)?.checked_mul(cp)?.max(1);
        let dp = self.dp.unwrap_or(world / others);
        let sizes = Sizes { tp, cp, ep, dp, pp };
        (others.checked_mul(dp)? == world).then_some(sizes)
    }
}

/// Analyses everything loaded, with the parallel sizes the user gave, if any.
pub fn analyse(session: &Session, user: &UserSizes) -> Analysis {
    analyse_incremental(session, user, None).0
}

/// [`analyse`], reusing `previous` (an analysis of this session before files were added; it
/// is checked by the files' names and sizes and ignored if it is not one): the alignment of
/// every process whose inputs did not change is kept (see [`align::align_all_reusing`] for
/// what the cross-rank consensus makes re-run), so the result equals [`analyse`]'s. The
/// communicators, layout and clocks are global and cheap next to the alignment: they
/// are recomputed. [`Rerun`] says what was re-aligned.
pub fn analyse_incremental(
    session: &Session,
    user: &UserSizes,
    previous: Option<Analysis>,
) -> (Analysis, Rerun) {
    align::runner::now(analyse_incremental_with(
        session,
        user,
        previous,
        &align::Threads,
    ))
}

/// [`analyse_incremental`] with the per-process alignments run by `runner` (the page runs
/// them on its Web Workers): the same result whatever runs them.
pub async fn analyse_incremental_with(
    session: &Session,
    user: &UserSizes,
    previous: Option<Analysis>,
    runner: &dyn Runner,
) -> (Analysis, Rerun) {
    // Another session's analysis (not this one's files, in order, with files added) is of no use.
    let files = SessionFiles::of(session);
    let (previous, track_inputs) = match previous {
        Some(p) if p.alignments.kept.files.grew_into(&files) => {
            (Some(p.alignments), p.track_inputs)
        }
        _ => (None, BTreeMap::new()),
    };
    let (alignments, redone) =
        align_session_reusing(session, &AlignConfig::rich(), previous, runner).await;
    let rerun = Rerun::of_alignment(&alignments, &redone);
    let inits: Vec<CommInit> = session
        .logs()
        .iter()
        .flat_map(|l| l.parsed.inits.iter().cloned())
        .collect();
    // Read in place: a copy of every log operation was the analysis's largest allocation.
    let ops = || session.logs().iter().flat_map(|l| &l.parsed.ops);
    let communicators = enrich::group(&inits, ops());
    let iterations = iterations_seen(session);
    let hints = Hints {
        sizes: user.resolve(communicators.world_size),
        iterations,
    };
    let mut layout = enrich::infer(&communicators, ops(), &hints);
    let mut process_groups = crate::process_groups::process_groups(session, &communicators);
    crate::process_groups::label_with_groups(&mut layout, &mut process_groups);
    let mut processes = process_summaries(session, &alignments);
    for p in &mut processes {
        if let Some(rank) = communicators.rank_of(&p.process) {
            p.global_rank = rank;
        }
    }
    crate::kernel_tally::add_tallies(session, &alignments, &mut processes);
    processes.sort_by(|a, b| (a.global_rank, &a.process).cmp(&(b.global_rank, &b.process)));
    let clocks = synchronise_clocks(session, &alignments, &communicators);
    let profiler_steps = crate::kineto::profiler_steps(session, &processes, &clocks);
    let analysis = Analysis {
        alignments,
        communicators,
        layout,
        processes,
        clocks,
        iterations,
        process_groups,
        profiler_steps,
        track_inputs,
    };
    (analysis, rerun)
}

/// Iterations as the exports' NVTX iteration ranges count them (per process; the largest count).
fn iterations_seen(session: &Session) -> Option<u32> {
    session
        .exports()
        .iter()
        .filter_map(|e| {
            let mut per_pid: std::collections::BTreeMap<u32, u32> =
                std::collections::BTreeMap::new();
            for &i in &e.export.iterations {
                if let Some(r) = e.export.nvtx.get(i) {
                    *per_pid.entry(r.pid).or_default() += 1;
                }
            }
            per_pid.into_values().max()
        })
        .max()
        .filter(|&n| n > 0)
        .or_else(|| crate::kineto::steps_seen(session))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_sizes_resolve_against_the_world() {
        let tp2 = UserSizes {
            tp: Some(2),
            ..UserSizes::default()
        };
        assert_eq!(
            tp2.resolve(8),
            Some(Sizes {
                tp: 2,
                cp: 1,
                ep: 1,
                dp: 4,
                pp: 1
            })
        );
        let wrong = UserSizes {
            tp: Some(2),
            dp: Some(3),
            ..UserSizes::default()
        };
        assert_eq!(wrong.resolve(8), None);
        assert_eq!(UserSizes::default().resolve(8), None);
    }
}
