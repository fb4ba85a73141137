//! The alignment PyTorch profiler traces give (issue 33; docs/design/kineto.md), and their
//! steps.
//!
//! A trace's process (its log of operations and its export of kernels, `load::SessionTrace`)
//! is not aligned: its kernels are matched to the operations the trace gives them
//! ([`known_alignment`]). A log's process holding a claimed trace's kernels is joined by
//! communicator and `Seq` where the trace has it ([`Traced::Claimed`]), else aligned.

use crate::alignment::InputPrint;
use align::{KernelMatches, ProcessAlignment};
use load::SessionTrace;

/// The alignment of a process whose operations and kernels are exactly one unclaimed trace's
/// (its print: that trace's log and export alone): each kernel matched to the operation the
/// trace gives it. `kernel_rows` are the process's kernels' rows in the export, in the order the
/// alignment indexes them.
pub(crate) fn known_alignment(
    trace: &SessionTrace,
    print: &InputPrint,
    log_index: u32,
    export_index: u32,
    kernel_rows: impl Iterator<Item = u32>,
) -> Option<ProcessAlignment> {
    if trace.claimed_by.is_some()
        || print.ops.iter().any(|&(l, _)| l != log_index)
        || print.kernels.iter().any(|&(x, _)| x != export_index)
    {
        return None;
    }
    let per_kernel: Vec<Option<align::matches::OwnedMatch>> = kernel_rows
        .map(|row| {
            let op = trace.op_of_kernel.get(row as usize).copied().flatten()?;
            Some((vec![op as usize], Vec::new(), 1.0))
        })
        .collect();
    let matched = per_kernel.iter().flatten().count();
    let orphan_kernels = per_kernel
        .iter()
        .enumerate()
        .filter(|(_, m)| m.is_none())
        .map(|(k, _)| k)
        .collect();
    let report = align::AnomalyReport {
        nccl_kernels: per_kernel.len(),
        log_ops: trace.log.parsed.ops.len(),
        matched,
        orphan_kernels,
        ..align::AnomalyReport::default()
    };
    Some(ProcessAlignment {
        per_kernel: KernelMatches::from_options(per_kernel),
        report,
    })
}

/// One `ProfilerStep#N` range of one rank, in the synchronised time of the analysis' clocks
/// (the reference rank's: see [`crate::Analysis::clocks`]); for the step analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfilerStep {
    pub rank: u32,
    pub step: u64,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// Every trace's profiler steps, by rank then step; a trace whose process has no rank in the
/// analysis is left out.
pub(crate) fn profiler_steps(
    session: &load::Session,
    processes: &[crate::processes::ProcessSummary],
    clocks: &enrich::ClockSync,
) -> Vec<ProfilerStep> {
    let mut out = Vec::new();
    for t in session.traces() {
        let Some(p) = processes.iter().find(|p| &p.process == t.owner()) else {
            continue;
        };
        let rank = p.global_rank;
        out.extend(t.trace.steps.iter().map(|s| ProfilerStep {
            rank,
            step: s.step,
            start_ns: clocks.to_sync(rank, s.start_ns),
            end_ns: clocks.to_sync(rank, s.end_ns),
        }));
    }
    out.sort_by_key(|s| (s.rank, s.step, s.start_ns));
    out
}

/// The most profiler steps one trace holds (the run's iterations seen), if any trace has any.
pub(crate) fn steps_seen(session: &load::Session) -> Option<u32> {
    session
        .traces()
        .iter()
        .map(|t| t.trace.steps.len() as u32)
        .max()
        .filter(|&n| n > 0)
}

/// A process whose alignment a profiler trace gives.
pub(crate) enum Traced<'s> {
    /// The trace's own process (no log claimed it): its log's and export's places.
    Own(&'s SessionTrace, u32, u32),
    /// A log's process holding a trace's kernels that carry `Seq`: the export's place.
    Claimed(&'s SessionTrace, u32),
}

impl Traced<'_> {
    /// The process's alignment as the trace gives it, or `None` (then it is aligned): `rows`
    /// are its kernels' export rows in alignment order, `log_ops` its operations.
    pub(crate) fn alignment(
        &self,
        print: &InputPrint,
        rows: &[u32],
        log_ops: &load::ProcessOps,
    ) -> Option<ProcessAlignment> {
        match *self {
            Traced::Own(t, log, export) => {
                known_alignment(t, print, log, export, rows.iter().copied())
            }
            Traced::Claimed(t, export) => seq_alignment(t, print, export, rows, log_ops),
        }
    }
}

/// The alignment of a log's process with a claimed trace's kernels by communicator and
/// sequence: PyTorch's `Seq` of a collective counts its process group's calls as NCCL's opCount
/// counts the communicator's, from another start. Each group is the log communicator of its
/// size on which the group's `Seq`s, less one offset (up to 8: calls before the trace's
/// communicator was made), land on lines of the same operation and count, for every kernel of
/// the group. `None` when a kernel has no `Seq`, is point-to-point (a fused group of lines is
/// the aligner's to pair) or finds no line: then the aligner joins them all.
fn seq_alignment(
    t: &SessionTrace,
    print: &InputPrint,
    export: u32,
    rows: &[u32],
    log_ops: &load::ProcessOps,
) -> Option<ProcessAlignment> {
    use std::collections::HashMap;
    if print.kernels.iter().any(|&(x, _)| x != export) {
        return None;
    }
    // The log's lines by (communicator, opCount), first copies; and its communicators' sizes.
    // The log's lines by (communicator, opCount): the first, then its later copies (a line
    // printed twice); and the communicators' sizes.
    let mut lines: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
    let mut sizes: std::collections::BTreeMap<u64, u32> = std::collections::BTreeMap::new();
    for i in 0..log_ops.len() {
        let (Some(site), Some(call)) = (log_ops.site(i), log_ops.call(i)) else {
            continue;
        };
        lines.entry((site.comm, call.op_count)).or_default().push(i);
        sizes.insert(site.comm, site.nranks);
    }
    // The trace's operation of each kernel, by its group.
    let ops = &t.log.parsed.ops;
    let mut by_group: HashMap<u64, Vec<(usize, model::log::LogOp)>> = HashMap::new();
    for (k, &row) in rows.iter().enumerate() {
        let op = ops.get(t.op_of_kernel.get(row as usize).copied().flatten()? as usize)?;
        let g = t.groups.iter().find(|g| g.comm == op.comm)?;
        if !g.by_seq || op.op.is_p2p() || op.op == model::OpType::AllToAll {
            return None;
        }
        by_group.entry(op.comm).or_default().push((k, op));
    }
    let mut per_kernel: Vec<Option<align::matches::OwnedMatch>> = vec![None; rows.len()];
    let mut used = vec![false; log_ops.len()];
    for (group, kernels) in &by_group {
        let size = t.groups.iter().find(|g| g.comm == *group).map(|g| g.size)?;
        let candidates = sizes.iter().filter(|(_, &n)| n == size).map(|(&c, _)| c);
        let fits = |comm: u64, d: u64| -> Option<Vec<&Vec<usize>>> {
            kernels
                .iter()
                .map(|(_, op)| {
                    let copies = lines.get(&(comm, op.op_count.checked_sub(d)?))?;
                    let i = *copies.first()?;
                    let (site, call) = (log_ops.site(i)?, log_ops.call(i)?);
                    let same = site.op == op.op && (op.count == 0 || call.count == op.count);
                    same.then_some(copies)
                })
                .collect()
        };
        // The communicator (and its first offset) every kernel fits; two that fit: ambiguous.
        let mut fitting = candidates.filter_map(|c| (0..=8).find_map(|d| fits(c, d)));
        let hit = fitting.next()?;
        if fitting.next().is_some() {
            return None;
        }
        for ((k, _), copies) in kernels.iter().zip(hit) {
            for &i in copies {
                if std::mem::replace(&mut used[i], true) {
                    return None;
                }
            }
            per_kernel[*k] = Some((vec![copies[0]], copies[1..].to_vec(), 1.0));
        }
    }
    let matched = per_kernel.iter().flatten().count();
    let report = align::AnomalyReport {
        nccl_kernels: rows.len(),
        log_ops: log_ops.len(),
        matched,
        orphan_log_ops: (0..used.len()).filter(|&i| !used[i]).collect(),
        ..align::AnomalyReport::default()
    };
    Some(ProcessAlignment {
        per_kernel: KernelMatches::from_options(per_kernel),
        report,
    })
}
