//! NCCL's own NVTX ranges (domain "NCCL") with typed binary payloads, as NCCL ≥ 2.19 emits them
//! and Nsight Systems ≥ schema 3.25 exports them.
//!
//! Why: a real export carries, for every NCCL API call, a push/pop range in NCCL's NVTX domain
//! whose payload says which communicator (its `commHash`, the `commId` of the log's Init lines),
//! how many bytes and which reduction; the analyzer can align on those instead of kernel names.
//! Layouts are the ones of `GindaChen-nsys-ai_mfu_2gpu_before.sqlite` (`NVTX_PAYLOAD_SCHEMAS`,
//! `NVTX_PAYLOAD_SCHEMA_ENTRIES`): static schemas with ids `0x1000000 + n` (NCCL's
//! `NVTX_SID_*`), entry types from `nvToolsExtPayload.h` (UINT64 18, INT 5, SIZE 22, and the
//! reduction-operation enum schema `0x1000010`). That file was exported without blobs
//! (`binaryData` NULL); we write them: the payload bytes little-endian at the entries' offsets.
//! Nothing in a row names its schema; the event's name (`textId` → `ncclAllReduce`) does, as
//! [`schema_of`] maps it.

use ::model::OpType;

/// NCCL's NVTX domain id in the export (the real files use 1).
pub const DOMAIN_ID: i64 = 1;
/// `NVTX_PAYLOAD_ENTRY_TYPE_SCHEMA_ID_STATIC_START`.
const STATIC: u64 = 1 << 24;
/// Entry types (`nvToolsExtPayload.h`).
pub const TYPE_INT: u64 = 5;
pub const TYPE_UINT64: u64 = 18;
pub const TYPE_SIZE: u64 = 22;
/// NCCL's enum schema of `ncclRedOp_t` (4 bytes).
pub const TYPE_REDOP: u64 = STATIC + 16;

/// One entry of a payload schema: (type, name, offset).
pub type Entry = (u64, &'static str, usize);

/// A static payload schema.
#[derive(Debug, Clone, Copy)]
pub struct PayloadSchema {
    pub id: u64,
    /// The NCCL API function whose range carries it.
    pub function: &'static str,
    pub entries: &'static [Entry],
    pub size: usize,
}

const COMM: Entry = (TYPE_UINT64, "NCCL communicator ID", 0);
const SIZE: Entry = (TYPE_SIZE, "Message size [bytes]", 8);

/// The schemas NCCL registers for the calls we generate (ids as `NVTX_SID_*`).
pub const SCHEMAS: [PayloadSchema; 8] = [
    PayloadSchema {
        id: STATIC + 11,
        function: "ncclCommInitRankConfig",
        entries: &[
            COMM,
            (TYPE_INT, "No. of ranks", 8),
            (TYPE_INT, "Rank", 12),
            (TYPE_INT, "CUDA device", 16),
        ],
        size: 24,
    },
    PayloadSchema {
        id: STATIC + 4,
        function: "ncclAllGather",
        entries: &[COMM, SIZE],
        size: 16,
    },
    PayloadSchema {
        id: STATIC + 5,
        function: "ncclAllReduce",
        entries: &[COMM, SIZE, (TYPE_REDOP, "Reduction operation", 16)],
        size: 24,
    },
    PayloadSchema {
        id: STATIC + 6,
        function: "ncclBroadcast",
        entries: &[COMM, SIZE, (TYPE_INT, "Root", 16)],
        size: 24,
    },
    PayloadSchema {
        id: STATIC + 7,
        function: "ncclReduceScatter",
        entries: &[COMM, SIZE, (TYPE_REDOP, "Reduction operation", 16)],
        size: 24,
    },
    PayloadSchema {
        id: STATIC + 8,
        function: "ncclReduce",
        entries: &[
            COMM,
            SIZE,
            (TYPE_INT, "Root", 16),
            (TYPE_REDOP, "Reduction operation", 20),
        ],
        size: 24,
    },
    PayloadSchema {
        id: STATIC + 9,
        function: "ncclSend",
        entries: &[COMM, SIZE, (TYPE_INT, "Peer rank", 16)],
        size: 24,
    },
    PayloadSchema {
        id: STATIC + 10,
        function: "ncclRecv",
        entries: &[COMM, SIZE, (TYPE_INT, "Peer rank", 16)],
        size: 24,
    },
];

/// The schema of the range named `function` (None for ranges without payload, e.g.
/// `ncclGroupStart`).
pub fn schema_of(function: &str) -> Option<&'static PayloadSchema> {
    SCHEMAS.iter().find(|s| s.function == function)
}

/// The API function NCCL names the range of `op` after.
pub fn function_of(op: OpType) -> &'static str {
    match op {
        OpType::AllReduce => "ncclAllReduce",
        OpType::AllGather => "ncclAllGather",
        OpType::ReduceScatter => "ncclReduceScatter",
        OpType::Broadcast => "ncclBroadcast",
        OpType::Reduce => "ncclReduce",
        OpType::Send => "ncclSend",
        OpType::Recv => "ncclRecv",
        _ => "ncclGroupEnd",
    }
}

/// Field values of one payload, in schema entry order after the communicator:
/// message size, then root / peer / rank fields, then the reduction.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fields {
    pub comm_hash: u64,
    pub bytes: u64,
    /// Root, peer rank, or (CommInit) number of ranks.
    pub int_a: i32,
    /// (CommInit) rank.
    pub int_b: i32,
    /// (CommInit) CUDA device.
    pub int_c: i32,
    pub redop: u32,
}

/// Lays `f` out as `schema` says (little-endian, zero padding).
pub fn encode(schema: &PayloadSchema, f: &Fields) -> Vec<u8> {
    let mut b = vec![0u8; schema.size];
    let mut ints = [f.int_a, f.int_b, f.int_c].into_iter();
    for &(ty, name, off) in schema.entries {
        match ty {
            TYPE_UINT64 => b[off..off + 8].copy_from_slice(&f.comm_hash.to_le_bytes()),
            TYPE_SIZE => b[off..off + 8].copy_from_slice(&f.bytes.to_le_bytes()),
            TYPE_REDOP => b[off..off + 4].copy_from_slice(&f.redop.to_le_bytes()),
            _ => {
                // Message-size schemas have one int (root/peer) in `int_a`; CommInit has three.
                let v = if name == "Root" || name == "Peer rank" {
                    f.int_a
                } else {
                    ints.next().unwrap_or(0)
                };
                b[off..off + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
    }
    b
}

/// One range of NCCL's domain (times already in the node's clock).
#[derive(Debug, Clone)]
pub struct NcclNvtxRow {
    pub pid: u32,
    pub tid: u32,
    pub start_ns: i64,
    pub end_ns: i64,
    pub function: &'static str,
    /// Encoded payload (None for group start/end).
    pub payload: Option<Vec<u8>>,
}
