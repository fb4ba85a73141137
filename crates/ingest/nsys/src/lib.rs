//! Nsight Systems SQLite ingestion: NCCL kernels, processes, GPUs, NVTX ranges and NCCL's typed
//! NVTX payloads from an `nsys export --type sqlite` file.
//!
//! The entry point is [`read_export`], which takes any [`sqlsource::SqlSource`] (rusqlite natively,
//! sql.js in the page) and returns a [`model::nsys::NsysExport`]. The crate does no I/O and builds
//! for `wasm32-unknown-unknown`.
//!
//! Map: `probe` (which tables/columns exist, export version) → `kernels` (NCCL kernels, counts of
//! the others) · `kernel_name` (what a kernel name says) · `processes` (processes, hosts, GPUs,
//! session start) · `nvtx` (ranges, iterations, NCCL API ranges) · `payload` (payload schemas and
//! binary decoding) → `export` (the whole file, with diagnostics).

mod export;
mod kernel_name;
mod kernels;
mod nvtx;
mod payload;
mod probe;
mod processes;

pub use export::read_export;
pub use kernel_name::{decode_kernel_name, KernelNameCache};
pub use kernels::count_nccl_kernels;
pub use nvtx::{is_iteration, NCCL_DOMAIN};
pub use payload::decode_payload;
pub use probe::{export_meta, ExportMeta, Schema};

/// What the reader should look for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOptions {
    /// NVTX range texts that mark an iteration (see [`is_iteration`] for the matching rule).
    pub iteration_patterns: Vec<String>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            iteration_patterns: ["iteration", "iter", "step", "train_step"]
                .map(String::from)
                .to_vec(),
        }
    }
}
