//! The timeline's filter (`timeline::filter_timeline`) and the marks drawn on its kernels
//! (`timeline::annotate_spans`) against independent counts over the enriched kernel records the
//! exports write (`export::kernel_records`), on generator runs: the demo (every imperfection a
//! little) and one with a fifth of the log lines dropped (many unmatched kernels).

use export::fields;
use load::Session;
use pipeline::{analyse, Analysis, UserSizes};
use timeline::{annotate_spans, filter_timeline, Filter, Mark};

fn session_of(preset: &str) -> Session {
    testkit::sessions::generated(preset)
}

fn kept(session: &Session, analysis: &Analysis, query: &str) -> u64 {
    let timeline = timeline::build(session, &analysis.processes, &analysis.clocks);
    let filter = Filter::parse(query).unwrap();
    let (t, counts) = filter_timeline(analysis, &timeline, &analysis.clocks, &filter);
    let spans: usize = t.tracks.iter().map(|t| t.spans.len()).sum();
    assert_eq!(spans as u64, counts.kept, "{query}");
    counts.kept
}

fn arg_u64(r: &export::KernelRecord, key: &str) -> Option<u64> {
    r.args.get(key).and_then(|v| v.as_u64())
}

fn arg_f64(r: &export::KernelRecord, key: &str) -> Option<f64> {
    r.args.get(key).and_then(|v| v.as_f64())
}

/// Checks every kind of term on `preset`; returns the unmatched kernels' count.
fn check_run(preset: &str) -> u64 {
    let session = session_of(preset);
    let analysis = analyse(&session, &UserSizes::default());
    let records = export::kernel_records(&session, &analysis).kernels;
    let total = records.len() as u64;
    let count =
        |f: &dyn Fn(&export::KernelRecord) -> bool| records.iter().filter(|r| f(r)).count() as u64;
    assert_eq!(kept(&session, &analysis, ""), total, "{preset}: no filter");
    for op in [
        "AllReduce",
        "AllGather",
        "ReduceScatter",
        "Broadcast",
        "Send",
        "Recv",
        "SendRecv",
    ] {
        let want = count(&|r| r.name == op);
        assert_eq!(
            kept(&session, &analysis, &format!("op:{op}")),
            want,
            "{preset}: {op}"
        );
        assert_eq!(
            kept(&session, &analysis, &format!("-op:{op}")),
            total - want,
            "{preset}: -{op}"
        );
    }
    for par in ["DP", "TP", "PP", "EP", "CP"] {
        let want = count(&|r| r.parallelism == Some(par));
        assert_eq!(
            kept(&session, &analysis, &format!("par:{par}")),
            want,
            "{preset}: {par}"
        );
    }
    let unmatched = count(&|r| !r.matched);
    assert_eq!(
        kept(&session, &analysis, "status:unmatched"),
        unmatched,
        "{preset}"
    );
    assert_eq!(
        kept(&session, &analysis, "matched"),
        total - unmatched,
        "{preset}"
    );
    let low =
        count(&|r| arg_f64(r, fields::CONFIDENCE).is_some_and(|c| c < timeline::LOW_CONFIDENCE));
    assert_eq!(kept(&session, &analysis, "status:low"), low, "{preset}");
    let mib = 1u64 << 20;
    let big = count(&|r| arg_u64(r, fields::MESSAGE_SIZE_BYTES).is_some_and(|b| b >= mib));
    assert!(big > 0, "{preset}: some messages of 1 MiB or more");
    assert_eq!(kept(&session, &analysis, "size:>=1MiB"), big, "{preset}");
    let small = count(&|r| arg_u64(r, fields::MESSAGE_SIZE_BYTES).is_some_and(|b| b < mib));
    assert_eq!(kept(&session, &analysis, "size:<1MiB"), small, "{preset}");
    // Bus bandwidth: records carry it for kernels of one log line, as the filter does.
    let bws: Vec<f64> = records
        .iter()
        .filter_map(|r| arg_f64(r, fields::BUS_BW))
        .collect();
    let mut sorted = bws.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let fast = bws.iter().filter(|b| **b > median).count() as u64;
    assert_eq!(
        kept(&session, &analysis, &format!("bw:>{median}")),
        fast,
        "{preset}"
    );
    // Ranks: only those tracks stay.
    let low_ranks = count(&|r| r.rank <= 1);
    assert_eq!(kept(&session, &analysis, "rank:0-1"), low_ranks, "{preset}");
    // A communicator by its id's prefix (every id is distinct, so the whole id selects one).
    let comm = &analysis.communicators.comms[0].id;
    let in_comm =
        count(&|r| r.args.get(fields::COMMUNICATOR_ID).and_then(|v| v.as_str()) == Some(comm));
    assert!(in_comm > 0);
    assert_eq!(
        kept(&session, &analysis, &format!("comm:{comm}")),
        in_comm,
        "{preset}"
    );
    // Terms combine with AND.
    let both = count(&|r| r.parallelism == Some("DP") && r.rank <= 1);
    assert_eq!(kept(&session, &analysis, "dp rank:0,1"), both, "{preset}");

    // The marks drawn equal the records' match status.
    let mut timeline = timeline::build(&session, &analysis.processes, &analysis.clocks);
    annotate_spans(&analysis, &mut timeline, &analysis.clocks);
    let spans = || timeline.tracks.iter().flat_map(|t| &t.spans);
    assert_eq!(
        spans().filter(|s| s.mark == Mark::Unmatched).count() as u64,
        unmatched
    );
    assert_eq!(
        spans().filter(|s| s.mark == Mark::LowConfidence).count() as u64,
        low
    );
    let dp = timeline::par_byte(enrich::Parallelism::DP);
    assert_eq!(
        spans().filter(|s| s.par == dp).count() as u64,
        count(&|r| r.parallelism == Some("DP"))
    );
    assert!(timeline
        .tracks
        .iter()
        .all(|t| !t.par_lod.levels.is_empty() || t.spans.is_empty()));
    unmatched
}

#[test]
fn the_filter_keeps_what_the_enriched_records_say() {
    check_run("demo");
}

#[test]
fn unmatched_kernels_are_found_and_marked() {
    assert!(check_run("align-ldrop20") > 50);
}

#[test]
fn the_original_clock_filters_alike() {
    // Built with no clock correction, the same kernels pass.
    let session = session_of("demo");
    let analysis = analyse(&session, &UserSizes::default());
    let none = pipeline::ClockSync::default();
    let synced = timeline::build(&session, &analysis.processes, &analysis.clocks);
    let own = timeline::build(&session, &analysis.processes, &none);
    for q in ["op:AllReduce", "status:unmatched", "par:TP", "size:>=1MiB"] {
        let f = Filter::parse(q).unwrap();
        let a = filter_timeline(&analysis, &synced, &analysis.clocks, &f).1;
        let b = filter_timeline(&analysis, &own, &none, &f).1;
        assert_eq!(a, b, "{q}");
    }
}

#[test]
fn nvtx_rows_show_the_lowest_ranks_iterations_and_phases() {
    let session = session_of("demo");
    let analysis = analyse(&session, &UserSizes::default());
    let (t, _) = timeline::TimelineView::default()
        .timeline(&session, &analysis)
        .unwrap();
    assert_eq!(t.markers.len(), 2);
    let iterations = &t.markers[0];
    assert_eq!(iterations.label, "NVTX iterations (rank 0)");
    let texts: Vec<&str> = iterations.ranges.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["iteration 0", "iteration 1"]);
    assert_eq!(Some(2), analysis.iterations);
    let phases = &t.markers[1];
    assert_eq!(phases.label, "NVTX phases (rank 0)");
    for (kind, text) in [
        (timeline::MarkerKind::Forward, "forward"),
        (timeline::MarkerKind::Backward, "backward"),
    ] {
        assert!(phases
            .ranges
            .iter()
            .any(|m| m.kind == kind as u8 && m.text == text));
    }
    // In the tracks' clock: rank 0's kernels of an iteration lie inside its range.
    let rank0 = &t.tracks[0];
    assert!(rank0.label.starts_with("rank 0 "));
    for it in &iterations.ranges {
        let inside = rank0
            .spans
            .iter()
            .filter(|s| s.start_ns >= it.start_ns && s.end_ns <= it.end_ns)
            .count();
        assert!(inside > 10, "{}: {inside} kernels", it.text);
    }
    // Ranges are sorted and well-formed.
    for row in &t.markers {
        assert!(row
            .ranges
            .windows(2)
            .all(|w| w[0].start_ns <= w[1].start_ns));
        assert!(row.ranges.iter().all(|m| m.start_ns <= m.end_ns));
    }
}
