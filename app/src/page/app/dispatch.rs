//! What the page does with each message of the worker: it only shows what the worker sends,
//! into the signals of [`AppState`]. One function per kind of message.

use leptos::prelude::*;
use leptos::task::spawn_local;
use ncclscope_app::page_logic::deferred::{defer, idle};
use ncclscope_app::protocol::messages::{LinkFile, ToPage};
use ncclscope_app::protocol::overview::OverviewView;
use ncclscope_app::protocol::panels::Panels;
use ncclscope_app::protocol::views::{CommPanel, RankView};
use std::rc::Rc;
use theory::form::to_toml;
use timeline::{Timeline, TimelineView};

use crate::page::app::state::{AppState, Drawer};
use crate::page::client;
use crate::page::panels::theory::prefill;
use crate::page::sharing::share::{apply_link, link_from_page, LinkState};
use crate::page::timeline::canvas::View;
use crate::page::timeline::controls::ViewStatus;
use crate::page::views::registry;
use ncclscope_app::page_logic::link::ViewLink;

/// Results of more ranks than this are shown over several animation frames.
const STAGED_RANKS: usize = 32;

/// Routes the worker's messages to `s` from now on.
pub fn install(s: AppState) {
    client::set_handler(Rc::new(move |msg, timeline| dispatch(s, msg, timeline)));
}

fn dispatch(s: AppState, msg: ToPage, new_timeline: Option<Timeline>) {
    match msg {
        msg @ (ToPage::Aggregate { .. }
        | ToPage::AggregateRank { .. }
        | ToPage::AggregateKernel { .. }) => {
            let opened = matches!(msg, ToPage::Aggregate { .. });
            s.aggregate.receive(msg, new_timeline);
            // An aggregate dropped alone opens its view.
            if opened && s.ranks.with_untracked(Vec::is_empty) {
                registry::open(&s, "aggregate");
            }
        }
        ToPage::Progress { id, read } => s.rows.update(|r| {
            if let Some(row) = r.get_mut(id) {
                row.read = read;
            }
        }),
        ToPage::Report {
            id,
            view,
            worker_memory_bytes,
        } => {
            s.worker_memory.set(Some(worker_memory_bytes));
            s.rows.update(|r| {
                if let Some(row) = r.get_mut(id) {
                    row.read = row.size;
                    row.report = Some(view);
                }
            })
        }
        ToPage::Result {
            ranks,
            comms,
            analysis_ms,
            worker_memory_bytes,
            inferred,
            panels,
            rerun,
            heap,
            overview,
        } => {
            // The insights of the analysis before are stale: its own follow.
            s.insights.set(None);
            s.worker_heap.set(serde_json::to_string(&heap).ok());
            s.worker_memory.set(Some(worker_memory_bytes));
            let shown = Shown {
                ranks,
                comms,
                panels,
                overview: *overview,
                analysis_ms,
                rerun,
            };
            on_result(s, shown, new_timeline, inferred);
            crate::page::compare::on_loaded_result(s);
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
            let status = ViewStatus {
                kept,
                total,
                unmatched,
                low_confidence,
                error,
            };
            on_view(
                s,
                TimelineView {
                    filter,
                    original_clock,
                },
                status,
                new_timeline,
            )
        }
        ToPage::Window { summary } => {
            s.window_scope.set(s.asked_scope.get_value());
            s.window_summary.set(Some(summary));
        }
        ToPage::Details {
            track,
            span,
            details,
            fields,
            hover: true,
        } => s.hover.answer((track, span), details, fields),
        ToPage::Details {
            track,
            span,
            details,
            fields,
            hover: false,
        } => {
            // A link's selection arrives as whatever (track, span) the worker resolved it to.
            if s.awaiting_selection.get_untracked() {
                s.awaiting_selection.set(false);
                s.selected.set(details.is_some().then_some((track, span)));
                if details.is_some() {
                    s.drawer.set(Some(Drawer::Kernel));
                }
            }
            if s.selected.get_untracked() == Some((track, span)) {
                s.no_details.set(details.is_none());
                s.details.set(details.map(|d| (d, fields)));
            }
        }
        ToPage::Fingerprints { files } => on_fingerprints(s, files),
        ToPage::Notes { page } => s.notes.receive(page),
        ToPage::FileLines { lines } => s.file_lines.receive(lines),
        ToPage::Insights { insights } => s.insights.set(Some(std::sync::Arc::new(*insights))),
        ToPage::Theory { view, error } => {
            s.theory.view.set(view);
            s.theory.error.set(error);
        }
        ToPage::Stage { id, stage } => s.rows.update(|r| {
            if let Some(row) = r.get_mut(id) {
                row.stage = Some(stage);
            }
        }),
        ToPage::Analysing => s.analysing.set(true),
        ToPage::WarmedUp { ms } => s.warmed_up_ms.set(Some(ms)),
        ToPage::Crashed { .. } => s.analysing.set(false),
        ToPage::Diff { diff } => crate::page::compare::on_diff(s, *diff),
        ToPage::Stacked { info } => crate::page::compare::on_stacked(s, true, info, new_timeline),
        // Handled by the client (it saves the file), or never sent to the page.
        ToPage::Ready
        | ToPage::Export { .. }
        | ToPage::Aligned { .. }
        | ToPage::AlignFailed { .. }
        | ToPage::Parsed { .. }
        | ToPage::ParseProgress { .. }
        | ToPage::ParseFailed { .. }
        | ToPage::Profile { .. } => {}
    }
}

/// What a result shows besides the timeline.
struct Shown {
    ranks: Vec<RankView>,
    comms: CommPanel,
    panels: Panels,
    overview: OverviewView,
    analysis_ms: f64,
    rerun: String,
}

/// A new analysis: the timeline and the overview at once, then (over several animation frames
/// when the run has many ranks, each group with its own style and layout) the tables and
/// panels; the status line says "Analysed" once all are in.
fn on_result(
    s: AppState,
    shown: Shown,
    new_timeline: Option<Timeline>,
    inferred: Vec<(String, String)>,
) {
    let Shown {
        ranks,
        comms,
        panels,
        overview,
        analysis_ms,
        rerun,
    } = shown;
    s.window_summary.set(None);
    s.selected.set(None);
    s.details.set(None);
    if matches!(
        s.drawer.get_untracked(),
        Some(Drawer::Kernel | Drawer::Range)
    ) {
        s.drawer.set(None);
    }
    s.timeline.set(new_timeline.unwrap_or_default());
    s.overview.set(Some(overview));
    // What the trace tells fills the fields the user has not typed; then compare.
    let mut form = s.theory.form.get_untracked();
    let filled = prefill(&mut form, &inferred, &s.theory.typed.get_untracked());
    s.theory.form.set(form);
    s.theory.inferred.set(filled);
    s.ask_theory(to_toml(&s.theory.form.get_untracked()));
    let stage = s.result_stage.get_value() + 1;
    s.result_stage.set_value(stage);
    let staged = ranks.len() > STAGED_RANKS;
    s.panels.set(panels);
    let (comms_signal, ranks_signal) = (s.comms, s.ranks);
    let mut steps: Vec<(String, Box<dyn FnOnce()>)> = vec![
        (
            "communicators".into(),
            Box::new(move || comms_signal.set(comms)),
        ),
        ("ranks".into(), Box::new(move || ranks_signal.set(ranks))),
    ];
    for k in 0..s.panels.steps() {
        let panels = s.panels;
        steps.push((format!("panel {k}"), Box::new(move || panels.draw(k))));
    }
    let status = move || {
        s.analysing.set(false);
        s.analysis_ms.set(Some(analysis_ms));
        s.rerun.set(rerun);
        // A link waiting for its files: check the dropped ones.
        if s.link.with_untracked(LinkState::waiting) {
            s.ask_fingerprints();
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
            if s.result_stage.try_get_value() == Some(stage) {
                client::mark(&format!("ncclscope: result step {i}: {what}"));
                step();
            }
        });
    }
    spawn_local(async move {
        idle().await;
        if s.result_stage.try_get_value() == Some(stage) {
            client::mark("ncclscope: result shown");
            status();
        }
    });
}

/// The timeline redrawn for a filter or clock. A refused query changes nothing but the error:
/// the counts stay those of the timeline still drawn.
fn on_view(s: AppState, applied: TimelineView, status: ViewStatus, new_timeline: Option<Timeline>) {
    if status.error.is_some() {
        let error = status.error;
        s.view_status.update(|st| match st {
            Some(st) => st.error = error,
            None => {
                *st = Some(ViewStatus {
                    error,
                    ..ViewStatus::default()
                })
            }
        });
        return;
    }
    s.view_status.set(Some(status));
    s.timeline_view.set(applied);
    if let Some(t) = new_timeline {
        // The same kernel stays selected if it is still drawn (by identity: its position in
        // the timeline changed).
        let again = s.picked_instance();
        s.selected.set(None);
        s.details.set(None);
        s.window_summary.set(None);
        s.timeline.set(t);
        if let Some(sel) = again {
            s.select_by(sel);
        }
    }
    if let Some(w) = s.pending_window.get_untracked() {
        s.pending_window.set(None);
        s.window.set(Some(w));
    }
}

/// Every file's fingerprint: a link waiting for its files is checked (and its view restored),
/// else a link to the current view is made. A comparison shown names the other run's files too
/// (its worker's fingerprints, taken once it was analysed).
fn on_fingerprints(s: AppState, files: Vec<LinkFile>) {
    let c = s.compare;
    let compared = c.diff.with_untracked(|d| {
        d.as_ref()
            .is_some_and(|d| d.new.error.is_none() && d.base.error.is_none())
    });
    let other = if compared {
        c.files.get_untracked()
    } else {
        Vec::new()
    };
    let Some(expected) = s.link.with_untracked(LinkState::expected) else {
        let patterns = s.patterns.get_untracked();
        let views = ViewLink {
            files,
            other_files: other,
            selection: s.picked_instance(),
            panel: Some(crate::page::views::registry::slug(s.view.get_untracked()).to_string()),
            patterns: (!patterns.is_default()).then_some(patterns),
            steps: Some(s.steps_view.get_untracked()),
            diagnosis: s.shared_diagnosis(),
            ..ViewLink::default()
        };
        let here = link_from_page(
            s.window.get_untracked(),
            &s.theory.form.get_untracked(),
            &s.timeline_view.get_untracked(),
            views,
        );
        s.share_error.set(None);
        s.share_url.set(Some(here));
        return;
    };
    let (state, restore) = apply_link(&expected, &files, &other);
    if let Some(r) = restore {
        let restored_view = TimelineView {
            filter: r.filter.clone().unwrap_or_default(),
            original_clock: r.original_clock,
        };
        let w = r.window.map(|(a, b)| View {
            start_ns: a as f64,
            end_ns: b as f64,
        });
        if restored_view != s.timeline_view.get_untracked() {
            // The window belongs to the link's view: set it once that is drawn (the worker
            // answers in order, before the selection below).
            s.pending_window.set(w);
            s.ask_view(restored_view);
        } else if let Some(w) = w {
            s.window.set(Some(w));
        }
        if let Some(pt) = &r.patterns {
            s.patterns.set(pt.clone());
        }
        if let Some(p) = &r.panel {
            registry::open(&s, p);
        }
        if let Some(sel) = r.selection.clone() {
            s.select_by(sel);
        }
        if let Some(steps) = r.steps.clone() {
            s.set_steps_view(steps);
        }
        if !r.theory.is_empty() {
            let mut form = s.theory.form.get_untracked();
            form.extend(r.theory.clone());
            s.theory.form.set(form);
            s.theory
                .typed
                .update(|t| t.extend(r.theory.keys().cloned()));
            s.ask_theory(to_toml(&s.theory.form.get_untracked()));
        }
    }
    s.link.set(state);
}
