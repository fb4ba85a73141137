//! One generated run turned into what the aligner sees per rank, plus the truth pairs.
//!
//! The logs go through the real log parser and the reports through a real SQLite database
//! (in memory) and the real export reader, so the scenario measures the product's path, not a
//! shortcut around it.

use align::ProcessInput;
use ingest_nsys::{decode_kernel_name, read_export, ReadOptions};
use model::log::{LogOp, ProcessKey};
use model::nsys::{Kernel, KernelName, NvtxRange};
use rusqlite::Connection;
use sqlsource_native::NativeDb;
use std::collections::{BTreeMap, HashMap};
use synth::Run;

/// One rank's alignment inputs and the truth.
#[derive(Debug, Clone)]
pub struct RankInput {
    pub process: ProcessKey,
    /// Per-collective lines in log order.
    pub log_ops: Vec<LogOp>,
    /// NCCL kernels in start order.
    pub kernels: Vec<Kernel>,
    /// Decoded kernel names, indexed like `kernels`.
    pub names: Vec<Option<KernelName>>,
    /// (log op, kernel) pairs the generator says are right: every line of the (communicator,
    /// opCount) a kernel executes (a fused Send/Recv group gives several), first copies only.
    pub truth: Vec<(usize, usize)>,
    /// The NVTX ranges of the rank's export (NCCL's own among them when the run has them).
    pub nvtx: Vec<NvtxRange>,
}

impl RankInput {
    /// The call log op `l` belongs to: its (communicator, opCount), shared by every line of one
    /// grouped launch (see [`align::metrics::score_calls`]).
    pub fn call_of(&self, l: usize) -> (u64, u64) {
        (self.log_ops[l].comm, self.log_ops[l].op_count)
    }

    /// The aligner's view; the clock domain is the host (one export per node).
    pub fn input(&self) -> ProcessInput<'_> {
        ProcessInput {
            log_ops: &self.log_ops,
            kernels: &self.kernels,
            names: &self.names,
            clock: host_clock(&self.process.host),
            nvtx: &self.nvtx,
        }
    }
}

/// A clock-domain id per host name (FNV-1a).
pub fn host_clock(host: &str) -> u64 {
    host.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Parses a run's logs and reports and pairs them per process (host, pid).
pub fn rank_inputs(run: &Run) -> Result<Vec<RankInput>, String> {
    let mut ops: BTreeMap<ProcessKey, Vec<LogOp>> = BTreeMap::new();
    for (i, (name, bytes)) in run.files.iter().enumerate() {
        let parsed = ingest_nccl::parse_bytes(name, i as u32, bytes);
        for op in parsed.ops {
            ops.entry(op.process.clone()).or_default().push(op);
        }
    }
    let mut kernels: BTreeMap<ProcessKey, Vec<Kernel>> = BTreeMap::new();
    let mut nvtx: HashMap<String, Vec<NvtxRange>> = HashMap::new();
    for rep in &run.reports {
        let name = format!("report_{}.sqlite", rep.host);
        let mut conn = Connection::open_in_memory().map_err(|e| format!("{name}: {e}"))?;
        synth::write::write_report(&mut conn, rep).map_err(|e| format!("{name}: {e}"))?;
        let db = NativeDb::from_connection(conn);
        let export =
            read_export(&db, &name, &ReadOptions::default()).map_err(|d| d.message.clone())?;
        let host = export.hosts.first().cloned().unwrap_or_default();
        nvtx.entry(host.clone()).or_default().extend(export.nvtx);
        for k in &export.kernels {
            kernels
                .entry(ProcessKey {
                    host: host.as_str().into(),
                    pid: k.pid,
                })
                .or_default()
                .push(k);
        }
    }
    // Truth: (host, pid, correlation id) → (communicator pointer, opCount).
    let mut truth: HashMap<(String, u32, u32), (u64, u64)> = HashMap::new();
    for t in &run.truth.kernels {
        if let Some(op) = &t.log_op {
            let comm = u64::from_str_radix(op.comm.trim_start_matches("0x"), 16)
                .map_err(|e| format!("truth: communicator {}: {e}", op.comm))?;
            truth.insert(
                (t.host.clone(), t.pid, t.correlation_id),
                (comm, op.op_count),
            );
        }
    }
    let mut out = Vec::new();
    for (process, log_ops) in ops {
        let Some(mut ks) = kernels.remove(&process) else {
            continue;
        };
        ks.sort_by_key(|k| (k.start_ns, k.correlation_id));
        let names = ks.iter().map(|k| decode_kernel_name(&k.name)).collect();
        let pairs = truth_pairs(&process, &log_ops, &ks, &truth);
        let ranges = nvtx.get(process.host.as_str()).cloned().unwrap_or_default();
        out.push(RankInput {
            process,
            log_ops,
            kernels: ks,
            names,
            truth: pairs,
            nvtx: ranges,
        });
    }
    Ok(out)
}

/// The truth pairs of one process. A later line identical to an earlier one of the same
/// (communicator, opCount) is a duplicated print, not an operation of its own.
fn truth_pairs(
    process: &ProcessKey,
    log_ops: &[LogOp],
    kernels: &[Kernel],
    truth: &HashMap<(String, u32, u32), (u64, u64)>,
) -> Vec<(usize, usize)> {
    let mut lines: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
    for (l, o) in log_ops.iter().enumerate() {
        let group = lines.entry((o.comm, o.op_count)).or_default();
        if !group.iter().any(|&e| same_call(&log_ops[e], o)) {
            group.push(l);
        }
    }
    let mut out = Vec::new();
    for (k, kern) in kernels.iter().enumerate() {
        let key = (process.host.to_string(), process.pid, kern.correlation_id);
        if let Some(call) = truth.get(&key) {
            for &l in lines.get(call).map(Vec::as_slice).unwrap_or(&[]) {
                out.push((l, k));
            }
        }
    }
    out
}

fn same_call(a: &LogOp, b: &LogOp) -> bool {
    (
        a.op,
        a.root,
        a.count,
        a.datatype_code,
        a.sendbuff,
        a.recvbuff,
    ) == (
        b.op,
        b.root,
        b.count,
        b.datatype_code,
        b.sendbuff,
        b.recvbuff,
    )
}
