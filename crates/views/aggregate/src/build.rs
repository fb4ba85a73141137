//! A per-node job's aggregate, from the analysis's outputs: the process summaries, the
//! communicators with their labels and signatures, the layout, and the enriched kernel records
//! the exports share ([`export::kernel_records`]). Nothing here walks the parsed log lines.

use crate::file::{assemble, Anchor};
use crate::format::Block;
use crate::heat::{busy_intervals, busy_ns, strip, Axis, HEAT_BINS};
use crate::overview::{
    Clock, CommRow, Heat, Histogram, Layout, OpCount, Overview, RankComm, RankRow, Signature,
    Source,
};
use crate::section::{encode, Kernel, RankDetail};
use export::fields::*;
use export::{KernelRecord, Records};
use load::Session;
use pipeline::Analysis;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Instances per communicator kept as clock anchors: enough for the merge's offset and drift
/// fit (the thesis asks for more than 10), few enough that anchors stay a small part of a file.
pub const ANCHORS_PER_COMM: u64 = 64;

/// The aggregate file of everything `session` holds (one node's logs and export, or any set of
/// a run's files). `records` are `export::kernel_records(session, analysis)`; `given` the
/// parallel sizes the user gave, if any.
pub fn build(
    session: &Session,
    analysis: &Analysis,
    records: &Records,
    given: Option<enrich::Sizes>,
) -> Vec<u8> {
    let mut builder = Builder::new(session, analysis, given);
    for (rank, kernels) in kernels_by_rank(records) {
        builder.add_rank(rank, &kernels);
    }
    builder.finish()
}

/// [`build`] fed one rank's records at a time (ranks ascending, each rank once:
/// [`export::records_by_rank`]), so that the run's records are never held at once: what it keeps
/// of a rank is its encoded section (about 18 bytes a kernel), its busy intervals and its figures.
pub struct Builder<'a> {
    session: &'a Session,
    analysis: &'a Analysis,
    given: Option<enrich::Sizes>,
    comm_index: BTreeMap<&'a str, u32>,
    /// Communicators with members on other nodes: their instances are clock anchors.
    spans_elsewhere: BTreeSet<u32>,
    ranks: BTreeMap<u32, RankPart>,
    /// Every matched kernel's bus bandwidth, per communicator id, in record order.
    bus_bw: BTreeMap<String, Vec<f64>>,
    /// (comm, opCount) → end on the lowest rank that ran it (ranks come ascending).
    ends: BTreeMap<(u32, u64), i64>,
}

/// What the aggregate keeps of one rank's records.
struct RankPart {
    /// Host and pid of its first record, for a rank that only the exports show.
    host: String,
    pid: u32,
    /// The row's figures from its kernels ([`fill_from_kernels`]).
    filled: RankRow,
    section: (Vec<u8>, u64),
    strip: Vec<(i64, i64)>,
}

impl RankPart {
    /// What the aggregate keeps of one rank's records (by start).
    fn of(kernels: &[&KernelRecord], comm_index: &BTreeMap<&str, u32>) -> RankPart {
        let detail = detail_of(kernels);
        let mut filled = RankRow::default();
        fill_from_kernels(&mut filled, kernels, &detail, comm_index);
        let first = kernels.first();
        RankPart {
            host: first
                .and_then(|r| text(r.args.get(HOST)))
                .unwrap_or_default(),
            pid: first
                .and_then(|r| number(r.args.get(PROCESS_ID)))
                .unwrap_or(0) as u32,
            filled,
            strip: busy_intervals(&detail.kernels),
            section: encode(&detail),
        }
    }
}

impl<'a> Builder<'a> {
    pub fn new(
        session: &'a Session,
        analysis: &'a Analysis,
        given: Option<enrich::Sizes>,
    ) -> Builder<'a> {
        let comm_index: BTreeMap<&str, u32> = analysis
            .communicators
            .comms
            .iter()
            .enumerate()
            .map(|(i, c)| (c.id.as_str(), i as u32))
            .collect();
        let spans_elsewhere: BTreeSet<u32> = analysis
            .communicators
            .comms
            .iter()
            .enumerate()
            .filter(|(_, c)| (c.global_ranks.len() as u64) < u64::from(c.size))
            .map(|(i, _)| i as u32)
            .collect();
        Builder {
            session,
            analysis,
            given,
            comm_index,
            spans_elsewhere,
            ranks: BTreeMap::new(),
            bus_bw: BTreeMap::new(),
            ends: BTreeMap::new(),
        }
    }

    /// Adds one rank's records, by start; ranks must come ascending (the lowest rank's end of an
    /// instance is its anchor).
    pub fn add_rank(&mut self, rank: u32, kernels: &[&KernelRecord]) {
        debug_assert!(self.ranks.keys().next_back().is_none_or(|&r| r < rank));
        for k in kernels.iter().filter(|k| k.matched) {
            if let Some(id) = k.args.get(COMMUNICATOR_ID).and_then(Value::as_str) {
                let values = self.bus_bw.entry(id.to_string()).or_default();
                values.extend(float(k.args.get(BUS_BW)));
            }
        }
        add_anchor_ends(
            &mut self.ends,
            kernels,
            &self.comm_index,
            &self.spans_elsewhere,
        );
        self.ranks
            .insert(rank, RankPart::of(kernels, &self.comm_index));
    }

    /// The aggregate file.
    pub fn finish(self) -> Vec<u8> {
        let Builder {
            session,
            analysis,
            given,
            comm_index,
            spans_elsewhere: _,
            mut ranks,
            bus_bw,
            ends,
        } = self;
        // Ranks with kernels and no log line (the exports' processes the logs do not name).
        let export_only: BTreeMap<u32, (String, u32)> = ranks
            .iter()
            .filter(|(_, p)| p.filled.kernels > 0)
            .map(|(&r, p)| (r, (p.host.clone(), p.pid)))
            .collect();
        let mut rows = rank_rows(analysis, &export_only);
        let mut sections = Vec::with_capacity(rows.len());
        let mut strips: Vec<Vec<(i64, i64)>> = Vec::with_capacity(rows.len());
        let mut at = crate::format::HEADER_LEN as u64;
        for row in &mut rows {
            let part = ranks
                .remove(&row.global_rank)
                .unwrap_or_else(|| RankPart::of(&[], &comm_index));
            let f = part.filled;
            row.kernels = f.kernels;
            row.matched = f.matched;
            row.first_ns = f.first_ns;
            row.last_ns = f.last_ns;
            row.busy_ns = f.busy_ns;
            row.median_bus_bw_gbps = f.median_bus_bw_gbps;
            row.comms = f.comms;
            row.clock = f.clock;
            let (bytes, raw_len) = part.section;
            row.section = Block {
                offset: at,
                len: bytes.len() as u64,
                raw_len,
            };
            at += bytes.len() as u64;
            sections.push(bytes);
            strips.push(part.strip);
        }
        let with_kernels = || rows.iter().filter(|r| r.kernels > 0);
        let axis = Axis::new(
            with_kernels().map(|r| r.first_ns).min().unwrap_or(0),
            with_kernels().map(|r| r.last_ns).max().unwrap_or(0),
            HEAT_BINS,
        );
        let busy: Vec<u8> = strips.iter().flat_map(|s| strip(s, &axis)).collect();
        let hosts: BTreeSet<&str> = rows.iter().map(|r| r.host.as_str()).collect();
        let overview = Overview {
            producer: format!("ncclscope {}", env!("CARGO_PKG_VERSION")),
            sources: vec![Source {
                hosts: hosts.into_iter().collect::<Vec<_>>().join(","),
                inputs: (session.logs().len() + session.exports().len()) as u32,
                input_bytes: session.logs().iter().map(|l| l.bytes).sum::<u64>()
                    + session.exports().iter().map(|e| e.bytes).sum::<u64>(),
            }],
            comms: comm_rows(session, analysis, &bus_bw),
            layout: Layout {
                sizes: analysis.layout.sizes.map(Into::into),
                given: given.map(Into::into),
                evidence: analysis.layout.evidence.clone(),
                confidence: analysis.layout.confidence,
                world_size: analysis.communicators.world_size,
                iterations: analysis.iterations,
            },
            heat: Heat {
                start_ns: axis.start_ns,
                end_ns: axis.end_ns,
                bins: axis.bins,
                busy,
            },
            notes: Vec::new(),
            ranks: rows,
        };
        let matrix = crate::matrix::Matrix::of(session, analysis);
        assemble(&overview, &anchors(ends), Some(&matrix), &sections)
    }
}

/// The records of each rank, by start (kernel_records orders them so).
fn kernels_by_rank(records: &Records) -> BTreeMap<u32, Vec<&KernelRecord>> {
    let mut m: BTreeMap<u32, Vec<&KernelRecord>> = BTreeMap::new();
    for r in &records.kernels {
        m.entry(r.rank).or_default().push(r);
    }
    m
}

/// One row per process the logs show, plus one per rank that only the exports show; global ranks
/// unique (a process whose rank another already has is numbered after the last, as not from an
/// init line).
fn rank_rows(analysis: &Analysis, export_only: &BTreeMap<u32, (String, u32)>) -> Vec<RankRow> {
    let mut rows: BTreeMap<u32, RankRow> = BTreeMap::new();
    let mut clashes = Vec::new();
    for p in &analysis.processes {
        let row = RankRow {
            global_rank: p.global_rank,
            rank_from_init: p.rank_from_init,
            host: p.process.host.to_string(),
            pid: p.process.pid,
            local_rank: p.local_rank,
            nccl_version: p.nccl_version.clone(),
            ops: p
                .ops
                .iter()
                .map(|(op, (count, bytes))| OpCount {
                    op: op.name().to_string(),
                    count: *count,
                    bytes: *bytes,
                })
                .collect(),
            ..RankRow::default()
        };
        match rows.entry(p.global_rank) {
            std::collections::btree_map::Entry::Occupied(_) => clashes.push(row),
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(row);
            }
        }
    }
    // Ranks with kernels and no log line (the exports' processes the logs do not name).
    for (&rank, (host, pid)) in export_only {
        rows.entry(rank).or_insert_with(|| RankRow {
            global_rank: rank,
            host: host.clone(),
            pid: *pid,
            ..RankRow::default()
        });
    }
    for mut row in clashes {
        row.global_rank = rows.keys().next_back().map_or(0, |r| r + 1);
        row.rank_from_init = false;
        rows.insert(row.global_rank, row);
    }
    rows.into_values().collect()
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn number(v: Option<&Value>) -> Option<u64> {
    v?.as_u64()
}

fn float(v: Option<&Value>) -> Option<f64> {
    v?.as_f64()
}

/// A rank's kernel records as a section.
fn detail_of(kernels: &[&KernelRecord]) -> RankDetail {
    let mut texts = Texts::default();
    let mut out = Vec::with_capacity(kernels.len());
    for r in kernels {
        let a = &r.args;
        let mut opt_text = |key: &str| match a.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(texts.index(s)),
            Some(other) => Some(texts.index(&other.to_string())),
        };
        let comm = opt_text(COMMUNICATOR_ID);
        let datatype = opt_text(DATA_TYPE);
        let algorithm = opt_text(NCCL_ALGORITHM);
        let protocol = opt_text(PROTOCOL);
        let kernel = opt_text(CUDA_KERNEL).unwrap_or_else(|| texts.index(""));
        out.push(Kernel {
            start_ns: r.start_ns,
            end_ns: r.end_ns,
            own_start_ns: a
                .get(OWN_CLOCK_START_NS)
                .and_then(Value::as_i64)
                .unwrap_or(r.start_ns),
            op: texts.index(&r.name),
            kernel,
            stream: number(a.get(CUDA_STREAM_ID)).unwrap_or(0),
            correlation_id: number(a.get(CUDA_CORRELATION_ID)).unwrap_or(0),
            matched: r.matched,
            confidence: float(a.get(CONFIDENCE)).map(|c| c as f32),
            comm,
            op_count: a
                .get(OP_COUNT_HEX)
                .and_then(Value::as_str)
                .and_then(|h| u64::from_str_radix(h, 16).ok()),
            count: number(a.get(ELEMENT_COUNT)),
            bytes: number(a.get(MESSAGE_SIZE_BYTES)),
            datatype,
            algorithm,
            protocol,
            channels: number(a.get(CHANNELS)).map(|c| c as u32),
            algo_bw_gbps: float(a.get(ALGO_BW)).map(|b| b as f32),
            bus_bw_gbps: float(a.get(BUS_BW)).map(|b| b as f32),
            bus_efficiency: float(a.get(BUS_EFFICIENCY)).map(|b| b as f32),
        });
    }
    RankDetail {
        strings: texts.strings,
        kernels: out,
    }
}

/// A section's text table as it is built: each text once, found by hash (a rank has millions of
/// kernels and a few dozen texts).
#[derive(Default)]
struct Texts {
    strings: Vec<String>,
    index: HashMap<String, u32>,
}

impl Texts {
    fn index(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// A row's figures from its kernels.
fn fill_from_kernels(
    row: &mut RankRow,
    kernels: &[&KernelRecord],
    detail: &RankDetail,
    comm_index: &BTreeMap<&str, u32>,
) {
    row.kernels = kernels.len() as u64;
    row.matched = kernels.iter().filter(|k| k.matched).count() as u64;
    row.first_ns = kernels.iter().map(|k| k.start_ns).min().unwrap_or(0);
    row.last_ns = kernels.iter().map(|k| k.end_ns).max().unwrap_or(0);
    row.busy_ns = busy_ns(&busy_intervals(&detail.kernels));
    let mut bw: Vec<f64> = kernels
        .iter()
        .filter_map(|k| float(k.args.get(BUS_BW)))
        .collect();
    row.median_bus_bw_gbps = enrich::median(&mut bw);
    let mut comms: BTreeMap<u32, RankComm> = BTreeMap::new();
    for k in kernels.iter().filter(|k| k.matched) {
        let Some(&c) = k
            .args
            .get(COMMUNICATOR_ID)
            .and_then(Value::as_str)
            .and_then(|id| comm_index.get(id))
        else {
            continue;
        };
        let e = comms.entry(c).or_insert(RankComm {
            comm: c,
            ..RankComm::default()
        });
        e.kernels += 1;
        e.bytes += number(k.args.get(MESSAGE_SIZE_BYTES)).unwrap_or(0);
    }
    row.comms = comms.into_values().collect();
    row.clock = Clock::IDENTITY;
}

/// Every communicator with its label, signature, bottleneck and its kernels' bus bandwidths.
fn comm_rows(
    session: &Session,
    analysis: &Analysis,
    bw: &BTreeMap<String, Vec<f64>>,
) -> Vec<CommRow> {
    let bottlenecks = analyses::comm_bottlenecks(session, analysis);
    let layout = &analysis.layout;
    analysis
        .communicators
        .comms
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let label = layout.comms.iter().find(|l| l.comm == i);
            let values = bw.get(c.id.as_str()).map_or(&[][..], |v| &v[..]);
            CommRow {
                id: c.id.clone(),
                size: c.size,
                global_ranks: c.global_ranks.clone(),
                parallelism: label
                    .map_or("unknown", |l| l.parallelism.name())
                    .to_string(),
                confidence: label.map_or(0.0, |l| l.confidence),
                evidence: label.map(|l| l.evidence.clone()).unwrap_or_default(),
                kernels: values.len() as u64,
                bus_bw: Histogram::from_values(values.iter().copied()),
                bottleneck: bottlenecks
                    .get(i)
                    .and_then(|b| b.as_ref())
                    .map(|b| (b.name.clone(), b.gbps)),
                signature: layout
                    .signatures
                    .get(i)
                    .map(Signature::from)
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// Adds one rank's ends of the instances of communicators with members elsewhere (`ends` keeps
/// the first rank's: ranks come ascending).
fn add_anchor_ends(
    ends: &mut BTreeMap<(u32, u64), i64>,
    kernels: &[&KernelRecord],
    comm_index: &BTreeMap<&str, u32>,
    spans_elsewhere: &BTreeSet<u32>,
) {
    for k in kernels.iter().filter(|k| k.matched && !is_p2p(&k.name)) {
        let comm = k
            .args
            .get(COMMUNICATOR_ID)
            .and_then(Value::as_str)
            .and_then(|id| comm_index.get(id));
        let op_count = k
            .args
            .get(OP_COUNT_HEX)
            .and_then(Value::as_str)
            .and_then(|h| u64::from_str_radix(h, 16).ok());
        if let (Some(&c), Some(oc)) = (comm, op_count) {
            if spans_elsewhere.contains(&c) {
                ends.entry((c, oc)).or_insert(k.end_ns);
            }
        }
    }
}

/// A sample of the instances of every communicator with members elsewhere: each kept instance's
/// end on the lowest rank here that ran it. The sample is every opCount divisible by a power of
/// two, the same rule on every node, so that nodes keep the same instances (a node that saw a
/// few instances fewer may keep every other one of another's: still shared).
fn anchors(ends: BTreeMap<(u32, u64), i64>) -> Vec<Anchor> {
    let mut per_comm: BTreeMap<u32, u64> = BTreeMap::new();
    for (c, _) in ends.keys() {
        *per_comm.entry(*c).or_default() += 1;
    }
    ends.into_iter()
        .filter(|((c, oc), _)| {
            let stride = per_comm[c].div_ceil(ANCHORS_PER_COMM).next_power_of_two();
            oc % stride == 0
        })
        .map(|((comm, op_count), end_ns)| Anchor {
            comm,
            op_count,
            end_ns,
        })
        .collect()
}

/// Send/Recv kernels finish with their peer, not with every member: no clock anchor.
fn is_p2p(name: &str) -> bool {
    matches!(name, "Send" | "Recv" | "SendRecv")
}
