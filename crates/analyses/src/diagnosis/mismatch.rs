//! Members of one communicator whose lines at the same opCount disagree (operation, count,
//! datatype, root or reduction): NCCL's classic cause of a hang. A finding needs two complete
//! lines that disagree: the parser keeps only whole operation lines (a cut one is a skipped,
//! garbled line), a line printed twice agrees with itself, and a member with fewer lines at an
//! opCount (a group of calls cut short by the excerpt) disagrees only where both have a line.
//!
//! Communicators with point-to-point lines are left out: Send/Recv move NCCL's opCount
//! differently on each member, so equal opCounts there need not be one call.

use super::groups::Comm;
use super::index::{Entry, Index, Signature};
use super::{text, Finding, Kind, Severity};
use std::collections::BTreeMap;

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
        for (op_count, calls) in by_op_count(ix, c) {
            if let Some(finding) = disagreement(ix, c, op_count, &calls) {
                out.push(Mismatch {
                    comm: ci,
                    op_count,
                    finding,
                });
            }
        }
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
            let distinct: std::collections::BTreeSet<u64> =
                p.colls.iter().map(|e| e.op_count).collect();
            p.p2p.is_empty() && (p.colls.len() < 4 || distinct.len() * 4 > p.colls.len())
        })
}

/// Per opCount, each member's lines there (a line printed twice once).
fn by_op_count<'a>(ix: &'a Index<'_>, c: &Comm) -> BTreeMap<u64, Vec<(usize, Vec<&'a Entry>)>> {
    let mut at: BTreeMap<u64, Vec<(usize, Vec<&Entry>)>> = BTreeMap::new();
    for &m in &c.members {
        let mut per: BTreeMap<u64, Vec<&Entry>> = BTreeMap::new();
        for e in &ix.pairs[m].colls {
            let list = per.entry(e.op_count).or_default();
            if list.last().is_some_and(|l| l.signature() == e.signature()) {
                continue;
            }
            list.push(e);
        }
        for (oc, list) in per {
            at.entry(oc).or_default().push((m, list));
        }
    }
    at
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
    let mut clusters: Vec<(Vec<Signature>, Vec<usize>)> = Vec::new();
    for (i, (_, list)) in calls.iter().enumerate() {
        let sigs: Vec<Signature> = list.iter().map(|e| e.signature()).collect();
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

fn compatible(a: &[Signature], b: &[Signature]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

fn finding(
    ix: &Index<'_>,
    c: &Comm,
    op_count: u64,
    calls: &[(usize, Vec<&Entry>)],
    clusters: &[(Vec<Signature>, Vec<usize>)],
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
                .map(|e| text::call(e))
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
            let ev = ix.evidence(e.source);
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
        grouped_by: Some(c.how.label().to_string()),
        peer_ranks: Vec::new(),
        time: odd
            .iter()
            .find_map(|&i| calls[i].1.first()?.timestamp_ns)
            .map(text::time),
    }
}
