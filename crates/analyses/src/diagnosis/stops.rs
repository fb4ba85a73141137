//! Where every member of every communicator stopped: its last logged operation, how many
//! operations the others logged after it (`behind`), set-ups that never finished, and members
//! no log shows (`missing`).
//!
//! Which member is the cause: in a hang every member but one waits in a collective some other
//! member never called; the one that stopped is *not* waiting (its last collective on every
//! communicator was logged by all their members) yet is behind somewhere. That member is named
//! first; members behind only because they wait elsewhere are consequences (info). Logs alone
//! cannot tell a rank that stopped from an excerpt that was cut there: without an error or a
//! watchdog timeout in the logs the finding stays a warning and says so.

use super::groups::Comm;
use super::index::{Entry, Index};
use super::mismatch::{comparable, Mismatch};
use super::{text, CommStops, Finding, Kind, LastOp, MemberStop, Severity};
use model::log::SourceLine;
use std::collections::{BTreeMap, BTreeSet};

/// A finding about where members stopped, and whether a failure elsewhere in the logs makes it
/// critical.
pub(crate) struct StopFinding {
    pub finding: Finding,
    pub raise: bool,
    /// The watchdog's lines name its rank as the one the others waited for.
    pub named: bool,
    /// When the others began to wait for the members it names (the first line of an operation
    /// they did not log): the earliest wait is where a stopped rank got stuck first.
    pub since: Since,
}

/// (the first waiting line's timestamp, whether the member logged nothing there, the line).
pub(crate) type Since = (Option<i64>, bool, SourceLine);

const NEVER: Since = (
    None,
    true,
    SourceLine {
        file: u32::MAX,
        line: u64::MAX,
    },
);

pub(crate) fn find(
    ix: &Index<'_>,
    comms: &[Comm],
    mismatches: &[Mismatch],
    stragglers: &BTreeSet<(String, u32)>,
) -> (Vec<CommStops>, Vec<StopFinding>) {
    let waiting = Waiting {
        pairs: waiting_pairs(ix, comms, mismatches),
        p2p_last: p2p_last(ix),
        stragglers,
    };
    let mut stops = Vec::new();
    let mut findings = Vec::new();
    for (ci, c) in comms.iter().enumerate() {
        let first_mismatch = mismatches
            .iter()
            .filter(|m| m.comm == ci)
            .map(|m| m.op_count)
            .min();
        let (table, behind) = members(ix, c);
        findings.extend(behind_findings(
            ix,
            c,
            &table,
            &behind,
            &waiting,
            first_mismatch,
        ));
        findings.extend(unfinished_inits(ix, c));
        let missing = missing(ix, c);
        if let Some(finding) = missing_finding(c, &missing) {
            findings.push(StopFinding {
                finding,
                raise: false,
                named: false,
                since: NEVER,
            });
        }
        stops.push(CommStops {
            communicator: c.id.clone(),
            size: c.size,
            grouped_by: c.how.label().to_string(),
            members: table,
            missing_ranks: missing.0,
            missing: missing.1,
        });
    }
    // Stops that may be the cause before their consequences, the earliest wait first (the
    // order is kept within a severity).
    findings.sort_by_key(|f| {
        (
            !f.raise,
            !f.named,
            f.since.0.unwrap_or(i64::MAX),
            f.since.1,
            f.since.2,
        )
    });
    (stops, findings)
}

/// Raises the warnings that name a stopped rank to critical when the logs also show the run
/// failed (an error or a watchdog timeout).
pub(crate) fn corroborate(found: Vec<StopFinding>, failed: bool) -> Vec<Finding> {
    found
        .into_iter()
        .map(|mut s| {
            if failed && s.raise {
                s.finding.severity = Severity::Critical;
            }
            s.finding
        })
        .collect()
}

/// A member's last collective (latest opCount; the last line among equals), else its last
/// point-to-point line.
fn last_entry<'a>(ix: &'a Index<'_>, pair: usize) -> Option<&'a Entry> {
    let p = &ix.pairs[pair];
    let latest = |v: &'_ [Entry]| -> Option<usize> { (0..v.len()).max_by_key(|&i| v[i]) };
    match latest(&p.colls) {
        Some(i) => p.colls.get(i),
        None => latest(&p.p2p).and_then(|i| p.p2p.get(i)),
    }
}

/// The table of members, and (when opCounts compare) each member's distance behind.
fn members(ix: &Index<'_>, c: &Comm) -> (Vec<MemberStop>, Vec<u32>) {
    let compare = comparable(ix, c) && (c.how.firm() || guessed(c));
    let mut all: Vec<u64> = c
        .members
        .iter()
        .flat_map(|&m| ix.pairs[m].op_counts.iter().copied())
        .collect();
    all.sort_unstable();
    all.dedup();
    let mut behind = Vec::new();
    let table = c
        .members
        .iter()
        .map(|&m| {
            let p = &ix.pairs[m];
            let last = last_entry(ix, m);
            let behind_by = match (compare, last) {
                (false, _) => 0,
                (true, Some(e)) => (all.len() - all.partition_point(|&o| o <= e.op_count)) as u32,
                (true, None) => all.len() as u32,
            };
            behind.push(behind_by);
            let key = &ix.procs[p.proc].key;
            MemberStop {
                rank: ix.rank(p.proc),
                comm_rank: p.init.map(|i| i.0).or(p.unfinished_init.map(|u| u.0)),
                host: key.host.to_string(),
                pid: key.pid,
                last: last.map(|e| last_op(ix, e)),
                behind_by,
                init_unfinished: p.unfinished_init.is_some(),
                cut_line: last
                    .and_then(|e| ix.cut_line_after(p.proc, ix.source(e)))
                    .map(|s| ix.evidence(s)),
            }
        })
        .collect();
    (table, behind)
}

fn last_op(ix: &Index<'_>, e: &Entry) -> LastOp {
    let s = ix.sig(e);
    // Root and stream are read back from the line (the index keeps what is compared).
    let full = ix.full(e);
    LastOp {
        op_count: text::hex(e.op_count),
        op: text::op_name(s.op),
        count: s.count,
        datatype: text::datatype(s.datatype(), s.datatype_code),
        root: full.as_ref().map_or(0, |o| o.root),
        stream: format!("0x{:x}", full.as_ref().map_or(0, |o| o.stream)),
        time: ix.timestamp_ns(e).map(text::time),
        evidence: ix.evidence(ix.source(e)),
    }
}

/// Pairs whose last collective some present member of its communicator did not log, or whose
/// members called differently (a mismatch): they wait in it.
fn waiting_pairs(ix: &Index<'_>, comms: &[Comm], mismatches: &[Mismatch]) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for m in mismatches {
        for &p in &comms[m.comm].members {
            if ix.pairs[p].op_counts.last() == Some(&m.op_count) {
                out.insert(p);
            }
        }
    }
    for c in comms
        .iter()
        .filter(|c| comparable(ix, c) && (c.how.firm() || guessed(c)))
    {
        for &m in &c.members {
            let Some(last) = ix.pairs[m].op_counts.last() else {
                continue;
            };
            let missing = c
                .members
                .iter()
                .any(|&o| ix.pairs[o].op_counts.binary_search(last).is_err());
            if missing {
                out.insert(m);
            }
        }
    }
    out
}

/// One finding per group of members that stopped at the same opCount behind the others.
fn behind_findings(
    ix: &Index<'_>,
    c: &Comm,
    table: &[MemberStop],
    behind: &[u32],
    waiting: &Waiting<'_>,
    first_mismatch: Option<u64>,
) -> Vec<StopFinding> {
    let Some(front) = c
        .members
        .iter()
        .filter_map(|&m| last_entry(ix, m))
        .map(|e| e.op_count)
        .max()
    else {
        return Vec::new();
    };
    // The classic picture of a hang: the other members all logged the same last collective.
    let level = behind.iter().filter(|b| **b == 0).count() >= 2;
    // (last opCount or none, waiting elsewhere, cut line) → members
    let mut groups: BTreeMap<(Option<u64>, Waits, bool, bool), Vec<usize>> = BTreeMap::new();
    for (i, &m) in c.members.iter().enumerate() {
        if behind[i] == 0 {
            continue;
        }
        let proc = ix.pairs[m].proc;
        // Waiting in a collective of any of its communicators, or (unless the others all
        // stand at one collective) in the Send or Recv it logged last.
        let named = ix
            .rank(proc)
            .is_some_and(|r| waiting.stragglers.contains(&(c.id.clone(), r)));
        let waits = if ix
            .pair_of
            .iter()
            .any(|((p, _), pair)| *p == proc && waiting.pairs.contains(pair))
        {
            Waits::Collective
        } else if waiting.p2p_last.contains(&proc) && !level {
            Waits::PointToPoint
        } else {
            Waits::No
        };
        let last = last_entry(ix, m).map(|e| e.op_count);
        groups
            .entry((last, waits, table[i].cut_line.is_some(), named))
            .or_default()
            .push(i);
    }
    groups
        .into_iter()
        .map(|((last, waits, cut, named), idx)| {
            let by = idx.iter().map(|&i| behind[i]).max().unwrap_or(0);
            let since = c
                .members
                .iter()
                .flat_map(|&m| ix.pairs[m].colls.iter())
                .filter(|e| last.is_none_or(|l| e.op_count > l))
                .map(|e| (ix.timestamp_ns(e), last.is_none(), ix.source(e)))
                .min_by_key(|s| (s.0.unwrap_or(i64::MAX), s.2))
                .unwrap_or(NEVER);
            let facts = Facts {
                named,
                since,
                waits,
                cut,
                level,
                first_mismatch,
            };
            behind_finding(ix, c, table, &idx, (last, front, by), facts)
        })
        .collect()
}

/// Where a member waits, as far as its lines say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Waits {
    No,
    /// In a collective some other member never logged (or called differently).
    Collective,
    /// In the Send or Recv it logged last (for its peer).
    PointToPoint,
}

/// Pairs waiting in a collective, processes whose last operation is a Send or Recv, and the
/// ranks the watchdog's lines show never enqueued what the others waited in.
struct Waiting<'a> {
    pairs: BTreeSet<usize>,
    p2p_last: BTreeSet<usize>,
    stragglers: &'a BTreeSet<(String, u32)>,
}

/// Processes whose last logged operation (by stamp, else by line) is a Send or Recv.
fn p2p_last(ix: &Index<'_>) -> BTreeSet<usize> {
    let mut last: BTreeMap<usize, (Option<i64>, SourceLine, bool)> = BTreeMap::new();
    for p in &ix.pairs {
        // Each list's last line (its lines are in file order), stamped, for the process.
        let entries = p
            .colls
            .iter()
            .max_by_key(|e| e.at())
            .map(|e| (e, false))
            .into_iter()
            .chain(p.p2p.iter().max_by_key(|e| e.at()).map(|e| (e, true)));
        for (e, p2p) in entries {
            let key = (ix.timestamp_ns(e), ix.source(e), p2p);
            let slot = last.entry(p.proc).or_insert(key);
            if (key.0, key.1) > (slot.0, slot.1) {
                *slot = key;
            }
        }
    }
    last.into_iter()
        .filter(|(_, k)| k.2)
        .map(|(p, _)| p)
        .collect()
}

/// Members split from others of one sequence by a guess (consecutive or strided ranks).
fn guessed(c: &Comm) -> bool {
    c.how == super::groups::How::Sequence { ambiguous: true }
}

/// What decides how much a member's stop means.
struct Facts {
    /// The watchdog's lines name it as never having enqueued what the others waited in.
    named: bool,
    since: Since,
    waits: Waits,
    /// Its log ends in a cut operation line.
    cut: bool,
    /// Two or more other members logged the same last collective.
    level: bool,
    first_mismatch: Option<u64>,
}

fn behind_finding(
    ix: &Index<'_>,
    c: &Comm,
    table: &[MemberStop],
    idx: &[usize],
    (last, front, by): (Option<u64>, u64, u32),
    facts: Facts,
) -> StopFinding {
    let mut ranks: Vec<u32> = idx.iter().filter_map(|&i| table[i].rank).collect();
    ranks.sort_unstable();
    let who = text::ranks(&ranks);
    let stopped = match last {
        Some(l) => format!("stopped logging at opCount {}", text::hex(l)),
        None => "logged no operation".to_string(),
    };
    let ops = if by == 1 { "operation" } else { "operations" };
    let head = format!(
        "On communicator {}, {who} {stopped} while others reached {} ({by} {ops} behind)",
        c.id,
        text::hex(front)
    );
    let explained = facts
        .first_mismatch
        .is_some_and(|m| last.is_none_or(|l| m <= l + 1));
    let (severity, tail, raise) = if explained {
        (
            Severity::Info,
            "; the mismatched collective on this communicator explains it".to_string(),
            false,
        )
    } else if facts.cut {
        (
            Severity::Info,
            "; its log ends in a per-collective line cut short, which may be its next operation"
                .to_string(),
            false,
        )
    } else if facts.named {
        (
            Severity::Warning,
            "; the watchdog's lines show it never enqueued the collective the others timed out in"
                .to_string(),
            true,
        )
    } else if facts.waits == Waits::Collective {
        (
            Severity::Info,
            "; it waits in a collective another member never logged, so it is a consequence"
                .to_string(),
            false,
        )
    } else if facts.waits == Waits::PointToPoint {
        (
            Severity::Info,
            "; its last logged operation is a Send or Recv, which may be waiting for its peer"
                .to_string(),
            false,
        )
    } else if facts.level {
        (
            Severity::Warning,
            "; it waits in no logged collective while the others all logged the same last one, so it is where their wait starts (unless its log was cut there)"
                .to_string(),
            true,
        )
    } else {
        (
            Severity::Info,
            "; it waits in no logged collective, but no two other members stopped at the same one, which is also how an excerpt cut anywhere looks"
                .to_string(),
            true,
        )
    };
    // Members tied by a guess say less, unless the watchdog names them.
    let (severity, raise, tail) = if guessed(c) && !facts.named {
        (
            Severity::Info,
            false,
            format!("{tail} (if the grouping, a guess, holds)"),
        )
    } else {
        (severity, raise, tail)
    };
    let mut evidence: Vec<_> = idx
        .iter()
        .filter_map(|&i| table[i].last.as_ref().map(|l| l.evidence.clone()))
        .collect();
    evidence.extend(idx.iter().filter_map(|&i| table[i].cut_line.clone()));
    evidence.truncate(8);
    let mut processes: Vec<_> = idx
        .iter()
        .map(|&i| ix.process_ref(ix.pairs[c.members[i]].proc))
        .collect();
    processes.sort();
    StopFinding {
        finding: Finding {
            kind: Kind::Behind,
            severity,
            communicator: Some(c.id.clone()),
            op_count: last.map(text::hex),
            ranks,
            processes,
            message: format!("{head}{tail}."),
            evidence,
            class: None,
            first: false,
            time_base: None,
            grouped_by: Some(c.how.label().to_string()),
            peer_ranks: Vec::new(),
            time: idx
                .iter()
                .find_map(|&i| table[i].last.as_ref()?.time.clone()),
        },
        raise,
        named: facts.named,
        since: facts.since,
    }
}

/// Members that printed `Init START` and no `Init COMPLETE`.
fn unfinished_inits(ix: &Index<'_>, c: &Comm) -> Vec<StopFinding> {
    c.members
        .iter()
        .filter_map(|&m| {
            let p = &ix.pairs[m];
            let (rank_in, _, source) = p.unfinished_init?;
            let rank = ix.rank(p.proc);
            let key = &ix.procs[p.proc].key;
            let who = match rank {
                Some(r) => format!("Rank {r} ({}:{})", key.host, key.pid),
                None => format!("Process {}:{}", key.host, key.pid),
            };
            let message = format!(
                "{who} printed Init START for communicator {} (rank {rank_in} of {}) and no Init COMPLETE: its set-up did not finish in this log.",
                c.id,
                c.size
            );
            Some(StopFinding {
                finding: Finding {
                    kind: Kind::Behind,
                    severity: Severity::Warning,
                    communicator: Some(c.id.clone()),
                    op_count: None,
                    ranks: rank.into_iter().collect(),
                    processes: vec![ix.process_ref(p.proc)],
                    message,
                    evidence: vec![ix.evidence(source)],
                    class: None,
                    first: false,
                    time_base: None,
                    grouped_by: Some(c.how.label().to_string()),
                    peer_ranks: Vec::new(),
                    time: None,
                },
                raise: true,
                named: false,
                since: NEVER,
            })
        })
        .collect()
}

/// (ranks in the communicator no member has, how many members are missing). The ranks are
/// known only when every present member's init line gives its rank.
fn missing(ix: &Index<'_>, c: &Comm) -> (Vec<u32>, u32) {
    let n = c.size.saturating_sub(c.members.len() as u32);
    let ranks: Option<BTreeSet<u32>> = c
        .members
        .iter()
        .map(|&m| {
            let p = &ix.pairs[m];
            p.init.map(|i| i.0).or(p.unfinished_init.map(|u| u.0))
        })
        .collect();
    let list = match ranks {
        Some(have) if n > 0 => (0..c.size).filter(|r| !have.contains(r)).collect(),
        _ => Vec::new(),
    };
    (list, n)
}

fn missing_finding(c: &Comm, missing: &(Vec<u32>, u32)) -> Option<Finding> {
    // A member grouped by nothing but its own size is not evidence of who else belongs.
    if missing.1 == 0 || !c.complete {
        return None;
    }
    let which = if missing.0.is_empty() {
        String::new()
    } else {
        let shown: Vec<String> = missing.0.iter().take(16).map(u32::to_string).collect();
        let more = if missing.0.len() > 16 { ", …" } else { "" };
        format!(" (ranks {}{more} in the communicator)", shown.join(", "))
    };
    let message = format!(
        "{} of the {} members of communicator {} appear in no file given{which}: each either never logged (or traced) or its file was not given, which the files cannot tell apart.",
        missing.1, c.size, c.id
    );
    Some(Finding {
        kind: Kind::Missing,
        severity: Severity::Info,
        communicator: Some(c.id.clone()),
        op_count: None,
        ranks: Vec::new(),
        processes: Vec::new(),
        message,
        evidence: Vec::new(),
        class: None,
        first: false,
        time_base: None,
        grouped_by: Some(c.how.label().to_string()),
        peer_ranks: Vec::new(),
        time: None,
    })
}
