//! One dropped or fetched file → a [`pipeline`] result: sniffed by content, logs parsed as they
//! stream in, SQLite exports opened in sql.js and read through the same queries as natively.

use pipeline::{sniff, FileReport, InputKind, LogLoader, Session, SNIFF_BYTES};
use sqlsource_sqljs::SqlJs;
use std::cell::RefCell;
use web_sys::Blob;

use crate::files::{for_each_slice, read_all};

thread_local! {
    /// sql.js is initialised once per page, on the first export.
    static SQLJS: RefCell<Option<SqlJs>> = const { RefCell::new(None) };
}

/// `sql-wasm.wasm`, relative to the page so the site works from any sub-path.
const SQLJS_WASM: &str = "sql-wasm.wasm";

async fn sqljs() -> Result<SqlJs, String> {
    if let Some(s) = SQLJS.with(|s| s.borrow().clone()) {
        return Ok(s);
    }
    let s = sqlsource_sqljs::init(SQLJS_WASM)
        .await
        .map_err(|e| e.to_string())?;
    SQLJS.with(|cell| *cell.borrow_mut() = Some(s.clone()));
    Ok(s)
}

/// Loads one file into `session`; `progress(bytes_read)` is called as slices arrive.
pub async fn load_blob(
    session: &RefCell<Session>,
    name: &str,
    blob: &Blob,
    mut progress: impl FnMut(u64),
) -> FileReport {
    let size = blob.size() as u64;
    // The same head the command sniffs: a log's first NCCL line may follow a long preamble.
    let head = match blob.slice_with_f64_and_f64(0.0, SNIFF_BYTES as f64) {
        Ok(h) => read_all(&h).await.map(|a| a.to_vec()).unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    match sniff(&head) {
        InputKind::NsysSqlite => load_export(session, name, blob, size).await,
        InputKind::NcclLog | InputKind::Gzip => {
            let file_index = session.borrow().next_file_index();
            let mut loader = LogLoader::new(name, file_index);
            let mut read = 0u64;
            let result = for_each_slice(blob, |part| {
                read += part.length() as u64;
                loader.feed(&part.to_vec());
                progress(read);
            })
            .await;
            match result {
                Ok(()) => session.borrow_mut().add_log(loader.finish(size)),
                Err(e) => FileReport::failed(name, InputKind::NcclLog, size, e),
            }
        }
        InputKind::Unknown => FileReport::failed(
            name,
            InputKind::Unknown,
            size,
            "neither an NCCL debug log nor an Nsight Systems SQLite export".into(),
        ),
    }
}

async fn load_export(session: &RefCell<Session>, name: &str, blob: &Blob, size: u64) -> FileReport {
    let sql = match sqljs().await {
        Ok(s) => s,
        Err(e) => {
            return FileReport::failed(name, InputKind::NsysSqlite, size, format!("sql.js: {e}"))
        }
    };
    let bytes = match read_all(blob).await {
        Ok(b) => b,
        Err(e) => return FileReport::failed(name, InputKind::NsysSqlite, size, e),
    };
    let db = match sql.open(&bytes) {
        Ok(db) => db,
        Err(e) => return FileReport::failed(name, InputKind::NsysSqlite, size, e.to_string()),
    };
    // The database is freed (dropped) as soon as it has been read.
    session.borrow_mut().add_export(&db, name, size)
}
