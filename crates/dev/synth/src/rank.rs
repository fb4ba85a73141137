//! One rank's share of a run ([`rank_out`]): its log text, kernel and NVTX rows, and truth.
//! Depends only on the plan and the rank (own random streams), so ranks can be produced in any
//! grouping (the in-memory and the streaming writers both call it).
//!
//! Made in the phases a process goes through, each a method of [`RankGen`]: start-up and
//! communicator set-up lines ([`RankGen::setup`]), then per call the compute kernels before it,
//! stray kernels, its log lines, NCCL's NVTX ranges, the tuning line and its kernels
//! ([`RankGen::call`]), the NVTX phase and iteration ranges ([`RankGen::phase_ranges`]), the
//! truth of the kernels ([`RankGen::kernel_truth`]) and the imperfect text
//! ([`RankGen::imperfect_text`]). The order of the random draws is the order of these phases,
//! so a run's bytes depend on the seed alone.

use crate::nsysdb::{self, KernelRow, NvtxRow};
use crate::rng::Rng;
use crate::truth::{self, LogOpRef, TruthKernel, TruthRank};
use crate::{
    chatter, hang, logfmt, ncclnvtx, realism, ring_order, schedule, step_stages, variation, Plan,
    Proc, RingLines, BUS_IDS, EPOCH_NS,
};
use ::model::{Algo, DataType, OpType, Proto};
use std::collections::{BTreeMap, HashMap, HashSet};

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

/// The stream of the compute kernels between calls.
const COMPUTE_STREAM: u32 = 7;

/// (correlation id, (communicator, opCount) it executes, kernel short name).
type KernelRef = (u32, Option<(usize, u64)>, String);

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

/// The per-operation counts the truth keeps while the lines are printed.
#[derive(Default)]
struct Printed {
    /// Lines printed per (communicator, opCount).
    per_call: HashMap<(usize, u64), u32>,
    ops_by_type: BTreeMap<String, u64>,
    bytes_by_type: BTreeMap<String, u64>,
    duplicated: u64,
    log_volume: BTreeMap<String, u64>,
}

/// Everything one rank's generation accumulates.
struct RankGen<'a> {
    pl: &'a Plan<'a>,
    p: &'a Proc,
    rng: Rng,
    /// Lines with their true times (sorted once at the end).
    lines: Vec<(i64, String)>,
    krows: Vec<KernelRow>,
    nvtx: Vec<NvtxRow>,
    nccl_nvtx: Vec<ncclnvtx::NcclNvtxRow>,
    kernel_refs: Vec<KernelRef>,
    printed: Printed,
    tid_init: u32,
    /// The next correlation id is one more than this.
    corr: u32,
    /// Distinct kernel names, formatted once.
    names: HashMap<(OpType, DataType, bool, Option<&'static str>), nsysdb::KernelNames>,
}

/// Everything one process contributes: its log text, kernel and NVTX rows, and truth.
pub(crate) fn rank_out(pl: &Plan, p: &Proc) -> RankOut {
    let r = p.rank as usize;
    let mut rng = Rng::derive(pl.cfg.seed, 0x1000 + r as u64);
    let tid_init = p.pid + 31 + (rng.range(0, 40) as u32);
    let mut g = RankGen {
        pl,
        p,
        rng,
        lines: Vec::new(),
        krows: Vec::new(),
        nvtx: Vec::new(),
        nccl_nvtx: Vec::new(),
        kernel_refs: Vec::new(),
        printed: Printed::default(),
        tid_init,
        corr: 0,
        names: HashMap::new(),
    };
    g.setup();
    g.operations();
    g.zero_durations();
    g.phase_ranges();
    g.finish()
}

impl RankGen<'_> {
    /// The stamp of a line at run time `t` (epoch ns), when the run's lines carry stamps.
    fn ts(&self, t: i64) -> Option<i64> {
        self.pl.stamped.then_some(EPOCH_NS + t)
    }

    /// An NCCL line of thread `tid` at run time `t`.
    fn say(&mut self, t: i64, tid: u32, body: String) {
        let mut l = self.p.printer.prefix(tid, self.ts(t));
        l.push_str(&body);
        self.lines.push((t, l));
    }

    /// A line another program wrote to the same output (tagged by the launcher, no NCCL head).
    fn say_foreign(&mut self, t: i64, text: &str) {
        self.lines
            .push((t, format!("{}{text}", self.p.printer.tag)));
    }

    /// One of NCCL's own NVTX ranges, from `s` to `e` (run time); none before the capture.
    fn nccl_range(&mut self, s: i64, e: i64, function: &'static str, f: Option<ncclnvtx::Fields>) {
        if s < self.pl.capture_start_ns() {
            return;
        }
        let (pl, p) = (self.pl, self.p);
        self.nccl_nvtx.push(ncclnvtx::NcclNvtxRow {
            pid: p.export_pid,
            tid: p.export_pid,
            start_ns: pl.gpu(p.node, s),
            end_ns: pl.gpu(p.node, e),
            function,
            payload: f
                .and_then(|f| ncclnvtx::schema_of(function).map(|sc| ncclnvtx::encode(sc, &f))),
        });
    }

    /// Banner, bootstrap and the set-up lines of every communicator of the rank.
    fn setup(&mut self) {
        let (pl, p) = (self.pl, self.p);
        let (v, r) = (pl.v, p.rank as usize);
        let multi_node = pl.nodes > 1;
        let t = -4_000_000_000 + r as i64 * 1_000;
        if pl.cfg.realism.foreign_lines {
            for (j, l) in realism::torch_warnings(p.rank, EPOCH_NS + t - 50_000_000)
                .iter()
                .enumerate()
            {
                self.say_foreign(t - 50_000_000 + j as i64, l);
            }
        }
        // Chatter draws from its own stream so the operation lines (and drops) do not depend on it.
        let mut crng = Rng::derive(pl.cfg.seed, 0xC4A7_0000 + r as u64);
        for l in chatter::process_start("eth0") {
            self.say(t - 100, p.pid, l);
        }
        self.say(
            t,
            p.pid,
            format!("Bootstrap : Using eth0:10.0.{}.{}<0>", p.node, 10 + p.local),
        );
        self.say(t + 100, p.pid, format!("NCCL version {}+cuda12.2", v));
        self.say(t + 200, p.pid, "cudaDriverVersion 12020".into());
        let net = if multi_node {
            "Using network IB"
        } else {
            "Using network Socket"
        };
        self.say(t + 300, self.tid_init, net.into());
        let mut proxy_conns = 0u32;
        for k in 0..pl.comms.of_rank[r].len() {
            self.comm_setup(k, &mut crng, &mut proxy_conns);
        }
    }

    /// The set-up lines of the rank's `k`-th communicator: init, topology (first one only),
    /// channels and connections, proxy chatter, `Init COMPLETE`.
    fn comm_setup(&mut self, k: usize, crng: &mut Rng, proxy_conns: &mut u32) {
        let (pl, p) = (self.pl, self.p);
        let (v, gpn, r) = (pl.v, pl.gpn, p.rank as usize);
        let multi_node = pl.nodes > 1;
        let tid_init = self.tid_init;
        let node_bus: Vec<u64> = (0..gpn).map(|i| BUS_IDS[i as usize % 8]).collect();
        let bus = BUS_IDS[p.local as usize % 8];
        let c = &pl.comms.list[pl.comms.of_rank[r][k]];
        let me = c.member(p.rank);
        let t = -3_000_000_000 + k as i64 * 200_000_000 + r as i64 * 1_000;
        if v.at_least(18) {
            let l = logfmt::init_start_dev(
                c.pointers[me],
                me as u32,
                c.size(),
                p.cuda_dev,
                p.local,
                bus,
                c.comm_id,
            );
            self.say(t, tid_init, l);
        }
        if k == 0 {
            for (j, l) in
                logfmt::topology(v, &node_bus, p.local, 150.0, pl.cfg.net_gbps, multi_node)
                    .into_iter()
                    .enumerate()
            {
                self.say(t + 1_000 + j as i64, tid_init, l);
            }
        }
        // What connection lines print in brackets after a rank: its busId up to 2.18
        // (`1[81000]`, issue350), its device from 2.19 (`8[0]`, the grpo notes; `1[1]`, issue6201)
        // — 0 for every rank when each process sees only its own GPU.
        let isolated = pl.cfg.realism.isolated_devices;
        let rb: Vec<(u32, u64)> = c
            .global_ranks
            .iter()
            .map(|&g| {
                let dev = g % gpn;
                let label = if v.at_least(19) {
                    if isolated {
                        0
                    } else {
                        u64::from(dev)
                    }
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
        let order = ring_order(pl.cfg.ring_lines, c);
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
            self.say(t + 50_000, tid_init, l);
        }
        // Channel and connection lines, then (proxy chatter in between) "Connected all rings"
        // and what follows it, as real logs order them.
        let mut chan = logfmt::channels(v, &rb, &order, me, nch, next_remote, prev_remote);
        if pl.cfg.ring_lines == RingLines::Omitted {
            chan.retain(|l| !logfmt::is_route_line(l));
        }
        let split = chan
            .iter()
            .position(|l| l.starts_with("Connected all rings"))
            .unwrap_or(chan.len());
        for (j, l) in chan.into_iter().enumerate() {
            let at = if j < split { 100_000 } else { 3_000_000 };
            self.say(t + at + j as i64, tid_init, l);
        }
        let tid_proxy = p.pid + 200 + 3 * k as u32;
        let progress = chatter::proxy_progress(p.local, crng.range(0, 128) as u32);
        self.say(t + 150_000, tid_proxy + 1, progress);
        if n > 1 {
            self.proxy_lines(
                t,
                k,
                crng,
                proxy_conns,
                [(next_g, next_remote), (prev_g, prev_remote)],
                nch,
            );
        }
        for (j, l) in chatter::after_connect(v, crng, k == 0)
            .into_iter()
            .enumerate()
        {
            self.say(t + 4_000_000 + j as i64, tid_init, l);
        }
        if pl.cfg.emits_nccl_nvtx() {
            self.nccl_range(
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
        let done = logfmt::init_complete_dev(
            v,
            c.pointers[me],
            me as u32,
            c.size(),
            p.cuda_dev,
            p.local,
            bus,
            c.comm_id,
        );
        self.say(t + 150_000_000, p.pid, done);
        if let Some(l) = chatter::init_timings(v, crng, me as u32, c.size(), 0.15) {
            self.say(t + 150_000_001, p.pid, l);
        }
    }

    /// The proxy threads' lines of the connections to the ring neighbours (`[next, prev]`,
    /// each with whether it is on another node) of the rank's `k`-th communicator, set up at
    /// `t`.
    fn proxy_lines(
        &mut self,
        t: i64,
        k: usize,
        crng: &mut Rng,
        proxy_conns: &mut u32,
        [(next_g, next_remote), (prev_g, prev_remote)]: [(u32, bool); 2],
        nch: u32,
    ) {
        let (pl, p) = (self.pl, self.p);
        let tid_proxy = p.pid + 200 + 3 * k as u32;
        let mut at = t + 200_000;
        for _ in 0..nch.min(2) {
            for (send, peer, remote) in [(true, next_g, next_remote), (false, prev_g, prev_remote)]
            {
                let transport = if remote { 2 } else { 0 };
                for (dt, th, body) in chatter::proxy_connection(
                    pl.v,
                    crng,
                    *proxy_conns,
                    send,
                    // A network connection is served by the rank's own proxy; a P2P one by the
                    // peer's (the 2.27.5 log: "from local rank 3" on rank 7's proxy).
                    if remote { p.local } else { peer % pl.gpn },
                    transport,
                ) {
                    let tid = match th {
                        chatter::Thread::Main => self.tid_init,
                        chatter::Thread::Proxy => tid_proxy,
                    };
                    self.say(at + dt, tid, body);
                }
                *proxy_conns += 1;
                at += 300_000;
            }
        }
    }

    /// Every call of the rank: the lines it prints and the kernels it runs.
    fn operations(&mut self) {
        let (pl, p) = (self.pl, self.p);
        let r = p.rank as usize;
        let imp = &pl.cfg.imperfections;
        // The contract's keys are always present, with 0 where nothing was logged.
        for op in OpType::CONTRACT {
            self.printed.ops_by_type.insert(op.name().into(), 0);
            self.printed.bytes_by_type.insert(op.name().into(), 0);
        }
        self.corr = 100 + self.rng.range(0, 50) as u32;
        let calls = &pl.calls[r];
        let orphan_kernel_at: Vec<usize> = (0..imp.orphan_sendrecv_kernels)
            .map(|_| self.rng.range(0, calls.len().max(1) as u64) as usize)
            .collect();
        let unlogged_at = realism_unlogged_positions(pl, r);
        let mut op_counts: HashMap<usize, u64> = HashMap::new();
        for (i, call) in calls.iter().enumerate() {
            let oc = *op_counts
                .entry(call.comm())
                .and_modify(|x| *x += 1)
                .or_insert(0);
            let strays = orphan_kernel_at.iter().filter(|&&x| x == i).count();
            let unlogged = unlogged_at.iter().filter(|&&x| x == i).count();
            self.call(i, call, oc, strays, unlogged);
        }
    }

    /// One call: compute kernels in the gap before it, stray kernels, its log lines, NCCL's NVTX
    /// ranges, its tuning line and its kernels.
    fn call(&mut self, i: usize, call: &schedule::Call, oc: u64, strays: usize, unlogged: usize) {
        let (pl, p) = (self.pl, self.p);
        let r = p.rank as usize;
        let tm = pl.timed[r][i];
        let c = &pl.comms.list[call.comm()];
        let me = c.member(p.rank);
        // Compute kernels in the gap before the call (none before the capture).
        if call.compute_ns > 0 && !call.warmup {
            self.compute_kernels(call, tm);
        }
        if strays > 0 && !call.orphan {
            self.stray_sendrecv(tm.gap_start_ns + 2_000, c.stream_ids[me], strays, true);
        }
        if unlogged > 0 && !call.warmup {
            self.stray_sendrecv(tm.gap_start_ns + 2_500, c.stream_ids[me], unlogged, false);
        }
        let total_bytes = self.log_lines(call, oc, tm);
        if pl.cfg.emits_nccl_nvtx() && !call.warmup {
            self.call_ranges(call, tm.arrive_ns);
        }
        let intra = c.global_ranks.iter().all(|g| g / pl.gpn == p.node);
        // The symmetric kernel this call runs, if any (single-node collectives with symmetric
        // buffers, 2.27+).
        let sym: Option<&'static str> =
            if pl.cfg.symmetric && pl.v.at_least(27) && intra && !call.is_p2p() {
                let o = &call.ops[0];
                nsysdb::sym_kernel_id(o.op, o.dtype, o.redop, total_bytes)
            } else {
                None
            };
        if !call.is_p2p() {
            self.tuning(call, tm, total_bytes, intra, sym, me);
        }
        if call.orphan {
            return;
        }
        self.call_kernels(call, oc, tm, total_bytes, intra, sym);
    }

    fn compute_kernels(&mut self, call: &schedule::Call, tm: crate::timing::Timed) {
        let (pl, p) = (self.pl, self.p);
        let gap_end = tm.arrive_ns - 1_000;
        let nk = 1 + (call.compute_ns / 400_000).min(2) as i64;
        let span = (gap_end - tm.gap_start_ns).max(nk);
        for k in 0..nk {
            let s = tm.gap_start_ns + span * k / nk + 500;
            let e = tm.gap_start_ns + span * (k + 1) / nk;
            let (short, dem) = nsysdb::COMPUTE_KERNELS[self.rng.range(0, 4) as usize];
            self.corr += 1;
            let grid_x = 108 + self.rng.range(0, 400) as u32;
            if s < pl.capture_start_ns() {
                continue;
            }
            self.krows.push(KernelRow {
                pid: p.export_pid,
                tid: p.export_pid,
                device: p.local,
                stream_id: COMPUTE_STREAM,
                correlation_id: self.corr,
                start_ns: pl.gpu(p.node, s),
                end_ns: pl.gpu(p.node, e.max(s + 1_000)),
                launch_ns: pl.gpu(p.node, s - 8_000),
                short: short.into(),
                demangled: dem.into(),
                mangled: short.into(),
                grid_x,
                block_x: 256,
                registers: 128,
                static_shared: 0,
                dynamic_shared: 49152,
            });
        }
    }

    /// `n` SendRecv kernels at run time `s` on `stream` with no log line: the thesis' orphans
    /// (`orphan`, one correlation id taken first), or an unlogged second NCCL's.
    fn stray_sendrecv(&mut self, s: i64, stream: u32, n: usize, orphan: bool) {
        let (pl, p) = (self.pl, self.p);
        let names = nsysdb::nccl_kernel(pl.v, OpType::SendRecv, DataType::Int8, false);
        if orphan {
            self.corr += 1;
        }
        for j in 0..n {
            let s = s + if orphan { 0 } else { 12_000 * j as i64 };
            if !orphan {
                self.corr += 1;
            }
            self.krows.push(KernelRow {
                pid: p.export_pid,
                tid: p.export_pid,
                device: p.local,
                stream_id: stream,
                correlation_id: self.corr,
                start_ns: pl.gpu(p.node, s),
                end_ns: pl.gpu(p.node, s + 9_000),
                launch_ns: pl.gpu(p.node, s - 6_000),
                short: names.short.clone(),
                demangled: names.demangled.clone(),
                mangled: names.mangled.clone(),
                grid_x: 2,
                block_x: 640,
                registers: 96,
                static_shared: 0,
                dynamic_shared: 0,
            });
            self.kernel_refs
                .push((self.corr, None, names.short.clone()));
            if orphan {
                self.corr += 1;
            }
        }
    }

    /// The call's per-collective lines (twice on a duplicating rank, some dropped), counted
    /// for the truth; returns the call's bytes.
    fn log_lines(&mut self, call: &schedule::Call, oc: u64, tm: crate::timing::Timed) -> u64 {
        let (pl, p) = (self.pl, self.p);
        let imp = &pl.cfg.imperfections;
        let c = &pl.comms.list[call.comm()];
        let me = c.member(p.rank);
        let dup = imp.duplicate_logging_rank_per_tp_group
            && pl.cfg.layout.coord(p.rank, crate::Dim::TP) == 0;
        let mut total_bytes = 0;
        for o in &call.ops {
            let bytes = o.count * o.dtype.size_bytes();
            total_bytes += bytes;
            let buf = 0x7f00_0000_0000 + (self.rng.range(0x100, 0xff_ffff) << 12);
            let line = logfmt::op_line(
                pl.v,
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
                if imp.drop_log_pct > 0.0 && self.rng.chance(imp.drop_log_pct / 100.0) {
                    continue;
                }
                self.say(tm.arrive_ns + k, p.pid, line.clone());
                let pr = &mut self.printed;
                *pr.ops_by_type.entry(o.op.name().into()).or_default() += 1;
                *pr.bytes_by_type.entry(o.op.name().into()).or_default() += bytes;
                // A duplicated line is one operation: its traffic counts once.
                if !volume_counted {
                    *pr.log_volume.entry(c.parallelism.to_string()).or_default() +=
                        truth::link_traffic(o.op, bytes, c.size());
                    volume_counted = true;
                }
                *pr.per_call.entry((call.comm(), oc)).or_default() += 1;
                if k == 1 {
                    pr.duplicated += 1;
                }
            }
        }
        total_bytes
    }

    /// NCCL's NVTX ranges of one call. The API calls happen on the CPU just before the line's
    /// time; grouped calls are bracketed by ncclGroupStart/ncclGroupEnd, as in the real capture.
    /// The call (or ncclGroupEnd) launches the kernel, so its range ends after the launch
    /// (a + 1 µs).
    fn call_ranges(&mut self, call: &schedule::Call, a: i64) {
        let comms = &self.pl.comms;
        let n = call.ops.len() as i64;
        let grouped = n > 1 || call.is_p2p();
        if grouped {
            self.nccl_range(
                a - 2_400 - 400 * n,
                a - 2_100 - 400 * n,
                "ncclGroupStart",
                None,
            );
        }
        for (j, o) in call.ops.iter().enumerate() {
            let oc_ = &comms.list[o.comm];
            let int_a = match o.op {
                OpType::Send | OpType::Recv => o.peer.map(|q| oc_.member(q) as i32).unwrap_or(-1),
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
            self.nccl_range(s, e, ncclnvtx::function_of(o.op), Some(f));
        }
        if grouped {
            self.nccl_range(a - 2_000, a + 1_500, "ncclGroupEnd", None);
        }
    }

    /// The tuning line of a collective call.
    fn tuning(
        &mut self,
        call: &schedule::Call,
        tm: crate::timing::Timed,
        total_bytes: u64,
        intra: bool,
        sym: Option<&'static str>,
        me: usize,
    ) {
        let (pl, p) = (self.pl, self.p);
        let c = &pl.comms.list[call.comm()];
        let o = &call.ops[0];
        let nbytes = match o.op {
            OpType::AllGather | OpType::ReduceScatter => total_bytes * c.size() as u64,
            _ => total_bytes,
        };
        // The variation knob (issue 35) may force an algorithm; else the size decides.
        let algo = pl
            .cfg
            .variation
            .knobs()
            .algorithm(o.op)
            .unwrap_or(variation::default_algorithm(o.op, intra, nbytes));
        let nch = channels_for(nbytes, intra);
        let time = (tm.end_ns - tm.start_ns) as f64 / 1000.0;
        let tl = match sym {
            Some(id) => logfmt::sym_tuning_line(pl.v, o.op, total_bytes, id, nch, me as u32),
            None => logfmt::tuning_line(pl.v, o.op, nbytes, algo, proto_for(nbytes), nch, time),
        };
        if let Some(tl) = tl {
            self.say(tm.arrive_ns + 2, p.pid, tl);
        }
    }

    /// The kernels of a call that launches some: one per collective, one or several SendRecv
    /// per group of Send/Recv (or one per operation without fusion), some dropped.
    fn call_kernels(
        &mut self,
        call: &schedule::Call,
        oc: u64,
        tm: crate::timing::Timed,
        total_bytes: u64,
        intra: bool,
        sym: Option<&'static str>,
    ) {
        let (pl, p) = (self.pl, self.p);
        let imp = &pl.cfg.imperfections;
        let c = &pl.comms.list[call.comm()];
        let me = c.member(p.rank);
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
            self.corr += 1;
            if imp.drop_kernel_pct > 0.0 && self.rng.chance(imp.drop_kernel_pct / 100.0) {
                continue;
            }
            let s = tm.start_ns + dur * k / nu;
            let e = tm.start_ns + dur * (k + 1) / nu - if k + 1 < nu { 500 } else { 0 };
            let nbytes = total_bytes * if call.is_p2p() { 1 } else { c.size() as u64 };
            let tree = pl
                .cfg
                .variation
                .knobs()
                .algorithm(op)
                .unwrap_or(variation::default_algorithm(op, intra, nbytes))
                == Algo::Tree;
            let v = pl.v;
            // A handful of distinct names per run: format them once.
            let names = self
                .names
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
            self.krows.push(KernelRow {
                pid: p.export_pid,
                tid: p.export_pid,
                device: p.local,
                stream_id: c.stream_ids[me],
                correlation_id: self.corr,
                start_ns: pl.gpu(p.node, s),
                end_ns: pl.gpu(p.node, e),
                launch_ns: pl.gpu(p.node, tm.arrive_ns + 1_000),
                short: names.short.clone(),
                demangled: names.demangled,
                mangled: names.mangled,
                grid_x,
                block_x: if call.is_p2p() { 640 } else { 512 },
                registers: 96,
                static_shared: 0,
                dynamic_shared: 0,
            });
            self.kernel_refs
                .push((self.corr, Some((call.comm(), oc)), names.short));
        }
    }

    /// Kernels whose timer did not advance: drawn from a stream of their own, so every other
    /// draw (and the truth) stays what it was without them.
    fn zero_durations(&mut self) {
        let pl = self.pl;
        let n = pl.cfg.imperfections.zero_duration_kernels;
        if n == 0 {
            return;
        }
        let nccl: Vec<usize> = (0..self.krows.len())
            .filter(|&i| self.krows[i].stream_id != COMPUTE_STREAM)
            .collect();
        let mut zrng = Rng::derive(pl.cfg.seed, 0x2E80_0000 + u64::from(self.p.rank));
        for _ in 0..n.min(nccl.len() as u32) {
            let i = nccl[zrng.range(0, nccl.len() as u64) as usize];
            self.krows[i].end_ns = self.krows[i].start_ns;
        }
    }

    /// NVTX: contiguous phase runs, then one range per iteration (and, with foreign lines,
    /// Megatron's iteration line on the last rank).
    fn phase_ranges(&mut self) {
        let (pl, p) = (self.pl, self.p);
        let r = p.rank as usize;
        let calls = &pl.calls[r];
        let timed = &pl.timed[r];
        let mut run_start: Option<(usize, schedule::Phase, Option<u32>)> = None;
        let n_calls = calls.len();
        let range = |from: usize, to: usize, text: String| {
            let s = timed[from].gap_start_ns;
            let e = timed[to].end_ns.max(s + 1);
            NvtxRow {
                pid: p.export_pid,
                tid: p.export_pid,
                start_ns: pl.gpu(p.node, s),
                end_ns: pl.gpu(p.node, e),
                text,
            }
        };
        for i in 0..=n_calls {
            let key = calls.get(i).map(|c| (c.phase, c.iteration));
            if let Some((s, ph, it)) = run_start {
                if key != Some((ph, it)) {
                    if ph != schedule::Phase::Startup {
                        self.nvtx.push(range(s, i - 1, ph.name().to_string()));
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
        let iterations = pl.cfg.model.iterations;
        let megatron = pl.cfg.realism.foreign_lines && p.rank + 1 == pl.procs.len() as u32;
        for it in 0..iterations {
            let idx: Vec<usize> = (0..n_calls)
                .filter(|&i| calls[i].iteration == Some(it))
                .collect();
            if let (Some(&a), Some(&b)) = (idx.first(), idx.last()) {
                self.nvtx.push(range(a, b, format!("iteration {it}")));
                if megatron {
                    let at = timed[b].end_ns + 100_000;
                    let ms = (timed[b].end_ns - timed[a].gap_start_ns) as f64 / 1e6;
                    let l = realism::megatron_iteration(it, iterations, EPOCH_NS + at, ms);
                    self.say_foreign(at, &l);
                }
            }
        }
        // Slow stages (issue 32): the `data` ranges the stage knob asks for.
        let stages = &pl.cfg.stages;
        step_stages::split_data_ranges(&mut self.nvtx, calls, timed, stages, |t| pl.gpu(p.node, t));
    }

    /// The truth of the rank's kernels: (truth kernels, matched, unmatched kernels, unmatched
    /// log lines).
    fn kernel_truth(&mut self) -> (Vec<TruthKernel>, u64, u64, u64) {
        let (pl, p) = (self.pl, self.p);
        let comms = &pl.comms;
        let r = p.rank as usize;
        let mut truth_kernels = Vec::with_capacity(self.kernel_refs.len());
        let (mut matched, mut unmatched_kernels) = (0, 0);
        for (corr, lo, name) in std::mem::take(&mut self.kernel_refs) {
            let log_op = lo.and_then(|(ci, oc)| {
                self.printed.per_call.get(&(ci, oc)).map(|_| LogOpRef {
                    comm: logfmt::ptr(comms.list[ci].pointers[comms.list[ci].member(p.rank)]),
                    op_count: oc,
                })
            });
            if log_op.is_some() {
                matched += 1;
            } else {
                unmatched_kernels += 1;
            }
            truth_kernels.push(TruthKernel {
                pid: p.export_pid,
                host: p.host.clone(),
                global_rank: p.rank,
                correlation_id: corr,
                name,
                log_op,
            });
        }
        let with_kernel: HashSet<(usize, u64)> = truth_kernels
            .iter()
            .filter(|k| k.global_rank == p.rank)
            .filter_map(|k| k.log_op.as_ref())
            .filter_map(|lo| {
                comms.of_rank[r]
                    .iter()
                    .find(|&&ci| {
                        logfmt::ptr(comms.list[ci].pointers[comms.list[ci].member(p.rank)])
                            == lo.comm
                    })
                    .map(|&ci| (ci, lo.op_count))
            })
            .collect();
        let unmatched_log_ops: u64 = self
            .printed
            .per_call
            .iter()
            .filter(|(k, _)| !with_kernel.contains(k))
            .map(|(_, n)| *n as u64)
            .sum::<u64>();
        (truth_kernels, matched, unmatched_kernels, unmatched_log_ops)
    }

    /// Imperfect text: garbled and truncated non-operation lines. Returns (times, texts, the
    /// cut last line).
    fn imperfect_text(&mut self) -> (Vec<i64>, Vec<String>, Option<String>) {
        let (pl, p) = (self.pl, self.p);
        let imp = &pl.cfg.imperfections;
        let mut lines = std::mem::take(&mut self.lines);
        lines.extend(hang::watchdog_lines(pl, p));
        lines.extend(hang::error_lines(pl, p));
        lines.sort_by_key(|(t, _)| *t);
        let (stamps, mut texts): (Vec<i64>, Vec<String>) = lines.into_iter().unzip();
        let candidates: Vec<usize> = (0..texts.len())
            .filter(|&i| !texts[i].contains(": opCount "))
            .collect();
        for _ in 0..imp.garbled_lines {
            if candidates.is_empty() {
                break;
            }
            let i = candidates[self.rng.range(0, candidates.len() as u64) as usize];
            let other = p.printer.prefix(p.pid + 7, None);
            texts[i] = format!("{}{}", &other[..other.len() / 2], texts[i]);
        }
        let mut tail: Option<String> = None;
        if imp.truncated_last_line {
            let c = &pl.comms.list[pl.comms.world];
            let me = c.member(p.rank);
            let l = format!(
                "{}comm {} rank {} nranks {} cudaDev {} busId {:x} - Destroy COMPLETE",
                p.printer
                    .prefix(p.pid, self.ts(pl.end_prefix[p.rank as usize] + 1_000_000)),
                logfmt::ptr(c.pointers[me]),
                me,
                c.size(),
                p.cuda_dev,
                BUS_IDS[p.local as usize % 8]
            );
            tail = Some(l[..l.len() * 2 / 3].to_string());
        }
        (stamps, texts, tail)
    }

    /// The rank's output.
    fn finish(mut self) -> RankOut {
        let p = self.p;
        let (kernels, matched, unmatched_kernels, unmatched_log_ops) = self.kernel_truth();
        let printed = std::mem::take(&mut self.printed);
        let truth_rank = TruthRank {
            global_rank: p.rank,
            host: p.host.clone(),
            pid: p.pid,
            local_rank: p.local,
            ops_by_type: printed.ops_by_type,
            bytes_by_type: printed.bytes_by_type,
            kernels: kernels.len() as u64,
            matched_ops: matched,
            duplicated_lines: printed.duplicated,
            log_volume_by_parallelism: printed.log_volume,
            // In a system clock the capture's start moves the origin, not the times.
            report_shift_ns: match self.pl.system_clocks[p.node as usize] {
                Some(_) => 0,
                None => p.capture_delay_ns,
            },
        };
        let (stamps, texts, tail) = self.imperfect_text();
        RankOut {
            stamps,
            texts,
            tail,
            krows: self.krows,
            nvtx: self.nvtx,
            nccl_nvtx: self.nccl_nvtx,
            truth_rank,
            kernels,
            unmatched_log_ops,
            unmatched_kernels,
        }
    }
}

/// Calls before which an unlogged second NCCL launches its SendRecv kernels (drawn from a
/// stream of their own: a run without them keeps its bytes).
fn realism_unlogged_positions(pl: &Plan, r: usize) -> Vec<usize> {
    let n = pl.cfg.realism.unlogged_kernels;
    if n == 0 {
        return Vec::new();
    }
    let calls = &pl.calls[r];
    let mut rng = Rng::derive(pl.cfg.seed, 0x0A11_0000 + r as u64);
    let mut at = Vec::new();
    for it in 0..pl.cfg.model.iterations {
        let idx: Vec<usize> = (0..calls.len())
            .filter(|&i| calls[i].iteration == Some(it) && !calls[i].orphan)
            .collect();
        if idx.is_empty() {
            continue;
        }
        for _ in 0..n {
            at.push(idx[rng.range(0, idx.len() as u64) as usize]);
        }
    }
    at
}
