//! Everything about one kernel the user picked on the timeline: the kernel's own row, the log
//! lines matched to it (with file and line), the alignment's confidence, and the same collective
//! instance on the other ranks (the members' kernels in synchronised time, the arrival skew and
//! the slowest rank).

use enrich::ClockSync;
use load::Session;
use model::log::{LogOp, ProcessKey};
use model::nsys::Kernel;
use pipeline::Analysis;
use pipeline::ProcessMatch;
use serde::{Deserialize, Serialize};

/// One log line matched to the kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineDetails {
    pub op: String,
    /// The communicator pointer as printed.
    pub comm: String,
    pub op_count: u64,
    pub count: u64,
    pub datatype: String,
    /// The log file's name and the 1-based line.
    pub file: String,
    pub line: u64,
}

/// One member of the collective instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberTiming {
    pub rank: u32,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// The picked kernel's collective on every rank that ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceDetails {
    /// The logical communicator's id (`0x<commId>` or `seq-<n>`) and size.
    pub comm_id: String,
    pub comm_size: u32,
    pub op_count: u64,
    /// Ascending by rank.
    pub members: Vec<MemberTiming>,
    /// Last start minus first start.
    pub arrival_skew_ns: i64,
    /// The last rank to start: the others waited for it.
    pub slowest_rank: u32,
}

/// What the details panel shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelDetails {
    pub rank: u32,
    pub host: String,
    pub pid: u32,
    pub device: u32,
    /// Index of the kernel in its process's aligned kernels (`ProcessMatch::kernels`).
    pub kernel_index: usize,
    pub kernel_name: String,
    pub stream: u32,
    pub correlation_id: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Synchronised time, and the time as the export has it.
    pub start_ns: i64,
    pub end_ns: i64,
    pub own_start_ns: i64,
    pub own_end_ns: i64,
    pub lines: Vec<LineDetails>,
    pub duplicates: usize,
    pub confidence: Option<f64>,
    pub instance: Option<InstanceDetails>,
}

/// The kernel of `process` on `device` that starts at `start_ns` on a timeline drawn with
/// `clocks` (the analysis's, or none for each rank's own clock): its times, and its
/// collective's members', are given in that clock; the arrival skew is always synchronised.
pub fn kernel_details(
    session: &Session,
    analysis: &Analysis,
    process: &ProcessKey,
    device: u32,
    start_ns: i64,
    clocks: &ClockSync,
) -> Option<KernelDetails> {
    let rank = global_rank(analysis, process)?;
    let pm = analysis
        .alignments
        .processes
        .iter()
        .find(|pm| &pm.process == process)?;
    let sync = |t: i64| clocks.to_sync(rank, t);
    let (i, k) = pm
        .kernels
        .iter()
        .enumerate()
        .find(|(_, k)| k.device == device && sync(k.start_ns) == start_ns)?;
    let m = pm.alignment.per_kernel.get(i);
    let ops: Vec<LogOp> = m
        .map(|m| m.lines().filter_map(|j| pm.log_ops.get(j)).collect())
        .unwrap_or_default();
    let file_name = |index: u32| {
        session
            .logs()
            .iter()
            .find(|l| l.parsed.file_index == index)
            .map_or_else(|| format!("file {index}"), |l| l.name.clone())
    };
    Some(KernelDetails {
        rank,
        host: process.host.to_string(),
        pid: process.pid,
        device,
        kernel_index: i,
        kernel_name: k.name.to_string(),
        stream: k.stream,
        correlation_id: k.correlation_id,
        grid: k.grid,
        block: k.block,
        start_ns: sync(k.start_ns),
        end_ns: sync(k.end_ns),
        own_start_ns: k.start_ns,
        own_end_ns: k.end_ns,
        lines: ops
            .iter()
            .map(|o| LineDetails {
                op: o.op.name().to_string(),
                comm: format!("0x{:x}", o.comm),
                op_count: o.op_count,
                count: o.count,
                datatype: o.datatype.map_or_else(
                    || format!("code {}", o.datatype_code),
                    |d| d.name().to_string(),
                ),
                file: file_name(o.source.file),
                line: o.source.line,
            })
            .collect(),
        duplicates: m.map_or(0, |m| m.duplicates.len()),
        confidence: m.map(|m| m.confidence),
        instance: ops
            .first()
            .and_then(|o| instance(analysis, process, o, clocks)),
    })
}

/// The members' kernels of the instance `op` belongs to: the same logical communicator and
/// opCount on every rank (NCCL counts opCount per communicator, the same on every member).
fn instance(
    analysis: &Analysis,
    process: &ProcessKey,
    op: &LogOp,
    clocks: &ClockSync,
) -> Option<InstanceDetails> {
    let comms = &analysis.communicators;
    let c = comms.comm_of(process, op.comm)?;
    let mut members = Vec::new();
    for pm in &analysis.alignments.processes {
        let Some(rank) = global_rank(analysis, &pm.process) else {
            continue;
        };
        if let Some(k) = kernel_of_call(analysis, pm, op.op_count, |d| d == c) {
            // Arrival is compared in synchronised time whatever clock the timeline shows.
            let arrival = analysis.clocks.to_sync(rank, k.start_ns);
            members.push((arrival, member(clocks, rank, &k)));
        }
    }
    members.sort_by_key(|(_, m)| m.rank);
    let first = members.iter().map(|(a, _)| *a).min()?;
    let (last_arrival, last) = members.iter().max_by_key(|(a, m)| (*a, m.rank))?;
    Some(InstanceDetails {
        comm_id: comms.comms[c].id.clone(),
        comm_size: comms.comms[c].size,
        op_count: op.op_count,
        arrival_skew_ns: last_arrival - first,
        slowest_rank: last.rank,
        members: members.into_iter().map(|(_, m)| m).collect(),
    })
}

/// The global rank the analysis gave `process`.
fn global_rank(analysis: &Analysis, process: &ProcessKey) -> Option<u32> {
    analysis
        .processes
        .iter()
        .find(|p| &p.process == process)
        .map(|p| p.global_rank)
}

/// The matched kernel of `pm` that ran opCount `op_count` of a logical communicator for which
/// `is_comm` holds (an index into `Communicators::comms`).
fn kernel_of_call(
    analysis: &Analysis,
    pm: &ProcessMatch,
    op_count: u64,
    is_comm: impl Fn(usize) -> bool,
) -> Option<Kernel> {
    let comms = &analysis.communicators;
    pm.matched()
        .find(|(_, m)| {
            m.lines().any(|j| {
                pm.log_ops.get(j).is_some_and(|o| {
                    o.op_count == op_count
                        && comms.comm_of(&pm.process, o.comm).is_some_and(&is_comm)
                })
            })
        })
        .map(|(k, _)| k)
}

fn member(clocks: &ClockSync, rank: u32, k: &Kernel) -> MemberTiming {
    MemberTiming {
        rank,
        start_ns: clocks.to_sync(rank, k.start_ns),
        end_ns: clocks.to_sync(rank, k.end_ns),
    }
}

/// The kernel with which global rank `rank` ran opCount `op_count` of the communicator whose id
/// is `comm_id` (a link's selection): its process, GPU and start on a timeline drawn with
/// `clocks`.
pub fn find_kernel(
    analysis: &Analysis,
    rank: u32,
    comm_id: &str,
    op_count: u64,
    clocks: &ClockSync,
) -> Option<(ProcessKey, u32, i64)> {
    let process = &analysis
        .processes
        .iter()
        .find(|p| p.global_rank == rank)?
        .process;
    let comms = &analysis.communicators;
    let pm = analysis
        .alignments
        .processes
        .iter()
        .find(|pm| &pm.process == process)?;
    let k = kernel_of_call(analysis, pm, op_count, |c| comms.comms[c].id == comm_id)?;
    Some((process.clone(), k.device, clocks.to_sync(rank, k.start_ns)))
}
