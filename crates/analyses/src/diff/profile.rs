//! What one run says that a comparison reads: its operations by signature (counts, bytes,
//! durations per communicator, bandwidth, the tuning lines' choices), its communicators (rank
//! set, parallelism, set-up, bottleneck link), the NCCL versions and settings, the hosts'
//! topology, and the run's size. Built once per run ([`profile`]) from a loaded session and its
//! analysis; plain data, so the page can build it on the worker that holds the run and compare
//! two of them anywhere.

use crate::diff::stats;
use crate::diff::steps::StepTable;
use enrich::Parallelism;
use ingest_nccl::topo::{LinkKind, NodeKind, Topology};
use load::Session;
use model::log::{LogOp, ProcessKey};
use model::{DataType, OpType};
use pipeline::Analysis;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What like is matched with: (parallelism, operation, message size, datatype).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SigKey {
    /// `DP`, `TP`, ... or `unknown`, as the summary's communicators say.
    pub parallelism: String,
    /// NCCL's name (`AllReduce`).
    pub op: String,
    /// The contract's message size: count × sizeof(datatype).
    pub bytes: u64,
    /// `float16`, ... or `unknown`.
    pub dtype: String,
    /// Kernels of a process no log line describes (an export alone): the operation (and the
    /// datatype, where the name carries it) from the kernel's name, the size unknown (`bytes`
    /// 0).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kernels_only: bool,
}

impl SigKey {
    /// `DP AllReduce 80 MiB bfloat16`; `unknown SendRecv kernels (size unknown)` for kernels no
    /// log line describes (their datatype after it where the name gives one).
    pub fn text(&self) -> String {
        if self.kernels_only {
            let dtype = match self.dtype.as_str() {
                "unknown" => String::new(),
                d => format!(" {d}"),
            };
            return format!(
                "{} {} kernels (size unknown){dtype}",
                self.parallelism, self.op
            );
        }
        format!(
            "{} {} {} {}",
            self.parallelism,
            self.op,
            size_text(self.bytes),
            self.dtype
        )
    }
}

/// `512 B`, `64 KiB`, `80 MiB`, `1.5 GiB`.
pub fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// One signature's durations on one communicator (an index into [`RunProfile::comms`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommSamples {
    pub comm: usize,
    /// Matched kernels' durations, ns (a fused Send/Recv kernel once per signature it ran).
    pub durations_ns: Vec<f64>,
}

/// One signature in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignatureProfile {
    pub key: SigKey,
    /// Log operations (a line printed twice by one process counts once).
    pub count: u64,
    /// Their bytes (count × message size).
    pub total_bytes: u64,
    /// Global ranks that logged it.
    pub ranks: u32,
    /// Communicator sizes it ran on (nranks as printed).
    pub comm_sizes: Vec<u32>,
    /// Kernel durations measured (0 without exports).
    pub timed: u64,
    pub median_ns: Option<f64>,
    pub p95_ns: Option<f64>,
    /// Median bus bandwidth of its single-operation kernels (GB/s).
    pub bus_bw_gbps: Option<f64>,
    /// Median bus bandwidth over the communicator's bottleneck's, where the topology places it.
    pub bus_efficiency: Option<f64>,
    /// What the tuning lines chose, with how many operations: algorithm, protocol, channels.
    pub algorithms: Vec<(String, u64)>,
    pub protocols: Vec<(String, u64)>,
    pub channels: Vec<(u32, u64)>,
    /// Kernel durations per communicator (what the timeline shows, waiting included).
    pub samples: Vec<CommSamples>,
    /// Kernel durations on no known communicator (a process the exports alone show), ns.
    #[serde(default)]
    pub unassigned_ns: Vec<f64>,
    /// Transfer times per communicator: per collective instance (communicator and opCount) the
    /// shortest of its members' kernels, as the last member to arrive waits for no one; a
    /// point-to-point kernel's own duration. A slower rank makes the others wait in every later
    /// collective, on any communicator: the per-communicator comparison reads these, which the
    /// waiting does not reach.
    pub transfer: Vec<CommSamples>,
}

impl SignatureProfile {
    /// Every duration, whatever the communicator (or none).
    pub fn durations(&self) -> Vec<f64> {
        self.samples
            .iter()
            .flat_map(|s| s.durations_ns.iter().copied())
            .chain(self.unassigned_ns.iter().copied())
            .collect()
    }

    /// The most common algorithm (protocol, channel count) and its share of the tuned
    /// operations.
    pub fn dominant_algorithm(&self) -> Option<(&str, f64)> {
        dominant(&self.algorithms).map(|(a, s)| (a.as_str(), s))
    }

    pub fn dominant_protocol(&self) -> Option<(&str, f64)> {
        dominant(&self.protocols).map(|(a, s)| (a.as_str(), s))
    }

    pub fn dominant_channels(&self) -> Option<(u32, f64)> {
        dominant(&self.channels).map(|(c, s)| (*c, s))
    }
}

fn dominant<T>(counts: &[(T, u64)]) -> Option<(&T, f64)> {
    let total: u64 = counts.iter().map(|c| c.1).sum();
    let best = counts.iter().max_by_key(|c| c.1)?;
    (total > 0).then(|| (&best.0, best.1 as f64 / total as f64))
}

/// One logical communicator in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommProfile {
    pub id: String,
    pub parallelism: String,
    /// Ascending: with the parallelism, what matches it to the other run's.
    pub global_ranks: Vec<u32>,
    pub size: u32,
    /// Log operations on it (duplicates once).
    pub operations: u64,
    pub channels: Option<u32>,
    pub tree_channels: Option<u32>,
    pub nodes: Option<u32>,
    pub local_ranks: Option<u32>,
    /// Transport kinds (device numbers left out) with their connection counts.
    pub transports: Vec<(String, usize)>,
    /// The slowest link between its members, as the topology dumps place them.
    pub bottleneck: Option<String>,
    pub bottleneck_gbps: Option<f64>,
}

impl CommProfile {
    /// `DP [0, 2, 4, 6]`.
    pub fn text(&self) -> String {
        format!("{} {}", self.parallelism, ranks_text(&self.global_ranks))
    }
}

/// `[0, 2, 4, 6]`, or `[0..63]` for a run of consecutive ranks longer than 8.
pub fn ranks_text(r: &[u32]) -> String {
    let consecutive = r.windows(2).all(|w| w[1] == w[0] + 1);
    match (r.first(), r.last()) {
        (Some(a), Some(b)) if consecutive && r.len() > 8 => format!("[{a}..{b}]"),
        _ => format!(
            "[{}]",
            r.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A host's topology as its dump printed it, without its name (runs on other clusters have other
/// names): what a comparison can match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostTopology {
    pub host: String,
    pub gpus: u32,
    /// The fastest GPU-to-GPU link (NVLink), GB/s.
    pub nvlink_gbps: Option<f64>,
    /// The fastest network link, GB/s.
    pub net_gbps: Option<f64>,
}

impl HostTopology {
    /// `4 GPUs, NVLink 150 GB/s, network 25 GB/s`.
    pub fn text(&self) -> String {
        let mut s = format!("{} GPUs", self.gpus);
        if let Some(b) = self.nvlink_gbps {
            s.push_str(&format!(", NVLink {b} GB/s"));
        }
        if let Some(b) = self.net_gbps {
            s.push_str(&format!(", network {b} GB/s"));
        }
        s
    }
}

/// The run's versions, settings and hardware.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunFacts {
    /// NCCL version → the global ranks that printed it.
    pub versions: BTreeMap<String, Vec<u32>>,
    /// `NCCL_*` setting → the values the ranks printed (`set by environment to`). Filled from
    /// the parser's set-up lines where it keeps them (`ParsedLog::config`, issue 31); empty
    /// otherwise, and then nothing is said about settings.
    pub settings: BTreeMap<String, BTreeSet<String>>,
    /// One per host whose topology a process printed, by host name.
    pub hosts: Vec<HostTopology>,
}

/// How big the run is.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunSize {
    pub world_size: u32,
    /// Processes seen (a global rank from the logs, or kernels in the exports alone): what
    /// counts and times are divided by, since a run's files may cover part of its world.
    pub ranks: u32,
    pub hosts: u32,
    /// Log operations (duplicates once), and those whose kernel was measured.
    pub operations: u64,
    pub timed_operations: u64,
    /// Training iterations the exports' NVTX ranges count.
    pub iterations: Option<u32>,
    /// The layout (given or inferred): tp, pp, dp, ep, cp.
    pub layout: Option<BTreeMap<String, u32>>,
    /// Σ over signatures of median × count: the run's NCCL kernel time, ns, all ranks.
    pub comm_time_ns: f64,
}

impl RunSize {
    /// `8 ranks`, or `4 of 8 ranks` when the files cover part of the world.
    pub fn ranks_text(&self) -> String {
        if self.ranks > 0 && self.ranks < self.world_size {
            format!("{} of {} ranks", self.ranks, self.world_size)
        } else {
            format!("{} ranks", self.world_size.max(self.ranks))
        }
    }

    /// Whether both runs say their world size (a run without logs does not: 0) and they
    /// differ.
    pub fn worlds_differ(&self, other: &RunSize) -> bool {
        self.world_size > 0 && other.world_size > 0 && self.world_size != other.world_size
    }

    /// Whether the run's files cover part of its world only.
    pub fn partial(&self) -> bool {
        self.ranks > 0 && self.ranks < self.world_size
    }
}

/// Everything a comparison reads of one run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunProfile {
    /// What the run is called in the output (its path, or the page's name for it).
    pub label: String,
    pub size: RunSize,
    /// By key.
    pub signatures: Vec<SignatureProfile>,
    /// In the analysis' communicator order.
    pub comms: Vec<CommProfile>,
    pub facts: RunFacts,
    pub steps: Option<StepTable>,
    /// Every process's NCCL kernels by the operation their names give (`kernels_only`
    /// signatures), for a run with logs: what a comparison with a run without logs matches
    /// (empty when the run has no log, its `signatures` being that already).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernel_level: Vec<SignatureProfile>,
}

/// What a call site's operations share, worked out once per site.
#[derive(Clone)]
struct SiteFacts {
    parallelism: Parallelism,
    op: OpType,
    dtype: Option<DataType>,
    comm: Option<usize>,
    rank: Option<u32>,
    nranks: u32,
}

/// A signature being gathered.
#[derive(Default)]
struct Gather {
    count: u64,
    total_bytes: u64,
    ranks: BTreeSet<u32>,
    comm_sizes: BTreeSet<u32>,
    durations: Vec<f64>,
    comm_of: Vec<u32>,
    /// Point-to-point kernels' (communicator, duration): their own transfer samples.
    p2p: Vec<(u32, f64)>,
    bus_bw: Vec<f64>,
    efficiency: Vec<f64>,
    algorithms: BTreeMap<&'static str, u64>,
    protocols: BTreeMap<&'static str, u64>,
    channels: BTreeMap<u32, u64>,
}

/// The key of a signature while gathering (names made once, at the end); the flag marks
/// kernels no log line describes ([`SigKey::kernels_only`]).
type RawKey = (Parallelism, OpType, u64, Option<DataType>, bool);

/// The profile of a loaded, analysed run: its operations counted from every log line (so runs
/// without exports still compare by count and bytes), timed from every matched kernel.
pub fn profile(session: &Session, analysis: &Analysis, label: &str) -> RunProfile {
    let parallelism: Vec<Parallelism> = {
        let mut p = vec![Parallelism::Unknown; analysis.communicators.comms.len()];
        for c in &analysis.layout.comms {
            if let Some(slot) = p.get_mut(c.comm) {
                *slot = c.parallelism;
            }
        }
        p
    };
    let mut sigs: FxHashMap<RawKey, Gather> = FxHashMap::default();
    let mut comm_ops = vec![0u64; parallelism.len()];
    count_operations(session, analysis, &parallelism, &mut sigs, &mut comm_ops);
    // The bottleneck links cost a pass over every topology dump: found once, read twice.
    let bottlenecks = crate::comm_bottlenecks(session, analysis);
    let timed = time_operations(analysis, &parallelism, &bottlenecks, &mut sigs)
        + time_kernels_only(session, analysis, &mut sigs);
    let mut signatures: Vec<SignatureProfile> = sigs.into_iter().map(finish).collect();
    signatures.sort_by(|a, b| a.key.cmp(&b.key));
    let logged = signatures.iter().any(|s| !s.key.kernels_only);
    let comms = comm_profiles(session, analysis, &parallelism, &comm_ops, bottlenecks);
    let comm_time_ns = signatures
        .iter()
        .filter_map(|s| Some(s.median_ns? * s.count as f64))
        .sum();
    let layout = analysis.layout.sizes.map(|s| {
        [
            ("tp", s.tp),
            ("pp", s.pp),
            ("dp", s.dp),
            ("ep", s.ep),
            ("cp", s.cp),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    });
    let facts = facts(session, analysis);
    let size = RunSize {
        world_size: analysis.communicators.world_size,
        ranks: (analysis.communicators.ranks.len() + analysis.alignments.kernels_only.len()) as u32,
        hosts: analysis
            .communicators
            .ranks
            .keys()
            .map(|p| &p.host)
            .collect::<BTreeSet<_>>()
            .len() as u32,
        operations: signatures.iter().map(|s| s.count).sum(),
        timed_operations: timed,
        iterations: analysis.iterations,
        layout,
        comm_time_ns,
    };
    RunProfile {
        label: label.to_string(),
        size,
        signatures,
        comms,
        facts,
        steps: StepTable::from_nvtx(session, analysis),
        kernel_level: if logged {
            kernel_level(session, analysis)
        } else {
            Vec::new()
        },
    }
}

/// Counts every log line by signature and communicator; a line the same process printed twice
/// in a row for the same call site, opCount and count is one operation.
fn count_operations(
    session: &Session,
    analysis: &Analysis,
    parallelism: &[Parallelism],
    sigs: &mut FxHashMap<RawKey, Gather>,
    comm_ops: &mut [u64],
) {
    let comms = &analysis.communicators;
    for log in session.logs() {
        let ops = &log.parsed.ops;
        let sites: Vec<SiteFacts> = ops
            .sites()
            .iter()
            .map(|s| {
                let process = ops.processes().get(s.process as usize);
                let comm = process.and_then(|p| comms.comm_of(p, s.comm));
                SiteFacts {
                    parallelism: comm
                        .and_then(|c| parallelism.get(c).copied())
                        .unwrap_or(Parallelism::Unknown),
                    op: s.op,
                    dtype: s.datatype,
                    comm,
                    rank: process.and_then(|p| comms.rank_of(p)),
                    nranks: s.nranks,
                }
            })
            .collect();
        let mut last: Vec<Option<(u64, u64)>> = vec![None; sites.len()];
        for i in 0..ops.len() {
            let (Some(si), Some(call)) = (ops.site_index(i), ops.call(i)) else {
                continue;
            };
            let si = si as usize;
            let Some(site) = sites.get(si) else { continue };
            if last[si] == Some((call.op_count, call.count)) {
                continue;
            }
            last[si] = Some((call.op_count, call.count));
            let bytes = site
                .dtype
                .map_or(0, |d| call.count.saturating_mul(d.size_bytes()));
            let g = sigs
                .entry((site.parallelism, site.op, bytes, site.dtype, false))
                .or_default();
            g.count += 1;
            g.total_bytes = g.total_bytes.saturating_add(bytes);
            if let Some(r) = site.rank {
                g.ranks.insert(r);
            }
            g.comm_sizes.insert(site.nranks);
            if let Some(c) = site.comm.and_then(|c| comm_ops.get_mut(c)) {
                *c += 1;
            }
            if ops.is_tuned(i) {
                if let Some(op) = ops.get(i) {
                    tally_tuning(g, &op);
                }
            }
        }
    }
}

fn tally_tuning(g: &mut Gather, op: &LogOp) {
    if let Some(a) = op.algo {
        *g.algorithms.entry(a.name()).or_default() += 1;
    }
    if let Some(p) = op.proto {
        *g.protocols.entry(p.name()).or_default() += 1;
    }
    if let Some(c) = op.nchannels {
        *g.channels.entry(c).or_default() += 1;
    }
}

/// Adds every matched kernel's duration to the signatures it ran (a fused Send/Recv kernel once
/// to each distinct signature among its lines), each collective instance's shortest kernel to its
/// signature's transfer times, and the bus bandwidth of single-operation kernels; returns the
/// kernels timed.
fn time_operations(
    analysis: &Analysis,
    parallelism: &[Parallelism],
    bottlenecks: &[Option<enrich::Bottleneck>],
    sigs: &mut FxHashMap<RawKey, Gather>,
) -> u64 {
    let mut timed = 0;
    let mut keys: Vec<(RawKey, Option<usize>)> = Vec::new();
    // (communicator, opCount) → (shortest member kernel, signature).
    let mut instances: FxHashMap<(u32, u64), (f64, RawKey)> = FxHashMap::default();
    for pm in &analysis.alignments.processes {
        let mut comm_of = analysis.communicators.comm_lookup(&pm.process);
        for (span, m) in pm.matched_spans() {
            let duration = span.end_ns - span.start_ns;
            if duration <= 0 {
                continue;
            }
            keys.clear();
            let mut op_count = None;
            for line in m.lines() {
                let (Some(site), Some(call)) = (pm.log_ops.site(line), pm.log_ops.call(line))
                else {
                    continue;
                };
                let comm = comm_of(site.comm);
                let par = comm
                    .and_then(|c| parallelism.get(c).copied())
                    .unwrap_or(Parallelism::Unknown);
                let bytes = site
                    .datatype
                    .map_or(0, |d| call.count.saturating_mul(d.size_bytes()));
                let key = ((par, site.op, bytes, site.datatype, false), comm);
                if !keys.contains(&key) {
                    keys.push(key);
                }
                op_count = (!site.op.is_p2p()).then_some(call.op_count);
            }
            timed += u64::from(!keys.is_empty());
            let duration = duration as f64;
            for (key, comm) in &keys {
                let Some(g) = sigs.get_mut(key) else { continue };
                let c = comm.map_or(u32::MAX, |c| c as u32);
                g.durations.push(duration);
                g.comm_of.push(c);
                match (op_count, comm) {
                    (Some(n), Some(_)) if keys.len() == 1 => {
                        let e = instances.entry((c, n)).or_insert((duration, *key));
                        e.0 = e.0.min(duration);
                    }
                    _ => g.p2p.push((c, duration)),
                }
            }
            // Bandwidth: single-operation kernels only (a fused group has no single figure).
            if let ([line], [(key, comm)]) = (m.log_ops, &keys[..]) {
                let Some(op) = pm.log_ops.get(*line as usize) else {
                    continue;
                };
                let limit = comm
                    .and_then(|c| bottlenecks.get(c))
                    .and_then(|b| b.as_ref())
                    .map(|b| (b.gbps, b.name.as_str()));
                let (Some(bw), Some(g)) = (
                    enrich::for_log_op(&op, duration as i64, limit),
                    sigs.get_mut(key),
                ) else {
                    continue;
                };
                g.bus_bw.push(bw.bus_bw_gbps);
                if let Some(t) = bw.theoretical {
                    g.efficiency.push(t.bus_efficiency);
                }
            }
        }
    }
    for ((comm, _), (shortest, key)) in instances {
        if let Some(g) = sigs.get_mut(&key) {
            g.p2p.push((comm, shortest));
        }
    }
    timed
}

/// Counts and times the kernels of every process no log line describes (an export alone), by
/// the operation and datatype their names give; returns the kernels timed. A fused or
/// `Generic` kernel whose name gives no operation is left out: nothing says what it ran.
fn time_kernels_only(
    session: &Session,
    analysis: &Analysis,
    sigs: &mut FxHashMap<RawKey, Gather>,
) -> u64 {
    if analysis.alignments.kernels_only.is_empty() {
        return 0;
    }
    let wanted: BTreeSet<&ProcessKey> = analysis.alignments.kernels_only.iter().collect();
    gather_kernels(session, analysis, Some(&wanted), sigs)
}

/// Every process's kernels as [`time_kernels_only`] takes those of processes without logs:
/// the run at the resolution of a run without logs, for comparing it with one
/// ([`RunProfile::kernel_level`]).
fn kernel_level(session: &Session, analysis: &Analysis) -> Vec<SignatureProfile> {
    let mut sigs: FxHashMap<RawKey, Gather> = FxHashMap::default();
    gather_kernels(session, analysis, None, &mut sigs);
    let mut out: Vec<SignatureProfile> = sigs.into_iter().map(finish).collect();
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

/// Adds the kernels of the processes `only` names (every process for `None`) to `sigs` by the
/// operation and datatype their names give; returns the kernels timed.
fn gather_kernels(
    session: &Session,
    analysis: &Analysis,
    only: Option<&BTreeSet<&ProcessKey>>,
    sigs: &mut FxHashMap<RawKey, Gather>,
) -> u64 {
    let rank_of: BTreeMap<&ProcessKey, u32> = analysis
        .processes
        .iter()
        .map(|p| (&p.process, p.global_rank))
        .collect();
    let mut names = ingest_nsys::KernelNameCache::default();
    // A run's kernels carry a few dozen names, each stored once: decoded once, by address.
    let mut decoded: FxHashMap<usize, Option<model::nsys::KernelName>> = FxHashMap::default();
    let mut timed = 0;
    for (x, e) in session.exports().iter().enumerate() {
        let ks = &e.export.kernels;
        // Kernels come ordered by pid: one key per run of a pid.
        let mut last: Option<(u32, Option<u32>, bool)> = None;
        for j in 0..ks.len() {
            let (Some(pid), Some(name), Some(start), Some(end)) =
                (ks.pid(j), ks.name(j), ks.start_ns(j), ks.end_ns(j))
            else {
                continue;
            };
            let (rank, wanted) = match last {
                Some((p, r, w)) if p == pid => (r, w),
                _ => {
                    let k = session.export_key(x, pid);
                    let w = only.is_none_or(|o| o.contains(&k));
                    let r = rank_of.get(&k).copied();
                    last = Some((pid, r, w));
                    (r, w)
                }
            };
            if !wanted {
                continue;
            }
            let d = *decoded
                .entry(std::sync::Arc::as_ptr(name) as *const u8 as usize)
                .or_insert_with(|| names.decode(name));
            let Some(op) = d.and_then(|d| d.op) else {
                continue;
            };
            let dtype = d.and_then(|d| d.datatype);
            let g = sigs
                .entry((Parallelism::Unknown, op, 0, dtype, true))
                .or_default();
            g.count += 1;
            if let Some(r) = rank {
                g.ranks.insert(r);
            }
            if end > start {
                g.durations.push((end - start) as f64);
                g.comm_of.push(u32::MAX);
                timed += 1;
            }
        }
    }
    timed
}

/// Samples of (communicator, value) grouped by communicator, in communicator order.
fn by_comm(pairs: impl IntoIterator<Item = (u32, f64)>) -> Vec<CommSamples> {
    let mut m: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for (c, d) in pairs {
        if c != u32::MAX {
            m.entry(c).or_default().push(d);
        }
    }
    m.into_iter()
        .map(|(comm, durations_ns)| CommSamples {
            comm: comm as usize,
            durations_ns,
        })
        .collect()
}

/// A gathered signature's summary.
fn finish(((par, op, bytes, dtype, kernels_only), mut g): (RawKey, Gather)) -> SignatureProfile {
    let samples = by_comm(g.comm_of.iter().copied().zip(g.durations.iter().copied()));
    let unassigned_ns = g
        .comm_of
        .iter()
        .zip(&g.durations)
        .filter(|(c, _)| **c == u32::MAX)
        .map(|(_, d)| *d)
        .collect();
    let transfer = by_comm(std::mem::take(&mut g.p2p));
    let median_ns = stats::median(&mut g.durations);
    let p95_ns = stats::quantile(&mut g.durations, 0.95);
    SignatureProfile {
        key: SigKey {
            parallelism: par.name().to_string(),
            op: op.name().to_string(),
            bytes,
            dtype: dtype.map_or("unknown", |d| d.name()).to_string(),
            kernels_only,
        },
        count: g.count,
        total_bytes: g.total_bytes,
        ranks: g.ranks.len() as u32,
        comm_sizes: g.comm_sizes.into_iter().collect(),
        timed: g.durations.len() as u64,
        median_ns,
        p95_ns,
        bus_bw_gbps: stats::median(&mut g.bus_bw),
        bus_efficiency: stats::median(&mut g.efficiency),
        algorithms: named_counts(g.algorithms),
        protocols: named_counts(g.protocols),
        channels: g.channels.into_iter().collect(),
        samples,
        unassigned_ns,
        transfer,
    }
}

fn named_counts(m: BTreeMap<&'static str, u64>) -> Vec<(String, u64)> {
    m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Every communicator with its set-up and bottleneck.
fn comm_profiles(
    session: &Session,
    analysis: &Analysis,
    parallelism: &[Parallelism],
    comm_ops: &[u64],
    bottlenecks: Vec<Option<enrich::Bottleneck>>,
) -> Vec<CommProfile> {
    let setups = crate::comm_setups(session, analysis);
    analysis
        .communicators
        .comms
        .iter()
        .enumerate()
        .map(|(c, lc)| {
            let setup = setups.get(c).cloned().unwrap_or_default();
            let bottleneck = bottlenecks.get(c).cloned().flatten();
            let mut global_ranks = lc.global_ranks.clone();
            global_ranks.sort_unstable();
            CommProfile {
                id: lc.id.clone(),
                parallelism: parallelism
                    .get(c)
                    .copied()
                    .unwrap_or(Parallelism::Unknown)
                    .name()
                    .to_string(),
                global_ranks,
                size: lc.size,
                operations: comm_ops.get(c).copied().unwrap_or(0),
                channels: setup.channels,
                tree_channels: setup.tree_channels,
                nodes: setup.nodes,
                local_ranks: setup.local_ranks,
                transports: setup.transports,
                bottleneck_gbps: bottleneck.as_ref().map(|b| b.gbps),
                bottleneck: bottleneck.map(|b| kind_of(&b)),
            }
        })
        .collect()
}

/// A bottleneck's kind without host names and bus ids (`NVL`, `NET`): what two runs can share.
fn kind_of(b: &enrich::Bottleneck) -> String {
    b.name
        .split_whitespace()
        .next()
        .unwrap_or(&b.name)
        .to_string()
}

/// Versions per rank and each host's topology.
fn facts(session: &Session, analysis: &Analysis) -> RunFacts {
    let mut versions: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    let mut hosts: BTreeMap<String, HostTopology> = BTreeMap::new();
    for log in session.logs() {
        for p in &log.parsed.processes {
            let version = p
                .nccl_version
                .as_deref()
                .or(log.parsed.nccl_version.as_deref());
            if let (Some(v), Some(r)) = (version, analysis.communicators.rank_of(&p.process)) {
                versions.entry(v.to_string()).or_default().insert(r);
            }
            if let Some(t) = &p.topology {
                hosts
                    .entry(p.process.host.to_string())
                    .or_insert_with(|| host_topology(&p.process.host, t));
            }
        }
    }
    RunFacts {
        versions: versions
            .into_iter()
            .map(|(v, r)| (v, r.into_iter().collect()))
            .collect(),
        settings: BTreeMap::new(),
        hosts: hosts.into_values().collect(),
    }
}

fn host_topology(host: &str, t: &Topology) -> HostTopology {
    let is_gpu = |i: usize| t.nodes.get(i).is_some_and(|n| n.kind == NodeKind::Gpu);
    let fastest = |keep: &dyn Fn(&ingest_nccl::topo::TopoLink) -> bool| {
        t.links
            .iter()
            .filter(|l| keep(l))
            .map(|l| l.bw_gbps)
            .reduce(f64::max)
    };
    HostTopology {
        host: host.to_string(),
        gpus: t.nodes.iter().filter(|n| n.kind == NodeKind::Gpu).count() as u32,
        nvlink_gbps: fastest(&|l| {
            matches!(l.kind, LinkKind::Nvl | LinkKind::Nvb) && is_gpu(l.from)
        }),
        net_gbps: fastest(&|l| l.kind == LinkKind::Net),
    }
}
