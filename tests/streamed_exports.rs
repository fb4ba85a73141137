//! The command writes its exports rank by rank (`export::records_by_rank` into `CsvWriter`,
//! `TraceWriter`, `aggregate_file::Builder`), never holding the run's records: the files must be byte
//! for byte those of the whole records (`export::kernel_records` into `csv_of`, `trace_of`,
//! `aggregate_file::build`), on generator runs with every imperfection, ranks spread over nodes, and
//! kernels no log line names.

use load::Session;
use pipeline::{analyse, UserSizes};

fn check(preset: &str) {
    check_session(preset, &testkit::sessions::generated(preset));
}

fn check_session(preset: &str, session: &Session) {
    let analysis = analyse(session, &UserSizes::default());
    let whole = export::kernel_records(session, &analysis);
    assert!(!whole.kernels.is_empty(), "{preset}: no kernels");

    let hosts = export::rank_hosts(session, &analysis);
    let nvtx = export::nvtx_ranges(session, &analysis);
    assert_eq!(hosts, whole.ranks, "{preset}: ranks' hosts");
    assert_eq!(nvtx, whole.nvtx, "{preset}: NVTX ranges");
    let mut csv = export::CsvWriter::new(Vec::new()).unwrap();
    let mut trace = export::TraceWriter::new(Vec::new(), &hosts, &nvtx).unwrap();
    let mut agg = aggregate_file::Builder::new(session, &analysis, None);
    let mut streamed = Vec::new();
    let mut last_rank = None;
    for batch in export::records_by_rank(session, &analysis) {
        assert!(
            last_rank < Some(batch.rank),
            "{preset}: ranks ascending, once each"
        );
        last_rank = Some(batch.rank);
        assert!(batch.kernels.iter().all(|k| k.rank == batch.rank));
        csv.write(&batch.kernels).unwrap();
        trace.write(&batch.kernels).unwrap();
        let refs: Vec<&export::KernelRecord> = batch.kernels.iter().collect();
        agg.add_rank(batch.rank, &refs);
        streamed.extend(batch.kernels);
    }
    assert_eq!(
        streamed, whole.kernels,
        "{preset}: the same records in the same order"
    );
    let csv = String::from_utf8(csv.finish().unwrap()).unwrap();
    assert_eq!(csv, export::csv_of(&whole), "{preset}: CSV");
    let trace = String::from_utf8(trace.finish().unwrap()).unwrap();
    let want = serde_json::to_string(&export::trace_of(&whole)).unwrap();
    assert_eq!(trace, want, "{preset}: Chrome trace");
    assert_eq!(
        agg.finish(),
        aggregate_file::build(session, &analysis, &whole, None),
        "{preset}: aggregate"
    );
}

#[test]
fn demo_with_every_imperfection() {
    check("demo");
}

#[test]
fn ranks_over_nodes_with_a_fifth_of_the_log_dropped() {
    check("align-ldrop20");
}

#[test]
fn kernels_without_log_lines() {
    // Half of the ranks' logs left out: their processes have kernels and no log line.
    let preset = "tp2pp2";
    let p = synth::preset(preset).unwrap();
    let run = synth::generate_named(&p.config, Some(preset));
    let mut session = Session::default();
    let logs: Vec<_> = run
        .files
        .iter()
        .filter(|(n, _)| n.ends_with(".log"))
        .collect();
    assert!(logs.len() >= 2, "{preset}: one log per rank");
    for (i, (name, bytes)) in logs.iter().take(logs.len() / 2).enumerate() {
        let mut loader = load::LogLoader::new(name, i as u32);
        loader.feed(bytes);
        session.add_log(loader.finish(bytes.len() as u64));
    }
    for rep in &run.reports {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        synth::write::write_report(&mut conn, rep).unwrap();
        let db = sqlsource_native::NativeDb::from_connection(conn);
        session.add_export(&db, &format!("report_{}.sqlite", rep.host), 0);
    }
    let analysis = analyse(&session, &UserSizes::default());
    assert!(
        !analysis.alignments.kernels_only.is_empty(),
        "{preset}: processes with kernels only"
    );
    check_session("tp2pp2 half the logs", &session);
}
