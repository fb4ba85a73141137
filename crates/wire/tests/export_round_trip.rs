//! Every read export comes back from its bytes equal to itself: the real exports of every
//! schema and the generator's; garbage and every cut of an encoding is an error, never a panic.
#![cfg(not(target_arch = "wasm32"))]

use ingest_nsys::{read_export, ReadOptions};
use model::nsys::NsysExport;
use sqlsource_native::NativeDb;
use std::path::{Path, PathBuf};
use wire::export::ExportRead;

fn read(path: &Path) -> NsysExport {
    let db = NativeDb::open(path).expect("open");
    read_export(&db, &path.display().to_string(), &ReadOptions::default()).expect("read")
}

fn real_exports() -> Vec<PathBuf> {
    testkit::fixtures::files("nsys", "sqlite")
}

/// The generator's exports, written to `dir`.
fn generated_exports(dir: &Path) -> Vec<PathBuf> {
    for preset in ["demo", "ep4-alltoall"] {
        let run = synth::generate(&synth::preset(preset).expect("preset").config);
        synth::write::write_run(&run, &dir.join(preset)).expect("write run");
    }
    let mut v: Vec<PathBuf> = ["demo", "ep4-alltoall"]
        .iter()
        .flat_map(|p| std::fs::read_dir(dir.join(p)).expect("run dir"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sqlite"))
        .collect();
    v.sort();
    v
}

fn assert_round_trip(path: &Path) -> usize {
    let export = read(path);
    let compute = ingest_nsys::read_compute_kernels(&NativeDb::open(path).expect("open"))
        .map(Box::new)
        .map_err(|e| e.to_string());
    let wire = wire::export::encode(&ExportRead::Read(
        Box::new(export.clone()),
        Some(compute.clone()),
    ));
    let Ok(ExportRead::Read(back, back_compute)) = wire::export::decode(&wire) else {
        panic!("{}: does not decode to an export", path.display());
    };
    assert_eq!(*back, export, "{}", path.display());
    assert_eq!(back_compute, Some(compute), "{}: compute", path.display());
    // Not only equal: every record field, printed (interning tables rebuilt, floats exact).
    assert_eq!(
        format!("{back:?}"),
        format!("{export:?}"),
        "{}",
        path.display()
    );
    export.kernels.len() + export.nvtx.len()
}

#[test]
fn real_exports_come_back_equal() {
    let files = real_exports();
    let records: usize = files.iter().map(|p| assert_round_trip(p)).sum();
    if !files.is_empty() {
        assert!(records > 1000, "{records} kernels and ranges travelled");
    }
}

#[test]
fn generated_exports_come_back_equal() {
    let dir = std::env::temp_dir().join(format!("nsys-wire-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let files = generated_exports(&dir);
    assert!(files.len() >= 2, "{} generated exports", files.len());
    let records: usize = files.iter().map(|p| assert_round_trip(p)).sum();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(records > 1000, "{records} kernels and ranges travelled");
}

#[test]
fn garbage_and_cuts_are_errors() {
    let dir = std::env::temp_dir().join(format!("nsys-wire-cuts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = generated_exports(&dir)
        .into_iter()
        .next()
        .expect("an export");
    let wire = wire::export::encode(&ExportRead::Read(Box::new(read(&path)), None));
    let _ = std::fs::remove_dir_all(&dir);
    // About 300 cuts, wherever the encoding is long.
    for n in (0..wire.len()).step_by((wire.len() / 300).max(1)) {
        assert!(
            wire::export::decode(&wire[..n]).is_err(),
            "a cut at {n} decoded"
        );
    }
    assert!(wire::export::decode(b"SQLite format 3\0 not postcard").is_err());
}

#[test]
fn a_failure_travels_as_its_message() {
    let failed =
        ExportRead::Failed("sql.js could not open the database: file is not a database".into());
    assert_eq!(
        wire::export::decode(&wire::export::encode(&failed)),
        Ok(failed)
    );
}
