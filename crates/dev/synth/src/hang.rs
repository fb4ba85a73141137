//! The "hang" knob: a run that does not finish, as the logs of a hung job show it.
//!
//! - [`HangKind::Stop`]: one rank stops logging at a chosen collective (it never calls it:
//!   stuck in a data loader, a deadlock of its own, a crash without a word).
//! - [`HangKind::Mismatch`]: one rank calls a different collective (another operation) at that
//!   opCount, so the collective never completes on any member.
//!
//! Every other rank then runs until it issues a call that cannot complete (a collective some
//! member never issued, a point-to-point call whose peer had stopped by then), logs that call and
//! blocks: the host waits there, as it does at the next synchronisation of a hung job. Blocking
//! spreads (a rank blocked in one communicator starves the others it belongs to) until nothing
//! changes. What the diagnosis should name is [`expected`]'s answer.
//!
//! Applied to the schedule once it is simulated (`plan`): the calls no rank issued are cut from
//! each rank's list, so the logs, the kernels and the truth all agree.

use crate::comms::Comms;
use crate::schedule::{Call, Ops};
use crate::timing::Timed;
use crate::RunConfig;
use ::model::OpType;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Where and how a run hangs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hang {
    /// The rank that misbehaves.
    pub rank: u32,
    /// Which of its calls (index into its schedule); moved forward to the next call that is a
    /// single collective on a communicator of two or more ranks, at opCount 1 or later (back to
    /// the last such call when none follows).
    pub call: usize,
    pub kind: HangKind,
    /// The ranks also print PyTorch's watchdog lines into their logs: each blocked rank the
    /// timeout of the collective it waits in and its last enqueued and completed work; a rank
    /// that stopped, the dump signal with its own (earlier) last work.
    #[serde(default)]
    pub watchdog: bool,
    /// Every blocked rank also prints an NCCL network error (`NET/IB : Got completion … error`)
    /// once all have blocked, [`ERROR_GAP_NS`] apart in rank order: the lowest blocked rank's
    /// is the first in time ([`Expected::first_error`]).
    #[serde(default)]
    pub errors: bool,
}

/// Time between two blocked ranks' error lines (see [`Hang::errors`]).
pub const ERROR_GAP_NS: i64 = 5_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HangKind {
    Stop,
    Mismatch,
}

/// What a diagnosis of the run's logs should name.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    pub kind: HangKind,
    pub rank: u32,
    /// The communicator (index into the run's communicators) and its members, by global rank.
    pub comm: usize,
    pub comm_ranks: Vec<u32>,
    /// The opCount of the collective the rank never called (`Stop`) or called differently
    /// (`Mismatch`).
    pub op_count: u64,
    /// What the others call there, and (`Mismatch`) what the rank calls instead.
    pub op: OpType,
    pub odd_op: Option<OpType>,
    /// Ranks that block in a call they logged (every rank the hang reaches).
    pub blocked: Vec<u32>,
    /// With [`Hang::errors`]: the rank whose error line comes first in true time.
    pub first_error: Option<u32>,
}

/// The run's expected diagnosis (None without a hang, or when the rank has no collective at or
/// after the chosen call).
pub fn expected(cfg: &RunConfig) -> Option<Expected> {
    crate::plan(cfg).hang
}

/// Cuts every rank's calls where the hang leaves it, and returns what was planted.
pub(crate) fn apply(
    hang: Option<&Hang>,
    comms: &Comms,
    calls: &mut [Vec<Call>],
    timed: &mut [Vec<Timed>],
) -> Option<Expected> {
    let h = hang?;
    let r = h.rank as usize;
    let (at, op_count) = target(comms, calls.get(r)?, h.call)?;
    let comm = calls[r][at].comm();
    let op = calls[r][at].ops[0].op;
    let mut odd_op = None;
    let mut limits: Vec<usize> = calls.iter().map(Vec::len).collect();
    let mut never: Option<(usize, u64)> = None;
    match h.kind {
        HangKind::Stop => limits[r] = at,
        HangKind::Mismatch => {
            let other = different(op);
            if let Ops::One(o) = &mut calls[r][at].ops {
                o.op = other;
            }
            odd_op = Some(other);
            limits[r] = at + 1;
            never = Some((comm, op_count));
        }
    }
    let mut blocked = block(comms, calls, timed, &mut limits, h.rank, never);
    if h.kind == HangKind::Mismatch {
        blocked.push(h.rank);
        blocked.sort_unstable();
    }
    for (list, n) in calls.iter_mut().zip(&limits) {
        list.truncate(*n);
    }
    for (list, n) in timed.iter_mut().zip(&limits) {
        list.truncate(*n);
    }
    Some(Expected {
        kind: h.kind,
        rank: h.rank,
        comm,
        comm_ranks: comms.list[comm].global_ranks.clone(),
        op_count,
        op,
        odd_op,
        first_error: h.errors.then(|| blocked.first().copied()).flatten(),
        blocked,
    })
}

/// The first call at or after `from` that is one collective on a communicator of two or more
/// ranks at opCount ≥ 1: its index and opCount.
fn target(comms: &Comms, list: &[Call], from: usize) -> Option<(usize, u64)> {
    let mut counts: HashMap<usize, u64> = HashMap::new();
    let mut before = None;
    for (i, c) in list.iter().enumerate() {
        let oc = *counts.entry(c.comm()).and_modify(|x| *x += 1).or_insert(0);
        let single = matches!(c.ops, Ops::One(_)) && !c.is_p2p() && !c.orphan;
        if single && oc >= 1 && comms.list[c.comm()].size() >= 2 {
            if i >= from {
                return Some((i, oc));
            }
            before = Some((i, oc));
        }
    }
    before
}

/// Another collective in place of `op`.
fn different(op: OpType) -> OpType {
    match op {
        OpType::AllReduce => OpType::AllGather,
        _ => OpType::AllReduce,
    }
}

/// Lowers each rank's number of issued calls until every rank has stopped at its first call
/// that cannot complete (which it issues, then blocks in). `hung` keeps its own limit. Returns
/// the ranks that block (`hung` aside).
fn block(
    comms: &Comms,
    calls: &[Vec<Call>],
    timed: &[Vec<Timed>],
    limits: &mut [usize],
    hung: u32,
    never: Option<(usize, u64)>,
) -> Vec<u32> {
    let mut stuck = vec![false; calls.len()];
    // (comm, opCount) → index of that call in each member's list, and each call's opCount.
    let mut index: HashMap<(usize, u64), HashMap<u32, usize>> = HashMap::new();
    let mut op_counts: Vec<Vec<u64>> = Vec::with_capacity(calls.len());
    for (r, list) in calls.iter().enumerate() {
        let mut counts: HashMap<usize, u64> = HashMap::new();
        let mut ocs = Vec::with_capacity(list.len());
        for (i, c) in list.iter().enumerate() {
            let oc = *counts.entry(c.comm()).and_modify(|x| *x += 1).or_insert(0);
            index.entry((c.comm(), oc)).or_default().insert(r as u32, i);
            ocs.push(oc);
        }
        op_counts.push(ocs);
    }
    loop {
        let mut changed = false;
        for q in 0..calls.len() {
            if q as u32 == hung {
                continue;
            }
            // The time each rank stopped issuing calls (its first call not issued).
            let stopped_at =
                |p: usize| -> i64 { timed[p].get(limits[p]).map_or(i64::MAX, |t| t.arrive_ns) };
            let first_stuck = (0..limits[q]).find(|&i| {
                let c = &calls[q][i];
                let key = (c.comm(), op_counts[q][i]);
                if never == Some(key) {
                    return true;
                }
                if c.is_p2p() {
                    let t = timed[q][i].arrive_ns;
                    return c
                        .ops
                        .iter()
                        .filter_map(|o| o.peer)
                        .any(|p| stopped_at(p as usize) <= t);
                }
                comms.list[c.comm()].global_ranks.iter().any(|&m| {
                    index
                        .get(&key)
                        .and_then(|by| by.get(&m))
                        .is_none_or(|&j| j >= limits[m as usize])
                })
            });
            if let Some(i) = first_stuck {
                stuck[q] = true;
                if i + 1 < limits[q] {
                    limits[q] = i + 1;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    (0..calls.len())
        .filter(|&q| stuck[q])
        .map(|q| q as u32)
        .collect()
}

/// PyTorch's watchdog fires this long after a collective was enqueued (its default).
const WATCHDOG_MS: i64 = 600_000;

/// The watchdog lines of one process (see [`Hang::watchdog`]), with their true times.
pub(crate) fn watchdog_lines(pl: &crate::Plan<'_>, p: &crate::Proc) -> Vec<(i64, String)> {
    let (Some(h), Some(e)) = (pl.cfg.hang.as_ref(), pl.hang.as_ref()) else {
        return Vec::new();
    };
    if !h.watchdog {
        return Vec::new();
    }
    let r = p.rank as usize;
    let (list, timed) = (&pl.calls[r], &pl.timed[r]);
    let stopped = p.rank == e.rank && e.kind == HangKind::Stop;
    if !(e.blocked.contains(&p.rank) || stopped) {
        return Vec::new();
    }
    // The communicator the rank waits in (or stopped before) and its sequence number there.
    let comm = if stopped {
        Some(e.comm)
    } else {
        list.last().map(|c| c.comm())
    };
    let Some(ci) = comm else {
        return Vec::new();
    };
    let c = &pl.comms.list[ci];
    let me = c.member(p.rank);
    let on_comm = list.iter().filter(|x| x.comm() == ci).count() as u64;
    let pg = format!(
        "[PG ID {ci} PG GUID {ci}({})",
        if ci == pl.comms.world {
            "default_pg"
        } else {
            c.parallelism
        }
    );
    let head = |t: i64| {
        format!(
            "{}[rank{}]:[E{} ProcessGroupNCCL.cpp:616] {pg} Rank {me}] ",
            p.printer.tag,
            p.rank,
            glog_time(crate::EPOCH_NS + t)
        )
    };
    if stopped {
        let t = timed.last().map_or(0, |x| x.arrive_ns) + WATCHDOG_MS * 1_000_000;
        let from = e.blocked.first().copied().unwrap_or(0);
        let body = format!(
            "Received a dump signal due to a collective timeout from rank {from} and we will try our best to dump the debug info. Last enqueued NCCL work: {on_comm}, last completed NCCL work: {on_comm}."
        );
        return vec![(t, head(t) + &body)];
    }
    let (Some(call), Some(tm)) = (list.last(), timed.last()) else {
        return Vec::new();
    };
    let o = &call.ops[0];
    let n = u64::from(c.size());
    let (op_type, numel_in, numel_out) = match o.op {
        OpType::AllReduce => ("ALLREDUCE", o.count, o.count),
        OpType::AllGather => ("_ALLGATHER_BASE", o.count, o.count * n),
        OpType::ReduceScatter => ("_REDUCE_SCATTER_BASE", o.count * n, o.count),
        OpType::Broadcast => ("BROADCAST", o.count, o.count),
        OpType::Reduce => ("REDUCE", o.count, o.count),
        OpType::Send => ("SEND", o.count, o.count),
        OpType::Recv => ("RECV", o.count, o.count),
        _ => ("ALLTOALL_BASE", o.count, o.count),
    };
    let t = tm.arrive_ns + WATCHDOG_MS * 1_000_000;
    let ran = WATCHDOG_MS + 1 + i64::from(p.rank % 50);
    let timeout = format!(
        "[Rank {me}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={on_comm}, OpType={op_type}, NumelIn={numel_in}, NumelOut={numel_out}, Timeout(ms)={WATCHDOG_MS}) ran for {ran} milliseconds before timing out."
    );
    let status = format!(
        "Timeout at NCCL work: {on_comm}, last enqueued NCCL work: {on_comm}, last completed NCCL work: {}.",
        on_comm - 1
    );
    // glog's header, then the PG prefix on the status line (the timeout line has only `[Rank n]`).
    let t_head = format!(
        "{}[rank{}]:[E{} ProcessGroupNCCL.cpp:616] ",
        p.printer.tag,
        p.rank,
        glog_time(crate::EPOCH_NS + t)
    );
    vec![
        (t, t_head + &timeout),
        (t + 1_000, head(t + 1_000) + &status),
    ]
}

/// The NCCL network error a blocked rank prints (see [`Hang::errors`]), with its true time.
pub(crate) fn error_lines(pl: &crate::Plan<'_>, p: &crate::Proc) -> Vec<(i64, String)> {
    let (Some(h), Some(e)) = (pl.cfg.hang.as_ref(), pl.hang.as_ref()) else {
        return Vec::new();
    };
    let Some(nth) = e.blocked.iter().position(|&r| r == p.rank) else {
        return Vec::new();
    };
    if !h.errors {
        return Vec::new();
    }
    // Once every blocked rank waits: the errors then follow in rank order.
    let all_blocked = e
        .blocked
        .iter()
        .filter_map(|&r| pl.timed.get(r as usize)?.last().map(|t| t.arrive_ns))
        .max()
        .unwrap_or(0);
    let t = all_blocked + 1_000_000_000 + nth as i64 * ERROR_GAP_NS;
    let head = p.printer.prefix(p.pid, Some(crate::EPOCH_NS + t));
    let head = head.strip_suffix("NCCL INFO ").unwrap_or(&head);
    vec![(
        t,
        format!(
            "{head}transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.9.{}.{}<4242> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
            p.rank / 250,
            p.rank % 250 + 1
        ),
    )]
}

/// glog's `MMDD HH:MM:SS.nnnnnnnnn` of an epoch time (UTC).
fn glog_time(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // H. Hinnant's civil_from_days.
    let z = days + 719_468;
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    format!(
        "{m:02}{d:02} {:02}:{:02}:{:02}.{:09}",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60,
        ns.rem_euclid(1_000_000_000)
    )
}
