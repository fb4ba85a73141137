//! The thesis' table 4.5 experiment as a library: for each alignment scenario (no drops, kernels
//! drop 20 %, log lines drop 20 %, both), with and without log timestamps, over several seeds,
//! generate the run in memory ([`synth`]), read it back through the real parsers, align each
//! rank with the thesis' method, the sliding-window baseline and ours, and score the pairs
//! against the generator's truth. The `ncclscope align-scenarios` command prints the result.
//!
//! Why a crate of its own: `align` must not depend on the generator, and the sweep is shared by
//! the command and the test that holds the accuracy targets.

pub mod inputs;
pub mod presets;
pub mod sweep;
pub mod table;

pub use inputs::{rank_inputs, RankInput};
pub use presets::{score_preset, PresetScore};
pub use sweep::{sweep, Method, MethodStats, Scenario, ScenarioResult, SCENARIOS};
pub use table::markdown;
