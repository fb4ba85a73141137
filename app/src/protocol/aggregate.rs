//! What the worker sends the page about an opened aggregate (`ncclscope analyze --aggregate`,
//! `ncclscope aggregate merge`): the run's overview as rows ready to draw, and on demand one
//! rank's kernels with its timeline. Portable (no browser types), tested natively.

use aggregate_file::overview::{OpCount, Overview};
use aggregate_file::{Kernel, RankDetail, RankRow};
use base64::Engine;
use serde::{Deserialize, Serialize};
use timeline::{par_byte, Lod, Mark, Span, Timeline, Track, LOW_CONFIDENCE};

use crate::protocol::format::human_bytes;
use crate::protocol::views::{CommPanel, CommRow};

/// Kernels of a rank listed in its table (all of them are on its timeline, and any can be
/// picked there).
pub const MAX_KERNEL_ROWS: usize = 1000;

/// The overview, for the page.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct AggregateView {
    pub file: String,
    /// Run totals as (label, value).
    pub totals: Vec<(String, String)>,
    /// Operations and bytes per type over every rank.
    pub ops: Vec<OpTotal>,
    pub ranks: Vec<AggRank>,
    pub comms: CommPanel,
    pub heat: HeatView,
    pub notes: Vec<String>,
    /// Worker time to read and decode the overview (and merge, for several files).
    pub load_ms: f64,
    /// The rank-to-rank matrix the file carries (entries, hosts in node order, node matrix),
    /// or why there is none ([`AggregateView::with_matrix`]).
    #[serde(default)]
    pub matrix: Option<analyses::patterns::CommMatrix>,
    #[serde(default)]
    pub matrix_absent: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OpTotal {
    pub op: String,
    pub count: u64,
    pub bytes: u64,
}

/// One rank's row.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct AggRank {
    pub global_rank: u32,
    pub rank_from_init: bool,
    pub host: String,
    pub pid: u32,
    pub local_rank: Option<u32>,
    pub kernels: u64,
    pub matched: u64,
    pub ops: Vec<OpTotal>,
    /// Its log operations and their bytes, all types together.
    pub op_count: u64,
    pub op_bytes: u64,
    pub busy_ns: u64,
    /// Busy time over the run's time span.
    pub busy_share: f64,
    pub median_bus_bw_gbps: Option<f64>,
    pub comms: usize,
    pub detail_bytes: u64,
}

/// The activity strip: `bins` per rank (rows in [`AggregateView::ranks`] order), base64.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct HeatView {
    pub start_ns: i64,
    pub end_ns: i64,
    pub bins: u32,
    pub busy: String,
}

impl HeatView {
    /// The strip's bytes (empty if the text is not what the worker wrote).
    pub fn bytes(&self) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .decode(&self.busy)
            .unwrap_or_default()
    }
}

fn op_totals(ops: &[OpCount]) -> Vec<OpTotal> {
    ops.iter()
        .map(|o| OpTotal {
            op: o.op.clone(),
            count: o.count,
            bytes: o.bytes,
        })
        .collect()
}

fn gbps(v: Option<f64>) -> String {
    v.map_or(String::new(), crate::protocol::format::human_rate)
}

impl AggregateView {
    /// The view of `o`, read from `file` (`bytes` long) in `load_ms`.
    pub fn of(file: &str, bytes: u64, o: &Overview, load_ms: f64) -> AggregateView {
        let t = o.totals();
        let span_ns = (o.heat.end_ns - o.heat.start_ns).max(1) as f64;
        let totals = vec![
            ("ranks".into(), t.ranks.to_string()),
            ("hosts".into(), t.hosts.to_string()),
            ("jobs merged".into(), o.sources.len().to_string()),
            ("NCCL kernels".into(), t.kernels.to_string()),
            ("matched to log operations".into(), t.matched.to_string()),
            ("communicators".into(), o.comms.len().to_string()),
            ("time span".into(), format!("{:.3} ms", span_ns / 1e6)),
            ("file".into(), human_bytes(bytes)),
            ("detail sections".into(), human_bytes(t.detail_bytes)),
        ];
        let ranks = o
            .ranks
            .iter()
            .map(|r| AggRank {
                global_rank: r.global_rank,
                rank_from_init: r.rank_from_init,
                host: r.host.clone(),
                pid: r.pid,
                local_rank: r.local_rank,
                kernels: r.kernels,
                matched: r.matched,
                ops: op_totals(&r.ops),
                op_count: r.ops.iter().map(|o| o.count).sum(),
                op_bytes: r.ops.iter().map(|o| o.bytes).sum(),
                busy_ns: r.busy_ns,
                busy_share: r.busy_ns as f64 / span_ns,
                median_bus_bw_gbps: r.median_bus_bw_gbps,
                comms: r.comms.len(),
                detail_bytes: r.section.len,
            })
            .collect();
        let layout = &o.layout;
        let layout = match layout.sizes {
            Some(s) => format!(
                "layout TP={} CP={} EP={} DP={} PP={} (confidence {:.2}): {}",
                s.tp, s.cp, s.ep, s.dp, s.pp, layout.confidence, layout.evidence
            ),
            None => format!("layout unknown: {}", layout.evidence),
        };
        let rows = o
            .comms
            .iter()
            .map(|c| {
                let ranks: Vec<String> = c.global_ranks.iter().map(u32::to_string).collect();
                CommRow {
                    id: c.id.clone(),
                    size: c.size,
                    ranks: ranks.join(" "),
                    parallelism: c.parallelism.clone(),
                    confidence: c.confidence,
                    evidence: c.evidence.clone(),
                    bus_bw: gbps(c.bus_bw.median()),
                    bus_efficiency: String::new(),
                    no_bandwidth: None,
                    bus_bw_gbps: c.bus_bw.median(),
                    bus_efficiency_value: None,
                    bottleneck: c
                        .bottleneck
                        .as_ref()
                        .map_or(String::new(), |(n, g)| format!("{n} ({g:.0} GB/s)")),
                    skew: String::new(),
                    setup: String::new(),
                    transports: String::new(),
                    process_group: None,
                }
            })
            .collect();
        AggregateView {
            file: file.to_string(),
            totals,
            ops: op_totals(&t.ops),
            ranks,
            comms: CommPanel { layout, rows },
            heat: HeatView {
                start_ns: o.heat.start_ns,
                end_ns: o.heat.end_ns,
                bins: o.heat.bins,
                busy: base64::engine::general_purpose::STANDARD.encode(&o.heat.busy),
            },
            notes: o.notes.clone(),
            load_ms,
            matrix: None,
            matrix_absent: Some("the matrix was not read".into()),
        }
    }

    /// The view with the file's matrix: `read` is what reading its block gave (`Ok(None)`: a
    /// file of format 1, written without one).
    pub fn with_matrix(
        mut self,
        o: &Overview,
        read: Result<Option<aggregate_file::Matrix>, String>,
    ) -> AggregateView {
        match read {
            Ok(Some(m)) => {
                self.matrix = Some(m.comm_matrix(o));
                self.matrix_absent = None;
            }
            Ok(None) => {
                self.matrix_absent = Some(
                    "This aggregate carries no rank-to-rank matrix (written by an older ncclscope, or merged with such a file).".into(),
                )
            }
            Err(e) => self.matrix_absent = Some(format!("The matrix could not be read: {e}")),
        }
        self
    }
}

/// One rank's detail, for the page (its timeline travels beside, in binary).
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct RankDetailView {
    pub global_rank: u32,
    pub title: String,
    pub kernels: u64,
    pub matched: u64,
    pub section_bytes: u64,
    /// Worker time to read and decode the section and build the timeline.
    pub load_ms: f64,
    /// Per operation: kernels, message bytes, kernel time (ns).
    pub ops: Vec<(String, u64, u64, u64)>,
    /// The first [`MAX_KERNEL_ROWS`] kernels by start.
    pub rows: Vec<KernelRow>,
    /// Why the section could not be read (the rest is empty then).
    pub error: Option<String>,
}

/// One kernel in a rank's table.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct KernelRow {
    /// Its index on the rank's timeline (for a pick).
    pub index: usize,
    /// Start after the run's start, and duration, in µs.
    pub start_us: f64,
    pub duration_us: f64,
    pub op: String,
    pub comm: String,
    pub parallelism: String,
    pub op_count: Option<u64>,
    pub bytes: Option<u64>,
    pub bus_bw: String,
    pub matched: bool,
}

/// The parallelism of communicator `id` as the overview labels it.
fn parallelism_of<'a>(o: &'a Overview, id: &str) -> &'a str {
    o.comms
        .iter()
        .find(|c| c.id == id)
        .map_or("unknown", |c| c.parallelism.as_str())
}

fn parallelism_byte(name: &str) -> u8 {
    timeline::PARALLELISMS
        .iter()
        .find(|p| p.name() == name)
        .map_or(timeline::LOD_NO_OP, |p| par_byte(*p))
}

/// Sorts a rank's kernels by start, so a timeline span's index is the kernel's index.
pub fn sort_kernels(d: &mut RankDetail) {
    d.kernels.sort_by_key(|k| (k.start_ns, k.end_ns));
}

/// The view and the one-track timeline of `row`'s kernels `d` (sorted by [`sort_kernels`]),
/// over the run's time span, read in `load_ms`.
pub fn rank_detail(
    o: &Overview,
    row: &RankRow,
    d: &RankDetail,
    load_ms: f64,
) -> (RankDetailView, Timeline) {
    let run_start = o.heat.start_ns;
    let spans: Vec<Span> = d
        .kernels
        .iter()
        .map(|k| Span {
            start_ns: k.start_ns,
            end_ns: k.end_ns.max(k.start_ns),
            op: model::OpType::from_name(d.text(k.op)),
            mark: mark(k),
            par: k.comm.map_or(timeline::LOD_NO_OP, |c| {
                parallelism_byte(parallelism_of(o, d.text(c)))
            }),
        })
        .collect();
    let label = format!("rank {} · {} pid {}", row.global_rank, row.host, row.pid);
    let track = Track {
        label: label.clone(),
        lod: Lod::build(&spans),
        par_lod: Lod::build_by(&spans, |s| s.par),
        spans,
        source: None,
    };
    let start_ns = d
        .kernels
        .first()
        .map_or(run_start, |k| k.start_ns.min(run_start));
    let end_ns = d
        .kernels
        .iter()
        .map(|k| k.end_ns)
        .max()
        .unwrap_or(o.heat.end_ns)
        .max(o.heat.end_ns);
    let timeline = Timeline {
        tracks: vec![track],
        start_ns,
        end_ns,
        markers: Vec::new(),
    };
    let mut ops: Vec<(String, u64, u64, u64)> = Vec::new();
    for k in &d.kernels {
        let name = d.text(k.op);
        let dur = (k.end_ns - k.start_ns).max(0) as u64;
        match ops.iter_mut().find(|o| o.0 == name) {
            Some(o) => {
                o.1 += 1;
                o.2 += k.bytes.unwrap_or(0);
                o.3 += dur;
            }
            None => ops.push((name.to_string(), 1, k.bytes.unwrap_or(0), dur)),
        }
    }
    let rows = d
        .kernels
        .iter()
        .take(MAX_KERNEL_ROWS)
        .enumerate()
        .map(|(index, k)| {
            let comm = k.comm.map(|c| d.text(c).to_string()).unwrap_or_default();
            KernelRow {
                index,
                start_us: (k.start_ns - run_start) as f64 / 1e3,
                duration_us: (k.end_ns - k.start_ns) as f64 / 1e3,
                op: d.text(k.op).to_string(),
                parallelism: if comm.is_empty() {
                    String::new()
                } else {
                    parallelism_of(o, &comm).to_string()
                },
                comm,
                op_count: k.op_count,
                bytes: k.bytes,
                bus_bw: gbps(k.bus_bw_gbps.map(f64::from)),
                matched: k.matched,
            }
        })
        .collect();
    let view = RankDetailView {
        global_rank: row.global_rank,
        title: format!(
            "Rank {} — {} pid {}{}",
            row.global_rank,
            row.host,
            row.pid,
            row.local_rank
                .map_or(String::new(), |g| format!(", GPU {g}"))
        ),
        kernels: d.kernels.len() as u64,
        matched: d.kernels.iter().filter(|k| k.matched).count() as u64,
        section_bytes: row.section.len,
        load_ms,
        ops,
        rows,
        error: None,
    };
    (view, timeline)
}

fn mark(k: &Kernel) -> Mark {
    match (k.matched, k.confidence) {
        (false, _) => Mark::Unmatched,
        (true, Some(c)) if f64::from(c) < LOW_CONFIDENCE => Mark::LowConfidence,
        (true, _) => Mark::Matched,
    }
}

/// Every field of kernel `k` of `d`, as text (the exports' names, empty ones left out).
pub fn kernel_fields(
    o: &Overview,
    row: &RankRow,
    d: &RankDetail,
    k: &Kernel,
) -> Vec<(String, String)> {
    let text = |i: Option<u32>| i.map(|i| d.text(i).to_string());
    let comm = text(k.comm);
    let mut out: Vec<(&str, Option<String>)> = vec![
        ("Name", Some(d.text(k.op).to_string())),
        ("Global Rank", Some(row.global_rank.to_string())),
        ("Host", Some(row.host.clone())),
        ("Process ID", Some(row.pid.to_string())),
        (
            "Start (µs after the run's start)",
            Some(format!(
                "{:.3}",
                (k.start_ns - o.heat.start_ns) as f64 / 1e3
            )),
        ),
        (
            "Duration (µs)",
            Some(format!("{:.3}", (k.end_ns - k.start_ns) as f64 / 1e3)),
        ),
        ("Own Clock Start (ns)", Some(k.own_start_ns.to_string())),
        ("CUDA Kernel", Some(d.text(k.kernel).to_string())),
        ("CUDA Stream ID", Some(k.stream.to_string())),
        ("CUDA Correlation ID", Some(k.correlation_id.to_string())),
        (
            "Match",
            Some(if k.matched { "matched" } else { "unmatched" }.into()),
        ),
        ("Confidence", k.confidence.map(|c| format!("{c:.3}"))),
        (
            "Parallelism Type",
            comm.as_deref().map(|c| parallelism_of(o, c).to_string()),
        ),
        ("Op Count (Hex)", k.op_count.map(|c| format!("{c:x}"))),
        ("Element Count", k.count.map(|c| c.to_string())),
        ("Data Type", text(k.datatype)),
        ("Message Size (Bytes)", k.bytes.map(|b| b.to_string())),
        ("NCCL Algorithm", text(k.algorithm)),
        ("Protocol", text(k.protocol)),
        ("Channels", k.channels.map(|c| c.to_string())),
        ("Algo BW (GB/s)", k.algo_bw_gbps.map(|b| format!("{b:.3}"))),
        ("Bus BW (GB/s)", k.bus_bw_gbps.map(|b| format!("{b:.3}"))),
        (
            "Bus Efficiency",
            k.bus_efficiency.map(|b| format!("{b:.3}")),
        ),
    ];
    out.push(("Communicator ID", comm));
    out.into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use aggregate_file::overview::{Clock, CommRow as AggComm, Heat};

    fn overview() -> (Overview, RankDetail) {
        let mut d = RankDetail::default();
        let ar = d.intern("AllReduce");
        let name = d.intern("ncclDevKernel_AllReduce <b>x</b>");
        let comm = d.intern("0xabc");
        for i in 0..3i64 {
            d.kernels.push(Kernel {
                start_ns: 1_000 + (2 - i) * 100,
                end_ns: 1_050 + (2 - i) * 100,
                op: ar,
                kernel: name,
                matched: i != 1,
                confidence: Some(if i == 2 { 0.2 } else { 0.9 }),
                comm: Some(comm),
                bytes: Some(1 << 20),
                bus_bw_gbps: Some(100.0),
                ..Kernel::default()
            });
        }
        let o = Overview {
            ranks: vec![RankRow {
                global_rank: 7,
                host: "node01".into(),
                pid: 42,
                kernels: 3,
                matched: 2,
                busy_ns: 150,
                clock: Clock::IDENTITY,
                ..RankRow::default()
            }],
            comms: vec![AggComm {
                id: "0xabc".into(),
                size: 8,
                global_ranks: vec![7],
                parallelism: "TP".into(),
                ..AggComm::default()
            }],
            heat: Heat {
                start_ns: 1_000,
                end_ns: 1_300,
                bins: 2,
                busy: vec![10, 20],
            },
            ..Overview::default()
        };
        (o, d)
    }

    #[test]
    fn the_overview_view_carries_every_rank_and_the_strip() {
        let (o, _) = overview();
        let v = AggregateView::of("run.agg", 1234, &o, 5.0);
        assert_eq!(v.ranks.len(), 1);
        assert_eq!(v.ranks[0].global_rank, 7);
        assert!((v.ranks[0].busy_share - 0.5).abs() < 1e-9);
        assert_eq!(v.heat.bytes(), vec![10, 20]);
        assert_eq!(v.comms.rows[0].parallelism, "TP");
    }

    /// The view carries the file's matrix, labelled with the overview's communicators and in
    /// its hosts' order; a file without one (format 1) says the matrix is absent.
    #[test]
    fn the_view_carries_the_matrix_or_says_it_is_absent() {
        let (o, _) = overview();
        let m = aggregate_file::Matrix {
            ops: vec!["AllReduce".into()],
            members: vec![vec![(0, 7), (1, 9)]],
            pairs: vec![aggregate_file::matrix::Pair {
                src: 7,
                comm: 0,
                dst: 1,
                to_comm_rank: true,
                op: 0,
                bytes: 1000.4,
                time_ns: 5,
            }],
            notes: Vec::new(),
        };
        let v = AggregateView::of("run.agg", 1, &o, 1.0).with_matrix(&o, Ok(Some(m)));
        assert_eq!(v.matrix_absent, None);
        let cm = v.matrix.expect("a matrix");
        assert_eq!(cm.entries.len(), 1);
        let e = &cm.entries[0];
        assert_eq!((e.src, e.dst, e.bytes), (7, 9, 1000));
        assert_eq!((e.parallelism.as_str(), e.op.as_str()), ("TP", "AllReduce"));
        assert_eq!(cm.hosts[0].host, "node01");
        let old = AggregateView::of("old.agg", 1, &o, 1.0).with_matrix(&o, Ok(None));
        assert!(old.matrix.is_none());
        assert!(old
            .matrix_absent
            .unwrap()
            .contains("no rank-to-rank matrix"));
    }

    #[test]
    fn a_rank_detail_is_sorted_marked_and_labelled() {
        let (o, mut d) = overview();
        sort_kernels(&mut d);
        let row = o.ranks[0].clone();
        let (v, t) = rank_detail(&o, &row, &d, 1.0);
        assert_eq!(v.kernels, 3);
        assert_eq!(v.matched, 2);
        let spans = &t.tracks[0].spans;
        assert!(spans.windows(2).all(|w| w[0].start_ns <= w[1].start_ns));
        // Kernel 2 (low confidence) starts first after sorting; kernel 1 (unmatched) second.
        assert_eq!(spans[0].mark, Mark::LowConfidence);
        assert_eq!(spans[1].mark, Mark::Unmatched);
        assert_eq!(spans[0].par, parallelism_byte("TP"));
        assert_eq!(v.rows[0].start_us, 0.0);
        let f = kernel_fields(&o, &row, &d, &d.kernels[0]);
        let get = |k: &str| f.iter().find(|x| x.0 == k).map(|x| x.1.clone());
        assert_eq!(get("Parallelism Type").as_deref(), Some("TP"));
        // Text from the file stays text (the page sets it as such).
        assert_eq!(
            get("CUDA Kernel").as_deref(),
            Some("ncclDevKernel_AllReduce <b>x</b>")
        );
    }
}
