//! The loading worker's warm-up while the page waits for its first files: it parses the
//! built-in demo run's log and reads its export a few times, analyses them once (in a session
//! of its own, never the page's), and throws the results away.
//!
//! Why: V8 runs a wasm function in baseline code until it has run a while, and compiles the
//! optimised code in the background. Cold, the first drop's 19 MB log parsed in 150 ms instead
//! of 35, and each 5 MB export was read in 310 ms instead of 90 (sql.js's code and the reader's
//! both cold). Workers running the same module share its compiled code, so the helpers start
//! warm too. Each step is one task; a request that arrives ends the warm-up at the next step,
//! so a drop waits for one step at most (a few milliseconds once warm, tens before).

use js_sys::Promise;
use pipeline::{LogLoader, Session};
use std::cell::Cell;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, WorkerGlobalScope};

use crate::export_read::{read_export_blob, ExportFailure};
use crate::files::{fetch_blob, read_all};

/// The demo run's file list, served with the page (relative to the worker's script).
const DEMO_MANIFEST: &str = "demo/MANIFEST";

/// Rounds of (parse the log, read the export). Three reach optimised code for both natively
/// measured hot paths (the parser's and sql.js's row loop); each round is 5-40 ms.
const ROUNDS: usize = 3;

thread_local! {
    /// Set when a request arrives: the warm-up stops at its next step.
    static STOP: Cell<bool> = const { Cell::new(false) };
}

/// Starts the warm-up in the background.
pub fn start() {
    wasm_bindgen_futures::spawn_local(async {
        let started = js_sys::Date::now();
        run().await;
        let ms = js_sys::Date::now() - started;
        crate::loader::post(&crate::wire::ToPage::WarmedUp { ms }, None);
    });
}

/// Ends the warm-up (a request came): real work comes first.
pub fn stop() {
    STOP.with(|s| s.set(true));
}

fn stopped() -> bool {
    STOP.with(Cell::get)
}

async fn run() {
    // Nothing to warm up with (a page built without its demo) is not an error.
    let Ok((log, export)) = demo_files().await else {
        return;
    };
    let options = crate::loader::read_options();
    let mut session = Session::default();
    for round in 0..ROUNDS {
        if let Some((name, blob)) = &log {
            next_task().await;
            if stopped() {
                return;
            }
            let Ok(bytes) = read_all(blob, |_| ()).await else {
                return;
            };
            let mut loader = LogLoader::new(name, 0);
            loader.feed(&bytes.to_vec());
            let parsed = loader.finish(bytes.length() as u64);
            if round == 0 {
                session.add_log(parsed);
            }
        }
        if let Some((name, blob)) = &export {
            next_task().await;
            if stopped() {
                return;
            }
            let read = read_export_blob(name, blob, &options, |_| (), |_| ()).await;
            if round == 0 {
                let read = read.map_err(ExportFailure::message);
                session.add_read_export(name, blob.size() as u64, read);
            }
        }
    }
    // Once, for the code a load runs after the files: the analysis (aligned here), the
    // timeline and its encoding, the panels.
    next_task().await;
    if !stopped() {
        crate::loader::warm_up_analysis(&session).await;
    }
}

type Named = Option<(String, Blob)>;

/// The demo's first log and first export, as its MANIFEST lists them.
async fn demo_files() -> Result<(Named, Named), String> {
    let manifest = fetch_blob(DEMO_MANIFEST).await?;
    let text = JsFuture::from(manifest.text())
        .await
        .map_err(crate::files::js_msg)?
        .as_string()
        .unwrap_or_default();
    let names: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let fetch = |pick: fn(&str) -> bool| {
        let name = names.iter().find(|n| pick(n)).map(|n| n.to_string());
        async move {
            match name {
                Some(name) => fetch_blob(&format!("demo/{name}"))
                    .await
                    .ok()
                    .map(|blob| (name, blob)),
                None => None,
            }
        }
    };
    let log = fetch(|n| n.ends_with(".log")).await;
    let export = fetch(|n| n.ends_with(".sqlite")).await;
    Ok((log, export))
}

/// Resolves in a task of its own, after the messages already waiting.
async fn next_task() {
    let scope: WorkerGlobalScope = js_sys::global().unchecked_into();
    let promise = Promise::new(&mut |resolve, _| {
        let _ = scope.set_timeout_with_callback(&resolve);
    });
    let _ = JsFuture::from(promise).await;
}
