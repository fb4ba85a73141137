//! A trace as the records the rest of ncclscope reads: one log operation per NCCL kernel whose
//! operation is known (what its NCCL log line would have said), one communicator init per
//! process group of the process, and the kernels themselves, with which operation each kernel
//! ran: a trace's kernels carry their meaning, so nothing has to be aligned.
//!
//! A process group becomes a communicator of this process: a made-up pointer (unique in the
//! process, as NCCL's are) and, as its `commId`, a hash of the group's name and ranks, which
//! every member's trace computes alike, so the members of one group are tied together across
//! traces as NCCL's own `commId` ties them in logs. A kernel whose trace names no group (traces
//! before PyTorch 2.3 record none) runs on the world group, an assumption said in a diagnostic.
//! The operation count of a call is its `Seq` where every call of the group has one, else its
//! place among the group's calls in this trace.

use crate::trace::{KinetoTrace, NcclKernel, PgConfig};
use model::log::{CommInit, LogOp, ProcessKey, SourceLine};
use model::nsys::Kernel;
use model::{Diagnostic, OpType, RedOp};
use std::collections::BTreeMap;

/// One process group of a trace, as a communicator of its process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRecord {
    /// The communicator pointer the records use for it (made up, unique in the process).
    pub comm: u64,
    /// The hash every member's trace gives it (the records' `commId`).
    pub comm_id: u64,
    /// PyTorch's name and description of it; `None` for the assumed world group.
    pub name: Option<String>,
    pub desc: Option<String>,
    /// Members' global ranks in group-rank order; empty when the trace does not say.
    pub ranks: Vec<u32>,
    pub size: u32,
    /// This process's rank in it, when known.
    pub rank: Option<u32>,
    /// The trace names no group for these kernels: taken as the world.
    pub assumed_world: bool,
    /// NCCL kernels on it in this trace.
    pub kernels: u64,
    /// Its operations' counts are PyTorch's `Seq` (every call had one; point-to-point calls,
    /// which PyTorch counts apart, with bit 40 set); else their order in this trace.
    pub by_seq: bool,
}

/// What [`records`] makes of one trace.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TraceRecords {
    pub ops: Vec<LogOp>,
    pub inits: Vec<CommInit>,
    /// The trace's NCCL kernels, in its (start) order.
    pub kernels: Vec<Kernel>,
    /// Per kernel, its operation's index in `ops`; `None` when nothing says what it did.
    pub op_of_kernel: Vec<Option<u32>>,
    pub groups: Vec<GroupRecord>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Which group a kernel ran on: its name, or the world's when the trace names none.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum GroupKey {
    World,
    Named(String),
}

/// The records of `trace` for `process`, whose records name file `file`.
pub fn records(trace: &KinetoTrace, process: &ProcessKey, file: u32) -> TraceRecords {
    let mut out = TraceRecords::default();
    let dist = trace.distributed.as_ref();
    let my_rank = dist.and_then(|d| d.rank);
    let world = dist.and_then(|d| d.world_size);
    let config = |name: &str| dist.and_then(|d| d.pg_config.iter().find(|g| g.name == name));
    // The world group: the configured group holding every rank, else one assumed.
    let world_group: Option<&PgConfig> = world.and_then(|w| {
        dist?
            .pg_config
            .iter()
            .filter(|g| g.is_nccl() && g.ranks.len() == w as usize)
            .min_by_key(|g| {
                (
                    g.desc.as_deref() != Some("default_pg"),
                    g.name.len(),
                    &g.name,
                )
            })
    });
    let key_of = |k: &NcclKernel| match &k.coll.pg_name {
        Some(n) => GroupKey::Named(n.to_string()),
        None => match world_group {
            Some(g) => GroupKey::Named(g.name.clone()),
            None => GroupKey::World,
        },
    };
    // Groups in a stable order (the world first), each with its kernels.
    let mut by_group: BTreeMap<GroupKey, Vec<usize>> = BTreeMap::new();
    if my_rank.is_some() && world.is_some() {
        let key = world_group.map_or(GroupKey::World, |g| GroupKey::Named(g.name.clone()));
        by_group.entry(key).or_default();
    }
    for (i, k) in trace.kernels.iter().enumerate() {
        by_group.entry(key_of(k)).or_default().push(i);
    }
    let mut op_of_kernel: Vec<Option<u32>> = vec![None; trace.kernels.len()];
    let mut unnamed = 0u64;
    for (g, (key, members)) in by_group.iter().enumerate() {
        let first = members.first().map(|&i| &trace.kernels[i]);
        let record = group_record(key, g, first, config, world, my_rank);
        if record.assumed_world {
            unnamed += members.len() as u64;
        }
        if let (Some(rank), false) = (my_rank, record.ranks.is_empty()) {
            if record.rank.is_none() {
                out.diagnostics.push(Diagnostic::warning(
                    &trace.path,
                    first.map_or(0, |k| k.line),
                    format!(
                        "rank {rank} is not among the ranks {:?} of process group {}: its rank in \
                         the group is unknown",
                        record.ranks,
                        record.name.as_deref().unwrap_or("(world)")
                    ),
                ));
            }
        }
        if let Some(rank) = record.rank {
            out.inits.push(CommInit {
                process: process.clone(),
                func: Some("torch.distributed process group".into()),
                comm: record.comm,
                rank,
                nranks: record.size,
                cuda_dev: first.map(|k| k.device),
                nvml_dev: None,
                bus_id: None,
                comm_id: Some(record.comm_id),
                split_parent: None,
                split_color: None,
                split_key: None,
                n_nodes: None,
                local_ranks: None,
                local_rank: None,
                mnnvl: None,
                source: SourceLine {
                    file,
                    line: dist.map_or(0, |d| d.line),
                },
            });
        }
        // `Seq` where every call of the group has one, else the order of the calls.
        let by_seq =
            !members.is_empty() && members.iter().all(|&i| trace.kernels[i].coll.seq.is_some());
        let mut ordinal = 0u64;
        for &i in members {
            let k = &trace.kernels[i];
            let Some(op) = k.coll.op else {
                continue;
            };
            let op_count = if by_seq {
                // Point-to-point calls have a sequence of their own in PyTorch.
                let seq = k.coll.seq.unwrap_or(0);
                if op.is_p2p() {
                    seq | 1 << 40
                } else {
                    seq
                }
            } else {
                ordinal
            };
            ordinal += 1;
            op_of_kernel[i] = Some(out.ops.len() as u32);
            out.ops
                .push(log_op(k, op, op_count, &record, process, file));
        }
        out.groups.push(GroupRecord {
            kernels: members.len() as u64,
            by_seq,
            ..record
        });
    }
    if unnamed > 0 {
        out.diagnostics.push(Diagnostic::warning(
            &trace.path,
            0,
            format!(
                "{unnamed} NCCL kernel(s) carry no process group (PyTorch recorded none before \
                 2.3): they are taken as the world group{}",
                world.map_or_else(String::new, |w| format!(" of {w} ranks (distributedInfo)"))
            ),
        ));
    }
    out.op_of_kernel = op_of_kernel;
    out.kernels = trace.kernels.iter().map(|k| kernel(k, process)).collect();
    out
}

/// A group's record: `g` its place (the pointer), `first` its first kernel (for what the
/// kernel's arguments say of it).
fn group_record<'a>(
    key: &GroupKey,
    g: usize,
    first: Option<&NcclKernel>,
    config: impl Fn(&str) -> Option<&'a PgConfig>,
    world: Option<u32>,
    my_rank: Option<u32>,
) -> GroupRecord {
    let comm = 0x6b69_6e65_0000 + g as u64;
    let (name, assumed_world) = match key {
        GroupKey::World => (None, true),
        GroupKey::Named(n) => (Some(n.clone()), false),
    };
    let cfg = name.as_deref().and_then(&config);
    let from_kernel = first.filter(|k| k.coll.pg_name.is_some()).map(|k| &k.coll);
    let ranks: Vec<u32> = from_kernel
        .and_then(|c| c.pg_ranks.as_deref().map(<[u32]>::to_vec))
        .filter(|r| !r.is_empty())
        .or_else(|| cfg.map(|c| c.ranks.clone()).filter(|r| !r.is_empty()))
        .or_else(|| assumed_world.then(|| (0..world.unwrap_or(0)).collect()))
        .unwrap_or_default();
    let size = from_kernel
        .and_then(|c| c.group_size)
        .or_else(|| cfg.and_then(|c| c.size))
        .or_else(|| (!ranks.is_empty()).then_some(ranks.len() as u32))
        .or(if assumed_world { world } else { None })
        .unwrap_or(1);
    let desc = from_kernel
        .and_then(|c| c.pg_desc.as_deref().map(str::to_string))
        .or_else(|| cfg.and_then(|c| c.desc.clone()));
    let rank = match my_rank {
        Some(r) if !ranks.is_empty() => ranks.iter().position(|&x| x == r).map(|p| p as u32),
        _ => None,
    };
    let id_text = format!(
        "torch.distributed group|{}|{:?}",
        name.as_deref().unwrap_or("(world)"),
        ranks
    );
    GroupRecord {
        comm,
        comm_id: fnv1a(id_text.as_bytes()),
        name,
        desc,
        ranks,
        size,
        rank,
        assumed_world,
        kernels: 0,
        by_seq: false,
    }
}

fn log_op(
    k: &NcclKernel,
    op: OpType,
    op_count: u64,
    group: &GroupRecord,
    process: &ProcessKey,
    file: u32,
) -> LogOp {
    let red = ingest_nsys::decode_kernel_name(&k.name).and_then(|n| n.red_op);
    LogOp {
        process: process.clone(),
        tid: k.launch.map_or(0, |l| l.tid),
        cuda_dev: k.device,
        op,
        op_count,
        sendbuff: 0,
        recvbuff: 0,
        count: k.coll.nccl_count().unwrap_or(0),
        datatype: k.coll.datatype,
        datatype_code: k.coll.datatype.map_or(u32::from(u8::MAX), |d| d.code()),
        red_op: red.unwrap_or(RedOp::Sum),
        root: k.coll.peer.unwrap_or(0),
        comm: group.comm,
        nranks: group.size,
        stream: u64::from(k.stream),
        timestamp_ns: None,
        algo: None,
        proto: None,
        nchannels: None,
        sym_kernel: None,
        rccl_task: None,
        rccl_global_rank: None,
        rccl_acc: None,
        source: SourceLine { file, line: k.line },
    }
}

fn kernel(k: &NcclKernel, process: &ProcessKey) -> Kernel {
    Kernel {
        pid: process.pid,
        start_ns: k.start_ns,
        end_ns: k.end_ns,
        device: k.device,
        stream: k.stream,
        correlation_id: k.correlation as u32,
        name: std::sync::Arc::clone(&k.name),
        grid: k.grid,
        block: k.block,
        static_shared_bytes: k.shared_memory,
        dynamic_shared_bytes: 0,
        registers_per_thread: k.registers_per_thread,
        local_memory_total: 0,
        launch_ns: k.launch.map(|l| l.start_ns),
        launch_tid: k.launch.map(|l| l.tid),
    }
}

/// FNV-1a, 64 bits: the same on every platform and in every build (unlike std's hashers).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
