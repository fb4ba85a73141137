//! Arrival skew per communicator: for every collective instance (the members' copies of one
//! call, matched across ranks by communicator and opCount), how far apart the members' kernels
//! started in synchronised time, and which rank arrived last (the others waited for it).
//!
//! Why kernel starts: a collective's kernel starts when its rank reaches the call and then
//! waits for the rest; the spread of starts is the time the early ranks spent waiting, and the
//! last rank is the straggler of that instance.

use enrich::{for_each_instance, skew, ClockSync, OpKey};
use load::Session;
use model::log::LogOps;
use pipeline::Analysis;
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
    // Read in place: a copy of every log operation was gigabytes for 1 GB of logs.
    let ops = AllOps::of(session);
    let starts = kernel_starts(&ops, analysis, &analysis.clocks);
    let mut per_comm: BTreeMap<usize, CommSkew> = BTreeMap::new();
    for_each_instance(
        &analysis.communicators,
        ops.len(),
        |i| ops.key(i),
        |inst| {
            let Some(s) = skew(&inst, &starts) else {
                return;
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
        },
    );
    per_comm
        .into_values()
        .map(|mut c| {
            c.mean_skew_ns /= c.instances as f64;
            c
        })
        .collect()
}

/// Every log's operations as one sequence (session order), read in place.
struct AllOps<'a> {
    logs: Vec<&'a LogOps>,
    /// Where each log's operations start in the sequence.
    starts: Vec<usize>,
}

impl<'a> AllOps<'a> {
    fn of(session: &'a Session) -> Self {
        let logs: Vec<&LogOps> = session.logs().iter().map(|l| &l.parsed.ops).collect();
        let starts = logs
            .iter()
            .scan(0, |n, l| {
                let s = *n;
                *n += l.len();
                Some(s)
            })
            .collect();
        AllOps { logs, starts }
    }

    fn len(&self) -> usize {
        self.logs.iter().map(|l| l.len()).sum()
    }

    /// (log, index in it) of the i-th operation.
    fn locate(&self, i: usize) -> (&'a LogOps, usize) {
        let l = self.starts.partition_point(|&s| s <= i).saturating_sub(1);
        (self.logs[l], i - self.starts[l])
    }

    fn key(&self, i: usize) -> Option<OpKey<'a>> {
        let (ops, j) = self.locate(i);
        let site = ops.site_of(j)?;
        Some(OpKey {
            process: ops.processes().get(site.process as usize)?,
            comm: site.comm,
            op_count: ops.op_count(j)?,
            op: site.op,
        })
    }
}

/// For every op of `ops` (all logs, in session order), the synchronised start of the kernel the
/// aligner matched to it. The aligner saw each process's ops in this same order, so the j-th op
/// of a process here is its j-th op there.
fn kernel_starts(ops: &AllOps<'_>, analysis: &Analysis, clocks: &ClockSync) -> Vec<Option<i64>> {
    // Each log's first index among all operations, by the log's address.
    let first: HashMap<*const LogOps, usize> = ops
        .logs
        .iter()
        .zip(&ops.starts)
        .map(|(l, &s)| (*l as *const LogOps, s))
        .collect();
    let mut starts = vec![None; ops.len()];
    for pm in &analysis.alignments.processes {
        let rank = analysis.communicators.rank_of(&pm.process);
        // The process's operations' indices among all operations (one process at a time).
        let at: Vec<usize> = pm
            .log_ops
            .locations()
            .map(|(log, row)| {
                first
                    .get(&(&log.parsed.ops as *const LogOps))
                    .map_or(usize::MAX, |s| s + row as usize)
            })
            .collect();
        for (k, m) in pm.matched_spans() {
            let t = rank.map_or(k.start_ns, |r| clocks.to_sync(r, k.start_ns));
            for &j in m.log_ops.iter().chain(m.duplicates) {
                if let Some(s) = at.get(j as usize).and_then(|&g| starts.get_mut(g)) {
                    *s = Some(t);
                }
            }
        }
    }
    starts
}
