//! Reading one Nsight Systems export in a worker: the file read in slices into one byte array
//! (sql.js needs the database in one piece), opened in sql.js (loaded in that worker on its
//! first export), queried, and closed. The loading worker reads exports this way, and so do the
//! helper workers it hands exports to ([`crate::worker::parse_pool`]).

use futures_util::future::{FutureExt, LocalBoxFuture, Shared};
use load::{read_compute_kernels, read_export, ComputeRead, ReadOptions};
use model::nsys::NsysExport;
use sqlsource_sqljs::{SqlJs, SQL_BATCH_SCRIPT};
use std::cell::RefCell;
use wasm_bindgen::JsCast;
use web_sys::{Blob, DedicatedWorkerGlobalScope};

use crate::page_logic::files::{js_msg, read_all};

/// sql.js's loader and wasm, served beside the page (never from a CDN); relative to the
/// worker's script, which is served from the page's directory. `SQL_BATCH_SCRIPT` (the table
/// scans' reader) is served beside them.
const SQLJS_SCRIPT: &str = "sql-wasm.js";
const SQLJS_WASM: &str = "sql-wasm.wasm";

/// sql.js being loaded: one load, however many exports (or [`preload`]) wait for it.
type Loading = Shared<LocalBoxFuture<'static, Result<SqlJs, String>>>;

thread_local! {
    /// sql.js, loaded by [`preload`] or on this worker's first export; dropped after a failure
    /// so the next export starts from a fresh module.
    static SQLJS: RefCell<Option<Loading>> = const { RefCell::new(None) };
}

/// Loads sql.js now, while the worker waits for files: its script and wasm were fetched and
/// compiled on the first export's turn, 170-200 ms of a load in each worker that read one.
pub fn preload() {
    let loading = sqljs();
    wasm_bindgen_futures::spawn_local(async move {
        let _ = loading.await;
    });
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

/// A read export and its compute kernels (or why they were not read: the export stands).
pub struct ReadExport {
    pub export: NsysExport,
    /// `None` when not asked for (never, from [`read_export_blob`]).
    pub compute: Option<ComputeRead>,
}

impl ReadExport {
    /// Adds it to `session` under `name` of `bytes`, or the failure `read` is.
    pub fn add_to(
        session: &mut load::Session,
        name: &str,
        bytes: u64,
        read: Result<ReadExport, String>,
    ) -> load::FileReport {
        match read {
            Ok(r) => session.add_read_export_with_compute(name, bytes, Ok(r.export), r.compute),
            Err(e) => session.add_read_export(name, bytes, Err(e)),
        }
    }

    /// As a helper posts it back (`wire::export`).
    pub fn to_wire(self) -> wire::export::ExportRead {
        wire::export::ExportRead::Read(Box::new(self.export), self.compute.map(|c| c.map(Box::new)))
    }

    /// What a helper's `wire::export` answer was: the export, or the file's error.
    pub fn from_wire(read: wire::export::ExportRead) -> Result<ReadExport, String> {
        match read {
            wire::export::ExportRead::Read(export, compute) => Ok(ReadExport {
                export: *export,
                compute: compute.map(|c| c.map(|c| *c)),
            }),
            wire::export::ExportRead::Failed(e) => Err(e),
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
) -> Result<ReadExport, ExportFailure> {
    let sql = match sqljs().await {
        Ok(sql) => sql,
        Err(e) => {
            SQLJS.with(|cell| cell.borrow_mut().take());
            return Err(ExportFailure::SqlJs(e));
        }
    };
    let read = async {
        let bytes = read_all(blob, progress).await?;
        stage("opening in sql.js");
        let db = sql
            .open(&bytes)
            .map_err(|e| format!("sql.js could not open the database: {e}"))?;
        drop(bytes);
        stage("querying kernels, NVTX and processes");
        // The database is freed (dropped) as soon as it has been read.
        let export = read_export(&db, name, options)?;
        stage("querying compute kernels");
        let compute = Some(read_compute_kernels(&db));
        Ok(ReadExport { export, compute })
    };
    let read = read.await.map_err(ExportFailure::File);
    if read.is_err() {
        SQLJS.with(|cell| cell.borrow_mut().take());
    }
    read
}

/// This worker's sql.js: loaded, being loaded, or loaded now.
fn sqljs() -> Loading {
    SQLJS.with(|cell| {
        cell.borrow_mut()
            .get_or_insert_with(|| load_sqljs().boxed_local().shared())
            .clone()
    })
}

async fn load_sqljs() -> Result<SqlJs, String> {
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    scope
        .import_scripts_2(SQLJS_SCRIPT, SQL_BATCH_SCRIPT)
        .map_err(|e| format!("loading {SQLJS_SCRIPT}: {}", js_msg(e)))?;
    sqlsource_sqljs::init(SQLJS_WASM)
        .await
        .map_err(|e| e.to_string())
}
