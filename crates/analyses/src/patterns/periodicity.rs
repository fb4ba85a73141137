//! On-Off periodicity (seed 003, §3.1: "a GPU experiences 2m micro-batch communication blocks
//! per iteration … repetitive, with consistent durations"): per communicator, its communication
//! blocks per step, how consistent their count and duration are, the period, and the steps and
//! ranks that break the pattern.
//!
//! Blocks: on each member, the communicator's kernels in start order, merged while the idle gap
//! between one's end and the next's start is at most the communicator's gap threshold. The
//! threshold splits the gaps of the communicator's lowest member into short (within a block)
//! and long (Off) ones: Otsu's split of `ln(gap)`, kept when the long gaps' mean is at least
//! [`OFF_RATIO`] times the short ones' (else there are no distinct Off periods and every kernel
//! is a block), placed in the widest empty stretch between the two. One threshold per
//! communicator, so every member is cut the same way.
//!
//! Steps: the exports' NVTX iteration ranges of each member's process, when every process has
//! them (a block belongs to the range its start falls in); otherwise the blocks' own period
//! ([`find_period`]: the lag in blocks at which a member's sequence of blocks best repeats, its
//! phase at the longest recurring gap). Steps are a rank's, not a communicator's, so each rank
//! is cut by one reference, its busiest collective-only communicator whose blocks repeat, and
//! every communicator's blocks on that rank fall into those steps by time. Only whole periods
//! count (the run's first and last iterations may be left out), and the first and last of them
//! are not flagged: where a reference's boundary falls in an iteration, they hold part of the
//! run's start or end.
//!
//! Flags: a (step, rank) whose block count differs from that member's usual count (the mode of
//! its steps); a step whose On time (median over members) is off the steps' median by more
//! than [`ROBUST_Z`] robust deviations and [`MIN_DEVIATION`] of the median. On a communicator
//! that runs collectives only (members alike), a rank whose usual count differs from the other
//! members', or whose On time per step (median over steps) is off theirs the same way.

use super::facts::RunFacts;
use super::fit;
use super::notes::{Note, Notes};
use super::totals::Totals;
use load::Session;
use pipeline::Analysis;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// Long gaps must be this many times the short ones (mean of logs) to count as Off periods.
pub const OFF_RATIO: f64 = 4.0;
/// Robust deviations (MAD × 1.4826) beyond which a step's or rank's On time is flagged…
pub const ROBUST_Z: f64 = 4.0;
/// …provided it is also off by this share of the median.
pub const MIN_DEVIATION: f64 = 0.1;
/// Blocks of the lowest member the period search reads, and the longest lag it tries.
const PERIOD_WINDOW: usize = 4096;
const MAX_LAG: usize = 2048;
/// Flagged steps and ranks listed per communicator (the counts are exact).
const MAX_FLAGS: usize = 100;

/// Where steps came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepSource {
    /// The exports' NVTX iteration ranges.
    Nvtx,
    /// The blocks' own period.
    Period,
    /// Neither: blocks are counted over the whole run.
    None,
}

/// One block: a run of kernels with no Off gap between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub start_ns: i64,
    pub end_ns: i64,
    pub kernels: u32,
}

impl Block {
    pub fn duration_ns(&self) -> i64 {
        self.end_ns - self.start_ns
    }
}

/// One step of a communicator, over its members.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    pub step: u32,
    /// The members' most common block count in this step.
    pub blocks: u32,
    /// The members' median On time (sum of block durations), ns.
    pub on_ns: i64,
    pub flagged: bool,
}

/// A step that breaks the pattern.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlaggedStep {
    pub step: u32,
    /// `count` (some ranks had another number of blocks) or `duration` (On time off).
    pub reason: String,
    /// The ranks at fault (for `count`), or every member (for `duration`).
    pub ranks: Vec<u32>,
}

/// A rank that breaks the pattern.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlaggedRank {
    pub rank: u32,
    /// `count` (its block count broke the mode in most steps) or `duration`.
    pub reason: String,
    /// Its median On time per step against the members' median, ns.
    pub on_ns: i64,
    pub members_on_ns: i64,
}

/// One communicator's On-Off pattern.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommPeriodicity {
    pub comm: String,
    pub parallelism: String,
    pub size: u32,
    /// Members with kernels.
    pub members: u32,
    pub kernels: u64,
    /// Gaps longer than this are Off periods (0: no distinct Off periods, every kernel a block).
    pub gap_threshold_ns: i64,
    pub steps: u32,
    /// The usual number of blocks per step, and the share of (step, rank) cells that have it.
    pub blocks_per_step: u32,
    pub count_consistency: f64,
    /// Median time from one step's first block to the next's, over members.
    pub period_ns: Option<i64>,
    /// Median On time per step, and its robust coefficient of variation over steps.
    pub on_ns_per_step: Option<i64>,
    pub on_time_cv: Option<f64>,
    /// Robust coefficient of variation of a block's duration across steps (blocks compared at
    /// the same position in their step), median over positions.
    pub block_cv: Option<f64>,
    /// With [`StepSource::Period`]: the period in blocks of the lowest member.
    pub lag_blocks: Option<u32>,
    /// Whether the communicator runs collectives only, so that its members are compared with
    /// each other (point-to-point members play different roles).
    pub symmetric: bool,
    pub per_step: Vec<StepRow>,
    pub flagged_steps: Vec<FlaggedStep>,
    pub flagged_step_count: u32,
    pub flagged_ranks: Vec<FlaggedRank>,
}

/// Every communicator's pattern.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Periodicity {
    pub step_source: StepSource,
    pub comms: Vec<CommPeriodicity>,
    pub notes: Vec<Note>,
}

/// Cuts one member's kernels (start, end; in start order) into blocks: a gap of at most
/// `gap_ns` joins two kernels.
pub fn blocks(kernels: &[(i64, i64)], gap_ns: i64) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    for &(s, e) in kernels {
        match out.last_mut() {
            Some(b) if s - b.end_ns <= gap_ns => {
                b.end_ns = b.end_ns.max(e);
                b.kernels += 1;
            }
            _ => out.push(Block {
                start_ns: s,
                end_ns: e,
                kernels: 1,
            }),
        }
    }
    out
}

/// The Off threshold of a member's kernels (see the module): `None` when its gaps show no
/// distinct Off periods. Otsu's split says whether there are two modes and roughly where; the
/// threshold is then put in the middle of the widest empty stretch between the two modes' means
/// (in `ln`), so that jitter moves no gap across it.
pub fn gap_threshold(kernels: &[(i64, i64)]) -> Option<i64> {
    let mut gaps: Vec<f64> = kernels
        .windows(2)
        .map(|w| ((w[1].0 - w[0].1).max(0) as f64 + 1.0).ln())
        .collect();
    let (t, low, high) = fit::otsu(&gaps)?;
    if high - low < OFF_RATIO.ln() {
        return None;
    }
    gaps.sort_unstable_by(f64::total_cmp);
    let widest = gaps
        .windows(2)
        .map(|w| (w[1] - w[0], (w[0] + w[1]) / 2.0))
        .filter(|&(width, middle)| width > 0.0 && (low..=high).contains(&middle))
        .max_by(|x, y| x.0.total_cmp(&y.0))
        .map_or(t, |(_, middle)| middle);
    Some((widest.exp() - 1.0).floor() as i64)
}

/// The period of a block sequence: (lag in blocks, phase, score). Each block is compared with
/// the block `k` later by its kernel count (differ or not), the logs of the gap after it and
/// (weighted ¼: durations carry the waits for peers, the noisiest part) of its duration; the
/// lag with the least mean mismatch wins, or the smallest divisor of it whose mismatch is within
/// three standard errors (a multiple of the period matches as well as the period). The phase is
/// at the longest recurring gap. `None` with fewer than four blocks or no lag that repeats (mean
/// mismatch above 0.5).
pub fn find_period(blocks: &[Block]) -> Option<(usize, usize, f64)> {
    let w = blocks.len().min(PERIOD_WINDOW);
    if w < 4 {
        return None;
    }
    let feat: Vec<(f64, f64, f64)> = (0..w)
        .map(|i| {
            let b = &blocks[i];
            let gap = blocks
                .get(i + 1)
                .map_or(0, |n| (n.start_ns - b.end_ns).max(0));
            (
                f64::from(b.kernels),
                (gap as f64 + 1.0).ln(),
                (b.duration_ns().max(0) as f64 + 1.0).ln(),
            )
        })
        .collect();
    let max_lag = (w / 2).min(MAX_LAG);
    // Per lag: (mean mismatch, its standard error).
    let scores: Vec<(f64, f64)> = (1..=max_lag)
        .map(|k| {
            let n = w - k - 1;
            let (mut sum, mut sq) = (0f64, 0f64);
            for i in 0..n {
                let (a, b) = (feat[i], feat[i + k]);
                let t = if a.0 == b.0 { 0.0 } else { 1.0 }
                    + (a.1 - b.1).abs().min(4.0)
                    + 0.25 * (a.2 - b.2).abs().min(4.0);
                sum += t;
                sq += t * t;
            }
            let n = n.max(1) as f64;
            let mean = sum / n;
            let var = (sq / n - mean * mean).max(0.0);
            (mean, (var / n).sqrt())
        })
        .collect();
    let (best_at, &(best, se)) = scores
        .iter()
        .enumerate()
        .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))?;
    // NaN (no lag scored) or a poor best: nothing repeats.
    if best.is_nan() || best > 0.5 {
        return None;
    }
    let best_lag = best_at + 1;
    let lag = (1..best_lag)
        .filter(|d| best_lag.is_multiple_of(*d))
        .find(|&d| scores[d - 1].0 <= best + 3.0 * se + 1e-9)
        .unwrap_or(best_lag);
    // Phase: the position whose preceding gap is longest on average.
    let phase = (0..lag)
        .max_by(|&p, &q| {
            mean_gap_before(blocks, p, lag).total_cmp(&mean_gap_before(blocks, q, lag))
        })
        .unwrap_or(0);
    Some((lag, phase, scores[lag - 1].0))
}

fn mean_gap_before(blocks: &[Block], p: usize, lag: usize) -> f64 {
    let (mut sum, mut n) = (0f64, 0u32);
    let mut i = if p == 0 { lag } else { p };
    while i < blocks.len() {
        sum += (blocks[i].start_ns - blocks[i - 1].end_ns).max(0) as f64;
        n += 1;
        i += lag;
    }
    if n == 0 {
        0.0
    } else {
        sum / f64::from(n)
    }
}

/// One member's blocks of one communicator.
#[derive(Debug, Clone)]
struct Member {
    rank: u32,
    /// Index into the alignments' processes.
    process: usize,
    blocks: Vec<Block>,
    kernels: u64,
}

/// Per step, per member: (blocks, On time, first block's start).
type Cells = Vec<Vec<Option<(u32, i64, i64)>>>;

/// The On-Off pattern of every communicator of an analysed session. `prefer` picks the step
/// source: [`StepSource::Nvtx`] uses NVTX iteration ranges when every process has them and
/// falls back to the period; [`StepSource::Period`] always uses the period.
pub fn periodicity(
    session: &Session,
    analysis: &Analysis,
    facts: &RunFacts,
    totals: &Totals,
    prefer: StepSource,
) -> Periodicity {
    let mut notes = Notes::default();
    let thresholds = thresholds(analysis, facts, totals);
    let members = member_blocks(analysis, totals, &thresholds);
    let ranges = iteration_ranges(session, analysis);
    let with_nvtx = members
        .values()
        .flatten()
        .all(|m| ranges.get(m.process).is_some_and(|r| !r.is_empty()));
    let source = match prefer {
        StepSource::Nvtx if with_nvtx && !members.is_empty() => StepSource::Nvtx,
        StepSource::None => StepSource::None,
        _ => StepSource::Period,
    };
    if prefer == StepSource::Nvtx && source == StepSource::Period {
        notes.add(
            "no-nvtx-steps",
            "not every process has NVTX iteration ranges: steps come from each communicator's own period",
            1,
            None,
        );
    }
    let mut p2p = vec![false; facts.comms.len()];
    for o in &totals.ops {
        if o.op.is_p2p() {
            if let Some(x) = p2p.get_mut(o.comm as usize) {
                *x = true;
            }
        }
    }
    let mut lags: FxHashMap<u32, u32> = FxHashMap::default();
    let ranges = match source {
        StepSource::Nvtx => ranges,
        StepSource::Period => {
            let processes = analysis.alignments.processes.len();
            period_ranges(&members, &p2p, processes, &mut lags)
        }
        StepSource::None => Vec::new(),
    };
    let mut comms: Vec<CommPeriodicity> = Vec::new();
    let mut keys: Vec<u32> = members.keys().copied().collect();
    keys.sort_unstable();
    for c in keys {
        let mut ms = members[&c].clone();
        ms.sort_by_key(|m| m.rank);
        let Some(cf) = facts.comms.get(c as usize) else {
            continue;
        };
        let stepped = ms
            .iter()
            .any(|m| ranges.get(m.process).is_some_and(|r| !r.is_empty()));
        let cells = if stepped {
            let mut cells = cells_by_ranges(&ms, &ranges);
            if source == StepSource::Period {
                forget_empty_edges(&mut cells);
            }
            cells
        } else {
            if source == StepSource::Period {
                notes.add(
                    "no-period",
                    "communicators on ranks where no collective repeats are counted over the whole run, as one step",
                    1,
                    Some(cf.id.clone()),
                );
            }
            cells_whole(&ms)
        };
        let symmetric = !p2p.get(c as usize).copied().unwrap_or(false);
        let mut out = summarise(&ms, &cells, symmetric);
        if source == StepSource::Period && stepped {
            spare_the_edges(&mut out);
        }
        out.comm = cf.id.clone();
        out.parallelism = cf.parallelism.name().to_string();
        out.size = cf.size;
        out.gap_threshold_ns = thresholds.get(&c).copied().flatten().unwrap_or(0);
        out.lag_blocks = lags.get(&c).copied();
        out.symmetric = symmetric;
        comms.push(out);
    }
    Periodicity {
        step_source: source,
        comms,
        notes: notes.into_vec(),
    }
}

/// Steps from the blocks' own period, as ranges per process like NVTX iteration ranges. Steps
/// are the rank's, not a communicator's (a pipeline rank's sends belong to the iteration its
/// collectives do), so each rank is cut by one reference: of the communicators it is a member
/// of that run collectives only (whose members all repeat alike) and whose lowest member's
/// blocks repeat, the one with the most kernels on that rank. Its steps start at each long gap
/// ([`boundary_gap`]) or, when none stands out, every `lag` blocks from the phase; only whole
/// periods count (the first and last iterations may be left out). `lags` receives every
/// communicator's period in blocks.
fn period_ranges(
    members: &FxHashMap<u32, Vec<Member>>,
    p2p: &[bool],
    processes: usize,
    lags: &mut FxHashMap<u32, u32>,
) -> Vec<Vec<(i64, i64)>> {
    // Per process: (kernels of the reference on it, its step starts).
    let mut best: Vec<Option<(u64, Vec<i64>)>> = vec![None; processes];
    let mut keys: Vec<u32> = members.keys().copied().collect();
    keys.sort_unstable();
    for c in keys {
        let ms = &members[&c];
        let Some(lowest) = ms.iter().min_by_key(|m| m.rank) else {
            continue;
        };
        let Some((lag, phase, _)) = find_period(&lowest.blocks) else {
            continue;
        };
        lags.insert(c, lag as u32);
        if p2p.get(c as usize).copied().unwrap_or(true) {
            continue;
        }
        let boundary = boundary_gap(&lowest.blocks, lag, phase);
        for m in ms {
            let starts = step_starts(&m.blocks, lag, phase, boundary);
            let Some(slot) = best.get_mut(m.process) else {
                continue;
            };
            if starts.len() >= 3 && slot.as_ref().is_none_or(|(k, _)| m.kernels > *k) {
                *slot = Some((m.kernels, starts));
            }
        }
    }
    best.into_iter()
        .map(|b| b.map_or_else(Vec::new, |(_, starts)| ranges_from_starts(&starts)))
        .collect()
}

/// Where one member's steps start: at each gap longer than `boundary`, or (none) every `lag`
/// blocks from `phase`.
fn step_starts(blocks: &[Block], lag: usize, phase: usize, boundary: Option<i64>) -> Vec<i64> {
    match boundary {
        Some(gap) => (1..blocks.len())
            .filter(|&i| blocks[i].start_ns - blocks[i - 1].end_ns > gap)
            .map(|i| blocks[i].start_ns)
            .collect(),
        None => blocks
            .iter()
            .skip(phase)
            .step_by(lag.max(1))
            .map(|b| b.start_ns)
            .collect(),
    }
}

/// Step ranges from their starts: each to the next start. What follows the last start is no
/// whole step (the run's last iteration cannot be told from its teardown), and is left out.
fn ranges_from_starts(starts: &[i64]) -> Vec<(i64, i64)> {
    starts.windows(2).map(|w| (w[0], w[1])).collect()
}

/// Each communicator's gap threshold, from its lowest-ranked member's kernels.
fn thresholds(
    analysis: &Analysis,
    facts: &RunFacts,
    totals: &Totals,
) -> FxHashMap<u32, Option<i64>> {
    let lowest: Vec<Option<u32>> = facts
        .comms
        .iter()
        .map(|c| c.global.iter().flatten().min().copied())
        .collect();
    let mut kernels: FxHashMap<u32, Vec<(i64, i64)>> = FxHashMap::default();
    totals.for_each_kernel(analysis, |k| {
        let c = totals.ops[k.lines[0].total as usize].comm;
        if lowest.get(c as usize).copied().flatten() == Some(k.rank) {
            kernels.entry(c).or_default().push((k.start_ns, k.end_ns));
        }
    });
    kernels
        .into_iter()
        .map(|(c, ks)| (c, gap_threshold(&ks)))
        .collect()
}

/// Every member's blocks, per communicator.
fn member_blocks(
    analysis: &Analysis,
    totals: &Totals,
    thresholds: &FxHashMap<u32, Option<i64>>,
) -> FxHashMap<u32, Vec<Member>> {
    let mut out: FxHashMap<u32, Vec<Member>> = FxHashMap::default();
    // One process at a time: its kernels per communicator, cut into blocks when it ends.
    let mut current: Option<(usize, u32)> = None;
    let mut open: FxHashMap<u32, Vec<(i64, i64)>> = FxHashMap::default();
    let mut flush = |process: usize, rank: u32, open: &mut FxHashMap<u32, Vec<(i64, i64)>>| {
        for (c, ks) in open.drain() {
            let gap = thresholds.get(&c).copied().flatten().unwrap_or(0);
            out.entry(c).or_default().push(Member {
                rank,
                process,
                blocks: blocks(&ks, gap),
                kernels: ks.len() as u64,
            });
        }
    };
    totals.for_each_kernel(analysis, |k| {
        if current.is_some_and(|(p, _)| p != k.process) {
            let (p, r) = current.expect("checked");
            flush(p, r, &mut open);
        }
        current = Some((k.process, k.rank));
        let c = totals.ops[k.lines[0].total as usize].comm;
        open.entry(c).or_default().push((k.start_ns, k.end_ns));
    });
    if let Some((p, r)) = current {
        flush(p, r, &mut open);
    }
    out
}

/// An export's host, a pid, and that process's iteration ranges.
type PidRanges = (String, u32, Vec<(i64, i64)>);

/// Each aligned process's NVTX iteration ranges (its export's clock), sorted by start.
fn iteration_ranges(session: &Session, analysis: &Analysis) -> Vec<Vec<(i64, i64)>> {
    // (export host, pid) → ranges.
    let mut by_pid: Vec<PidRanges> = Vec::new();
    for e in session.exports() {
        let host = e.export.hosts.first().cloned().unwrap_or_default();
        let mut per: FxHashMap<u32, Vec<(i64, i64)>> = FxHashMap::default();
        for &i in &e.export.iterations {
            if let Some(r) = e.export.nvtx.get(i) {
                if let Some(end) = r.end_ns.filter(|&end| end > r.start_ns) {
                    per.entry(r.pid).or_default().push((r.start_ns, end));
                }
            }
        }
        for (pid, mut ranges) in per {
            ranges.sort_unstable();
            by_pid.push((host.clone(), pid, ranges));
        }
    }
    analysis
        .alignments
        .processes
        .iter()
        .map(|pm| {
            let pid = pm.process.pid;
            let host = pm.process.host.as_str();
            let same_pid: Vec<&PidRanges> = by_pid.iter().filter(|(_, p, _)| *p == pid).collect();
            let named = same_pid.iter().find(|(h, _, _)| same_host(h, host));
            match (named, same_pid.as_slice()) {
                (Some(x), _) => x.2.clone(),
                (None, [only]) => only.2.clone(),
                _ => Vec::new(),
            }
        })
        .collect()
}

/// Host names as a log and an export print them: equal, or one the other's first label
/// (`node01` and `node01.cluster.example`).
fn same_host(a: &str, b: &str) -> bool {
    a == b
        || a.strip_prefix(b).is_some_and(|rest| rest.starts_with('.'))
        || b.strip_prefix(a).is_some_and(|rest| rest.starts_with('.'))
}

fn cells_by_ranges(ms: &[Member], ranges: &[Vec<(i64, i64)>]) -> Cells {
    let steps = ms
        .iter()
        .map(|m| ranges.get(m.process).map_or(0, Vec::len))
        .max()
        .unwrap_or(0);
    let mut cells: Cells = vec![vec![None; ms.len()]; steps];
    for (j, m) in ms.iter().enumerate() {
        let Some(rs) = ranges.get(m.process) else {
            continue;
        };
        for (s, _) in rs.iter().enumerate() {
            cells[s][j] = Some((0, 0, i64::MAX));
        }
        for b in &m.blocks {
            let at = rs.partition_point(|r| r.0 <= b.start_ns);
            let Some(s) = at.checked_sub(1).filter(|&s| b.start_ns < rs[s].1) else {
                continue;
            };
            if let Some(c) = cells[s][j].as_mut() {
                c.0 += 1;
                c.1 += b.duration_ns();
                c.2 = c.2.min(b.start_ns);
            }
        }
    }
    cells
}

/// The gap that tells step boundaries from gaps within a step, when it does: the boundaries
/// (the gaps before blocks `φ + jk`) all longer than twice every other gap of the lowest
/// member. Then each member is cut at its own long gaps, so a member with a block too many or
/// too few shows it (cut by index every step would have `k` blocks). The geometric middle of
/// the two.
fn boundary_gap(blocks: &[Block], lag: usize, phase: usize) -> Option<i64> {
    let gap = |i: usize| (blocks[i].start_ns - blocks[i - 1].end_ns).max(0);
    let (mut shortest_boundary, mut longest_other) = (i64::MAX, 0i64);
    for i in phase.max(1)..blocks.len() {
        if i >= phase && (i - phase).is_multiple_of(lag) {
            shortest_boundary = shortest_boundary.min(gap(i));
        } else if i > phase {
            longest_other = longest_other.max(gap(i));
        }
    }
    (shortest_boundary != i64::MAX && shortest_boundary > longest_other.saturating_mul(2))
        .then(|| ((shortest_boundary as f64) * (longest_other.max(1) as f64)).sqrt() as i64)
}

/// Steps cut by a period start and end where its boundaries fall, not where a communicator's
/// work does: a member with nothing in the first or the last step has not broken the pattern
/// there, the step only began before or ended after its blocks.
fn forget_empty_edges(cells: &mut Cells) {
    let last = cells.len().saturating_sub(1);
    for s in [0, last] {
        if let Some(row) = cells.get_mut(s) {
            for c in row.iter_mut() {
                if c.is_some_and(|c| c.0 == 0) {
                    *c = None;
                }
            }
        }
    }
}

/// Steps cut by a period are cut where a reference communicator's boundaries fall, not where
/// an iteration does, so the first and the last whole period may hold part of the run's start
/// or end: they are shown but not flagged.
fn spare_the_edges(p: &mut CommPeriodicity) {
    let last = p.per_step.len().saturating_sub(1) as u32;
    p.flagged_steps.retain(|f| f.step != 0 && f.step != last);
    for r in &mut p.per_step {
        r.flagged = r.flagged && r.step != 0 && r.step != last;
    }
    p.flagged_step_count = p.per_step.iter().filter(|r| r.flagged).count() as u32;
}

fn cells_whole(ms: &[Member]) -> Cells {
    vec![ms
        .iter()
        .map(|m| {
            Some((
                m.blocks.len() as u32,
                m.blocks.iter().map(Block::duration_ns).sum(),
                m.blocks.first().map_or(0, |b| b.start_ns),
            ))
        })
        .collect()]
}

/// The most common value.
fn mode(values: impl Iterator<Item = u32>) -> Option<u32> {
    let mut counts: FxHashMap<u32, u32> = FxHashMap::default();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|&(v, n)| (n, std::cmp::Reverse(v)))
        .map(|(v, _)| v)
}

/// Whether `x` is off `median` by more than [`ROBUST_Z`] robust deviations and
/// [`MIN_DEVIATION`] of the median.
fn off(x: f64, median: f64, sigma: f64) -> bool {
    let d = (x - median).abs();
    d > ROBUST_Z * sigma && d > MIN_DEVIATION * median.abs()
}

/// Sums a communicator's cells up. Counts are judged per member (its most common count):
/// on a communicator that carries point-to-point operations the members' roles differ (a first
/// pipeline stage sends what a middle one sends and receives), so only a `symmetric` one (every
/// member runs the same collectives) compares members with each other.
fn summarise(ms: &[Member], cells: &Cells, symmetric: bool) -> CommPeriodicity {
    let all = || cells.iter().flatten().flatten();
    let own: Vec<u32> = (0..ms.len())
        .map(|j| mode(cells.iter().filter_map(|r| r[j]).map(|c| c.0)).unwrap_or(0))
        .collect();
    let usual = mode(own.iter().copied()).unwrap_or(0);
    let n_cells = all().count();
    let consistent = cells
        .iter()
        .flat_map(|r| r.iter().enumerate())
        .filter(|(j, c)| c.is_some_and(|c| c.0 == own[*j]))
        .count();
    let mut per_step: Vec<StepRow> = Vec::new();
    let mut flagged_steps: Vec<FlaggedStep> = Vec::new();
    for (s, row) in cells.iter().enumerate() {
        let present: Vec<(usize, (u32, i64, i64))> = row
            .iter()
            .enumerate()
            .filter_map(|(j, c)| Some((j, (*c)?)))
            .collect();
        let mut on: Vec<f64> = present.iter().map(|(_, c)| c.1 as f64).collect();
        let odd: Vec<u32> = present
            .iter()
            .filter(|(j, c)| c.0 != own[*j])
            .map(|(j, _)| ms[*j].rank)
            .collect();
        if !odd.is_empty() {
            flagged_steps.push(FlaggedStep {
                step: s as u32,
                reason: "count".into(),
                ranks: odd,
            });
        }
        per_step.push(StepRow {
            step: s as u32,
            blocks: mode(present.iter().map(|(_, c)| c.0)).unwrap_or(0),
            on_ns: fit::median(&mut on).unwrap_or(0.0).round() as i64,
            flagged: false,
        });
    }
    // Steps whose On time is off the others'.
    let step_on: Vec<f64> = per_step.iter().map(|r| r.on_ns as f64).collect();
    let (on_median, on_sigma) = fit::mad(&step_on).unwrap_or((0.0, 0.0));
    for r in &per_step {
        if off(r.on_ns as f64, on_median, on_sigma) {
            flagged_steps.push(FlaggedStep {
                step: r.step,
                reason: "duration".into(),
                ranks: ms.iter().map(|m| m.rank).collect(),
            });
        }
    }
    flagged_steps.sort_by_key(|f| f.step);
    for f in &flagged_steps {
        if let Some(r) = per_step.get_mut(f.step as usize) {
            r.flagged = true;
        }
    }
    let flagged_step_count = per_step.iter().filter(|r| r.flagged).count() as u32;
    flagged_steps.truncate(MAX_FLAGS);
    let flagged_ranks = if symmetric {
        flag_ranks(ms, cells, &own, usual)
    } else {
        Vec::new()
    };
    // Period: per member, the median distance between its steps' first blocks.
    let mut periods: Vec<f64> = (0..ms.len())
        .filter_map(|j| {
            let starts: Vec<i64> = cells
                .iter()
                .filter_map(|row| row[j].map(|c| c.2).filter(|&t| t != i64::MAX))
                .collect();
            let mut d: Vec<f64> = starts.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
            fit::median(&mut d)
        })
        .collect();
    CommPeriodicity {
        comm: String::new(),
        parallelism: String::new(),
        size: 0,
        members: ms.len() as u32,
        kernels: ms.iter().map(|m| m.kernels).sum(),
        gap_threshold_ns: 0,
        steps: cells.len() as u32,
        blocks_per_step: usual,
        count_consistency: if n_cells == 0 {
            0.0
        } else {
            consistent as f64 / n_cells as f64
        },
        period_ns: (cells.len() > 1)
            .then(|| fit::median(&mut periods))
            .flatten()
            .map(|p| p.round() as i64),
        on_ns_per_step: (!per_step.is_empty()).then_some(on_median.round() as i64),
        on_time_cv: (on_median > 0.0).then(|| on_sigma / on_median),
        block_cv: block_cv(ms, cells, usual),
        lag_blocks: None,
        symmetric,
        per_step,
        flagged_steps,
        flagged_step_count,
        flagged_ranks,
    }
}

/// Ranks whose usual block count or On time per step departs from the other members'.
fn flag_ranks(ms: &[Member], cells: &Cells, own: &[u32], usual: u32) -> Vec<FlaggedRank> {
    let per_member: Vec<f64> = (0..ms.len())
        .map(|j| {
            let mut on: Vec<f64> = cells
                .iter()
                .filter_map(|r| r[j])
                .map(|c| c.1 as f64)
                .collect();
            fit::median(&mut on).unwrap_or(0.0)
        })
        .collect();
    let (median, sigma) = fit::mad(&per_member).unwrap_or((0.0, 0.0));
    let mut out = Vec::new();
    for (j, &on) in per_member.iter().enumerate() {
        let reason = if own[j] != usual {
            "count"
        } else if ms.len() > 2 && off(on, median, sigma) {
            "duration"
        } else {
            continue;
        };
        out.push(FlaggedRank {
            rank: ms[j].rank,
            reason: reason.into(),
            on_ns: on.round() as i64,
            members_on_ns: median.round() as i64,
        });
    }
    out.truncate(MAX_FLAGS);
    out
}

/// The median over block positions of the robust CV of the block's duration across steps (on
/// the lowest member, over steps with the usual count; blocks read back from the member by
/// each step's first block).
fn block_cv(ms: &[Member], cells: &Cells, usual: u32) -> Option<f64> {
    let m = ms.first()?;
    let usual = mode(cells.iter().filter_map(|r| r[0]).map(|c| c.0)).unwrap_or(usual);
    if usual == 0 {
        return None;
    }
    let mut by_position: Vec<Vec<f64>> = vec![Vec::new(); usual as usize];
    for row in cells {
        let Some((count, _, first)) = row[0] else {
            continue;
        };
        if count != usual || first == i64::MAX {
            continue;
        }
        let at = m.blocks.partition_point(|b| b.start_ns < first);
        for (p, b) in m.blocks[at..].iter().take(usual as usize).enumerate() {
            by_position[p].push(b.duration_ns() as f64);
        }
    }
    let mut cvs: Vec<f64> = by_position
        .iter()
        .filter(|v| v.len() >= 2)
        .filter_map(|v| {
            let (med, sigma) = fit::mad(v)?;
            (med > 0.0).then(|| sigma / med)
        })
        .collect();
    fit::median(&mut cvs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member's kernels: `steps` steps of `per_step` blocks of 3 kernels (1 µs apart), blocks
    /// 100 µs apart, steps 1 ms apart (after `lead` ns).
    fn kernels(steps: usize, per_step: usize, lead: i64) -> Vec<(i64, i64)> {
        let mut out = Vec::new();
        let mut t = lead;
        for _ in 0..steps {
            for _ in 0..per_step {
                for _ in 0..3 {
                    out.push((t, t + 5_000));
                    t += 6_000;
                }
                t += 100_000;
            }
            t += 1_000_000;
        }
        out
    }

    #[test]
    fn gaps_split_into_blocks_and_the_period_is_found() {
        let ks = kernels(6, 4, 0);
        let gap = gap_threshold(&ks).expect("Off periods stand out");
        assert!((1_000..100_000).contains(&gap), "threshold {gap}");
        let b = blocks(&ks, gap);
        assert_eq!(b.len(), 24);
        assert!(b.iter().all(|b| b.kernels == 3));
        let (lag, phase, _) = find_period(&b).expect("a period");
        assert_eq!((lag, phase), (4, 0));
        // Kernels evenly spaced: no Off period.
        let even: Vec<(i64, i64)> = (0..50).map(|i| (i * 10_000, i * 10_000 + 5_000)).collect();
        assert_eq!(gap_threshold(&even), None);
    }

    fn member(rank: u32, ks: &[(i64, i64)]) -> Member {
        Member {
            rank,
            process: rank as usize,
            blocks: blocks(ks, 50_000),
            kernels: ks.len() as u64,
        }
    }

    #[test]
    fn a_step_with_an_extra_block_and_a_slow_rank_are_flagged() {
        let mut ms: Vec<Member> = (0..4)
            .map(|r| member(r, &kernels(8, 4, r as i64 * 7)))
            .collect();
        // Rank 2: an extra block in step 5 (a kernel 60 µs after the step's last block).
        let extra_at = ms[2].blocks[5 * 4 + 3].end_ns + 60_000;
        ms[2].blocks.insert(
            5 * 4 + 4,
            Block {
                start_ns: extra_at,
                end_ns: extra_at + 5_000,
                kernels: 1,
            },
        );
        // Rank 3: every block twice as long.
        for b in &mut ms[3].blocks {
            b.end_ns += b.duration_ns();
        }
        let ranges: Vec<Vec<(i64, i64)>> = (0..4)
            .map(|r| {
                let ks = kernels(8, 4, r as i64 * 7);
                // Each step from its first kernel to just before the next step's.
                let per = 12;
                (0..8)
                    .map(|s| {
                        let a = ks[s * per].0 - 10;
                        let b = ks.get((s + 1) * per).map_or(i64::MAX / 2, |k| k.0 - 10);
                        (a, b)
                    })
                    .collect()
            })
            .collect();
        let cells = cells_by_ranges(&ms, &ranges);
        let p = summarise(&ms, &cells, true);
        assert_eq!(p.steps, 8);
        assert_eq!(p.blocks_per_step, 4);
        assert_eq!(
            p.flagged_steps,
            vec![FlaggedStep {
                step: 5,
                reason: "count".into(),
                ranks: vec![2]
            }]
        );
        assert_eq!(p.flagged_ranks.len(), 1);
        assert_eq!(p.flagged_ranks[0].rank, 3);
        assert_eq!(p.flagged_ranks[0].reason, "duration");
        assert!((p.count_consistency - 31.0 / 32.0).abs() < 1e-9);
        // 4 blocks × (3 × 6 µs) + 3 × 100 µs + 1 ms a step.
        assert_eq!(p.period_ns, Some(4 * 18_000 + 4 * 100_000 + 1_000_000));
        // The same blocks cut by their own period: the whole steps between two boundaries (the
        // first step has no boundary before it, the last none after), and the same faults.
        let (lag, phase, _) = find_period(&ms[0].blocks).unwrap();
        assert_eq!((lag, phase), (4, 0));
        let gap = boundary_gap(&ms[0].blocks, lag, phase).expect("steps stand apart");
        assert!((100_000..1_000_000).contains(&gap), "boundary gap {gap}");
        let cut = |boundary: Option<i64>| -> Vec<Vec<(i64, i64)>> {
            ms.iter()
                .map(|m| ranges_from_starts(&step_starts(&m.blocks, lag, phase, boundary)))
                .collect()
        };
        let by_period = summarise(&ms, &cells_by_ranges(&ms, &cut(Some(gap))), true);
        assert_eq!(by_period.steps, 6);
        assert_eq!(by_period.blocks_per_step, 4);
        assert_eq!(by_period.period_ns, p.period_ns);
        assert_eq!(by_period.flagged_steps[0].step, 4);
        assert_eq!(by_period.flagged_steps[0].ranks, vec![2]);
        // Cut every `lag` blocks instead (no gap standing out): every step has the lag's
        // count, so rank 2's extra block goes unseen: why long gaps are preferred.
        let by_index = summarise(&ms, &cells_by_ranges(&ms, &cut(None)), true);
        assert!(by_index.flagged_steps.iter().all(|f| f.reason != "count"));
    }

    #[test]
    fn a_slow_step_is_flagged_by_its_duration() {
        let mut ms: Vec<Member> = (0..2).map(|r| member(r, &kernels(10, 2, 0))).collect();
        for m in &mut ms {
            for b in &mut m.blocks[6..8] {
                b.end_ns += 40_000;
            }
        }
        let ranges: Vec<Vec<(i64, i64)>> = ms
            .iter()
            .map(|m| ranges_from_starts(&step_starts(&m.blocks, 2, 0, None)))
            .collect();
        let p = summarise(&ms, &cells_by_ranges(&ms, &ranges), true);
        let steps: Vec<(u32, &str)> = p
            .flagged_steps
            .iter()
            .map(|f| (f.step, f.reason.as_str()))
            .collect();
        assert_eq!(steps, vec![(3, "duration")]);
        assert!(p.per_step[3].flagged && !p.per_step[2].flagged);
    }

    #[test]
    fn hosts_match_by_their_first_label() {
        assert!(same_host("node01", "node01.cluster.example"));
        assert!(same_host("node01.cluster.example", "node01"));
        assert!(!same_host("node01", "node011"));
    }
}
