//! Exports of the enriched NCCL operations: a Chrome Trace Event Format document (loads in
//! Perfetto and `chrome://tracing`) and a CSV table with one row per NCCL kernel.
//!
//! Why a crate of its own: both exports show the same enriched kernel records (thesis §4.2.6,
//! figure 4.2), so they share one builder ([`enriched::kernel_records`]) and one list of field
//! names ([`fields`]), the contract's spelling, written nowhere else in the workspace. No I/O:
//! every function returns a [`serde_json::Value`] or a `String`; the caller writes files, so the
//! same code runs natively and in the page (wasm32).

pub mod chrome_trace;
pub mod csv;
pub mod enriched;
pub mod fields;
pub mod validate;

pub use chrome_trace::{chrome_trace, trace_of};
pub use csv::{csv_field, csv_of, enriched_csv};
pub use enriched::{kernel_record, kernel_records, KernelRecord, Records};
pub use validate::validate_trace;
