//! Reading `File`s and served assets into bytes, in slices (one `arrayBuffer()` of 2 GiB or
//! more fails in Chromium).

use js_sys::Uint8Array;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, Response};

/// Slice size for reading big files: small enough for any browser, big enough to be fast.
const SLICE_BYTES: f64 = 64.0 * 1024.0 * 1024.0;

/// Calls `chunk` with successive slices of `blob`, in order.
pub async fn for_each_slice(blob: &Blob, mut chunk: impl FnMut(Uint8Array)) -> Result<(), String> {
    let size = blob.size();
    let mut offset = 0.0;
    while offset < size {
        let end = (offset + SLICE_BYTES).min(size);
        let part = blob.slice_with_f64_and_f64(offset, end).map_err(js_msg)?;
        let buffer = JsFuture::from(part.array_buffer()).await.map_err(js_msg)?;
        chunk(Uint8Array::new(&buffer));
        offset = end;
    }
    Ok(())
}

/// The whole blob in one JS byte array (sql.js needs the database in one piece).
pub async fn read_all(blob: &Blob) -> Result<Uint8Array, String> {
    let all = Uint8Array::new_with_length(blob.size() as u32);
    let mut at = 0u32;
    for_each_slice(blob, |part| {
        all.set(&part, at);
        at += part.length();
    })
    .await?;
    Ok(all)
}

/// Fetches an asset served with the page (the demo run), as a Blob.
pub async fn fetch_blob(url: &str) -> Result<Blob, String> {
    let window = web_sys::window().ok_or("no window")?;
    let response: Response = JsFuture::from(window.fetch_with_str(url))
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

pub fn js_msg(e: wasm_bindgen::JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|err| String::from(err.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}
