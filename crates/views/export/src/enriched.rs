//! One enriched record per NCCL kernel: the kernel's timing and identity, and — when the aligner
//! matched it to log lines — the log's operation, sizes, bandwidths against the topology's
//! bottleneck and the communicator's parallelism (thesis §4.2.5–§4.2.6, figure 4.2).
//!
//! Why a shared builder: the Chrome trace and the CSV show the same fields; building them once
//! keeps the two exports identical row for row.
//!
//! Ranks: a process's global rank comes from the communicators (init lines or the thesis' host
//! order), else from the per-process summaries; processes with kernels but no log lines get
//! ranks after the last known one, so every kernel has a place on the timeline.

use crate::fields::*;
use align::KernelMatch;
use enrich::Bottleneck;
use load::{LoadedExport, ProcessOps, Session};
use model::log::{LogOp, ProcessKey};
use model::nsys::{Kernel, NvtxRange};
use model::OpType;
use pipeline::Analysis;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One NCCL kernel with every field of [`crate::fields::all_fields`] in `args`.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelRecord {
    pub rank: u32,
    /// Synchronised to the reference rank's clock ([`pipeline::Analysis::clocks`]); the times as
    /// read are in `args` ([`OWN_CLOCK_START_NS`]).
    pub start_ns: i64,
    pub end_ns: i64,
    /// The log operation's name when matched, else the kernel name's op, else `NCCL kernel`.
    pub name: String,
    pub matched: bool,
    /// The communicator's parallelism (`DP`, ..., `unknown`) for matched kernels.
    pub parallelism: Option<&'static str>,
    pub args: Map<String, Value>,
}

/// Everything the exports show.
#[derive(Debug, Clone, Default)]
pub struct Records {
    /// Ordered by rank, then start time.
    pub kernels: Vec<KernelRecord>,
    /// Host of every rank that has kernels or NVTX ranges.
    pub ranks: BTreeMap<u32, String>,
    /// NVTX ranges per rank, with the rank they belong to.
    pub nvtx: Vec<(u32, NvtxRange)>,
}

/// The enriched record of one kernel: `kernel` indexes the process's kernels in its alignment
/// (`ProcessMatch::kernels`). For a details panel: it costs one pass over the communicators,
/// not over every kernel.
pub fn kernel_record(
    session: &Session,
    analysis: &Analysis,
    process: &ProcessKey,
    kernel: usize,
) -> Option<KernelRecord> {
    let ranks = assign_ranks(analysis);
    let &rank = ranks.get(process)?;
    let pm = analysis
        .alignments
        .processes
        .iter()
        .find(|pm| &pm.process == process)?;
    let k = pm.kernels.get(kernel)?;
    let m = pm.alignment.per_kernel.get(kernel);
    let bottlenecks = analyses::comm_bottlenecks(session, analysis);
    let ctx = Ctx {
        process: &pm.process,
        rank,
        analysis,
        bottlenecks: &bottlenecks,
    };
    Some(ctx.record(&k, m.map(|m| (m, &pm.log_ops))))
}

/// Builds the enriched records of every NCCL kernel in the session's exports.
pub fn kernel_records(session: &Session, analysis: &Analysis) -> Records {
    let mut out = Records::default();
    for batch in records_by_rank(session, analysis) {
        out.kernels.extend(batch.kernels);
    }
    out.ranks = rank_hosts(session, analysis);
    out.nvtx = nvtx_ranges(session, analysis);
    out
}

/// One rank's enriched kernels, ordered by start then end.
#[derive(Debug, Clone, PartialEq)]
pub struct RankRecords {
    pub rank: u32,
    pub kernels: Vec<KernelRecord>,
}

/// Where one rank's kernels come from, in the order [`kernel_records`] lists them before sorting.
#[derive(Default)]
struct RankSources {
    /// Aligned processes (indices into `analysis.alignments.processes`).
    aligned: Vec<usize>,
    /// Kernels of processes with kernels only: (export, row).
    kernels_only: Vec<(usize, usize)>,
}

/// The enriched kernels rank by rank, ranks ascending: [`kernel_records`]' kernels, one rank at a
/// time, so that a writer holds one rank's records instead of the run's (a record is a few KB: the
/// run's would be thousands of times its operations). Every rank that has an aligned process or a
/// kernel comes, with no kernels when it has none.
pub fn records_by_rank<'a>(
    session: &'a Session,
    analysis: &'a Analysis,
) -> impl Iterator<Item = RankRecords> + 'a {
    let ranks = assign_ranks(analysis);
    let bottlenecks = analyses::comm_bottlenecks(session, analysis);
    let mut sources: BTreeMap<u32, RankSources> = BTreeMap::new();
    for (i, pm) in analysis.alignments.processes.iter().enumerate() {
        if let Some(&rank) = ranks.get(&pm.process) {
            sources.entry(rank).or_default().aligned.push(i);
        }
    }
    for (rank, x, row) in kernels_only_rows(session, analysis, &ranks) {
        sources.entry(rank).or_default().kernels_only.push((x, row));
    }
    sources.into_iter().map(move |(rank, from)| {
        let mut kernels = Vec::new();
        for &i in &from.aligned {
            let pm = &analysis.alignments.processes[i];
            let ctx = Ctx {
                process: &pm.process,
                rank,
                analysis,
                bottlenecks: &bottlenecks,
            };
            for (j, k) in pm.kernels.iter().enumerate() {
                let m = pm.alignment.per_kernel.get(j);
                kernels.push(ctx.record(&k, m.map(|m| (m, &pm.log_ops))));
            }
        }
        for &(x, row) in &from.kernels_only {
            let e = &session.exports()[x];
            let Some(k) = e.export.kernels.get(row) else {
                continue;
            };
            let key = session.export_key(x, k.pid);
            let ctx = Ctx {
                process: &key,
                rank,
                analysis,
                bottlenecks: &bottlenecks,
            };
            kernels.push(ctx.record(&k, None));
        }
        // Stable, as the whole list's sort by (rank, start, end) orders one rank's.
        kernels.sort_by_key(|r| (r.start_ns, r.end_ns));
        RankRecords { rank, kernels }
    })
}

/// The host of every rank that has kernels or NVTX ranges ([`Records::ranks`]): an aligned
/// process's host, else a kernels-only process's, else the host of the export its NVTX ranges
/// are in.
pub fn rank_hosts(session: &Session, analysis: &Analysis) -> BTreeMap<u32, String> {
    let ranks = assign_ranks(analysis);
    let mut out = BTreeMap::new();
    for pm in &analysis.alignments.processes {
        if let Some(&rank) = ranks.get(&pm.process) {
            out.insert(rank, pm.process.host.to_string());
        }
    }
    for (rank, x, row) in kernels_only_rows(session, analysis, &ranks) {
        if let Some(pid) = session.exports()[x].export.kernels.pid(row) {
            out.insert(rank, session.export_key(x, pid).host.to_string());
        }
    }
    for (rank, host, _) in ranked_nvtx(session, &ranks) {
        out.entry(rank).or_insert_with(|| host.to_string());
    }
    out
}

/// The NVTX ranges of every process that has a rank, with that rank, in synchronised time
/// ([`Records::nvtx`]).
pub fn nvtx_ranges(session: &Session, analysis: &Analysis) -> Vec<(u32, NvtxRange)> {
    let ranks = assign_ranks(analysis);
    let clocks = &analysis.clocks;
    ranked_nvtx(session, &ranks)
        .map(|(rank, _, r)| {
            let mut r = r.clone();
            r.start_ns = clocks.to_sync(rank, r.start_ns);
            r.end_ns = r.end_ns.map(|t| clocks.to_sync(rank, t));
            (rank, r)
        })
        .collect()
}

/// An export's host: its first one names every process in it (empty when it names none).
fn export_host(e: &LoadedExport) -> &str {
    e.export.hosts.first().map_or("", String::as_str)
}

/// Every kernel of a process with kernels and no log line, with its rank: (rank, export, row),
/// in session order.
fn kernels_only_rows(
    session: &Session,
    analysis: &Analysis,
    ranks: &BTreeMap<ProcessKey, u32>,
) -> Vec<(u32, usize, usize)> {
    let kernels_only: BTreeSet<&ProcessKey> = analysis.alignments.kernels_only.iter().collect();
    let mut out = Vec::new();
    if kernels_only.is_empty() {
        return out;
    }
    for (x, e) in session.exports().iter().enumerate() {
        let ks = &e.export.kernels;
        for (row, pid) in (0..ks.len()).filter_map(|j| Some((j, ks.pid(j)?))) {
            let key = session.export_key(x, pid);
            if let (true, Some(&rank)) = (kernels_only.contains(&key), ranks.get(&key)) {
                out.push((rank, x, row));
            }
        }
    }
    out
}

/// Every NVTX range of a process that has a rank, with that rank and its export's host, in
/// session order.
fn ranked_nvtx<'a>(
    session: &'a Session,
    ranks: &'a BTreeMap<ProcessKey, u32>,
) -> impl Iterator<Item = (u32, &'a str, &'a NvtxRange)> + 'a {
    session
        .exports()
        .iter()
        .enumerate()
        .flat_map(move |(x, e)| {
            let host = export_host(e);
            e.export.nvtx.iter().filter_map(move |r| {
                let rank = rank_of_export_pid(ranks, &session.export_key(x, r.pid), host)?;
                Some((rank, host, r))
            })
        })
}

/// Global rank per process: known ranks first, kernels-only processes after the last one.
fn assign_ranks(analysis: &Analysis) -> BTreeMap<ProcessKey, u32> {
    let mut ranks: BTreeMap<ProcessKey, u32> = BTreeMap::new();
    for p in &analysis.processes {
        let r = analysis
            .communicators
            .rank_of(&p.process)
            .unwrap_or(p.global_rank);
        ranks.insert(p.process.clone(), r);
    }
    for pm in &analysis.alignments.processes {
        if !ranks.contains_key(&pm.process) {
            let r = analysis.communicators.rank_of(&pm.process);
            let next = next_rank(&ranks);
            ranks.insert(pm.process.clone(), r.unwrap_or(next));
        }
    }
    for key in &analysis.alignments.kernels_only {
        if !ranks.contains_key(key) {
            let next = next_rank(&ranks);
            ranks.insert(key.clone(), next);
        }
    }
    ranks
}

fn next_rank(ranks: &BTreeMap<ProcessKey, u32>) -> u32 {
    ranks.values().max().map_or(0, |r| r + 1)
}

/// The rank of an export's process (`key`: as the session keys it, [`Session::export_key`]) in
/// an export of `host`; a hostless export's unpaired pid belongs to the one ranked process
/// with that pid, if only one.
fn rank_of_export_pid(
    ranks: &BTreeMap<ProcessKey, u32>,
    key: &ProcessKey,
    host: &str,
) -> Option<u32> {
    if let Some(&r) = ranks.get(key) {
        return Some(r);
    }
    if !host.is_empty() {
        return None;
    }
    let pid = key.pid;
    let mut m = ranks.iter().filter(|(k, _)| k.pid == pid);
    match (m.next(), m.next()) {
        (Some((_, &r)), None) => Some(r),
        _ => None,
    }
}

/// What one process's records share.
struct Ctx<'a> {
    process: &'a ProcessKey,
    rank: u32,
    analysis: &'a Analysis,
    bottlenecks: &'a [Option<Bottleneck>],
}

impl Ctx<'_> {
    fn record(&self, k: &Kernel, m: Option<(KernelMatch<'_>, &ProcessOps)>) -> KernelRecord {
        let mut args = Map::new();
        let mut put = |key: &str, v: Value| {
            args.insert(key.to_string(), v);
        };
        put(CUDA_KERNEL, json!(&*k.name));
        put(CUDA_STREAM_ID, json!(k.stream));
        put(CUDA_CORRELATION_ID, json!(k.correlation_id));
        put(GLOBAL_RANK, json!(self.rank));
        put(HOST, json!(self.process.host.as_str()));
        put(PROCESS_ID, json!(self.process.pid));
        let owned: Vec<LogOp> = m
            .map(|(m, ops)| m.lines().filter_map(|i| ops.get(i)).collect())
            .unwrap_or_default();
        let ops: Vec<&LogOp> = owned.iter().collect();
        let matched = !ops.is_empty();
        put(MATCH, json!(if matched { MATCHED } else { UNMATCHED }));
        put(
            CONFIDENCE,
            m.map_or(Value::Null, |(m, _)| json!(m.confidence)),
        );
        let (name, parallelism) = match ops.first() {
            Some(&first) => {
                let op = pipeline::kernel_op(&ops);
                let parallelism = self.log_fields(&mut args, k, op, &ops, first);
                (op.name().to_string(), Some(parallelism))
            }
            None => {
                for f in all_fields() {
                    args.entry(f).or_insert(Value::Null);
                }
                let name = ingest_nsys::decode_kernel_name(&k.name)
                    .and_then(|n| n.op)
                    .map_or("NCCL kernel", |op| op.name());
                (name.to_string(), None)
            }
        };
        args.insert(OWN_CLOCK_START_NS.into(), json!(k.start_ns));
        args.insert(OWN_CLOCK_END_NS.into(), json!(k.end_ns));
        let clocks = &self.analysis.clocks;
        KernelRecord {
            rank: self.rank,
            start_ns: clocks.to_sync(self.rank, k.start_ns),
            end_ns: clocks.to_sync(self.rank, k.end_ns),
            name,
            matched,
            parallelism,
            args,
        }
    }

    /// The log-derived fields of a matched kernel; returns the communicator's parallelism.
    fn log_fields(
        &self,
        args: &mut Map<String, Value>,
        k: &Kernel,
        op: OpType,
        ops: &[&LogOp],
        first: &LogOp,
    ) -> &'static str {
        let mut put = |key: &str, v: Value| {
            args.insert(key.to_string(), v);
        };
        // Fused Send/Recv lines: one kernel moved all of them, so sizes add up.
        let count: u64 = ops.iter().map(|o| o.count).sum();
        let msg: u64 = ops.iter().map(|o| o.msg_bytes()).sum();
        let n = first.nranks;
        put(OP_COUNT_HEX, json!(format!("{:x}", first.op_count)));
        put(COMMUNICATOR_PTR, json!(format!("0x{:x}", first.comm)));
        put(ELEMENT_COUNT, json!(count));
        put(
            DATA_TYPE,
            first.datatype.map_or_else(
                || json!(first.datatype_code.to_string()),
                |d| json!(d.name()),
            ),
        );
        put(
            REDUCTION_OP,
            if reduces(op) {
                json!(first.red_op.name())
            } else {
                Value::Null
            },
        );
        put(MESSAGE_SIZE_BYTES, json!(msg));
        put(BUS_FACTOR, json!(enrich::bus_factor(op, first.algo, n)));
        put(NCCL_ALGORITHM, json!(first.algo.map(|a| a.name())));
        put(PROTOCOL, json!(first.proto.map(|p| p.name())));
        put(CHANNELS, json!(first.nchannels));
        put(SYMMETRIC_KERNEL, json!(first.sym_kernel.as_deref()));
        put(COMMUNICATOR_SIZE, json!(n));
        let comm = self
            .analysis
            .communicators
            .comm_of(self.process, first.comm);
        let parallelism = comm
            .and_then(|c| self.analysis.layout.comms.iter().find(|p| p.comm == c))
            .map_or("unknown", |p| p.parallelism.name());
        put(PARALLELISM_TYPE, json!(parallelism));
        put(
            COMMUNICATOR_ID,
            json!(comm.map(|c| self.analysis.communicators.comms[c].id.clone())),
        );
        let bottleneck = comm.and_then(|c| self.bottlenecks.get(c)?.as_ref());
        let bytes: Option<u64> = ops
            .iter()
            .map(|o| {
                let size = o.datatype?.size_bytes();
                Some(enrich::op_bytes(o.op, o.count, size, o.nranks))
            })
            .sum();
        let bw = bytes.and_then(|b| {
            enrich::measure(
                op,
                first.algo,
                n,
                b,
                k.end_ns - k.start_ns,
                bottleneck.map(|x| (x.gbps, x.name.as_str())),
            )
        });
        put(ALGO_BW, json!(bw.as_ref().map(|b| b.algo_bw_gbps)));
        put(BUS_BW, json!(bw.as_ref().map(|b| b.bus_bw_gbps)));
        let t = bw.as_ref().and_then(|b| b.theoretical.as_ref());
        put(THEORETICAL_ALGO_BW, json!(t.map(|t| t.algo_bw_gbps)));
        put(THEORETICAL_BUS_BW, json!(t.map(|t| t.bus_bw_gbps)));
        put(EFFICIENCY, json!(t.map(|t| t.efficiency)));
        put(BUS_EFFICIENCY, json!(t.map(|t| t.bus_efficiency)));
        put(BOTTLENECK, json!(bottleneck.map(|b| b.name.clone())));
        put(BOTTLENECK_BW, json!(bottleneck.map(|b| b.gbps)));
        parallelism
    }
}

/// Whether the operation applies its reduction (`op` is printed for every line, but means
/// something only for these).
fn reduces(op: OpType) -> bool {
    matches!(
        op,
        OpType::AllReduce | OpType::Reduce | OpType::ReduceScatter
    )
}
