//! Enrichment: turns per-process NCCL log records (and kernel times aligned to them) into
//! cross-rank facts — logical communicators and global ranks, matched collective instances,
//! clock offsets, bandwidths against the topology's limits and the parallelism of each
//! communicator (thesis §4.2.3–§4.2.5, see `THESIS-NOTES.md` §3).
//!
//! Every module takes plain data and returns plain data: no I/O, no threads, no clocks, so the
//! crate runs unchanged in the browser (wasm32).

pub mod bandwidth;
pub mod clock;
pub mod communicators;
pub mod instances;
pub mod parallelism;
pub mod topology;

#[cfg(test)]
mod test_support;

pub use bandwidth::{
    bus_factor, for_log_op, measure, op_bytes, theory_factors, Bandwidth, Theoretical,
};
pub use clock::{median, synchronise, ClockSync, RankClock};
pub use communicators::{group, Communicators, GroupedBy, LogicalComm};
pub use instances::{
    for_each_instance, match_instances, match_instances_by, skew, timed, Instance, OpKey, Skew,
};
pub use parallelism::{
    infer, infer_from_signatures, CommParallelism, Hints, LayoutInference, Parallelism, Signature,
    Sizes,
};
pub use topology::{comm_gpus, Bottleneck, TopoIndex};
