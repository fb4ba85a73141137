//! The one ranked list of what changed. Every entry has an impact in the comparison's basis
//! (ns of NCCL kernel time per rank, and per iteration when both runs count them):
//!
//! - a signature's: the change of the time its operations take, median × count, new − base;
//!   an added or removed signature is all of its time;
//! - a cause's (an algorithm, protocol or channel change, a communicator's transport or link,
//!   one rank's links): the sum of the magnitudes of the time changes it covers;
//! - a run-wide fact's (NCCL versions, `NCCL_*` settings, the hosts' topology): the sum over the
//!   signatures that changed significantly, any of which it may explain;
//! - a change of world size or layout: both runs' whole time, and it comes first whatever the
//!   figures: every other comparison is then one across shapes.
//!
//! Ties go to the cause before its effect (an algorithm change before the time change it made).

use crate::diff::profile::SigKey;
use serde::{Deserialize, Serialize};

/// What kind of change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    World,
    Layout,
    Rank,
    Algorithm,
    Protocol,
    Channels,
    Transport,
    Topology,
    Version,
    Setting,
    Time,
    Count,
    Added,
    Removed,
}

impl ChangeKind {
    /// 0: the runs' shape; 1: a cause; 2: an effect (a signature's time or count).
    pub fn class(self) -> u8 {
        match self {
            ChangeKind::World | ChangeKind::Layout => 0,
            ChangeKind::Time | ChangeKind::Count | ChangeKind::Added | ChangeKind::Removed => 2,
            _ => 1,
        }
    }
}

/// One entry of the ranked list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub kind: ChangeKind,
    /// Signed where a direction means something (a signature's time: + slower), in the basis.
    pub impact_ns: f64,
    /// One plain sentence.
    pub what: String,
    /// The signatures it concerns (one for a signature's own entry).
    pub signatures: Vec<SigKey>,
    /// The communicators it concerns (`DP [0, 2]`).
    pub communicators: Vec<String>,
    /// The global ranks it points at.
    pub ranks: Vec<u32>,
}

impl Change {
    pub fn new(kind: ChangeKind, impact_ns: f64, what: String) -> Change {
        Change {
            kind,
            impact_ns,
            what,
            signatures: Vec::new(),
            communicators: Vec::new(),
            ranks: Vec::new(),
        }
    }
}

/// Orders the list: the runs' shape first, then by |impact|, causes before effects on a tie.
pub fn rank(changes: &mut [Change]) {
    changes.sort_by(|a, b| {
        let shape = |c: &Change| c.kind.class() != 0;
        shape(a)
            .cmp(&shape(b))
            .then(b.impact_ns.abs().total_cmp(&a.impact_ns.abs()))
            .then(a.kind.class().cmp(&b.kind.class()))
            .then(a.kind.cmp(&b.kind))
            .then(a.what.cmp(&b.what))
    });
}

/// `+1.25 ms`, `−830 µs`, `12 ns`.
pub fn time_text(ns: f64) -> String {
    let sign = if ns < 0.0 { "−" } else { "+" };
    let a = ns.abs();
    let body = if a >= 1e9 {
        format!("{:.2} s", a / 1e9)
    } else if a >= 1e6 {
        format!("{:.2} ms", a / 1e6)
    } else if a >= 1e3 {
        format!("{:.0} µs", a / 1e3)
    } else {
        format!("{a:.0} ns")
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_first_then_impact_then_cause_before_effect() {
        let mut v = vec![
            Change::new(ChangeKind::Time, 5.0, "time".into()),
            Change::new(ChangeKind::Algorithm, 5.0, "algo".into()),
            Change::new(ChangeKind::Time, -9.0, "faster".into()),
            Change::new(ChangeKind::Layout, 1.0, "layout".into()),
        ];
        rank(&mut v);
        let order: Vec<&str> = v.iter().map(|c| c.what.as_str()).collect();
        assert_eq!(order, ["layout", "faster", "algo", "time"]);
    }

    #[test]
    fn times_read_well() {
        assert_eq!(time_text(1_250_000.0), "+1.25 ms");
        assert_eq!(time_text(-830_000.0), "−830 µs");
        assert_eq!(time_text(12.0), "+12 ns");
    }
}
