//! NCCL kernel-name decoding (no tables read: works on the name string alone).
//!
//! Families, oldest first (see `reference/kernel_names.txt`):
//! - 2.4–2.7: `ncclAllReduceRingLLKernel_sum_f32(ncclColl)`
//! - 2.8–2.18: `ncclKernel_AllReduce_RING_LL_Sum_half(...)`, `ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t`
//!   (RCCL's device functions `ncclDevFunc_AllReduce_RING_LL_Sum_double` share the layout)
//! - 2.19+: `ncclDevKernel_AllReduce_Sum_f16_RING_LL(...)`, `ncclDevKernel_AllGather_RING_LL`,
//!   `ncclDevKernel_SendRecv`, `ncclDevKernel_Generic[_N]`
//! - 2.27: `ncclSymDevKernel_AllReduce_RSxLD_AGxST_sum_bf16`; 2.28+: `ncclSymkDevKernel_*`
//! - any of these mangled: `_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE`
//!
//! The name says what it says, which is not always what ran: up to 2.18 every collective kernel is
//! the `_LL` one (LL128/Simple run inside it); from 2.19 the reduction is always `Sum` (other
//! reductions run through the Sum kernel), signed integers appear as unsigned, and NVLS, CollNet
//! and PAT run inside `_RING_LL`. Callers should treat these fields as hints and prefer the log's
//! tuning lines or NCCL's NVTX payloads where they have them.

use std::collections::HashMap;

use model::nsys::KernelName;
use model::{Algo, DataType, OpType, Proto, RedOp};

/// [`decode_kernel_name`] for many kernels: each distinct name is decoded once. A run's
/// hundreds of thousands of kernels carry a few dozen names, and decoding one (normalising its
/// spellings) costs far more than looking it up.
#[derive(Debug, Default)]
pub struct KernelNameCache {
    decoded: HashMap<String, Option<KernelName>>,
}

impl KernelNameCache {
    /// The decoded `name` (see [`decode_kernel_name`]).
    pub fn decode(&mut self, name: &str) -> Option<KernelName> {
        if let Some(&d) = self.decoded.get(name) {
            return d;
        }
        let d = decode_kernel_name(name);
        self.decoded.insert(name.to_owned(), d);
        d
    }
}

/// Decodes an NCCL kernel name. `None` when the name does not contain `nccl` (any case); an NCCL
/// name of an unknown shape gives `Some` with every field `None`.
pub fn decode_kernel_name(name: &str) -> Option<KernelName> {
    if !name.to_ascii_lowercase().contains("nccl") {
        return None;
    }
    let base = base_name(name);
    let decoded = if let Some(rest) = base.strip_prefix("ncclDevKernel_") {
        underscored(rest)
    } else if let Some(rest) = base.strip_prefix("ncclKernel_") {
        underscored(rest)
    } else if let Some(rest) = base.strip_prefix("ncclDevFunc_") {
        underscored(rest)
    } else if let Some(rest) = base
        .strip_prefix("ncclSymkDevKernel_")
        .or_else(|| base.strip_prefix("ncclSymDevKernel_"))
    {
        symmetric(rest)
    } else if let Some(rest) = base.strip_prefix("nccl") {
        camel(rest)
    } else {
        None
    };
    Some(decoded.unwrap_or_default())
}

/// The bare function name: demangles the `_Z<len><name>` prefix of Itanium-mangled names, drops
/// the argument list, a leading `void ` and a trailing `...` or `[truncated]` left by tools.
fn base_name(name: &str) -> &str {
    let mut s = name.trim();
    if let Some(rest) = s.strip_prefix("_Z") {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if let Ok(len) = rest[..digits].parse::<usize>() {
            if let Some(n) = rest.get(digits..digits + len) {
                return n;
            }
        }
    }
    s = s.strip_prefix("void ").unwrap_or(s);
    let end = s.find(['(', ' ', '<']).unwrap_or(s.len());
    s[..end].trim_end_matches('.')
}

/// `AllReduce_RING_LL_Sum_half`, `AllReduce_Sum_f16_RING_LL`, `SendRecv`, `Generic_1`:
/// the op comes first, then algorithm, protocol, reduction and type tokens in either order.
fn underscored(rest: &str) -> Option<KernelName> {
    // Multi-token spellings become one token before splitting on '_'.
    let norm = rest
        .replace("__nv_bfloat16", "bf16")
        .replace("rccl_bfloat16", "bf16")
        .replace("COLLNET_DIRECT", "COLLNETDIRECT")
        .replace("COLLNET_CHAIN", "COLLNETCHAIN")
        .replace("NVLS_TREE", "NVLSTREE")
        .replace("uint8_t", "u8")
        .replace("int8_t", "i8")
        .replace("uint32_t", "u32")
        .replace("int32_t", "i32")
        .replace("uint64_t", "u64")
        .replace("int64_t", "i64");
    let mut tokens = norm.split('_').filter(|t| !t.is_empty());
    let first = tokens.next()?;
    let mut k = KernelName {
        op: op_of(first),
        ..KernelName::default()
    };
    if k.op.is_none() {
        // `Generic`, `Nop` and unknown heads: NCCL, but the name tells nothing more.
        return Some(k);
    }
    for t in tokens {
        if let Some(a) = algo_of(t) {
            k.algo = Some(a);
        } else if let Some(p) = Proto::from_name(t) {
            k.proto = Some(p);
        } else if let Some(r) = red_of(t) {
            k.red_op = Some(r);
        } else if let Some(d) = dtype_of(t) {
            k.datatype = Some(d);
        }
    }
    // Send/Recv kernels carry a dummy `Sum_int8_t` (2.8–2.18): not a real reduction or type.
    if k.op == Some(OpType::SendRecv) {
        k.red_op = None;
        k.datatype = None;
    }
    Some(k)
}

/// 2.27+ symmetric kernels: `<Op>_<variant...>[_<red>_<type>]`. The variant (`RSxLD_AGxST`,
/// `LLMC`, `TmaST`) is a symmetric-memory algorithm with no counterpart in [`Algo`]; only the
/// `LL` protocol is recognisable in it.
fn symmetric(rest: &str) -> Option<KernelName> {
    let mut tokens = rest.split('_').filter(|t| !t.is_empty());
    let mut k = KernelName {
        op: op_of(tokens.next()?),
        ..KernelName::default()
    };
    for t in tokens {
        if let Some(r) = red_of(t) {
            k.red_op = Some(r);
        } else if let Some(d) = dtype_of(t) {
            k.datatype = Some(d);
        } else if matches!(t, "LL" | "LLMC") || t.ends_with("xLL") || t.ends_with("xLLMC") {
            k.proto = Some(Proto::LL);
        }
    }
    Some(k)
}

/// 2.4–2.7: `<Op><Algo><Proto>Kernel_<red>_<type>`, e.g. `AllReduceRingLLKernel_sum_f32`.
fn camel(rest: &str) -> Option<KernelName> {
    let (head, tail) = rest.split_once("Kernel_")?;
    // Longest first: `ReduceScatter` and `AllReduce` before `Reduce`.
    const OPS: [(&str, OpType); 5] = [
        ("ReduceScatter", OpType::ReduceScatter),
        ("AllReduce", OpType::AllReduce),
        ("AllGather", OpType::AllGather),
        ("Broadcast", OpType::Broadcast),
        ("Reduce", OpType::Reduce),
    ];
    let (op, after) = OPS
        .iter()
        .find_map(|(n, op)| head.strip_prefix(n).map(|a| (*op, a)))?;
    let mut k = KernelName {
        op: Some(op),
        ..KernelName::default()
    };
    const ALGOS: [(&str, Algo); 3] = [
        ("CollNet", Algo::CollNetDirect),
        ("Ring", Algo::Ring),
        ("Tree", Algo::Tree),
    ];
    let proto = match ALGOS
        .iter()
        .find_map(|(n, a)| after.strip_prefix(n).map(|p| (*a, p)))
    {
        Some((a, p)) => {
            k.algo = Some(a);
            p
        }
        None => after,
    };
    k.proto = Proto::from_name(proto);
    let mut parts = tail.split('_');
    // `copy` (Broadcast/AllGather) is no reduction.
    k.red_op = parts.next().and_then(red_of);
    k.datatype = parts.next().and_then(dtype_of);
    Some(k)
}

fn op_of(t: &str) -> Option<OpType> {
    match t {
        "AllGatherV" => Some(OpType::AllGather),
        "AllToAll" | "AlltoAll" => Some(OpType::AllToAll),
        _ => OpType::from_name(t),
    }
}

fn algo_of(t: &str) -> Option<Algo> {
    match t {
        // `COLLNET` (2.8–2.11) was the direct variant before CHAIN existed.
        "COLLNET" => Some(Algo::CollNetDirect),
        _ if t.chars().all(|c| c.is_ascii_uppercase()) => Algo::from_name(t),
        _ => None,
    }
}

fn red_of(t: &str) -> Option<RedOp> {
    match t.to_ascii_lowercase().as_str() {
        "sum" => Some(RedOp::Sum),
        "prod" => Some(RedOp::Prod),
        "max" => Some(RedOp::Max),
        "min" => Some(RedOp::Min),
        "avg" => Some(RedOp::Avg),
        // NCCL's internal PreMulSum / SumPostDiv have no ncclRedOp_t number of their own.
        "premulsum" | "sumpostdiv" => Some(RedOp::Custom(u32::MAX)),
        _ => None,
    }
}

fn dtype_of(t: &str) -> Option<DataType> {
    Some(match t {
        "i8" | "int8" | "char" => DataType::Int8,
        "u8" | "uint8" => DataType::Uint8,
        "i32" | "int32" | "int" => DataType::Int32,
        "u32" | "uint32" => DataType::Uint32,
        "i64" | "int64" => DataType::Int64,
        "u64" | "uint64" => DataType::Uint64,
        "f16" | "half" => DataType::Float16,
        "f32" | "float" => DataType::Float32,
        "f64" | "double" => DataType::Float64,
        "bf16" => DataType::Bfloat16,
        "f8e4m3" => DataType::Float8e4m3,
        "f8e5m2" => DataType::Float8e5m2,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(
        op: Option<OpType>,
        red: Option<RedOp>,
        dt: Option<DataType>,
        algo: Option<Algo>,
        proto: Option<Proto>,
    ) -> Option<KernelName> {
        Some(KernelName {
            op,
            red_op: red,
            datatype: dt,
            algo,
            proto,
        })
    }

    use Algo::*;
    use DataType::*;
    use OpType::*;
    use Proto::*;

    /// Every name of kernel_names.txt section 1 (OBSERVED), verbatim.
    #[test]
    fn observed_names() {
        let sr = k(Some(SendRecv), None, None, None, None);
        let cases: Vec<(&str, Option<KernelName>)> = vec![
            ("ncclDevKernel_SendRecv", sr),
            ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)", sr),
            ("_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE", sr),
            ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", sr),
            (
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                k(Some(AllReduce), Some(RedOp::Sum), Some(Bfloat16), Some(Ring), Some(LL)),
            ),
            (
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                k(Some(AllReduce), Some(RedOp::Sum), Some(Bfloat16), Some(Ring), Some(LL)),
            ),
            (
                "ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevKernelAr...",
                k(Some(AllReduce), Some(RedOp::Sum), Some(Float16), Some(Ring), Some(LL)),
            ),
            ("ncclDevKernel_AllGather_RING_LL", k(Some(AllGather), None, None, Some(Ring), Some(LL))),
            (
                "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<(un...",
                k(Some(AllGather), None, None, Some(Ring), Some(LL)),
            ),
            (
                "ncclDevKernel_AllReduce_Sum_f32_TREE_LL(ncclDevComm *, unsigned long, ncclWork *)",
                k(Some(AllReduce), Some(RedOp::Sum), Some(Float32), Some(Tree), Some(LL)),
            ),
            (
                "ncclSymDevKernel_AllReduce_RSxLD_AGxST_sum_bf16",
                k(Some(AllReduce), Some(RedOp::Sum), Some(Bfloat16), None, None),
            ),
            ("ncclSymkDevKernel_AllReduce_RSxLDMC_AGxSTMC", k(Some(AllReduce), None, None, None, None)),
            (
                "ncclSymkDevKernel_ReduceScatter_LL_sum_f32(ncclSymkDevWorkArgs4K NCCL_GRID_CONSTANT const args4K)",
                k(Some(ReduceScatter), Some(RedOp::Sum), Some(Float32), None, Some(LL)),
            ),
            (
                "ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f8e5m2",
                k(Some(AllReduce), Some(RedOp::Sum), Some(Float8e5m2), None, Some(LL)),
            ),
            (
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)",
                k(Some(AllReduce), Some(RedOp::Sum), Some(Float32), Some(Ring), Some(LL)),
            ),
            (
                "ncclKernel_AllReduce_RING_LL_Sum_half(ncclDevComm*, unsigned long, ncclWork*)",
                k(Some(AllReduce), Some(RedOp::Sum), Some(Float16), Some(Ring), Some(LL)),
            ),
            ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", k(Some(SendRecv), None, None, Some(Ring), Some(Simple))),
            (
                "_Z42ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_tP11ncclDevCommPvP8ncclWork",
                k(Some(SendRecv), None, None, Some(Ring), Some(Simple)),
            ),
            (
                "_Z42ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_tP11ncclDevCommmP8ncclWork",
                k(Some(SendRecv), None, None, Some(Ring), Some(Simple)),
            ),
            (
                "ncclAllReduceRingLLKernel_sum_f32(ncclColl)",
                k(Some(AllReduce), Some(RedOp::Sum), Some(Float32), Some(Ring), Some(LL)),
            ),
            (
                "ncclAllReduceRingLLKernel_sum_f16(ncclColl)",
                k(Some(AllReduce), Some(RedOp::Sum), Some(Float16), Some(Ring), Some(LL)),
            ),
            ("ncclDevKernel_Generic_1", Some(KernelName::default())),
            ("ncclDevKernel_Generic_2", Some(KernelName::default())),
            ("ncclDevKernel_Generic_4", Some(KernelName::default())),
            ("ncclDevKernel_Generic(ncclDevComm*, channelMasks, ncclWork*)", Some(KernelName::default())),
            (
                "ncclDevFunc_AllReduce_RING_LL_Sum_double",
                k(Some(AllReduce), Some(RedOp::Sum), Some(Float64), Some(Ring), Some(LL)),
            ),
        ];
        // The cache answers as the decoder does, from its first lookup and from its second.
        let mut cache = KernelNameCache::default();
        for (name, want) in cases.iter().chain(&cases) {
            assert_eq!(decode_kernel_name(name), *want, "{name}");
            assert_eq!(cache.decode(name), *want, "{name} (cached)");
        }
        assert_eq!(cache.decode("volta_sgemm_128x64_nn"), None);
        assert_eq!(cache.decode("volta_sgemm_128x64_nn"), None);
    }

    /// Samples of section 2 (DERIVED from NCCL's generators).
    ///
    /// One table of name → expected decoding, kept whole (186 lines, most of them rustfmt's
    /// layout of `k(..)`): a reader checks each row against NCCL's generators, and split tables
    /// would only hide which names are covered.
    #[test]
    fn derived_names() {
        let cases: Vec<(&str, Option<KernelName>)> = vec![
            (
                "ncclBroadcastTreeLLKernel_copy_i8",
                k(Some(Broadcast), None, Some(Int8), Some(Tree), Some(LL)),
            ),
            (
                "ncclReduceScatterRingLLKernel_max_u64",
                k(
                    Some(ReduceScatter),
                    Some(RedOp::Max),
                    Some(Uint64),
                    Some(Ring),
                    Some(LL),
                ),
            ),
            (
                "ncclReduceTreeLLKernel_prod_f64",
                k(
                    Some(Reduce),
                    Some(RedOp::Prod),
                    Some(Float64),
                    Some(Tree),
                    Some(LL),
                ),
            ),
            (
                "ncclAllReduceCollNetLLKernel_min_i32",
                k(
                    Some(AllReduce),
                    Some(RedOp::Min),
                    Some(Int32),
                    Some(CollNetDirect),
                    Some(LL),
                ),
            ),
            (
                "ncclAllGatherRingLLKernel_copy_u32",
                k(Some(AllGather), None, Some(Uint32), Some(Ring), Some(LL)),
            ),
            (
                "ncclKernel_AllReduce_TREE_LL_Sum_half",
                k(
                    Some(AllReduce),
                    Some(RedOp::Sum),
                    Some(Float16),
                    Some(Tree),
                    Some(LL),
                ),
            ),
            (
                "ncclKernel_AllGather_RING_LL_Sum_int8_t",
                k(
                    Some(AllGather),
                    Some(RedOp::Sum),
                    Some(Int8),
                    Some(Ring),
                    Some(LL),
                ),
            ),
            (
                "ncclKernel_ReduceScatter_RING_LL_Sum___nv_bfloat16",
                k(
                    Some(ReduceScatter),
                    Some(RedOp::Sum),
                    Some(Bfloat16),
                    Some(Ring),
                    Some(LL),
                ),
            ),
            (
                "ncclKernel_AllReduce_COLLNET_DIRECT_LL_Max_uint64_t",
                k(
                    Some(AllReduce),
                    Some(RedOp::Max),
                    Some(Uint64),
                    Some(CollNetDirect),
                    Some(LL),
                ),
            ),
            (
                "ncclKernel_AllReduce_NVLS_TREE_LL_Prod_uint32_t",
                k(
                    Some(AllReduce),
                    Some(RedOp::Prod),
                    Some(Uint32),
                    Some(NvlsTree),
                    Some(LL),
                ),
            ),
            (
                "ncclKernel_Reduce_COLLNET_CHAIN_LL_Min_double",
                k(
                    Some(Reduce),
                    Some(RedOp::Min),
                    Some(Float64),
                    Some(CollNetChain),
                    Some(LL),
                ),
            ),
            ("ncclDevKernel_Generic", Some(KernelName::default())),
            (
                "ncclDevKernel_Broadcast_RING_LL",
                k(Some(Broadcast), None, None, Some(Ring), Some(LL)),
            ),
            (
                "ncclDevKernel_AllGatherV_RING_LL",
                k(Some(AllGather), None, None, Some(Ring), Some(LL)),
            ),
            (
                "ncclDevKernel_AllReduce_Sum_u8_TREE_LL",
                k(
                    Some(AllReduce),
                    Some(RedOp::Sum),
                    Some(Uint8),
                    Some(Tree),
                    Some(LL),
                ),
            ),
            (
                "ncclDevKernel_Reduce_Sum_u64_RING_LL",
                k(
                    Some(Reduce),
                    Some(RedOp::Sum),
                    Some(Uint64),
                    Some(Ring),
                    Some(LL),
                ),
            ),
            (
                "ncclDevKernel_ReduceScatter_Sum_f8e4m3_RING_LL",
                k(
                    Some(ReduceScatter),
                    Some(RedOp::Sum),
                    Some(Float8e4m3),
                    Some(Ring),
                    Some(LL),
                ),
            ),
            (
                "ncclSymDevKernel_AllGather_LLMC",
                k(Some(AllGather), None, None, None, Some(LL)),
            ),
            (
                "ncclSymkDevKernel_AllGather_STMC",
                k(Some(AllGather), None, None, None, None),
            ),
            (
                "ncclSymDevKernel_AllReduce_AGxLLMC_R_sum_f16",
                k(
                    Some(AllReduce),
                    Some(RedOp::Sum),
                    Some(Float16),
                    None,
                    Some(LL),
                ),
            ),
            (
                "ncclSymkDevKernel_ReduceScatter_LDMC_sum_bf16",
                k(
                    Some(ReduceScatter),
                    Some(RedOp::Sum),
                    Some(Bfloat16),
                    None,
                    None,
                ),
            ),
            (
                "ncclSymkDevKernel_ReduceScatter_RailA2A_LsaLD_avg_f32",
                k(
                    Some(ReduceScatter),
                    Some(RedOp::Avg),
                    Some(Float32),
                    None,
                    None,
                ),
            ),
            (
                "ncclSymkDevKernel_AllGather_TmaST",
                k(Some(AllGather), None, None, None, None),
            ),
        ];
        for (name, want) in cases {
            assert_eq!(decode_kernel_name(name), want, "{name}");
        }
    }

    #[test]
    fn non_nccl_names() {
        for name in [
            "mscclKernel_Sum_half_Simple_false(ncclDevComm*, mscclAlgo*, mscclWork*)",
            "ampere_sgemm_128x64_tn",
            "void at::native::vectorized_elementwise_kernel<4>(int)",
            "",
        ] {
            // mscclKernel's *arguments* mention ncclDevComm: it is counted as NCCL-family by the
            // "name contains nccl" rule, but nothing in its head decodes.
            let got = decode_kernel_name(name);
            if name.to_ascii_lowercase().contains("nccl") {
                assert_eq!(got, Some(KernelName::default()), "{name}");
            } else {
                assert_eq!(got, None, "{name}");
            }
        }
    }
}
