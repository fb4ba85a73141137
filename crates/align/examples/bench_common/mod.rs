//! Inputs shared by the alignment benchmarks (native and wasm).

use align::symbols::{op_symbol, Symbol};
use model::{DataType, OpType};

use model::rng::SplitMix64 as Rng;

/// `n` operations, then the kernel side and the log side each lose 10 % independently.
pub fn sequences(n: usize, seed: u64) -> (Vec<Symbol>, Vec<Symbol>) {
    let mut rng = Rng::from_state(seed);
    let (mut k, mut l) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let op = match rng.below(100) {
            0..=59 => OpType::AllReduce,
            60..=74 => OpType::AllGather,
            75..=84 => OpType::ReduceScatter,
            85..=89 => OpType::Broadcast,
            _ => OpType::SendRecv,
        };
        let mut s = op_symbol(op);
        if matches!(op, OpType::AllReduce | OpType::ReduceScatter) {
            s.datatype = Some(
                [DataType::Bfloat16, DataType::Float32, DataType::Uint32][rng.below(3) as usize],
            );
        }
        if rng.below(10) != 0 {
            k.push(s.clone());
        }
        if rng.below(10) != 0 {
            l.push(s);
        }
    }
    (k, l)
}
