//! Clock synchronisation from matched collective instances (thesis §4.2.4, extended with drift).
//!
//! Why: every node stamps kernels with its own clock, so cross-node timelines are shifted (tens
//! of ms) and slowly diverge (ppm). A collective cannot complete before every member arrives, so
//! members' starts of the same instance are close in true time; their differences measure clock
//! offsets. The thesis' estimator: offset of rank r = median over instances i of
//! (median over ranks of start_i − start_{r,i}), normalised to rank 0. It needs > 10 collectives
//! and assumes no drift. We also fit drift: the same differences, regressed linearly on time,
//! have slope = relative clock rate (per node when node grouping is given, since ranks of one
//! node share a clock).
//!
//! Sign convention (as the generator's truth): a rank's clock reads
//! `t_rank = t_ref_clock + offset_ns + drift_ppm·1e−6·(t − reference_ns)`, i.e. a positive offset
//! means the rank's clock is ahead of rank 0's. [`ClockSync::to_sync`] undoes it.

use std::collections::BTreeMap;

/// Below this many instances a rank's drift is not fitted (thesis: > 10 collectives).
pub const MIN_INSTANCES_FOR_DRIFT: usize = 10;

/// One rank's clock relative to the reference rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankClock {
    /// How far this rank's clock is ahead of the reference rank's at `reference_ns`.
    pub offset_ns: f64,
    /// How much faster this rank's clock runs, parts per million.
    pub drift_ppm: f64,
    /// Instances the estimate used.
    pub samples: usize,
}

/// Offsets and drifts of every rank seen, relative to the lowest rank.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClockSync {
    pub reference_rank: u32,
    /// The time (in the reference rank's clock) at which offsets are given.
    pub reference_ns: i64,
    pub ranks: BTreeMap<u32, RankClock>,
}

impl ClockSync {
    /// Maps a time read on `rank`'s clock to the reference rank's clock. Ranks with no estimate
    /// are returned unchanged.
    pub fn to_sync(&self, rank: u32, t_ns: i64) -> i64 {
        let Some(c) = self.ranks.get(&rank) else {
            return t_ns;
        };
        let d = c.drift_ppm * 1e-6;
        // t = ref + off + d·(x − reference) with x the reference-clock time: solve for x.
        let x = (t_ns as f64 - c.offset_ns + d * self.reference_ns as f64) / (1.0 + d);
        x.round() as i64
    }
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Least-squares slope of y on x; `None` when x has no spread.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// Estimates every rank's clock from matched instances. `instances[i]` holds (global rank,
/// start_ns on that rank's clock) of one collective instance. `node_of` (rank → node) makes
/// ranks of one node share one drift, fitted on all their samples.
pub fn synchronise(
    instances: &[Vec<(u32, i64)>],
    node_of: Option<&BTreeMap<u32, u32>>,
) -> ClockSync {
    // Per rank: (x = instance median time, y = median − own start), the thesis' differences.
    let mut diffs: BTreeMap<u32, Vec<(f64, f64)>> = BTreeMap::new();
    let mut reference_ns: Option<i64> = None;
    for inst in instances {
        if inst.len() < 2 {
            continue;
        }
        let mut starts: Vec<f64> = inst.iter().map(|p| p.1 as f64).collect();
        let Some(m) = median(&mut starts) else {
            continue;
        };
        reference_ns = Some(reference_ns.map_or(m as i64, |r: i64| r.min(m as i64)));
        for &(r, t) in inst {
            diffs.entry(r).or_default().push((m, m - t as f64));
        }
    }
    let Some(reference_ns) = reference_ns else {
        return ClockSync::default();
    };
    let x0 = reference_ns as f64;
    // Drift of each correction (slope of y on x), per rank or pooled per node.
    let mut slopes: BTreeMap<u32, f64> = BTreeMap::new();
    for (r, pts) in &diffs {
        if pts.len() >= MIN_INSTANCES_FOR_DRIFT {
            if let Some(s) = slope(pts) {
                slopes.insert(*r, s);
            }
        }
    }
    if let Some(nodes) = node_of {
        // Pool: remove each rank's own median level, then fit one slope on the node's points.
        let mut pooled: BTreeMap<u32, Vec<(f64, f64)>> = BTreeMap::new();
        for (r, pts) in &diffs {
            let Some(n) = nodes.get(r) else { continue };
            let mut ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
            let level = median(&mut ys).unwrap_or(0.0);
            pooled
                .entry(*n)
                .or_default()
                .extend(pts.iter().map(|p| (p.0, p.1 - level)));
        }
        for (r, pts) in &diffs {
            let Some(n) = nodes.get(r) else { continue };
            let node_pts = &pooled[n];
            if pts.len() >= MIN_INSTANCES_FOR_DRIFT {
                if let Some(s) = slope(node_pts) {
                    slopes.insert(*r, s);
                }
            }
        }
    }
    // Correction of rank r at x: c_r(x) = a_r + b_r·(x − x0); the thesis' median for a_r.
    let mut corr: BTreeMap<u32, (f64, f64, usize)> = BTreeMap::new();
    for (r, pts) in &diffs {
        let b = slopes.get(r).copied().unwrap_or(0.0);
        let mut level: Vec<f64> = pts.iter().map(|p| p.1 - b * (p.0 - x0)).collect();
        let a = median(&mut level).unwrap_or(0.0);
        corr.insert(*r, (a, b, pts.len()));
    }
    let Some((&reference_rank, &(a0, b0, _))) = corr.iter().next() else {
        return ClockSync::default();
    };
    // Normalised to the reference rank; the clock offset is minus the correction.
    let ranks = corr
        .iter()
        .map(|(&r, &(a, b, n))| {
            (
                r,
                RankClock {
                    offset_ns: -(a - a0),
                    drift_ppm: -(b - b0) * 1e6,
                    samples: n,
                },
            )
        })
        .collect();
    ClockSync {
        reference_rank,
        reference_ns,
        ranks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic noise in [−1, 1) (a small LCG: no dependency, reproducible).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        }
    }

    fn observe(
        offsets_ns: &[f64],
        drifts_ppm: &[f64],
        n: usize,
        noise_ns: f64,
    ) -> (Vec<Vec<(u32, i64)>>, i64) {
        let mut rng = Lcg(7);
        let t0 = 1_000_000_000_000i64;
        let mut out = Vec::new();
        for i in 0..n {
            // one collective every ~2 s, members arriving within ±noise
            let t = t0 + i as i64 * 2_000_000_000 + (rng.next() * 1e8) as i64;
            let inst = offsets_ns
                .iter()
                .zip(drifts_ppm)
                .enumerate()
                .map(|(r, (o, d))| {
                    let arrive = t as f64 + rng.next() * noise_ns;
                    let read = arrive + o + d * 1e-6 * (arrive - t0 as f64);
                    (r as u32, read.round() as i64)
                })
                .collect();
            out.push(inst);
        }
        (out, t0)
    }

    #[test]
    fn recovers_offsets_thesis_no_drift() {
        let off = [0.0, 50e6, -30e6];
        let (obs, _) = observe(&off, &[0.0; 3], 20, 100.0);
        let s = synchronise(&obs, None);
        for (r, o) in off.iter().enumerate() {
            let c = s.ranks[&(r as u32)];
            assert!((c.offset_ns - o).abs() < 200.0, "rank {r}: {}", c.offset_ns);
        }
    }

    #[test]
    fn recovers_offsets_and_drift() {
        let off = [0.0, 50e6, -30e6];
        let drift = [0.0, 3.0, -2.0];
        let (obs, t0) = observe(&off, &drift, 60, 400.0);
        let s = synchronise(&obs, None);
        for r in 0..3 {
            let c = s.ranks[&(r as u32)];
            // offsets are given at reference_ns, the first instance's median time
            let expect = off[r] + drift[r] * 1e-6 * (s.reference_ns - t0) as f64;
            assert!((c.offset_ns - expect).abs() < 1_000.0, "rank {r}: {c:?}");
            assert!((c.drift_ppm - drift[r]).abs() < 1.0, "rank {r}: {c:?}");
        }
        // Synchronised times of one instance agree within the noise.
        let last = obs.last().unwrap();
        let synced: Vec<i64> = last.iter().map(|&(r, t)| s.to_sync(r, t)).collect();
        let spread = synced.iter().max().unwrap() - synced.iter().min().unwrap();
        assert!(spread < 2_000, "spread {spread}");
    }

    #[test]
    fn node_grouping_shares_drift() {
        let off = [0.0, 10.0, 50e6, 50e6 + 20.0];
        let drift = [0.0, 0.0, 5.0, 5.0];
        let (obs, _) = observe(&off, &drift, 50, 300.0);
        let nodes: BTreeMap<u32, u32> = [(0, 0), (1, 0), (2, 1), (3, 1)].into_iter().collect();
        let s = synchronise(&obs, Some(&nodes));
        assert!((s.ranks[&2].drift_ppm - 5.0).abs() < 1.0);
        assert_eq!(s.ranks[&2].drift_ppm, s.ranks[&3].drift_ppm);
    }
}
