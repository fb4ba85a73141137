//! [`SqlSource`] over rusqlite (native only).

use rusqlite::{types::ValueRef, Connection, OpenFlags};
use sqlsource::{Row, SqlError, SqlSource, Value};
use std::path::Path;

/// A database opened read-only from a file.
pub struct NativeDb {
    conn: Connection,
}

impl NativeDb {
    pub fn open(path: &Path) -> Result<Self, SqlError> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| SqlError::new(e.to_string()))?;
        Ok(NativeDb { conn })
    }

    /// Wraps a connection the caller made (the generator writes through one).
    pub fn from_connection(conn: Connection) -> Self {
        NativeDb { conn }
    }
}

/// A rusqlite row seen through [`Row`]: columns are decoded by SQLite on demand, nothing is
/// copied.
struct NativeRow<'r, 's> {
    row: &'r rusqlite::Row<'s>,
    ncols: usize,
}

impl Row for NativeRow<'_, '_> {
    fn column_count(&self) -> usize {
        self.ncols
    }

    fn value(&self, i: usize) -> Value<'_> {
        match self.row.get_ref(i) {
            Ok(ValueRef::Null) | Err(_) => Value::Null,
            Ok(ValueRef::Integer(i)) => Value::Integer(i),
            Ok(ValueRef::Real(r)) => Value::Real(r),
            Ok(ValueRef::Text(t)) => Value::Text(std::str::from_utf8(t).unwrap_or("\u{FFFD}")),
            Ok(ValueRef::Blob(b)) => Value::Blob(b),
        }
    }

    fn int(&self, i: usize) -> Option<i64> {
        match self.row.get_ref(i) {
            Ok(ValueRef::Integer(i)) => Some(i),
            Ok(ValueRef::Real(r)) => Some(r as i64),
            _ => None,
        }
    }
}

impl SqlSource for NativeDb {
    fn for_each(
        &self,
        sql: &str,
        row_fn: &mut dyn FnMut(&dyn Row) -> Result<(), SqlError>,
    ) -> Result<(), SqlError> {
        let err = |e: rusqlite::Error| SqlError::new(e.to_string());
        let mut stmt = self.conn.prepare(sql).map_err(err)?;
        let ncols = stmt.column_count();
        let mut rows = stmt.query([]).map_err(err)?;
        while let Some(row) = rows.next().map_err(err)? {
            row_fn(&NativeRow { row, ncols })?;
        }
        Ok(())
    }
}
