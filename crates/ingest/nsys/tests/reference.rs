//! Everything `read_export` returns, for every real fixture and for generator exports of both
//! schema versions (3.17 and 3.25), compared with digests recorded from the reader as it was
//! before its rewrite for speed (`tests/data/read_digests.txt`). Any change in a record, a
//! diagnostic or an order shows up as a different digest; set `NSYS_DUMP_DIR` to write the full
//! dumps and diff them.

mod common;

use common::{all_fixtures, nsys_fixture_dir};
use ingest_nsys::{read_export, ReadOptions};
use model::nsys::NsysExport;
use sqlsource_native::NativeDb;
use std::collections::BTreeMap;

/// 64-bit FNV-1a: stable across Rust versions, unlike `DefaultHasher`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The whole record, one field per line; `path` is the file's name only, so digests do not
/// depend on where the file lives.
fn dump(x: &NsysExport) -> String {
    format!("{x:#?}")
}

fn record(name: &str, x: &NsysExport, out: &mut BTreeMap<String, String>) {
    let d = dump(x);
    if let Some(dir) = std::env::var_os("NSYS_DUMP_DIR") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            std::path::Path::new(&dir).join(format!("{}.txt", name.replace('/', "_"))),
            &d,
        )
        .unwrap();
    }
    out.insert(
        name.to_string(),
        format!("{:016x} {} kernels", fnv1a(d.as_bytes()), x.kernels.len()),
    );
}

/// Generator presets covering both schema versions, NCCL's NVTX payloads, symmetric kernels,
/// dropped kernels and orphan kernels.
const PRESETS: &[&str] = &[
    "demo",
    "dp4-nvtx",
    "tp4-sym",
    "align-kdrop20",
    "ep4-alltoall",
];

fn digests() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(dir) = nsys_fixture_dir() {
        for path in all_fixtures(&dir) {
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let db = NativeDb::open(&path).unwrap();
            let x = read_export(&db, &name, &ReadOptions::default()).unwrap();
            record(&format!("real/{name}"), &x, &mut out);
        }
    }
    for preset in PRESETS {
        let config = synth::preset(preset).unwrap().config;
        let schema = config.schema.label();
        let run = synth::generate(&config);
        for rep in &run.reports {
            let mut conn = rusqlite::Connection::open_in_memory().unwrap();
            synth::write::write_report(&mut conn, rep).unwrap();
            let db = NativeDb::from_connection(conn);
            let name = format!("{preset}-{}-{schema}.sqlite", rep.host);
            let x = read_export(&db, &name, &ReadOptions::default()).unwrap();
            record(&format!("synth/{name}"), &x, &mut out);
        }
    }
    out
}

#[test]
fn read_export_output_is_unchanged() {
    let got: String = digests()
        .into_iter()
        .map(|(k, v)| format!("{k} {v}\n"))
        .collect();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/read_digests.txt");
    if std::env::var_os("NSYS_RECORD_DIGESTS").is_some() {
        std::fs::write(path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(path).unwrap();
    if nsys_fixture_dir().is_none() {
        // Without the real fixtures only the generator's lines can be compared.
        let want: String = want
            .lines()
            .filter(|l| l.starts_with("synth/"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(got, want);
        return;
    }
    assert_eq!(got, want);
}

/// Digests of other exports (`NSYS_EXTRA`, paths separated by `:`), e.g. the benchmark's large
/// files: `cargo test --release -p ingest-nsys --test reference -- --ignored --nocapture`.
#[test]
#[ignore]
fn extra_exports() {
    let Some(files) = std::env::var_os("NSYS_EXTRA") else {
        return;
    };
    let mut out = BTreeMap::new();
    for path in std::env::split_paths(&files) {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let db = NativeDb::open(&path).unwrap();
        let x = read_export(&db, &name, &ReadOptions::default()).unwrap();
        record(&path.display().to_string(), &x, &mut out);
    }
    for (k, v) in out {
        println!("{k} {v}");
    }
}
