//! Reading `File`s and served assets into bytes, in slices (one `arrayBuffer()` of 2 GiB or
//! more fails in Chromium).

use js_sys::Uint8Array;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, Response};

/// Slice size for reading big files: small enough for any browser and for the wasm heap that
/// holds one slice at a time, big enough to be fast, small enough for smooth progress.
const SLICE_BYTES: f64 = 16.0 * 1024.0 * 1024.0;

/// Calls `chunk` with successive slices of `blob`, in order.
pub async fn for_each_slice(blob: &Blob, mut chunk: impl FnMut(Uint8Array)) -> Result<(), String> {
    let size = blob.size();
    let mut offset = 0.0;
    while offset < size {
        let end = (offset + SLICE_BYTES).min(size);
        // A file read whole is not sliced first: `Blob.slice` of a file is a synchronous call
        // to the browser process, 1 ms and more each while a load keeps every core busy.
        let buffer = if offset == 0.0 && end == size {
            JsFuture::from(blob.array_buffer()).await
        } else {
            let part = blob.slice_with_f64_and_f64(offset, end).map_err(js_msg)?;
            JsFuture::from(part.array_buffer()).await
        }
        .map_err(js_msg)?;
        chunk(Uint8Array::new(&buffer));
        offset = end;
    }
    Ok(())
}

/// The first `n` bytes of `blob` (all of a shorter one; none if it cannot be read).
pub async fn read_head(blob: &Blob, n: usize) -> Vec<u8> {
    match blob.slice_with_f64_and_f64(0.0, n as f64) {
        Ok(head) => read_all(&head, |_| ())
            .await
            .map(|a| a.to_vec())
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

/// The whole blob in one JS byte array (sql.js needs the database in one piece); `progress`
/// gets the bytes read so far after each slice.
pub async fn read_all(blob: &Blob, mut progress: impl FnMut(u64)) -> Result<Uint8Array, String> {
    let all = alloc_bytes(blob.size())?;
    let mut at = 0.0;
    for_each_slice(blob, |part| {
        set_at(&all, &part, at);
        at += part.length() as f64;
        progress(at as u64);
    })
    .await?;
    Ok(all)
}

/// A zeroed JS byte array, or a clear error when the browser cannot allocate it (a file bigger
/// than the memory the tab may use) instead of an uncaught `RangeError`.
pub fn alloc_bytes(len: f64) -> Result<Uint8Array, String> {
    let ctor: js_sys::Function = js_sys::Uint8Array::new_with_length(0)
        .constructor()
        .unchecked_into();
    js_sys::Reflect::construct(&ctor, &js_sys::Array::of1(&len.into()))
        .map(JsCast::unchecked_into)
        .map_err(|e| {
            format!(
                "the browser could not allocate {:.2} GB to hold the file ({}); \
                 the page holds a whole SQLite export in memory",
                len / 1e9,
                js_msg(e)
            )
        })
}

/// `all.set(part, at)` with a 64-bit offset (past 4 GiB `u32` offsets would wrap).
fn set_at(all: &Uint8Array, part: &Uint8Array, at: f64) {
    if let Ok(set) = js_sys::Reflect::get(all, &"set".into()) {
        let set: js_sys::Function = set.unchecked_into();
        let _ = set.call2(all, part, &at.into());
    }
}

/// Fetches an asset served with the page (the demo run), as a Blob; from the page or a worker
/// (relative to the worker's script there, which is served beside the page).
pub async fn fetch_blob(url: &str) -> Result<Blob, String> {
    let request = match web_sys::window() {
        Some(window) => window.fetch_with_str(url),
        None => js_sys::global()
            .unchecked_into::<web_sys::WorkerGlobalScope>()
            .fetch_with_str(url),
    };
    let response: Response = JsFuture::from(request)
        .await
        .map_err(js_msg)?
        .dyn_into()
        .map_err(js_msg)?;
    if !response.ok() {
        return Err(format!("{url}: HTTP {}", response.status()));
    }
    let blob = JsFuture::from(response.blob().map_err(js_msg)?)
        .await
        .map_err(js_msg)?;
    blob.dyn_into().map_err(js_msg)
}

/// The built-in demo run's file list, served with the page (`demo/`, from `scripts/demo`).
const DEMO_MANIFEST: &str = "demo/MANIFEST";

/// The demo run's MANIFEST: its files (one a line) and its deliberate imperfections (lines
/// `# deliberate: …`: the generator puts them there so that the notes and the alignment have
/// something to show; the page says so instead of showing them as faults of the run).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Manifest {
    pub files: Vec<String>,
    pub deliberate: Vec<String>,
}

impl Manifest {
    /// Reads a MANIFEST's text; other `#` lines are comments.
    pub fn parse(text: &str) -> Manifest {
        let mut m = Manifest::default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            match line.strip_prefix('#') {
                Some(comment) => {
                    if let Some(d) = comment.trim().strip_prefix("deliberate:") {
                        m.deliberate.push(d.trim().to_string());
                    }
                }
                None => m.files.push(line.to_string()),
            }
        }
        m
    }
}

/// The demo run's MANIFEST ([`Manifest`]).
pub async fn demo_manifest() -> Result<Manifest, String> {
    let manifest = fetch_blob(DEMO_MANIFEST).await?;
    let text = JsFuture::from(manifest.text())
        .await
        .map_err(js_msg)?
        .as_string()
        .unwrap_or_default();
    Ok(Manifest::parse(&text))
}

/// One file of the demo run, by its name in the MANIFEST.
pub async fn demo_file(name: &str) -> Result<Blob, String> {
    fetch_blob(&format!("demo/{name}")).await
}

pub fn js_msg(e: wasm_bindgen::JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|err| String::from(err.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_lists_files_and_deliberate_imperfections() {
        let m = Manifest::parse(
            "# The demo run\n# deliberate: a cut last line\nnccl.log\n\n  report.sqlite \n#deliberate:  dropped kernels \n",
        );
        assert_eq!(m.files, ["nccl.log", "report.sqlite"]);
        assert_eq!(m.deliberate, ["a cut last line", "dropped kernels"]);
    }
}
