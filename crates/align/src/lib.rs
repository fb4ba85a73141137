//! Log-operation ↔ kernel alignment, per process.
//!
//! The NCCL debug log says *what* each operation was (op, size, datatype, communicator); the
//! Nsight Systems export says *when* each kernel ran. Nothing links the two (§4.1 of the thesis),
//! so we align the two sequences:
//!
//! * [`nw`] — a generic global aligner (full reference and a fast banded one);
//! * [`symbols`] — the only place that knows NCCL op names and weights;
//! * [`scoring`] — the thesis scoring and a richer one, as [`nw::Score`] implementations;
//! * [`per_process`] — [`align_process`]: duplicates, Send/Recv fusion, streams, timestamps;
//! * [`matches`] — each kernel's log lines and confidence, kept as flat columns;
//! * [`kept`] — what a later call reuses of a process's first pass and hints, compactly;
//! * `twins` — after the alignment, adjacent look-alike lines settled by the clock;
//! * [`all`] — [`align_all`]: every process, in parallel natively; [`align_all_reusing`] keeps
//!   what an earlier call computed for processes whose inputs did not change;
//! * [`runner`] — where the per-process jobs run: threads natively, the page's workers;
//! * [`consensus`] — which call a collective kernel runs, from the other ranks' kernels;
//! * [`nvtx_join`] — the exact kernel → NCCL call join through NCCL's own NVTX ranges;
//! * [`warmup`] — a made-up process the page's workers align first (V8 optimises by use);
//! * [`baseline`] — the thesis' sliding-window baseline;
//! * [`metrics`] — precision/recall/F1 against ground truth.

pub mod all;
pub mod baseline;
pub mod consensus;
pub mod kept;
pub mod matches;
pub mod metrics;
pub mod nvtx_join;
pub mod nw;
#[cfg(test)]
mod nw_ref;
pub mod per_process;
pub mod runner;
pub mod scoring;
pub mod symbols;
mod twins;
pub mod warmup;

pub use all::{align_all, align_all_reusing, align_all_reusing_with, Aligned, Redone, Reuse};
pub use consensus::ProcessInput;
pub use matches::{KernelMatch, KernelMatches};
pub use per_process::{
    align_process, align_process_hinted, AlignConfig, AnomalyReport, ProcessAlignment,
};
pub use runner::{Job, JobsFuture, Runner, Threads};
pub use scoring::Scoring;
