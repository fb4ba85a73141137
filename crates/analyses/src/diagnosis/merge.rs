//! Communicators of one size without `commId`, from their collectives. Pairs with identical
//! sequences (opCount by opCount) are one atom; an atom holding more pairs than one
//! communicator is split by `enrich::group` (consecutive or strided ranks, timestamps). Atoms
//! are then merged, the best-agreeing first, where one communicator can hold them (no process
//! or init rank twice, no more members than its size) and their sequences are compatible: they
//! agree at every opCount both logged, except that both may end in a different call (a
//! mismatch), and agree on at least one. A member that stopped early has a prefix of the
//! others' sequence and joins them; a member of another communicator of the same size shares a
//! process with them and cannot.

use super::groups::{split, How};
use super::index::Index;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};

/// Beyond this many atoms the merging (quadratic in atoms) is left out: the atoms stay apart.
const MAX_ATOMS: usize = 256;
/// How many opCounts at each end of a sequence a comparison reads: where members of one
/// communicator differ (their ends) and where unrelated ones do (everywhere).
const SAMPLE: usize = 128;

/// opCount → the calls there (interned signatures; a line printed twice once).
type Sequence = BTreeMap<u64, Vec<u32>>;

struct Atom {
    members: Vec<usize>,
    /// The sequence of its longest member.
    seq: Sequence,
    procs: BTreeSet<usize>,
    ranks: BTreeSet<u32>,
    how: How,
}

pub(super) fn coll_groups(ix: &Index<'_>, size: u32, pairs: &[usize]) -> Vec<(Vec<usize>, How)> {
    let mut atoms = atoms(ix, size, pairs);
    if atoms.len() <= MAX_ATOMS {
        while let Some((i, j)) = best_merge(&atoms, size) {
            let b = atoms.remove(j);
            let a = &mut atoms[i];
            a.members.extend(b.members);
            a.procs.extend(b.procs);
            a.ranks.extend(b.ranks);
            for (oc, calls) in b.seq {
                let e = a.seq.entry(oc).or_default();
                if calls.len() > e.len() {
                    *e = calls;
                }
            }
            if matches!(b.how, How::Sequence { ambiguous: true }) {
                a.how = b.how;
            }
        }
    }
    atoms.into_iter().map(|a| (a.members, a.how)).collect()
}

fn sequence(ix: &Index<'_>, pair: usize) -> Sequence {
    let mut seq = Sequence::new();
    for e in &ix.pairs[pair].colls {
        let calls = seq.entry(e.op_count).or_default();
        if calls.last() != Some(&e.sig) {
            calls.push(e.sig);
        }
    }
    seq
}

/// Pairs grouped by identical sequences, oversized groups split.
fn atoms(ix: &Index<'_>, size: u32, pairs: &[usize]) -> Vec<Atom> {
    let mut by_hash: BTreeMap<(u64, usize), (Sequence, Vec<usize>)> = BTreeMap::new();
    for &p in pairs {
        let seq = sequence(ix, p);
        let mut h = rustc_hash::FxHasher::default();
        seq.hash(&mut h);
        let e = by_hash
            .entry((h.finish(), seq.len()))
            .or_insert_with(|| (seq, Vec::new()));
        e.1.push(p);
    }
    let mut groups: Vec<(Sequence, Vec<usize>)> = by_hash.into_values().collect();
    absorb(ix, size, &mut groups);
    let mut out = Vec::new();
    for (seq, members) in groups {
        let fits = members.len() <= size as usize && super::groups::distinct(ix, &members);
        let parts = if fits {
            vec![(members, How::Sequence { ambiguous: false })]
        } else {
            // Split over the opCounts all of them logged but the last (where one may differ).
            let lo = seq.keys().next().copied().unwrap_or(0);
            let hi = members
                .iter()
                .filter_map(|&m| ix.pairs[m].colls.iter().map(|e| e.op_count).max())
                .min()
                .unwrap_or(lo);
            split(ix, &members, (lo, hi))
        };
        for (members, how) in parts {
            out.push(Atom {
                procs: members.iter().map(|&m| ix.pairs[m].proc).collect(),
                ranks: members.iter().filter_map(|&m| init_rank(ix, m)).collect(),
                seq: seq.clone(),
                members,
                how,
            });
        }
    }
    out
}

/// A group of identical sequences too big for one communicator but not a whole number of
/// them is missing members that differ at the end (stopped early, called differently): it
/// takes in the best-agreeing small groups that fill it up before it is split.
fn absorb(ix: &Index<'_>, size: u32, groups: &mut Vec<(Sequence, Vec<usize>)>) {
    let size = size as usize;
    let mut i = 0;
    while i < groups.len() {
        let short = |g: &(Sequence, Vec<usize>)| {
            let n = g.1.len();
            n > size && !n.is_multiple_of(size)
        };
        if !short(&groups[i]) {
            i += 1;
            continue;
        }
        let missing = size - groups[i].1.len() % size;
        let procs: BTreeSet<usize> = groups[i].1.iter().map(|&m| ix.pairs[m].proc).collect();
        let best = (0..groups.len())
            .filter(|&j| j != i && groups[j].1.len() <= missing)
            .filter(|&j| {
                groups[j]
                    .1
                    .iter()
                    .all(|&m| !procs.contains(&ix.pairs[m].proc))
            })
            .filter_map(|j| agreement(&groups[i].0, &groups[j].0).map(|s| (s, j)))
            .max();
        match best {
            Some((_, j)) => {
                let (_, members) = groups.remove(j);
                let at = if j < i { i - 1 } else { i };
                groups[at].1.extend(members);
                i = 0;
            }
            None => i += 1,
        }
    }
}

fn init_rank(ix: &Index<'_>, m: usize) -> Option<u32> {
    let p = &ix.pairs[m];
    p.init.map(|i| i.0).or(p.unfinished_init.map(|u| u.0))
}

/// The two atoms that agree most and may be one communicator.
fn best_merge(atoms: &[Atom], size: u32) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize, usize)> = None;
    for i in 0..atoms.len() {
        for j in i + 1..atoms.len() {
            let (a, b) = (&atoms[i], &atoms[j]);
            let room = a.members.len() + b.members.len() <= size as usize;
            if !room || !a.procs.is_disjoint(&b.procs) || !a.ranks.is_disjoint(&b.ranks) {
                continue;
            }
            if let Some(score) = agreement(&a.seq, &b.seq) {
                if best.is_none_or(|(_, _, s)| score > s) {
                    best = Some((i, j, score));
                }
            }
        }
    }
    best.map(|(i, j, _)| (i, j))
}

/// How many sampled opCounts two sequences agree on, when they are compatible.
fn agreement(a: &Sequence, b: &Sequence) -> Option<usize> {
    let (last_a, last_b) = (a.keys().next_back()?, b.keys().next_back()?);
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let sampled: BTreeSet<u64> = small
        .keys()
        .take(SAMPLE)
        .chain(small.keys().rev().take(SAMPLE))
        .copied()
        .collect();
    let mut agree = 0;
    for oc in sampled {
        let (Some(x), Some(y)) = (small.get(&oc), large.get(&oc)) else {
            continue;
        };
        if x.iter().zip(y).all(|(p, q)| p == q) {
            agree += 1;
        } else if !(oc == *last_a && oc == *last_b) {
            return None;
        }
    }
    (agree > 0).then_some(agree)
}
