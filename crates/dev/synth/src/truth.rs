//! Ground truth written beside the inputs (`truth.json`), counted by CONTRACT.md's rules so the
//! analyzer's summary can be compared field by field.

use crate::layout::Layout;
use crate::model::Model;
use ::model::OpType;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct TruthRank {
    pub global_rank: u32,
    pub host: String,
    pub pid: u32,
    pub local_rank: u32,
    /// One per printed per-collective line (a duplicated line counts twice).
    pub ops_by_type: BTreeMap<String, u64>,
    /// `count × sizeof(datatype)` summed over the same lines.
    pub bytes_by_type: BTreeMap<String, u64>,
    /// NCCL kernels of this rank in the report.
    pub kernels: u64,
    /// Of those, kernels with a log operation.
    pub matched_ops: u64,
    /// Per-collective lines printed twice (same process, communicator, opCount).
    pub duplicated_lines: u64,
    /// The link traffic of the operations this rank's log shows (a duplicated line once, a
    /// dropped one not at all), per parallelism of their communicator: ring bytes per rank, as
    /// the thesis' volume formulas count them ([`link_traffic`]).
    pub log_volume_by_parallelism: BTreeMap<String, u64>,
    /// How much later than its node's this rank's own capture started, which its export's
    /// times are relative to (per-rank exports with their own sessions, counting from their
    /// start): its report clock reads the node's minus this.
    #[serde(skip_serializing_if = "is_zero")]
    pub report_shift_ns: i64,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

/// Bytes one rank moves over its links for one operation of `bytes` (`count × sizeof`) on a
/// communicator of `n` ranks: ring AllReduce 2(n−1)/n of the buffer, AllGather and
/// ReduceScatter (n−1) shares of the per-rank count, everything else the message once.
pub fn link_traffic(op: OpType, bytes: u64, n: u32) -> u64 {
    let (b, n) = (u128::from(bytes), u128::from(n.max(1)));
    let moved = match op {
        OpType::AllReduce => (2 * (n - 1) * b + n / 2) / n,
        OpType::AllGather | OpType::ReduceScatter => (n - 1) * b,
        _ => b,
    };
    moved as u64
}

#[derive(Debug, Clone, Serialize)]
pub struct TruthComm {
    /// commId as printed, `0x...`.
    pub id: String,
    pub size: u32,
    pub global_ranks: Vec<u32>,
    pub parallelism: String,
    /// Pointer printed by each member, same order as `global_ranks`.
    pub pointers: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LogOpRef {
    /// Communicator pointer as printed in that process' log (`0x...`).
    pub comm: String,
    pub op_count: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TruthKernel {
    pub pid: u32,
    pub host: String,
    pub global_rank: u32,
    pub correlation_id: u32,
    pub name: String,
    /// The log operation this kernel executes, or null (orphan kernel, dropped line).
    pub log_op: Option<LogOpRef>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TruthClock {
    pub host: String,
    /// report_ns = s + offset_ns + drift_ppm·1e−6·s, with s = true_utc_ns − session_start_utc_ns
    /// (report times are ns since the capture started, as in real exports)
    pub offset_ns: i64,
    pub drift_ppm: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Truth {
    pub preset: Option<String>,
    pub nccl_version: String,
    /// The launcher that tagged the log lines (`none`, `torchrun`, `srun`, `mpirun`).
    #[serde(default)]
    pub launcher: crate::Launcher,
    pub seed: u64,
    /// UTC epoch ns of the run's reference instant (log timestamps are true epoch time).
    pub t0_ns: i64,
    /// UTC epoch ns at which every node's capture started (report time 0 on a perfect clock).
    pub session_start_utc_ns: i64,
    pub layout: Layout,
    pub model: Model,
    pub microbatches_per_iteration: u32,
    pub ranks: Vec<TruthRank>,
    pub communicators: Vec<TruthComm>,
    pub kernels: Vec<TruthKernel>,
    pub clocks: Vec<TruthClock>,
    /// Per-collective lines with no kernel (orphans and kernels dropped), all ranks.
    pub unmatched_log_ops: u64,
    /// Kernels with no log line (orphans and lines dropped), all ranks.
    pub unmatched_kernels: u64,
    /// The slow stages placed in the run (`RunConfig::stages`), when any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub step_delays: Vec<crate::step_stages::StepDelay>,
    pub files: Vec<String>,
}
