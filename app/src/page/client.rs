//! The page's side of the loading worker: starts it, holds requests until it is ready, hands
//! its messages to the page, and when it dies (a bug, or a browser that killed it) fails the
//! files it was loading and starts a fresh one for the next drop.

use ncclscope_app::page_logic::deferred::next_task;
use ncclscope_app::protocol::messages::{LoadRequest, ToPage};
use ncclscope_app::protocol::timeline_codec::TimelineDecoder;
use ncclscope_app::protocol::views::FileView;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use timeline::Timeline;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, MessageEvent, Worker};

/// The worker's loader script, written by Trunk beside the page (relative: any sub-path works).
const WORKER_URL: &str = "./ncclscope-worker_loader.js";

/// What the page does with each message (the timeline is decoded already).
pub type Handler = Rc<dyn Fn(ToPage, Option<Timeline>)>;

/// A recorded message: its kind, its JSON and its binary timeline (the string and the buffer
/// the worker sent, not copies: they are read only if a bundle is exported).
type Recorded = (Kept, js_sys::JsString, Option<js_sys::Uint8Array>);

/// A message as it waits for the views: parsed, or a large analysis result still in its JSON
/// (parsed over several tasks, [`parse_result_in_tasks`]).
enum Incoming {
    Parsed(Box<ToPage>),
    Result(js_sys::JsString),
}

/// Results longer than this (UTF-16 units of JSON) are parsed over several tasks: 256 ranks'
/// rows with their topology dumps are 1.2 MB, 50 ms of parsing in one task.
const BIG_RESULT: u32 = 256 << 10;
/// Rank rows parsed per task.
const RANKS_PER_TASK: u32 = 48;

/// The messages a bundle replays, by what a later message supersedes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kept {
    /// Every file's report counts.
    Report,
    /// Only the last analysis (a timeline can be hundreds of MB).
    Result,
    /// Only the last theory comparison.
    Theory,
    /// Only the last insights, and none older than the last analysis.
    Insights,
    /// Only the last filtered view, and none older than the last analysis (it came with the old
    /// one).
    View,
    /// Only the last comparison with another run (a bundle shows it in its Compare view).
    Diff,
    /// The loaded run's timeline cut to a step (the Compare view's stacked timelines): the last
    /// [`CUTS_RECORDED`], none older than the last analysis.
    Stacked,
}

/// Cuts of the loaded run a bundle keeps (the steps last viewed).
const CUTS_RECORDED: usize = 8;

impl Kept {
    fn of(msg: &ToPage) -> Option<Kept> {
        Some(match msg {
            ToPage::Report { .. } => Kept::Report,
            ToPage::Result { .. } => Kept::Result,
            ToPage::Theory { .. } => Kept::Theory,
            ToPage::Insights { .. } => Kept::Insights,
            ToPage::View { .. } => Kept::View,
            ToPage::Diff { .. } => Kept::Diff,
            ToPage::Stacked { .. } => Kept::Stacked,
            _ => return None,
        })
    }

    /// Whether a newer message of kind `self` makes a recorded `older` one obsolete.
    fn supersedes(self, older: Kept) -> bool {
        match self {
            Kept::Report => false,
            Kept::Result => matches!(
                older,
                Kept::Result | Kept::View | Kept::Insights | Kept::Stacked
            ),
            Kept::Stacked => false,
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
    static INBOX: RefCell<VecDeque<(Incoming, Option<Bytes>)>> = const { RefCell::new(VecDeque::new()) };
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

/// Starts the loading worker before the first drop (the page calls it once mounted, unless it
/// is a bundle): fetching and compiling its wasm took 300 ms of the first drop's time. A failure
/// here is reported by the first load, which tries again.
pub fn prestart() {
    if NO_WORKER.with(Cell::get) {
        return;
    }
    CLIENT.with(|c| {
        let mut c = c.borrow_mut();
        if c.is_none() {
            *c = spawn().ok();
        }
    });
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
        let message = ncclscope_app::page_logic::files::js_msg(e);
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
    let worker = Worker::new(WORKER_URL).map_err(ncclscope_app::page_logic::files::js_msg)?;
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
    let json: js_sys::JsString = js_sys::Reflect::get(&data, &"json".into())
        .ok()
        .and_then(|j| j.dyn_into().ok())
        .unwrap_or_else(|| js_sys::JsString::from(""));
    let timeline = || {
        js_sys::Reflect::get(&data, &"timeline".into())
            .ok()
            .filter(|t| !t.is_undefined())
            .map(|buffer| js_sys::Uint8Array::new(&buffer))
    };
    // A large result is parsed later, over several tasks; nothing of it is read here.
    if json.length() > BIG_RESULT && json.starts_with("{\"Result\":", 0) {
        let timeline = timeline();
        record(Kept::Result, &json, &timeline);
        queue(Incoming::Result(json), timeline.map(Bytes::Js));
        return;
    }
    let text = String::from(&json);
    let msg: ToPage = match serde_json::from_str(&text) {
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
    let timeline = timeline();
    if let Some(kind) = Kept::of(&msg) {
        record(kind, &json, &timeline);
    }
    deliver_raw(msg, timeline.map(Bytes::Js));
}

/// Keeps a message for bundles, dropping what it supersedes.
fn record(kind: Kept, json: &js_sys::JsString, timeline: &Option<js_sys::Uint8Array>) {
    RECORDING.with(|r| {
        let mut r = r.borrow_mut();
        r.retain(|(older, _, _)| !kind.supersedes(*older));
        r.push((kind, json.clone(), timeline.clone()));
        let cuts = r.iter().filter(|(k, _, _)| *k == Kept::Stacked).count();
        if cuts > CUTS_RECORDED {
            if let Some(i) = r.iter().position(|(k, _, _)| *k == Kept::Stacked) {
                r.remove(i);
            }
        }
    });
}

/// A large analysis result: the JSON parsed natively (`JSON.parse`), its rank rows taken out
/// and read by serde a few dozen per task, the rest at once. Each task stays a few
/// milliseconds; any surprise falls back to one serde parse of the whole text.
async fn parse_result_in_tasks(json: js_sys::JsString) -> Result<ToPage, String> {
    next_task().await;
    let whole = |json: &js_sys::JsString| {
        serde_json::from_str::<ToPage>(&String::from(json)).map_err(|e| e.to_string())
    };
    // `JSON.parse` of the string as the worker sent it (never copied into wasm memory).
    let parse = js_sys::Reflect::get(&js_sys::global(), &"JSON".into())
        .and_then(|j| Ok((js_sys::Reflect::get(&j, &"parse".into())?, j)));
    let Ok(value) = parse.and_then(|(f, j)| f.dyn_into::<js_sys::Function>()?.call1(&j, &json))
    else {
        return whole(&json);
    };
    let inner = js_sys::Reflect::get(&value, &"Result".into()).unwrap_or(JsValue::UNDEFINED);
    let Some(ranks) = js_sys::Reflect::get(&inner, &"ranks".into())
        .ok()
        .and_then(|r| r.dyn_into::<js_sys::Array>().ok())
    else {
        return whole(&json);
    };
    if js_sys::Reflect::set(&inner, &"ranks".into(), &js_sys::Array::new()).is_err() {
        return whole(&json);
    }
    let rest = js_sys::JSON::stringify(&value).map_err(ncclscope_app::page_logic::files::js_msg)?;
    let mut msg: ToPage = serde_json::from_str(&String::from(rest)).map_err(|e| e.to_string())?;
    let ToPage::Result { ranks: rows, .. } = &mut msg else {
        return whole(&json);
    };
    let n = ranks.length();
    rows.reserve(n as usize);
    let mut at = 0;
    while at < n {
        next_task().await;
        let end = n.min(at + RANKS_PER_TASK);
        let chunk = js_sys::JSON::stringify(&ranks.slice(at, end))
            .map_err(ncclscope_app::page_logic::files::js_msg)?;
        rows.extend(
            serde_json::from_str::<Vec<ncclscope_app::protocol::views::RankView>>(&String::from(
                chunk,
            ))
            .map_err(|e| e.to_string())?,
        );
        at = end;
    }
    Ok(msg)
}

/// What shaped the views so far, as received (every file's report, the last analysis with its
/// timeline, the last theory comparison): an exported bundle replays it ([`replay`]).
pub fn recording() -> Vec<(String, Option<Vec<u8>>)> {
    RECORDING.with(|r| {
        r.borrow()
            .iter()
            .map(|(_, json, t)| (String::from(json), t.as_ref().map(|t| t.to_vec())))
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
    queue(Incoming::Parsed(Box::new(msg)), timeline);
}

/// Queues a message behind the ones waiting, and starts the pump that delivers them in order.
fn queue(msg: Incoming, timeline: Option<Bytes>) {
    INBOX.with(|q| q.borrow_mut().push_back((msg, timeline)));
    if !PUMPING.with(|p| p.replace(true)) {
        wasm_bindgen_futures::spawn_local(pump());
    }
}

async fn pump() {
    while let Some((incoming, bytes)) = INBOX.with(|q| q.borrow_mut().pop_front()) {
        let msg = match incoming {
            Incoming::Parsed(msg) => *msg,
            Incoming::Result(json) => match parse_result_in_tasks(json).await {
                Ok(msg) => msg,
                Err(err) => {
                    crashed(format!("unreadable message from the loading worker: {err}"));
                    continue;
                }
            },
        };
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

/// A User Timing mark (`performance.mark`): what each of the page's staged steps is, for
/// profiles (`tests/browser/bench/longtasks.mjs` prints the marks inside each long task).
pub fn mark(name: &str) {
    let global = js_sys::global();
    if let Ok(perf) = js_sys::Reflect::get(&global, &"performance".into()) {
        if let Ok(f) = js_sys::Reflect::get(&perf, &"mark".into()) {
            if let Some(f) = f.dyn_ref::<js_sys::Function>() {
                let _ = f.call1(&perf, &name.into());
            }
        }
    }
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
