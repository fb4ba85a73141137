//! Pipeline-stage imbalance and the 1F1B runtime (seed `fine-grained-gpu-perf-model-analysis.txt`,
//! eq. 7): `runtime = (m − 1 + p)·(F_max + B_max) + first stage's gradient sync + slowest
//! update`, with F_max and B_max the slowest pipeline stage's forward and backward of one
//! microbatch, against the measured step time.

use super::mapping::StageMapping;
use super::matrix::StageMatrix;
use serde::{Deserialize, Serialize};

/// One pipeline stage's typical times, ms (medians over its ranks' steps).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageTimes {
    pub stage: u32,
    pub ranks: Vec<u32>,
    /// One microbatch's forward.
    pub forward_ms: Option<f64>,
    /// One microbatch's backward.
    pub backward_ms: Option<f64>,
    /// The optimizer stage of a step.
    pub update_ms: Option<f64>,
}

/// The 1F1B formula beside the measured step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineCheck {
    /// Pipeline stages p and microbatches per step m.
    pub pp: u32,
    pub microbatches: u32,
    pub stages: Vec<StageTimes>,
    pub slowest_forward_stage: Option<u32>,
    pub slowest_backward_stage: Option<u32>,
    pub forward_max_ms: f64,
    pub backward_max_ms: f64,
    /// Stage 0's exposed data-parallel communication per step (from the kernels' breakdown).
    pub first_stage_grad_sync_ms: Option<f64>,
    pub max_update_ms: f64,
    pub predicted_ms: f64,
    /// The mean exposed step time (the frontier's last value), ms.
    pub measured_ms: f64,
    /// Measured over predicted.
    pub ratio: f64,
}

/// The check over `m`; `stage_of(rank)` is the rank's pipeline stage (`None`: all stage 0),
/// `grad_sync(stage)` a stage's exposed DP time per step. One microbatch's forward (backward) is
/// a step's forward (backward) time over the microbatches: `microbatches` when known, else the
/// most forward runs a rank has in a step (ranges that hold several microbatches' consecutive
/// forwards count once). `pp_wait(rank, step, kind)` is the time the rank's `forward` or
/// `backward` stages of the step spent in pipeline kernels (waiting for its neighbours and
/// transferring), taken out: the formula's stage times are the stage's own work. `None`
/// without forward and backward stages.
pub struct Inputs<'a> {
    pub pp: u32,
    pub microbatches: Option<u32>,
    pub stage_of: &'a dyn Fn(u32) -> Option<u32>,
    pub grad_sync: &'a dyn Fn(u32) -> Option<f64>,
    pub pp_wait: &'a dyn Fn(u32, u64, &str) -> f64,
    pub measured_ms: f64,
}

pub fn check(m: &StageMatrix, i: &Inputs) -> Option<PipelineCheck> {
    let (pp, microbatches, measured_ms) = (i.pp, i.microbatches, i.measured_ms);
    let (stage_of, grad_sync) = (i.stage_of, i.grad_sync);
    let mapping = StageMapping::default();
    let kind = |g: &str| -> Option<&'static str> {
        let s = match g {
            "forward" | "backward" | "optimizer" => g,
            other => mapping.stage_of(other)?,
        };
        ["forward", "backward", "optimizer"]
            .into_iter()
            .find(|k| *k == s)
    };
    let stage_kind: Vec<Option<&str>> = m
        .stage_group
        .iter()
        .map(|&g| kind(&m.groups[g as usize]))
        .collect();
    if !stage_kind.contains(&Some("forward")) || !stage_kind.contains(&Some("backward")) {
        return None;
    }
    let pp = pp.max(1);
    // Per pipeline stage: its ranks, and per rank-step the forward and backward of one
    // microbatch and the update.
    type Samples = (Vec<u32>, Vec<f64>, Vec<f64>, Vec<f64>);
    let mut per_stage: Vec<Samples> = vec![Samples::default(); pp as usize];
    let runs = (0..m.steps.len())
        .flat_map(|t| (0..m.ranks.len()).map(move |r| (t, r)))
        .map(|(t, r)| {
            m.row(t, r)
                .iter()
                .zip(&stage_kind)
                .filter(|(d, s)| **s == Some("forward") && !d.is_nan())
                .count() as u32
        })
        .max()
        .unwrap_or(0);
    let microbatches = microbatches.unwrap_or(runs).max(1);
    let per_mb = f64::from(microbatches);
    for (r, &rank) in m.ranks.iter().enumerate() {
        let st = stage_of(rank).unwrap_or(0).min(pp - 1) as usize;
        per_stage[st].0.push(rank);
        for t in 0..m.steps.len() {
            if !m.present(t, r) {
                continue;
            }
            let row = m.row(t, r);
            let of = |k: &str| -> Vec<f64> {
                row.iter()
                    .zip(&stage_kind)
                    .filter(|(d, s)| **s == Some(k) && !d.is_nan())
                    .map(|(d, _)| *d)
                    .collect()
            };
            let (f, b, o) = (of("forward"), of("backward"), of("optimizer"));
            let own = |v: &[f64], kind: &str| {
                let wait = (i.pp_wait)(rank, m.steps[t], kind);
                (v.iter().sum::<f64>() - wait).max(0.0) / per_mb
            };
            if !f.is_empty() {
                per_stage[st].1.push(own(&f, "forward"));
            }
            if !b.is_empty() {
                per_stage[st].2.push(own(&b, "backward"));
            }
            if !o.is_empty() {
                per_stage[st].3.push(o.iter().sum());
            }
        }
    }
    let stages: Vec<StageTimes> = per_stage
        .into_iter()
        .enumerate()
        .filter(|(_, s)| !s.0.is_empty())
        .map(|(k, (ranks, mut f, mut b, mut o))| StageTimes {
            stage: k as u32,
            ranks,
            forward_ms: median(&mut f),
            backward_ms: median(&mut b),
            update_ms: median(&mut o),
        })
        .collect();
    let slowest = |get: &dyn Fn(&StageTimes) -> Option<f64>| {
        stages
            .iter()
            .filter_map(|s| Some((s.stage, get(s)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    };
    let fwd = slowest(&|s| s.forward_ms);
    let bwd = slowest(&|s| s.backward_ms);
    let upd = slowest(&|s| s.update_ms).map_or(0.0, |u| u.1);
    let (f_max, b_max) = (fwd.map_or(0.0, |f| f.1), bwd.map_or(0.0, |b| b.1));
    let sync = grad_sync(0);
    let predicted = (f64::from(microbatches) - 1.0 + f64::from(pp)) * (f_max + b_max)
        + sync.unwrap_or(0.0)
        + upd;
    Some(PipelineCheck {
        pp,
        microbatches,
        stages,
        slowest_forward_stage: fwd.map(|f| f.0),
        slowest_backward_stage: bwd.map(|b| b.0),
        forward_max_ms: f_max,
        backward_max_ms: b_max,
        first_stage_grad_sync_ms: sync,
        max_update_ms: upd,
        predicted_ms: predicted,
        measured_ms,
        ratio: if predicted > 0.0 {
            measured_ms / predicted
        } else {
            f64::NAN
        },
    })
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::matrix::MatrixBuilder;

    #[test]
    fn one_f_one_b_over_two_stages() {
        // p = 2, m = 2: stage 1's forward (3) and backward (5) are the slowest.
        let mut b = MatrixBuilder::new();
        let (f, w, o) = (
            b.stage("forward"),
            b.stage("backward"),
            b.stage("optimizer"),
        );
        for (rank, fwd, bwd, opt) in [(0, 2.0, 4.0, 1.0), (1, 3.0, 5.0, 0.5)] {
            for step in 0..3 {
                for (g, d) in [(f, fwd), (w, bwd), (f, fwd), (w, bwd), (o, opt)] {
                    b.push(step, rank, g, d);
                }
            }
        }
        let m = b.finish();
        let inputs = Inputs {
            pp: 2,
            microbatches: None,
            stage_of: &|r| Some(r),
            grad_sync: &|s| (s == 0).then_some(0.7),
            pp_wait: &|_, _, _| 0.0,
            measured_ms: 20.0,
        };
        let c = check(&m, &inputs).unwrap();
        // With the microbatches given, and 1 ms of each step's backwards spent waiting.
        let given = check(
            &m,
            &Inputs {
                microbatches: Some(2),
                pp_wait: &|_, _, k| if k == "backward" { 1.0 } else { 0.0 },
                ..inputs
            },
        )
        .unwrap();
        assert_eq!(given.forward_max_ms, 3.0);
        assert_eq!(given.backward_max_ms, 4.5);
        assert_eq!((c.pp, c.microbatches), (2, 2));
        assert_eq!(c.slowest_forward_stage, Some(1));
        assert_eq!(c.slowest_backward_stage, Some(1));
        assert_eq!((c.forward_max_ms, c.backward_max_ms), (3.0, 5.0));
        assert_eq!(c.max_update_ms, 1.0);
        // (2 − 1 + 2)·(3 + 5) + 0.7 + 1
        assert!((c.predicted_ms - 25.7).abs() < 1e-12);
        assert!((c.ratio - 20.0 / 25.7).abs() < 1e-12);
        assert_eq!(c.stages[0].forward_ms, Some(2.0));
    }
}
