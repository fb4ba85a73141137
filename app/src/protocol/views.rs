//! The view data the worker sends to the page: plain, already formatted rows, so the page only
//! draws and the records themselves never cross the worker boundary.

use load::{FileReport, Session};
use pipeline::{Analysis, ProcessSummary};
use serde::{Deserialize, Serialize};

use crate::protocol::format::{human_bytes, human_rate, percent};
use crate::protocol::notes::{summarise, NoteKind, NoteRow, FIRST_PAGE};

/// One file's row once loaded (or failed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileView {
    pub kind: String,
    pub version: Option<String>,
    pub facts: Vec<(String, String)>,
    /// The first [`FIRST_PAGE`] of its notes (diagnostics); the worker keeps them all and sends
    /// further pages on request ([`crate::worker::notes`]).
    #[serde(default)]
    pub notes: Vec<NoteRow>,
    /// How many notes of each reason it has.
    #[serde(default)]
    pub note_kinds: Vec<NoteKind>,
    pub diagnostic_count: usize,
    pub error: Option<String>,
    pub digest: Option<String>,
    /// Wall time the worker spent on the file (read, parse or query), for benchmarks.
    pub load_ms: f64,
}

impl FileView {
    pub fn from_report(r: &FileReport, load_ms: f64) -> Self {
        FileView {
            kind: r.kind.label().to_string(),
            version: r.version.clone(),
            facts: r.facts.clone(),
            notes: r
                .diagnostics
                .iter()
                .take(FIRST_PAGE)
                .map(NoteRow::of)
                .collect(),
            note_kinds: summarise(&r.diagnostics),
            diagnostic_count: r.diagnostics.len(),
            // The message names the file, whatever stage wrote it.
            error: r.error.as_ref().map(|e| {
                if e.contains(&r.name) {
                    e.clone()
                } else {
                    format!("{}: {e}", r.name)
                }
            }),
            digest: r.digest.clone(),
            load_ms,
        }
    }

    /// A file that could not be handed to the loader at all (a dead worker, a failed fetch).
    pub fn failed(error: String) -> Self {
        FileView {
            kind: "unknown".to_string(),
            version: None,
            facts: Vec::new(),
            notes: Vec::new(),
            note_kinds: Vec::new(),
            diagnostic_count: 0,
            error: Some(error),
            digest: None,
            load_ms: 0.0,
        }
    }
}

/// One row of the per-rank table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankView {
    pub global_rank: u32,
    pub rank_from_init: bool,
    pub host: String,
    pub pid: u32,
    pub local_rank: Option<u32>,
    pub nccl_version: Option<String>,
    /// Operation name → `count (bytes)`, in the summary's order.
    pub ops: Vec<(String, String)>,
    /// Bytes of all its operations, for sorting the table by volume.
    #[serde(default)]
    pub op_bytes: u64,
    pub comms: Vec<String>,
    pub topology: Vec<String>,
    /// `matched / kernels`, or `no export`.
    pub matched: String,
}

impl RankView {
    pub fn from_summary(p: &ProcessSummary) -> Self {
        let ops = p
            .ops
            .iter()
            .map(|(op, (n, b))| (op.name().to_string(), format!("{n} ({})", human_bytes(*b))))
            .collect();
        let comms = p
            .comms
            .iter()
            .map(|c| {
                let id = c
                    .comm_id
                    .map(|i| format!(" commId {i:#x}"))
                    .unwrap_or_default();
                let rank = c
                    .rank
                    .map(|r| format!(" rank {r}/"))
                    .unwrap_or_else(|| " size ".to_string());
                format!("{:#x}{rank}{}{id}: {} ops", c.ptr, c.nranks, c.ops)
            })
            .collect();
        let matched = if p.kernels == 0 {
            "no export".to_string()
        } else {
            format!("{} / {}", p.matched_kernels, p.kernels)
        };
        RankView {
            global_rank: p.global_rank,
            rank_from_init: p.rank_from_init,
            host: p.process.host.to_string(),
            pid: p.process.pid,
            local_rank: p.local_rank,
            nccl_version: p.nccl_version.clone(),
            ops,
            op_bytes: p.ops.values().map(|(_, b)| b).sum(),
            comms,
            topology: p.topology_lines(),
            matched,
        }
    }
}

/// One row of the communicators panel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommRow {
    pub id: String,
    pub size: u32,
    pub ranks: String,
    pub parallelism: String,
    pub confidence: f64,
    pub evidence: String,
    /// Median bus bandwidth and bus efficiency of its kernels, against its bottleneck link
    /// (`—` when its operations carried only scalars, which [`CommRow::no_bandwidth`] says).
    pub bus_bw: String,
    pub bus_efficiency: String,
    /// Why it has no bandwidth figures, when it has none.
    #[serde(default)]
    pub no_bandwidth: Option<String>,
    /// The figures behind `bus_bw` (GB/s) and `bus_efficiency` (a fraction), for sorting.
    #[serde(default)]
    pub bus_bw_gbps: Option<f64>,
    #[serde(default)]
    pub bus_efficiency_value: Option<f64>,
    pub bottleneck: String,
    /// Mean arrival skew and the rank most often last.
    pub skew: String,
    /// How NCCL set it up: channels, tree channels, nodes × ranks per node.
    #[serde(default)]
    pub setup: String,
    /// The transports of its channels' connections, with how many use each.
    #[serde(default)]
    pub transports: String,
    /// Its process group as a PyTorch trace names it, weighed against `parallelism`.
    #[serde(default)]
    pub process_group: Option<crate::protocol::groups::GroupEvidence>,
}

/// The communicators panel's rows and the layout line above them.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct CommPanel {
    pub layout: String,
    pub rows: Vec<CommRow>,
}

/// Said of a communicator whose every operation carried one element.
pub const SCALARS_ONLY: &str =
    "its operations carried one element each (scalars): a bandwidth of a few bytes says nothing about the links";

impl CommPanel {
    /// `kernels`: the matched kernels summed (which communicators carried only scalars).
    pub fn from_analysis(
        a: &Analysis,
        session: &Session,
        kernels: &crate::protocol::overview::KernelTally,
    ) -> Self {
        let stats = analyses::comm_stats(session, a);
        let skews = analyses::arrival_skew(session, a);
        let setups = analyses::comm_setups(session, a);
        let layout = match a.layout.sizes {
            Some(s) => format!(
                "layout TP={} CP={} EP={} DP={} PP={} (confidence {:.2}): {}",
                s.tp, s.cp, s.ep, s.dp, s.pp, a.layout.confidence, a.layout.evidence
            ),
            None => format!("layout unknown: {}", a.layout.evidence),
        };
        let rows = a
            .communicators
            .comms
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let label = a.layout.comms.iter().find(|l| l.comm == i);
                let ranks: Vec<String> = c.global_ranks.iter().map(u32::to_string).collect();
                let scalars = kernels.scalars_only(i);
                let bw = stats.get(i).and_then(|s| s.median_bus_bw_gbps);
                let eff = stats.get(i).and_then(|s| s.median_bus_efficiency);
                let figure = |text: Option<String>| {
                    if scalars {
                        "—".to_string()
                    } else {
                        text.unwrap_or_default()
                    }
                };
                CommRow {
                    id: c.id.clone(),
                    size: c.size,
                    ranks: ranks.join(" "),
                    parallelism: label
                        .map_or("unknown", |l| l.parallelism.name())
                        .to_string(),
                    confidence: label.map_or(0.0, |l| l.confidence),
                    evidence: label.map(|l| l.evidence.clone()).unwrap_or_default(),
                    bus_bw: figure(bw.map(human_rate)),
                    bus_efficiency: figure(eff.map(percent)),
                    no_bandwidth: scalars.then(|| SCALARS_ONLY.to_string()),
                    bus_bw_gbps: bw.filter(|_| !scalars),
                    bus_efficiency_value: eff.filter(|_| !scalars),
                    bottleneck: stats
                        .get(i)
                        .and_then(|s| s.bottleneck.as_ref())
                        .map_or(String::new(), |b| {
                            format!("{} ({:.0} GB/s)", b.name, b.gbps)
                        }),
                    skew: skews
                        .iter()
                        .find(|s| s.comm == i)
                        .map_or(String::new(), |s| {
                            let last = s.slowest.iter().max_by_key(|(_, n)| **n).map(|(r, _)| *r);
                            format!(
                                "{:.1} µs{}",
                                s.mean_skew_ns / 1e3,
                                last.map_or(String::new(), |r| format!(", rank {r} last"))
                            )
                        }),
                    setup: setups
                        .get(i)
                        .map_or(String::new(), analyses::CommSetup::channels_text),
                    transports: setups
                        .get(i)
                        .map_or(String::new(), analyses::CommSetup::transports_text),
                    process_group: crate::protocol::groups::group_evidence(a, i),
                }
            })
            .collect();
        CommPanel { layout, rows }
    }
}
