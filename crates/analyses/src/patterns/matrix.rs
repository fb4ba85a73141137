//! The rank-to-rank matrix: the bytes (and the time) every global rank sent to every other, per
//! parallelism and operation, as the algorithms NCCL ran move them.
//!
//! Each logged operation is expanded into the transfers of its algorithm, on the routes NCCL
//! printed for its communicator ([`super::facts::Routes`]). With `S` the operation's bytes as
//! nccl-tests define them (`count × sizeof`, the whole buffer for AllGather and
//! ReduceScatter: `n × count × sizeof`), `n` the communicator's size and `C` the channels the
//! operation ran on (its tuning line's channel count, else every ring its rank printed), the
//! data split evenly over the channels:
//!
//! | operation, algorithm | a rank sends, per channel `c` | source |
//! |---|---|---|
//! | AllReduce, ring | `2(n−1)/n · S / C` to its successor on ring `c` | NCCL `src/device/all_reduce.h` `runRing` (reduce-scatter then all-gather, `2(n−1)` chunks of `S/n`); nccl-tests `doc/PERFORMANCE.md` (bus factor `2(n−1)/n`) |
//! | AllReduce, tree | `S / C` to its parent on tree `c` and `S / C` to each child | `all_reduce.h` `runTreeUpDown`/`runTreeSplit` (reduce up, broadcast down) |
//! | AllGather, ReduceScatter | `(n−1)/n · S / C` to its successor | `all_gather.h`, `reduce_scatter.h` `runRing` (`n−1` chunks of `S/n`); PERFORMANCE.md (`(n−1)/n`) |
//! | Broadcast | `S / C` to its successor, unless the successor is the root | `broadcast.h` (a chain from the root; the root's predecessor only receives) |
//! | Reduce | `S / C` to its successor, unless it is the root | `reduce.h` (a chain ending at the root) |
//! | AllToAll (2.28 `AlltoAll`) | `count × sizeof` to every other member | one send per peer |
//! | Gather / Scatter | `count × sizeof` to the root / from the root to each other member | one send per peer |
//! | Send | `count × sizeof` to its peer; a send to itself moves nothing | — |
//!
//! Receives are the other end of a send and add nothing, except when the sender's own log is
//! missing: then the receive stands for it (and a note says so). Where NCCL printed no ring for
//! a communicator, the textbook ring (communicator rank `r` → `r+1 mod n`) is assumed; where the
//! operation had no tuning line, or named an algorithm with no rank-to-rank route (NVLS,
//! CollNet, PAT), the ring; an operation this build does not name moves `S` round the ring. Each
//! assumption is a [`Note`].
//!
//! `time_ns` of a pair is the summed duration of the sender's kernels that carried bytes to that
//! peer (a kernel once per peer: channels run at once). Operations logged without a matched
//! kernel count their bytes and no time.

use super::facts::{CommFacts, RunFacts};
use super::notes::{Note, Notes};
use super::totals::{OpTotals, Totals};
use model::{Algo, OpType};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// One cell of the matrix: the contract's `comm_matrix` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatrixEntry {
    pub src: u32,
    pub dst: u32,
    /// `TP`, `DP`, ..., `unknown` (the communicator's label).
    pub parallelism: String,
    /// NCCL's operation name.
    pub op: String,
    pub bytes: u64,
    pub time_ns: i64,
}

/// The matrix between nodes: every entry between their ranks summed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeEntry {
    /// Indices into [`CommMatrix::hosts`].
    pub src: u32,
    pub dst: u32,
    pub parallelism: String,
    pub op: String,
    pub bytes: u64,
    pub time_ns: i64,
}

/// A host and its global ranks, in the heat map's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRanks {
    pub host: String,
    pub ranks: Vec<u32>,
}

/// How one communicator's collectives were routed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommRouting {
    pub comm: String,
    pub parallelism: String,
    pub size: u32,
    /// `printed rings`, `textbook ring` (none printed), or `none` (no collective to route).
    pub rings: String,
    /// Ring channels printed (the most any member printed).
    pub channels: u32,
    /// Tree channels printed.
    pub tree_channels: u32,
    /// `NVLink`, `PCIe`, `network`, `intra-node`.
    pub link_class: String,
}

/// The observed matrix of a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CommMatrix {
    /// Ranks with a host, grouped by host (hosts sorted by name, ranks ascending).
    pub hosts: Vec<HostRanks>,
    /// Sorted by (src, dst, parallelism, op); one per (src, dst, parallelism, op) with bytes > 0.
    pub entries: Vec<MatrixEntry>,
    /// The same at node granularity (what the heat map draws at 1 024 ranks).
    pub nodes: Vec<NodeEntry>,
    pub comms: Vec<CommRouting>,
    pub notes: Vec<Note>,
}

impl CommMatrix {
    /// The entries a rank sends, a slice of [`CommMatrix::entries`] (for a page that shows one
    /// rank's row on demand).
    pub fn sent_by(&self, rank: u32) -> &[MatrixEntry] {
        let a = self.entries.partition_point(|e| e.src < rank);
        let b = self.entries.partition_point(|e| e.src <= rank);
        &self.entries[a..b]
    }

    /// The CSV export: a header, then one line per entry.
    pub fn write_csv(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        writeln!(w, "src,dst,parallelism,op,bytes,time_ns")?;
        for e in &self.entries {
            // Names are NCCL's operation names and fixed labels: no field needs quoting, but
            // an unknown operation's interned name is checked anyway.
            let op = if e.op.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                e.op.clone()
            } else {
                format!("\"{}\"", e.op.replace('"', "\"\""))
            };
            writeln!(
                w,
                "{},{},{},{},{},{}",
                e.src, e.dst, e.parallelism, op, e.bytes, e.time_ns
            )?;
        }
        Ok(())
    }
}

/// Where a transfer went: a global rank, or (the member's log not loaded, as in a per-node job)
/// a communicator rank that a merge with the other nodes' files can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Peer {
    Global(u32),
    CommRank(u32),
}

/// Bytes (and the sender's kernel time) one global rank sent on one communicator in one
/// operation type, as [`for_each_transfer`] gives them (a pair may come many times).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transfer {
    pub src: u32,
    /// Index into [`RunFacts::comms`] (the analysis's communicators).
    pub comm: u32,
    pub dst: Peer,
    pub op: OpType,
    pub bytes: f64,
    pub time_ns: i64,
}

/// How each communicator's collectives were routed: (went round a ring, the textbook ring was
/// assumed somewhere).
pub type Routing = (Vec<bool>, Vec<bool>);

/// Every transfer of every sum, expanded on its communicator's routes: what [`build`] sums per
/// (src, dst, parallelism, op) and an aggregate file keeps per communicator. Transfers to self
/// and of no bytes are left out.
pub fn for_each_transfer(
    facts: &RunFacts,
    totals: &Totals,
    notes: &mut Notes,
    mut emit: impl FnMut(Transfer),
) -> Routing {
    let mut textbook: Vec<bool> = vec![false; facts.comms.len()];
    let mut routed: Vec<bool> = vec![false; facts.comms.len()];
    let mut pending: Vec<(u32, f64)> = Vec::new();
    for t in &totals.ops {
        let Some(c) = facts.comms.get(t.comm as usize) else {
            continue;
        };
        let Some(me) = c.comm_rank(t.src) else {
            continue;
        };
        if t.op == OpType::Recv {
            if let Some((sender, bytes)) = receive_for_a_silent_sender(t, c, me, facts, notes) {
                emit(Transfer {
                    src: sender,
                    comm: t.comm,
                    dst: Peer::Global(t.src),
                    op: OpType::Send,
                    bytes,
                    time_ns: 0,
                });
            }
            continue;
        }
        pending.clear();
        let how = expand(t, c, me, &mut |dst, bytes| match pending
            .iter_mut()
            .find(|(d, _)| *d == dst)
        {
            Some(p) => p.1 += bytes,
            None => pending.push((dst, bytes)),
        });
        note_route(t, c, how, notes);
        if how.ring {
            routed[t.comm as usize] = true;
            textbook[t.comm as usize] |= how.textbook;
        }
        for &(dst, bytes) in &pending {
            let peer = match c.global.get(dst as usize) {
                Some(Some(g)) => Peer::Global(*g),
                Some(None) => Peer::CommRank(dst),
                None => continue,
            };
            if peer == Peer::Global(t.src) || bytes <= 0.0 {
                continue;
            }
            emit(Transfer {
                src: t.src,
                comm: t.comm,
                dst: peer,
                op: t.op,
                bytes,
                time_ns: t.time_ns,
            });
        }
    }
    (routed, textbook)
}

/// Builds the matrix from the run's sums (times already attributed).
pub fn build(facts: &RunFacts, totals: &Totals, notes: &mut Notes) -> CommMatrix {
    // (src, dst, comm parallelism name, op) → (bytes, time).
    let mut cells: FxHashMap<(u32, u32, &'static str, OpType), (f64, i64)> = FxHashMap::default();
    let (routed, textbook) = for_each_transfer(facts, totals, notes, |t| {
        // A member no loaded log names is not a global rank: its row is another job's.
        let Peer::Global(dst) = t.dst else { return };
        let par = facts.comms[t.comm as usize].parallelism.name();
        let e = cells.entry((t.src, dst, par, t.op)).or_default();
        e.0 += t.bytes;
        e.1 += t.time_ns;
    });
    let entries = entries_of(
        cells
            .into_iter()
            .map(|((src, dst, par, op), sums)| ((src, dst, par, op.name()), sums)),
    );
    let hosts = hosts_of(facts);
    let nodes = node_entries(&facts.host_of, &entries);
    let comms = facts
        .comms
        .iter()
        .enumerate()
        .map(|(i, c)| CommRouting {
            comm: c.id.clone(),
            parallelism: c.parallelism.name().to_string(),
            size: c.size,
            rings: if !routed[i] {
                "none"
            } else if textbook[i] {
                "textbook ring"
            } else {
                "printed rings"
            }
            .to_string(),
            channels: c
                .routes
                .rings_of
                .values()
                .copied()
                .max()
                .unwrap_or(0)
                .max(c.routes.ring_orders.len() as u32),
            tree_channels: c.routes.trees_of.values().copied().max().unwrap_or(0),
            link_class: c.class.name().to_string(),
        })
        .collect();
    CommMatrix {
        hosts,
        entries,
        nodes,
        comms,
        notes: Vec::new(),
    }
}

/// The matrix's entries from summed cells ((src, dst, parallelism, op) → (bytes, time ns)):
/// bytes rounded, empty cells left out, in the matrix's order ([`sort_entries`]). The analysis
/// and the aggregate file's merge both end here.
pub fn entries_of<'a>(
    cells: impl IntoIterator<Item = ((u32, u32, &'a str, &'a str), (f64, i64))>,
) -> Vec<MatrixEntry> {
    let mut entries: Vec<MatrixEntry> = cells
        .into_iter()
        .map(|((src, dst, par, op), (bytes, time_ns))| MatrixEntry {
            src,
            dst,
            parallelism: par.to_string(),
            op: op.to_string(),
            bytes: bytes.round() as u64,
            time_ns,
        })
        .filter(|e| e.bytes > 0)
        .collect();
    sort_entries(&mut entries);
    entries
}

/// The matrix's order: (src, dst, parallelism in the contract's order, op).
fn sort_entries(entries: &mut [MatrixEntry]) {
    entries.sort_by(|a, b| {
        (a.src, a.dst, par_order(&a.parallelism), &a.op).cmp(&(
            b.src,
            b.dst,
            par_order(&b.parallelism),
            &b.op,
        ))
    });
}

/// The contract's parallelism order (TP, CP, EP, DP, PP, unknown) for sorting names.
fn par_order(name: &str) -> usize {
    ["TP", "CP", "EP", "DP", "PP"]
        .iter()
        .position(|p| *p == name)
        .unwrap_or(5)
}

fn hosts_of(facts: &RunFacts) -> Vec<HostRanks> {
    let mut out: Vec<HostRanks> = facts
        .hosts
        .iter()
        .map(|h| HostRanks {
            host: h.clone(),
            ranks: Vec::new(),
        })
        .collect();
    for (&r, &h) in &facts.host_of {
        out[h as usize].ranks.push(r);
    }
    out
}

/// The node matrix of `entries`, with `host_of` each rank's host index.
pub fn node_entries(
    host_of: &std::collections::BTreeMap<u32, u32>,
    entries: &[MatrixEntry],
) -> Vec<NodeEntry> {
    let mut cells: std::collections::BTreeMap<(u32, u32, usize, &str), (u64, i64)> =
        std::collections::BTreeMap::new();
    for e in entries {
        let (Some(&a), Some(&b)) = (host_of.get(&e.src), host_of.get(&e.dst)) else {
            continue;
        };
        let c = cells
            .entry((a, b, par_order(&e.parallelism), e.op.as_str()))
            .or_default();
        c.0 += e.bytes;
        c.1 += e.time_ns;
    }
    cells
        .into_iter()
        .map(|((src, dst, p, op), (bytes, time_ns))| NodeEntry {
            src,
            dst,
            parallelism: ["TP", "CP", "EP", "DP", "PP", "unknown"][p].to_string(),
            op: op.to_string(),
            bytes,
            time_ns,
        })
        .collect()
}

/// A receive whose sender logged nothing: the only trace of that send (its sender and bytes).
fn receive_for_a_silent_sender(
    t: &OpTotals,
    c: &CommFacts,
    me: u32,
    facts: &RunFacts,
    notes: &mut Notes,
) -> Option<(u32, f64)> {
    let peer = u32::try_from(t.root).ok().filter(|&p| p != me)?;
    let Some(Some(sender)) = c.global.get(peer as usize) else {
        return None;
    };
    if facts.ranks_with_logs.contains(sender) || t.msg_bytes == 0 {
        return None;
    }
    notes.add(
        "receive-for-send",
        "a receive stands for its sender's send where the sender's log is missing",
        t.calls,
        Some(format!("rank {sender} → {}", t.src)),
    );
    Some((*sender, t.msg_bytes as f64))
}

/// What an expansion assumed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Route {
    /// The operation went round a ring (printed or textbook).
    pub ring: bool,
    /// Some channel's successor was not printed: the textbook ring was used.
    pub textbook: bool,
    /// No algorithm known (no tuning line): ring assumed.
    pub no_algorithm: bool,
    /// An algorithm with no rank-to-rank route (NVLS, CollNet, PAT): ring assumed.
    pub offload: bool,
    /// A tree operation whose rank printed no tree: ring assumed.
    pub no_tree: bool,
    /// An operation this build does not name: `S` round the ring assumed.
    pub unknown_op: bool,
}

fn note_route(t: &OpTotals, c: &CommFacts, how: Route, notes: &mut Notes) {
    let example = || Some(format!("{} ({})", c.id, t.op.name()));
    if how.textbook {
        notes.add(
            "textbook-ring",
            "no ring was printed for the communicator: its collectives went round the textbook ring (rank r to r+1)",
            t.calls,
            example(),
        );
    }
    if how.no_algorithm {
        notes.add(
            "no-algorithm",
            "collectives without a tuning line naming a known algorithm were taken as ring",
            t.calls,
            example(),
        );
    }
    if how.offload {
        notes.add(
            "offload-as-ring",
            "NVLS, CollNet and PAT collectives have no rank-to-rank route: counted as ring",
            t.calls,
            example(),
        );
    }
    if how.no_tree {
        notes.add(
            "no-tree",
            "tree collectives of a rank that printed no tree were taken as ring",
            t.calls,
            example(),
        );
    }
    if how.unknown_op {
        notes.add(
            "unknown-op",
            "operations this build does not name were taken as moving their bytes once round the ring",
            t.calls,
            example(),
        );
    }
    if how.ring && !c.ranks_from_init && c.routes.has_rings() {
        notes.add(
            "inferred-comm-ranks",
            "communicator ranks were inferred from global-rank order (no init lines): printed rings were read with them",
            t.calls,
            Some(c.id.clone()),
        );
    }
}

/// Expands one sum into the transfers of its algorithm: `emit(dst, bytes)` with `dst` a
/// communicator rank (a destination may come several times, one per channel). See the module
/// table for the formulas.
pub fn expand(t: &OpTotals, c: &CommFacts, me: u32, emit: &mut impl FnMut(u32, f64)) -> Route {
    let n = c.size;
    let mut how = Route::default();
    if n <= 1 || t.msg_bytes == 0 {
        return how;
    }
    let m = t.msg_bytes as f64;
    let nf = f64::from(n);
    let root = u32::try_from(t.root).ok().filter(|&r| r < n).unwrap_or(0);
    let op = match t.op {
        OpType::Other(name) if name.as_str().eq_ignore_ascii_case("alltoall") => OpType::AllToAll,
        op => op,
    };
    match op {
        OpType::Send => {
            if let Some(p) = u32::try_from(t.root).ok().filter(|&p| p != me && p < n) {
                emit(p, m);
            }
        }
        OpType::Recv | OpType::SendRecv => {}
        OpType::AllToAll => (0..n).filter(|&d| d != me).for_each(|d| emit(d, m)),
        OpType::Gather => {
            if me != root {
                emit(root, m);
            }
        }
        OpType::Scatter => {
            if me == root {
                (0..n).filter(|&d| d != me).for_each(|d| emit(d, m));
            }
        }
        OpType::AllReduce if t.algo == Some(Algo::Tree) && c.routes.trees_of.contains_key(&me) => {
            let trees = c.routes.trees_of[&me].max(1);
            let ch = t.nchannels.unwrap_or(trees).max(1);
            let share = m / f64::from(ch);
            for k in 0..ch {
                match c.routes.trees.get(&(me, k % trees)) {
                    Some((up, down)) => {
                        if let Some(u) = up {
                            emit(*u, share);
                        }
                        for d in down {
                            emit(*d, share);
                        }
                    }
                    // A channel whose tree this rank did not print: round its ring.
                    None => {
                        how.no_tree = true;
                        ring(c, me, 1, &mut how, &mut |d, _| emit(d, share));
                    }
                }
            }
        }
        _ => {
            match t.algo {
                None if !matches!(op, OpType::Other(_)) => how.no_algorithm = true,
                Some(Algo::Tree) if op == OpType::AllReduce => how.no_tree = true,
                Some(Algo::Ring) | Some(Algo::Tree) | None => {}
                Some(_) => how.offload = true,
            }
            let (per_rank, skip): (f64, Option<u32>) = match op {
                OpType::AllReduce => (2.0 * (nf - 1.0) / nf * m, None),
                OpType::AllGather | OpType::ReduceScatter => ((nf - 1.0) * m, None),
                // Broadcast: the chain from the root ends at the root's predecessor.
                OpType::Broadcast => (m, Some(root)),
                OpType::Reduce if me == root => return how,
                OpType::Reduce => (m, None),
                _ => {
                    how.unknown_op = true;
                    (m, None)
                }
            };
            let channels = t.nchannels.unwrap_or(c.routes.rings(me)).max(1);
            let share = per_rank / f64::from(channels);
            ring(c, me, channels, &mut how, &mut |d, _| {
                if Some(d) != skip {
                    emit(d, share)
                }
            });
        }
    }
    how
}

/// Calls `emit(successor, channel)` for each of `channels` channels: the ring channel
/// `c mod rings` that `me` printed (or anyone printed), else the textbook successor.
fn ring(c: &CommFacts, me: u32, channels: u32, how: &mut Route, emit: &mut impl FnMut(u32, u32)) {
    how.ring = true;
    let rings = c.routes.rings(me);
    for k in 0..channels {
        let next = if rings > 0 {
            c.routes.next(me, k % rings)
        } else {
            None
        };
        let next = next.unwrap_or_else(|| {
            how.textbook = true;
            (me + 1) % c.size
        });
        emit(next, k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patterns::facts::Routes;
    use crate::patterns::links::LinkClass;
    use enrich::Parallelism;

    fn comm(size: u32, routes: Routes) -> CommFacts {
        let global: Vec<Option<u32>> = (0..size).map(|r| Some(10 + r)).collect();
        CommFacts {
            id: "0xc".into(),
            size,
            parallelism: Parallelism::TP,
            comm_rank_of: (0..size).map(|r| (10 + r, r)).collect(),
            global,
            routes,
            class: LinkClass::NVLink,
            per_host: FxHashMap::default(),
            ranks_from_init: true,
        }
    }

    fn total(op: OpType, algo: Option<Algo>, nch: Option<u32>, bytes: u128, root: i64) -> OpTotals {
        OpTotals {
            src: 11,
            comm: 0,
            op,
            root,
            algo,
            nchannels: nch,
            elem_bytes: 2,
            msg_bytes: bytes,
            calls: 1,
            time_ns: 0,
            kernels: 0,
        }
    }

    fn sent(t: &OpTotals, c: &CommFacts) -> (Vec<(u32, f64)>, Route) {
        let me = c.comm_rank(t.src).unwrap();
        let mut out: Vec<(u32, f64)> = Vec::new();
        let how = expand(
            t,
            c,
            me,
            &mut |d, b| match out.iter_mut().find(|x| x.0 == d) {
                Some(x) => x.1 += b,
                None => out.push((d, b)),
            },
        );
        out.sort_by_key(|x| x.0);
        (out, how)
    }

    /// Two channels with different rings: the bytes follow each channel's ring.
    fn two_rings() -> Routes {
        Routes {
            ring_orders: vec![vec![0, 1, 2, 3], vec![0, 2, 1, 3]],
            ..Routes::default()
        }
    }

    #[test]
    fn ring_allreduce_splits_over_the_printed_rings() {
        let c = comm(4, two_rings());
        // 2(n−1)/n · 4000 = 6000 per rank, half on each channel: rank 1 → 2 (ring 0), 1 → 3 (ring 1).
        let (out, how) = sent(
            &total(OpType::AllReduce, Some(Algo::Ring), None, 4000, 0),
            &c,
        );
        assert_eq!(out, vec![(2, 3000.0), (3, 3000.0)]);
        assert!(how.ring && !how.textbook && !how.no_algorithm);
        // Four channels on two rings: channel k on ring k mod 2, the same split.
        let (out, _) = sent(
            &total(OpType::AllReduce, Some(Algo::Ring), Some(4), 4000, 0),
            &c,
        );
        assert_eq!(out, vec![(2, 3000.0), (3, 3000.0)]);
    }

    #[test]
    fn allgather_broadcast_and_reduce_follow_their_chains() {
        let c = comm(4, Routes::default());
        // AllGather: the per-rank count's bytes (n−1) times, to the textbook successor.
        let (out, how) = sent(
            &total(OpType::AllGather, Some(Algo::Ring), None, 100, 0),
            &c,
        );
        assert_eq!(out, vec![(2, 300.0)]);
        assert!(how.textbook);
        // Broadcast from root 2: rank 1 is the root's predecessor and sends nothing.
        let (out, _) = sent(
            &total(OpType::Broadcast, Some(Algo::Ring), None, 100, 2),
            &c,
        );
        assert!(out.is_empty());
        let (out, _) = sent(
            &total(OpType::Broadcast, Some(Algo::Ring), None, 100, 0),
            &c,
        );
        assert_eq!(out, vec![(2, 100.0)]);
        // Reduce to root 1: the root sends nothing; to root 0, rank 1 forwards the whole buffer.
        let (out, _) = sent(&total(OpType::Reduce, None, None, 100, 1), &c);
        assert!(out.is_empty());
        let (out, how) = sent(&total(OpType::Reduce, None, None, 100, 0), &c);
        assert_eq!(out, vec![(2, 100.0)]);
        assert!(how.no_algorithm);
    }

    #[test]
    fn tree_allreduce_sends_up_and_down_its_printed_trees() {
        let mut r = Routes::default();
        // Channel 0: 1's parent 0, children 2 and 3; channel 1: 1's parent 2, no child.
        r.trees.insert((1, 0), (Some(0), vec![2, 3]));
        r.trees.insert((1, 1), (Some(2), vec![]));
        r.trees_of.insert(1, 2);
        let c = comm(4, r);
        let (out, how) = sent(
            &total(OpType::AllReduce, Some(Algo::Tree), None, 1000, 0),
            &c,
        );
        assert_eq!(out, vec![(0, 500.0), (2, 1000.0), (3, 500.0)]);
        assert!(!how.ring);
        // A rank that printed no tree: its tree operations go round the ring, said so.
        let c = comm(4, Routes::default());
        let (out, how) = sent(
            &total(OpType::AllReduce, Some(Algo::Tree), None, 1000, 0),
            &c,
        );
        assert_eq!(out, vec![(2, 1500.0)]);
        assert!(how.no_tree && how.textbook);
    }

    #[test]
    fn point_to_point_and_all_to_all_go_to_their_peers_never_to_self() {
        let c = comm(4, Routes::default());
        let (out, _) = sent(&total(OpType::Send, None, None, 64, 3), &c);
        assert_eq!(out, vec![(3, 64.0)]);
        let (out, _) = sent(&total(OpType::Send, None, None, 64, 1), &c);
        assert!(out.is_empty(), "a self-send moves nothing");
        let (out, _) = sent(&total(OpType::Recv, None, None, 64, 0), &c);
        assert!(out.is_empty());
        let (out, _) = sent(&total(OpType::AllToAll, None, None, 8, 0), &c);
        assert_eq!(out, vec![(0, 8.0), (2, 8.0), (3, 8.0)]);
        let (out, _) = sent(&total(OpType::Gather, None, None, 8, 0), &c);
        assert_eq!(out, vec![(0, 8.0)]);
        let (out, _) = sent(&total(OpType::Scatter, None, None, 8, 1), &c);
        assert_eq!(out, vec![(0, 8.0), (2, 8.0), (3, 8.0)]);
    }

    #[test]
    fn offloaded_and_unknown_operations_are_assumed_ring_and_said_so() {
        let c = comm(2, Routes::default());
        let (out, how) = sent(
            &total(OpType::AllReduce, Some(Algo::Nvls), None, 100, 0),
            &c,
        );
        assert_eq!(out, vec![(0, 100.0)]);
        assert!(how.offload);
        let other = OpType::intern("BroadcastPivot").unwrap();
        let (out, how) = sent(&total(other, None, None, 100, 0), &c);
        assert_eq!(out, vec![(0, 100.0)]);
        assert!(how.unknown_op && !how.no_algorithm);
        let alltoall = OpType::intern("AlltoAll").unwrap();
        let (out, _) = sent(&total(alltoall, None, None, 7, 0), &c);
        assert_eq!(out, vec![(0, 7.0)]);
    }

    #[test]
    fn a_ring_neighbour_line_beats_the_order_line() {
        let mut r = two_rings();
        // Rank 1 printed its own successor on channel 0: 3.
        r.ring_next.insert((1, 0), 3);
        r.rings_of.insert(1, 1);
        let c = comm(4, r);
        let (out, _) = sent(&total(OpType::AllGather, Some(Algo::Ring), None, 10, 0), &c);
        assert_eq!(out, vec![(3, 30.0)]);
    }

    #[test]
    fn csv_has_the_contract_fields() {
        let m = CommMatrix {
            entries: vec![MatrixEntry {
                src: 0,
                dst: 2,
                parallelism: "PP".into(),
                op: "Send".into(),
                bytes: 10,
                time_ns: 5,
            }],
            ..CommMatrix::default()
        };
        let mut out = Vec::new();
        m.write_csv(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "src,dst,parallelism,op,bytes,time_ns\n0,2,PP,Send,10,5\n"
        );
        assert_eq!(m.sent_by(0).len(), 1);
        assert!(m.sent_by(1).is_empty());
    }
}
