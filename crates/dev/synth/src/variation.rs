//! One known difference between two otherwise equal runs: what the run comparison (issue 35,
//! `analyses::diff`) is tested on. Each knob changes one thing a real regression changes, and
//! nothing else, so a test knows which change the comparison must put first:
//!
//! - [`Variation::op_bandwidth`]: one operation type moves its bytes at a fraction of the
//!   bandwidth (a slower AllReduce after an upgrade);
//! - [`Variation::rank_link`]: one rank's links carry a fraction of their bandwidth (a degraded
//!   NIC or cable NCCL does not see: the topology it prints is unchanged): every collective on a
//!   communicator that rank belongs to, and every Send/Recv to or from it, slows;
//! - [`Variation::algorithm`]: collectives of one type run another algorithm (the tuning line and,
//!   for AllReduce, the kernel's name say so), at a factor of the default's transfer time where
//!   it differs from the one the generator would have chosen ([`default_algorithm`]).
//!
//! The layout, the model and the NCCL version are [`crate::RunConfig`]'s own fields already.
//! With no knob set (the default) a run is byte for byte what it was before this module.

use crate::comms::Comms;
use crate::schedule::Call;
use ::model::{Algo, OpType};
use serde::{Deserialize, Serialize};

/// The knobs (all off by default).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Variation {
    /// (operation name as NCCL prints it, e.g. `AllReduce`; bandwidth factor, e.g. 0.5).
    #[serde(default)]
    pub op_bandwidth: Option<(String, f64)>,
    /// (global rank, bandwidth factor of its links).
    #[serde(default)]
    pub rank_link: Option<(u32, f64)>,
    #[serde(default)]
    pub algorithm: Option<ForcedAlgorithm>,
}

/// Collectives of `op` run `algo` (NCCL's name: `TREE`, `RING`, ...), their transfers taking
/// `time_factor` of the default algorithm's time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForcedAlgorithm {
    pub op: String,
    pub algo: String,
    pub time_factor: f64,
}

/// What the simulation reads of a [`Variation`], resolved once (names to operations): small and
/// `Copy`, so it rides in [`crate::timing::Hardware`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Knobs {
    slow_op: Option<(OpType, f64)>,
    slow_rank: Option<(u32, f64)>,
    algorithm: Option<(OpType, Algo, f64)>,
}

impl Variation {
    /// The knobs the simulation and the log writer read. An operation or algorithm name this
    /// build does not know turns its knob off (a generator input, not a user's file).
    pub fn knobs(&self) -> Knobs {
        Knobs {
            slow_op: self
                .op_bandwidth
                .as_ref()
                .and_then(|(name, f)| Some((OpType::from_name(name)?, *f))),
            slow_rank: self.rank_link,
            algorithm: self.algorithm.as_ref().and_then(|a| {
                Some((
                    OpType::from_name(&a.op)?,
                    Algo::from_name(&a.algo)?,
                    a.time_factor,
                ))
            }),
        }
    }
}

impl Knobs {
    /// The factor on `call`'s transfer time on `rank` (1 with no knob set), the call's
    /// communicator all on one node or not (`intra`). A bandwidth factor `f` makes the
    /// transfer take `1/f` of its time.
    pub fn time_factor(&self, call: &Call, comms: &Comms, rank: u32, intra: bool) -> f64 {
        if *self == Knobs::default() {
            return 1.0;
        }
        let mut factor = 1.0;
        if let Some((op, f)) = self.slow_op {
            if call.ops.iter().any(|o| o.op == op) && f > 0.0 {
                factor /= f;
            }
        }
        if let Some((slow, f)) = self.slow_rank {
            let involved = if call.is_p2p() {
                rank == slow || call.ops.iter().any(|o| o.peer == Some(slow))
            } else {
                comms.list[call.comm()].global_ranks.contains(&slow)
            };
            if involved && f > 0.0 {
                factor /= f;
            }
        }
        if let Some((op, algo, f)) = self.algorithm {
            let first = &call.ops[0];
            if !call.is_p2p() && first.op == op {
                let size = comms.list[call.comm()].size();
                let bytes: u64 = call
                    .ops
                    .iter()
                    .map(|o| o.count * o.dtype.size_bytes())
                    .sum();
                if default_algorithm(op, intra, collective_bytes(op, bytes, size)) != algo {
                    factor *= f;
                }
            }
        }
        factor
    }

    /// The algorithm a collective of `op` runs when one is forced.
    pub fn algorithm(&self, op: OpType) -> Option<Algo> {
        self.algorithm
            .and_then(|(forced, algo, _)| (forced == op).then_some(algo))
    }
}

/// The algorithm the generator's NCCL picks for a collective of `nbytes` (the tuning line's
/// byte count, [`collective_bytes`]): Tree for AllReduce above 1 MiB across nodes, Ring
/// otherwise.
pub fn default_algorithm(op: OpType, intra: bool, nbytes: u64) -> Algo {
    if op == OpType::AllReduce && !intra && nbytes > 1 << 20 {
        Algo::Tree
    } else {
        Algo::Ring
    }
}

/// A collective's bytes as its tuning line counts them: AllGather and ReduceScatter the whole
/// buffer (a rank's `bytes` × the communicator's `size`), the others `bytes`.
pub fn collective_bytes(op: OpType, bytes: u64, size: u32) -> u64 {
    match op {
        OpType::AllGather | OpType::ReduceScatter => bytes * u64::from(size),
        _ => bytes,
    }
}
