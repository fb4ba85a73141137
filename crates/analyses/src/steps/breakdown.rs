//! The iteration-time breakdown per step and rank, measured from the kernels: compute busy time,
//! communication not overlapped by compute per parallelism, idle time and the pipeline bubble;
//! beside it ConfigTuner's closed forms (seed `communication-predictability-configtuner.txt`,
//! §4.1): `T_iter = T_comp + T_TP + T_PP + T_DP + T_bubble`, and the ratio per term.
//!
//! Measured, for one rank's step window `[t0, t1)` on its GPU:
//! - compute: the time some compute kernel runs (every stream merged, overlaps once);
//! - exposed communication of parallelism P: the time some NCCL kernel of P runs and no compute
//!   kernel does (a time two parallelisms' kernels share counts for both);
//! - bubble: the part of the exposed PP time its kernels spent beyond their baseline (the
//!   minimum duration of the same operation, size and communicator): waiting for the
//!   neighbouring stage, the bubble of 1F1B; the PP term is the rest (the transfers);
//! - idle: no kernel at all.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The parallelisms a kernel can serve, as the contract spells them.
pub const PARALLELISMS: [&str; 6] = ["TP", "CP", "EP", "DP", "PP", "unknown"];
const PP: u8 = 4;

/// One NCCL kernel of a rank.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NcclSpan {
    pub start_ns: i64,
    pub end_ns: i64,
    /// Index into [`PARALLELISMS`].
    pub parallelism: u8,
    /// Its operation key (index into the baselines' keys).
    pub key: u32,
}

/// One rank's kernels, its own clock.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankKernels {
    pub rank: u32,
    /// `host:pid`.
    pub process: String,
    /// NCCL kernels in start order.
    pub nccl: Vec<NcclSpan>,
    /// Compute busy intervals, disjoint and ascending; `None` when the export's compute kernels
    /// were not read.
    pub busy: Option<Vec<(i64, i64)>>,
}

/// Where one rank's (or the mean rank's) step time went, ms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Terms {
    pub step_ms: f64,
    pub compute_ms: f64,
    /// Per parallelism: NCCL time not overlapped by compute.
    pub exposed_ms: BTreeMap<String, f64>,
    /// All NCCL time not overlapped by compute (each instant once).
    pub exposed_total_ms: f64,
    /// Of the exposed PP time, the waiting beyond the transfers' baseline.
    pub bubble_ms: f64,
    pub idle_ms: f64,
}

impl Terms {
    fn add(&mut self, o: &Terms, w: f64) {
        self.step_ms += o.step_ms * w;
        self.compute_ms += o.compute_ms * w;
        for (k, v) in &o.exposed_ms {
            *self.exposed_ms.entry(k.clone()).or_default() += v * w;
        }
        self.exposed_total_ms += o.exposed_total_ms * w;
        self.bubble_ms += o.bubble_ms * w;
        self.idle_ms += o.idle_ms * w;
    }

    fn exposed(&self, p: &str) -> f64 {
        self.exposed_ms.get(p).copied().unwrap_or(0.0)
    }
}

/// One step over its ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepTerms {
    pub step: u64,
    pub ranks: u32,
    pub mean: Terms,
    /// The rank with the longest step window, and its terms.
    pub slowest_rank: u32,
    pub slowest: Terms,
}

/// One rank over the steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankTerms {
    pub rank: u32,
    pub steps: u32,
    pub mean: Terms,
}

/// ConfigTuner's inputs for one layout and model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClosedFormInputs {
    /// Parameters N.
    pub parameters: f64,
    pub layers: f64,
    pub hidden: f64,
    pub seq_len: f64,
    pub micro_batch: f64,
    pub microbatches: f64,
    pub tp: f64,
    pub pp: f64,
    pub dp: f64,
    /// Virtual pipeline chunks v.
    pub virtual_stages: f64,
    pub bytes_per_element: f64,
    /// Peak FLOP/s of one GPU, TFLOP/s (F).
    pub peak_tflops: f64,
    /// Utilisation μ.
    pub utilisation: f64,
    /// Effective bandwidths, GB/s: the run's own median bus bandwidth per parallelism.
    pub c_tp_gbps: Option<f64>,
    pub c_pp_gbps: Option<f64>,
    pub c_dp_gbps: Option<f64>,
    /// Full activation recomputation (ConfigTuner's assumption: 8 FLOPs per parameter and
    /// token, 6 TP AllReduce per layer); without it 6 and 4.
    pub recompute: bool,
}

/// The closed forms' terms, ms (a term whose bandwidth is unknown is `None`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClosedTerms {
    pub comp_ms: Option<f64>,
    pub tp_ms: Option<f64>,
    pub pp_ms: Option<f64>,
    pub dp_ms: Option<f64>,
    pub bubble_ms: Option<f64>,
    pub iter_ms: Option<f64>,
}

/// The closed forms beside the measured terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClosedForm {
    pub inputs: ClosedFormInputs,
    pub predicted: ClosedTerms,
    /// The same terms measured (mean per step over the ranks the formula describes: pipeline
    /// stage 0's when the layout has stages, else every rank's).
    pub measured: ClosedTerms,
    /// Measured over predicted, per term.
    pub ratio: ClosedTerms,
}

impl ClosedFormInputs {
    /// ConfigTuner eqs. 2–5 and 9, in ms.
    pub fn terms(&self) -> ClosedTerms {
        let i = self;
        let (m, l, p, t, d, v) = (
            i.microbatches,
            i.layers,
            i.pp.max(1.0),
            i.tp.max(1.0),
            i.dp.max(1.0),
            i.virtual_stages.max(1.0),
        );
        let bsh_bytes = i.micro_batch * i.seq_len * i.hidden * i.bytes_per_element;
        let flops_per_param_token = if i.recompute { 8.0 } else { 6.0 };
        let allreduces = if i.recompute { 6.0 } else { 4.0 };
        let f = i.peak_tflops * 1e12 * i.utilisation;
        let comp_mb_s =
            flops_per_param_token * i.parameters / (p * t) * i.micro_batch * i.seq_len / f;
        let gbps = |c: Option<f64>| c.filter(|c| *c > 0.0).map(|c| c * 1e9);
        let tp_mb_s = if t > 1.0 {
            gbps(i.c_tp_gbps).map(|c| (l / p) * allreduces * bsh_bytes * 2.0 * (t - 1.0) / (t * c))
        } else {
            Some(0.0)
        };
        let pp_mb_s = if p > 1.0 {
            gbps(i.c_pp_gbps).map(|c| v * 2.0 * bsh_bytes / c)
        } else {
            Some(0.0)
        };
        let dp_s = if d > 1.0 {
            gbps(i.c_dp_gbps)
                .map(|c| i.bytes_per_element * i.parameters / (p * t) * 2.0 * (d - 1.0) / (d * c))
        } else {
            Some(0.0)
        };
        let ms = |s: f64| s * 1e3;
        let bubble = match (tp_mb_s, pp_mb_s) {
            (Some(tp), Some(pp)) => Some(ms((p - 1.0) * (comp_mb_s + pp + tp) / v)),
            _ => None,
        };
        let comp = ms(m * comp_mb_s);
        let tp = tp_mb_s.map(|x| ms(m * x));
        let pp = pp_mb_s.map(|x| ms(m * x));
        let dp = dp_s.map(ms);
        let iter = match (tp, pp, dp, bubble) {
            (Some(a), Some(b), Some(c), Some(e)) => Some(comp + a + b + c + e),
            _ => None,
        };
        ClosedTerms {
            comp_ms: Some(comp),
            tp_ms: tp,
            pp_ms: pp,
            dp_ms: dp,
            bubble_ms: bubble,
            iter_ms: iter,
        }
    }
}

/// The whole breakdown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Where the step windows came from (`nvtx` ranges or the `collectives`' period).
    pub windows_from: String,
    pub per_step: Vec<StepTerms>,
    pub per_rank: Vec<RankTerms>,
    /// Mean over every rank's step.
    pub mean: Terms,
    pub closed_form: Option<ClosedForm>,
    pub notes: Vec<String>,
}

/// One rank's step window: (rank, step, start, end), its own clock.
pub type Window = (u32, u64, i64, i64);

/// The breakdown of every window; `baseline_ns[key]` is each operation key's baseline duration
/// (for the bubble). Ranks without compute kernels count all NCCL time as exposed.
pub fn breakdown(
    ranks: &[RankKernels],
    windows: &[Window],
    baseline_ns: &[i64],
    windows_from: &str,
) -> Breakdown {
    let by_rank: BTreeMap<u32, &RankKernels> = ranks.iter().map(|r| (r.rank, r)).collect();
    let mut per_step: BTreeMap<u64, Vec<(u32, Terms)>> = BTreeMap::new();
    let mut notes = Vec::new();
    let no_compute: Vec<&str> = ranks
        .iter()
        .filter(|r| r.busy.is_none())
        .map(|r| r.process.as_str())
        .collect();
    if !no_compute.is_empty() {
        notes.push(format!(
            "{} process(es) without compute kernels read: their NCCL time counts as exposed and \
             their compute as none",
            no_compute.len()
        ));
    }
    for &(rank, step, t0, t1) in windows {
        let Some(k) = by_rank.get(&rank) else {
            continue;
        };
        per_step
            .entry(step)
            .or_default()
            .push((rank, terms(k, t0, t1, baseline_ns)));
    }
    let mut mean = Terms::default();
    let mut count = 0usize;
    let mut rank_sums: BTreeMap<u32, (Terms, u32)> = BTreeMap::new();
    let per_step: Vec<StepTerms> = per_step
        .into_iter()
        .map(|(step, rows)| {
            let mut m = Terms::default();
            let w = 1.0 / rows.len() as f64;
            for (rank, t) in &rows {
                m.add(t, w);
                mean.add(t, 1.0);
                count += 1;
                let e = rank_sums.entry(*rank).or_default();
                e.0.add(t, 1.0);
                e.1 += 1;
            }
            let (slowest_rank, slowest) = rows
                .iter()
                .max_by(|a, b| a.1.step_ms.total_cmp(&b.1.step_ms).then(b.0.cmp(&a.0)))
                .cloned()
                .unwrap_or_default();
            StepTerms {
                step,
                ranks: rows.len() as u32,
                mean: m,
                slowest_rank,
                slowest,
            }
        })
        .collect();
    let mut total = Terms::default();
    if count > 0 {
        total.add(&mean, 1.0 / count as f64);
    }
    Breakdown {
        windows_from: windows_from.to_string(),
        per_step,
        per_rank: rank_sums
            .into_iter()
            .map(|(rank, (sum, n))| {
                let mut m = Terms::default();
                m.add(&sum, 1.0 / f64::from(n));
                RankTerms {
                    rank,
                    steps: n,
                    mean: m,
                }
            })
            .collect(),
        mean: total,
        closed_form: None,
        notes,
    }
}

/// The measured terms the closed forms describe: the mean over `ranks`' steps.
pub fn measured_closed_terms(b: &Breakdown, ranks: &[u32]) -> ClosedTerms {
    let mut t = Terms::default();
    let rows: Vec<&RankTerms> = b
        .per_rank
        .iter()
        .filter(|r| ranks.contains(&r.rank))
        .collect();
    for r in &rows {
        t.add(&r.mean, 1.0 / rows.len() as f64);
    }
    if rows.is_empty() {
        return ClosedTerms::default();
    }
    ClosedTerms {
        comp_ms: Some(t.compute_ms),
        tp_ms: Some(t.exposed("TP")),
        pp_ms: Some((t.exposed("PP") - t.bubble_ms).max(0.0)),
        dp_ms: Some(t.exposed("DP")),
        bubble_ms: Some(t.bubble_ms),
        iter_ms: Some(t.step_ms),
    }
}

/// Measured over predicted, term by term.
pub fn ratios(measured: &ClosedTerms, predicted: &ClosedTerms) -> ClosedTerms {
    let r = |m: Option<f64>, p: Option<f64>| match (m, p) {
        (Some(m), Some(p)) if p > 0.0 => Some(m / p),
        _ => None,
    };
    ClosedTerms {
        comp_ms: r(measured.comp_ms, predicted.comp_ms),
        tp_ms: r(measured.tp_ms, predicted.tp_ms),
        pp_ms: r(measured.pp_ms, predicted.pp_ms),
        dp_ms: r(measured.dp_ms, predicted.dp_ms),
        bubble_ms: r(measured.bubble_ms, predicted.bubble_ms),
        iter_ms: r(measured.iter_ms, predicted.iter_ms),
    }
}

/// One rank's terms in `[t0, t1)`.
fn terms(k: &RankKernels, t0: i64, t1: i64, baseline_ns: &[i64]) -> Terms {
    let busy = k.busy.as_deref().unwrap_or(&[]);
    let busy_in = |a: i64, b: i64| busy_between(busy, a.max(t0), b.min(t1));
    // NCCL kernels overlapping the window (they are in start order; a kernel starting before
    // t0 may still run into it, so look back over the longest kernel's reach).
    let first = k
        .nccl
        .partition_point(|s| s.start_ns < t0)
        .saturating_sub(64);
    let spans: Vec<&NcclSpan> = k.nccl[first..]
        .iter()
        .take_while(|s| s.start_ns < t1)
        .filter(|s| s.end_ns > t0)
        .collect();
    let mut exposed = BTreeMap::new();
    for (p, name) in PARALLELISMS.iter().enumerate() {
        let u = union(
            spans
                .iter()
                .copied()
                .filter(|s| s.parallelism as usize == p),
            t0,
            t1,
        );
        if u.is_empty() {
            continue;
        }
        let e: i64 = u.iter().map(|&(a, b)| (b - a) - busy_in(a, b)).sum();
        exposed.insert(name.to_string(), e as f64 / 1e6);
    }
    let all = union(spans.iter().copied(), t0, t1);
    let comm: i64 = all.iter().map(|&(a, b)| b - a).sum();
    let comm_busy: i64 = all.iter().map(|&(a, b)| busy_in(a, b)).sum();
    let compute = busy_in(t0, t1);
    let idle = (t1 - t0) - compute - (comm - comm_busy);
    // The bubble: PP kernels' time beyond their baseline, where no compute overlaps it.
    let bubble: i64 = spans
        .iter()
        .filter(|s| s.parallelism == PP)
        .map(|s| {
            let (a, b) = (s.start_ns.max(t0), s.end_ns.min(t1));
            let base = baseline_ns.get(s.key as usize).copied().unwrap_or(0);
            let wait = ((s.end_ns - s.start_ns) - base).clamp(0, b - a);
            // The wait is the kernel's first part (it spins until the peer is there).
            (wait - busy_in(a, a + wait)).max(0)
        })
        .sum();
    let ms = |ns: i64| ns as f64 / 1e6;
    Terms {
        step_ms: ms(t1 - t0),
        compute_ms: ms(compute),
        exposed_ms: exposed,
        exposed_total_ms: ms(comm - comm_busy),
        bubble_ms: ms(bubble),
        idle_ms: ms(idle.max(0)),
    }
}

/// The union of spans clipped to `[t0, t1)`, as disjoint ascending intervals (spans come in
/// start order).
fn union<'a>(spans: impl Iterator<Item = &'a NcclSpan>, t0: i64, t1: i64) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    for s in spans {
        let (a, b) = (s.start_ns.max(t0), s.end_ns.min(t1));
        if b <= a {
            continue;
        }
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Time within `[from, to)` covered by disjoint ascending `busy` intervals.
pub fn busy_between(busy: &[(i64, i64)], from: i64, to: i64) -> i64 {
    if to <= from {
        return 0;
    }
    let first = busy.partition_point(|&(_, e)| e <= from);
    busy[first..]
        .iter()
        .take_while(|&&(s, _)| s < to)
        .map(|&(s, e)| e.min(to) - s.max(from))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(s: i64, e: i64, p: u8, key: u32) -> NcclSpan {
        NcclSpan {
            start_ns: s,
            end_ns: e,
            parallelism: p,
            key,
        }
    }

    #[test]
    fn splits_a_window_into_compute_exposed_bubble_and_idle() {
        // 0–100: compute 0–40 and 60–70; TP kernel 30–50 (10 hidden under compute);
        // PP kernel 75–95 whose baseline is 5 (15 of waiting); idle 50–60, 70–75, 95–100.
        let k = RankKernels {
            rank: 0,
            process: "n:1".into(),
            nccl: vec![span(30, 50, 0, 0), span(75, 95, PP, 1)],
            busy: Some(vec![(0, 40), (60, 70)]),
        };
        let t = terms(&k, 0, 100, &[20, 5]);
        let ms = |ns: f64| ns / 1e6;
        assert_eq!(t.step_ms, ms(100.0));
        assert_eq!(t.compute_ms, ms(50.0));
        assert_eq!(t.exposed_ms["TP"], ms(10.0));
        assert_eq!(t.exposed_ms["PP"], ms(20.0));
        assert_eq!(t.exposed_total_ms, ms(30.0));
        assert_eq!(t.bubble_ms, ms(15.0));
        assert_eq!(t.idle_ms, ms(20.0));
        // The terms add up to the window.
        assert!((t.compute_ms + t.exposed_total_ms + t.idle_ms - t.step_ms).abs() < 1e-15);
    }

    #[test]
    fn closed_forms_follow_configtuner() {
        // GPT-39B-like: ConfigTuner's table 2 row (t, p, d) = (4, 4, 2).
        let i = ClosedFormInputs {
            parameters: 39e9,
            layers: 48.0,
            hidden: 8192.0,
            seq_len: 2048.0,
            micro_batch: 1.0,
            microbatches: 24.0,
            tp: 4.0,
            pp: 4.0,
            dp: 2.0,
            virtual_stages: 1.0,
            bytes_per_element: 2.0,
            peak_tflops: 989.0,
            utilisation: 0.5,
            c_tp_gbps: Some(150.0),
            c_pp_gbps: Some(20.0),
            c_dp_gbps: Some(40.0),
            recompute: true,
        };
        let t = i.terms();
        // T_comp = 8·m·N·b·s/(p·t·μF)
        let comp = 8.0 * 24.0 * 39e9 * 2048.0 / (16.0 * 0.5 * 989e12) * 1e3;
        assert!((t.comp_ms.unwrap() - comp).abs() < 1e-9 * comp);
        // T_TP = m·(l/p)·6·2bsh·2(t−1)/(t·C_TP)
        let bsh2 = 2048.0 * 8192.0 * 2.0;
        let tp = 24.0 * 12.0 * 6.0 * bsh2 * 1.5 / 150e9 * 1e3;
        assert!((t.tp_ms.unwrap() - tp).abs() < 1e-9 * tp);
        // T_PP = m·2·2bsh/C_PP; T_DP = (2N/(p·t))·2(d−1)/(d·C_DP)
        assert!((t.pp_ms.unwrap() - 24.0 * 2.0 * bsh2 / 20e9 * 1e3).abs() < 1e-6);
        let dp = 2.0 * 39e9 / 16.0 * 1.0 / 40e9 * 1e3;
        assert!((t.dp_ms.unwrap() - dp).abs() < 1e-9 * dp);
        // T_bubble = (p−1)(T_comp^mb + T_PP^mb + T_TP^mb), and R_bubble ≈ (p−1)/(p−1+m).
        let per_mb = (t.comp_ms.unwrap() + t.pp_ms.unwrap() + t.tp_ms.unwrap()) / 24.0;
        assert!((t.bubble_ms.unwrap() - 3.0 * per_mb).abs() < 1e-9);
        let r = t.bubble_ms.unwrap() / (t.iter_ms.unwrap() - t.dp_ms.unwrap());
        assert!((r - 3.0 / 27.0).abs() < 1e-9);
        // Unknown bandwidth: that term and the total are unknown, not zero.
        let none = ClosedFormInputs {
            c_tp_gbps: None,
            ..i
        }
        .terms();
        assert_eq!((none.tp_ms, none.iter_ms), (None, None));
    }
}
