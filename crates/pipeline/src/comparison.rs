//! Theory versus observed volume (thesis table 5.1): each theoretical entry of the user's model
//! and layout beside what the ranks it describes actually moved.
//!
//! A theory entry holds per rank for one parallelism and one pipeline role (edge stages have
//! one stage boundary, middle stages two); its observation is the mean over the ranks in that
//! role of their traffic on communicators of that parallelism ([`crate::volumes`]), and the
//! `all` entry compares with each rank's whole traffic, unlabelled communicators included.

use crate::analysis::Analysis;
use crate::volumes::RankVolume;
use enrich::Parallelism;
use theory::{estimate, RankRole, TheoryConfig, TheoryEntry};

/// One theoretical entry and its observation.
#[derive(Debug, Clone, PartialEq)]
pub struct VolumeComparison {
    pub entry: TheoryEntry,
    /// (global rank, observed bytes) of every rank the entry holds for.
    pub observed: Vec<(u32, u64)>,
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
}

/// Every entry of `cfg`'s theory with the analysis' observed volumes.
pub fn compare_volumes(cfg: &TheoryConfig, analysis: &Analysis) -> Vec<VolumeComparison> {
    estimate(cfg)
        .into_iter()
        .map(|entry| {
            let observed = analysis
                .volumes
                .iter()
                .filter(|v| holds_for(cfg, entry.rank_role, v.global_rank))
                .map(|v| (v.global_rank, observed_for(&entry, v)))
                .collect();
            VolumeComparison { entry, observed }
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

fn observed_for(entry: &TheoryEntry, v: &RankVolume) -> u64 {
    let label = match entry.parallelism {
        theory::Parallelism::Dp => Parallelism::DP,
        theory::Parallelism::Tp => Parallelism::TP,
        theory::Parallelism::Cp => Parallelism::CP,
        theory::Parallelism::Pp => Parallelism::PP,
        theory::Parallelism::Ep => Parallelism::EP,
        theory::Parallelism::All => return v.total(),
    };
    v.by_parallelism.get(&label).copied().unwrap_or(0)
}
