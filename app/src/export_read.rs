//! Reading one Nsight Systems export in a worker: the file read in slices into one byte array
//! (sql.js needs the database in one piece), opened in sql.js (loaded in that worker on its
//! first export), queried, and closed. The loading worker reads exports this way, and so do the
//! helper workers it hands exports to ([`crate::parse_pool`]).

use model::nsys::NsysExport;
use pipeline::{read_export, ReadOptions};
use sqlsource_sqljs::{SqlJs, SQL_BATCH_SCRIPT};
use std::cell::RefCell;
use wasm_bindgen::JsCast;
use web_sys::{Blob, DedicatedWorkerGlobalScope};

use crate::files::{js_msg, read_all};

/// sql.js's loader and wasm, served beside the page (never from a CDN); relative to the
/// worker's script, which is served from the page's directory. `SQL_BATCH_SCRIPT` (the table
/// scans' reader) is served beside them.
const SQLJS_SCRIPT: &str = "sql-wasm.js";
const SQLJS_WASM: &str = "sql-wasm.wasm";

thread_local! {
    /// sql.js, loaded on this worker's first export; dropped after a failure so the next
    /// export starts from a fresh module.
    static SQLJS: RefCell<Option<SqlJs>> = const { RefCell::new(None) };
}

/// Why an export was not read.
pub enum ExportFailure {
    /// sql.js itself could not be loaded: a fault of this worker, not of the file (another
    /// worker may read it).
    SqlJs(String),
    /// The file's error, worded as its report words it.
    File(String),
}

impl ExportFailure {
    /// The error the file's report gives.
    pub fn message(self) -> String {
        match self {
            ExportFailure::SqlJs(e) => format!("sql.js: {e}"),
            ExportFailure::File(e) => e,
        }
    }
}

/// Reads the export `blob` under `name`; `progress(bytes_read)` as slices arrive, `stage(what)`
/// when the slower stages start (opening, querying).
pub async fn read_export_blob(
    name: &str,
    blob: &Blob,
    options: &ReadOptions,
    progress: impl FnMut(u64),
    stage: impl Fn(&str),
) -> Result<NsysExport, ExportFailure> {
    let sql = sqljs().await.map_err(ExportFailure::SqlJs)?;
    let read = async {
        let bytes = read_all(blob, progress).await?;
        stage("opening in sql.js");
        let db = sql
            .open(&bytes)
            .map_err(|e| format!("sql.js could not open the database: {e}"))?;
        drop(bytes);
        stage("querying kernels, NVTX and processes");
        // The database is freed (dropped) as soon as it has been read.
        read_export(&db, name, options)
    };
    let read = read.await.map_err(ExportFailure::File);
    if read.is_err() {
        SQLJS.with(|cell| cell.borrow_mut().take());
    }
    read
}

async fn sqljs() -> Result<SqlJs, String> {
    if let Some(s) = SQLJS.with(|s| s.borrow().clone()) {
        return Ok(s);
    }
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    scope
        .import_scripts_2(SQLJS_SCRIPT, SQL_BATCH_SCRIPT)
        .map_err(|e| format!("loading {SQLJS_SCRIPT}: {}", js_msg(e)))?;
    let s = sqlsource_sqljs::init(SQLJS_WASM)
        .await
        .map_err(|e| e.to_string())?;
    SQLJS.with(|cell| *cell.borrow_mut() = Some(s.clone()));
    Ok(s)
}
