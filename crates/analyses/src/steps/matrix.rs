//! The stage matrix: every stage's duration on every rank at every step, dense, as the frontier
//! reads it.
//!
//! Built from rows in the order each rank ran its stages ([`MatrixBuilder::push`]). A stage a rank
//! runs again in the same step (gradient accumulation: `forward`, `backward`, `forward`, ...) is
//! expanded per microbatch before the frontier is taken (seed `stagefrontier.txt`, §3: "the
//! ordered list is expanded by accumulation index"): its second run is the stage `forward#1`, its
//! third `forward#2`, each in the group `forward` that shares are reported by. Stage order is the
//! order of first appearance; a rank that runs the stages in another order (pipeline stages of
//! 1F1B do) makes its step's order conflict, which the analysis labels rather than guesses.

use rustc_hash::FxHashMap;

/// Sentinel for a stage a rank did not report.
const MISSING: f64 = f64::NAN;

/// Why a step cannot be read as one complete, aligned stage vector per rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepFlaw {
    /// A rank lacks a stage other ranks of the step ran (or the source dropped a row of it).
    MissingStage,
    /// Ranks ran different stage sequences (different roles): in another order than the first
    /// rank, or each its own usual sequence and these differ.
    OrderDiffers,
}

/// Every stage's duration on every rank at every step, milliseconds.
#[derive(Debug, Clone, Default)]
pub struct StageMatrix {
    /// Stages after expansion, in order (`forward`, `backward`, `forward#1`, ...).
    pub stage_names: Vec<String>,
    /// Per stage, its group's index into [`StageMatrix::groups`].
    pub stage_group: Vec<u32>,
    /// The stage names as reported (before expansion), in order of first appearance.
    pub groups: Vec<String>,
    /// Step ids, ascending.
    pub steps: Vec<u64>,
    /// Rank ids, ascending.
    pub ranks: Vec<u32>,
    /// `[(step · ranks + rank) · stages + stage]`; NaN where the rank has no such row.
    durations: Vec<f64>,
    /// Per (step, rank): whether the rank reported anything at that step.
    present: Vec<bool>,
    /// Per step: the first flaw found, if any (see [`StageMatrix::flaw`]).
    flaws: Vec<Option<StepFlaw>>,
    /// Per step: set by the source (a bad row whose stage is unknown, see [`MatrixBuilder::flag`]).
    flagged: Vec<bool>,
}

impl StageMatrix {
    pub fn stages(&self) -> usize {
        self.stage_names.len()
    }

    /// The duration of `stage` on the rank at index `rank` in the step at index `step`; `None`
    /// when that rank did not report it.
    pub fn duration(&self, step: usize, rank: usize, stage: usize) -> Option<f64> {
        let d = self.durations[(step * self.ranks.len() + rank) * self.stages() + stage];
        (!d.is_nan()).then_some(d)
    }

    /// One rank's row of a step: every stage's duration, NaN where missing.
    pub fn row(&self, step: usize, rank: usize) -> &[f64] {
        let s = self.stages();
        let at = (step * self.ranks.len() + rank) * s;
        &self.durations[at..at + s]
    }

    /// Whether the rank at index `rank` reported anything at the step at index `step`.
    pub fn present(&self, step: usize, rank: usize) -> bool {
        self.present[step * self.ranks.len() + rank]
    }

    /// Why the step at index `step` is not a complete aligned vector per rank (a missing stage, a
    /// different order, or a bad row the source could not place), if it is not.
    pub fn flaw(&self, step: usize) -> Option<StepFlaw> {
        self.flaws[step].or(self.flagged[step].then_some(StepFlaw::MissingStage))
    }

    /// Whether the stages were expanded (some stage ran more than once in a step).
    pub fn expanded(&self) -> bool {
        self.stage_names.len() != self.groups.len()
    }
}

/// Collects rows, then builds the [`StageMatrix`].
#[derive(Debug, Default)]
pub struct MatrixBuilder {
    groups: Vec<String>,
    group_ids: FxHashMap<String, u32>,
    /// (step, rank, group, duration ms), in the order each rank ran them.
    rows: Vec<(u64, u32, u32, f64)>,
    flagged: Vec<u64>,
}

impl MatrixBuilder {
    pub fn new() -> MatrixBuilder {
        MatrixBuilder::default()
    }

    /// The id of a stage name (as reported, before expansion), interned on first use.
    pub fn stage(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.group_ids.get(name) {
            return id;
        }
        let id = self.groups.len() as u32;
        self.groups.push(name.to_string());
        self.group_ids.insert(name.to_string(), id);
        id
    }

    /// One row: `stage` (from [`MatrixBuilder::stage`]) ran `duration_ms` on `rank` at `step`.
    /// Rows of one (step, rank) must come in the order the rank ran them.
    pub fn push(&mut self, step: u64, rank: u32, stage: u32, duration_ms: f64) {
        self.rows.push((step, rank, stage, duration_ms));
    }

    /// Marks a step incomplete whatever its rows say (the source dropped a row of it).
    pub fn flag(&mut self, step: u64) {
        self.flagged.push(step);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn finish(self) -> StageMatrix {
        let MatrixBuilder {
            groups,
            rows,
            mut flagged,
            ..
        } = self;
        let steps: Vec<u64> = distinct(rows.iter().map(|r| r.0));
        let ranks: Vec<u32> = distinct(rows.iter().map(|r| r.1));
        let step_at: FxHashMap<u64, u32> = index_of(&steps);
        let rank_at: FxHashMap<u32, u32> = index_of(&ranks);
        let (nt, nr, ng) = (steps.len(), ranks.len(), groups.len());

        // Expansion: the k-th run of a group in a (step, rank) is the stage (group, k), numbered
        // in order of first appearance.
        let mut runs = vec![0u16; nt * nr * ng];
        let mut stage_of: Vec<Vec<u32>> = vec![Vec::new(); ng];
        let mut stage_names: Vec<String> = Vec::new();
        let mut stage_group: Vec<u32> = Vec::new();
        let mut last = vec![-1i64; nt * nr];
        let mut flaws: Vec<Option<StepFlaw>> = vec![None; nt];
        let mut cells: Vec<(u32, u32)> = Vec::with_capacity(rows.len());
        // Per (step, rank): a hash of the sequence of stages it ran (FNV-1a over group ids).
        let mut sequence = vec![0xcbf2_9ce4_8422_2325u64; nt * nr];
        for &(step, rank, g, _) in &rows {
            let (t, r) = (step_at[&step] as usize, rank_at[&rank] as usize);
            let cell = t * nr + r;
            sequence[cell] = (sequence[cell] ^ u64::from(g) ^ 0x100).wrapping_mul(0x0100_0000_01b3);
            let k = &mut runs[cell * ng + g as usize];
            let run = *k as usize;
            *k = k.saturating_add(1);
            let ids = &mut stage_of[g as usize];
            if ids.len() <= run {
                ids.push(stage_names.len() as u32);
                let name = &groups[g as usize];
                stage_names.push(if run == 0 {
                    name.clone()
                } else {
                    format!("{name}#{run}")
                });
                stage_group.push(g);
            }
            let s = ids[run];
            if i64::from(s) < last[cell] {
                flaws[t].get_or_insert(StepFlaw::OrderDiffers);
            }
            last[cell] = i64::from(s);
            cells.push((cell as u32, s));
        }
        let ns = stage_names.len();
        let mut durations = vec![MISSING; nt * nr * ns];
        let mut present = vec![false; nt * nr];
        for (&(cell, s), row) in cells.iter().zip(&rows) {
            durations[cell as usize * ns + s as usize] = row.3;
            present[cell as usize] = true;
        }
        // A stage some rank of the step ran that another present rank lacks.
        for t in 0..nt {
            let mut ran = vec![false; ns];
            for r in (0..nr).filter(|&r| present[t * nr + r]) {
                for (s, d) in durations[(t * nr + r) * ns..(t * nr + r + 1) * ns]
                    .iter()
                    .enumerate()
                {
                    ran[s] |= !d.is_nan();
                }
            }
            let lacks = (0..nr).filter(|&r| present[t * nr + r]).any(|r| {
                let row = &durations[(t * nr + r) * ns..(t * nr + r + 1) * ns];
                row.iter().zip(&ran).any(|(d, &ran)| ran && d.is_nan())
            });
            if lacks {
                flaws[t] = Some(StepFlaw::MissingStage);
            }
        }
        different_roles(&sequence, &present, nt, nr, &mut flaws);
        flagged.sort_unstable();
        flagged.dedup();
        let flagged: Vec<bool> = steps
            .iter()
            .map(|s| flagged.binary_search(s).is_ok())
            .collect();
        StageMatrix {
            stage_names,
            stage_group,
            groups,
            steps,
            ranks,
            durations,
            present,
            flaws,
            flagged,
        }
    }
}

/// Steps where every rank ran its own usual stage sequence and these differ between ranks (a
/// pipeline's first and last stages, say) are role differences, not missing stages: a rank
/// that deviates from its own usual sequence keeps the flaw found for it.
fn different_roles(
    sequence: &[u64],
    present: &[bool],
    nt: usize,
    nr: usize,
    flaws: &mut [Option<StepFlaw>],
) {
    // A rank's usual sequence: the one it runs in most of its steps (at least two).
    let usual: Vec<Option<u64>> = (0..nr)
        .map(|r| {
            let mut count: FxHashMap<u64, usize> = FxHashMap::default();
            let mut steps = 0;
            for t in (0..nt).filter(|&t| present[t * nr + r]) {
                *count.entry(sequence[t * nr + r]).or_default() += 1;
                steps += 1;
            }
            count
                .into_iter()
                .find(|&(_, n)| n >= 2 && 2 * n > steps)
                .map(|(h, _)| h)
        })
        .collect();
    for (t, flaw) in flaws.iter_mut().enumerate() {
        let ranks: Vec<usize> = (0..nr).filter(|&r| present[t * nr + r]).collect();
        let usual_all = ranks
            .iter()
            .all(|&r| usual[r] == Some(sequence[t * nr + r]));
        let differ = ranks
            .windows(2)
            .any(|w| sequence[t * nr + w[0]] != sequence[t * nr + w[1]]);
        if usual_all && differ {
            *flaw = Some(StepFlaw::OrderDiffers);
        }
    }
}

/// The distinct values, ascending. Rows come grouped (a step's, a rank's), so runs of one value
/// are dropped as they come and only the run starts are sorted.
fn distinct<T: Copy + Ord>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for v in values {
        if out.last() != Some(&v) {
            out.push(v);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn index_of<T: Copy + Eq + std::hash::Hash>(sorted: &[T]) -> FxHashMap<T, u32> {
    sorted
        .iter()
        .enumerate()
        .map(|(i, &v)| (v, i as u32))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_repeated_stages_per_microbatch() {
        let mut b = MatrixBuilder::new();
        let (f, w) = (b.stage("forward"), b.stage("backward"));
        for rank in [1, 0] {
            for (g, d) in [(f, 1.0), (w, 2.0), (f, 3.0), (w, 4.0)] {
                b.push(7, rank, g, d);
            }
        }
        let m = b.finish();
        assert_eq!(
            m.stage_names,
            ["forward", "backward", "forward#1", "backward#1"]
        );
        assert_eq!(m.stage_group, [0, 1, 0, 1]);
        assert!(m.expanded());
        assert_eq!(m.ranks, [0, 1]);
        assert_eq!(m.row(0, 0), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(m.flaw(0), None);
    }

    #[test]
    fn ranks_with_their_own_usual_sequences_differ_in_role() {
        // A pipeline: rank 0 runs F F B B, rank 1 F B F B, in every step; in step 2 rank 0
        // drops a backward row (a missing stage, not a role).
        let mut b = MatrixBuilder::new();
        let (f, w) = (b.stage("forward"), b.stage("backward"));
        for step in 0..3 {
            let r0: &[u32] = if step == 2 { &[f, f, w] } else { &[f, f, w, w] };
            for &g in r0 {
                b.push(step, 0, g, 1.0);
            }
            for g in [f, w, f, w] {
                b.push(step, 1, g, 1.0);
            }
        }
        let m = b.finish();
        assert_eq!(m.flaw(0), Some(StepFlaw::OrderDiffers));
        assert_eq!(m.flaw(1), Some(StepFlaw::OrderDiffers));
        assert_eq!(m.flaw(2), Some(StepFlaw::MissingStage));
    }

    #[test]
    fn flags_missing_stages_and_other_orders() {
        let mut b = MatrixBuilder::new();
        let (d, f, w) = (b.stage("data"), b.stage("forward"), b.stage("backward"));
        // Step 0: rank 1 lacks backward. Step 1: rank 1 runs backward before forward.
        // Step 2: complete; rank 2 absent (a world change, not a flaw of the step).
        for (step, rank, g) in [
            (0, 0, d),
            (0, 0, f),
            (0, 0, w),
            (0, 1, d),
            (0, 1, f),
            (1, 0, d),
            (1, 0, f),
            (1, 0, w),
            (1, 1, d),
            (1, 1, w),
            (1, 1, f),
            (2, 0, d),
            (2, 0, f),
            (2, 0, w),
            (2, 1, d),
            (2, 1, f),
            (2, 1, w),
            (3, 2, d),
        ] {
            b.push(step, rank, g, 1.0);
        }
        b.flag(3);
        let m = b.finish();
        assert_eq!(m.flaw(0), Some(StepFlaw::MissingStage));
        assert_eq!(m.flaw(1), Some(StepFlaw::OrderDiffers));
        assert_eq!(m.flaw(2), None);
        assert_eq!(m.flaw(3), Some(StepFlaw::MissingStage));
        assert!(!m.present(2, 2) && m.present(3, 2));
        assert_eq!(m.duration(0, 1, 2), None);
        assert_eq!(m.duration(0, 1, 1), Some(1.0));
    }
}
