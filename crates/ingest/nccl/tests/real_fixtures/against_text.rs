//! The parser's records held against what a log's text says, line by line: [`Text`] gathers
//! [`by_regex`]'s reading of every line (and what spans lines: processes, the first topology
//! block of each, each thread's channel lines), [`mismatches`] lists every place a
//! [`ParsedLog`] disagrees with it.

use crate::by_regex;
use ingest_nccl::{NodeKind, ParsedLog, TopoHeader};
use model::log::{CommInit, LogOp, ProcessKey};
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
pub const INIT_START: &str = "Init START";
/// The note an `Init START` with no later `Init COMPLETE` gets.
pub const UNFINISHED: &str = "unfinished Init START";
pub const TREE: &str = "tree";
pub const CONNECTION: &str = "connection";

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

/// `1712345678.123456` or `1712345678` (bare or in brackets) → epoch ns; a civil
/// `[%F %T]` time (no zone printed) read as UTC.
fn epoch_ns(ts: &str) -> Option<i64> {
    let t = ts.trim_start_matches('[').trim_end_matches(']');
    let (date, time) = match t.split_once(' ') {
        Some((d, t)) => (Some(d), t),
        None => (None, t),
    };
    let (whole, frac) = time.split_once('.').unwrap_or((time, ""));
    let digits: String = frac.chars().chain(std::iter::repeat('0')).take(9).collect();
    let ns: i64 = digits.parse().ok()?;
    let secs: i64 = match date {
        None => whole.parse().ok()?,
        Some(d) => {
            let ymd: Vec<i64> = d
                .split('-')
                .map(|v| v.parse().ok())
                .collect::<Option<_>>()?;
            let hms: Vec<i64> = whole
                .split(':')
                .map(|v| v.parse().ok())
                .collect::<Option<_>>()?;
            let [y, mo, da] = ymd[..] else { return None };
            let [h, mi, s] = hms[..] else { return None };
            days_since_epoch(y, mo, da) * 86_400 + h * 3600 + mi * 60 + s
        }
    };
    Some(secs * 1_000_000_000 + ns)
}

/// Days from 1970-01-01 to a date (from 1970 on), counted year by year and month by month.
fn days_since_epoch(y: i64, m: i64, d: i64) -> i64 {
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let years: i64 = (1970..y).map(|y| if leap(y) { 366 } else { 365 }).sum();
    let month_days = [
        31,
        if leap(y) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let months: i64 = month_days.iter().take((m - 1) as usize).sum();
    years + months + d - 1
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
    speed: Option<f64>,
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
    /// 2.4's ring orders (`Channel cc : r r`, no channel count) of the set-up in progress:
    /// (line, channel, order). Their count is the number of channels the set-up printed, known
    /// at its end: a channel printed again, the thread's `Init COMPLETE`, a counted ring order
    /// or the end of the log.
    uncounted: Vec<(u64, u32, Vec<u32>)>,
    neighbors: Vec<(u64, String)>,
    summaries: Vec<(u64, String)>,
    trees: Vec<(u64, String)>,
    connections: Vec<(u64, String)>,
    /// Lines a group of channel lines may start at: these lines and the thread's communicator
    /// lines (Init START/COMPLETE, `comm .. nRanks .. nNodes`).
    starts: BTreeSet<u64>,
    /// Communicators the thread names.
    comms: BTreeSet<u64>,
}

impl ThreadChannels {
    /// The uncounted ring orders of one set-up, counted.
    fn count_orders(&mut self) {
        let n = self
            .uncounted
            .iter()
            .map(|(_, c, _)| *c)
            .collect::<BTreeSet<_>>()
            .len() as u32;
        for (no, c, order) in self.uncounted.drain(..) {
            self.orders.push((no, ring_order(c, Some(n), &order)));
        }
    }
}

fn ring_order(channel: u32, nchannels: Option<u32>, order: &[u32]) -> String {
    format!("Channel {channel}/{nchannels:?} : {order:?}")
}

fn tree(channel: u32, up: i64, rank: i64, down: &[i64]) -> String {
    format!("Tree {channel} : {up} -> {rank} -> {down:?}")
}

fn connection(
    channel: u32,
    (from, from_gpu): (u32, &str),
    (to, to_gpu): (u32, &str),
    direction: Option<&str>,
    via: &str,
) -> String {
    format!("Channel {channel} : {from}[{from_gpu}] -> {to}[{to_gpu}] {direction:?} via {via}")
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

/// An `Init COMPLETE` line: its process and fields, and the `nNodes` line of its thread before
/// it (since the thread's previous `Init COMPLETE`), when that names the same communicator.
pub type TextInit = (ProcessKey, by_regex::Comm, Option<by_regex::Layout>);

/// An operation line's call, to tell a line printed twice from another call of a group.
type Call = (u64, u64, u64, u32, u64);

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
    pub inits: BTreeMap<u64, TextInit>,
    pub starts: BTreeMap<u64, (ProcessKey, by_regex::Comm)>,
    /// The `Init START` lines no later `Init COMPLETE` of their (process, communicator) follows.
    pub unfinished: BTreeSet<u64>,
    /// The last `nNodes` line of each thread since its last `Init COMPLETE`.
    layouts: BTreeMap<(ProcessKey, u32), by_regex::Layout>,
    pub timings: BTreeMap<u64, (ProcessKey, u32, by_regex::Timings)>,
    pub destroys: BTreeMap<u64, (ProcessKey, u64, Option<u32>, bool)>,
    pub warnings: BTreeMap<u64, TextWarning>,
    /// Lines a parser cannot read anything from: foreign text, NCCL lines cut short, lines of
    /// an unknown writer.
    pub skipped: BTreeSet<u64>,
    pub topology: BTreeMap<ProcessKey, Topo>,
    pub channels: BTreeMap<(ProcessKey, u32), ThreadChannels>,
    /// (process, comm, operation, peer, opCount) → the calls printed with it.
    seen_ops: BTreeMap<(ProcessKey, u64, String, i64, u64), Vec<Call>>,
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
        for c in t.channels.values_mut() {
            c.count_orders();
        }
        let done: Vec<(u64, ProcessKey, u64)> = t
            .inits
            .iter()
            .map(|(no, (p, c, _))| (*no, p.clone(), c.comm))
            .collect();
        t.unfinished = t
            .starts
            .iter()
            .filter(|(no, (p, c))| {
                !done
                    .iter()
                    .any(|(l, dp, comm)| l > no && dp == p && *comm == c.comm)
            })
            .map(|(no, _)| *no)
            .collect();
        t
    }

    /// The lines that print trees (a `Trees` line holds every channel's).
    pub fn tree_lines(&self) -> usize {
        let lines: BTreeSet<u64> = (self.channels.values())
            .flat_map(|t| t.trees.iter().map(|(l, _)| *l))
            .collect();
        lines.len()
    }

    pub fn connection_lines(&self) -> usize {
        self.channels.values().map(|t| t.connections.len()).sum()
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
        // A line printed twice repeats every field; two calls of one group (Sends to one peer)
        // share the opCount and differ in their buffers, count, type or stream.
        let p2p = matches!(op.name.as_str(), "Send" | "Recv" | "SendRecv");
        let peer = if p2p { op.root } else { 0 };
        let key = (process.clone(), op.comm, op.name.clone(), peer, op.op_count);
        let call = (op.sendbuff, op.recvbuff, op.count, op.datatype, op.stream);
        let calls = self.seen_ops.entry(key).or_default();
        if calls.contains(&call) {
            self.duplicates += 1;
        }
        calls.push(call);
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

    /// A line of a topology block in progress: true when the block took it. The block is
    /// its process's root and `+` lines up to the closing `=====` (other lines of the process,
    /// from other threads, may come between them).
    fn topology_line(&mut self, no: u64, p: &ProcessKey, body: &by_regex::Body) -> bool {
        use by_regex::Body;
        if !matches!(self.topology.get(p), Some(Topo::Building(_))) {
            return false;
        }
        if let Body::TopoLinkDamaged = body {
            self.garbled += 1;
            self.skipped.insert(no);
            return true;
        }
        if let Body::TopoEnd = body {
            if let Some(Topo::Building(b)) = self.topology.remove(p) {
                self.topology.insert(p.clone(), Topo::Done(b));
            }
            return true;
        }
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
            _ => false,
        }
    }

    /// The writer of a line: in a merged line the second header may be glued to the first
    /// writer's text (`Launch mode Parallelnode1:12:34`), and its host is then the longest
    /// host of the file (or the line's first writer) that its host ends with.
    fn writer(&self, head: &by_regex::Head) -> Option<ProcessKey> {
        let o = head.origin.as_ref()?;
        let mut k = pkey(o);
        let known = |h: &str| self.processes.iter().any(|(p, _)| p.host.as_str() == h);
        if head.merged && !known(&o.host) {
            let longest = self
                .processes
                .iter()
                .map(|(p, _)| p.host.as_str())
                .chain(head.first_host.as_deref())
                .filter(|h| !h.is_empty() && h.len() < o.host.len() && o.host.ends_with(h))
                .max_by_key(|h| h.len());
            if let Some(h) = longest {
                k = ProcessKey {
                    host: h.into(),
                    pid: o.pid,
                };
            }
        }
        Some(k)
    }

    fn nccl_line(&mut self, no: u64, head: &by_regex::Head, body: &by_regex::Body) {
        use by_regex::Body;
        self.nccl += 1;
        self.garbled += u64::from(head.merged);
        let process = self.line_process(no, head);
        let tid = head.origin.as_ref().map_or(0, |o| o.tid);
        if let Body::Warn(msg) = body {
            self.warn += 1;
            let w = (process, head.dev, head.timestamp.clone(), msg.clone());
            self.warnings.insert(no, w);
            return;
        }
        if let Some(p) = &process {
            if self.topology_line(no, p, body) {
                return;
            }
        }
        match process {
            Some(p) => self.process_line(no, p, tid, head, body),
            None => self.unknown_writer_line(no, body),
        }
    }

    /// The process that wrote line `no` (noting a new one, with the banner before it), else the
    /// only process when the reporter cut `host:pid:tid`.
    fn line_process(&mut self, no: u64, head: &by_regex::Head) -> Option<ProcessKey> {
        let process = match self.writer(head) {
            Some(k) => {
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
        process
    }

    /// A line of an unknown writer: nothing but counters can be kept from it; the lines that
    /// would make a record are skipped.
    fn unknown_writer_line(&mut self, no: u64, body: &by_regex::Body) {
        use by_regex::Body;
        match body {
            Body::Tuning(_) => self.tuning += 1,
            Body::Version(v) => self.version(no, None, v),
            Body::Op(_)
            | Body::UnknownOp
            | Body::InitComplete(_)
            | Body::InitStart(_)
            | Body::CommSummary(_)
            | Body::Destroy { .. }
            | Body::Truncated(_) => {
                self.skipped.insert(no);
            }
            _ => {}
        }
        self.garbled += u64::from(matches!(body, Body::Truncated(_)));
    }

    /// A line (not a warning, nor topology) of process `p`'s thread `tid`: one arm per family.
    fn process_line(
        &mut self,
        no: u64,
        p: ProcessKey,
        tid: u32,
        head: &by_regex::Head,
        body: &by_regex::Body,
    ) {
        use by_regex::Body;
        match body {
            Body::Op(op) => self.op(no, p, tid, Some(head.dev), head.timestamp.clone(), op),
            Body::UnknownOp => {
                self.skipped.insert(no);
            }
            Body::Tuning(t) => {
                self.tuning += 1;
                self.tunings.insert(no, (p, t.clone()));
            }
            Body::InitComplete(c) => {
                let layout = self.layouts.remove(&(p.clone(), tid));
                let t = self.thread(&p, tid);
                t.starts.insert(no);
                t.comms.insert(c.comm);
                t.count_orders();
                let layout = layout.filter(|l| l.comm == c.comm);
                self.inits.insert(no, (p, c.clone(), layout));
            }
            Body::InitStart(c) => {
                let t = self.thread(&p, tid);
                t.starts.insert(no);
                t.comms.insert(c.comm);
                self.starts.insert(no, (p, c.clone()));
            }
            Body::CommSummary(l) => {
                let t = self.thread(&p, tid);
                t.starts.insert(no);
                t.comms.insert(l.comm);
                self.layouts.insert((p, tid), l.clone());
            }
            Body::Timings(t) => {
                self.timings.insert(no, (p, tid, t.clone()));
            }
            Body::Destroy { comm, rank, abort } => {
                self.destroys.insert(no, (p, *comm, *rank, *abort));
            }
            Body::Version(v) => self.version(no, Some(&p), v),
            Body::TopoHeader {
                bw,
                max,
                total,
                speed,
            } => {
                // Only the first block of a process is kept.
                self.topology.entry(p).or_insert_with(|| {
                    Topo::Building(Box::new(Block {
                        header_line: no,
                        bw: *bw,
                        max: *max,
                        total: *total,
                        speed: *speed,
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
                match nchannels {
                    Some(_) => {
                        t.count_orders();
                        t.orders.push((no, ring_order(*channel, *nchannels, order)));
                    }
                    None => {
                        if t.uncounted.iter().any(|(_, c, _)| c == channel) {
                            t.count_orders();
                        }
                        t.uncounted.push((no, *channel, order.clone()));
                    }
                }
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
            Body::Connection(c) => {
                let t = self.thread(&p, tid);
                t.starts.insert(no);
                let s = connection(
                    c.channel,
                    (c.from, &c.from_gpu),
                    (c.to, &c.to_gpu),
                    c.direction.as_deref(),
                    &c.via,
                );
                t.connections.push((no, s));
            }
            Body::Tree(trees) => {
                let t = self.thread(&p, tid);
                t.starts.insert(no);
                for x in trees {
                    t.trees.push((no, tree(x.channel, x.up, x.rank, &x.down)));
                }
            }
            Body::Truncated(_) => {
                self.garbled += 1;
                self.skipped.insert(no);
            }
            Body::Warn(_)
            | Body::TopoRoot { .. }
            | Body::TopoLink { .. }
            | Body::TopoLinkDamaged
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
    check_unfinished(&text, log, &mut found);
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
        d.eq("acc", o.rccl_acc, e.acc);
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
/// named) and size (per rank or whole); a `[Symmetric]` kernel and its channels from a
/// `[Symmetric]` line of its operation and size (per rank) after it.
fn check_tuning(text: &Text, log: &ParsedLog, found: &mut Found) {
    let mut tuned = 0;
    for o in log
        .ops
        .iter()
        .filter(|o| o.algo.is_some() || o.proto.is_some() || o.sym_kernel.is_some())
    {
        tuned += 1;
        let bytes = o.msg_bytes();
        let after = || text.tunings.range(o.source.line + 1..).map(|(_, t)| t);
        let fits = match o.sym_kernel.as_deref() {
            None => after().any(|(p, t)| {
                *p == o.process
                    && !t.symmetric
                    && t.op.as_deref().is_none_or(|n| n == o.op.name())
                    && (t.bytes == bytes || t.bytes == bytes.saturating_mul(u64::from(o.nranks)))
                    && t.algo.as_deref().map(algo_name).as_deref() == o.algo.map(|a| a.name())
                    && t.proto.as_deref().map(proto_name).as_deref() == o.proto.map(|p| p.name())
                    && t.channels.map(|(lo, hi)| hi - lo + 1) == o.nchannels
            }),
            Some(k) => after().any(|(p, t)| {
                *p == o.process
                    && t.symmetric
                    && t.op.as_deref() == Some(o.op.name())
                    && t.bytes == bytes
                    && t.kernel.as_deref() == Some(k)
                    && t.kernel_channels == o.nchannels
                    && o.algo.is_none()
                    && o.proto.is_none()
            }),
        };
        if !fits {
            let d = format!(
                "{} {:?}/{:?}/{:?} channels, kernel {:?}: no tuning line after it says so",
                o.op, o.algo, o.proto, o.nchannels, o.sym_kernel
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

/// The fields an `Init COMPLETE` or `Init START` line prints, and the layout of its thread's
/// `nNodes` line (none for `Init START`, printed before it).
fn comm_diffs(
    r: &CommInit,
    (file, p, c): (u32, &ProcessKey, &by_regex::Comm),
    layout: Option<&by_regex::Layout>,
) -> Diffs {
    let mut d = Diffs::default();
    d.eq("file", r.source.file, file);
    d.eq("process", &r.process, p);
    d.eq("function", r.func.as_deref(), c.func.as_deref());
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
    d.eq("nNodes", r.n_nodes, layout.and_then(|l| l.n_nodes));
    d.eq(
        "localRanks",
        r.local_ranks,
        layout.and_then(|l| l.local_ranks),
    );
    d.eq("localRank", r.local_rank, layout.and_then(|l| l.local_rank));
    d.eq(
        "MNNVL",
        r.mnnvl,
        layout.and_then(|l| l.mnnvl).map(|m| m != 0),
    );
    d
}

/// Init COMPLETE, Init START, Init timings, Destroy/Abort COMPLETE and WARN lines.
fn check_comm_lines(text: &Text, file: u32, log: &ParsedLog, found: &mut Found) {
    let records: Vec<_> = log.inits.iter().map(|r| (r.source.line, r)).collect();
    for (no, (p, c, layout), r) in pair_lines(&text.inits, &records, INIT, found) {
        comm_diffs(r, (file, p, c), layout.as_ref()).report(found, no, INIT);
    }
    let records: Vec<_> = log.init_starts.iter().map(|r| (r.source.line, r)).collect();
    for (no, (p, c), r) in pair_lines(&text.starts, &records, INIT_START, found) {
        comm_diffs(r, (file, p, c), None).report(found, no, INIT_START);
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

/// The notes that a communicator's set-up never completed: exactly at the `Init START` lines
/// no later `Init COMPLETE` of their process and communicator follows, naming it.
fn check_unfinished(text: &Text, log: &ParsedLog, found: &mut Found) {
    let mut notes: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    for d in &log.diagnostics {
        if d.message.contains("no Init COMPLETE") {
            notes.entry(d.line).or_default().push(&d.message);
        }
    }
    for no in &text.unfinished {
        let comm = text.starts[no].1.comm;
        match notes.get(no).map(Vec::as_slice) {
            None => found.add(
                *no,
                UNFINISHED,
                format!("comm 0x{comm:x} never completes its set-up; no note says so"),
            ),
            Some([m]) if m.contains(&format!("0x{comm:x} ")) => {}
            Some(ms) => found.add(
                *no,
                UNFINISHED,
                format!("notes {ms:?}, for comm 0x{comm:x}"),
            ),
        }
    }
    for (no, ms) in notes.iter().filter(|(l, _)| !text.unfinished.contains(l)) {
        found.add(
            *no,
            UNFINISHED,
            format!("noted as never completed, but the text reads otherwise: {ms:?}"),
        );
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
        d.eq("maxSpeed", got.max_speed_gbps, t.speed);
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
    (who, what): (&str, &'static str),
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
            found.add(line, what, d);
            return;
        }
    }
}

/// Ring orders, ring neighbours, channel counts, trees and connections of every thread, in the
/// order printed; each group's first line and communicator among the thread's lines.
fn check_channels(text: &Text, file: u32, log: &ParsedLog, found: &mut Found) {
    let mut parser: BTreeMap<(ProcessKey, u32), [Vec<String>; 5]> = BTreeMap::new();
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
        seqs[3].extend(
            c.trees
                .iter()
                .map(|t| tree(t.channel, t.up, t.rank, &t.down)),
        );
        seqs[4].extend(c.connections.iter().map(|x| {
            connection(
                x.channel,
                (x.from_rank, &x.from_gpu),
                (x.to_rank, &x.to_gpu),
                x.direction.as_deref(),
                &x.via,
            )
        }));
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
    let none: [Vec<String>; 5] = Default::default();
    let keys: BTreeSet<&(ProcessKey, u32)> = parser.keys().chain(text.channels.keys()).collect();
    for key in keys {
        let who = format!("{}:{}:{}", key.0.host, key.0.pid, key.1);
        let p = parser.get(key).unwrap_or(&none);
        let empty = ThreadChannels::default();
        let t = text.channels.get(key).unwrap_or(&empty);
        let ch = (who.as_str(), CHANNELS);
        compare_seq(found, ch, "ring order", &t.orders, &p[0]);
        compare_seq(found, ch, "ring neighbours", &t.neighbors, &p[1]);
        compare_seq(found, ch, "channel counts", &t.summaries, &p[2]);
        compare_seq(found, (&who, TREE), "tree", &t.trees, &p[3]);
        compare_seq(
            found,
            (&who, CONNECTION),
            "connection",
            &t.connections,
            &p[4],
        );
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
