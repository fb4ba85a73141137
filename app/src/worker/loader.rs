//! The loading worker: receives dropped files from the page, reads them in slices, sniffs them,
//! parses logs as they stream in, opens exports in sql.js (loaded in the worker), analyses the
//! whole session and posts back progress, one report per file and the views' data.
//!
//! Every failure of one file, sql.js's included, becomes that file's report: the worker keeps
//! serving the next files and the next drops.

use load::{sniff, FileReport, InputKind, ReadOptions, Session, SNIFF_BYTES};
use pipeline::Analysis;
use sha2::{Digest, Sha256};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use theory::TheoryConfig;
use timeline::TimelineView;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, MessageEvent};

use crate::page_logic::files::{for_each_slice, read_head};
use crate::page_logic::link::LinkFile;
use crate::protocol::insights::{Insights, StepsAsk};
use crate::protocol::messages::{LoadRequest, ToPage};
use crate::protocol::theory::theory_view;
use crate::protocol::views::{FileView, RankView};
use crate::worker::align_pool::{self, HelperRunner, Helpers};
use crate::worker::export_read::{read_export_blob, ExportFailure, ReadExport};
use crate::worker::heap::ended as stage_ended;
use crate::worker::parse_pool::{self, Loaded, ParseBatch};
use crate::worker::post::{post, post_bytes, scope, PROGRESS_INTERVAL_MS};
use crate::worker::result::{out_of_line, timeline_buffer, ResultViews, SentTimeline};

thread_local! {
/// Everything loaded so far: a later drop adds to it and re-runs the analysis.
static SESSION: RefCell<Session> = RefCell::new(Session::default());
/// Requests not yet served (one runs at a time, in arrival order).
static QUEUE: RefCell<VecDeque<LoadRequest>> = const { RefCell::new(VecDeque::new()) };
static BUSY: Cell<bool> = const { Cell::new(false) };
/// The last analysis, for theory requests that come without files.
static ANALYSIS: RefCell<Option<Analysis>> = const { RefCell::new(None) };
/// What the worker keeps of the timeline last sent, to resolve the page's picks.
static TIMELINE: RefCell<SentTimeline> = RefCell::new(SentTimeline::default());
/// The filter and clock the page asked for; every later analysis's timeline keeps them.
static VIEW: RefCell<TimelineView> = RefCell::new(TimelineView::default());
/// How the Steps view asks the step analysis to run; every later analysis keeps it.
static STEPS_ASK: RefCell<StepsAsk> = RefCell::new(StepsAsk::default());
/// The insights last sent: a change of the steps' settings re-runs the step analysis alone.
static INSIGHTS: RefCell<Option<Insights>> = const { RefCell::new(None) };
/// Every file loaded so far (the browser's handle, not its bytes), for fingerprints.
static INPUTS: RefCell<Vec<Input>> = const { RefCell::new(Vec::new()) };}

/// A loaded file and, once computed, its SHA-256.
#[derive(Clone)]
struct Input {
    name: String,
    blob: Blob,
    sha256: Option<String>,
}

/// Installs the message handler and tells the page the worker is ready.
pub fn start() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        // A bug, never a user's file, gets here: the page restarts the worker.
        post(
            &ToPage::Crashed {
                message: info.to_string(),
            },
            None,
        );
    }));
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(|e: MessageEvent| {
        // Started by another loading worker as its helper: an alignment job, answered at once,
        // or a log to parse, answered once read.
        if let Some((reply, result)) = align_pool::serve_job(&e.data()) {
            match result {
                Some(bytes) => post_bytes(&reply, crate::worker::pool::RESULT_KEY, bytes),
                None => post(&reply, None),
            }
            return;
        }
        if parse_pool::serve_job(&e.data()) {
            return;
        }
        crate::worker::warm_up::stop();
        match LoadRequest::from_js(&e.data()) {
            Ok(req) => QUEUE.with(|q| q.borrow_mut().push_back(req)),
            Err(err) => web_sys::console::error_1(&err.into()),
        }
        if !BUSY.with(|b| b.replace(true)) {
            wasm_bindgen_futures::spawn_local(serve_queue());
        }
    });
    scope().set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    post(&ToPage::Ready, None);
    crate::worker::export_read::preload();
    let name = scope().name();
    if name == crate::worker::pool::helper_name(0) {
        align_pool::start_warm_up();
    } else if name.is_empty() {
        // The loading worker (the page names none) starts its helpers before the first drop:
        // their start and warm-up then no longer share the cores with the files' reading.
        Helpers::Auto.prestart_idle();
        crate::worker::warm_up::start(read_options());
    }
}

async fn serve_queue() {
    while let Some(req) = QUEUE.with(|q| q.borrow_mut().pop_front()) {
        serve(req).await;
    }
    BUSY.with(|b| b.set(false));
}

async fn serve(mut req: LoadRequest) {
    // Aggregates (`ncclscope analyze --aggregate`) are opened on their own, not loaded into the
    // session; requests for their ranks are answered there too.
    out_of_line(crate::worker::aggregate::serve(&mut req, &|msg, bytes| {
        post(msg, bytes)
    }))
    .await;
    if !req.files.is_empty() {
        out_of_line(load_and_analyse(&req)).await;
    }
    if let Some(toml) = &req.theory {
        post(&theory(toml, req.hardware.as_deref()), None);
    }
    if let Some(ask) = &req.steps {
        rerun_steps(ask.clone());
    }
    crate::worker::compare::serve(&req, &|f| with_analysed(f).is_some());
    if let Some(ask) = req.stacked {
        crate::worker::stacked::serve(ask, &|f| with_analysed(f).is_some());
    }
    if let Some(kind) = &req.export {
        export(kind);
    }
    if let Some(q) = &req.notes {
        let page = crate::worker::notes::with_store(|n| n.page(q));
        post(&ToPage::Notes { page }, None);
    }
    if let Some(ask) = &req.file_lines {
        let lines = crate::worker::file_lines::answer(ask, &input_named).await;
        post(&ToPage::FileLines { lines }, None);
    }
    if let Some(id) = req.notes_csv {
        let built =
            crate::worker::notes::with_store(|n| n.file(id).map(|f| (f.csv_name(), f.csv())));
        if let Some((file_name, text)) = built {
            post_bytes(
                &ToPage::Export {
                    file_name,
                    mime: "text/csv".into(),
                },
                "data",
                text.into_bytes(),
            );
        }
    }
    if let Some(view) = &req.view {
        change_view(view);
    }
    let by_identity = req.pick_by.as_ref().and_then(|(rank, comm, oc)| {
        let (process, device, start) = ANALYSIS.with(|a| {
            let a = a.borrow();
            let a = a.as_ref()?;
            let clocks = VIEW.with(|v| v.borrow().clocks(a));
            analyses::find_kernel(a, *rank, comm, *oc, &clocks)
        })?;
        TIMELINE.with(|t| {
            let t = t.borrow();
            let track = t
                .tracks
                .iter()
                .position(|tr| tr.source.as_ref() == Some(&(process.clone(), device)))?;
            let starts = &t.tracks[track].starts;
            let span = starts.partition_point(|s| *s < start);
            (*starts.get(span)? == start).then_some((track, span))
        })
    });
    if let Some((track, span)) = req.pick.or(by_identity) {
        let details = SESSION.with(|s| {
            ANALYSIS.with(|a| {
                TIMELINE.with(|t| {
                    let t = t.borrow();
                    let s = s.borrow();
                    let a = a.borrow();
                    let tr = t.tracks.get(track)?;
                    let (process, device) = tr.source.as_ref()?;
                    let start = *tr.starts.get(span)?;
                    let a = a.as_ref()?;
                    let clocks = VIEW.with(|v| v.borrow().clocks(a));
                    analyses::kernel_details(&s, a, process, *device, start, &clocks)
                })
            })
        });
        let fields = details.as_ref().map_or_else(Vec::new, enriched_fields);
        post(
            &ToPage::Details {
                track,
                span,
                details,
                fields,
                hover: req.hover,
            },
            None,
        );
    }
    if let Some((start, end)) = req.window {
        let summary = ANALYSIS.with(|a| {
            a.borrow()
                .as_ref()
                .map(|a| analyses::window_summary(a, start, end))
        });
        if let Some(summary) = summary {
            post(&ToPage::Window { summary }, None);
        }
    }
    if req.fingerprints {
        let files = fingerprints().await;
        post(&ToPage::Fingerprints { files }, None);
    }
}

/// `f` of the session and its last analysis (none before the first): the comparison's hook.
fn with_analysed<R>(f: impl FnOnce(&Session, &Analysis) -> R) -> Option<R> {
    SESSION.with(|s| ANALYSIS.with(|a| a.borrow().as_ref().map(|a| f(&s.borrow(), a))))
}

/// Redraws the timeline with `view` and sends it; a query that cannot be read is reported and
/// changes nothing.
fn change_view(view: &TimelineView) {
    let built = SESSION.with(|s| {
        ANALYSIS.with(|a| {
            let a = a.borrow();
            a.as_ref().map(|a| view.timeline(&s.borrow(), a))
        })
    });
    match built {
        Some(Ok((timeline, counts))) => {
            VIEW.with(|v| *v.borrow_mut() = view.clone());
            let bytes = timeline_buffer(&timeline);
            TIMELINE.with(|t| *t.borrow_mut() = SentTimeline::of(&timeline));
            drop(timeline);
            post(&view_status(view, counts, None), Some(bytes));
        }
        Some(Err(e)) => post_view_status(view, timeline::FilterCounts::default(), Some(e.0)),
        // Nothing analysed yet: the next analysis draws with it.
        None => VIEW.with(|v| *v.borrow_mut() = view.clone()),
    }
}

fn view_status(
    view: &TimelineView,
    counts: timeline::FilterCounts,
    error: Option<String>,
) -> ToPage {
    ToPage::View {
        filter: view.filter.clone(),
        original_clock: view.original_clock,
        kept: counts.kept,
        total: counts.total,
        unmatched: counts.unmatched,
        low_confidence: counts.low_confidence,
        error,
    }
}

fn post_view_status(view: &TimelineView, counts: timeline::FilterCounts, error: Option<String>) {
    post(&view_status(view, counts, error), None);
}

/// The picked kernel's enriched record (the exports' fields), each value as text.
fn enriched_fields(d: &analyses::KernelDetails) -> Vec<(String, String)> {
    let process = model::log::ProcessKey {
        host: d.host.as_str().into(),
        pid: d.pid,
    };
    let record = SESSION.with(|s| {
        ANALYSIS.with(|a| {
            let a = a.borrow();
            export::kernel_record(&s.borrow(), a.as_ref()?, &process, d.kernel_index)
        })
    });
    record.map_or_else(Vec::new, |r| {
        r.args
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| {
                let text = match v {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                (k, text)
            })
            .collect()
    })
}

/// The loaded file the session names `name` (the last loaded of that name), by its index among
/// the loaded files: evidence lines are read from it.
fn input_named(name: &str) -> Option<(usize, Blob)> {
    INPUTS.with(|i| {
        i.borrow()
            .iter()
            .enumerate()
            .rev()
            .find(|(_, input)| input.name == name)
            .map(|(n, input)| (n, input.blob.clone()))
    })
}

/// SHA-256 of every file loaded so far, read again in slices (only when a link is made or
/// checked, so loading never pays for it) and remembered.
async fn fingerprints() -> Vec<LinkFile> {
    let count = INPUTS.with(|i| i.borrow().len());
    let mut out = Vec::with_capacity(count);
    for n in 0..count {
        let Some(input) = INPUTS.with(|i| i.borrow().get(n).cloned()) else {
            break;
        };
        let sha256 = match input.sha256 {
            Some(s) => s,
            None => {
                let mut hasher = Sha256::new();
                let mut buf = Vec::new();
                let read = for_each_slice(&input.blob, |part| {
                    buf.resize(part.length() as usize, 0);
                    part.copy_to(&mut buf);
                    hasher.update(&buf);
                })
                .await;
                if read.is_err() {
                    // A file that cannot be read again (removed from disk) is left out.
                    continue;
                }
                let hex: String = hasher
                    .finalize()
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                INPUTS.with(|i| i.borrow_mut()[n].sha256 = Some(hex.clone()));
                hex
            }
        };
        out.push(LinkFile {
            name: input.name,
            size: input.blob.size() as u64,
            sha256,
        });
    }
    out
}

/// Builds a download of the last analysis (the command's `--chrome-trace` or `--csv` output)
/// and posts its bytes to the page, which saves them: nothing leaves the machine.
fn export(kind: &str) {
    let built = SESSION.with(|s| {
        ANALYSIS.with(|a| {
            let s = s.borrow();
            let a = a.borrow();
            let a = a.as_ref()?;
            Some(match kind {
                "csv" => (
                    "ncclscope-kernels.csv",
                    "text/csv",
                    export::enriched_csv(&s, a).into_bytes(),
                ),
                _ => (
                    "ncclscope-trace.json",
                    "application/json",
                    serde_json::to_vec(&export::chrome_trace(&s, a)).unwrap_or_default(),
                ),
            })
        })
    });
    if let Some((file_name, mime, bytes)) = built {
        post_bytes(
            &ToPage::Export {
                file_name: file_name.into(),
                mime: mime.into(),
            },
            "data",
            bytes,
        );
    }
}

/// Theory versus observed for `toml`'s model and layout, over the last analysis.
fn theory(toml: &str, hardware: Option<&str>) -> ToPage {
    let cfg = match TheoryConfig::from_toml(toml) {
        Ok(cfg) => cfg,
        Err(e) => {
            return ToPage::Theory {
                view: None,
                error: Some(e),
            }
        }
    };
    SESSION.with(|s| {
        ANALYSIS.with(|a| match a.borrow().as_ref() {
            Some(analysis) => {
                let hw = match hardware {
                    Some("a100") => theory::Hardware::a100(),
                    Some("h100") => theory::Hardware::h100(),
                    Some("h200") => theory::Hardware::h200(),
                    Some("b200") => theory::Hardware::b200(),
                    _ => analyses::hardware_from_topology(&s.borrow())
                        .unwrap_or_else(theory::Hardware::a100),
                };
                ToPage::Theory {
                    view: Some(theory_view(&cfg, &s.borrow(), analysis, &hw)),
                    error: None,
                }
            }
            None => ToPage::Theory {
                view: None,
                error: Some("drop a run's files first".into()),
            },
        })
    })
}

/// The theory form's fields the trace tells: parallel sizes (the layout inference), iterations
/// (NVTX) and bytes per element (the datatype that carries most of the logged bytes).
fn inferred_fields(analysis: &Analysis, session: &Session) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(beta) = analyses::dominant_element_bytes(session) {
        out.push(("model.bytes_per_element".into(), beta.to_string()));
    }
    if let Some(s) = analysis.layout.sizes {
        for (key, n) in [
            ("tp", s.tp),
            ("pp", s.pp),
            ("dp", s.dp),
            ("ep", s.ep),
            ("cp", s.cp),
        ] {
            out.push((format!("parallel.{key}"), n.to_string()));
        }
    }
    if let Some(n) = analysis.iterations {
        out.push(("model.iterations".into(), n.to_string()));
    }
    out
}

async fn load_and_analyse(req: &LoadRequest) {
    SESSION.with(|s| s.borrow_mut().digests = req.options.digests);
    let mut heap = vec![stage_ended("before")];
    let helpers = match req.options.align_workers {
        Some(n) => Helpers::Exactly(n),
        None => Helpers::Auto,
    };
    helpers.prestart(req.files.iter().map(|f| f.blob.size() as u64).sum());
    // Logs and exports may be loaded on helpers meanwhile; each file joins the session in
    // request order.
    let load_started = js_sys::Date::now();
    let parsing = ParseBatch::plan(&req.files, &req.options, read_options()).await;
    parsing
        .run_beside(out_of_line(async {
            for (n, item) in req.files.iter().enumerate() {
                INPUTS.with(|i| {
                    i.borrow_mut().push(Input {
                        name: item.name.clone(),
                        blob: item.blob.clone(),
                        sha256: None,
                    })
                });
                let mut started = js_sys::Date::now();
                // What the session holds before the file: a file it keeps is the next log or
                // export, whose notes its report copies.
                let before = SESSION.with(|s| {
                    let s = s.borrow();
                    (s.logs().len(), s.exports().len())
                });
                let report = match parsing.claim(n).await {
                    Some((loaded, ms)) => {
                        // The file's time is its load's on the helper (not the wait for its
                        // turn), plus its decoding and adding here.
                        started = js_sys::Date::now() - ms;
                        SESSION.with(|s| match loaded {
                            Loaded::Log(log) => s.borrow_mut().add_log_parsed_ahead(log),
                            Loaded::NotALog => not_an_input(&item.name, item.blob.size() as u64),
                            Loaded::Export(read) => {
                                let size = item.blob.size() as u64;
                                ReadExport::add_to(&mut s.borrow_mut(), &item.name, size, read)
                            }
                        })
                    }
                    None => {
                        let mut last_post = f64::NEG_INFINITY;
                        let kind = parsing.kind(n);
                        load_blob(item.id, &item.name, &item.blob, kind, |read| {
                            let now = js_sys::Date::now();
                            if now - last_post >= PROGRESS_INTERVAL_MS {
                                last_post = now;
                                post(&ToPage::Progress { id: item.id, read }, None);
                            }
                        })
                        .await
                    }
                };
                let view = FileView::from_report(&report, js_sys::Date::now() - started);
                keep_notes(item.id, &item.name, Some(before), report.diagnostics);
                post(
                    &ToPage::Report {
                        id: item.id,
                        view,
                        worker_memory_bytes: wasm_memory_bytes(),
                    },
                    None,
                );
            }
        }))
        .await;
    let loaded = parsing.summary(js_sys::Date::now() - load_started);
    heap.push(stage_ended("files loaded"));
    // Adding files re-runs the analysis over everything loaded so far.
    post(&ToPage::Analysing, None);
    let started = js_sys::Date::now();
    // Only what the new files change is re-aligned: the last analysis is reused. The processes
    // are aligned on helper workers, awaited: the session is taken out meanwhile (requests are
    // served one at a time, so nothing else reads it).
    let previous = ANALYSIS.with(|a| a.borrow_mut().take());
    let session = SESSION.with(|s| s.take());
    let mut runner = HelperRunner::new(helpers);
    runner.fault = req.options.align_fault;
    let (analysis, mut rerun) = out_of_line(pipeline::analyse_incremental_with(
        &session,
        &pipeline::UserSizes::default(),
        previous,
        &runner,
    ))
    .await;
    // The last analysis, now replaced, is dropped here: what follows sees the new one only.
    heap.push(stage_ended("analysed"));
    SESSION.with(|s| *s.borrow_mut() = session);
    let (result, timeline, view, counts) = SESSION.with(|s| {
        let s = s.borrow();
        let view = VIEW.with(|v| v.borrow().clone());
        let views = ResultViews::build(&analysis, &s, &view, &mut |stage| {
            heap.push(stage_ended(stage))
        });
        // The view's timeline (marked by the analysis, filtered) is built whole each time.
        rerun.tracks = views.sent.tracks.len();
        rerun.tracks_rebuilt = views.sent.tracks.len();
        TIMELINE.with(|t| *t.borrow_mut() = views.sent);
        let result = ToPage::Result {
            ranks: analysis
                .processes
                .iter()
                .map(RankView::from_summary)
                .collect(),
            comms: views.comms,
            panels: views.panels,
            overview: Box::new(views.overview),
            analysis_ms: js_sys::Date::now() - started,
            worker_memory_bytes: wasm_memory_bytes(),
            inferred: inferred_fields(&analysis, &s),
            heap: Vec::new(),
            rerun: match runner.used() {
                0 => format!(
                    "{loaded}; {} (aligned in {:.0} ms)",
                    rerun.summary(),
                    runner.ms()
                ),
                n => format!(
                    "{loaded}; {} (aligned in {:.0} ms on {n} workers)",
                    rerun.summary(),
                    runner.ms()
                ),
            },
        };
        ANALYSIS.with(|a| *a.borrow_mut() = Some(analysis));
        (result, views.timeline, view, views.counts)
    });
    let mut result = result;
    heap.push(stage_ended("result"));
    if let ToPage::Result { heap: h, .. } = &mut result {
        *h = heap;
    }
    post(&result, Some(timeline));
    post_view_status(&view, counts, None);
    if let Some(mut insights) = post_insights() {
        // Then once more with the evidence lines' own text, read from the files (the findings
        // carry it into links and bundles).
        if crate::worker::file_lines::fill_evidence(&mut insights.diagnosis, &input_named).await {
            send_insights(insights);
        }
    }
}

/// The insights of the analysis just sent (after it: the timeline shows first), with the
/// step analysis run as the Steps view asked; posted, kept, and returned.
fn post_insights() -> Option<Insights> {
    let started = js_sys::Date::now();
    let ask = STEPS_ASK.with(|a| a.borrow().clone());
    let insights = SESSION.with(|s| {
        ANALYSIS.with(|a| {
            a.borrow()
                .as_ref()
                .map(|analysis| Insights::build_with(&s.borrow(), analysis, &ask))
        })
    });
    let mut insights = insights?;
    insights.ms = js_sys::Date::now() - started;
    send_insights(insights.clone());
    Some(insights)
}

/// Posts `insights` and keeps them (a change of the steps' settings replaces their steps).
fn send_insights(insights: Insights) {
    let msg = ToPage::Insights {
        insights: Box::new(insights),
    };
    post(&msg, None);
    if let ToPage::Insights { insights } = msg {
        INSIGHTS.with(|i| *i.borrow_mut() = Some(*insights));
    }
}

/// Keeps the Steps view's settings for every later analysis and, when there is an analysis,
/// re-runs the step analysis alone with them and sends the insights again.
fn rerun_steps(ask: StepsAsk) {
    if STEPS_ASK.with(|a| *a.borrow() == ask) {
        return;
    }
    STEPS_ASK.with(|a| *a.borrow_mut() = ask.clone());
    let Some(mut insights) = INSIGHTS.with(|i| i.borrow().clone()) else {
        return;
    };
    let started = js_sys::Date::now();
    let steps = SESSION.with(|s| {
        let s = s.borrow();
        ANALYSIS.with(|a| {
            let hardware = crate::protocol::insights::hardware(&s);
            a.borrow()
                .as_ref()
                .map(|analysis| Insights::steps(&s, analysis, &ask, &hardware))
        })
    });
    if let Some(steps) = steps {
        insights.steps = steps;
        insights.ms = js_sys::Date::now() - started;
        send_insights(insights);
    }
}

/// Keeps file `id`'s notes for the page's later requests. With `before` (what the session held
/// before the file) those its report copied from the log or export the session kept of it (the
/// next one) are read from there.
fn keep_notes(
    id: usize,
    name: &str,
    before: Option<(usize, usize)>,
    notes: Vec<model::Diagnostic>,
) {
    let (log, export) = match before {
        Some((logs, exports)) => SESSION.with(|s| {
            let s = s.borrow();
            (
                s.logs().get(logs).cloned(),
                s.exports().get(exports).cloned(),
            )
        }),
        None => (None, None),
    };
    crate::worker::notes::with_store(|n| n.keep(id, name, log, export, notes));
}

/// The size of this worker's wasm memory.
fn wasm_memory_bytes() -> f64 {
    let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
    js_sys::Reflect::get(&memory.buffer(), &"byteLength".into())
        .ok()
        .and_then(|n| n.as_f64())
        .unwrap_or(0.0)
}

/// Loads one file into the session; `progress(bytes_read)` is called as slices arrive. `kind`
/// is what its head sniffed as, if that was read already (else it is read here).
async fn load_blob(
    id: usize,
    name: &str,
    blob: &Blob,
    kind: Option<InputKind>,
    progress: impl FnMut(u64),
) -> FileReport {
    let size = blob.size() as u64;
    // The same head the command sniffs. Text without an NCCL line in it (a log's first NCCL
    // line may follow a long preamble) is read as a log, and refused if no line of it is one.
    let kind = match kind {
        Some(kind) => kind,
        None => sniff(&read_head(blob, SNIFF_BYTES).await),
    };
    match kind {
        InputKind::NsysSqlite => load_export(id, name, blob, size, progress).await,
        InputKind::NcclLog | InputKind::Gzip | InputKind::Text => {
            load_log(name, blob, size, progress).await
        }
        InputKind::StageFile => load_stage_file(name, blob, size, progress).await,
        InputKind::Kineto => load_trace(name, blob, size, progress).await,
        InputKind::Unknown => not_an_input(name, size),
    }
}

/// Feeds `blob` to `feed` slice by slice (one buffer reused), reporting the bytes read.
async fn feed_slices(
    blob: &Blob,
    mut feed: impl FnMut(&[u8]),
    mut progress: impl FnMut(u64),
) -> Result<(), String> {
    let mut read = 0u64;
    let mut buf = Vec::new();
    crate::page_logic::files::for_each_slice(blob, |part| {
        buf.resize(part.length() as usize, 0);
        part.copy_to(&mut buf);
        read += buf.len() as u64;
        feed(&buf);
        progress(read);
    })
    .await
}

/// Streams a PyTorch profiler (Kineto) trace, plain or gzip, in slices into the session (as the
/// command does: never held whole); its kernels join the exports and, unless a log claims its
/// process, its operations the logs.
async fn load_trace(name: &str, blob: &Blob, size: u64, progress: impl FnMut(u64)) -> FileReport {
    let mut loader = load::TraceLoader::new(name);
    match feed_slices(blob, |b| loader.feed(b), progress).await {
        Ok(()) => SESSION.with(|s| s.borrow_mut().add_trace(loader.finish(size))),
        Err(e) => FileReport::failed(name, InputKind::Kineto, size, e),
    }
}

/// Reads a stage file (issue 32's always-on signal: `step,rank,stage,duration_ms` rows) in
/// slices into the session; a bad row is a note at its line, and the rest loads.
async fn load_stage_file(
    name: &str,
    blob: &Blob,
    size: u64,
    progress: impl FnMut(u64),
) -> FileReport {
    let mut reader = ingest_stages::StageReader::new(name);
    match feed_slices(blob, |b| reader.feed(b), progress).await {
        Ok(()) => SESSION.with(|s| s.borrow_mut().add_stage_file(name, size, reader.finish())),
        Err(e) => FileReport::failed(name, InputKind::StageFile, size, e),
    }
}

/// The report of a file that is neither a log nor an export.
pub(crate) fn not_an_input(name: &str, size: u64) -> FileReport {
    FileReport::failed(
        name,
        InputKind::Unknown,
        size,
        "neither an NCCL debug log nor an Nsight Systems SQLite export".into(),
    )
}

async fn load_log(name: &str, blob: &Blob, size: u64, progress: impl FnMut(u64)) -> FileReport {
    let file_index = SESSION.with(|s| s.borrow().next_file_index());
    match parse_pool::parse_blob(name, file_index, blob, progress).await {
        Ok(Some(log)) => SESSION.with(|s| s.borrow_mut().add_log(log)),
        Ok(None) => not_an_input(name, size),
        Err(e) => FileReport::failed(name, InputKind::NcclLog, size, e),
    }
}

async fn load_export(
    id: usize,
    name: &str,
    blob: &Blob,
    size: u64,
    progress: impl FnMut(u64),
) -> FileReport {
    let stage = |stage: &str| {
        let stage = stage.to_string();
        post(&ToPage::Stage { id, stage }, None);
    };
    let options = read_options();
    let read = read_export_blob(name, blob, &options, progress, stage).await;
    let read = read.map_err(ExportFailure::message);
    SESSION.with(|s| ReadExport::add_to(&mut s.borrow_mut(), name, size, read))
}

/// What exports are read for (the session's; helpers are told the same).
fn read_options() -> ReadOptions {
    SESSION.with(|s| s.borrow().read_options.clone())
}
