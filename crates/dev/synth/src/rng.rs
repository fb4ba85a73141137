//! The generator's PRNG: the workspace's one SplitMix64 ([`::model::rng`]), so that a seed gives
//! identical bytes on every platform and build.

pub use ::model::rng::SplitMix64 as Rng;
