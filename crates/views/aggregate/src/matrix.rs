//! The rank-to-rank matrix an aggregate carries (format 2), so that a run too big for a tab is
//! still shown as a heat map: sparse pairs per sender and communicator, compact (a few hundred
//! kB inflated at 1 024 ranks), node order rebuilt from the overview's rank rows.
//!
//! Pairs are kept per communicator, not per parallelism, because a merge relabels the
//! communicators: the label of a pair is its communicator's in the file read. A per-node job does
//! not know the global rank of a ring successor on another node (its log is another job's): such
//! a pair names the successor by communicator rank ([`Pair::to_comm_rank`]), and each file lists
//! the communicator ranks it does know ([`Matrix::members`]); a merge unites those lists, and
//! [`Matrix::comm_matrix`] resolves the pairs with them. The bytes are summed as
//! `analyses::patterns::comm_matrix` sums them (per sender, destination, parallelism and
//! operation, rounded at the end), so a whole run's aggregate holds exactly its matrix.

use crate::format::Error;
use crate::overview::Overview;
use analyses::patterns::matrix::{entries_of, node_entries, HostRanks, Peer};
use analyses::patterns::{CommMatrix, Prepared};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// One sender's traffic to one peer on one communicator in one operation type.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    pub src: u32,
    /// Index into the overview's communicators.
    pub comm: u32,
    /// A global rank, or (with `to_comm_rank`) a rank of the communicator.
    pub dst: u32,
    pub to_comm_rank: bool,
    /// Index into [`Matrix::ops`].
    pub op: u32,
    pub bytes: f64,
    pub time_ns: i64,
}

/// The matrix block.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Matrix {
    /// Operation names (NCCL's), interned.
    pub ops: Vec<String>,
    /// Per communicator (the overview's order): (communicator rank, global rank) of the members
    /// the file's logs name.
    pub members: Vec<Vec<(u32, u32)>>,
    /// Sorted by (src, comm, to_comm_rank, dst, op).
    pub pairs: Vec<Pair>,
    /// What the analysis assumed (textbook rings, ...), one sentence each.
    pub notes: Vec<String>,
}

/// Most pairs a block may hold (a 100 000-rank run's rings and pipelines are far fewer).
const MAX_PAIRS: usize = 1 << 26;

impl Matrix {
    /// The matrix of an analysed session, per communicator (the analysis's order, which the
    /// overview's communicators follow).
    pub fn of(session: &load::Session, analysis: &pipeline::Analysis) -> Matrix {
        let prepared = Prepared::of(session, analysis);
        let mut notes = prepared.notes.clone();
        let mut sums: BTreeMap<(u32, u32, Peer, String), (f64, i64)> = BTreeMap::new();
        analyses::patterns::matrix::for_each_transfer(
            &prepared.facts,
            &prepared.totals,
            &mut notes,
            |t| {
                let e = sums
                    .entry((t.src, t.comm, t.dst, t.op.name().to_string()))
                    .or_default();
                e.0 += t.bytes;
                e.1 += t.time_ns;
            },
        );
        let mut ops: Vec<String> = sums.keys().map(|k| k.3.clone()).collect();
        ops.sort();
        ops.dedup();
        let pairs = sums
            .into_iter()
            .map(|((src, comm, dst, op), (bytes, time_ns))| {
                let (dst, to_comm_rank) = match dst {
                    Peer::Global(g) => (g, false),
                    Peer::CommRank(r) => (r, true),
                };
                Pair {
                    src,
                    comm,
                    dst,
                    to_comm_rank,
                    op: ops.binary_search(&op).unwrap_or(0) as u32,
                    bytes,
                    time_ns,
                }
            })
            .collect();
        let members = prepared
            .facts
            .comms
            .iter()
            .map(|c| {
                c.global
                    .iter()
                    .enumerate()
                    .filter_map(|(r, g)| Some((r as u32, (*g)?)))
                    .collect()
            })
            .collect();
        Matrix {
            ops,
            members,
            pairs,
            notes: notes.into_vec().into_iter().map(|n| n.message).collect(),
        }
    }

    /// Checks what a decoded block promises against its overview: indices in range, sizes
    /// believable.
    pub fn check(&self, file: &str, overview: &Overview) -> Result<(), Error> {
        let bad = |m: &str| Err(Error::new(file, format!("{m}: garbled matrix")));
        if self.pairs.len() > MAX_PAIRS {
            return bad("too many pairs");
        }
        if self.members.len() > overview.comms.len() {
            return bad("members of a communicator the overview does not list");
        }
        for p in &self.pairs {
            if p.comm as usize >= overview.comms.len() || p.op as usize >= self.ops.len() {
                return bad("a pair names no communicator or operation");
            }
            if !p.bytes.is_finite() || p.bytes < 0.0 {
                return bad("a pair of no believable size");
            }
        }
        Ok(())
    }

    /// The matrix as `analyses::patterns::comm_matrix` gives it: entries labelled with the
    /// overview's communicators, hosts and the node matrix from its rank rows. Pairs to a
    /// communicator rank no file names are left out (a note counts them).
    pub fn comm_matrix(&self, overview: &Overview) -> CommMatrix {
        let mut cells: BTreeMap<(u32, u32, &str, &str), (f64, i64)> = BTreeMap::new();
        let mut unresolved = 0u64;
        for p in &self.pairs {
            let Some(comm) = overview.comms.get(p.comm as usize) else {
                continue;
            };
            let dst = if p.to_comm_rank {
                let member = self
                    .members
                    .get(p.comm as usize)
                    .and_then(|m| m.binary_search_by_key(&p.dst, |x| x.0).ok().map(|i| m[i].1));
                match member {
                    Some(g) => g,
                    None => {
                        unresolved += 1;
                        continue;
                    }
                }
            } else {
                p.dst
            };
            if dst == p.src {
                continue;
            }
            let op = self.ops.get(p.op as usize).map_or("", String::as_str);
            let e = cells
                .entry((p.src, dst, comm.parallelism.as_str(), op))
                .or_default();
            e.0 += p.bytes;
            e.1 += p.time_ns;
        }
        let entries = entries_of(cells);
        let mut by_host: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for r in &overview.ranks {
            by_host.entry(&r.host).or_default().push(r.global_rank);
        }
        let hosts: Vec<HostRanks> = by_host
            .into_iter()
            .map(|(h, ranks)| HostRanks {
                host: h.to_string(),
                ranks,
            })
            .collect();
        let host_of: BTreeMap<u32, u32> = hosts
            .iter()
            .enumerate()
            .flat_map(|(i, h)| h.ranks.iter().map(move |&r| (r, i as u32)))
            .collect();
        let mut notes: Vec<analyses::patterns::Note> = self
            .notes
            .iter()
            .map(|m| analyses::patterns::Note {
                kind: "aggregate".into(),
                message: m.clone(),
                count: 1,
                examples: Vec::new(),
            })
            .collect();
        if unresolved > 0 {
            notes.push(analyses::patterns::Note {
                kind: "unresolved-peer".into(),
                message: format!(
                    "{unresolved} pairs go to communicator members no aggregate names: left out"
                ),
                count: unresolved,
                examples: Vec::new(),
            });
        }
        CommMatrix {
            nodes: node_entries(&host_of, &entries),
            hosts,
            entries,
            comms: Vec::new(),
            notes,
        }
    }

    /// `self` of one merge input, in the merged file's numbering: ranks through `renumber`,
    /// communicators through `comm_map`, operations into `ops`.
    fn renumbered(
        &self,
        renumber: &BTreeMap<u32, u32>,
        comm_map: &[u32],
        ops: &mut Vec<String>,
    ) -> (Vec<Pair>, Vec<(u32, u32, u32)>) {
        let rank = |r: u32| renumber.get(&r).copied().unwrap_or(r);
        let op_map: Vec<u32> = self
            .ops
            .iter()
            .map(|o| match ops.iter().position(|x| x == o) {
                Some(i) => i as u32,
                None => {
                    ops.push(o.clone());
                    (ops.len() - 1) as u32
                }
            })
            .collect();
        let pairs = self
            .pairs
            .iter()
            .filter_map(|p| {
                Some(Pair {
                    src: rank(p.src),
                    comm: *comm_map.get(p.comm as usize)?,
                    dst: if p.to_comm_rank { p.dst } else { rank(p.dst) },
                    op: *op_map.get(p.op as usize)?,
                    ..*p
                })
            })
            .collect();
        let members = self
            .members
            .iter()
            .enumerate()
            .filter_map(|(c, m)| Some((*comm_map.get(c)?, m)))
            .flat_map(|(c, m)| m.iter().map(move |&(cr, g)| (c, cr, rank(g))))
            .collect();
        (pairs, members)
    }
}

/// The merged matrix of the inputs' (each with its rank renumbering and communicator map), or
/// `None` when any input has none (a format 1 file): half a matrix would mislead.
pub fn merge(
    inputs: &[Option<&Matrix>],
    renumber: &[BTreeMap<u32, u32>],
    comm_map: &[Vec<u32>],
    comms: usize,
) -> Option<Matrix> {
    let mut ops = Vec::new();
    let mut pairs = Vec::new();
    let mut members: Vec<BTreeSet<(u32, u32)>> = vec![BTreeSet::new(); comms];
    let mut notes: BTreeSet<String> = BTreeSet::new();
    for (i, m) in inputs.iter().enumerate() {
        let m = (*m)?;
        let (p, mm) = m.renumbered(&renumber[i], &comm_map[i], &mut ops);
        pairs.extend(p);
        for (c, cr, g) in mm {
            if let Some(set) = members.get_mut(c as usize) {
                set.insert((cr, g));
            }
        }
        notes.extend(m.notes.iter().cloned());
    }
    pairs.sort_by(|a, b| {
        (a.src, a.comm, a.to_comm_rank, a.dst, a.op).cmp(&(
            b.src,
            b.comm,
            b.to_comm_rank,
            b.dst,
            b.op,
        ))
    });
    Some(Matrix {
        ops,
        members: members
            .into_iter()
            .map(|s| s.into_iter().collect())
            .collect(),
        pairs,
        notes: notes.into_iter().collect(),
    })
}
