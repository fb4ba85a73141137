//! Step time by stage, per step: what the comparison matches by step index. A [`StepTable`] is
//! plain data any steps analysis can give: the NVTX reader here (iteration ranges, and the
//! forward, backward and optimizer ranges inside them, as the timeline's marker rows read them),
//! and the step anatomy of issue 32 (`analyses::steps`, a stage file or the collectives' period)
//! once it is in: its per-step advances are a table of this shape (`StepTable::from_rows`).

use load::Session;
use model::log::ProcessKey;
use pipeline::Analysis;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One step: its time and its stages' times (in [`StepTable::stage_names`] order), ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepTimes {
    pub step: u64,
    /// Ranks that reported it.
    pub ranks: u32,
    /// The step's time: the slowest rank's.
    pub total_ms: f64,
    /// Per stage, the slowest rank's time in it (0 where no rank marked the stage).
    pub stage_ms: Vec<f64>,
}

/// Per step, per stage time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepTable {
    /// Where the steps came from (`nvtx`, `stage-file`, `collectives`).
    pub source: String,
    /// In the order the stages run.
    pub stage_names: Vec<String>,
    /// In step order.
    pub steps: Vec<StepTimes>,
}

impl StepTable {
    /// From per step and rank rows `(step, rank, total_ms, stage_ms)`, stage times in
    /// `stage_names` order: each step's figures are the slowest rank's.
    pub fn from_rows(
        source: &str,
        stage_names: Vec<String>,
        rows: impl IntoIterator<Item = (u64, u32, f64, Vec<f64>)>,
    ) -> StepTable {
        let n = stage_names.len();
        let mut steps: BTreeMap<u64, StepTimes> = BTreeMap::new();
        for (step, _rank, total, stages) in rows {
            let s = steps.entry(step).or_insert_with(|| StepTimes {
                step,
                ranks: 0,
                total_ms: 0.0,
                stage_ms: vec![0.0; n],
            });
            s.ranks += 1;
            s.total_ms = s.total_ms.max(total);
            for (slot, v) in s.stage_ms.iter_mut().zip(stages) {
                *slot = slot.max(v);
            }
        }
        StepTable {
            source: source.to_string(),
            stage_names,
            steps: steps.into_values().collect(),
        }
    }

    /// The steps of the exports' NVTX iteration ranges (step k: a process's k-th, by start),
    /// with the time each rank spent in forward, backward and optimizer ranges inside each;
    /// `None` when no export marks iterations.
    pub fn from_nvtx(session: &Session, analysis: &Analysis) -> Option<StepTable> {
        let mut rows = Vec::new();
        let mut stages: Vec<&'static str> = Vec::new();
        for loaded in session.exports() {
            let e = &loaded.export;
            let host = e.hosts.first().cloned().unwrap_or_default();
            let iterations: std::collections::BTreeSet<usize> =
                e.iterations.iter().copied().collect();
            let mut first = 0;
            for run in e.nvtx.chunk_by(|a, b| a.pid == b.pid) {
                let offset = first;
                first += run.len();
                let process = ProcessKey {
                    host: host.as_str().into(),
                    pid: run[0].pid,
                };
                let Some(rank) = analysis.communicators.rank_of(&process) else {
                    continue;
                };
                let mut steps: Vec<(i64, i64)> = Vec::new();
                let mut marked: Vec<(usize, i64, i64)> = Vec::new();
                for (i, r) in (offset..).zip(run) {
                    let Some(end) = r.end_ns.filter(|&e| e > r.start_ns) else {
                        continue;
                    };
                    if iterations.contains(&i) {
                        steps.push((r.start_ns, end));
                    } else if let Some(stage) = stage_of(&r.text) {
                        let k = stages.iter().position(|s| *s == stage).unwrap_or_else(|| {
                            stages.push(stage);
                            stages.len() - 1
                        });
                        marked.push((k, r.start_ns, end));
                    }
                }
                steps.sort_unstable();
                marked.sort_unstable_by_key(|m| (m.1, std::cmp::Reverse(m.2)));
                let longest = marked.iter().map(|m| m.2 - m.1).max().unwrap_or(0);
                for (k, (s, e)) in steps.iter().enumerate() {
                    let per_stage = stage_times(&marked, stages.len(), longest, *s, *e);
                    rows.push((k as u64, rank, (e - s) as f64 / 1e6, per_stage));
                }
            }
        }
        if rows.is_empty() {
            return None;
        }
        let n = stages.len();
        let rows = rows.into_iter().map(|(k, r, t, mut v)| {
            v.resize(n, 0.0);
            (k, r, t, v)
        });
        Some(StepTable::from_rows(
            "nvtx",
            stages.iter().map(|s| s.to_string()).collect(),
            rows,
        ))
    }
}

/// The stage a range's text names (ASCII case-insensitive), as the timeline's phase rows read
/// them.
fn stage_of(text: &str) -> Option<&'static str> {
    let t = text.to_ascii_lowercase();
    if t.contains("forward") || t == "fwd" || t.starts_with("fwd ") {
        Some("forward")
    } else if t.contains("backward") || t == "bwd" || t.starts_with("bwd ") {
        Some("backward")
    } else if t.contains("optimizer") || t.contains("optim_step") {
        Some("optimizer")
    } else {
        None
    }
}

/// Per stage, the time of its ranges inside `[s, e)`, ms; a range inside an earlier range of the
/// same stage (nested marks) is not counted again. `n` stages; `marked`: (stage, start, end) by start, none
/// longer than `longest` (so the ranges that reach into the step start after `s − longest`).
fn stage_times(marked: &[(usize, i64, i64)], n: usize, longest: i64, s: i64, e: i64) -> Vec<f64> {
    let mut out = vec![0.0; n];
    let mut reach = vec![i64::MIN; n];
    let from = marked.partition_point(|m| m.1 < s.saturating_sub(longest));
    for &(k, a, b) in &marked[from..] {
        if a >= e {
            break;
        }
        let (a, b) = (a.max(s).max(reach[k]), b.min(e));
        if b > a {
            out[k] += (b - a) as f64 / 1e6;
            reach[k] = reach[k].max(b);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_and_straddling_ranges_count_once_inside_the_step() {
        // forward 0..10 with a nested forward 2..4; backward 8..30 straddles the step's end 20.
        let marked = [
            (0, 0, 10_000_000),
            (0, 2_000_000, 4_000_000),
            (1, 8_000_000, 30_000_000),
        ];
        let longest = 22_000_000;
        assert_eq!(
            stage_times(&marked, 2, longest, 0, 20_000_000),
            vec![10.0, 12.0]
        );
        assert_eq!(
            stage_times(&marked, 2, longest, 20_000_000, 40_000_000),
            vec![0.0, 10.0]
        );
    }

    #[test]
    fn rows_take_the_slowest_rank() {
        let t = StepTable::from_rows(
            "test",
            vec!["a".into(), "b".into()],
            [
                (0, 0, 10.0, vec![4.0, 6.0]),
                (0, 1, 12.0, vec![3.0, 9.0]),
                (1, 0, 11.0, vec![5.0, 6.0]),
            ],
        );
        assert_eq!(t.steps.len(), 2);
        assert_eq!(t.steps[0].ranks, 2);
        assert_eq!(t.steps[0].total_ms, 12.0);
        assert_eq!(t.steps[0].stage_ms, vec![4.0, 9.0]);
        assert_eq!(t.steps[1].stage_ms, vec![5.0, 6.0]);
    }
}
