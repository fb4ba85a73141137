//! Turning log lines and kernels into alignment symbols.
//!
//! This is the only module that knows NCCL operation names and their weights, so the rest of
//! the crate (and the generic aligner above all) stays free of NCCL spelling.

use model::log::LogOp;
use model::nsys::{Kernel, KernelName};
use model::{Algo, DataType, OpType, Proto, RedOp};

/// What one side of the alignment knows about one operation.
#[derive(Debug, Clone, PartialEq)]
pub struct Symbol {
    /// The operation as named on this side (`None`: an NCCL kernel whose name says nothing).
    pub op: Option<OpType>,
    pub red_op: Option<RedOp>,
    pub datatype: Option<DataType>,
    pub algo: Option<Algo>,
    pub proto: Option<Proto>,
    /// Log: `nchannels` of the tuning line; kernel: `gridX`.
    pub channels: Option<u32>,
    /// Log: stream pointer; kernel: CUDA stream id.
    pub stream: u64,
    /// Log: CPU timestamp; kernel: launch time, else start time.
    pub time_ns: Option<i64>,
    /// Number of log lines behind this symbol: 1, or 0 for the placeholder of a line missing
    /// from its communicator's opCount sequence (a kernel has 1).
    pub members: u32,
    /// (communicator pointer, opCount): the log line's own; for a kernel, the call the other
    /// ranks' kernels of the same collective say it runs ([`crate::consensus`]), if known.
    pub call: Option<(u64, u64)>,
}

/// The thesis' operation weights (eq. 4.1): rare operations count more.
pub fn weight(op: Option<OpType>) -> f64 {
    match op {
        Some(OpType::AllReduce) | None => 1.0,
        Some(OpType::ReduceScatter | OpType::AllGather | OpType::Broadcast) => 2.0,
        Some(OpType::Send | OpType::Recv | OpType::SendRecv) => 0.5,
        // Not in the thesis: as rare as Broadcast.
        Some(OpType::Reduce | OpType::AllToAll | OpType::Gather | OpType::Scatter) => 2.0,
        Some(OpType::Other(_)) => 2.0,
    }
}

/// The kernel family an operation runs in: Send and Recv run in SendRecv kernels.
pub fn kernel_class(op: OpType) -> OpType {
    if op.is_p2p() {
        OpType::SendRecv
    } else {
        op
    }
}

/// Does the reduction operator matter for this op (is it printed in its kernel name)?
pub fn reduces(op: OpType) -> bool {
    matches!(
        op,
        OpType::AllReduce | OpType::ReduceScatter | OpType::Reduce
    )
}

/// Is this an NCCL kernel at all (`ncclKernel_*`, `ncclDevKernel_*`, `ncclSymkDevKernel_*`...)?
pub fn is_nccl_kernel(name: &str) -> bool {
    name.contains("nccl")
}

/// Fallback decoder: the first op name found in the kernel name. Longer names are tried first
/// so that `ReduceScatter` and `AllReduce` are not read as `Reduce`.
pub fn decode_kernel_op(name: &str) -> Option<OpType> {
    const ORDER: [OpType; 6] = [
        OpType::ReduceScatter,
        OpType::AllReduce,
        OpType::AllGather,
        OpType::SendRecv,
        OpType::Broadcast,
        OpType::Reduce,
    ];
    ORDER.into_iter().find(|op| name.contains(op.name()))
}

/// The kernel family a datatype runs in: NCCL builds one kernel for signed and unsigned
/// integers of a size where the reduction gives the same bits (a Sum on `int32` runs
/// `..._Sum_u32_...`), so only the size of an integer type is compared.
pub fn kernel_datatype(d: DataType) -> DataType {
    match d {
        DataType::Int8 => DataType::Uint8,
        DataType::Int32 => DataType::Uint32,
        DataType::Int64 => DataType::Uint64,
        other => other,
    }
}

/// Whether the kernel name is NCCL 2.19+'s `ncclDevKernel_<coll>_Sum_<type>_...`, whose `Sum`
/// is printed for every reduction (Prod, Min, Max, PreMulSum and SumPostDiv run in the Sum
/// kernel), so it says nothing about the reduction.
fn name_hides_reduction(name: &str) -> bool {
    name.starts_with("ncclDevKernel_")
}

/// A log line's symbol.
pub fn log_symbol(op: &LogOp) -> Symbol {
    Symbol {
        op: Some(op.op),
        red_op: reduces(op.op).then_some(op.red_op),
        datatype: op.datatype.map(kernel_datatype),
        algo: op.algo,
        proto: op.proto,
        channels: op.nchannels,
        stream: op.stream,
        time_ns: op.timestamp_ns,
        members: 1,
        call: Some((op.comm, op.op_count)),
    }
}

/// A kernel's symbol, `None` for a non-NCCL kernel. `decoded` (from the full decoder) wins over
/// the built-in fallback.
pub fn kernel_symbol(k: &Kernel, decoded: Option<&KernelName>) -> Option<Symbol> {
    if !is_nccl_kernel(&k.name) && decoded.and_then(|d| d.op).is_none() {
        return None;
    }
    let d = decoded.copied().unwrap_or_default();
    let op = d.op.or_else(|| decode_kernel_op(&k.name));
    Some(Symbol {
        op,
        red_op: if name_hides_reduction(&k.name) {
            None
        } else {
            d.red_op
        },
        // NCCL instantiates the kernels of non-reducing operations (AllGather, Broadcast,
        // SendRecv) for bytes only (`..._int8_t`, `..._i8`): their name's type is not the call's.
        datatype: if op.is_some_and(reduces) {
            d.datatype.map(kernel_datatype)
        } else {
            None
        },
        algo: d.algo,
        proto: d.proto,
        channels: (k.grid[0] > 0).then_some(k.grid[0]),
        stream: u64::from(k.stream),
        time_ns: Some(k.launch_ns.unwrap_or(k.start_ns)),
        members: 1,
        call: None,
    })
}

/// A bare symbol for an op name only (the thesis' unit tests).
pub fn op_symbol(op: OpType) -> Symbol {
    Symbol {
        op: Some(op),
        red_op: None,
        datatype: None,
        algo: None,
        proto: None,
        channels: None,
        stream: 0,
        time_ns: None,
        members: 1,
        call: None,
    }
}

/// A small integer per op class, for anchoring keys.
pub fn class_key(op: Option<OpType>) -> u64 {
    op.map_or(0, |o| 1 + u64::from(kernel_class(o).code()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_decoder_prefers_long_names() {
        assert_eq!(
            decode_kernel_op("ncclKernel_AllReduce_RING_LL_Sum_half(ncclDevComm*)"),
            Some(OpType::AllReduce)
        );
        assert_eq!(
            decode_kernel_op("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL"),
            Some(OpType::ReduceScatter)
        );
        assert_eq!(
            decode_kernel_op("ncclDevKernel_SendRecv(ncclDevKernelArgs)"),
            Some(OpType::SendRecv)
        );
        assert_eq!(
            decode_kernel_op("ncclDevKernel_Reduce_Sum_f16_RING_LL"),
            Some(OpType::Reduce)
        );
        assert_eq!(decode_kernel_op("ncclDevKernel_Generic"), None);
        assert!(!is_nccl_kernel("volta_sgemm_128x64"));
    }
}
