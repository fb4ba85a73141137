//! Runs the aligner per process: a process's log operations (from any log, a combined log
//! included) against its NCCL kernels (from any export), keyed by host and pid. Processes seen
//! on one side only are listed, never guessed.

use crate::session::Session;
use align::{align_all, AlignConfig, KernelMatch, ProcessAlignment, ProcessInput};
use ingest_nsys::decode_kernel_name;
use model::log::{LogOp, ProcessKey};
use model::nsys::Kernel;
use model::OpType;
use std::collections::{BTreeMap, BTreeSet};

/// The alignment of one process.
pub struct ProcessMatch {
    pub process: ProcessKey,
    pub log_ops: Vec<LogOp>,
    pub kernels: Vec<Kernel>,
    pub alignment: ProcessAlignment,
}

impl ProcessMatch {
    /// Kernels that carry a log operation.
    pub fn matched_kernels(&self) -> u64 {
        self.matched().count() as u64
    }

    /// Every kernel that carries a log operation, with its match (kernel order).
    pub fn matched(&self) -> impl Iterator<Item = (&Kernel, &KernelMatch)> {
        self.kernels
            .iter()
            .zip(&self.alignment.per_kernel)
            .filter_map(|(k, m)| Some((k, m.as_ref()?)))
    }

    /// Log lines that no kernel accounts for (neither matched, fused, nor a duplicate of a match).
    pub fn unmatched_log_ops(&self) -> u64 {
        let accounted: usize = self
            .alignment
            .per_kernel
            .iter()
            .flatten()
            .map(|m| m.log_ops.len() + m.duplicates.len())
            .sum();
        (self.log_ops.len() - accounted.min(self.log_ops.len())) as u64
    }
}

/// Every process's alignment, and the processes found on one side only.
#[derive(Default)]
pub struct Alignments {
    pub processes: Vec<ProcessMatch>,
    /// Processes with log operations but no kernels in any export.
    pub log_only: Vec<ProcessKey>,
    /// Processes with NCCL kernels but no log operations.
    pub kernels_only: Vec<ProcessKey>,
}

impl Alignments {
    /// The alignment of one process, if it was aligned.
    pub fn get(&self, process: &ProcessKey) -> Option<&ProcessMatch> {
        self.processes.iter().find(|p| &p.process == process)
    }
}

/// Aligns every process present in both a log and an export.
pub fn align_session(session: &Session, cfg: &AlignConfig) -> Alignments {
    let mut ops: BTreeMap<ProcessKey, Vec<LogOp>> = BTreeMap::new();
    for log in session.logs() {
        for op in &log.parsed.ops {
            ops.entry(op.process.clone()).or_default().push(op.clone());
        }
    }
    let mut kernels: BTreeMap<ProcessKey, Vec<Kernel>> = BTreeMap::new();
    // Kernel times of one export share its capture's clock: the consensus compares those only.
    let mut clock: BTreeMap<ProcessKey, u64> = BTreeMap::new();
    for (x, e) in session.exports().iter().enumerate() {
        // An export covers one node (or one rank): its first host names every process in it.
        let host = e.export.hosts.first().cloned().unwrap_or_default();
        for k in &e.export.kernels {
            let key = ProcessKey {
                host: host.clone(),
                pid: k.pid,
            };
            clock.entry(key.clone()).or_insert(x as u64);
            kernels.entry(key).or_default().push(k.clone());
        }
    }
    adopt_hostless_kernels(&ops, &mut kernels);
    let mut out = Alignments::default();
    let mut both = Vec::new();
    let keys: BTreeSet<ProcessKey> = ops.keys().chain(kernels.keys()).cloned().collect();
    for key in keys {
        match (ops.remove(&key), kernels.remove(&key)) {
            (Some(log_ops), Some(mut ks)) => {
                ks.sort_by_key(|k| (k.start_ns, k.correlation_id));
                let names: Vec<_> = ks.iter().map(|k| decode_kernel_name(&k.name)).collect();
                both.push((key, log_ops, ks, names));
            }
            (Some(_), None) => out.log_only.push(key),
            (None, Some(_)) => out.kernels_only.push(key),
            (None, None) => {}
        }
    }
    // All processes at once: in parallel natively, and with the cross-rank consensus among
    // the processes of one export (an adopted hostless process keeps its export's clock).
    let inputs: Vec<ProcessInput<'_>> = both
        .iter()
        .map(|(key, log_ops, ks, names)| {
            let hostless = ProcessKey {
                host: String::new(),
                pid: key.pid,
            };
            let x = clock.get(key).or(clock.get(&hostless)).copied();
            ProcessInput {
                log_ops,
                kernels: ks,
                names,
                clock: x.unwrap_or(u64::MAX),
                // The export's NVTX ranges: where NCCL's own are there, the exact join checks
                // the alignment.
                nvtx: x
                    .and_then(|x| session.exports().get(x as usize))
                    .map_or(&[], |e| e.export.nvtx.as_slice()),
            }
        })
        .collect();
    let aligned = align_all(&inputs, cfg);
    for ((process, log_ops, kernels, _), alignment) in both.into_iter().zip(aligned) {
        out.processes.push(ProcessMatch {
            process,
            log_ops,
            kernels,
            alignment,
        });
    }
    out
}

/// An export without a hostname (older exports, or a table not written) keys its processes by
/// pid alone. Such a pid is given to the log process of the same pid when exactly one exists:
/// two hosts may reuse a pid, and then nothing is guessed.
fn adopt_hostless_kernels(
    ops: &BTreeMap<ProcessKey, Vec<LogOp>>,
    kernels: &mut BTreeMap<ProcessKey, Vec<Kernel>>,
) {
    let hostless: Vec<ProcessKey> = kernels
        .keys()
        .filter(|k| k.host.is_empty())
        .cloned()
        .collect();
    for key in hostless {
        let mut candidates = ops
            .keys()
            .filter(|p| p.pid == key.pid && !kernels.contains_key(*p));
        if let (Some(owner), None) = (candidates.next(), candidates.next()) {
            let owner = owner.clone();
            if let Some(ks) = kernels.remove(&key) {
                kernels.insert(owner, ks);
            }
        }
    }
}

/// The operation of a kernel from the log lines matched to it (not empty): their shared op,
/// else SendRecv (grouped Send and Recv fused into one kernel). The exports name kernels by it.
pub fn kernel_op(ops: &[&LogOp]) -> OpType {
    let first = ops[0].op;
    if ops.iter().all(|o| o.op == first) {
        first
    } else {
        OpType::SendRecv
    }
}
