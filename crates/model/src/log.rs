//! Records parsed from NCCL debug logs (`NCCL_DEBUG=INFO`).
//!
//! Communicator pointers are only unique inside one process, so every record that names one
//! carries its [`ProcessKey`] too.

use crate::nccl::{Algo, DataType, OpType, Proto, RedOp};

pub use crate::log_ops::{Call, CallSite, LogOps, TuningFacts};

/// One process as the log names it: `host:pid`.
///
/// Every log record carries one, so the host is a [`Host`]: host names up to 23 bytes live
/// inline, and copying a key (once per parsed operation) never allocates.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProcessKey {
    pub host: Host,
    pub pid: u32,
}

/// A host name as printed in a log or export: an immutable string, inline up to 23 bytes
/// (longer ones are shared), compared, ordered and hashed as its text.
pub type Host = smol_str::SmolStr;

/// Where a record came from, for the details panel and for error messages.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SourceLine {
    /// Index of the input file in the load (the caller keeps the names).
    pub file: u32,
    /// 1-based line number.
    pub line: u64,
}

/// One per-collective line, e.g.
/// `host:12:34 [0] NCCL INFO AllReduce: opCount 1a sendbuff 0x.. recvbuff 0x.. count 131072
///  datatype 6 op 0 root 0 comm 0x447b8890 [nranks=4] stream 0x32dc6760`.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct LogOp {
    pub process: ProcessKey,
    pub tid: u32,
    pub cuda_dev: u32,
    pub op: OpType,
    /// Per-communicator counter, printed in hex without `0x`.
    pub op_count: u64,
    pub sendbuff: u64,
    pub recvbuff: u64,
    pub count: u64,
    /// `None` for a datatype code NCCL added after this build.
    pub datatype: Option<DataType>,
    pub datatype_code: u32,
    pub red_op: RedOp,
    /// Root for rooted collectives, the peer for Send/Recv.
    pub root: i64,
    pub comm: u64,
    pub nranks: u32,
    pub stream: u64,
    /// Epoch nanoseconds when the log has `NCCL_DEBUG_TIMESTAMP_FORMAT` timestamps.
    pub timestamp_ns: Option<i64>,
    /// From the tuning line that followed, when there was one.
    pub algo: Option<Algo>,
    pub proto: Option<Proto>,
    pub nchannels: Option<u32>,
    /// The kernel a 2.27+ `[Symmetric]` tuning line named for this operation
    /// (`ncclSymDevKernel_AllReduce_...`): it ran on symmetric (registered window) buffers.
    pub sym_kernel: Option<std::sync::Arc<str>>,
    /// RCCL's extra fields (`acc` is a pointer, 0 for `(nil)`).
    pub rccl_task: Option<u64>,
    pub rccl_global_rank: Option<u32>,
    pub rccl_acc: Option<u64>,
    pub source: SourceLine,
}

impl LogOp {
    /// `count × sizeof(datatype)`, the contract's byte count; 0 for an unknown datatype.
    pub fn msg_bytes(&self) -> u64 {
        self.datatype
            .map_or(0, |d| self.count.saturating_mul(d.size_bytes()))
    }
}

/// A communicator's `Init COMPLETE` line (all shapes since NCCL 2.4), or its `Init START`
/// line (the parser keeps those apart).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommInit {
    pub process: ProcessKey,
    /// The function that printed it (`ncclCommInitRank`, `ncclCommSplit`, ...), 2.19+.
    pub func: Option<String>,
    pub comm: u64,
    pub rank: u32,
    pub nranks: u32,
    pub cuda_dev: Option<u32>,
    pub nvml_dev: Option<u32>,
    pub bus_id: Option<String>,
    /// Hash shared by all members of one communicator, when printed.
    pub comm_id: Option<u64>,
    /// `ncclCommSplit` parent communicator, color and key.
    pub split_parent: Option<u64>,
    pub split_color: Option<i64>,
    pub split_key: Option<i64>,
    /// From the `comm 0x.. rank N nRanks N nNodes N localRanks N localRank N MNNVL N` line
    /// (2.19+) printed before it on the same thread.
    pub n_nodes: Option<u32>,
    pub local_ranks: Option<u32>,
    pub local_rank: Option<u32>,
    /// Multi-node NVLink (`MNNVL 1`).
    pub mnnvl: Option<bool>,
    pub source: SourceLine,
}
