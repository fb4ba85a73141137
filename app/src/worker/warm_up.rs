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

use load::{ReadOptions, Session};
use std::cell::Cell;
use web_sys::Blob;

use crate::page_logic::deferred::next_task;
use crate::page_logic::files::{demo_file, demo_manifest};
use crate::worker::export_read::{read_export_blob, ExportFailure, ReadExport};
use crate::worker::parse_pool::parse_blob;

/// Rounds of (parse the log, read the export): in the export benchmark, a file's second and
/// third reads in one worker ran at the warm speed. Each round is 5-40 ms.
const ROUNDS: usize = 3;

thread_local! {
    /// Set when a request arrives: the warm-up stops at its next step.
    static STOP: Cell<bool> = const { Cell::new(false) };
}

/// Starts the warm-up in the background.
pub fn start(options: ReadOptions) {
    wasm_bindgen_futures::spawn_local(async move {
        let started = js_sys::Date::now();
        run(options).await;
        let ms = js_sys::Date::now() - started;
        crate::worker::post::post(&crate::protocol::messages::ToPage::WarmedUp { ms }, None);
    });
}

/// Ends the warm-up (a request came): real work comes first.
pub fn stop() {
    STOP.with(|s| s.set(true));
}

fn stopped() -> bool {
    STOP.with(Cell::get)
}

async fn run(options: ReadOptions) {
    // Nothing to warm up with (a page built without its demo) is not an error.
    let Ok((log, export)) = demo_files().await else {
        return;
    };
    let mut session = Session::default();
    for round in 0..ROUNDS {
        if let Some((name, blob)) = &log {
            next_task().await;
            if stopped() {
                return;
            }
            // The loading worker's own path for a log (slices, pieces, sniffing).
            let Ok(Some(parsed)) = parse_blob(name, 0, blob, |_| ()).await else {
                return;
            };
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
                ReadExport::add_to(&mut session, name, blob.size() as u64, read);
            }
        }
    }
    // Once, for the code a load runs after the files: the analysis (aligned here), the
    // timeline and its encoding, the panels.
    next_task().await;
    if !stopped() {
        crate::worker::result::warm_up_analysis(&session).await;
    }
}

type Named = Option<(String, Blob)>;

/// The demo's first log and first export, as its MANIFEST lists them.
async fn demo_files() -> Result<(Named, Named), String> {
    let names = demo_manifest().await?.files;
    Ok((first(&names, ".log").await, first(&names, ".sqlite").await))
}

/// The first of the demo's files named `*suffix`, fetched.
async fn first(names: &[String], suffix: &str) -> Named {
    let name = names.iter().find(|n| n.ends_with(suffix))?;
    Some((name.clone(), demo_file(name).await.ok()?))
}
