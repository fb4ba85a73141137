//! Step anatomy knob: a slow stage on chosen ranks and steps (issue 32), a `data` NVTX range at
//! each iteration's start, and optionally a stage file beside the run.
//!
//! Why: StageFrontier names the stage and the rank where group-visible delay first appears; the
//! generator gives it runs whose answer is known. A delay is extra host or device time on one
//! rank (a slow data loader, a slow forward or backward) added to the compute gap before one NCCL
//! call of the chosen iteration, so the synchronising simulation ([`crate::timing`]) makes the
//! rank's peers wait at their next collective with it, exactly as a real straggler makes them:
//! - `data`: before the iteration's first call (the batch the iteration consumes). The
//!   iteration's first compute gap is its data stage, written as a `data` NVTX range when the
//!   knob is on;
//! - `forward` / `backward`: before the last call of the iteration's first forward (backward)
//!   run, i.e. the first microbatch's.
//!
//! The phase ranges the generator writes (`forward`, `backward`, `optimizer`) cover whole runs
//! of NCCL calls of one phase, so the knob needs a layout whose forward and backward issue NCCL
//! calls (TP or PP): data parallelism alone issues none before the optimizer's.
//!
//! Hooks: [`apply`] on the schedule before the simulation (`plan`), [`split_data_ranges`] on a
//! rank's NVTX rows (`rank_out`), [`stage_file`] when a run is written (`write_run`).

use crate::nsysdb::NvtxRow;
use crate::schedule::{Call, Phase};
use crate::timing::Timed;
use crate::Run;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Where a delay goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DelayStage {
    Data,
    Forward,
    Backward,
}

impl DelayStage {
    /// The NVTX range name the delay shows in.
    pub fn name(self) -> &'static str {
        match self {
            DelayStage::Data => "data",
            DelayStage::Forward => "forward",
            DelayStage::Backward => "backward",
        }
    }

    pub fn parse(s: &str) -> Option<DelayStage> {
        match s.to_ascii_lowercase().as_str() {
            "data" => Some(DelayStage::Data),
            "forward" | "fwd" => Some(DelayStage::Forward),
            "backward" | "bwd" => Some(DelayStage::Backward),
            _ => None,
        }
    }
}

/// `ms` of extra time in `stage` on global rank `rank` at iteration `step`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepDelay {
    pub rank: u32,
    pub step: u32,
    pub stage: DelayStage,
    pub ms: f64,
}

impl StepDelay {
    /// `RANK:STEP:STAGE:MS`, e.g. `3:1:data:40` (the command line's spelling).
    pub fn parse(spec: &str) -> Result<StepDelay, String> {
        let parts: Vec<&str> = spec.split(':').collect();
        let [rank, step, stage, ms] = parts.as_slice() else {
            return Err(format!(
                "{spec:?}: expected RANK:STEP:STAGE:MS, e.g. 3:1:data:40"
            ));
        };
        let num = |what: &str, v: &str| {
            v.trim()
                .parse::<u32>()
                .map_err(|_| format!("{spec:?}: {what} {v:?} is not a whole number"))
        };
        let ms: f64 = ms
            .trim()
            .parse()
            .ok()
            .filter(|m: &f64| m.is_finite() && *m >= 0.0)
            .ok_or_else(|| format!("{spec:?}: MS {ms:?} is not a non-negative number"))?;
        Ok(StepDelay {
            rank: num("RANK", rank)?,
            step: num("STEP", step)?,
            stage: DelayStage::parse(stage).ok_or_else(|| {
                format!("{spec:?}: STAGE {stage:?} is not data, forward or backward")
            })?,
            ms,
        })
    }
}

/// The knob, off by default (runs without it are unchanged byte for byte).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageKnob {
    /// Write each iteration's first compute gap as a `data` NVTX range (on whenever delays or a
    /// stage file are asked for).
    #[serde(default)]
    pub data_ranges: bool,
    #[serde(default)]
    pub delays: Vec<StepDelay>,
    /// Write `stages.csv` (step,rank,stage,duration_ms from the same ranges) beside the run.
    #[serde(default)]
    pub stage_file: bool,
}

impl StageKnob {
    pub fn enabled(&self) -> bool {
        self.data_ranges || self.stage_file || !self.delays.is_empty()
    }
}

/// Adds every delay of `knob` to the compute gap before its call. `calls[r]` is rank r's
/// schedule. A delay whose rank, iteration or phase the schedule lacks is ignored (the truth
/// keeps the knob as asked; [`placed`] says which were placed).
pub fn apply(calls: &mut [Vec<Call>], knob: &StageKnob) {
    for d in &knob.delays {
        if let Some(i) = target(calls.get(d.rank as usize).map_or(&[][..], |c| c), d) {
            let c = &mut calls[d.rank as usize][i];
            c.compute_ns += (d.ms * 1e6).round() as u64;
        }
    }
}

/// The delays of `knob` that the schedule has a place for.
pub fn placed(calls: &[Vec<Call>], knob: &StageKnob) -> Vec<StepDelay> {
    knob.delays
        .iter()
        .filter(|d| target(calls.get(d.rank as usize).map_or(&[][..], |c| c), d).is_some())
        .copied()
        .collect()
}

/// The call before which `d` goes, in one rank's schedule.
fn target(calls: &[Call], d: &StepDelay) -> Option<usize> {
    let of_step = |i: &usize| calls[*i].iteration == Some(d.step) && !calls[*i].orphan;
    let first = (0..calls.len()).find(of_step)?;
    let phase = match d.stage {
        DelayStage::Data => return Some(first),
        DelayStage::Forward => Phase::Forward,
        DelayStage::Backward => Phase::Backward,
    };
    let start = (first..calls.len())
        .take_while(of_step)
        .find(|&i| calls[i].phase == phase)?;
    let end = (start..calls.len())
        .take_while(|&i| of_step(&i) && calls[i].phase == phase)
        .last()?;
    Some(end)
}

/// Splits each iteration's first phase range into a `data` range (the compute before the
/// iteration's first call) and the rest. `nvtx` holds one rank's rows (GPU clock); `to_gpu` maps
/// the simulation's true times onto it. Untouched when the knob is off.
pub fn split_data_ranges(
    nvtx: &mut Vec<NvtxRow>,
    calls: &[Call],
    timed: &[Timed],
    knob: &StageKnob,
    to_gpu: impl Fn(i64) -> i64,
) {
    if !knob.enabled() {
        return;
    }
    let mut firsts: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, c) in calls.iter().enumerate() {
        if let (Some(it), false) = (c.iteration, c.orphan) {
            firsts.entry(it).or_insert(i);
        }
    }
    let mut data = Vec::new();
    for &i in firsts.values() {
        let (gap_start, arrive) = (timed[i].gap_start_ns, timed[i].arrive_ns);
        // The whole gap before the first call, less the 2 µs the simulation adds to every call.
        let end = (arrive - 2_000).max(gap_start + 1);
        let (s, e) = (to_gpu(gap_start), to_gpu(end));
        if let Some(row) = nvtx
            .iter_mut()
            .find(|r| r.start_ns == s && !r.text.starts_with("iteration"))
        {
            row.start_ns = e.min(row.end_ns);
            data.push(NvtxRow {
                pid: row.pid,
                tid: row.tid,
                start_ns: s,
                end_ns: e,
                text: DelayStage::Data.name().to_string(),
            });
        }
    }
    nvtx.extend(data);
}

/// The run's stage file (`step,rank,stage,duration_ms`): per rank and iteration, the stage
/// ranges inside the `iteration N` range in time order, as each rank's own clock measured them.
pub fn stage_file(run: &Run) -> String {
    let rank_of: BTreeMap<(String, u32), u32> = run
        .truth
        .ranks
        .iter()
        .map(|r| ((r.host.clone(), r.pid), r.global_rank))
        .collect();
    let mut rows: Vec<(u64, u32, i64, String, f64)> = Vec::new();
    for rep in &run.reports {
        let mut by_pid: BTreeMap<u32, Vec<&NvtxRow>> = BTreeMap::new();
        for r in &rep.nvtx {
            by_pid.entry(r.pid).or_default().push(r);
        }
        for (pid, ranges) in by_pid {
            let Some(&rank) = rank_of.get(&(rep.host.clone(), pid)) else {
                continue;
            };
            for it in ranges.iter().filter(|r| r.text.starts_with("iteration ")) {
                let Ok(step) = it.text["iteration ".len()..].parse::<u64>() else {
                    continue;
                };
                for r in ranges.iter().filter(|r| {
                    !r.text.starts_with("iteration")
                        && r.start_ns >= it.start_ns
                        && r.end_ns <= it.end_ns
                }) {
                    let ms = (r.end_ns - r.start_ns) as f64 / 1e6;
                    rows.push((step, rank, r.start_ns, r.text.clone(), ms));
                }
            }
        }
    }
    rows.sort_by_key(|r| (r.0, r.1, r.2));
    let mut out = String::from("step,rank,stage,duration_ms\n");
    for (step, rank, _, stage, ms) in rows {
        let _ = writeln!(out, "{step},{rank},{stage},{ms:.6}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_command_lines_spelling() {
        assert_eq!(
            StepDelay::parse("3:1:data:40").unwrap(),
            StepDelay {
                rank: 3,
                step: 1,
                stage: DelayStage::Data,
                ms: 40.0
            }
        );
        assert_eq!(
            StepDelay::parse("0:0:bwd:2.5").unwrap().stage,
            DelayStage::Backward
        );
        for bad in ["3:1:data", "x:1:data:4", "1:1:optimizer:4", "1:1:data:-4"] {
            assert!(StepDelay::parse(bad).is_err(), "{bad}");
        }
    }
}
