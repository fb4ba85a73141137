//! Per signature: counts, bytes, median and p95 time, bus bandwidth and efficiency, and the
//! tuning lines' choices, base → new, with the time ratio, whether it is significant, the
//! impact, and both runs' distributions on shared bins (what the page draws side by side).

use crate::diff::profile::{RunProfile, SigKey, SignatureProfile};
use crate::diff::stats::{self, TestSettings};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What counts and times are divided by so that runs of different sizes compare.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Basis {
    /// `rank` or `rank and iteration`.
    pub per: String,
    pub base_divisor: f64,
    pub new_divisor: f64,
}

impl Basis {
    /// Per rank seen (a run's files may cover part of its world: one node's logs, two ranks'
    /// traces), the world size where no rank is; per iteration too when both runs count their
    /// iterations.
    pub fn of(base: &RunProfile, new: &RunProfile) -> Basis {
        let ranks = |p: &RunProfile| {
            f64::from(match p.size.ranks {
                0 => p.size.world_size.max(1),
                r => r,
            })
        };
        let (wb, wn) = (ranks(base), ranks(new));
        match (base.size.iterations, new.size.iterations) {
            (Some(ib), Some(inew)) if ib > 0 && inew > 0 => Basis {
                per: "rank and iteration".into(),
                base_divisor: wb * f64::from(ib),
                new_divisor: wn * f64::from(inew),
            },
            _ => Basis {
                per: "rank".into(),
                base_divisor: wb,
                new_divisor: wn,
            },
        }
    }
}

/// Either run's side of a signature.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SideStats {
    pub count: u64,
    pub total_bytes: u64,
    pub ranks: u32,
    /// Kernel durations measured.
    pub timed: u64,
    pub median_ns: Option<f64>,
    pub p95_ns: Option<f64>,
    pub bus_bw_gbps: Option<f64>,
    pub bus_efficiency: Option<f64>,
    /// The tuning lines' most common choices.
    pub algorithm: Option<String>,
    pub protocol: Option<String>,
    pub channels: Option<u32>,
}

impl SideStats {
    fn of(s: Option<&SignatureProfile>) -> SideStats {
        let Some(s) = s else {
            return SideStats::default();
        };
        SideStats {
            count: s.count,
            total_bytes: s.total_bytes,
            ranks: s.ranks,
            timed: s.timed,
            median_ns: s.median_ns,
            p95_ns: s.p95_ns,
            bus_bw_gbps: s.bus_bw_gbps,
            bus_efficiency: s.bus_efficiency,
            algorithm: s.dominant_algorithm().map(|a| a.0.to_string()),
            protocol: s.dominant_protocol().map(|a| a.0.to_string()),
            channels: s.dominant_channels().map(|c| c.0),
        }
    }

    /// Its kernels' time in the basis: median × count / divisor (0 without times).
    fn time(&self, divisor: f64) -> f64 {
        self.median_ns.unwrap_or(0.0) * self.count as f64 / divisor
    }
}

/// In which run a signature is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Presence {
    Both,
    Base,
    New,
}

/// Both runs' durations counted on the same log-spaced bins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// Bin edges, ns (one more than the counts).
    pub edges_ns: Vec<f64>,
    pub base: Vec<u64>,
    pub new: Vec<u64>,
}

/// Bins of a [`Distribution`].
const BINS: usize = 24;

/// One signature compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignatureDiff {
    /// The base run's key (the new run's when only it has the signature).
    #[serde(flatten)]
    pub key: SigKey,
    /// The new run's message size when it differs within [`SIZE_TOLERANCE`].
    pub new_bytes: Option<u64>,
    pub base: SideStats,
    pub new: SideStats,
    pub presence: Presence,
    /// median(new) / median(base).
    pub time_ratio: Option<f64>,
    /// By the comparison's test (see `test` beside the list).
    pub significant: bool,
    pub interval: Option<[f64; 2]>,
    pub p_value: Option<f64>,
    pub prob_new_slower: Option<f64>,
    /// Operations per basis unit, new / base.
    pub count_ratio: Option<f64>,
    pub bus_bw_ratio: Option<f64>,
    /// The change of its kernels' time per basis unit (median × count), new − base, ns.
    pub impact_ns: f64,
    pub distribution: Option<Distribution>,
}

impl SignatureDiff {
    /// The key as the new run has it.
    pub fn new_key(&self) -> SigKey {
        SigKey {
            bytes: self.new_bytes.unwrap_or(self.key.bytes),
            ..self.key.clone()
        }
    }

    /// The count changed by more than 1 % per basis unit (the schedule, not the clock).
    pub fn count_changed(&self) -> bool {
        self.count_ratio.is_some_and(|r| (r - 1.0).abs() > 0.01)
    }
}

/// How far apart two message sizes may be and still be one signature: a layout change pads
/// buffers differently (Megatron pads the gradient buffer to a multiple of the data-parallel
/// size), so the same bucket is a few elements longer in one run.
pub const SIZE_TOLERANCE: f64 = 0.01;

/// The signatures of both runs paired: equal keys, then, among those left, equal parallelism,
/// operation and datatype with sizes within [`SIZE_TOLERANCE`] (closest first); then a
/// signature whose parallelism one run could not tell (`unknown`: its files cover too little
/// of the world to infer the layout) with the one signature of the other run that agrees in
/// everything else, where exactly one does; the rest alone.
pub fn join<'a>(
    base: &'a RunProfile,
    new: &'a RunProfile,
) -> Vec<(Option<&'a SignatureProfile>, Option<&'a SignatureProfile>)> {
    let mut joined: BTreeMap<&SigKey, (Option<&SignatureProfile>, Option<&SignatureProfile>)> =
        BTreeMap::new();
    for s in &base.signatures {
        joined.entry(&s.key).or_default().0 = Some(s);
    }
    for s in &new.signatures {
        joined.entry(&s.key).or_default().1 = Some(s);
    }
    let mut out = Vec::new();
    // Unpaired, by (parallelism, operation, datatype): base's and new's.
    type Family<'a> = (Vec<&'a SignatureProfile>, Vec<&'a SignatureProfile>);
    let mut alone: BTreeMap<(&str, &str, &str), Family> = BTreeMap::new();
    for (key, pair) in joined {
        let family = (
            key.parallelism.as_str(),
            key.op.as_str(),
            key.dtype.as_str(),
        );
        match pair {
            (Some(b), None) => alone.entry(family).or_default().0.push(b),
            (None, Some(n)) => alone.entry(family).or_default().1.push(n),
            pair => out.push(pair),
        }
    }
    for (_, (bs, mut ns)) in alone {
        for b in bs {
            let close = ns
                .iter()
                .enumerate()
                .map(|(i, n)| (i, (n.key.bytes as f64 - b.key.bytes as f64).abs()))
                .filter(|(_, d)| *d <= SIZE_TOLERANCE * b.key.bytes as f64)
                .min_by(|x, y| x.1.total_cmp(&y.1));
            match close {
                Some((i, _)) => out.push((Some(b), Some(ns.remove(i)))),
                None => out.push((Some(b), None)),
            }
        }
        out.extend(ns.into_iter().map(|n| (None, Some(n))));
    }
    pair_unknown_parallelism(out)
}

/// The last pass of [`join`]: an `unknown`-parallelism signature left alone in one run paired
/// with the only signature left alone in the other run of the same operation, datatype, kind
/// and size (within [`SIZE_TOLERANCE`]); ambiguous ones (a TP and a DP AllReduce of one size)
/// stay alone rather than be guessed.
fn pair_unknown_parallelism<'a>(
    pairs: Vec<(Option<&'a SignatureProfile>, Option<&'a SignatureProfile>)>,
) -> Vec<(Option<&'a SignatureProfile>, Option<&'a SignatureProfile>)> {
    let alike = |x: &SigKey, y: &SigKey| {
        (x.parallelism == "unknown") != (y.parallelism == "unknown")
            && x.op == y.op
            && x.dtype == y.dtype
            && x.kernels_only == y.kernels_only
            && (x.bytes as f64 - y.bytes as f64).abs() <= SIZE_TOLERANCE * x.bytes as f64
    };
    let (mut bs, mut ns, mut out) = (Vec::new(), Vec::new(), Vec::new());
    for p in pairs {
        match p {
            (Some(b), None) => bs.push(Some(b)),
            (None, Some(n)) => ns.push(Some(n)),
            pair => out.push(pair),
        }
    }
    for bi in 0..bs.len() {
        let Some(b) = bs[bi] else { continue };
        let in_new: Vec<usize> = (0..ns.len())
            .filter(|&i| ns[i].is_some_and(|n| alike(&b.key, &n.key)))
            .collect();
        let [ni] = in_new[..] else { continue };
        let n = ns[ni].expect("a candidate");
        let in_base = bs
            .iter()
            .flatten()
            .filter(|x| alike(&x.key, &n.key))
            .count();
        if in_base == 1 {
            out.push((Some(b), Some(n)));
            bs[bi] = None;
            ns[ni] = None;
        }
    }
    out.extend(bs.into_iter().flatten().map(|b| (Some(b), None)));
    out.extend(ns.into_iter().flatten().map(|n| (None, Some(n))));
    out
}

/// Every signature of either run compared, largest |impact| first (then largest change of
/// bytes, for runs without kernel times).
pub fn compare(
    base: &RunProfile,
    new: &RunProfile,
    basis: &Basis,
    test: &TestSettings,
) -> Vec<SignatureDiff> {
    let mut out: Vec<SignatureDiff> = join(base, new)
        .into_iter()
        .map(|(b, n)| one(b, n, basis, test))
        .collect();
    let bytes_change = |d: &SignatureDiff| {
        (d.new.total_bytes as f64 / basis.new_divisor
            - d.base.total_bytes as f64 / basis.base_divisor)
            .abs()
    };
    out.sort_by(|a, b| {
        b.impact_ns
            .abs()
            .total_cmp(&a.impact_ns.abs())
            .then(bytes_change(b).total_cmp(&bytes_change(a)))
            .then(a.key.cmp(&b.key))
    });
    out
}

fn one(
    b: Option<&SignatureProfile>,
    n: Option<&SignatureProfile>,
    basis: &Basis,
    test: &TestSettings,
) -> SignatureDiff {
    let key = b
        .or(n)
        .map(|s| &s.key)
        .expect("a signature of one run at least");
    let new_bytes = match (b, n) {
        (Some(b), Some(n)) if b.key.bytes != n.key.bytes => Some(n.key.bytes),
        _ => None,
    };
    let (bs, ns) = (SideStats::of(b), SideStats::of(n));
    let presence = match (b, n) {
        (Some(_), Some(_)) => Presence::Both,
        (Some(_), None) => Presence::Base,
        _ => Presence::New,
    };
    let (mut bd, mut nd) = (
        b.map(SignatureProfile::durations).unwrap_or_default(),
        n.map(SignatureProfile::durations).unwrap_or_default(),
    );
    let distribution = distribution(&bd, &nd);
    let seed = stats::stable_hash(key.text().as_bytes());
    let verdict = stats::compare(&mut bd, &mut nd, test, seed);
    let per = |count: u64, d: f64| count as f64 / d;
    let count_ratio = (bs.count > 0 && ns.count > 0)
        .then(|| per(ns.count, basis.new_divisor) / per(bs.count, basis.base_divisor));
    let bus_bw_ratio = match (bs.bus_bw_gbps, ns.bus_bw_gbps) {
        (Some(x), Some(y)) if x > 0.0 => Some(y / x),
        _ => None,
    };
    SignatureDiff {
        key: key.clone(),
        new_bytes,
        impact_ns: ns.time(basis.new_divisor) - bs.time(basis.base_divisor),
        base: bs,
        new: ns,
        presence,
        time_ratio: verdict.map(|v| v.ratio),
        significant: verdict.is_some_and(|v| v.significant),
        interval: verdict.and_then(|v| v.interval),
        p_value: verdict.and_then(|v| v.p_value),
        prob_new_slower: verdict.and_then(|v| v.prob_new_slower),
        count_ratio,
        bus_bw_ratio,
        distribution,
    }
}

/// Both sides on [`BINS`] log-spaced bins from the smaller minimum to the larger maximum.
fn distribution(base: &[f64], new: &[f64]) -> Option<Distribution> {
    let positive = || base.iter().chain(new).copied().filter(|&d| d > 0.0);
    let lo = positive().reduce(f64::min)?;
    let hi = positive().reduce(f64::max)?;
    let (llo, lhi) = (lo.ln(), (hi * (1.0 + 1e-9)).ln().max(lo.ln() + 1e-9));
    let width = (lhi - llo) / BINS as f64;
    let edges_ns = (0..=BINS).map(|i| (llo + width * i as f64).exp()).collect();
    let count = |v: &[f64]| {
        let mut c = vec![0u64; BINS];
        for &d in v.iter().filter(|&&d| d > 0.0) {
            let i = ((d.ln() - llo) / width) as usize;
            c[i.min(BINS - 1)] += 1;
        }
        c
    };
    Some(Distribution {
        edges_ns,
        base: count(base),
        new: count(new),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_share_bins_and_keep_every_sample() {
        let d = distribution(&[10.0, 20.0, 40.0], &[80.0, 160.0]).unwrap();
        assert_eq!(d.edges_ns.len(), BINS + 1);
        assert!((d.edges_ns[0] - 10.0).abs() < 1e-6);
        assert!(d.edges_ns[BINS] >= 160.0);
        assert_eq!(d.base.iter().sum::<u64>(), 3);
        assert_eq!(d.new.iter().sum::<u64>(), 2);
        // The base's samples sit below the new's.
        let last_base = d.base.iter().rposition(|&c| c > 0).unwrap();
        let first_new = d.new.iter().position(|&c| c > 0).unwrap();
        assert!(last_base < first_new);
        assert!(distribution(&[], &[]).is_none());
        assert_eq!(
            distribution(&[5.0], &[5.0])
                .unwrap()
                .base
                .iter()
                .sum::<u64>(),
            1
        );
    }
}
