//! The exact path from an NCCL kernel to the NCCL call that launched it, where an export holds
//! NCCL's own NVTX ranges (domain `NCCL`, e.g. `ncclAllReduce`, `ncclSend`, `ncclGroupEnd`).
//!
//! kernel → the CUDA runtime/driver launch with the same correlation id (the export reader puts
//! its thread and start on the kernel: [`Kernel::launch_tid`], [`Kernel::launch_ns`]) → the
//! innermost NCCL range on that thread of that process containing the launch. NCCL launches a
//! lone collective inside its own call's range; a group (`ncclGroupStart` … `ncclGroupEnd`)
//! launches at `ncclGroupEnd`, and the calls the kernel runs are then the group's operation
//! ranges on that thread since the matching `ncclGroupStart`. No sequence alignment, no
//! guessing: where the launch row or the ranges are missing, the kernel has no join.

use model::log::LogOp;
use model::nsys::{Kernel, NvtxRange};
use model::OpType;
use rustc_hash::FxHashMap;

use crate::symbols::kernel_class;

/// NCCL's NVTX domain name.
pub const NCCL_DOMAIN: &str = "NCCL";

/// The join of one process's kernels.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NvtxJoin {
    /// Per kernel (input order): the innermost NCCL range containing its launch (index into
    /// the ranges given).
    pub launch_range: Vec<Option<usize>>,
    /// Per kernel: the operation ranges it runs (the launch range itself for a lone call, the
    /// group's operations for `ncclGroupEnd`), in call order.
    pub calls: Vec<Vec<usize>>,
}

impl NvtxJoin {
    /// Kernels with a launch range.
    pub fn joined(&self) -> usize {
        self.launch_range.iter().filter(|r| r.is_some()).count()
    }
}

/// The operation an NCCL range names (`ncclAllReduce` → AllReduce), if any.
pub fn range_op(r: &NvtxRange) -> Option<OpType> {
    OpType::from_name(r.text.strip_prefix("nccl")?)
}

fn is_nccl(r: &NvtxRange) -> bool {
    r.domain.as_deref() == Some(NCCL_DOMAIN) && r.end_ns.is_some()
}

/// One thread's NCCL ranges, by start, with the running maximum of their ends (so that the
/// search for a containing range stops as soon as none before can reach the time).
struct Thread {
    idx: Vec<usize>,
    max_end: Vec<i64>,
}

/// Joins each kernel of one process (`pid` of the kernels) to NCCL's ranges in `ranges`.
pub fn join_nvtx(kernels: &[Kernel], ranges: &[NvtxRange]) -> NvtxJoin {
    let mut threads: FxHashMap<(u32, u32), Vec<usize>> = FxHashMap::default();
    for (i, r) in ranges.iter().enumerate() {
        if is_nccl(r) {
            threads.entry((r.pid, r.tid)).or_default().push(i);
        }
    }
    let threads: FxHashMap<(u32, u32), Thread> = threads
        .into_iter()
        .map(|(key, mut idx)| {
            idx.sort_by_key(|&i| (ranges[i].start_ns, i));
            let mut max_end = Vec::with_capacity(idx.len());
            let mut m = i64::MIN;
            for &i in &idx {
                m = m.max(ranges[i].end_ns.unwrap_or(i64::MIN));
                max_end.push(m);
            }
            (key, Thread { idx, max_end })
        })
        .collect();
    let mut out = NvtxJoin {
        launch_range: vec![None; kernels.len()],
        calls: vec![Vec::new(); kernels.len()],
    };
    for (k, kern) in kernels.iter().enumerate() {
        let (Some(t), Some(tid)) = (kern.launch_ns, kern.launch_tid) else {
            continue;
        };
        let Some(th) = threads.get(&(kern.pid, tid)) else {
            continue;
        };
        let Some(r) = innermost(ranges, th, t) else {
            continue;
        };
        out.launch_range[k] = Some(th.idx[r]);
        out.calls[k] = calls_of(ranges, th, r);
    }
    out
}

/// Position in `th` of the innermost range containing `t` (latest start among those that do).
fn innermost(ranges: &[NvtxRange], th: &Thread, t: i64) -> Option<usize> {
    let mut p = th.idx.partition_point(|&i| ranges[i].start_ns <= t);
    while p > 0 {
        p -= 1;
        if th.max_end[p] < t {
            return None;
        }
        if ranges[th.idx[p]].end_ns.is_some_and(|e| e >= t) {
            return Some(p);
        }
    }
    None
}

/// The operation ranges run by a launch inside range `r` (position in `th`).
fn calls_of(ranges: &[NvtxRange], th: &Thread, r: usize) -> Vec<usize> {
    let launch = &ranges[th.idx[r]];
    if range_op(launch).is_some() {
        return vec![th.idx[r]];
    }
    if launch.text != "ncclGroupEnd" {
        return Vec::new();
    }
    // Back to the ncclGroupStart that opened this group (groups nest: count them).
    let mut depth = 0usize;
    let mut first = None;
    for p in (0..r).rev() {
        match ranges[th.idx[p]].text.as_str() {
            "ncclGroupEnd" => depth += 1,
            "ncclGroupStart" if depth == 0 => {
                first = Some(p);
                break;
            }
            "ncclGroupStart" => depth -= 1,
            _ => {}
        }
    }
    let Some(first) = first else {
        return Vec::new();
    };
    (first + 1..r)
        .map(|p| th.idx[p])
        .filter(|&i| range_op(&ranges[i]).is_some())
        .collect()
}

/// How a sequence alignment compares with the exact join, per process.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NvtxCheck {
    /// Kernels joined to NCCL calls.
    pub joined: usize,
    /// Of those, matched by the alignment to log lines whose operations are among the calls
    /// the join gives (a split group's kernel runs part of its group).
    pub agree: usize,
    /// Matched to lines of other operations.
    pub disagree: usize,
    /// Joined but left unmatched by the alignment.
    pub unmatched: usize,
}

/// Compares the log lines matched to each kernel (`matched[k]`, indices into `log_ops`) with
/// the calls the join gives it.
pub fn check(
    join: &NvtxJoin,
    ranges: &[NvtxRange],
    log_ops: &[LogOp],
    matched: &[Option<&[u32]>],
) -> NvtxCheck {
    let mut c = NvtxCheck::default();
    for (k, calls) in join.calls.iter().enumerate() {
        if join.launch_range[k].is_none() || calls.is_empty() {
            continue;
        }
        c.joined += 1;
        let Some(lines) = matched.get(k).copied().flatten() else {
            c.unmatched += 1;
            continue;
        };
        let mut left: Vec<OpType> = calls.iter().filter_map(|&i| range_op(&ranges[i])).collect();
        let fits = lines.iter().all(|&l| {
            let op = log_ops[l as usize].op;
            match left
                .iter()
                .position(|&o| kernel_class(o) == kernel_class(op) && o == op)
            {
                Some(p) => {
                    left.swap_remove(p);
                    true
                }
                None => false,
            }
        });
        if fits {
            c.agree += 1;
        } else {
            c.disagree += 1;
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(tid: u32, start: i64, end: i64, text: &str) -> NvtxRange {
        NvtxRange {
            pid: 7,
            tid,
            start_ns: start,
            end_ns: Some(end),
            text: text.into(),
            domain: Some(NCCL_DOMAIN.into()),
        }
    }

    fn kernel(tid: u32, launch: i64) -> Kernel {
        Kernel {
            pid: 7,
            start_ns: launch + 50,
            end_ns: launch + 90,
            device: 0,
            stream: 1,
            correlation_id: 0,
            name: "ncclDevKernel_SendRecv".into(),
            grid: [1, 1, 1],
            block: [1, 1, 1],
            static_shared_bytes: 0,
            dynamic_shared_bytes: 0,
            registers_per_thread: 0,
            local_memory_total: 0,
            launch_ns: Some(launch),
            launch_tid: Some(tid),
        }
    }

    #[test]
    fn lone_calls_groups_and_other_threads() {
        let mut ranges = vec![
            range(1, 0, 10, "ncclAllReduce"),
            range(1, 20, 21, "ncclGroupStart"),
            range(1, 22, 23, "ncclSend"),
            range(1, 24, 25, "ncclRecv"),
            range(1, 26, 40, "ncclGroupEnd"),
            range(2, 0, 100, "ncclBroadcast"),
        ];
        // Another domain's range around the launch on thread 1 does not count.
        let mut other = range(1, 0, 100, "train_step");
        other.domain = None;
        ranges.push(other);
        let kernels = vec![
            kernel(1, 5),  // inside ncclAllReduce
            kernel(1, 30), // at ncclGroupEnd: runs the Send and the Recv
            kernel(1, 15), // between calls: no NCCL range contains it
            kernel(2, 50), // on thread 2
            kernel(3, 50), // a thread without NCCL ranges
        ];
        let j = join_nvtx(&kernels, &ranges);
        assert_eq!(j.launch_range, vec![Some(0), Some(4), None, Some(5), None]);
        assert_eq!(j.calls[1], vec![2, 3]);
        assert_eq!(j.calls[0], vec![0]);
        assert_eq!(j.joined(), 3);
    }
}
