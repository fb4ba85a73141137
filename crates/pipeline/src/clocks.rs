//! Clock synchronisation of the aligned kernels (thesis §4.2.4, with drift).
//!
//! Why kernel ends: a collective's kernel starts when its rank launches it and then waits for
//! the others, but every member's kernel finishes within about a microsecond of the others once
//! the last chunk arrives. So the end times of one collective instance, read on each rank's own
//! clock, differ by the clocks' offsets. The instance is (logical communicator, opCount) of the
//! log operation the aligner matched to each kernel. Send/Recv kernels are left out: a pair
//! finishes together, but grouped sends finish with different peers.

use crate::alignment::{Alignments, ProcessMatch};
use enrich::{ClockSync, Communicators};
use load::Session;
use model::OpType;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// A collective instance: (logical communicator, opCount).
type Instance = (usize, u64);

/// Estimates every rank's clock offset and drift, relative to the lowest rank.
///
/// The unit of the estimate is a clock domain, not a rank: the processes of one export share
/// its capture's clock, so no offset is fitted between them (at most a microsecond of kernel
/// end jitter would be). Each export's times are first put on the reference domain's time base
/// through the exports' own session starts ([`identity::ExportClock`]: a 3.25 export counts in
/// its node's system clock, days away from another node's; a per-rank capture counts from its
/// own start), so the fit only has the clocks' true disagreement left; the answer is given back
/// in each rank's own time base. Domains of one host share a drift.
pub fn synchronise_clocks(
    session: &Session,
    alignments: &Alignments,
    communicators: &Communicators,
) -> ClockSync {
    // UTC − t of every export (0 where it has no session start).
    let utc: Vec<i64> = session
        .exports()
        .iter()
        .map(|e| {
            identity::ExportClock::of(&e.export)
                .utc_minus_t_ns
                .unwrap_or(0)
        })
        .collect();
    // Ranks and their domains; domains numbered in order of their lowest rank, so that the
    // estimate's reference (domain 0) holds the lowest rank.
    let mut ranked: Vec<(u32, usize, &ProcessMatch)> = alignments
        .processes
        .iter()
        .filter_map(|pm| Some((communicators.rank_of(&pm.process)?, pm.export?, pm)))
        .collect();
    ranked.sort_by_key(|(rank, _, _)| *rank);
    let mut domain_of_export: BTreeMap<usize, u32> = BTreeMap::new();
    let mut hosts: BTreeMap<&str, u32> = BTreeMap::new();
    let mut node_of: BTreeMap<u32, u32> = BTreeMap::new();
    for (_, x, pm) in &ranked {
        let next = domain_of_export.len() as u32;
        let d = *domain_of_export.entry(*x).or_insert(next);
        let next_host = hosts.len() as u32;
        let node = *hosts.entry(pm.process.host.as_str()).or_insert(next_host);
        node_of.entry(d).or_insert(node);
    }
    let Some(&(reference_rank, reference_export, _)) = ranked.first() else {
        return ClockSync::default();
    };
    // Each export's times on the reference domain's base: + (its UTC − t) − the reference's.
    let shift = |x: usize| utc[x] - utc[reference_export];
    // Per instance and domain: the sum and count of the members' kernel ends.
    let mut instances: FxHashMap<Instance, BTreeMap<u32, (i128, i64)>> = FxHashMap::default();
    for &(_, x, pm) in &ranked {
        let d = domain_of_export[&x];
        let sh = shift(x);
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
            let e = instances
                .entry((comm, call.op_count))
                .or_default()
                .entry(d)
                .or_default();
            e.0 += i128::from(k.end_ns + sh);
            e.1 += 1;
        }
    }
    let mut observed: Vec<(Instance, Vec<(u32, i64)>)> = instances
        .into_iter()
        .filter(|(_, members)| members.len() >= 2)
        .map(|(i, members)| {
            let m = members
                .into_iter()
                .map(|(d, (sum, n))| (d, (sum / i128::from(n)) as i64))
                .collect();
            (i, m)
        })
        .collect();
    observed.sort_unstable_by_key(|(instance, _)| *instance);
    let observed: Vec<Vec<(u32, i64)>> = observed.into_iter().map(|(_, m)| m).collect();
    let by_domain = enrich::synchronise(&observed, Some(&node_of));
    // Back to ranks, each in its own time base.
    let mut out = ClockSync {
        reference_rank,
        reference_ns: by_domain.reference_ns,
        ranks: BTreeMap::new(),
    };
    // The reference domain's ranks read the reference clock, whether or not the fit saw
    // another domain (a run on one node has nothing to fit).
    let reference = enrich::RankClock {
        offset_ns: 0.0,
        drift_ppm: 0.0,
        samples: by_domain.ranks.get(&0).map_or(0, |c| c.samples),
    };
    for &(rank, x, _) in &ranked {
        let d = domain_of_export[&x];
        if let Some(c) = by_domain.ranks.get(&d).or((d == 0).then_some(&reference)) {
            out.ranks.insert(
                rank,
                enrich::RankClock {
                    offset_ns: c.offset_ns - shift(x) as f64,
                    ..*c
                },
            );
        }
    }
    out
}
