//! The second run's loading worker: the same script as the first ([`crate::page::client`]), with
//! a session of its own, started only when the user compares and replaced by the next
//! comparison. The comparison needs of it only its files' progress and reports, the end of its
//! analysis, its run's profile and fingerprints, and its timeline cut to a step (the stacked
//! timelines): its whole timeline, views and insights are not even parsed. What a bundle shows
//! of the other run (its files' reports, its cuts) is recorded here ([`recording`]).

use ncclscope_app::protocol::messages::{LoadRequest, ToPage};
use ncclscope_app::protocol::stacked::StackedInfo;
use ncclscope_app::protocol::timeline_codec::decode_timeline;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use timeline::Timeline;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, MessageEvent, Worker, WorkerOptions};

/// The loading worker's script, as the first worker's.
const WORKER_URL: &str = "./ncclscope-worker_loader.js";
/// Its name: not the first worker's (empty), so it starts no helpers and no warm-up before its
/// files arrive.
const NAME: &str = "ncclscope-compare";

/// What the comparison hears from the second worker.
pub enum Event {
    /// Progress, a file's stage or report, or the profile.
    Message(Box<ToPage>),
    /// Its analysis is done (the result itself is not read).
    Analysed,
    /// Its timeline cut to a step, decoded.
    Stacked(Box<StackedInfo>, Option<Timeline>),
    /// It died or could not start.
    Crashed(String),
}

pub type Handler = Rc<dyn Fn(Event)>;

struct Second {
    worker: Worker,
    ready: bool,
    pending: Vec<LoadRequest>,
    handler: Handler,
}

thread_local! {
    static SECOND: RefCell<Option<Second>> = const { RefCell::new(None) };
    /// Which worker is the current one: messages of a replaced one are dropped.
    static GENERATION: Cell<u64> = const { Cell::new(0) };
    /// The current worker's messages a bundle replays: its files' reports and its last cuts.
    static RECORDING: RefCell<Vec<(String, Option<Vec<u8>>)>> = const { RefCell::new(Vec::new()) };
}

/// Cuts a bundle keeps of the other run (the steps last viewed).
const CUTS_RECORDED: usize = 8;

/// The other run's messages a bundle replays (its files' reports, its last cuts), in arrival
/// order.
pub fn recording() -> Vec<(String, Option<Vec<u8>>)> {
    RECORDING.with(|r| r.borrow().clone())
}

fn record(json: &str, bytes: Option<Vec<u8>>) {
    RECORDING.with(|r| {
        let mut r = r.borrow_mut();
        r.push((json.to_string(), bytes));
        let cuts =
            |r: &Vec<(String, Option<Vec<u8>>)>| r.iter().filter(|(j, _)| is_stacked(j)).count();
        if cuts(&r) > CUTS_RECORDED {
            if let Some(i) = r.iter().position(|(j, _)| is_stacked(j)) {
                r.remove(i);
            }
        }
    });
}

fn is_stacked(json: &str) -> bool {
    json.starts_with("{\"Stacked\":")
}

/// Starts a new second worker (ending the one before), whose events go to `handler`.
pub fn start(handler: Handler) -> Result<(), String> {
    stop();
    RECORDING.with(|r| r.borrow_mut().clear());
    let generation = GENERATION.with(|g| {
        g.set(g.get() + 1);
        g.get()
    });
    let options = WorkerOptions::new();
    options.set_name(NAME);
    let worker = Worker::new_with_options(WORKER_URL, &options)
        .map_err(ncclscope_app::page_logic::files::js_msg)?;
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
        if GENERATION.with(Cell::get) == generation {
            on_message(&e.data());
        }
    });
    let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |e: ErrorEvent| {
        e.prevent_default();
        if GENERATION.with(Cell::get) == generation {
            crashed(format!("its loading worker failed: {}", e.message()));
        }
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    // As the first worker's: a handler may be running when its worker is dropped.
    on_message.forget();
    on_error.forget();
    SECOND.with(|s| {
        *s.borrow_mut() = Some(Second {
            worker,
            ready: false,
            pending: Vec::new(),
            handler,
        })
    });
    Ok(())
}

/// Ends the second worker, if any (its session goes with it).
pub fn stop() {
    if let Some(s) = SECOND.with(|s| s.borrow_mut().take()) {
        s.worker.terminate();
    }
}

/// Sends `req` to the second worker (held until it is ready).
pub fn send(req: LoadRequest) {
    let failed = SECOND.with(|s| {
        let mut s = s.borrow_mut();
        let Some(second) = s.as_mut() else {
            return Some("its loading worker is not running".to_string());
        };
        if second.ready {
            post(&second.worker, &req)
        } else {
            second.pending.push(req);
            None
        }
    });
    if let Some(e) = failed {
        crashed(e);
    }
}

fn post(worker: &Worker, req: &LoadRequest) -> Option<String> {
    worker.post_message(&req.to_js()).err().map(|e| {
        format!(
            "could not hand it the files: {}",
            ncclscope_app::page_logic::files::js_msg(e)
        )
    })
}

fn on_message(data: &JsValue) {
    let json: String = js_sys::Reflect::get(data, &"json".into())
        .ok()
        .and_then(|j| j.as_string())
        .unwrap_or_default();
    // What the comparison does not read is not parsed (a result can be megabytes).
    if json.starts_with("{\"Result\":") {
        emit(Event::Analysed);
        return;
    }
    if json.starts_with("{\"Insights\":") || json.starts_with("{\"View\":") {
        return;
    }
    let msg: ToPage = match serde_json::from_str(&json) {
        Ok(m) => m,
        Err(e) => return crashed(format!("unreadable message from its loading worker: {e}")),
    };
    if let ToPage::Stacked { info } = msg {
        // One step's cut: decoded at once (the whole timeline never travels).
        let bytes = js_sys::Reflect::get(data, &"timeline".into())
            .ok()
            .filter(|t| !t.is_undefined())
            .map(|b| js_sys::Uint8Array::new(&b).to_vec());
        let timeline = bytes.as_deref().and_then(|b| decode_timeline(b).ok());
        record(&json, bytes);
        return emit(Event::Stacked(Box::new(info), timeline));
    }
    if matches!(msg, ToPage::Report { .. }) {
        record(&json, None);
    }
    match msg {
        ToPage::Ready => {
            let failed = SECOND.with(|s| {
                let mut s = s.borrow_mut();
                let second = s.as_mut()?;
                second.ready = true;
                let pending = std::mem::take(&mut second.pending);
                pending.iter().find_map(|req| post(&second.worker, req))
            });
            if let Some(e) = failed {
                crashed(e);
            }
        }
        ToPage::Crashed { message } => crashed(format!("its loading worker stopped: {message}")),
        msg @ (ToPage::Progress { .. }
        | ToPage::Stage { .. }
        | ToPage::Report { .. }
        | ToPage::Profile { .. }
        | ToPage::Fingerprints { .. }) => emit(Event::Message(Box::new(msg))),
        _ => {}
    }
}

fn crashed(reason: String) {
    emit(Event::Crashed(reason));
    stop();
}

fn emit(event: Event) {
    let handler = SECOND.with(|s| s.borrow().as_ref().map(|s| s.handler.clone()));
    if let Some(h) = handler {
        h(event);
    }
}
