//! One summary per process seen in the logs: its global rank, what it did (operations and bytes
//! per type), its communicators, its topology and how many of its kernels were matched. The page's
//! per-rank table and the command's `ranks` both read this.

use crate::alignment::Alignments;
use ingest_nccl::topo::{NodeKind, Topology};
use load::Session;
use model::log::ProcessKey;
use model::OpType;
use std::collections::{BTreeMap, BTreeSet};

/// One communicator as one process knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommView {
    pub ptr: u64,
    pub comm_id: Option<u64>,
    pub rank: Option<u32>,
    pub nranks: u32,
    /// Per-collective lines on this communicator.
    pub ops: u64,
}

/// What the page shows of one process.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessSummary {
    pub process: ProcessKey,
    pub global_rank: u32,
    /// Where the global rank came from: an init line or the order of sorted hosts and pids.
    pub rank_from_init: bool,
    pub local_rank: Option<u32>,
    pub nccl_version: Option<String>,
    /// Operations and bytes (`count × sizeof(datatype)`) per type.
    pub ops: BTreeMap<OpType, (u64, u64)>,
    pub comms: Vec<CommView>,
    pub topology: Option<Topology>,
    pub kernels: u64,
    pub matched_kernels: u64,
    /// Its kernels by type, busy time and NVTX bytes ([`crate::KernelTally`]).
    pub kernel_tally: crate::kernel_tally::KernelTally,
}

impl ProcessSummary {
    /// A process seen in the exports alone: its key, the rank it is given, its kernels.
    pub(crate) fn kernels_only(
        process: ProcessKey,
        global_rank: u32,
        kernels: u64,
        kernel_tally: crate::kernel_tally::KernelTally,
    ) -> Self {
        ProcessSummary {
            process,
            global_rank,
            rank_from_init: false,
            local_rank: None,
            nccl_version: None,
            ops: BTreeMap::new(),
            comms: Vec::new(),
            topology: None,
            kernels,
            matched_kernels: 0,
            kernel_tally,
        }
    }

    /// GPUs and links of the topology, one short line each (`GPU 1000 (0)`, `GPU 1000 → GPU 2000 NVL 80.0 GB/s`).
    pub fn topology_lines(&self) -> Vec<String> {
        let Some(t) = &self.topology else {
            return Vec::new();
        };
        let name = |i: usize| {
            t.nodes
                .get(i)
                .map_or_else(|| "?".to_string(), |n| format!("{:?} {}", n.kind, n.id))
        };
        let mut lines: Vec<String> = t
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Gpu)
            .map(|n| {
                let rank = n
                    .local_rank
                    .map(|r| format!(" (local rank {r})"))
                    .unwrap_or_default();
                format!(
                    "GPU {} bus {}{rank}",
                    n.id,
                    n.bus_id.as_deref().unwrap_or("?")
                )
            })
            .collect();
        lines.extend(t.links.iter().map(|l| {
            format!(
                "{} → {}  {} {:.1} GB/s",
                name(l.from),
                name(l.to),
                l.label,
                l.bw_gbps
            )
        }));
        lines
    }
}

/// `map[key]`, made with `V::default()` on first sight. Looked up before inserting: the key
/// (a host string) is copied once per process, not once per record of it.
fn per_process<'m, V: Default>(
    map: &'m mut BTreeMap<ProcessKey, V>,
    key: &ProcessKey,
) -> &'m mut V {
    if !map.contains_key(key) {
        map.insert(key.clone(), V::default());
    }
    map.get_mut(key).expect("inserted above when absent")
}

/// The view of communicator `ptr` of `process`, made empty on first sight.
fn comm_view<'a>(
    comms: &'a mut BTreeMap<ProcessKey, BTreeMap<u64, CommView>>,
    process: &ProcessKey,
    ptr: u64,
    nranks: u32,
) -> &'a mut CommView {
    per_process(comms, process).entry(ptr).or_insert(CommView {
        ptr,
        comm_id: None,
        rank: None,
        nranks,
        ops: 0,
    })
}

/// The log process an export's (host, pid) names: the one with that host and pid, or for a
/// hostless export (older exports, or a table not written) the one log process with that pid;
/// `None` when there is none, or several (two hosts may reuse a pid, and nothing is guessed).
pub fn log_process<'a>(
    processes: &'a [ProcessSummary],
    host: &str,
    pid: u32,
) -> Option<&'a ProcessSummary> {
    let mut m = processes
        .iter()
        .filter(|p| p.process.pid == pid && (host.is_empty() || p.process.host == host));
    match (m.next(), m.next()) {
        (Some(p), None) => Some(p),
        _ => None,
    }
}

/// What one call site's calls add up to in a log, and where the first of them is.
#[derive(Clone, Default)]
struct SiteCalls {
    first: usize,
    calls: u64,
    bytes: u64,
}

/// Per process: its global rank and local GPU, from the init line of its largest communicator
/// (the world, where the log has it), else from the order of sorted hosts and pids.
pub fn process_summaries(session: &Session, alignments: &Alignments) -> Vec<ProcessSummary> {
    let mut all: BTreeSet<ProcessKey> = BTreeSet::new();
    let mut world: BTreeMap<ProcessKey, (u32, u32, Option<u32>)> = BTreeMap::new(); // nranks, rank, dev
    let mut ops: BTreeMap<ProcessKey, BTreeMap<OpType, (u64, u64)>> = BTreeMap::new();
    let mut comms: BTreeMap<ProcessKey, BTreeMap<u64, CommView>> = BTreeMap::new();
    let mut info: BTreeMap<ProcessKey, (Option<String>, Option<Topology>)> = BTreeMap::new();
    // The CUDA device the operation lines print (`[3]`), for processes without init lines.
    let mut op_dev: BTreeMap<ProcessKey, u32> = BTreeMap::new();
    for log in session.logs() {
        let p = &log.parsed;
        for pi in &p.processes {
            all.insert(pi.process.clone());
            let e = info.entry(pi.process.clone()).or_default();
            e.0 =
                e.0.take()
                    .or_else(|| pi.nccl_version.clone())
                    .or_else(|| p.nccl_version.clone());
            e.1 = e.1.take().or_else(|| pi.topology.clone());
        }
        for init in &p.inits {
            all.insert(init.process.clone());
            let w = world
                .entry(init.process.clone())
                .or_insert((0, init.rank, init.cuda_dev));
            if init.nranks > w.0 {
                *w = (init.nranks, init.rank, init.cuda_dev);
            }
            let c = comm_view(&mut comms, &init.process, init.comm, init.nranks);
            c.comm_id = c.comm_id.or(init.comm_id);
            c.rank = Some(init.rank);
        }
        // Per call site, not per call: a log has millions of calls from a few hundred sites.
        // Sites are visited in the order of their first call, so what the first call of a
        // process (or of one of its communicators) decides is decided as call by call.
        let calls = &p.ops;
        let mut per_site: Vec<SiteCalls> = vec![SiteCalls::default(); calls.sites().len()];
        for j in 0..calls.len() {
            let (Some(s), Some(bytes)) = (calls.site_index(j), calls.msg_bytes(j)) else {
                continue;
            };
            let c = &mut per_site[s as usize];
            if c.calls == 0 {
                c.first = j;
            }
            c.calls += 1;
            c.bytes += bytes;
        }
        let mut order: Vec<usize> = (0..per_site.len())
            .filter(|&s| per_site[s].calls > 0)
            .collect();
        order.sort_by_key(|&s| per_site[s].first);
        for s in order {
            let (site, c) = (&calls.sites()[s], &per_site[s]);
            let Some(process) = calls.processes().get(site.process as usize) else {
                continue;
            };
            // Looked up before inserting, as in `per_process`.
            if !all.contains(process) {
                all.insert(process.clone());
            }
            if !op_dev.contains_key(process) {
                op_dev.insert(process.clone(), site.cuda_dev);
            }
            let e = per_process(&mut ops, process).entry(site.op).or_default();
            e.0 += c.calls;
            e.1 += c.bytes;
            comm_view(&mut comms, process, site.comm, site.nranks).ops += c.calls;
        }
    }
    // Kernels per process as the analysis keys it (an export's pid under its log process).
    let mut kernels_by_key: BTreeMap<ProcessKey, u64> = BTreeMap::new();
    for (x, e) in session.exports().iter().enumerate() {
        let ks = &e.export.kernels;
        let mut per_pid: BTreeMap<u32, u64> = BTreeMap::new();
        for pid in (0..ks.len()).filter_map(|j| ks.pid(j)) {
            *per_pid.entry(pid).or_default() += 1;
        }
        for (pid, n) in per_pid {
            *kernels_by_key
                .entry(session.export_key(x, pid))
                .or_default() += n;
        }
    }
    let mut out: Vec<ProcessSummary> = all
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let w = world.get(&p).copied();
            let (nccl_version, topology) = info.remove(&p).unwrap_or_default();
            let aligned = alignments.get(&p);
            ProcessSummary {
                global_rank: w.map_or(i as u32, |w| w.1),
                rank_from_init: w.is_some(),
                local_rank: w.and_then(|w| w.2).or_else(|| op_dev.get(&p).copied()),
                nccl_version,
                ops: ops.remove(&p).unwrap_or_default(),
                comms: comms
                    .remove(&p)
                    .map(|m| m.into_values().collect())
                    .unwrap_or_default(),
                topology,
                kernels: aligned.map_or_else(
                    || kernels_by_key.get(&p).copied().unwrap_or(0),
                    |m| m.kernels.len() as u64,
                ),
                matched_kernels: aligned.map_or(0, |m| m.matched_kernels()),
                kernel_tally: Default::default(),
                process: p,
            }
        })
        .collect();
    out.sort_by(|a, b| (a.global_rank, &a.process).cmp(&(b.global_rank, &b.process)));
    out
}
