// The loading worker's (and its helpers') entry: wasm-bindgen's no-modules glue, then its wasm.
// Written here rather than by Trunk's loader shim, which calls the glue with a bare URL, the form
// wasm-bindgen deprecated (a console warning in every worker at every page load).
importScripts('./ncclscope-worker.js');
wasm_bindgen({ module_or_path: './ncclscope-worker_bg.wasm' });
