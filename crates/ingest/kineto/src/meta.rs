//! What PyTorch's names mean: collective names, datatype names, the NCCL fields of an event's
//! arguments.

use crate::trace::{Collective, MetaSource};
use model::{DataType, OpType};
use rustc_hash::FxHashMap;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Each distinct text and rank list of a trace, kept once (a trace repeats a few for every call).
#[derive(Debug, Default)]
pub struct Shared {
    texts: FxHashMap<Box<str>, Arc<str>>,
    ranks: FxHashMap<Box<[u32]>, Arc<[u32]>>,
}

impl Shared {
    pub fn text(&mut self, s: &str) -> Arc<str> {
        if let Some(t) = self.texts.get(s) {
            return Arc::clone(t);
        }
        let t: Arc<str> = s.into();
        self.texts.insert(s.into(), Arc::clone(&t));
        t
    }

    pub fn ranks(&mut self, r: &[u32]) -> Arc<[u32]> {
        if let Some(t) = self.ranks.get(r) {
            return Arc::clone(t);
        }
        let t: Arc<[u32]> = r.into();
        self.ranks.insert(r.into(), Arc::clone(&t));
        t
    }
}

/// NCCL's operation for a collective name PyTorch records: `Collective name` values
/// (`allreduce`, `_allgather_base`, `reduce_scatter_tensor_coalesced`), the suffix of an
/// `nccl:*` range (`all_reduce`, `_all_gather_base`, `all_to_all`) or a `c10d::` operator.
/// `None` for a name that is not a collective (`wait`, `coalesced`).
pub fn collective_op(name: &str) -> Option<OpType> {
    let base = name
        .strip_prefix("nccl:")
        .or_else(|| name.strip_prefix("c10d::"))
        .unwrap_or(name);
    // One spelling: no underscores, lower case, no trailing `_` (in-place c10d ops).
    let key: String = base
        .chars()
        .filter(|c| *c != '_')
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let key = key.strip_suffix("coalesced").unwrap_or(&key);
    let key = key.strip_suffix("base").unwrap_or(key);
    Some(match key {
        "allreduce" | "barrier" => OpType::AllReduce,
        "allgather" | "allgatherintotensor" | "allgathertensor" => OpType::AllGather,
        "reducescatter" | "reducescattertensor" => OpType::ReduceScatter,
        "broadcast" => OpType::Broadcast,
        "reduce" => OpType::Reduce,
        "alltoall" | "alltoallv" | "alltoallsingle" => OpType::AllToAll,
        "send" | "isend" => OpType::Send,
        "recv" | "irecv" | "recvanysource" => OpType::Recv,
        "gather" => OpType::Gather,
        "scatter" => OpType::Scatter,
        _ => return None,
    })
}

/// NCCL's datatype for a name PyTorch writes: `dtype` values (`Float`, `BFloat16`, `Half`,
/// `Long`, `Byte`, `Float8_e4m3fn`) and older `Input type` entries (`float`, `c10::BFloat16`,
/// `long int`, `unsigned char`, `signed char`).
pub fn datatype(name: &str) -> Option<DataType> {
    let n = name.trim().trim_start_matches("c10::").to_ascii_lowercase();
    Some(match n.as_str() {
        "float" | "float32" => DataType::Float32,
        "double" | "float64" => DataType::Float64,
        "half" | "float16" => DataType::Float16,
        "bfloat16" => DataType::Bfloat16,
        "int" | "int32" => DataType::Int32,
        "long" | "long int" | "int64" | "long long" => DataType::Int64,
        "byte" | "unsigned char" | "uint8" | "bool" => DataType::Uint8,
        "char" | "signed char" | "int8" => DataType::Int8,
        "uint32" | "unsigned int" => DataType::Uint32,
        "uint64" | "unsigned long" => DataType::Uint64,
        "float8_e4m3fn" | "float8_e4m3fnuz" | "float8e4m3" => DataType::Float8e4m3,
        "float8_e5m2" | "float8_e5m2fnuz" | "float8e5m2" => DataType::Float8e5m2,
        _ => return None,
    })
}

/// A list of ranks as PyTorch writes it: a JSON array, or a string holding one (`"[0, 1]"`),
/// possibly cut short with `...` by the writer (then `None`: the list is not whole).
pub fn ranks(v: &Value) -> Option<Vec<u32>> {
    match v {
        Value::Array(items) => items
            .iter()
            .map(|r| r.as_u64().and_then(|r| u32::try_from(r).ok()))
            .collect(),
        Value::String(s) => {
            let inner = s.trim().strip_prefix('[')?.strip_suffix(']')?.trim();
            if inner.is_empty() {
                return Some(Vec::new());
            }
            inner.split(',').map(|r| r.trim().parse().ok()).collect()
        }
        _ => None,
    }
}

/// Why a field of an event could not be read: `(field, "missing" | "mistyped")`.
pub type FieldProblem = (&'static str, &'static str);

/// The NCCL fields of an event's arguments (a kernel's since PyTorch 2.4, a
/// `record_param_comms`' since 2.1), and the fields present but unreadable.
pub fn from_args(
    args: &Map<String, Value>,
    shared: &mut Shared,
    problems: &mut Vec<FieldProblem>,
) -> Collective {
    let mut c = Collective::default();
    let mut text = |key: &'static str, problems: &mut Vec<FieldProblem>| -> Option<Arc<str>> {
        match args.get(key)? {
            Value::String(s) => Some(shared.text(s)),
            Value::Number(n) => Some(shared.text(&n.to_string())),
            _ => {
                problems.push((key, "mistyped"));
                None
            }
        }
    };
    let number = |key: &'static str, problems: &mut Vec<FieldProblem>| -> Option<u64> {
        let v = args.get(key)?;
        let n = v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .or_else(|| {
                v.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            });
        if n.is_none() {
            problems.push((key, "mistyped"));
        }
        n
    };
    c.name = text("Collective name", problems);
    c.op = c.name.as_deref().and_then(collective_op);
    c.in_nelems = number("In msg nelems", problems);
    c.out_nelems = number("Out msg nelems", problems);
    c.dtype_name = text("dtype", problems);
    c.datatype = c.dtype_name.as_deref().and_then(datatype);
    c.group_size = number("Group size", problems).and_then(|n| u32::try_from(n).ok());
    c.pg_name = text("Process Group Name", problems);
    c.pg_desc = text("Process Group Description", problems);
    c.in_split = text("In split size", problems);
    c.out_split = text("Out split size", problems);
    if let Some(v) = args.get("Process Group Ranks") {
        c.pg_ranks = ranks(v).map(|r| shared.ranks(&r));
        if c.pg_ranks.is_none() && !matches!(v, Value::String(s) if s.contains("...")) {
            problems.push(("Process Group Ranks", "mistyped"));
        }
    }
    c.seq = number("Seq", problems);
    let peer = |key: &'static str, problems: &mut Vec<FieldProblem>| -> Option<i64> {
        let v = args.get(key)?;
        let n = v.as_i64();
        if n.is_none() {
            problems.push((key, "mistyped"));
        }
        n
    };
    c.peer = match c.op {
        Some(OpType::Send) => peer("Dst Rank", problems),
        Some(OpType::Recv) => peer("Src Rank", problems),
        _ => None,
    };
    if c.op.is_some() {
        c.source = Some(MetaSource::KernelArgs);
    }
    c
}

/// What an older `record_param_comms` or an `nccl:*` range says through its first tensor:
/// `Input Dims` (`[[6144], [], ...]`: its element count) and `Input type` (`float`).
pub fn from_first_tensor(args: &Map<String, Value>) -> (Option<u64>, Option<String>) {
    let dims = args
        .get("Input Dims")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_array)
        .filter(|d| !d.is_empty())
        .and_then(|d| d.iter().try_fold(1u64, |n, x| n.checked_mul(x.as_u64()?)));
    let dtype = args
        .get("Input type")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .filter(|t| datatype(t).is_some());
    (dims, dtype.filter(|_| dims.is_some()).map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collective_names() {
        for (name, op) in [
            ("allreduce", OpType::AllReduce),
            ("nccl:all_reduce", OpType::AllReduce),
            ("_allgather_base", OpType::AllGather),
            ("nccl:_all_gather_base", OpType::AllGather),
            ("allgather_into_tensor_coalesced", OpType::AllGather),
            ("reduce_scatter_tensor_coalesced", OpType::ReduceScatter),
            ("_reduce_scatter_base", OpType::ReduceScatter),
            ("nccl:all_to_all", OpType::AllToAll),
            ("c10d::alltoall_base_", OpType::AllToAll),
            ("broadcast", OpType::Broadcast),
            ("send", OpType::Send),
            ("recv", OpType::Recv),
            ("barrier", OpType::AllReduce),
        ] {
            assert_eq!(collective_op(name), Some(op), "{name}");
        }
        assert_eq!(collective_op("wait"), None);
        assert_eq!(collective_op("nccl:coalesced"), None);
    }

    #[test]
    fn datatype_names() {
        assert_eq!(datatype("Float"), Some(DataType::Float32));
        assert_eq!(datatype("c10::BFloat16"), Some(DataType::Bfloat16));
        assert_eq!(datatype("long int"), Some(DataType::Int64));
        assert_eq!(datatype("unsigned char"), Some(DataType::Uint8));
        assert_eq!(datatype("Float8_e4m3fn"), Some(DataType::Float8e4m3));
        assert_eq!(datatype("TensorList"), None);
        assert_eq!(datatype("Scalar"), None);
    }

    #[test]
    fn rank_lists() {
        let v: Value = serde_json::from_str(r#""[0, 1, 2]""#).unwrap();
        assert_eq!(ranks(&v), Some(vec![0, 1, 2]));
        let v: Value = serde_json::from_str("[4, 5]").unwrap();
        assert_eq!(ranks(&v), Some(vec![4, 5]));
        let v: Value = serde_json::from_str(r#""[]""#).unwrap();
        assert_eq!(ranks(&v), Some(vec![]));
        let v: Value = serde_json::from_str(r#""[0, 1, ...]""#).unwrap();
        assert_eq!(ranks(&v), None);
    }

    #[test]
    fn counts_follow_nccl() {
        let ag = Collective {
            op: Some(OpType::AllGather),
            in_nelems: Some(25136),
            out_nelems: Some(201088),
            datatype: Some(DataType::Bfloat16),
            ..Collective::default()
        };
        assert_eq!(ag.nccl_count(), Some(25136));
        assert_eq!(ag.bytes(), Some(50272));
        let rs = Collective {
            op: Some(OpType::ReduceScatter),
            in_nelems: Some(800),
            out_nelems: Some(100),
            ..Collective::default()
        };
        assert_eq!(rs.nccl_count(), Some(100));
        assert_eq!(rs.bytes(), None, "no datatype: no bytes");
    }
}
