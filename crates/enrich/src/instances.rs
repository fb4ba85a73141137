//! Cross-rank matching of collective instances.
//!
//! Why: one collective call is printed once by every member; clock sync (thesis §4.2.4), arrival
//! skew and straggler detection compare the members' copies of the same call. NCCL's `opCount`
//! is counted per communicator, so (logical communicator, opCount) names one instance. When the
//! opCounts of a member are unusable (all equal, or going backwards, as in some RCCL builds and
//! merged logs) the k-th distinct operation of each member is matched instead.

use crate::communicators::Communicators;
use model::log::{LogOp, ProcessKey};
use model::OpType;
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, HashMap};

/// One collective (or grouped point-to-point) call as seen by all its members.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    /// Index into [`Communicators::comms`].
    pub comm: usize,
    /// The shared opCount, or `None` when matched by sequence position.
    pub op_count: Option<u64>,
    /// Position of the instance in the communicator's order.
    pub seq: usize,
    pub op: OpType,
    /// (global rank, index into the ops slice of that rank's first line of this instance),
    /// ascending by rank. Duplicated lines and the other ops of a Send/Recv group are left out.
    pub per_rank: Vec<(u32, usize)>,
    /// Every op line of the instance (duplicates and grouped Send/Recv included).
    pub ops: Vec<usize>,
}

/// How unevenly the members arrived at one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skew {
    /// Last start minus first start.
    pub arrival_skew_ns: i64,
    /// The last rank to arrive: the others waited for it.
    pub slowest_rank: u32,
    pub earliest_rank: u32,
    /// Ranks with a time.
    pub ranks: usize,
}

/// What instance matching reads of an operation line.
#[derive(Debug, Clone, Copy)]
pub struct OpKey<'a> {
    pub process: &'a ProcessKey,
    pub comm: u64,
    pub op_count: u64,
    pub op: OpType,
}

impl<'a> OpKey<'a> {
    pub fn of(op: &'a LogOp) -> Self {
        OpKey {
            process: &op.process,
            comm: op.comm,
            op_count: op.op_count,
            op: op.op,
        }
    }
}

/// Matches every op line to its instance; `ops[i]` is [`OpKey::of`] the i-th line.
pub fn match_instances(comms: &Communicators, ops: &[LogOp]) -> Vec<Instance> {
    match_instances_by(comms, ops.len(), |i| ops.get(i).map(OpKey::of))
}

/// [`match_instances`] over `n` op lines read through `key(i)` (the caller's stores in place,
/// not a copy of every line). Ops of processes or pointers not in `comms` are skipped.
pub fn match_instances_by<'a>(
    comms: &Communicators,
    n: usize,
    key: impl Fn(usize) -> Option<OpKey<'a>>,
) -> Vec<Instance> {
    let mut v = Vec::new();
    for_each_instance(comms, n, key, |inst| v.push(inst));
    v
}

/// [`match_instances_by`] one instance at a time, in the same order, holding one
/// communicator's instances at a time (a run's instances together are some 40 bytes an
/// operation: a summary such as the arrival skew needs none of them kept).
pub fn for_each_instance<'a>(
    comms: &Communicators,
    n: usize,
    key: impl Fn(usize) -> Option<OpKey<'a>>,
    mut visit: impl FnMut(Instance),
) {
    // Ops per (logical comm, process), in input order (4 bytes an op: indices fit 32 bits).
    // Each (process, pointer) is looked up once: the keys borrow their process from the log's
    // table, so its address names it (a log's millions of operations come from a few sites).
    let mut member_of: FxHashMap<(*const ProcessKey, u64), Option<usize>> = FxHashMap::default();
    let mut members: Vec<((usize, u32), Vec<u32>)> = Vec::new();
    let mut slot_of: FxHashMap<(usize, u32), usize> = FxHashMap::default();
    for i in 0..n {
        let Some(o) = key(i) else { continue };
        let slot = *member_of
            .entry((o.process as *const ProcessKey, o.comm))
            .or_insert_with(|| {
                let c = comms.comm_of(o.process, o.comm)?;
                let r = comms.rank_of(o.process)?;
                Some(*slot_of.entry((c, r)).or_insert_with(|| {
                    members.push(((c, r), Vec::new()));
                    members.len() - 1
                }))
            });
        if let Some(slot) = slot {
            members[slot].1.push(i as u32);
        }
    }
    members.sort_unstable_by_key(|(member, _)| *member);
    let per_member = members;
    // A communicator uses opCounts only when every member's are non-decreasing and not all equal.
    let mut usable: HashMap<usize, bool> = HashMap::new();
    for ((c, _), idx) in &per_member {
        // Only indices with a key are kept, so every one reads back.
        let oc: Vec<u64> = idx
            .iter()
            .filter_map(|&i| key(i as usize))
            .map(|o| o.op_count)
            .collect();
        let ok = oc.windows(2).all(|w| w[0] <= w[1]) && (oc.len() < 2 || oc[0] != oc[oc.len() - 1]);
        let e = usable.entry(*c).or_insert(true);
        *e &= ok;
    }
    // One communicator at a time: its members are adjacent in `per_member`'s order.
    let mut members = per_member.iter().peekable();
    while let Some(&&((c, _), _)) = members.peek() {
        let by_count = usable.get(&c).copied().unwrap_or(false);
        let mut out: BTreeMap<u64, Instance> = BTreeMap::new();
        while let Some(((_, r), idx)) = members.next_if(|((cc, _), _)| *cc == c) {
            // Sequence position: a new operation starts when the opCount or the op changes (a
            // duplicated line repeats both; a Send/Recv group shares its opCount).
            let mut pos = 0u64;
            let mut prev: Option<(u64, OpType)> = None;
            for &i in idx {
                let i = i as usize;
                let Some(o) = key(i) else { continue };
                let grouped = prev.is_some_and(|(pc, pop)| {
                    pc == o.op_count && (pop == o.op || (pop.is_p2p() && o.op.is_p2p()))
                });
                if prev.is_some() && !grouped {
                    pos += 1;
                }
                prev = Some((o.op_count, o.op));
                let at = if by_count { o.op_count } else { pos };
                let inst = out.entry(at).or_insert_with(|| Instance {
                    comm: c,
                    op_count: by_count.then_some(o.op_count),
                    seq: 0,
                    op: o.op,
                    per_rank: Vec::new(),
                    ops: Vec::new(),
                });
                inst.ops.push(i);
                if !inst.per_rank.iter().any(|(rr, _)| rr == r) {
                    inst.per_rank.push((*r, i));
                }
            }
        }
        for (seq, mut inst) in out.into_values().enumerate() {
            inst.per_rank.sort_unstable();
            inst.seq = seq;
            visit(inst);
        }
    }
}

/// Arrival skew of one instance given a start time per op (`starts[i]` for `ops[i]`, e.g. the
/// start of the kernel aligned to it). `None` with fewer than two timed ranks.
pub fn skew(inst: &Instance, starts: &[Option<i64>]) -> Option<Skew> {
    let timed: Vec<(i64, u32)> = inst
        .per_rank
        .iter()
        .filter_map(|&(r, i)| starts.get(i).copied().flatten().map(|t| (t, r)))
        .collect();
    if timed.len() < 2 {
        return None;
    }
    let first = timed.iter().min()?;
    let last = timed.iter().max()?;
    Some(Skew {
        arrival_skew_ns: last.0 - first.0,
        slowest_rank: last.1,
        earliest_rank: first.1,
        ranks: timed.len(),
    })
}

/// The (global rank, time) lists [`crate::clock::synchronise`] takes: one per instance with at
/// least two timed ranks, `starts[i]` being the time of `ops[i]` (e.g. its kernel's start).
pub fn timed(instances: &[Instance], starts: &[Option<i64>]) -> Vec<Vec<(u32, i64)>> {
    instances
        .iter()
        .map(|inst| {
            inst.per_rank
                .iter()
                .filter_map(|&(r, i)| starts.get(i).copied().flatten().map(|t| (r, t)))
                .collect::<Vec<_>>()
        })
        .filter(|v| v.len() >= 2)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::communicators::group;

    #[test]
    fn matches_dp4_instances_and_skew() {
        let (_run, inits, ops) = crate::test_support::preset_logs("dp4");
        let comms = group(&inits, &ops);
        let inst = match_instances(&comms, &ops);
        assert!(!inst.is_empty());
        // Every instance of this clean run has all 4 ranks.
        assert!(inst.iter().all(|i| i.per_rank.len() == 4));
        // Every op belongs to exactly one instance.
        assert_eq!(inst.iter().map(|i| i.ops.len()).sum::<usize>(), ops.len());
        let first = &inst[0];
        let mut starts = vec![None; ops.len()];
        for (k, &(_, i)) in first.per_rank.iter().enumerate() {
            starts[i] = Some(1_000 + 10 * k as i64);
        }
        let s = skew(first, &starts).expect("skew");
        assert_eq!(s.arrival_skew_ns, 30);
        assert_eq!(s.slowest_rank, 3);
        assert_eq!(s.earliest_rank, 0);
        assert_eq!(timed(&inst, &starts).len(), 1);
    }
}
