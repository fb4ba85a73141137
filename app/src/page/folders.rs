//! Whole folders, dropped or chosen: every file inside (sub-folders too), named by its path in
//! the folder, hidden files (`.DS_Store`, dot-directories) left out. A drop's folders are read
//! through the File and Directory Entries API, whose callbacks are turned into futures here;
//! the entries must be taken while the drop event runs (its DataTransfer empties after).

use js_sys::{Array, Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, DataTransfer, File, FileList};

/// The entries of a drop's items (`webkitGetAsEntry`), if any item is a folder; `None` when
/// the drop holds plain files only (the caller reads `DataTransfer.files`).
pub fn dropped_folders(dt: &DataTransfer) -> Option<Vec<JsValue>> {
    let items = dt.items();
    let entries: Vec<JsValue> = (0..items.length())
        .filter_map(|i| items.get(i))
        .filter_map(|item| call0(item.as_ref(), "webkitGetAsEntry").ok())
        .filter(|e| !e.is_null() && !e.is_undefined())
        .collect();
    entries.iter().any(is_directory).then_some(entries)
}

/// Every file under `entries`, named by its path, hidden ones left out.
pub async fn files_of_entries(entries: Vec<JsValue>) -> Result<Vec<(String, Blob)>, String> {
    let mut out = Vec::new();
    let mut stack = entries;
    while let Some(entry) = stack.pop() {
        let name = string(&entry, "fullPath");
        let name = name.trim_start_matches('/').to_string();
        if hidden(&name) {
            continue;
        }
        if is_directory(&entry) {
            stack.extend(read_directory(&entry).await?);
        } else {
            let file = promise_of(&entry, "file").await?;
            let file: File = file.dyn_into().map_err(|_| format!("{name}: not a file"))?;
            out.push((name, file.into()));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The files of a folder chosen with `<input webkitdirectory>`, named by their path in it.
pub fn files_of_list(list: &FileList) -> Vec<(String, Blob)> {
    (0..list.length())
        .filter_map(|i| list.get(i))
        .map(|f: File| {
            let path = string(f.as_ref(), "webkitRelativePath");
            let name = if path.is_empty() { f.name() } else { path };
            (name, f.into())
        })
        .filter(|(name, _)| !hidden(name))
        .collect()
}

/// A dot-file, or a file inside a dot-directory.
fn hidden(path: &str) -> bool {
    path.split('/').any(|part| part.starts_with('.'))
}

fn is_directory(entry: &JsValue) -> bool {
    Reflect::get(entry, &"isDirectory".into())
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

fn string(o: &JsValue, key: &str) -> String {
    Reflect::get(o, &key.into())
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_default()
}

fn call0(o: &JsValue, method: &str) -> Result<JsValue, JsValue> {
    let f: Function = Reflect::get(o, &method.into())?.dyn_into()?;
    f.call0(o)
}

/// Calls `o.method(resolve, reject)` (the Entries API's callback style) as a future.
async fn promise_of(o: &JsValue, method: &str) -> Result<JsValue, String> {
    let f: Function = Reflect::get(o, &method.into())
        .ok()
        .and_then(|f| f.dyn_into().ok())
        .ok_or_else(|| format!("the browser has no {method}()"))?;
    let promise = Promise::new(&mut |resolve, reject| {
        if let Err(e) = f.call2(o, &resolve, &reject) {
            let _ = reject.call1(&JsValue::NULL, &e);
        }
    });
    JsFuture::from(promise)
        .await
        .map_err(ncclscope_app::page_logic::files::js_msg)
}

/// Every entry of a directory: `readEntries` gives them in batches until an empty one.
async fn read_directory(dir: &JsValue) -> Result<Vec<JsValue>, String> {
    let reader = call0(dir, "createReader").map_err(ncclscope_app::page_logic::files::js_msg)?;
    let mut all = Vec::new();
    loop {
        let batch: Array = promise_of(&reader, "readEntries")
            .await?
            .dyn_into()
            .map_err(|_| "readEntries gave no list".to_string())?;
        if batch.length() == 0 {
            return Ok(all);
        }
        all.extend(batch.iter());
    }
}

/// Each item with its size in bytes, read a few dozen per task: a dropped `File`'s size can cost
/// a synchronous round trip to the browser process (288 files took 200 ms in one task).
pub async fn with_sizes(items: Vec<(String, Blob)>) -> Vec<(String, Blob, u64)> {
    const PER_TASK: usize = 32;
    let mut out = Vec::with_capacity(items.len());
    for (i, (name, blob)) in items.into_iter().enumerate() {
        if i > 0 && i % PER_TASK == 0 {
            ncclscope_app::page_logic::deferred::next_task().await;
        }
        let size = blob.size() as u64;
        out.push((name, blob, size));
    }
    if out.len() > PER_TASK {
        ncclscope_app::page_logic::deferred::next_task().await;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::hidden;

    #[test]
    fn hidden_paths() {
        assert!(hidden(".DS_Store"));
        assert!(hidden("run/.git/config"));
        assert!(!hidden("run/nccl_node01.log"));
        assert!(!hidden("run.v2/report.sqlite"));
    }
}
