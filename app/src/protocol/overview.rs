//! The run's overview, built in the worker from the analysis and sent with every result: what
//! was loaded and how well the logs and the exports fused, the inferred layout, and per
//! parallelism the time its collectives took, the bytes they moved and their median bus
//! efficiency against the topology's bottleneck link. Also whether the exports look like
//! several unrelated captures laid on one clock. Plain figures: the page writes and links them.

use analyses::Bottleneck;
use load::Session;
use model::OpType;
use pipeline::Analysis;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Everything the overview shows besides the files' own reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OverviewView {
    /// Processes with a global rank (from the logs).
    pub ranks: usize,
    /// Hosts of the ranks and of the exports' processes.
    pub nodes: Vec<String>,
    /// NCCL operations in the logs and NCCL kernels in the exports.
    pub log_ops: u64,
    pub kernels: u64,
    /// Kernels that carry a log operation, and those of them matched with low confidence.
    pub matched_kernels: u64,
    pub low_confidence: u64,
    /// Log operations no kernel accounts for (processes without an export included).
    pub unmatched_log_ops: u64,
    /// Processes seen in the logs only, and in the exports only.
    pub log_only: usize,
    pub kernels_only: usize,
    /// Kernels that ran several fused Send/Recv lines, and lines logged twice.
    pub fused_kernels: u64,
    pub duplicate_lines: u64,
    /// `TP=2 · DP=2 · PP=2` (sizes of 1 left out), with the inference's confidence and why.
    pub layout: Option<String>,
    pub layout_confidence: f64,
    pub layout_evidence: String,
    /// Training iterations the exports' NVTX ranges count.
    pub iterations: Option<u32>,
    /// NCCL WARN lines in the logs.
    pub warnings: usize,
    /// Per parallelism, in Megatron's order (unknown last).
    pub parallelisms: Vec<ParallelismFigures>,
    /// When the exports' kernels fall into several stretches of time far apart (two unrelated
    /// captures dropped together): each stretch's hosts and times. Empty otherwise.
    pub captures: Vec<Capture>,
}

/// One parallelism's communication.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ParallelismFigures {
    /// `TP`, `DP`, ..., `unknown`.
    pub name: String,
    pub comms: usize,
    /// Ranks that ran its kernels.
    pub ranks: usize,
    pub kernels: u64,
    /// Time in its kernels per rank (ns), and that time's share of the rank's span of kernels.
    pub busy_ns_per_rank: f64,
    pub busy_share: Option<f64>,
    /// Bytes its operations carried per rank (`count × sizeof(datatype)`, the bandwidths' basis).
    pub bytes_per_rank: f64,
    pub median_bus_bw_gbps: Option<f64>,
    /// Median bus bandwidth over the bottleneck link's (nccl-tests' bus bandwidth).
    pub median_bus_efficiency: Option<f64>,
    /// The bottleneck link most of its communicators have: name and GB/s.
    pub limit: Option<(String, f64)>,
    /// Every operation carried one element: its bandwidth says nothing.
    pub scalars_only: bool,
    /// The distinct process groups its communicators belong to, as PyTorch traces name them,
    /// each weighed against the label.
    #[serde(default)]
    pub groups: Vec<crate::protocol::groups::GroupEvidence>,
}

/// One stretch of time with kernels.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Capture {
    pub hosts: Vec<String>,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// One matched kernel as the overview and the bandwidth panel read it.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelFact {
    /// Index into `analysis.alignments.processes`.
    pub process: usize,
    /// Index into the communicators.
    pub comm: usize,
    pub op: OpType,
    /// Elements of its (first) operation.
    pub count: u64,
    /// Bytes of its operations (fused Send/Recv lines summed).
    pub bytes: u64,
    pub duration_ns: i64,
    /// Bus bandwidth and efficiency, for a kernel of one operation (what
    /// [`analyses::for_each_kernel_bandwidth`] counts), else `None`.
    pub bus_bw_gbps: Option<f64>,
    pub bus_efficiency: Option<f64>,
    pub confidence: f64,
}

/// Every matched kernel whose operation's communicator is known, process by process. Bandwidth
/// where [`analyses::for_each_kernel_bandwidth`] has one (the same kernels, the same figures):
/// the scatter's points and the communicators' medians agree.
pub fn for_each_kernel_fact(
    analysis: &Analysis,
    bottlenecks: &[Option<Bottleneck>],
    mut visit: impl FnMut(KernelFact),
) {
    for (p, pm) in analysis.alignments.processes.iter().enumerate() {
        let mut comm_of = analysis.communicators.comm_lookup(&pm.process);
        for (k, m) in pm.matched_spans() {
            let Some(first) = pm.log_ops.get(m.first_line()) else {
                continue;
            };
            let Some(c) = comm_of(first.comm) else {
                continue;
            };
            let duration_ns = k.end_ns - k.start_ns;
            let limit = bottlenecks
                .get(c)
                .and_then(|b| b.as_ref())
                .map(|b| (b.gbps, b.name.as_str()));
            let single = (m.log_ops.len() == 1)
                .then(|| enrich::for_log_op(&first, duration_ns, limit))
                .flatten();
            let bytes = match &single {
                Some(bw) => bw.bytes,
                None => m
                    .log_ops
                    .iter()
                    .filter_map(|&i| pm.log_ops.get(i as usize))
                    .filter_map(|op| {
                        let size = op.datatype?.size_bytes();
                        Some(enrich::op_bytes(op.op, op.count, size, op.nranks))
                    })
                    .sum(),
            };
            visit(KernelFact {
                process: p,
                comm: c,
                op: first.op,
                count: first.count,
                bytes,
                duration_ns,
                bus_bw_gbps: single.as_ref().map(|b| b.bus_bw_gbps),
                bus_efficiency: single
                    .as_ref()
                    .and_then(|b| b.theoretical.as_ref())
                    .map(|t| t.bus_efficiency),
                confidence: m.confidence,
            });
        }
    }
}

/// What one parallelism's kernels add up to, as they are visited.
#[derive(Default)]
struct Tally {
    ranks: BTreeSet<usize>,
    kernels: u64,
    busy_ns: f64,
    bytes: f64,
    bus_bw: Vec<f64>,
    efficiency: Vec<f64>,
}

/// The matched kernels summed per communicator as they are visited (the worker's one pass over
/// them feeds this and the bandwidth panel), then per parallelism.
#[derive(Default)]
pub struct KernelTally {
    per_comm: BTreeMap<usize, Tally>,
    /// Per communicator, the most elements one of its operations carried.
    largest_count: BTreeMap<usize, u64>,
    low_confidence: u64,
}

impl KernelTally {
    pub fn add(&mut self, k: &KernelFact) {
        if k.confidence < timeline::LOW_CONFIDENCE {
            self.low_confidence += 1;
        }
        let t = self.per_comm.entry(k.comm).or_default();
        t.ranks.insert(k.process);
        t.kernels += 1;
        t.busy_ns += k.duration_ns.max(0) as f64;
        t.bytes += k.bytes as f64;
        if let Some(b) = k.bus_bw_gbps {
            t.bus_bw.push(b);
        }
        if let Some(e) = k.bus_efficiency {
            t.efficiency.push(e);
        }
        let largest = self.largest_count.entry(k.comm).or_default();
        *largest = (*largest).max(k.count);
    }

    /// Whether every operation of communicator `c` seen carried one element (a scalar: its
    /// bandwidth says nothing); `false` when none was seen.
    pub fn scalars_only(&self, c: usize) -> bool {
        self.largest_count.get(&c).is_some_and(|n| *n <= 1)
    }
}

impl OverviewView {
    /// The overview of `analysis`; `bottlenecks` are the communicators' links
    /// ([`analyses::comm_bottlenecks`]), `kernels` the matched kernels summed
    /// ([`for_each_kernel_fact`] into a [`KernelTally`]), `tracks` each timeline track's host and
    /// first and last kernel (synchronised ns), for the captures.
    pub fn build(
        analysis: &Analysis,
        session: &Session,
        bottlenecks: &[Option<Bottleneck>],
        kernels: &KernelTally,
        tracks: &[(String, i64, i64)],
    ) -> OverviewView {
        let a = analysis;
        let log_ops: u64 = session
            .logs()
            .iter()
            .map(|l| l.parsed.ops.len() as u64)
            .sum();
        let aligned = &a.alignments.processes;
        let aligned_ops: u64 = aligned.iter().map(|m| m.log_ops.len() as u64).sum();
        let unmatched_log_ops = aligned.iter().map(|m| m.unmatched_log_ops()).sum::<u64>()
            + log_ops.saturating_sub(aligned_ops);
        let mut nodes: BTreeSet<String> = a
            .processes
            .iter()
            .map(|p| p.process.host.to_string())
            .collect();
        nodes.extend(
            tracks
                .iter()
                .map(|(h, ..)| h.clone())
                .filter(|h| !h.is_empty()),
        );
        let report = |f: fn(&align::AnomalyReport) -> usize| -> u64 {
            aligned.iter().map(|m| f(&m.alignment.report) as u64).sum()
        };
        OverviewView {
            ranks: a.processes.len(),
            nodes: nodes.into_iter().collect(),
            log_ops,
            kernels: session
                .exports()
                .iter()
                .map(|e| e.export.kernels.len() as u64)
                .sum(),
            matched_kernels: aligned.iter().map(|m| m.matched_kernels()).sum(),
            low_confidence: kernels.low_confidence,
            unmatched_log_ops,
            log_only: a.alignments.log_only.len(),
            kernels_only: a.alignments.kernels_only.len(),
            fused_kernels: report(|r| r.fused_kernels),
            duplicate_lines: report(|r| r.duplicate_log_ops),
            layout: a.layout.sizes.map(layout_line),
            layout_confidence: a.layout.confidence,
            layout_evidence: a.layout.evidence.clone(),
            iterations: a.iterations,
            warnings: session.logs().iter().map(|l| l.parsed.warnings.len()).sum(),
            parallelisms: parallelism_figures(a, bottlenecks, kernels),
            captures: captures(tracks),
        }
    }
}

/// `TP=2 · DP=2 · PP=2`: the sizes above 1.
fn layout_line(s: enrich::Sizes) -> String {
    let parts: Vec<String> = [
        ("TP", s.tp),
        ("CP", s.cp),
        ("EP", s.ep),
        ("DP", s.dp),
        ("PP", s.pp),
    ]
    .iter()
    .filter(|(_, n)| *n > 1)
    .map(|(k, n)| format!("{k}={n}"))
    .collect();
    if parts.is_empty() {
        "no parallel split (every size 1)".to_string()
    } else {
        parts.join(" · ")
    }
}

/// Per parallelism (in Megatron's order, unknown last), its communicators' kernels summed.
fn parallelism_figures(
    a: &Analysis,
    bottlenecks: &[Option<Bottleneck>],
    kernels: &KernelTally,
) -> Vec<ParallelismFigures> {
    let parallelism_of = |c: usize| {
        a.layout
            .comms
            .iter()
            .find(|l| l.comm == c)
            .map_or(enrich::Parallelism::Unknown, |l| l.parallelism)
    };
    // Each process's span of kernels (its own clock), for the busy share.
    let spans: Vec<Option<i64>> = a
        .alignments
        .processes
        .iter()
        .map(|pm| {
            let last = pm.kernels.len().checked_sub(1)?;
            let (s, e) = (pm.kernels.start_ns(0)?, pm.kernels.end_ns(last)?);
            (e > s).then_some(e - s)
        })
        .collect();
    let mut out = Vec::new();
    for par in enrich::Parallelism::ORDER
        .iter()
        .copied()
        .chain([enrich::Parallelism::Unknown])
    {
        let comms: Vec<usize> = (0..a.communicators.comms.len())
            .filter(|c| parallelism_of(*c) == par)
            .collect();
        let mut t = Tally::default();
        let mut limits: BTreeMap<(String, u64), usize> = BTreeMap::new();
        for c in &comms {
            if let Some(x) = kernels.per_comm.get(c) {
                t.ranks.extend(x.ranks.iter().copied());
                t.kernels += x.kernels;
                t.busy_ns += x.busy_ns;
                t.bytes += x.bytes;
                t.bus_bw.extend_from_slice(&x.bus_bw);
                t.efficiency.extend_from_slice(&x.efficiency);
            }
            if let Some(Some(b)) = bottlenecks.get(*c) {
                *limits
                    .entry((b.name.clone(), b.gbps.to_bits()))
                    .or_default() += 1;
            }
        }
        if t.kernels == 0 && comms.is_empty() {
            continue;
        }
        let ranks = t.ranks.len().max(1) as f64;
        let rank_spans: Vec<f64> = t
            .ranks
            .iter()
            .filter_map(|p| spans.get(*p).copied().flatten())
            .map(|d| d as f64)
            .collect();
        let mean_span = (!rank_spans.is_empty())
            .then(|| rank_spans.iter().sum::<f64>() / rank_spans.len() as f64);
        out.push(ParallelismFigures {
            name: par.name().to_string(),
            comms: comms.len(),
            ranks: t.ranks.len(),
            kernels: t.kernels,
            busy_ns_per_rank: t.busy_ns / ranks,
            busy_share: mean_span.map(|s| t.busy_ns / ranks / s),
            bytes_per_rank: t.bytes / ranks,
            median_bus_bw_gbps: enrich::median(&mut t.bus_bw),
            median_bus_efficiency: enrich::median(&mut t.efficiency),
            limit: limits
                .into_iter()
                .max_by_key(|(_, n)| *n)
                .map(|((name, bits), _)| (name, f64::from_bits(bits))),
            scalars_only: t.kernels > 0
                && comms
                    .iter()
                    .all(|c| kernels.scalars_only(*c) || !kernels.per_comm.contains_key(c)),
            groups: crate::protocol::groups::groups_of(a, &comms),
        });
    }
    out
}

/// The stretches of time the tracks' kernels fall in, when there are several far apart (each
/// stretch farther from the next than the longest stretch lasts: not gaps within one run, but
/// captures of different runs); empty otherwise. `tracks`: (host, first start, last end).
pub fn captures(tracks: &[(String, i64, i64)]) -> Vec<Capture> {
    let mut spans: Vec<(i64, i64, &str)> = tracks
        .iter()
        .filter(|(_, s, e)| e >= s)
        .map(|(h, s, e)| (*s, *e, h.as_str()))
        .collect();
    spans.sort();
    let mut out: Vec<Capture> = Vec::new();
    for (s, e, host) in spans {
        match out.last_mut() {
            Some(c) if s <= c.end_ns => {
                c.end_ns = c.end_ns.max(e);
                if !c.hosts.iter().any(|h| h == host) {
                    c.hosts.push(host.to_string());
                }
            }
            _ => out.push(Capture {
                hosts: vec![host.to_string()],
                start_ns: s,
                end_ns: e,
            }),
        }
    }
    // Gaps inside one run (a pause between iterations) join their neighbours: a capture is
    // apart only when the gap is longer than the longest stretch.
    let longest = out.iter().map(|c| c.end_ns - c.start_ns).max().unwrap_or(0);
    let mut merged: Vec<Capture> = Vec::new();
    for c in out {
        match merged.last_mut() {
            Some(m) if c.start_ns - m.end_ns <= longest => {
                m.end_ns = m.end_ns.max(c.end_ns);
                for h in c.hosts {
                    if !m.hosts.contains(&h) {
                        m.hosts.push(h);
                    }
                }
            }
            _ => merged.push(c),
        }
    }
    for c in &mut merged {
        c.hosts.sort();
    }
    if merged.len() > 1 {
        merged
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(host: &str, s: i64, e: i64) -> (String, i64, i64) {
        (host.to_string(), s, e)
    }

    #[test]
    fn unrelated_captures_are_told_apart_from_pauses() {
        // One run: nodes overlap, or pause briefly between bursts.
        assert!(captures(&[t("a", 0, 100), t("b", 10, 120), t("a", 150, 200)]).is_empty());
        // Two captures 12 s apart, each a second long.
        let two = captures(&[
            t("a", 0, 1_000_000_000),
            t("b", 13_000_000_000, 14_000_000_000),
            t("a", 100, 900_000_000),
        ]);
        assert_eq!(two.len(), 2);
        assert_eq!(two[0].hosts, ["a"]);
        assert_eq!(
            (two[1].start_ns, two[1].hosts.as_slice()),
            (13_000_000_000, &["b".to_string()][..])
        );
        assert!(captures(&[]).is_empty());
    }
}
