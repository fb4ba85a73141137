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
mod logfiles;
pub mod logfmt;
pub mod model;
pub mod ncclnvtx;
pub mod nsysdb;
pub mod presets;
mod rank;
pub mod realism;
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
pub use realism::Realism;
pub use stream::{write_preset_streaming, write_streaming, StreamStats};
pub use write::{write_preset, write_run};

pub use logfmt::Launcher;
use logfmt::{Printer, Version};
use nsysdb::{KernelRow, NodeReport, NvtxRow};
pub(crate) use rank::{rank_out, RankOut};
use rng::Rng;
use serde::{Deserialize, Serialize};
use truth::{Truth, TruthClock, TruthComm};

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
    /// The variations of real clusters ([`realism`]); the default changes nothing.
    #[serde(default)]
    pub realism: Realism,
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
            realism: Realism::default(),
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
pub(crate) const BUS_IDS: [u64; 8] = [
    0x18000, 0x2a000, 0x3a000, 0x5d000, 0x9a000, 0xab000, 0xba000, 0xdb000,
];

/// One process: one rank on one GPU of one node.
pub(crate) struct Proc {
    pub(crate) rank: u32,
    pub(crate) node: u32,
    pub(crate) local: u32,
    /// The host and pid the log prints.
    pub(crate) host: String,
    pub(crate) pid: u32,
    /// The pid the export stores (the host's, when the log's is a container's).
    pub(crate) export_pid: u32,
    /// The CUDA device the log prints (0 for every process under `CUDA_VISIBLE_DEVICES`).
    pub(crate) cuda_dev: u32,
    /// How much later than its node's this process's own capture started (per-rank exports
    /// with their own sessions; else 0).
    pub(crate) capture_delay_ns: i64,
    pub(crate) printer: Printer,
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
    /// Whether log lines carry stamps.
    pub(crate) stamped: bool,
    /// Report time = run time + this (the capture starts at run time −lead).
    pub(crate) lead_ns: i64,
    /// Per node: what the log prints and what the export stores as its name.
    pub(crate) names: Vec<realism::NodeNames>,
    /// Per node: the system clock at the capture's start, when the exports count in it.
    pub(crate) system_clocks: Vec<Option<i64>>,
}

impl Plan<'_> {
    /// Report clock of a node: ns since the capture started (SESSION_LEAD before t0), plus the
    /// node's offset and drift.
    pub(crate) fn gpu(&self, node: u32, t: i64) -> i64 {
        let (off, drift) = self.clocks[node as usize];
        let s = t + self.lead_ns;
        let base = self.system_clocks[node as usize].unwrap_or(0);
        base + s + off + (drift * 1e-6 * s as f64) as i64
    }
    /// Run time at which the captures start.
    pub(crate) fn capture_start_ns(&self) -> i64 {
        -self.lead_ns
    }
    /// What the log prints as node `n`'s name.
    pub(crate) fn log_host(&self, n: u32) -> &str {
        &self.names[n as usize].log
    }
    pub(crate) fn end_max(&self) -> i64 {
        self.end_prefix.last().copied().unwrap_or(0)
    }
    pub(crate) fn host(node: u32) -> String {
        format!("node{:02}", node + 1)
    }
    /// Per-node capture duration (ANALYSIS_DETAILS).
    pub(crate) fn duration_ns(&self, node: u32) -> i64 {
        self.gpu(node, self.end_max()) + 1_000_000 - self.system_clocks[node as usize].unwrap_or(0)
    }
}

/// Schedules every rank, simulates the run and draws processes and clocks.
pub(crate) fn plan(cfg: &RunConfig) -> Plan<'_> {
    let v = Version::parse(&cfg.nccl_version);
    let layout = &cfg.layout;
    let world = layout.world();
    let gpn = cfg.gpus_per_node.max(1);
    let nodes = world.div_ceil(gpn).max(cfg.nodes.min(world.div_ceil(gpn)));
    let imp = &cfg.imperfections;
    let re = &cfg.realism;
    let comms = comms::Comms::build_with(layout, cfg.seed, re.moe_over_dp);
    let mut calls: Vec<Vec<schedule::Call>> = (0..world)
        .map(|r| schedule::build_with(layout, &cfg.model, &comms, r, re.moe_fused))
        .collect();
    for c in calls.iter_mut() {
        schedule::add_orphans(c, comms.world, imp.orphan_allreduce_lines, cfg.seed);
        schedule::add_warmups(c, comms.world, re.warmup_ops);
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
    let own_pids: Vec<u32> = (0..world)
        .map(|_| {
            let mut pid = prng.range(2_000, 400_000) as u32;
            while !used.insert(pid) {
                pid += 1;
            }
            pid
        })
        .collect();
    let pids = realism::pids(re, cfg.seed, &own_pids, gpn);
    let names: Vec<realism::NodeNames> = (0..nodes)
        .map(|n| realism::node_names(re, &Plan::host(n), cfg.seed, n))
        .collect();
    let stamp = re.stamp_format(cfg.timestamps);
    let procs: Vec<Proc> = (0..world)
        .map(|r| {
            let node = r / gpn;
            let local = r % gpn;
            let host = names[node as usize].log.clone();
            let (pid, export_pid) = pids[r as usize];
            let cuda_dev = if re.isolated_devices { 0 } else { local };
            let printer = Printer {
                host: host.clone(),
                pid,
                dev: cuda_dev,
                tag: realism::launcher_tag(cfg.launcher, r, local, pid, &host, node),
                stamp,
                zone_min: re.zone_offset_min,
                skew_ns: i64::from(node) * re.log_clock_skew_ms * 1_000_000,
            };
            let capture_delay_ns = if re.rank_session_starts && cfg.report_per_rank {
                realism::session_shift_ns(cfg.seed, r)
            } else {
                0
            };
            Proc {
                rank: r,
                node,
                local,
                host,
                pid,
                export_pid,
                cuda_dev,
                capture_delay_ns,
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
    let system_clocks = (0..nodes)
        .map(|n| {
            (re.system_clock && cfg.schema == Schema::V3_25)
                .then(|| realism::system_clock_ns(cfg.seed, n))
        })
        .collect();

    let lead_ns = capture_lead(&calls, &timed);
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
        stamped: stamp != realism::StampFormat::None,
        lead_ns,
        names,
        system_clocks,
    }
}

/// How long before run time 0 the captures start: [`SESSION_LEAD_NS`] (before NCCL's init),
/// or, when warm-up calls are logged first, right after the last of them on any rank.
fn capture_lead(calls: &[Vec<schedule::Call>], timed: &[Vec<timing::Timed>]) -> i64 {
    let last_warmup = calls
        .iter()
        .zip(timed)
        .flat_map(|(cs, ts)| cs.iter().zip(ts).filter(|(c, _)| c.warmup))
        .map(|(_, t)| t.arrive_ns)
        .max();
    match last_warmup {
        Some(t) => -(t + schedule::WARMUP_GAP_NS / 2),
        None => SESSION_LEAD_NS,
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
        session_start_utc_ns: EPOCH_NS - pl.lead_ns,
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
                host: pl.log_host(n).to_string(),
                offset_ns: pl.clocks[n as usize].0 + pl.system_clocks[n as usize].unwrap_or(0),
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
    let mut logs = logfiles::Logs::new(&pl);
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
        logs.add(p, out.stamps, out.texts, out.tail);
    }
    let files = logs.finish();

    let mut reports: Vec<NodeReport> = (0..nodes)
        .map(|n| {
            let mut kernels = std::mem::take(&mut kernels_by_node[n as usize]);
            kernels.sort_by_key(|k| (k.start_ns, k.pid, k.correlation_id));
            NodeReport {
                host: pl.names[n as usize].export.clone(),
                schema: cfg.schema,
                processes: pl.node_processes(n),
                kernels,
                nvtx: std::mem::take(&mut nvtx_by_node[n as usize]),
                nccl_nvtx: std::mem::take(&mut nccl_by_node[n as usize]),
                session_start_utc_ns: EPOCH_NS - pl.lead_ns,
                duration_ns: pl.duration_ns(n),
                extras: pl.export_extras(n),
            }
        })
        .collect();
    if cfg.report_per_rank && cfg.realism.rank_session_starts {
        // Every process's own capture, started a little after its node's.
        reports = reports
            .into_iter()
            .flat_map(|rep| {
                pl.procs
                    .iter()
                    .filter(|p| p.node == pl.node_of_export_host(&rep.host))
                    .map(|p| {
                        rep.of_process(p.export_pid)
                            .started_later(p.capture_delay_ns)
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
    }
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
            .map(|p| (p.export_pid, p.local, "python3".to_string()))
            .collect()
    }

    /// The node whose export is named `host`.
    fn node_of_export_host(&self, host: &str) -> u32 {
        self.names
            .iter()
            .position(|n| n.export == host)
            .unwrap_or_default() as u32
    }

    /// What node `n`'s export holds beyond the defaults: with any realism knob, the GPU table
    /// with the bus ids the logs print, the CUDA device each process sees, the clock base and
    /// the zone.
    pub(crate) fn export_extras(&self, n: u32) -> realism::ExportExtras {
        let re = &self.cfg.realism;
        if !re.active() {
            return realism::ExportExtras::default();
        }
        realism::ExportExtras {
            gpus: (0..self.gpn)
                .map(|i| (i, realism::bus_location(BUS_IDS[i as usize % 8])))
                .collect(),
            cuda_devices: self
                .procs
                .iter()
                .filter(|p| p.node == n)
                .map(|p| (p.export_pid, p.local, p.cuda_dev))
                .collect(),
            system_clock_ns: self.system_clocks[n as usize],
            zone_offset_min: Some(re.zone_offset_min),
        }
    }
}
