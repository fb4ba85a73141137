//! NCCL kernels per type, per process (the contract's `ranks[].kernels_by_type`): each kernel
//! counted by the operation its name says (`AllReduce`, `SendRecv`, ...); a kernel whose name
//! says none (`ncclDevKernel_Generic`, an unknown shape) by the operation of the log lines (or
//! trace operation) it runs, else as `unknown`. The counts of a process sum to its kernels.

use ingest_nsys::KernelNameCache;
use load::Session;
use model::log::{LogOp, ProcessKey};
use pipeline::{kernel_op, Analysis};
use std::collections::BTreeMap;

/// Per process, its NCCL kernels counted by type.
pub fn kernels_by_type(
    session: &Session,
    analysis: &Analysis,
) -> BTreeMap<ProcessKey, BTreeMap<String, u64>> {
    let mut names = KernelNameCache::default();
    let mut out: BTreeMap<ProcessKey, BTreeMap<String, u64>> = BTreeMap::new();
    for pm in &analysis.alignments.processes {
        let counts = out.entry(pm.process.clone()).or_default();
        for (k, m) in pm.kernels.iter().zip(pm.alignment.per_kernel.iter()) {
            let named = names.decode(&k.name).and_then(|n| n.op);
            let op = named.or_else(|| {
                let m = m?;
                let ops: Vec<LogOp> = m.lines().filter_map(|l| pm.log_ops.get(l)).collect();
                (!ops.is_empty()).then(|| kernel_op(&ops))
            });
            *counts
                .entry(op.map_or_else(|| "unknown".to_string(), |o| o.name().to_string()))
                .or_default() += 1;
        }
    }
    // Processes with kernels and no operation anywhere: their names alone.
    let only: Vec<&ProcessKey> = analysis.alignments.kernels_only.iter().collect();
    if !only.is_empty() {
        for e in session.exports() {
            let host = e.export.hosts.first().map_or("", String::as_str);
            for k in &e.export.kernels {
                let Some(p) = only.iter().find(|p| p.pid == k.pid && p.host == host) else {
                    continue;
                };
                let op = names.decode(&k.name).and_then(|n| n.op);
                *out.entry((*p).clone())
                    .or_default()
                    .entry(op.map_or_else(|| "unknown".to_string(), |o| o.name().to_string()))
                    .or_default() += 1;
            }
        }
    }
    out
}
