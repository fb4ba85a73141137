//! Steps from the period of the collectives, when no NVTX range marks them: training traffic is
//! On-Off, a fixed number of communication blocks per iteration repeating with the same kernels
//! (seed `communication-predictability-configtuner.txt`, §3: "2m micro-batch communication
//! blocks"), so each process's sequence of NCCL kernels (name and stream) repeats with the
//! iteration's period.
//!
//! Per process: candidate periods from the spacing of its rarest repeating kernels, each scored
//! by the share of kernels equal to the kernel one period later; the smallest period scoring
//! within 2 % of the best wins (multiples of the true period score as well). Kernels alike in
//! name and stream can still differ in role (a pipeline's forward send and backward receive are
//! both `SendRecv`): the period is then the smallest multiple of it whose idle gaps repeat too
//! (the gap before each kernel within a quarter of the gap one period later). The iteration
//! boundary is put before the kernel that follows the longest idle gap of the period. The
//! product of the two scores is the confidence. Each step is one stage, `step`, from one
//! boundary to the next.

use super::matrix::MatrixBuilder;
use super::nvtx::StepWindow;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// One process's NCCL kernels in start order: (signature, start ns, end ns).
pub struct KernelSequence {
    pub name: String,
    pub rank: u32,
    pub kernels: Vec<(u32, i64, i64)>,
}

/// What the period search found for one process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessPeriod {
    pub process: String,
    pub rank: u32,
    /// Kernels per step.
    pub period: usize,
    /// Share of kernels equal to the one a period later.
    pub score: f64,
    pub steps: usize,
}

/// The period search over every process.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PeriodFindings {
    pub processes: Vec<ProcessPeriod>,
    /// Processes with too few kernels for a period ("host:pid").
    pub without_period: Vec<String>,
    /// The lowest process score: how far the steps can be trusted.
    pub confidence: f64,
}

/// A period is accepted only if this share of kernels repeats one period later.
const MIN_SCORE: f64 = 0.8;
/// Fewer kernels than this (or fewer than three periods) give no period.
const MIN_KERNELS: usize = 12;

/// Steps of one stage (`step`) per process, from its kernels' period.
pub fn period_rows(seqs: &[KernelSequence]) -> (MatrixBuilder, PeriodFindings, Vec<StepWindow>) {
    let mut b = MatrixBuilder::new();
    let stage = b.stage("step");
    let mut found = PeriodFindings::default();
    let mut windows = Vec::new();
    for s in seqs {
        let Some((period, score)) = find_period(&s.kernels) else {
            found.without_period.push(s.name.clone());
            continue;
        };
        let (period, gap_score) = refine_by_gaps(&s.kernels, period);
        let score = score * gap_score;
        let offset = boundary_offset(&s.kernels, period);
        let starts: Vec<i64> = (offset..s.kernels.len())
            .step_by(period)
            .map(|i| s.kernels[i].1)
            .collect();
        let steps = starts.len().saturating_sub(1);
        for (k, w) in starts.windows(2).enumerate() {
            b.push(k as u64, s.rank, stage, (w[1] - w[0]) as f64 / 1e6);
            windows.push(StepWindow {
                rank: s.rank,
                step: k as u64,
                start_ns: w[0],
                end_ns: w[1],
            });
        }
        found.processes.push(ProcessPeriod {
            process: s.name.clone(),
            rank: s.rank,
            period,
            score,
            steps,
        });
    }
    found.confidence = found
        .processes
        .iter()
        .map(|p| p.score)
        .fold(f64::NAN, f64::min);
    if found.confidence.is_nan() {
        found.confidence = 0.0;
    }
    (b, found, windows)
}

/// The period of a kernel sequence and its score, if one repeats at least three times.
pub fn find_period(kernels: &[(u32, i64, i64)]) -> Option<(usize, f64)> {
    let n = kernels.len();
    if n < MIN_KERNELS {
        return None;
    }
    let sig: Vec<u32> = kernels.iter().map(|k| k.0).collect();
    let mut best: Vec<(usize, f64)> = candidates(&sig)
        .into_iter()
        .filter(|&p| p >= 1 && 3 * p <= n)
        .map(|p| (p, score(&sig, p)))
        .collect();
    let top = best.iter().map(|b| b.1).fold(0.0, f64::max);
    if top < MIN_SCORE {
        return None;
    }
    best.retain(|b| b.1 >= top - 0.02);
    best.into_iter().min_by_key(|b| b.0)
}

/// The smallest multiple of `period` (up to 16 times, at least three repeats) whose idle gaps
/// repeat, and how well they do; `period` itself, scored, when no multiple does better.
pub fn refine_by_gaps(kernels: &[(u32, i64, i64)], period: usize) -> (usize, f64) {
    let gaps: Vec<i64> = kernels
        .windows(2)
        .map(|w| (w[1].1 - w[0].2).max(0))
        .collect();
    let alike = |a: i64, b: i64| (a - b).abs() <= 20_000 + a.max(b) / 4;
    let score = |q: usize| -> f64 {
        let from = q.min(gaps.len());
        let pairs = gaps.len().saturating_sub(from + q);
        if pairs == 0 {
            return 0.0;
        }
        let same = (from..from + pairs)
            .filter(|&i| alike(gaps[i], gaps[i + q]))
            .count();
        same as f64 / pairs as f64
    };
    let scored: Vec<(usize, f64)> = (1..=16)
        .map(|k| k * period)
        .filter(|&q| 3 * q <= kernels.len())
        .map(|q| (q, score(q)))
        .collect();
    let best = scored.iter().map(|s| s.1).fold(0.0, f64::max);
    scored
        .into_iter()
        .find(|s| s.1 >= best - 0.05)
        .unwrap_or((period, 1.0))
}

/// Candidate periods: the median spacing of each of the rarest signatures that repeat, and
/// small multiples of the smallest ones.
fn candidates(sig: &[u32]) -> Vec<usize> {
    let mut at: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
    for (i, &s) in sig.iter().enumerate() {
        at.entry(s).or_default().push(i);
    }
    let mut rare: Vec<&Vec<usize>> = at.values().filter(|v| v.len() >= 3).collect();
    rare.sort_by_key(|v| (v.len(), v[0]));
    let mut out: Vec<usize> = Vec::new();
    for v in rare.iter().take(12) {
        let mut gaps: Vec<usize> = v.windows(2).map(|w| w[1] - w[0]).collect();
        gaps.sort_unstable();
        let median = gaps[gaps.len() / 2];
        out.push(median);
        // A signature seen twice per iteration spaces at half the period, unevenly.
        out.push(gaps[0] + gaps[gaps.len() - 1]);
        for k in 2..=4 {
            out.push(median * k);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Share of kernels equal to the one `p` later, past the first period (start-up differs).
fn score(sig: &[u32], p: usize) -> f64 {
    let from = p.min(sig.len());
    let pairs = sig.len().saturating_sub(from + p);
    if pairs == 0 {
        return 0.0;
    }
    let same = (from..from + pairs)
        .filter(|&i| sig[i] == sig[i + p])
        .count();
    same as f64 / pairs as f64
}

/// The index (below `period`) of the kernel that most often follows the longest idle gap.
fn boundary_offset(kernels: &[(u32, i64, i64)], period: usize) -> usize {
    let mut idle = vec![0i64; period];
    for i in 1..kernels.len() {
        let gap = kernels[i].1 - kernels[i - 1].2;
        idle[i % period] += gap.max(0);
    }
    (0..period)
        .max_by_key(|&o| (idle[o], std::cmp::Reverse(o)))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sequence repeating `pattern` `times` times after a start-up, with a long gap before
    /// each iteration's first kernel.
    fn run(pattern: &[u32], times: usize) -> Vec<(u32, i64, i64)> {
        let mut out = vec![(99, 0, 10), (98, 20, 30)];
        let mut t = 100;
        for _ in 0..times {
            t += 5_000;
            for &s in pattern {
                out.push((s, t, t + 10));
                t += 50;
            }
        }
        out
    }

    #[test]
    fn finds_the_iterations_period_and_its_boundary() {
        let k = run(&[1, 2, 2, 2, 3, 2, 2, 2, 4, 4], 8);
        assert_eq!(find_period(&k), Some((10, 1.0)));
        // The boundary is the kernel after the long gap: index 2 (after the start-up's two).
        assert_eq!(boundary_offset(&k, 10), 2);
        let (b, found, windows) = period_rows(&[KernelSequence {
            name: "n:1".into(),
            rank: 0,
            kernels: k,
        }]);
        assert_eq!(found.processes[0].steps, 7);
        assert_eq!(windows.len(), 7);
        let m = b.finish();
        assert_eq!(m.steps.len(), 7);
        assert_eq!(m.stage_names, ["step"]);
        assert!((m.duration(0, 0, 0).unwrap() - (5_000.0 + 500.0) / 1e6).abs() < 1e-12);
    }

    #[test]
    fn alike_kernels_in_different_roles_are_told_by_their_gaps() {
        // One kernel name: a forward send after 6 ms of compute, a backward receive after 10.
        let mut k = Vec::new();
        let mut t = 0;
        for i in 0..40 {
            t += if i % 2 == 0 { 6_000_000 } else { 10_000_000 };
            k.push((7, t, t + 100_000));
            t += 100_000;
        }
        assert_eq!(find_period(&k), Some((1, 1.0)));
        assert_eq!(refine_by_gaps(&k, 1), (2, 1.0));
        let (_, found, windows) = period_rows(&[KernelSequence {
            name: "n:1".into(),
            rank: 0,
            kernels: k,
        }]);
        assert_eq!(found.processes[0].period, 2);
        // Steps start after the long gap: each holds a 6 ms and a 10 ms gap.
        assert!(windows.iter().all(|w| w.end_ns - w.start_ns == 16_200_000));
    }

    #[test]
    fn no_period_in_noise_or_short_runs() {
        let noise: Vec<(u32, i64, i64)> = (0..200u32)
            .map(|i| {
                (
                    (i.wrapping_mul(2_654_435_761) >> 27) % 7,
                    i as i64,
                    i as i64,
                )
            })
            .collect();
        assert_eq!(find_period(&noise), None);
        assert_eq!(find_period(&run(&[1, 2, 3], 2)), None);
    }
}
