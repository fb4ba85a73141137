//! Step anatomy: where each training step's time goes, by stage and by rank (issue 32).
//!
//! - [`matrix`]: the stage matrix (per step, rank and stage the duration), built from rows in the
//!   order each rank ran its stages, gradient accumulation expanded per microbatch.
//! - [`frontier`]: StageFrontier over the matrix: frontier, advances, leaders, slack, shares,
//!   routing by θ, the bounds M and A, and the labels where the data cannot decide.
//! - [`types`]: the plain result types (the contract's `steps` shape and its additions).

pub mod frontier;
pub mod matrix;
pub mod types;

pub use frontier::{frontier, Frontier};
pub use matrix::{MatrixBuilder, StageMatrix, StepFlaw};
pub use types::{Ambiguity, OrderedShares, RankCredit, RankShare, Settings, StepRow, Window};
