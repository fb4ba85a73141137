//! The `NCCL_DEBUG_SUBSYS=ALL` chatter around communicator init: environment echo, the
//! per-communicator summary, proxy service/progress threads, allocations, tuner plugin and init
//! timings. Why: the parser sees these lines in every real SUBSYS=ALL log and must skip or use
//! them; a generator that prints only the lines the analyzer needs would never test that.
//!
//! Every shape is copied from a line of a real log in `shared/fixtures/real/nccl` (named at each
//! function, version in parentheses); `tests/chatter.rs` checks each generated shape against
//! them. Lines with no real example (`P2P/CUMEM`, `/dev/shm` allocations, `Destroy COMPLETE`)
//! are left out.

use crate::logfmt::Version;
use crate::rng::Rng;

/// Which thread prints a line: NCCL's init (or main) thread, or the communicator's proxy
/// service thread (real logs show both tids interleaved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thread {
    Main,
    Proxy,
}

/// One chatter line: its time offset (ns) inside the window it belongs to, thread and body.
pub type Line = (i64, Thread, String);

/// Lines a process prints once, before its first communicator.
/// `NCCL_SOCKET_IFNAME set by environment to enp179s0f0` (issue1038, 2.18.3; issue1646, 2.25.1).
pub fn process_start(iface: &str) -> Vec<String> {
    vec![format!("NCCL_SOCKET_IFNAME set by environment to {iface}")]
}

/// `comm 0x87952f0 rank 6 nRanks 8 nNodes 1 localRanks 8 localRank 6 MNNVL 0` (issue1410,
/// ≥ 2.20; the grpo notes, 2.19–2.23), printed before the channel lines. None before 2.20.
pub fn comm_summary(
    v: Version,
    comm: &str,
    rank: u32,
    nranks: u32,
    nnodes: u32,
    local_ranks: u32,
    local_rank: u32,
) -> Option<String> {
    v.at_least(20).then(|| {
        format!(
            "comm {comm} rank {rank} nRanks {nranks} nNodes {nnodes} localRanks {local_ranks} localRank {local_rank} MNNVL 0"
        )
    })
}

fn hex_ptr(rng: &mut Rng, base: u64) -> String {
    format!("0x{:x}", base + (rng.range(0x100, 0xf_ffff) << 4))
}

/// One proxy connection, as the 2.27.5 SUBSYS=ALL log (`…_subsysALL-init-coll_2.27.5_c.log`)
/// interleaves it: the proxy thread accepts the connection and answers, the main thread polls
/// for the answer; a P2P connection then allocates its shareable buffer (2.27+). `send`: a send
/// or receive connection (`New proxy recv connection`, issue350, 2.16.5). `transport`: 0 P2P,
/// 2 NET. `peer_local`: local rank the connection comes from.
pub fn proxy_connection(
    v: Version,
    rng: &mut Rng,
    index: u32,
    send: bool,
    peer_local: u32,
    transport: u32,
) -> Vec<Line> {
    let op_id = hex_ptr(rng, 0x55d0_0000_0000);
    let req = hex_ptr(rng, 0x7f10_0000_0000);
    let conn = hex_ptr(rng, 0x7f90_0000_0000);
    let dir = if send { "send" } else { "recv" };
    let mut out: Vec<Line> = vec![
        (
            0,
            Thread::Proxy,
            format!("New proxy {dir} connection {index} from local rank {peer_local}, transport {transport}"),
        ),
        (
            20_000,
            Thread::Proxy,
            format!("proxyProgressAsync opId={op_id} op.type=1 op.reqBuff={req} op.respSize=16 done"),
        ),
        (
            25_000,
            Thread::Main,
            format!("ncclPollProxyResponse Received new opId={op_id}"),
        ),
        (
            30_000,
            Thread::Proxy,
            "Received and initiated operation=Init res=0".into(),
        ),
        (
            35_000,
            Thread::Main,
            format!("resp.opId={op_id} matches expected opId={op_id}"),
        ),
        (
            40_000,
            Thread::Main,
            format!("Connected to proxy localRank {peer_local} -> connection {conn}"),
        ),
    ];
    if transport == 0 && v.at_least(27) {
        let buf = format!(
            "0x{:x}",
            0x7f00_0000_0000u64 + (rng.range(0x100, 0xfff) << 24)
        );
        let ipc = hex_ptr(rng, 0x7f30_0000_0000);
        out.extend([
            (
                60_000,
                Thread::Proxy,
                format!("Allocated shareable buffer {buf} size 33554432 ipcDesc {ipc}"),
            ),
            (
                65_000,
                Thread::Proxy,
                format!(
                    "proxyProgressAsync opId={op_id} op.type=2 op.reqBuff={req} op.respSize=0 done"
                ),
            ),
            (
                70_000,
                Thread::Main,
                format!("ncclPollProxyResponse Received new opId={op_id}"),
            ),
            (
                75_000,
                Thread::Proxy,
                "Received and initiated operation=SharedInit res=0".into(),
            ),
            (
                80_000,
                Thread::Main,
                format!("resp.opId={op_id} matches expected opId={op_id}"),
            ),
        ]);
    }
    out
}

/// The main thread's allocations and plugin lines after the connections (2.27.5 SUBSYS=ALL
/// log: `init.cc:491/501/502 Cuda Host Alloc`, `misc/utils.cc:233 memory stack hunk`, the
/// tuner plugin), and `CC Off, workFifoBytes N` (RCCL 2.27.7, which keeps NCCL's init.cc
/// line). Nothing before 2.27, whose line numbers we have no real example of.
pub fn after_connect(v: Version, rng: &mut Rng, first_comm: bool) -> Vec<String> {
    if !v.at_least(27) {
        return Vec::new();
    }
    let mut out = Vec::new();
    if first_comm {
        out.push("misc/utils.cc:233 memory stack hunk malloc(65536)".to_string());
    }
    let host = 0x7f20_0000_0000u64 + (rng.range(0x100, 0xfff) << 20);
    out.push(format!(
        "init.cc:491 Cuda Host Alloc Size 1048576 pointer 0x{:x}",
        host + 0x82000
    ));
    out.push(format!(
        "init.cc:501 Cuda Host Alloc Size 65536 pointer 0x{:x}",
        host + 0x10_e8e200
    ));
    out.push(format!(
        "init.cc:502 Cuda Host Alloc Size 65536 pointer 0x{:x}",
        host + 0x10_e9e200
    ));
    out.push("CC Off, workFifoBytes 1073741824".to_string());
    out.push("TUNER/Plugin: Could not find: libnccl-tuner.so. Using internal tuner plugin.".into());
    out
}

/// `[Proxy Progress] Device 1 CPU core 116` (tinygrad PR22, ≤ 2.23; RCCL 2.27.7), printed by the
/// proxy progress thread when it starts.
pub fn proxy_progress(dev: u32, core: u32) -> String {
    format!("[Proxy Progress] Device {dev} CPU core {core}")
}

/// The init timing line after `Init COMPLETE`: 2.22 `Init timings: rank 2 nranks 8 total 0.66
/// (kernels …)` (issue273); 2.23+ `Init timings - ncclCommInitRank: rank 15 nranks 16 total 1.53
/// (kernels 0.24, alloc 0.99, …)` (2.27.5 logs). None before 2.22. `total_s`: the init's length.
pub fn init_timings(
    v: Version,
    rng: &mut Rng,
    rank: u32,
    nranks: u32,
    total_s: f64,
) -> Option<String> {
    if !v.at_least(22) {
        return None;
    }
    // Split the total over the phases NCCL times; the shares are typical of the real lines
    // (kernels and alloc dominate, the rest is small).
    let names: &[&str] = if v.at_least(23) {
        &[
            "kernels",
            "alloc",
            "bootstrap",
            "allgathers",
            "topo",
            "graphs",
            "connections",
            "rest",
        ]
    } else {
        &[
            "kernels",
            "bootstrap",
            "allgathers",
            "topo",
            "graphs",
            "connections",
            "rest",
        ]
    };
    let weights: Vec<f64> = names
        .iter()
        .map(|n| match *n {
            "kernels" | "alloc" => rng.uniform(2.0, 6.0),
            "rest" => 0.0,
            _ => rng.uniform(0.0, 0.6),
        })
        .collect();
    let sum: f64 = weights.iter().sum::<f64>().max(1e-9);
    let parts: Vec<String> = names
        .iter()
        .zip(&weights)
        .map(|(n, w)| format!("{n} {:.2}", total_s * w / sum))
        .collect();
    let head = if v.at_least(23) {
        "Init timings - ncclCommInitRank:"
    } else {
        "Init timings:"
    };
    Some(format!(
        "{head} rank {rank} nranks {nranks} total {total_s:.2} ({})",
        parts.join(", ")
    ))
}
