//! Logical communicators for the diagnosis. With `commId` (init lines of NCCL 2.17+) the
//! analysis's grouping (`enrich::group`) is taken as it is. Without it, `enrich::group` ties
//! members by identical operation sequences, which is exactly what a hang breaks: the member
//! that stopped has a shorter sequence, the one that called another collective a different
//! one. So here the sequences are compared only over the opCounts every member of a size class
//! logged (from the latest first opCount to the earliest last one, the last excluded); members
//! whose trimmed sequences agree form a communicator, and where more of them share one than
//! the size allows, `enrich::group` splits them as it splits any run (consecutive or strided
//! ranks, timestamps). Members with nothing to compare are tied by size alone, and only when
//! they fit one communicator; otherwise each stays apart (the data cannot decide).

use super::index::Index;
use enrich::GroupedBy;
use model::log::{CommInit, LogOp};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};

/// How a communicator's members were tied together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum How {
    CommId,
    Sequence {
        ambiguous: bool,
    },
    /// Nothing to compare, but each process logged no other communicator of this size and
    /// all of them fit one: the only grouping there is.
    OnlyOfSize,
    SizeAlone,
}

impl How {
    pub fn label(self) -> &'static str {
        match self {
            How::CommId => "commId",
            How::Sequence { ambiguous: false } => "size and operation sequence",
            How::Sequence { ambiguous: true } => "size and operation sequence (ambiguous split)",
            How::OnlyOfSize => "size alone (each process's only communicator of that size)",
            How::SizeAlone => "size alone",
        }
    }

    /// Whether findings across its members can be trusted as much as the data allows.
    pub fn firm(self) -> bool {
        matches!(
            self,
            How::CommId | How::Sequence { ambiguous: false } | How::OnlyOfSize
        )
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Comm {
    pub id: String,
    pub size: u32,
    pub how: How,
    /// Pairs (index into [`Index::pairs`]), ordered by global rank.
    pub members: Vec<usize>,
    /// No pair of another process could be a member: the members not here are in no log.
    pub complete: bool,
}

pub(crate) fn group(ix: &Index<'_>) -> Vec<Comm> {
    let mut out = Vec::new();
    let mut taken = vec![false; ix.pairs.len()];
    for c in &ix.enriched.comms {
        if !matches!(c.grouped_by, GroupedBy::CommId(_)) {
            continue;
        }
        let members: Vec<usize> = c
            .members
            .iter()
            .filter_map(|(k, ptr, _)| ix.pair_of.get(&(*ix.proc_of.get(k)?, *ptr)).copied())
            .collect();
        for m in &members {
            taken[*m] = true;
        }
        out.push((members, c.size, How::CommId, true, Some(c.id.clone())));
    }
    // Set-ups that never finished still print their commId on `Init START`.
    let mut started: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, p) in ix.pairs.iter().enumerate() {
        if let (false, Some((_, Some(id), _))) = (taken[i], p.unfinished_init) {
            started.entry(id).or_default().push(i);
        }
    }
    for (id, members) in started {
        let size = members
            .iter()
            .map(|&m| ix.pairs[m].nranks)
            .max()
            .unwrap_or(0);
        for m in &members {
            taken[*m] = true;
        }
        out.push((members, size, How::CommId, true, Some(format!("0x{id:x}"))));
    }
    let mut classes: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, p) in ix.pairs.iter().enumerate() {
        if !taken[i] && p.nranks > 0 {
            classes.entry(p.nranks).or_default().push(i);
        }
    }
    for (size, pairs) in classes {
        for (members, how, complete) in group_class(ix, size, &pairs) {
            out.push((members, size, how, complete, None));
        }
    }
    let mut comms = name(ix, out);
    comms.sort_by(|a, b| {
        (std::cmp::Reverse(a.size), &a.id).cmp(&(std::cmp::Reverse(b.size), &b.id))
    });
    comms
}

/// Pairs of one size without `commId`, grouped.
fn group_class(ix: &Index<'_>, size: u32, pairs: &[usize]) -> Vec<(Vec<usize>, How, bool)> {
    let procs: BTreeSet<usize> = pairs.iter().map(|&p| ix.pairs[p].proc).collect();
    let mut out: Vec<(Vec<usize>, How)> = Vec::new();
    if procs.len() == pairs.len() && pairs.len() <= size as usize && distinct(ix, pairs) {
        // Each process's only pair of this size, all fitting one communicator.
        out.push((pairs.to_vec(), How::OnlyOfSize));
    } else {
        let (colls, rest): (Vec<usize>, Vec<usize>) =
            pairs.iter().partition(|&&p| !ix.pairs[p].colls.is_empty());
        out.extend(super::merge::coll_groups(ix, size, &colls));
        out.extend(without_collectives(ix, size, &rest));
    }
    // A group holding every process of its size class leaves no one in the logs out.
    out.into_iter()
        .map(|(members, how)| {
            let mine: BTreeSet<usize> = members.iter().map(|&m| ix.pairs[m].proc).collect();
            let complete = how.firm() || procs.is_subset(&mine);
            (members, how, complete)
        })
        .collect()
}

/// Pairs with no collective: point-to-point ones by their message sizes, set-up-only ones
/// together, each bucket one communicator where it fits one, else each pair its own.
fn without_collectives(ix: &Index<'_>, size: u32, pairs: &[usize]) -> Vec<(Vec<usize>, How)> {
    let mut buckets: BTreeMap<BTreeSet<(u64, u32)>, Vec<usize>> = BTreeMap::new();
    for &p in pairs {
        let sizes = ix.pairs[p]
            .p2p
            .iter()
            .map(|e| (ix.sig(e).count, ix.sig(e).datatype_code))
            .collect();
        buckets.entry(sizes).or_default().push(p);
    }
    let mut out = Vec::new();
    for members in buckets.into_values() {
        if members.len() <= size as usize && distinct(ix, &members) {
            out.push((members, How::SizeAlone));
        } else {
            out.extend(members.into_iter().map(|m| (vec![m], How::SizeAlone)));
        }
    }
    out
}

fn in_window(op_count: u64, (lo, hi): (u64, u64)) -> bool {
    op_count >= lo && op_count < hi
}

/// Whether the pairs can be members of one communicator: no GPU twice, no init rank twice.
pub(super) fn distinct(ix: &Index<'_>, members: &[usize]) -> bool {
    let mut gpus = BTreeSet::new();
    let mut ranks = BTreeSet::new();
    members.iter().all(|&m| {
        let p = &ix.pairs[m];
        let gpu_ok = gpus.insert((p.proc, p.cuda_dev));
        let rank_ok = match p.init.map(|i| i.0).or(p.unfinished_init.map(|u| u.0)) {
            Some(r) => ranks.insert(r),
            None => true,
        };
        gpu_ok && rank_ok
    })
}

/// More pairs share a trimmed sequence than one communicator holds: `enrich::group` splits
/// them, given only their windowed collectives (so they all look alike to it).
pub(super) fn split(
    ix: &Index<'_>,
    members: &[usize],
    window: (u64, u64),
) -> Vec<(Vec<usize>, How)> {
    let mut ops: Vec<LogOp> = Vec::new();
    let mut inits: Vec<CommInit> = Vec::new();
    for &m in members {
        let p = &ix.pairs[m];
        let key = ix.procs[p.proc].key.clone();
        // The lines themselves, read back from their logs.
        ops.extend(
            p.colls
                .iter()
                .filter(|e| in_window(e.op_count, window))
                .filter_map(|e| ix.full(e)),
        );
        if let Some((rank, _, source)) = p.init {
            inits.push(CommInit {
                process: key,
                func: None,
                comm: p.comm,
                rank,
                nranks: p.nranks,
                cuda_dev: p.cuda_dev,
                nvml_dev: None,
                bus_id: None,
                comm_id: None,
                split_parent: None,
                split_color: None,
                split_key: None,
                n_nodes: None,
                local_ranks: None,
                local_rank: None,
                mnnvl: None,
                source,
            });
        }
    }
    let grouped = enrich::group(&inits, &ops);
    let mut out = Vec::new();
    let mut placed = BTreeSet::new();
    for c in grouped.comms {
        let ambiguous = matches!(c.grouped_by, GroupedBy::Sequence { ambiguous: true });
        let ms: Vec<usize> = c
            .members
            .iter()
            .filter_map(|(k, ptr, _)| ix.pair_of.get(&(*ix.proc_of.get(k)?, *ptr)).copied())
            .filter(|m| members.contains(m) && placed.insert(*m))
            .collect();
        if !ms.is_empty() {
            out.push((ms, How::Sequence { ambiguous }));
        }
    }
    for &m in members.iter().filter(|m| !placed.contains(m)) {
        out.push((vec![m], How::SizeAlone));
    }
    out
}

/// Ids: the analysis's id of the members' communicator when they share one, the ids joined
/// with `+` when the analysis had them apart (a hang split them), else a new `diag-N`.
/// (members, size, how, complete, the id when known)
type Group = (Vec<usize>, u32, How, bool, Option<String>);

fn name(ix: &Index<'_>, groups: Vec<Group>) -> Vec<Comm> {
    let mut fresh = 0;
    let mut ids_seen: FxHashMap<String, usize> = FxHashMap::default();
    groups
        .into_iter()
        .map(|(mut members, size, how, complete, known)| {
            members.sort_by_key(|&m| (ix.rank(ix.pairs[m].proc).unwrap_or(u32::MAX), m));
            let ids: BTreeSet<&str> = members
                .iter()
                .filter_map(|&m| {
                    let p = &ix.pairs[m];
                    let c = ix.enriched.comm_of(&ix.procs[p.proc].key, p.comm)?;
                    Some(ix.enriched.comms.get(c)?.id.as_str())
                })
                .collect();
            let mut id = if let Some(id) = known {
                id
            } else if ids.is_empty() {
                fresh += 1;
                format!("diag-{fresh}")
            } else {
                ids.into_iter().collect::<Vec<_>>().join("+")
            };
            // Two groups the analysis had as one (an ambiguous split): keep ids apart.
            let n = ids_seen.entry(id.clone()).or_insert(0);
            *n += 1;
            if *n > 1 {
                id = format!("{id}#{n}");
            }
            Comm {
                id,
                size,
                how,
                members,
                complete,
            }
        })
        .collect()
}
