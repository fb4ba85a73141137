//! Aggregates of generated multi-node runs: per-node aggregates merged equal the aggregate of the
//! whole run's analysis (ranks, counts, communicators and their parallelism, layout), their
//! merged clocks put every kernel within a few microseconds of the whole run's synchronised time,
//! and a truncated, garbled or hostile file is an error naming it, never a panic.

use aggregate_file::{merge_files, Aggregate, Overview};
use load::{LogLoader, Session};
use pipeline::{analyse, UserSizes};
use std::collections::BTreeMap;

/// A multi-node run: `nodes` nodes of 4 GPUs, TP2 PP2 and DP filling the rest, one log per
/// process, with the generator's imperfections (dropped lines and kernels, fused Send/Recv).
fn run(nodes: u32) -> synth::Run {
    let mut c = synth::preset("demo").unwrap().config;
    c.combined_log = false;
    c.nodes = nodes;
    c.layout.dp = nodes;
    c.model.global_batch = 8 * u64::from(nodes);
    synth::generate(&c)
}

/// The session of the run's files on `hosts` (every host when `None`), as a per-node job loads
/// its node's logs and export.
fn session(run: &synth::Run, hosts: Option<&[&str]>) -> Session {
    let on = |host: &str| hosts.is_none_or(|h| h.contains(&host));
    let mut s = Session::default();
    for (name, bytes) in &run.files {
        let host = name
            .strip_prefix("nccl_debug_")
            .and_then(|r| r.rsplit_once('_'))
            .map(|(h, _)| h)
            .expect("per-process log names");
        if on(host) {
            let mut loader = LogLoader::new(name, s.next_file_index());
            loader.feed(bytes);
            s.add_log(loader.finish(bytes.len() as u64));
        }
    }
    for rep in run.reports.iter().filter(|r| on(&r.host)) {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        synth::write::write_report(&mut conn, rep).unwrap();
        let db = sqlsource_native::NativeDb::from_connection(conn);
        s.add_export(&db, &format!("report_{}.sqlite", rep.host), 0);
    }
    s
}

fn aggregate_of(session: &Session) -> Vec<u8> {
    let analysis = analyse(session, &UserSizes::default());
    let records = export::kernel_records(session, &analysis);
    aggregate_file::build(session, &analysis, &records, None)
}

fn hosts(run: &synth::Run) -> Vec<String> {
    run.reports.iter().map(|r| r.host.clone()).collect()
}

/// Per-node files of `run`, named `<host>.agg`.
fn per_node(run: &synth::Run) -> Vec<(String, Vec<u8>)> {
    hosts(run)
        .iter()
        .map(|h| {
            let s = session(run, Some(&[h.as_str()]));
            (format!("{h}.agg"), aggregate_of(&s))
        })
        .collect()
}

fn labels(o: &Overview) -> BTreeMap<String, (Vec<u32>, String)> {
    o.comms
        .iter()
        .map(|c| {
            (
                c.id.clone(),
                (c.global_ranks.clone(), c.parallelism.clone()),
            )
        })
        .collect()
}

#[test]
fn per_node_aggregates_merge_into_the_whole_runs_aggregate() {
    let run = run(4);
    let whole_bytes = aggregate_of(&session(&run, None));
    let whole = Aggregate::open("whole.agg", &whole_bytes).unwrap();
    let parts = per_node(&run);
    // Alone, a node cannot label its DP and PP groups (it sees one member of each).
    let alone = Aggregate::open(&parts[0].0, &parts[0].1).unwrap();
    assert_ne!(labels(&alone.overview), labels(&whole.overview));

    let merged_bytes = merge_files(&parts).unwrap();
    let merged = Aggregate::open("run.agg", &merged_bytes).unwrap();
    let (m, w) = (&merged.overview, &whole.overview);
    assert_eq!(m.ranks.len(), 16);
    assert_eq!(m.sources.len(), 4);
    assert_eq!(
        labels(m),
        labels(w),
        "communicators, members and parallelism"
    );
    assert_eq!(m.layout.sizes, w.layout.sizes);
    assert_eq!(m.layout.evidence, w.layout.evidence);
    assert!(m.comms.iter().any(|c| c.parallelism == "DP"));
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    for (a, b) in m.ranks.iter().zip(&w.ranks) {
        let r = a.global_rank;
        assert_eq!(r, b.global_rank);
        assert_eq!(
            (&a.host, a.pid, &a.ops),
            (&b.host, b.pid, &b.ops),
            "rank {r}"
        );
        assert_eq!((a.kernels, a.matched), (b.kernels, b.matched), "rank {r}");
        assert_eq!(
            a.median_bus_bw_gbps.is_some(),
            b.median_bus_bw_gbps.is_some()
        );
        // Busy time is measured in each job's own synchronised clock: drift corrections differ
        // by parts per million.
        assert!(
            a.busy_ns.abs_diff(b.busy_ns) <= b.busy_ns / 10_000 + 10,
            "rank {r}"
        );
        // The merge's clocks against the whole analysis's: every kernel within 2 µs (they differ by
        // about 100 ns; without the merge's clocks, by the nodes' offsets: milliseconds).
        let (ka, kb) = (merged.rank(r).unwrap(), whole.rank(r).unwrap());
        assert_eq!(ka.kernels.len() as u64, a.kernels);
        for (x, y) in ka.kernels.iter().zip(&kb.kernels) {
            assert!(
                (x.start_ns - y.start_ns).abs() < 2_000,
                "rank {r}: {} vs {} ns",
                x.start_ns,
                y.start_ns
            );
            assert_eq!((x.op_count, x.bytes), (y.op_count, y.bytes));
        }
    }
    // The activity strip covers every rank that ran kernels.
    let bins = m.heat.bins as usize;
    for (i, r) in m.ranks.iter().enumerate() {
        let busy: u64 = m.heat.busy[i * bins..(i + 1) * bins]
            .iter()
            .map(|&b| u64::from(b))
            .sum();
        assert_eq!(busy > 0, r.kernels > 0, "rank {}", r.global_rank);
    }
    // Merging merged parts gives the same labels and ranks: merges nest.
    let halves = vec![
        ("a.agg".to_string(), merge_files(&parts[..2]).unwrap()),
        ("b.agg".to_string(), merge_files(&parts[2..]).unwrap()),
    ];
    let nested_bytes = merge_files(&halves).unwrap();
    let nested = Aggregate::open("nested.agg", &nested_bytes).unwrap();
    assert_eq!(labels(&nested.overview), labels(m));
    for r in &m.ranks {
        let (x, y) = (
            nested.rank(r.global_rank).unwrap(),
            merged.rank(r.global_rank).unwrap(),
        );
        let worst = x
            .kernels
            .iter()
            .zip(&y.kernels)
            .map(|(p, q)| (p.start_ns - q.start_ns).abs())
            .max()
            .unwrap_or(0);
        assert!(worst < 5_000, "rank {}: {worst} ns", r.global_rank);
    }
}

#[test]
fn merging_refuses_the_same_node_twice_and_clashing_ranks() {
    let run = run(2);
    let parts = per_node(&run);
    let twice = vec![
        parts[0].clone(),
        ("copy.agg".to_string(), parts[0].1.clone()),
    ];
    let e = merge_files(&twice).unwrap_err();
    assert_eq!(e.file, "copy.agg");
    assert!(e.message.contains(&parts[0].0), "{e}");
    // Another run's node 1 (other pids, same init-line ranks).
    let other = run_with_seed(2, 99);
    let other_part = per_node(&other).remove(0);
    let e = merge_files(&[parts[0].clone(), ("other.agg".into(), other_part.1)]).unwrap_err();
    assert!(e.message.contains("global rank"), "{e}");
}

fn run_with_seed(nodes: u32, seed: u64) -> synth::Run {
    let mut c = synth::preset("demo").unwrap().config;
    c.combined_log = false;
    c.nodes = nodes;
    c.layout.dp = nodes;
    c.model.global_batch = 8 * u64::from(nodes);
    c.seed = seed;
    synth::generate(&c)
}

/// A small deterministic generator for the corruption tests.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

/// Reads everything a reader would: the overview, the anchors, every rank's section.
fn read_all(name: &str, bytes: &[u8]) -> Result<(), aggregate_file::Error> {
    let a = Aggregate::open(name, bytes)?;
    a.anchors()?;
    a.matrix()?;
    for r in &a.overview.ranks {
        a.rank(r.global_rank)?;
    }
    Ok(())
}

#[test]
fn truncated_garbled_and_hostile_files_are_errors_naming_the_file() {
    let run = run(2);
    let bytes = merge_files(&per_node(&run)).unwrap();
    read_all("ok.agg", &bytes).unwrap();
    // Every cut (sampled: every 97th length, and the last 300).
    let cuts = (0..bytes.len())
        .step_by(97)
        .chain(bytes.len().saturating_sub(300)..bytes.len());
    for len in cuts {
        let e = read_all("cut.agg", &bytes[..len]).unwrap_err();
        assert_eq!(e.file, "cut.agg", "{e}");
    }
    // Flipped bytes anywhere: an error naming the file (or, where a flip lands in bytes nothing
    // checks, such as an unread padding bit, a file that still reads), never a panic.
    let mut rng = Lcg(7);
    let mut failed = 0;
    for _ in 0..3000 {
        let mut bad = bytes.clone();
        let i = rng.next() as usize % bad.len();
        bad[i] ^= 1 << (rng.next() % 8);
        if let Err(e) = read_all("flip.agg", &bad) {
            assert_eq!(e.file, "flip.agg");
            failed += 1;
        }
    }
    assert!(failed > 2900, "only {failed} of 3000 flips noticed");
    // Random bytes after a valid magic, and a header pointing far past the end.
    for n in [0usize, 8, 63, 64, 65, 1000] {
        let mut junk = aggregate_file::MAGIC.to_vec();
        junk.extend((0..n).map(|_| rng.next() as u8));
        assert!(read_all("junk.agg", &junk).is_err());
    }
    let mut far = bytes.clone();
    far[16..24].copy_from_slice(&(u64::MAX - 10).to_le_bytes());
    assert!(read_all("far.agg", &far)
        .unwrap_err()
        .message
        .contains("outside"));
}

/// Inputs built through the API, not read from a file: a communicator index out of range is an
/// error, and garbage anchors (another run's, say) give a wrong but readable merge: believable
/// clocks, every section readable, never a panic.
#[test]
fn a_merge_checks_its_inputs_and_its_clocks() {
    let run = run(2);
    let parts = per_node(&run);
    let input = |i: usize| {
        let (name, bytes) = &parts[i];
        let a = Aggregate::open(name, bytes).unwrap();
        aggregate_file::Input {
            anchors: a.anchors().unwrap(),
            matrix: a.matrix().unwrap(),
            file: name.clone(),
            header: a.header,
            overview: a.overview,
        }
    };
    let mut bad = input(1);
    bad.overview.ranks[0]
        .comms
        .push(aggregate_file::overview::RankComm {
            comm: 999,
            ..Default::default()
        });
    let e = aggregate_file::Merge::new(vec![input(0), bad])
        .err()
        .unwrap();
    assert_eq!(e.file, parts[1].0);

    let mut wild = input(1);
    let mut rng = Lcg(3);
    for a in &mut wild.anchors {
        a.end_ns = (rng.next() as i64) << 20;
    }
    let mut m = aggregate_file::Merge::new(vec![input(0), wild]).unwrap();
    let mut body = Vec::new();
    for (i, b) in m.sections() {
        let bytes = &parts[i].1[b.offset as usize..(b.offset + b.len) as usize];
        m.add_section(bytes).unwrap();
        body.extend_from_slice(bytes);
    }
    let (header, tail) = m.finish().unwrap();
    let mut file = header.encode().to_vec();
    file.extend(body);
    file.extend(tail);
    let merged = Aggregate::open("wild.agg", &file).unwrap();
    assert!(merged.overview.ranks.iter().all(|r| r.clock.plausible()));
    read_all("wild.agg", &file).unwrap();
}

/// `bytes` (a format 2 aggregate) as format 1 wrote it: version 1, a 64-byte header, no matrix
/// block (the 24 bytes after it stay, unread, before the sections).
fn as_format_1(bytes: &[u8]) -> Vec<u8> {
    let mut v1 = bytes.to_vec();
    v1[8..10].copy_from_slice(&1u16.to_le_bytes());
    v1[10..12].copy_from_slice(&64u16.to_le_bytes());
    v1
}

/// Entries equal but for rounding (each side sums its fractional bytes in its own order) and
/// the time's clock (a job's own synchronised clock runs parts per million off the run's).
fn assert_same_entries(
    got: &[analyses::patterns::MatrixEntry],
    want: &[analyses::patterns::MatrixEntry],
    what: &str,
) {
    assert_eq!(got.len(), want.len(), "{what}: pairs");
    for (a, b) in got.iter().zip(want) {
        let key = |e: &analyses::patterns::MatrixEntry| {
            (e.src, e.dst, e.parallelism.clone(), e.op.clone())
        };
        assert_eq!(key(a), key(b), "{what}");
        assert!(a.bytes.abs_diff(b.bytes) <= 1, "{what}: {a:?} vs {b:?}");
        assert!(
            a.time_ns.abs_diff(b.time_ns) <= b.time_ns.unsigned_abs() / 1000 + 10,
            "{what}: {a:?} vs {b:?}"
        );
    }
}

/// The aggregate's matrix is the analysis' `comm_matrix`: of the whole run's aggregate, and of
/// the per-node aggregates merged (each job names its ring successors on other nodes by
/// communicator rank; the merge resolves them). A format 1 file still reads, its matrix absent,
/// and a merge with one has no matrix and says so.
#[test]
fn the_aggregate_matrix_is_the_analysis_comm_matrix() {
    let run = run(4);
    let whole_session = session(&run, None);
    let analysis = analyse(&whole_session, &UserSizes::default());
    let truth = analyses::patterns::comm_matrix(&analyses::patterns::Prepared::of(
        &whole_session,
        &analysis,
    ));
    assert!(truth.entries.len() > 16, "{}", truth.entries.len());
    let whole_bytes = aggregate_of(&whole_session);
    let whole = Aggregate::open("whole.agg", &whole_bytes).unwrap();
    let m = whole.matrix().unwrap().expect("a matrix");
    let m = m.comm_matrix(&whole.overview);
    assert_same_entries(&m.entries, &truth.entries, "whole run");
    assert_eq!(m.hosts, truth.hosts);
    assert_eq!(m.nodes.len(), truth.nodes.len());

    let parts = per_node(&run);
    // Alone, a node names its successors on other nodes by communicator rank only.
    let alone = Aggregate::open(&parts[0].0, &parts[0].1).unwrap();
    let alone = alone.matrix().unwrap().unwrap();
    assert!(alone.pairs.iter().any(|p| p.to_comm_rank));
    let merged_bytes = merge_files(&parts).unwrap();
    let merged = Aggregate::open("run.agg", &merged_bytes).unwrap();
    let mm = merged.matrix().unwrap().unwrap();
    let mm = mm.comm_matrix(&merged.overview);
    assert_same_entries(&mm.entries, &truth.entries, "per-node files merged");
    assert!(mm.notes.iter().all(|n| n.kind != "unresolved-peer"));
    // Node pairs too: some cross the nodes.
    assert!(mm.nodes.iter().any(|e| e.src != e.dst));
    for (a, b) in mm.nodes.iter().zip(&truth.nodes) {
        assert_eq!(
            (a.src, a.dst, &a.parallelism, &a.op),
            (b.src, b.dst, &b.parallelism, &b.op)
        );
        assert!(a.bytes.abs_diff(b.bytes) <= 64, "{a:?} vs {b:?}");
    }

    // Format 1: reads, no matrix; merged with a format 2 file, no matrix and a note.
    let old = as_format_1(&whole_bytes);
    let o = Aggregate::open("old.agg", &old).unwrap();
    assert_eq!(o.header.matrix, None);
    assert_eq!(o.matrix().unwrap(), None);
    assert_eq!(
        o.rank(0).unwrap().kernels.len() as u64,
        o.overview.ranks[0].kernels
    );
    let mut mixed = parts.clone();
    mixed[0].1 = as_format_1(&mixed[0].1);
    let mixed = merge_files(&mixed).unwrap();
    let mixed = Aggregate::open("mixed.agg", &mixed).unwrap();
    assert_eq!(mixed.matrix().unwrap(), None);
    assert!(mixed
        .overview
        .notes
        .iter()
        .any(|n| n.contains("matrix is absent")));
}
