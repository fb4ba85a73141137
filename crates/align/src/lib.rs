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
//! * [`baseline`] — the thesis' sliding-window baseline;
//! * [`metrics`] — precision/recall/F1 against ground truth.

pub mod baseline;
pub mod metrics;
pub mod nw;
pub mod per_process;
pub mod scoring;
pub mod symbols;

pub use per_process::{align_process, AlignConfig, AnomalyReport, KernelMatch, ProcessAlignment};
pub use scoring::Scoring;
