//! Aligning one process's log operations with its NCCL kernels.
//!
//! Steps, each switchable in [`AlignConfig`] so that the thesis' method is one configuration:
//!
//! 1. Kernels: NCCL kernels only, in start order; symbols from the decoded name when given.
//! 2. Log: duplicated lines (same communicator, opCount, op, peer, count, datatype: the 2:1
//!    logging of table 4.1) are collapsed onto their first copy. NCCL runs a group of
//!    Send/Recv calls as one SendRecv kernel, so a SendRecv kernel may absorb a run of
//!    consecutive Send/Recv lines (a *fusion move* of the aligner). NCCL counts opCount per
//!    launch, so the lines of one group share their communicator and opCount; the DP may still
//!    split a group between kernels (NCCL splits large groups) or leave lines unmatched.
//! 3. A first alignment on symbols alone (of a long process's first kernels and log lines, when
//!    their vote in step 4 splits it into streams that cover all of it).
//! 4. Streams: the pairs of step 3 vote for a one-to-one map log stream pointer → kernel stream
//!    id; each mapped pair of streams is then aligned on its own (kernels of concurrent streams
//!    interleave differently from the log's enqueue order).
//! 5. Timestamps: the pairs vote for a clock offset (median of kernel − log time, scale from the
//!    MAD); the alignment is redone with matches far from the offset penalised.

// Fx: the keys are small integers and tuples, hashed per log line and kernel (SipHash was a tenth
// of the native analysis).
use rustc_hash::FxHashMap as HashMap;

use crate::matches::{KernelMatches, OwnedMatch};
use crate::nw::{self, Score, Step, NEG};
use crate::scoring::{PairTable, Scorer, Scoring, TimeModel};
use crate::symbols::{class_key, kernel_symbol, log_symbol, Symbol};
use crate::twins;
use model::log::LogOp;
use model::nsys::{Kernel, KernelName};
use model::OpType;

/// What [`align_process`] does.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct AlignConfig {
    pub scoring: Scoring,
    /// Collapse duplicated log lines onto their first copy.
    pub dedup_log: bool,
    /// Let a SendRecv kernel absorb a run of Send/Recv lines (fusion moves).
    pub group_p2p: bool,
    /// Bonus of a fusion over the single-line match, in points (constant, so that a run is
    /// split evenly between kernels rather than one kernel taking most of it).
    pub fusion_extra: f64,
    /// Learn the stream map and align each stream pair separately.
    pub per_stream: bool,
    /// Stand a placeholder in for each log line missing from a communicator's opCount
    /// sequence (NCCL counts opCount per communicator and launch), so that the kernel of a
    /// dropped line has somewhere to go instead of pulling the real lines out of register.
    pub opcount_gaps: bool,
    /// In [`crate::align_all`]: re-align with the calls the other ranks place each collective
    /// kernel at ([`crate::consensus`]).
    pub consensus: bool,
    /// Use log timestamps against kernel launch/start times when both exist.
    pub use_timestamps: bool,
    /// Smallest time scale (ns) of the offset model.
    pub min_time_scale_ns: i64,
    /// Use the full-matrix reference aligner (small inputs, tests) instead of the banded one.
    pub reference: bool,
}

impl AlignConfig {
    /// The thesis' method: op names only, one sequence per process.
    pub fn thesis() -> AlignConfig {
        AlignConfig {
            scoring: Scoring::thesis(),
            dedup_log: false,
            group_p2p: false,
            per_stream: false,
            opcount_gaps: false,
            consensus: false,
            use_timestamps: false,
            min_time_scale_ns: 5_000,
            fusion_extra: 0.5,
            reference: false,
        }
    }

    /// Everything this crate knows.
    pub fn rich() -> AlignConfig {
        AlignConfig {
            scoring: Scoring::rich(),
            dedup_log: true,
            group_p2p: true,
            per_stream: true,
            opcount_gaps: true,
            consensus: true,
            use_timestamps: true,
            ..AlignConfig::thesis()
        }
    }
}

/// What did not line up, per process.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AnomalyReport {
    pub nccl_kernels: usize,
    pub log_ops: usize,
    /// Kernels with a log op.
    pub matched: usize,
    /// Matched kernels whose (known) op disagrees with the log's (should be 0; kernels whose
    /// name gives no op, like `ncclDevKernel_Generic`, are matched by position and not counted).
    pub mismatched: usize,
    /// Kernels that absorbed several Send/Recv lines, and how many lines they absorbed.
    pub fused_kernels: usize,
    pub fused_log_ops: usize,
    /// Log lines that repeat an earlier line (same comm and opCount).
    pub duplicate_log_ops: usize,
    /// Most operations logged twice (one rank per TP group does this, table 4.1).
    pub duplication_2to1: bool,
    /// Log ops (first copies) with no kernel, and NCCL kernels with no log op (input indices).
    pub orphan_log_ops: Vec<usize>,
    pub orphan_kernels: Vec<usize>,
    /// Learned (log stream pointer, kernel stream id) pairs, by log stream.
    pub stream_map: Vec<(u64, u64)>,
    /// Kernel time − log time (median over the run), when timestamps were used.
    pub time_offset_ns: Option<i64>,
    /// Its drift over the run, in parts per million.
    pub time_drift_ppm: Option<f64>,
    /// Where the export has NCCL's NVTX ranges: the exact join against this alignment.
    pub nvtx: Option<crate::nvtx_join::NvtxCheck>,
}

/// The result for one process.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessAlignment {
    /// Indexed like the input kernels; no match for unmatched and non-NCCL kernels.
    pub per_kernel: KernelMatches,
    pub report: AnomalyReport,
}

impl ProcessAlignment {
    /// All (log op, kernel) pairs, fused lines included, duplicates excluded.
    pub fn pairs(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (k, m) in self.per_kernel.iter().enumerate() {
            if let Some(m) = m {
                out.extend(m.lines().map(|l| (l, k)));
            }
        }
        out
    }
}

/// Stamps of this resolution or coarser are not used (see [`stamp_resolution`]).
pub const COARSE_STAMP_NS: i64 = 10_000_000;

/// The resolution of a process's log stamps: the coarsest of 1 s, 1 ms, 1 µs and 1 ns that every
/// stamp is a multiple of (stamps of a finer clock all landing on whole milliseconds is a
/// chance of one in 10³ per stamp); `None` without stamps.
pub fn stamp_resolution(log_ops: &[LogOp]) -> Option<i64> {
    let mut any = false;
    let mut tick = 1_000_000_000i64;
    for t in log_ops.iter().filter_map(|o| o.timestamp_ns) {
        any = true;
        while tick > 1 && t % tick != 0 {
            tick /= 1_000;
        }
        if tick == 1 {
            break;
        }
    }
    any.then_some(tick)
}

/// Rounds of (fit the clock model, re-align) at most.
const TIME_ROUNDS: usize = 4;

/// One log-side symbol: a line with its duplicates collapsed.
struct Unit {
    members: Vec<usize>,
    sym: Symbol,
}

/// Everything the per-group alignments share.
struct Ctx<'a> {
    cfg: &'a AlignConfig,
    log_ops: &'a [LogOp],
    units: &'a [Unit],
    ksym: &'a [Symbol],
    usym: &'a [Symbol],
}

/// (kernel, the units it matched): one unit, or several for a fused Send/Recv group.
type Matches = Vec<(usize, Vec<usize>)>;

/// Aligns one process's log ops (in log order) with its kernels; `names[k]` is the decoded
/// name of `kernels[k]` when the caller has one (missing entries fall back to a substring match).
pub fn align_process(
    log_ops: &[LogOp],
    kernels: &[Kernel],
    names: &[Option<KernelName>],
    cfg: &AlignConfig,
) -> ProcessAlignment {
    align_process_hinted(log_ops, kernels, names, cfg, &[])
}

/// [`align_process`] with, per kernel (input order), the (communicator pointer, opCount) that
/// the other ranks say it runs ([`crate::consensus`]); missing entries are unknown.
pub fn align_process_hinted(
    log_ops: &[LogOp],
    kernels: &[Kernel],
    names: &[Option<KernelName>],
    cfg: &AlignConfig,
    hints: &[Option<(u64, u64)>],
) -> ProcessAlignment {
    align_process_voting_on(log_ops, kernels, names, cfg, hints, VOTE_PREFIX)
}

/// [`align_process_hinted`], the stream map voted by the first `prefix` kernels when that
/// settles it ([`prefix_stream_map`]).
fn align_process_voting_on(
    log_ops: &[LogOp],
    kernels: &[Kernel],
    names: &[Option<KernelName>],
    cfg: &AlignConfig,
    hints: &[Option<(u64, u64)>],
    prefix: usize,
) -> ProcessAlignment {
    let sides = sides(log_ops, kernels, names, cfg, hints);
    let (ksym, usym, units) = (&sides.ksym[..], &sides.usym[..], &sides.units[..]);
    let ctx = Ctx {
        cfg,
        log_ops,
        units,
        ksym,
        usym,
    };

    // 3. First pass on symbols alone, and 4. the stream map it votes for.
    let all_u: Vec<usize> = (0..units.len()).collect();
    let all_k: Vec<usize> = (0..ksym.len()).collect();
    let (first, stream_map) = if cfg.per_stream {
        match prefix_stream_map(&ctx, &all_k, &all_u, prefix) {
            Some(map) => (None, map),
            None => {
                let m = align_group(&ctx, &all_k, &all_u, None);
                let map = stream_map_of(ksym, usym, &m);
                (Some(m), map)
            }
        }
    } else {
        (Some(align_group(&ctx, &all_k, &all_u, None)), Vec::new())
    };

    // 4. Streams.
    let mut groups = vec![(all_k.clone(), all_u.clone())];
    // Whether the streams split the process into groups (then aligned group by group, below).
    let mut split = false;
    if stream_map.len() > 1 {
        let (used_l, used_k): (Vec<u64>, Vec<u64>) = stream_map.iter().copied().unzip();
        groups = stream_map
            .iter()
            .map(|&(ls, ks)| {
                let k = all_k
                    .iter()
                    .copied()
                    .filter(|&k| ksym[k].stream == ks)
                    .collect();
                let u = all_u
                    .iter()
                    .copied()
                    .filter(|&u| usym[u].stream == ls)
                    .collect();
                (k, u)
            })
            .collect();
        let k_rest: Vec<usize> = all_k
            .iter()
            .copied()
            .filter(|&k| !used_k.contains(&ksym[k].stream))
            .collect();
        let u_rest: Vec<usize> = all_u
            .iter()
            .copied()
            .filter(|&u| !used_l.contains(&usym[u].stream))
            .collect();
        if !k_rest.is_empty() && !u_rest.is_empty() {
            groups.push((k_rest, u_rest));
        }
        split = true;
    }

    // 5. Timestamps: offset from the last unit of each match (the kernel launches after it).
    // The first pass may be shifted by a few operations in long runs of identical symbols; each
    // round's pairs give a better clock model than the last, so a few rounds converge.
    // The vote reads the symbols alone, so the streams are aligned once, with the clock model
    // if there is one (aligning them without it first was a whole pass thrown away).
    let mut time = None;
    // Stamps constrain as far as their resolution allows: the model's scale is at least one
    // tick of them, and stamps of ticks too coarse to tell a step's kernels apart (NCCL's
    // default `[%F %T]`, a second) are not used: the lines are placed by their order alone.
    let tick = stamp_resolution(log_ops);
    let use_time = cfg.use_timestamps && tick.is_some_and(|t| t < COARSE_STAMP_NS);
    let min_scale = cfg.min_time_scale_ns.max(tick.unwrap_or(0));
    if use_time {
        let stamped = |syms: &[Symbol]| -> Vec<(i64, u64)> {
            syms.iter()
                .filter_map(|s| Some((s.time_ns?, class_key(s.op))))
                .collect()
        };
        time = TimeModel::vote(&stamped(usym), &stamped(ksym), 2 * min_scale, min_scale);
    }
    // Not split and no clock model: the first pass is the answer (it was run: a stream map
    // of one pair or none is never taken from a prefix).
    let mut matches = match first {
        Some(m) if !split && time.is_none() => m,
        _ => groups
            .iter()
            .flat_map(|(k, u)| align_group(&ctx, k, u, time.as_ref()))
            .collect(),
    };
    if use_time {
        for _ in 0..TIME_ROUNDS {
            let samples: Vec<(i64, i64)> = matches
                .iter()
                .filter_map(|(k, us)| {
                    let lt = usym[*us.last()?].time_ns?;
                    Some((lt, ksym[*k].time_ns? - lt))
                })
                .collect();
            let next = TimeModel::fit(samples, min_scale);
            if next.is_none() || next == time {
                break;
            }
            time = next;
            matches = groups
                .iter()
                .flat_map(|(k, u)| align_group(&ctx, k, u, time.as_ref()))
                .collect();
        }
    }

    if let Some(tm) = &time {
        let first_line: Vec<Option<usize>> =
            units.iter().map(|u| u.members.first().copied()).collect();
        twins::prefer_closer_twins(log_ops, &first_line, usym, ksym, tm, &mut matches);
    }

    output(
        log_ops,
        kernels.len(),
        cfg,
        &sides,
        &matches,
        stream_map,
        time.as_ref(),
    )
}

/// Whether `first`, a process's alignment without hints, already pairs every hinted kernel with
/// a line of the call its hint names, and has no clock model. Then aligning again with the
/// hints cannot do better than `first`'s pairs: a hint adds the same reward to each pair that
/// agrees with it and takes some from each pair that does not, `first`'s pairs score the most
/// without the hints and take every reward with them.
fn keeps_under_hints(
    log_ops: &[LogOp],
    first: &ProcessAlignment,
    hints: &[Option<(u64, u64)>],
) -> bool {
    first.report.time_offset_ns.is_none()
        && hints.iter().enumerate().all(|(k, hint)| {
            let Some(call) = hint else { return true };
            first
                .per_kernel
                .get(k)
                .and_then(|m| log_ops.get(m.first_line()))
                .is_some_and(|o| (o.comm, o.op_count) == *call)
        })
}

/// `first`'s pairs with the confidences of an alignment with `hints`, instead of a second
/// alignment (a third of the alignment's work on a run without drops, where every process's
/// first pass agrees with the others), when [`keeps_under_hints`] holds. `None` (align again)
/// when it does not, or when the log misses lines of a communicator: pairs with the stand-ins
/// of missing lines count towards confidences but are not in `first`.
pub fn rehinted(
    log_ops: &[LogOp],
    kernels: &[Kernel],
    names: &[Option<KernelName>],
    cfg: &AlignConfig,
    hints: &[Option<(u64, u64)>],
    first: &ProcessAlignment,
) -> Option<ProcessAlignment> {
    if !keeps_under_hints(log_ops, first, hints) {
        return None;
    }
    let sides = sides(log_ops, kernels, names, cfg, hints);
    if sides.units.iter().any(|u| u.members.is_empty()) {
        return None;
    }
    let mut unit_of = vec![None; log_ops.len()];
    for (u, unit) in sides.units.iter().enumerate() {
        for &l in &unit.members {
            unit_of[l] = Some(u);
        }
    }
    let mut symbol_of = vec![None; kernels.len()];
    for (s, &k) in sides.kidx.iter().enumerate() {
        symbol_of[k] = Some(s);
    }
    let mut matches: Matches = Vec::new();
    for (k, m) in first.per_kernel.iter().enumerate() {
        let Some(m) = m else { continue };
        let mut us: Vec<usize> = Vec::new();
        for l in m.lines() {
            let u = (*unit_of.get(l)?)?;
            if us.last() != Some(&u) {
                us.push(u);
            }
        }
        matches.push(((*symbol_of.get(k)?)?, us));
    }
    let map = first.report.stream_map.clone();
    Some(output(
        log_ops,
        kernels.len(),
        cfg,
        &sides,
        &matches,
        map,
        None,
    ))
}

/// Steps 1 and 2: the kernels' and the log's symbols.
struct Sides {
    /// Per kernel symbol (NCCL kernels in start order), its index among the input kernels.
    kidx: Vec<usize>,
    ksym: Vec<Symbol>,
    /// The log lines kept (first copies), and each line's first copy if it repeats one.
    kept: Vec<usize>,
    dup_of: Vec<Option<usize>>,
    units: Vec<Unit>,
    usym: Vec<Symbol>,
}

fn sides(
    log_ops: &[LogOp],
    kernels: &[Kernel],
    names: &[Option<KernelName>],
    cfg: &AlignConfig,
    hints: &[Option<(u64, u64)>],
) -> Sides {
    let mut kidx: Vec<usize> = Vec::new();
    let mut ksym: Vec<Symbol> = Vec::new();
    let mut order: Vec<usize> = (0..kernels.len()).collect();
    order.sort_by_key(|&k| (kernels[k].start_ns, k));
    for k in order {
        if let Some(mut s) = kernel_symbol(&kernels[k], names.get(k).and_then(|n| n.as_ref())) {
            s.call = hints.get(k).copied().flatten();
            kidx.push(k);
            ksym.push(s);
        }
    }
    let (kept, dup_of) = dedup(log_ops, cfg.dedup_log);
    let mut units = log_units(log_ops, &kept, cfg.opcount_gaps);
    if cfg.group_p2p {
        let send_recv = ksym
            .iter()
            .filter(|s| s.op == Some(OpType::SendRecv))
            .count();
        units = whole_groups(units, log_ops, send_recv);
    }
    let usym: Vec<Symbol> = units.iter().map(|u| u.sym.clone()).collect();
    Sides {
        kidx,
        ksym,
        kept,
        dup_of,
        units,
        usym,
    }
}

/// The process's alignment from its `matches` (kernel symbol, units): confidences, duplicates,
/// orphans and the report.
fn output(
    log_ops: &[LogOp],
    n_kernels: usize,
    cfg: &AlignConfig,
    sides: &Sides,
    matches: &Matches,
    stream_map: Vec<(u64, u64)>,
    time: Option<&TimeModel>,
) -> ProcessAlignment {
    let Sides {
        kidx,
        ksym,
        kept,
        dup_of,
        units,
        usym,
    } = sides;
    let confidence = confidences(cfg, ksym, usym, matches, time);
    let mut per_kernel: Vec<Option<OwnedMatch>> = vec![None; n_kernels];
    let mut dups_of: HashMap<usize, Vec<usize>> = HashMap::default();
    for (l, d) in dup_of.iter().enumerate() {
        if let Some(first) = *d {
            dups_of.entry(first).or_default().push(l);
        }
    }
    let mut report = AnomalyReport {
        nccl_kernels: ksym.len(),
        log_ops: log_ops.len(),
        duplicate_log_ops: dup_of.iter().filter(|d| d.is_some()).count(),
        // In log stream order: the vote's order is not the map's meaning. (Empty without
        // `per_stream`: nothing votes.)
        stream_map: {
            let mut map = stream_map;
            map.sort_unstable();
            map
        },
        time_offset_ns: time.map(TimeModel::typical_offset),
        time_drift_ppm: time.and_then(TimeModel::drift_ppm),
        ..AnomalyReport::default()
    };
    report.duplication_2to1 = !kept.is_empty() && report.duplicate_log_ops * 5 >= kept.len() * 2;
    let mut log_matched = vec![false; log_ops.len()];
    let plain = Scorer {
        scoring: &cfg.scoring,
        kernels: ksym,
        log: usym,
        time: None,
    };
    for ((k, us), &c) in matches.iter().zip(&confidence) {
        let members: Vec<usize> = us
            .iter()
            .flat_map(|&u| units[u].members.iter().copied())
            .collect();
        if members.is_empty() {
            // The kernel of a log line that is missing (it took a placeholder): an orphan.
            continue;
        }
        let duplicates = members
            .iter()
            .flat_map(|m| dups_of.get(m).cloned().unwrap_or_default())
            .collect();
        for &m in &members {
            log_matched[m] = true;
        }
        report.matched += 1;
        if ksym[*k].op.is_some() && us.iter().any(|&u| !plain.same_op(*k, u)) {
            report.mismatched += 1;
        }
        if members.len() > 1 {
            report.fused_kernels += 1;
            report.fused_log_ops += members.len();
        }
        per_kernel[kidx[*k]] = Some((members, duplicates, c));
    }
    report.orphan_log_ops = kept.iter().copied().filter(|&l| !log_matched[l]).collect();
    report.orphan_kernels = kidx
        .iter()
        .copied()
        .filter(|&k| per_kernel[k].is_none())
        .collect();
    let per_kernel = KernelMatches::from_options(per_kernel);
    ProcessAlignment { per_kernel, report }
}

/// Kernels in the prefix of a process that votes for its stream map (see
/// [`prefix_stream_map`]).
const VOTE_PREFIX: usize = 2048;

/// The one-to-one map log stream pointer → kernel stream id that the pairs `m` vote for:
/// the most-voted pairs first, each stream used once.
fn stream_map_of(ksym: &[Symbol], usym: &[Symbol], m: &Matches) -> Vec<(u64, u64)> {
    let mut votes: HashMap<(u64, u64), usize> = HashMap::default();
    for (k, us) in m {
        *votes
            .entry((usym[us[0]].stream, ksym[*k].stream))
            .or_default() += 1;
    }
    let mut v: Vec<((u64, u64), usize)> = votes.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let (mut used_l, mut used_k) = (Vec::new(), Vec::new());
    let mut map = Vec::new();
    for ((ls, ks), _) in v {
        if !used_l.contains(&ls) && !used_k.contains(&ks) {
            used_l.push(ls);
            used_k.push(ks);
            map.push((ls, ks));
        }
    }
    map
}

/// The stream map voted by the first `prefix` kernels and as large a share of the log units,
/// aligned on symbols alone; `None` (vote on the whole process) when the process is not longer
/// than that, or when the prefix's map does not split the process into streams that
/// cover every stream of both sides.
///
/// Why: on a process of several streams the whole first pass only votes for the map (each
/// stream pair is then aligned on its own), and it was half of all the alignment's work. The
/// streams interleave from the first iteration, so a prefix of thousands of kernels casts the
/// same votes in proportion; a stream that only starts later is not in the prefix's map, and
/// then the whole process votes as before.
fn prefix_stream_map(
    ctx: &Ctx<'_>,
    all_k: &[usize],
    all_u: &[usize],
    prefix: usize,
) -> Option<Vec<(u64, u64)>> {
    let (n, m) = (all_k.len(), all_u.len());
    if n <= prefix || m == 0 {
        return None;
    }
    // Log units in proportion: the prefix ends at about the same point of the run on both sides.
    let mu = (prefix * m).div_ceil(n).min(m);
    let first = align_group(ctx, &all_k[..prefix], &all_u[..mu], None);
    let map = stream_map_of(ctx.ksym, ctx.usym, &first);
    let all_mapped = map.len() > 1
        && ctx
            .ksym
            .iter()
            .all(|s| map.iter().any(|&(_, ks)| ks == s.stream))
        && ctx
            .usym
            .iter()
            .all(|s| map.iter().any(|&(ls, _)| ls == s.stream));
    all_mapped.then_some(map)
}

/// The log side of the alignment: one unit per kept line, in log order, and (with `gaps`) a
/// placeholder for each opCount missing between two lines of one communicator. Placeholders
/// have no members and a symbol with `members == 0`; a jump of more than [`MAX_GAP_FILL`]
/// (a log cut short, a counter NCCL reset) gets none.
fn log_units(log_ops: &[LogOp], kept: &[usize], gaps: bool) -> Vec<Unit> {
    let mut last: HashMap<u64, u64> = HashMap::default();
    let mut units = Vec::with_capacity(kept.len());
    for &l in kept {
        let o = &log_ops[l];
        if gaps {
            if let Some(&prev) = last.get(&o.comm) {
                let missing = o.op_count.saturating_sub(prev + 1);
                if missing <= MAX_GAP_FILL {
                    for c in prev + 1..o.op_count {
                        let mut sym = log_symbol(o);
                        sym.op = None;
                        sym.time_ns = None;
                        sym.members = 0;
                        sym.call = Some((o.comm, c));
                        units.push(Unit {
                            members: Vec::new(),
                            sym,
                        });
                    }
                }
            }
            let e = last.entry(o.comm).or_insert(o.op_count);
            *e = (*e).max(o.op_count);
        }
        units.push(Unit {
            members: vec![l],
            sym: log_symbol(o),
        });
    }
    units
}

/// Whether two units are lines of one Send/Recv group: consecutive p2p lines of one
/// communicator with one opCount.
fn same_group(log_ops: &[LogOp], a: &Unit, b: &Unit) -> bool {
    match (a.members.first(), b.members.first()) {
        (Some(&x), Some(&y)) => {
            let (p, q) = (&log_ops[x], &log_ops[y]);
            p.op.is_p2p() && q.op.is_p2p() && p.comm == q.comm && p.op_count == q.op_count
        }
        _ => false,
    }
}

/// Each Send/Recv group as one unit, which one SendRecv kernel takes whole, when the process's
/// SendRecv kernels (`send_recv`) are about one per group: then a SendRecv kernel beside a group
/// (another NCCL instance's, with no log of its own) cannot take part of the group's lines, and
/// a group of any size, self-sends and uneven counts included, is one symbol. Where NCCL ran
/// groups over several kernels (one per remote peer in the thesis' all-to-all: half again as
/// many kernels as groups or more), the lines stay units of their own, which a kernel may take
/// in runs (fusion moves). The group's symbol is its last line's (the launch follows it).
fn whole_groups(units: Vec<Unit>, log_ops: &[LogOp], send_recv: usize) -> Vec<Unit> {
    let mut groups = 0usize;
    for (i, u) in units.iter().enumerate() {
        let p2p = u.members.first().is_some_and(|&l| log_ops[l].op.is_p2p());
        if p2p && (i == 0 || !same_group(log_ops, &units[i - 1], u)) {
            groups += 1;
        }
    }
    if groups == 0 || 2 * send_recv >= 3 * groups {
        return units;
    }
    let mut out: Vec<Unit> = Vec::with_capacity(units.len());
    for u in units {
        match out.last_mut() {
            Some(last) if same_group(log_ops, last, &u) => {
                last.members.extend(u.members);
                last.sym = Symbol {
                    members: last.members.len() as u32,
                    ..u.sym
                };
            }
            _ => out.push(u),
        }
    }
    out
}

/// The longest run of missing opCounts that [`log_units`] fills with placeholders.
const MAX_GAP_FILL: u64 = 16;

/// Returns the kept (first-copy) log indices and, per log line, the first copy it repeats.
fn dedup(log_ops: &[LogOp], on: bool) -> (Vec<usize>, Vec<Option<usize>>) {
    let mut dup_of = vec![None; log_ops.len()];
    if !on {
        return ((0..log_ops.len()).collect(), dup_of);
    }
    type Key = (u64, u64, u16, i64, u64, u32, u64, u64);
    let mut seen: HashMap<Key, usize> = HashMap::default();
    let mut kept = Vec::new();
    for (l, o) in log_ops.iter().enumerate() {
        // Grouped operations share an opCount: only a line identical in every field repeats.
        let key = (
            o.comm,
            o.op_count,
            o.op.code(),
            o.root,
            o.count,
            o.datatype_code,
            o.sendbuff,
            o.recvbuff,
        );
        match seen.get(&key) {
            Some(&first) => dup_of[l] = Some(first),
            None => {
                seen.insert(key, l);
                kept.push(l);
            }
        }
    }
    (kept, dup_of)
}

/// For each position of `u`, where its Send/Recv group starts (itself if it is not p2p):
/// consecutive p2p lines of one communicator with one opCount.
fn p2p_runs(ctx: &Ctx<'_>, u: &[usize]) -> Vec<usize> {
    let line = |p: usize| ctx.units[u[p]].members.first().map(|&l| &ctx.log_ops[l]);
    let mut start: Vec<usize> = Vec::with_capacity(u.len());
    for p in 0..u.len() {
        let joins = ctx.cfg.group_p2p && p > 0 && {
            match (line(p - 1), line(p)) {
                (Some(q), Some(o)) => {
                    o.op.is_p2p() && q.op.is_p2p() && q.comm == o.comm && q.op_count == o.op_count
                }
                _ => false,
            }
        };
        start.push(if joins { start[p - 1] } else { p });
    }
    start
}

/// A view of some kernels and units (by index) as a [`Score`], with fusion moves. Everything
/// the aligner asks per cell is precomputed per position (scores through a [`PairTable`]).
struct Sub<'a> {
    inner: Scorer<'a>,
    k: &'a [usize],
    u: &'a [usize],
    run_start: Vec<usize>,
    fusion_extra: i64,
    table: Option<PairTable>,
    /// Op class per kernel / unit position for the run bonus (never equal when unknown).
    kop: Vec<u8>,
    uop: Vec<u8>,
    run_bonus: i64,
    /// Kernel positions that are SendRecv kernels (they may absorb a Send/Recv run).
    send_recv: Vec<bool>,
}

impl<'a> Sub<'a> {
    fn new(
        inner: Scorer<'a>,
        k: &'a [usize],
        u: &'a [usize],
        run_start: Vec<usize>,
        fusion_extra: i64,
    ) -> Sub<'a> {
        let class =
            |op: Option<OpType>, unknown: u8| op.map_or(unknown, |o| class_key(Some(o)) as u8);
        Sub {
            table: PairTable::new(&inner, k, u),
            kop: k.iter().map(|&x| class(inner.kernels[x].op, 254)).collect(),
            uop: u.iter().map(|&x| class(inner.log[x].op, 255)).collect(),
            run_bonus: (inner.scoring.run_bonus * 100.0).round() as i64,
            send_recv: k
                .iter()
                .map(|&x| inner.kernels[x].op == Some(OpType::SendRecv))
                .collect(),
            inner,
            k,
            u,
            run_start,
            fusion_extra,
        }
    }

    /// Too many symbol classes for a table: the scoring itself, per cell.
    #[cold]
    #[inline(never)]
    fn sub_slow(&self, i: usize, j: usize) -> i64 {
        self.inner.sub(self.k[i], self.u[j])
    }
}

impl Score for Sub<'_> {
    #[inline(always)]
    fn sub(&self, i: usize, j: usize) -> i64 {
        match &self.table {
            Some(t) => t.sub(i, j),
            None => self.sub_slow(i, j),
        }
    }
    #[inline(always)]
    fn run_bonus(&self, i: usize, j: usize) -> i64 {
        // `&`, not `&&`: whether classes agree is data, a branch on it mispredicts.
        let both = (self.kop[i] == self.uop[j]) & (self.kop[i - 1] == self.uop[j - 1]);
        i64::from(both) * self.run_bonus
    }
    fn gap_a(&self) -> nw::GapModel {
        self.inner.gap_a()
    }
    fn gap_b(&self) -> nw::GapModel {
        self.inner.gap_b()
    }
    fn key_a(&self, i: usize) -> u64 {
        self.inner.key_a(self.k[i])
    }
    fn key_b(&self, j: usize) -> u64 {
        self.inner.key_b(self.u[j])
    }
    #[inline(always)]
    fn fuse_max(&self, i: usize, j: usize) -> usize {
        // 1 when `j` starts its run.
        let len = (j - self.run_start[j] + 1).min(16);
        if self.send_recv[i] {
            len
        } else {
            1
        }
    }
    /// The last line's score (it is the closest in time to the launch) plus a small bonus per
    /// absorbed line: absorbing beats leaving lines unmatched, but never beats a second kernel.
    #[inline]
    fn fuse(&self, i: usize, j: usize, len: usize) -> i64 {
        let s = self.sub(i, j);
        if s <= 0 {
            return NEG;
        }
        let _ = len;
        s + self.fusion_extra
    }
    /// A line of a Send/Recv group after its first: one kernel may take the group whole.
    fn fuses_with_previous(&self, j: usize) -> bool {
        self.run_start[j] != j
    }
    fn anchor_hints(&self) -> Option<Vec<(usize, usize)>> {
        let all = self.inner.anchor_hints()?;
        let kpos: HashMap<usize, usize> = self.k.iter().enumerate().map(|(p, &k)| (k, p)).collect();
        let upos: HashMap<usize, usize> = self.u.iter().enumerate().map(|(p, &u)| (u, p)).collect();
        Some(
            all.into_iter()
                .filter_map(|(k, u)| Some((*kpos.get(&k)?, *upos.get(&u)?)))
                .collect(),
        )
    }
}

/// Aligns the kernels `k` with the units `u` (indices into the symbol lists); returns the
/// matches. Pairs scoring ≤ 0 (different op classes) are dropped: a mismatch step is the
/// aligner's way of saying "both are orphans here".
fn align_group(ctx: &Ctx<'_>, k: &[usize], u: &[usize], time: Option<&TimeModel>) -> Matches {
    let cfg = ctx.cfg;
    let sc = Sub::new(
        Scorer {
            scoring: &cfg.scoring,
            kernels: ctx.ksym,
            log: ctx.usym,
            time,
        },
        k,
        u,
        p2p_runs(ctx, u),
        (cfg.fusion_extra * 100.0).round() as i64,
    );
    let al = if cfg.reference {
        nw::align_full(&sc, k.len(), u.len())
    } else {
        nw::align_fast(&sc, k.len(), u.len())
    };
    al.steps
        .iter()
        .filter_map(|s| match *s {
            Step::Pair(i, j) if sc.sub(i, j) > 0 => Some((k[i], vec![u[j]])),
            Step::Fused(i, j0, j1) => Some((k[i], u[j0..=j1].to_vec())),
            _ => None,
        })
        .collect()
}

/// Confidence of each match: a logistic of its score (a plain op-name match of weight 1 gives
/// 0.78, a mismatch ~0) times a context factor (how many of the neighbouring kernels, two each
/// side in kernel order, are matched close by in the log).
fn confidences(
    cfg: &AlignConfig,
    ksym: &[Symbol],
    usym: &[Symbol],
    m: &Matches,
    time: Option<&TimeModel>,
) -> Vec<f64> {
    let sc = Scorer {
        scoring: &cfg.scoring,
        kernels: ksym,
        log: usym,
        time,
    };
    let by_k: HashMap<usize, usize> = m.iter().map(|(k, us)| (*k, us[0])).collect();
    m.iter()
        .map(|(k, us)| {
            let (k, u) = (*k, us[0]);
            let s = 1.0 / (1.0 + (-sc.points(k, u) / 4.0).exp());
            let mut ctx = 0.0;
            for d in [1usize, 2] {
                for (nk, nu) in [
                    (k.checked_sub(d), u.checked_sub(d)),
                    (Some(k + d), Some(u + d)),
                ] {
                    if let (Some(nk), Some(nu)) = (nk, nu) {
                        if by_k
                            .get(&nk)
                            .is_some_and(|&mu| mu.abs_diff(nu) <= 2 + us.len())
                        {
                            ctx += 0.25;
                        }
                    }
                }
            }
            (s * (0.6 + 0.4 * ctx)).clamp(0.0, 1.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::log::{ProcessKey, SourceLine};
    use model::{DataType, RedOp};

    fn line(op: OpType, op_count: u64, root: i64) -> LogOp {
        LogOp {
            process: ProcessKey {
                host: "h".into(),
                pid: 1,
            },
            tid: 1,
            cuda_dev: 0,
            op,
            op_count,
            sendbuff: 0x10,
            recvbuff: 0x20,
            count: 1024,
            datatype: Some(DataType::Float32),
            datatype_code: 7,
            red_op: RedOp::Sum,
            root,
            comm: 0xc0,
            nranks: 4,
            stream: 0x5,
            timestamp_ns: None,
            algo: None,
            proto: None,
            nchannels: None,
            rccl_task: None,
            rccl_global_rank: None,
            rccl_acc: None,
            sym_kernel: None,
            source: SourceLine::default(),
        }
    }

    fn kernel(name: &str, start_ns: i64) -> Kernel {
        Kernel {
            pid: 1,
            start_ns,
            end_ns: start_ns + 10,
            device: 0,
            stream: 13,
            correlation_id: 0,
            name: name.into(),
            grid: [0, 1, 1],
            block: [1, 1, 1],
            static_shared_bytes: 0,
            dynamic_shared_bytes: 0,
            registers_per_thread: 0,
            local_memory_total: 0,
            launch_ns: None,
            launch_tid: None,
        }
    }

    #[test]
    fn modern_kernel_names_hide_sign_and_reduction() {
        // NCCL 2.19+ runs an int32 Max AllReduce in `..._Sum_u32_...`: neither the `Sum` nor
        // the `u32` contradicts the log line.
        let mut max_i32 = line(OpType::AllReduce, 1, 0);
        max_i32.datatype = Some(DataType::Int32);
        max_i32.datatype_code = 2;
        max_i32.red_op = RedOp::Max;
        let sum_f32 = line(OpType::AllReduce, 2, 0);
        let mut again = max_i32.clone();
        again.op_count = 3;
        let log = vec![max_i32, sum_f32, again];
        let kernels = vec![
            kernel("ncclDevKernel_AllReduce_Sum_u32_RING_LL", 100),
            kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 200),
            kernel("ncclDevKernel_AllReduce_Sum_u32_RING_LL", 300),
        ];
        let decoded = |datatype| {
            Some(KernelName {
                op: Some(OpType::AllReduce),
                red_op: Some(RedOp::Sum),
                datatype: Some(datatype),
                algo: Some(model::Algo::Ring),
                proto: Some(model::Proto::LL),
            })
        };
        let names = vec![
            decoded(DataType::Uint32),
            decoded(DataType::Float32),
            decoded(DataType::Uint32),
        ];
        let a = align_process(&log, &kernels, &names, &AlignConfig::rich());
        let matched: Vec<Vec<usize>> = a
            .per_kernel
            .iter()
            .map(|m| m.map(|m| m.lines().collect()).unwrap_or_default())
            .collect();
        assert_eq!(matched, [vec![0], vec![1], vec![2]]);
    }

    #[test]
    fn fusion_duplicates_orphans_and_foreign_kernels() {
        let log = vec![
            line(OpType::AllReduce, 1, 0),
            line(OpType::AllReduce, 1, 0), // logged twice
            line(OpType::Send, 2, 1),      // one group: one opCount
            line(OpType::Recv, 2, 1),
            line(OpType::AllGather, 3, 0), // no kernel
            line(OpType::AllReduce, 4, 0),
        ];
        let kernels = vec![
            kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100),
            kernel("volta_sgemm_128x64_nn", 150),
            kernel("ncclDevKernel_SendRecv", 200),
            kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 300),
            kernel("ncclDevKernel_Broadcast_RING_LL", 400), // no log line
        ];
        let names = vec![None; kernels.len()];
        let a = align_process(&log, &kernels, &names, &AlignConfig::rich());
        let m0 = a.per_kernel.get(0).unwrap();
        assert_eq!((m0.log_ops, m0.duplicates), (&[0][..], &[1][..]));
        assert!(a.per_kernel.get(1).is_none());
        assert_eq!(a.per_kernel.get(2).unwrap().log_ops, [2, 3]);
        assert_eq!(a.per_kernel.get(3).unwrap().log_ops, [5]);
        let r = &a.report;
        assert_eq!((r.nccl_kernels, r.matched, r.mismatched), (4, 3, 0));
        assert_eq!(
            (r.fused_kernels, r.fused_log_ops, r.duplicate_log_ops),
            (1, 2, 1)
        );
        assert_eq!(r.orphan_log_ops, vec![4]);
        assert_eq!(r.orphan_kernels, vec![4]);
        assert_eq!(a.pairs(), vec![(0, 0), (2, 2), (3, 2), (5, 3)]);
        for m in a.per_kernel.iter().flatten() {
            assert!(m.confidence > 0.5 && m.confidence <= 1.0, "{m:?}");
        }
        // The thesis' method: no dedup, no fusion; the SendRecv kernel takes one line.
        let t = align_process(&log, &kernels, &names, &AlignConfig::thesis());
        assert_eq!(t.report.matched, 3);
        assert_eq!(t.report.duplicate_log_ops, 0);
    }

    /// A pipeline stream of a 1F1B schedule, S S S (S R)×5 R R R per period (11 SendRecv
    /// kernels, 16 lines), `periods` long, with the kernels and lines that `keep_k` and
    /// `keep_l` refuse dropped: the banded aligner (whose plain adaptive band falls behind
    /// on it, see `nw::Lookahead`) gives what the full matrix gives.
    fn pipeline_stream(
        periods: u64,
        keep_k: impl Fn(u64) -> bool,
        keep_l: impl Fn(usize) -> bool,
    ) -> (Vec<LogOp>, Vec<Kernel>) {
        let (mut log, mut kernels) = (Vec::new(), Vec::new());
        for call in 0..periods * 11 {
            let lines: &[OpType] = match call % 11 {
                0..=2 => &[OpType::Send],
                3..=7 => &[OpType::Send, OpType::Recv],
                _ => &[OpType::Recv],
            };
            for &op in lines {
                if keep_l(log.len() + kernels.len()) {
                    log.push(line(op, call, 1));
                }
            }
            if keep_k(call) {
                let mut k = kernel("ncclDevKernel_SendRecv", 1000 * call as i64);
                k.grid[0] = 2 * lines.len() as u32;
                kernels.push(k);
            }
        }
        (log, kernels)
    }

    #[test]
    fn a_long_pipeline_stream_aligns_as_the_full_matrix_does() {
        let reference = AlignConfig {
            reference: true,
            ..AlignConfig::rich()
        };
        let streams = [
            pipeline_stream(120, |_| true, |_| true),
            pipeline_stream(120, |k| k % 37 != 5, |l| l % 53 != 11),
        ];
        for (t, (log, kernels)) in streams.iter().enumerate() {
            let names = vec![None; kernels.len()];
            let fast = align_process(log, kernels, &names, &AlignConfig::rich());
            let full = align_process(log, kernels, &names, &reference);
            assert_eq!(fast.per_kernel, full.per_kernel, "stream {t}");
            assert_eq!(fast.report, full.report, "stream {t}");
        }
        // Without drops every kernel takes the lines of its own call.
        let (log, kernels) = &streams[0];
        let names = vec![None; kernels.len()];
        let a = align_process(log, kernels, &names, &AlignConfig::rich());
        for (k, m) in a.per_kernel.iter().enumerate() {
            let m = m.expect("every kernel matched");
            assert!(m.lines().all(|l| log[l].op_count == k as u64), "kernel {k}");
        }
    }

    #[test]
    fn streams_are_learned_and_aligned_separately() {
        // Two streams whose kernels interleave differently from the log's enqueue order.
        let mut log = Vec::new();
        let mut kernels = Vec::new();
        for i in 0..40u64 {
            let mut a = line(OpType::AllReduce, i + 1, 0);
            a.stream = 0xa;
            a.datatype = Some(DataType::Float16);
            a.datatype_code = 6;
            let mut b = line(OpType::AllGather, i + 1, 0);
            b.stream = 0xb;
            b.comm = 0xd0;
            log.push(a);
            log.push(b);
            let mut ka = kernel(
                "ncclDevKernel_AllReduce_Sum_f16_RING_LL",
                1000 * i as i64 + 500,
            );
            ka.stream = 7;
            let mut kb = kernel("ncclDevKernel_AllGather_f32_RING_LL", 1000 * i as i64 + 400);
            kb.stream = 13;
            kernels.push(ka);
            kernels.push(kb);
        }
        let names = vec![None; kernels.len()];
        let a = align_process(&log, &kernels, &names, &AlignConfig::rich());
        let mut map = a.report.stream_map.clone();
        map.sort();
        assert_eq!(map, vec![(0xa, 7), (0xb, 13)]);
        assert_eq!(a.report.matched, 80);
        assert!(a.pairs().iter().all(|&(l, k)| l == k));
    }

    /// A long process of three streams (kernels interleaved unlike the log, lines and kernels
    /// dropped), the third starting at iteration `third_from`.
    fn three_streams(iterations: u64, third_from: u64) -> (Vec<LogOp>, Vec<Kernel>) {
        let mut log = Vec::new();
        let mut kernels = Vec::new();
        let specs = [
            (
                0xa,
                0xc0,
                OpType::AllReduce,
                7,
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                500,
            ),
            (
                0xb,
                0xd0,
                OpType::AllGather,
                13,
                "ncclDevKernel_AllGather_f32_RING_LL",
                400,
            ),
            (
                0xc,
                0xe0,
                OpType::ReduceScatter,
                21,
                "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL",
                450,
            ),
        ];
        for i in 0..iterations {
            for (s, &(stream, comm, op, kstream, name, at)) in specs.iter().enumerate() {
                if s == 2 && i < third_from {
                    continue;
                }
                // Drops at different periods on each side and stream.
                if !(i + s as u64).is_multiple_of(23 + s as u64) {
                    let mut l = line(op, i + 1, 0);
                    l.stream = stream;
                    l.comm = comm;
                    log.push(l);
                }
                if !(i + 2 * s as u64).is_multiple_of(17 + 2 * s as u64) {
                    let mut k = kernel(name, 1000 * i as i64 + at);
                    k.stream = kstream;
                    kernels.push(k);
                }
            }
        }
        (log, kernels)
    }

    #[test]
    fn a_prefix_votes_for_the_same_streams_as_the_whole_process() {
        let cfg = AlignConfig::rich();
        // All three streams from the start, and the third only after the prefix (then the
        // whole process votes).
        for third_from in [0, 1500] {
            let (log, kernels) = three_streams(2000, third_from);
            let names = vec![None; kernels.len()];
            assert!(kernels.len() > 2 * VOTE_PREFIX);
            let whole = align_process_voting_on(&log, &kernels, &names, &cfg, &[], usize::MAX);
            let voted = align_process_voting_on(&log, &kernels, &names, &cfg, &[], VOTE_PREFIX);
            let mut map = voted.report.stream_map.clone();
            map.sort();
            assert_eq!(
                map,
                vec![(0xa, 7), (0xb, 13), (0xc, 21)],
                "third from {third_from}"
            );
            assert_eq!(
                voted.per_kernel, whole.per_kernel,
                "third from {third_from}"
            );
            assert_eq!(voted.report.matched, whole.report.matched);
            assert!(voted.report.matched * 10 > kernels.len() * 9);
        }
    }

    #[test]
    fn hints_that_confirm_the_first_pass_give_the_hinted_alignment_without_one() {
        let cfg = AlignConfig::rich();
        // Kernels dropped, no log line missing (stand-ins of missing lines make it re-align).
        let (log, mut kernels) = three_streams(600, 0);
        let log: Vec<LogOp> = {
            let mut full = Vec::new();
            for i in 0..600u64 {
                for (stream, comm, op) in [
                    (0xa, 0xc0, OpType::AllReduce),
                    (0xb, 0xd0, OpType::AllGather),
                    (0xc, 0xe0, OpType::ReduceScatter),
                ] {
                    let mut l = line(op, i + 1, 0);
                    l.stream = stream;
                    l.comm = comm;
                    full.push(l);
                }
            }
            assert!(full.len() > log.len());
            full
        };
        kernels.truncate(kernels.len() - 5);
        let names = vec![None; kernels.len()];
        let first = align_process(&log, &kernels, &names, &cfg);
        // Hints as the consensus gives them: the call each collective kernel's pair carries.
        let mut hints: Vec<Option<(u64, u64)>> = first
            .per_kernel
            .iter()
            .map(|m| m.map(|m| (log[m.first_line()].comm, log[m.first_line()].op_count)))
            .collect();
        assert!(hints.iter().filter(|h| h.is_some()).count() * 10 > kernels.len() * 9);
        assert!(keeps_under_hints(&log, &first, &hints));
        let realigned = align_process_hinted(&log, &kernels, &names, &cfg, &hints);
        let kept = rehinted(&log, &kernels, &names, &cfg, &hints, &first).unwrap();
        assert_eq!(kept, realigned);
        // The hints raise the confidences: the result is not `first` again.
        assert_ne!(kept, first);
        // One hint naming another call: align again.
        let k = hints.iter().position(Option::is_some).unwrap();
        hints[k] = hints[k].map(|(c, n)| (c, n + 1));
        assert!(!keeps_under_hints(&log, &first, &hints));
        assert_eq!(rehinted(&log, &kernels, &names, &cfg, &hints, &first), None);
        // A log missing a line: its stand-in is part of the alignment, so align again.
        let mut cut = log.clone();
        cut.remove(30);
        let first = align_process(&cut, &kernels, &names, &cfg);
        assert_eq!(rehinted(&cut, &kernels, &names, &cfg, &[], &first), None);
    }

    #[test]
    fn a_prefix_that_misses_a_stream_leaves_the_vote_to_the_whole_process() {
        let cfg = AlignConfig::rich();
        let prefix_map = |third_from: u64| {
            let (log, kernels) = three_streams(2000, third_from);
            let (kept, _) = dedup(&log, cfg.dedup_log);
            let units = log_units(&log, &kept, cfg.opcount_gaps);
            let usym: Vec<Symbol> = units.iter().map(|u| u.sym.clone()).collect();
            let ksym: Vec<Symbol> = kernels
                .iter()
                .filter_map(|k| kernel_symbol(k, None))
                .collect();
            let ctx = Ctx {
                cfg: &cfg,
                log_ops: &log,
                units: &units,
                ksym: &ksym,
                usym: &usym,
            };
            let all_k: Vec<usize> = (0..ksym.len()).collect();
            let all_u: Vec<usize> = (0..usym.len()).collect();
            prefix_stream_map(&ctx, &all_k, &all_u, VOTE_PREFIX).map(|mut m| {
                m.sort();
                m
            })
        };
        assert_eq!(prefix_map(1500), None);
        assert_eq!(prefix_map(0), Some(vec![(0xa, 7), (0xb, 13), (0xc, 21)]));
    }
}

/// The precomputed [`Sub`] against the per-cell scoring it replaced (kept verbatim here): same
/// score for every pair and the same alignments, with and without a time model, for the
/// thesis, rich and an off-grid scoring.
#[cfg(test)]
mod reference_tests {
    use super::*;
    use crate::scoring::RichTerms;
    use model::{Algo, DataType, Proto, RedOp};

    /// `Scorer::points` before the pair table, verbatim.
    fn points_ref(s: &Scorer<'_>, i: usize, j: usize) -> f64 {
        use crate::symbols::{kernel_class, weight};
        let (k, l) = (&s.kernels[i], &s.log[j]);
        let sc = s.scoring;
        let call = |r: &RichTerms| match (k.call, l.call) {
            (Some(a), Some(b)) if a == b => r.call_agree,
            (Some(_), Some(_)) => r.call_conflict,
            _ => 0.0,
        };
        if l.members == 0 {
            return sc
                .rich
                .as_ref()
                .map_or(sc.mismatch, |r| r.placeholder + call(r));
        }
        let mut p = match (k.op, l.op) {
            (Some(a), Some(b)) if kernel_class(a) == kernel_class(b) => {
                sc.match_score * weight(Some(a))
            }
            (None, Some(_)) if sc.rich.is_some() => sc.rich.as_ref().map_or(0.0, |r| r.unknown_op),
            _ => return sc.mismatch * (weight(k.op) + weight(l.op)) / 2.0,
        };
        let Some(r) = &sc.rich else { return p };
        let mut attr = |agree: Option<bool>, conflict: f64| match agree {
            Some(true) => p += r.attr_agree,
            Some(false) => p += conflict,
            None => {}
        };
        fn both<T: PartialEq>(a: Option<T>, b: Option<T>) -> Option<bool> {
            Some(a? == b?)
        }
        attr(both(k.datatype, l.datatype), r.attr_conflict);
        attr(both(k.red_op, l.red_op), r.attr_conflict);
        attr(both(k.algo, l.algo), r.algo_conflict);
        attr(both(k.proto, l.proto), r.algo_conflict);
        p += call(r);
        match both(k.channels, l.channels) {
            Some(true) => p += r.channels_agree,
            Some(false) => p += r.channels_conflict,
            None => {}
        }
        if let (Some(tm), Some(kt), Some(lt)) = (s.time, k.time_ns, l.time_ns) {
            let z = ((kt - lt - tm.offset_at(lt)).abs() as f64) / tm.scale_ns as f64;
            p += if z <= 1.0 {
                r.time_agree * (1.0 - z)
            } else {
                -(r.time_slope * (z - 1.0)).min(r.time_cap)
            };
        }
        p
    }

    /// `Sub` before the precomputation, verbatim but for `points_ref`.
    struct RefSub<'a> {
        inner: Scorer<'a>,
        k: &'a [usize],
        u: &'a [usize],
        run_start: Vec<usize>,
        fusion_extra: i64,
    }

    impl Score for RefSub<'_> {
        fn sub(&self, i: usize, j: usize) -> i64 {
            (points_ref(&self.inner, self.k[i], self.u[j]) * 100.0).round() as i64
        }
        fn run_bonus(&self, i: usize, j: usize) -> i64 {
            let s = &self.inner;
            if s.same_op(self.k[i], self.u[j]) && s.same_op(self.k[i - 1], self.u[j - 1]) {
                (s.scoring.run_bonus * 100.0).round() as i64
            } else {
                0
            }
        }
        fn gap_a(&self) -> nw::GapModel {
            self.inner.gap_a()
        }
        fn gap_b(&self) -> nw::GapModel {
            self.inner.gap_b()
        }
        fn key_a(&self, i: usize) -> u64 {
            self.inner.key_a(self.k[i])
        }
        fn key_b(&self, j: usize) -> u64 {
            self.inner.key_b(self.u[j])
        }
        fn fuse_max(&self, i: usize, j: usize) -> usize {
            if self.run_start[j] == j || self.inner.kernels[self.k[i]].op != Some(OpType::SendRecv)
            {
                return 1;
            }
            (j - self.run_start[j] + 1).min(16)
        }
        fn fuses_with_previous(&self, j: usize) -> bool {
            self.run_start[j] != j
        }
        fn fuse(&self, i: usize, j: usize, len: usize) -> i64 {
            let s = self.sub(i, j);
            if s <= 0 {
                return NEG;
            }
            let _ = len;
            s + self.fusion_extra
        }
        fn anchor_hints(&self) -> Option<Vec<(usize, usize)>> {
            let all = self.inner.anchor_hints()?;
            let kpos: HashMap<usize, usize> =
                self.k.iter().enumerate().map(|(p, &k)| (k, p)).collect();
            let upos: HashMap<usize, usize> =
                self.u.iter().enumerate().map(|(p, &u)| (u, p)).collect();
            Some(
                all.into_iter()
                    .filter_map(|(k, u)| Some((*kpos.get(&k)?, *upos.get(&u)?)))
                    .collect(),
            )
        }
    }

    use model::rng::SplitMix64 as Rng;

    /// `f`'s value three times in four.
    fn maybe<T>(rng: &mut Rng, f: impl FnOnce(&mut Rng) -> T) -> Option<T> {
        let v = f(rng);
        (rng.below(4) != 0).then_some(v)
    }

    const OPS: [OpType; 7] = [
        OpType::AllReduce,
        OpType::AllGather,
        OpType::ReduceScatter,
        OpType::Broadcast,
        OpType::Send,
        OpType::Recv,
        OpType::SendRecv,
    ];

    /// A symbol for operation `t` of a run: fields drawn from small sets so that they agree
    /// and conflict often; times 1 ms apart with jitter.
    /// Not `diverse`: algorithm, protocol and reduction fixed (few classes, as in real runs).
    fn symbol(rng: &mut Rng, t: usize, kernel: bool, diverse: bool) -> Symbol {
        let mut op = OPS[rng.below(OPS.len() as u64) as usize];
        if kernel && op.is_p2p() {
            op = OpType::SendRecv;
        }
        Symbol {
            op: if kernel && rng.below(10) == 0 {
                None
            } else {
                Some(op)
            },
            red_op: maybe(rng, |rng| [RedOp::Sum, RedOp::Max][rng.below(2) as usize])
                .filter(|_| diverse),
            datatype: maybe(rng, |rng| {
                [DataType::Float32, DataType::Float16][rng.below(2) as usize]
            }),
            algo: maybe(rng, |rng| [Algo::Ring, Algo::Tree][rng.below(2) as usize])
                .filter(|_| diverse),
            proto: maybe(rng, |rng| [Proto::LL, Proto::Simple][rng.below(2) as usize])
                .filter(|_| diverse),
            channels: maybe(rng, |rng| 1 + rng.below(3) as u32)
                .map(|c| if diverse { c } else { 2 }),
            stream: 0,
            time_ns: maybe(rng, |rng| {
                1_000_000_000 + t as i64 * 1_000_000 + rng.below(40_000) as i64
                    - if kernel { 0 } else { 30_000 }
            }),
            members: u32::from(kernel || rng.below(12) != 0),
            call: maybe(rng, |rng| {
                (0xc0 + rng.below(2), t as u64 / 2 + rng.below(2))
            }),
        }
    }

    fn odd_scoring() -> Scoring {
        let mut s = Scoring::rich();
        s.match_score = 5.1;
        s.mismatch = -14.7;
        s.run_bonus = 1.05;
        let r = s.rich.as_mut().unwrap();
        r.attr_agree = 0.3;
        r.call_agree = 6.1;
        r.channels_conflict = -4.15;
        r.time_agree = 3.3;
        r.time_slope = 5.7;
        s
    }

    #[test]
    fn precomputed_scores_and_alignments_match_the_reference() {
        let mut rng = Rng::from_state(99);
        let scorings = [Scoring::rich(), Scoring::thesis(), odd_scoring()];
        let rounds = if cfg!(debug_assertions) { 60 } else { 300 };
        let mut tables = 0;
        for round in 0..rounds {
            let len = 1 + rng.below(if round % 10 == 0 { 600 } else { 90 }) as usize;
            let diverse = round % 4 == 3;
            let ksym: Vec<Symbol> = (0..len)
                .map(|t| symbol(&mut rng, t, true, diverse))
                .collect();
            let usym: Vec<Symbol> = (0..len + rng.below(20) as usize)
                .map(|t| symbol(&mut rng, t, false, diverse))
                .collect();
            // Some positions of each side, in order (like one stream's group).
            let k: Vec<usize> = (0..ksym.len()).filter(|_| rng.below(8) != 0).collect();
            let u: Vec<usize> = (0..usym.len()).filter(|_| rng.below(8) != 0).collect();
            let mut run_start: Vec<usize> = Vec::new();
            for p in 0..u.len() {
                let joins = p > 0 && rng.below(3) == 0;
                run_start.push(if joins { run_start[p - 1] } else { p });
            }
            let scoring = &scorings[round % 3];
            let samples: Vec<(i64, i64)> = (0..200)
                .map(|x| {
                    (
                        1_000_000_000 + x * 1_000_000,
                        25_000 + x * 3 + rng.below(9_000) as i64,
                    )
                })
                .collect();
            let mut tm = TimeModel::fit(samples, 5_000).unwrap();
            tm.anchors = rng.below(2) == 0;
            let time = (rng.below(3) != 0).then_some(&tm);
            let scorer = || Scorer {
                scoring,
                kernels: &ksym,
                log: &usym,
                time,
            };
            let fusion_extra = 50;
            let new = Sub::new(scorer(), &k, &u, run_start.clone(), fusion_extra);
            // Many classes for the length: the per-cell fallback.
            tables += usize::from(new.table.is_some());
            let old = RefSub {
                inner: scorer(),
                k: &k,
                u: &u,
                run_start,
                fusion_extra,
            };
            for i in 0..k.len() {
                for j in 0..u.len() {
                    assert_eq!(new.sub(i, j), old.sub(i, j), "round {round} ({i}, {j})");
                    assert_eq!(new.fuse_max(i, j), old.fuse_max(i, j));
                    assert_eq!(new.fuse(i, j, 2), old.fuse(i, j, 2));
                    if i > 0 && j > 0 {
                        assert_eq!(new.run_bonus(i, j), old.run_bonus(i, j));
                    }
                }
            }
            assert_eq!(new.anchor_hints(), old.anchor_hints());
            let (n, m) = (k.len(), u.len());
            assert_eq!(
                nw::align_fast(&new, n, m),
                crate::nw_ref::align_fast(&old, n, m),
                "round {round}"
            );
            if n * m < 20_000 {
                assert_eq!(
                    nw::align_full(&new, n, m),
                    crate::nw_ref::align_full(&old, n, m),
                    "round {round}"
                );
            }
        }
        assert!(tables * 2 > rounds && tables < rounds, "{tables} tables");
    }

    #[test]
    fn centi_rounds_like_round() {
        let mut rng = Rng::from_state(3);
        let mut xs = vec![
            0.0,
            -0.0,
            0.005,
            -0.005,
            0.015,
            0.025,
            -2.675,
            1e15,
            -1e15,
            1e17,
            4.5e16 + 0.5,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            0.49999999999999994 / 100.0,
        ];
        for _ in 0..100_000 {
            let v = (rng.below(2_000_000) as f64 - 1_000_000.0) / 200.0;
            xs.push(v);
            xs.push(v + (rng.below(1000) as f64) * 1e-6);
            xs.push(f64::from_bits(rng.below(u64::MAX)));
        }
        for x in xs {
            let want = (x * 100.0).round() as i64;
            assert_eq!(crate::scoring::centi(x), want, "{x:e}");
        }
    }
}
