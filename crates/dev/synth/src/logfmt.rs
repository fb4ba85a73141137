//! NCCL debug-log text, exactly as each NCCL version prints it. Why: the ingest side is tested
//! against these files, and its real-world accuracy depends on the shapes matching real logs
//! (see `shared/fixtures/real/nccl`).

use ::model::{Algo, OpType, Proto};
use serde::{Deserialize, Serialize};

/// An NCCL version `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32, pub u32);

impl Version {
    pub fn parse(s: &str) -> Version {
        let mut it = s.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        Version(
            it.next().unwrap_or(2),
            it.next().unwrap_or(0),
            it.next().unwrap_or(0),
        )
    }
    pub fn at_least(self, minor: u32) -> bool {
        self >= Version(2, minor, 0)
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// One release of every NCCL minor version the generator speaks, 2.18–2.28 (any other
/// `2.x.y` string parses too and gets the formats of its minor version). Formats change at:
/// 2.19 kernels `ncclKernel_*` → `ncclDevKernel_*`; 2.20 tuning lines appear (`N Bytes -> Algo
/// a proto p time t`); 2.21 Send prints `sendbuff (nil)`, topology ids `0-…`; 2.22 kernels take
/// `ncclDevKernelArgsStorage<4096>`, Init COMPLETE names `ncclCommInitRank`; 2.23 tuning lines
/// name the collective; 2.24 they print algorithm/protocol names and a channel range.
pub const NCCL_VERSIONS: [&str; 11] = [
    "2.18.3", "2.19.3", "2.20.5", "2.21.5", "2.22.3", "2.23.4", "2.24.3", "2.25.1", "2.26.2",
    "2.27.5", "2.28.3",
];

/// The program that started the ranks, which tags every line of their output (the shapes of
/// `THESIS-NOTES.md` §1 and `ingest-nccl`'s `prefix.rs`; `srun -l` in the awslabs fixture).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// Output as NCCL writes it.
    #[default]
    None,
    /// `torchrun --tee 3` (`[default<local rank>]:`, glued to the line).
    Torchrun,
    /// `srun -l` (`<task id>: `).
    Srun,
    /// OpenMPI `mpirun --tag-output` (`[<job>,<rank>]<stdout>:`, glued).
    Mpirun,
    /// `torchrun --tee 3` with the global rank (`[rank<global rank>]:`, glued; PyTorch 2.2+).
    #[serde(rename = "torchrun-rank")]
    TorchrunRank,
    /// Ray Train's worker prefix (`(RayTrainWorker pid=…, ip=…) `); the pid and node address
    /// come from the process ([`crate::realism::launcher_tag`]).
    Ray,
    /// `pdsh` (`<host>: `), the host from the process ([`crate::realism::launcher_tag`]).
    Pdsh,
}

impl Launcher {
    /// The launchers the generator always had (tests rotate through these; their outputs are
    /// pinned).
    pub const ALL: [Launcher; 4] = [
        Launcher::None,
        Launcher::Torchrun,
        Launcher::Srun,
        Launcher::Mpirun,
    ];

    /// Every launcher, the realism matrix's ones included.
    pub const EVERY: [Launcher; 7] = [
        Launcher::None,
        Launcher::Torchrun,
        Launcher::Srun,
        Launcher::Mpirun,
        Launcher::TorchrunRank,
        Launcher::Ray,
        Launcher::Pdsh,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Launcher::None => "none",
            Launcher::Torchrun => "torchrun",
            Launcher::Srun => "srun",
            Launcher::Mpirun => "mpirun",
            Launcher::TorchrunRank => "torchrun-rank",
            Launcher::Ray => "ray",
            Launcher::Pdsh => "pdsh",
        }
    }

    pub fn parse(s: &str) -> Option<Launcher> {
        Launcher::EVERY.into_iter().find(|l| l.name() == s)
    }

    /// The tag in front of every line of the process with this global and local rank (Ray's
    /// and pdsh's also name the process's pid and node: [`crate::realism::launcher_tag`]; here
    /// they are a placeholder of their shape).
    pub fn tag(self, global_rank: u32, local_rank: u32) -> String {
        match self {
            Launcher::None => String::new(),
            Launcher::Torchrun => format!("[default{local_rank}]:"),
            Launcher::Srun => format!("{global_rank}: "),
            Launcher::Mpirun => format!("[1,{global_rank}]<stdout>:"),
            Launcher::TorchrunRank => format!("[rank{global_rank}]:"),
            Launcher::Ray => "(RayTrainWorker pid=0, ip=10.0.0.10) ".into(),
            Launcher::Pdsh => "node: ".into(),
        }
    }
}

/// Who prints: `host:pid:tid [cudaDev]`, behind the launcher's tag.
#[derive(Debug, Clone)]
pub struct Printer {
    pub host: String,
    pub pid: u32,
    pub dev: u32,
    /// The launcher's tag ([`Launcher::tag`]), empty without one.
    pub tag: String,
    /// How a stamp is printed (`%s.%6f ` unless a realism knob says otherwise).
    pub stamp: crate::realism::StampFormat,
    /// The node's zone, minutes east of UTC (local stamp formats).
    pub zone_min: i32,
    /// How far the node's clock, which stamps the log, is off the true time.
    pub skew_ns: i64,
}

impl Printer {
    /// `host:pid:tid [dev] NCCL INFO ` with an optional `%s.%6f ` epoch timestamp, behind the
    /// launcher's tag (which wraps NCCL's whole output line, timestamp included).
    pub fn prefix(&self, tid: u32, ts_ns: Option<i64>) -> String {
        use std::fmt::Write;
        // Called for every line: one allocation, room for a typical body too.
        let mut s = String::with_capacity(self.host.len() + self.tag.len() + 200);
        s.push_str(&self.tag);
        match (ts_ns.map(|t| t + self.skew_ns), self.stamp) {
            (None, _) => {}
            (Some(t), crate::realism::StampFormat::Epoch) => {
                let _ = write!(
                    s,
                    "{}.{:06} ",
                    t / 1_000_000_000,
                    (t % 1_000_000_000) / 1000
                );
            }
            (Some(t), format) => s.push_str(&crate::realism::stamp(format, t, self.zone_min)),
        }
        let _ = write!(
            s,
            "{}:{}:{} [{}] NCCL INFO ",
            self.host, self.pid, tid, self.dev
        );
        s
    }
}

/// Pointer as NCCL prints `%p`: `(nil)` for null.
pub fn ptr(p: u64) -> String {
    if p == 0 {
        "(nil)".into()
    } else {
        format!("0x{p:x}")
    }
}

/// The per-collective line body (after the prefix), `src/enqueue.cc`.
#[allow(clippy::too_many_arguments)]
pub fn op_line(
    v: Version,
    op: OpType,
    op_count: u64,
    buf: u64,
    buf2: u64,
    count: u64,
    datatype: u32,
    redop: u32,
    root: u32,
    comm: u64,
    nranks: u32,
    stream: u64,
) -> String {
    // Point-to-point: before 2.21 Send printed its buffer as sendbuff; from 2.21 both print it
    // as recvbuff with sendbuff (nil) (fixture issue1593 vs issue584).
    let (send, recv) = match op {
        OpType::Send if !v.at_least(21) => (buf, 0),
        OpType::Send | OpType::Recv => (0, buf),
        _ => (buf, buf2),
    };
    format!(
        "{}: opCount {:x} sendbuff {} recvbuff {} count {} datatype {} op {} root {} comm {} [nranks={}] stream {}",
        op.name(),
        op_count,
        ptr(send),
        ptr(recv),
        count,
        datatype,
        redop,
        root,
        ptr(comm),
        nranks,
        ptr(stream)
    )
}

/// The tuning line for a collective, in the version's format (none before 2.20).
pub fn tuning_line(
    v: Version,
    op: OpType,
    bytes: u64,
    algo: Algo,
    proto: Proto,
    nch: u32,
    time_us: f64,
) -> Option<String> {
    if !v.at_least(20) {
        return None;
    }
    let algo_code = Algo::ALL.iter().position(|a| *a == algo).unwrap_or(1);
    let proto_code = match proto {
        Proto::LL => 0,
        Proto::LL128 => 1,
        Proto::Simple => 2,
    };
    Some(if v.at_least(24) {
        format!(
            "{}: {} Bytes -> Algo {} proto {} channel{{Lo..Hi}}={{0..{}}}",
            op.name(),
            bytes,
            algo.name(),
            proto.name(),
            nch.saturating_sub(1)
        )
    } else if v.at_least(23) {
        format!(
            "{}: {} Bytes -> Algo {} proto {} time {:.6}",
            op.name(),
            bytes,
            algo_code,
            proto_code,
            time_us
        )
    } else {
        format!(
            "{} Bytes -> Algo {} proto {} time {:.6}",
            bytes, algo_code, proto_code, time_us
        )
    })
}

/// The tuning line of a collective run by a symmetric kernel (2.27+, `enqueue.cc`:
/// `%s [Symmetric]: %ld Bytes -> Kernel %s nchannels %d nthreads %d`, bytes = count × type size,
/// kernel = its id as `ncclSymKernelIdToString` prints it). 2.28 moved it to the symmetric
/// scheduler, which adds `nWorks %d` and prints on rank 0 only: None for other ranks there.
pub fn sym_tuning_line(
    v: Version,
    op: OpType,
    bytes: u64,
    kernel_id: &str,
    nch: u32,
    rank: u32,
) -> Option<String> {
    let head = format!(
        "{} [Symmetric]: {bytes} Bytes -> Kernel {kernel_id} nchannels {nch} nthreads 512",
        op.name()
    );
    if v.at_least(28) {
        (rank == 0).then(|| format!("{head} nWorks 1"))
    } else {
        Some(head)
    }
}

/// The `Init COMPLETE` line of one communicator on one process.
#[allow(clippy::too_many_arguments)]
pub fn init_complete(
    v: Version,
    comm: u64,
    rank: u32,
    nranks: u32,
    dev: u32,
    bus_id: u64,
    comm_id: u64,
) -> String {
    init_complete_dev(v, comm, rank, nranks, dev, dev, bus_id, comm_id)
}

/// [`init_complete`] of a process whose CUDA device (`cudaDev`, 0 for every process under
/// `CUDA_VISIBLE_DEVICES` isolation) is not its NVML device (`nvmlDev`, the node's index).
#[allow(clippy::too_many_arguments)]
pub fn init_complete_dev(
    v: Version,
    comm: u64,
    rank: u32,
    nranks: u32,
    dev: u32,
    nvml_dev: u32,
    bus_id: u64,
    comm_id: u64,
) -> String {
    let func = if v.at_least(22) {
        "ncclCommInitRank "
    } else {
        ""
    };
    // nvmlDev joined the line in 2.18 (fixture issue350, 2.16.5, has none).
    let nvml = if v.at_least(18) {
        format!(" nvmlDev {nvml_dev}")
    } else {
        String::new()
    };
    format!(
        "{func}comm {} rank {rank} nranks {nranks} cudaDev {dev}{nvml} busId {bus_id:x} commId 0x{comm_id:x} - Init COMPLETE",
        ptr(comm)
    )
}

/// `Init START` (2.18+), the same fields.
pub fn init_start(
    comm: u64,
    rank: u32,
    nranks: u32,
    dev: u32,
    bus_id: u64,
    comm_id: u64,
) -> String {
    init_start_dev(comm, rank, nranks, dev, dev, bus_id, comm_id)
}

/// [`init_start`] with its own `nvmlDev` (see [`init_complete_dev`]).
pub fn init_start_dev(
    comm: u64,
    rank: u32,
    nranks: u32,
    dev: u32,
    nvml_dev: u32,
    bus_id: u64,
    comm_id: u64,
) -> String {
    format!(
        "comm {} rank {rank} nranks {nranks} cudaDev {dev} nvmlDev {nvml_dev} busId {bus_id:x} commId 0x{comm_id:x} - Init START",
        ptr(comm)
    )
}

/// A node id in the topology dump: `0-1000` from 2.21, bare `1000` before.
fn node_id(v: Version, id: u64) -> String {
    if v.at_least(21) {
        format!("0-{id:x}")
    } else {
        format!("{id:x}")
    }
}

/// The topology dump of one node (§4.2.1 listing 4.3).
pub fn topology(
    v: Version,
    bus_ids: &[u64],
    local: u32,
    nvlink: f64,
    net: f64,
    multi_node: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let bw = if v.at_least(14) { "maxBw" } else { "maxWidth" };
    let total = if v.at_least(14) {
        "totalBw"
    } else {
        "totalWidth"
    };
    out.push(format!(
        "=== System : {bw} {nvlink:.1} {total} {:.1} ===",
        nvlink * (bus_ids.len().max(2) - 1) as f64
    ));
    out.push(format!("CPU/{} (1/1/1)", node_id(v, 0)));
    for (i, b) in bus_ids.iter().enumerate() {
        out.push(format!("+ PCI[24.0] - GPU/{} ({i})", node_id(v, *b)));
        for (j, o) in bus_ids.iter().enumerate() {
            if j != i {
                out.push(format!(
                    "              + NVL[{nvlink:.1}] - GPU/{}",
                    node_id(v, *o)
                ));
            }
        }
    }
    if multi_node {
        out.push(format!("+ PCI[24.0] - NIC/{}", node_id(v, 0xd1000)));
        out.push(format!(
            "              + NET[{net:.1}] - NET/{} (7a852d0003f6ceb8/1/{net:.6})",
            node_id(v, 0)
        ));
    }
    out.push("==========================================".into());
    let _ = local;
    out
}

/// Ring/tree/channel lines for one communicator on one member. `ranks_bus`: per member, its
/// global rank and what the connection lines print in brackets (busId, or device from 2.19).
/// `order`: the ring's communicator ranks in ring order (every channel the same); the tree of
/// each channel is the chain along it. `next_remote` / `prev_remote`: the ring successor /
/// predecessor is on another node (network transport, printed as `[send]` / `[receive]` lines,
/// issue128 and issue350; not P2P/IPC).
pub fn channels(
    v: Version,
    ranks_bus: &[(u32, u64)],
    order: &[usize],
    me: usize,
    nch: u32,
    next_remote: bool,
    prev_remote: bool,
) -> Vec<String> {
    let n = ranks_bus.len();
    let mut out = Vec::new();
    for c in 0..nch {
        let line: String = order.iter().map(|r| format!("{r:>4}")).collect();
        out.push(format!("Channel {c:02}/{nch:02} : {line}"));
    }
    let at = order.iter().position(|&r| r == me).unwrap_or(0);
    let prev = order[(at + n - 1) % n];
    let next = order[(at + 1) % n];
    for c in 0..nch {
        out.push(format!("Ring {c:02} : {prev} -> {me} -> {next}"));
    }
    let parent = if at == 0 { -1 } else { order[at - 1] as i64 };
    let child = if at + 1 < n { order[at + 1] as i64 } else { -1 };
    let trees: Vec<String> = (0..nch)
        .map(|c| format!("[{c}] {child}/-1/-1->{me}->{parent}"))
        .collect();
    out.push(format!("Trees {}", trees.join(" ")));
    out.push("P2P Chunksize set to 131072".into());
    if n > 1 {
        for c in 0..nch {
            let (_, b) = ranks_bus[me];
            let (_, nb) = ranks_bus[next];
            if prev_remote {
                let (_, pb) = ranks_bus[prev];
                out.push(format!(
                    "Channel {c:02}/0 : {prev}[{pb:x}] -> {me}[{b:x}] [receive] via NET/IB/0/GDRDMA"
                ));
            }
            let via = if next_remote {
                "[send] via NET/IB/0/GDRDMA"
            } else {
                "via P2P/IPC/read"
            };
            out.push(format!(
                "Channel {c:02}/0 : {me}[{b:x}] -> {next}[{nb:x}] {via}"
            ));
        }
    }
    out.push("Connected all rings".into());
    out.push("Connected all trees".into());
    out.push("threadThresholds 8/8/64 | 32/8/64 | 512 | 512".into());
    if v.at_least(20) {
        out.push(format!("{nch} coll channels, 0 collnet channels, 0 nvls channels, {nch} p2p channels, 2 p2p channels per peer"));
    } else {
        out.push(format!(
            "{nch} coll channels, {nch} p2p channels, 2 p2p channels per peer"
        ));
    }
    out
}

/// Whether a line of [`channels`] names a route (a ring order, ring neighbours, trees or a
/// connection): what a log without ring lines lacks.
pub fn is_route_line(line: &str) -> bool {
    line.starts_with("Ring ")
        || line.starts_with("Trees ")
        || (line.starts_with("Channel ") && (line.contains(" via ") || !line.contains('[')))
}
