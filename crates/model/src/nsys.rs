//! Records read from Nsight Systems SQLite exports (`nsys export --type sqlite`).

use crate::nccl::{Algo, DataType, OpType, Proto, RedOp};

pub use crate::kernel_store::KernelStore;

/// One GPU kernel from `CUPTI_ACTIVITY_KIND_KERNEL`, NCCL or not.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    pub pid: u32,
    /// GPU clock, nanoseconds.
    pub start_ns: i64,
    pub end_ns: i64,
    pub device: u32,
    pub stream: u32,
    pub correlation_id: u32,
    /// The kernel name as the export stores it (`demangledName`, else `shortName`). Shared: an
    /// export has a few distinct NCCL kernel names for millions of kernels, so each kernel holds
    /// a pointer to its name, not a copy (16 bytes instead of 24 plus the text on the heap).
    pub name: std::sync::Arc<str>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub static_shared_bytes: u32,
    pub dynamic_shared_bytes: u32,
    pub registers_per_thread: u32,
    pub local_memory_total: u64,
    /// CPU-side launch time of the runtime/driver call with the same correlation id.
    pub launch_ns: Option<i64>,
    pub launch_tid: Option<u32>,
}

/// What an NCCL kernel's name tells, where it tells it.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KernelName {
    pub op: Option<OpType>,
    pub red_op: Option<RedOp>,
    pub datatype: Option<DataType>,
    pub algo: Option<Algo>,
    pub proto: Option<Proto>,
}

/// One NVTX range (push/pop or start/end).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct NvtxRange {
    pub pid: u32,
    pub tid: u32,
    pub start_ns: i64,
    /// `None` for an instantaneous mark or an unterminated range.
    pub end_ns: Option<i64>,
    pub text: String,
    pub domain: Option<String>,
}

/// Non-NCCL kernels of one process on one device, counted in SQL (the page never needs each row).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherKernels {
    pub pid: u32,
    pub device: u32,
    pub count: u64,
    /// Sum of kernel durations (overlapping kernels on several streams count twice).
    pub total_ns: i64,
}

/// A process that ran kernels or emitted NVTX ranges.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    pub name: String,
}

/// A GPU from `TARGET_INFO_GPU`.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    pub id: u32,
    pub name: Option<String>,
    /// PCI bus id (`0000:45:00.0`), the persistent GPU identity.
    pub bus_id: Option<String>,
    pub cuda_device: Option<u32>,
}

/// One row of `TARGET_INFO_CUDA_DEVICE`: a process' CUDA ordinal mapped to a GPU.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaDeviceMap {
    pub gpu_id: Option<u32>,
    pub cuda_device: u32,
    pub pid: u32,
}

/// When the capture began. Wall time of an event = `utc_epoch_ns + (ts − host_clock_ns)`.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionStart {
    pub utc_epoch_ns: i64,
    /// Host clock at `utc_epoch_ns` (`systemClockNs`, else `ANALYSIS_DETAILS.startTime`).
    pub host_clock_ns: Option<i64>,
}

/// One entry of an NVTX payload schema (`NVTX_PAYLOAD_SCHEMA_ENTRIES`).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadEntry {
    pub idx: u32,
    pub name: Option<String>,
    /// `NVTX_PAYLOAD_ENTRY_TYPE_*`, or a registered schema/enum id (≥ 1<<24).
    pub type_id: u64,
    pub flags: u64,
    /// Byte offset as registered; `None` means "natural alignment after the previous entry".
    pub offset: Option<u64>,
    pub array_or_union: Option<u64>,
}

/// An NVTX payload schema (`NVTX_PAYLOAD_SCHEMAS` + its entries), deduplicated across processes.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadSchema {
    pub domain_id: u64,
    pub schema_id: u64,
    pub name: Option<String>,
    pub payload_size: Option<u64>,
    pub entries: Vec<PayloadEntry>,
}

/// One decoded payload value.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub enum PayloadValue {
    Int(i64),
    Uint(u64),
    Float(f64),
    Bytes(Vec<u8>),
}

/// One decoded field of a binary NVTX payload.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct PayloadField {
    pub name: String,
    pub value: PayloadValue,
}

/// An NCCL API call seen as an NVTX range in NCCL's own domain (`ncclAllReduce`, `ncclSend`, ...),
/// with what its typed payload says where the export kept the payload bytes.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct NcclNvtxCall {
    /// Index into [`NsysExport::nvtx`].
    pub nvtx_index: usize,
    /// The range text, e.g. `ncclSend`.
    pub api: String,
    pub schema_id: Option<u64>,
    pub fields: Vec<PayloadField>,
    pub comm_id: Option<u64>,
    pub msg_bytes: Option<u64>,
    pub red_op: Option<crate::nccl::RedOp>,
    pub rank: Option<i64>,
    pub nranks: Option<i64>,
    pub peer: Option<i64>,
    pub root: Option<i64>,
    pub cuda_device: Option<i64>,
}

/// Everything read from one Nsight Systems export.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NsysExport {
    pub path: String,
    /// `EXPORT_SCHEMA_VERSION`, e.g. `3.25.0`.
    pub schema_version: Option<String>,
    /// `EXPORT_PRODUCT_VERSION`, e.g. `2026.2.1.210`.
    pub product_version: Option<String>,
    /// NCCL kernels, ordered by pid then start, stored compactly; reading them gives whole
    /// [`Kernel`] values.
    pub kernels: KernelStore,
    pub other_kernels: Vec<OtherKernels>,
    pub processes: Vec<Process>,
    pub hosts: Vec<String>,
    pub gpus: Vec<Gpu>,
    pub cuda_devices: Vec<CudaDeviceMap>,
    pub session_start: Option<SessionStart>,
    /// Every push/pop and start/end range, NCCL's own included, ordered by pid, tid, start.
    pub nvtx: Vec<NvtxRange>,
    /// Indices into `nvtx` of ranges whose text matched an iteration pattern.
    pub iterations: Vec<usize>,
    pub nccl_calls: Vec<NcclNvtxCall>,
    pub payload_schemas: Vec<PayloadSchema>,
    pub diagnostics: Vec<crate::diag::Diagnostic>,
}
