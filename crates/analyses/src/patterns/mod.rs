//! Communication patterns (issue 34): where traffic flows, whether it repeats as it should, and
//! how fast each kind of link carried it.
//!
//! - [`comm_matrix`]: the rank-to-rank matrix, observed — every logged operation expanded into
//!   the transfers of the algorithm that ran on the routes NCCL printed ([`matrix`]);
//! - [`predicted_matrix`]: the matrix the layout implies, with the theory's bytes when a model is
//!   given, and how the observed one departs from it ([`predicted`]);
//! - [`periodicity()`]: per communicator, its On-Off communication blocks per step, their count
//!   and duration consistency, the period, and the steps and ranks that break the pattern
//!   ([`mod@periodicity`]);
//! - [`perf_model`]: the run's own α-β model per link class and operation, its saturation size,
//!   and every operation's time beside the fitted and the LBNL two-tier prediction
//!   ([`model`]).
//!
//! Everything returned is plain data (serde) the page draws as it is; what was assumed where the
//! inputs did not say is in each result's `notes`. docs/design/patterns.md explains how to read
//! them. [`Prepared`] gathers what they share (the run's communicators and routes, every logged
//! operation summed per call site) once; [`patterns`] runs them all.

pub mod facts;
pub mod fit;
pub mod links;
pub mod matrix;
pub mod model;
pub mod notes;
pub mod periodicity;
pub mod predicted;
pub mod totals;

pub use facts::RunFacts;
pub use links::LinkClass;
pub use matrix::{CommMatrix, MatrixEntry, NodeEntry};
pub use model::{for_each_prediction, OpPrediction, PerfModel};
pub use notes::Note;
pub use periodicity::{Periodicity, StepSource};
pub use predicted::{predicted_matrix, PredictedMatrix};
pub use totals::Totals;

use load::Session;
use pipeline::Analysis;
use serde::{Deserialize, Serialize};
use theory::{Hardware, TheoryConfig};

/// What the pattern analyses share, gathered once from an analysed session.
pub struct Prepared {
    pub facts: RunFacts,
    /// Every logged operation summed per call site and tuning, with its kernels' time.
    pub totals: Totals,
    /// What gathering them assumed (unranked processes, unknown datatypes, zero-duration
    /// kernels).
    pub notes: notes::Notes,
}

impl Prepared {
    pub fn of(session: &Session, analysis: &Analysis) -> Prepared {
        let facts = RunFacts::of(session, analysis);
        let mut notes = notes::Notes::default();
        let mut totals = Totals::of(session, analysis, &mut notes);
        totals.attribute_time(analysis, &mut notes);
        Prepared {
            facts,
            totals,
            notes,
        }
    }
}

/// The observed rank-to-rank matrix.
pub fn comm_matrix(prepared: &Prepared) -> CommMatrix {
    let mut notes = prepared.notes.clone();
    let mut m = matrix::build(&prepared.facts, &prepared.totals, &mut notes);
    m.notes = notes.into_vec();
    m
}

/// The run's own performance model, LBNL's predictions on `hw`.
pub fn perf_model(analysis: &Analysis, prepared: &Prepared, hw: &Hardware) -> PerfModel {
    model::perf_model(analysis, &prepared.facts, &prepared.totals, hw)
}

/// Every communicator's On-Off pattern (steps from NVTX when `prefer` is
/// [`StepSource::Nvtx`] and every process has them, else from the blocks' own period).
pub fn periodicity(
    session: &Session,
    analysis: &Analysis,
    prepared: &Prepared,
    prefer: StepSource,
) -> Periodicity {
    periodicity::periodicity(session, analysis, &prepared.facts, &prepared.totals, prefer)
}

/// Every pattern analysis at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Patterns {
    pub matrix: CommMatrix,
    pub predicted: PredictedMatrix,
    pub periodicity: Periodicity,
    pub model: PerfModel,
}

/// What [`patterns`] needs beyond the session.
pub struct Options<'a> {
    /// LBNL's hardware (the topology dump's links, or a preset).
    pub hardware: &'a Hardware,
    /// The model whose theoretical bytes the predicted matrix carries.
    pub theory: Option<&'a TheoryConfig>,
    pub steps: StepSource,
}

/// Runs every pattern analysis of an analysed session.
pub fn patterns(session: &Session, analysis: &Analysis, options: &Options) -> Patterns {
    let prepared = Prepared::of(session, analysis);
    let matrix = comm_matrix(&prepared);
    let predicted = predicted_matrix(&analysis.layout, options.theory, &matrix);
    Patterns {
        periodicity: periodicity(session, analysis, &prepared, options.steps),
        model: perf_model(analysis, &prepared, options.hardware),
        predicted,
        matrix,
    }
}
