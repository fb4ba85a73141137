//! What each line of a log says, read with regular expressions only: an account of the text that
//! owes nothing to the crate's own code (no helper of `ingest_nccl` is called here), for
//! `real_fixtures.rs` to hold the parser's records against, line by line.
//!
//! Every line is read alone: the launcher prefix and timestamp, the last `host:pid:tid [dev]`
//! header before `NCCL INFO`/`NCCL WARN` (two headers on one line: concurrent writes merged, the
//! second writer's line is the one that survives), then the body's family. What spans lines
//! (the topology block, the process a bare banner belongs to) is left to the caller.

use regex::Regex;
use std::sync::OnceLock;

/// Who printed an NCCL line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    pub host: String,
    pub pid: u32,
    pub tid: u32,
}

/// The text in front of the body.
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    /// `None` where the reporter stripped `host:pid:tid` (`[0] NCCL INFO ...`).
    pub origin: Option<Origin>,
    pub dev: u32,
    pub warn: bool,
    /// `[%F %T]` or `%s.%6f` (bare or in brackets) right before the host, as printed.
    pub timestamp: Option<String>,
    /// Another writer's header (and maybe more) glued in front of this one.
    pub merged: bool,
    /// On a merged line, the host of the first header (whose text may be glued to this one's).
    pub first_host: Option<String>,
}

/// One per-collective line's fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    pub name: String,
    pub op_count: u64,
    pub sendbuff: u64,
    pub recvbuff: u64,
    pub count: u64,
    pub datatype: u32,
    pub red_op: u32,
    /// Root, or the peer of Send/Recv.
    pub root: i64,
    pub comm: u64,
    pub nranks: u32,
    pub stream: u64,
    /// RCCL's `acc 0x..` (after recvbuff).
    pub acc: Option<u64>,
    pub rccl_task: Option<u64>,
    pub rccl_global_rank: Option<u32>,
}

/// The communicator fields of an `Init COMPLETE`/`Init START` line.
#[derive(Debug, Clone, PartialEq)]
pub struct Comm {
    /// The word before `comm` (`ncclCommInitRank`, `ncclCommSplit`, ...), when printed.
    pub func: Option<String>,
    pub comm: u64,
    pub rank: u32,
    pub nranks: u32,
    pub cuda_dev: Option<u32>,
    pub nvml_dev: Option<u32>,
    pub bus_id: Option<String>,
    pub comm_id: Option<u64>,
    pub parent: Option<u64>,
    pub color: Option<i64>,
    pub key: Option<i64>,
}

/// `[Op: ]N Bytes -> Algo a proto p time t` (2.20–2.23: numbers), `... channel{Lo..Hi}={l..h}`
/// (2.24+: names), or `Op [Symmetric]: N Bytes -> Kernel k nchannels c nthreads t` (2.27+).
#[derive(Debug, Clone, PartialEq)]
pub struct Tuning {
    pub op: Option<String>,
    /// `Op [Symmetric]: ...`
    pub symmetric: bool,
    pub bytes: u64,
    /// As printed: a number or a name; `None` for a `Kernel` line.
    pub algo: Option<String>,
    pub proto: Option<String>,
    pub channels: Option<(u32, u32)>,
    /// The kernel a `Kernel` line names, and its `nchannels`.
    pub kernel: Option<String>,
    pub kernel_channels: Option<u32>,
}

/// One channel's tree around the printing rank, as `Trees [c] d/d/d->me->up` (the first tree of
/// a split `...|up->me->d/d/d`) or the older `Tree c : up -> me -> d/d/d` print it.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeLine {
    pub channel: u32,
    pub up: i64,
    pub rank: i64,
    pub down: Vec<i64>,
}

/// `Channel cc[/nn] : a[gpu] -> b[gpu] [dir] via T` or 2.5's `Ring cc : a[gpu] -> b[gpu] via T`.
#[derive(Debug, Clone, PartialEq)]
pub struct Conn {
    pub channel: u32,
    pub from: u32,
    pub from_gpu: String,
    pub to: u32,
    pub to_gpu: String,
    pub direction: Option<String>,
    pub via: String,
}

/// `comm 0x.. rank r nRanks n nNodes N localRanks L localRank l MNNVL m` (2.19+).
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub comm: u64,
    pub n_nodes: Option<u32>,
    pub local_ranks: Option<u32>,
    pub local_rank: Option<u32>,
    pub mnnvl: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Timings {
    pub func: Option<String>,
    pub rank: u32,
    pub nranks: u32,
    pub total: f64,
    pub phases: Vec<(String, f64)>,
}

/// What the body after `NCCL INFO `/`NCCL WARN ` is.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Op(Op),
    Tuning(Tuning),
    InitComplete(Comm),
    InitStart(Comm),
    /// `comm 0x.. rank r nRanks n nNodes ...` (set-up summary, names the thread's communicator;
    /// its numbers go to the thread's next `Init COMPLETE`).
    CommSummary(Layout),
    Timings(Timings),
    Destroy {
        comm: u64,
        rank: Option<u32>,
        abort: bool,
    },
    /// The text after `NCCL WARN `.
    Warn(String),
    /// `NCCL version X` as an INFO line (or RCCL's `RCCL version : X`).
    Version(String),
    TopoHeader {
        /// `maxBw`/`totalBw` (true) or `maxWidth`/`totalWidth`.
        bw: bool,
        max: f64,
        /// Not printed by the oldest versions (`=== System : maxWidth 24 ===`).
        total: Option<f64>,
        /// `maxWidth 24 maxSpeed 12` (2.5–2.6).
        speed: Option<f64>,
    },
    /// `CPU/0-0 (1/2/-1)`: a root of the tree.
    TopoRoot {
        kind: String,
        id: String,
        attrs: Option<String>,
    },
    /// `   + PCI[24.0] - GPU/0-1000 (0)`: a link from the nearest less indented node above.
    TopoLink {
        indent: usize,
        label: String,
        bw: f64,
        kind: String,
        id: String,
        attrs: Option<String>,
    },
    /// A `+ ` line that is not a whole link (cut short, glued): damaged inside a topology block.
    TopoLinkDamaged,
    /// `=====...`
    TopoEnd,
    /// `Channel cc/NN :  r r r` (2.4: no `/NN`).
    RingOrder {
        channel: u32,
        nchannels: Option<u32>,
        order: Vec<u32>,
    },
    /// `Ring cc : prev -> me -> next`
    RingNeighbors {
        channel: u32,
        prev: i64,
        rank: i64,
        next: i64,
    },
    /// `N coll channels, ...` or RCCL's `comm:0x.., nRanks:.., coll channels:N ...`.
    ChannelSummary {
        comm: Option<u64>,
        coll: u32,
        nvls: Option<u32>,
        p2p: u32,
    },
    /// `Channel 00/0 : 5[2c000] -> 0[26000] [receive] via NET/IB/0` or 2.5's
    /// `Ring 00 : 155[3d000] -> 157[b2000] via P2P/IPC`: a connection, not a ring order.
    Connection(Conn),
    /// `Trees [0] a/b/c->r->p ...` (every channel) or `Tree 0 : -1 -> 0 -> 1/-1/-1`.
    Tree(Vec<TreeLine>),
    /// A whole per-collective line whose operation name is not of NCCL's shape (upper-case
    /// first, letters and digits, at most 32): nothing can be recorded from it.
    UnknownOp,
    /// The start of one of the families above, cut short or mangled: `what` names the family.
    Truncated(&'static str),
    /// Any other NCCL line (nothing recorded from it).
    Other,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Blank,
    /// Neither NCCL output nor blank: launcher chatter, a table, a debugger line.
    Foreign,
    /// `NCCL version X` with no header (NCCL prints it bare to stdout), or RCCL's bare banner.
    BareVersion(String),
    /// A per-collective body whose header was lost (concurrent writes).
    HeaderlessOp(Op),
    Nccl(Head, Body),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// 1-based.
    pub no: u64,
    pub kind: Kind,
}

struct Res {
    marker: Regex,
    head: Regex,
    timestamp: Regex,
    op: Regex,
    op_name: Regex,
    op_start: Regex,
    known_op_start: Regex,
    tuning: Regex,
    tuning_start: Regex,
    kernel_channels: Regex,
    comm_line: Regex,
    destroy: Regex,
    comm_start: Regex,
    comm_summary: Regex,
    cuda_dev: Regex,
    nvml_dev: Regex,
    bus_id: Regex,
    comm_id: Regex,
    parent: Regex,
    color: Regex,
    key: Regex,
    local_ranks: Regex,
    local_rank: Regex,
    mnnvl: Regex,
    timings: Regex,
    timings_start: Regex,
    phase: Regex,
    version: Regex,
    bare_version: Regex,
    topo_header: Regex,
    topo_start: Regex,
    topo_root: Regex,
    topo_link: Regex,
    topo_link_start: Regex,
    topo_end: Regex,
    ring_order: Regex,
    ring_order_damaged: Regex,
    ring_neighbors: Regex,
    summary: Regex,
    rccl_summary: Regex,
    connection: Regex,
    trees: Regex,
    tree_part: Regex,
    trees_start: Regex,
    old_tree: Regex,
}

fn re(s: &str) -> Regex {
    Regex::new(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// The operations NCCL and RCCL name in their per-collective lines (NCCL's `ncclFuncStr` up to
/// 2.28's `AlltoAll`, RCCL's `AllToAll`): a line that starts with one of them and a colon (or
/// ` [Symmetric]`) is of that family.
const OP_NAMES: &str = "Send|Recv|Reduce|Gather|Scatter|SendRecv|AllToAll|AlltoAll|AllReduce|AllGather|Broadcast|ReduceScatter";

fn res() -> &'static Res {
    static R: OnceLock<Res> = OnceLock::new();
    R.get_or_init(|| {
        let op_body = r"(?P<op>[A-Za-z0-9]+): opCount (?P<oc>[0-9a-fA-F]+) sendbuff (?P<sb>0x[0-9a-fA-F]+|\(nil\)) recvbuff (?P<rb>0x[0-9a-fA-F]+|\(nil\)) (?:acc (?P<acc>0x[0-9a-fA-F]+|\(nil\)) )?count (?P<count>\d+) datatype (?P<dt>\d+) op (?P<redop>\d+) root (?P<root>-?\d+) comm (?P<comm>0x[0-9a-fA-F]+|\(nil\)) \[nranks=(?P<nranks>\d+)\] stream (?P<stream>0x[0-9a-fA-F]+|\(nil\))(?: task (?P<task>\d+) globalrank (?P<gr>\d+))?";
        let civil = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?";
        let epoch = r"\d{9,}\.\d+|\d{9,11}";
        let tree = r"-?\d+(?:/-?\d+)*";
        Res {
            // `[dev] ` then, on WARN lines, `file.cc:123 `, then the level word standing alone.
            marker: re(r"\[(?P<dev>\d+)\] (?:[\w./+-]+:\d+ )?NCCL (?P<lvl>INFO|WARN)(?: |$)"),
            // What is left before the marker: any prefix, then `host:pid:tid ` (optional: some
            // reporters cut it). Lazy, so the host is the longest token that still parses.
            head: re(r"^(?P<pre>.*?)(?:(?P<host>[^\s:]+):(?P<pid>\d+):(?P<tid>\d+) )?$"),
            // `[%F %T]`, `%F %T`, `%s.%6f` or whole seconds (9 to 11 digits), bare or in brackets.
            timestamp: re(&format!(
                r"(?:^|\s)(?P<ts>\[(?:{civil})\]|{civil}|\[(?:{epoch})\]|{epoch}) *$"
            )),
            op: re(&format!("^{op_body}$")),
            // NCCL's shape of an operation name (what a record can name).
            op_name: re(r"^[A-Z][A-Za-z0-9]{1,31}$"),
            op_start: re(r"^[A-Za-z0-9]+: opCount "),
            known_op_start: re(&format!(r"^(?:{OP_NAMES})(?::| \[Symmetric\])")),
            tuning: re(
                r"^(?:(?P<op>[A-Za-z0-9]+)(?P<sym> \[Symmetric\])?: )?(?P<bytes>\d+) Bytes -> (?:Algo (?P<algo>\w+) proto (?P<proto>\w+)(?: time [\d.]+| channel\{Lo\.\.Hi\}=\{(?P<lo>\d+)\.\.(?P<hi>\d+)\})|Kernel (?P<kernel>\S+)(?P<ktail>(?: \w+ \d+)*))$",
            ),
            tuning_start: re(r"^(?:[A-Za-z0-9]+(?: \[Symmetric\])?: )?\d+ Bytes ->"),
            kernel_channels: re(r" nchannels (\d+)\b"),
            comm_line: re(
                r"^(?:(?P<func>\w+) )?comm (?P<comm>0x[0-9a-f]+) rank (?P<rank>\d+) n[Rr]anks (?P<nranks>\d+)(?P<rest>.*) - (?P<ev>Init COMPLETE|Init START)$",
            ),
            destroy: re(
                r"^(?:\w+ )?comm (?P<comm>0x[0-9a-f]+)(?: rank (?P<rank>\d+))?.* - (?P<ev>Destroy|Abort) COMPLETE$",
            ),
            comm_start: re(r"^(?:\w+ )?comm 0x[0-9a-f]+ rank \d+ n[Rr]anks \d+(?: cudaDev| nvmlDev| busId| commId| -|$)"),
            comm_summary: re(
                r"^comm (?P<comm>0x[0-9a-f]+) rank \d+ nRanks \d+ nNodes (?P<nodes>\d+)(?P<rest>.*)$",
            ),
            cuda_dev: re(r" cudaDev (\d+)\b"),
            nvml_dev: re(r" nvmlDev (\d+)\b"),
            bus_id: re(r" busId ([0-9a-fA-F]+)\b"),
            comm_id: re(r" commId (0x[0-9a-f]+)\b"),
            parent: re(r" parent (0x[0-9a-f]+)\b"),
            color: re(r" color (-?\d+)\b"),
            key: re(r" key (-?\d+)\b"),
            local_ranks: re(r" localRanks (\d+)\b"),
            local_rank: re(r" localRank (\d+)\b"),
            mnnvl: re(r" MNNVL (\d+)\b"),
            timings: re(
                r"^Init timings(?: - (?P<func>\w+))?: rank (?P<rank>\d+) nranks (?P<nranks>\d+) total (?P<total>[\d.]+) \((?P<phases>[^()]*)\)$",
            ),
            timings_start: re(r"^Init timings\b"),
            phase: re(r"^(\w+) ([\d.]+)$"),
            version: re(r"^(?:NCCL version |RCCL version +(?::\s*)?)(?P<v>\d\S*)"),
            // NCCL prints its banner bare; launchers put their prefix in front (`[1,0]<stdout>:`).
            bare_version: re(
                r"^(?:.*?[\s:\]>)])?(?:NCCL version |RCCL version +(?::\s*)?)(?P<v>\d\S*)",
            ),
            topo_header: re(
                r"^=== System : (?P<style>maxBw|maxWidth) (?P<max>[\d.]+)(?: (?:totalBw|totalWidth) (?P<total>[\d.]+))?(?: maxSpeed (?P<speed>[\d.]+))? ===$",
            ),
            topo_start: re(r"^=== System\b"),
            topo_root: re(r"^(?P<kind>[A-Z]+)/(?P<id>[0-9A-Za-z-]+) \((?P<attrs>[^()]*)\)$"),
            topo_link: re(
                r"^(?P<indent> *)\+ (?P<label>[A-Z0-9]+)\[(?P<bw>[\d.]+)\] - (?P<kind>[A-Z]+)/(?P<id>[0-9A-Za-z-]+)(?: \((?P<attrs>[^()]*)\))?$",
            ),
            topo_link_start: re(r"^ *\+ "),
            topo_end: re(r"^=+$"),
            ring_order: re(r"^Channel (?P<ch>\d+)(?:/(?P<n>\d+))? :(?P<order>(?: +\d+)+)$"),
            // Ranks only, one of them with something glued to it (`3xx`, `7h1:2:3`).
            ring_order_damaged: re(r"^Channel \d+(?:/\d+)? :(?: +\d[^\s\[]*)+$"),
            ring_neighbors: re(r"^Ring (?P<ch>\d+) : (?P<p>-?\d+) -> (?P<r>-?\d+) -> (?P<n>-?\d+)$"),
            summary: re(
                r"^(?P<coll>\d+) coll channels, (?:\d+ collnet channels, )?(?:(?P<nvls>\d+) nvls channels, )?(?P<p2p>\d+) p2p channels, \d+ p2p channels per peer$",
            ),
            rccl_summary: re(
                r"^comm:(?P<comm>0x[0-9a-f]+), nRanks:\d+, nNodes:\d+, coll channels:(?P<coll>\d+),? collnet channels:\d+, nvls channels:(?P<nvls>\d+), p2p channels:(?P<p2p>\d+), p2p channels per peer:\d+$",
            ),
            connection: re(
                r"^(?:Channel (?P<ch>\d+)(?:/\d+)?|Ring (?P<rch>\d+)) : (?P<a>\d+)\[(?P<ag>[^\]\s]*)\] -> (?P<b>\d+)\[(?P<bg>[^\]\s]*)\](?: \[(?P<dir>[^\]\s]+)\])? via (?P<via>\S.*)$",
            ),
            trees: re(r"^Trees(?P<parts>(?: \[\d+\] \S+)+)$"),
            // `[c] d/d/d->me->up`, and on split trees `|up->me->d/d/d` (the second tree).
            tree_part: re(&format!(
                r"^\[(?P<ch>\d+)\] (?P<down>{tree})->(?P<me>-?\d+)->(?P<up>-?\d+)(?:\|-?\d+->-?\d+->{tree})?$"
            )),
            trees_start: re(r"^Trees "),
            old_tree: re(&format!(
                r"^Tree (?P<ch>\d+) : (?P<up>-?\d+) -> (?P<me>-?\d+) -> (?P<down>{tree})$"
            )),
        }
    })
}

fn hex(s: &str) -> u64 {
    if s == "(nil)" {
        return 0;
    }
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_else(|e| panic!("hex {s:?}: {e}"))
}

fn num<T: std::str::FromStr>(s: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    s.parse().unwrap_or_else(|e| panic!("number {s:?}: {e:?}"))
}

fn op_of(c: &regex::Captures<'_>) -> Op {
    Op {
        name: c["op"].to_string(),
        op_count: hex(&c["oc"]),
        sendbuff: hex(&c["sb"]),
        recvbuff: hex(&c["rb"]),
        count: num(&c["count"]),
        datatype: num(&c["dt"]),
        red_op: num(&c["redop"]),
        root: num(&c["root"]),
        comm: hex(&c["comm"]),
        nranks: num(&c["nranks"]),
        stream: hex(&c["stream"]),
        acc: c.name("acc").map(|m| hex(m.as_str())),
        rccl_task: c.name("task").map(|m| num(m.as_str())),
        rccl_global_rank: c.name("gr").map(|m| num(m.as_str())),
    }
}

/// The value `re` (one group) finds in `text`.
fn field(re: &Regex, text: &str) -> Option<String> {
    re.captures(text).map(|m| m[1].to_string())
}

fn comm_of(c: &regex::Captures<'_>) -> Comm {
    let r = res();
    let rest = &c["rest"];
    let get = |re: &Regex| field(re, rest);
    Comm {
        func: c.name("func").map(|m| m.as_str().to_string()),
        comm: hex(&c["comm"]),
        rank: num(&c["rank"]),
        nranks: num(&c["nranks"]),
        cuda_dev: get(&r.cuda_dev).map(|v| num(&v)),
        nvml_dev: get(&r.nvml_dev).map(|v| num(&v)),
        bus_id: get(&r.bus_id),
        comm_id: get(&r.comm_id).map(|v| hex(&v)),
        parent: get(&r.parent).map(|v| hex(&v)),
        color: get(&r.color).map(|v| num(&v)),
        key: get(&r.key).map(|v| num(&v)),
    }
}

fn downs(s: &str) -> Vec<i64> {
    s.split('/').map(num).collect()
}

/// Every channel of a `Trees` line; `None` when a part is not whole.
fn trees_of(parts: &str) -> Option<Vec<TreeLine>> {
    let r = res();
    let mut out = Vec::new();
    let mut words = parts.split_whitespace();
    while let Some(ch) = words.next() {
        let part = format!("{ch} {}", words.next()?);
        let c = r.tree_part.captures(&part)?;
        out.push(TreeLine {
            channel: num(&c["ch"]),
            up: num(&c["up"]),
            rank: num(&c["me"]),
            down: downs(&c["down"]),
        });
    }
    Some(out)
}

/// The family of one body (after `NCCL INFO `, leading spaces kept, trailing ones gone).
///
/// The families are tried in a fixed order (the first pattern that matches wins), in four
/// groups: calls and tuning, communicator set-up, topology, channels.
pub fn body(b: &str) -> Body {
    let r = res();
    let t = b.trim_start();
    call_body(r, t)
        .or_else(|| comm_body(r, t))
        .or_else(|| topology_body(r, b, t))
        .or_else(|| channel_body(r, t))
        .unwrap_or_else(|| {
            if r.known_op_start.is_match(t) {
                Body::Truncated("per-collective or tuning")
            } else {
                Body::Other
            }
        })
}

/// A per-collective or tuning line, whole or cut.
fn call_body(r: &Res, t: &str) -> Option<Body> {
    if let Some(c) = r.op.captures(t) {
        if !r.op_name.is_match(&c["op"]) {
            return Some(Body::UnknownOp);
        }
        return Some(Body::Op(op_of(&c)));
    }
    if r.op_start.is_match(t) {
        return Some(Body::Truncated("per-collective"));
    }
    if let Some(c) = r.tuning.captures(t) {
        let text = |n: &str| c.name(n).map(|m| m.as_str().to_string());
        return Some(Body::Tuning(Tuning {
            op: text("op"),
            symmetric: c.name("sym").is_some(),
            bytes: num(&c["bytes"]),
            algo: text("algo"),
            proto: text("proto"),
            channels: text("lo").zip(text("hi")).map(|(l, h)| (num(&l), num(&h))),
            kernel: text("kernel"),
            kernel_channels: text("ktail")
                .and_then(|k| field(&r.kernel_channels, &k))
                .map(|v| num(&v)),
        }));
    }
    if r.tuning_start.is_match(t) {
        return Some(Body::Truncated("tuning"));
    }
    None
}

/// A communicator's set-up and teardown: init, destroy, summary, timings, version.
fn comm_body(r: &Res, t: &str) -> Option<Body> {
    if let Some(c) = r.comm_line.captures(t) {
        let comm = comm_of(&c);
        return Some(if &c["ev"] == "Init COMPLETE" {
            Body::InitComplete(comm)
        } else {
            Body::InitStart(comm)
        });
    }
    if let Some(c) = r.destroy.captures(t) {
        return Some(Body::Destroy {
            comm: hex(&c["comm"]),
            rank: c.name("rank").map(|m| num(m.as_str())),
            abort: &c["ev"] == "Abort",
        });
    }
    if r.comm_start.is_match(t) {
        return Some(Body::Truncated("communicator"));
    }
    if let Some(c) = r.comm_summary.captures(t) {
        let rest = &c["rest"];
        let get = |re: &Regex| field(re, rest).map(|v| num(&v));
        return Some(Body::CommSummary(Layout {
            comm: hex(&c["comm"]),
            n_nodes: Some(num(&c["nodes"])),
            local_ranks: get(&r.local_ranks),
            local_rank: get(&r.local_rank),
            mnnvl: get(&r.mnnvl),
        }));
    }
    if let Some(c) = r.timings.captures(t) {
        let phases = c["phases"]
            .split(", ")
            .map(|p| {
                let m = r
                    .phase
                    .captures(p)
                    .unwrap_or_else(|| panic!("phase {p:?} of {t:?}"));
                (m[1].to_string(), num::<f64>(&m[2]))
            })
            .collect();
        return Some(Body::Timings(Timings {
            func: c.name("func").map(|m| m.as_str().to_string()),
            rank: num(&c["rank"]),
            nranks: num(&c["nranks"]),
            total: num(&c["total"]),
            phases,
        }));
    }
    if r.timings_start.is_match(t) {
        return Some(Body::Truncated("init timings"));
    }
    if let Some(c) = r.version.captures(t) {
        return Some(Body::Version(c["v"].to_string()));
    }
    None
}

/// A line of the topology dump (`b` keeps the leading spaces: their depth is the tree's).
fn topology_body(r: &Res, b: &str, t: &str) -> Option<Body> {
    if let Some(c) = r.topo_header.captures(t) {
        return Some(Body::TopoHeader {
            bw: &c["style"] == "maxBw",
            max: num(&c["max"]),
            total: c.name("total").map(|m| num(m.as_str())),
            speed: c.name("speed").map(|m| num(m.as_str())),
        });
    }
    if r.topo_start.is_match(t) {
        return Some(Body::Truncated("topology header"));
    }
    if let Some(c) = r.topo_link.captures(b) {
        return Some(Body::TopoLink {
            indent: c["indent"].len(),
            label: c["label"].to_string(),
            bw: num(&c["bw"]),
            kind: c["kind"].to_string(),
            id: c["id"].to_string(),
            attrs: c.name("attrs").map(|m| m.as_str().to_string()),
        });
    }
    if r.topo_link_start.is_match(b) {
        return Some(Body::TopoLinkDamaged);
    }
    if let Some(c) = r.topo_root.captures(t) {
        return Some(Body::TopoRoot {
            kind: c["kind"].to_string(),
            id: c["id"].to_string(),
            attrs: Some(c["attrs"].to_string()),
        });
    }
    if r.topo_end.is_match(t) {
        return Some(Body::TopoEnd);
    }
    None
}

/// A channel line: connections, rings, trees, channel summaries.
fn channel_body(r: &Res, t: &str) -> Option<Body> {
    if let Some(c) = r.connection.captures(t) {
        let ch = c.name("ch").or(c.name("rch")).expect("a channel");
        return Some(Body::Connection(Conn {
            channel: num(ch.as_str()),
            from: num(&c["a"]),
            from_gpu: c["ag"].to_string(),
            to: num(&c["b"]),
            to_gpu: c["bg"].to_string(),
            direction: c.name("dir").map(|m| m.as_str().to_string()),
            via: c["via"].to_string(),
        }));
    }
    if let Some(c) = r.ring_order.captures(t) {
        return Some(Body::RingOrder {
            channel: num(&c["ch"]),
            nchannels: c.name("n").map(|m| num(m.as_str())),
            order: c["order"].split_whitespace().map(num).collect(),
        });
    }
    if r.ring_order_damaged.is_match(t) {
        return Some(Body::Truncated("ring order"));
    }
    if let Some(c) = r.ring_neighbors.captures(t) {
        return Some(Body::RingNeighbors {
            channel: num(&c["ch"]),
            prev: num(&c["p"]),
            rank: num(&c["r"]),
            next: num(&c["n"]),
        });
    }
    if let Some(c) = r.trees.captures(t) {
        if let Some(trees) = trees_of(&c["parts"]) {
            return Some(Body::Tree(trees));
        }
    }
    if r.trees_start.is_match(t) {
        return Some(Body::Truncated("tree"));
    }
    if let Some(c) = r.old_tree.captures(t) {
        return Some(Body::Tree(vec![TreeLine {
            channel: num(&c["ch"]),
            up: num(&c["up"]),
            rank: num(&c["me"]),
            down: downs(&c["down"]),
        }]));
    }
    if let Some(c) = r.summary.captures(t) {
        return Some(Body::ChannelSummary {
            comm: None,
            coll: num(&c["coll"]),
            nvls: c.name("nvls").map(|m| num(m.as_str())),
            p2p: num(&c["p2p"]),
        });
    }
    if let Some(c) = r.rccl_summary.captures(t) {
        return Some(Body::ChannelSummary {
            comm: Some(hex(&c["comm"])),
            coll: num(&c["coll"]),
            nvls: Some(num(&c["nvls"])),
            p2p: num(&c["p2p"]),
        });
    }
    None
}

/// One line, without its `\n` (a `\r` before it and trailing blanks are dropped here).
pub fn line(raw: &str) -> Kind {
    let r = res();
    let l = raw.trim_end();
    if l.trim_start().is_empty() {
        return Kind::Blank;
    }
    let markers: Vec<regex::Captures<'_>> = r.marker.captures_iter(l).collect();
    let Some(m) = markers.last() else {
        if let Some(c) = r.bare_version.captures(l) {
            return Kind::BareVersion(c["v"].to_string());
        }
        if let Some(at) = l.find(": opCount ") {
            // The op name is the word right before `: opCount`.
            let start = l[..at]
                .rfind(|c: char| !c.is_ascii_alphanumeric())
                .map_or(0, |i| i + 1);
            if let Some(c) = r.op.captures(&l[start..]) {
                return Kind::HeaderlessOp(op_of(&c));
            }
        }
        return Kind::Foreign;
    };
    let whole = m.get(0).expect("match");
    let head = &l[..whole.start()];
    let h = r
        .head
        .captures(head)
        .expect("the head pattern accepts any text");
    let origin = h.name("host").map(|host| Origin {
        host: host.as_str().to_string(),
        pid: num(&h["pid"]),
        tid: num(&h["tid"]),
    });
    let timestamp = r.timestamp.captures(&h["pre"]).map(|c| c["ts"].to_string());
    let first_host = match markers.first() {
        Some(f) if markers.len() > 1 => {
            let before = &l[..f.get(0).expect("match").start()];
            r.head
                .captures(before)
                .and_then(|c| c.name("host").map(|h| h.as_str().to_string()))
        }
        _ => None,
    };
    let warn = &m["lvl"] == "WARN";
    let rest = &l[whole.end()..];
    let head = Head {
        origin,
        dev: num(&m["dev"]),
        warn,
        timestamp,
        merged: markers.len() > 1,
        first_host,
    };
    let b = if warn {
        Body::Warn(rest.trim_start().to_string())
    } else {
        body(rest)
    };
    Kind::Nccl(head, b)
}

/// Every line of a file: split at `\n`; a last line without one counts.
pub fn read(bytes: &[u8]) -> Vec<Line> {
    let text = String::from_utf8_lossy(bytes);
    let mut pieces: Vec<&str> = text.split('\n').collect();
    if text.ends_with('\n') || text.is_empty() {
        pieces.pop();
    }
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, l)| Line {
            no: i as u64 + 1,
            kind: line(l),
        })
        .collect()
}
