//! Shared by the integration tests: where the real fixtures are, and opening them.

#![allow(dead_code)]

use std::path::PathBuf;

/// `$NCCLSCOPE_REAL_FIXTURES/nsys`, else the shared fixture tree next to the workspace.
/// `None` (with a printed notice) when absent, so the tests skip rather than fail.
pub fn nsys_fixture_dir() -> Option<PathBuf> {
    let root = std::env::var_os("NCCLSCOPE_REAL_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../shared/fixtures/real"
            ))
        });
    let dir = root.join("nsys");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "NOTICE: real Nsight fixtures not found at {}: test skipped",
            dir.display()
        );
        None
    }
}

/// Every `.sqlite` file of the fixture dir, sorted.
pub fn all_fixtures(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixture dir readable")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    v.sort();
    v
}

/// A read-only rusqlite connection for the independent SQL of the tests.
pub fn raw(path: &std::path::Path) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open fixture")
}

pub fn scalar_i64(conn: &rusqlite::Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
        .expect(sql)
        .unwrap_or(0)
}

pub fn has_table(conn: &rusqlite::Connection, t: &str) -> bool {
    scalar_i64(
        conn,
        &format!("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='{t}'"),
    ) > 0
}
