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
}

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
    /// The communicator's members, by global rank.
    pub comm_ranks: Vec<u32>,
    /// The opCount of the collective the rank never called (`Stop`) or called differently
    /// (`Mismatch`).
    pub op_count: u64,
    /// What the others call there, and (`Mismatch`) what the rank calls instead.
    pub op: OpType,
    pub odd_op: Option<OpType>,
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
    block(comms, calls, timed, &mut limits, h.rank, never);
    for (list, n) in calls.iter_mut().zip(&limits) {
        list.truncate(*n);
    }
    for (list, n) in timed.iter_mut().zip(&limits) {
        list.truncate(*n);
    }
    Some(Expected {
        kind: h.kind,
        rank: h.rank,
        comm_ranks: comms.list[comm].global_ranks.clone(),
        op_count,
        op,
        odd_op,
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
/// that cannot complete (which it issues, then blocks in). `hung` keeps its own limit.
fn block(
    comms: &Comms,
    calls: &[Vec<Call>],
    timed: &[Vec<Timed>],
    limits: &mut [usize],
    hung: u32,
    never: Option<(usize, u64)>,
) {
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
}
