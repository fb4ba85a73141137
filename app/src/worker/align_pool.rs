//! The page's alignment workers, both ends. The loading worker aligns each process of a
//! session; with more than one core it hands those jobs to helper workers (instances of the
//! loading worker's own script, started from it) as bytes ([`wire::align`]) and waits for their
//! results without blocking, keeping every helper busy with one job, the largest first. A helper
//! that fails or dies has its job run in the loading worker instead, so a result always comes
//! and is always [`align::Job::run`]'s: where a process is aligned never changes how
//! (`tests/browser/workers.test.mjs` compares the page's results with 0 and 3 helpers).
//!
//! Small sessions are aligned in place: starting a helper costs more than their alignment.
//! The helpers are [`crate::worker::pool`]'s, shared with parsing.

use align::{AlignConfig, Job, JobsFuture, ProcessAlignment, Runner};
use futures_util::StreamExt;
use js_sys::{Array, Object, Reflect, Uint8Array};
use std::cell::Cell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::protocol::messages::ToPage;
use crate::worker::pool::{hardware_concurrency, Event, JobKind, Pool, MAX_HELPERS};

/// Below this many records (log operations plus kernels) over a batch's jobs, the helpers are
/// not used unless the page asked for them: their start and the copies cost more.
const MIN_RECORDS: usize = 40_000;

/// Files of at least this many bytes in one load start the helpers while they are read (a
/// log of 40 000 records is about 10 MB).
const PRESTART_BYTES: u64 = 10_000_000;

/// The key under which a job's bytes travel to a helper.
const JOB_KEY: &str = "align_job";

/// The warm-up a helper runs while it has nothing to do: this many made-up alignments
/// ([`align::warmup`]) of [`WARMUP_STEPS`] steps, one per task so that a job that arrives
/// waits for one at most (about 5 ms natively, 30 ms before V8 has optimised the code). More
/// rounds (12, 30, 80) made the first jobs no faster.
const WARMUP_ROUNDS: u32 = 5;
const WARMUP_STEPS: usize = 300;

thread_local! {
    /// Warm-up rounds left; none once the helper has aligned a real job (it is warm then).
    static WARMUP_LEFT: Cell<u32> = const { Cell::new(0) };
    /// Parse jobs under way: the warm-up waits for them.
    static WARMUP_PAUSED: Cell<u32> = const { Cell::new(0) };
}

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
        Pool::prestart(n);
    }

    /// Starts the helpers any large load would use, while the page waits for its first drop.
    pub fn prestart_idle(self) {
        self.prestart(PRESTART_BYTES);
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
                // An exact count (tests, benchmarks) is honoured even when the jobs are short:
                // none starts before that many helpers are ready.
                let exact = matches!(self.helpers, Helpers::Exactly(_));
                let (results, used) = run_on_helpers(jobs, cfg, n, exact, self.fault).await;
                self.used.set(self.used.get().max(used));
                results
            };
            self.ms.set(self.ms.get() + js_sys::Date::now() - started);
            results
        })
    }
}

/// Runs `jobs` on `n` helpers (once `n` are ready, if `all_ready`, else as each gets ready);
/// returns the results in job order and how many helpers took part.
async fn run_on_helpers(
    jobs: &[Job<'_>],
    cfg: &AlignConfig,
    n: usize,
    all_ready: bool,
    mut fault: bool,
) -> (Vec<ProcessAlignment>, usize) {
    // The pool is taken out while in use: nothing else uses it meanwhile (one request at a time).
    let mut pool = Pool::take();
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
        // Give idle ready helpers the next jobs, keeping at most `n` busy (the pool may hold
        // more, started for parsing).
        let mut busy = pool.busy(JobKind::Align);
        let alive = pool.helpers.iter().filter(|h| h.alive).count();
        let ready = pool.helpers.iter().filter(|h| h.alive && h.ready).count();
        let waiting = all_ready && ready < n.min(alive);
        for helper in pool.helpers.iter_mut() {
            if busy >= n || waiting {
                break;
            }
            if !helper.idle() {
                continue;
            }
            let Some(i) = queue.pop() else { break };
            let mut bytes = wire::align::encode_job(&jobs[i], cfg);
            if std::mem::take(&mut fault) {
                bytes.truncate(bytes.len() / 2);
            }
            if let Err(message) = post_job(helper, i, &bytes) {
                web_sys::console::warn_1(&message.into());
                helper.retire();
                queue.push(i);
                continue;
            }
            helper.busy = Some((JobKind::Align, i));
            helper.used = true;
            busy += 1;
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
            Event::Done {
                kind: JobKind::Align,
                job,
                bytes,
                ..
            } if helper.busy == Some((JobKind::Align, job)) => {
                helper.busy = None;
                let result = match wire::align::decode_result(&bytes) {
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
            Event::Done { .. } | Event::Progress { .. } => {}
            Event::Failed { message } => {
                web_sys::console::warn_1(&format!("alignment worker {h}: {message}").into());
                helper.retire();
                if let Some((_, job)) = helper.busy.take() {
                    results[job] = Some(jobs[job].run(cfg));
                    left -= 1;
                }
            }
        }
    }
    let used = pool.helpers.iter().filter(|h| h.used).count();
    pool.put_back();
    // Every job has a result by now (each was either answered or run in place).
    let results = results
        .into_iter()
        .zip(jobs)
        .map(|(r, j)| r.unwrap_or_else(|| j.run(cfg)))
        .collect();
    (results, used)
}

/// Posts job `i`'s bytes to a helper; the buffer is transferred, not copied.
fn post_job(helper: &crate::worker::pool::Helper, i: usize, bytes: &[u8]) -> Result<(), String> {
    let msg = Object::new();
    let buffer = Uint8Array::from(bytes).buffer();
    let _ = Reflect::set(&msg, &JOB_KEY.into(), &buffer);
    let _ = Reflect::set(&msg, &"job".into(), &JsValue::from_f64(i as f64));
    helper.post(&msg, &Array::of1(&buffer))
}

/// The helper's side, when it starts: align made-up processes while no job comes, so that
/// the first real jobs run optimised code (see [`align::warmup`] for why). A parse job pauses
/// the warm-up ([`pause_warm_up`], [`resume_warm_up`]); an alignment job ends it.
pub fn start_warm_up() {
    WARMUP_LEFT.with(|w| w.set(WARMUP_ROUNDS));
    schedule_warm_up();
}

/// A parse job starts: no warm-up round until it ends.
pub fn pause_warm_up() {
    WARMUP_PAUSED.with(|p| p.set(p.get() + 1));
}

/// A parse job ended: the warm-up goes on, if rounds are left and no other parse runs.
pub fn resume_warm_up() {
    let paused = WARMUP_PAUSED.with(|p| {
        p.set(p.get().saturating_sub(1));
        p.get()
    });
    if paused == 0 {
        schedule_warm_up();
    }
}

/// Schedules the next warm-up round, if any is left, as a task of its own.
fn schedule_warm_up() {
    if WARMUP_LEFT.with(Cell::get) == 0 {
        return;
    }
    let round = Closure::once_into_js(|| {
        let left = WARMUP_LEFT.with(Cell::get);
        if left == 0 || WARMUP_PAUSED.with(Cell::get) > 0 {
            return;
        }
        WARMUP_LEFT.with(|w| w.set(left - 1));
        align::warmup::run(WARMUP_STEPS);
        schedule_warm_up();
    });
    let scope: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
    let _ = scope.set_timeout_with_callback(round.unchecked_ref());
}

/// The helper's side: if `data` is a job, runs it and returns the reply (the message and the
/// result's bytes); `None` for any other message.
pub fn serve_job(data: &JsValue) -> Option<(ToPage, Option<Vec<u8>>)> {
    let buffer = Reflect::get(data, &JOB_KEY.into())
        .ok()?
        .dyn_into::<js_sys::ArrayBuffer>()
        .ok()?;
    // Warm by now: this job runs the code the warm-up was for.
    WARMUP_LEFT.with(|w| w.set(0));
    let job = Reflect::get(data, &"job".into())
        .ok()
        .and_then(|j| j.as_f64())
        .unwrap_or(0.0) as usize;
    let bytes = Uint8Array::new(&buffer).to_vec();
    Some(match wire::align::decode_job(&bytes) {
        Ok(owned) => {
            drop(bytes);
            let result = wire::align::encode_result(&owned.run());
            (ToPage::Aligned { job }, Some(result))
        }
        Err(message) => (ToPage::AlignFailed { job, message }, None),
    })
}
