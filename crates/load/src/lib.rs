//! Loading: files in, records kept. Each input is recognised by its content ([`sniff`]), read
//! by its ingester (NCCL logs streamed through [`LogLoader`], Nsight exports through an open
//! [`sqlsource::SqlSource`], PyTorch profiler traces through [`TraceLoader`]) and added to the [`Session`], which returns a [`FileReport`] for the
//! file list and keeps the records for the later stages. No I/O happens here: the caller brings
//! bytes or an open database, so the same code runs natively and in the page.
//!
//! The analyses refer to the session's records by row ([`ProcessOps`], [`ProcessKernels`]), never
//! by copy: a session only grows, and its loaded files never change.

mod digest;
mod kineto;
mod process_rows;
mod report;
mod session;
mod sniff;
mod stage_files;

pub use digest::records_digest;
pub use ingest_nsys::ReadOptions;
pub use kineto::{LoadedTrace, SessionTrace, TraceLoader};
pub use process_rows::{ProcessKernels, ProcessOps};
pub use report::FileReport;
pub use session::{read_export, LoadedExport, LoadedLog, LogLoader, Session};
pub use sniff::{sniff, InputKind, SNIFF_BYTES};
pub use stage_files::{read_compute_kernels, ComputeRead, LoadedStageFile};
