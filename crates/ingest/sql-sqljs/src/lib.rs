//! [`SqlSource`] over sql.js, for the page (wasm32 only).
//!
//! sql.js is loaded by the page itself (`sql-wasm.js` and `sql-wasm.wasm`, copied from the npm
//! package at build time and served from the page's own origin; never a CDN). Its global
//! `initSqlJs` is awaited once with [`init`]; after that every call is synchronous, as with
//! rusqlite. Row by row, integers are read as BigInts (`{useBigInt: true}`): packed 64-bit ids
//! such as `globalPid` would otherwise round through a JS number without any error. Table scans
//! go through [`SQL_BATCH_SCRIPT`] instead, which reads numbers and falls back to BigInts only
//! for a row holding an integer a number cannot hold.

use js_sys::{Array, Float64Array, Function, Object, Promise, Reflect, Uint8Array};
use sqlsource::{Row, SqlError, SqlSource, TableScan, Value};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen]
extern "C" {
    /// sql.js's loader, defined globally by `sql-wasm.js`.
    #[wasm_bindgen(js_name = initSqlJs, catch)]
    fn init_sql_js(config: &JsValue) -> Result<Promise, JsValue>;

    /// A sql.js `Database` (made through the `SQL.Database` constructor the loader returns).
    #[derive(Clone)]
    pub type JsDatabase;

    #[wasm_bindgen(method, catch)]
    fn prepare(this: &JsDatabase, sql: &str) -> Result<JsStatement, JsValue>;

    #[wasm_bindgen(method, catch)]
    fn close(this: &JsDatabase) -> Result<(), JsValue>;

    /// A prepared statement; must be `free()`d.
    type JsStatement;

    #[wasm_bindgen(method, catch)]
    fn step(this: &JsStatement) -> Result<bool, JsValue>;

    #[wasm_bindgen(method, catch)]
    fn get(this: &JsStatement, params: &JsValue, config: &JsValue) -> Result<Array, JsValue>;

    #[wasm_bindgen(method)]
    fn free(this: &JsStatement) -> bool;

    /// [`SQL_BATCH_SCRIPT`]'s reader: up to `max_rows` rows of `stmt` into `nums` and `tags`
    /// (`columns` cells a row; texts and blobs into `extra`); returns the rows read. `module`
    /// is sql.js's (whose C entry points read numeric cells without building a row's array).
    #[wasm_bindgen(js_name = ncclscopeSqlBatch, catch)]
    fn sql_batch(
        stmt: &JsStatement,
        columns: u32,
        max_rows: u32,
        nums: &Float64Array,
        tags: &Uint8Array,
        extra: &Array,
        module: &JsValue,
    ) -> Result<u32, JsValue>;
}

/// The script a worker loads right after `sql-wasm.js` (with `importScripts`) for table scans;
/// its source is this crate's `js/sql-batch.js`, which the page's build copies beside sql.js.
pub const SQL_BATCH_SCRIPT: &str = "sql-batch.js";

/// The initialised sql.js module (`SQL` in sql.js's documentation).
#[derive(Clone)]
pub struct SqlJs {
    module: JsValue,
}

/// Loads sql.js's wasm. `wasm_url` is where `sql-wasm.wasm` is served, relative to the page
/// (so the site works from any sub-path).
pub async fn init(wasm_url: &str) -> Result<SqlJs, SqlError> {
    let config = Object::new();
    let url = wasm_url.to_string();
    let locate = Closure::<dyn Fn(String) -> String>::new(move |_file: String| url.clone());
    Reflect::set(&config, &"locateFile".into(), locate.as_ref()).map_err(js_err)?;
    let promise = init_sql_js(&config).map_err(js_err)?;
    let module = wasm_bindgen_futures::JsFuture::from(promise)
        .await
        .map_err(js_err)?;
    // sql.js may call locateFile again lazily; it lives as long as the page.
    locate.forget();
    Ok(SqlJs { module })
}

impl SqlJs {
    /// Opens a database from the file's bytes. sql.js copies them into its own memory.
    pub fn open(&self, bytes: &Uint8Array) -> Result<SqlJsDb, SqlError> {
        let ctor: Function = Reflect::get(&self.module, &"Database".into())
            .map_err(js_err)?
            .dyn_into()
            .map_err(|_| SqlError::new("sql.js has no Database constructor"))?;
        let args = Array::of1(bytes);
        let db = Reflect::construct(&ctor, &args).map_err(js_err)?;
        Ok(SqlJsDb {
            db: db.unchecked_into(),
            module: self.module.clone(),
        })
    }
}

/// An open sql.js database. Closed (its wasm memory freed) when dropped.
pub struct SqlJsDb {
    db: JsDatabase,
    /// The sql.js module it was opened with.
    module: JsValue,
}

impl Drop for SqlJsDb {
    fn drop(&mut self) {
        let _ = self.db.close();
    }
}

/// Frees a statement however the row loop ends.
struct StatementGuard(JsStatement);

impl Drop for StatementGuard {
    fn drop(&mut self) {
        self.0.free();
    }
}

/// One cell copied out of JS, owned so that [`Value`]s can borrow it.
enum Cell {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Cell {
    fn from_js(v: JsValue) -> Cell {
        // Integers first: they are nearly every cell of the hot queries.
        if v.is_bigint() {
            i64::try_from(v).map(Cell::Integer).unwrap_or(Cell::Null)
        } else if v.is_null() || v.is_undefined() {
            Cell::Null
        } else if let Some(f) = v.as_f64() {
            Cell::Real(f)
        } else if let Some(s) = v.as_string() {
            Cell::Text(s)
        } else if v.is_instance_of::<Uint8Array>() {
            Cell::Blob(Uint8Array::new(&v).to_vec())
        } else {
            Cell::Null
        }
    }

    /// A cell as [`SQL_BATCH_SCRIPT`] tags it (see there).
    fn from_batch(tag: u8, num: f64, extra: &Array) -> Result<Cell, SqlError> {
        let item = || extra.get(num as u32);
        Ok(match tag {
            0 => Cell::Null,
            1 => Cell::Integer(num as i64),
            2 => Cell::Real(num),
            3 => Cell::Text(item().as_string().unwrap_or_default()),
            4 => Cell::Blob(Uint8Array::new(&item()).to_vec()),
            5 => {
                let text = item().as_string().unwrap_or_default();
                Cell::Integer(text.parse().map_err(|_| {
                    SqlError::new(format!("{SQL_BATCH_SCRIPT}: not a 64-bit integer: {text}"))
                })?)
            }
            other => {
                return Err(SqlError::new(format!(
                    "{SQL_BATCH_SCRIPT}: unknown cell tag {other}"
                )))
            }
        })
    }

    fn value(&self) -> Value<'_> {
        match self {
            Cell::Null => Value::Null,
            Cell::Integer(i) => Value::Integer(*i),
            Cell::Real(r) => Value::Real(*r),
            Cell::Text(s) => Value::Text(s),
            Cell::Blob(b) => Value::Blob(b),
        }
    }
}

/// One row copied out of sql.js's array (one `get()` per row; the cell vector is reused).
struct Cells<'a>(&'a [Cell]);

impl Row for Cells<'_> {
    fn column_count(&self) -> usize {
        self.0.len()
    }

    fn value(&self, i: usize) -> Value<'_> {
        self.0.get(i).map_or(Value::Null, Cell::value)
    }

    fn int(&self, i: usize) -> Option<i64> {
        match self.0.get(i)? {
            Cell::Integer(v) => Some(*v),
            Cell::Real(r) => Some(*r as i64),
            _ => None,
        }
    }
}

impl SqlSource for SqlJsDb {
    fn for_each(
        &self,
        sql: &str,
        row_fn: &mut dyn FnMut(&dyn Row) -> Result<(), SqlError>,
    ) -> Result<(), SqlError> {
        let stmt = StatementGuard(self.db.prepare(sql).map_err(js_err)?);
        let config = Object::new();
        Reflect::set(&config, &"useBigInt".into(), &JsValue::TRUE).map_err(js_err)?;
        let config: JsValue = config.into();
        let mut cells: Vec<Cell> = Vec::new();
        while stmt.0.step().map_err(js_err)? {
            let row = stmt.0.get(&JsValue::NULL, &config).map_err(js_err)?;
            cells.clear();
            cells.extend(row.iter().map(Cell::from_js));
            row_fn(&Cells(&cells))?;
        }
        Ok(())
    }

    /// A table scan in batches ([`SQL_BATCH_SCRIPT`]): JavaScript reads each row's cells as
    /// numbers into typed arrays, which cross into Rust once per batch. Read row by row from
    /// Rust, every cell was one crossing and every integer a BigInt, nearly all of an export's
    /// read in the page.
    fn scan(
        &self,
        scan: &TableScan<'_>,
        row_fn: &mut dyn FnMut(&dyn Row) -> Result<(), SqlError>,
    ) -> Result<(), SqlError> {
        let columns = scan.columns.len();
        let batch_rows = (BATCH_CELLS / columns.max(1)).max(1);
        let room = batch_rows * columns;
        let stmt = StatementGuard(self.db.prepare(&scan.sql()).map_err(js_err)?);
        let (js_nums, js_tags) = (
            Float64Array::new_with_length(room as u32),
            Uint8Array::new_with_length(room as u32),
        );
        let (mut nums, mut tags) = (vec![0f64; room], vec![0u8; room]);
        let mut cells: Vec<Cell> = Vec::with_capacity(columns);
        loop {
            let extra = Array::new();
            let rows = sql_batch(
                &stmt.0,
                columns as u32,
                batch_rows as u32,
                &js_nums,
                &js_tags,
                &extra,
                &self.module,
            )
            .map_err(|e| SqlError::new(format!("{SQL_BATCH_SCRIPT}: {}", js_err(e))))?
                as usize;
            // The script reads at most `batch_rows`; held to it here, every index below is in
            // the batch's room.
            let rows = rows.min(batch_rows);
            let filled = rows * columns;
            js_nums
                .subarray(0, filled as u32)
                .copy_to(&mut nums[..filled]);
            js_tags
                .subarray(0, filled as u32)
                .copy_to(&mut tags[..filled]);
            for at in (0..rows).map(|r| r * columns) {
                cells.clear();
                for c in at..at + columns {
                    cells.push(Cell::from_batch(tags[c], nums[c], &extra)?);
                }
                row_fn(&Cells(&cells))?;
            }
            if rows < batch_rows {
                return Ok(());
            }
        }
    }
}

/// Cells per batch of a table scan: half a megabyte of numbers, whatever the row's width.
const BATCH_CELLS: usize = 1 << 16;

/// A JS exception as a [`SqlError`], keeping sql.js's own message.
fn js_err(e: JsValue) -> SqlError {
    let message = e
        .dyn_ref::<js_sys::Error>()
        .map(|err| String::from(err.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"));
    SqlError::new(message)
}
