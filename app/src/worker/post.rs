//! Messages from a worker to the page (a helper's: to its loading worker): a small JSON
//! [`ToPage`] with, beside it, byte buffers that are transferred, not copied.

use crate::protocol::messages::ToPage;
use js_sys::{Array, Uint8Array};
use wasm_bindgen::JsCast;
use web_sys::DedicatedWorkerGlobalScope;

/// The least time between two progress messages of one file (at most ten a second).
pub(crate) const PROGRESS_INTERVAL_MS: f64 = 100.0;

pub fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

/// Posts `msg` with `bytes` under `key`; the buffer is transferred, not copied.
pub fn post_bytes(msg: &ToPage, key: &str, bytes: Vec<u8>) {
    let json = serde_json::to_string(msg).unwrap_or_else(|e| format!("\"{e}\""));
    let obj = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&obj, &"json".into(), &json.into());
    let buffer = Uint8Array::from(bytes.as_slice()).buffer();
    let _ = js_sys::Reflect::set(&obj, &key.into(), &buffer);
    let transfer = Array::of1(&buffer);
    if let Err(e) = scope().post_message_with_transfer(&obj, &transfer) {
        web_sys::console::error_1(&e);
    }
}

/// Posts `msg` to the page (a helper: to its loading worker); `timeline`'s buffer is
/// transferred, not copied.
pub fn post(msg: &ToPage, timeline: Option<js_sys::ArrayBuffer>) {
    let json = serde_json::to_string(msg).unwrap_or_else(|e| format!("\"{e}\""));
    let obj = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&obj, &"json".into(), &json.into());
    let transfer = Array::new();
    if let Some(buffer) = timeline {
        let _ = js_sys::Reflect::set(&obj, &"timeline".into(), &buffer);
        transfer.push(&buffer);
    }
    if let Err(e) = scope().post_message_with_transfer(&obj, &transfer) {
        web_sys::console::error_1(&e);
    }
}
