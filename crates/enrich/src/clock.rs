//! Clock synchronisation from matched collective instances (thesis §4.2.4, extended with drift).
//!
//! Why: every node stamps kernels with its own clock, so cross-node timelines are shifted (tens
//! of ms) and slowly diverge (ppm). A collective cannot complete before every member arrives, so
//! members' starts of the same instance are close in true time; their differences measure clock
//! offsets. The thesis' estimator: offset of rank r = median over instances i of
//! (median over ranks of start_i − start_{r,i}), normalised to rank 0. It needs > 10 collectives
//! and assumes no drift. We also fit drift: the same differences, regressed linearly on time,
//! have slope = relative clock rate (per node when node grouping is given, since ranks of one
//! node share a clock). Medians are taken per pair of ranks and combined by least squares, so
//! sub-communicators (TP pairs inside a node) do not bias the answer (see [`synchronise`]).
//!
//! Sign convention (as the generator's truth): a rank's clock reads
//! `t_rank = t_ref_clock + offset_ns + drift_ppm·1e−6·(t − reference_ns)`, i.e. a positive offset
//! means the rank's clock is ahead of rank 0's. [`ClockSync::to_sync`] undoes it.

use rustc_hash::FxHashMap;
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
        // t = x + off + d·(x − reference) with x the reference-clock time: solve for x, from
        // the reference (an f64 holds epoch nanoseconds, as profiler traces give, only to 256 ns;
        // their distance to the reference exactly).
        let r = self.reference_ns;
        let since = t_ns.saturating_sub(r) as f64;
        r.saturating_add(((since - c.offset_ns) / (1.0 + d)).round() as i64)
    }
}

/// The median of `v` (sorted in place); `None` when empty.
pub fn median(v: &mut [f64]) -> Option<f64> {
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

/// Least-squares slope of y on x; `None` when x has no spread or the slope is not significant
/// (|slope| < 3 standard errors: a short run cannot show a few ppm under µs-level jitter, and
/// then the thesis' no-drift assumption is the better answer). The points are a pair's inliers
/// ([`consensus`]), so least squares is safe.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    least_squares(points)
}

/// How far (ns) a pair's difference may stray from its line and still count: kernel ends of one
/// collective jitter by about a microsecond on each side.
const INLIER_TOLERANCE_NS: f64 = 5_000.0;
/// Candidate lines tried per pair.
const CONSENSUS_TRIALS: usize = 96;

/// The points of a pair that lie on the line most of them agree on (RANSAC with deterministic
/// sampling; candidate lines through two samples, and level lines through one).
///
/// Why not a median or least squares: when the aligner slips on one rank for a stretch of the
/// run, that stretch's samples differ by whole operations (milliseconds); they can be half of a
/// pair's samples and spread over several levels, which breaks a median and any least-squares
/// fit, while the right samples still form the largest set on one line.
fn consensus(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    if points.len() < 3 {
        return points.to_vec();
    }
    let on_line = |b: f64, a: f64, p: &(f64, f64)| (p.1 - a - b * p.0).abs() <= INLIER_TOLERANCE_NS;
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ points.len() as u64;
    let mut pick = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize % points.len()
    };
    // Lines are scored on at most ~2 000 evenly spread samples: the count only ranks candidates.
    let step = points.len().div_ceil(2_000);
    let scored: Vec<(f64, f64)> = points.iter().copied().step_by(step).collect();
    let (mut best, mut best_line) = (0usize, (0.0, points[0].1));
    for _ in 0..CONSENSUS_TRIALS {
        let (p, q) = (points[pick()], points[pick()]);
        let mut candidates = vec![(0.0, p.1)];
        if q.0 != p.0 {
            let b = (q.1 - p.1) / (q.0 - p.0);
            candidates.push((b, p.1 - b * p.0));
        }
        for (b, a) in candidates {
            let n = scored.iter().filter(|p| on_line(b, a, p)).count();
            if n > best {
                best = n;
                best_line = (b, a);
            }
        }
    }
    let (b, a) = best_line;
    points
        .iter()
        .copied()
        .filter(|p| on_line(b, a, p))
        .collect()
}

/// Least-squares slope, if significant.
fn least_squares(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 3 {
        return None;
    }
    let (b, _, se) = fit(points)?;
    (b.abs() >= 3.0 * se).then_some(b)
}

/// Least-squares (slope, intercept, standard error of the slope).
fn fit(points: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = sxy / sxx;
    let sse: f64 = points
        .iter()
        .map(|p| (p.1 - my - b * (p.0 - mx)).powi(2))
        .sum();
    let se = if n > 2.0 {
        (sse / (n - 2.0) / sxx).sqrt()
    } else {
        f64::INFINITY
    };
    Some((b, my - b * mx, se))
}

/// An edge whose pair disagrees with the solution by more than this (ns) is an outlier.
const EDGE_TOLERANCE_NS: f64 = 2_000.0;

/// [`solve`] for offsets, then again without the edges that disagree with the answer.
///
/// Why: a pair with few shared instances, most of them matched to the wrong instance, gives a
/// wrong difference that least squares would spread over every rank. Each rank keeps its
/// best-supported edge, so no rank is cut off.
fn solve_robust(
    ranks: &[u32],
    reference: u32,
    edges: &[(u32, u32, f64, f64)],
) -> BTreeMap<u32, f64> {
    let mut v = solve(ranks, reference, edges, 1e-3);
    for _ in 0..3 {
        let residual = |e: &(u32, u32, f64, f64)| (v[&e.0] - v[&e.1] - e.2).abs();
        let mut keep: Vec<bool> = edges
            .iter()
            .map(|e| residual(e) <= EDGE_TOLERANCE_NS)
            .collect();
        if keep.iter().all(|&k| k) {
            break;
        }
        for &r in ranks {
            let touches = |e: &(u32, u32, f64, f64)| e.0 == r || e.1 == r;
            if !edges.iter().zip(&keep).any(|(e, &k)| k && touches(e)) {
                if let Some(best) = (0..edges.len())
                    .filter(|&i| touches(&edges[i]))
                    .max_by(|&a, &b| edges[a].3.total_cmp(&edges[b].3))
                {
                    keep[best] = true;
                }
            }
        }
        reconnect(ranks, reference, edges, &mut keep);
        let kept: Vec<(u32, u32, f64, f64)> = edges
            .iter()
            .zip(&keep)
            .filter(|(_, &k)| k)
            .map(|(e, _)| *e)
            .collect();
        v = solve(ranks, reference, &kept, 1e-3);
    }
    v
}

/// Keeps, besides `keep`, the best-supported edge joining each group of ranks that the kept
/// edges leave apart from the reference's to the rest, until every rank the edges reach is
/// joined to the reference. Why: each rank keeping its own best edge can leave two ranks that
/// share many instances (a TP pair on another node) holding only each other, and a group cut
/// off from the reference is solved as if its clock were the reference's.
fn reconnect(ranks: &[u32], reference: u32, edges: &[(u32, u32, f64, f64)], keep: &mut [bool]) {
    loop {
        let mut parent: BTreeMap<u32, u32> = ranks.iter().map(|&r| (r, r)).collect();
        fn root(parent: &mut BTreeMap<u32, u32>, x: u32) -> u32 {
            let mut r = x;
            while parent[&r] != r {
                r = parent[&r];
            }
            parent.insert(x, r);
            r
        }
        for (e, _) in edges.iter().zip(keep.iter()).filter(|(_, &k)| k) {
            let (a, b) = (root(&mut parent, e.0), root(&mut parent, e.1));
            if a != b {
                parent.insert(a.max(b), a.min(b));
            }
        }
        let home = root(&mut parent, reference);
        // The best unkept edge between the reference's group and another.
        let best = (0..edges.len())
            .filter(|&i| !keep[i])
            .filter(|&i| {
                let (a, b) = (root(&mut parent, edges[i].0), root(&mut parent, edges[i].1));
                a != b && (a == home || b == home)
            })
            .max_by(|&a, &b| edges[a].3.total_cmp(&edges[b].3));
        match best {
            Some(i) => keep[i] = true,
            None => return,
        }
    }
}

/// Gauss–Seidel solution of `v_r − v_q ≈ diff` over weighted edges (r, q, diff, weight), with
/// `v_reference = 0`, iterated until no value moves by more than `tol`. Ranks not connected to
/// the reference stay 0.
fn solve(
    ranks: &[u32],
    reference: u32,
    edges: &[(u32, u32, f64, f64)],
    tol: f64,
) -> BTreeMap<u32, f64> {
    let mut v: BTreeMap<u32, f64> = ranks.iter().map(|&r| (r, 0.0)).collect();
    let mut adj: BTreeMap<u32, Vec<(u32, f64, f64)>> = BTreeMap::new();
    for &(r, q, d, w) in edges {
        adj.entry(r).or_default().push((q, d, w));
        adj.entry(q).or_default().push((r, -d, w));
    }
    for _ in 0..20_000 {
        let mut change = 0.0f64;
        for (&r, nb) in &adj {
            if r == reference {
                continue;
            }
            let (mut num, mut den) = (0.0, 0.0);
            for &(q, d, w) in nb {
                num += w * (v[&q] + d);
                den += w;
            }
            if den > 0.0 {
                let new = num / den;
                change = change.max((new - v[&r]).abs());
                v.insert(r, new);
            }
        }
        if change < tol {
            break;
        }
    }
    v
}

/// Estimates every rank's clock from matched instances. `instances[i]` holds (global rank,
/// start_ns on that rank's clock) of one collective instance. `node_of` (rank → node) makes
/// ranks of one node share one drift.
///
/// The thesis' estimator (offset = median over instances of the rank's difference to the
/// instance median) is exact when every instance spans every rank. Real jobs mostly run
/// collectives on sub-communicators (a TP pair inside a node says nothing about the other
/// node), which bias an instance median. So the same median is taken per pair of ranks that
/// meet in instances — offset_r − offset_q = median of (start_r − start_q), after removing the
/// pair's drift when it is significant — and the pair differences are combined by weighted
/// least squares (weights = shared instances), anchored at the lowest rank. With full-world
/// instances this reduces to the thesis' answer.
pub fn synchronise(
    instances: &[Vec<(u32, i64)>],
    node_of: Option<&BTreeMap<u32, u32>>,
) -> ClockSync {
    let instances: Vec<&Vec<(u32, i64)>> = instances.iter().filter(|i| i.len() >= 2).collect();
    // One buffer for every instance's median and members (not two allocations an instance).
    let mut readings: Vec<f64> = Vec::new();
    let Some(reference_ns) = instances
        .iter()
        .filter_map(|i| {
            readings.clear();
            readings.extend(i.iter().map(|p| p.1 as f64));
            median(&mut readings)
        })
        .map(|m| m as i64)
        .min()
    else {
        return ClockSync::default();
    };
    let x0 = reference_ns as f64;
    // Pair samples (x = the lower rank's reading, d = difference). Each instance contributes
    // its lowest rank against every other member plus consecutive members: O(members) pairs
    // that keep every communicator's members connected.
    // Gathered in hash maps (an entry per member of every instance), then ordered: what
    // follows reads them in key order.
    let mut pairs: FxHashMap<(u32, u32), Vec<(f64, f64)>> = FxHashMap::default();
    let mut samples: FxHashMap<u32, usize> = FxHashMap::default();
    let mut m: Vec<(u32, i64)> = Vec::new();
    for inst in &instances {
        m.clear();
        m.extend_from_slice(inst);
        m.sort_unstable();
        m.dedup_by_key(|p| p.0);
        for p in &m {
            *samples.entry(p.0).or_default() += 1;
        }
        let mut add = |a: (u32, i64), b: (u32, i64)| {
            pairs
                .entry((b.0, a.0))
                .or_default()
                .push((a.1 as f64, (b.1 - a.1) as f64));
        };
        for k in 1..m.len() {
            add(m[0], m[k]);
            if k >= 2 {
                add(m[k - 1], m[k]);
            }
        }
    }
    let mut pairs: BTreeMap<(u32, u32), Vec<(f64, f64)>> = pairs.into_iter().collect();
    let samples: BTreeMap<u32, usize> = samples.into_iter().collect();
    // A stretch of kernels matched to the wrong instances (a rank whose alignment slipped)
    // differs by whole operations, milliseconds: keep each pair's consistent samples only.
    for pts in pairs.values_mut() {
        *pts = consensus(pts);
    }
    let ranks: Vec<u32> = samples.keys().copied().collect();
    let Some(&reference_rank) = ranks.first() else {
        return ClockSync::default();
    };
    // Drift: pair slopes (significant ones; else 0), combined by least squares.
    let slope_edges: Vec<(u32, u32, f64, f64)> = pairs
        .iter()
        .map(|(&(r, q), pts)| {
            let b = if pts.len() >= MIN_INSTANCES_FOR_DRIFT {
                slope(pts).unwrap_or(0.0)
            } else {
                0.0
            };
            (r, q, b, pts.len() as f64)
        })
        .collect();
    let mut drift = solve(&ranks, reference_rank, &slope_edges, 1e-13);
    if let Some(nodes) = node_of {
        // Ranks of one node share a clock: one drift per node, sample-weighted.
        let mut per_node: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
        for r in &ranks {
            if let Some(n) = nodes.get(r) {
                let w = samples[r] as f64;
                let e = per_node.entry(*n).or_default();
                e.0 += w * drift[r];
                e.1 += w;
            }
        }
        for r in &ranks {
            if let Some((s, w)) = nodes.get(r).and_then(|n| per_node.get(n)) {
                if *w > 0.0 {
                    drift.insert(*r, s / w);
                }
            }
        }
    }
    let d0 = drift.get(&reference_rank).copied().unwrap_or(0.0);
    for v in drift.values_mut() {
        *v -= d0;
    }
    // Offsets: the thesis' median, per pair, of the drift-corrected differences.
    let offset_edges: Vec<(u32, u32, f64, f64)> = pairs
        .iter()
        .map(|(&(r, q), pts)| {
            let db = drift[&r] - drift[&q];
            let mut level: Vec<f64> = pts.iter().map(|p| p.1 - db * (p.0 - x0)).collect();
            (r, q, median(&mut level).unwrap_or(0.0), pts.len() as f64)
        })
        .collect();
    let offset = solve_robust(&ranks, reference_rank, &offset_edges);
    let ranks = ranks
        .iter()
        .map(|&r| {
            (
                r,
                RankClock {
                    offset_ns: offset[&r],
                    drift_ppm: drift[&r] * 1e6,
                    samples: samples[&r],
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

    /// Every rank's offset within 1 µs and drift within 1 ppm of the truth. Offsets are given at
    /// `reference_ns`, the first instance's median time.
    fn assert_recovered(s: &ClockSync, off: &[f64], drift: &[f64], t0: i64) {
        for (r, (o, d)) in off.iter().zip(drift).enumerate() {
            let c = s.ranks[&(r as u32)];
            let expect = o + d * 1e-6 * (s.reference_ns - t0) as f64;
            assert!((c.offset_ns - expect).abs() < 1_000.0, "rank {r}: {c:?}");
            assert!((c.drift_ppm - d).abs() < 1.0, "rank {r}: {c:?}");
        }
    }

    #[test]
    fn a_slipped_alignment_does_not_move_the_clocks() {
        // Rank 2's kernels matched to the wrong instance (3 ms earlier) for the last 40 % of
        // the run, as when an aligner slips after a dropped kernel: a least-squares slope
        // breaks, and a median drifts to the edge of the right cluster.
        let off = [0.0, 50e6, -30e6];
        let drift = [0.0, 3.0, -2.0];
        let (mut obs, t0) = observe(&off, &drift, 80, 400.0);
        for inst in obs.iter_mut().skip(48) {
            inst[2].1 -= 3_000_000;
        }
        let s = synchronise(&obs, None);
        assert_recovered(&s, &off, &drift, t0);
    }

    #[test]
    fn a_wrong_weak_pair_does_not_move_the_clocks() {
        // Ranks 1 and 2 share only a few instances, all matched to the wrong operation
        // (137 µs apart): their pair disagrees with the well-supported pairs through rank 0.
        let off = [0.0, 20e3, -40e3];
        let (mut obs, _) = observe(&off, &[0.0; 3], 60, 300.0);
        for inst in &mut obs {
            inst.truncate(2); // ranks 0 and 1 only
        }
        let (mut with2, _) = observe(&off, &[0.0; 3], 60, 300.0);
        for inst in &mut with2 {
            inst.remove(1); // ranks 0 and 2 only
        }
        obs.extend(with2);
        let (mut weak, _) = observe(&off, &[0.0; 3], 8, 300.0);
        for inst in &mut weak {
            inst.remove(0);
            inst[1].1 += 137_000;
        }
        obs.extend(weak);
        let s = synchronise(&obs, None);
        for (r, expect) in off.iter().enumerate() {
            let c = s.ranks[&(r as u32)];
            assert!((c.offset_ns - expect).abs() < 1_000.0, "rank {r}: {c:?}");
        }
    }

    #[test]
    fn recovers_offsets_and_drift() {
        let off = [0.0, 50e6, -30e6];
        let drift = [0.0, 3.0, -2.0];
        let (obs, t0) = observe(&off, &drift, 60, 400.0);
        let s = synchronise(&obs, None);
        assert_recovered(&s, &off, &drift, t0);
        // Synchronised times of one instance agree within the noise.
        let last = obs.last().unwrap();
        let synced: Vec<i64> = last.iter().map(|&(r, t)| s.to_sync(r, t)).collect();
        let spread = synced.iter().max().unwrap() - synced.iter().min().unwrap();
        assert!(spread < 2_000, "spread {spread}");
    }

    #[test]
    fn sub_communicators_do_not_bias() {
        // 2 nodes × 2 ranks; most collectives run inside a node (TP pairs), a few across
        // (DP pairs): an instance median over a TP pair on node 2 knows nothing of node 1.
        let off = [0.0, 0.0, 30e6, 30e6];
        let (obs, _) = observe(&off, &[0.0; 4], 80, 300.0);
        let mut sub = Vec::new();
        for (k, inst) in obs.iter().enumerate() {
            let pick: &[u32] = match k % 8 {
                0 => &[0, 2],
                1 => &[1, 3],
                2 | 4 | 6 => &[0, 1],
                _ => &[2, 3],
            };
            sub.push(
                inst.iter()
                    .filter(|p| pick.contains(&p.0))
                    .copied()
                    .collect(),
            );
        }
        let s = synchronise(&sub, None);
        for (r, o) in off.iter().enumerate() {
            let c = s.ranks[&(r as u32)];
            assert!((c.offset_ns - o).abs() < 1_000.0, "rank {r}: {c:?}");
        }
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

    #[test]
    fn demo_run_clocks_from_kernels() {
        // Two nodes with different clocks; the collectives' kernel ends (NCCL kernels finish
        // together) matched across ranks through the truth's kernel → (comm, opCount) map.
        use crate::communicators::group;
        use model::log::ProcessKey;
        let (run, inits, ops) = crate::test_support::preset_logs("demo");
        let comms = group(&inits, &ops);
        let mut ends: BTreeMap<(u32, i64), i64> = BTreeMap::new();
        for rep in &run.reports {
            for k in &rep.kernels {
                ends.insert((k.pid, k.correlation_id as i64), k.end_ns);
            }
        }
        let mut inst: BTreeMap<(usize, u64), Vec<(u32, i64)>> = BTreeMap::new();
        for k in &run.truth.kernels {
            let Some(lo) = &k.log_op else { continue };
            if k.name.contains("SendRecv") {
                continue;
            }
            let pk = ProcessKey {
                host: k.host.as_str().into(),
                pid: k.pid,
            };
            let ptr = u64::from_str_radix(lo.comm.trim_start_matches("0x"), 16).unwrap();
            let Some(c) = comms.comm_of(&pk, ptr) else {
                continue;
            };
            let Some(&end) = ends.get(&(k.pid, k.correlation_id as i64)) else {
                continue;
            };
            inst.entry((c, lo.op_count))
                .or_default()
                .push((k.global_rank, end));
        }
        let obs: Vec<Vec<(u32, i64)>> = inst.into_values().filter(|v| v.len() >= 2).collect();
        assert!(obs.len() >= 50);
        let nodes: BTreeMap<u32, u32> = run
            .truth
            .ranks
            .iter()
            .map(|r| {
                (
                    r.global_rank,
                    r.host.trim_start_matches("node").parse::<u32>().unwrap() - 1,
                )
            })
            .collect();
        let s = synchronise(&obs, Some(&nodes));
        // The run lasts ~20 ms, so a few ppm of drift are below the µs-level jitter of kernel
        // ends (the generator varies each rank's transfer time by −5..+8 %): what must hold is
        // that the mapping is right over the run, i.e. offset error + drift error × span.
        let span = obs
            .iter()
            .flat_map(|o| o.iter().map(|p| p.1))
            .max()
            .unwrap() as f64
            - s.reference_ns as f64;
        for r in &run.truth.ranks {
            let tc = run.truth.clocks.iter().find(|c| c.host == r.host).unwrap();
            let c = s.ranks[&r.global_rank];
            let expect = tc.offset_ns as f64 + tc.drift_ppm * 1e-6 * s.reference_ns as f64;
            let err =
                (c.offset_ns - expect).abs() + (c.drift_ppm - tc.drift_ppm).abs() * 1e-6 * span;
            assert!(
                err < 1_000.0,
                "rank {}: {c:?} vs {expect} ({err} ns)",
                r.global_rank
            );
        }
    }
}
