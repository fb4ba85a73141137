//! The aggregate of a time window (`analyses::window_summary`, shown by the page and carried by
//! self-contained links) against an independent count over the enriched kernel records the
//! exports write (`export::kernel_records`), on the generator's demo run.

use analyses::{window_summary, WindowRow};
use load::Session;
use pipeline::{analyse, UserSizes};
use std::collections::BTreeMap;

fn demo_session() -> Session {
    testkit::sessions::generated("demo")
}

/// Per operation: the matched kernel records overlapping the window.
fn reference(records: &export::Records, start: i64, end: i64) -> BTreeMap<String, WindowRow> {
    let mut out: BTreeMap<String, WindowRow> = BTreeMap::new();
    for r in &records.kernels {
        if !r.matched || r.start_ns >= end || r.end_ns <= start {
            continue;
        }
        let row = out.entry(r.name.clone()).or_default();
        row.key = r.name.clone();
        row.kernels += 1;
        row.bytes += r.args[export::fields::MESSAGE_SIZE_BYTES]
            .as_u64()
            .expect("a matched kernel has a message size");
        row.busy_ns += r.end_ns - r.start_ns;
    }
    out
}

#[test]
fn window_aggregates_equal_the_enriched_records() {
    let session = demo_session();
    let analysis = analyse(&session, &UserSizes::default());
    let records = export::kernel_records(&session, &analysis);
    let (lo, hi) = records
        .kernels
        .iter()
        .fold((i64::MAX, i64::MIN), |(a, b), r| {
            (a.min(r.start_ns), b.max(r.end_ns))
        });
    let third = (hi - lo) / 3;
    for (start, end) in [(lo, hi + 1), (lo + third, hi - third), (hi + 10, hi + 20)] {
        let w = window_summary(&analysis, start, end);
        let want = reference(&records, start, end);
        let got: BTreeMap<String, WindowRow> = w
            .per_op
            .iter()
            .map(|r| (r.key.clone(), r.clone()))
            .collect();
        assert_eq!(got, want, "window {start}..{end}");
        // Per rank adds up to the same totals.
        let total = |rows: &mut dyn Iterator<Item = &WindowRow>| {
            rows.fold((0, 0, 0), |a, r| {
                (a.0 + r.kernels, a.1 + r.bytes, a.2 + r.busy_ns)
            })
        };
        assert_eq!(
            total(&mut w.per_rank.iter()),
            total(&mut want.values()),
            "window {start}..{end} per rank"
        );
        let unmatched = records
            .kernels
            .iter()
            .filter(|r| !r.matched && r.start_ns < end && r.end_ns > start)
            .count() as u64;
        assert_eq!(w.unmatched_kernels, unmatched);
    }
    // The middle third is a real subset, not everything or nothing.
    let all = window_summary(&analysis, lo, hi + 1);
    let mid = window_summary(&analysis, lo + third, hi - third);
    let count = |w: &analyses::WindowSummary| w.per_op.iter().map(|r| r.kernels).sum::<u64>();
    assert!(count(&mid) > 0 && count(&mid) < count(&all));
}

#[test]
fn one_kernels_record_equals_its_row_among_all() {
    let session = demo_session();
    let analysis = analyse(&session, &UserSizes::default());
    let all = export::kernel_records(&session, &analysis);
    let mut checked = 0;
    for pm in &analysis.alignments.processes {
        for i in (0..pm.kernels.len()).step_by(17) {
            let one = export::kernel_record(&session, &analysis, &pm.process, i)
                .expect("every aligned kernel has a record");
            let corr = one.args[export::fields::CUDA_CORRELATION_ID].clone();
            let same: Vec<_> = all
                .kernels
                .iter()
                .filter(|r| {
                    r.rank == one.rank && r.args[export::fields::CUDA_CORRELATION_ID] == corr
                })
                .collect();
            assert_eq!(same.len(), 1);
            assert_eq!(format!("{:?}", same[0]), format!("{one:?}"));
            checked += 1;
        }
        assert!(
            export::kernel_record(&session, &analysis, &pm.process, pm.kernels.len()).is_none()
        );
    }
    assert!(checked > 20, "{checked} kernels checked");
}
