//! The parser's records held against what a log's text says, line by line: [`Text`] gathers
//! [`by_regex`]'s reading of every line (and what spans lines: processes, the first topology
//! block of each, each thread's channel lines), [`mismatches`] lists every place a
//! [`ParsedLog`] disagrees with it.

use crate::by_regex;
use ingest_nccl::{NodeKind, ParsedLog, TopoHeader};
use model::log::{LogOp, ProcessKey};
use model::RedOp;
use std::collections::{BTreeMap, BTreeSet};

/// One disagreement between the parser's records and what the text says.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// 1-based; 0 for a file-wide counter.
    pub line: u64,
    pub what: &'static str,
    pub detail: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: [{}] {}", self.line, self.what, self.detail)
    }
}

// What a mismatch is about (`Mismatch::what`).
pub const OP: &str = "per-collective line";
pub const TUNING: &str = "tuning";
pub const INIT: &str = "Init COMPLETE";
pub const TIMINGS: &str = "Init timings";
pub const DESTROY: &str = "Destroy/Abort COMPLETE";
pub const WARN: &str = "WARN";
pub const VERSION: &str = "version";
pub const PROCESS: &str = "process";
pub const TOPOLOGY: &str = "topology";
pub const CHANNELS: &str = "channels";
pub const SKIPPED: &str = "skipped";
pub const COUNTER: &str = "counter";
// Line families the text has and no record of `ParsedLog` holds.
pub const INIT_START: &str = "Init START has no record";
pub const TREE: &str = "tree line has no record";
pub const CONNECTION: &str = "connection line has no record";

#[derive(Default)]
struct Found(Vec<Mismatch>);

impl Found {
    fn add(&mut self, line: u64, what: &'static str, detail: impl Into<String>) {
        self.0.push(Mismatch {
            line,
            what,
            detail: detail.into(),
        });
    }
}

/// `field: parser X, text Y` for every field that differs.
#[derive(Default)]
struct Diffs(Vec<String>);

impl Diffs {
    fn eq<T: PartialEq + std::fmt::Debug>(&mut self, field: &str, parser: T, text: T) {
        if parser != text {
            self.0
                .push(format!("{field}: parser {parser:?}, text {text:?}"));
        }
    }

    fn report(self, found: &mut Found, line: u64, what: &'static str) {
        if !self.0.is_empty() {
            found.add(line, what, self.0.join("; "));
        }
    }
}

fn pkey(o: &by_regex::Origin) -> ProcessKey {
    ProcessKey {
        host: o.host.as_str().into(),
        pid: o.pid,
    }
}

fn red_op_code(r: RedOp) -> u32 {
    match r {
        RedOp::Sum => 0,
        RedOp::Prod => 1,
        RedOp::Max => 2,
        RedOp::Min => 3,
        RedOp::Avg => 4,
        RedOp::Custom(c) => c,
    }
}

/// `1712345678.123456` (bare or in brackets) → epoch ns; `None` for a civil `[%F %T]` time.
fn epoch_ns(ts: &str) -> Option<i64> {
    let t = ts.trim_start_matches('[').trim_end_matches(']');
    let (s, frac) = t.split_once('.')?;
    let secs: i64 = s.parse().ok()?;
    let digits: String = frac.chars().chain(std::iter::repeat('0')).take(9).collect();
    Some(secs * 1_000_000_000 + digits.parse::<i64>().ok()?)
}

fn node_kind(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Gpu => "GPU",
        NodeKind::Pci => "PCI",
        NodeKind::Nvs => "NVS",
        NodeKind::Cpu => "CPU",
        NodeKind::Nic => "NIC",
        NodeKind::Net => "NET",
        NodeKind::Other => "Other",
    }
}

/// A node as the model describes it: `KIND/id sys=.. local=.. bus=.. rank=.. attrs=..`.
fn describe_node(kind: &str, id: &str, attrs: Option<&str>) -> String {
    let (system, local) = match id.split_once('-') {
        Some((s, l)) => (s.parse::<u32>().ok(), l),
        None => (None, id),
    };
    let local_id = u64::from_str_radix(local, 16).ok();
    let bus = local_id.filter(|_| kind == "GPU").map(|v| format!("{v:x}"));
    let rank = attrs
        .filter(|_| kind == "GPU")
        .and_then(|a| a.parse::<u32>().ok());
    let attrs = attrs.filter(|_| rank.is_none());
    format!(
        "{kind}/{id} sys={system:?} local={local_id:?} bus={bus:?} rank={rank:?} attrs={attrs:?}"
    )
}

fn describe_link(from: (&str, &str), to: (&str, &str), label: &str, bw: f64) -> String {
    format!("{}/{} -{label}[{bw}]-> {}/{}", from.0, from.1, to.0, to.1)
}

/// The first `=== System` block of one process, as the text has it.
pub struct Block {
    header_line: u64,
    bw: bool,
    max: f64,
    total: Option<f64>,
    /// (kind, id) and attributes, in order of first mention.
    nodes: Vec<((String, String), Option<String>)>,
    links: Vec<String>,
    /// (indent, node) of the nodes a deeper `+` line may hang from; roots at -1.
    stack: Vec<(i64, (String, String))>,
}

impl Block {
    /// The node named `KIND/id`, added at its first mention; later attributes replace earlier.
    fn node(&mut self, kind: &str, id: &str, attrs: Option<&String>) -> (String, String) {
        let kind = match kind {
            "GPU" | "PCI" | "NVS" | "CPU" | "NIC" | "NET" => kind,
            _ => "Other",
        };
        let key = (kind.to_string(), id.to_string());
        match self.nodes.iter_mut().find(|(k, _)| *k == key) {
            Some((_, a)) => {
                if attrs.is_some() {
                    a.clone_from(&attrs.cloned());
                }
            }
            None => self.nodes.push((key.clone(), attrs.cloned())),
        }
        key
    }
}

pub enum Topo {
    Building(Box<Block>),
    Done(Box<Block>),
}

/// Channel-family lines of one (process, thread), in file order, with their line numbers.
#[derive(Default)]
pub struct ThreadChannels {
    orders: Vec<(u64, String)>,
    neighbors: Vec<(u64, String)>,
    summaries: Vec<(u64, String)>,
    /// Lines a group of channel lines may start at: these lines and the thread's communicator
    /// lines (Init START/COMPLETE, `comm .. nRanks .. nNodes`).
    starts: BTreeSet<u64>,
    /// Communicators the thread names.
    comms: BTreeSet<u64>,
}

fn ring_order(channel: u32, nchannels: Option<u32>, order: &[u32]) -> String {
    format!("Channel {channel}/{nchannels:?} : {order:?}")
}

fn ring_neighbors(channel: u32, prev: i64, rank: i64, next: i64) -> String {
    format!("Ring {channel} : {prev} -> {rank} -> {next}")
}

fn channel_summary(coll: Option<u32>, nvls: Option<u32>, p2p: Option<u32>) -> String {
    format!("coll {coll:?} nvls {nvls:?} p2p {p2p:?}")
}

pub struct TextOp {
    pub process: ProcessKey,
    pub tid: u32,
    /// `None` for a body whose header was lost.
    pub dev: Option<u32>,
    pub timestamp: Option<String>,
    pub op: by_regex::Op,
}

pub type TextWarning = (Option<ProcessKey>, u32, Option<String>, String);

/// What a log's text says, gathered from [`by_regex`]'s reading of each line.
#[derive(Default)]
pub struct Text {
    /// Processes in order of their first line (with its number).
    pub processes: Vec<(ProcessKey, u64)>,
    last_process: Option<ProcessKey>,
    pending_banner: Option<(u64, String)>,
    pub first_version: Option<String>,
    /// The first version each process printed (or was given by a bare banner), with its line.
    pub versions: BTreeMap<ProcessKey, (u64, String)>,
    pub ops: BTreeMap<u64, TextOp>,
    /// Tuning lines of a known process.
    pub tunings: BTreeMap<u64, (ProcessKey, by_regex::Tuning)>,
    pub inits: BTreeMap<u64, (ProcessKey, by_regex::Comm)>,
    pub starts: BTreeMap<u64, by_regex::Comm>,
    pub trees: BTreeSet<u64>,
    pub connections: BTreeSet<u64>,
    pub timings: BTreeMap<u64, (ProcessKey, u32, by_regex::Timings)>,
    pub destroys: BTreeMap<u64, (ProcessKey, u64, Option<u32>, bool)>,
    pub warnings: BTreeMap<u64, TextWarning>,
    /// Lines a parser cannot read anything from: foreign text, NCCL lines cut short, lines of
    /// an unknown writer.
    pub skipped: BTreeSet<u64>,
    pub topology: BTreeMap<ProcessKey, Topo>,
    pub channels: BTreeMap<(ProcessKey, u32), ThreadChannels>,
    seen_ops: BTreeSet<(ProcessKey, u64, String, i64, u64)>,
    pub total: u64,
    pub blank: u64,
    pub nccl: u64,
    pub warn: u64,
    pub tuning: u64,
    pub garbled: u64,
    pub duplicates: u64,
}

impl Text {
    pub fn read(bytes: &[u8]) -> Text {
        let mut t = Text::default();
        for l in by_regex::read(bytes) {
            t.total += 1;
            t.line(l.no, &l.kind);
        }
        t
    }

    fn line(&mut self, no: u64, kind: &by_regex::Kind) {
        use by_regex::Kind;
        match kind {
            Kind::Blank => self.blank += 1,
            Kind::Foreign => {
                self.skipped.insert(no);
            }
            Kind::BareVersion(v) => {
                // NCCL prints the banner bare, from the process whose lines surround it: the one
                // that printed last, or the next one when none did yet.
                self.nccl += 1;
                let p = self.last_process.clone();
                self.version(no, p.as_ref(), v);
            }
            Kind::HeaderlessOp(op) => {
                // Its header went to another writer's line: it can only be the only process's.
                self.garbled += 1;
                match self.processes.as_slice() {
                    [(only, _)] => {
                        let only = only.clone();
                        self.op(no, only, 0, None, None, op);
                    }
                    _ => {
                        self.skipped.insert(no);
                    }
                }
            }
            Kind::Nccl(head, body) => self.nccl_line(no, head, body),
        }
    }

    fn version(&mut self, no: u64, process: Option<&ProcessKey>, v: &str) {
        self.first_version.get_or_insert_with(|| v.to_string());
        match process {
            Some(p) => {
                self.versions
                    .entry(p.clone())
                    .or_insert((no, v.to_string()));
            }
            None => self.pending_banner = Some((no, v.to_string())),
        }
    }

    fn op(
        &mut self,
        no: u64,
        process: ProcessKey,
        tid: u32,
        dev: Option<u32>,
        timestamp: Option<String>,
        op: &by_regex::Op,
    ) {
        let p2p = op.name == "Send" || op.name == "Recv";
        let peer = if p2p { op.root } else { 0 };
        let key = (process.clone(), op.comm, op.name.clone(), peer, op.op_count);
        if !self.seen_ops.insert(key) {
            self.duplicates += 1;
        }
        let op = op.clone();
        self.ops.insert(
            no,
            TextOp {
                process,
                tid,
                dev,
                timestamp,
                op,
            },
        );
    }

    fn thread(&mut self, p: &ProcessKey, tid: u32) -> &mut ThreadChannels {
        self.channels.entry((p.clone(), tid)).or_default()
    }

    /// A line of a topology block in progress: true when the block took it.
    fn topology_line(&mut self, p: &ProcessKey, body: &by_regex::Body) -> bool {
        use by_regex::Body;
        let Some(Topo::Building(b)) = self.topology.get_mut(p) else {
            return false;
        };
        match body {
            Body::TopoRoot { kind, id, attrs } => {
                let n = b.node(kind, id, attrs.as_ref());
                b.stack = vec![(-1, n)];
                true
            }
            Body::TopoLink {
                indent,
                label,
                bw,
                kind,
                id,
                attrs,
            } => {
                let indent = *indent as i64;
                while b.stack.last().is_some_and(|(d, _)| *d >= indent) {
                    b.stack.pop();
                }
                let to = b.node(kind, id, attrs.as_ref());
                if let Some((_, from)) = b.stack.last() {
                    let link = describe_link((&from.0, &from.1), (&to.0, &to.1), label, *bw);
                    b.links.push(link);
                }
                b.stack.push((indent, to));
                true
            }
            _ => {
                // The closing `=====`, or a line that ends the block without one.
                if let Some(Topo::Building(b)) = self.topology.remove(p) {
                    self.topology.insert(p.clone(), Topo::Done(b));
                }
                matches!(body, Body::TopoEnd)
            }
        }
    }

    fn nccl_line(&mut self, no: u64, head: &by_regex::Head, body: &by_regex::Body) {
        use by_regex::Body;
        self.nccl += 1;
        self.garbled += u64::from(head.merged);
        let process = match &head.origin {
            Some(o) => {
                let k = pkey(o);
                if !self.processes.iter().any(|(p, _)| *p == k) {
                    self.processes.push((k.clone(), no));
                    if let Some(b) = self.pending_banner.take() {
                        self.versions.insert(k.clone(), b);
                    }
                }
                Some(k)
            }
            // A reporter cut `host:pid:tid`: the line is the only process's, if there is one.
            None => match self.processes.as_slice() {
                [(only, _)] => Some(only.clone()),
                _ => None,
            },
        };
        if process.is_some() {
            self.last_process.clone_from(&process);
        }
        let tid = head.origin.as_ref().map_or(0, |o| o.tid);
        if let Body::Warn(msg) = body {
            self.warn += 1;
            let w = (process, head.dev, head.timestamp.clone(), msg.clone());
            self.warnings.insert(no, w);
            return;
        }
        if let Some(p) = &process {
            if self.topology_line(p, body) {
                return;
            }
        }
        let Some(p) = process else {
            // Nothing but counters can be kept from a line of an unknown writer; the lines
            // that would make a record are skipped.
            match body {
                Body::Tuning(_) => self.tuning += 1,
                Body::Version(v) => self.version(no, None, v),
                Body::Op(_)
                | Body::InitComplete(_)
                | Body::InitStart(_)
                | Body::Destroy { .. }
                | Body::Truncated(_) => {
                    self.skipped.insert(no);
                }
                _ => {}
            }
            self.garbled += u64::from(matches!(body, Body::Truncated(_)));
            return;
        };
        match body {
            Body::Op(op) => self.op(no, p, tid, Some(head.dev), head.timestamp.clone(), op),
            Body::Tuning(t) => {
                self.tuning += 1;
                self.tunings.insert(no, (p, t.clone()));
            }
            Body::InitComplete(c) | Body::InitStart(c) => {
                let t = self.thread(&p, tid);
                t.starts.insert(no);
                t.comms.insert(c.comm);
                if matches!(body, Body::InitComplete(_)) {
                    self.inits.insert(no, (p, c.clone()));
                } else {
                    self.starts.insert(no, c.clone());
                }
            }
            Body::CommSummary { comm } => {
                let t = self.thread(&p, tid);
                t.starts.insert(no);
                t.comms.insert(*comm);
            }
            Body::Timings(t) => {
                self.timings.insert(no, (p, tid, t.clone()));
            }
            Body::Destroy { comm, rank, abort } => {
                self.destroys.insert(no, (p, *comm, *rank, *abort));
            }
            Body::Version(v) => self.version(no, Some(&p), v),
            Body::TopoHeader { bw, max, total } => {
                // Only the first block of a process is kept.
                self.topology.entry(p).or_insert_with(|| {
                    Topo::Building(Box::new(Block {
                        header_line: no,
                        bw: *bw,
                        max: *max,
                        total: *total,
                        nodes: Vec::new(),
                        links: Vec::new(),
                        stack: Vec::new(),
                    }))
                });
            }
            Body::RingOrder {
                channel,
                nchannels,
                order,
            } => {
                let t = self.thread(&p, tid);
                t.starts.insert(no);
                t.orders.push((no, ring_order(*channel, *nchannels, order)));
            }
            Body::RingNeighbors {
                channel,
                prev,
                rank,
                next,
            } => {
                let t = self.thread(&p, tid);
                t.starts.insert(no);
                let n = ring_neighbors(*channel, *prev, *rank, *next);
                t.neighbors.push((no, n));
            }
            Body::ChannelSummary {
                comm,
                coll,
                nvls,
                p2p,
            } => {
                let t = self.thread(&p, tid);
                t.starts.insert(no);
                t.comms.extend(*comm);
                let s = channel_summary(Some(*coll), *nvls, Some(*p2p));
                t.summaries.push((no, s));
            }
            Body::Connection => {
                self.connections.insert(no);
            }
            Body::Tree => {
                self.trees.insert(no);
            }
            Body::Truncated(_) => {
                self.garbled += 1;
                self.skipped.insert(no);
            }
            Body::Warn(_)
            | Body::TopoRoot { .. }
            | Body::TopoLink { .. }
            | Body::TopoEnd
            | Body::Other => {}
        }
    }
}

/// Everything in `log` that disagrees with the text of `bytes`, line by line; `log` is the
/// parser's result for `bytes` parsed as input file `file`.
pub fn mismatches(bytes: &[u8], file: u32, log: &ParsedLog) -> Vec<Mismatch> {
    let text = Text::read(bytes);
    let mut found = Found::default();
    check_ops(&text, file, log, &mut found);
    check_tuning(&text, log, &mut found);
    check_comm_lines(&text, file, log, &mut found);
    check_processes(&text, log, &mut found);
    check_topology(&text, file, log, &mut found);
    check_channels(&text, file, log, &mut found);
    check_skipped(&text, log, &mut found);
    for (no, c) in &text.starts {
        let d = format!(
            "comm 0x{:x} rank {} nranks {} starts here; no record says so",
            c.comm, c.rank, c.nranks
        );
        found.add(*no, INIT_START, d);
    }
    for no in &text.trees {
        found.add(*no, TREE, "a tree of the communicator; no record holds it");
    }
    for no in &text.connections {
        found.add(
            *no,
            CONNECTION,
            "a channel's connection to a peer; no record holds it",
        );
    }
    let c = &log.counters;
    let counters = [
        ("total_lines", c.total_lines, text.total),
        ("blank_lines", c.blank_lines, text.blank),
        ("nccl_lines", c.nccl_lines, text.nccl),
        ("warn_lines", c.warn_lines, text.warn),
        ("op_lines", c.op_lines, text.ops.len() as u64),
        ("init_lines", c.init_lines, text.inits.len() as u64),
        ("tuning_lines", c.tuning_lines, text.tuning),
        ("garbled_lines", c.garbled_lines, text.garbled),
        ("duplicate_ops", c.duplicate_ops, text.duplicates),
        ("skipped_lines", c.skipped_lines, text.skipped.len() as u64),
    ];
    for (name, parser, txt) in counters {
        if parser != txt {
            found.add(0, COUNTER, format!("{name}: parser {parser}, text {txt}"));
        }
    }
    found.0
}

/// Lines where the parser's records and the text's lines of one family part: the text has a
/// line and no record carries it, a record carries a line that is not of the family, or several
/// records carry one line. The lines where both have one come back for their fields.
fn pair_lines<'a, T, R>(
    text: &'a BTreeMap<u64, T>,
    records: &'a [(u64, R)],
    what: &'static str,
    found: &mut Found,
) -> Vec<(u64, &'a T, &'a R)> {
    let mut by_line: BTreeMap<u64, Vec<&R>> = BTreeMap::new();
    for (l, r) in records {
        by_line.entry(*l).or_default().push(r);
    }
    let mut both = Vec::new();
    for (l, t) in text {
        match by_line.get(l).map(Vec::as_slice) {
            None => found.add(
                *l,
                what,
                "the text has one here; no record carries this line",
            ),
            Some([r]) => both.push((*l, t, *r)),
            Some(rs) => found.add(*l, what, format!("{} records carry this line", rs.len())),
        }
    }
    for l in by_line.keys().filter(|l| !text.contains_key(l)) {
        found.add(
            *l,
            what,
            "a record carries this line; the text has none of these here",
        );
    }
    both
}

fn check_ops(text: &Text, file: u32, log: &ParsedLog, found: &mut Found) {
    let records: Vec<(u64, LogOp)> = log.ops.iter().map(|o| (o.source.line, o)).collect();
    for (no, t, o) in pair_lines(&text.ops, &records, OP, found) {
        let e = &t.op;
        let mut d = Diffs::default();
        d.eq("file", o.source.file, file);
        d.eq("process", &o.process, &t.process);
        d.eq("tid", o.tid, t.tid);
        if let Some(dev) = t.dev {
            d.eq("cudaDev", o.cuda_dev, dev);
        }
        d.eq(
            "op",
            o.op.name().to_ascii_lowercase(),
            e.name.to_ascii_lowercase(),
        );
        d.eq("opCount", o.op_count, e.op_count);
        d.eq("sendbuff", o.sendbuff, e.sendbuff);
        d.eq("recvbuff", o.recvbuff, e.recvbuff);
        d.eq("count", o.count, e.count);
        d.eq("datatype", o.datatype_code, e.datatype);
        d.eq("op (reduction)", red_op_code(o.red_op), e.red_op);
        d.eq("root/peer", o.root, e.root);
        d.eq("comm", o.comm, e.comm);
        d.eq("nranks", o.nranks, e.nranks);
        d.eq("stream", o.stream, e.stream);
        d.eq("task", o.rccl_task, e.rccl_task);
        d.eq("globalrank", o.rccl_global_rank, e.rccl_global_rank);
        d.eq(
            "timestamp printed",
            o.timestamp_ns.is_some(),
            t.timestamp.is_some(),
        );
        if let Some(ns) = t.timestamp.as_deref().and_then(epoch_ns) {
            d.eq("timestamp ns", o.timestamp_ns, Some(ns));
        }
        d.report(found, no, OP);
    }
}

/// `Algo 1` or `Algo RING` → `RING` (NCCL's `ncclAlgoStr` order); protocols likewise.
fn algo_name(a: &str) -> String {
    const ALGOS: [&str; 7] = [
        "TREE",
        "RING",
        "COLLNET_DIRECT",
        "COLLNET_CHAIN",
        "NVLS",
        "NVLS_TREE",
        "PAT",
    ];
    a.parse::<usize>()
        .ok()
        .and_then(|i| ALGOS.get(i))
        .map_or(a.to_ascii_uppercase(), |s| s.to_string())
}

fn proto_name(p: &str) -> String {
    const PROTOS: [&str; 3] = ["LL", "LL128", "SIMPLE"];
    p.parse::<usize>()
        .ok()
        .and_then(|i| PROTOS.get(i))
        .map_or(p.to_ascii_uppercase(), |s| s.to_string())
}

/// Tuning lines carry no record of their own: an operation's algorithm, protocol and channel
/// count must come from a tuning line of its process printed after it, of its operation (when
/// named) and size (per rank or whole).
fn check_tuning(text: &Text, log: &ParsedLog, found: &mut Found) {
    let mut tuned = 0;
    for o in log
        .ops
        .iter()
        .filter(|o| o.algo.is_some() || o.proto.is_some())
    {
        tuned += 1;
        let bytes = o.msg_bytes();
        let fits = text.tunings.range(o.source.line + 1..).any(|(_, (p, t))| {
            *p == o.process
                && t.op.as_deref().is_none_or(|n| n == o.op.name())
                && (t.bytes == bytes || t.bytes == bytes.saturating_mul(u64::from(o.nranks)))
                && t.algo.as_deref().map(algo_name).as_deref() == o.algo.map(|a| a.name())
                && t.proto.as_deref().map(proto_name).as_deref() == o.proto.map(|p| p.name())
                && t.channels.map(|(lo, hi)| hi - lo + 1) == o.nchannels
        });
        if !fits {
            let d = format!(
                "{} {:?}/{:?}/{:?} channels: no tuning line after it says so",
                o.op, o.algo, o.proto, o.nchannels
            );
            found.add(o.source.line, TUNING, d);
        }
    }
    if log.counters.tuning_attached != tuned {
        let d = format!(
            "tuning_attached {}, but {tuned} operations are tuned",
            log.counters.tuning_attached
        );
        found.add(0, COUNTER, d);
    }
}

/// Init COMPLETE, Init timings, Destroy/Abort COMPLETE and WARN lines.
fn check_comm_lines(text: &Text, file: u32, log: &ParsedLog, found: &mut Found) {
    let records: Vec<_> = log.inits.iter().map(|r| (r.source.line, r)).collect();
    for (no, (p, c), r) in pair_lines(&text.inits, &records, INIT, found) {
        let mut d = Diffs::default();
        d.eq("file", r.source.file, file);
        d.eq("process", &r.process, p);
        d.eq("comm", r.comm, c.comm);
        d.eq("rank", r.rank, c.rank);
        d.eq("nranks", r.nranks, c.nranks);
        d.eq("cudaDev", r.cuda_dev, c.cuda_dev);
        d.eq("nvmlDev", r.nvml_dev, c.nvml_dev);
        d.eq("busId", r.bus_id.as_deref(), c.bus_id.as_deref());
        d.eq("commId", r.comm_id, c.comm_id);
        d.eq("parent", r.split_parent, c.parent);
        d.eq("color", r.split_color, c.color);
        d.eq("key", r.split_key, c.key);
        d.report(found, no, INIT);
    }
    let records: Vec<_> = log
        .init_timings
        .iter()
        .map(|r| (r.source.line, r))
        .collect();
    for (no, (p, tid, t), r) in pair_lines(&text.timings, &records, TIMINGS, found) {
        let mut d = Diffs::default();
        d.eq("file", r.source.file, file);
        d.eq("process", &r.process, p);
        d.eq("tid", r.tid, *tid);
        d.eq("function", r.func.as_deref(), t.func.as_deref());
        d.eq("rank", r.rank, t.rank);
        d.eq("nranks", r.nranks, t.nranks);
        d.eq("total", r.total_s, t.total);
        d.eq("phases", &r.phases, &t.phases);
        d.report(found, no, TIMINGS);
    }
    let records: Vec<_> = log.destroys.iter().map(|r| (r.source.line, r)).collect();
    for (no, (p, comm, rank, abort), r) in pair_lines(&text.destroys, &records, DESTROY, found) {
        let mut d = Diffs::default();
        d.eq("file", r.source.file, file);
        d.eq("process", &r.process, p);
        d.eq("comm", r.comm, *comm);
        d.eq("rank", r.rank, *rank);
        d.eq("abort", r.abort, *abort);
        d.report(found, no, DESTROY);
    }
    let records: Vec<_> = log.warnings.iter().map(|r| (r.source.line, r)).collect();
    for (no, (p, dev, ts, msg), r) in pair_lines(&text.warnings, &records, WARN, found) {
        let mut d = Diffs::default();
        d.eq("file", r.source.file, file);
        d.eq("process", r.process.as_ref(), p.as_ref());
        d.eq("dev", r.cuda_dev, Some(*dev));
        d.eq("timestamp", r.timestamp.as_deref(), ts.as_deref());
        if let Some(ns) = ts.as_deref().and_then(epoch_ns) {
            d.eq("timestamp ns", r.timestamp_ns, Some(ns));
        }
        d.eq("message", r.message.as_str(), msg.as_str());
        d.report(found, no, WARN);
    }
}

/// The processes in order of their first line, and the NCCL version each printed.
fn check_processes(text: &Text, log: &ParsedLog, found: &mut Found) {
    let parser: Vec<_> = log
        .processes
        .iter()
        .map(|p| (p.process.clone(), p.first_line.line))
        .collect();
    if parser != text.processes {
        let line = text.processes.first().map_or(0, |(_, l)| *l);
        let d = format!("parser {parser:?}, text {:?}", text.processes);
        found.add(line, PROCESS, d);
    }
    if log.nccl_version != text.first_version {
        let line = text.versions.values().map(|(l, _)| *l).min().unwrap_or(0);
        let d = format!(
            "the log's: parser {:?}, text {:?}",
            log.nccl_version, text.first_version
        );
        found.add(line, VERSION, d);
    }
    for p in &log.processes {
        let t = text.versions.get(&p.process);
        if p.nccl_version.as_deref() != t.map(|(_, v)| v.as_str()) {
            let line = t.map_or(p.first_line.line, |(l, _)| *l);
            let d = format!(
                "{}:{}: parser {:?}, text {:?}",
                p.process.host,
                p.process.pid,
                p.nccl_version,
                t.map(|(_, v)| v)
            );
            found.add(line, VERSION, d);
        }
    }
}

/// Each process's first `=== System` block: header, nodes and links.
fn check_topology(text: &Text, file: u32, log: &ParsedLog, found: &mut Found) {
    for p in &log.processes {
        let t = match text.topology.get(&p.process) {
            Some(Topo::Building(b) | Topo::Done(b)) => Some(b),
            None => None,
        };
        let who = format!("{}:{}", p.process.host, p.process.pid);
        let (got, t) = match (&p.topology, t) {
            (None, None) => continue,
            (Some(g), None) => {
                let d = format!("{who}: a topology the text does not have");
                found.add(g.source.line, TOPOLOGY, d);
                continue;
            }
            (None, Some(t)) => {
                let d = format!("{who}: the text's block starting here has no record");
                found.add(t.header_line, TOPOLOGY, d);
                continue;
            }
            (Some(g), Some(t)) => (g, t),
        };
        let mut d = Diffs::default();
        d.eq("file", got.source.file, file);
        d.eq("header line", got.source.line, t.header_line);
        let style = if t.bw {
            TopoHeader::MaxBw
        } else {
            TopoHeader::MaxWidth
        };
        d.eq("header", got.header, style);
        d.eq("max", got.max_bw_gbps, t.max);
        d.eq("total", got.total_bw_gbps, t.total);
        // The model's nodes, in the words of `describe_node`.
        let mut nodes: Vec<String> = got
            .nodes
            .iter()
            .map(|n| {
                format!(
                    "{}/{} sys={:?} local={:?} bus={:?} rank={:?} attrs={:?}",
                    node_kind(n.kind),
                    n.id,
                    n.system,
                    n.local_id,
                    n.bus_id.as_deref(),
                    n.local_rank,
                    n.attrs.as_deref()
                )
            })
            .collect();
        let mut want: Vec<String> = t
            .nodes
            .iter()
            .map(|((k, id), a)| describe_node(k, id, a.as_deref()))
            .collect();
        nodes.sort();
        want.sort();
        d.eq("nodes", &nodes, &want);
        let mut links: Vec<String> = got
            .links
            .iter()
            .map(|l| {
                let (f, t) = (&got.nodes[l.from], &got.nodes[l.to]);
                describe_link(
                    (node_kind(f.kind), &f.id),
                    (node_kind(t.kind), &t.id),
                    &l.label,
                    l.bw_gbps,
                )
            })
            .collect();
        let mut want = t.links.clone();
        links.sort();
        want.sort();
        d.eq("links", &links, &want);
        if !d.0.is_empty() {
            d.0.insert(0, who);
        }
        d.report(found, t.header_line, TOPOLOGY);
    }
}

/// The first place two sequences of one thread part, reported at the text's line.
fn compare_seq(
    found: &mut Found,
    who: &str,
    kind: &str,
    text: &[(u64, String)],
    parser: &[String],
) {
    for i in 0..text.len().max(parser.len()) {
        let (t, p) = (text.get(i), parser.get(i));
        if t.map(|(_, s)| s) != p {
            let line = t.or(text.last()).map_or(0, |(l, _)| *l);
            let d = format!(
                "{who}: {kind} #{i}: parser {p:?}, text {:?} ({} in the text, {} in the parser)",
                t.map(|(_, s)| s),
                text.len(),
                parser.len()
            );
            found.add(line, CHANNELS, d);
            return;
        }
    }
}

/// Ring orders, ring neighbours and channel counts of every thread, in the order printed; each
/// group's first line and communicator among the thread's lines.
fn check_channels(text: &Text, file: u32, log: &ParsedLog, found: &mut Found) {
    let mut parser: BTreeMap<(ProcessKey, u32), [Vec<String>; 3]> = BTreeMap::new();
    for c in &log.channels {
        let key = (c.process.clone(), c.tid);
        let who = format!("{}:{}:{}", c.process.host, c.process.pid, c.tid);
        let seqs = parser.entry(key.clone()).or_default();
        seqs[0].extend(
            c.rings
                .iter()
                .map(|r| ring_order(r.channel, c.nchannels, &r.order)),
        );
        seqs[1].extend(
            c.ring_neighbors
                .iter()
                .map(|r| ring_neighbors(r.channel, r.prev, r.rank, r.next)),
        );
        if c.coll_channels.is_some() || c.nvls_channels.is_some() || c.p2p_channels.is_some() {
            seqs[2].push(channel_summary(
                c.coll_channels,
                c.nvls_channels,
                c.p2p_channels,
            ));
        }
        let t = text.channels.get(&key);
        let mut d = Diffs::default();
        d.eq("file", c.source.file, file);
        if !t.is_some_and(|t| t.starts.contains(&c.source.line)) {
            d.0.push(format!(
                "{who}: a group starting at line {} where this thread prints no channel or communicator line",
                c.source.line
            ));
        }
        if let Some(comm) = c.comm {
            if !t.is_some_and(|t| t.comms.contains(&comm)) {
                d.0.push(format!(
                    "{who}: comm 0x{comm:x}, which this thread never names"
                ));
            }
        }
        d.report(found, c.source.line, CHANNELS);
    }
    let none: [Vec<String>; 3] = Default::default();
    let keys: BTreeSet<&(ProcessKey, u32)> = parser.keys().chain(text.channels.keys()).collect();
    for key in keys {
        let who = format!("{}:{}:{}", key.0.host, key.0.pid, key.1);
        let p = parser.get(key).unwrap_or(&none);
        let empty = ThreadChannels::default();
        let t = text.channels.get(key).unwrap_or(&empty);
        compare_seq(found, &who, "ring order", &t.orders, &p[0]);
        compare_seq(found, &who, "ring neighbours", &t.neighbors, &p[1]);
        compare_seq(found, &who, "channel counts", &t.summaries, &p[2]);
    }
}

/// The lines listed as skipped are the text's foreign lines, NCCL lines cut short and lines of
/// no known writer: each once, no more, no fewer.
fn check_skipped(text: &Text, log: &ParsedLog, found: &mut Found) {
    let mut listed: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    for d in &log.diagnostics {
        if d.message.starts_with(ingest_nccl::SKIPPED) {
            listed.entry(d.line).or_default().push(&d.message);
        }
    }
    for no in &text.skipped {
        match listed.get(no).map(Vec::len) {
            None => found.add(
                *no,
                SKIPPED,
                "nothing can be read from this line; not listed as skipped",
            ),
            Some(1) => {}
            Some(n) => found.add(*no, SKIPPED, format!("listed as skipped {n} times")),
        }
    }
    for (no, msgs) in listed.iter().filter(|(l, _)| !text.skipped.contains(l)) {
        found.add(
            *no,
            SKIPPED,
            format!("listed as skipped, but the text reads: {msgs:?}"),
        );
    }
}
