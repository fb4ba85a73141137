//! The page's alignment workers, both ends. The loading worker aligns each process of a
//! session; with more than one core it hands those jobs to helper workers (instances of the
//! loading worker's own script, started from it) as bytes ([`align_wire`]) and waits for their
//! results without blocking, keeping every helper busy with one job, the largest first. A helper
//! that fails or dies has its job run in the loading worker instead, so a result always comes
//! and is always [`align::Job::run`]'s: where a process is aligned never changes how
//! (`tests/browser/workers.test.mjs` compares the page's results with 0 and 3 helpers).
//!
//! Small sessions are aligned in place: starting a helper costs more than their alignment.

use align::{AlignConfig, Job, JobsFuture, ProcessAlignment, Runner};
use futures_channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use futures_util::StreamExt;
use js_sys::{Array, Object, Reflect, Uint8Array};
use std::cell::{Cell, RefCell};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, MessageEvent, Worker};

use crate::wire::ToPage;

/// The helpers' script: the loading worker's loader, beside it (relative to its own URL).
const HELPER_URL: &str = "./ncclscope-worker_loader.js";

/// At most this many helpers, whatever the browser reports.
const MAX_HELPERS: usize = 8;

/// Below this many records (log operations plus kernels) over a batch's jobs, the helpers are
/// not used unless the page asked for them: their start and the copies cost more.
const MIN_RECORDS: usize = 40_000;

/// Files of at least this many bytes in one load start the helpers while they are read (a
/// log of 40 000 records is about 10 MB).
const PRESTART_BYTES: u64 = 10_000_000;

/// The key under which a job's bytes travel to a helper, and a result's back.
const JOB_KEY: &str = "align_job";
pub const RESULT_KEY: &str = "result";

/// How many helpers to use: the page's `?align-workers=N` (0: none), else the cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Helpers {
    /// As many as the browser reports cores (none with one core), for batches worth it.
    Auto,
    /// Exactly this many for every batch of two jobs or more (tests, benchmarks).
    Exactly(usize),
}

impl Helpers {
    /// Starts the helpers a load of `bytes` of files will likely use, so that their start
    /// (about 150 ms) overlaps the reading of the files instead of delaying the alignment.
    pub fn prestart(self, bytes: u64) {
        let n = match self {
            Helpers::Exactly(n) => n.min(MAX_HELPERS),
            Helpers::Auto if bytes >= PRESTART_BYTES && hardware_concurrency() >= 2 => {
                hardware_concurrency().min(MAX_HELPERS)
            }
            Helpers::Auto => 0,
        };
        if n > 0 {
            POOL.with(|p| p.borrow_mut().get_or_insert_with(Pool::new).grow_to(n));
        }
    }

    fn count(self, jobs: &[Job<'_>]) -> usize {
        if jobs.len() < 2 {
            return 0;
        }
        match self {
            Helpers::Exactly(n) => n.min(MAX_HELPERS),
            Helpers::Auto => {
                let records: usize = jobs.iter().map(Job::size).sum();
                let cores = hardware_concurrency();
                if records < MIN_RECORDS || cores < 2 {
                    0
                } else {
                    cores.min(MAX_HELPERS)
                }
            }
        }
    }
}

/// The loading worker's [`Runner`]: helpers when they pay, else in place. Remembers how many
/// helpers its batches used and how long they took, for the status line.
#[derive(Debug)]
pub struct HelperRunner {
    pub helpers: Helpers,
    /// Send the first job of each batch cut short, so that its helper fails (`?align-fault`:
    /// the test of the fallback).
    pub fault: bool,
    used: Cell<usize>,
    ms: Cell<f64>,
}

impl HelperRunner {
    pub fn new(helpers: Helpers) -> HelperRunner {
        HelperRunner {
            helpers,
            fault: false,
            used: Cell::new(0),
            ms: Cell::new(0.0),
        }
    }

    /// Wall time spent in batches, in ms (the alignment's share of the analysis).
    pub fn ms(&self) -> f64 {
        self.ms.get()
    }

    /// The most helpers any batch used since this runner was made (0: all in place).
    pub fn used(&self) -> usize {
        self.used.get()
    }
}

impl Runner for HelperRunner {
    fn run<'a>(&'a self, jobs: &'a [Job<'a>], cfg: &'a AlignConfig) -> JobsFuture<'a> {
        let n = self.helpers.count(jobs);
        Box::pin(async move {
            let started = js_sys::Date::now();
            let results = if n == 0 {
                jobs.iter().map(|j| j.run(cfg)).collect()
            } else {
                let (results, used) = run_on_helpers(jobs, cfg, n, self.fault).await;
                self.used.set(self.used.get().max(used));
                results
            };
            self.ms.set(self.ms.get() + js_sys::Date::now() - started);
            results
        })
    }
}

fn hardware_concurrency() -> usize {
    Reflect::get(&js_sys::global(), &"navigator".into())
        .and_then(|n| Reflect::get(&n, &"hardwareConcurrency".into()))
        .ok()
        .and_then(|v| v.as_f64())
        .map_or(1, |v| v as usize)
}

/// What a helper told the loading worker.
enum Event {
    Ready,
    Done {
        job: usize,
        bytes: Vec<u8>,
    },
    /// A job failed, or the helper died: its job is run in place, the helper not used again.
    Failed {
        message: String,
    },
}

/// A started helper and the handlers that feed its messages into the pool's channel.
struct Helper {
    worker: Worker,
    ready: bool,
    /// The job it is running.
    busy: Option<usize>,
    alive: bool,
    /// Given a job in the current batch.
    used: bool,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(ErrorEvent)>,
}

/// The helpers, kept from one analysis to the next (starting them is the expensive part), and
/// the channel their messages arrive on.
struct Pool {
    helpers: Vec<Helper>,
    sender: UnboundedSender<(usize, Event)>,
    events: UnboundedReceiver<(usize, Event)>,
}

thread_local! {
    static POOL: RefCell<Option<Pool>> = const { RefCell::new(None) };
}

/// Runs `jobs` on `n` helpers; returns the results in job order and how many helpers took part.
async fn run_on_helpers(
    jobs: &[Job<'_>],
    cfg: &AlignConfig,
    n: usize,
    mut fault: bool,
) -> (Vec<ProcessAlignment>, usize) {
    // The pool is taken out while in use: nothing else aligns meanwhile (one request at a time).
    let mut pool = POOL
        .with(|p| p.borrow_mut().take())
        .unwrap_or_else(Pool::new);
    pool.grow_to(n);
    let mut results: Vec<Option<ProcessAlignment>> = jobs.iter().map(|_| None).collect();
    // Largest first: the longest job starts at once instead of finishing last.
    let mut queue: Vec<usize> = (0..jobs.len()).collect();
    queue.sort_by_key(|&i| (jobs[i].size(), std::cmp::Reverse(i)));
    for h in &mut pool.helpers {
        h.used = false;
    }
    let mut left = jobs.len();
    loop {
        // Give every idle ready helper the next job.
        for helper in pool.helpers.iter_mut() {
            if !(helper.alive && helper.ready && helper.busy.is_none()) {
                continue;
            }
            let Some(i) = queue.pop() else { break };
            let mut bytes = align_wire::encode_job(&jobs[i], cfg);
            if std::mem::take(&mut fault) {
                bytes.truncate(bytes.len() / 2);
            }
            if let Err(message) = post_job(&helper.worker, i, &bytes) {
                web_sys::console::warn_1(&message.into());
                helper.alive = false;
                helper.worker.terminate();
                queue.push(i);
                continue;
            }
            helper.busy = Some(i);
            helper.used = true;
        }
        if left == 0 {
            break;
        }
        if !pool.helpers.iter().any(|h| h.alive) {
            // Every helper is gone: the rest in place.
            for i in queue.drain(..) {
                results[i] = Some(jobs[i].run(cfg));
            }
            break;
        }
        let Some((h, event)) = pool.events.next().await else {
            break;
        };
        let helper = &mut pool.helpers[h];
        match event {
            Event::Ready => helper.ready = true,
            // Only the answer to the job it was given (a helper answers one job at a time).
            Event::Done { job, bytes } if helper.busy == Some(job) => {
                helper.busy = None;
                let result = match align_wire::decode_result(&bytes) {
                    Ok(r) => r,
                    Err(e) => {
                        web_sys::console::warn_1(&e.into());
                        jobs[job].run(cfg)
                    }
                };
                if results[job].replace(result).is_none() {
                    left -= 1;
                }
            }
            Event::Done { .. } => {}
            Event::Failed { message } => {
                web_sys::console::warn_1(&format!("alignment worker {h}: {message}").into());
                helper.alive = false;
                helper.worker.terminate();
                if let Some(job) = helper.busy.take() {
                    results[job] = Some(jobs[job].run(cfg));
                    left -= 1;
                }
            }
        }
    }
    let used = pool.helpers.iter().filter(|h| h.used).count();
    POOL.with(|p| *p.borrow_mut() = Some(pool));
    // Every job has a result by now (each was either answered or run in place).
    let results = results
        .into_iter()
        .zip(jobs)
        .map(|(r, j)| r.unwrap_or_else(|| j.run(cfg)))
        .collect();
    (results, used)
}

impl Pool {
    fn new() -> Pool {
        let (sender, events) = unbounded();
        Pool {
            helpers: Vec::new(),
            sender,
            events,
        }
    }

    /// Starts helpers until `n` are alive. A dead helper keeps its place: each helper's
    /// messages arrive tagged with its index.
    fn grow_to(&mut self, n: usize) {
        while self.helpers.iter().filter(|h| h.alive).count() < n {
            let index = self.helpers.len();
            match start_helper(index, self.sender.clone()) {
                Ok(h) => self.helpers.push(h),
                Err(e) => {
                    web_sys::console::warn_1(&format!("no alignment worker: {e}").into());
                    break;
                }
            }
        }
    }
}

fn start_helper(index: usize, sender: UnboundedSender<(usize, Event)>) -> Result<Helper, String> {
    let worker = Worker::new(HELPER_URL).map_err(crate::files::js_msg)?;
    let on_message_sender = sender.clone();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
        let _ = on_message_sender.unbounded_send((index, read_event(&e.data())));
    });
    let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |e: ErrorEvent| {
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
    match serde_json::from_str::<ToPage>(&json) {
        Ok(ToPage::Ready) => Event::Ready,
        Ok(ToPage::Aligned { job }) => {
            match Reflect::get(data, &RESULT_KEY.into())
                .and_then(|b| b.dyn_into::<js_sys::ArrayBuffer>())
            {
                Ok(buffer) => Event::Done {
                    job,
                    bytes: Uint8Array::new(&buffer).to_vec(),
                },
                Err(_) => Event::Failed {
                    message: format!("the result of job {job} came without its bytes"),
                },
            }
        }
        Ok(ToPage::AlignFailed { job, message }) => Event::Failed {
            message: format!("job {job}: {message}"),
        },
        Ok(ToPage::Crashed { message }) => Event::Failed { message },
        Ok(other) => Event::Failed {
            message: format!("unexpected message {other:?}"),
        },
        Err(e) => Event::Failed {
            message: format!("unreadable message: {e}"),
        },
    }
}

/// Posts job `i`'s bytes to a helper; the buffer is transferred, not copied.
fn post_job(worker: &Worker, i: usize, bytes: &[u8]) -> Result<(), String> {
    let msg = Object::new();
    let buffer = Uint8Array::from(bytes).buffer();
    let _ = Reflect::set(&msg, &JOB_KEY.into(), &buffer);
    let _ = Reflect::set(&msg, &"job".into(), &JsValue::from_f64(i as f64));
    worker
        .post_message_with_transfer(&msg, &Array::of1(&buffer))
        .map_err(crate::files::js_msg)
}

/// The helper's side: if `data` is a job, runs it and returns the reply (the message and the
/// result's bytes); `None` for any other message.
pub fn serve_job(data: &JsValue) -> Option<(ToPage, Option<Vec<u8>>)> {
    let buffer = Reflect::get(data, &JOB_KEY.into())
        .ok()?
        .dyn_into::<js_sys::ArrayBuffer>()
        .ok()?;
    let job = Reflect::get(data, &"job".into())
        .ok()
        .and_then(|j| j.as_f64())
        .unwrap_or(0.0) as usize;
    let bytes = Uint8Array::new(&buffer).to_vec();
    Some(match align_wire::decode_job(&bytes) {
        Ok(owned) => {
            drop(bytes);
            let result = align_wire::encode_result(&owned.run());
            (ToPage::Aligned { job }, Some(result))
        }
        Err(message) => (ToPage::AlignFailed { job, message }, None),
    })
}
