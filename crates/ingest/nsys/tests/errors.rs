//! Bad inputs: each is a clear error (or, for "no NCCL kernels" and a missing kernel table, a
//! warning) naming the file. The bad files are made here, in a fresh temp dir.

mod common;

use common::nsys_fixture_dir;
use ingest_nsys::{read_export, ReadOptions};
use model::{Diagnostic, Severity};
use sqlsource_native::NativeDb;
use std::path::{Path, PathBuf};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "ncclscope-ingest-nsys-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Opens and reads `path`; an engine that refuses to open counts as the error it would be.
fn try_read(path: &Path) -> Result<model::nsys::NsysExport, Diagnostic> {
    let name = path.display().to_string();
    let db = NativeDb::open(path).map_err(|e| Diagnostic::error(&name, 0, e.message))?;
    read_export(&db, &name, &ReadOptions::default())
}

fn assert_error(path: &Path, needle: &str) {
    let err = try_read(path).expect_err("should fail");
    assert_eq!(err.severity, Severity::Error);
    assert_eq!(err.path, path.display().to_string());
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    assert!(err.message.contains(needle), "{err}");
}

#[test]
fn text_file_is_not_sqlite() {
    let dir = TempDir::new("text");
    let p = dir.0.join("notes.sqlite");
    std::fs::write(&p, "NCCL INFO this is a log, not a database\n".repeat(200)).unwrap();
    assert_error(&p, "not a readable SQLite database");
}

#[test]
fn random_bytes_renamed_sqlite() {
    let dir = TempDir::new("random");
    let p = dir.0.join("random.sqlite");
    // A fixed xorshift stream: deterministic "random" bytes.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes: Vec<u8> = (0..65536)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&p, bytes).unwrap();
    assert_error(&p, "not a readable SQLite database");
}

#[test]
fn empty_sqlite_database() {
    let dir = TempDir::new("empty");
    let p = dir.0.join("empty.sqlite");
    let conn = rusqlite::Connection::open(&p).unwrap();
    // A page written so the file really is an (empty) SQLite database, not a 0-byte file.
    conn.execute_batch("CREATE TABLE t(x); DROP TABLE t;")
        .unwrap();
    drop(conn);
    assert_error(&p, "StringIds");
}

#[test]
fn zero_byte_file() {
    let dir = TempDir::new("zero");
    let p = dir.0.join("zero.sqlite");
    std::fs::write(&p, b"").unwrap();
    // SQLite treats a 0-byte file as an empty database.
    assert_error(&p, "StringIds");
}

#[test]
fn truncated_fixture() {
    let Some(fx) = nsys_fixture_dir() else { return };
    let dir = TempDir::new("trunc");
    let src = std::fs::read(fx.join("GindaChen-nsys-ai_mfu_2gpu_before.sqlite")).unwrap();
    for keep in [src.len() * 19 / 20, src.len() / 2, src.len() / 8, 4096] {
        let p = dir.0.join(format!("cut-{keep}.sqlite"));
        std::fs::write(&p, &src[..keep]).unwrap();
        let err = try_read(&p).expect_err("a truncated export must not read as whole");
        assert_eq!(err.severity, Severity::Error);
        assert_eq!(err.path, p.display().to_string());
        println!("{keep} bytes: {err}");
    }
}

#[test]
fn kernel_table_absent_is_a_warning() {
    let dir = TempDir::new("nokernels");
    let p = dir.0.join("nvtx-only.sqlite");
    let conn = rusqlite::Connection::open(&p).unwrap();
    conn.execute_batch(
        "CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
                                   text TEXT, globalTid INTEGER);
         INSERT INTO NVTX_EVENTS VALUES (10, 20, 59, 'train_step', (7 << 24) | 9);",
    )
    .unwrap();
    drop(conn);
    let x = try_read(&p).expect("readable");
    assert!(x.kernels.is_empty());
    let w = x
        .diagnostics
        .iter()
        .find(|d| d.message.contains("CUPTI_ACTIVITY_KIND_KERNEL"))
        .expect("warning");
    assert_eq!(w.severity, Severity::Warning);
    assert_eq!(w.path, p.display().to_string());
    assert_eq!(x.nvtx.len(), 1);
    assert_eq!((x.nvtx[0].pid, x.nvtx[0].tid), (7, 9));
    assert_eq!(x.iterations, vec![0]);
}
