//! Where a row of the Steps view's outlier table opens on the timeline.

use super::link::Selection;
use analyses::steps::baselines::Outlier;

/// Where an outlier of the Steps view opens on the timeline: its time window in the clock the
/// timeline shows (each rank's own, or synchronised to the reference rank) and, for an NCCL
/// kernel whose collective is known, the instance to pick (rank, communicator, opCount).
pub fn outlier_target(o: &Outlier, original_clock: bool) -> ((i64, i64), Option<Selection>) {
    let start = if original_clock {
        o.start_ns
    } else {
        o.sync_start_ns
    };
    let end = start + ((o.duration_ms * 1e6).round() as i64).max(1);
    let sel = match (o.kind.as_str(), o.rank, &o.comm_id, o.op_count) {
        ("nccl", Some(rank), Some(comm), Some(op_count)) => Some(Selection {
            rank,
            comm: comm.clone(),
            op_count,
        }),
        _ => None,
    };
    ((start, end), sel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outlier_opens_in_the_timelines_clock() {
        let mut o = Outlier {
            kind: "nccl".into(),
            what: "AllReduce".into(),
            rank: Some(2),
            process: "n:1".into(),
            step: Some(1),
            start_ns: 1_000,
            duration_ms: 0.5,
            baseline_ms: 0.1,
            excess_ms: 0.4,
            sync_start_ns: 700,
            comm_id: Some("0xab".into()),
            op_count: Some(9),
        };
        let ((a, b), sel) = outlier_target(&o, false);
        assert_eq!((a, b), (700, 500_700));
        let sel = sel.expect("an NCCL op is picked");
        assert_eq!((sel.rank, sel.comm.as_str(), sel.op_count), (2, "0xab", 9));
        assert_eq!(outlier_target(&o, true).0, (1_000, 501_000));
        o.kind = "compute".into();
        assert!(outlier_target(&o, false).1.is_none());
    }
}
