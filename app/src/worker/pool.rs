//! The loading worker's helper workers, shared by alignment ([`crate::worker::align_pool`]) and parsing
//! ([`crate::worker::parse_pool`]): more instances of the loading worker's own script, started from it,
//! that answer a job message (an alignment job's bytes, or a log's `Blob` to parse) instead of
//! serving loads. A helper serves both kinds; one batch of jobs uses the pool at a time (it is
//! taken out meanwhile: requests are served one after another), and the pool lives as long as
//! the loading worker, so helpers start once and stay warm.

use futures_channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use js_sys::{Array, Object, Reflect, Uint8Array};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, MessageEvent, Worker, WorkerOptions};

use crate::protocol::messages::ToPage;

/// The helpers' script: the loading worker's loader, beside it (relative to its own URL).
const HELPER_URL: &str = "./ncclscope-worker_loader.js";

/// Helper `index`'s name (`self.name` in it; its thread is named after it in the browser's
/// tools too). Helper 0 knows by its name that it warms up the alignment code before its first
/// job ([`crate::worker::align_pool::start_warm_up`]). One is enough: V8 shares a module's optimised
/// code between the workers that run it (measured: the helper that did not warm up ran its
/// first jobs as fast as the one that did), and the other cores stay free for the loading.
pub fn helper_name(index: usize) -> String {
    format!("ncclscope-helper-{index}")
}

/// At most this many helpers, whatever the browser reports.
pub const MAX_HELPERS: usize = 8;

/// The key under which a job's result bytes travel back from a helper.
pub const RESULT_KEY: &str = "result";

/// The two kinds of job a helper runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    Align,
    Parse,
}

/// What a helper told the loading worker.
pub enum Event {
    Ready,
    /// Job `job` of kind `kind` is done: its result's bytes, and how long a parse took (0 for
    /// an alignment).
    Done {
        kind: JobKind,
        job: usize,
        bytes: Vec<u8>,
        ms: f64,
    },
    /// Bytes of parse job `job`'s file read so far.
    Progress {
        job: usize,
        read: u64,
    },
    /// A job failed, or the helper died: its job is run in the loading worker, the helper is
    /// not used again.
    Failed {
        message: String,
    },
}

/// A started helper and the handlers that feed its messages into the pool's channel.
pub struct Helper {
    worker: Worker,
    pub ready: bool,
    /// The job it is running.
    pub busy: Option<(JobKind, usize)>,
    pub alive: bool,
    /// Given a job in the current batch.
    pub used: bool,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(ErrorEvent)>,
}

impl Helper {
    /// Ready for a job.
    pub fn idle(&self) -> bool {
        self.alive && self.ready && self.busy.is_none()
    }

    /// Stops it for good (its slot stays: messages arrive tagged with their helper's index).
    pub fn retire(&mut self) {
        self.alive = false;
        self.worker.terminate();
    }

    /// Posts `msg`, transferring `transfer`'s buffers.
    pub fn post(&self, msg: &Object, transfer: &Array) -> Result<(), String> {
        self.worker
            .post_message_with_transfer(msg, transfer)
            .map_err(crate::page_logic::files::js_msg)
    }
}

/// The helpers, kept from one batch to the next (starting them is the expensive part), and
/// the channel their messages arrive on.
pub struct Pool {
    pub helpers: Vec<Helper>,
    sender: UnboundedSender<(usize, Event)>,
    pub events: UnboundedReceiver<(usize, Event)>,
}

thread_local! {
    static POOL: RefCell<Option<Pool>> = const { RefCell::new(None) };
}

impl Pool {
    /// The pool, taken out for one batch ([`Pool::put_back`] when done); an empty one the
    /// first time.
    pub fn take() -> Pool {
        POOL.with(|p| p.borrow_mut().take())
            .unwrap_or_else(Pool::new)
    }

    pub fn put_back(self) {
        POOL.with(|p| *p.borrow_mut() = Some(self));
    }

    /// Starts helpers until `n` are alive in the kept pool, so that their start (about 150 ms)
    /// overlaps the reading of files instead of delaying the work.
    pub fn prestart(n: usize) {
        if n > 0 {
            POOL.with(|p| p.borrow_mut().get_or_insert_with(Pool::new).grow_to(n));
        }
    }

    fn new() -> Pool {
        let (sender, events) = unbounded();
        Pool {
            helpers: Vec::new(),
            sender,
            events,
        }
    }

    /// Helpers running a job of kind `kind`.
    pub fn busy(&self, kind: JobKind) -> usize {
        self.helpers
            .iter()
            .filter(|h| h.alive && h.busy.is_some_and(|(k, _)| k == kind))
            .count()
    }

    /// Starts helpers until `n` are alive. A dead helper keeps its place: each helper's
    /// messages arrive tagged with its index.
    pub fn grow_to(&mut self, n: usize) {
        while self.helpers.iter().filter(|h| h.alive).count() < n.min(MAX_HELPERS) {
            let index = self.helpers.len();
            match start_helper(index, self.sender.clone()) {
                Ok(h) => self.helpers.push(h),
                Err(e) => {
                    web_sys::console::warn_1(&format!("no helper worker: {e}").into());
                    break;
                }
            }
        }
    }
}

/// The cores the browser reports (1 if it does not say).
pub fn hardware_concurrency() -> usize {
    Reflect::get(&js_sys::global(), &"navigator".into())
        .and_then(|n| Reflect::get(&n, &"hardwareConcurrency".into()))
        .ok()
        .and_then(|v| v.as_f64())
        .map_or(1, |v| v as usize)
}

fn start_helper(index: usize, sender: UnboundedSender<(usize, Event)>) -> Result<Helper, String> {
    let options = WorkerOptions::new();
    options.set_name(&helper_name(index));
    let worker =
        Worker::new_with_options(HELPER_URL, &options).map_err(crate::page_logic::files::js_msg)?;
    let on_message_sender = sender.clone();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
        let _ = on_message_sender.unbounded_send((index, read_event(&e.data())));
    });
    let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |e: ErrorEvent| {
        // Handled here: a helper's uncaught error must not travel on to the page as the
        // loading worker's own (the page would take the loading worker for dead).
        e.prevent_default();
        let _ = sender.unbounded_send((
            index,
            Event::Failed {
                message: e.message(),
            },
        ));
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    Ok(Helper {
        worker,
        ready: false,
        busy: None,
        alive: true,
        used: false,
        _on_message: on_message,
        _on_error: on_error,
    })
}

fn read_event(data: &JsValue) -> Event {
    let json = Reflect::get(data, &"json".into())
        .ok()
        .and_then(|j| j.as_string())
        .unwrap_or_default();
    let result = |kind: JobKind, job: usize, ms: f64| match Reflect::get(data, &RESULT_KEY.into())
        .and_then(|b| b.dyn_into::<js_sys::ArrayBuffer>())
    {
        Ok(buffer) => Event::Done {
            kind,
            job,
            bytes: Uint8Array::new(&buffer).to_vec(),
            ms,
        },
        Err(_) => Event::Failed {
            message: format!("the result of job {job} came without its bytes"),
        },
    };
    match serde_json::from_str::<ToPage>(&json) {
        Ok(ToPage::Ready) => Event::Ready,
        Ok(ToPage::Aligned { job }) => result(JobKind::Align, job, 0.0),
        Ok(ToPage::Parsed { job, ms }) => result(JobKind::Parse, job, ms),
        Ok(ToPage::ParseProgress { job, read }) => Event::Progress { job, read },
        Ok(ToPage::AlignFailed { job, message } | ToPage::ParseFailed { job, message }) => {
            Event::Failed {
                message: format!("job {job}: {message}"),
            }
        }
        Ok(ToPage::Crashed { message }) => Event::Failed { message },
        Ok(other) => Event::Failed {
            message: format!("unexpected message {other:?}"),
        },
        Err(e) => Event::Failed {
            message: format!("unreadable message: {e}"),
        },
    }
}
