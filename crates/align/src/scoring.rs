//! How much a (kernel, log op) pair, a gap run and a run of matches are worth.
//!
//! [`Scoring::thesis`] is §4.2.2 of the thesis: match `+5·w`, mismatch `−15·(w_a+w_b)/2`,
//! gaps growing with the run, `+1` per consecutive match. The thesis' gap numbers disagree with
//! each other (eq. 4.2 gives −5, −6.5, −8; its test quotes −5, −9.88, −12.844), so we use a
//! clean capped run-length model (here affine): the first gap of a run costs −5, every further
//! one −6. With it the five unit tests of §4.3.1 come out as the thesis reports. The window is
//! narrow: a second gap dearer than −6.25 makes the gap-run test prefer one AllReduce/Send
//! mismatch; a third gap dearer than the second (e.g. −5, −6, −7) makes the false-positive test
//! scatter its matches over all three segments to break the gap runs.
//!
//! [`Scoring::rich`] adds evidence the thesis left unused: datatype, reduction, algorithm and
//! protocol where the kernel name carries them, channel count against `gridX`, and CPU
//! timestamps against kernel launch times (a drifting offset estimated robustly by the caller,
//! see [`TimeModel`]). Its gaps are affine (−5 to open, −2 to extend): drops come in bursts, and
//! a burst should not be forced into mismatches.
//!
//! All scores are returned to the aligner in hundredths of a point.

use crate::nw::{self, GapModel, Score};
use crate::symbols::{class_key, kernel_class, op_symbol, weight, Symbol};
use model::OpType;
use rustc_hash::FxHashMap;

/// The parameters of a scoring, in points.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct Scoring {
    /// Match score before the op weight (`+5`).
    pub match_score: f64,
    /// Mismatch score before the mean weight (`−15`).
    pub mismatch: f64,
    /// Bonus for a match right after a match (`+1`).
    pub run_bonus: f64,
    /// A kernel left unmatched.
    pub gap_kernel: GapModel,
    /// A log line (or grouped Send/Recv run) left unmatched.
    pub gap_log: GapModel,
    /// The richer terms; `None` for the thesis' name-only scoring.
    pub rich: Option<RichTerms>,
}

/// Points added for agreement / conflict of the extra fields (only when both sides know them).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct RichTerms {
    /// Datatype, reduction or protocol agree.
    pub attr_agree: f64,
    /// Datatype or reduction differ: these are never wrong in either source.
    pub attr_conflict: f64,
    /// Algorithm or protocol differ (kernel names do not always carry the algorithm used).
    pub algo_conflict: f64,
    pub channels_agree: f64,
    pub channels_conflict: f64,
    /// A kernel whose name gives no op (`ncclDevKernel_Generic`) against any log op.
    pub unknown_op: f64,
    /// Any kernel against the placeholder of a log line missing from its opCount sequence:
    /// better than two gaps, far worse than a real match.
    pub placeholder: f64,
    /// The kernel's call as the other ranks place it (communicator, opCount) agrees with the
    /// line's, or not.
    pub call_agree: f64,
    pub call_conflict: f64,
    /// Timestamps within one time scale of the offset earn up to this much.
    pub time_agree: f64,
    /// Beyond one scale, `time_slope` points are lost per scale, down to `−time_cap`.
    pub time_slope: f64,
    pub time_cap: f64,
}

impl Scoring {
    /// The thesis' configuration (§4.2.2), with the run-length gap model described above.
    pub fn thesis() -> Scoring {
        let gap = GapModel {
            open: -500,
            step: -100,
            cap: 1,
        };
        Scoring {
            match_score: 5.0,
            mismatch: -15.0,
            run_bonus: 1.0,
            gap_kernel: gap,
            gap_log: gap,
            rich: None,
        }
    }

    /// The richer configuration used by the pipeline.
    pub fn rich() -> Scoring {
        let gap = GapModel {
            open: -500,
            step: 300,
            cap: 1,
        };
        Scoring {
            match_score: 5.0,
            mismatch: -15.0,
            run_bonus: 1.0,
            gap_kernel: gap,
            gap_log: gap,
            rich: Some(RichTerms {
                attr_agree: 1.0,
                attr_conflict: -20.0,
                algo_conflict: -6.0,
                channels_agree: 1.0,
                channels_conflict: -4.0,
                unknown_op: 1.0,
                placeholder: 2.0,
                call_agree: 6.0,
                call_conflict: -4.0,
                time_agree: 3.0,
                time_slope: 6.0,
                time_cap: 60.0,
            }),
        }
    }
}

/// Log time + offset(log time) ≈ kernel time, give or take `scale_ns`.
///
/// The offset is piecewise linear between knots, each the median (log time, kernel − log) of
/// one chunk of trusted pairs: robust to the wrong pairs of a first pass (medians), and it
/// follows clock drift between the CPU clock of the log and the clock of the profile (1 ppm is
/// 3.6 ms per hour, far more than the launch jitter).
#[derive(Debug, Clone, PartialEq)]
pub struct TimeModel {
    /// (log time, offset) knots, increasing in log time.
    pub knots: Vec<(i64, i64)>,
    pub scale_ns: i64,
    /// Whether the model is good enough to place anchors for the banded aligner (a fitted
    /// model); a voted first guess ignores drift, and anchors from it can misplace the band.
    pub anchors: bool,
}

fn median(v: &mut [i64]) -> i64 {
    v.sort_unstable();
    v[v.len() / 2]
}

impl TimeModel {
    /// Fits from `(log time, kernel time − log time)` samples of trusted pairs. The scale is
    /// four robust standard deviations (1.4826·MAD) of the residuals, at least `min_scale_ns`.
    pub fn fit(mut samples: Vec<(i64, i64)>, min_scale_ns: i64) -> Option<TimeModel> {
        if samples.len() < 3 {
            return None;
        }
        samples.sort_unstable();
        let chunks = (samples.len() / 64).clamp(1, 64);
        let size = samples.len().div_ceil(chunks);
        let mut knots: Vec<(i64, i64)> = samples
            .chunks(size)
            .map(|c| {
                let mut t: Vec<i64> = c.iter().map(|s| s.0).collect();
                let mut d: Vec<i64> = c.iter().map(|s| s.1).collect();
                (median(&mut t), median(&mut d))
            })
            .collect();
        // A median of three neighbouring knots removes a chunk that a bad stretch captured.
        if knots.len() >= 3 {
            let raw = knots.clone();
            for i in 1..raw.len() - 1 {
                knots[i].1 = median(&mut [raw[i - 1].1, raw[i].1, raw[i + 1].1]);
            }
        }
        knots.dedup_by_key(|k| k.0);
        let mut tm = TimeModel {
            knots,
            scale_ns: 1,
            anchors: true,
        };
        let mut dev: Vec<i64> = samples
            .iter()
            .map(|&(t, d)| (d - tm.offset_at(t)).abs())
            .collect();
        let mad = median(&mut dev) as f64;
        tm.scale_ns = ((4.0 * 1.4826 * mad) as i64).max(min_scale_ns).max(1);
        Some(tm)
    }

    /// A first model that needs no alignment. Log lines vote, with every kernel of their op
    /// class, for `kernel − log` in buckets of `width_ns`; the densest triple of buckets wins
    /// and the median of its votes is the offset. The true offset gets one vote per sampled
    /// line; a shift by some operations only where the intervals between calls repeat. A long
    /// log is cut into up to 8 stretches in time order: the first (64 lines) votes against every
    /// kernel, each later one (32 lines) near the previous stretch's offset (within 300 ppm of
    /// the run's span), which follows clock drift. Why: a first pass on symbols alone may be shifted by a few
    /// operations in long runs of identical calls, and a model fitted on its pairs keeps the
    /// shift. `log` and `kernels`: (time, op class).
    pub fn vote(
        log: &[(i64, u64)],
        kernels: &[(i64, u64)],
        width_ns: i64,
        min_scale_ns: i64,
    ) -> Option<TimeModel> {
        let width = width_ns.max(1);
        let mut by_class: FxHashMap<u64, Vec<i64>> = FxHashMap::default();
        for &(t, c) in kernels {
            by_class.entry(c).or_default().push(t);
        }
        for v in by_class.values_mut() {
            v.sort_unstable();
        }
        let mut log: Vec<(i64, u64)> = log.to_vec();
        log.sort_unstable();
        let spread = |v: &[(i64, u64)], n: usize| -> Vec<(i64, u64)> {
            v.iter()
                .step_by(v.len().div_ceil(n).max(1))
                .copied()
                .collect()
        };
        // Drift spreads one offset over many buckets in a long run: the first vote is taken on
        // a short stretch (the first with a clear winner), later ones near the last offset.
        let span = log.last()?.0 - log.first()?.0;
        let drift = span / 3_333;
        let radius = (20 * width).max(drift);
        // As many stretches as 300 ppm of drift over the run spans buckets (one for short runs).
        let chunks = ((drift / width + 1) as usize).clamp(1, (log.len() / 64).clamp(1, 8));
        let mut knots = Vec::new();
        let mut mad = 0i64;
        let mut centre: Option<i64> = None;
        for chunk in log.chunks(log.len().div_ceil(chunks).max(1)) {
            let samples = spread(chunk, if centre.is_some() { 32 } else { 64 });
            let window = centre.map(|c| (c, radius));
            if let Some((off, dev)) = vote_offset(&samples, &by_class, width, window) {
                let mut t: Vec<i64> = samples.iter().map(|s| s.0).collect();
                knots.push((median(&mut t), off));
                mad = mad.max(dev);
                centre = Some(off);
            }
        }
        if knots.len() >= 3 {
            let raw = knots.clone();
            for i in 1..raw.len() - 1 {
                knots[i].1 = median(&mut [raw[i - 1].1, raw[i].1, raw[i + 1].1]);
            }
        }
        knots.dedup_by_key(|k| k.0);
        if knots.is_empty() {
            return None;
        }
        Some(TimeModel {
            knots,
            // As in `fit`: four robust standard deviations of the winning votes.
            scale_ns: ((4.0 * 1.4826 * mad as f64) as i64)
                .max(width)
                .max(min_scale_ns),
            anchors: false,
        })
    }

    /// The offset at a log time (constant beyond the first and last knots).
    pub fn offset_at(&self, t: i64) -> i64 {
        let k = &self.knots;
        let p = k.partition_point(|&(kt, _)| kt <= t);
        if p == 0 {
            return k[0].1;
        }
        if p == k.len() {
            return k[p - 1].1;
        }
        let ((t0, o0), (t1, o1)) = (k[p - 1], k[p]);
        o0 + ((o1 - o0) as i128 * (t - t0) as i128 / (t1 - t0) as i128) as i64
    }

    /// The median offset, for reports.
    pub fn typical_offset(&self) -> i64 {
        median(&mut self.knots.iter().map(|k| k.1).collect::<Vec<_>>())
    }

    /// Drift in parts per million between the first and last knots.
    pub fn drift_ppm(&self) -> Option<f64> {
        let (&(t0, o0), &(t1, o1)) = (self.knots.first()?, self.knots.last()?);
        (t1 > t0).then(|| (o1 - o0) as f64 / (t1 - t0) as f64 * 1e6)
    }
}

/// The most voted `kernel − log` offset of `samples` (log time, class) against the kernels of
/// their class (sorted times), optionally only within `radius` of `centre`, and the median
/// absolute deviation of the winning votes; `None` with fewer than 3 votes.
fn vote_offset(
    samples: &[(i64, u64)],
    by_class: &FxHashMap<u64, Vec<i64>>,
    width: i64,
    near: Option<(i64, i64)>,
) -> Option<(i64, i64)> {
    let diffs = |keep: &mut dyn FnMut(i64)| {
        for &(lt, c) in samples {
            let ks = by_class.get(&c).map(Vec::as_slice).unwrap_or(&[]);
            let (from, to) = match near {
                Some((centre, r)) => (
                    ks.partition_point(|&k| k < lt + centre - r),
                    ks.partition_point(|&k| k <= lt + centre + r),
                ),
                None => (0, ks.len()),
            };
            for &kt in &ks[from..to] {
                keep(kt - lt);
            }
        }
    };
    // Votes per bucket as sorted (bucket, count) runs: a bucket's neighbours are adjacent
    // (a hash map of buckets spent most of the time hashing).
    let mut buckets: Vec<i64> = Vec::new();
    diffs(&mut |d| buckets.push(d.div_euclid(width)));
    buckets.sort_unstable();
    let mut votes: Vec<(i64, u32)> = Vec::new();
    for b in buckets {
        match votes.last_mut() {
            Some(last) if last.0 == b => last.1 += 1,
            _ => votes.push((b, 1)),
        }
    }
    let near3 = |k: usize| {
        let (b, c) = votes[k];
        let below = k
            .checked_sub(1)
            .filter(|&p| Some(votes[p].0) == b.checked_sub(1));
        let above =
            Some(k + 1).filter(|&p| p < votes.len() && Some(votes[p].0) == b.checked_add(1));
        c + below.map_or(0, |p| votes[p].1) + above.map_or(0, |p| votes[p].1)
    };
    // The most votes, ties to the lowest bucket (a total order: the result does not depend on
    // the order of the candidates).
    let (best, n) = (0..votes.len())
        .map(|k| (votes[k].0, near3(k)))
        .max_by(|x, y| x.1.cmp(&y.1).then(y.0.cmp(&x.0)))?;
    if n < 3 {
        return None;
    }
    let mut d: Vec<i64> = Vec::new();
    diffs(&mut |x| {
        if x.div_euclid(width).abs_diff(best) <= 1 {
            d.push(x);
        }
    });
    let m = median(&mut d);
    let mut dev: Vec<i64> = d.iter().map(|x| (x - m).abs()).collect();
    Some((m, median(&mut dev)))
}

/// A [`Score`] over kernels (`a`) and log symbols (`b`).
pub struct Scorer<'a> {
    pub scoring: &'a Scoring,
    pub kernels: &'a [Symbol],
    pub log: &'a [Symbol],
    pub time: Option<&'a TimeModel>,
}

/// Hundredths of a point, rounded half away from zero: `(x * 100.0).round() as i64` without the
/// libm call (it is on the aligner's per-cell path). Exact: `x - trunc(x)` is exact for every
/// finite `x`, and the saturating casts and adds reproduce `round() as i64` for huge, infinite
/// and NaN values.
#[inline]
pub(crate) fn centi(x: f64) -> i64 {
    let x = x * 100.0;
    let t = x as i64;
    let f = x - t as f64;
    if f >= 0.5 {
        t.saturating_add(1)
    } else if f <= -0.5 {
        t.saturating_sub(1)
    } else {
        t
    }
}

/// A pair's score apart from the timestamp term, which is always added last.
#[derive(Debug, Clone, Copy)]
enum Base {
    /// The whole score: no time term can apply.
    Done(f64),
    /// The rich score before the time term (the op classes agree).
    BeforeTime(f64),
}

/// `Some(a == b)` when both are known.
fn both<T: PartialEq>(a: Option<T>, b: Option<T>) -> Option<bool> {
    Some(a? == b?)
}

/// The time term of the rich scoring for `kernel time − log time − offset = d`.
#[inline]
fn time_term(r: &RichTerms, scale_ns: i64, d: i64) -> f64 {
    let z = (d.wrapping_abs() as f64) / scale_ns as f64;
    if z <= 1.0 {
        r.time_agree * (1.0 - z)
    } else {
        -(r.time_slope * (z - 1.0)).min(r.time_cap)
    }
}

impl Scorer<'_> {
    /// Do the op classes agree (SendRecv kernels take Send, Recv and grouped runs)?
    pub fn same_op(&self, i: usize, j: usize) -> bool {
        match (self.kernels[i].op, self.log[j].op) {
            (Some(a), Some(b)) => kernel_class(a) == kernel_class(b),
            _ => false,
        }
    }

    /// The pair's score in points.
    pub fn points(&self, i: usize, j: usize) -> f64 {
        let (k, l) = (&self.kernels[i], &self.log[j]);
        match self.base(k, l, both(k.call, l.call)) {
            Base::Done(p) => p,
            Base::BeforeTime(p) => match (&self.scoring.rich, self.time, k.time_ns, l.time_ns) {
                (Some(r), Some(tm), Some(kt), Some(lt)) => {
                    p + time_term(
                        r,
                        tm.scale_ns,
                        kt.wrapping_sub(lt).wrapping_sub(tm.offset_at(lt)),
                    )
                }
                _ => p,
            },
        }
    }

    /// Everything of [`Scorer::points`] but the time term; `call`: do the calls agree (when
    /// both are known). Floating-point operations in the same order as ever, so that a table
    /// of these values gives bit-identical scores.
    fn base(&self, k: &Symbol, l: &Symbol, call: Option<bool>) -> Base {
        let sc = self.scoring;
        let call = |r: &RichTerms| match call {
            Some(true) => r.call_agree,
            Some(false) => r.call_conflict,
            None => 0.0,
        };
        if l.members == 0 {
            return Base::Done(
                sc.rich
                    .as_ref()
                    .map_or(sc.mismatch, |r| r.placeholder + call(r)),
            );
        }
        let mut p = match (k.op, l.op) {
            (Some(a), Some(b)) if kernel_class(a) == kernel_class(b) => {
                sc.match_score * weight(Some(a))
            }
            (None, Some(_)) if sc.rich.is_some() => sc.rich.as_ref().map_or(0.0, |r| r.unknown_op),
            _ => return Base::Done(sc.mismatch * (weight(k.op) + weight(l.op)) / 2.0),
        };
        let Some(r) = &sc.rich else {
            return Base::Done(p);
        };
        let mut attr = |agree: Option<bool>, conflict: f64| match agree {
            Some(true) => p += r.attr_agree,
            Some(false) => p += conflict,
            None => {}
        };
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
        Base::BeforeTime(p)
    }
}

/// [`Scorer::points`] in hundredths for kernels `ks[i]` against log symbols `ls[j]`, built
/// once per alignment so that the aligner's per-cell score is a table look-up: symbols that
/// agree in every field the score reads (all but time, stream and call) share a class, the
/// pre-time score depends only on (kernel class, log class, do the calls agree), and only pairs
/// with a time term do floating point per cell (the same operations as `points`, so the same
/// bits).
pub struct PairTable {
    /// Per kernel position: its class's first entry; per log position: its class's offset.
    ks: Vec<Side>,
    ls: Vec<Side>,
    /// Per (kernel class, log class, call state): the score, or the pre-time points.
    entries: Vec<Entry>,
    rich: Option<RichTerms>,
    scale_ns: i64,
}

/// What a position contributes to a look-up (one bounds check per side and cell).
#[derive(Debug, Clone, Copy)]
struct Side {
    /// Offset into `entries`.
    at: u32,
    /// Interned call (0 = unknown).
    call: u32,
    /// Kernel time, or the expected kernel time of a log symbol (log time + offset); read
    /// only for classes with a time term, so missing times hold 0.
    time: i64,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    score: i64,
    before_time: f64,
    timed: bool,
}

/// Tables larger than this (or than a few entries per symbol, when building them would cost
/// more than the band's cells) fall back to [`Scorer::points`] per cell.
const MAX_TABLE: usize = 1 << 18;

/// The fields [`Scorer::base`] reads, plus whether a time term applies.
type ClassKey = (
    Option<OpType>,
    Option<model::RedOp>,
    Option<model::DataType>,
    Option<model::Algo>,
    Option<model::Proto>,
    Option<u32>,
    u32,
    bool,
);

impl PairTable {
    /// The table for `sc` over the kernels `ks` and log symbols `ls` (indices into
    /// `sc.kernels` and `sc.log`); `None` when there are too many classes for a table.
    pub fn new(sc: &Scorer<'_>, ks: &[usize], ls: &[usize]) -> Option<PairTable> {
        let timed = sc.time.is_some() && sc.scoring.rich.is_some();
        let key = |s: &Symbol| -> ClassKey {
            (
                s.op,
                s.red_op,
                s.datatype,
                s.algo,
                s.proto,
                s.channels,
                s.members,
                timed && s.time_ns.is_some(),
            )
        };
        let classify = |syms: &[Symbol], idx: &[usize]| {
            let mut ids: FxHashMap<ClassKey, u32> = FxHashMap::default();
            let mut reps: Vec<usize> = Vec::new();
            let cls: Vec<u32> = idx
                .iter()
                .map(|&x| {
                    let n = ids.len() as u32;
                    *ids.entry(key(&syms[x])).or_insert_with(|| {
                        reps.push(x);
                        n
                    })
                })
                .collect();
            (cls, reps)
        };
        let (kc, krep) = classify(sc.kernels, ks);
        let (lc, lrep) = classify(sc.log, ls);
        let nl = lrep.len();
        let size = krep.len().saturating_mul(nl).saturating_mul(3);
        if size > MAX_TABLE.min(16 * (ks.len() + ls.len()) + 4096) {
            return None;
        }
        let mut calls: FxHashMap<(u64, u64), u32> = FxHashMap::default();
        let mut intern = |c: Option<(u64, u64)>| {
            c.map_or(0, |c| {
                let n = calls.len() as u32 + 1;
                *calls.entry(c).or_insert(n)
            })
        };
        let mut entries = Vec::with_capacity(krep.len() * nl * 3);
        for &a in &krep {
            for &b in &lrep {
                let (k, l) = (&sc.kernels[a], &sc.log[b]);
                let time = key(k).7 && key(l).7;
                for call in [None, Some(true), Some(false)] {
                    entries.push(match sc.base(k, l, call) {
                        Base::BeforeTime(p) if time => Entry {
                            score: 0,
                            before_time: p,
                            timed: true,
                        },
                        Base::Done(p) | Base::BeforeTime(p) => Entry {
                            score: centi(p),
                            before_time: 0.0,
                            timed: false,
                        },
                    });
                }
            }
        }
        let kside = ks
            .iter()
            .zip(&kc)
            .map(|(&x, &c)| Side {
                at: c * nl as u32 * 3,
                call: intern(sc.kernels[x].call),
                time: sc.kernels[x].time_ns.unwrap_or(0),
            })
            .collect();
        let lside = ls
            .iter()
            .zip(&lc)
            .map(|(&x, &c)| Side {
                at: c * 3,
                call: intern(sc.log[x].call),
                time: match (sc.log[x].time_ns, sc.time) {
                    // kt − lt − offset ≡ kt − (lt + offset) in wrapping arithmetic.
                    (Some(lt), Some(tm)) => lt.wrapping_add(tm.offset_at(lt)),
                    _ => 0,
                },
            })
            .collect();
        Some(PairTable {
            ks: kside,
            ls: lside,
            entries,
            rich: sc.scoring.rich.clone(),
            scale_ns: sc.time.map_or(1, |t| t.scale_ns),
        })
    }

    /// `centi(points(ks[i], ls[j]))`.
    #[inline(always)]
    pub fn sub(&self, i: usize, j: usize) -> i64 {
        let (k, l) = (&self.ks[i], &self.ls[j]);
        let call = if k.call == 0 || l.call == 0 {
            0
        } else {
            1 + usize::from(k.call != l.call)
        };
        let e = &self.entries[k.at as usize + l.at as usize + call];
        if !e.timed {
            return e.score;
        }
        self.timed(e, k.time.wrapping_sub(l.time))
    }

    /// A score with its time term, `d` = kernel time − log time − offset.
    #[inline]
    fn timed(&self, e: &Entry, d: i64) -> i64 {
        match &self.rich {
            Some(r) => centi(e.before_time + time_term(r, self.scale_ns, d)),
            None => centi(e.before_time),
        }
    }
}

impl Score for Scorer<'_> {
    fn sub(&self, i: usize, j: usize) -> i64 {
        centi(self.points(i, j))
    }
    fn run_bonus(&self, i: usize, j: usize) -> i64 {
        if self.same_op(i, j) && self.same_op(i - 1, j - 1) {
            centi(self.scoring.run_bonus)
        } else {
            0
        }
    }
    fn gap_a(&self) -> GapModel {
        self.scoring.gap_kernel
    }
    fn gap_b(&self) -> GapModel {
        self.scoring.gap_log
    }
    fn key_a(&self, i: usize) -> u64 {
        class_key(self.kernels[i].op)
    }
    fn key_b(&self, j: usize) -> u64 {
        class_key(self.log[j].op)
    }
    /// With a time model, each kernel's nearest log line in time (same op class, within one
    /// scale) is an anchor: this makes the band dense and narrow when timestamps exist.
    fn anchor_hints(&self) -> Option<Vec<(usize, usize)>> {
        let tm = self.time.filter(|t| t.anchors)?;
        let mut lt: Vec<(i64, usize)> = self
            .log
            .iter()
            .enumerate()
            .filter_map(|(j, s)| s.time_ns.map(|t| (t, j)))
            .collect();
        if lt.is_empty() {
            return None;
        }
        lt.sort_unstable();
        let mut out = Vec::new();
        // Once, not per kernel (a median over the knots: it sorted a copy for every kernel).
        let typical = tm.typical_offset();
        for (i, k) in self.kernels.iter().enumerate() {
            let Some(kt) = k.time_ns else { continue };
            // Search by kernel time: the offset is taken at the approximate log time.
            let want = kt - tm.offset_at(kt - typical);
            let p = lt.partition_point(|&(t, _)| t < want);
            let best = [p.wrapping_sub(1), p]
                .into_iter()
                .filter_map(|q| lt.get(q))
                .min_by_key(|&&(t, _)| (t - want).abs());
            if let Some(&(t, j)) = best {
                if (t - want).abs() <= tm.scale_ns && self.same_op(i, j) {
                    out.push((i, j));
                }
            }
        }
        Some(out)
    }
}

/// Aligns bare op-name sequences (kernels `a` against log `b`) with the reference aligner:
/// the thesis' unit tests in one call.
pub fn align_ops(kernels: &[OpType], log: &[OpType], scoring: &Scoring) -> nw::Alignment {
    let k: Vec<Symbol> = kernels.iter().map(|&o| op_symbol(o)).collect();
    let l: Vec<Symbol> = log.iter().map(|&o| op_symbol(o)).collect();
    let sc = Scorer {
        scoring,
        kernels: &k,
        log: &l,
        time: None,
    };
    nw::align_full(&sc, k.len(), l.len())
}

#[cfg(test)]
mod tests {
    //! The five unit tests of the thesis (§4.3.1) with its reported outcomes.
    use super::*;
    use crate::nw::Step;
    use OpType::{
        AllGather as AG, AllReduce as AR, Broadcast as BC, Recv, ReduceScatter as RS, Send,
    };

    fn counts(k: &[OpType], l: &[OpType], al: &nw::Alignment) -> (usize, usize, usize) {
        let (mut m, mut mm, mut g) = (0, 0, 0);
        for s in &al.steps {
            match *s {
                Step::Pair(i, j) if kernel_class(k[i]) == kernel_class(l[j]) => m += 1,
                Step::Pair(..) => mm += 1,
                _ => g += 1,
            }
        }
        (m, mm, g)
    }

    #[test]
    fn asymmetric_penalty() {
        let (k, l) = ([AR, AR, BC, AR], [AR, AR, Send, AR]);
        let al = align_ops(&k, &l, &Scoring::thesis());
        assert_eq!(counts(&k, &l, &al), (3, 0, 2));
    }

    #[test]
    fn false_positive_prevention() {
        let k = [AR, AR, BC, RS];
        let l = [AR, AR, AR, RS, AR, AR, BC, RS, AR, BC, AR, RS];
        let al = align_ops(&k, &l, &Scoring::thesis());
        let pairs = al.pairs();
        let mid = pairs.iter().filter(|&&(_, j)| (4..8).contains(&j)).count();
        assert_eq!(counts(&k, &l, &al).1, 0);
        assert!(mid * 4 >= pairs.len() * 3, "{pairs:?}");
    }

    #[test]
    fn consecutive_duplication() {
        let k = [AR, BC, AG, RS, AR];
        let l: Vec<OpType> = k.iter().flat_map(|&o| [o, o]).collect();
        let al = align_ops(&k, &l, &Scoring::thesis());
        let (m, mm, _) = counts(&k, &l, &al);
        assert_eq!((m, mm), (5, 0));
        let skipped = al
            .steps
            .iter()
            .filter(|s| matches!(s, Step::GapB(_)))
            .count();
        assert_eq!(skipped * 2, l.len());
    }

    #[test]
    fn sequence_bonus_runs() {
        let s = [AR, AR, AR, AR, AR, BC, RS, RS, RS];
        let al = align_ops(&s, &s, &Scoring::thesis());
        assert_eq!(al.pairs().len(), s.len());
        assert!(al.pairs().iter().all(|&(i, j)| i == j));
    }

    #[test]
    fn adaptive_gap_runs() {
        let k = [AR; 5];
        let l = [AR, BC, Send, Recv, AR, AR, AR];
        let al = align_ops(&k, &l, &Scoring::thesis());
        assert!(al.longest_gap_run() <= 2, "{:?}", al.steps);
        let (m, mm, _) = counts(&k, &l, &al);
        assert_eq!((m, mm), (4, 0), "{:?}", al.steps);
    }

    /// `vote_offset` before the sorted buckets, verbatim.
    fn vote_offset_ref(
        samples: &[(i64, u64)],
        by_class: &FxHashMap<u64, Vec<i64>>,
        width: i64,
        near: Option<(i64, i64)>,
    ) -> Option<(i64, i64)> {
        let diffs = |keep: &mut dyn FnMut(i64)| {
            for &(lt, c) in samples {
                let ks = by_class.get(&c).map(Vec::as_slice).unwrap_or(&[]);
                let (from, to) = match near {
                    Some((centre, r)) => (
                        ks.partition_point(|&k| k < lt + centre - r),
                        ks.partition_point(|&k| k <= lt + centre + r),
                    ),
                    None => (0, ks.len()),
                };
                for &kt in &ks[from..to] {
                    keep(kt - lt);
                }
            }
        };
        let mut votes: FxHashMap<i64, u32> = FxHashMap::default();
        diffs(&mut |d| *votes.entry(d.div_euclid(width)).or_default() += 1);
        let near3 = |b: i64| {
            (b - 1..=b + 1)
                .map(|x| votes.get(&x).copied().unwrap_or(0))
                .sum::<u32>()
        };
        let (best, n) = votes
            .keys()
            .map(|&b| (b, near3(b)))
            .max_by(|x, y| x.1.cmp(&y.1).then(y.0.cmp(&x.0)))?;
        if n < 3 {
            return None;
        }
        let mut d: Vec<i64> = Vec::new();
        diffs(&mut |x| {
            if x.div_euclid(width).abs_diff(best) <= 1 {
                d.push(x);
            }
        });
        let m = median(&mut d);
        let mut dev: Vec<i64> = d.iter().map(|x| (x - m).abs()).collect();
        Some((m, median(&mut dev)))
    }

    #[test]
    fn vote_offset_matches_the_reference() {
        let mut x = 17u64;
        let mut below = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut found = 0;
        for round in 0..300 {
            let classes = 1 + below(3);
            let mut by_class: FxHashMap<u64, Vec<i64>> = FxHashMap::default();
            let offset = below(1_000_000) as i64 - 500_000;
            let kernels = 1 + below(400);
            for t in 0..kernels {
                let c = below(classes);
                let spread = 1 + below(50_000);
                let jitter = below(spread) as i64;
                by_class
                    .entry(c)
                    .or_default()
                    .push(t as i64 * 100_000 + offset + jitter);
            }
            for v in by_class.values_mut() {
                v.sort_unstable();
            }
            let samples: Vec<(i64, u64)> = (0..1 + below(64))
                .map(|t| {
                    (
                        t as i64 * 100_000 * (1 + below(3) as i64),
                        below(classes + 1),
                    )
                })
                .collect();
            let width = 1 + below(20_000) as i64;
            let near = (round % 2 == 0)
                .then(|| (offset + below(20_000) as i64, 1 + below(100_000) as i64));
            let got = vote_offset(&samples, &by_class, width, near);
            assert_eq!(
                got,
                vote_offset_ref(&samples, &by_class, width, near),
                "round {round}"
            );
            found += usize::from(got.is_some());
        }
        assert!(found > 100, "{found} offsets");
    }

    #[test]
    fn time_model_is_robust() {
        // 1000 pairs one millisecond apart, 10 ppm drift, 10 % wild pairs.
        let mut d: Vec<(i64, i64)> = (0..1000i64)
            .map(|x| (x * 1_000_000, 5_000_000 + x * 10 + (x * 7919) % 3000))
            .collect();
        for x in (0..1000).step_by(10) {
            d[x].1 += 700_000;
        }
        let tm = TimeModel::fit(d, 1000).unwrap();
        for x in [0i64, 250, 500, 999] {
            let want = 5_000_000 + x * 10 + 1500;
            assert!((tm.offset_at(x * 1_000_000) - want).abs() < 1_000, "{x}");
        }
        assert!((tm.drift_ppm().unwrap() - 10.0).abs() < 1.0);
        assert!(tm.scale_ns < 20_000);
    }
}
