//! Arrival skew per communicator: for every collective instance (the members' copies of one
//! call, matched across ranks by communicator and opCount), how far apart the members' kernels
//! started in synchronised time, and which rank arrived last (the others waited for it).
//!
//! Why kernel starts: a collective's kernel starts when its rank reaches the call and then
//! waits for the rest; the spread of starts is the time the early ranks spent waiting, and the
//! last rank is the straggler of that instance.

use crate::analysis::Analysis;
use crate::session::Session;
use enrich::{match_instances, skew, ClockSync};
use model::log::{LogOp, ProcessKey};
use std::collections::{BTreeMap, HashMap};

/// Arrival skew over one communicator's instances.
#[derive(Debug, Clone, PartialEq)]
pub struct CommSkew {
    /// Index into [`enrich::Communicators::comms`].
    pub comm: usize,
    /// Instances with at least two timed members.
    pub instances: usize,
    pub mean_skew_ns: f64,
    pub max_skew_ns: i64,
    /// How often each global rank arrived last.
    pub slowest: BTreeMap<u32, usize>,
}

/// Skew of every communicator with timed instances, in communicator order.
pub fn arrival_skew(session: &Session, analysis: &Analysis) -> Vec<CommSkew> {
    // Without matched kernels there is no start to compare (logs alone).
    if analysis.alignments.processes.is_empty() {
        return Vec::new();
    }
    // References, not copies: a copy of every log operation was gigabytes for 1 GB of logs.
    let ops: Vec<&LogOp> = session.logs().iter().flat_map(|l| &l.parsed.ops).collect();
    let starts = kernel_starts(&ops, analysis, &analysis.clocks);
    let mut per_comm: BTreeMap<usize, CommSkew> = BTreeMap::new();
    for inst in match_instances(&analysis.communicators, &ops) {
        let Some(s) = skew(&inst, &starts) else {
            continue;
        };
        let c = per_comm.entry(inst.comm).or_insert_with(|| CommSkew {
            comm: inst.comm,
            instances: 0,
            mean_skew_ns: 0.0,
            max_skew_ns: 0,
            slowest: BTreeMap::new(),
        });
        c.instances += 1;
        c.mean_skew_ns += s.arrival_skew_ns as f64;
        c.max_skew_ns = c.max_skew_ns.max(s.arrival_skew_ns);
        *c.slowest.entry(s.slowest_rank).or_default() += 1;
    }
    per_comm
        .into_values()
        .map(|mut c| {
            c.mean_skew_ns /= c.instances as f64;
            c
        })
        .collect()
}

/// For every op of `ops` (all logs, in session order), the synchronised start of the kernel the
/// aligner matched to it. The aligner saw each process's ops in this same order, so the j-th op
/// of a process here is its j-th op there.
fn kernel_starts(ops: &[&LogOp], analysis: &Analysis, clocks: &ClockSync) -> Vec<Option<i64>> {
    let mut per_process: HashMap<&ProcessKey, Vec<Option<i64>>> = HashMap::new();
    for pm in &analysis.alignments.processes {
        let rank = analysis.communicators.rank_of(&pm.process);
        let mut starts = vec![None; pm.log_ops.len()];
        for (k, m) in pm.matched() {
            let t = rank.map_or(k.start_ns, |r| clocks.to_sync(r, k.start_ns));
            for &j in m.log_ops.iter().chain(&m.duplicates) {
                if let Some(s) = starts.get_mut(j) {
                    *s = Some(t);
                }
            }
        }
        per_process.insert(&pm.process, starts);
    }
    let mut seen: HashMap<&ProcessKey, usize> = HashMap::new();
    ops.iter()
        .map(|op| {
            let j = seen.entry(&op.process).or_default();
            let t = per_process
                .get(&op.process)
                .and_then(|s| s.get(*j).copied().flatten());
            *j += 1;
            t
        })
        .collect()
}
