//! A run written as PyTorch profiler (Kineto) traces, one file per rank, with ground truth.
//!
//! Why: the real traces at hand are small (a few MB inflated) and of two PyTorch eras; the
//! reader's speed, memory and every variation it handles need traces of any size and shape. The
//! run is the generator's own (schedule, communicators, simulated times: [`crate::plan`]), so a
//! run's logs, exports and traces describe the same training. Each rank's trace holds what
//! Kineto writes around an NCCL collective — the `c10d::` operator, `record_param_comms`, the
//! `nccl:*` range, the launch call, the kernel — `ProfilerStep#N` ranges per iteration, and
//! `filler` unrelated events per collective (Python functions, ATen operators, compute kernels
//! with their launches, flows), as real traces hold tens to hundreds per collective.
//!
//! The variations real traces show are knobs of [`KinetoStyle`] (each tested in every
//! combination by `tests/kineto_truth.rs`): the collective's fields on the kernel (PyTorch 2.4+)
//! or only on the CPU side, or (older) only the first tensor's shape there; `Seq`; a kernel's
//! `External id` being its correlation id (older Kineto); process groups named and described
//! (Megatron's descriptions, DeviceMesh's `mesh_*`, or `undefined`) or not at all; times from
//! `baseTimeNanoseconds` or absolute; Kineto's multi-line layout or one event per line;
//! `distributedInfo` before or after the events. Batched point-to-point calls
//! (`batch_isend_irecv`) are written as PyTorch writes them: their `record_param_comms` do not
//! enclose the launch, so the kernel has nothing but its name.

use crate::comms::Communicator;
use crate::kineto_json::{quote, Ev, EventWriter};
use crate::layout::Dim;
use crate::schedule::{Call, OpSpec};
use crate::{plan, Plan, Proc, RunConfig, EPOCH_NS, SESSION_LEAD_NS};
use ::model::{DataType, OpType};
use serde::{Deserialize, Serialize};
use std::io::{self, Write};
use std::path::Path;

/// How process groups are described (`pg_desc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GroupNaming {
    /// Megatron-LM's `group_desc`s: `TENSOR_MODEL_PARALLEL_GROUP`, `DATA_PARALLEL_GROUP`, ...
    Megatron,
    /// A DeviceMesh's: `mesh_tp`, `mesh_dp`, ...
    DeviceMesh,
    /// `undefined` (groups made with `new_group` and no description).
    Undefined,
}

/// How the traces are written: one knob per variation real traces show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KinetoStyle {
    /// The collective's fields copied onto its kernel (PyTorch 2.4+); off: CUPTI fields only.
    pub kernel_args: bool,
    /// `record_param_comms` names the collective, its counts and datatype (PyTorch 2.1+); off:
    /// only its first tensor's `Input Dims` and `Input type` (older, as the DLRM traces).
    pub record_args: bool,
    /// `Seq` beside the collective's fields (newest PyTorch).
    pub seq: bool,
    /// A kernel's `External id` is its correlation id (older Kineto), not its operator's.
    pub external_is_correlation: bool,
    /// Process groups: `distributedInfo.pg_config` and the group's name, description and ranks
    /// beside the collective's fields (PyTorch 2.3+).
    pub process_groups: bool,
    pub naming: GroupNaming,
    /// Unrelated events per collective.
    pub filler: u32,
    /// Kineto's own multi-line layout; off: one event per line.
    pub pretty: bool,
    /// Times relative to `baseTimeNanoseconds` (newer Kineto); off: absolute microseconds.
    pub base_time: bool,
    /// `distributedInfo` after `traceEvents` instead of before.
    pub info_after_events: bool,
    /// `record_function` stage ranges inside each `ProfilerStep#N`, TorchRec's names
    /// (`## forward ##`, `## backward ##`, `## optimizer ##`); off: the profiler's steps alone.
    #[serde(default)]
    pub stage_ranges: bool,
}

impl KinetoStyle {
    /// PyTorch 2.4+: every field on the kernel, process groups described as Megatron does.
    pub fn modern() -> KinetoStyle {
        KinetoStyle {
            kernel_args: true,
            record_args: true,
            seq: false,
            external_is_correlation: false,
            process_groups: true,
            naming: GroupNaming::Megatron,
            filler: 40,
            pretty: true,
            base_time: true,
            info_after_events: false,
            stage_ranges: true,
        }
    }

    /// PyTorch 2.0's (the DLRM traces'): CUPTI fields on kernels, first tensors on the CPU side.
    pub fn legacy() -> KinetoStyle {
        KinetoStyle {
            kernel_args: false,
            record_args: false,
            seq: false,
            external_is_correlation: true,
            process_groups: false,
            naming: GroupNaming::Undefined,
            filler: 40,
            pretty: true,
            base_time: false,
            info_after_events: false,
            stage_ranges: false,
        }
    }

    /// Every combination of the knobs that change what a reader must do, the others varied
    /// along (for tests): 32 styles.
    pub fn variations() -> Vec<KinetoStyle> {
        let namings = [
            GroupNaming::Megatron,
            GroupNaming::DeviceMesh,
            GroupNaming::Undefined,
        ];
        (0..32u32)
            .map(|i| KinetoStyle {
                kernel_args: i & 1 != 0,
                record_args: i & 2 != 0,
                seq: i & 4 != 0,
                external_is_correlation: i & 8 != 0,
                process_groups: i & 16 != 0,
                naming: namings[(i % 3) as usize],
                filler: 3 + i % 5,
                pretty: i % 3 != 1,
                base_time: i % 4 < 2,
                info_after_events: i % 5 == 4,
                stage_ranges: i % 7 < 4,
            })
            .collect()
    }

    /// Whether the collective's fields are anywhere (kernel or CPU side).
    fn fields(&self) -> bool {
        self.kernel_args || self.record_args
    }
}

/// What a kernel's trace says, as a reader must find it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelTruth {
    pub correlation: u64,
    pub name: String,
    /// The operation its name says (`AllReduce`, `SendRecv`).
    pub kernel_op: String,
    pub start_ns: i64,
    pub end_ns: i64,
    pub stream: u32,
    /// The collective as the trace lets a reader know it (NCCL's operation names).
    pub op: String,
    pub in_nelems: Option<u64>,
    pub out_nelems: Option<u64>,
    /// NCCL's datatype name (`bfloat16`), where the trace says it.
    pub datatype: Option<String>,
    pub pg_name: Option<String>,
    pub group_size: Option<u32>,
    pub seq: Option<u64>,
    /// Where its meaning is: `kernel arguments`, `CPU operator` or `kernel name`.
    pub source: String,
    /// The process group it ran on (index into [`KinetoTruth::groups`]).
    pub group: usize,
    /// Its operation as NCCL counts it (`count` of its log line), when the run knows it.
    pub nccl_count: Option<u64>,
}

/// One rank's trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceTruth {
    pub global_rank: u32,
    pub host: String,
    pub pid: u32,
    pub device: u32,
    pub file: String,
    pub events: u64,
    pub kernels: Vec<KernelTruth>,
    /// `ProfilerStep#N`: (N, start, end), epoch nanoseconds.
    pub steps: Vec<(u64, i64, i64)>,
    /// The stage ranges inside them ([`KinetoStyle::stage_ranges`]): (N, stage as the default
    /// mapping names it, start, end), epoch nanoseconds.
    #[serde(default)]
    pub stages: Vec<(u64, String, i64, i64)>,
}

/// One process group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupTruth {
    pub pg_name: String,
    pub pg_desc: String,
    pub global_ranks: Vec<u32>,
    /// The generator's label (`TP`, ..., `unknown` for groups spanning several dimensions).
    pub parallelism: String,
}

/// What [`write_kineto`] wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KinetoTruth {
    pub style: KinetoStyle,
    pub world: u32,
    pub nccl_version: String,
    pub groups: Vec<GroupTruth>,
    pub ranks: Vec<TraceTruth>,
}

/// A run planned once, written rank by rank.
pub struct KinetoRun<'a> {
    plan: Plan<'a>,
}

/// The file name of rank `r`'s trace.
pub fn trace_name(r: u32, gzip: bool) -> String {
    format!("rank{r}.pt.trace.json{}", if gzip { ".gz" } else { "" })
}

/// Writes every rank's trace into `dir` (gzip-compressed if asked) and `kineto_truth.json`.
pub fn write_kineto(
    cfg: &RunConfig,
    style: &KinetoStyle,
    dir: &Path,
    gzip: bool,
) -> io::Result<KinetoTruth> {
    std::fs::create_dir_all(dir)?;
    let run = KinetoRun::new(cfg);
    let mut ranks = Vec::new();
    for r in 0..run.world() {
        let name = trace_name(r, gzip);
        let file = io::BufWriter::new(std::fs::File::create(dir.join(&name))?);
        let mut t = if gzip {
            let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
            let t = run.write_rank(r, style, &mut gz)?;
            gz.finish()?.flush()?;
            t
        } else {
            let mut file = file;
            let t = run.write_rank(r, style, &mut file)?;
            file.flush()?;
            t
        };
        t.file = name;
        ranks.push(t);
    }
    let truth = KinetoTruth {
        style: *style,
        world: run.world(),
        nccl_version: cfg.nccl_version.clone(),
        groups: run.groups(style),
        ranks,
    };
    let json = serde_json::to_vec_pretty(&truth).map_err(io::Error::other)?;
    std::fs::write(dir.join("kineto_truth.json"), json)?;
    Ok(truth)
}

/// What kind of call a schedule entry is, as PyTorch records it.
enum Kind<'c> {
    /// One collective (or one send or receive).
    One(&'c OpSpec),
    /// An all-to-all: sends to and receives from several peers in one group.
    AllToAll(u64, u64),
    /// `batch_isend_irecv` of a few sends and receives (pipeline stages).
    Batched,
}

fn kind(call: &Call) -> Kind<'_> {
    if call.ops.len() == 1 {
        return Kind::One(&call.ops[0]);
    }
    if !call.is_p2p() {
        return Kind::One(&call.ops[0]);
    }
    let peers: std::collections::BTreeSet<Option<u32>> = call
        .ops
        .iter()
        .filter(|o| o.op == OpType::Send)
        .map(|o| o.peer)
        .collect();
    if peers.len() >= 2 {
        let sum = |op: OpType| {
            call.ops
                .iter()
                .filter(|o| o.op == op)
                .map(|o| o.count)
                .sum()
        };
        Kind::AllToAll(sum(OpType::Send), sum(OpType::Recv))
    } else {
        Kind::Batched
    }
}

/// PyTorch's names of a collective: (`Collective name`, `nccl:*` range, `c10d::` operator).
fn torch_names(op: OpType) -> (&'static str, &'static str, &'static str) {
    match op {
        OpType::AllReduce => ("allreduce", "nccl:all_reduce", "c10d::allreduce_"),
        OpType::AllGather => (
            "_allgather_base",
            "nccl:_all_gather_base",
            "c10d::_allgather_base_",
        ),
        OpType::ReduceScatter => (
            "_reduce_scatter_base",
            "nccl:_reduce_scatter_base",
            "c10d::_reduce_scatter_base_",
        ),
        OpType::Broadcast => ("broadcast", "nccl:broadcast", "c10d::broadcast_"),
        OpType::Reduce => ("reduce", "nccl:reduce", "c10d::reduce_"),
        OpType::Send => ("send", "nccl:send", "c10d::send"),
        OpType::Recv => ("recv", "nccl:recv", "c10d::recv_"),
        _ => ("all_to_all", "nccl:all_to_all", "c10d::alltoall_base_"),
    }
}

/// PyTorch's `dtype` name, and the older `Input type` spelling.
fn torch_dtype(d: DataType) -> (&'static str, &'static str) {
    match d {
        DataType::Float32 => ("Float", "float"),
        DataType::Float64 => ("Double", "double"),
        DataType::Float16 => ("Half", "c10::Half"),
        DataType::Bfloat16 => ("BFloat16", "c10::BFloat16"),
        DataType::Int32 | DataType::Uint32 => ("Int", "int"),
        DataType::Int64 | DataType::Uint64 => ("Long", "long int"),
        DataType::Uint8 => ("Byte", "unsigned char"),
        DataType::Int8 => ("Char", "signed char"),
        DataType::Float8e4m3 => ("Float8_e4m3fn", "c10::Float8_e4m3fn"),
        DataType::Float8e5m2 => ("Float8_e5m2", "c10::Float8_e5m2"),
    }
}

/// What a group is for, by how the generator made it.
fn group_desc(comms: &crate::comms::Comms, c: &Communicator, naming: GroupNaming) -> String {
    if c.index == 0 {
        return "default_pg".into();
    }
    let first = c.global_ranks[0];
    let dim = Dim::ORDER
        .into_iter()
        .find(|&d| comms.of(first, d) == Some(c.index));
    let model_parallel = comms.model_parallel(first) == Some(c.index);
    let desc = match (naming, dim) {
        (GroupNaming::Undefined, _) => "undefined",
        (GroupNaming::Megatron, Some(Dim::TP)) => "TENSOR_MODEL_PARALLEL_GROUP",
        (GroupNaming::Megatron, Some(Dim::CP)) => "CONTEXT_PARALLEL_GROUP",
        (GroupNaming::Megatron, Some(Dim::EP)) => "EXPERT_MODEL_PARALLEL_GROUP",
        (GroupNaming::Megatron, Some(Dim::DP)) => "DATA_PARALLEL_GROUP",
        (GroupNaming::Megatron, Some(Dim::PP)) => "PIPELINE_MODEL_PARALLEL_GROUP",
        (GroupNaming::Megatron, None) if model_parallel => "MODEL_PARALLEL_GROUP",
        (GroupNaming::Megatron, None) => "EMBEDDING_GROUP",
        (GroupNaming::DeviceMesh, Some(Dim::TP)) => "mesh_tp",
        (GroupNaming::DeviceMesh, Some(Dim::CP)) => "mesh_cp",
        (GroupNaming::DeviceMesh, Some(Dim::EP)) => "mesh_ep",
        (GroupNaming::DeviceMesh, Some(Dim::DP)) => "mesh_dp",
        (GroupNaming::DeviceMesh, Some(Dim::PP)) => "mesh_pp",
        (GroupNaming::DeviceMesh, None) if model_parallel => "mesh_tp_cp_pp",
        (GroupNaming::DeviceMesh, None) => "undefined",
    };
    desc.into()
}

/// Where the events of one rank's trace go, and what the truth collects.
struct RankWriter<'p, W: Write> {
    w: EventWriter<W>,
    pl: &'p Plan<'p>,
    p: &'p Proc,
    style: KinetoStyle,
    /// Added to node-clock nanoseconds to get epoch nanoseconds (the truth's times).
    shift: i64,
    next_external: u64,
    next_correlation: u64,
    rng: crate::rng::Rng,
}

impl<'a> KinetoRun<'a> {
    pub fn new(cfg: &'a RunConfig) -> KinetoRun<'a> {
        KinetoRun { plan: plan(cfg) }
    }

    pub fn world(&self) -> u32 {
        self.plan.procs.len() as u32
    }

    /// Every process group of the run (pg_name is the communicator's index, as PyTorch names
    /// groups by creation order).
    pub fn groups(&self, style: &KinetoStyle) -> Vec<GroupTruth> {
        let comms = &self.plan.comms;
        comms
            .list
            .iter()
            .map(|c| GroupTruth {
                pg_name: c.index.to_string(),
                pg_desc: group_desc(comms, c, style.naming),
                global_ranks: c.global_ranks.clone(),
                parallelism: c.parallelism.to_string(),
            })
            .collect()
    }

    /// Writes rank `r`'s trace to `out`; its truth (`file` left empty).
    pub fn write_rank(
        &self,
        r: u32,
        style: &KinetoStyle,
        out: &mut dyn Write,
    ) -> io::Result<TraceTruth> {
        let pl = &self.plan;
        let p = &pl.procs[r as usize];
        // Newer Kineto writes times from a base; older ones absolute epoch microseconds.
        let base = EPOCH_NS - SESSION_LEAD_NS;
        write!(
            out,
            "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n"
        )?;
        for d in 0..pl.gpn {
            let sep = if d + 1 < pl.gpn { "," } else { "" };
            writeln!(
                out,
                "    {{\"id\": {d}, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": \
                 85045395456, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}}{sep}"
            )?;
        }
        writeln!(out, "  ],")?;
        if !style.info_after_events {
            writeln!(
                out,
                "  \"distributedInfo\": {},",
                self.distributed_info(r, style)
            )?;
        }
        writeln!(
            out,
            "  \"record_shapes\": 1,\n  \"displayTimeUnit\": \"ms\","
        )?;
        if style.base_time {
            writeln!(out, "  \"baseTimeNanoseconds\": {base},")?;
        }
        write!(out, "  \"traceEvents\": [")?;
        let mut rw = RankWriter {
            w: EventWriter::new(out, style.pretty, if style.base_time { base } else { 0 }),
            pl,
            p,
            style: *style,
            shift: base,
            next_external: 1,
            next_correlation: 1000 + u64::from(r) * 7,
            rng: crate::rng::Rng::derive(pl.cfg.seed, 0x4b1e_0000 + u64::from(r)),
        };
        let mut truth = TraceTruth {
            global_rank: r,
            host: p.host.clone(),
            pid: p.pid,
            device: p.local,
            file: String::new(),
            events: 0,
            kernels: Vec::new(),
            steps: Vec::new(),
            stages: Vec::new(),
        };
        rw.metadata()?;
        rw.steps(&mut truth)?;
        let mut seqs = std::collections::HashMap::new();
        let timed = &pl.timed[r as usize];
        for (i, call) in pl.calls[r as usize].iter().enumerate() {
            let tm = timed[i];
            // The CPU ranges of a call fit between its neighbours' (a thread's ranges nest or
            // follow each other, never overlap).
            let prev = i
                .checked_sub(1)
                .map_or(i64::MIN / 2, |j| timed[j].arrive_ns);
            let next = timed.get(i + 1).map_or(i64::MAX / 2, |t| t.arrive_ns);
            let before = ((tm.arrive_ns - prev) / 2).clamp(10, 30_000);
            let after = ((next - tm.arrive_ns) / 2).clamp(10, 15_000);
            rw.filler(tm.gap_start_ns, tm.arrive_ns - before)?;
            // PyTorch counts every call of a group (collectives and point-to-point apart),
            // one that launched no kernel too.
            let seq = *seqs
                .entry((call.comm(), call.is_p2p()))
                .and_modify(|s| *s += 1)
                .or_insert(1u64);
            if call.orphan {
                continue;
            }
            let k = rw.collective(call, &tm, seq, (before, after))?;
            truth.kernels.push(k);
        }
        rw.window_end()?;
        truth.events = rw.w.events;
        let out = rw.w.out;
        write!(out, "\n  ]")?;
        if style.info_after_events {
            write!(
                out,
                ",\n  \"distributedInfo\": {}",
                self.distributed_info(r, style)
            )?;
        }
        writeln!(out, ",\n  \"traceName\": \"rank{r}.pt.trace.json\"\n}}")?;
        Ok(truth)
    }

    fn distributed_info(&self, r: u32, style: &KinetoStyle) -> String {
        let world = self.world();
        let mut s = format!("{{\"backend\": \"nccl\", \"rank\": {r}, \"world_size\": {world}");
        if style.process_groups {
            let groups = self.groups(style);
            s += &format!(", \"pg_count\": {}, \"pg_config\": [", groups.len());
            for (i, g) in groups.iter().enumerate() {
                let sep = if i > 0 { ", " } else { "" };
                s += &format!(
                    "{sep}{{\"pg_name\": {}, \"pg_desc\": {}, \"backend_config\": \"cuda:nccl\", \
                     \"pg_size\": {}, \"ranks\": {:?}}}",
                    quote(&g.pg_name),
                    quote(&g.pg_desc),
                    g.global_ranks.len(),
                    g.global_ranks
                );
            }
            s += &format!(
                "], \"nccl_version\": {}",
                quote(&self.plan.cfg.nccl_version)
            );
        }
        s + "}"
    }
}

/// PyTorch's spelling of a rank list inside an args object (a string: `"[0, 1]"`).
fn ranks_text(ranks: &[u32]) -> String {
    quote(&format!("{ranks:?}"))
}

impl<W: Write> RankWriter<'_, W> {
    /// A node-clock time of this rank as the trace writes it (nanoseconds).
    fn t(&self, true_ns: i64) -> i64 {
        self.pl.gpu(self.p.node, true_ns) + self.shift
    }

    fn ev(&mut self, e: Ev<'_>) -> io::Result<()> {
        self.w.event(&e)
    }

    fn metadata(&mut self) -> io::Result<()> {
        let (pid, dev) = (self.p.pid, self.p.local);
        for (p, label) in [(pid, "CPU".to_string()), (dev, format!("GPU {dev}"))] {
            for (name, args) in [
                ("process_name", "\"name\": \"python3\"".to_string()),
                ("process_labels", format!("\"labels\": \"{label}\"")),
            ] {
                self.ev(Ev {
                    ph: "M",
                    cat: "",
                    name,
                    pid: p,
                    tid: 0,
                    ts_ns: self.t(0),
                    dur_ns: None,
                    args: &args,
                    flow: None,
                })?;
            }
        }
        Ok(())
    }

    /// One `ProfilerStep#N` per iteration (N from 10: profiling starts after warm-up steps).
    fn steps(&mut self, truth: &mut TraceTruth) -> io::Result<()> {
        let r = self.p.rank as usize;
        let calls = &self.pl.calls[r];
        for it in 0..self.pl.cfg.model.iterations {
            let idx: Vec<usize> = (0..calls.len())
                .filter(|&i| calls[i].iteration == Some(it))
                .collect();
            let (Some(&a), Some(&b)) = (idx.first(), idx.last()) else {
                continue;
            };
            let (s, e) = (
                self.t(self.pl.timed[r][a].gap_start_ns),
                self.t(self.pl.timed[r][b].end_ns),
            );
            let step = 10 + u64::from(it);
            self.annotation(&format!("ProfilerStep#{step}"), s, e)?;
            truth.steps.push((step, s, e));
            if self.style.stage_ranges {
                self.stage_ranges(step, s, e, truth)?;
            }
        }
        Ok(())
    }

    /// TorchRec-style stage ranges in step `step` ([s, e), trace time): forward, backward and
    /// optimizer over fixed shares of the step, after a moment of data loading that no range
    /// covers.
    fn stage_ranges(
        &mut self,
        step: u64,
        s: i64,
        e: i64,
        truth: &mut TraceTruth,
    ) -> io::Result<()> {
        let d = e - s;
        let cuts = [
            ("forward", s + d / 20, s + d * 7 / 20),
            ("backward", s + d * 7 / 20, s + d * 17 / 20),
            ("optimizer", s + d * 17 / 20, s + d * 19 / 20),
        ];
        for (stage, from, to) in cuts {
            // Kineto writes microseconds with three decimals: whole nanoseconds survive.
            self.annotation(&format!("## {stage} ##"), from, to)?;
            truth.stages.push((step, stage.to_string(), from, to));
        }
        Ok(())
    }

    /// A `record_function` range on the rank's CPU thread, from `from` to `to` (trace time).
    fn annotation(&mut self, name: &str, from: i64, to: i64) -> io::Result<()> {
        let ext = self.external();
        self.ev(Ev {
            ph: "X",
            cat: "user_annotation",
            name,
            pid: self.p.pid,
            tid: self.p.pid,
            ts_ns: from,
            dur_ns: Some(to - from),
            args: &format!("\"External id\": {ext}, \"Record function id\": 0"),
            flow: None,
        })
    }

    fn external(&mut self) -> u64 {
        self.next_external += 1;
        self.next_external
    }

    /// `filler` unrelated events spread over [from, to) (true time).
    fn filler(&mut self, from: i64, to: i64) -> io::Result<()> {
        let n = i64::from(self.style.filler);
        if n == 0 {
            return Ok(());
        }
        let span = (to - from).max(n * 2_000);
        let (pid, dev) = (self.p.pid, self.p.local);
        for j in 0..n {
            let at = self.t(from + span * j / n);
            let dur = 1_000 + self.rng.range(0, 40_000) as i64;
            let ext = self.external();
            match j % 10 {
                0..=3 => {
                    let names = [
                        "torch/nn/modules/module.py(1511): _call_impl",
                        "megatron/core/transformer/attention.py(331): forward",
                        "torch/autograd/graph.py(744): _engine_run_backward",
                        "<built-in method apply of FunctionMeta object at 0x7f3c2a1b2e40>",
                    ];
                    let args = format!(
                        "\"Python parent id\": {}, \"Python id\": {ext}, \"Python thread\": 0",
                        ext - 1
                    );
                    self.ev(Ev {
                        ph: "X",
                        cat: "python_function",
                        name: names[(j / 3 % 4) as usize],
                        pid,
                        tid: pid,
                        ts_ns: at,
                        dur_ns: Some(dur),
                        args: &args,
                        flow: None,
                    })?;
                }
                4..=6 => {
                    let (name, dims) = [
                        ("aten::mm", "[[8192, 4096], [4096, 4096]]"),
                        ("aten::add_", "[[4096, 4096], [4096, 4096], []]"),
                        ("aten::empty", "[[], [], [], [], [], []]"),
                    ][(j % 3) as usize];
                    let args = format!(
                        "\"External id\": {ext}, \"Record function id\": 0, \"Ev Idx\": {ext}, \
                         \"Input Dims\": {dims}, \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\", \"\"]"
                    );
                    self.ev(Ev {
                        ph: "X",
                        cat: "cpu_op",
                        name,
                        pid,
                        tid: pid,
                        ts_ns: at,
                        dur_ns: Some(dur),
                        args: &args,
                        flow: None,
                    })?;
                }
                7 => {
                    self.next_correlation += 1;
                    let c = self.next_correlation;
                    let args =
                        format!("\"External id\": {ext}, \"cbid\": 211, \"correlation\": {c}");
                    self.ev(Ev {
                        ph: "X",
                        cat: "cuda_runtime",
                        name: "cudaLaunchKernel",
                        pid,
                        tid: pid,
                        ts_ns: at,
                        dur_ns: Some(4_000),
                        args: &args,
                        flow: None,
                    })?;
                    self.ev(Ev {
                        ph: "s",
                        cat: "ac2g",
                        name: "ac2g",
                        pid,
                        tid: pid,
                        ts_ns: at,
                        dur_ns: None,
                        args: "",
                        flow: Some((c, false)),
                    })?;
                }
                8 => {
                    let c = self.next_correlation;
                    let args = format!(
                        "\"External id\": {ext}, \"queued\": 0, \"device\": {dev}, \"context\": 1, \
                         \"stream\": 7, \"correlation\": {c}, \"registers per thread\": 128, \
                         \"shared memory\": 49152, \"blocks per SM\": 2.5, \"warps per SM\": 20, \
                         \"grid\": [264, 1, 1], \"block\": [256, 1, 1], \"est. achieved occupancy %\": 25"
                    );
                    self.ev(Ev {
                        ph: "X",
                        cat: "kernel",
                        name: "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x3_nn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x3_nn_align8::Params)",
                        pid: dev,
                        tid: 7,
                        ts_ns: at + 6_000,
                        dur_ns: Some(dur),
                        args: &args,
                        flow: None,
                    })?;
                }
                _ => {
                    self.ev(Ev {
                        ph: "X",
                        cat: "gpu_memcpy",
                        name: "Memcpy HtoD (Pinned -> Device)",
                        pid: dev,
                        tid: 9,
                        ts_ns: at,
                        dur_ns: Some(dur),
                        args: &format!("\"External id\": {ext}, \"device\": {dev}, \"context\": 1, \"stream\": 9, \"bytes\": 8192, \"memory bandwidth (GB/s)\": 4.1"),
                        flow: None,
                    })?;
                }
            }
        }
        Ok(())
    }

    /// One collective: its CPU ranges, launch and kernel; the kernel's truth.
    /// `room`: how long before and after its enqueue time the call's CPU ranges may reach.
    fn collective(
        &mut self,
        call: &Call,
        tm: &crate::timing::Timed,
        seq: u64,
        room: (i64, i64),
    ) -> io::Result<KernelTruth> {
        let shape = CallShape::of(self.pl, call, seq);
        let fields = shape.fields(&self.pl.comms, &self.style);
        let exts = self.cpu_ranges(&shape, &fields, tm.arrive_ns, room)?;
        let kernel = self.launch_and_kernel(&shape, &fields, tm, room, exts)?;
        Ok(shape.truth(kernel, &self.style))
    }

    /// The call's CPU side: c10d operator ⊃ record_param_comms ⊃ nccl:* range, as PyTorch nests
    /// them (a batch of sends and receives records each call before the group's end launches
    /// the kernel, so its record_param_comms do not hold the launch); their `External id`s
    /// (operator's, record_param_comms').
    fn cpu_ranges(
        &mut self,
        sh: &CallShape<'_>,
        fields: &str,
        a: i64,
        (before, after): (i64, i64),
    ) -> io::Result<(u64, u64)> {
        let names = torch_names(sh.op);
        let (_, dtype_old) = torch_dtype(sh.first().dtype);
        let (op_ext, record_ext, range_ext) = (self.external(), self.external(), self.external());
        let c10d = if sh.batched {
            "c10d::coalesced_"
        } else {
            names.2
        };
        let args = format!("\"External id\": {op_ext}, \"Record function id\": 0");
        self.range("cpu_op", c10d, a - before, a + after, &args)?;
        // A batch's record_param_comms are its single calls' (the first shown).
        let dims = if sh.batched {
            sh.first().count
        } else {
            sh.in_n
        };
        let first_tensor = format!(
            "\"Input Dims\": [[{dims}], [], [], [], [], [], []], \"Input type\": [\"{dtype_old}\", \
             \"Scalar\", \"Scalar\", \"Scalar\", \"\", \"\", \"\"]"
        );
        let head = format!("\"External id\": {record_ext}, \"Record function id\": 0");
        let args = if self.style.record_args {
            format!("{head}, {fields}, {first_tensor}")
        } else {
            format!("{head}, {first_tensor}")
        };
        let (from, to) = if sh.batched {
            (a - before * 9 / 10, a - before * 7 / 10)
        } else {
            (a - before * 8 / 10, a + after * 9 / 10)
        };
        self.range("cpu_op", "record_param_comms", from, to, &args)?;
        let head = format!("\"External id\": {range_ext}, \"Record function id\": 0");
        let (name, args) = if sh.batched {
            ("nccl:coalesced", head)
        } else {
            let shape = format!("\"Input Dims\": [[{dims}]], \"Input type\": [\"{dtype_old}\"]");
            (names.1, format!("{head}, {shape}"))
        };
        self.range(
            "user_annotation",
            name,
            a - before * 6 / 10,
            a + after * 8 / 10,
            &args,
        )?;
        Ok((op_ext, record_ext))
    }

    /// A complete event on the rank's CPU thread, from `from` to `to` (true time).
    fn range(&mut self, cat: &str, name: &str, from: i64, to: i64, args: &str) -> io::Result<()> {
        let pid = self.p.pid;
        self.ev(Ev {
            ph: "X",
            cat,
            name,
            pid,
            tid: pid,
            ts_ns: self.t(from),
            dur_ns: Some(to - from),
            args,
            flow: None,
        })
    }

    /// The launch call and the kernel it launches; what the truth needs of them.
    fn launch_and_kernel(
        &mut self,
        sh: &CallShape<'_>,
        fields: &str,
        tm: &crate::timing::Timed,
        (_, after): (i64, i64),
        (op_ext, record_ext): (u64, u64),
    ) -> io::Result<WrittenKernel> {
        self.next_correlation += 1;
        let corr = self.next_correlation;
        // The operator the kernel is filed under: record_param_comms (the batch's own operator
        // for a batch); older Kineto wrote the correlation id instead.
        let ext = if self.style.external_is_correlation {
            corr
        } else if sh.batched {
            op_ext
        } else {
            record_ext
        };
        let a = tm.arrive_ns;
        let args = format!("\"External id\": {ext}, \"cbid\": 430, \"correlation\": {corr}");
        self.range(
            "cuda_runtime",
            "cudaLaunchKernelExC",
            a + after * 2 / 10,
            a + after / 2,
            &args,
        )?;
        let names = sh.kernel_names(self.pl.v);
        let (s, e) = (
            self.t(tm.start_ns),
            self.t(tm.end_ns.max(tm.start_ns + 2_000)),
        );
        let stream = sh.c.stream_ids[sh.c.member(self.p.rank)];
        let (grid, block) = sh.grid(self.pl.gpn, self.p.node);
        let dev = self.p.local;
        let mut args = format!(
            "\"External id\": {ext}, \"queued\": 0, \"device\": {dev}, \"context\": 1, \
             \"stream\": {stream}, \"correlation\": {corr}, \"registers per thread\": 96, \
             \"shared memory\": 0, \"blocks per SM\": 0.06, \"warps per SM\": 1, \
             \"grid\": [{grid}, 1, 1], \"block\": [{block}, 1, 1], \"est. achieved occupancy %\": 0"
        );
        let on_kernel = self.style.kernel_args && !sh.batched;
        if on_kernel {
            args += ", ";
            args += fields;
        }
        self.ev(Ev {
            ph: "X",
            cat: "kernel",
            name: &names.demangled,
            pid: dev,
            tid: stream,
            ts_ns: s,
            dur_ns: Some(e - s),
            args: &args,
            flow: None,
        })?;
        Ok(WrittenKernel {
            correlation: corr,
            kernel_op: kernel_op_name(&names.short),
            name: names.demangled,
            start_ns: s,
            end_ns: e,
            stream,
            on_kernel,
        })
    }

    /// The event Kineto ends a trace with (its pid and tid are strings).
    fn window_end(&mut self) -> io::Result<()> {
        let t = crate::kineto_json::micros(self.t(self.pl.end_max()) + 1_000_000 - self.w.base);
        write!(
            self.w.out,
            ",\n  {{\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", \
             \"tid\": \"\", \"ts\": {t}}}"
        )?;
        self.w.events += 1;
        Ok(())
    }
}

/// One call as PyTorch records it.
struct CallShape<'c> {
    call: &'c Call,
    c: &'c Communicator,
    kind: Kind<'c>,
    /// The collective (`AllToAll` for an all-to-all, `SendRecv` for a batch).
    op: OpType,
    in_n: u64,
    out_n: u64,
    /// A `batch_isend_irecv`: the kernel keeps nothing but its name.
    batched: bool,
    seq: u64,
}

/// What the truth needs of a written kernel.
struct WrittenKernel {
    correlation: u64,
    name: String,
    kernel_op: String,
    start_ns: i64,
    end_ns: i64,
    stream: u32,
    /// The collective's fields are on the kernel.
    on_kernel: bool,
}

impl<'c> CallShape<'c> {
    fn of(pl: &'c Plan<'_>, call: &'c Call, seq: u64) -> CallShape<'c> {
        let c = &pl.comms.list[call.comm()];
        let n = u64::from(c.size());
        let kind = kind(call);
        let (op, in_n, out_n) = match kind {
            Kind::One(o) => match o.op {
                OpType::AllGather => (o.op, o.count, o.count * n),
                OpType::ReduceScatter => (o.op, o.count * n, o.count),
                _ => (o.op, o.count, o.count),
            },
            Kind::AllToAll(s, r) => (OpType::AllToAll, s, r),
            Kind::Batched => (OpType::SendRecv, 0, 0),
        };
        CallShape {
            call,
            c,
            batched: matches!(kind, Kind::Batched),
            kind,
            op,
            in_n,
            out_n,
            seq,
        }
    }

    fn first(&self) -> &OpSpec {
        &self.call.ops[0]
    }

    /// The collective's fields, as record_param_comms and (2.4+) the kernel carry them.
    fn fields(&self, comms: &crate::comms::Comms, style: &KinetoStyle) -> String {
        let (c, first) = (self.c, self.first());
        let (dtype, _) = torch_dtype(first.dtype);
        let mut f = format!(
            "\"Collective name\": \"{}\", \"In msg nelems\": {}, \"Out msg nelems\": {}, \
             \"Group size\": {}, \"dtype\": \"{dtype}\", \"In split size\": \"[]\", \
             \"Out split size\": \"[]\"",
            torch_names(self.op).0,
            self.in_n,
            self.out_n,
            c.size()
        );
        if style.process_groups {
            f += &format!(
                ", \"Process Group Name\": {}, \"Process Group Description\": {}, \
                 \"Process Group Ranks\": {}",
                quote(&c.index.to_string()),
                quote(&group_desc(comms, c, style.naming)),
                ranks_text(&c.global_ranks)
            );
        }
        if style.seq {
            f += &format!(", \"Seq\": {}", self.seq);
        }
        match (first.op, first.peer) {
            (OpType::Send, Some(q)) if !self.batched => f += &format!(", \"Dst Rank\": {q}"),
            (OpType::Recv, Some(q)) if !self.batched => f += &format!(", \"Src Rank\": {q}"),
            _ => {}
        }
        f
    }

    /// The kernel NCCL runs for it (an all-to-all, a send or a receive run as `SendRecv`).
    fn kernel_names(&self, v: crate::logfmt::Version) -> crate::nsysdb::KernelNames {
        let op = if self.batched {
            OpType::SendRecv
        } else {
            op_for_name(self.op)
        };
        crate::nsysdb::nccl_kernel(v, op, self.first().dtype, false)
    }

    /// The kernel's grid and block: NCCL's grid is its channel count, as the generator's
    /// exports have it.
    fn grid(&self, gpn: u32, node: u32) -> (u32, u32) {
        let call = self.call;
        if call.is_p2p() {
            return ((2 * call.ops.len() as u32).min(32), 640);
        }
        let total: u64 = call
            .ops
            .iter()
            .map(|o| o.count * o.dtype.size_bytes())
            .sum();
        let bytes = match self.first().op {
            OpType::AllGather | OpType::ReduceScatter => total * u64::from(self.c.size()),
            _ => total,
        };
        let intra = self.c.global_ranks.iter().all(|g| g / gpn == node);
        (crate::rank::channels_for(bytes, intra), 512)
    }

    /// The kernel's truth: what a reader of the trace can know of it.
    fn truth(&self, k: WrittenKernel, style: &KinetoStyle) -> KernelTruth {
        let knows = style.fields() && !self.batched;
        KernelTruth {
            correlation: k.correlation,
            name: k.name,
            kernel_op: k.kernel_op,
            start_ns: k.start_ns,
            end_ns: k.end_ns,
            stream: k.stream,
            op: self.op.name().to_string(),
            in_nelems: (!self.batched).then_some(self.in_n),
            out_nelems: knows.then_some(self.out_n),
            datatype: (!self.batched).then(|| self.first().dtype.name().to_string()),
            pg_name: (knows && style.process_groups).then(|| self.c.index.to_string()),
            group_size: knows.then_some(self.c.size()),
            seq: (knows && style.seq).then_some(self.seq),
            source: if self.batched {
                "kernel name"
            } else if k.on_kernel {
                "kernel arguments"
            } else {
                "CPU operator"
            }
            .into(),
            group: self.c.index,
            nccl_count: match self.kind {
                Kind::One(o) => Some(o.count),
                Kind::AllToAll(s, _) => Some(s),
                Kind::Batched => None,
            },
        }
    }
}

/// The operation a kernel is named after: an all-to-all runs as grouped sends and receives.
fn op_for_name(op: OpType) -> OpType {
    match op {
        OpType::AllToAll | OpType::Send | OpType::Recv => OpType::SendRecv,
        op => op,
    }
}

/// `ncclDevKernel_AllReduce_Sum_bf16_RING_LL` → `AllReduce`.
fn kernel_op_name(short: &str) -> String {
    let rest = short
        .strip_prefix("ncclDevKernel_")
        .or_else(|| short.strip_prefix("ncclKernel_"))
        .unwrap_or(short);
    rest.split('_').next().unwrap_or(rest).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every style's trace is one JSON document holding what the truth says.
    #[test]
    fn traces_are_json_with_their_truth() {
        let cfg = crate::preset("tp2pp2").expect("a preset").config;
        let run = KinetoRun::new(&cfg);
        for style in KinetoStyle::variations().into_iter().step_by(5) {
            let mut bytes = Vec::new();
            let t = run.write_rank(1, &style, &mut bytes).unwrap();
            let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            let events = v["traceEvents"].as_array().unwrap();
            assert_eq!(events.len() as u64, t.events);
            let kernels = events
                .iter()
                .filter(|e| e["cat"] == "kernel" && e["name"].as_str().unwrap().contains("nccl"))
                .count();
            assert_eq!(kernels, t.kernels.len());
            assert!(!t.kernels.is_empty() && !t.steps.is_empty());
            assert_eq!(v["distributedInfo"]["rank"], 1);
            assert_eq!(
                v["distributedInfo"]["pg_config"].is_array(),
                style.process_groups
            );
        }
    }
}
