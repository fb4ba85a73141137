//! Adding files one by one and analysing incrementally gives exactly what a from-scratch
//! analysis of the same files gives (alignments, communicators, layout, clocks, processes,
//! volumes, timeline), and re-aligns only the processes whose inputs changed. Every other step
//! aligns its processes through the page's worker encoding (`wire::align::ThroughBytes`, three
//! simulated workers): where a process is aligned must not change the result.

use load::{LogLoader, Session};
use pipeline::{analyse, analyse_incremental, analyse_incremental_with, Analysis, Rerun, UserSizes};
use timeline::{build_incremental, Timeline};
use rusqlite::Connection;
use sqlsource_native::NativeDb;
use wire::align::ThroughBytes;

/// One input file, held in memory.
enum File {
    Log(String, Vec<u8>),
    /// An export: its name and an open database (in memory or on disk).
    Export(String, NativeDb),
}

impl File {
    fn add_to(&self, session: &mut Session) {
        match self {
            File::Log(name, bytes) => {
                let mut loader = LogLoader::new(name, session.next_file_index());
                for chunk in bytes.chunks(1 << 16) {
                    loader.feed(chunk);
                }
                session.add_log(loader.finish(bytes.len() as u64));
            }
            File::Export(name, db) => {
                session.add_export(db, name, 0);
            }
        }
    }

    fn name(&self) -> &str {
        match self {
            File::Log(n, _) | File::Export(n, _) => n,
        }
    }
}

/// A generator preset's logs and exports (each export written to an in-memory database).
fn preset_files(name: &str) -> (Vec<File>, Vec<File>) {
    let preset = synth::preset(name).expect("preset exists");
    let run = synth::generate_named(&preset.config, Some(name));
    let logs = run
        .files
        .into_iter()
        .map(|(n, b)| File::Log(n, b))
        .collect();
    let exports = run
        .reports
        .iter()
        .map(|rep| {
            let mut conn = Connection::open_in_memory().unwrap();
            synth::write::write_report(&mut conn, rep).unwrap();
            File::Export(
                format!("report_{}.sqlite", rep.host),
                NativeDb::from_connection(conn),
            )
        })
        .collect();
    (logs, exports)
}

/// Every field of two analyses, compared.
fn assert_same(a: &Analysis, b: &Analysis, what: &str) {
    let (x, y) = (&a.alignments, &b.alignments);
    assert_eq!(x.processes.len(), y.processes.len(), "{what}: processes");
    for (p, q) in x.processes.iter().zip(&y.processes) {
        assert_eq!(p.process, q.process, "{what}");
        assert_eq!(p.log_ops, q.log_ops, "{what}: {:?} log ops", p.process);
        assert_eq!(p.kernels, q.kernels, "{what}: {:?} kernels", p.process);
        assert_eq!(
            p.alignment, q.alignment,
            "{what}: {:?} alignment",
            p.process
        );
    }
    assert_eq!(x.log_only, y.log_only, "{what}: log only");
    assert_eq!(x.kernels_only, y.kernels_only, "{what}: kernels only");
    assert_eq!(a.communicators, b.communicators, "{what}: communicators");
    assert_eq!(a.layout, b.layout, "{what}: layout");
    assert_eq!(a.processes, b.processes, "{what}: process summaries");
    assert_eq!(a.clocks, b.clocks, "{what}: clocks");
    assert_eq!(a.iterations, b.iterations, "{what}: iterations");
}

/// Adds `files` in order; after each, the incremental analysis and timeline must equal the
/// from-scratch ones. Returns each step's [`Rerun`].
fn add_one_by_one(files: &[&File]) -> Vec<Rerun> {
    let user = UserSizes::default();
    let mut session = Session::default();
    let mut previous: Option<(Analysis, Timeline)> = None;
    let mut reruns = Vec::new();
    let mut added = Vec::new();
    for (step, f) in files.iter().enumerate() {
        f.add_to(&mut session);
        added.push(f.name().to_string());
        let what = added.join(" + ");
        let (prev_analysis, prev_timeline) = previous.take().unzip();
        let (mut inc, mut rerun) = if step % 2 == 1 {
            let workers = ThroughBytes { workers: 3 };
            align::runner::now(analyse_incremental_with(
                &session,
                &user,
                prev_analysis,
                &workers,
            ))
        } else {
            analyse_incremental(&session, &user, prev_analysis)
        };
        let inc_timeline = build_incremental(&session, &mut inc, prev_timeline, &mut rerun);
        let scratch = analyse(&session, &user);
        let scratch_timeline = timeline::build(&session, &scratch.processes, &scratch.clocks);
        assert_same(&inc, &scratch, &what);
        assert_eq!(inc_timeline, scratch_timeline, "{what}: timeline");
        assert_eq!(rerun.processes, scratch.alignments.processes.len());
        assert_eq!(rerun.tracks, scratch_timeline.tracks.len());
        previous = Some((inc, inc_timeline));
        reruns.push(rerun);
    }
    reruns
}

fn all<'a>(a: &'a [File], b: &'a [File]) -> Vec<&'a File> {
    a.iter().chain(b).collect()
}

#[test]
fn demo_logs_then_exports_and_exports_then_logs() {
    let (logs, exports) = preset_files("demo");
    // The demo's one combined log holds every process: adding an export aligns its node's.
    let reruns = add_one_by_one(&all(&logs, &exports));
    assert_eq!(reruns[0].processes, 0);
    assert_eq!(reruns[1].realigned.len(), 4, "{:?}", reruns[1]);
    assert_eq!(reruns[2].processes, 8);
    assert_eq!(reruns[2].realigned.len(), 4, "node02's ranks only");
    assert!(
        reruns[2].rehinted.is_empty(),
        "another node is another clock"
    );
    // node01's tracks are rebuilt only where their clock correction changed.
    assert!(reruns[2].tracks_rebuilt >= 4 && reruns[2].tracks_rebuilt <= 8);
    // Exports first: with no log yet nothing is aligned and no clock moves, so node01's tracks
    // are kept when node02's export comes.
    let reruns = add_one_by_one(&all(&exports, &logs));
    assert_eq!((reruns[1].tracks, reruns[1].tracks_rebuilt), (8, 4));
}

#[test]
fn adding_one_ranks_log_realigns_that_rank_only() {
    // tp4: one node, one export holding all four ranks, one log per rank.
    let (logs, exports) = preset_files("tp4");
    assert_eq!(logs.len(), 4);
    let order: Vec<&File> = exports.iter().chain(&logs).collect();
    let reruns = add_one_by_one(&order);
    let last = reruns.last().unwrap();
    assert_eq!(last.processes, 4);
    assert_eq!(last.realigned.len(), 1, "{last:?}");
    let File::Log(name, _) = logs.last().unwrap() else {
        unreachable!()
    };
    assert!(
        name.contains(&format!("_{}.log", last.realigned[0].pid)),
        "{name} vs {:?}",
        last.realigned[0]
    );
    // Ranks 0–2 kept their first pass; the consensus with rank 3 may re-run their second.
    assert!(last.rehinted.len() <= 3);
}

#[test]
fn generator_presets_added_one_by_one() {
    for name in ["dp4-nvtx", "tp2pp2", "align-bothdrop20", "ep4-alltoall"] {
        let (logs, exports) = preset_files(name);
        // Logs and exports interleaved: every process changes side at some step.
        let mut order = Vec::new();
        let (mut l, mut e) = (logs.iter(), exports.iter());
        loop {
            match (l.next(), e.next()) {
                (None, None) => break,
                (a, b) => order.extend(a.into_iter().chain(b)),
            }
        }
        let reruns = add_one_by_one(&order);
        let last = reruns.last().unwrap();
        assert!(
            last.realigned.len() < last.processes || last.processes <= 1,
            "{name}: {last:?}"
        );
        add_one_by_one(&all(&exports, &logs));
    }
}

#[test]
fn an_analysis_of_another_session_is_not_reused() {
    let (logs, exports) = preset_files("dp4");
    let mut one = Session::default();
    for f in all(&logs, &exports) {
        f.add_to(&mut one);
    }
    let (a, _) = analyse_incremental(&one, &UserSizes::default(), None);
    // Another session: the same files but the first log missing.
    let mut other = Session::default();
    for f in all(&logs[1..], &exports) {
        f.add_to(&mut other);
    }
    let (b, rerun) = analyse_incremental(&other, &UserSizes::default(), Some(a));
    assert_eq!(rerun.realigned.len(), rerun.processes);
    assert_same(&b, &analyse(&other, &UserSizes::default()), "other session");
}

/// The real fixtures (logs and exports of unrelated runs) added one by one.
#[test]
fn real_fixtures_added_one_by_one() {
    if testkit::fixtures::dir("nccl").is_none() {
        return;
    }
    let mut files = Vec::new();
    for (sub, ext) in [("nsys", "sqlite"), ("nccl", "log")] {
        for p in testkit::fixtures::files(sub, ext) {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            files.push(if sub == "nsys" {
                File::Export(name, NativeDb::open(&p).unwrap())
            } else {
                File::Log(name, std::fs::read(&p).unwrap())
            });
        }
    }
    // Exports interleaved among the logs.
    let (exports, logs): (Vec<&File>, Vec<&File>) =
        files.iter().partition(|f| matches!(f, File::Export(..)));
    let mut order = Vec::new();
    for (i, l) in logs.iter().enumerate() {
        order.push(*l);
        if i % 6 == 0 {
            if let Some(e) = exports.get(i / 6) {
                order.push(*e);
            }
        }
    }
    order.extend(exports.iter().skip(logs.len().div_ceil(6)));
    assert_eq!(order.len(), files.len());
    let reruns = add_one_by_one(&order);
    // The fixtures' logs and exports come from different runs: no clock ties them, and an
    // added file leaves the other files' tracks as they were.
    assert!(reruns
        .iter()
        .any(|r| r.tracks > 0 && r.tracks_rebuilt < r.tracks));
}

/// What the analyses read of each matched kernel without building it whole (its index and
/// times, and its match) is what the whole kernels say, and every match is there once.
#[test]
fn matched_spans_are_the_matched_kernels() {
    let (logs, exports) = preset_files("demo");
    let mut session = Session::default();
    for f in all(&logs, &exports) {
        f.add_to(&mut session);
    }
    let analysis = analyse(&session, &UserSizes::default());
    let mut matched = 0;
    for pm in &analysis.alignments.processes {
        let spans: Vec<_> = pm
            .matched_spans()
            .map(|(s, m)| (s.start_ns, s.end_ns, s.index, m.first_line()))
            .collect();
        let whole: Vec<_> = pm
            .matched()
            .map(|(k, m)| (k.start_ns, k.end_ns, m.first_line()))
            .collect();
        assert_eq!(spans.len(), whole.len(), "{:?}", pm.process);
        for ((start, end, index, line), w) in spans.iter().zip(&whole) {
            assert_eq!((*start, *end, *line), *w);
            assert_eq!(pm.kernels.get(*index).map(|k| k.start_ns), Some(*start));
        }
        assert_eq!(pm.matched_kernels(), whole.len() as u64);
        matched += whole.len();
    }
    assert!(matched > 500, "the demo matches its kernels: {matched}");
}
