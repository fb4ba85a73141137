//! The framework's watchdog in the same files: PyTorch's collective timeouts (per process
//! group and sequence number), the last enqueued and completed work each rank reports (the
//! rank that enqueued least never reached the collective), and a watchdog stuck in a call.
//! A timeout is tied to a communicator where a member of it logged, at opCount `SeqNum - 1`
//! (PyTorch counts from 1, NCCL from 0), the operation and element count the timeout names, on
//! exactly one communicator of the timed-out ranks.

use super::groups::Comm;
use super::index::Index;
use super::{text, Finding, Kind, Severity};
use ingest_nccl::{FrameworkEvent, FrameworkLine, ProcessGroup};
use model::OpType;
use std::collections::{BTreeMap, BTreeSet};

/// A process group as the lines name it (id, guid, description), or none.
type GroupKey = Option<(String, Option<String>, Option<String>)>;

fn group_key(g: &Option<ProcessGroup>) -> GroupKey {
    g.as_ref()
        .map(|g| (g.id.clone(), g.guid.clone(), g.desc.clone()))
}

/// The global rank a framework line speaks for: torchrun's prefix, else its process's rank,
/// else the rank in the default group (which is the global one).
fn rank_of(ix: &Index<'_>, f: &FrameworkLine) -> Option<u32> {
    let default_group = f
        .group
        .as_ref()
        .is_none_or(|g| g.id == "0" || g.desc.as_deref() == Some("default_pg"));
    f.rank
        .or_else(|| f.process.as_ref().and_then(|p| ix.rank_of_key(p)))
        .or(f.group_rank.filter(|_| default_group))
}

struct Timeout<'a> {
    line: &'a FrameworkLine,
    rank: Option<u32>,
    op_type: &'a str,
    numel: Option<u64>,
    numel_out: Option<u64>,
    timeout_ms: Option<u64>,
}

/// The timeout findings, and the (communicator, rank) pairs whose own watchdog lines show they
/// never enqueued the collective the others timed out in.
pub(crate) struct Timeouts {
    pub findings: Vec<Finding>,
    pub stragglers: BTreeSet<(String, u32)>,
}

pub(crate) fn find(ix: &Index<'_>, comms: &[Comm]) -> Timeouts {
    let lines: Vec<&FrameworkLine> = ix.logs.iter().flat_map(|l| &l.framework).collect();
    // (group, seq) → timeouts, one per rank (the terminated-with-exception line repeats it)
    let mut timeouts: BTreeMap<(GroupKey, u64), Vec<Timeout<'_>>> = BTreeMap::new();
    // group → rank → last enqueued work
    let mut enqueued: BTreeMap<GroupKey, BTreeMap<u32, i64>> = BTreeMap::new();
    let mut out = Vec::new();
    let mut stragglers = BTreeSet::new();
    // The timeout line names only `[Rank n]`; the status line after it names the group too:
    // (rank, work) → group.
    let group_of_work: BTreeMap<(Option<u32>, u64), GroupKey> = lines
        .iter()
        .filter_map(|f| match &f.event {
            FrameworkEvent::WorkStatus { work: Some(w), .. } if f.group.is_some() => {
                Some(((rank_of(ix, f), *w), group_key(&f.group)))
            }
            _ => None,
        })
        .collect();
    for f in &lines {
        let rank = rank_of(ix, f);
        match &f.event {
            FrameworkEvent::WatchdogTimeout {
                seq,
                op_type,
                numel_in,
                numel_out,
                timeout_ms,
                ..
            } => {
                let group = match f.group {
                    Some(_) => group_key(&f.group),
                    None => group_of_work.get(&(rank, *seq)).cloned().flatten(),
                };
                let list = timeouts.entry((group, *seq)).or_default();
                if !list
                    .iter()
                    .any(|t| t.rank == rank && t.line.process == f.process)
                {
                    list.push(Timeout {
                        line: f,
                        rank,
                        op_type,
                        numel: *numel_in,
                        numel_out: *numel_out,
                        timeout_ms: *timeout_ms,
                    });
                }
            }
            FrameworkEvent::WorkStatus {
                last_enqueued: Some(n),
                ..
            } => {
                if let Some(r) = rank {
                    enqueued
                        .entry(group_key(&f.group))
                        .or_default()
                        .insert(r, *n);
                }
            }
            FrameworkEvent::WatchdogStuck { seconds } => out.push(stuck(ix, f, rank, *seconds)),
            _ => {}
        }
    }
    for ((group, seq), list) in &timeouts {
        let status = enqueued.get(group).or_else(|| {
            (enqueued.len() == 1)
                .then(|| enqueued.values().next())
                .flatten()
        });
        let (finding, late) = timeout(ix, comms, group, *seq, list, status);
        if let Some(c) = &finding.communicator {
            stragglers.extend(late.into_iter().map(|r| (c.clone(), r)));
        }
        out.push(finding);
    }
    Timeouts {
        findings: out,
        stragglers,
    }
}

fn timeout(
    ix: &Index<'_>,
    comms: &[Comm],
    group: &GroupKey,
    seq: u64,
    list: &[Timeout<'_>],
    enqueued: Option<&BTreeMap<u32, i64>>,
) -> (Finding, Vec<u32>) {
    let timed_out: Vec<u32> = list
        .iter()
        .filter_map(|t| t.rank)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let first = &list[0];
    // Ranks whose last enqueued work is before the one that timed out never reached it.
    let stragglers: Vec<u32> = enqueued
        .map(|m| {
            m.iter()
                .filter(|(_, n)| **n < seq as i64)
                .map(|(r, _)| *r)
                .collect()
        })
        .unwrap_or_default();
    let numel = first
        .numel
        .map(|n| format!(", {n} element{}", if n == 1 { "" } else { "s" }))
        .unwrap_or_default();
    let after = first
        .timeout_ms
        .map(|ms| format!(" after {ms} ms"))
        .unwrap_or_default();
    let pg = match group {
        Some((id, _, Some(desc))) => format!(" of process group {id} ({desc})"),
        Some((id, _, None)) => format!(" of process group {id}"),
        None => String::new(),
    };
    let mut message = format!(
        "{} timed out{after} waiting in {} (SeqNum {seq}{numel}){pg}",
        capitalised(&text::ranks(&timed_out)),
        first.op_type
    );
    if !stragglers.is_empty() {
        let verb = if stragglers.len() == 1 { "is" } else { "are" };
        message.push_str(&format!(
            "; {} enqueued only up to an earlier work, so {} {verb} the one the others waited for",
            text::ranks(&stragglers),
            text::ranks(&stragglers)
        ));
    }
    let joined = join(ix, comms, seq, list);
    if let Some((c, oc)) = &joined {
        message.push_str(&format!(
            "; it is opCount {} of communicator {c}",
            text::hex(*oc)
        ));
    }
    message.push('.');
    let mut processes: Vec<_> = list
        .iter()
        .filter_map(|t| t.line.process.as_ref())
        .map(|p| super::ProcessRef {
            host: p.host.to_string(),
            pid: p.pid,
        })
        .collect();
    processes.sort();
    processes.dedup();
    let finding = Finding {
        kind: Kind::Timeout,
        severity: Severity::Critical,
        communicator: joined.as_ref().map(|(c, _)| c.clone()),
        op_count: joined.map(|(_, oc)| text::hex(oc)),
        ranks: if stragglers.is_empty() {
            timed_out
        } else {
            stragglers.clone()
        },
        processes,
        message,
        evidence: list
            .iter()
            .take(8)
            .map(|t| ix.evidence(t.line.source))
            .collect(),
        class: None,
        first: false,
        time_base: None,
        grouped_by: None,
        peer_ranks: Vec::new(),
        time: first.line.stamp.clone(),
    };
    (finding, stragglers)
}

/// The communicator and opCount a timeout names: opCount `seq - 1` logged with the named
/// operation (and element count) on a communicator of the timed-out ranks, when exactly one
/// communicator has it.
fn join(ix: &Index<'_>, comms: &[Comm], seq: u64, list: &[Timeout<'_>]) -> Option<(String, u64)> {
    let oc = seq.checked_sub(1)?;
    let procs: BTreeSet<usize> = list
        .iter()
        .flat_map(|t| {
            let by_key = t
                .line
                .process
                .as_ref()
                .and_then(|k| ix.proc_of.get(k).copied());
            let by_rank = t.rank.map(|r| {
                (0..ix.procs.len())
                    .filter(|&p| ix.rank(p) == Some(r))
                    .collect::<Vec<_>>()
            });
            by_key.into_iter().chain(by_rank.into_iter().flatten())
        })
        .collect();
    // Every timed-out rank is a member (those whose process is known).
    let found: Vec<&Comm> = comms
        .iter()
        .filter(|c| {
            let mine: BTreeSet<usize> = c.members.iter().map(|&m| ix.pairs[m].proc).collect();
            !procs.is_empty() && procs.is_subset(&mine)
        })
        .filter(|c| {
            // Some member logged, at that opCount, what some timed-out rank names.
            c.members.iter().any(|&m| {
                ix.pairs[m].colls.iter().any(|e| {
                    e.op_count == oc
                        && list.iter().any(|t| {
                            let op = op_of(t.op_type);
                            // NCCL's count is PyTorch's input (AllGather) or output
                            // (ReduceScatter) element count.
                            let counts = [t.numel, t.numel_out];
                            op.is_none_or(|o| o == ix.sig(e).op)
                                && (op.is_none()
                                    || counts.iter().all(Option::is_none)
                                    || counts.contains(&Some(ix.sig(e).count)))
                        })
                })
            })
        })
        .collect();
    // Communicators of the same members (a TP and a model-parallel group): the one the
    // timed-out ranks stopped in, their last operation there being that opCount.
    let waited_in = |c: &&&Comm| {
        c.members
            .iter()
            .filter(|&&m| procs.contains(&ix.pairs[m].proc))
            .all(|&m| ix.pairs[m].colls.iter().map(|e| e.op_count).max() == Some(oc))
    };
    match found.as_slice() {
        [c] => Some((c.id.clone(), oc)),
        _ => match found
            .iter()
            .filter(waited_in)
            .collect::<Vec<_>>()
            .as_slice()
        {
            [c] => Some((c.id.clone(), oc)),
            _ => None,
        },
    }
}

/// PyTorch's `OpType` as NCCL's operation, where one collective stands for it.
fn op_of(op_type: &str) -> Option<OpType> {
    Some(match op_type.trim_start_matches('_') {
        "ALLREDUCE" | "ALLREDUCE_COALESCED" | "BARRIER" => OpType::AllReduce,
        "ALLGATHER"
        | "ALLGATHER_BASE"
        | "ALLGATHER_COALESCED"
        | "ALLGATHER_INTO_TENSOR_COALESCED" => OpType::AllGather,
        "REDUCE_SCATTER" | "REDUCE_SCATTER_BASE" | "REDUCE_SCATTER_TENSOR_COALESCED" => {
            OpType::ReduceScatter
        }
        "BROADCAST" => OpType::Broadcast,
        "REDUCE" => OpType::Reduce,
        _ => return None,
    })
}

fn stuck(ix: &Index<'_>, f: &FrameworkLine, rank: Option<u32>, seconds: Option<u64>) -> Finding {
    let how_long = seconds.map(|s| format!(" for {s} s")).unwrap_or_default();
    let who: Vec<u32> = rank.into_iter().collect();
    Finding {
        kind: Kind::Timeout,
        severity: Severity::Warning,
        communicator: None,
        op_count: None,
        ranks: who.clone(),
        processes: f
            .process
            .iter()
            .map(|p| super::ProcessRef {
                host: p.host.to_string(),
                pid: p.pid,
            })
            .collect(),
        message: format!(
            "The watchdog of {} got stuck{how_long} without progress: a CUDA or NCCL call blocked it, which is not necessarily a collective.",
            text::ranks(&who)
        ),
        evidence: vec![ix.evidence(f.source)],
        class: None,
        first: false,
        time_base: None,
        grouped_by: None,
        peer_ranks: Vec::new(),
        time: f.stamp.clone(),
    }
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
