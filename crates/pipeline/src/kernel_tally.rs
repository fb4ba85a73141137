//! What each process's NCCL kernels add up to, whatever the logs say: how many of each type,
//! the time its GPU spent in them, and the bytes NCCL's own NVTX payloads give its calls. The
//! summary's `kernels_by_type` (CONTRACT.md, second round) and the page's rank rows read it;
//! for a process seen in the exports alone it is all there is.
//!
//! A kernel's type is its own operation as its name says (`AllReduce`, `SendRecv`, ...); a
//! `Generic` or unnamed kernel takes the collective of the log lines matched to it, else
//! `unknown`.

use crate::alignment::{Alignments, ProcessMatch};
use crate::processes::ProcessSummary;
use ingest_nsys::KernelNameCache;
use load::Session;
use model::log::ProcessKey;
use std::collections::BTreeMap;

/// One process's kernels, tallied.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelTally {
    /// Kernels per type (sums to the process's NCCL kernels).
    pub by_type: BTreeMap<String, u64>,
    /// Time at least one of its NCCL kernels ran (overlaps counted once), ns.
    pub busy_ns: i64,
    /// Message bytes per NCCL call type from NCCL's NVTX payloads, where they carry them.
    pub nvtx_bytes_by_type: BTreeMap<String, u64>,
}

/// Union length of intervals given in start order.
struct Busy {
    total: i64,
    open: Option<(i64, i64)>,
}

impl Busy {
    fn new() -> Self {
        Busy {
            total: 0,
            open: None,
        }
    }
    fn add(&mut self, start: i64, end: i64) {
        let end = end.max(start);
        match &mut self.open {
            Some((_, e)) if start <= *e => *e = (*e).max(end),
            _ => {
                if let Some((s, e)) = self.open.take() {
                    self.total += e - s;
                }
                self.open = Some((start, end));
            }
        }
    }
    fn finish(mut self) -> i64 {
        if let Some((s, e)) = self.open.take() {
            self.total += e - s;
        }
        self.total
    }
}

/// The tally of an aligned process's kernels.
pub(crate) fn tally_aligned(pm: &ProcessMatch, names: &mut KernelNameCache) -> KernelTally {
    let mut t = KernelTally::default();
    let mut busy = Busy::new();
    let mut counts: BTreeMap<Option<model::OpType>, u64> = BTreeMap::new();
    // Distinct names are few: each decoded once, keyed by its text.
    let mut decoded: BTreeMap<&str, Option<model::OpType>> = BTreeMap::new();
    for k in 0..pm.kernels.len() {
        let (Some(name), Some(s), Some(e)) = (
            pm.kernels.name(k),
            pm.kernels.start_ns(k),
            pm.kernels.end_ns(k),
        ) else {
            continue;
        };
        let own = *decoded
            .entry(name)
            .or_insert_with(|| names.decode(name).and_then(|n| n.op));
        let op = own.or_else(|| {
            let m = pm.alignment.per_kernel.get(k)?;
            let ops: Vec<model::OpType> = m
                .lines()
                .filter_map(|l| pm.log_ops.site(l).map(|s| s.op))
                .collect();
            let first = *ops.first()?;
            Some(if ops.iter().all(|&o| o == first) {
                first
            } else {
                model::OpType::SendRecv
            })
        });
        *counts.entry(op).or_default() += 1;
        busy.add(s, e);
    }
    t.by_type = named(counts);
    t.busy_ns = busy.finish();
    t
}

/// Counts by operation, named as the summary spells them (`unknown` for none).
fn named(counts: BTreeMap<Option<model::OpType>, u64>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (op, n) in counts {
        let key = op.map_or_else(|| "unknown".to_string(), |o| o.name().to_string());
        *out.entry(key).or_default() += n;
    }
    out
}

/// Fills every process summary's kernel tally, and adds a summary for every process with
/// kernels and no log operations (the exports alone), ranked after the logged processes in
/// key order.
pub(crate) fn add_tallies(
    session: &Session,
    alignments: &Alignments,
    processes: &mut Vec<ProcessSummary>,
) {
    let mut names = KernelNameCache::default();
    for p in processes.iter_mut() {
        if let Some(pm) = alignments.get(&p.process) {
            p.kernel_tally = tally_aligned(pm, &mut names);
        }
    }
    let only = tally_kernels_only(session, alignments, &mut names);
    let mut next = processes
        .iter()
        .map(|p| p.global_rank + 1)
        .max()
        .unwrap_or(0);
    for (process, tally) in only {
        if processes.iter().any(|p| p.process == process) {
            continue;
        }
        let kernels = tally.by_type.values().sum();
        processes.push(ProcessSummary::kernels_only(process, next, kernels, tally));
        next += 1;
    }
}

/// The tallies of every process with kernels and no log operations, by its key.
pub(crate) fn tally_kernels_only(
    session: &Session,
    alignments: &Alignments,
    names: &mut KernelNameCache,
) -> BTreeMap<ProcessKey, KernelTally> {
    let mut out: BTreeMap<ProcessKey, KernelTally> = alignments
        .kernels_only
        .iter()
        .map(|k| (k.clone(), KernelTally::default()))
        .collect();
    if out.is_empty() {
        return out;
    }
    let mut spans: BTreeMap<ProcessKey, Vec<(i64, i64)>> = BTreeMap::new();
    let mut counts: BTreeMap<ProcessKey, BTreeMap<Option<model::OpType>, u64>> = BTreeMap::new();
    for (x, e) in session.exports().iter().enumerate() {
        let ks = &e.export.kernels;
        // Kernels come ordered by pid: one key per run of a pid.
        let mut last: Option<(u32, ProcessKey)> = None;
        for j in 0..ks.len() {
            let (Some(pid), Some(name), Some(s), Some(end)) =
                (ks.pid(j), ks.name(j), ks.start_ns(j), ks.end_ns(j))
            else {
                continue;
            };
            let key = match &last {
                Some((p, k)) if *p == pid => k.clone(),
                _ => {
                    let k = session.export_key(x, pid);
                    last = Some((pid, k.clone()));
                    k
                }
            };
            if !out.contains_key(&key) {
                continue;
            }
            let op = names.decode(name).and_then(|n| n.op);
            *counts
                .entry(key.clone())
                .or_default()
                .entry(op)
                .or_default() += 1;
            spans.entry(key).or_default().push((s, end));
        }
        for call in &e.export.nccl_calls {
            let Some(r) = e.export.nvtx.get(call.nvtx_index) else {
                continue;
            };
            let key = session.export_key(x, r.pid);
            let (Some(t), Some(bytes)) = (out.get_mut(&key), call.msg_bytes) else {
                continue;
            };
            let op = call.api.strip_prefix("nccl").unwrap_or(&call.api);
            *t.nvtx_bytes_by_type.entry(op.to_string()).or_default() += bytes;
        }
    }
    for (key, c) in counts {
        if let Some(t) = out.get_mut(&key) {
            t.by_type = named(c);
        }
    }
    for (key, mut v) in spans {
        v.sort_unstable();
        let mut busy = Busy::new();
        for (s, e) in v {
            busy.add(s, e);
        }
        if let Some(t) = out.get_mut(&key) {
            t.busy_ns = busy.finish();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_counts_overlaps_once() {
        let mut b = Busy::new();
        for (s, e) in [(0, 10), (5, 20), (30, 40), (40, 41)] {
            b.add(s, e);
        }
        assert_eq!(b.finish(), 20 + 11);
    }
}
