//! How ncclscope reads a SQLite database without knowing which engine runs it.
//!
//! Rows are pushed to a callback (as ripgrep's searcher pushes into a `Sink`), so each back end
//! keeps its statement lifetimes to itself: rusqlite rows borrow their statement, and sql.js
//! statements must be freed. The callback reads the current row in place through [`Row`] (typed
//! integer reads, no per-row vector or boxing): exports hold millions of kernel rows, and a
//! per-row allocation costs more than SQLite's own decoding of the row.
//!
//! Two implementations exist: `sqlsource-native` (rusqlite) and `sqlsource-sqljs` (sql.js through
//! wasm-bindgen). Callers cannot tell which one they have.

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

/// The current result row of a running query. Valid only inside the callback it is handed to.
pub trait Row {
    /// Number of result columns.
    fn column_count(&self) -> usize;

    /// Column `i` (0-based); `Null` past the last column.
    fn value(&self, i: usize) -> Value<'_>;

    /// Column `i` as an integer (a real is truncated, as [`Value::as_i64`]); `None` for NULL,
    /// text, blobs and past the last column. Back ends override it to skip building a [`Value`].
    fn int(&self, i: usize) -> Option<i64> {
        self.value(i).as_i64()
    }
}

pub mod packed;

/// A scan of one table's rows that pass a filter, in rowid order: `SELECT columns FROM table AS
/// alias WHERE filter ORDER BY alias.rowid`. A back end may fetch it in batches instead of row
/// by row ([`packed`]); the rows are the same either way.
#[derive(Debug, Clone, Copy)]
pub struct TableScan<'a> {
    pub table: &'a str,
    pub alias: &'a str,
    /// Column expressions over `alias`.
    pub columns: &'a [String],
    /// A condition over `alias` (`1` for every row).
    pub filter: &'a str,
}

impl TableScan<'_> {
    /// The scan as one query.
    pub fn sql(&self) -> String {
        format!(
            "SELECT {} FROM {} AS {a} WHERE ({}) ORDER BY {a}.rowid",
            self.columns.join(", "),
            self.table,
            self.filter,
            a = self.alias
        )
    }
}

/// A read-only SQLite database.
pub trait SqlSource {
    /// Runs `sql` and calls `row` once per result row, in order, with the row in place. The
    /// callback may stop the query early by returning an error, which is passed back.
    fn for_each(
        &self,
        sql: &str,
        row: &mut dyn FnMut(&dyn Row) -> Result<(), SqlError>,
    ) -> Result<(), SqlError>;

    /// The rows of `scan`, in order, as [`SqlSource::for_each`] over [`TableScan::sql`] gives
    /// them. Back ends for which a row-by-row read is costly fetch it in batches instead.
    fn scan(
        &self,
        scan: &TableScan<'_>,
        row: &mut dyn FnMut(&dyn Row) -> Result<(), SqlError>,
    ) -> Result<(), SqlError> {
        self.for_each(&scan.sql(), row)
    }

    /// As [`SqlSource::for_each`], with each row copied into a slice of values: convenient for
    /// small results (schema probes, metadata); hot loops read through [`Row`] instead.
    fn for_each_row(
        &self,
        sql: &str,
        row: &mut dyn FnMut(&[Value<'_>]) -> Result<(), SqlError>,
    ) -> Result<(), SqlError> {
        self.for_each(sql, &mut |r| {
            let values: Vec<Value<'_>> = (0..r.column_count()).map(|i| r.value(i)).collect();
            row(&values)
        })
    }
}

/// The 16-byte header every SQLite database file starts with.
pub const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";
