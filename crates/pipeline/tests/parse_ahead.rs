//! Logs parsed and exports read ahead of their turn (the page's helper workers: every log
//! parsed as file 0, in any order, sent back as `wire::log` bytes; every export read and sent
//! back as `wire::export` bytes) and added to the session in the request's order with
//! `Session::add_log_parsed_ahead` and `Session::add_read_export` give the session a single
//! worker gives: every file's report (records digest included), every log's and export's
//! records, its compute kernels (read beside it, as the page's workers read them; in place
//! with `Session::read_compute`) and the analysis. The requests mix
//! logs with exports, gzip-compressed logs, a garbled and truncated log, and a file that is
//! refused before it gets an index (so later logs' indices are not their positions).

use flate2::write::GzEncoder;
use flate2::Compression;
use ingest_nsys::ReadOptions;
use load::{read_export, sniff, FileReport, InputKind, LoadedLog, LogLoader, Session};
use pipeline::{analyse, UserSizes};
use rusqlite::Connection;
use sqlsource_native::NativeDb;
use std::io::Write;

/// One input of a request, held in memory.
enum Input {
    Log(String, Vec<u8>),
    Export(String, NativeDb),
    /// Neither log nor export: refused without a file index, as the page refuses it.
    Refused,
}

/// A generator preset's files, in a request's order: exports, logs (every `gzip_every`-th one
/// gzip-compressed, if set) and, after the first log, a refused file.
fn request(preset: &str, gzip_every: Option<usize>) -> Vec<Input> {
    let run = synth::generate_named(&synth::preset(preset).expect("preset").config, Some(preset));
    let mut out: Vec<Input> = run
        .reports
        .iter()
        .map(|rep| {
            let mut conn = Connection::open_in_memory().unwrap();
            synth::write::write_report(&mut conn, rep).unwrap();
            Input::Export(
                format!("report_{}.sqlite", rep.host),
                NativeDb::from_connection(conn),
            )
        })
        .collect();
    for (i, (name, bytes)) in run.files.into_iter().enumerate() {
        if gzip_every.is_some_and(|n| i % n == 0) {
            let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
            gz.write_all(&bytes).unwrap();
            out.push(Input::Log(format!("{name}.gz"), gz.finish().unwrap()));
        } else {
            out.push(Input::Log(name, bytes));
        }
        if i == 0 {
            out.push(Input::Refused);
        }
    }
    out
}

/// A log parsed as the loading worker parses it, in 64 KiB chunks, as file `index`.
fn parse(name: &str, bytes: &[u8], index: u32) -> LoadedLog {
    let mut loader = LogLoader::new(name, index);
    for chunk in bytes.chunks(1 << 16) {
        loader.feed(chunk);
    }
    loader.finish(bytes.len() as u64)
}

fn session() -> Session {
    let mut s = Session::default();
    s.digests = true;
    s.read_compute = true;
    s
}

/// The request loaded one file after another, each log parsed in place.
fn in_place(inputs: &[Input]) -> (Session, Vec<FileReport>) {
    let mut s = session();
    let mut reports = Vec::new();
    for input in inputs {
        match input {
            Input::Log(name, bytes) => {
                assert!(matches!(sniff(bytes), InputKind::NcclLog | InputKind::Gzip));
                let log = parse(name, bytes, s.next_file_index());
                reports.push(s.add_log(log));
            }
            Input::Export(name, db) => reports.push(s.add_export(db, name, 0)),
            Input::Refused => {}
        }
    }
    (s, reports)
}

/// The request's logs parsed ahead, largest first, as file 0, and its exports read ahead, last
/// first, all through their bytes; then added in the request's order.
fn ahead(inputs: &[Input]) -> (Session, Vec<FileReport>) {
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by_key(|&i| match &inputs[i] {
        Input::Log(_, b) => std::cmp::Reverse(b.len()),
        _ => std::cmp::Reverse(0),
    });
    let mut wire: Vec<Option<Vec<u8>>> = inputs.iter().map(|_| None).collect();
    for i in order {
        match &inputs[i] {
            Input::Log(name, bytes) => {
                wire[i] = Some(wire::log::encode(&parse(name, bytes, 0).parsed));
            }
            Input::Export(name, db) => {
                let export = read_export(db, name, &ReadOptions::default()).expect("reads");
                let compute = load::read_compute_kernels(db).map(Box::new);
                let read = wire::export::ExportRead::Read(Box::new(export), Some(compute));
                wire[i] = Some(wire::export::encode(&read));
            }
            Input::Refused => {}
        }
    }
    let mut s = session();
    let mut reports = Vec::new();
    for (input, wire) in inputs.iter().zip(wire) {
        match input {
            Input::Log(name, bytes) => {
                let parsed = wire::log::decode(&wire.expect("parsed ahead")).expect("decodes");
                let log = LoadedLog {
                    name: name.clone(),
                    bytes: bytes.len() as u64,
                    parsed,
                };
                reports.push(s.add_log_parsed_ahead(log));
            }
            Input::Export(name, _) => {
                let Ok(wire::export::ExportRead::Read(export, compute)) =
                    wire::export::decode(&wire.expect("read ahead"))
                else {
                    panic!("{name}: not an export");
                };
                let compute = compute.map(|c| c.map(|c| *c));
                reports.push(s.add_read_export_with_compute(name, 0, Ok(*export), compute));
            }
            Input::Refused => {}
        }
    }
    (s, reports)
}

fn check(preset: &str, gzip_every: Option<usize>) {
    let inputs = request(preset, gzip_every);
    let (a, ra) = in_place(&inputs);
    let (b, rb) = ahead(&inputs);
    assert!(!a.logs().is_empty(), "{preset}: no logs");
    assert_eq!(ra, rb, "{preset}: every file's report");
    assert!(ra.iter().all(|r| r.digest.is_some()), "{preset}: digests");
    for (x, y) in a.logs().iter().zip(b.logs()) {
        assert_eq!(x.parsed, y.parsed, "{preset}: {}", x.name);
        assert_ne!(x.parsed.file_index, 0, "{preset}: exports come first");
    }
    assert!(!a.exports().is_empty(), "{preset}: no exports");
    assert_eq!(a.exports().len(), b.exports().len(), "{preset}: exports");
    for (x, y) in a.exports().iter().zip(b.exports()) {
        assert_eq!(x.export, y.export, "{preset}: {}", x.name);
        assert_eq!(x.compute, y.compute, "{preset}: {} compute", x.name);
        let busy = x.compute.as_ref().map_or(0, |c| c.tracks.len());
        assert!(busy > 0, "{preset}: {}: no compute kernels read", x.name);
    }
    let (x, y) = (
        analyse(&a, &UserSizes::default()),
        analyse(&b, &UserSizes::default()),
    );
    assert_eq!(x.processes, y.processes, "{preset}: processes");
    for (p, q) in x.alignments.processes.iter().zip(&y.alignments.processes) {
        assert_eq!(p.alignment, q.alignment, "{preset}: {:?}", p.process);
    }
}

#[test]
fn parsed_ahead_equals_parsed_in_place_demo() {
    // The demo's combined log has garbled lines and a truncated last line: diagnostics and
    // their line numbers must survive the trip.
    check("demo", None);
}

#[test]
fn parsed_ahead_equals_parsed_in_place_tp2pp2_gzip() {
    check("tp2pp2", Some(2));
}

#[test]
fn parsed_ahead_equals_parsed_in_place_tp2pp2() {
    check("tp2pp2", None);
}
