//! Clock synchronisation of the aligned kernels (thesis §4.2.4, with drift).
//!
//! Why kernel ends: a collective's kernel starts when its rank launches it and then waits for
//! the others, but every member's kernel finishes within about a microsecond of the others once
//! the last chunk arrives. So the end times of one collective instance, read on each rank's own
//! clock, differ by the clocks' offsets. The instance is (logical communicator, opCount) of the
//! log operation the aligner matched to each kernel. Send/Recv kernels are left out: a pair
//! finishes together, but grouped sends finish with different peers.

use crate::alignment::Alignments;
use enrich::{ClockSync, Communicators};
use model::OpType;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// A collective instance: (logical communicator, opCount).
type Instance = (usize, u64);

/// Estimates every rank's clock offset and drift, relative to the lowest rank.
///
/// Ranks of one host share a clock (and so one drift), which makes drift visible from the
/// instances of any of them.
pub fn synchronise_clocks(alignments: &Alignments, communicators: &Communicators) -> ClockSync {
    // Hashed as they come (an entry per matched kernel), ordered once at the end.
    let mut instances: FxHashMap<Instance, Vec<(u32, i64)>> = FxHashMap::default();
    let mut hosts: BTreeMap<&str, u32> = BTreeMap::new();
    let mut node_of: BTreeMap<u32, u32> = BTreeMap::new();
    for pm in &alignments.processes {
        let Some(rank) = communicators.rank_of(&pm.process) else {
            continue;
        };
        let next = hosts.len() as u32;
        let node = *hosts.entry(pm.process.host.as_str()).or_insert(next);
        node_of.insert(rank, node);
        let mut comm_of = communicators.comm_lookup(&pm.process);
        for (k, m) in pm.matched_spans() {
            let first = m.first_line();
            let (Some(site), Some(call)) = (pm.log_ops.site(first), pm.log_ops.call(first)) else {
                continue;
            };
            if matches!(site.op, OpType::Send | OpType::Recv) {
                continue;
            }
            let Some(comm) = comm_of(site.comm) else {
                continue;
            };
            instances
                .entry((comm, call.op_count))
                .or_default()
                .push((rank, k.end_ns));
        }
    }
    let mut observed: Vec<(Instance, Vec<(u32, i64)>)> = instances
        .into_iter()
        .filter(|(_, members)| members.len() >= 2)
        .collect();
    observed.sort_unstable_by_key(|(instance, _)| *instance);
    let observed: Vec<Vec<(u32, i64)>> = observed.into_iter().map(|(_, m)| m).collect();
    enrich::synchronise(&observed, Some(&node_of))
}
