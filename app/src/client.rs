//! The page's side of the loading worker: starts it, holds requests until it is ready, hands
//! its messages to the page, and when it dies (a bug, or a browser that killed it) fails the
//! files it was loading and starts a fresh one for the next drop.

use ncclscope_app::views::FileView;
use ncclscope_app::wire::{LoadRequest, TimelineDecoder, ToPage};
use pipeline::Timeline;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, MessageEvent, Worker};

/// The worker's loader script, written by Trunk beside the page (relative: any sub-path works).
const WORKER_URL: &str = "./ncclscope-worker_loader.js";

/// What the page does with each message (the timeline is decoded already).
pub type Handler = Rc<dyn Fn(ToPage, Option<Timeline>)>;

/// A recorded message: its kind, its JSON and its binary timeline (the buffer the worker
/// transferred, not a copy: it is read only if a bundle is exported).
type Recorded = (Kept, String, Option<js_sys::Uint8Array>);

/// The messages a bundle replays, by what a later message supersedes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kept {
    /// Every file's report counts.
    Report,
    /// Only the last analysis (a timeline can be hundreds of MB).
    Result,
    /// Only the last theory comparison.
    Theory,
    /// Only the last filtered view, and none older than the last analysis (it came with the old
    /// one).
    View,
}

impl Kept {
    fn of(msg: &ToPage) -> Option<Kept> {
        Some(match msg {
            ToPage::Report { .. } => Kept::Report,
            ToPage::Result { .. } => Kept::Result,
            ToPage::Theory { .. } => Kept::Theory,
            ToPage::View { .. } => Kept::View,
            _ => return None,
        })
    }

    /// Whether a newer message of kind `self` makes a recorded `older` one obsolete.
    fn supersedes(self, older: Kept) -> bool {
        match self {
            Kept::Report => false,
            Kept::Result => matches!(older, Kept::Result | Kept::View),
            kind => older == kind,
        }
    }
}

/// A timeline's bytes: as the worker transferred them, or from a bundle.
enum Bytes {
    Js(js_sys::Uint8Array),
    Owned(Vec<u8>),
}

/// Spans decoded per task when a timeline arrives: a few milliseconds of work, so that millions
/// of spans never make one long task.
const SPANS_PER_TASK: usize = 100_000;
/// Bytes copied from the worker's buffer into wasm memory per task.
const BYTES_PER_TASK: u32 = 8 << 20;

struct Client {
    worker: Worker,
    ready: bool,
    /// Requests posted before the worker installed its handler would be lost: held until ready.
    pending: Vec<LoadRequest>,
    /// Files handed to the worker and not yet reported, by id, with their names.
    in_flight: BTreeMap<usize, String>,
}

thread_local! {
    static CLIENT: RefCell<Option<Client>> = const { RefCell::new(None) };
    static HANDLER: RefCell<Option<Handler>> = const { RefCell::new(None) };
    static NO_WORKER: Cell<bool> = const { Cell::new(false) };
    static RECORDING: RefCell<Vec<Recorded>> = const { RefCell::new(Vec::new()) };
    /// Messages waiting for a timeline before them to be decoded: the views see every message
    /// in the order the worker sent it.
    static INBOX: RefCell<VecDeque<(ToPage, Option<Bytes>)>> = const { RefCell::new(VecDeque::new()) };
    static PUMPING: Cell<bool> = const { Cell::new(false) };
}

/// Sets what the page does with the worker's messages; call once when the app mounts.
pub fn set_handler(h: Handler) {
    HANDLER.with(|cell| *cell.borrow_mut() = Some(h));
}

/// A bundle has no worker: requests are dropped (its views come from [`replay`]).
pub fn disable_worker() {
    NO_WORKER.with(|n| n.set(true));
}

/// Hands files to the worker (starting it if needed).
pub fn load(req: LoadRequest) {
    if NO_WORKER.with(Cell::get) {
        return;
    }
    let ids: Vec<(usize, String)> = req.files.iter().map(|f| (f.id, f.name.clone())).collect();
    let started = CLIENT.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_none() {
            *c = Some(spawn()?);
        }
        let client = c.as_mut().expect("just set");
        client.in_flight.extend(ids.iter().cloned());
        if client.ready {
            post(&client.worker, &req);
        } else {
            client.pending.push(req);
        }
        Ok::<(), String>(())
    });
    if let Err(e) = started {
        for (id, name) in ids {
            deliver(ToPage::Report {
                id,
                view: FileView::failed(format!("{name}: could not start the loading worker: {e}")),
                worker_memory_bytes: 0.0,
            });
        }
    }
}

fn post(worker: &Worker, req: &LoadRequest) {
    if let Err(e) = worker.post_message(&req.to_js()) {
        let message = ncclscope_app::files::js_msg(e);
        for f in &req.files {
            deliver(ToPage::Report {
                id: f.id,
                view: FileView::failed(format!(
                    "{}: could not hand the file to the worker: {message}",
                    f.name
                )),
                worker_memory_bytes: 0.0,
            });
        }
    }
}

fn spawn() -> Result<Client, String> {
    let worker = Worker::new(WORKER_URL).map_err(ncclscope_app::files::js_msg)?;
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(on_message);
    let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(|e: ErrorEvent| {
        // Keep the page's console clean of an error the page has handled.
        e.prevent_default();
        crashed(format!("the loading worker failed: {}", e.message()));
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    // The handlers live as long as the page: a handler may be running when its worker is
    // dropped, and a closure must never be freed while it runs.
    on_message.forget();
    on_error.forget();
    Ok(Client {
        worker,
        ready: false,
        pending: Vec::new(),
        in_flight: BTreeMap::new(),
    })
}

fn on_message(e: MessageEvent) {
    let data = e.data();
    let json = js_sys::Reflect::get(&data, &"json".into())
        .ok()
        .and_then(|j| j.as_string())
        .unwrap_or_default();
    let msg: ToPage = match serde_json::from_str(&json) {
        Ok(m) => m,
        Err(err) => {
            crashed(format!("unreadable message from the loading worker: {err}"));
            return;
        }
    };
    match &msg {
        ToPage::Ready => {
            CLIENT.with(|c| {
                if let Some(client) = c.borrow_mut().as_mut() {
                    client.ready = true;
                    for req in client.pending.drain(..) {
                        post(&client.worker, &req);
                    }
                }
            });
            return;
        }
        ToPage::Crashed { message } => {
            crashed(format!("the loading worker stopped: {message}"));
            return;
        }
        ToPage::Export { file_name, mime } => {
            let bytes = js_sys::Reflect::get(&data, &"data".into())
                .ok()
                .filter(|b| !b.is_undefined());
            if let Some(buffer) = bytes {
                if let Err(e) = download(file_name, mime, &buffer) {
                    web_sys::console::error_1(&e);
                }
            }
            return;
        }
        ToPage::Report { id, .. } => CLIENT.with(|c| {
            if let Some(client) = c.borrow_mut().as_mut() {
                client.in_flight.remove(id);
            }
        }),
        _ => {}
    }
    let timeline = js_sys::Reflect::get(&data, &"timeline".into())
        .ok()
        .filter(|t| !t.is_undefined())
        .map(|buffer| js_sys::Uint8Array::new(&buffer));
    if let Some(kind) = Kept::of(&msg) {
        RECORDING.with(|r| {
            let mut r = r.borrow_mut();
            r.retain(|(older, _, _)| !kind.supersedes(*older));
            r.push((kind, json.clone(), timeline.clone()));
        });
    }
    deliver_raw(msg, timeline.map(Bytes::Js));
}

/// What shaped the views so far, as received (every file's report, the last analysis with its
/// timeline, the last theory comparison): an exported bundle replays it ([`replay`]).
pub fn recording() -> Vec<(String, Option<Vec<u8>>)> {
    RECORDING.with(|r| {
        r.borrow()
            .iter()
            .map(|(_, json, t)| (json.clone(), t.as_ref().map(|t| t.to_vec())))
            .collect()
    })
}

/// Delivers recorded messages to the views, as if the worker had sent them.
pub fn replay(messages: Vec<(String, Option<Vec<u8>>)>) {
    for (json, timeline) in messages {
        match serde_json::from_str::<ToPage>(&json) {
            Ok(msg) => deliver_raw(msg, timeline.map(Bytes::Owned)),
            Err(e) => web_sys::console::error_1(&format!("bundle: {e}").into()),
        }
    }
}

/// Hands `msg` to the views, after its timeline (if any) is decoded and after every message
/// before it: a big timeline is copied and decoded over several tasks.
fn deliver_raw(msg: ToPage, timeline: Option<Bytes>) {
    if timeline.is_none() && !PUMPING.with(Cell::get) {
        deliver_with(msg, None);
        return;
    }
    INBOX.with(|q| q.borrow_mut().push_back((msg, timeline)));
    if !PUMPING.with(|p| p.replace(true)) {
        wasm_bindgen_futures::spawn_local(pump());
    }
}

async fn pump() {
    while let Some((msg, bytes)) = INBOX.with(|q| q.borrow_mut().pop_front()) {
        let timeline = match bytes {
            Some(b) => match decode_in_tasks(b).await {
                Ok(t) => Some(t),
                Err(err) => {
                    web_sys::console::error_1(&err.into());
                    None
                }
            },
            None => None,
        };
        deliver_with(msg, timeline);
    }
    PUMPING.with(|p| p.set(false));
}

async fn decode_in_tasks(bytes: Bytes) -> Result<Timeline, String> {
    let bytes = match bytes {
        Bytes::Owned(v) => v,
        Bytes::Js(array) => {
            // Nothing here runs in the task that received the message, and nothing zeroes
            // the whole buffer first (tens of MB): each task copies one slice.
            let len = array.length();
            let mut v = Vec::with_capacity(len as usize);
            let mut at = 0;
            while at < len {
                next_task().await;
                let end = len.min(at + BYTES_PER_TASK);
                v.extend_from_slice(&array.subarray(at, end).to_vec());
                at = end;
            }
            v
        }
    };
    let mut d = TimelineDecoder::new(&bytes)?;
    while !d.step(&bytes, SPANS_PER_TASK)? {
        next_task().await;
    }
    d.finish(&bytes)
}

/// Resolves in a later task (a zero-delay timer), so the browser can paint and handle input.
async fn next_task() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let global: web_sys::Window = js_sys::global().unchecked_into();
        let _ = global.set_timeout_with_callback(&resolve);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// The worker is gone: fail what it was loading; the next load starts a new one.
fn crashed(reason: String) {
    let lost = CLIENT.with(|c| {
        c.borrow_mut().take().map(|client| {
            client.worker.terminate();
            client.in_flight
        })
    });
    let Some(lost) = lost else { return };
    deliver(ToPage::Crashed {
        message: reason.clone(),
    });
    // A wasm trap is how a worker out of memory dies (the 4 GiB of wasm32, or the tab's limit).
    let hint = if reason.contains("unreachable") || reason.contains("memory") {
        " (most likely out of memory: the page holds every record in at most 4 GB)"
    } else {
        ""
    };
    for (id, name) in lost {
        deliver(ToPage::Report {
            id,
            view: FileView::failed(format!("{name}: {reason}{hint}")),
            worker_memory_bytes: 0.0,
        });
    }
}

fn deliver(msg: ToPage) {
    deliver_raw(msg, None);
}

fn deliver_with(msg: ToPage, timeline: Option<Timeline>) {
    if let Some(h) = HANDLER.with(|h| h.borrow().clone()) {
        h(msg, timeline);
    }
}

/// Saves `buffer` as a file through a blob URL and a `download` link: the bytes go from the
/// worker to the user's disk, never to a network.
pub fn download(file_name: &str, mime: &str, buffer: &JsValue) -> Result<(), JsValue> {
    let parts = js_sys::Array::of1(buffer);
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let blob = web_sys::Blob::new_with_buffer_source_sequence_and_options(&parts, &options)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob)?;
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or_else(|| JsValue::from_str("no document"))?;
    let a: web_sys::HtmlAnchorElement = document.create_element("a")?.dyn_into()?;
    a.set_href(&url);
    a.set_download(file_name);
    a.click();
    // The URL is not revoked: revoking it at once can cancel the download, and one blob per
    // export the user asks for is small.
    Ok(())
}
