//! Schema probing: which tables and columns this export has.
//!
//! Reads `sqlite_master` (table names) and `pragma table_info(T)` (column names) for the tables the
//! other modules need, plus `META_DATA_EXPORT` / `EXPORT_META_DATA` (renamed after schema 2.9.1)
//! for the export's product and schema version. Exports differ by version: empty tables are not
//! created at all (lazy export), columns are added mid-table, so every SELECT is built from what
//! this probe found, never `SELECT *` by position.

use sqlsource::{SqlError, SqlSource, Value};
use std::collections::HashMap;

/// Tables whose columns are probed. Others are only checked for presence.
const PROBED: &[&str] = &[
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "StringIds",
    "PROCESSES",
    "NVTX_EVENTS",
    "NVTX_PAYLOAD_SCHEMAS",
    "NVTX_PAYLOAD_SCHEMA_ENTRIES",
    "TARGET_INFO_GPU",
    "TARGET_INFO_CUDA_DEVICE",
    "TARGET_INFO_SYSTEM_ENV",
    "TARGET_INFO_SESSION_START_TIME",
    "ANALYSIS_DETAILS",
    "META_DATA_EXPORT",
    "EXPORT_META_DATA",
];

/// The tables (with their columns) that this export has, among those ncclscope reads.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    /// Keyed by the canonical name from [`PROBED`]; SQLite names are case-insensitive.
    tables: HashMap<&'static str, Vec<String>>,
}

impl Schema {
    /// Probes `db`. Fails only when the engine cannot read the database at all (not SQLite,
    /// encrypted, corrupt first page).
    pub fn load(db: &dyn SqlSource) -> Result<Schema, SqlError> {
        let mut present: Vec<String> = Vec::new();
        query(
            db,
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')",
            |r| {
                if let Some(n) = r.first().and_then(Value::as_str) {
                    present.push(n.to_string());
                }
            },
        )?;
        let mut tables = HashMap::new();
        for &want in PROBED {
            let Some(actual) = present.iter().find(|p| p.eq_ignore_ascii_case(want)) else {
                continue;
            };
            let mut cols = Vec::new();
            query(db, &format!("PRAGMA table_info({})", ident(actual)), |r| {
                // table_info rows: cid, name, type, notnull, dflt_value, pk.
                if let Some(n) = r.get(1).and_then(Value::as_str) {
                    cols.push(n.to_string());
                }
            })?;
            tables.insert(want, cols);
        }
        Ok(Schema { tables })
    }

    pub fn has_table(&self, table: &str) -> bool {
        self.tables.keys().any(|t| t.eq_ignore_ascii_case(table))
    }

    /// Whether `table` exists and has `column` (case-insensitive, as SQLite).
    pub fn has(&self, table: &str, column: &str) -> bool {
        self.columns(table)
            .iter()
            .any(|c| c.eq_ignore_ascii_case(column))
    }

    pub fn columns(&self, table: &str) -> &[String] {
        self.tables
            .iter()
            .find(|(t, _)| t.eq_ignore_ascii_case(table))
            .map(|(_, c)| c.as_slice())
            .unwrap_or(&[])
    }

    /// `alias.column` when the column exists, else `NULL`: lets one SELECT shape serve every
    /// schema version, with absent optional columns read as NULL.
    pub fn col_or_null(&self, table: &str, alias: &str, column: &str) -> String {
        if self.has(table, column) {
            format!("{alias}.{}", ident(column))
        } else {
            "NULL".to_string()
        }
    }

    /// The optional columns of `table` among `wanted` that this export lacks.
    pub fn missing<'a>(&self, table: &str, wanted: &[&'a str]) -> Vec<&'a str> {
        wanted
            .iter()
            .copied()
            .filter(|c| !self.has(table, c))
            .collect()
    }
}

/// Export product and schema version, from `META_DATA_EXPORT` (3.x) or `EXPORT_META_DATA` (2.9.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportMeta {
    pub schema_version: Option<String>,
    pub product_version: Option<String>,
    /// `EXPORT_PARAM_INCLUDE_BLOBS`: whether NVTX payload bytes were exported.
    pub include_blobs: Option<bool>,
}

pub fn export_meta(db: &dyn SqlSource, schema: &Schema) -> Result<ExportMeta, SqlError> {
    let mut meta = ExportMeta::default();
    let Some(table) = ["META_DATA_EXPORT", "EXPORT_META_DATA"]
        .into_iter()
        .find(|t| schema.has(t, "name") && schema.has(t, "value"))
    else {
        return Ok(meta);
    };
    let sql = format!(
        "SELECT name, value FROM {table} WHERE name IN \
         ('EXPORT_SCHEMA_VERSION', 'EXPORT_PRODUCT_VERSION', 'EXPORT_PARAM_INCLUDE_BLOBS')"
    );
    query(db, &sql, |r| {
        let (Some(name), Some(value)) = (r[0].as_str(), r[1].as_str()) else {
            return;
        };
        match name {
            "EXPORT_SCHEMA_VERSION" => meta.schema_version = Some(value.to_string()),
            "EXPORT_PRODUCT_VERSION" => meta.product_version = Some(value.to_string()),
            _ => meta.include_blobs = Some(value.eq_ignore_ascii_case("true")),
        }
    })?;
    Ok(meta)
}

/// Runs `sql`, handing each row to `f` (which cannot fail: bad values are skipped by the caller).
pub(crate) fn query(
    db: &dyn SqlSource,
    sql: &str,
    mut f: impl FnMut(&[Value<'_>]),
) -> Result<(), SqlError> {
    db.for_each_row(sql, &mut |r| {
        f(r);
        Ok(())
    })
}

/// A quoted SQL identifier.
pub(crate) fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

pub(crate) fn int(v: Option<&Value<'_>>) -> Option<i64> {
    v.and_then(Value::as_i64)
}

pub(crate) fn text(v: Option<&Value<'_>>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_string)
}

/// Process id packed in a `globalPid`/`globalTid`: bits 24–47.
pub(crate) fn pid_of(global: i64) -> u32 {
    ((global >> 24) & 0xFF_FFFF) as u32
}

/// Thread id packed in a `globalTid`: bits 0–23.
pub(crate) fn tid_of(global: i64) -> u32 {
    (global & 0xFF_FFFF) as u32
}
