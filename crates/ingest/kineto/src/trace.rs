//! What is read from one trace: plain data, times in nanoseconds.

use model::{DataType, Diagnostic, OpType};
use std::sync::Arc;

/// Everything kept from one Kineto trace.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KinetoTrace {
    pub path: String,
    /// `schemaVersion` as written.
    pub schema_version: Option<String>,
    pub distributed: Option<DistributedInfo>,
    /// `baseTimeNanoseconds`: newer traces write times relative to it; it is added to every
    /// time here (as Holistic Trace Analysis does), so times are epoch nanoseconds.
    pub base_time_ns: Option<i64>,
    /// The process that ran the profiler (the pid of its CPU events; kernels are filed under
    /// the device as `pid` in the trace).
    pub cpu_pid: Option<u32>,
    /// The `process_name` metadata of that process (`python3`, `pyper:trainer:0:0`).
    pub process_name: Option<String>,
    /// NCCL and RCCL kernels, in start order, each with its meaning resolved.
    pub kernels: Vec<NcclKernel>,
    /// `ProfilerStep#N` ranges (CPU side), in start order.
    pub steps: Vec<ProfilerStep>,
    /// The `record_function` ranges on the CPU (`user_annotation`: the profiler's steps,
    /// `## forward ##`, `Optimizer.step#AdamW.step`, ...), communication ranges left out, in
    /// start order, at most [`MAX_ANNOTATIONS`]: what NVTX ranges are to an Nsight export,
    /// the step analysis' stages.
    pub annotations: Vec<Annotation>,
    pub counts: EventCounts,
    /// Problems with the file, each naming it and the line (or byte) concerned.
    pub diagnostics: Vec<Diagnostic>,
    /// Bytes of JSON text read (after inflating) and lines.
    pub text_bytes: u64,
    pub lines: u64,
    /// Whether the document ended where JSON says it ends (false: cut short or damaged).
    pub complete: bool,
}

/// `distributedInfo`: who this trace's process was in the job.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DistributedInfo {
    pub backend: Option<String>,
    pub rank: Option<u32>,
    pub world_size: Option<u32>,
    /// NCCL's version (`2.17.1`), PyTorch 2.3+.
    pub nccl_version: Option<String>,
    /// Every process group of the job as PyTorch knew it when the trace was written.
    pub pg_config: Vec<PgConfig>,
    /// The line of the trace where `distributedInfo` starts.
    pub line: u64,
}

/// One process group of `distributedInfo.pg_config`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PgConfig {
    /// `pg_name`: PyTorch's name for it, unique in the job (`"0"`, `"3"`, a hash).
    pub name: String,
    /// `pg_desc`: what it is for (`default_pg`, `mesh_tp`, Megatron's group names, `undefined`).
    pub desc: Option<String>,
    /// `backend_config`, e.g. `cuda:nccl` or `cpu:gloo,cuda:gloo`.
    pub backend_config: Option<String>,
    pub size: Option<u32>,
    /// Global ranks of its members, in group-rank order.
    pub ranks: Vec<u32>,
}

impl PgConfig {
    /// Whether NCCL (or RCCL) carries this group's CUDA collectives.
    pub fn is_nccl(&self) -> bool {
        self.backend_config
            .as_deref()
            .is_none_or(|b| b.contains("nccl"))
    }
}

/// One NCCL (or RCCL) kernel of the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct NcclKernel {
    /// The kernel name as written (shared: a trace has a few distinct names for many kernels).
    pub name: Arc<str>,
    pub start_ns: i64,
    pub end_ns: i64,
    pub device: u32,
    pub stream: u32,
    /// CUPTI's correlation id (the launch's).
    pub correlation: u64,
    /// `External id`: the CPU operator's in traces since late 2023; older ones write the
    /// correlation id here.
    pub external_id: Option<u64>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub registers_per_thread: u32,
    pub shared_memory: u32,
    /// The line of the trace where the kernel's event starts.
    pub line: u64,
    /// The runtime or driver call that launched it (same correlation id), when the trace kept it.
    pub launch: Option<Launch>,
    /// What it did, from its own arguments, its CPU operator or its name.
    pub coll: Collective,
}

/// A CUDA (or HIP) runtime or driver launch call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    pub pid: u32,
    pub tid: u32,
    pub start_ns: i64,
}

/// Where a kernel's meaning came from (the operation; other fields may come from several).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MetaSource {
    /// The kernel's own arguments (`Collective name`, ...: PyTorch 2.4+ copies them there).
    KernelArgs,
    /// The `record_param_comms` or `nccl:*` CPU range that launched it.
    CpuOp,
    /// The kernel name alone (`ncclKernel_AllReduce_RING_LL_Sum_float`).
    KernelName,
    /// Nothing says (`ncclDevKernel_Generic` with no CPU range).
    Unknown,
}

impl MetaSource {
    pub fn name(self) -> &'static str {
        match self {
            MetaSource::KernelArgs => "kernel arguments",
            MetaSource::CpuOp => "CPU operator",
            MetaSource::KernelName => "kernel name",
            MetaSource::Unknown => "unknown",
        }
    }
}

/// What one collective (or point-to-point call) was, as PyTorch recorded it. Its texts are
/// shared (each distinct one kept once per trace: a trace repeats a few for every call).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Collective {
    /// NCCL's name for it (`AllReduce`; `AllToAll` for PyTorch's all-to-all, which NCCL runs
    /// as grouped sends and receives in one `SendRecv` kernel).
    pub op: Option<OpType>,
    /// The name PyTorch recorded (`allreduce`, `_allgather_base`, `nccl:all_to_all`).
    pub name: Option<Arc<str>>,
    pub in_nelems: Option<u64>,
    pub out_nelems: Option<u64>,
    pub datatype: Option<DataType>,
    /// The datatype as written (`Float`, `BFloat16`, `c10::Half`, `unsigned char`).
    pub dtype_name: Option<Arc<str>>,
    pub group_size: Option<u32>,
    pub pg_name: Option<Arc<str>>,
    pub pg_desc: Option<Arc<str>>,
    /// Global ranks of the group's members, in group-rank order.
    pub pg_ranks: Option<Arc<[u32]>>,
    pub in_split: Option<Arc<str>>,
    pub out_split: Option<Arc<str>>,
    /// `Seq`: the process group's sequence number of the call (newest traces).
    pub seq: Option<u64>,
    /// The peer of a send or receive (`Dst Rank` / `Src Rank`), a global rank.
    pub peer: Option<i64>,
    pub source: Option<MetaSource>,
}

impl Collective {
    /// NCCL's `count` for this call: what its log line would print. AllGather prints one rank's
    /// share (the input), ReduceScatter one rank's share (the output), the others the input.
    pub fn nccl_count(&self) -> Option<u64> {
        match self.op {
            Some(OpType::ReduceScatter) => self.out_nelems.or(self
                .in_nelems
                .zip(self.group_size)
                .and_then(|(n, g)| n.checked_div(u64::from(g)))),
            Some(OpType::Recv) => self.out_nelems.or(self.in_nelems),
            _ => self.in_nelems.or(self.out_nelems),
        }
    }

    /// `count × sizeof(datatype)`: the contract's bytes; `None` when either is unknown.
    pub fn bytes(&self) -> Option<u64> {
        Some(
            self.nccl_count()?
                .saturating_mul(self.datatype?.size_bytes()),
        )
    }
}

/// A `record_param_comms` or `nccl:*` range on the CPU (kept while reading, to give kernels
/// their meaning).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CommOp {
    /// `record_param_comms`, `nccl:all_reduce`, ...
    pub name: Arc<str>,
    pub pid: u32,
    pub tid: u32,
    pub start_ns: i64,
    pub end_ns: i64,
    pub external_id: Option<u64>,
    /// What its arguments say (a `record_param_comms` of PyTorch 2.1+ says everything; older
    /// ones and `nccl:*` ranges only their first tensor's shape and type).
    pub coll: Collective,
    pub line: u64,
}

/// The most `record_function` ranges kept of one trace (the rest counted, and said): a few
/// dozen per step in the traces seen, so this bounds only a pathological file.
pub const MAX_ANNOTATIONS: usize = 200_000;

/// One `record_function` range (`user_annotation`) on the CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    pub name: Arc<str>,
    pub pid: u32,
    pub tid: u32,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// One `ProfilerStep#N` range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfilerStep {
    pub step: u64,
    pub start_ns: i64,
    pub end_ns: i64,
    pub pid: u32,
    pub tid: u32,
    pub line: u64,
}

/// How many events of each kind the trace held, kept or not.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EventCounts {
    /// Elements of `traceEvents`.
    pub events: u64,
    /// Events per `cat` (`cpu_op`, `kernel`, `cuda_runtime`, ...; `(none)` without one), in
    /// order of first appearance.
    pub by_category: Vec<(String, u64)>,
    /// Every GPU kernel, NCCL or not.
    pub kernels: u64,
    pub nccl_kernels: u64,
    /// Kernel time of the other kernels (overlapping kernels count twice).
    pub other_kernel_ns: i64,
    pub launches: u64,
    /// `record_param_comms` and `nccl:*` CPU ranges (read to give kernels their meaning, then
    /// dropped: nothing later needs them).
    pub comm_ops: u64,
    /// Events that could not be read or lacked a field they need, counted per problem
    /// (`an NCCL kernel without "ts"`), with the line of the first.
    pub problems: Vec<Problem>,
}

/// One kind of unreadable event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub what: String,
    pub count: u64,
    pub first_line: u64,
}

impl EventCounts {
    /// Events with a problem, all kinds together.
    pub fn bad_events(&self) -> u64 {
        self.problems.iter().map(|p| p.count).sum()
    }
}
