//! Cross-rank consensus: which call each collective kernel runs, from the other ranks.
//!
//! Why: within one process, a run of identical calls (hundreds of same-sized TP AllReduces)
//! with a kernel missing is ambiguous: any placement of the gap scores the same, and without
//! log timestamps nothing in that process says which call lost its kernel. But every member of
//! a communicator runs the same collectives in the same order, the kernels of one collective
//! overlap in time on all members (no rank finishes before every rank has started), and drops
//! on different ranks are independent. So, per clock domain (processes whose kernel times share
//! a clock: one export, one node):
//!
//! 1. streams of different processes that carry the same communicator are linked by voting
//!    (their kernels overlap in time, class for class);
//! 2. the kernels of a linked group are clustered into collective instances (kernels of distinct
//!    processes that all overlap), numbered in time order: the communicator's call sequence,
//!    holes only where every rank lost the kernel;
//! 3. per process, the offset between that numbering and the log's opCounts is chosen among the
//!    offsets the first alignment suggests, by how many kernels it gives a log line of their class;
//! 4. each kernel gets the hint (communicator, instance number + offset), which the scoring
//!    rewards when a log line carries it (placeholders of missing lines included).
//!
//! Point-to-point kernels are left out, a SendRecv involving two ranks, not the communicator —
//! except the SendRecv kernels of all-to-all groups (a Send and a Recv to every member, itself
//! included: MoE token dispatch), which every member launches together like a collective's,
//! where each group runs as one kernel ([`all_to_all_streams`]). A SendRecv kernel no other
//! member's overlaps is not one of them (another NCCL's, with no log): it gets no instance
//! number and no hint.

use crate::per_process::ProcessAlignment;
use crate::symbols::{class_key, kernel_class, kernel_datatype, kernel_symbol};
use model::log::LogOp;
use model::nsys::{Kernel, KernelName, NvtxRange};
use model::{DataType, OpType};

/// A kernel of one process in a linked group: (kernel, instance number, class, datatype).
type Mine = (usize, usize, u64, Option<DataType>);
use rustc_hash::{FxHashMap, FxHashSet};

/// One process's inputs, as [`crate::align_all`] takes them.
#[derive(Debug, Clone, Copy)]
pub struct ProcessInput<'a> {
    pub log_ops: &'a [LogOp],
    pub kernels: &'a [Kernel],
    /// Decoded kernel names, indexed like `kernels` (may be shorter).
    pub names: &'a [Option<KernelName>],
    /// Processes with the same value have kernel times on the same clock (one node's export).
    pub clock: u64,
    /// The export's NVTX ranges (any process: the join keeps this one's); empty when none.
    pub nvtx: &'a [NvtxRange],
}

/// A collective kernel of one process.
#[derive(Debug, Clone, Copy)]
struct Coll {
    k: usize,
    start: i64,
    end: i64,
    class: u64,
    /// Of a reducing op, when the kernel name gives it.
    dtype: Option<DataType>,
    stream: u32,
}

fn collectives(p: &ProcessInput<'_>, first: &[Option<usize>]) -> Vec<Coll> {
    let a2a = all_to_all_streams(p, first);
    let mut out: Vec<Coll> = p
        .kernels
        .iter()
        .enumerate()
        .filter_map(|(k, kern)| {
            let sym = kernel_symbol(kern, p.names.get(k).and_then(|n| n.as_ref()))?;
            let op = sym.op?;
            let collective = !op.is_p2p() && kernel_class(op) == op;
            let dispatch = op == OpType::SendRecv && a2a.contains(&kern.stream);
            (collective || dispatch).then_some(Coll {
                k,
                start: kern.start_ns,
                end: kern.end_ns.max(kern.start_ns),
                class: class_key(Some(op)),
                dtype: sym.datatype,
                stream: kern.stream,
            })
        })
        .collect();
    out.sort_by_key(|c| (c.start, c.k));
    out
}

/// The kernel streams of a process that run its all-to-all groups, one kernel a group: streams
/// whose SendRecv kernels the first alignment paired with lines of all-to-all groups (four in
/// five or more), in a process with fewer than half again as many SendRecv kernels as Send/Recv
/// groups (where NCCL ran a group over several kernels, one per peer, they do not line up
/// across ranks as one instance each).
fn all_to_all_streams(p: &ProcessInput<'_>, first: &[Option<usize>]) -> FxHashSet<u32> {
    // The process's groups: (communicator, opCount) → peers reached, and the log's size of
    // each communicator; its own rank in it from a self-send if there is one.
    let mut peers: FxHashMap<(u64, u64), FxHashSet<i64>> = FxHashMap::default();
    let mut size: FxHashMap<u64, u32> = FxHashMap::default();
    for o in p.log_ops.iter().filter(|o| o.op.is_p2p()) {
        peers
            .entry((o.comm, o.op_count))
            .or_default()
            .insert(o.root);
        size.insert(o.comm, o.nranks);
    }
    let send_recv = p
        .kernels
        .iter()
        .enumerate()
        .filter(|(k, kern)| {
            kernel_symbol(kern, p.names.get(*k).and_then(|n| n.as_ref()))
                .is_some_and(|s| s.op == Some(OpType::SendRecv))
        })
        .count();
    if peers.is_empty() || 2 * send_recv >= 3 * peers.len() {
        return FxHashSet::default();
    }
    let all_peers = |comm: u64, oc: u64| {
        let n = size.get(&comm).copied().unwrap_or(0) as usize;
        peers
            .get(&(comm, oc))
            .is_some_and(|q| n >= 2 && q.len() >= n)
    };
    let mut votes: FxHashMap<u32, (usize, usize)> = FxHashMap::default();
    for (k, kern) in p.kernels.iter().enumerate() {
        let Some(&o) = first
            .get(k)
            .and_then(|l| l.and_then(|l| p.log_ops.get(l)))
            .as_ref()
        else {
            continue;
        };
        if !o.op.is_p2p() {
            continue;
        }
        let v = votes.entry(kern.stream).or_default();
        v.1 += 1;
        if all_peers(o.comm, o.op_count) {
            v.0 += 1;
        }
    }
    votes
        .into_iter()
        .filter(|(_, (a2a, all))| *all > 0 && 5 * a2a >= 4 * all)
        .map(|(s, _)| s)
        .collect()
}

/// Per kernel stream of a process: the size (`nranks`) of the communicator whose lines the first
/// alignment paired with most of its kernels.
fn stream_ranks(p: &ProcessInput<'_>, first: &[Option<usize>]) -> FxHashMap<u32, u32> {
    let mut votes: FxHashMap<(u32, u32), usize> = FxHashMap::default();
    for (k, kern) in p.kernels.iter().enumerate() {
        if let Some(o) = first.get(k).and_then(|l| l.and_then(|l| p.log_ops.get(l))) {
            *votes.entry((kern.stream, o.nranks)).or_default() += 1;
        }
    }
    let mut best: FxHashMap<u32, (usize, u32)> = FxHashMap::default();
    for ((stream, n), v) in votes {
        let e = best.entry(stream).or_insert((v, n));
        if (v, std::cmp::Reverse(n)) > (e.0, std::cmp::Reverse(e.1)) {
            *e = (v, n);
        }
    }
    best.into_iter().map(|(s, (_, n))| (s, n)).collect()
}

/// Union-find over (process, stream) nodes.
struct Links {
    parent: Vec<usize>,
}

impl Links {
    fn find(&mut self, x: usize) -> usize {
        let mut r = x;
        while self.parent[r] != r {
            r = self.parent[r];
        }
        let mut y = x;
        while self.parent[y] != r {
            let next = self.parent[y];
            self.parent[y] = r;
            y = next;
        }
        r
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra.max(rb)] = ra.min(rb);
        }
    }
}

/// Per process (indexed like `inputs`), per kernel: the hinted (communicator, opCount).
pub fn call_hints(
    inputs: &[ProcessInput<'_>],
    first: &[ProcessAlignment],
) -> Vec<Vec<Option<(u64, u64)>>> {
    let lines: Vec<Vec<Option<usize>>> = first.iter().map(first_lines).collect();
    let lines: Vec<&[Option<usize>]> = lines.iter().map(Vec::as_slice).collect();
    call_hints_from_lines(inputs, &lines)
}

/// All the consensus reads of a first alignment: per kernel, the first log line matched to it.
/// Kept instead of the whole alignment by a caller that re-runs the consensus later
/// ([`crate::all::align_all_reusing`]).
pub fn first_lines(first: &ProcessAlignment) -> Vec<Option<usize>> {
    first
        .per_kernel
        .iter()
        .map(|m| m.map(|m| m.first_line()))
        .collect()
}

/// [`call_hints`] from each process's [`first_lines`].
pub fn call_hints_from_lines(
    inputs: &[ProcessInput<'_>],
    first: &[&[Option<usize>]],
) -> Vec<Vec<Option<(u64, u64)>>> {
    let mut hints: Vec<Vec<Option<(u64, u64)>>> =
        inputs.iter().map(|p| vec![None; p.kernels.len()]).collect();
    let mut clocks: Vec<u64> = inputs.iter().map(|p| p.clock).collect();
    clocks.sort_unstable();
    clocks.dedup();
    for clock in clocks {
        let procs: Vec<usize> = (0..inputs.len())
            .filter(|&p| inputs[p].clock == clock)
            .collect();
        if procs.len() >= 2 {
            domain(inputs, first, &procs, &mut hints);
        }
    }
    hints
}

/// Steps 1–4 for the processes `procs` of one clock domain.
fn domain(
    inputs: &[ProcessInput<'_>],
    first: &[&[Option<usize>]],
    procs: &[usize],
    hints: &mut [Vec<Option<(u64, u64)>>],
) {
    let colls: Vec<Vec<Coll>> = procs
        .iter()
        .map(|&p| collectives(&inputs[p], first[p]))
        .collect();
    let mut calls_of: Vec<Option<LogCalls>> = procs.iter().map(|_| None).collect();
    let mut ranks_of: Vec<Option<FxHashMap<u32, u32>>> = procs.iter().map(|_| None).collect();
    // Nodes: (position in `procs`, stream).
    let mut node_of: FxHashMap<(usize, u32), usize> = FxHashMap::default();
    let mut sizes: Vec<usize> = Vec::new();
    for (a, cs) in colls.iter().enumerate() {
        for c in cs {
            let n = *node_of.entry((a, c.stream)).or_insert_with(|| {
                sizes.push(0);
                sizes.len() - 1
            });
            sizes[n] += 1;
        }
    }
    // 1. Stream links by overlap votes.
    let mut links = Links {
        parent: (0..sizes.len()).collect(),
    };
    for a in 0..colls.len() {
        for b in a + 1..colls.len() {
            let votes = overlap_votes(&colls[a], &colls[b]);
            let mut best: FxHashMap<u32, (u32, usize)> = FxHashMap::default();
            for (&(sa, sb), &v) in &votes {
                let e = best.entry(sa).or_insert((sb, 0));
                if v > e.1 || (v == e.1 && sb < e.0) {
                    *e = (sb, v);
                }
            }
            for (sa, (sb, v)) in best {
                let (na, nb) = (node_of[&(a, sa)], node_of[&(b, sb)]);
                if 2 * v >= sizes[na].min(sizes[nb]) {
                    links.union(na, nb);
                }
            }
        }
    }
    let mut groups: FxHashMap<usize, Vec<(usize, u32)>> = FxHashMap::default();
    let mut nodes: Vec<(&(usize, u32), &usize)> = node_of.iter().collect();
    nodes.sort();
    for (&key, &n) in nodes {
        let root = links.find(n);
        groups.entry(root).or_default().push(key);
    }
    for members in groups.values() {
        if members.len() < 2
            || members
                .iter()
                .any(|m| members.iter().filter(|x| x.0 == m.0).count() > 1)
        {
            continue; // one process alone, or two streams of one process: no clear communicator
        }
        // More processes than the communicator has ranks: streams of two communicators that
        // run in step (data-parallel replicas of one TP group each) were linked, and their
        // instances would interleave.
        let ranks = members
            .iter()
            .filter_map(|&(a, s)| {
                let of = ranks_of[a]
                    .get_or_insert_with(|| stream_ranks(&inputs[procs[a]], first[procs[a]]));
                of.get(&s).copied()
            })
            .min();
        if ranks.is_some_and(|n| members.len() > n as usize) {
            continue;
        }
        // 2. Instances.
        let mut ks: Vec<(usize, Coll)> = members
            .iter()
            .flat_map(|&(a, s)| {
                colls[a]
                    .iter()
                    .filter(move |c| c.stream == s)
                    .map(move |&c| (a, c))
            })
            .collect();
        ks.sort_by_key(|(a, c)| (c.start, *a, c.k));
        let mut seq: Vec<usize> = Vec::with_capacity(ks.len());
        let (mut n, mut in_inst, mut min_end, mut class) = (0usize, Vec::new(), i64::MIN, 0u64);
        for (a, c) in &ks {
            // A late starter overlaps the others for most of its run; the next collective of a
            // rank that lost this one's kernel may start a few µs before the others end.
            let joins = !in_inst.is_empty()
                && !in_inst.contains(a)
                && c.class == class
                && 2 * (min_end - c.start) > c.end - c.start;
            if joins {
                in_inst.push(*a);
                min_end = min_end.min(c.end);
            } else {
                if !in_inst.is_empty() {
                    n += 1;
                }
                in_inst = vec![*a];
                min_end = c.end;
                class = c.class;
            }
            seq.push(n);
        }
        let strays = lone_dispatch_kernels(&ks, &mut seq, members.len());
        // 3–4. Per process: offset to the log's opCounts, then hints.
        for &(a, _) in members {
            let p = procs[a];
            let mine: Vec<Mine> = ks
                .iter()
                .zip(&seq)
                .zip(&strays)
                .filter(|(_, &stray)| !stray)
                .map(|(pair, _)| pair)
                .filter(|((x, _), _)| *x == a)
                .map(|((_, c), &s)| (c.k, s, c.class, c.dtype))
                .collect();
            // A process is in one group per linked stream: its log is indexed once.
            let calls = calls_of[a].get_or_insert_with(|| LogCalls::of(&inputs[p]));
            for (k, call) in offsets(&inputs[p], first[p], &mine, calls) {
                hints[p][k] = Some(call);
            }
        }
    }
}

/// The SendRecv kernels of instances that half of the group's `processes` or fewer ran (an
/// all-to-all runs on every member; these are another NCCL's, which writes no log, one rank's
/// or a few at the same moment by chance), flagged; the instances after each are numbered one
/// lower, as if it had not been there.
fn lone_dispatch_kernels(ks: &[(usize, Coll)], seq: &mut [usize], processes: usize) -> Vec<bool> {
    let send_recv = class_key(Some(OpType::SendRecv));
    let mut members: FxHashMap<usize, usize> = FxHashMap::default();
    for &n in seq.iter() {
        *members.entry(n).or_default() += 1;
    }
    let stray: Vec<bool> = ks
        .iter()
        .zip(seq.iter())
        .map(|((_, c), n)| c.class == send_recv && 2 * members[n] <= processes.max(2))
        .collect();
    let mut removed = 0usize;
    let mut last: Option<usize> = None;
    for (n, &is_stray) in seq.iter_mut().zip(&stray) {
        if is_stray && last != Some(*n) {
            removed += 1;
            last = Some(*n);
        }
        *n -= removed.min(*n);
    }
    stray
}

/// Candidate offsets kept per stream, from the first alignment's pairs.
const CANDIDATES: usize = 8;
/// Points of the offset path (see [`offsets`]): a log line of the kernel's class at the
/// offset, one of another class, and a change of offset.
const SAME_CLASS: i64 = 1;
const OTHER_CLASS: i64 = -2;
const OUT_OF_RANGE: i64 = -1;
const SWITCH: i64 = -4;

/// Per kernel of `mine` (kernel, instance number, class; in instance order): the (communicator,
/// opCount) it runs. The map instance → opCount is an offset per communicator that changes
/// only where the numbering has a hole (a collective lost on every rank) or the stream changes
/// communicator, so the offsets form a path: among the offsets the first alignment's pairs
/// suggest, the path that gives most kernels a log line of their class, with a cost per change
/// (Viterbi). Runs of identical calls say nothing; the offset carries through them from where
/// the classes pin it.
fn offsets(
    input: &ProcessInput<'_>,
    first: &[Option<usize>],
    mine: &[Mine],
    calls: &LogCalls,
) -> Vec<(usize, (u64, u64))> {
    // Each kernel's offset as the first alignment pairs it.
    let own: Vec<Option<(u64, i64)>> = mine
        .iter()
        .map(|&(k, s, _, _)| {
            let o = &input.log_ops[(*first.get(k)?)?];
            Some((o.comm, o.op_count as i64 - s as i64))
        })
        .collect();
    let mut suggested: FxHashMap<(u64, i64), usize> = FxHashMap::default();
    for o in own.iter().flatten() {
        *suggested.entry(*o).or_default() += 1;
    }
    let mut cands: Vec<((u64, i64), usize)> = suggested.into_iter().collect();
    cands.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    cands.truncate(CANDIDATES);
    let cands: Vec<(u64, i64)> = cands.into_iter().map(|c| c.0).collect();
    if cands.is_empty() || mine.is_empty() {
        return Vec::new();
    }
    let LogCalls { line, last } = calls;
    let emit = |i: usize, (comm, off): (u64, i64)| -> i64 {
        let (_, s, class, dtype) = mine[i];
        let oc = s as i64 + off;
        if oc < 0 || oc as u64 > last.get(&comm).copied().unwrap_or(0) {
            return OUT_OF_RANGE;
        }
        match line.get(&(comm, oc as u64)) {
            Some(&(c, d)) if c == class && (dtype.is_none() || d == dtype) => SAME_CLASS,
            Some(_) => OTHER_CLASS,
            None => 0,
        }
    };
    // Viterbi: score[c] of the best path ending in candidate c; back[i * nc + c] its
    // predecessor (one flat table: a row per kernel was two allocations per kernel).
    let nc = cands.len();
    let mut score: Vec<i64> = cands.iter().map(|&c| emit(0, c)).collect();
    let mut next: Vec<i64> = vec![0; nc];
    let mut back: Vec<u8> = Vec::with_capacity(mine.len() * nc);
    back.extend(0..nc as u8);
    for i in 1..mine.len() {
        let (bi, bv) = score
            .iter()
            .enumerate()
            .max_by(|x, y| x.1.cmp(y.1).then(y.0.cmp(&x.0)))
            .map(|(i, &v)| (i, v))
            .unwrap_or((0, 0));
        for (c, &cand) in cands.iter().enumerate() {
            let (from, v) = if score[c] >= bv + SWITCH {
                (c, score[c])
            } else {
                (bi, bv + SWITCH)
            };
            back.push(from as u8);
            next[c] = v + emit(i, cand);
        }
        std::mem::swap(&mut score, &mut next);
    }
    let mut c = score
        .iter()
        .enumerate()
        .max_by(|x, y| x.1.cmp(y.1).then(y.0.cmp(&x.0)))
        .map_or(0, |(i, _)| i);
    let mut out = Vec::with_capacity(mine.len());
    for i in (0..mine.len()).rev() {
        let (k, s, _, _) = mine[i];
        let (comm, off) = cands[c];
        let oc = s as i64 + off;
        if oc >= 0 {
            out.push((k, (comm, oc as u64)));
        }
        c = back[i * nc + c] as usize;
    }
    out
}

/// What [`offsets`] reads of a process's log: per (communicator, opCount), the class and
/// datatype of its first line, and per communicator the highest opCount.
struct LogCalls {
    line: FxHashMap<(u64, u64), (u64, Option<DataType>)>,
    last: FxHashMap<u64, u64>,
}

impl LogCalls {
    fn of(input: &ProcessInput<'_>) -> LogCalls {
        let mut line: FxHashMap<(u64, u64), (u64, Option<DataType>)> = FxHashMap::default();
        let mut last: FxHashMap<u64, u64> = FxHashMap::default();
        for o in input.log_ops {
            line.entry((o.comm, o.op_count))
                .or_insert((class_key(Some(o.op)), o.datatype.map(kernel_datatype)));
            let e = last.entry(o.comm).or_insert(o.op_count);
            *e = (*e).max(o.op_count);
        }
        LogCalls { line, last }
    }
}

/// Votes (stream of `a`, stream of `b`) for every pair of same-class kernels that run
/// together (overlap for more than half of the shorter one).
fn overlap_votes(a: &[Coll], b: &[Coll]) -> FxHashMap<(u32, u32), usize> {
    let longest = b.iter().map(|c| c.end - c.start).max().unwrap_or(0);
    let mut votes = FxHashMap::default();
    // Both sides are in start order, so the first `b` that may overlap only moves forward (a
    // binary search per kernel was a fifth of the consensus).
    let mut from = 0;
    for x in a {
        while from < b.len() && b[from].start < x.start - longest {
            from += 1;
        }
        for y in b[from..].iter().take_while(|y| y.start < x.end) {
            let overlap = x.end.min(y.end) - x.start.max(y.start);
            if y.class == x.class && 2 * overlap > (x.end - x.start).min(y.end - y.start) {
                *votes.entry((x.stream, y.stream)).or_default() += 1;
            }
        }
    }
    votes
}
