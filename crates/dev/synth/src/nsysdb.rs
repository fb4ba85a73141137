//! Nsight Systems export contents: the real DDL of schema 3.17 and 3.25 and the NCCL kernel
//! names of each NCCL version. Why: the ingest side probes tables and columns the way it must
//! for real exports; synthetic reports must present the same shapes.

use crate::logfmt::Version;
use ::model::{DataType, OpType};

/// `CREATE TABLE` statements of a real export (nsys 2024.6, schema 3.16.1: `reference/`'s dump
/// of the NVIDIA-Fuser fixture, which has no `TARGET_INFO_CUDA_DEVICE`).
pub const DDL_3_16: &str = include_str!("ddl/schema_3_16.sql");
/// Verbatim `CREATE TABLE` statements from a real export (nsys 2025.1, schema 3.17.1).
pub const DDL_3_17: &str = include_str!("ddl/schema_3_17.sql");
/// Verbatim `CREATE TABLE` statements from a real export (nsys 2026.2, schema 3.25.0).
pub const DDL_3_25: &str = include_str!("ddl/schema_3_25.sql");

/// Export schema version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Schema {
    #[serde(rename = "3.16")]
    V3_16,
    #[serde(rename = "3.17")]
    V3_17,
    #[serde(rename = "3.25")]
    V3_25,
}

impl Schema {
    pub fn ddl(self) -> &'static str {
        match self {
            Schema::V3_16 => DDL_3_16,
            Schema::V3_17 => DDL_3_17,
            Schema::V3_25 => DDL_3_25,
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            Schema::V3_16 => "3.16.1",
            Schema::V3_17 => "3.17.1",
            Schema::V3_25 => "3.25.0",
        }
    }
}

/// A kernel's three names as CUPTI reports them.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelNames {
    pub short: String,
    pub demangled: String,
    pub mangled: String,
}

fn ty_new(d: DataType) -> &'static str {
    match d {
        DataType::Int8 | DataType::Uint8 => "u8",
        DataType::Int32 | DataType::Uint32 => "u32",
        DataType::Int64 | DataType::Uint64 => "u64",
        DataType::Float16 => "f16",
        DataType::Float32 => "f32",
        DataType::Float64 => "f64",
        DataType::Bfloat16 => "bf16",
        DataType::Float8e4m3 => "f8e4m3",
        DataType::Float8e5m2 => "f8e5m2",
    }
}

fn ty_old(d: DataType) -> &'static str {
    match d {
        DataType::Int8 => "int8_t",
        DataType::Uint8 => "uint8_t",
        DataType::Int32 => "int32_t",
        DataType::Uint32 => "uint32_t",
        DataType::Int64 => "int64_t",
        DataType::Uint64 => "uint64_t",
        DataType::Float16 => "half",
        DataType::Float32 => "float",
        DataType::Float64 => "double",
        DataType::Bfloat16 | DataType::Float8e4m3 | DataType::Float8e5m2 => "__nv_bfloat16",
    }
}

/// The NCCL kernel launched for `op` (SendRecv for grouped Send/Recv) in NCCL `v`.
/// Families from `reference/kernel_names.txt`: `ncclKernel_*` up to 2.18, `ncclDevKernel_*` from
/// 2.19 with `(ncclDevKernelArgsStorage<4096ul>)` from 2.22.
pub fn nccl_kernel(v: Version, op: OpType, dtype: DataType, tree: bool) -> KernelNames {
    let algo = if tree { "TREE" } else { "RING" };
    if !v.at_least(19) {
        let short = match op {
            OpType::Send | OpType::Recv | OpType::SendRecv => {
                "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t".to_string()
            }
            OpType::AllGather | OpType::Broadcast => {
                format!("ncclKernel_{}_RING_LL_Sum_int8_t", op.name())
            }
            _ => format!("ncclKernel_{}_{algo}_LL_Sum_{}", op.name(), ty_old(dtype)),
        };
        let demangled = format!("{short}(ncclDevComm*, unsigned long, ncclWork*)");
        let mangled = format!("_Z{}{short}P11ncclDevCommmP8ncclWork", short.len());
        return KernelNames {
            short,
            demangled,
            mangled,
        };
    }
    let short = match op {
        OpType::Send | OpType::Recv | OpType::SendRecv => "ncclDevKernel_SendRecv".to_string(),
        OpType::AllGather | OpType::Broadcast => format!("ncclDevKernel_{}_RING_LL", op.name()),
        OpType::AllReduce => format!("ncclDevKernel_AllReduce_Sum_{}_{algo}_LL", ty_new(dtype)),
        _ => format!("ncclDevKernel_{}_Sum_{}_RING_LL", op.name(), ty_new(dtype)),
    };
    if v.at_least(22) {
        KernelNames {
            demangled: format!("{short}(ncclDevKernelArgsStorage<(unsigned long)4096>)"),
            mangled: format!(
                "_Z{}{short}24ncclDevKernelArgsStorageILm4096EE",
                short.len()
            ),
            short,
        }
    } else {
        KernelNames {
            demangled: format!("{short}(ncclDevComm *, unsigned long, ncclWork *)"),
            mangled: format!("_Z{}{short}P11ncclDevCommmP8ncclWork", short.len()),
            short,
        }
    }
}

/// The symmetric kernel NCCL 2.27+ picks for `op` of `bytes` (per rank) on a communicator with
/// symmetric (window-registered) buffers and no NVLS: the LL kernels for small messages, the
/// load/store ones above (`src/device/symmetric/` kernel ids, as `ncclSymKernelIdToString`
/// prints them in the tuning line). None for operations without a symmetric kernel, or a
/// reduction/datatype NCCL does not implement symmetrically (`ncclSymImplemented`: AllGather
/// any; AllReduce and ReduceScatter only sum over f32/f16/bf16/fp8).
pub fn sym_kernel_id(op: OpType, dtype: DataType, redop: u32, bytes: u64) -> Option<&'static str> {
    let small = bytes < 64 * 1024;
    let float = matches!(
        dtype,
        DataType::Float32
            | DataType::Float16
            | DataType::Bfloat16
            | DataType::Float8e4m3
            | DataType::Float8e5m2
    );
    let reducible = float && redop == 0;
    match op {
        OpType::AllGather => Some(if small {
            "AllGather_LL"
        } else {
            "AllGather_ST"
        }),
        OpType::AllReduce if reducible => Some(if small {
            "AllReduce_AGxLL_R"
        } else {
            "AllReduce_RSxLD_AGxST"
        }),
        OpType::ReduceScatter if reducible => Some(if small {
            "ReduceScatter_LL"
        } else {
            "ReduceScatter_LD"
        }),
        _ => None,
    }
}

/// Kernel names of symmetric kernel `id` (from [`sym_kernel_id`]): `ncclSymDevKernel_<id>` in
/// 2.27, `ncclSymkDevKernel_<id>` from 2.28, with `_sum_<type>` for the reducing ones
/// (`reference/kernel_names.txt`); the argument is `ncclSymDevArgs` (2.27) or
/// `ncclSymkDevWorkArgs4K` (2.28).
pub fn sym_kernel(v: Version, id: &str, dtype: DataType) -> KernelNames {
    let (family, args) = if v.at_least(28) {
        ("ncclSymkDevKernel_", "ncclSymkDevWorkArgs4K")
    } else {
        ("ncclSymDevKernel_", "ncclSymDevArgs")
    };
    let short = if id.starts_with("AllGather") {
        format!("{family}{id}")
    } else {
        format!("{family}{id}_sum_{}", ty_new(dtype))
    };
    KernelNames {
        demangled: format!("{short}({args})"),
        mangled: format!("_Z{}{short}{}{args}", short.len(), args.len()),
        short,
    }
}

/// Non-NCCL compute kernels interleaved between communication (must be filtered out).
pub const COMPUTE_KERNELS: [(&str, &str); 4] = [
    ("ampere_sgemm_128x64_tn", "ampere_sgemm_128x64_tn"),
    (
        "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
        "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
    ),
    (
        "vectorized_layer_norm_kernel",
        "void at::native::<unnamed>::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, const T1 *, const T1 *, const T1 *, T2 *, T2 *, T1 *)",
    ),
    (
        "flash_fwd_kernel",
        "void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4, false, false, cutlass::bfloat16_t>, false, true, false, false, true, true, false, false>(Flash_fwd_params)",
    ),
];

/// One row of CUPTI_ACTIVITY_KIND_KERNEL (times already in the node's GPU clock).
#[derive(Debug, Clone)]
pub struct KernelRow {
    pub pid: u32,
    pub tid: u32,
    pub device: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
    pub start_ns: i64,
    pub end_ns: i64,
    pub launch_ns: i64,
    pub short: String,
    pub demangled: String,
    pub mangled: String,
    pub grid_x: u32,
    pub block_x: u32,
    pub registers: u32,
    pub static_shared: u32,
    pub dynamic_shared: u32,
}

/// One NVTX push/pop range.
#[derive(Debug, Clone)]
pub struct NvtxRow {
    pub pid: u32,
    pub tid: u32,
    pub start_ns: i64,
    pub end_ns: i64,
    pub text: String,
}

/// Everything one node's `report_<host>.sqlite` holds.
#[derive(Debug, Clone)]
pub struct NodeReport {
    pub host: String,
    pub schema: Schema,
    /// (pid, device, process name)
    pub processes: Vec<(u32, u32, String)>,
    pub kernels: Vec<KernelRow>,
    pub nvtx: Vec<NvtxRow>,
    /// NCCL's own ranges (empty unless [`crate::RunConfig::nccl_nvtx`]).
    pub nccl_nvtx: Vec<crate::ncclnvtx::NcclNvtxRow>,
    /// UTC epoch ns at the start of the capture.
    pub session_start_utc_ns: i64,
    pub duration_ns: i64,
    /// GPU table, CUDA device map, clock base and zone when a realism knob is set.
    pub extras: crate::realism::ExportExtras,
}

impl NodeReport {
    /// The report of one process alone (its kernels and NVTX ranges), as a per-process
    /// `nsys profile` capture would hold it.
    pub fn of_process(&self, pid: u32) -> NodeReport {
        NodeReport {
            host: self.host.clone(),
            schema: self.schema,
            processes: self
                .processes
                .iter()
                .filter(|p| p.0 == pid)
                .cloned()
                .collect(),
            kernels: self
                .kernels
                .iter()
                .filter(|k| k.pid == pid)
                .cloned()
                .collect(),
            nvtx: self.nvtx.iter().filter(|r| r.pid == pid).cloned().collect(),
            nccl_nvtx: self
                .nccl_nvtx
                .iter()
                .filter(|r| r.pid == pid)
                .cloned()
                .collect(),
            session_start_utc_ns: self.session_start_utc_ns,
            duration_ns: self.duration_ns,
            extras: crate::realism::ExportExtras {
                cuda_devices: self
                    .extras
                    .cuda_devices
                    .iter()
                    .filter(|d| d.0 == pid)
                    .copied()
                    .collect(),
                ..self.extras.clone()
            },
        }
    }

    /// This report as a capture that started `shift_ns` later would hold it: times relative
    /// to that start (not in a system-clock base, whose origin is the node's boot), the start
    /// itself later. A per-rank `nsys profile` starts its own session.
    pub fn started_later(mut self, shift_ns: i64) -> NodeReport {
        self.session_start_utc_ns += shift_ns;
        self.duration_ns -= shift_ns;
        match self.extras.system_clock_ns.as_mut() {
            Some(base) => *base += shift_ns,
            None => {
                for k in &mut self.kernels {
                    k.start_ns -= shift_ns;
                    k.end_ns -= shift_ns;
                    k.launch_ns -= shift_ns;
                }
                for r in &mut self.nvtx {
                    r.start_ns -= shift_ns;
                    r.end_ns -= shift_ns;
                }
                for r in &mut self.nccl_nvtx {
                    r.start_ns -= shift_ns;
                    r.end_ns -= shift_ns;
                }
            }
        }
        self
    }
}

/// nsys' serialized globalPid: `pid = (globalPid >> 24) & 0xFFFFFF`.
pub fn global_pid(pid: u32) -> i64 {
    (1i64 << 56) | ((pid as i64) << 24)
}

/// nsys' serialized globalTid.
pub fn global_tid(pid: u32, tid: u32) -> i64 {
    global_pid(pid) | (tid as i64 & 0xFF_FFFF)
}
