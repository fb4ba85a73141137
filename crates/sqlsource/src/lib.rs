//! How ncclscope reads a SQLite database without knowing which engine runs it.
//!
//! Rows are pushed to a callback (as ripgrep's searcher pushes into a `Sink`), so each back end
//! keeps its statement lifetimes to itself: rusqlite rows borrow their statement, and sql.js
//! statements must be freed. Two implementations exist: `sqlsource-native` (rusqlite) and
//! `sqlsource-sqljs` (sql.js through wasm-bindgen). Callers cannot tell which one they have.

/// One SQLite value of a result row. Integers are full 64-bit (sql.js is asked for BigInts, so
/// packed ids such as `globalPid` never round through a JS number).
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Null,
    Integer(i64),
    Real(f64),
    Text(&'a str),
    Blob(&'a [u8]),
}

impl Value<'_> {
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Integer(i) => Some(i),
            Value::Real(r) => Some(r as i64),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_blob(&self) -> Option<&[u8]> {
        match self {
            Value::Blob(b) => Some(b),
            _ => None,
        }
    }
}

/// An engine error, with the engine's own message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError {
    pub message: String,
}

impl SqlError {
    pub fn new(message: impl Into<String>) -> Self {
        SqlError {
            message: message.into(),
        }
    }
}

impl std::fmt::Display for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SqlError {}

/// A read-only SQLite database.
pub trait SqlSource {
    /// Runs `sql` and calls `row` once per result row, in order. The callback may stop the query
    /// early by returning an error, which is passed back.
    fn for_each_row(
        &self,
        sql: &str,
        row: &mut dyn FnMut(&[Value<'_>]) -> Result<(), SqlError>,
    ) -> Result<(), SqlError>;
}

/// The 16-byte header every SQLite database file starts with.
pub const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";
