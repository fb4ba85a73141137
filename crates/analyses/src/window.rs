//! What happened inside a time window of the synchronised timeline: the matched NCCL kernels
//! that overlap it, counted per operation type and per rank, with their bytes (the log's
//! message sizes, fused Send/Recv lines added up), their busy time, and the mean algorithm
//! bandwidth (bytes over busy time). A kernel that straddles an edge counts whole: its bytes
//! cannot be split by time without inventing a rate.

use model::log::LogOp;
use pipeline::kernel_op;
use pipeline::Analysis;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One row of a window's aggregate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowRow {
    /// The operation (`AllReduce`, ...) or the rank (`rank 3`).
    pub key: String,
    pub kernels: u64,
    pub bytes: u64,
    pub busy_ns: i64,
}

impl WindowRow {
    /// Bytes per nanosecond, which is GB/s.
    pub fn algbw_gbps(&self) -> Option<f64> {
        (self.busy_ns > 0).then(|| self.bytes as f64 / self.busy_ns as f64)
    }

    fn add(&mut self, bytes: u64, busy_ns: i64) {
        self.kernels += 1;
        self.bytes += bytes;
        self.busy_ns += busy_ns;
    }
}

/// The aggregate of one window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowSummary {
    pub start_ns: i64,
    pub end_ns: i64,
    /// By operation name, sorted by name.
    pub per_op: Vec<WindowRow>,
    /// By global rank, in rank order.
    pub per_rank: Vec<WindowRow>,
    /// NCCL kernels in the window with no log operation (no bytes known).
    pub unmatched_kernels: u64,
}

/// Aggregates the kernels overlapping `[start_ns, end_ns)` (synchronised time).
pub fn window_summary(analysis: &Analysis, start_ns: i64, end_ns: i64) -> WindowSummary {
    let rank_of: BTreeMap<_, u32> = analysis
        .processes
        .iter()
        .map(|p| (&p.process, p.global_rank))
        .collect();
    let mut per_op: BTreeMap<&'static str, WindowRow> = BTreeMap::new();
    let mut per_rank: BTreeMap<u32, WindowRow> = BTreeMap::new();
    let mut unmatched_kernels = 0;
    for pm in &analysis.alignments.processes {
        let Some(&rank) = rank_of.get(&pm.process) else {
            continue;
        };
        for (k, m) in pm.kernels.iter().zip(pm.alignment.per_kernel.iter()) {
            let (s, e) = (
                analysis.clocks.to_sync(rank, k.start_ns),
                analysis.clocks.to_sync(rank, k.end_ns),
            );
            if s >= end_ns || e <= start_ns {
                continue;
            }
            let ops: Vec<LogOp> = m
                .iter()
                .flat_map(|m| m.lines().filter_map(|i| pm.log_ops.get(i)))
                .collect();
            if ops.is_empty() {
                unmatched_kernels += 1;
                continue;
            }
            let op = kernel_op(&ops);
            let bytes: u64 = ops.iter().map(|o| o.msg_bytes()).sum();
            let busy = (e - s).max(0);
            per_op.entry(op.name()).or_default().add(bytes, busy);
            per_rank.entry(rank).or_default().add(bytes, busy);
        }
    }
    WindowSummary {
        start_ns,
        end_ns,
        per_op: per_op
            .into_iter()
            .map(|(name, r)| WindowRow {
                key: name.to_string(),
                ..r
            })
            .collect(),
        per_rank: per_rank
            .into_iter()
            .map(|(rank, r)| WindowRow {
                key: format!("rank {rank}"),
                ..r
            })
            .collect(),
        unmatched_kernels,
    }
}
