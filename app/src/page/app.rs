//! The page: a drop zone that covers the whole window, the file list, and the timeline.

use crate::page::panels::theory::{prefill, saved_form, TheoryPanel, HARDWARE_FIELD};
use leptos::ev;
use leptos::prelude::*;
use leptos::task::spawn_local;
use ncclscope_app::protocol::format::human_bytes;
use ncclscope_app::protocol::messages::{LoadItem, LoadRequest, ToPage};
use ncclscope_app::protocol::theory::TheoryView;
use ncclscope_app::protocol::views::{CommPanel, FileView, RankView};
use std::rc::Rc;
use theory::form::to_toml;
use timeline::{Timeline, TimelineView};
use web_sys::{Blob, File, FileList};

use crate::page::budget_dialog::{BudgetDialog, Pending};
use crate::page::client;
use crate::page::panels::analyses::AnalysisPanels;
use crate::page::panels::nav::{show_panel, PanelNav};
use crate::page::panels::notes::{NoteSummary, NotedFile, NotesPanel, NotesState};
use crate::page::sharing::share::{apply_link, link_from_page, LinkBanner, LinkState};
use crate::page::tables::communicators::Communicators;
use crate::page::tables::ranks::RankTable;
use crate::page::timeline::canvas::{TimelineCanvas, View};
use crate::page::timeline::controls::{TimelineControls, ViewStatus};
use crate::page::url::{memory_limit, page_options};
use ncclscope_app::page_logic::budget::{estimate, fits, FileEstimate};
use ncclscope_app::page_logic::deferred::{defer, next_task};
use ncclscope_app::page_logic::files::{demo_file, demo_names, fetch_blob};

/// The page under the file list is built in this many animation frames after the first drop:
/// the downloads, share and panel bars; the timeline; the tables and panels; the theory form.
const SHELL_STAGES: u8 = 4;

/// Results of more ranks than this are shown over several animation frames.
const STAGED_RANKS: usize = 32;

/// A file in the list: its report once loaded, and bytes read so far while loading.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    name: String,
    size: u64,
    read: u64,
    /// What the worker is doing with the file once it is read (exports only).
    stage: Option<String>,
    report: Option<FileView>,
}

#[component]
pub fn App() -> impl IntoView {
    let rows = RwSignal::new(Vec::<Row>::new());
    let timeline = RwSignal::new(Timeline::default());
    let ranks = RwSignal::new(Vec::<RankView>::new());
    let comms = RwSignal::new(CommPanel::default());
    let panels = crate::page::panels::analyses::PanelStages::new();
    // Each result is shown over several animation frames; a newer one stops an older one's.
    let result_stage = StoredValue::new(0u64);
    let dragging = RwSignal::new(false);
    // The last analysis's wall time in the worker (read by the benchmarks).
    let analysis_ms = RwSignal::new(None::<f64>);
    // What the last analysis re-ran (adding files re-aligns only what they change).
    let rerun = RwSignal::new(String::new());
    let worker_memory = RwSignal::new(None::<f64>);
    let warmed_up_ms = RwSignal::new(None::<f64>);
    // The worker's heap per stage of the last load (JSON), for benchmarks.
    let worker_heap = RwSignal::new(None::<String>);
    let analysing = RwSignal::new(false);
    // Theory versus observed: the form (kept between visits), which fields the trace filled,
    // which the user typed, and the worker's answer.
    let theory_form = RwSignal::new(saved_form());
    let inferred = RwSignal::new(Vec::<String>::new());
    let typed = RwSignal::new(Vec::<String>::new());
    let theory_view = RwSignal::new(None::<TheoryView>);
    let theory_error = RwSignal::new(None::<String>);
    let ask_theory = move |toml: String| {
        client::load(LoadRequest {
            options: page_options(),
            theory: Some(toml),
            hardware: theory_form.with_untracked(|f| f.get(HARDWARE_FIELD).cloned()),
            ..LoadRequest::default()
        })
    };
    // Shareable links: the timeline's window (owned here so a link can set it) and what the
    // page's own fragment asked for.
    let window = RwSignal::new(None::<View>);
    let link = RwSignal::new(LinkState::from_location());
    let share_url = RwSignal::new(None::<String>);
    let ask_fingerprints = move || {
        client::load(LoadRequest {
            options: page_options(),
            fingerprints: true,
            ..LoadRequest::default()
        })
    };
    // The timeline's filter and clock as the worker last applied them, what it kept, and a
    // link's window waiting for the view it belongs to.
    let timeline_view = RwSignal::new(TimelineView::default());
    let view_status = RwSignal::new(None::<ViewStatus>);
    let pending_window = RwSignal::new(None::<View>);
    let ask_view = move |v: TimelineView| {
        client::load(LoadRequest {
            options: page_options(),
            view: Some(v),
            ..LoadRequest::default()
        })
    };
    // The panel last opened from the panel bar (a link carries it).
    let open_panel = RwSignal::new(None::<String>);
    // The kernel picked on the timeline, and what the worker says about it.
    let selected = RwSignal::new(None::<(usize, usize)>);
    let details = RwSignal::new(None::<(analyses::KernelDetails, Vec<(String, String)>)>);
    let flow = Signal::derive(move || {
        details.with(|d| {
            d.as_ref()
                .and_then(|(d, _)| d.instance.as_ref())
                .map(|i| i.members.iter().map(|m| (m.rank, m.start_ns)).collect())
                .unwrap_or_default()
        })
    });
    let awaiting_selection = RwSignal::new(false);
    // The worker answered the pick with nothing to show (no log for the kernel's process).
    let no_details = RwSignal::new(false);
    let select_by = move |sel: ncclscope_app::page_logic::link::Selection| {
        awaiting_selection.set(true);
        client::load(LoadRequest {
            options: page_options(),
            pick_by: Some((sel.rank, sel.comm, sel.op_count)),
            ..LoadRequest::default()
        })
    };
    let pick = move |p: (usize, usize)| {
        selected.set(Some(p));
        no_details.set(false);
        client::load(LoadRequest {
            options: page_options(),
            pick: Some(p),
            ..LoadRequest::default()
        })
    };
    // The kernel under the mouse: a pick flagged as a hover, for the tooltip only.
    let hover =
        crate::page::timeline::tooltip::Hover::new(Callback::new(move |p: (usize, usize)| {
            client::load(LoadRequest {
                options: page_options(),
                pick: Some(p),
                hover: true,
                ..LoadRequest::default()
            })
        }));
    let share_error = RwSignal::new(None::<String>);
    // A self-contained link just made (shown and in the address bar), or why it could not be.
    let show_link = move |made: Option<Result<String, String>>| match made {
        Some(Ok(url)) => {
            share_error.set(None);
            share_url.set(Some(url));
        }
        Some(Err(e)) => share_error.set(Some(e)),
        None => {}
    };
    // The aggregate of the visible window, asked for on demand (a pan must not flood the worker).
    let window_summary = RwSignal::new(None::<analyses::WindowSummary>);
    // A range selected on the timeline (ns), and which range the aggregate shown is of.
    let selection = RwSignal::new(None::<(f64, f64)>);
    let window_scope = RwSignal::new(crate::page::panels::window::Scope::Visible);
    // The worker answers in order: the next aggregate is of the range last asked about.
    let asked_scope = StoredValue::new(crate::page::panels::window::Scope::Visible);
    let ask_range = move |(a, b): (f64, f64), scope| {
        asked_scope.set_value(scope);
        client::load(LoadRequest {
            options: page_options(),
            window: Some((a as i64, b as i64)),
            ..LoadRequest::default()
        })
    };
    let ask_window = move || {
        let Some(v) = window.get_untracked() else {
            return;
        };
        ask_range(
            (v.start_ns, v.end_ns),
            crate::page::panels::window::Scope::Visible,
        )
    };
    let ask_export = move |kind: &str| {
        client::load(LoadRequest {
            options: page_options(),
            export: Some(kind.to_string()),
            ..LoadRequest::default()
        })
    };

    // An opened aggregate (`ncclscope analyze --aggregate`): its views are aggregate_view.rs's.
    let aggregate = crate::page::panels::aggregate::AggregateState::new();
    // The file notes panel: the files with notes (again only when a report arrives), and the
    // list it shows, paged from the worker.
    let notes = NotesState::new();
    notes.set_first_page(Callback::new(move |id: usize| {
        rows.with_untracked(|r| {
            r.get(id)
                .and_then(|x| x.report.as_ref())
                .map(|v| v.notes.clone())
                .unwrap_or_default()
        })
    }));
    let reported = Memo::new(move |_| {
        rows.with(|r| {
            r.iter()
                .filter(|x| x.report.as_ref().is_some_and(|v| v.diagnostic_count > 0))
                .count()
        })
    });
    let noted = Memo::new(move |_| {
        // (`get`, not `track`: a memo computes, and so follows the rows, only when read.)
        reported.get();
        rows.with_untracked(|r| {
            r.iter()
                .enumerate()
                .filter_map(|(id, x)| {
                    let v = x.report.as_ref().filter(|v| v.diagnostic_count > 0)?;
                    Some(NotedFile {
                        id,
                        name: x.name.clone(),
                        count: v.diagnostic_count,
                        kinds: v.note_kinds.clone(),
                    })
                })
                .collect::<Vec<_>>()
        })
    });

    // The worker does the loading and the analysis; the page only shows what it sends.
    client::set_handler(Rc::new(move |msg, new_timeline| match msg {
        msg @ (ToPage::Aggregate { .. }
        | ToPage::AggregateRank { .. }
        | ToPage::AggregateKernel { .. }) => aggregate.receive(msg, new_timeline),
        ToPage::Progress { id, read } => rows.update(|r| {
            if let Some(row) = r.get_mut(id) {
                row.read = read;
            }
        }),
        ToPage::Report {
            id,
            view,
            worker_memory_bytes,
        } => {
            worker_memory.set(Some(worker_memory_bytes));
            rows.update(|r| {
                if let Some(row) = r.get_mut(id) {
                    row.read = row.size;
                    row.report = Some(view);
                }
            })
        }
        ToPage::Result {
            ranks: new_ranks,
            comms: new_comms,
            analysis_ms: ms,
            worker_memory_bytes,
            inferred: new_inferred,
            panels: new_panels,
            rerun: new_rerun,
            heap,
        } => {
            worker_heap.set(serde_json::to_string(&heap).ok());
            window_summary.set(None);
            selected.set(None);
            details.set(None);
            worker_memory.set(Some(worker_memory_bytes));
            timeline.set(new_timeline.unwrap_or_default());
            // What the trace tells fills the fields the user has not typed; then compare.
            let mut form = theory_form.get_untracked();
            let filled = prefill(&mut form, &new_inferred, &typed.get_untracked());
            theory_form.set(form);
            inferred.set(filled);
            ask_theory(to_toml(&theory_form.get_untracked()));
            // The timeline is drawn in this task. With many ranks the tables and panels follow,
            // one group per animation frame (each with its own style and layout: `deferred`),
            // and the status line says "Analysed" once all are in; a small run's views are all
            // drawn here.
            let stage = result_stage.get_value() + 1;
            result_stage.set_value(stage);
            let staged = new_ranks.len() > STAGED_RANKS;
            panels.set(new_panels);
            let mut steps: Vec<(String, Box<dyn FnOnce()>)> = vec![
                (
                    "communicators".into(),
                    Box::new(move || comms.set(new_comms)),
                ),
                ("ranks".into(), Box::new(move || ranks.set(new_ranks))),
            ];
            for k in 0..panels.steps() {
                steps.push((format!("panel {k}"), Box::new(move || panels.draw(k))));
            }
            let status = move || {
                analysing.set(false);
                analysis_ms.set(Some(ms));
                rerun.set(new_rerun);
                // A link waiting for its files: check the dropped ones.
                if link.with_untracked(LinkState::waiting) {
                    ask_fingerprints();
                }
            };
            if !staged {
                for (_, step) in steps {
                    step();
                }
                status();
                return;
            }
            for (i, (what, step)) in steps.into_iter().enumerate() {
                defer(move || {
                    if result_stage.try_get_value() == Some(stage) {
                        client::mark(&format!("ncclscope: result step {i}: {what}"));
                        step();
                    }
                });
            }
            spawn_local(async move {
                ncclscope_app::page_logic::deferred::idle().await;
                if result_stage.try_get_value() == Some(stage) {
                    client::mark("ncclscope: result shown");
                    status();
                }
            });
        }
        ToPage::View {
            filter,
            original_clock,
            kept,
            total,
            unmatched,
            low_confidence,
            error,
        } => {
            let refused = error.is_some();
            view_status.set(Some(ViewStatus {
                kept,
                total,
                unmatched,
                low_confidence,
                error,
            }));
            if refused {
                return;
            }
            timeline_view.set(TimelineView {
                filter,
                original_clock,
            });
            if let Some(t) = new_timeline {
                // The same kernel stays selected if it is still drawn (by identity: its
                // position in the timeline changed).
                let again = details.with_untracked(|d| {
                    d.as_ref().and_then(|(d, _)| {
                        d.instance
                            .as_ref()
                            .map(|i| ncclscope_app::page_logic::link::Selection {
                                rank: d.rank,
                                comm: i.comm_id.clone(),
                                op_count: i.op_count,
                            })
                    })
                });
                selected.set(None);
                details.set(None);
                window_summary.set(None);
                timeline.set(t);
                if let Some(sel) = again {
                    select_by(sel);
                }
            }
            if let Some(w) = pending_window.get_untracked() {
                pending_window.set(None);
                window.set(Some(w));
            }
        }
        ToPage::Window { summary } => {
            window_scope.set(asked_scope.get_value());
            window_summary.set(Some(summary));
        }
        ToPage::Details {
            track,
            span,
            details: d,
            fields,
            hover: true,
        } => hover.answer((track, span), d, fields),
        ToPage::Details {
            track,
            span,
            details: d,
            fields,
            hover: false,
        } => {
            // A link's selection arrives as whatever (track, span) the worker resolved it to.
            if awaiting_selection.get_untracked() {
                awaiting_selection.set(false);
                selected.set(d.is_some().then_some((track, span)));
            }
            if selected.get_untracked() == Some((track, span)) {
                no_details.set(d.is_none());
                details.set(d.map(|d| (d, fields)));
            }
        }
        ToPage::Fingerprints { files } => {
            if let Some(expected) = link.with_untracked(LinkState::expected) {
                let (state, restore) = apply_link(&expected, &files);
                if let Some(r) = restore {
                    let restored_view = TimelineView {
                        filter: r.filter.clone().unwrap_or_default(),
                        original_clock: r.original_clock,
                    };
                    let w = r.window.map(|(a, b)| View {
                        start_ns: a as f64,
                        end_ns: b as f64,
                    });
                    if restored_view != timeline_view.get_untracked() {
                        // The window belongs to the link's view: set it once that is drawn
                        // (the worker answers in order, before the selection below).
                        pending_window.set(w);
                        ask_view(restored_view);
                    } else if let Some(w) = w {
                        window.set(Some(w));
                    }
                    if let Some(p) = r.panel.clone() {
                        open_panel.set(Some(p.clone()));
                        show_panel(&p);
                    }
                    if let Some(sel) = r.selection.clone() {
                        select_by(sel);
                    }
                    if !r.theory.is_empty() {
                        let mut form = theory_form.get_untracked();
                        form.extend(r.theory.clone());
                        theory_form.set(form);
                        typed.update(|t| t.extend(r.theory.keys().cloned()));
                        ask_theory(to_toml(&theory_form.get_untracked()));
                    }
                }
                link.set(state);
            } else {
                let selection = details.with_untracked(|d| {
                    d.as_ref().and_then(|(d, _)| {
                        d.instance
                            .as_ref()
                            .map(|i| ncclscope_app::page_logic::link::Selection {
                                rank: d.rank,
                                comm: i.comm_id.clone(),
                                op_count: i.op_count,
                            })
                    })
                });
                let here = link_from_page(
                    window.get_untracked(),
                    &theory_form.get_untracked(),
                    files,
                    selection,
                    &timeline_view.get_untracked(),
                    open_panel.get_untracked(),
                );
                share_url.set(Some(here));
            }
        }
        ToPage::Notes { page } => notes.receive(page),
        ToPage::Theory { view, error } => {
            theory_view.set(view);
            theory_error.set(error);
        }
        ToPage::Stage { id, stage } => rows.update(|r| {
            if let Some(row) = r.get_mut(id) {
                row.stage = Some(stage);
            }
        }),
        ToPage::Analysing => analysing.set(true),
        ToPage::WarmedUp { ms } => warmed_up_ms.set(Some(ms)),
        ToPage::Crashed { .. } => analysing.set(false),
        // Handled by the client (it saves the file).
        // The insights' views come with the page's view registry.
        ToPage::Insights { .. } => {}
        ToPage::Ready
        | ToPage::Export { .. }
        | ToPage::Aligned { .. }
        | ToPage::AlignFailed { .. }
        | ToPage::Parsed { .. }
        | ToPage::ParseProgress { .. }
        | ToPage::ParseFailed { .. } => {}
    }));

    // A bundle (an exported HTML file) carries the views' messages: replay them, no worker.
    let bundle = crate::page::sharing::bundle::embedded();
    let is_bundle = bundle.is_some();
    if let Some(b) = bundle {
        client::disable_worker();
        notes.set_local_only();
        rows.set(
            b.files
                .iter()
                .map(|(name, size)| Row {
                    name: name.clone(),
                    size: *size,
                    read: *size,
                    stage: None,
                    report: None,
                })
                .collect(),
        );
        client::replay(b.messages());
    } else {
        client::prestart();
    }
    let bundle_error = RwSignal::new(None::<String>);
    let export_bundle = move |_| {
        let files: Vec<(String, u64)> =
            rows.with_untracked(|r| r.iter().map(|r| (r.name.clone(), r.size)).collect());
        spawn_local(async move {
            match crate::page::sharing::bundle::build(files, client::recording()).await {
                Ok(html) => {
                    bundle_error.set(None);
                    let bytes = js_sys::Uint8Array::from(html.as_bytes());
                    if let Err(e) =
                        client::download("ncclscope-bundle.html", "text/html", &bytes.buffer())
                    {
                        bundle_error.set(Some(ncclscope_app::page_logic::files::js_msg(e)));
                    }
                }
                Err(e) => bundle_error.set(Some(e)),
            }
        });
    };

    let load_all = move |items: Vec<(String, Blob, u64)>| {
        let first = rows.with_untracked(Vec::len);
        rows.update(|r| {
            r.extend(items.iter().map(|(name, _, size)| Row {
                name: name.clone(),
                size: *size,
                read: 0,
                stage: None,
                report: None,
            }))
        });
        let files = items
            .into_iter()
            .enumerate()
            .map(|(i, (name, blob, _))| LoadItem {
                id: first + i,
                name,
                blob,
            })
            .collect();
        client::load(LoadRequest {
            options: page_options(),
            files,
            ..LoadRequest::default()
        });
    };

    // Files that would not fit in the worker's memory wait here for the user's choice.
    let over_budget = RwSignal::new_local(None::<Vec<Pending>>);
    let offer = move |items: Vec<(String, Blob)>| {
        spawn_local(async move {
            let items = with_sizes(items).await;
            let estimates: Vec<FileEstimate> = items
                .iter()
                .map(|(name, _, size)| estimate(name, *size))
                .collect();
            let needs: u64 = estimates.iter().map(|e| e.needs).sum();
            let in_use = worker_memory.get_untracked().unwrap_or(0.0) as u64;
            if fits(needs, in_use, memory_limit()) {
                load_all(items);
            } else {
                over_budget.set(Some(
                    items
                        .into_iter()
                        .zip(estimates)
                        .map(|((name, blob, _), estimate)| Pending {
                            name,
                            blob,
                            estimate,
                            checked: true,
                        })
                        .collect(),
                ));
            }
        })
    };

    let on_files = move |list: Option<FileList>| {
        let Some(list) = list else { return };
        let items: Vec<(String, Blob)> = (0..list.length())
            .filter_map(|i| list.get(i))
            .map(|f: File| (f.name(), f.into()))
            .collect();
        if !items.is_empty() {
            offer(items);
        }
    };

    // The whole window is the drop zone.
    let _ = window_event_listener(ev::dragover, move |e| {
        e.prevent_default();
        dragging.set(true);
    });
    let _ = window_event_listener(ev::dragleave, move |_| dragging.set(false));
    let _ = window_event_listener(ev::drop, move |e| {
        e.prevent_default();
        dragging.set(false);
        let Some(dt) = e.data_transfer() else { return };
        // Folders are read through their entries (taken now: the drop's data empties after).
        match crate::page::folders::dropped_folders(&dt) {
            Some(entries) => spawn_local(async move {
                match crate::page::folders::files_of_entries(entries).await {
                    Ok(items) if !items.is_empty() => offer(items),
                    Ok(_) => {}
                    Err(e) => rows.update(|r| {
                        r.push(Row {
                            name: "dropped folder".into(),
                            size: 0,
                            read: 0,
                            stage: None,
                            report: Some(FileView::failed(format!(
                                "could not read the folder: {e}"
                            ))),
                        })
                    }),
                }
            }),
            None => on_files(dt.files()),
        }
    });

    // A link pasted into this tab changes only the fragment: read it again, and check it
    // against the files already loaded.
    let _ = window_event_listener(ev::hashchange, move |_| {
        let state = LinkState::from_location();
        let check = state.waiting() && rows.with_untracked(|r| !r.is_empty());
        link.set(state);
        if check {
            ask_fingerprints();
        }
    });

    // A link's `src=` URLs, after the user said yes: fetched here (the page's policy admits
    // exactly their origins), then loaded like dropped files. A URL that fails gets a row.
    let load_sources = move |urls: Vec<String>| {
        spawn_local(async move {
            let mut items = Vec::new();
            for url in urls {
                match fetch_blob(&url).await {
                    Ok(blob) => items.push((crate::page::sharing::share::name_of_source(&url), blob)),
                    Err(e) => rows.update(|r| {
                        r.push(Row {
                            name: url.clone(),
                            size: 0,
                            read: 0,
                            stage: None,
                            report: Some(FileView::failed(format!(
                                "could not fetch {url}: {e} (the host must allow this page's origin by CORS)"
                            ))),
                        })
                    }),
                }
            }
            if !items.is_empty() {
                offer(items);
            }
        });
    };

    // The page under the file list is built in the frames after the first files arrive (the
    // timeline's part, then the tables, panels and theory), so that a drop of hundreds of files
    // is not one long task.
    let shell = RwSignal::new(0u8);
    let shell_started = StoredValue::new(false);
    Effect::new(move |_| {
        if rows.with(|r| !r.is_empty()) && !shell_started.get_value() {
            shell_started.set_value(true);
            for stage in 1..=SHELL_STAGES {
                defer(move || shell.set(stage));
            }
        }
    });

    // A folder chooser: `webkitdirectory` is not a typed attribute, so it is set once mounted.
    let folder_input = NodeRef::<leptos::html::Input>::new();
    Effect::new(move |_| {
        if let Some(el) = folder_input.get() {
            let _ = el.set_attribute("webkitdirectory", "");
        }
    });

    let load_demo = move |_| {
        // Only the fetch of the demo's files runs here; the worker reads them.
        spawn_local(async move {
            match demo_blobs().await {
                Ok(items) => load_all(with_sizes(items).await),
                Err(e) => rows.update(|r| {
                    r.push(Row {
                        name: "demo run".into(),
                        size: 0,
                        read: 0,
                        stage: None,
                        report: Some(FileView::failed(e)),
                    })
                }),
            }
        });
    };

    view! {
        <div
            class="page"
            class:dragging=move || dragging.get()
            class:aggregate-only=move || aggregate.is_open() && ranks.with(Vec::is_empty)
            data-analysis-ms=move || analysis_ms.get().map(|ms| format!("{ms:.0}"))
            data-worker-memory=move || worker_memory.get().map(|b| format!("{b:.0}"))
            data-worker-heap=move || worker_heap.get()
            data-worker-warm-ms=move || warmed_up_ms.get().map(|ms| format!("{ms:.0}"))
        >
            <header>
                <h1>"ncclscope"</h1>
                <span class="tagline">"NCCL logs + Nsight Systems kernels, fused, in your browser"</span>
                <div class="actions">
                    <label class="button">
                        "Choose files…"
                        <input
                            type="file"
                            multiple
                            data-testid="file-input"
                            on:change=move |e| {
                                let input: web_sys::HtmlInputElement = event_target(&e);
                                on_files(input.files());
                            }
                        />
                    </label>
                    <label class="button">
                        "Choose folder…"
                        <input
                            type="file"
                            node_ref=folder_input
                            data-testid="folder-input"
                            on:change=move |e| {
                                let input: web_sys::HtmlInputElement = event_target(&e);
                                if let Some(list) = input.files() {
                                    let items = crate::page::folders::files_of_list(&list);
                                    if !items.is_empty() {
                                        offer(items);
                                    }
                                }
                            }
                        />
                    </label>
                    <button data-testid="load-demo" on:click=load_demo>"Load demo run"</button>
                    <crate::page::theme::ThemeToggle />
                </div>
            </header>
            <LinkBanner state=link.into() on_sources=Callback::new(load_sources) />
            {move || over_budget.with(|o| o.is_some()).then(|| view! {
                <BudgetDialog pending=over_budget in_use=worker_memory.get_untracked().unwrap_or(0.0) as u64 on_load=Callback::new(move |items: Vec<(String, Blob)>| spawn_local(async move { load_all(with_sizes(items).await) })) />
            })}
            <Show when=move || rows.with(Vec::is_empty)>
                <EmptyState />
            </Show>
            <Show when=move || !rows.with(Vec::is_empty)>
                <OverallProgress rows=rows.into() />
                <Show when=move || analysing.get()>
                    <p class="hint" data-testid="analysing">"Analysing every file loaded so far…"</p>
                </Show>
                <Show when=move || !analysing.get() && !rerun.with(String::is_empty)>
                    <p class="hint" data-testid="analysis-status">
                        {move || format!("Analysed in {:.0} ms: {}", analysis_ms.get().unwrap_or(0.0), rerun.get())}
                    </p>
                </Show>
                <FileList rows=rows.into() notes=notes />
                <NotesPanel state=notes files=noted.into() is_bundle=is_bundle />
                <crate::page::panels::aggregate::AggregatePanel state=aggregate />
                <Show when=move || { shell.get() >= 1 }>
                <div class="downloads" hidden=is_bundle>
                    <button data-testid="download-trace" on:click=move |_| ask_export("chrome-trace")>
                        "Download Chrome trace (opens in Perfetto, chrome://tracing)"
                    </button>
                    <button data-testid="download-csv" on:click=move |_| ask_export("csv")>
                        "Download kernels as CSV"
                    </button>
                    <button
                        data-testid="export-bundle"
                        title="One HTML file with the viewer and this analysis inside: it opens anywhere, with no files and no network."
                        on:click=export_bundle
                    >
                        "Export bundle (one HTML file)"
                    </button>
                    <span class="hint">"Saved from this tab; nothing is uploaded."</span>
                    {move || bundle_error.get().map(|e| view! { <span class="error" data-testid="bundle-error">{e}</span> })}
                </div>
                {is_bundle.then(|| view! {
                    <p class="link-banner" data-testid="bundle-note">
                        "This is an ncclscope bundle: a snapshot of an analysed run, with no files. Views that need the files (new drops, downloads, theory changes, window aggregates) are not available here."
                    </p>
                })}
                <div class="share" hidden=is_bundle>
                    <button
                        data-testid="copy-link"
                        title="A link to this view: the time window, the theory form and the files' SHA-256 fingerprints. It holds no data; the recipient drops the same files."
                        on:click=move |_| {
                            link.set(LinkState::None);
                            ask_fingerprints();
                        }
                    >
                        "Copy link to this view"
                    </button>
                    <button
                        data-testid="copy-summary-link"
                        title="A link that carries the visible window's aggregate itself: it opens with no files."
                        disabled=move || window_summary.with(Option::is_none)
                        on:click=move |_| {
                            let made = window_summary
                                .with_untracked(|w| w.as_ref().map(crate::page::sharing::share::self_contained_link));
                            show_link(made);
                        }
                    >
                        "Copy self-contained link (window summary)"
                    </button>
                    {move || share_url.get().map(|u| view! {
                        <input readonly class="share-url" data-testid="share-link" value=u />
                    })}
                    {move || share_error.get().map(|e| view! { <span class="error" data-testid="share-error">{e}</span> })}
                </div>
                <PanelNav open=open_panel />
                </Show>
                <Show when=move || { shell.get() >= 2 }>
                <section id="panel-timeline" class="timeline-area">
                <h2>"Timeline"</h2>
                <TimelineControls
                    applied=timeline_view.into()
                    status=view_status.into()
                    on_apply=Callback::new(ask_view)
                />
                <crate::page::timeline::minimap::Minimap timeline=timeline.into() view=window />
                <crate::page::timeline::nvtx_rows::NvtxRows timeline=timeline.into() view=window.into() />
                <TimelineCanvas
                    timeline=timeline.into()
                    view=window
                    selected=selected.into()
                    flow=flow
                    on_pick=Callback::new(pick)
                    selection=selection
                    on_select=Callback::new(move |r| ask_range(r, crate::page::panels::window::Scope::Selection))
                    hover=hover
                />
                {move || selected.get().map(|_| view! {
                    <section class="details-panel" data-testid="details">
                        <h2>"Selected kernel"</h2>
                        <button
                            data-testid="copy-kernel-link"
                            hidden=is_bundle
                            disabled=move || details.with(Option::is_none)
                            title="A link that carries this kernel's details itself: it opens with no files."
                            on:click=move |_| {
                                let made = details.with_untracked(|d| {
                                    d.clone().map(|(details, fields)| {
                                        crate::page::sharing::share::self_contained_kernel_link(
                                            ncclscope_app::page_logic::link::SharedKernel { details, fields },
                                        )
                                    })
                                });
                                show_link(made);
                            }
                        >
                            "Copy self-contained link (this kernel)"
                        </button>
                        {move || match details.get() {
                            Some((d, fields)) => crate::page::panels::details::details_view(&d, &fields).into_any(),
                            None if no_details.get() => view! {
                                <p class="hint" data-testid="no-details">
                                    "No details for this kernel: its process has no log loaded (or no global rank), so nothing ties it to a log line. Drop the process's NCCL log to see its operation."
                                </p>
                            }.into_any(),
                            None => view! { <p class="hint">"Looking it up…"</p> }.into_any(),
                        }}
                    </section>
                })}
                </section>
                <section class="window-panel" id="panel-window">
                    <button data-testid="aggregate-window" hidden=is_bundle on:click=move |_| ask_window()>
                        "Aggregate the visible window"
                    </button>
                    {move || window_summary.get().map(|w| view! {
                        <div data-testid="window-aggregate">
                            {crate::page::panels::window::scoped_view(&w, Some((window_scope.get(), timeline.with_untracked(|t| t.start_ns))))}
                        </div>
                    })}
                </section>
                </Show>
                <Show when=move || { shell.get() >= 3 }>
                <div id="panel-ranks"><RankTable ranks=ranks.into() /></div>
                <div id="panel-communicators"><Communicators panel=comms.into() /></div>
                <AnalysisPanels stages=panels />
                </Show>
                <Show when=move || { shell.get() >= SHELL_STAGES }>
                <div id="panel-theory">
                <TheoryPanel
                    form=theory_form
                    typed=typed
                    inferred=inferred.into()
                    view=theory_view.into()
                    error=theory_error
                    on_apply=Callback::new(ask_theory)
                />
                </div>
                </Show>
            </Show>
            <p class="privacy" data-testid="privacy">"Files are read in this tab only; nothing is uploaded. After the first visit the page also works offline."</p>
        </div>
    }
}

/// What to drop, and how to produce it.
#[component]
fn EmptyState() -> impl IntoView {
    view! {
        <section class="empty" data-testid="empty-state">
            <h2>"Drop NCCL logs and Nsight Systems exports anywhere on this page"</h2>
            <p>"Or choose them with “Choose files…”. Drop every rank's files together: the logs say which collective each rank called, the exports when its kernels ran."</p>
            <ul>
                <li>
                    <b>"NCCL debug logs"</b>" (text, one per process or one combined): run the job with "
                    <code>"NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL,INIT,GRAPH NCCL_DEBUG_FILE=nccl_%h_%p.log"</code>
                    " (optionally "<code>"NCCL_DEBUG_TIMESTAMP_FORMAT=\"%s.%6f\""</code>"). "
                    <code>"COLL"</code>" logs every collective, "<code>"INIT"</code>" the ranks and communicators, "
                    <code>"GRAPH"</code>" the topology."
                </li>
                <li>
                    <b>"Nsight Systems exports"</b>" ("<code>".sqlite"</code>", one per process or node): "
                    <code>"nsys profile --trace=cuda,nvtx -o report …"</code>" then "
                    <code>"nsys export --type sqlite report.nsys-rep"</code>"."
                </li>
                <li>"Or press “Load demo run” to see a synthetic multi-rank run."</li>
            </ul>
        </section>
    }
}

/// Every file dropped, with its progress and then its report. Only the rows in the list's
/// scroll box are in the document (a drop of hundreds of files adds a few dozen rows), and a
/// row is drawn again only when its own progress, stage or report changes.
#[component]
fn FileList(rows: Signal<Vec<Row>>, notes: NotesState) -> impl IntoView {
    const HEADERS: [&str; 6] = ["file", "kind", "size", "version", "contents", "status"];
    // Filtered by name; the keys change only when files are added.
    let keys = Memo::new(move |_| {
        rows.with(|r| {
            r.iter()
                .map(|x| vec![ncclscope_app::protocol::panels::Cell::text(x.name.clone())])
                .collect::<Vec<_>>()
        })
    });
    let row = move |i: usize| {
        let stamp = Memo::new(move |_| {
            rows.with(|r| {
                r.get(i)
                    .map(|x| (x.read, x.stage.clone(), x.report.is_some()))
            })
        });
        move || {
            // (`with`, not `track`: a memo computes, and so follows the rows, only when read.)
            stamp.with(|_| ());
            rows.with_untracked(|r| r.get(i).cloned())
                .map(|row| view! { <FileRow row=row id=i notes=notes /> })
        }
    };
    view! {
        <crate::page::tables::table::VirtualTable test_id="file-list" headers=HEADERS.map(String::from).to_vec()
            keys=keys row=row sortable=false csv=false />
    }
}

/// All files still loading, as one bar: bytes read over bytes to read.
#[component]
fn OverallProgress(rows: Signal<Vec<Row>>) -> impl IntoView {
    let totals = move || {
        rows.with(|r| {
            let loading = r.iter().filter(|x| x.report.is_none()).count();
            let size: u64 = r.iter().map(|x| x.size).sum();
            let read: u64 = r.iter().map(|x| x.read.min(x.size)).sum();
            (loading, read, size)
        })
    };
    view! {
        <Show when=move || totals().0 != 0>
            <div class="overall" data-testid="overall-progress">
                <progress
                    max=move || totals().2.max(1) as f64
                    value=move || totals().1 as f64
                ></progress>
                <span>
                    {move || {
                        let (loading, read, size) = totals();
                        format!(
                            "loading {loading} file(s): {} / {} ({})",
                            human_bytes(read),
                            human_bytes(size),
                            percent(read, size)
                        )
                    }}
                </span>
            </div>
        </Show>
    }
}

/// `read` of `size` as a whole percentage (`100 %` for an empty file).
fn percent(read: u64, size: u64) -> String {
    let pct = (read.min(size) * 100).checked_div(size).unwrap_or(100);
    format!("{pct} %")
}

#[component]
fn FileRow(row: Row, id: usize, notes: NotesState) -> impl IntoView {
    let kind = row
        .report
        .as_ref()
        .map(|r| r.kind.clone())
        .unwrap_or_else(|| "…".to_string());
    let version = row
        .report
        .as_ref()
        .and_then(|r| r.version.clone())
        .unwrap_or_default();
    let facts = row
        .report
        .as_ref()
        .map(|r| r.facts.clone())
        .unwrap_or_default();
    let status = match &row.report {
        None if row.stage.is_some() => format!(
            "{}… ({})",
            row.stage.clone().unwrap_or_default(),
            human_bytes(row.size)
        ),
        None => format!(
            "reading {} / {} ({})",
            human_bytes(row.read),
            human_bytes(row.size),
            percent(row.read, row.size)
        ),
        Some(r) => match &r.error {
            Some(e) => format!("error: {e}"),
            None if r.diagnostic_count == 0 => "loaded".to_string(),
            None => format!("loaded, {} notes", r.diagnostic_count),
        },
    };
    let loading = row.report.is_none();
    let failed = row.report.as_ref().is_some_and(|r| r.error.is_some());
    let digest = row.report.as_ref().and_then(|r| r.digest.clone());
    let kinds = row
        .report
        .as_ref()
        .map(|r| r.note_kinds.clone())
        .unwrap_or_default();
    let note_count = row.report.as_ref().map_or(0, |r| r.diagnostic_count);
    let (read, size) = (row.read as f64, row.size.max(1) as f64);
    // Every string here comes from the user's file: Leptos sets it as text, never as markup.
    view! {
        <tr
            data-testid="file-row"
            data-file=row.name.clone()
            data-load-ms=row.report.as_ref().map(|r| format!("{:.0}", r.load_ms))
            class:failed=failed
        >
            <td class="name">{row.name.clone()}</td>
            <td data-testid="kind">{kind}</td>
            <td>{human_bytes(row.size)}</td>
            <td data-testid="version">{version}</td>
            <td>
                {facts
                    .into_iter()
                    .map(|(k, v)| {
                        let label = k.clone();
                        view! { <span class="fact" data-fact=k>{label}": "<b>{v}</b></span> }
                    })
                    .collect_view()}
                <NoteSummary kinds=kinds />
                {(note_count > 0).then(|| view! {
                    <button class="link" data-testid="show-notes"
                        title="List this file's notes (every skipped line with its reason and text) in the file notes panel"
                        on:click=move |_| {
                            notes.show(id, None, note_count);
                            show_panel("notes");
                        }>
                        "Show notes"
                    </button>
                })}
            </td>
            <td data-testid="status">
                {loading.then(|| view! { <progress data-testid="file-progress" max=size value=read></progress> })}
                {status}
                {digest.map(|d| view! { <code class="digest" data-testid="digest">{d}</code> })}
            </td>
        </tr>
    }
}

/// Each item with its size in bytes, read a few dozen per task: a dropped `File`'s size can cost
/// a synchronous round trip to the browser process (288 files took 200 ms in one task).
async fn with_sizes(items: Vec<(String, Blob)>) -> Vec<(String, Blob, u64)> {
    const PER_TASK: usize = 32;
    let mut out = Vec::with_capacity(items.len());
    for (i, (name, blob)) in items.into_iter().enumerate() {
        if i > 0 && i % PER_TASK == 0 {
            next_task().await;
        }
        let size = blob.size() as u64;
        out.push((name, blob, size));
    }
    if out.len() > PER_TASK {
        next_task().await;
    }
    out
}

/// The demo run's files, listed one per line in `demo/MANIFEST`.
async fn demo_blobs() -> Result<Vec<(String, Blob)>, String> {
    let mut items = Vec::new();
    for name in demo_names().await? {
        let blob = demo_file(&name).await?;
        items.push((name, blob));
    }
    Ok(items)
}
