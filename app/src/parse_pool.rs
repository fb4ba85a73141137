//! The page's parsing workers, both ends. With more than one core and logs big enough, the
//! loading worker hands each log of a load (its `Blob`: the browser passes the file, not its
//! bytes) to a helper worker ([`crate::worker_pool`]'s, the same that align), the largest
//! first, one log per helper at a time. A helper reads its log in slices and feeds
//! [`pipeline::LogLoader`] exactly as the loading worker does ([`parse_blob`], shared), as file
//! 0, and posts back its progress and the parsed log as `log_wire` bytes, transferred.
//!
//! Meanwhile the loading worker walks the load's files in order ([`ParseBatch::claim`]):
//! exports it reads itself (sql.js lives there), and each log it adds to the session when its
//! turn comes, renumbered to the index the session gives it then
//! ([`pipeline::Session::add_log_parsed_ahead`]), so the session, every report and every later
//! stage are those of a single-worker load. A log whose helper fails (an error event, a panic,
//! bytes that do not decode) is parsed in the loading worker when its turn comes; a helper
//! that fails is replaced (at most as many times as there are helpers). By default the
//! loading worker parses too: a log no helper has taken when its turn comes, and, while its
//! turn's log is still on a helper, the next waiting logs ahead ([`ParseJobs`]).
//!
//! Small loads are parsed in place: starting and feeding helpers costs more than it saves.

use futures_channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use futures_util::future::{join, select, Either};
use futures_util::StreamExt;
use js_sys::{Array, Object, Reflect};
use pipeline::{sniff, InputKind, LoadedLog, LogLoader, SNIFF_BYTES};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, DedicatedWorkerGlobalScope};

use crate::files::{for_each_slice, read_head};
use crate::loader::{post, post_bytes, PROGRESS_INTERVAL_MS};
use crate::parse_jobs::{auto_helpers, Claim, ParseJobs};
use crate::wire::{LoadItem, PageOptions, ParseFault, ToPage};
use crate::worker_pool::{
    hardware_concurrency, Event, Helper, JobKind, Pool, MAX_HELPERS, RESULT_KEY,
};

/// The keys of a parse job's message to a helper.
const JOB_KEY: &str = "parse_job";
const BLOB_KEY: &str = "blob";
const NAME_KEY: &str = "name";
const FAULT_KEY: &str = "fault";

/// How many helpers parse: the page's `?parse-workers=N` (0: none), else by the cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ParseHelpers {
    /// [`auto_helpers`] of the cores the browser reports, for loads worth it; the loading
    /// worker parses a log itself when its turn comes before a helper took it.
    Auto,
    /// Exactly this many (at most one per log), every log left to them unless `?parse-share`
    /// (tests, benchmarks).
    Exactly(usize),
}

impl ParseHelpers {
    /// Whether `files` files of `bytes` in all may be worth sniffing for logs to spread (the
    /// logs are a part of those bytes: a smaller load cannot pass [`auto_helpers`]).
    fn may_help(self, files: usize, bytes: u64) -> bool {
        match self {
            ParseHelpers::Exactly(n) => n > 0 && files > 0,
            ParseHelpers::Auto => auto_helpers(hardware_concurrency(), files, bytes) > 0,
        }
    }

    /// How many helpers parse `logs` (request position, size).
    fn count(self, logs: &[(usize, u64)]) -> usize {
        let n = match self {
            ParseHelpers::Exactly(n) => n,
            ParseHelpers::Auto => {
                let bytes = logs.iter().map(|(_, size)| size).sum();
                auto_helpers(hardware_concurrency(), logs.len(), bytes)
            }
        };
        n.min(MAX_HELPERS).min(logs.len())
    }
}

/// One load's logs and where each is parsed: driven by [`ParseBatch::drive`] beside the
/// loading worker's walk over the files ([`ParseBatch::claim`] for each).
pub struct ParseBatch<'a> {
    files: &'a [LoadItem],
    /// Helpers to use (0: every file in place).
    helpers: usize,
    fault: Option<ParseFault>,
    jobs: RefCell<ParseJobs>,
    /// Logs the loading worker parsed ahead of their turn while it waited for a helper, by job,
    /// with their parse's time (absent: the parse failed, and is done again in its turn).
    ahead: RefCell<HashMap<usize, (LoadedLog, f64)>>,
    /// How many of those were added (for the status line).
    added_ahead: Cell<usize>,
    /// The helpers given a log in this load.
    took: RefCell<BTreeSet<usize>>,
    /// Tells the walk a log's state changed (parsed, or its helper failed).
    changed: UnboundedSender<()>,
    changes: Cell<Option<UnboundedReceiver<()>>>,
    /// Tells the dispatcher the walk took a log or ended (it may have nothing left to wait for).
    wake: UnboundedSender<()>,
    wakes: Cell<Option<UnboundedReceiver<()>>>,
}

impl<'a> ParseBatch<'a> {
    /// Decides where the logs of `files` are parsed: sniffs each file's head when helpers may
    /// pay, and starts no helper otherwise.
    pub async fn plan(files: &'a [LoadItem], options: &PageOptions) -> ParseBatch<'a> {
        let policy = match options.parse_workers {
            Some(n) => ParseHelpers::Exactly(n),
            None => ParseHelpers::Auto,
        };
        let bytes = files.iter().map(|f| f.blob.size() as u64).sum();
        let mut logs = Vec::new();
        if policy.may_help(files.len(), bytes) {
            for (n, f) in files.iter().enumerate() {
                let head = read_head(&f.blob, SNIFF_BYTES).await;
                if matches!(sniff(&head), InputKind::NcclLog | InputKind::Gzip) {
                    logs.push((n, f.blob.size() as u64));
                }
            }
        }
        let helpers = policy.count(&logs);
        if helpers == 0 {
            logs.clear();
        }
        let (changed, changes) = unbounded();
        let (wake, wakes) = unbounded();
        ParseBatch {
            files,
            helpers,
            fault: options.parse_fault,
            jobs: RefCell::new(ParseJobs::new(
                logs,
                policy == ParseHelpers::Auto || options.parse_share,
            )),
            ahead: RefCell::default(),
            added_ahead: Cell::new(0),
            took: RefCell::default(),
            changed,
            changes: Cell::new(Some(changes)),
            wake,
            wakes: Cell::new(Some(wakes)),
        }
    }

    /// Runs `walk` (the loading worker's pass over the files, calling [`ParseBatch::claim`]
    /// for each in order) while the helpers parse; both end together.
    pub async fn run_beside(&self, walk: impl Future<Output = ()>) {
        let walk = async {
            walk.await;
            let _ = self.wake.unbounded_send(());
        };
        join(walk, self.drive()).await;
    }

    /// The turn of the load's file `file` has come: the log parsed for it elsewhere or ahead
    /// (renumbered later by the session) and how long its parse took, once it is there; `None`
    /// when the loading worker loads the file itself now (an export, a log left to it, or one
    /// whose helper failed). While its log is on a helper, the loading worker parses the next
    /// waiting logs ahead instead of idling.
    pub async fn claim(&self, file: usize) -> Option<(LoadedLog, f64)> {
        let job = self.jobs.borrow().job_of(file)?;
        let mut changes = self.changes.take()?;
        let claimed = loop {
            let claim = self.jobs.borrow_mut().claim(job);
            match claim {
                Claim::Wait => {
                    let next = self.jobs.borrow_mut().next_for_loader();
                    if let Some(ahead) = next {
                        let _ = self.wake.unbounded_send(());
                        self.parse_ahead(ahead).await;
                    } else if changes.next().await.is_none() {
                        break None;
                    }
                }
                Claim::InPlace => break None,
                Claim::Ahead => {
                    self.changes.set(Some(changes));
                    let log = self.ahead.borrow_mut().remove(&job);
                    self.added_ahead
                        .set(self.added_ahead.get() + usize::from(log.is_some()));
                    return log;
                }
                Claim::Ready { bytes, helper, ms } => break Some((bytes, helper, ms)),
            }
        };
        self.changes.set(Some(changes));
        let _ = self.wake.unbounded_send(());
        let (bytes, helper, ms) = claimed?;
        let item = &self.files[file];
        let decoding = js_sys::Date::now();
        match log_wire::decode(&bytes) {
            Ok(parsed) => {
                self.jobs.borrow_mut().added_from(helper);
                let log = LoadedLog {
                    name: item.name.clone(),
                    bytes: item.blob.size() as u64,
                    parsed,
                };
                Some((log, ms + js_sys::Date::now() - decoding))
            }
            Err(e) => {
                web_sys::console::warn_1(
                    &format!(
                        "parsing worker {helper}: {e}; {} is parsed in the loading worker",
                        item.name
                    )
                    .into(),
                );
                None
            }
        }
    }

    /// Parses job `job`'s log in the loading worker ahead of its turn, as file 0 like a
    /// helper's; its progress goes to its row as usual.
    async fn parse_ahead(&self, job: usize) {
        let item = &self.files[self.jobs.borrow().file(job)];
        let started = js_sys::Date::now();
        let mut last_post = f64::NEG_INFINITY;
        let parsed = parse_blob(&item.name, 0, &item.blob, |read| {
            let now = js_sys::Date::now();
            if now - last_post >= PROGRESS_INTERVAL_MS {
                last_post = now;
                post(&ToPage::Progress { id: item.id, read }, None);
            }
        })
        .await;
        // A failure is not kept: the file is loaded again in its turn, which reports it.
        if let Ok(log) = parsed {
            let ms = js_sys::Date::now() - started;
            self.ahead.borrow_mut().insert(job, (log, ms));
        }
    }

    /// For the status line: how many files were read in `ms`, how many logs on how many
    /// helpers, and how many the loading worker parsed ahead of their turn.
    pub fn summary(&self, ms: f64) -> String {
        let jobs = self.jobs.borrow();
        let files = self.files.len();
        let read = format!("read {files} file{} in {ms:.0} ms", plural(files));
        let ahead = match self.added_ahead.get() {
            0 => String::new(),
            n => format!(", {n} ahead by the loading worker"),
        };
        match jobs.from_helpers() {
            (_, 0) => read,
            (logs, helpers) => format!(
                "{read} ({logs} of {} log{} parsed on {helpers} worker{}{ahead})",
                jobs.len(),
                plural(jobs.len()),
                plural(helpers)
            ),
        }
    }

    /// Hands the logs to helpers, largest first, one each, until none is left or on one;
    /// forwards their progress to the page and their results to the walk.
    async fn drive(&self) {
        if self.helpers == 0 {
            return;
        }
        let Some(mut wakes) = self.wakes.take() else {
            return;
        };
        // The pool is taken out while in use: nothing else uses it meanwhile (one request at a
        // time; alignment comes after the files are loaded).
        let mut pool = Pool::take();
        pool.grow_to(self.helpers);
        let mut fault = self.fault;
        let mut replaced = 0;
        loop {
            self.dispatch(&mut pool, &mut fault);
            if self.jobs.borrow().settled() {
                break;
            }
            if !pool.helpers.iter().any(|h| h.alive) {
                // Every helper is gone: the rest in place.
                break;
            }
            let (h, event) = match select(pool.events.next(), wakes.next()).await {
                Either::Left((Some(event), _)) => event,
                Either::Right((Some(()), _)) => continue,
                Either::Left((None, _)) | Either::Right((None, _)) => break,
            };
            let helper = &mut pool.helpers[h];
            if !helper.alive {
                // Late words of a helper already given up on.
                continue;
            }
            match event {
                Event::Ready => helper.ready = true,
                Event::Progress { job, read } if helper.busy == Some((JobKind::Parse, job)) => {
                    let id = self.files[self.jobs.borrow().file(job)].id;
                    post(&ToPage::Progress { id, read }, None);
                }
                Event::Done {
                    kind: JobKind::Parse,
                    job,
                    bytes,
                    ms,
                } if helper.busy == Some((JobKind::Parse, job)) => {
                    helper.busy = None;
                    self.jobs.borrow_mut().parsed(job, h, bytes, ms);
                    let _ = self.changed.unbounded_send(());
                }
                Event::Done { .. } | Event::Progress { .. } => {}
                Event::Failed { message } => {
                    helper.retire();
                    helper.busy = None;
                    let lost = self.jobs.borrow_mut().failed(h);
                    let what = lost.map_or(String::new(), |job| {
                        let name = &self.files[self.jobs.borrow().file(job)].name;
                        format!("; {name} is parsed in the loading worker")
                    });
                    web_sys::console::warn_1(
                        &format!("parsing worker {h}: {message}{what}").into(),
                    );
                    let _ = self.changed.unbounded_send(());
                    if replaced < self.helpers {
                        replaced += 1;
                        pool.grow_to(self.helpers);
                    }
                }
            }
        }
        pool.put_back();
        // Whatever is not parsed by now never will be by a helper: the walk must not wait.
        self.jobs.borrow_mut().give_up();
        let _ = self.changed.unbounded_send(());
    }

    /// Gives idle helpers the next logs, keeping at most `self.helpers` busy.
    fn dispatch(&self, pool: &mut Pool, fault: &mut Option<ParseFault>) {
        let mut busy = pool.busy(JobKind::Parse);
        // Helpers that already parsed in this load first: the pool may hold more than
        // `self.helpers` (started for alignment), and N parsing workers should be N helpers.
        let mut order: Vec<usize> = (0..pool.helpers.len()).collect();
        order.sort_by_key(|h| !self.took.borrow().contains(h));
        for h in order {
            let helper = &mut pool.helpers[h];
            if busy >= self.helpers {
                break;
            }
            if !helper.idle() {
                continue;
            }
            let Some(job) = self.jobs.borrow_mut().next_for_helper(h) else {
                break;
            };
            let item = &self.files[self.jobs.borrow().file(job)];
            if let Err(message) = post_job(helper, job, item, fault.take()) {
                web_sys::console::warn_1(&format!("parsing worker {h}: {message}").into());
                helper.retire();
                self.jobs.borrow_mut().requeue(job);
                continue;
            }
            helper.busy = Some((JobKind::Parse, job));
            self.took.borrow_mut().insert(h);
            busy += 1;
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Posts parse job `job` (`item`'s file, which the browser shares, not copies) to a helper.
fn post_job(
    helper: &Helper,
    job: usize,
    item: &LoadItem,
    fault: Option<ParseFault>,
) -> Result<(), String> {
    let msg = Object::new();
    let _ = Reflect::set(&msg, &JOB_KEY.into(), &JsValue::from_f64(job as f64));
    let _ = Reflect::set(&msg, &NAME_KEY.into(), &JsValue::from_str(&item.name));
    let _ = Reflect::set(&msg, &BLOB_KEY.into(), &item.blob);
    if let Some(f) = fault {
        let _ = Reflect::set(&msg, &FAULT_KEY.into(), &JsValue::from_str(f.name()));
    }
    helper.post(&msg, &Array::new())
}

/// The parser is given a slice of the file in pieces of this size. V8 runs a wasm function in
/// baseline code until it has run a while and swaps in optimised code only at its next call:
/// one 16 MiB call ran the first slice of every load unoptimised.
const FEED_BYTES: usize = 1 << 20;

/// Reads `blob` in slices into [`LogLoader`] as file `file_index`; `progress(bytes_read)` after
/// each slice. How every log of the page is parsed, in the loading worker or on a helper.
pub async fn parse_blob(
    name: &str,
    file_index: u32,
    blob: &Blob,
    mut progress: impl FnMut(u64),
) -> Result<LoadedLog, String> {
    let mut loader = LogLoader::new(name, file_index);
    let mut read = 0u64;
    // One reused buffer: wasm memory holds the records kept, not the file.
    let mut buf = Vec::new();
    for_each_slice(blob, |part| {
        buf.resize(part.length() as usize, 0);
        part.copy_to(&mut buf);
        read += buf.len() as u64;
        for piece in buf.chunks(FEED_BYTES) {
            loader.feed(piece);
        }
        progress(read);
    })
    .await?;
    Ok(loader.finish(blob.size() as u64))
}

/// The helper's side: if `data` is a parse job, parses its log (asynchronously: the file is
/// read in slices) and answers; `false` for any other message.
pub fn serve_job(data: &JsValue) -> bool {
    let Some(job) = Reflect::get(data, &JOB_KEY.into())
        .ok()
        .and_then(|j| j.as_f64())
    else {
        return false;
    };
    let job = job as usize;
    let name = Reflect::get(data, &NAME_KEY.into())
        .ok()
        .and_then(|n| n.as_string())
        .unwrap_or_default();
    let fault = Reflect::get(data, &FAULT_KEY.into())
        .ok()
        .and_then(|f| f.as_string())
        .and_then(|f| ParseFault::from_query(&f));
    match Reflect::get(data, &BLOB_KEY.into()).map(JsCast::dyn_into::<Blob>) {
        Ok(Ok(blob)) => wasm_bindgen_futures::spawn_local(parse_job(job, name, blob, fault)),
        _ => post(
            &ToPage::ParseFailed {
                job,
                message: "a parse job without its file".into(),
            },
            None,
        ),
    }
    true
}

async fn parse_job(job: usize, name: String, blob: Blob, fault: Option<ParseFault>) {
    // The parse reads its file in slices, each a task of its own: no warm-up round between.
    crate::align_pool::pause_warm_up();
    parse_and_answer(job, name, blob, fault).await;
    crate::align_pool::resume_warm_up();
}

async fn parse_and_answer(job: usize, name: String, blob: Blob, fault: Option<ParseFault>) {
    let started = js_sys::Date::now();
    let mut last_post = f64::NEG_INFINITY;
    let mut crashed = false;
    let parsed = parse_blob(&name, 0, &blob, |read| {
        if fault == Some(ParseFault::Crash) && !crashed {
            crashed = true;
            crash_soon();
        }
        let now = js_sys::Date::now();
        if now - last_post >= PROGRESS_INTERVAL_MS {
            last_post = now;
            post(&ToPage::ParseProgress { job, read }, None);
        }
    })
    .await;
    if crashed {
        // The uncaught error ends this helper: no answer.
        return;
    }
    match parsed {
        Ok(log) => {
            let mut bytes = log_wire::encode(&log.parsed);
            drop(log);
            if fault == Some(ParseFault::Bytes) {
                bytes.truncate(bytes.len() / 2);
            }
            let ms = js_sys::Date::now() - started;
            post_bytes(&ToPage::Parsed { job, ms }, RESULT_KEY, bytes);
        }
        Err(message) => post(&ToPage::ParseFailed { job, message }, None),
    }
}

/// `?parse-fault=crash`: an uncaught error in this helper, thrown from a timer (not through the
/// parse under way), as a bug would end it mid-job.
fn crash_soon() {
    let throw = Closure::once_into_js(|| -> () {
        wasm_bindgen::throw_str("parse fault (?parse-fault): this parsing worker stops mid-job")
    });
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let _ = scope.set_timeout_with_callback(throw.unchecked_ref());
}
