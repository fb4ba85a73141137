//! Steps and stages from NVTX ranges: per process, the step ranges (a [`StageMapping`] names
//! them), and inside each step the stage ranges in time order, each rank in its own clock (only
//! durations are used: no clock synchronisation is needed).

use super::mapping::{trailing_number, StageMapping};
use super::matrix::MatrixBuilder;
use model::nsys::NvtxRange;
use serde::{Deserialize, Serialize};

/// NCCL's own NVTX domain: its API ranges are never steps or stages.
const NCCL_DOMAIN: &str = "NCCL";

/// The residual stage's name.
pub const RESIDUAL: &str = "other";

/// One process's NVTX ranges.
pub struct ProcessRanges<'a> {
    pub host: &'a str,
    pub pid: u32,
    /// Its global rank when the logs name it.
    pub rank: Option<u32>,
    pub ranges: Vec<&'a NvtxRange>,
}

/// How the NVTX ranges were read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NvtxFindings {
    /// The step pattern that matched (the first of the mapping's that any process has).
    pub step_pattern: Option<String>,
    /// Processes whose steps were read.
    pub processes: usize,
    /// Processes with NVTX ranges but no step range ("host:pid").
    pub without_steps: Vec<String>,
    /// Processes whose steps hold no stage range.
    pub without_stages: Vec<String>,
    /// Processes no log names: numbered after the named ranks, in (host, pid) order.
    pub unranked: Vec<String>,
    /// Whether the residual stage (`other`) was added.
    pub residual: bool,
    /// No process has a stage range inside its steps (a profiler trace with `ProfilerStep#N`
    /// alone): each step is one stage, `step`, so its times and breakdown still show.
    #[serde(default)]
    pub whole_steps: bool,
}

/// One step of one process: its number, its stages in order (name, ms, start and end ns), the
/// time outside them (ms), and its range (ns, the export's clock).
struct ProcessStep {
    number: u64,
    stages: Vec<(String, f64, i64, i64)>,
    rest: f64,
    start_ns: i64,
    end_ns: i64,
}

/// Where one rank ran one stage of one step, in its export's clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageSpan {
    pub rank: u32,
    pub step: u64,
    /// The stage's name as mapped (before expansion).
    pub stage: String,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// Everything read from the NVTX ranges.
pub struct NvtxRead {
    pub rows: MatrixBuilder,
    pub found: NvtxFindings,
    pub windows: Vec<StepWindow>,
    pub spans: Vec<StageSpan>,
}

/// Where one rank's step ran, in its export's clock (for the breakdown from kernels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepWindow {
    pub rank: u32,
    pub step: u64,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// Reads every process's steps and stages into a matrix builder.
pub fn stage_rows(processes: &[ProcessRanges], mapping: &StageMapping) -> NvtxRead {
    let mut found = NvtxFindings::default();
    // The first step pattern (in the mapping's order) that some process has, for all.
    let pattern = processes
        .iter()
        .flat_map(|p| p.ranges.iter())
        .filter(|r| usable(r))
        .filter_map(|r| mapping.step_pattern(&r.text))
        .min();
    found.step_pattern = pattern.map(|i| mapping.steps[i].clone());
    let mut next_rank = processes
        .iter()
        .filter_map(|p| p.rank)
        .max()
        .map_or(0, |r| r + 1);
    let mut read: Vec<(&ProcessRanges, String, Vec<ProcessStep>)> = Vec::new();
    for p in processes {
        let name = format!("{}:{}", p.host, p.pid);
        let Some(pattern) = pattern else {
            if !p.ranges.is_empty() {
                found.without_steps.push(name);
            }
            continue;
        };
        let steps = process_steps(&p.ranges, pattern, mapping);
        if steps.is_empty() {
            found.without_steps.push(name);
            continue;
        }
        read.push((p, name, steps));
    }
    // Steps with no stage range anywhere: each step whole is its one stage (rather than no
    // steps at all); where some process has stage ranges, one without is left out.
    found.whole_steps = !read.is_empty()
        && read
            .iter()
            .all(|(_, _, steps)| steps.iter().all(|s| s.stages.is_empty()));
    if found.whole_steps {
        for (_, _, steps) in &mut read {
            for s in steps.iter_mut() {
                let ms = (s.end_ns - s.start_ns) as f64 / 1e6;
                s.stages = vec![(WHOLE_STEP.to_string(), ms, s.start_ns, s.end_ns)];
                s.rest = 0.0;
            }
        }
    }
    let mut per_rank: Vec<(u32, Vec<ProcessStep>)> = Vec::new();
    for (p, name, steps) in read {
        if steps.iter().all(|s| s.stages.is_empty()) {
            found.without_stages.push(name);
            continue;
        }
        let rank = p.rank.unwrap_or_else(|| {
            found.unranked.push(name.clone());
            next_rank += 1;
            next_rank - 1
        });
        found.processes += 1;
        per_rank.push((rank, steps));
    }
    // The residual is a stage of every rank or of none: a stage some ranks lack would make
    // every step incomplete.
    found.residual = mapping.residual
        && per_rank.iter().any(|(_, steps)| {
            steps.iter().any(|s| {
                let total: f64 = s.stages.iter().map(|s| s.1).sum::<f64>() + s.rest;
                s.rest > 0.01 * total
            })
        });
    let mut b = MatrixBuilder::new();
    let mut windows = Vec::new();
    let mut spans = Vec::new();
    for (rank, steps) in per_rank {
        for s in &steps {
            windows.push(StepWindow {
                rank,
                step: s.number,
                start_ns: s.start_ns,
                end_ns: s.end_ns,
            });
        }
        // A step with no stage range on this rank is left out for it (its world then changes).
        for s in steps.into_iter().filter(|s| !s.stages.is_empty()) {
            for (name, ms, start_ns, end_ns) in s.stages {
                let id = b.stage(&name);
                b.push(s.number, rank, id, ms);
                spans.push(StageSpan {
                    rank,
                    step: s.number,
                    stage: name,
                    start_ns,
                    end_ns,
                });
            }
            if found.residual {
                let id = b.stage(RESIDUAL);
                b.push(s.number, rank, id, s.rest);
            }
        }
    }
    NvtxRead {
        rows: b,
        found,
        windows,
        spans,
    }
}

/// The one stage of a step that no stage range divides.
pub const WHOLE_STEP: &str = "step";

fn usable(r: &NvtxRange) -> bool {
    r.end_ns.is_some_and(|e| e >= r.start_ns) && r.domain.as_deref() != Some(NCCL_DOMAIN)
}

/// One process's steps (numbered by their names, else in order) with their stages in time
/// order and the time outside them.
fn process_steps(
    ranges: &[&NvtxRange],
    pattern: usize,
    mapping: &StageMapping,
) -> Vec<ProcessStep> {
    let mut steps: Vec<&NvtxRange> = Vec::new();
    let mut stages: Vec<(&NvtxRange, &str)> = Vec::new();
    for r in ranges.iter().copied().filter(|r| usable(r)) {
        match mapping.step_pattern(&r.text) {
            Some(i) if i == pattern => steps.push(r),
            Some(_) => {}
            None => {
                if let Some(stage) = mapping.stage_of(&r.text) {
                    stages.push((r, stage));
                }
            }
        }
    }
    let end = |r: &NvtxRange| r.end_ns.unwrap_or(r.start_ns);
    steps.sort_by_key(|r| (r.start_ns, std::cmp::Reverse(end(r))));
    let steps = outermost(steps.into_iter().map(|r| (r, ())).collect());
    stages.sort_by_key(|(r, _)| (r.start_ns, std::cmp::Reverse(end(r))));
    let stages = outermost(stages);
    let mut out = Vec::with_capacity(steps.len());
    let mut first = 0usize;
    for (k, (step, ())) in steps.iter().enumerate() {
        let number = trailing_number(&step.text).unwrap_or(k as u64);
        let (s0, s1) = (step.start_ns, end(step));
        while first < stages.len() && stages[first].0.start_ns < s0 {
            first += 1;
        }
        let inside: Vec<(String, f64, i64, i64)> = stages[first..]
            .iter()
            .take_while(|(r, _)| r.start_ns < s1)
            .filter(|(r, _)| end(r) <= s1)
            .map(|(r, stage)| {
                let ms = (end(r) - r.start_ns) as f64 / 1e6;
                (stage.to_string(), ms, r.start_ns, end(r))
            })
            .collect();
        let covered: f64 = inside.iter().map(|s| s.1).sum();
        let rest = ((s1 - s0) as f64 / 1e6 - covered).max(0.0);
        out.push(ProcessStep {
            number,
            stages: inside,
            rest,
            start_ns: s0,
            end_ns: s1,
        });
    }
    out
}

/// Drops every range contained in an earlier one (input sorted by start, then longest first).
fn outermost<T>(sorted: Vec<(&NvtxRange, T)>) -> Vec<(&NvtxRange, T)> {
    let mut out: Vec<(&NvtxRange, T)> = Vec::with_capacity(sorted.len());
    let mut reach = i64::MIN;
    for (r, t) in sorted {
        let e = r.end_ns.unwrap_or(r.start_ns);
        if e > reach {
            reach = reach.max(e);
            out.push((r, t));
        }
    }
    out
}
