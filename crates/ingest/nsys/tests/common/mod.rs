//! Shared by the integration tests: where the real fixtures are, and opening them.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The real Nsight fixtures' directory (`real_fixtures`); `None`, with a printed notice, when
/// absent, so the tests skip rather than fail.
pub fn nsys_fixture_dir() -> Option<PathBuf> {
    testkit::fixtures::dir("nsys")
}

/// Every `.sqlite` file of the fixture dir, sorted.
pub fn all_fixtures(dir: &Path) -> Vec<PathBuf> {
    testkit::fixtures::files_in(dir, "sqlite")
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
