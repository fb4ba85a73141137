//! Aligning every process of a run: in parallel natively, one after another in wasm32 (the page
//! runs its own workers), with the cross-rank consensus ([`crate::consensus`]) in between.

use crate::consensus::{call_hints_from_lines, first_lines, ProcessInput};
use crate::kept::{FirstLines, KeptHints};
use crate::nvtx_join::{check, join_nvtx};
use crate::per_process::{rehinted, AlignConfig, ProcessAlignment};
use crate::runner::{now, Job, Runner, Threads};
use model::log::LogOp;
use rustc_hash::{FxHashMap, FxHashSet};

/// Aligns each process; the result keeps the input order. With `cfg.consensus`, processes
/// of one clock domain are aligned a second time with the calls their kernels' collectives
/// run on the other ranks.
pub fn align_all(inputs: &[ProcessInput<'_>], cfg: &AlignConfig) -> Vec<ProcessAlignment> {
    let fresh = inputs.iter().map(|_| None).collect();
    align_all_reusing(inputs, cfg, fresh)
        .into_iter()
        .map(|a| a.alignment)
        .collect()
}

/// Per kernel, the (communicator, opCount) the consensus says it runs.
type Hints = Vec<Option<(u64, u64)>>;

/// What a later [`align_all_reusing`] needs of one process's alignment besides the alignment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reuse {
    /// The first (hint-free) pass as the consensus reads it ([`first_lines`]).
    pub first: FirstLines,
    /// The hints the second pass ran with; empty when no second pass ran (no kernel hinted).
    pub hints: KeptHints,
    /// How many processes its clock domain had when the hints were computed.
    pub domain: usize,
}

/// One process's alignment from [`align_all_reusing`].
#[derive(Debug, Clone, PartialEq)]
pub struct Aligned {
    pub alignment: ProcessAlignment,
    pub reuse: Reuse,
    /// How much of it was computed in this call.
    pub redone: Redone,
}

/// What [`align_all_reusing`] computed for one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redone {
    /// Nothing: the previous alignment was kept whole.
    Kept,
    /// Inputs unchanged, but the other ranks' consensus hints changed: the second pass re-ran.
    Hints,
    /// The process's own inputs changed (or it is new): aligned from the start.
    Inputs,
}

/// [`align_all`], keeping what it can of an earlier call with the same `cfg`: `previous[i]` is
/// process `i`'s earlier [`Aligned`] when its inputs (`inputs[i]`: log operations, kernels,
/// names, clock, NVTX) are exactly those it was aligned from (the caller's check), else `None`.
///
/// What must re-run when some inputs change, and why it gives what [`align_all`] gives:
/// a process's first pass depends on its own inputs only, so it re-runs only for changed
/// processes. The consensus couples the processes of one clock domain (one export): its stream
/// links and collective instances come from every member's kernels, and each member's hints from
/// its own log and first pass. So a process joining or changing in a domain can change the hints
/// of every member (a hole in the instance numbering filled, two streams linked): the consensus
/// is recomputed for every domain that has a changed member or a different number of members
/// (one left: its clock is part of its inputs, so it changed too); the other domains keep
/// their hints. An unchanged process's second pass re-runs only if its hints differ from those
/// it ran with. The NVTX check depends on the process's own inputs and alignment.
pub fn align_all_reusing(
    inputs: &[ProcessInput<'_>],
    cfg: &AlignConfig,
    previous: Vec<Option<Aligned>>,
) -> Vec<Aligned> {
    now(align_all_reusing_with(inputs, cfg, previous, &Threads))
}

/// [`align_all_reusing`] with the per-process alignments run by `runner` (the page's workers):
/// the same result whatever runs them.
///
/// The phases, each its own function: the first pass of the changed processes, the consensus
/// of the clock domains where something changed, the second pass where inputs or hints
/// changed (with the NVTX check), and the result with what a later call can reuse.
pub async fn align_all_reusing_with(
    inputs: &[ProcessInput<'_>],
    cfg: &AlignConfig,
    mut previous: Vec<Option<Aligned>>,
    runner: &dyn Runner,
) -> Vec<Aligned> {
    previous.resize_with(inputs.len(), || None);
    let mut first = first_pass(inputs, cfg, &previous, runner).await;
    let size = domain_sizes(inputs);
    let redo = in_dirty_domains(inputs, &previous, &size);
    let mut fresh_lines: Vec<Option<Vec<Option<usize>>>> =
        first.iter().map(|a| a.as_ref().map(first_lines)).collect();
    let mut new_hints = consensus_hints(inputs, cfg, &redo, &fresh_lines, &previous);
    let mut fresh = second_pass(inputs, cfg, &previous, &mut first, &new_hints, runner).await;
    for (p, a) in inputs.iter().zip(&mut fresh) {
        if let Some(a) = a {
            nvtx_check(p, a);
        }
    }
    let mut out = Vec::with_capacity(inputs.len());
    for (i, (prev, fresh)) in previous.into_iter().zip(fresh).enumerate() {
        let domain = size[&inputs[i].clock];
        let (lines, hints) = (fresh_lines[i].take(), new_hints[i].take());
        // `None`: not reached, a process without a previous alignment is always computed.
        if let Some(a) = aligned(fresh, prev, lines, hints, domain, inputs[i].log_ops) {
            out.push(a);
        }
    }
    out
}

/// The first (hint-free) pass of every process without a previous alignment (its inputs
/// changed, or it is new); `None` for the others.
async fn first_pass(
    inputs: &[ProcessInput<'_>],
    cfg: &AlignConfig,
    previous: &[Option<Aligned>],
    runner: &dyn Runner,
) -> Vec<Option<ProcessAlignment>> {
    let changed: Vec<usize> = (0..inputs.len())
        .filter(|&i| previous[i].is_none())
        .collect();
    let first_jobs: Vec<Job<'_>> = changed.iter().map(|&i| job(&inputs[i], &[])).collect();
    let computed = runner.run(&first_jobs, cfg).await;
    drop(first_jobs);
    let mut first: Vec<Option<ProcessAlignment>> = inputs.iter().map(|_| None).collect();
    for (&i, a) in changed.iter().zip(computed) {
        first[i] = Some(a);
    }
    first
}

/// How many processes each clock domain has.
fn domain_sizes(inputs: &[ProcessInput<'_>]) -> FxHashMap<u64, usize> {
    let mut size: FxHashMap<u64, usize> = FxHashMap::default();
    for p in inputs {
        *size.entry(p.clock).or_default() += 1;
    }
    size
}

/// The processes whose consensus must be recomputed: every member of a domain with a changed
/// member or a different number of members than when its hints were computed.
fn in_dirty_domains(
    inputs: &[ProcessInput<'_>],
    previous: &[Option<Aligned>],
    size: &FxHashMap<u64, usize>,
) -> Vec<usize> {
    let mut dirty: FxHashSet<u64> = FxHashSet::default();
    for (p, prev) in inputs.iter().zip(previous) {
        if prev
            .as_ref()
            .is_none_or(|prev| prev.reuse.domain != size[&p.clock])
        {
            dirty.insert(p.clock);
        }
    }
    (0..inputs.len())
        .filter(|&i| dirty.contains(&inputs[i].clock))
        .collect()
}

/// The consensus hints of the processes in `redo` (empty when none of a process's kernels is
/// hinted); `None` for the others, whose hints are as before. The first lines are the fresh
/// ones where the first pass ran, else the kept ones of the previous alignment.
fn consensus_hints(
    inputs: &[ProcessInput<'_>],
    cfg: &AlignConfig,
    redo: &[usize],
    fresh_lines: &[Option<Vec<Option<usize>>>],
    previous: &[Option<Aligned>],
) -> Vec<Option<Hints>> {
    let mut new_hints: Vec<Option<Hints>> = inputs.iter().map(|_| None).collect();
    let sub: Vec<ProcessInput<'_>> = redo.iter().map(|&i| inputs[i]).collect();
    // The kept first lines of unchanged processes, as the consensus reads them.
    let kept_lines: Vec<Option<Vec<Option<usize>>>> = redo
        .iter()
        .map(|&i| match (&fresh_lines[i], &previous[i]) {
            (None, Some(prev)) => Some(prev.reuse.first.to_lines()),
            _ => None,
        })
        .collect();
    let lines: Vec<&[Option<usize>]> = redo
        .iter()
        .zip(&kept_lines)
        .map(|(&i, kept)| match (&fresh_lines[i], kept) {
            (Some(l), _) => l.as_slice(),
            (None, Some(l)) => l.as_slice(),
            (None, None) => &[],
        })
        .collect();
    let hints = if cfg.consensus && inputs.len() >= 2 {
        call_hints_from_lines(&sub, &lines)
    } else {
        vec![Vec::new(); sub.len()]
    };
    for (&i, h) in redo.iter().zip(hints) {
        new_hints[i] = Some(if h.iter().any(Option::is_some) {
            h
        } else {
            Vec::new()
        });
    }
    new_hints
}

/// The second pass (or the first pass as the result) where inputs or hints changed: `None`
/// where the previous alignment stands. Takes the first-pass alignments it uses from `first`.
async fn second_pass(
    inputs: &[ProcessInput<'_>],
    cfg: &AlignConfig,
    previous: &[Option<Aligned>],
    first: &mut [Option<ProcessAlignment>],
    new_hints: &[Option<Hints>],
    runner: &dyn Runner,
) -> Vec<Option<ProcessAlignment>> {
    let mut fresh: Vec<Option<ProcessAlignment>> = inputs.iter().map(|_| None).collect();
    let mut jobs = Vec::new();
    for i in 0..inputs.len() {
        let Some(hints) = &new_hints[i] else {
            continue; // a clean domain: inputs and hints as before
        };
        let same = matches!(&previous[i], Some(prev)
            if prev.reuse.hints.same_as(hints, &prev.reuse.first, inputs[i].log_ops));
        if same {
            continue;
        }
        let p = &inputs[i];
        match first[i].take() {
            Some(a) if hints.is_empty() => fresh[i] = Some(a),
            // Hints that only confirm the first pass' pairs: re-scored, not re-aligned.
            Some(a) => match rehinted(p.log_ops, p.kernels, p.names, cfg, hints, &a) {
                Some(a) => fresh[i] = Some(a),
                None => jobs.push(i),
            },
            // Unchanged inputs that lost their hints (the first pass is not kept).
            None => jobs.push(i),
        }
    }
    let second_jobs: Vec<Job<'_>> = jobs
        .iter()
        .map(|&i| job(&inputs[i], new_hints[i].as_deref().unwrap_or(&[])))
        .collect();
    let redone = runner.run(&second_jobs, cfg).await;
    drop(second_jobs);
    for (&i, a) in jobs.iter().zip(redone) {
        fresh[i] = Some(a);
    }
    fresh
}

/// One process's result: its fresh alignment (with the first lines and hints it ran with) or
/// its previous one (with the recomputed hints, if any); `None` when it has neither.
fn aligned(
    fresh: Option<ProcessAlignment>,
    prev: Option<Aligned>,
    lines: Option<Vec<Option<usize>>>,
    hints: Option<Hints>,
    domain: usize,
    log_ops: &[LogOp],
) -> Option<Aligned> {
    Some(match (fresh, prev) {
        (Some(alignment), prev) => {
            let redone = if prev.is_some() {
                Redone::Hints
            } else {
                Redone::Inputs
            };
            let first = match (lines, prev) {
                (Some(lines), _) => FirstLines::from_lines(&lines),
                (None, Some(p)) => p.reuse.first,
                (None, None) => FirstLines::default(),
            };
            let hints = KeptHints::encode(hints.as_deref().unwrap_or(&[]), &first, log_ops);
            Aligned {
                alignment,
                redone,
                reuse: Reuse {
                    first,
                    hints,
                    domain,
                },
            }
        }
        (None, Some(prev)) => Aligned {
            alignment: prev.alignment,
            redone: Redone::Kept,
            reuse: match hints {
                Some(hints) => Reuse {
                    hints: KeptHints::encode(&hints, &prev.reuse.first, log_ops),
                    first: prev.reuse.first,
                    domain,
                },
                None => prev.reuse,
            },
        },
        (None, None) => return None,
    })
}

fn job<'a>(p: &ProcessInput<'a>, hints: &'a [Option<(u64, u64)>]) -> Job<'a> {
    Job {
        log_ops: p.log_ops,
        kernels: p.kernels,
        names: p.names,
        hints,
    }
}

/// Where a process's export has NCCL's own NVTX ranges, joins its kernels exactly to the
/// calls that launched them and reports how the alignment agrees ([`AnomalyReport::nvtx`]).
///
/// [`AnomalyReport::nvtx`]: crate::AnomalyReport::nvtx
fn nvtx_check(p: &ProcessInput<'_>, a: &mut ProcessAlignment) {
    if p.nvtx.is_empty() {
        return;
    }
    let join = join_nvtx(p.kernels, p.nvtx);
    if join.joined() == 0 {
        return;
    }
    let matched: Vec<Option<&[u32]>> = a.per_kernel.iter().map(|m| m.map(|m| m.log_ops)).collect();
    a.report.nvtx = Some(check(&join, p.nvtx, p.log_ops, &matched));
}

/// `f` over `items`, results in input order: contiguous chunks, one scoped thread per core.
#[cfg(not(target_arch = "wasm32"))]
pub fn map_ordered<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads <= 1 || items.len() <= 1 {
        return items.iter().map(f).collect();
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|c| s.spawn(|| c.iter().map(&f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(v) => v,
                Err(e) => std::panic::resume_unwind(e),
            })
            .collect()
    })
}

/// `f` over `items`, in order (wasm32: no threads here).
#[cfg(target_arch = "wasm32")]
pub fn map_ordered<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    items.iter().map(f).collect()
}
