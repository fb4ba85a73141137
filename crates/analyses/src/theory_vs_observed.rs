//! Theory versus observed volume (thesis table 5.1): each theoretical entry of the user's model
//! and layout beside what the ranks it describes actually moved.
//!
//! A theory entry holds per rank for one parallelism and one pipeline role (edge stages have
//! one stage boundary, middle stages two); its observation is the mean over the ranks in that
//! role of their traffic on communicators of that parallelism ([`crate::volumes`]), and the
//! `all` entry compares with each rank's whole traffic, unlabelled communicators included.

use crate::volumes::RankVolume;
use enrich::Parallelism;
use model::OpType;
use std::collections::BTreeMap;
use theory::{estimate, RankRole, TheoryConfig, TheoryEntry};

/// One theoretical entry and its observation.
#[derive(Debug, Clone, PartialEq)]
pub struct VolumeComparison {
    pub entry: TheoryEntry,
    /// (global rank, observed bytes) of every rank the entry holds for.
    pub observed: Vec<(u32, u64)>,
    /// The observation by operation type, mean over the entry's ranks.
    pub observed_by_op: Vec<(OpType, f64)>,
}

impl VolumeComparison {
    /// The mean over the entry's ranks, rounded; `None` when no rank was observed.
    pub fn observed_mean(&self) -> Option<u64> {
        if self.observed.is_empty() {
            return None;
        }
        let sum: u128 = self.observed.iter().map(|&(_, b)| b as u128).sum();
        Some((sum as f64 / self.observed.len() as f64).round() as u64)
    }

    /// Observed over theoretical, as the thesis reports it (1.59 / 1.51 = 1.05).
    pub fn ratio(&self) -> Option<f64> {
        let obs = self.observed_mean()?;
        (self.entry.theoretical_bytes > 0.0).then(|| obs as f64 / self.entry.theoretical_bytes)
    }

    /// The operation type whose observed traffic differs most from the theory's, with the
    /// difference (observed − theoretical, bytes): the thesis' "primary discrepancy" (table 5.1),
    /// e.g. TP's extra Broadcasts and AllGathers that the formula leaves out.
    pub fn primary_discrepancy(&self) -> Option<(OpType, f64)> {
        let mut ops: BTreeMap<OpType, f64> = BTreeMap::new();
        for (op, b) in &self.observed_by_op {
            *ops.entry(*op).or_default() += b;
        }
        for (op, b) in &self.entry.by_op {
            *ops.entry(*op).or_default() -= b;
        }
        ops.into_iter()
            .filter(|(_, d)| d.abs() >= 1.0)
            .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
    }
}

/// Every entry of `cfg`'s theory with the run's observed volumes ([`crate::observed_volumes`]).
pub fn compare_volumes(cfg: &TheoryConfig, volumes: &[RankVolume]) -> Vec<VolumeComparison> {
    estimate(cfg)
        .into_iter()
        .map(|entry| {
            let ranks: Vec<&RankVolume> = volumes
                .iter()
                .filter(|v| holds_for(cfg, entry.rank_role, v.global_rank))
                .collect();
            let observed = ranks
                .iter()
                .map(|v| (v.global_rank, observed_for(&entry, v)))
                .collect();
            let observed_by_op = mean_by_op(&entry, &ranks);
            VolumeComparison {
                entry,
                observed,
                observed_by_op,
            }
        })
        .collect()
}

/// Whether a rank is in the pipeline role: stage = rank / (ranks per stage), Megatron order
/// (pipeline outermost).
fn holds_for(cfg: &TheoryConfig, role: RankRole, rank: u32) -> bool {
    let pp = cfg.parallel.pp.max(1);
    let per_stage = (cfg.world_size() / pp).max(1);
    let stage = rank as u64 / per_stage;
    let edge = stage == 0 || stage == pp - 1;
    match role {
        RankRole::All => true,
        RankRole::Edge => edge,
        RankRole::Middle => !edge,
    }
}

/// The communicator label a theory entry compares with; `None` for the `all` entry (every
/// label).
fn label_of(entry: &TheoryEntry) -> Option<Parallelism> {
    match entry.parallelism {
        theory::Parallelism::Dp => Some(Parallelism::DP),
        theory::Parallelism::Tp => Some(Parallelism::TP),
        theory::Parallelism::Cp => Some(Parallelism::CP),
        theory::Parallelism::Pp => Some(Parallelism::PP),
        theory::Parallelism::Ep => Some(Parallelism::EP),
        theory::Parallelism::All => None,
    }
}

fn observed_for(entry: &TheoryEntry, v: &RankVolume) -> u64 {
    match label_of(entry) {
        Some(label) => v.by_parallelism.get(&label).copied().unwrap_or(0),
        None => v.total(),
    }
}

/// Mean traffic per operation type over `ranks`, on the entry's communicators.
fn mean_by_op(entry: &TheoryEntry, ranks: &[&RankVolume]) -> Vec<(OpType, f64)> {
    let label = label_of(entry);
    let mut sum: BTreeMap<OpType, f64> = BTreeMap::new();
    for v in ranks {
        for (&(p, op), &b) in &v.by_parallelism_op {
            if label.is_none_or(|l| l == p) {
                *sum.entry(op).or_default() += b as f64;
            }
        }
    }
    let n = ranks.len().max(1) as f64;
    sum.into_iter().map(|(op, b)| (op, b / n)).collect()
}
