//! Runs the stages: aligned → enriched. [`analyse`] takes a loaded [`load::Session`], aligns
//! each process's log operations with its kernels (`align`), groups the logical communicators,
//! assigns global ranks and labels each communicator's parallelism (`enrich`), summarises each
//! process and fits every rank's clock. The result, [`Analysis`], is what every analysis
//! (`analyses`) and view (`timeline`, `export`) reads. [`analyse_incremental`] re-runs only what
//! files added to the session changed.

mod alignment;
mod analysis;
mod clocks;
mod incremental;
mod kernel_tally;
mod kineto;
mod process_groups;
mod processes;

pub use alignment::{align_session, kernel_op, Alignments, KernelSpan, ProcessMatch};
pub use analysis::{
    analyse, analyse_incremental, analyse_incremental_with, Analysis, TrackInputs, UserSizes,
};
pub use clocks::synchronise_clocks;
pub use enrich::{ClockSync, Hints, Sizes};
pub use incremental::Rerun;
pub use kernel_tally::KernelTally;
pub use kineto::ProfilerStep;
pub use process_groups::{agrees, described_parallelism, process_groups, ProcessGroup};
pub use processes::{log_process, process_summaries, CommView, ProcessSummary};
