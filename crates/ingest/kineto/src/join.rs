//! Each NCCL kernel's meaning, from wherever the trace keeps it.
//!
//! In order: the kernel's own arguments (PyTorch 2.4+ copies the collective's fields there);
//! the CPU ranges that launched it: the `record_param_comms` whose `External id` the kernel
//! carries (traces since late 2023), or, in older traces where a kernel's `External id` is its
//! correlation id, the `record_param_comms` and `nccl:*` ranges of the launching thread that
//! hold the launch call (found by the kernel's correlation id); last, the kernel's name
//! (`ncclKernel_AllReduce_RING_LL_Sum_float`: the operation and, up to NCCL 2.18, the type).
//! A field is taken from the first source that has it.

use crate::trace::{Collective, CommOp, Launch, MetaSource, NcclKernel};
use ingest_nsys::KernelNameCache;
use rustc_hash::FxHashMap;

/// Fills every kernel's launch and meaning; `comm_ops` in any order.
pub(crate) fn resolve(
    kernels: &mut [NcclKernel],
    comm_ops: &[CommOp],
    launches: &FxHashMap<u64, Launch>,
) {
    let mut by_thread: FxHashMap<(u32, u32), Vec<usize>> = FxHashMap::default();
    let mut by_external: FxHashMap<u64, usize> = FxHashMap::default();
    for (i, op) in comm_ops.iter().enumerate() {
        by_thread.entry((op.pid, op.tid)).or_default().push(i);
        if &*op.name == "record_param_comms" {
            if let Some(x) = op.external_id {
                by_external.entry(x).or_insert(i);
            }
        }
    }
    for ops in by_thread.values_mut() {
        ops.sort_by_key(|&i| (comm_ops[i].start_ns, i));
    }
    let mut names = KernelNameCache::default();
    for k in kernels.iter_mut() {
        k.launch = launches.get(&k.correlation).copied();
        // An `External id` equal to the correlation id is an old trace's, not an operator's.
        let mut record = k
            .external_id
            .filter(|&x| x != k.correlation)
            .and_then(|x| by_external.get(&x))
            .map(|&i| &comm_ops[i]);
        let mut range = None;
        if let Some(l) = k.launch {
            if let Some(ops) = by_thread.get(&(l.pid, l.tid)) {
                let (r, n) = enclosing(comm_ops, ops, l.start_ns);
                record = record.or(r);
                range = n;
            }
        }
        let from_name = names.decode(&k.name).unwrap_or_default();
        let mut c = std::mem::take(&mut k.coll);
        for op in [record, range].into_iter().flatten() {
            fill(&mut c, &op.coll);
        }
        if c.op.is_none() {
            c.op = from_name.op;
            c.source = Some(if c.op.is_some() {
                MetaSource::KernelName
            } else {
                MetaSource::Unknown
            });
        }
        if c.datatype.is_none() && c.dtype_name.is_none() {
            c.datatype = from_name.datatype;
        }
        k.coll = c;
    }
}

/// The innermost `record_param_comms` and innermost `nccl:*` range of one thread holding time
/// `t` (`ops`: indices into `all`, in start order).
fn enclosing<'a>(
    all: &'a [CommOp],
    ops: &[usize],
    t: i64,
) -> (Option<&'a CommOp>, Option<&'a CommOp>) {
    let end = ops.partition_point(|&i| all[i].start_ns <= t);
    let (mut record, mut range) = (None, None);
    // Ranges of one thread nest or follow each other: the latest starts are the candidates.
    for &i in ops[..end].iter().rev().take(16) {
        let op = &all[i];
        if op.end_ns < t {
            continue;
        }
        if &*op.name == "record_param_comms" {
            record = record.or(Some(op));
        } else {
            range = range.or(Some(op));
        }
    }
    (record, range)
}

/// Fills `c`'s missing fields from `from` (a CPU range's).
fn fill(c: &mut Collective, from: &Collective) {
    if c.op.is_none() && from.op.is_some() {
        c.op = from.op;
        c.source = Some(MetaSource::CpuOp);
    }
    macro_rules! take {
        ($($f:ident),*) => {$(
            if c.$f.is_none() {
                c.$f = from.$f.clone();
            }
        )*};
    }
    take!(
        name, in_nelems, out_nelems, group_size, pg_name, pg_desc, pg_ranks, in_split, out_split,
        seq, peer
    );
    if c.datatype.is_none() && from.datatype.is_some() {
        c.datatype = from.datatype;
        c.dtype_name = from.dtype_name.clone();
    }
}
