//! Theoretical communication of a model and parallel layout, with no trace at all.
//!
//! Map of the crate:
//! - [`config`]: [`TheoryConfig`], parsed from the contract's TOML (`ncclscope theory --config FILE`),
//!   every key optional with the thesis' dense model as default; presets [`TheoryConfig::thesis_dense`]
//!   and [`TheoryConfig::thesis_moe`].
//! - [`volume`]: the per-rank byte formulas (thesis §2.4 and §5.3.5, extended with sequence and context
//!   parallelism, ZeRO-1, virtual pipeline stages and the AllGather MoE dispatcher). Each function states
//!   its formula and where it comes from.
//! - [`mod@estimate`]: applies the formulas to a whole [`TheoryConfig`] and returns one [`TheoryEntry`] per
//!   parallelism and rank role, covering all iterations.
//! - [`time`]: the LBNL two-tier (NVLink domain / network) alpha-beta time of one collective, with
//!   hardware presets.
//! - [`output`]: the contract's JSON (`{"theory": [...]}`); the only place the field names appear.
//!
//! Units: bytes are plain bytes. The thesis' "MB" and "GB" are decimal (10⁶ and 10⁹ bytes): its
//! 151.2 MB is 151 173 363 bytes (144.2 MiB would be the binary reading), see the tests in [`volume`].
//! Times in [`time`] are `f64` seconds, in functions and fields ending `_s`.
//!
//! The crate does no I/O: the CLI and the app read the config file and pass its text.

pub mod config;
pub mod estimate;
pub mod form;
pub mod output;
pub mod time;
pub mod volume;

pub use config::{Dispatcher, ModelSpec, MoeSpec, ParallelSpec, TheoryConfig};
pub use estimate::{estimate, Parallelism, RankRole, TheoryEntry};
pub use output::{entry_json, theory_json};
pub use time::{collective_time_s, p2p_time_s, Hardware};
