//! [`SqlSource`] over rusqlite (native only).

use rusqlite::{types::ValueRef, Connection, OpenFlags};
use sqlsource::{SqlError, SqlSource, Value};
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

impl SqlSource for NativeDb {
    fn for_each_row(
        &self,
        sql: &str,
        row_fn: &mut dyn FnMut(&[Value<'_>]) -> Result<(), SqlError>,
    ) -> Result<(), SqlError> {
        let err = |e: rusqlite::Error| SqlError::new(e.to_string());
        let mut stmt = self.conn.prepare(sql).map_err(err)?;
        let ncols = stmt.column_count();
        let mut rows = stmt.query([]).map_err(err)?;
        while let Some(row) = rows.next().map_err(err)? {
            // A fresh vector per row: its values borrow this row only.
            let mut values: Vec<Value<'_>> = Vec::with_capacity(ncols);
            for i in 0..ncols {
                let v = match row.get_ref(i).map_err(err)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(i) => Value::Integer(i),
                    ValueRef::Real(r) => Value::Real(r),
                    ValueRef::Text(t) => Value::Text(std::str::from_utf8(t).unwrap_or("\u{FFFD}")),
                    ValueRef::Blob(b) => Value::Blob(b),
                };
                values.push(v);
            }
            row_fn(&values)?;
        }
        Ok(())
    }
}
