//! Observed kernel time beside the LBNL two-tier alpha-beta prediction (issue: theory versus
//! observed, "Time"), per operation type and message-size bucket.
//!
//! Each matched kernel contributes its duration and the prediction for its log operation: the
//! operation's total buffer (nccl-tests' S), the communicator's size, and how many of its
//! members share this rank's node (the NVLink domain). A fused SendRecv kernel is predicted as
//! its largest Send/Recv line, on the fast link when its peers are on the same node.

use enrich::bandwidth;
use model::log::LogOp;
use model::OpType;
use pipeline::Analysis;
use pipeline::ProcessMatch;
use std::collections::{BTreeMap, HashMap};
use theory::{collective_time_s, Hardware};

/// Kernels of one operation type whose message size is in `[bucket_bytes, 2·bucket_bytes)`.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeRow {
    pub op: OpType,
    /// Lower bound of the power-of-two size bucket (bytes of the total buffer).
    pub bucket_bytes: u64,
    pub kernels: u64,
    pub observed_mean_s: f64,
    pub predicted_mean_s: f64,
}

impl TimeRow {
    /// Observed over predicted: above 1 the run was slower than the model.
    pub fn ratio(&self) -> Option<f64> {
        (self.predicted_mean_s > 0.0).then(|| self.observed_mean_s / self.predicted_mean_s)
    }
}

/// Power-of-two bucket of a size (0 stays 0).
pub fn size_bucket(bytes: u64) -> u64 {
    if bytes == 0 {
        0
    } else {
        1u64 << (63 - bytes.leading_zeros())
    }
}

/// Every matched kernel's observed and predicted time, aggregated per (operation, size bucket).
pub fn predicted_times(analysis: &Analysis, hw: &Hardware) -> Vec<TimeRow> {
    let host_of: HashMap<u32, &str> = analysis
        .processes
        .iter()
        .map(|p| (p.global_rank, p.process.host.as_str()))
        .collect();
    // (op, bucket) → (kernels, observed sum, predicted sum)
    let mut acc: BTreeMap<(OpType, u64), (u64, f64, f64)> = BTreeMap::new();
    for pm in &analysis.alignments.processes {
        for (k, m) in pm.matched_spans() {
            let ops: Vec<LogOp> = m.lines().filter_map(|i| pm.log_ops.get(i)).collect();
            let Some(p) = predict(analysis, pm, &ops, &host_of, hw) else {
                continue;
            };
            let e = acc.entry((p.op, size_bucket(p.bytes))).or_default();
            e.0 += 1;
            e.1 += (k.end_ns - k.start_ns).max(0) as f64 * 1e-9;
            e.2 += p.seconds;
        }
    }
    acc.into_iter()
        .map(|((op, bucket_bytes), (n, obs, pred))| TimeRow {
            op,
            bucket_bytes,
            kernels: n,
            observed_mean_s: obs / n as f64,
            predicted_mean_s: pred / n as f64,
        })
        .collect()
}

struct Prediction {
    op: OpType,
    bytes: u64,
    seconds: f64,
}

fn predict(
    analysis: &Analysis,
    pm: &ProcessMatch,
    ops: &[LogOp],
    host_of: &HashMap<u32, &str>,
    hw: &Hardware,
) -> Option<Prediction> {
    let first = ops.first()?;
    let comms = &analysis.communicators;
    let comm = comms
        .comm_of(&pm.process, first.comm)
        .map(|c| &comms.comms[c]);
    let host = pm.process.host.as_str();
    let on_this_node = |rank: &u32| host_of.get(rank).is_some_and(|h| *h == host);
    let is_p2p = matches!(first.op, OpType::Send | OpType::Recv);
    if is_p2p {
        // The peers, as global ranks, from the communicator's member list.
        let same_node = ops.iter().all(|o| {
            comm.and_then(|c| c.global_ranks.get(o.root.max(0) as usize))
                .is_some_and(on_this_node)
        });
        let bytes = ops.iter().map(|o| o.msg_bytes()).max().unwrap_or(0);
        let op = if ops.len() > 1 {
            OpType::SendRecv
        } else {
            first.op
        };
        let (ranks, per_domain) = if same_node { (2, 2) } else { (2, 1) };
        let seconds = collective_time_s(hw, op, bytes as f64, ranks, per_domain);
        return Some(Prediction { op, bytes, seconds });
    }
    let n = comm.map_or(first.nranks, |c| c.size).max(1);
    let per_domain = comm.map_or(1, |c| {
        c.global_ranks.iter().filter(|r| on_this_node(r)).count()
    }) as u32;
    let size = first.datatype.map_or(0, |d| d.size_bytes());
    let bytes = bandwidth::op_bytes(first.op, first.count, size, n);
    let seconds = collective_time_s(hw, first.op, bytes as f64, n, per_domain.max(1));
    Some(Prediction {
        op: first.op,
        bytes,
        seconds,
    })
}

/// The hardware the logs' topology dump describes: per-GPU NVLink bandwidth (the sum of a GPU's
/// NVLink links, the fastest GPU), the fastest network link, GPUs and NICs per node. NCCL prints
/// nominal link speeds, so LBNL's 0.7 efficiency applies. `None` without a dump or a GPU.
pub fn hardware_from_topology(session: &load::Session) -> Option<Hardware> {
    use ingest_nccl::topo::{LinkKind, NodeKind};
    let topo = session
        .logs()
        .iter()
        .flat_map(|l| &l.parsed.processes)
        .find_map(|p| p.topology.as_ref())?;
    let gpus: Vec<usize> = (0..topo.nodes.len())
        .filter(|&i| topo.nodes[i].kind == NodeKind::Gpu)
        .collect();
    if gpus.is_empty() {
        return None;
    }
    let fast = gpus
        .iter()
        .map(|&g| {
            let out = topo.links.iter().filter(|l| l.from == g);
            let nvl: f64 = out
                .clone()
                .filter(|l| l.kind == LinkKind::Nvl)
                .map(|l| l.bw_gbps)
                .sum();
            // No NVLink: the GPU's PCIe link is its fast path.
            if nvl > 0.0 {
                nvl
            } else {
                out.map(|l| l.bw_gbps).fold(0.0, f64::max)
            }
        })
        .fold(0.0, f64::max);
    let net = topo
        .links
        .iter()
        .filter(|l| l.kind == LinkKind::Net)
        .map(|l| l.bw_gbps)
        .fold(0.0, f64::max);
    let nics = topo
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Net)
        .count();
    let hw = Hardware::from_link_bandwidths(
        fast,
        if net > 0.0 { net } else { fast },
        gpus.len() as u32,
        nics.max(1) as u32,
    );
    Some(hw.with_efficiency(theory::time::LBNL_EFFICIENCY))
}
