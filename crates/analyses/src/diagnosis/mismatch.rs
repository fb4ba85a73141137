//! Members of one communicator whose lines at the same opCount disagree (operation, count,
//! datatype, root or reduction): NCCL's classic cause of a hang. A finding needs two complete
//! lines that disagree: the parser keeps only whole operation lines (a cut one is a skipped,
//! garbled line), a line printed twice agrees with itself, and a member with fewer lines at an
//! opCount (a group of calls cut short by the excerpt) disagrees only where both have a line.
//!
//! Communicators with point-to-point lines are left out: Send/Recv move NCCL's opCount
//! differently on each member, so equal opCounts there need not be one call.

use super::groups::Comm;
use super::index::{Entry, Index};
use super::{text, Finding, Kind, Severity};

/// A mismatch and where it is.
pub(crate) struct Mismatch {
    /// Index into the diagnosis's communicators.
    pub comm: usize,
    pub op_count: u64,
    pub finding: Finding,
}

/// How many lines of evidence a mismatch quotes.
const EVIDENCE: usize = 8;

pub(crate) fn find(ix: &Index<'_>, comms: &[Comm]) -> Vec<Mismatch> {
    let mut out = Vec::new();
    for (ci, c) in comms.iter().enumerate() {
        if !comparable(ix, c) {
            continue;
        }
        for_each_disagreeing_op_count(ix, c, |op_count, calls| {
            if let Some(finding) = disagreement(ix, c, op_count, calls) {
                out.push(Mismatch {
                    comm: ci,
                    op_count,
                    finding,
                });
            }
        });
    }
    out
}

/// Whether the members' opCounts name the same calls: at least two members, no point-to-point
/// lines, and opCounts that advance (NCCL 2.27+ prints opCount 0 for every call of a
/// single-node communicator; then equal opCounts say nothing).
pub(crate) fn comparable(ix: &Index<'_>, c: &Comm) -> bool {
    c.members.len() >= 2
        && c.members.iter().all(|&m| {
            let p = &ix.pairs[m];
            p.p2p.is_empty() && (p.colls.len() < 4 || p.op_counts.len() * 4 > p.colls.len())
        })
}

/// Calls `f` with each opCount where the members' lines are not all one call, and each
/// member's lines there (a line printed twice once). One sort of every line of the
/// communicator: a run's communicators hold millions of lines, nearly all in agreement.
fn for_each_disagreeing_op_count<'a>(
    ix: &'a Index<'_>,
    c: &Comm,
    mut f: impl FnMut(u64, &[(usize, Vec<&'a Entry>)]),
) {
    // (opCount, member, position in its lines)
    let mut flat: Vec<(u64, u32, u32)> = Vec::new();
    for (k, &m) in c.members.iter().enumerate() {
        let colls = &ix.pairs[m].colls;
        flat.extend(
            colls
                .iter()
                .enumerate()
                .map(|(i, e)| (e.op_count, k as u32, i as u32)),
        );
    }
    flat.sort_unstable();
    let entry = |&(_, k, i): &(u64, u32, u32)| &ix.pairs[c.members[k as usize]].colls[i as usize];
    for group in flat.chunk_by(|a, b| a.0 == b.0) {
        let first = entry(&group[0]).sig;
        if group.iter().all(|g| entry(g).sig == first) {
            continue;
        }
        let mut calls: Vec<(usize, Vec<&Entry>)> = Vec::new();
        for g in group {
            let m = c.members[g.1 as usize];
            let e = entry(g);
            match calls.last_mut() {
                Some((last, list)) if *last == m => {
                    if list.last().is_none_or(|l| l.sig != e.sig) {
                        list.push(e);
                    }
                }
                _ => calls.push((m, vec![e])),
            }
        }
        f(group[0].0, &calls);
    }
}

/// Clusters of members whose calls at one opCount agree (one's list a prefix of another's);
/// a finding when there are two or more.
fn disagreement(
    ix: &Index<'_>,
    c: &Comm,
    op_count: u64,
    calls: &[(usize, Vec<&Entry>)],
) -> Option<Finding> {
    if calls.len() < 2 {
        return None;
    }
    // (the longest list of the cluster, its members)
    let mut clusters: Vec<(Vec<u32>, Vec<usize>)> = Vec::new();
    for (i, (_, list)) in calls.iter().enumerate() {
        let sigs: Vec<u32> = list.iter().map(|e| e.sig).collect();
        match clusters.iter_mut().find(|(rep, _)| compatible(rep, &sigs)) {
            Some((rep, ms)) => {
                if sigs.len() > rep.len() {
                    *rep = sigs;
                }
                ms.push(i);
            }
            None => clusters.push((sigs, vec![i])),
        }
    }
    if clusters.len() < 2 {
        return None;
    }
    clusters.sort_by_key(|(_, ms)| std::cmp::Reverse(ms.len()));
    let top = clusters[0].1.len();
    let tied = clusters.iter().filter(|(_, ms)| ms.len() == top).count();
    // The odd ones out: every cluster but the majority's (all of them on a tie).
    let odd: Vec<usize> = clusters
        .iter()
        .skip(if tied > 1 { 0 } else { 1 })
        .flat_map(|(_, ms)| ms.iter().copied())
        .collect();
    Some(finding(ix, c, op_count, calls, &clusters, &odd, tied > 1))
}

fn compatible(a: &[u32], b: &[u32]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

fn finding(
    ix: &Index<'_>,
    c: &Comm,
    op_count: u64,
    calls: &[(usize, Vec<&Entry>)],
    clusters: &[(Vec<u32>, Vec<usize>)],
    odd: &[usize],
    tie: bool,
) -> Finding {
    let rank_of = |i: usize| ix.rank(ix.pairs[calls[i].0].proc);
    let sentence: Vec<String> = clusters
        .iter()
        .map(|(_, ms)| {
            let mut rs: Vec<u32> = ms.iter().filter_map(|&i| rank_of(i)).collect();
            rs.sort_unstable();
            // The first line of the cluster's longest list says what it called.
            let longest = ms
                .iter()
                .max_by_key(|&&i| calls[i].1.len())
                .and_then(|&i| calls[i].1.first())
                .map(|e| text::call(ix.sig(e)))
                .unwrap_or_default();
            let verb = if ms.len() == 1 { "calls" } else { "call" };
            format!("{} {verb} {longest}", text::ranks(&rs))
        })
        .collect();
    let mut ranks: Vec<u32> = odd.iter().filter_map(|&i| rank_of(i)).collect();
    ranks.sort_unstable();
    let mut processes: Vec<_> = odd
        .iter()
        .map(|&i| ix.process_ref(ix.pairs[calls[i].0].proc))
        .collect();
    processes.sort();
    let who = if tie {
        "the data cannot tell which side is wrong".to_string()
    } else {
        format!(
            "{} {} the odd one out",
            text::ranks(&ranks),
            if ranks.len() == 1 { "is" } else { "are" }
        )
    };
    let grouped = if c.how.firm() {
        String::new()
    } else {
        format!(
            " (if these lines are one communicator: grouped by {})",
            c.how.label()
        )
    };
    let message = format!(
        "At opCount {} of communicator {}{grouped}, {}: members must make the same call, so {who}.",
        text::hex(op_count),
        c.id,
        text::list(sentence),
    );
    // Each odd member's line first, then a line of every cluster.
    let mut evidence = Vec::new();
    let firsts = clusters.iter().filter_map(|(_, ms)| ms.first().copied());
    for i in odd.iter().copied().chain(firsts) {
        if let Some(e) = calls[i].1.first() {
            let ev = ix.evidence(ix.source(e));
            if !evidence.contains(&ev) && evidence.len() < EVIDENCE {
                evidence.push(ev);
            }
        }
    }
    Finding {
        kind: Kind::Mismatch,
        severity: if c.how.firm() {
            Severity::Critical
        } else {
            Severity::Warning
        },
        communicator: Some(c.id.clone()),
        op_count: Some(text::hex(op_count)),
        ranks,
        processes,
        message,
        evidence,
        class: None,
        first: false,
        time_base: None,
        grouped_by: Some(c.how.label().to_string()),
        peer_ranks: Vec::new(),
        time: odd
            .iter()
            .find_map(|&i| ix.timestamp_ns(calls[i].1.first()?))
            .map(text::time),
    }
}
