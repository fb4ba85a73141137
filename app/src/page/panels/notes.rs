//! The file notes panel: one file's notes (every skipped line with its reason and text, and the
//! other notes about the file), however many there are. The worker keeps them; this list holds
//! the pages it showed last and renders only the rows in its scroll box, asking the worker for
//! a page when the box scrolls to rows it does not have. Its counts per reason filter it; its
//! download is built in the worker. Every string of a note comes from the user's file and is set
//! as text, never as markup.

use leptos::html::Div;
use leptos::prelude::*;
use ncclscope_app::page_logic::list_window::list_window;
use ncclscope_app::protocol::messages::LoadRequest;
use ncclscope_app::protocol::notes::{summary_line, NoteKind, NotePage, NoteQuery, NoteRow, PAGE};
use std::collections::{BTreeMap, BTreeSet};

use crate::page::client;

/// A row's height (CSS pixels): `.note-row` is exactly this high.
const ROW_PX: f64 = 22.0;
/// The scroll box's height until it is measured (its CSS height, 24rem).
const VIEW_PX: f64 = 384.0;
/// Pages kept beyond those the box shows, when more than [`KEEP_PAGES`] are held.
const KEEP_AROUND: usize = 8;
const KEEP_PAGES: usize = 64;

/// A file with notes, as the panel lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct NotedFile {
    /// The file's row on the page (the worker knows its notes by it).
    pub id: usize,
    pub name: String,
    pub count: usize,
    pub kinds: Vec<NoteKind>,
}

/// What the panel shows: a file, a reason (or all), and the pages of that list it holds.
#[derive(Clone, Copy)]
pub struct NotesState {
    file: RwSignal<Option<usize>>,
    reason: RwSignal<Option<String>>,
    /// Notes in the list shown.
    total: RwSignal<usize>,
    pages: RwSignal<BTreeMap<usize, Vec<NoteRow>>>,
    asked: StoredValue<BTreeSet<usize>>,
    error: RwSignal<Option<String>>,
    /// The note clicked in the list (shown whole in the details drawer).
    picked: RwSignal<Option<(usize, NoteRow)>>,
    /// Bumped when a new list is shown: its box scrolls back to the top.
    reset: RwSignal<u64>,
    /// A file's first page, as its report brought it.
    first_page: StoredValue<Option<Callback<usize, Vec<NoteRow>>>>,
    /// No worker to ask (a bundle): a list is the first page's notes of its reason.
    local_only: StoredValue<bool>,
}

impl NotesState {
    pub fn new() -> NotesState {
        NotesState {
            file: RwSignal::new(None),
            reason: RwSignal::new(None),
            total: RwSignal::new(0),
            pages: RwSignal::new(BTreeMap::new()),
            asked: StoredValue::new(BTreeSet::new()),
            error: RwSignal::new(None),
            picked: RwSignal::new(None),
            reset: RwSignal::new(0),
            first_page: StoredValue::new(None),
            local_only: StoredValue::new(false),
        }
    }

    /// Lists only what the reports brought (a bundle has no worker to ask for more).
    pub fn set_local_only(&self) {
        self.local_only.set_value(true);
    }

    /// Where a file's first page is read from (its report, on the page).
    pub fn set_first_page(&self, f: Callback<usize, Vec<NoteRow>>) {
        self.first_page.set_value(Some(f));
    }

    /// Shows file `id`'s notes of `reason` (`None`: all), `total` of them.
    pub fn show(&self, id: usize, reason: Option<String>, total: usize) {
        let mut pages = BTreeMap::new();
        let mut total = total;
        if self.local_only.get_value() {
            let mut first = self
                .first_page
                .get_value()
                .map_or_else(Vec::new, |f| f.run(id));
            first.retain(|r| reason.as_ref().is_none_or(|x| x == &r.reason));
            total = first.len();
            pages.insert(0, first);
        } else if reason.is_none() {
            // The report brought the first page of the whole list.
            if let Some(first) = self.first_page.get_value().map(|f| f.run(id)) {
                if !first.is_empty() {
                    pages.insert(0, first);
                }
            }
        }
        self.asked.set_value(BTreeSet::new());
        self.error.set(None);
        self.picked.set(None);
        self.total.set(total);
        self.pages.set(pages);
        self.reason.set(reason);
        self.file.set(Some(id));
        self.reset.update(|n| *n += 1);
    }

    /// The worker's answer: kept if it is of the list shown.
    pub fn receive(&self, page: NotePage) {
        if Some(page.file) != self.file.get_untracked()
            || page.reason != self.reason.get_untracked()
            || !page.offset.is_multiple_of(PAGE)
        {
            return;
        }
        let index = page.offset / PAGE;
        self.asked.update_value(|a| {
            a.remove(&index);
        });
        if page.error.is_some() {
            self.error.set(page.error);
            return;
        }
        self.total.set(page.total);
        self.pages.update(|p| {
            p.insert(index, page.rows);
        });
    }

    /// Asks the worker for the pages of rows `first..last` the list does not hold, and forgets
    /// pages far from them.
    fn need(&self, first: usize, last: usize) {
        let Some(file) = self.file.get_untracked() else {
            return;
        };
        if last <= first {
            return;
        }
        let (a, b) = (first / PAGE, (last - 1) / PAGE);
        if self.pages.with_untracked(|p| p.len() > KEEP_PAGES) {
            self.pages.update(|p| {
                p.retain(|&k, _| k + KEEP_AROUND >= a && k <= b + KEEP_AROUND);
            });
        }
        for index in a..=b {
            let held = self.pages.with_untracked(|p| p.contains_key(&index));
            let asked = self.asked.with_value(|s| s.contains(&index));
            if held || asked {
                continue;
            }
            self.asked.update_value(|s| {
                s.insert(index);
            });
            client::load(LoadRequest {
                notes: Some(NoteQuery {
                    file,
                    reason: self.reason.get_untracked(),
                    offset: index * PAGE,
                    limit: PAGE,
                }),
                ..LoadRequest::default()
            });
        }
    }

    /// Row `i` of the list shown, if its page is here (tracked).
    fn row(&self, i: usize) -> Option<NoteRow> {
        self.pages
            .with(|p| p.get(&(i / PAGE)).and_then(|r| r.get(i % PAGE)).cloned())
    }
}

/// The per-reason summary of a file's row: `reason ×count; …`.
#[component]
pub fn NoteSummary(kinds: Vec<NoteKind>) -> impl IntoView {
    (!kinds.is_empty()).then(|| {
        view! { <div class="note-summary" data-testid="note-summary">{summary_line(&kinds)}</div> }
    })
}

/// The panel: a file chooser, its notes per reason (a filter), the download, and the list.
/// `on_pick` gets a note clicked (or chosen with Enter) in the list: the file's name, its row
/// and the note, to show whole (the details drawer).
///
/// (About 215 lines, most of them markup: the file chooser, the reason filter, the download and
/// the list read the same handful of signals (the file, the reason, the page of notes asked
/// for); split, the parts would pass them all to each other. The paging and the filter's logic
/// live in `NotesState` and `page_logic::list_window`.)
#[component]
pub fn NotesPanel(
    state: NotesState,
    files: Signal<Vec<NotedFile>>,
    #[prop(default = false)] is_bundle: bool,
    on_pick: Callback<(String, usize, NoteRow)>,
) -> impl IntoView {
    // The first file with notes is shown until the user picks another.
    Effect::new(move |_| {
        if state.file.with_untracked(Option::is_none) {
            if let Some(f) = files.with(|f| f.first().cloned()) {
                state.show(f.id, None, f.count);
            }
        }
    });
    let current = Memo::new(move |_| {
        let id = state.file.get();
        files.with(|f| f.iter().find(|x| Some(x.id) == id).cloned())
    });
    let scroller = NodeRef::<Div>::new();
    let scroll = RwSignal::new(0.0f64);
    let view_px = RwSignal::new(VIEW_PX);
    let range = Memo::new(move |_| {
        let w = list_window(state.total.get(), scroll.get(), view_px.get(), ROW_PX);
        (w.first, w.last, w.pad_top, w.pad_bottom)
    });
    // A new list starts at its top.
    Effect::new(move |_| {
        state.reset.track();
        if let Some(el) = scroller.get_untracked() {
            el.set_scroll_top(0);
            let h = f64::from(el.client_height());
            if h > 0.0 {
                view_px.set(h);
            }
        }
        scroll.set(0.0);
    });
    Effect::new(move |_| {
        let (first, last, _, _) = range.get();
        state.file.track();
        state.reason.track();
        if !is_bundle {
            state.need(first, last);
        }
    });
    let on_scroll = move |_| {
        if let Some(el) = scroller.get_untracked() {
            let top = f64::from(el.scroll_top());
            if top != scroll.get_untracked() {
                scroll.set(top);
            }
            let h = f64::from(el.client_height());
            if h > 0.0 && h != view_px.get_untracked() {
                view_px.set(h);
            }
        }
    };
    let choose = move |e: web_sys::Event| {
        let id: Option<usize> = event_target_value(&e).parse().ok();
        if let Some(f) =
            id.and_then(|id| files.with_untracked(|f| f.iter().find(|x| x.id == id).cloned()))
        {
            state.show(f.id, None, f.count);
        }
    };
    let filter = move |reason: Option<String>| {
        let Some(f) = current.get_untracked() else {
            return;
        };
        let total = match &reason {
            Some(r) => f
                .kinds
                .iter()
                .find(|k| &k.reason == r)
                .map_or(0, |k| k.count),
            None => f.count,
        };
        state.show(f.id, reason, total);
    };
    let download = move |_| {
        if let Some(id) = state.file.get_untracked() {
            client::load(LoadRequest {
                notes_csv: Some(id),
                ..LoadRequest::default()
            });
        }
    };
    let name = move || current.with(|c| c.as_ref().map(|c| c.name.clone()).unwrap_or_default());
    let kinds = move || {
        let Some(f) = current.get() else {
            return ().into_any();
        };
        let shown = state.reason.get();
        let all_pressed = shown.is_none();
        let buttons = f
            .kinds
            .iter()
            .map(|k| {
                let reason = k.reason.clone();
                let pressed = shown.as_deref() == Some(reason.as_str());
                let more = (k.unlisted > 0).then(|| format!(" (+{} not listed)", k.unlisted));
                let label = format!("{} ×{}", k.reason, k.count);
                view! {
                    <button class=format!("note-kind {}", k.severity) data-testid="note-kind"
                        data-reason=reason.clone() data-count=k.count.to_string()
                        aria-pressed=if pressed { "true" } else { "false" }
                        on:click=move |_| filter(Some(reason.clone()))>
                        {label}{more}
                    </button>
                }
            })
            .collect_view();
        view! {
            <button class="note-kind" data-testid="note-kind" data-reason="" data-count=f.count.to_string()
                aria-pressed=if all_pressed { "true" } else { "false" }
                on:click=move |_| filter(None)>
                {format!("all notes ×{}", f.count)}
            </button>
            {buttons}
        }
        .into_any()
    };
    let rows = move || {
        let (first, last, _, _) = range.get();
        (first..last).collect::<Vec<_>>()
    };
    let row = move |i: usize| {
        move || match state.row(i) {
            Some(r) => {
                let picked = r.clone();
                let reason = r.reason_shown();
                let text = r.text_shown();
                let title = text.clone();
                view! {
                    <div class=format!("note-row {}{}", r.severity, if i % 2 == 1 { " odd" } else { "" }) data-testid="note-row"
                        data-index=i.to_string() data-line=r.line.to_string() data-severity=r.severity.clone()
                        title=title tabindex="0"
                        on:click={
                            let picked = picked.clone();
                            move |_| {
                                state.picked.set(Some((i, picked.clone())));
                                on_pick.run((name(), i, picked.clone()));
                            }
                        }
                        on:keydown=move |e: web_sys::KeyboardEvent| {
                            if e.key() == "Enter" || e.key() == " " {
                                e.prevent_default();
                                state.picked.set(Some((i, picked.clone())));
                                on_pick.run((name(), i, picked.clone()));
                            }
                        }>
                        <span class="note-file">{name()}</span>
                        <span class="note-line">{r.line_shown()}</span>
                        <span class="note-reason">{reason}</span>
                        <span class="note-text">{text}</span>
                    </div>
                }
                .into_any()
            }
            None => view! {
                <div class="note-row pending" data-testid="note-pending" data-index=i.to_string()>
                    <span class="note-file">{name()}</span><span class="note-line"></span>
                    <span class="note-reason">"…"</span><span class="note-text"></span>
                </div>
            }
            .into_any(),
        }
    };
    view! {
        <Show when=move || files.with(|f| !f.is_empty())>
            <section class="panel notes-panel" id="panel-notes" data-testid="notes-panel">
                <h2>"File notes"</h2>
                <p class="hint">
                    "Every skipped line of each file with its reason and its text, and the other notes about it (lines printed twice, lines attributed by guess, problems of the whole file). "
                    {if is_bundle {
                        "This bundle holds the first 200 notes of each file only."
                    } else {
                        "The list is read from the loading worker as you scroll; the download has all of a file's notes."
                    }}
                </p>
                <div class="notes-controls">
                    <label>
                        "File "
                        <select data-testid="notes-file" on:change=choose
                            prop:value=move || state.file.get().map(|i| i.to_string()).unwrap_or_default()>
                            <For each=move || files.get() key=|f| (f.id, f.count)
                                children=move |f| view! {
                                    <option value=f.id.to_string()>{format!("{} ({} notes)", f.name, f.count)}</option>
                                } />
                        </select>
                    </label>
                    <button data-testid="notes-download" hidden=is_bundle on:click=download
                        title="All of this file's notes as CSV (file, line, severity, reason, text), built in this tab">
                        "Download notes (CSV)"
                    </button>
                    <span class="hint" data-testid="notes-shown">
                        {move || format!("{} notes", state.total.get())}
                    </span>
                </div>
                <div class="note-kinds" data-testid="note-kinds">{kinds}</div>
                {move || state.error.get().map(|e| view! { <p class="error" data-testid="notes-error">{e}</p> })}
                <div class="note-row note-head" aria-hidden="true">
                    <span class="note-file">"file"</span><span class="note-line">"line"</span>
                    <span class="note-reason">"reason"</span><span class="note-text">"text"</span>
                </div>
                <div class="notes-scroll" data-testid="notes-list" node_ref=scroller on:scroll=on_scroll
                    tabindex="0" role="region" aria-label="The file's notes: scroll for more">
                    <div style:height=move || format!("{}px", range.get().2)></div>
                    <For each=rows key=|i| *i children=row />
                    <div style:height=move || format!("{}px", range.get().3)></div>
                </div>
            </section>
        </Show>
    }
}
