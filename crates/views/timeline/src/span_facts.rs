//! What the analysis knows of each kernel on the timeline: its rank, communicator,
//! parallelism, bytes, bandwidth and how it was matched to the log. The filter selects spans by
//! these facts, and [`annotate_spans`] writes the drawn ones (match mark, parallelism) into the
//! spans. Facts are walked, never stored: a run of millions of kernels would need a second copy
//! of the timeline.

use crate::tracks::{par_byte, Lod, Mark, Timeline, LOW_CONFIDENCE};
use enrich::{ClockSync, Parallelism};
use model::log::ProcessKey;
use model::OpType;
use pipeline::Analysis;
use pipeline::ProcessMatch;
use std::collections::{HashMap, HashSet};

/// One kernel of the timeline as the analysis sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanFact {
    /// The track's global rank, when the logs name its process.
    pub rank: Option<u32>,
    /// The operation its log lines name ([`pipeline::kernel_op`]), else its kernel name's.
    pub op: Option<OpType>,
    /// The logical communicator of its (first) log line: an index into
    /// [`enrich::Communicators::comms`].
    pub comm: Option<usize>,
    pub parallelism: Option<Parallelism>,
    /// The log's message bytes, count × datatype (fused Send/Recv lines added up); `None` when
    /// unmatched.
    pub bytes: Option<u64>,
    /// Bus bandwidth in GB/s (`None` when unmatched or a datatype is unknown).
    pub bus_bw_gbps: Option<f64>,
    pub mark: Mark,
    /// Several log lines (grouped Send/Recv) fused into this kernel.
    pub fused: bool,
    /// Its log lines were printed more than once.
    pub duplicated: bool,
}

impl SpanFact {
    fn unmatched(rank: Option<u32>, op: Option<OpType>) -> SpanFact {
        SpanFact {
            rank,
            op,
            comm: None,
            parallelism: None,
            bytes: None,
            bus_bw_gbps: None,
            mark: Mark::Unmatched,
            fused: false,
            duplicated: false,
        }
    }
}

/// Calls `visit(track, span, fact)` for every span of `timeline`, which was built with `clocks`
/// (the analysis's, or none for the original clocks). Track by track, in span order.
pub fn walk_span_facts(
    analysis: &Analysis,
    timeline: &Timeline,
    clocks: &ClockSync,
    mut visit: impl FnMut(usize, usize, &SpanFact),
) {
    // Each communicator's parallelism, looked up once, not per kernel.
    let mut parallelism: Vec<Option<Parallelism>> = vec![None; analysis.communicators.comms.len()];
    for p in &analysis.layout.comms {
        if let Some(slot) = parallelism.get_mut(p.comm) {
            *slot = Some(p.parallelism).filter(|p| *p != Parallelism::Unknown);
        }
    }
    for (t, track) in timeline.tracks.iter().enumerate() {
        let Some((process, device)) = &track.source else {
            for (i, s) in track.spans.iter().enumerate() {
                visit(t, i, &SpanFact::unmatched(None, s.op));
            }
            continue;
        };
        let rank = track_rank(analysis, process);
        let Some(pm) = process_match(analysis, process) else {
            for (i, s) in track.spans.iter().enumerate() {
                visit(t, i, &SpanFact::unmatched(rank, s.op));
            }
            continue;
        };
        // The process's communicator pointers, resolved once per track, not per kernel.
        let comm_of: HashMap<u64, Option<usize>> = pm
            .log_ops
            .iter()
            .map(|o| o.comm)
            .collect::<HashSet<u64>>()
            .into_iter()
            .map(|ptr| (ptr, analysis.communicators.comm_of(&pm.process, ptr)))
            .collect();
        let lookups = Lookups {
            comm_of: &comm_of,
            parallelism: &parallelism,
        };
        let time = |ns: i64| rank.map_or(ns, |r| clocks.to_sync(r, ns));
        // Both sides are sorted by start on this GPU (the clock map keeps order): one merge,
        // pairing equal (start, end) among the kernels that start together.
        let kernels: Vec<(usize, i64, i64)> = pm
            .kernels
            .iter()
            .enumerate()
            .filter(|(_, k)| k.device == *device)
            .map(|(i, k)| (i, time(k.start_ns), time(k.end_ns)))
            .collect();
        let mut used = vec![false; kernels.len()];
        let mut next = 0;
        for (i, s) in track.spans.iter().enumerate() {
            while next < kernels.len() && kernels[next].1 < s.start_ns {
                next += 1;
            }
            let found = (next..kernels.len())
                .take_while(|&x| kernels[x].1 == s.start_ns)
                .find(|&x| kernels[x].2 == s.end_ns && !used[x]);
            let fact = match found {
                Some(x) => {
                    used[x] = true;
                    kernel_fact(&lookups, pm, kernels[x].0, rank, s.op)
                }
                None => SpanFact::unmatched(rank, s.op),
            };
            visit(t, i, &fact);
        }
    }
}

/// Writes each span's match mark and parallelism, and builds each track's parallelism summary.
pub fn annotate_spans(analysis: &Analysis, timeline: &mut Timeline, clocks: &ClockSync) {
    let mut marks: Vec<Vec<(Mark, u8)>> = timeline
        .tracks
        .iter()
        .map(|t| Vec::with_capacity(t.spans.len()))
        .collect();
    walk_span_facts(analysis, timeline, clocks, |t, _, f| {
        let par = f.parallelism.map_or(crate::LOD_NO_OP, par_byte);
        marks[t].push((f.mark, par));
    });
    for (track, marks) in timeline.tracks.iter_mut().zip(marks) {
        for (s, (mark, par)) in track.spans.iter_mut().zip(marks) {
            s.mark = mark;
            s.par = par;
        }
        track.par_lod = Lod::build_by(&track.spans, |s| s.par);
    }
}

/// What a kernel's facts look up: its process's communicator pointers as logical
/// communicators, and each communicator's parallelism.
struct Lookups<'a> {
    comm_of: &'a HashMap<u64, Option<usize>>,
    parallelism: &'a [Option<Parallelism>],
}

/// The facts of kernel `k` of `pm`, whose name says `op`.
fn kernel_fact(
    lookups: &Lookups,
    pm: &ProcessMatch,
    k: usize,
    rank: Option<u32>,
    op: Option<OpType>,
) -> SpanFact {
    let Some(m) = pm.alignment.per_kernel.get(k) else {
        return SpanFact::unmatched(rank, op);
    };
    let ops: Vec<_> = m.lines().filter_map(|j| pm.log_ops.get(j)).collect();
    let Some(first) = ops.first() else {
        return SpanFact::unmatched(rank, op);
    };
    let comm = lookups.comm_of.get(&first.comm).copied().flatten();
    let parallelism = comm.and_then(|c| lookups.parallelism.get(c).copied().flatten());
    // As the exports compute them (`export::kernel_records`): the message size is the lines'
    // counts times their datatype, and the bandwidth moves their op_bytes in the kernel's time.
    let op = pipeline::kernel_op(&ops);
    let bytes = Some(ops.iter().map(|o| o.msg_bytes()).sum());
    let moved: Option<u64> = ops
        .iter()
        .map(|o| {
            Some(enrich::op_bytes(
                o.op,
                o.count,
                o.datatype?.size_bytes(),
                o.nranks,
            ))
        })
        .sum();
    let Some(kernel) = pm.kernels.get(k) else {
        return SpanFact::unmatched(rank, Some(op));
    };
    let bus_bw_gbps = moved.and_then(|b| {
        let d = kernel.end_ns - kernel.start_ns;
        enrich::measure(op, first.algo, first.nranks, b, d, None).map(|b| b.bus_bw_gbps)
    });
    SpanFact {
        rank,
        op: Some(op),
        comm,
        parallelism,
        bytes,
        bus_bw_gbps,
        mark: if m.confidence < LOW_CONFIDENCE {
            Mark::LowConfidence
        } else {
            Mark::Matched
        },
        fused: ops.len() > 1,
        duplicated: !m.duplicates.is_empty(),
    }
}

/// The global rank of a track's process, as [`crate::build`] labels it.
pub(crate) fn track_rank(analysis: &Analysis, process: &ProcessKey) -> Option<u32> {
    pipeline::log_process(&analysis.processes, &process.host, process.pid).map(|p| p.global_rank)
}

/// The alignment of a track's process (a hostless export's pid, adopted as the aligner does).
fn process_match<'a>(analysis: &'a Analysis, process: &ProcessKey) -> Option<&'a ProcessMatch> {
    if let Some(pm) = analysis.alignments.get(process) {
        return Some(pm);
    }
    if !process.host.is_empty() {
        return None;
    }
    let mut m = analysis
        .alignments
        .processes
        .iter()
        .filter(|pm| pm.process.pid == process.pid);
    match (m.next(), m.next()) {
        (Some(pm), None) => Some(pm),
        _ => None,
    }
}
