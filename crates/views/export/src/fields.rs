//! The names of the enriched kernel fields, spelled exactly as `CONTRACT.md` ("Chrome trace")
//! and the thesis' figure 4.2 spell them.
//!
//! Why one list: the Chrome trace's `args`, the CSV header and the validator must agree to the
//! character; a name written once cannot drift.

pub const CUDA_KERNEL: &str = "CUDA Kernel";
pub const CUDA_STREAM_ID: &str = "CUDA Stream ID";
pub const CUDA_CORRELATION_ID: &str = "CUDA Correlation ID";
pub const OP_COUNT_HEX: &str = "Op Count (Hex)";
pub const COMMUNICATOR_PTR: &str = "Communicator Ptr";
pub const ELEMENT_COUNT: &str = "Element Count";
pub const DATA_TYPE: &str = "Data Type";
pub const REDUCTION_OP: &str = "Reduction Op";
pub const MESSAGE_SIZE_BYTES: &str = "Message Size (Bytes)";
pub const ALGO_BW: &str = "Algo BW (GB/s)";
pub const BUS_BW: &str = "Bus BW (GB/s)";
pub const BUS_FACTOR: &str = "Bus Factor";
pub const NCCL_ALGORITHM: &str = "NCCL Algorithm";
pub const COMMUNICATOR_SIZE: &str = "Communicator Size";
pub const PARALLELISM_TYPE: &str = "Parallelism Type";
pub const GLOBAL_RANK: &str = "Global Rank";
pub const HOST: &str = "Host";
pub const PROCESS_ID: &str = "Process ID";
pub const MATCH: &str = "Match";

/// Every field the contract requires on every kernel event, in the contract's order.
pub const CONTRACT_FIELDS: [&str; 19] = [
    CUDA_KERNEL,
    CUDA_STREAM_ID,
    CUDA_CORRELATION_ID,
    OP_COUNT_HEX,
    COMMUNICATOR_PTR,
    ELEMENT_COUNT,
    DATA_TYPE,
    REDUCTION_OP,
    MESSAGE_SIZE_BYTES,
    ALGO_BW,
    BUS_BW,
    BUS_FACTOR,
    NCCL_ALGORITHM,
    COMMUNICATOR_SIZE,
    PARALLELISM_TYPE,
    GLOBAL_RANK,
    HOST,
    PROCESS_ID,
    MATCH,
];

pub const CONFIDENCE: &str = "Confidence";
pub const PROTOCOL: &str = "Protocol";
pub const CHANNELS: &str = "Channels";
pub const THEORETICAL_ALGO_BW: &str = "Theoretical Algo BW (GB/s)";
pub const THEORETICAL_BUS_BW: &str = "Theoretical Bus BW (GB/s)";
pub const EFFICIENCY: &str = "Efficiency";
pub const BUS_EFFICIENCY: &str = "Bus Efficiency";
pub const BOTTLENECK: &str = "Bottleneck";
pub const BOTTLENECK_BW: &str = "Bottleneck BW (GB/s)";
/// The kernel's times as its own node's clock read them (the event's `ts` and the CSV's
/// `Start (ns)` are synchronised to the lowest rank's clock).
pub const OWN_CLOCK_START_NS: &str = "Own Clock Start (ns)";
pub const OWN_CLOCK_END_NS: &str = "Own Clock End (ns)";
/// The logical communicator across processes (`0x<commId>` when init lines give it): with
/// `Op Count (Hex)` it names one collective instance on every rank, where each process's
/// `Communicator Ptr` differs.
pub const COMMUNICATOR_ID: &str = "Communicator ID";
/// The kernel a 2.27+ `[Symmetric]` tuning line named for the operation (it ran on symmetric
/// buffers); empty otherwise.
pub const SYMMETRIC_KERNEL: &str = "Symmetric Kernel";

/// Fields beyond the contract's (figure 4.2's theoretical side, the alignment's confidence, the
/// unsynchronised times, the symmetric kernel).
pub const EXTRA_FIELDS: [&str; 13] = [
    CONFIDENCE,
    PROTOCOL,
    CHANNELS,
    THEORETICAL_ALGO_BW,
    THEORETICAL_BUS_BW,
    EFFICIENCY,
    BUS_EFFICIENCY,
    BOTTLENECK,
    BOTTLENECK_BW,
    OWN_CLOCK_START_NS,
    OWN_CLOCK_END_NS,
    COMMUNICATOR_ID,
    SYMMETRIC_KERNEL,
];

/// Values of [`MATCH`].
pub const MATCHED: &str = "matched";
pub const UNMATCHED: &str = "unmatched";

/// CSV-only timing columns (the trace carries timing in `ts`/`dur`), synchronised across
/// ranks.
pub const NAME: &str = "Name";
pub const START_NS: &str = "Start (ns)";
pub const END_NS: &str = "End (ns)";
pub const DURATION_NS: &str = "Duration (ns)";

/// Every field of a kernel record, contract fields first.
pub fn all_fields() -> impl Iterator<Item = &'static str> {
    CONTRACT_FIELDS.into_iter().chain(EXTRA_FIELDS)
}
