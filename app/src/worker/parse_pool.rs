//! The page's parsing workers, both ends. With more than one core and files big enough, the
//! loading worker hands each log and export of a load (its `Blob`: the browser passes the
//! file, not its bytes) to a helper worker ([`crate::worker::pool`]'s, the same that align), the
//! most work first (an export's byte counts [`EXPORT_WORK_PER_BYTE`] of a log's), one file per
//! helper at a time. A helper reads a log in slices and feeds [`load::LogLoader`] exactly
//! as the loading worker does ([`parse_blob`], shared), as file 0, and posts back its progress
//! and the parsed log as `wire::log` bytes, transferred. An export it reads in its own sql.js
//! exactly as the loading worker does ([`crate::worker::export_read`], shared) and posts back as
//! `wire::export` bytes: the export, or the file's error (a bad file does not retire a helper).
//!
//! Meanwhile the loading worker walks the load's files in order ([`ParseBatch::claim`]) and
//! adds each to the session when its turn comes: a log renumbered to the index the session
//! gives it then ([`load::Session::add_log_parsed_ahead`]), an export as it is
//! ([`load::Session::add_read_export`]), so the session, every report and every later stage
//! are those of a single-worker load. A file whose helper fails (an error event, a panic, bytes
//! that do not decode) is loaded in the loading worker when its turn comes; a helper that fails
//! is replaced (at most as many times as there are helpers). By default the loading worker
//! loads too: a file no helper has taken when its turn comes, and, while its turn's file is
//! still on a helper, the next waiting files ahead ([`ParseJobs`]).
//!
//! Small loads are loaded in place: starting and feeding helpers costs more than it saves.

use futures_channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use futures_util::future::{join, select, Either};
use futures_util::StreamExt;
use js_sys::{Array, Object, Reflect};
use load::{sniff, InputKind, LoadedLog, LogLoader, ReadOptions, SNIFF_BYTES};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, DedicatedWorkerGlobalScope};
use wire::export::ExportRead;

use crate::page_logic::files::{for_each_slice, read_head};
use crate::protocol::messages::{LoadItem, PageOptions, ParseFault, ToPage};
use crate::worker::export_read::{read_export_blob, ExportFailure, ReadExport};
use crate::worker::parse_jobs::{auto_helpers, work, Claim, ParseJobs, EXPORT_WORK_PER_BYTE};
use crate::worker::pool::{
    hardware_concurrency, Event, Helper, JobKind, Pool, MAX_HELPERS, RESULT_KEY,
};
use crate::worker::post::{post, post_bytes, PROGRESS_INTERVAL_MS};

/// The keys of a parse job's message to a helper.
const JOB_KEY: &str = "parse_job";
const BLOB_KEY: &str = "blob";
const NAME_KEY: &str = "name";
const FAULT_KEY: &str = "fault";
/// Set (to `true`) on a job that is an export to read, not a log to parse.
const EXPORT_KEY: &str = "export";
/// An export job's [`ReadOptions::iteration_patterns`].
const PATTERNS_KEY: &str = "iteration_patterns";

/// A file loaded away from its turn: on a helper, or by the loading worker ahead.
// Variants of very different sizes: there is one value per file in flight, moved once, so
// boxing would cost an allocation and gain nothing.
#[allow(clippy::large_enum_variant)]
pub enum Loaded {
    Log(LoadedLog),
    /// Text without an NCCL line in its head in which no later line was one either: refused
    /// like any other unknown file. A helper answers it with no bytes.
    NotALog,
    /// The export and its compute kernels, or the file's error, as reading it in place would
    /// give.
    Export(Result<ReadExport, String>),
}

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
    /// Whether `files` files of `bytes` in all may be worth sniffing for files to spread (at
    /// most, every byte is an export's: a smaller load cannot pass [`auto_helpers`]).
    fn may_help(self, files: usize, bytes: u64) -> bool {
        match self {
            ParseHelpers::Exactly(n) => n > 0 && files > 0,
            ParseHelpers::Auto => {
                let most = bytes.saturating_mul(EXPORT_WORK_PER_BYTE);
                auto_helpers(hardware_concurrency(), files, most) > 0
            }
        }
    }

    /// How many helpers load `jobs` (request position, work).
    fn count(self, jobs: &[(usize, u64)]) -> usize {
        let n = match self {
            ParseHelpers::Exactly(n) => n,
            ParseHelpers::Auto => {
                let work = jobs.iter().map(|(_, work)| work).sum();
                auto_helpers(hardware_concurrency(), jobs.len(), work)
            }
        };
        n.min(MAX_HELPERS).min(jobs.len())
    }
}

/// One load's logs and exports and where each is loaded: driven by [`ParseBatch::drive`]
/// beside the loading worker's walk over the files ([`ParseBatch::claim`] for each).
pub struct ParseBatch<'a> {
    files: &'a [LoadItem],
    /// Per job: an export (else a log).
    exports: Vec<bool>,
    /// What exports are read for (the session's).
    read_options: ReadOptions,
    /// Helpers to use (0: every file in place).
    helpers: usize,
    /// Per file of the load, what its head sniffed as, when the plan read it: the loading
    /// worker then loads the file in place without reading its head again (a `Blob` read costs
    /// 2-3 ms whatever its size: 0.8 s of a 256-log load).
    kinds: Vec<Option<InputKind>>,
    fault: Option<ParseFault>,
    jobs: RefCell<ParseJobs>,
    /// Files the loading worker loaded ahead of their turn while it waited for a helper, by
    /// job, with their load's time (absent: it failed, and is loaded again in its turn).
    ahead: RefCell<HashMap<usize, (Loaded, f64)>>,
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
    /// Decides where the logs and exports of `files` are loaded: sniffs each file's head when
    /// helpers may pay, and starts no helper otherwise. Exports are read for `read_options`.
    pub async fn plan(
        files: &'a [LoadItem],
        options: &PageOptions,
        read_options: ReadOptions,
    ) -> ParseBatch<'a> {
        let policy = match options.parse_workers {
            Some(n) => ParseHelpers::Exactly(n),
            None => ParseHelpers::Auto,
        };
        let bytes = files.iter().map(|f| f.blob.size() as u64).sum();
        let mut jobs = Vec::new();
        let mut exports = Vec::new();
        let mut kinds = vec![None; files.len()];
        if policy.may_help(files.len(), bytes) {
            for (n, f) in files.iter().enumerate() {
                let kind = sniff(&read_head(&f.blob, SNIFF_BYTES).await);
                kinds[n] = Some(kind);
                let export = match kind {
                    // Text may be a log after a long preamble: parsed like one.
                    InputKind::NcclLog | InputKind::Gzip | InputKind::Text => false,
                    InputKind::NsysSqlite => true,
                    // Stage files are small and traces stream in place (their reader keeps only
                    // the NCCL events); unknown files are refused there.
                    InputKind::StageFile | InputKind::Kineto | InputKind::Unknown => continue,
                };
                jobs.push((n, work(f.blob.size() as u64, export)));
                exports.push(export);
            }
        }
        let helpers = policy.count(&jobs);
        if helpers == 0 {
            jobs.clear();
            exports.clear();
        }
        let (changed, changes) = unbounded();
        let (wake, wakes) = unbounded();
        ParseBatch {
            files,
            exports,
            read_options,
            helpers,
            kinds,
            fault: options.parse_fault,
            jobs: RefCell::new(ParseJobs::new(
                jobs,
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

    /// What the head of the load's file `file` sniffed as, if the plan read it.
    pub fn kind(&self, file: usize) -> Option<InputKind> {
        self.kinds.get(file).copied().flatten()
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

    /// The turn of the load's file `file` has come: the file loaded for it elsewhere or ahead
    /// (a log is renumbered later by the session) and how long its load took, once it is
    /// there; `None` when the loading worker loads the file itself now (one left to it, or one
    /// whose helper failed). While its file is on a helper, the loading worker loads the next
    /// waiting files ahead instead of idling.
    pub async fn claim(&self, file: usize) -> Option<(Loaded, f64)> {
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
        let decoded = if !self.exports[job] && bytes.is_empty() {
            Ok(Loaded::NotALog)
        } else if self.exports[job] {
            wire::export::decode(&bytes).map(|read| Loaded::Export(ReadExport::from_wire(read)))
        } else {
            wire::log::decode(&bytes).map(|parsed| {
                Loaded::Log(LoadedLog {
                    name: item.name.clone(),
                    bytes: item.blob.size() as u64,
                    parsed,
                })
            })
        };
        match decoded {
            Ok(loaded) => {
                self.jobs.borrow_mut().added_from(helper);
                Some((loaded, ms + js_sys::Date::now() - decoding))
            }
            Err(e) => {
                web_sys::console::warn_1(
                    &format!(
                        "parsing worker {helper}: {e}; {} is loaded in the loading worker",
                        item.name
                    )
                    .into(),
                );
                None
            }
        }
    }

    /// Loads job `job`'s file in the loading worker ahead of its turn (a log as file 0, like a
    /// helper's); its progress goes to its row as usual.
    async fn parse_ahead(&self, job: usize) {
        let item = &self.files[self.jobs.borrow().file(job)];
        let started = js_sys::Date::now();
        let mut last_post = f64::NEG_INFINITY;
        let progress = |read| {
            let now = js_sys::Date::now();
            if now - last_post >= PROGRESS_INTERVAL_MS {
                last_post = now;
                post(&ToPage::Progress { id: item.id, read }, None);
            }
        };
        let loaded = if self.exports[job] {
            let read =
                read_export_blob(&item.name, &item.blob, &self.read_options, progress, |_| {})
                    .await;
            match read {
                Ok(export) => Some(Loaded::Export(Ok(export))),
                Err(ExportFailure::File(e)) => Some(Loaded::Export(Err(e))),
                // Not the file's fault: it is read again in its turn.
                Err(ExportFailure::SqlJs(_)) => None,
            }
        } else {
            // A failure is not kept: the file is loaded again in its turn, which reports it.
            parse_blob(&item.name, 0, &item.blob, progress)
                .await
                .ok()
                .map(|log| log.map_or(Loaded::NotALog, Loaded::Log))
        };
        if let Some(loaded) = loaded {
            let ms = js_sys::Date::now() - started;
            self.ahead.borrow_mut().insert(job, (loaded, ms));
        }
    }

    /// For the status line: how many files were read in `ms`, how many on how many helpers,
    /// and how many the loading worker loaded ahead of their turn.
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
            (done, helpers) => format!(
                "{read} ({done} of {} file{} read on {helpers} worker{}{ahead})",
                jobs.len(),
                plural(jobs.len()),
                plural(helpers)
            ),
        }
    }

    /// Hands the files to helpers, most work first, one each, until none is left or on one;
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
                        format!("; {name} is loaded in the loading worker")
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

    /// Gives idle helpers the next files, keeping at most `self.helpers` busy.
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
            let export = self.exports[job].then_some(&self.read_options);
            if let Err(message) = post_job(helper, job, item, export, fault.take()) {
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

/// Posts job `job` (`item`'s file, which the browser shares, not copies) to a helper: a log to
/// parse, or an export to read for `export`'s options.
fn post_job(
    helper: &Helper,
    job: usize,
    item: &LoadItem,
    export: Option<&ReadOptions>,
    fault: Option<ParseFault>,
) -> Result<(), String> {
    let msg = Object::new();
    let _ = Reflect::set(&msg, &JOB_KEY.into(), &JsValue::from_f64(job as f64));
    if let Some(options) = export {
        let patterns: Array = options
            .iteration_patterns
            .iter()
            .map(|p| JsValue::from_str(p))
            .collect();
        let _ = Reflect::set(&msg, &EXPORT_KEY.into(), &JsValue::TRUE);
        let _ = Reflect::set(&msg, &PATTERNS_KEY.into(), &patterns);
    }
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

/// Reads `blob` in slices into [`LogLoader`] as file `file_index` (gzip is inflated as it
/// comes); `progress(bytes_read)` after each slice. How every log of the page is parsed, in the
/// loading worker or on a helper. `None` for a file whose head sniffs as text without an NCCL
/// line ([`InputKind::Text`]) and in which no later line is one either: not a log.
pub async fn parse_blob(
    name: &str,
    file_index: u32,
    blob: &Blob,
    mut progress: impl FnMut(u64),
) -> Result<Option<LoadedLog>, String> {
    let mut loader = LogLoader::new(name, file_index);
    let mut read = 0u64;
    let mut kind = None;
    // One reused buffer: wasm memory holds the records kept, not the file.
    let mut buf = Vec::new();
    for_each_slice(blob, |part| {
        buf.resize(part.length() as usize, 0);
        part.copy_to(&mut buf);
        // The first slice's head is the head the loading worker sniffed.
        kind.get_or_insert_with(|| sniff(buf.get(..SNIFF_BYTES).unwrap_or(&buf)));
        read += buf.len() as u64;
        for piece in buf.chunks(FEED_BYTES) {
            loader.feed(piece);
        }
        progress(read);
    })
    .await?;
    match loader.finish_sniffed(blob.size() as u64) {
        (_, false) if kind == Some(InputKind::Text) => Ok(None),
        (log, _) => Ok(Some(log)),
    }
}

/// The helper's side: if `data` is a parse job, parses its log or reads its export
/// (asynchronously: the file is read in slices) and answers; `false` for any other message.
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
    // An export job carries the options it is read for.
    let export = Reflect::get(data, &EXPORT_KEY.into())
        .is_ok_and(|e| e.is_truthy())
        .then(|| ReadOptions {
            iteration_patterns: Reflect::get(data, &PATTERNS_KEY.into())
                .map(|p| {
                    Array::from(&p)
                        .iter()
                        .filter_map(|p| p.as_string())
                        .collect()
                })
                .unwrap_or_default(),
        });
    match Reflect::get(data, &BLOB_KEY.into()).map(JsCast::dyn_into::<Blob>) {
        Ok(Ok(blob)) => {
            wasm_bindgen_futures::spawn_local(helper_job(job, name, blob, export, fault))
        }
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

async fn helper_job(
    job: usize,
    name: String,
    blob: Blob,
    export: Option<ReadOptions>,
    fault: Option<ParseFault>,
) {
    // The job reads its file in slices, each a task of its own: no warm-up round between.
    crate::worker::align_pool::pause_warm_up();
    load_and_answer(job, name, blob, export, fault).await;
    crate::worker::align_pool::resume_warm_up();
}

/// Parses the log, or reads the export (`export`'s options), as the loading worker would, and
/// answers with its bytes: the parsed log, or the export or the file's error. A failure that is
/// not the file's (its bytes unreadable, sql.js not loading) answers as this helper's failure.
async fn load_and_answer(
    job: usize,
    name: String,
    blob: Blob,
    export: Option<ReadOptions>,
    fault: Option<ParseFault>,
) {
    let started = js_sys::Date::now();
    let mut last_post = f64::NEG_INFINITY;
    let mut crashed = false;
    let progress = |read| {
        if fault == Some(ParseFault::Crash) && !crashed {
            crashed = true;
            crash_soon();
        }
        let now = js_sys::Date::now();
        if now - last_post >= PROGRESS_INTERVAL_MS {
            last_post = now;
            post(&ToPage::ParseProgress { job, read }, None);
        }
    };
    let answer = match export {
        Some(options) => match read_export_blob(&name, &blob, &options, progress, |_| {}).await {
            Ok(read) => Ok(wire::export::encode(&read.to_wire())),
            Err(ExportFailure::File(e)) => Ok(wire::export::encode(&ExportRead::Failed(e))),
            Err(ExportFailure::SqlJs(e)) => Err(format!("sql.js: {e}")),
        },
        // Not a log: no bytes (a parsed log's bytes are never empty).
        None => parse_blob(&name, 0, &blob, progress)
            .await
            .map(|log| log.map_or(Vec::new(), |log| wire::log::encode(&log.parsed))),
    };
    if crashed {
        // The uncaught error ends this helper: no answer.
        return;
    }
    match answer {
        Ok(mut bytes) => {
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
