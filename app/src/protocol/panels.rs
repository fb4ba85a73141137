//! The analysis panels' data, built in the worker from the analysis: per-rank alignment report,
//! the run's `NCCL WARN` lines, operation counts and volume per type, the bandwidth-versus-size
//! scatter (binned, so its size does not grow with the run), the efficiency distribution and the
//! topology per host. Plain numbers and text: the page only draws and sorts them.

use load::Session;
use pipeline::Analysis;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How many warnings are sent to the page (the count is always exact).
pub const MAX_WARNINGS_SHOWN: usize = 500;
/// Scatter bins per decade on each axis: at most ~10 decades of size × ~7 of bandwidth, so a
/// few thousand points whatever the run's length.
pub const BINS_PER_DECADE: f64 = 8.0;
/// Buckets of the efficiency distribution: 10 % wide, the last one ≥ 100 %.
pub const EFFICIENCY_BUCKETS: usize = 11;

/// One rank's alignment report (`align::AnomalyReport`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AlignRow {
    pub global_rank: u32,
    pub host: String,
    pub pid: u32,
    pub kernels: usize,
    pub log_ops: usize,
    pub matched: usize,
    pub mismatched: usize,
    pub fused_kernels: usize,
    pub fused_lines: usize,
    pub duplicate_lines: usize,
    pub orphan_lines: usize,
    pub orphan_kernels: usize,
    /// Most operations logged twice (one rank per TP group does this).
    pub duplication_2to1: bool,
    /// Mean confidence of the matched kernels.
    pub mean_confidence: Option<f64>,
}

/// One `NCCL WARN` line of the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WarningRow {
    pub file: String,
    pub line: u64,
    /// The line's timestamp as printed (`[2026-04-28 14:14:49]`, `1714311289.123456`), when it
    /// has one.
    #[serde(default)]
    pub timestamp: String,
    /// That timestamp in ns since the epoch, for sorting.
    #[serde(default)]
    pub timestamp_ns: Option<i64>,
    /// `host:pid`, when the line names its process.
    pub process: String,
    pub message: String,
}

/// Count and bytes of one operation type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpTotal {
    pub op: String,
    pub count: u64,
    pub bytes: u64,
}

/// One rank's operations per type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankOps {
    pub global_rank: u32,
    pub ops: Vec<OpTotal>,
}

/// One scatter bin: the kernels of one operation type whose size and bus bandwidth fall in it,
/// placed at their means.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScatterPoint {
    pub bytes: f64,
    pub bus_bw_gbps: f64,
    pub kernels: u64,
    /// The operation (`AllReduce`, ...): the point's colour.
    #[serde(default)]
    pub op: String,
}

/// A theoretical limit line: a communicator bottleneck's bus bandwidth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LimitLine {
    /// Link class (`NVL`, `NET`, `PCI`, ...).
    pub class: String,
    pub gbps: f64,
}

/// One host's topology as its first dump printed it.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct HostTopology {
    pub host: String,
    /// (kind, id, label): `GPU`, `0-1000`, `GPU 0-1000 (local rank 0)`.
    pub nodes: Vec<(String, String, String)>,
    /// (from node, to node, link class, GB/s).
    pub links: Vec<(usize, usize, String, f64)>,
}

/// Everything the panels draw.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct Panels {
    pub alignment: Vec<AlignRow>,
    pub warnings: Vec<WarningRow>,
    pub warning_count: usize,
    pub op_totals: Vec<OpTotal>,
    pub rank_ops: Vec<RankOps>,
    pub scatter: Vec<ScatterPoint>,
    /// Kernels behind the scatter (the sum of its points' `kernels`).
    pub scatter_kernels: u64,
    pub limits: Vec<LimitLine>,
    /// Kernels per 10 % of bus efficiency; the last bucket is ≥ 100 %.
    pub efficiency: Vec<u64>,
    pub topology: Vec<HostTopology>,
}

impl Panels {
    /// `bottlenecks`: the communicators' links ([`analyses::comm_bottlenecks`]); `bandwidth`:
    /// every matched kernel's bandwidth binned ([`BandwidthBins`], filled by the worker's one
    /// pass over the kernels).
    pub fn from_analysis(
        a: &Analysis,
        session: &Session,
        bottlenecks: &[Option<analyses::Bottleneck>],
        bandwidth: BandwidthBins,
    ) -> Self {
        let (scatter, scatter_kernels, efficiency) = bandwidth.finish();
        let (warnings, warning_count) = warnings(session);
        let (op_totals, rank_ops) = op_totals(a);
        Panels {
            alignment: alignment_rows(a),
            warnings,
            warning_count,
            op_totals,
            rank_ops,
            scatter,
            scatter_kernels,
            limits: limits(bottlenecks),
            efficiency,
            topology: topology(a),
        }
    }
}

fn alignment_rows(a: &Analysis) -> Vec<AlignRow> {
    let mut rows: Vec<AlignRow> = a
        .alignments
        .processes
        .iter()
        .map(|pm| {
            let r = &pm.alignment.report;
            let conf: Vec<f64> = pm
                .alignment
                .per_kernel
                .iter()
                .flatten()
                .map(|m| m.confidence)
                .collect();
            let global_rank = a
                .processes
                .iter()
                .find(|p| p.process == pm.process)
                .map_or(u32::MAX, |p| p.global_rank);
            AlignRow {
                global_rank,
                host: pm.process.host.to_string(),
                pid: pm.process.pid,
                kernels: r.nccl_kernels,
                log_ops: r.log_ops,
                matched: r.matched,
                mismatched: r.mismatched,
                fused_kernels: r.fused_kernels,
                fused_lines: r.fused_log_ops,
                duplicate_lines: r.duplicate_log_ops,
                orphan_lines: r.orphan_log_ops.len(),
                orphan_kernels: r.orphan_kernels.len(),
                duplication_2to1: r.duplication_2to1,
                mean_confidence: (!conf.is_empty())
                    .then(|| conf.iter().sum::<f64>() / conf.len() as f64),
            }
        })
        .collect();
    rows.sort_by_key(|r| (r.global_rank, r.host.clone(), r.pid));
    rows
}

fn warnings(session: &Session) -> (Vec<WarningRow>, usize) {
    let mut rows = Vec::new();
    let mut count = 0;
    for log in session.logs() {
        for w in &log.parsed.warnings {
            count += 1;
            if rows.len() < MAX_WARNINGS_SHOWN {
                rows.push(WarningRow {
                    file: log.name.clone(),
                    line: w.source.line,
                    timestamp: w.timestamp.clone().unwrap_or_default(),
                    timestamp_ns: w.timestamp_ns,
                    process: w
                        .process
                        .as_ref()
                        .map(|p| format!("{}:{}", p.host, p.pid))
                        .unwrap_or_default(),
                    message: w.message.clone(),
                });
            }
        }
    }
    (rows, count)
}

fn op_totals(a: &Analysis) -> (Vec<OpTotal>, Vec<RankOps>) {
    // Keyed by name but kept in the first-seen (summary) order.
    let mut order: Vec<String> = Vec::new();
    let mut totals: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let rank_ops = a
        .processes
        .iter()
        .map(|p| RankOps {
            global_rank: p.global_rank,
            ops: p
                .ops
                .iter()
                .map(|(op, (n, b))| {
                    let name = op.name().to_string();
                    let t = totals.entry(name.clone()).or_insert_with(|| {
                        order.push(name.clone());
                        (0, 0)
                    });
                    t.0 += *n;
                    t.1 += *b;
                    OpTotal {
                        op: name,
                        count: *n,
                        bytes: *b,
                    }
                })
                .collect(),
        })
        .collect();
    let totals = order
        .into_iter()
        .map(|op| {
            let (count, bytes) = totals[&op];
            OpTotal { op, count, bytes }
        })
        .collect();
    (totals, rank_ops)
}

/// Kernels' bandwidths binned as they come, per operation, at [`BINS_PER_DECADE`] on both axes:
/// the kernels `analyses::for_each_kernel_bandwidth` counts (one log operation, a bandwidth), so
/// the points' count per communicator equals its figures' `kernels`.
pub struct BandwidthBins {
    /// (operation, bytes bin, bandwidth bin) → sums of bytes and bandwidths, and the count.
    bins: BTreeMap<(&'static str, i64, i64), (f64, f64, u64)>,
    efficiency: Vec<u64>,
    kernels: u64,
}

impl Default for BandwidthBins {
    fn default() -> Self {
        BandwidthBins {
            bins: BTreeMap::new(),
            efficiency: vec![0u64; EFFICIENCY_BUCKETS],
            kernels: 0,
        }
    }
}

impl BandwidthBins {
    /// Adds one kernel (those without a bandwidth are not counted).
    pub fn add_fact(&mut self, k: &crate::protocol::overview::KernelFact) {
        if let Some(bus_bw_gbps) = k.bus_bw_gbps {
            self.add(
                k.op.name(),
                &analyses::KernelBw {
                    comm: k.comm,
                    bytes: k.bytes,
                    bus_bw_gbps,
                    bus_efficiency: k.bus_efficiency,
                },
            );
        }
    }

    fn add(&mut self, op: &'static str, p: &analyses::KernelBw) {
        if let Some(e) = p.bus_efficiency.filter(|e| e.is_finite()) {
            let i = ((e.max(0.0) * 10.0).floor() as usize).min(EFFICIENCY_BUCKETS - 1);
            self.efficiency[i] += 1;
        }
        // A log-log plot has no place for zero or non-finite values.
        if p.bytes == 0 || !(p.bus_bw_gbps.is_finite() && p.bus_bw_gbps > 0.0) {
            return;
        }
        let key = (
            op,
            ((p.bytes as f64).log10() * BINS_PER_DECADE).floor() as i64,
            (p.bus_bw_gbps.log10() * BINS_PER_DECADE).floor() as i64,
        );
        let b = self.bins.entry(key).or_insert((0.0, 0.0, 0));
        b.0 += p.bytes as f64;
        b.1 += p.bus_bw_gbps;
        b.2 += 1;
        self.kernels += 1;
    }

    /// The points at their bins' means, the kernels they hold, the efficiency histogram.
    fn finish(self) -> (Vec<ScatterPoint>, u64, Vec<u64>) {
        let scatter = self
            .bins
            .into_iter()
            .map(|((op, ..), (bytes, bw, n))| ScatterPoint {
                bytes: bytes / n as f64,
                bus_bw_gbps: bw / n as f64,
                kernels: n,
                op: op.to_string(),
            })
            .collect();
        (scatter, self.kernels, self.efficiency)
    }
}

/// One line per distinct (link class, bandwidth) among the communicators' bottlenecks.
fn limits(bottlenecks: &[Option<analyses::Bottleneck>]) -> Vec<LimitLine> {
    let mut out: Vec<LimitLine> = Vec::new();
    for b in bottlenecks.iter().flatten() {
        // The link kind (`NVL`, `NET`, ...); the conservative fallback keeps its own name.
        let class = b
            .kind
            .map_or_else(|| b.name.clone(), |k| format!("{k:?}").to_uppercase());
        if !out.iter().any(|l| l.class == class && l.gbps == b.gbps) {
            out.push(LimitLine {
                class,
                gbps: b.gbps,
            });
        }
    }
    out.sort_by(|x, y| x.gbps.total_cmp(&y.gbps));
    out
}

/// The first topology dump of each host.
fn topology(a: &Analysis) -> Vec<HostTopology> {
    let mut out: Vec<HostTopology> = Vec::new();
    for p in &a.processes {
        let Some(t) = &p.topology else { continue };
        if out.iter().any(|h| h.host == p.process.host) {
            continue;
        }
        let nodes = t
            .nodes
            .iter()
            .map(|n| {
                let kind = format!("{:?}", n.kind).to_uppercase();
                let label = match n.local_rank {
                    Some(r) => format!("{kind} {} (local rank {r})", n.id),
                    None => format!("{kind} {}", n.id),
                };
                (kind, n.id.clone(), label)
            })
            .collect();
        // The dump lists NVLink pairs from both ends: one line per pair and class.
        let mut links: Vec<(usize, usize, String, f64)> = Vec::new();
        for l in &t.links {
            let (a, b) = (l.from.min(l.to), l.from.max(l.to));
            if !links
                .iter()
                .any(|(x, y, c, _)| (*x, *y) == (a, b) && *c == l.label)
            {
                links.push((a, b, l.label.clone(), l.bw_gbps));
            }
        }
        out.push(HostTopology {
            host: p.process.host.to_string(),
            nodes,
            links,
        });
    }
    out
}

/// How many hosts' topology diagrams the page draws after each step when it draws them over
/// several animation frames: each step adds hosts until their nodes and links reach `budget`
/// (at least one host a step). The last entry is every host.
pub fn topology_batches(hosts: &[HostTopology], budget: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut weight = 0;
    for (i, h) in hosts.iter().enumerate() {
        weight += h.nodes.len() + h.links.len();
        if weight >= budget {
            out.push(i + 1);
            weight = 0;
        }
    }
    if out.last() != Some(&hosts.len()) && !hosts.is_empty() {
        out.push(hosts.len());
    }
    out
}

/// One table cell: its text and, for numeric columns, the number it sorts by.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub text: String,
    pub num: Option<f64>,
}

impl Cell {
    pub fn text(t: impl Into<String>) -> Self {
        Cell {
            text: t.into(),
            num: None,
        }
    }

    pub fn num(n: f64, text: impl Into<String>) -> Self {
        Cell {
            text: text.into(),
            num: Some(n),
        }
    }

    pub fn count(n: u64) -> Self {
        Cell::num(n as f64, n.to_string())
    }

    /// Text that starts with a number in the column's one unit (`12.5 GB/s`, `85 %`,
    /// `3.1 µs, rank 2 last`): sorts by that number, else as text.
    pub fn parsed(t: impl Into<String>) -> Self {
        let text = t.into();
        let end = text
            .char_indices()
            .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (c == '-' && i == 0)))
            .map_or(text.len(), |(i, _)| i);
        let num = text[..end].parse::<f64>().ok().filter(|n| n.is_finite());
        Cell { text, num }
    }
}

/// Row order of a table sorted by column `col`: numbers by value (cells without one last),
/// else by text; stable, so equal keys keep their order.
pub fn sort_order(rows: &[Vec<Cell>], col: usize, ascending: bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let key = |r: usize| rows[r].get(col);
    order.sort_by(|&a, &b| {
        let o = match (key(a), key(b)) {
            (Some(x), Some(y)) => match (x.num, y.num) {
                (Some(p), Some(q)) => p.total_cmp(&q),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => x.text.cmp(&y.text),
            },
            (x, y) => x.is_some().cmp(&y.is_some()).reverse(),
        };
        if ascending {
            o
        } else {
            o.reverse()
        }
    });
    order
}

/// RFC 4180 CSV: fields with a comma, quote or line break are quoted, quotes doubled; lines end
/// with CRLF. A field that a spreadsheet would run as a formula (`=`, `+`, `-`, `@` first) gets
/// a leading `'`, since the text comes from the user's files.
pub fn csv(headers: &[String], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    for line in std::iter::once(headers).chain(rows.iter().map(Vec::as_slice)) {
        csv_line(&mut out, line.iter().map(String::as_str));
    }
    out
}

/// Appends one CSV line of `fields` to `out`, written as [`csv`] writes them.
pub fn csv_line<'a>(out: &mut String, fields: impl IntoIterator<Item = &'a str>) {
    for (i, f) in fields.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let defused =
            f.starts_with(['=', '+', '@']) || (f.starts_with('-') && f.parse::<f64>().is_err());
        let quoted = f.contains([',', '"', '\n', '\r']);
        if quoted {
            out.push('"');
        }
        if defused {
            out.push('\'');
        }
        if quoted {
            out.push_str(&f.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(f);
        }
    }
    out.push_str("\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_and_defuses_formulas() {
        let h = vec!["a".to_string(), "b".to_string()];
        let rows = vec![
            vec!["x,y".to_string(), "say \"hi\"".to_string()],
            vec!["=1+2".to_string(), "-3.5".to_string()],
            vec!["-cmd".to_string(), "line\nbreak".to_string()],
        ];
        assert_eq!(
            csv(&h, &rows),
            "a,b\r\n\"x,y\",\"say \"\"hi\"\"\"\r\n'=1+2,-3.5\r\n'-cmd,\"line\nbreak\"\r\n"
        );
    }

    #[test]
    fn warnings_keep_their_timestamp_as_printed() {
        let text = "[2026-04-28 14:14:50] n:1:2 [0] init.cc:1 NCCL WARN later\n\
                    [2026-04-28 14:14:49] n:1:2 [0] init.cc:2 NCCL WARN earlier\n\
                    1714311289.123456 n:1:2 [0] net.cc:3 NCCL WARN epoch\n\
                    n:1:2 [0] net.cc:4 NCCL WARN none\n";
        let mut loader = load::LogLoader::new("w.log", 0);
        loader.feed(text.as_bytes());
        let mut session = Session::default();
        session.add_log(loader.finish(text.len() as u64));
        let (rows, count) = warnings(&session);
        assert_eq!(count, 4);
        let stamps: Vec<(&str, u64, bool)> = rows
            .iter()
            .map(|r| (r.timestamp.as_str(), r.line, r.timestamp_ns.is_some()))
            .collect();
        assert_eq!(
            stamps,
            [
                ("[2026-04-28 14:14:50]", 1, true),
                ("[2026-04-28 14:14:49]", 2, true),
                ("1714311289.123456", 3, true),
                ("", 4, false),
            ]
        );
        assert!(rows[1].timestamp_ns < rows[0].timestamp_ns);
        assert_eq!(rows[2].timestamp_ns, Some(1_714_311_289_123_456_000));
        assert_eq!(rows[3].process, "n:1");
    }

    #[test]
    fn bins_points_and_buckets_efficiency() {
        let k = |bytes, bw, eff| analyses::KernelBw {
            comm: 0,
            bytes,
            bus_bw_gbps: bw,
            bus_efficiency: eff,
        };
        let mut bins = BandwidthBins::default();
        for p in [
            // Same bin (1/8 decade): one point at their means.
            k(1000, 10.0, Some(0.05)),
            k(1100, 11.0, Some(0.55)),
            k(1_000_000, 100.0, Some(1.3)),
            // No place on a log axis, but its efficiency counts.
            k(0, 0.0, Some(0.99)),
            k(4096, 5.0, None),
        ] {
            bins.add("AllReduce", &p);
        }
        // The same bin of another operation is a point of its own.
        bins.add("Broadcast", &k(1000, 10.0, None));
        let (scatter, kernels, eff) = bins.finish();
        assert_eq!(kernels, 5);
        assert_eq!(scatter.len(), 4);
        assert_eq!(
            scatter[0],
            ScatterPoint {
                bytes: 1050.0,
                bus_bw_gbps: 10.5,
                kernels: 2,
                op: "AllReduce".into(),
            }
        );
        assert_eq!(scatter[3].op, "Broadcast");
        assert_eq!(eff, vec![1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1]);
    }

    #[test]
    fn topology_is_drawn_in_batches_of_bounded_weight() {
        let host = |n: usize, l: usize| HostTopology {
            host: "h".into(),
            nodes: vec![(String::new(), String::new(), String::new()); n],
            links: vec![(0, 0, String::new(), 0.0); l],
        };
        assert!(topology_batches(&[], 100).is_empty());
        assert_eq!(topology_batches(&[host(2, 1)], 100), vec![1]);
        // 40 + 40 reaches 60 at the second host; the third alone is over; the last is left.
        let hosts = [host(20, 20), host(20, 20), host(100, 0), host(1, 1)];
        assert_eq!(topology_batches(&hosts, 60), vec![2, 3, 4]);
    }

    #[test]
    fn sorts_numbers_by_value_and_text_by_text() {
        let rows = vec![
            vec![Cell::num(10.0, "10"), Cell::text("b")],
            vec![Cell::num(9.0, "9"), Cell::text("c")],
            vec![Cell::text(""), Cell::text("a")],
        ];
        // "10" < "9" as text; by value 9 < 10, and the cell without a number goes last.
        assert_eq!(sort_order(&rows, 0, true), vec![1, 0, 2]);
        assert_eq!(sort_order(&rows, 0, false), vec![2, 0, 1]);
        assert_eq!(sort_order(&rows, 1, true), vec![2, 0, 1]);
    }

    #[test]
    fn parsed_cells_sort_by_their_leading_number() {
        assert_eq!(Cell::parsed("12.5 GB/s").num, Some(12.5));
        assert_eq!(Cell::parsed("3.1 µs, rank 2 last").num, Some(3.1));
        assert_eq!(Cell::parsed("-4 %").num, Some(-4.0));
        assert_eq!(Cell::parsed("").num, None);
        assert_eq!(Cell::parsed("NVL (300 GB/s)").num, None);
        let rows: Vec<Vec<Cell>> = ["9.5 GB/s", "", "10 GB/s"]
            .iter()
            .map(|t| vec![Cell::parsed(*t)])
            .collect();
        assert_eq!(sort_order(&rows, 0, true), vec![0, 2, 1]);
    }
}
