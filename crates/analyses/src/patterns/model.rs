//! The run's own performance model: per link class and operation, `t = α + x/β` fitted to the
//! run's kernels, where `x` is the bytes one rank moves over its links (nccl-tests' bus bytes:
//! the operation's bytes `S` times its bus factor, [`enrich::bus_factor`]; for point-to-point
//! kernels the larger of what the kernel sent and received), `α` the latency and `β` the
//! bandwidth the link delivered.
//!
//! How: matched kernels are binned by `x` (eight bins per octave: the octave and the three bits
//! after its leading one); each bin's lower envelope is
//! its [`ENVELOPE_QUANTILE`] duration (a kernel's duration is its transfer plus the time it
//! waited for its slowest peer, so the transfer is what the fastest kernels show, and a low
//! quantile rather than the minimum keeps one timer glitch from setting it); a Theil–Sen line
//! through the bins' envelopes gives `α` (intercept) and `1/β` (slope). Bins of fewer than
//! [`MIN_BIN_KERNELS`] kernels are left out of the fit when at least two bins have that many.
//! A bandwidth is only claimed when the sizes can show one: the largest size at least
//! [`MIN_SPREAD`] times the smallest, and the bandwidth term there at least
//! [`MIN_BANDWIDTH_SHARE`] of the latency; otherwise the group gets a latency alone (eight-byte
//! scalars say nothing about a link's bandwidth).
//!
//! Saturation (seed 003, §5.3: effective bandwidth grows with the message size until a link's
//! capacity, about 2 MB on PCIe, 16 MB on NVLink, 128 MB on NVSwitch): the smallest size whose
//! envelope bandwidth `x / t` reaches [`SATURATION_SHARE`] of the largest seen, and the size at
//! which the fitted curve reaches that share of `β` (`x = 9·α·β` for 90 %).
//!
//! Beside the fit, every kernel's time as LBNL's two-tier model predicts it
//! ([`theory::collective_time_s`], seed 001), on the hardware the caller gives (the topology
//! dump's links, or a preset). Residuals are `measured / predicted`; the kernels furthest from
//! the fitted curve (by `|ln ratio|`) are listed with their rank, communicator and opCount so
//! the page can show them on the timeline.

use super::facts::RunFacts;
use super::fit;
use super::links::LinkClass;
use super::notes::{Note, Notes};
use super::totals::{KernelSeen, Totals};
use model::OpType;
use pipeline::Analysis;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use theory::Hardware;

/// The duration quantile of a size bin taken as its lower envelope.
pub const ENVELOPE_QUANTILE: f64 = 0.1;
/// Kernels a bin needs to take part in the fit (when two bins have that many).
pub const MIN_BIN_KERNELS: u64 = 3;
/// Share of the top bandwidth that counts as saturated.
pub const SATURATION_SHARE: f64 = 0.9;
/// Kernels listed as furthest off the fitted curve.
pub const OUTLIERS: usize = 50;
/// The largest size of a fit must be this many times its smallest…
pub const MIN_SPREAD: f64 = 4.0;
/// …and the bandwidth term at it at least this share of the latency.
pub const MIN_BANDWIDTH_SHARE: f64 = 0.1;

/// The fitted line of one group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    /// `fitted` (α and β), `latency-only` (sizes too alike or too small, or time not growing
    /// with size: α is the envelopes' median, β unknown), `none` (no kernel of positive
    /// duration).
    pub status: String,
    pub alpha_ns: Option<f64>,
    /// Bytes per ns = GB/s.
    pub beta_gbps: Option<f64>,
    /// Bins the line went through.
    pub bins_used: u32,
}

impl Fit {
    /// The predicted duration (ns) for `x` bus bytes.
    pub fn predict_ns(&self, x: f64) -> Option<f64> {
        let a = self.alpha_ns?;
        Some(match self.beta_gbps {
            Some(b) => a + x / b,
            None => a,
        })
    }
}

/// Where effective bandwidth stopped growing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// The largest envelope bus bandwidth of a bin, GB/s.
    pub max_bus_gbps: Option<f64>,
    /// The smallest bin reaching [`SATURATION_SHARE`] of it: its mean message size (`S`) and bus
    /// bytes (`x`).
    pub msg_bytes: Option<u64>,
    pub bus_bytes: Option<u64>,
    /// Whether the growth and the plateau were both seen (a smaller bin below the share and a
    /// larger bin at it); false means the sizes seen do not bracket the saturation point.
    pub bracketed: bool,
    /// Bus bytes at which the fitted curve reaches the share of β (`9·α·β` for 90 %).
    pub fitted_bus_bytes: Option<u64>,
}

/// One size bin of a group: what the bandwidth-versus-size plot draws.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeBin {
    pub kernels: u64,
    /// Mean bus bytes (`x`) and message bytes (`S`) of the bin's kernels.
    pub bus_bytes: f64,
    pub msg_bytes: f64,
    /// The lower envelope and the median of the durations, ns.
    pub envelope_ns: f64,
    pub median_ns: f64,
    /// `x / envelope`, GB/s.
    pub envelope_bus_gbps: f64,
    /// The fitted and LBNL predictions at the bin (LBNL's the mean over its kernels), ns.
    pub fitted_ns: Option<f64>,
    pub lbnl_ns: f64,
}

/// The distribution of `measured / predicted` over a group's kernels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Residuals {
    pub kernels: u64,
    /// (q, ratio) for q in 0.05, 0.25, 0.5, 0.75, 0.95, 0.99, each within 1/64 of an octave.
    pub quantiles: Vec<(f64, f64)>,
    /// Kernels per ratio bin, a quarter octave each from 2^-2 to 2^6: bin `i` starts at
    /// [`histogram_bin_ratio`]`(i)`, the first and last bins hold everything below and above.
    pub histogram: Vec<u64>,
}

/// The lower bound of histogram bin `i`'s ratio (see [`Residuals::histogram`]):
/// `2^(⌊i/4⌋ − 2) · (1 + (i mod 4)/4)`, quarters of each octave's span.
pub fn histogram_bin_ratio(i: usize) -> f64 {
    2f64.powi((i / 4) as i32 - 2) * (1.0 + (i % 4) as f64 / 4.0)
}

/// Ratio bins of [`Residuals::histogram`]: 2^-2 to 2^6, four per octave.
const HIST_BINS: usize = 32;

/// One link class and operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelGroup {
    pub link_class: LinkClass,
    pub op: String,
    /// Kernels of positive duration in the group.
    pub kernels: u64,
    pub fit: Fit,
    pub saturation: Saturation,
    /// Ascending size.
    pub bins: Vec<SizeBin>,
    pub fitted_residuals: Residuals,
    pub lbnl_residuals: Residuals,
}

/// A kernel far off the fitted curve, with what the timeline needs to show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    pub rank: u32,
    pub host: String,
    pub pid: u32,
    /// The communicator's id and the operation's opCount as printed (hex).
    pub comm: String,
    pub op_count: String,
    pub op: String,
    pub link_class: LinkClass,
    pub msg_bytes: u64,
    pub measured_ns: i64,
    pub fitted_ns: f64,
    pub lbnl_ns: f64,
    /// measured / fitted.
    pub ratio: f64,
    /// The kernel's times on its own GPU clock and on the run's synchronised clock.
    pub start_ns: i64,
    pub end_ns: i64,
    pub sync_start_ns: i64,
    pub sync_end_ns: i64,
}

/// The run's model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PerfModel {
    /// The hardware LBNL's predictions used (`A100`, ..., `observed` from the topology dump).
    pub lbnl_hardware: String,
    pub groups: Vec<ModelGroup>,
    /// Furthest off the fitted curve first.
    pub outliers: Vec<Outlier>,
    pub notes: Vec<Note>,
}

impl PerfModel {
    /// The group of a link class and operation.
    pub fn group(&self, class: LinkClass, op: OpType) -> Option<&ModelGroup> {
        self.groups
            .iter()
            .find(|g| g.link_class == class && g.op == op.name())
    }
}

/// One matched kernel's measured time beside both predictions ([`for_each_prediction`]).
#[derive(Debug, Clone, PartialEq)]
pub struct OpPrediction {
    /// Index into `analysis.alignments.processes`, and the kernel's index there.
    pub process: usize,
    pub kernel: usize,
    pub rank: u32,
    /// Index into the communicators.
    pub comm: u32,
    pub op_count: u64,
    pub op: OpType,
    pub link_class: LinkClass,
    /// `S` and `x` (see the module).
    pub msg_bytes: u64,
    pub bus_bytes: f64,
    pub start_ns: i64,
    pub end_ns: i64,
    pub fitted_ns: Option<f64>,
    pub lbnl_ns: f64,
}

impl OpPrediction {
    pub fn measured_ns(&self) -> i64 {
        self.end_ns - self.start_ns
    }
}

/// What every kernel of one sum (one call site and tuning) shares for the model, worked out
/// once per sum: a run has millions of kernels and a few thousand sums.
#[derive(Debug, Clone, Copy)]
struct SumFacts {
    comm: u32,
    n: u32,
    class: LinkClass,
    /// The operation, a 2.28 `AlltoAll` read as [`OpType::AllToAll`].
    op: OpType,
    elem: u64,
    /// nccl-tests' bus factor of the operation on `n` ranks.
    bus: f64,
    /// A send (`true`) or receive to another rank, and the pair's class.
    p2p: Option<(bool, LinkClass)>,
    /// The (class, operation) group of a collective.
    group: u32,
    /// LBNL's prediction of a collective, `a + b·S` ns ([`Lbnl`]).
    lbnl: Lbnl,
}

/// LBNL's time of one operation shape (operation, ranks, ranks per NVLink domain) as a line in
/// the bytes, `a + b·S` ns: every formula of `theory::collective_time_s` is a latency plus the
/// bytes over a bandwidth, so two evaluations give it, and a kernel costs a multiply-add.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Lbnl {
    a: f64,
    b: f64,
}

impl Lbnl {
    fn of(hw: &Hardware, op: OpType, ranks: u32, per_domain: u32) -> Lbnl {
        let t = |bytes: f64| theory::collective_time_s(hw, op, bytes, ranks, per_domain) * 1e9;
        let a = t(0.0);
        Lbnl {
            a,
            b: (t(1e9) - a) / 1e9,
        }
    }

    fn ns(self, bytes: f64) -> f64 {
        self.a + self.b * bytes
    }
}

/// What a kernel is for the model.
#[derive(Debug, Clone, Copy)]
struct Point {
    group: u32,
    comm: u32,
    msg: u64,
    x: f64,
    lbnl_ns: f64,
}

/// The kernels' points: each sum's facts, and the groups by (class, operation), numbered as met.
struct Points {
    sums: Vec<Option<SumFacts>>,
    /// LBNL's lines of a point-to-point kernel: Send, Recv, SendRecv, each on the network
    /// (`[_][0]`) and within a node (`[_][1]`).
    p2p_lbnl: [[Lbnl; 2]; 3],
    ids: FxHashMap<(LinkClass, OpType), u32>,
    keys: Vec<(LinkClass, OpType)>,
}

impl Points {
    fn new(totals: &Totals, facts: &RunFacts, hw: &Hardware) -> Points {
        let p2p = |op| [Lbnl::of(hw, op, 2, 1), Lbnl::of(hw, op, 2, 2)];
        let mut p = Points {
            sums: Vec::with_capacity(totals.ops.len()),
            p2p_lbnl: [p2p(OpType::Send), p2p(OpType::Recv), p2p(OpType::SendRecv)],
            ids: FxHashMap::default(),
            keys: Vec::new(),
        };
        for o in &totals.ops {
            let f = (|| {
                let c = facts.comms.get(o.comm as usize)?;
                let me = c.comm_rank(o.src)?;
                let n = c.size.max(1);
                let op = match o.op {
                    OpType::Other(name) if name.as_str().eq_ignore_ascii_case("alltoall") => {
                        OpType::AllToAll
                    }
                    op => op,
                };
                let p2p = if op.is_p2p() {
                    let peer = u32::try_from(o.root).ok().filter(|&q| q != me);
                    let g = peer.and_then(|q| c.global.get(q as usize).copied().flatten());
                    g.map(|g| (op == OpType::Send, facts.pair_class(o.src, g)))
                } else {
                    None
                };
                // Members on the caller's host: LBNL's GPUs per NVLink domain.
                let per_domain = facts
                    .host_of
                    .get(&o.src)
                    .and_then(|h| c.per_host.get(h))
                    .copied()
                    .unwrap_or(1)
                    .max(1);
                Some(SumFacts {
                    comm: o.comm,
                    n,
                    class: c.class,
                    op,
                    elem: o.elem_bytes,
                    // nccl-tests' bus factor, whatever the algorithm: a tree AllReduce's link
                    // carries `S` up and `S` down in opposite directions, no more per direction
                    // than the ring's `2(n−1)/n·S` suggests, and one axis for every algorithm
                    // keeps ring and tree kernels comparable.
                    bus: enrich::bus_factor(op, None, n),
                    p2p,
                    group: u32::MAX,
                    lbnl: Lbnl::of(hw, op, n, per_domain),
                })
            })();
            p.sums.push(f);
        }
        for i in 0..p.sums.len() {
            if let Some(f) = p.sums[i].filter(|f| !f.op.is_p2p()) {
                let g = p.group(f.class, f.op);
                if let Some(s) = p.sums[i].as_mut() {
                    s.group = g;
                }
            }
        }
        p
    }

    fn group(&mut self, class: LinkClass, op: OpType) -> u32 {
        let next = self.keys.len() as u32;
        let id = *self.ids.entry((class, op)).or_insert(next);
        if id == next {
            self.keys.push((class, op));
        }
        id
    }

    /// A kernel's point; `None` for a kernel whose lines name no communicator, or only
    /// self-sends (no link crossed).
    fn point(&mut self, k: &KernelSeen) -> Option<Point> {
        let first = k.lines.first()?;
        let f = self.sums.get(first.total as usize).copied().flatten()?;
        if f.op.is_p2p() {
            let (mut sent, mut recv) = (0u64, 0u64);
            let mut class = None;
            for l in k.lines {
                let Some(s) = self.sums.get(l.total as usize).copied().flatten() else {
                    continue;
                };
                let Some((send, pc)) = s.p2p else {
                    continue;
                };
                let bytes = l.count.saturating_mul(s.elem);
                if send {
                    sent += bytes;
                } else {
                    recv += bytes;
                }
                class = Some(match class {
                    Some(LinkClass::Network) => LinkClass::Network,
                    _ => pc,
                });
            }
            let class = class?;
            let op = match (sent > 0, recv > 0, k.lines.len()) {
                (true, false, 1) => OpType::Send,
                (false, true, 1) => OpType::Recv,
                _ => OpType::SendRecv,
            };
            let x = sent.max(recv);
            let which = match op {
                OpType::Send => 0,
                OpType::Recv => 1,
                _ => 2,
            };
            let lbnl = self.p2p_lbnl[which][usize::from(class != LinkClass::Network)];
            return Some(Point {
                group: self.group(class, op),
                comm: f.comm,
                msg: x,
                x: x as f64,
                lbnl_ns: lbnl.ns(x as f64),
            });
        }
        let s = enrich::op_bytes(f.op, first.count, f.elem, f.n);
        Some(Point {
            group: f.group,
            comm: f.comm,
            msg: s,
            x: s as f64 * f.bus,
            lbnl_ns: f.lbnl.ns(s as f64),
        })
    }

    /// The prediction the kernel's group's line gives, as an [`OpPrediction`].
    fn prediction(&self, k: &KernelSeen, p: &Point, fit: Option<&Fit>) -> OpPrediction {
        let (class, op) = self.keys[p.group as usize];
        OpPrediction {
            process: k.process,
            kernel: k.kernel,
            rank: k.rank,
            comm: p.comm,
            op_count: k.lines[0].op_count,
            op,
            link_class: class,
            msg_bytes: p.msg,
            bus_bytes: p.x,
            start_ns: k.start_ns,
            end_ns: k.end_ns,
            fitted_ns: fit.and_then(|f| f.predict_ns(p.x)),
            lbnl_ns: p.lbnl_ns,
        }
    }
}

/// Size bins: eight per octave of `x` (the octave's leading bit and the three after it), and one
/// for `x < 1` (nothing moved). No logarithm per kernel.
const BIN_SLOTS: usize = 1 + 64 * 8;

fn bin_slot(x: f64) -> usize {
    if x < 1.0 || x.is_nan() {
        return 0;
    }
    let v = x.min(u64::MAX as f64) as u64;
    let octave = 63 - v.leading_zeros();
    let eighth = if octave >= 3 {
        (v >> (octave - 3)) & 7
    } else {
        (v << (3 - octave)) & 7
    };
    1 + (octave as usize) * 8 + eighth as usize
}

#[derive(Default)]
struct BinAcc {
    kernels: u64,
    sum_x: f64,
    sum_msg: f64,
    durations: Vec<f64>,
    sum_lbnl: f64,
}

struct GroupAcc {
    bins: Vec<BinAcc>,
    kernels: u64,
    fitted: RatioHist,
    lbnl: RatioHist,
}

impl Default for GroupAcc {
    fn default() -> Self {
        GroupAcc {
            bins: (0..BIN_SLOTS).map(|_| BinAcc::default()).collect(),
            kernels: 0,
            fitted: RatioHist::default(),
            lbnl: RatioHist::default(),
        }
    }
}

/// Octaves of ratio a [`RatioHist`] holds (2^-8 to 2^24), and bins per octave.
const RATIO_OCTAVES: usize = 32;
const RATIO_STEPS: usize = 64;

/// A distribution of ratios in 64 bins per octave, read off a ratio's own bits (its binary
/// exponent and the six bits after the leading one): quantiles within 1.6 % (a bin's width)
/// at a counter's cost per kernel, where keeping millions of ratios to select from took a
/// tenth of the model's time.
struct RatioHist {
    counts: Vec<u64>,
    n: u64,
}

impl Default for RatioHist {
    fn default() -> Self {
        RatioHist {
            counts: vec![0; RATIO_OCTAVES * RATIO_STEPS],
            n: 0,
        }
    }
}

impl RatioHist {
    fn bin(r: f64) -> usize {
        if r.is_nan() || r <= 0.0 {
            return 0;
        }
        let bits = r.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as i64 - 1023;
        let step = ((bits >> 46) & 63) as i64;
        let i = (exp + 8) * RATIO_STEPS as i64 + step;
        i.clamp(0, (RATIO_OCTAVES * RATIO_STEPS) as i64 - 1) as usize
    }

    /// The middle of bin `i`.
    fn value(i: usize) -> f64 {
        let exp = (i / RATIO_STEPS) as i32 - 8;
        let step = (i % RATIO_STEPS) as f64;
        2f64.powi(exp) * (1.0 + (step + 0.5) / RATIO_STEPS as f64)
    }

    fn add(&mut self, r: f64) {
        self.counts[Self::bin(r)] += 1;
        self.n += 1;
    }

    /// The `q`-quantile by the nearest rank, as its bin's middle.
    fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((self.n - 1) as f64 * q.clamp(0.0, 1.0)).round() as u64;
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen > rank {
                return Some(Self::value(i));
            }
        }
        None
    }
}

/// A kernel far off the curve, kept while the pass runs.
type Far = (OpPrediction, f64);

/// A group's fitted line, its size bins (with both predictions) and its saturation.
type Fitted = (Fit, Vec<SizeBin>, Saturation);

/// Fits the model of an analysed session (LBNL's predictions on `hw`): a pass that bins every
/// kernel, a fit per group, a pass that sets every kernel beside both predictions.
pub fn perf_model(
    analysis: &Analysis,
    facts: &RunFacts,
    totals: &Totals,
    hw: &Hardware,
) -> PerfModel {
    let mut notes = Notes::default();
    let mut points = Points::new(totals, facts, hw);
    let mut groups = bin_kernels(analysis, totals, &mut points, &mut notes);
    let fitted: Vec<Fitted> = groups.iter_mut().map(fit_group).collect();
    let far = compare_kernels(analysis, totals, &mut points, &mut groups, &fitted);
    let mut out: Vec<ModelGroup> = groups
        .into_iter()
        .zip(fitted)
        .enumerate()
        .map(|(i, (g, (f, bins, s)))| {
            let (class, op) = points.keys[i];
            ModelGroup {
                link_class: class,
                op: op.name().to_string(),
                kernels: g.kernels,
                fit: f,
                saturation: s,
                bins,
                fitted_residuals: residuals(&g.fitted),
                lbnl_residuals: residuals(&g.lbnl),
            }
        })
        .filter(|g| g.kernels > 0)
        .collect();
    out.sort_by(|a, b| (a.link_class, &a.op).cmp(&(b.link_class, &b.op)));
    let mut outliers: Vec<Outlier> = far
        .into_iter()
        .map(|(p, ratio)| outlier(analysis, facts, &p, ratio))
        .collect();
    outliers.sort_by(|a, b| b.ratio.ln().abs().total_cmp(&a.ratio.ln().abs()));
    for g in &out {
        if g.fit.status != "fitted" {
            notes.add(
                "not-fitted",
                "groups whose sizes are too alike (or whose time does not grow with size) got a latency only",
                1,
                Some(format!("{} {}", g.link_class.name(), g.op)),
            );
        }
    }
    PerfModel {
        lbnl_hardware: hw.name.to_string(),
        groups: out,
        outliers,
        notes: notes.into_vec(),
    }
}

/// The first pass: every matched kernel of positive duration into its group's size bin.
fn bin_kernels(
    analysis: &Analysis,
    totals: &Totals,
    points: &mut Points,
    notes: &mut Notes,
) -> Vec<GroupAcc> {
    let mut groups: Vec<GroupAcc> = Vec::new();
    let (mut zero, mut pointless) = (0u64, 0u64);
    totals.for_each_kernel(analysis, |k| {
        let d = k.duration_ns();
        if d <= 0 {
            zero += 1;
            return;
        }
        let Some(p) = points.point(k) else {
            pointless += 1;
            return;
        };
        let g = p.group as usize;
        if groups.len() <= g {
            groups.resize_with(g + 1, GroupAcc::default);
        }
        let acc = &mut groups[g];
        acc.kernels += 1;
        let b = &mut acc.bins[bin_slot(p.x)];
        b.kernels += 1;
        b.sum_x += p.x;
        b.sum_msg += p.msg as f64;
        b.durations.push(d as f64);
        b.sum_lbnl += p.lbnl_ns;
    });
    if zero > 0 {
        notes.add(
            "zero-duration",
            "kernels of zero or negative duration were left out of the fit and the residuals",
            zero,
            None,
        );
    }
    if pointless > 0 {
        notes.add(
            "no-link",
            "kernels whose lines moved nothing over a link (self-sends only) were left out",
            pointless,
            None,
        );
    }
    groups
}

/// One group's bins (their durations given up), fit and saturation.
fn fit_group(g: &mut GroupAcc) -> Fitted {
    let mut bins: Vec<SizeBin> = g
        .bins
        .iter_mut()
        .filter(|b| b.kernels > 0)
        .map(|b| {
            let n = b.kernels as f64;
            let x = b.sum_x / n;
            let envelope = fit::quantile(&mut b.durations, ENVELOPE_QUANTILE).unwrap_or(0.0);
            let median = fit::median(&mut b.durations).unwrap_or(0.0);
            b.durations = Vec::new();
            SizeBin {
                kernels: b.kernels,
                bus_bytes: x,
                msg_bytes: b.sum_msg / n,
                envelope_ns: envelope,
                median_ns: median,
                envelope_bus_gbps: if envelope > 0.0 { x / envelope } else { 0.0 },
                fitted_ns: None,
                lbnl_ns: b.sum_lbnl / n,
            }
        })
        .collect();
    let f = fit_bins(&bins);
    for b in &mut bins {
        b.fitted_ns = f.predict_ns(b.bus_bytes);
    }
    let s = saturation(&bins, &f);
    (f, bins, s)
}

/// The second pass: every kernel against both predictions, into its group's residuals; the
/// [`OUTLIERS`] furthest off the fitted curve kept (with their ratio).
fn compare_kernels(
    analysis: &Analysis,
    totals: &Totals,
    points: &mut Points,
    groups: &mut [GroupAcc],
    fitted: &[Fitted],
) -> Vec<Far> {
    let mut heap: BinaryHeap<Reverse<(u64, usize, usize)>> = BinaryHeap::new();
    let mut far: FxHashMap<(usize, usize), Far> = FxHashMap::default();
    // The |ratio| band the heap's smallest spans, once the heap is full.
    let mut band = (1.0, 1.0);
    totals.for_each_kernel(analysis, |k| {
        let d = k.duration_ns();
        if d <= 0 {
            return;
        }
        let Some(p) = points.point(k) else {
            return;
        };
        let (Some(g), Some((fit, _, _))) = (
            groups.get_mut(p.group as usize),
            fitted.get(p.group as usize),
        ) else {
            return;
        };
        let measured = d as f64;
        g.lbnl.add(measured / p.lbnl_ns.max(1e-9));
        let Some(pred) = fit.predict_ns(p.x).filter(|&f| f > 0.0) else {
            return;
        };
        let ratio = measured / pred;
        g.fitted.add(ratio);
        // The heap keeps the OUTLIERS largest |ln ratio| (as integer micro-units); a ratio
        // inside the band cannot enter, and costs no logarithm.
        if heap.len() >= OUTLIERS && ratio < band.1 && ratio > band.0 {
            return;
        }
        let key = (ratio.ln().abs() * 1e6) as u64;
        if heap.len() < OUTLIERS || heap.peek().is_some_and(|Reverse(top)| key > top.0) {
            heap.push(Reverse((key, k.process, k.kernel)));
            far.insert(
                (k.process, k.kernel),
                (points.prediction(k, &p, Some(fit)), ratio),
            );
            if heap.len() > OUTLIERS {
                if let Some(Reverse((_, a, b))) = heap.pop() {
                    far.remove(&(a, b));
                }
            }
            if heap.len() >= OUTLIERS {
                if let Some(Reverse((top, _, _))) = heap.peek() {
                    let t = *top as f64 / 1e6;
                    band = ((-t).exp(), t.exp());
                }
            }
        }
    });
    far.into_values().collect()
}

/// Visits every matched kernel of positive duration with its measured time, its fitted
/// prediction (from `fits`, by link class and operation) and LBNL's: "every operation's time
/// predicted", one at a time (a run has millions).
pub fn for_each_point(
    analysis: &Analysis,
    facts: &RunFacts,
    totals: &Totals,
    hw: &Hardware,
    fits: &FxHashMap<(LinkClass, OpType), Fit>,
    mut f: impl FnMut(&OpPrediction),
) {
    let mut points = Points::new(totals, facts, hw);
    // The fits by group id, looked up once per group.
    let mut by_id: Vec<Option<Fit>> = Vec::new();
    totals.for_each_kernel(analysis, |k| {
        if k.duration_ns() <= 0 {
            return;
        }
        let Some(p) = points.point(k) else {
            return;
        };
        while by_id.len() < points.keys.len() {
            by_id.push(fits.get(&points.keys[by_id.len()]).cloned());
        }
        let fit = by_id[p.group as usize].as_ref();
        f(&points.prediction(k, &p, fit));
    });
}

/// [`for_each_point`] with a fitted model's lines.
pub fn for_each_prediction(
    analysis: &Analysis,
    facts: &RunFacts,
    totals: &Totals,
    hw: &Hardware,
    model: &PerfModel,
    f: impl FnMut(&OpPrediction),
) {
    let fits: FxHashMap<(LinkClass, OpType), Fit> = model
        .groups
        .iter()
        .filter_map(|g| {
            let op = OpType::from_name(&g.op)?;
            Some(((g.link_class, op), g.fit.clone()))
        })
        .collect();
    for_each_point(analysis, facts, totals, hw, &fits, f)
}

/// The Theil–Sen line through the bins' envelopes (see the module).
pub fn fit_bins(bins: &[SizeBin]) -> Fit {
    let full: Vec<&SizeBin> = bins
        .iter()
        .filter(|b| b.kernels >= MIN_BIN_KERNELS && b.envelope_ns > 0.0)
        .collect();
    let used: Vec<&SizeBin> = if full.len() >= 2 {
        full
    } else {
        bins.iter().filter(|b| b.envelope_ns > 0.0).collect()
    };
    let points: Vec<(f64, f64)> = used.iter().map(|b| (b.bus_bytes, b.envelope_ns)).collect();
    let smallest = points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let largest = points.iter().map(|p| p.0).fold(0.0, f64::max);
    let spread = largest >= MIN_SPREAD * smallest;
    let shows = |(a, slope): (f64, f64)| {
        slope > 0.0 && spread && slope * largest >= MIN_BANDWIDTH_SHARE * a.max(0.0)
    };
    if let Some((a, slope)) = fit::theil_sen(&points).filter(|&l| shows(l)) {
        return Fit {
            status: "fitted".into(),
            alpha_ns: Some(a.max(0.0)),
            beta_gbps: Some(1.0 / slope),
            bins_used: used.len() as u32,
        };
    }
    let mut t: Vec<f64> = points.iter().map(|p| p.1).collect();
    match fit::median(&mut t) {
        Some(a) => Fit {
            status: "latency-only".into(),
            alpha_ns: Some(a),
            beta_gbps: None,
            bins_used: used.len() as u32,
        },
        None => Fit {
            status: "none".into(),
            alpha_ns: None,
            beta_gbps: None,
            bins_used: 0,
        },
    }
}

/// Where the envelope's bandwidth reaches [`SATURATION_SHARE`] of its top (see the module).
pub fn saturation(bins: &[SizeBin], f: &Fit) -> Saturation {
    let seen: Vec<&SizeBin> = bins
        .iter()
        .filter(|b| b.bus_bytes > 0.0 && b.envelope_ns > 0.0)
        .collect();
    let top = seen
        .iter()
        .map(|b| b.envelope_bus_gbps)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let at = top.and_then(|t| {
        seen.iter()
            .position(|b| b.envelope_bus_gbps >= SATURATION_SHARE * t)
    });
    let fitted = match (f.alpha_ns, f.beta_gbps) {
        (Some(a), Some(b)) => {
            let share = SATURATION_SHARE / (1.0 - SATURATION_SHARE);
            Some((share * a * b).round() as u64)
        }
        _ => None,
    };
    Saturation {
        max_bus_gbps: top,
        msg_bytes: at.map(|i| seen[i].msg_bytes.round() as u64),
        bus_bytes: at.map(|i| seen[i].bus_bytes.round() as u64),
        bracketed: at.is_some_and(|i| i > 0 && i + 1 < seen.len()),
        fitted_bus_bytes: fitted,
    }
}

/// The distribution of ratios: its quantiles and the coarse histogram of [`Residuals`].
fn residuals(h: &RatioHist) -> Residuals {
    if h.n == 0 {
        return Residuals::default();
    }
    let mut histogram = vec![0u64; HIST_BINS];
    for (i, &c) in h.counts.iter().enumerate().filter(|(_, &c)| c > 0) {
        // Quarter octaves from 2^-2: the fine bins' octave and top two steps.
        let quarter = (i / RATIO_STEPS) as i64 * 4 + (i % RATIO_STEPS) as i64 / 16 - 6 * 4;
        histogram[quarter.clamp(0, HIST_BINS as i64 - 1) as usize] += c;
    }
    let quantiles = [0.05, 0.25, 0.5, 0.75, 0.95, 0.99]
        .iter()
        .filter_map(|&q| Some((q, h.quantile(q)?)))
        .collect();
    Residuals {
        kernels: h.n,
        quantiles,
        histogram,
    }
}

fn outlier(analysis: &Analysis, facts: &RunFacts, p: &OpPrediction, ratio: f64) -> Outlier {
    let process = &analysis.alignments.processes[p.process].process;
    let clocks = &analysis.clocks;
    Outlier {
        rank: p.rank,
        host: process.host.to_string(),
        pid: process.pid,
        comm: facts
            .comms
            .get(p.comm as usize)
            .map_or_else(String::new, |c| c.id.clone()),
        op_count: format!("{:x}", p.op_count),
        op: p.op.name().to_string(),
        link_class: p.link_class,
        msg_bytes: p.msg_bytes,
        measured_ns: p.measured_ns(),
        fitted_ns: p.fitted_ns.unwrap_or(0.0),
        lbnl_ns: p.lbnl_ns,
        ratio,
        start_ns: p.start_ns,
        end_ns: p.end_ns,
        sync_start_ns: clocks.to_sync(p.rank, p.start_ns),
        sync_end_ns: clocks.to_sync(p.rank, p.end_ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(x: f64, t: f64, kernels: u64) -> SizeBin {
        SizeBin {
            kernels,
            bus_bytes: x,
            msg_bytes: x,
            envelope_ns: t,
            median_ns: t,
            envelope_bus_gbps: x / t,
            fitted_ns: None,
            lbnl_ns: 0.0,
        }
    }

    #[test]
    fn the_envelope_line_gives_alpha_beta_and_the_saturation_point() {
        // α = 5 µs, β = 100 GB/s: sizes 1 KB to 1 GB.
        let bins: Vec<SizeBin> = (10..=30)
            .map(|p| {
                let x = f64::from(1u32 << p);
                bin(x, 5_000.0 + x / 100.0, 10)
            })
            .collect();
        let f = fit_bins(&bins);
        assert_eq!(f.status, "fitted");
        assert!((f.alpha_ns.unwrap() - 5_000.0).abs() < 1e-6);
        assert!((f.beta_gbps.unwrap() - 100.0).abs() < 1e-9);
        let s = saturation(&bins, &f);
        // x/(α + x/β) ≥ 0.9·(top ≈ β): from 9·α·β = 4.5 MB up, the first power of two is 8 MiB.
        assert_eq!(s.bus_bytes, Some(1 << 23));
        assert!(s.bracketed);
        assert_eq!(s.fitted_bus_bytes, Some(4_500_000));
    }

    #[test]
    fn alike_sizes_give_a_latency_and_small_bins_stay_out() {
        let f = fit_bins(&[bin(8.0, 6_000.0, 50)]);
        assert_eq!(f.status, "latency-only");
        assert_eq!(f.alpha_ns, Some(6_000.0));
        assert_eq!(f.predict_ns(1e9), Some(6_000.0));
        // Two full bins fix the line; a bin of one kernel far above it does not tilt it.
        let f = fit_bins(&[
            bin(0.0, 1_000.0, 10),
            bin(1e6, 11_000.0, 10),
            bin(5e5, 90_000.0, 1),
        ]);
        assert!((f.beta_gbps.unwrap() - 100.0).abs() < 1e-9);
        assert_eq!(fit_bins(&[]).status, "none");
        // Time falling with size: no bandwidth to fit.
        assert_eq!(
            fit_bins(&[bin(1.0, 9_000.0, 5), bin(1e6, 8_000.0, 5)]).status,
            "latency-only"
        );
    }

    #[test]
    fn lbnl_as_a_line_is_lbnl() {
        let hw = Hardware::a100();
        for op in [
            OpType::AllReduce,
            OpType::AllGather,
            OpType::Broadcast,
            OpType::SendRecv,
            OpType::Send,
        ] {
            for (n, d) in [(2, 1), (8, 4), (32, 4), (4, 4)] {
                let line = Lbnl::of(&hw, op, n, d);
                for bytes in [0.0, 1.0, 4096.0, 3.3e7, 1e10] {
                    let want = theory::collective_time_s(&hw, op, bytes, n, d) * 1e9;
                    let got = line.ns(bytes);
                    assert!(
                        (got - want).abs() <= 1e-6 * want.max(1.0),
                        "{op:?} {n} {bytes}"
                    );
                }
            }
        }
    }

    #[test]
    fn size_bins_are_eighths_of_octaves() {
        assert_eq!(bin_slot(0.0), 0);
        assert_eq!(bin_slot(0.5), 0);
        assert_eq!(bin_slot(1.0), 1);
        // 1024 = 2^10: the octave's first eighth; 1024 + 127 still in it, 1024 + 128 the next.
        assert_eq!(bin_slot(1024.0), 1 + 80);
        assert_eq!(bin_slot(1151.0), 1 + 80);
        assert_eq!(bin_slot(1152.0), 1 + 81);
        assert_eq!(bin_slot(2047.0), 1 + 87);
        assert_eq!(bin_slot(2048.0), 1 + 88);
        let slots: Vec<usize> = (0..4000).map(|x| bin_slot(x as f64 * 97.3)).collect();
        assert!(
            slots.windows(2).all(|w| w[0] <= w[1]),
            "ascending with size"
        );
        assert!(bin_slot(1e30) < BIN_SLOTS);
    }

    #[test]
    fn residuals_quantiles_and_histogram() {
        let mut h = RatioHist::default();
        for i in 1..=100 {
            h.add(1.0 + i as f64 / 100.0);
        }
        h.add(1000.0);
        let d = residuals(&h);
        assert_eq!(d.kernels, 101);
        assert_eq!(d.histogram.iter().sum::<u64>(), 101);
        assert_eq!(
            *d.histogram.last().unwrap(),
            1,
            "1000× lands in the last bin"
        );
        // Quantiles within a fine bin (1/64 of an octave) of the exact ones.
        let median = d.quantiles.iter().find(|q| q.0 == 0.5).unwrap().1;
        assert!((median - 1.51).abs() <= 1.51 / 64.0, "{median}");
        let p5 = d.quantiles.iter().find(|q| q.0 == 0.05).unwrap().1;
        assert!((p5 - 1.06).abs() <= 1.06 / 64.0, "{p5}");
        // 1.01..1.24 are the first quarter of the octave from 1, 1.25..1.49 the second.
        assert_eq!(histogram_bin_ratio(8), 1.0);
        assert_eq!(histogram_bin_ratio(9), 1.25);
        assert_eq!(d.histogram[8], 24);
        assert_eq!(d.histogram[9], 25);
        assert_eq!(RatioHist::bin(0.0), 0);
        assert_eq!(RatioHist::bin(f64::NAN), 0);
        assert_eq!(RatioHist::bin(1e30), RATIO_OCTAVES * RATIO_STEPS - 1);
    }
}
