//! Logical communicators across processes, and global ranks (thesis §4.2.3).
//!
//! Why: a communicator pointer (`comm 0x...`) is only meaningful inside one process; the same
//! NCCL communicator has a different pointer in every member. Cross-rank analyses (instance
//! matching, clock sync, parallelism) need the logical communicator, so (process, pointer) pairs
//! are grouped:
//! 1. by `commId` from the `Init COMPLETE` lines when the log prints it (a hash all members share);
//! 2. otherwise by the thesis' sequence method: members of one communicator issue the same
//!    collectives in the same order with the same count and datatype, and print the same nranks.
//!
//! Global rank of a process: its rank in the world communicator (the one with nranks = world
//! size) when init lines give it; otherwise node index (hosts sorted by name) × GPUs per node +
//! local rank (`cudaDev`), the thesis' rule.

use model::log::{CommInit, LogOp, ProcessKey};
use model::OpType;
use rustc_hash::FxHashMap;
use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};

/// How the members of a logical communicator were tied together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupedBy {
    /// The shared `commId` of the init lines.
    CommId(u64),
    /// Identical operation sequences and nranks. `ambiguous` when more processes shared the
    /// sequence than nranks allows and they were split by consecutive global ranks (a guess).
    Sequence { ambiguous: bool },
}

/// One communicator as the job sees it, across all its member processes.
#[derive(Debug, Clone, PartialEq)]
pub struct LogicalComm {
    /// `0x<commId>` when known, else `seq-<n>`.
    pub id: String,
    /// nranks as printed (may exceed `members.len()` when some logs are missing).
    pub size: u32,
    /// (process, its pointer for this communicator, its rank in the communicator), ordered by
    /// rank in the communicator. Without init lines the rank is the position among the members'
    /// global ranks (Megatron and PyTorch order group ranks ascending).
    pub members: Vec<(ProcessKey, u64, u32)>,
    /// Global ranks of the members, ascending.
    pub global_ranks: Vec<u32>,
    /// The communicator this one was split from (`ncclCommSplit`), as an index into
    /// [`Communicators::comms`].
    pub split_parent: Option<usize>,
    pub grouped_by: GroupedBy,
    /// Whether `members[..].2` came from init lines (false: inferred from global-rank order).
    pub ranks_from_init: bool,
}

/// All logical communicators of a job and the global rank of every process.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Communicators {
    pub comms: Vec<LogicalComm>,
    /// Global rank per process.
    pub ranks: BTreeMap<ProcessKey, u32>,
    /// Largest nranks seen (the world communicator's size).
    pub world_size: u32,
    /// Whether `ranks` came from init lines (true) or from hosts and local ranks (false).
    pub ranks_from_init: bool,
    /// Looked up once per operation in several analyses: Fx, not SipHash.
    index: FxHashMap<(ProcessKey, u64), usize>,
}

impl Communicators {
    /// Global rank of a process.
    pub fn rank_of(&self, p: &ProcessKey) -> Option<u32> {
        self.ranks.get(p).copied()
    }

    /// The logical communicator (index into `comms`) of a process' pointer.
    pub fn comm_of(&self, p: &ProcessKey, comm: u64) -> Option<usize> {
        self.index.get(&(p.clone(), comm)).copied()
    }

    /// [`Communicators::comm_of`] for one process, each pointer looked up once: for a pass
    /// over a process's calls, which use a few pointers millions of times.
    pub fn comm_lookup<'a>(&'a self, p: &'a ProcessKey) -> impl FnMut(u64) -> Option<usize> + 'a {
        let mut seen: FxHashMap<u64, Option<usize>> = FxHashMap::default();
        move |comm| *seen.entry(comm).or_insert_with(|| self.comm_of(p, comm))
    }

    /// The rank of a process inside logical communicator `c`.
    pub fn rank_in(&self, c: usize, p: &ProcessKey) -> Option<u32> {
        self.comms
            .get(c)?
            .members
            .iter()
            .find(|m| &m.0 == p)
            .map(|m| m.2)
    }
}

#[derive(Default)]
struct Pair {
    nranks: u32,
    rank: Option<u32>,
    comm_id: Option<u64>,
    split_parent: Option<u64>,
    /// Collective signature, duplicates removed: (op, count, datatype code).
    seq: Vec<(OpType, u64, u32)>,
    /// Log timestamp of each `seq` entry, when the log has them.
    stamps: Vec<Option<i64>>,
    /// Distinct point-to-point (count, datatype) pairs, for communicators with no collective.
    p2p: BTreeSet<(u64, u32)>,
    last_op_count: Option<(u64, OpType)>,
}

/// Groups (process, pointer) pairs into logical communicators and assigns global ranks. `ops`
/// is any walk over the log operations (the caller's logs in place: no copy of them is needed).
pub fn group(
    inits: &[CommInit],
    ops: impl IntoIterator<Item = impl Borrow<LogOp>>,
) -> Communicators {
    let (pairs, cuda_dev) = collect_pairs(inits, ops);
    let world_size = pairs.values().map(|p| p.nranks).max().unwrap_or(0);
    let (ranks, ranks_from_init) = global_ranks(&pairs, &cuda_dev, world_size);
    let groups = member_groups(&pairs, &ranks);
    let mut comms: Vec<LogicalComm> = Vec::new();
    let mut seq_n = 0;
    for (ms, by, id) in groups {
        let id = match id {
            Some(i) => format!("0x{i:x}"),
            None => {
                seq_n += 1;
                format!("seq-{seq_n}")
            }
        };
        comms.push(logical_comm(ms, by, id, &pairs, &ranks));
    }
    // Stable order: largest first, then by rank set (the world communicator comes first).
    comms.sort_by(|a, b| {
        (std::cmp::Reverse(a.size), &a.global_ranks, &a.id).cmp(&(
            std::cmp::Reverse(b.size),
            &b.global_ranks,
            &b.id,
        ))
    });
    let mut index = FxHashMap::default();
    for (ci, c) in comms.iter().enumerate() {
        for m in &c.members {
            index.insert((m.0.clone(), m.1), ci);
        }
    }
    // Split parents: the parent pointer is in the same process.
    for c in comms.iter_mut() {
        c.split_parent = c.members.iter().find_map(|m| {
            let pp = pairs.get(&(m.0.clone(), m.1))?.split_parent?;
            index.get(&(m.0.clone(), pp)).copied()
        });
    }
    Communicators {
        comms,
        ranks,
        world_size,
        ranks_from_init,
        index,
    }
}

/// Every (process, pointer) pair of the init lines and operations with what groups it, and
/// each process's CUDA device (the first one seen).
fn collect_pairs(
    inits: &[CommInit],
    ops: impl IntoIterator<Item = impl Borrow<LogOp>>,
) -> (BTreeMap<(ProcessKey, u64), Pair>, BTreeMap<ProcessKey, u32>) {
    let mut pairs: BTreeMap<(ProcessKey, u64), Pair> = BTreeMap::new();
    let mut cuda_dev: BTreeMap<ProcessKey, u32> = BTreeMap::new();
    for i in inits {
        let p = pairs.entry((i.process.clone(), i.comm)).or_default();
        p.nranks = p.nranks.max(i.nranks);
        p.rank = p.rank.or(Some(i.rank));
        p.comm_id = p.comm_id.or(i.comm_id);
        p.split_parent = p.split_parent.or(i.split_parent);
        if let Some(d) = i.cuda_dev {
            cuda_dev.entry(i.process.clone()).or_insert(d);
        }
    }
    for o in ops {
        let o = o.borrow();
        let p = pairs.entry((o.process.clone(), o.comm)).or_default();
        p.nranks = p.nranks.max(o.nranks);
        // Looked up before inserting: the host string is copied once per process, not per op.
        if !cuda_dev.contains_key(&o.process) {
            cuda_dev.insert(o.process.clone(), o.cuda_dev);
        }
        // A pair with a commId is grouped by it: its sequence (16 + 16 bytes an operation)
        // would only be kept to be dropped.
        if p.comm_id.is_some() {
            continue;
        }
        if o.op.is_p2p() {
            p.p2p.insert((o.count, o.datatype_code));
            continue;
        }
        // A line printed twice (same opCount, same op) is one operation.
        if p.last_op_count == Some((o.op_count, o.op)) {
            continue;
        }
        p.last_op_count = Some((o.op_count, o.op));
        p.seq.push((o.op, o.count, o.datatype_code));
        p.stamps.push(o.timestamp_ns);
    }
    (pairs, cuda_dev)
}

/// The members of one logical communicator, how they were tied, and the commId if any.
type Group = (Vec<(ProcessKey, u64)>, GroupedBy, Option<u64>);

/// The pairs grouped into communicators: by commId first, else by (nranks, sequence), a
/// sequence shared by more processes than nranks allows [`split`] apart.
fn member_groups(
    pairs: &BTreeMap<(ProcessKey, u64), Pair>,
    ranks: &BTreeMap<ProcessKey, u32>,
) -> Vec<Group> {
    let mut by_id: BTreeMap<u64, Vec<(ProcessKey, u64)>> = BTreeMap::new();
    type SeqKey = (u32, Vec<(OpType, u64, u32)>, BTreeSet<(u64, u32)>);
    let mut by_seq: BTreeMap<SeqKey, Vec<(ProcessKey, u64)>> = BTreeMap::new();
    for (k, p) in pairs {
        match p.comm_id {
            Some(id) => by_id.entry(id).or_default().push(k.clone()),
            None => {
                let p2p = if p.seq.is_empty() {
                    p.p2p.clone()
                } else {
                    BTreeSet::new()
                };
                by_seq
                    .entry((p.nranks, p.seq.clone(), p2p))
                    .or_default()
                    .push(k.clone())
            }
        }
    }
    let rank_of = |k: &(ProcessKey, u64)| ranks.get(&k.0).copied().unwrap_or(u32::MAX);
    let mut groups: Vec<Group> = Vec::new();
    for (id, ms) in by_id {
        groups.push((ms, GroupedBy::CommId(id), Some(id)));
    }
    for ((nranks, _, _), mut ms) in by_seq {
        ms.sort_by_key(|k| (rank_of(k), k.clone()));
        let n = nranks.max(1) as usize;
        let (parts, ambiguous) = split(ms, n, pairs);
        for part in parts {
            groups.push((part, GroupedBy::Sequence { ambiguous }, None));
        }
    }
    groups
}

/// One group's communicator (named `id`, its split parent still unknown): its size, its
/// members with their ranks in it (from init lines, else by global rank order) and their
/// global ranks.
fn logical_comm(
    ms: Vec<(ProcessKey, u64)>,
    by: GroupedBy,
    id: String,
    pairs: &BTreeMap<(ProcessKey, u64), Pair>,
    ranks: &BTreeMap<ProcessKey, u32>,
) -> LogicalComm {
    let rank_of = |k: &(ProcessKey, u64)| ranks.get(&k.0).copied().unwrap_or(u32::MAX);
    let size = ms
        .iter()
        .filter_map(|k| pairs.get(k))
        .map(|p| p.nranks)
        .max()
        .unwrap_or(0);
    let from_init = ms
        .iter()
        .all(|k| pairs.get(k).is_some_and(|p| p.rank.is_some()));
    let mut by_global: Vec<(u32, (ProcessKey, u64))> =
        ms.iter().map(|k| (rank_of(k), k.clone())).collect();
    by_global.sort();
    let mut members: Vec<(ProcessKey, u64, u32)> = by_global
        .iter()
        .enumerate()
        .map(|(pos, (_, k))| {
            let r = if from_init {
                pairs.get(k).and_then(|p| p.rank).unwrap_or(pos as u32)
            } else {
                pos as u32
            };
            (k.0.clone(), k.1, r)
        })
        .collect();
    members.sort_by(|a, b| (a.2, &a.0).cmp(&(b.2, &b.0)));
    let mut global_ranks: Vec<u32> = by_global
        .iter()
        .map(|(g, _)| *g)
        .filter(|&g| g != u32::MAX)
        .collect();
    global_ranks.sort_unstable();
    LogicalComm {
        id,
        size,
        members,
        global_ranks,
        split_parent: None,
        grouped_by: by,
        ranks_from_init: from_init,
    }
}

/// Splits processes that share one operation sequence into communicators of `n` members.
/// Megatron's groups along one dimension are either runs of consecutive ranks or strided sets,
/// so those two partitions of the members (sorted by global rank) are the candidates. A
/// candidate is invalid when a group would hold one rank-in-communicator twice (init lines give
/// it even without a commId); among valid ones, log timestamps decide (members of one
/// communicator print the same collective at nearly the same time); failing both, consecutive
/// runs are taken and the result is flagged ambiguous.
fn split(
    ms: Vec<(ProcessKey, u64)>,
    n: usize,
    pairs: &BTreeMap<(ProcessKey, u64), Pair>,
) -> (Vec<Vec<(ProcessKey, u64)>>, bool) {
    if ms.len() <= n || !ms.len().is_multiple_of(n) {
        let parts = ms.chunks(n).map(|c| c.to_vec()).collect();
        return (parts, ms.len() > n);
    }
    let k = ms.len() / n;
    let consecutive: Vec<Vec<(ProcessKey, u64)>> = ms.chunks(n).map(|c| c.to_vec()).collect();
    let strided: Vec<Vec<(ProcessKey, u64)>> = (0..k)
        .map(|j| ms.iter().skip(j).step_by(k).cloned().collect())
        .collect();
    let valid = |parts: &Vec<Vec<(ProcessKey, u64)>>| {
        parts.iter().all(|g| {
            let ranks: Vec<u32> = g.iter().filter_map(|m| pairs.get(m)?.rank).collect();
            let distinct: BTreeSet<u32> = ranks.iter().copied().collect();
            distinct.len() == ranks.len()
        })
    };
    // Total spread of the members' timestamps of the same sequence position.
    let cost = |parts: &Vec<Vec<(ProcessKey, u64)>>| -> Option<i64> {
        let mut total = 0i64;
        let mut any = false;
        for g in parts {
            let stamps: Vec<&Vec<Option<i64>>> = g
                .iter()
                .filter_map(|m| pairs.get(m))
                .map(|p| &p.stamps)
                .collect();
            let len = stamps.iter().map(|s| s.len()).min().unwrap_or(0);
            for i in 0..len {
                let ts: Vec<i64> = stamps.iter().filter_map(|s| s[i]).collect();
                if ts.len() == g.len() {
                    any = true;
                    total += ts.iter().max().unwrap_or(&0) - ts.iter().min().unwrap_or(&0);
                }
            }
        }
        any.then_some(total)
    };
    let candidates: Vec<Vec<Vec<(ProcessKey, u64)>>> = [consecutive, strided]
        .into_iter()
        .filter(|c| valid(c))
        .collect();
    match candidates.len() {
        0 => (ms.chunks(n).map(|c| c.to_vec()).collect(), true),
        1 => (candidates.into_iter().next().unwrap_or_default(), false),
        _ => {
            let costs: Vec<Option<i64>> = candidates.iter().map(cost).collect();
            match (costs[0], costs[1]) {
                (Some(a), Some(b)) if a != b => {
                    let pick = usize::from(b < a);
                    (candidates.into_iter().nth(pick).unwrap_or_default(), false)
                }
                _ => (candidates.into_iter().next().unwrap_or_default(), true),
            }
        }
    }
}

/// Global ranks: from the world communicator's init lines when every process has one and they
/// are distinct; else node index × GPUs per node + local rank.
fn global_ranks(
    pairs: &BTreeMap<(ProcessKey, u64), Pair>,
    cuda_dev: &BTreeMap<ProcessKey, u32>,
    world: u32,
) -> (BTreeMap<ProcessKey, u32>, bool) {
    let processes: BTreeSet<ProcessKey> = pairs.keys().map(|k| k.0.clone()).collect();
    let mut from_init = BTreeMap::new();
    for ((p, _), pair) in pairs {
        if pair.nranks == world {
            if let Some(r) = pair.rank {
                from_init.entry(p.clone()).or_insert(r);
            }
        }
    }
    let distinct: BTreeSet<u32> = from_init.values().copied().collect();
    if !processes.is_empty()
        && from_init.len() == processes.len()
        && distinct.len() == from_init.len()
    {
        return (from_init, true);
    }
    // Fallback (thesis §4.2.3): hosts sorted by name.
    let mut per_host: BTreeMap<&str, Vec<&ProcessKey>> = BTreeMap::new();
    for p in &processes {
        per_host.entry(p.host.as_str()).or_default().push(p);
    }
    let gpn = per_host
        .values()
        .map(|ps| {
            let by_count = ps.len() as u32;
            let by_dev = ps
                .iter()
                .filter_map(|p| cuda_dev.get(*p))
                .map(|d| d + 1)
                .max()
                .unwrap_or(0);
            by_count.max(by_dev)
        })
        .max()
        .unwrap_or(1)
        .max(1);
    let mut out = BTreeMap::new();
    for (node, ps) in per_host.values().enumerate() {
        for (i, p) in ps.iter().enumerate() {
            let local = cuda_dev.get(*p).copied().unwrap_or(i as u32);
            out.insert((*p).clone(), node as u32 * gpn + local);
        }
    }
    (out, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::log::SourceLine;
    use model::{DataType, RedOp};

    fn pk(host: &str, pid: u32) -> ProcessKey {
        ProcessKey {
            host: host.into(),
            pid,
        }
    }

    fn op(p: &ProcessKey, dev: u32, comm: u64, oc: u64, op: OpType, count: u64, n: u32) -> LogOp {
        LogOp {
            process: p.clone(),
            tid: 1,
            cuda_dev: dev,
            op,
            op_count: oc,
            sendbuff: 0,
            recvbuff: 0,
            count,
            datatype: Some(DataType::Float16),
            datatype_code: 6,
            red_op: RedOp::Sum,
            root: 0,
            comm,
            nranks: n,
            stream: 0,
            timestamp_ns: None,
            algo: None,
            proto: None,
            nchannels: None,
            rccl_task: None,
            rccl_global_rank: None,
            rccl_acc: None,
            sym_kernel: None,
            source: SourceLine::default(),
        }
    }

    #[test]
    fn sequence_method_without_init_lines() {
        // 2 hosts × 2 GPUs; world comm (4 ranks) and two 2-rank comms with different sequences.
        let ps = [pk("b", 10), pk("b", 11), pk("a", 20), pk("a", 21)];
        let mut ops = Vec::new();
        for (i, p) in ps.iter().enumerate() {
            let dev = (i % 2) as u32;
            ops.push(op(p, dev, 0x100 + i as u64, 0, OpType::AllReduce, 1, 4));
            let (cnt, oc) = if i < 2 { (64, 0) } else { (128, 0) };
            ops.push(op(p, dev, 0x200 + i as u64, oc, OpType::AllGather, cnt, 2));
            // a duplicated line does not change the sequence
            ops.push(op(p, dev, 0x200 + i as u64, oc, OpType::AllGather, cnt, 2));
        }
        let c = group(&[], &ops);
        assert!(!c.ranks_from_init);
        // hosts sorted: a → ranks 0,1; b → ranks 2,3
        assert_eq!(c.rank_of(&ps[2]), Some(0));
        assert_eq!(c.rank_of(&ps[1]), Some(3));
        assert_eq!(c.comms.len(), 3);
        assert_eq!(c.comms[0].global_ranks, vec![0, 1, 2, 3]);
        assert_eq!(c.comms[1].global_ranks, vec![0, 1]);
        assert_eq!(c.comms[2].global_ranks, vec![2, 3]);
        assert_eq!(c.comm_of(&ps[0], 0x200), Some(2));
    }

    fn load(name: &str) -> (synth::Run, Vec<CommInit>, Vec<LogOp>) {
        crate::test_support::preset_logs(name)
    }

    /// Rank sets of the truth and of ours, as sorted multisets.
    fn sets(run: &synth::Run, c: &Communicators) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
        let mut t: Vec<Vec<u32>> = run
            .truth
            .communicators
            .iter()
            .map(|c| {
                let mut g = c.global_ranks.clone();
                g.sort_unstable();
                g
            })
            .collect();
        let mut o: Vec<Vec<u32>> = c.comms.iter().map(|c| c.global_ranks.clone()).collect();
        t.sort();
        o.sort();
        (t, o)
    }

    #[test]
    fn synth_runs_by_comm_id() {
        for name in ["tp2pp2", "demo"] {
            let (run, inits, ops) = load(name);
            let c = group(&inits, &ops);
            assert!(c.ranks_from_init);
            for r in &run.truth.ranks {
                let pk = pk(&r.host, r.pid);
                assert_eq!(c.rank_of(&pk), Some(r.global_rank), "{name}");
            }
            let (t, o) = sets(&run, &c);
            assert_eq!(t, o, "{name}");
            // Pointers: every truth member's pointer maps to the communicator with its commId.
            for tc in &run.truth.communicators {
                let lc = c.comms.iter().find(|l| l.id == tc.id).expect("commId");
                for (g, ptr) in tc.global_ranks.iter().zip(&tc.pointers) {
                    let m = lc.members.iter().find(|m| c.rank_of(&m.0) == Some(*g));
                    assert_eq!(
                        m.map(|m| format!("0x{:x}", m.1)).as_deref(),
                        Some(ptr.as_str())
                    );
                }
            }
        }
    }

    #[test]
    fn synth_runs_by_sequence() {
        // Without commIds, and without any init line: the thesis' method.
        for name in ["dp4", "tp4", "ep4-alltoall"] {
            let (run, _, ops) = load(name);
            let c = group(&[], &ops);
            assert!(!c.ranks_from_init);
            for r in &run.truth.ranks {
                assert_eq!(
                    c.rank_of(&pk(&r.host, r.pid)),
                    Some(r.global_rank),
                    "{name}"
                );
            }
            let (t, o) = sets(&run, &c);
            assert_eq!(t, o, "{name}");
        }
        // tp2pp2: init lines without commId; the ranks in the communicator and the timestamps
        // resolve TP (consecutive) and PP (strided) groups sharing one sequence.
        let (run, mut inits, ops) = load("tp2pp2");
        for i in inits.iter_mut() {
            i.comm_id = None;
        }
        let c = group(&inits, &ops);
        let (t, o) = sets(&run, &c);
        assert_eq!(t, o);
        assert!(c
            .comms
            .iter()
            .all(|l| l.grouped_by == GroupedBy::Sequence { ambiguous: false }));
    }
}
