//! Exports of the enriched NCCL operations: a Chrome Trace Event Format document (loads in
//! Perfetto and `chrome://tracing`) and a CSV table with one row per NCCL kernel.
//!
//! Why a crate of its own: both exports show the same enriched kernel records (thesis §4.2.6,
//! figure 4.2), so they share one builder ([`enriched::kernel_records`]) and one list of field
//! names ([`fields`]), the contract's spelling, written nowhere else in the workspace. No I/O:
//! functions return a [`serde_json::Value`] or a `String`, and the writers ([`CsvWriter`],
//! [`TraceWriter`]) write to any `std::io::Write` the caller brings (a file natively, memory in
//! the page), so the same code runs in both. The command writes them rank by rank
//! ([`records_by_rank`]): it never holds the whole run's records.

pub mod chrome_trace;
pub mod csv;
pub mod enriched;
pub mod fields;
pub mod validate;

pub use chrome_trace::{chrome_trace, trace_of, TraceWriter};
pub use csv::{csv_field, csv_of, enriched_csv, CsvWriter};
pub use enriched::{
    kernel_record, kernel_records, nvtx_ranges, rank_hosts, records_by_rank, KernelRecord,
    RankRecords, Records,
};
pub use validate::validate_trace;
