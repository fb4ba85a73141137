//! Synthetic multi-rank training-run generator with ground truth.
//!
//! Why: real multi-node NCCL logs with matching Nsight exports and known answers are rare; the
//! analyzer's alignment, communicator grouping, clock synchronisation and volume checks are
//! tested against runs generated here, whose truth is exact. Everything is produced in memory by
//! [`generate`] (deterministic for a seed); [`write_run`] puts it on disk. Large runs go through
//! [`write_streaming`] / [`write_preset_streaming`] (module [`stream`]), which writes one rank at a
//! time from the same per-rank generator (`rank_out`) in bounded memory.
//!
//! Output of a run: NCCL debug logs (one per process `nccl_debug_<host>_<pid>.log`, or one combined
//! `nccl_debug_combined.log`), one Nsight Systems SQLite export per node (`report_<host>.sqlite`,
//! real DDL of schema 3.17 or 3.25) and `truth.json`.

pub mod chatter;
pub mod comms;
pub mod hang;
pub mod kineto;
mod kineto_json;
pub mod layout;
pub mod logfmt;
pub mod model;
pub mod ncclnvtx;
pub mod nsysdb;
pub mod presets;
pub mod rng;
pub mod schedule;
pub mod step_stages;
pub mod stream;
pub mod timing;
pub mod truth;
pub mod variation;
pub mod write;

pub use layout::{Dim, Layout, MoeDispatcher};
pub use model::Model;
pub use nsysdb::Schema;
pub use presets::{preset, presets, Preset};
pub use stream::{write_preset_streaming, write_streaming, StreamStats};
pub use write::{write_preset, write_run};

use ::model::{Algo, DataType, OpType, Proto};
pub use logfmt::Launcher;
use logfmt::{Printer, Version};
use nsysdb::{KernelRow, NodeReport, NvtxRow};
use rng::Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use truth::{LogOpRef, Truth, TruthClock, TruthComm, TruthKernel, TruthRank};

/// Deviations from a clean run, as seen in real traces (thesis tables 4.1, 4.2, 4.5).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Imperfections {
    /// Grouped Send/Recv run as one SendRecv kernel (what NCCL does); false: one kernel per op.
    pub sendrecv_fusion: bool,
    /// The first rank of every TP group prints each per-collective line twice.
    pub duplicate_logging_rank_per_tp_group: bool,
    /// AllReduce lines per rank with no kernel.
    pub orphan_allreduce_lines: u32,
    /// SendRecv kernels per rank with no log line.
    pub orphan_sendrecv_kernels: u32,
    /// Percentage of per-collective lines missing from the logs.
    pub drop_log_pct: f64,
    /// Percentage of NCCL kernels missing from the reports.
    pub drop_kernel_pct: f64,
    /// Number of non-operation lines per log file with two prefixes merged (concurrent writes).
    pub garbled_lines: u32,
    /// Every log file ends in a cut, newline-less (non-operation) line.
    pub truncated_last_line: bool,
    /// NCCL kernels per rank whose end equals their start (a timer that did not advance, as
    /// exports of very short kernels show).
    #[serde(default)]
    pub zero_duration_kernels: u32,
}

/// How the logs print each communicator's rings and trees (`NCCL_DEBUG_SUBSYS` decides whether
/// NCCL prints them at all; its topology search decides the order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RingLines {
    /// In communicator-rank order (`Channel 00/02 :  0  1  2  3`), as a one-node ring prints.
    #[default]
    Ordered,
    /// In an order of the communicator's own ([`ring_order`]), the same on every channel, as
    /// NCCL's search orders rings across nodes.
    Shuffled,
    /// Not at all: no ring order, ring neighbour, tree or connection line (the channel counts
    /// are still printed).
    Omitted,
}

/// The ring order (communicator ranks) a communicator's logs print under `lines`: identity for
/// [`RingLines::Ordered`] and [`RingLines::Omitted`] (the order the timing assumes either way),
/// a permutation drawn from the communicator's id for [`RingLines::Shuffled`].
pub fn ring_order(lines: RingLines, comm: &comms::Communicator) -> Vec<usize> {
    let n = comm.global_ranks.len();
    let mut order: Vec<usize> = (0..n).collect();
    if lines == RingLines::Shuffled {
        let mut rng = Rng::derive(comm.comm_id, 0x5106);
        for i in (1..n).rev() {
            order.swap(i, rng.range(0, i as u64 + 1) as usize);
        }
    }
    order
}

/// Everything that defines a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub layout: Layout,
    pub model: Model,
    pub nodes: u32,
    pub gpus_per_node: u32,
    /// e.g. "2.18.3", "2.21.5", "2.23.4", "2.27.5"
    pub nccl_version: String,
    /// Prefix every log line with a `%s.%6f` epoch timestamp.
    pub timestamps: bool,
    /// One interleaved log for all processes instead of one per process.
    pub combined_log: bool,
    pub schema: Schema,
    /// Inter-node network bandwidth, GB/s.
    pub net_gbps: f64,
    pub imperfections: Imperfections,
    pub seed: u64,
    /// NCCL's own NVTX ranges with binary payloads in the reports ([`ncclnvtx`]); only where a
    /// real capture has them: schema 3.25 and NCCL ≥ 2.19.
    #[serde(default)]
    pub nccl_nvtx: bool,
    /// The launcher whose tag wraps every log line (none by default).
    #[serde(default)]
    pub launcher: Launcher,
    /// Buffers registered as symmetric memory (NCCL 2.27+ windows): single-node AllReduce,
    /// AllGather and ReduceScatter then run NCCL's symmetric kernels and print `[Symmetric]`
    /// tuning lines. No effect before 2.27.
    #[serde(default)]
    pub symmetric: bool,
    /// One export per rank (`report_<host>_<pid>.sqlite`, as `nsys profile` run per process
    /// writes them) instead of one per node.
    #[serde(default)]
    pub report_per_rank: bool,
    /// A rank that stops, or calls another collective, at a chosen operation ([`hang`]).
    #[serde(default)]
    pub hang: Option<hang::Hang>,
    /// How the logs print rings and trees.
    #[serde(default)]
    pub ring_lines: RingLines,
    /// Slow stages on chosen ranks and steps, `data` NVTX ranges, a stage file
    /// ([`step_stages`]; off by default).
    #[serde(default)]
    pub stages: step_stages::StageKnob,
    /// One known difference from an otherwise equal run, for the run comparison's tests
    /// ([`variation`]); none by default.
    #[serde(default)]
    pub variation: variation::Variation,
}

impl RunConfig {
    /// A clean run of `layout` and `model` on as many 4-GPU nodes as needed.
    pub fn new(layout: Layout, model: Model) -> RunConfig {
        let world = layout.world();
        let gpn = world.min(4);
        RunConfig {
            nodes: world.div_ceil(gpn),
            gpus_per_node: gpn,
            layout,
            model,
            nccl_version: "2.27.5".into(),
            timestamps: false,
            combined_log: false,
            schema: Schema::V3_25,
            net_gbps: 25.0,
            imperfections: Imperfections {
                sendrecv_fusion: true,
                ..Imperfections::default()
            },
            seed: 1,
            nccl_nvtx: false,
            launcher: Launcher::None,
            symmetric: false,
            report_per_rank: false,
            hang: None,
            ring_lines: RingLines::Ordered,
            stages: step_stages::StageKnob::default(),
            variation: variation::Variation::default(),
        }
    }

    /// Whether the reports carry NCCL's NVTX domain (option on, and schema/version have it).
    pub fn emits_nccl_nvtx(&self) -> bool {
        self.nccl_nvtx
            && self.schema == Schema::V3_25
            && Version::parse(&self.nccl_version).at_least(19)
    }
}

/// A generated run, entirely in memory.
#[derive(Debug, Clone)]
pub struct Run {
    pub config: RunConfig,
    /// Log files: (file name, bytes).
    pub files: Vec<(String, Vec<u8>)>,
    pub reports: Vec<NodeReport>,
    pub truth: Truth,
}

impl Run {
    pub fn truth_json(&self) -> Vec<u8> {
        serde_json::to_vec(&self.truth).expect("truth serialises")
    }
}

/// Reference epoch of every run (2024-11-21T00:53:20Z), so logs look like real runs.
pub(crate) const EPOCH_NS: i64 = 1_732_150_400_000_000_000;
/// The captures start this long before t0 (before NCCL init).
pub(crate) const SESSION_LEAD_NS: i64 = 5_000_000_000;
const BUS_IDS: [u64; 8] = [
    0x18000, 0x2a000, 0x3a000, 0x5d000, 0x9a000, 0xab000, 0xba000, 0xdb000,
];

/// (correlation id, (communicator, opCount) it executes, kernel short name).
type KernelRef = (u32, Option<(usize, u64)>, String);

/// One process: one rank on one GPU of one node.
pub(crate) struct Proc {
    pub(crate) rank: u32,
    pub(crate) node: u32,
    pub(crate) local: u32,
    pub(crate) host: String,
    pub(crate) pid: u32,
    pub(crate) printer: Printer,
}

pub(crate) fn channels_for(bytes: u64, intra: bool) -> u32 {
    let max = if intra { 16 } else { 8 };
    ((bytes / (256 * 1024)) as u32)
        .clamp(1, max)
        .next_power_of_two()
        .min(max)
}

fn proto_for(bytes: u64) -> Proto {
    if bytes < 64 * 1024 {
        Proto::LL
    } else if bytes < 4 * 1024 * 1024 {
        Proto::LL128
    } else {
        Proto::Simple
    }
}

/// Generates a run in memory.
pub fn generate(cfg: &RunConfig) -> Run {
    generate_named(cfg, None)
}

/// Everything shared by all ranks: schedule, simulated times, processes and clocks. Why a
/// separate step: the per-rank output ([`rank_out`]) depends only on this, so the streaming writer
/// can produce one rank at a time in bounded memory while [`generate`] collects them all.
pub(crate) struct Plan<'a> {
    pub(crate) cfg: &'a RunConfig,
    pub(crate) v: Version,
    pub(crate) gpn: u32,
    pub(crate) nodes: u32,
    pub(crate) comms: comms::Comms,
    pub(crate) calls: Vec<Vec<schedule::Call>>,
    pub(crate) timed: Vec<Vec<timing::Timed>>,
    pub(crate) procs: Vec<Proc>,
    /// Per node (offset ns, drift ppm).
    pub(crate) clocks: Vec<(i64, f64)>,
    /// Latest kernel end over ranks `0..=r` (the truncated last line of rank r is stamped after
    /// it, as the sequential generator always did).
    pub(crate) end_prefix: Vec<i64>,
    /// What the hang knob planted, if anything.
    pub(crate) hang: Option<hang::Expected>,
}

impl Plan<'_> {
    /// Report clock of a node: ns since the capture started (SESSION_LEAD before t0), plus the
    /// node's offset and drift.
    pub(crate) fn gpu(&self, node: u32, t: i64) -> i64 {
        let (off, drift) = self.clocks[node as usize];
        let s = t + SESSION_LEAD_NS;
        s + off + (drift * 1e-6 * s as f64) as i64
    }
    pub(crate) fn end_max(&self) -> i64 {
        self.end_prefix.last().copied().unwrap_or(0)
    }
    pub(crate) fn host(node: u32) -> String {
        format!("node{:02}", node + 1)
    }
    /// Per-node capture duration (ANALYSIS_DETAILS).
    pub(crate) fn duration_ns(&self, node: u32) -> i64 {
        self.gpu(node, self.end_max()) + 1_000_000
    }
}

/// One rank's share of a run.
pub(crate) struct RankOut {
    /// Log lines in time order (garbled lines already applied), with their true times.
    pub(crate) stamps: Vec<i64>,
    pub(crate) texts: Vec<String>,
    /// The cut last line, when the run has one.
    pub(crate) tail: Option<String>,
    pub(crate) krows: Vec<KernelRow>,
    pub(crate) nvtx: Vec<NvtxRow>,
    pub(crate) nccl_nvtx: Vec<ncclnvtx::NcclNvtxRow>,
    pub(crate) truth_rank: TruthRank,
    pub(crate) kernels: Vec<TruthKernel>,
    pub(crate) unmatched_log_ops: u64,
    pub(crate) unmatched_kernels: u64,
}

/// Schedules every rank, simulates the run and draws processes and clocks.
pub(crate) fn plan(cfg: &RunConfig) -> Plan<'_> {
    let v = Version::parse(&cfg.nccl_version);
    let layout = &cfg.layout;
    let world = layout.world();
    let gpn = cfg.gpus_per_node.max(1);
    let nodes = world.div_ceil(gpn).max(cfg.nodes.min(world.div_ceil(gpn)));
    let imp = &cfg.imperfections;
    let comms = comms::Comms::build(layout, cfg.seed);
    let mut calls: Vec<Vec<schedule::Call>> = (0..world)
        .map(|r| schedule::build(layout, &cfg.model, &comms, r))
        .collect();
    for c in calls.iter_mut() {
        schedule::add_orphans(c, comms.world, imp.orphan_allreduce_lines, cfg.seed);
    }
    step_stages::apply(&mut calls, &cfg.stages);
    let hw = timing::Hardware {
        gpus_per_node: gpn,
        nvlink_gbps: 150.0,
        net_gbps: cfg.net_gbps,
        knobs: cfg.variation.knobs(),
    };
    let mut timed = timing::simulate(&calls, &comms, &hw, cfg.seed);
    let hang = hang::apply(cfg.hang.as_ref(), &comms, &mut calls, &mut timed);

    // Processes and clocks.
    let mut prng = Rng::derive(cfg.seed, 0x91D);
    let mut used = std::collections::HashSet::new();
    let procs: Vec<Proc> = (0..world)
        .map(|r| {
            let node = r / gpn;
            let local = r % gpn;
            let host = format!("node{:02}", node + 1);
            let mut pid = prng.range(2_000, 400_000) as u32;
            while !used.insert(pid) {
                pid += 1;
            }
            let printer = Printer {
                host: host.clone(),
                pid,
                dev: local,
                tag: cfg.launcher.tag(r, local),
            };
            Proc {
                rank: r,
                node,
                local,
                host,
                pid,
                printer,
            }
        })
        .collect();
    let mut crng = Rng::derive(cfg.seed, 0xC10C);
    let clocks: Vec<(i64, f64)> = (0..nodes)
        .map(|n| {
            if n == 0 {
                (0, 0.0)
            } else {
                (
                    (crng.uniform(-50e6, 50e6)) as i64,
                    crng.uniform(-20.0, 20.0),
                )
            }
        })
        .collect();
    let mut end_prefix = Vec::with_capacity(world as usize);
    let mut end_max = 0i64;
    for (list, tl) in calls.iter().zip(&timed) {
        for (c, tm) in list.iter().zip(tl) {
            if !c.orphan {
                end_max = end_max.max(tm.end_ns);
            }
        }
        end_prefix.push(end_max);
    }

    Plan {
        cfg,
        v,
        gpn,
        nodes,
        comms,
        calls,
        timed,
        procs,
        clocks,
        end_prefix,
        hang,
    }
}

/// Everything one process contributes: its log text, kernel and NVTX rows, and truth. Depends
/// only on the plan and the rank (own random stream), so ranks can be produced in any grouping.
pub(crate) fn rank_out(pl: &Plan, p: &Proc) -> RankOut {
    let cfg = pl.cfg;
    let v = pl.v;
    let layout = &cfg.layout;
    let imp = &cfg.imperfections;
    let comms = &pl.comms;
    let calls = &pl.calls;
    let timed = &pl.timed;
    let gpn = pl.gpn;
    let multi_node = pl.nodes > 1;
    let gpu = |node: u32, t: i64| pl.gpu(node, t);
    let mut nvtx: Vec<NvtxRow> = Vec::new();
    let nccl_on = cfg.emits_nccl_nvtx();
    let mut nccl_nvtx: Vec<ncclnvtx::NcclNvtxRow> = Vec::new();
    let mut nccl_range = |s: i64, e: i64, function: &'static str, f: Option<ncclnvtx::Fields>| {
        nccl_nvtx.push(ncclnvtx::NcclNvtxRow {
            pid: p.pid,
            tid: p.pid,
            start_ns: pl.gpu(p.node, s),
            end_ns: pl.gpu(p.node, e),
            function,
            payload: f
                .and_then(|f| ncclnvtx::schema_of(function).map(|sc| ncclnvtx::encode(sc, &f))),
        });
    };
    let mut truth_kernels: Vec<TruthKernel> = Vec::new();
    let mut out_unmatched_kernels = 0u64;
    let mut name_cache: HashMap<(OpType, DataType, bool, Option<&str>), nsysdb::KernelNames> =
        HashMap::new();
    let r = p.rank as usize;
    let mut rng = Rng::derive(cfg.seed, 0x1000 + r as u64);
    let mut lines: Vec<(i64, String)> = Vec::new();
    let tid_init = p.pid + 31 + (rng.range(0, 40) as u32);
    let ts = |t: i64| {
        if cfg.timestamps {
            Some(EPOCH_NS + t)
        } else {
            None
        }
    };
    let say = |lines: &mut Vec<(i64, String)>, t: i64, tid: u32, body: String| {
        let mut l = p.printer.prefix(tid, ts(t));
        l.push_str(&body);
        lines.push((t, l));
    };
    // Banner and init.
    let mut t = -4_000_000_000 + r as i64 * 1_000;
    // Chatter draws from its own stream so the operation lines (and drops) do not depend on it.
    let mut crng = Rng::derive(cfg.seed, 0xC4A7_0000 + r as u64);
    for l in chatter::process_start("eth0") {
        say(&mut lines, t - 100, p.pid, l);
    }
    say(
        &mut lines,
        t,
        p.pid,
        format!("Bootstrap : Using eth0:10.0.{}.{}<0>", p.node, 10 + p.local),
    );
    say(
        &mut lines,
        t + 100,
        p.pid,
        format!("NCCL version {}+cuda12.2", v),
    );
    say(&mut lines, t + 200, p.pid, "cudaDriverVersion 12020".into());
    say(
        &mut lines,
        t + 300,
        tid_init,
        if multi_node {
            "Using network IB".into()
        } else {
            "Using network Socket".into()
        },
    );
    let node_bus: Vec<u64> = (0..gpn).map(|i| BUS_IDS[i as usize % 8]).collect();
    let bus = BUS_IDS[p.local as usize % 8];
    let mut proxy_conns = 0u32;
    for (k, &ci) in comms.of_rank[r].iter().enumerate() {
        let c = &comms.list[ci];
        let me = c.member(p.rank);
        t = -3_000_000_000 + k as i64 * 200_000_000 + r as i64 * 1_000;
        if v.at_least(18) {
            say(
                &mut lines,
                t,
                tid_init,
                logfmt::init_start(c.pointers[me], me as u32, c.size(), p.local, bus, c.comm_id),
            );
        }
        if k == 0 {
            for (j, l) in logfmt::topology(v, &node_bus, p.local, 150.0, cfg.net_gbps, multi_node)
                .into_iter()
                .enumerate()
            {
                say(&mut lines, t + 1_000 + j as i64, tid_init, l);
            }
        }
        // What connection lines print in brackets after a rank: its busId up to 2.18
        // (`1[81000]`, issue350), its device from 2.19 (`8[0]`, the grpo notes; `1[1]`, issue6201).
        let rb: Vec<(u32, u64)> = c
            .global_ranks
            .iter()
            .map(|&g| {
                let dev = g % gpn;
                let label = if v.at_least(19) {
                    u64::from(dev)
                } else {
                    BUS_IDS[dev as usize % 8]
                };
                (g, label)
            })
            .collect();
        let nch = if c.global_ranks.iter().all(|g| g / gpn == p.node) {
            2
        } else {
            4
        };
        let n = c.global_ranks.len();
        let order = ring_order(cfg.ring_lines, c);
        let at = order.iter().position(|&r| r == me).unwrap_or(0);
        let next_g = c.global_ranks[order[(at + 1) % n]];
        let prev_g = c.global_ranks[order[(at + n - 1) % n]];
        let next_remote = next_g / gpn != p.node;
        let prev_remote = prev_g / gpn != p.node;
        let mut nodes_of: Vec<u32> = c.global_ranks.iter().map(|g| g / gpn).collect();
        nodes_of.dedup();
        let on_node: Vec<u32> = c
            .global_ranks
            .iter()
            .copied()
            .filter(|g| g / gpn == p.node)
            .collect();
        if let Some(l) = chatter::comm_summary(
            v,
            &logfmt::ptr(c.pointers[me]),
            me as u32,
            c.size(),
            nodes_of.len() as u32,
            on_node.len() as u32,
            on_node.iter().position(|&g| g == p.rank).unwrap_or(0) as u32,
        ) {
            say(&mut lines, t + 50_000, tid_init, l);
        }
        // Channel and connection lines, then (proxy chatter in between) "Connected all rings"
        // and what follows it, as real logs order them.
        let mut chan = logfmt::channels(v, &rb, &order, me, nch, next_remote, prev_remote);
        if cfg.ring_lines == RingLines::Omitted {
            chan.retain(|l| !logfmt::is_route_line(l));
        }
        let split = chan
            .iter()
            .position(|l| l.starts_with("Connected all rings"))
            .unwrap_or(chan.len());
        for (j, l) in chan.into_iter().enumerate() {
            let at = if j < split { 100_000 } else { 3_000_000 };
            say(&mut lines, t + at + j as i64, tid_init, l);
        }
        let tid_proxy = p.pid + 200 + 3 * k as u32;
        say(
            &mut lines,
            t + 150_000,
            tid_proxy + 1,
            chatter::proxy_progress(p.local, crng.range(0, 128) as u32),
        );
        if n > 1 {
            let mut at = t + 200_000;
            for _ in 0..nch.min(2) {
                for (send, peer, remote) in
                    [(true, next_g, next_remote), (false, prev_g, prev_remote)]
                {
                    let transport = if remote { 2 } else { 0 };
                    for (dt, th, body) in chatter::proxy_connection(
                        v,
                        &mut crng,
                        proxy_conns,
                        send,
                        // A network connection is served by the rank's own proxy; a P2P one by
                        // the peer's (the 2.27.5 log: "from local rank 3" on rank 7's proxy).
                        if remote { p.local } else { peer % gpn },
                        transport,
                    ) {
                        let tid = match th {
                            chatter::Thread::Main => tid_init,
                            chatter::Thread::Proxy => tid_proxy,
                        };
                        say(&mut lines, at + dt, tid, body);
                    }
                    proxy_conns += 1;
                    at += 300_000;
                }
            }
        }
        for (j, l) in chatter::after_connect(v, &mut crng, k == 0)
            .into_iter()
            .enumerate()
        {
            say(&mut lines, t + 4_000_000 + j as i64, tid_init, l);
        }
        if nccl_on {
            nccl_range(
                t,
                t + 150_000_000,
                "ncclCommInitRankConfig",
                Some(ncclnvtx::Fields {
                    comm_hash: c.comm_id,
                    int_a: c.size() as i32,
                    int_b: me as i32,
                    int_c: p.local as i32,
                    ..Default::default()
                }),
            );
        }
        say(
            &mut lines,
            t + 150_000_000,
            p.pid,
            logfmt::init_complete(
                v,
                c.pointers[me],
                me as u32,
                c.size(),
                p.local,
                bus,
                c.comm_id,
            ),
        );
        if let Some(l) = chatter::init_timings(v, &mut crng, me as u32, c.size(), 0.15) {
            say(&mut lines, t + 150_000_001, p.pid, l);
        }
    }

    // Operations.
    let dup = imp.duplicate_logging_rank_per_tp_group && layout.coord(p.rank, Dim::TP) == 0;
    let mut op_counts: HashMap<usize, u64> = HashMap::new();
    let mut printed: HashMap<(usize, u64), u32> = HashMap::new();
    let mut ops_by_type: BTreeMap<String, u64> = BTreeMap::new();
    let mut bytes_by_type: BTreeMap<String, u64> = BTreeMap::new();
    // The contract's keys are always present, with 0 where nothing was logged.
    for op in OpType::CONTRACT {
        ops_by_type.insert(op.name().into(), 0);
        bytes_by_type.insert(op.name().into(), 0);
    }
    let mut duplicated = 0u64;
    let mut log_volume: BTreeMap<String, u64> = BTreeMap::new();
    let mut corr: u32 = 100 + rng.range(0, 50) as u32;
    let mut krows: Vec<KernelRow> = Vec::new();
    let mut kernel_refs: Vec<KernelRef> = Vec::new();
    let orphan_kernel_at: Vec<usize> = (0..imp.orphan_sendrecv_kernels)
        .map(|_| rng.range(0, calls[r].len().max(1) as u64) as usize)
        .collect();
    let compute_stream = 7u32;
    let forced = cfg.variation.knobs();
    for (i, call) in calls[r].iter().enumerate() {
        let tm = timed[r][i];
        let c = &comms.list[call.comm()];
        let me = c.member(p.rank);
        let oc = *op_counts
            .entry(call.comm())
            .and_modify(|x| *x += 1)
            .or_insert(0);
        // Compute kernels in the gap before the call.
        if call.compute_ns > 0 {
            let gap_end = tm.arrive_ns - 1_000;
            let nk = 1 + (call.compute_ns / 400_000).min(2) as i64;
            let span = (gap_end - tm.gap_start_ns).max(nk);
            for k in 0..nk {
                let s = tm.gap_start_ns + span * k / nk + 500;
                let e = tm.gap_start_ns + span * (k + 1) / nk;
                let (short, dem) = nsysdb::COMPUTE_KERNELS[rng.range(0, 4) as usize];
                corr += 1;
                krows.push(KernelRow {
                    pid: p.pid,
                    tid: p.pid,
                    device: p.local,
                    stream_id: compute_stream,
                    correlation_id: corr,
                    start_ns: gpu(p.node, s),
                    end_ns: gpu(p.node, e.max(s + 1_000)),
                    launch_ns: gpu(p.node, s - 8_000),
                    short: short.into(),
                    demangled: dem.into(),
                    mangled: short.into(),
                    grid_x: 108 + rng.range(0, 400) as u32,
                    block_x: 256,
                    registers: 128,
                    static_shared: 0,
                    dynamic_shared: 49152,
                });
            }
        }
        if orphan_kernel_at.contains(&i) && !call.orphan {
            let s = tm.gap_start_ns + 2_000;
            let names = nsysdb::nccl_kernel(v, OpType::SendRecv, DataType::Int8, false);
            corr += 1;
            let n = orphan_kernel_at.iter().filter(|&&x| x == i).count();
            for _ in 0..n {
                krows.push(KernelRow {
                    pid: p.pid,
                    tid: p.pid,
                    device: p.local,
                    stream_id: c.stream_ids[me],
                    correlation_id: corr,
                    start_ns: gpu(p.node, s),
                    end_ns: gpu(p.node, s + 9_000),
                    launch_ns: gpu(p.node, s - 6_000),
                    short: names.short.clone(),
                    demangled: names.demangled.clone(),
                    mangled: names.mangled.clone(),
                    grid_x: 2,
                    block_x: 640,
                    registers: 96,
                    static_shared: 0,
                    dynamic_shared: 0,
                });
                kernel_refs.push((corr, None, names.short.clone()));
                corr += 1;
            }
        }
        // Log lines.
        let mut total_bytes = 0;
        for o in &call.ops {
            let bytes = o.count * o.dtype.size_bytes();
            total_bytes += bytes;
            let buf = 0x7f00_0000_0000 + (rng.range(0x100, 0xff_ffff) << 12);
            let line = logfmt::op_line(
                v,
                o.op,
                oc,
                buf,
                if o.op == OpType::AllReduce {
                    buf
                } else {
                    buf + 0x20_0000
                },
                o.count,
                o.dtype.code(),
                o.redop,
                o.root,
                c.pointers[me],
                c.size(),
                c.streams[me],
            );
            let times = if dup { 2 } else { 1 };
            let mut volume_counted = false;
            for k in 0..times {
                if imp.drop_log_pct > 0.0 && rng.chance(imp.drop_log_pct / 100.0) {
                    continue;
                }
                say(&mut lines, tm.arrive_ns + k, p.pid, line.clone());
                *ops_by_type.entry(o.op.name().into()).or_default() += 1;
                *bytes_by_type.entry(o.op.name().into()).or_default() += bytes;
                // A duplicated line is one operation: its traffic counts once.
                if !volume_counted {
                    *log_volume.entry(c.parallelism.to_string()).or_default() +=
                        truth::link_traffic(o.op, bytes, c.size());
                    volume_counted = true;
                }
                *printed.entry((call.comm(), oc)).or_default() += 1;
                if k == 1 {
                    duplicated += 1;
                }
            }
        }
        if nccl_on {
            // The API calls happen on the CPU just before the line's time; grouped calls are
            // bracketed by ncclGroupStart/ncclGroupEnd, as in the real capture. The call (or
            // ncclGroupEnd) launches the kernel, so its range ends after the launch (a + 1 µs).
            let a = tm.arrive_ns;
            let n = call.ops.len() as i64;
            let grouped = n > 1 || call.is_p2p();
            if grouped {
                nccl_range(
                    a - 2_400 - 400 * n,
                    a - 2_100 - 400 * n,
                    "ncclGroupStart",
                    None,
                );
            }
            for (j, o) in call.ops.iter().enumerate() {
                let oc_ = &comms.list[o.comm];
                let int_a = match o.op {
                    OpType::Send | OpType::Recv => {
                        o.peer.map(|q| oc_.member(q) as i32).unwrap_or(-1)
                    }
                    _ => o.root as i32,
                };
                let f = ncclnvtx::Fields {
                    comm_hash: oc_.comm_id,
                    bytes: o.count * o.dtype.size_bytes(),
                    int_a,
                    redop: o.redop,
                    ..Default::default()
                };
                let (s, e) = if grouped {
                    let s = a - 2_000 - 400 * (n - j as i64);
                    (s, s + 300)
                } else {
                    (a - 2_000, a + 1_500)
                };
                nccl_range(s, e, ncclnvtx::function_of(o.op), Some(f));
            }
            if grouped {
                nccl_range(a - 2_000, a + 1_500, "ncclGroupEnd", None);
            }
        }
        let intra = c.global_ranks.iter().all(|g| g / gpn == p.node);
        // The symmetric kernel this call runs, if any (single-node collectives with symmetric
        // buffers, 2.27+).
        let sym: Option<&'static str> =
            if cfg.symmetric && v.at_least(27) && intra && !call.is_p2p() {
                let o = &call.ops[0];
                nsysdb::sym_kernel_id(o.op, o.dtype, o.redop, total_bytes)
            } else {
                None
            };
        if !call.is_p2p() {
            let o = &call.ops[0];
            let nbytes = match o.op {
                OpType::AllGather | OpType::ReduceScatter => total_bytes * c.size() as u64,
                _ => total_bytes,
            };
            let algo = forced
                .algorithm(o.op)
                .unwrap_or(variation::default_algorithm(o.op, intra, nbytes));
            let nch = channels_for(nbytes, intra);
            let time = (tm.end_ns - tm.start_ns) as f64 / 1000.0;
            let tl = match sym {
                Some(id) => logfmt::sym_tuning_line(v, o.op, total_bytes, id, nch, me as u32),
                None => logfmt::tuning_line(v, o.op, nbytes, algo, proto_for(nbytes), nch, time),
            };
            if let Some(tl) = tl {
                say(&mut lines, tm.arrive_ns + 2, p.pid, tl);
            }
        }
        if call.orphan {
            continue;
        }
        // Kernels.
        let units: Vec<(OpType, DataType)> = if call.is_p2p() {
            if imp.sendrecv_fusion {
                vec![(OpType::SendRecv, call.ops[0].dtype); call.kernels.max(1) as usize]
            } else {
                call.ops
                    .iter()
                    .map(|o| (OpType::SendRecv, o.dtype))
                    .collect()
            }
        } else {
            vec![(call.ops[0].op, call.ops[0].dtype)]
        };
        let nu = units.len() as i64;
        let dur = (tm.end_ns - tm.start_ns).max(nu * 2_000);
        for (k, (op, dt)) in units.into_iter().enumerate() {
            let k = k as i64;
            corr += 1;
            if imp.drop_kernel_pct > 0.0 && rng.chance(imp.drop_kernel_pct / 100.0) {
                continue;
            }
            let s = tm.start_ns + dur * k / nu;
            let e = tm.start_ns + dur * (k + 1) / nu - if k + 1 < nu { 500 } else { 0 };
            let nbytes = total_bytes * if call.is_p2p() { 1 } else { c.size() as u64 };
            let tree = forced
                .algorithm(op)
                .unwrap_or(variation::default_algorithm(op, intra, nbytes))
                == Algo::Tree;
            // A handful of distinct names per run: format them once.
            let names = name_cache
                .entry((op, dt, tree, sym))
                .or_insert_with(|| match sym {
                    Some(id) => nsysdb::sym_kernel(v, id, dt),
                    None => nsysdb::nccl_kernel(v, op, dt, tree),
                })
                .clone();
            let grid_x = if call.is_p2p() {
                (2 * call.ops.len() as u32).min(32)
            } else {
                channels_for(nbytes, intra)
            };
            krows.push(KernelRow {
                pid: p.pid,
                tid: p.pid,
                device: p.local,
                stream_id: c.stream_ids[me],
                correlation_id: corr,
                start_ns: gpu(p.node, s),
                end_ns: gpu(p.node, e),
                launch_ns: gpu(p.node, tm.arrive_ns + 1_000),
                short: names.short.clone(),
                demangled: names.demangled,
                mangled: names.mangled,
                grid_x,
                block_x: if call.is_p2p() { 640 } else { 512 },
                registers: 96,
                static_shared: 0,
                dynamic_shared: 0,
            });
            kernel_refs.push((corr, Some((call.comm(), oc)), names.short));
        }
    }
    // Kernels whose timer did not advance: drawn from a stream of their own, so every other
    // draw (and the truth) stays what it was without them.
    if imp.zero_duration_kernels > 0 {
        let nccl: Vec<usize> = (0..krows.len())
            .filter(|&i| krows[i].stream_id != compute_stream)
            .collect();
        let mut zrng = Rng::derive(cfg.seed, 0x2E80_0000 + r as u64);
        for _ in 0..imp.zero_duration_kernels.min(nccl.len() as u32) {
            let i = nccl[zrng.range(0, nccl.len() as u64) as usize];
            krows[i].end_ns = krows[i].start_ns;
        }
    }
    // NVTX: iterations and contiguous phase runs.
    let mut run_start: Option<(usize, schedule::Phase, Option<u32>)> = None;
    let n_calls = calls[r].len();
    let close = |from: usize, to: usize, text: String, nv: &mut Vec<NvtxRow>| {
        let s = timed[r][from].gap_start_ns;
        let e = timed[r][to].end_ns.max(s + 1);
        nv.push(NvtxRow {
            pid: p.pid,
            tid: p.pid,
            start_ns: gpu(p.node, s),
            end_ns: gpu(p.node, e),
            text,
        });
    };
    let nv = &mut nvtx;
    for i in 0..=n_calls {
        let key = calls[r].get(i).map(|c| (c.phase, c.iteration));
        if let Some((s, ph, it)) = run_start {
            if key != Some((ph, it)) {
                if ph != schedule::Phase::Startup {
                    close(s, i - 1, ph.name().to_string(), nv);
                }
                run_start = None;
            }
        }
        if run_start.is_none() {
            if let Some((ph, it)) = key {
                run_start = Some((i, ph, it));
            }
        }
    }
    for it in 0..cfg.model.iterations {
        let idx: Vec<usize> = (0..n_calls)
            .filter(|&i| calls[r][i].iteration == Some(it))
            .collect();
        if let (Some(&a), Some(&b)) = (idx.first(), idx.last()) {
            close(a, b, format!("iteration {it}"), nv);
        }
    }
    step_stages::split_data_ranges(nv, &calls[r], &timed[r], &cfg.stages, |t| gpu(p.node, t));
    // Truth for this rank's kernels.
    let mut kcount = 0;
    let mut matched = 0;
    for (corr, lo, name) in kernel_refs {
        kcount += 1;
        let log_op = lo.and_then(|(ci, oc)| {
            printed.get(&(ci, oc)).map(|_| LogOpRef {
                comm: logfmt::ptr(comms.list[ci].pointers[comms.list[ci].member(p.rank)]),
                op_count: oc,
            })
        });
        if log_op.is_some() {
            matched += 1;
        } else {
            out_unmatched_kernels += 1;
        }
        truth_kernels.push(TruthKernel {
            pid: p.pid,
            host: p.host.clone(),
            global_rank: p.rank,
            correlation_id: corr,
            name,
            log_op,
        });
    }
    let with_kernel: std::collections::HashSet<(usize, u64)> = truth_kernels
        .iter()
        .filter(|k| k.global_rank == p.rank)
        .filter_map(|k| k.log_op.as_ref())
        .filter_map(|lo| {
            comms.of_rank[r]
                .iter()
                .find(|&&ci| {
                    logfmt::ptr(comms.list[ci].pointers[comms.list[ci].member(p.rank)]) == lo.comm
                })
                .map(|&ci| (ci, lo.op_count))
        })
        .collect();
    let out_unmatched_log_ops: u64 = printed
        .iter()
        .filter(|(k, _)| !with_kernel.contains(k))
        .map(|(_, n)| *n as u64)
        .sum::<u64>();
    let truth_rank = TruthRank {
        global_rank: p.rank,
        host: p.host.clone(),
        pid: p.pid,
        local_rank: p.local,
        ops_by_type,
        bytes_by_type,
        kernels: kcount,
        matched_ops: matched,
        duplicated_lines: duplicated,
        log_volume_by_parallelism: log_volume,
    };

    lines.extend(hang::watchdog_lines(pl, p));
    // Imperfect text: garbled and truncated non-operation lines.
    lines.sort_by_key(|(t, _)| *t);
    let (stamps, mut texts): (Vec<i64>, Vec<String>) = lines.into_iter().unzip();
    let candidates: Vec<usize> = (0..texts.len())
        .filter(|&i| !texts[i].contains(": opCount "))
        .collect();
    for _ in 0..imp.garbled_lines {
        if candidates.is_empty() {
            break;
        }
        let i = candidates[rng.range(0, candidates.len() as u64) as usize];
        let other = p.printer.prefix(p.pid + 7, None);
        texts[i] = format!("{}{}", &other[..other.len() / 2], texts[i]);
    }
    let mut tail: Option<String> = None;
    if imp.truncated_last_line {
        let c = &comms.list[comms.world];
        let me = c.member(p.rank);
        let l = format!(
            "{}comm {} rank {} nranks {} cudaDev {} busId {:x} - Destroy COMPLETE",
            p.printer.prefix(p.pid, ts(pl.end_prefix[r] + 1_000_000)),
            logfmt::ptr(c.pointers[me]),
            me,
            c.size(),
            p.local,
            bus
        );
        tail = Some(l[..l.len() * 2 / 3].to_string());
    }
    RankOut {
        stamps,
        texts,
        tail,
        krows,
        nvtx,
        nccl_nvtx,
        truth_rank,
        kernels: truth_kernels,
        unmatched_log_ops: out_unmatched_log_ops,
        unmatched_kernels: out_unmatched_kernels,
    }
}

/// The truth of a run except its kernels and ranks (filled by the caller).
pub(crate) fn truth_skeleton(pl: &Plan, preset: Option<&str>, files: Vec<String>) -> Truth {
    let cfg = pl.cfg;
    Truth {
        preset: preset.map(str::to_string),
        nccl_version: pl.v.to_string(),
        launcher: cfg.launcher,
        seed: cfg.seed,
        t0_ns: EPOCH_NS,
        session_start_utc_ns: EPOCH_NS - SESSION_LEAD_NS,
        layout: cfg.layout.clone(),
        model: cfg.model.clone(),
        microbatches_per_iteration: cfg.model.microbatches(cfg.layout.data_parallel()),
        ranks: Vec::new(),
        communicators: pl
            .comms
            .list
            .iter()
            .map(|c| TruthComm {
                id: format!("0x{:x}", c.comm_id),
                size: c.size(),
                global_ranks: c.global_ranks.clone(),
                parallelism: c.parallelism.to_string(),
                pointers: c.pointers.iter().map(|&x| logfmt::ptr(x)).collect(),
            })
            .collect(),
        kernels: Vec::new(),
        clocks: (0..pl.nodes)
            .map(|n| TruthClock {
                host: Plan::host(n),
                offset_ns: pl.clocks[n as usize].0,
                drift_ppm: pl.clocks[n as usize].1,
            })
            .collect(),
        unmatched_log_ops: 0,
        unmatched_kernels: 0,
        step_delays: step_stages::placed(&pl.calls, &cfg.stages),
        files: files
            .into_iter()
            .chain((0..pl.nodes).map(|n| format!("report_{}.sqlite", Plan::host(n))))
            .collect(),
    }
}

/// File name of one process' log.
pub(crate) fn log_name(p: &Proc) -> String {
    format!("nccl_debug_{}_{}.log", p.host, p.pid)
}

/// As [`generate`], recording the preset name in the truth.
pub fn generate_named(cfg: &RunConfig, preset: Option<&str>) -> Run {
    let pl = plan(cfg);
    let nodes = pl.nodes;
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut all_lines: Vec<(i64, u32, u64, String)> = Vec::new();
    let mut truth_ranks = Vec::new();
    let mut truth_kernels = Vec::new();
    let mut kernels_by_node: Vec<Vec<KernelRow>> = vec![Vec::new(); nodes as usize];
    let mut nvtx_by_node: Vec<Vec<NvtxRow>> = vec![Vec::new(); nodes as usize];
    let mut nccl_by_node: Vec<Vec<ncclnvtx::NcclNvtxRow>> = vec![Vec::new(); nodes as usize];
    let mut unmatched_log_ops = 0u64;
    let mut unmatched_kernels = 0u64;
    for p in &pl.procs {
        let out = rank_out(&pl, p);
        kernels_by_node[p.node as usize].extend(out.krows);
        nvtx_by_node[p.node as usize].extend(out.nvtx);
        nccl_by_node[p.node as usize].extend(out.nccl_nvtx);
        truth_ranks.push(out.truth_rank);
        truth_kernels.extend(out.kernels);
        unmatched_log_ops += out.unmatched_log_ops;
        unmatched_kernels += out.unmatched_kernels;
        if cfg.combined_log {
            for (k, (t, l)) in out.stamps.into_iter().zip(out.texts).enumerate() {
                all_lines.push((t, p.rank, k as u64, l));
            }
            if let Some(tl) = out.tail {
                all_lines.push((i64::MAX, p.rank, u64::MAX, tl));
            }
        } else {
            let mut s = out.texts.join("\n");
            s.push('\n');
            if let Some(tl) = out.tail {
                s.push_str(&tl);
            }
            files.push((log_name(p), s.into_bytes()));
        }
    }
    if cfg.combined_log {
        all_lines.sort_by_key(|a| (a.0, a.1, a.2));
        let mut s = String::new();
        let n = all_lines.len();
        for (k, (_, _, _, l)) in all_lines.into_iter().enumerate() {
            s.push_str(&l);
            if k + 1 < n || !cfg.imperfections.truncated_last_line {
                s.push('\n');
            }
        }
        files.push(("nccl_debug_combined.log".into(), s.into_bytes()));
    }

    let reports: Vec<NodeReport> = (0..nodes)
        .map(|n| {
            let mut kernels = std::mem::take(&mut kernels_by_node[n as usize]);
            kernels.sort_by_key(|k| (k.start_ns, k.pid, k.correlation_id));
            NodeReport {
                host: Plan::host(n),
                schema: cfg.schema,
                processes: pl.node_processes(n),
                kernels,
                nvtx: std::mem::take(&mut nvtx_by_node[n as usize]),
                nccl_nvtx: std::mem::take(&mut nccl_by_node[n as usize]),
                session_start_utc_ns: EPOCH_NS - SESSION_LEAD_NS,
                duration_ns: pl.duration_ns(n),
            }
        })
        .collect();
    let mut truth = truth_skeleton(&pl, preset, files.iter().map(|(n, _)| n.clone()).collect());
    truth.ranks = truth_ranks;
    truth.kernels = truth_kernels;
    truth.unmatched_log_ops = unmatched_log_ops;
    truth.unmatched_kernels = unmatched_kernels;
    Run {
        config: cfg.clone(),
        files,
        reports,
        truth,
    }
}

impl Plan<'_> {
    /// (pid, device, process name) of every process on node `n`.
    pub(crate) fn node_processes(&self, n: u32) -> Vec<(u32, u32, String)> {
        self.procs
            .iter()
            .filter(|p| p.node == n)
            .map(|p| (p.pid, p.local, "python3".to_string()))
            .collect()
    }
}
