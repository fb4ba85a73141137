//! Step anatomy: where each training step's time goes, by stage and by rank (issue 32).
//!
//! - [`matrix`]: the stage matrix (per step, rank and stage the duration), built from rows in the
//!   order each rank ran its stages, gradient accumulation expanded per microbatch.
//! - [`frontier`]: StageFrontier over the matrix: frontier, advances, leaders, slack, shares,
//!   routing by θ, the bounds M and A, and the labels where the data cannot decide.
//! - [`mapping`], [`nvtx`]: steps and stages from NVTX ranges through an editable name mapping.
//! - [`collectives`]: steps from the period of the collectives when no NVTX range marks them.
//! - [`breakdown`]: per step and rank, compute, exposed communication per parallelism, idle and
//!   bubble from the kernels, beside ConfigTuner's closed forms.
//! - [`baselines`]: per-operation and per-kernel baselines (minimum over repeats), outliers.
//! - [`pipeline`]: pipeline-stage imbalance and the 1F1B runtime against the measured step.
//! - [`session`]: all of it for a loaded, analysed session ([`analyse`]), the only module that
//!   reads `load`'s and `pipeline`'s types.
//! - [`types`], [`report`]: the plain result types (the contract's `steps` and its additions).

pub mod baselines;
pub mod breakdown;
pub mod collectives;
pub mod frontier;
pub mod mapping;
pub mod matrix;
pub mod nvtx;
pub mod pipeline;
pub mod report;
pub mod session;
pub mod types;

pub use frontier::{frontier, Frontier};
pub use mapping::{StageMapping, StagePattern};
pub use matrix::{MatrixBuilder, StageMatrix, StepFlaw};
pub use report::{Source, StepsReport};
pub use session::{analyse, StepOptions};
pub use types::{Ambiguity, OrderedShares, RankCredit, RankShare, Settings, StepRow, Window};
