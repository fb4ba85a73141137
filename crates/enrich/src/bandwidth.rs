//! Bandwidth of one operation and its theoretical limit (thesis §4.2.5, figure 4.2).
//!
//! Why: a duration alone does not say whether a collective was slow; algorithm bandwidth
//! (bytes / time) and bus bandwidth (algorithm bandwidth × a per-algorithm factor that counts the
//! bytes each link really carries, as nccl-tests' PERFORMANCE.md defines it) compare across
//! message sizes and communicator sizes, and against the slowest link between the members.
//!
//! Units: GB/s = 10⁹ bytes per second (the project's convention, and nccl-tests').

use model::{Algo, OpType};

/// Bytes an operation moves for bandwidth purposes: `count × sizeof(datatype)`, except
/// AllGather and ReduceScatter, whose logged count is one rank's share: nccl-tests measure them
/// on the total buffer (`count × sizeof × n`), and the bus factor (n−1)/n assumes that.
pub fn op_bytes(op: OpType, count: u64, dtype_size: u64, n: u32) -> u64 {
    let b = count.saturating_mul(dtype_size);
    match op {
        OpType::AllGather | OpType::ReduceScatter => b.saturating_mul(n.max(1) as u64),
        _ => b,
    }
}

/// Algorithm bandwidth in GB/s; `None` for a non-positive duration.
pub fn algo_bw_gbps(bytes: u64, duration_ns: i64) -> Option<f64> {
    // bytes / ns = GB/s exactly (10⁹ B/s ÷ 10⁹ ns/s).
    (duration_ns > 0).then(|| bytes as f64 / duration_ns as f64)
}

/// Bus factor γ: bus BW = algo BW × γ. Sources: nccl-tests `doc/PERFORMANCE.md` and the thesis.
pub fn bus_factor(op: OpType, algo: Option<Algo>, n: u32) -> f64 {
    let n = n.max(1) as f64;
    match (op, algo) {
        // Thesis' choice for tree AllReduce: each byte goes up and down the tree once: 2.
        (OpType::AllReduce, Some(Algo::Tree)) => 2.0,
        // nccl-tests AllReduce (ring, and by convention every other algorithm): 2(n−1)/n.
        (OpType::AllReduce, _) => 2.0 * (n - 1.0) / n,
        // nccl-tests AllGather / ReduceScatter / AlltoAll, bytes = total buffer: (n−1)/n.
        (OpType::AllGather | OpType::ReduceScatter | OpType::AllToAll, _) => (n - 1.0) / n,
        // Gather/Scatter: the root's link carries (n−1)/n of the total buffer, as AlltoAll.
        (OpType::Gather | OpType::Scatter, _) => (n - 1.0) / n,
        // nccl-tests Broadcast / Reduce, and point-to-point: every byte crosses one link: 1.
        (OpType::Broadcast | OpType::Reduce, _) => 1.0,
        (OpType::Send | OpType::Recv | OpType::SendRecv, _) => 1.0,
        // An operation this build does not name: no traffic pattern is assumed, bus = algo BW.
        (OpType::Other(_), _) => 1.0,
    }
}

/// (α, β) of the theoretical limits: theoretical algo BW = bottleneck × α, bus BW = bottleneck × β
/// (thesis §4.2.5). β equals the bus factor, so bus efficiency compares like with like.
pub fn theory_factors(op: OpType, algo: Option<Algo>, n: u32) -> (f64, f64) {
    let nf = n.max(1) as f64;
    let beta = bus_factor(op, algo, n);
    let alpha = match (op, algo) {
        // Tree AllReduce: α = 1, β = 2.
        (OpType::AllReduce, Some(Algo::Tree)) => 1.0,
        // Ring AllReduce: α = (n−1)/n, β = 2(n−1)/n.
        (OpType::AllReduce, _) => (nf - 1.0) / nf,
        // AllGather / ReduceScatter (and AlltoAll, Gather, Scatter): α = β = (n−1)/n.
        (OpType::AllGather | OpType::ReduceScatter | OpType::AllToAll, _) => beta,
        (OpType::Gather | OpType::Scatter, _) => beta,
        // Broadcast, Reduce and point-to-point: α = β = 1.
        _ => 1.0,
    };
    (alpha, beta)
}

/// The theoretical side of figure 4.2.
#[derive(Debug, Clone, PartialEq)]
pub struct Theoretical {
    pub bottleneck_gbps: f64,
    /// Which link limits (e.g. `NET`, `NVL node01 18000↔2a000`).
    pub bottleneck: String,
    pub algo_bw_gbps: f64,
    pub bus_bw_gbps: f64,
    /// Observed algo BW / theoretical algo BW.
    pub efficiency: f64,
    /// Observed bus BW / theoretical bus BW.
    pub bus_efficiency: f64,
}

/// Every bandwidth field of one operation (figure 4.2).
#[derive(Debug, Clone, PartialEq)]
pub struct Bandwidth {
    pub bytes: u64,
    pub duration_ns: i64,
    pub algo_bw_gbps: f64,
    pub bus_factor: f64,
    pub bus_bw_gbps: f64,
    pub theoretical: Option<Theoretical>,
}

/// Bandwidths of one operation of `bytes` (see [`op_bytes`]) that took `duration_ns` on a
/// communicator of `n` ranks, with the communicator's bottleneck (GB/s, name) when known.
pub fn measure(
    op: OpType,
    algo: Option<Algo>,
    n: u32,
    bytes: u64,
    duration_ns: i64,
    bottleneck: Option<(f64, &str)>,
) -> Option<Bandwidth> {
    let algo_bw = algo_bw_gbps(bytes, duration_ns)?;
    let gamma = bus_factor(op, algo, n);
    let bus_bw = algo_bw * gamma;
    let theoretical = bottleneck.filter(|(b, _)| *b > 0.0).map(|(b, name)| {
        let (alpha, beta) = theory_factors(op, algo, n);
        let t_algo = b * alpha;
        let t_bus = b * beta;
        Theoretical {
            bottleneck_gbps: b,
            bottleneck: name.to_string(),
            algo_bw_gbps: t_algo,
            bus_bw_gbps: t_bus,
            efficiency: if t_algo > 0.0 { algo_bw / t_algo } else { 0.0 },
            bus_efficiency: if t_bus > 0.0 { bus_bw / t_bus } else { 0.0 },
        }
    });
    Some(Bandwidth {
        bytes,
        duration_ns,
        algo_bw_gbps: algo_bw,
        bus_factor: gamma,
        bus_bw_gbps: bus_bw,
        theoretical,
    })
}

/// [`measure`] for one log line that took `duration_ns` (its kernel's duration), on the
/// communicator's bottleneck when known. `None` for an unknown datatype or no duration.
pub fn for_log_op(
    op: &model::log::LogOp,
    duration_ns: i64,
    bottleneck: Option<(f64, &str)>,
) -> Option<Bandwidth> {
    let size = op.datatype?.size_bytes();
    let bytes = op_bytes(op.op, op.count, size, op.nranks);
    measure(op.op, op.algo, op.nranks, bytes, duration_ns, bottleneck)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r2(x: f64) -> f64 {
        (x * 100.0).round() / 100.0
    }

    #[test]
    fn figure_4_2_worked_example() {
        // 4 MiB AllReduce (ring) on 4 ranks at 6.77 GB/s over a 12.5 GB/s network.
        let bytes = 4 * 1024 * 1024;
        // 619.36 µs: 6.772 GB/s, which the figure prints as 6.77 (and bus BW 10.158 as 10.16).
        let duration = 619_360;
        let b = measure(
            OpType::AllReduce,
            Some(Algo::Ring),
            4,
            bytes,
            duration,
            Some((12.5, "NET")),
        )
        .expect("bandwidth");
        assert_eq!(r2(b.algo_bw_gbps), 6.77);
        assert_eq!(b.bus_factor, 1.5);
        assert_eq!(r2(b.bus_bw_gbps), 10.16);
        let t = b.theoretical.expect("theoretical");
        assert_eq!(t.bottleneck_gbps, 12.5);
        assert_eq!(t.algo_bw_gbps, 9.375);
        assert_eq!(t.bus_bw_gbps, 18.75);
        assert_eq!((t.efficiency * 1000.0).round() / 10.0, 72.2);
        assert_eq!((t.bus_efficiency * 1000.0).round() / 10.0, 54.2);
    }

    #[test]
    fn bus_factors_follow_nccl_tests() {
        assert_eq!(bus_factor(OpType::AllReduce, None, 8), 1.75);
        assert_eq!(bus_factor(OpType::AllReduce, Some(Algo::Tree), 8), 2.0);
        assert_eq!(bus_factor(OpType::AllGather, None, 4), 0.75);
        assert_eq!(bus_factor(OpType::ReduceScatter, Some(Algo::Ring), 2), 0.5);
        assert_eq!(bus_factor(OpType::Broadcast, None, 4), 1.0);
        assert_eq!(bus_factor(OpType::Send, None, 2), 1.0);
        assert_eq!(
            theory_factors(OpType::AllReduce, Some(Algo::Tree), 4),
            (1.0, 2.0)
        );
        assert_eq!(op_bytes(OpType::AllGather, 1024, 2, 4), 8192);
        assert_eq!(op_bytes(OpType::AllReduce, 1024, 2, 4), 2048);
        assert_eq!(algo_bw_gbps(1, 0), None);
    }
}
