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

/// One SQLite value of a result row. Integers are full 64-bit, whichever engine read them (see
/// [`wide_halves`] for the ids that would not fit a JavaScript number).
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

/// A 64-bit integer expression as two columns that each fit a JavaScript number exactly: its
/// high 32 bits (signed) and its low 32 bits. Scans read packed ids such as `globalPid`
/// (`hardware << 56 | pid << 24 | ...`, past 2^53) this way, so that sql.js can hand them over
/// as plain numbers, the fast way; [`join_halves`] puts them back together. NULL stays NULL.
pub fn wide_halves(expr: &str) -> [String; 2] {
    [
        format!("(({expr}) >> 32)"),
        format!("(({expr}) & 4294967295)"),
    ]
}

/// The integer whose [`wide_halves`] are `high` and `low`.
pub fn join_halves(high: Option<i64>, low: Option<i64>) -> Option<i64> {
    Some((high? << 32) | (low? & 0xffff_ffff))
}

/// A scan of one table's rows that pass a filter, in rowid order: `SELECT columns FROM table AS
/// alias WHERE filter ORDER BY alias.rowid`. A back end may read it in batches instead of row
/// by row (sql.js does); the rows are the same either way.
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
    /// them. Back ends for which a row-by-row read is costly read it in batches instead.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_join_back_to_every_64_bit_integer() {
        // The halves as SQLite computes them: an arithmetic shift and a mask.
        let halves = |v: i64| (Some(v >> 32), Some(v & 4_294_967_295));
        for v in [
            0,
            1,
            -1,
            4_294_967_295,
            4_294_967_296,
            72_064_255_582_535_680, // a generator's globalPid
            281_477_409_406_976,    // a real export's globalPid
            (1 << 53) + 1,
            i64::MAX,
            i64::MIN,
            -(1 << 40) - 7,
        ] {
            let (high, low) = halves(v);
            assert_eq!(join_halves(high, low), Some(v), "{v}");
            // Each half is exact as a JavaScript number.
            assert!(high.unwrap().unsigned_abs() < 1 << 53 && low.unwrap() < 1 << 53);
        }
        assert_eq!(join_halves(None, None), None);
        assert_eq!(wide_halves("k.globalPid")[0], "((k.globalPid) >> 32)");
    }
}
