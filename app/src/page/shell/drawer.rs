//! The details drawer, beside the view (never over the timeline, never pushing it below the
//! screen): the kernel picked on the timeline, the aggregate of the visible window or of a
//! selected range, a note picked in a file's notes. Each can be copied as a self-contained link;
//! Escape or × closes the drawer.

use leptos::prelude::*;
use ncclscope_app::page_logic::link::SharedKernel;

use crate::page::app::state::app_state;
use crate::page::app::state::{AppState, Drawer};
use crate::page::panels::details::details_view;
use crate::page::panels::window::scoped_view;
use crate::page::sharing::share::{self_contained_kernel_link, self_contained_link};

#[component]
pub fn DetailsDrawer() -> impl IntoView {
    let s = app_state();
    let tab = move |which: Drawer, label: &'static str, has: fn(&AppState) -> bool| {
        move || {
            has(&s).then(|| {
                view! {
                    <button class="drawer-tab" data-testid=format!("drawer-{}", label.to_lowercase())
                        aria-pressed=move || (s.drawer.get() == Some(which)).to_string()
                        on:click=move |_| s.drawer.set(Some(which))>
                        {label}
                    </button>
                }
            })
        }
    };
    view! {
        <Show when=move || s.drawer.with(Option::is_some)>
            <aside class="drawer" data-testid="drawer" aria-label="Details"
                on:keydown=move |e: web_sys::KeyboardEvent| {
                    if e.key() == "Escape" {
                        s.drawer.set(None);
                    }
                }>
                <div class="drawer-head">
                    {tab(Drawer::Kernel, "Kernel", |s| s.selected.with(Option::is_some))}
                    {tab(Drawer::Range, "Range", |s| s.window_summary.with(Option::is_some))}
                    {tab(Drawer::Note, "Note", |s| s.picked_note.with(Option::is_some))}
                    <button class="close" data-testid="drawer-close" aria-label="Close the details" title="Close (Escape)"
                        on:click=move |_| s.drawer.set(None)>"×"</button>
                </div>
                <div class="drawer-body">
                    {move || match s.drawer.get() {
                        Some(Drawer::Kernel) => kernel(s).into_any(),
                        Some(Drawer::Range) => range(s).into_any(),
                        Some(Drawer::Note) => note(s).into_any(),
                        None => ().into_any(),
                    }}
                </div>
            </aside>
        </Show>
    }
}

/// The picked kernel: its details, or why there are none.
fn kernel(s: AppState) -> impl IntoView {
    let copy = move |_| {
        let made = s.details.with_untracked(|d| {
            d.clone().map(|(details, fields)| {
                self_contained_kernel_link(SharedKernel { details, fields }, s.shared_diagnosis())
            })
        });
        s.show_link(made);
    };
    move || {
        s.selected.get().map(|_| {
            view! {
                <section class="details-panel" data-testid="details">
                    <h2>"Picked kernel"</h2>
                    <button
                        data-testid="copy-kernel-link"
                        hidden=s.is_bundle
                        disabled=move || s.details.with(Option::is_none)
                        title="A link that carries this kernel's details itself: it opens with no files."
                        on:click=copy
                    >
                        "Copy self-contained link (this kernel)"
                    </button>
                    {move || match s.details.get() {
                        Some((d, fields)) => details_view(&d, &fields).into_any(),
                        None if s.no_details.get() => view! {
                            <p class="hint" data-testid="no-details">
                                "No details for this kernel: its process has no log loaded (or no global rank), so nothing ties it to a log line. Drop the process's NCCL log to see its operation."
                            </p>
                        }
                        .into_any(),
                        None => view! { <p class="hint">"Looking it up…"</p> }.into_any(),
                    }}
                </section>
            }
        })
    }
}

/// The aggregate of the visible window or of the selected range.
fn range(s: AppState) -> impl IntoView {
    let copy = move |_| {
        let made = s.window_summary.with_untracked(|w| {
            w.as_ref()
                .map(|w| self_contained_link(w, s.shared_diagnosis()))
        });
        s.show_link(made);
    };
    view! {
        <section class="window-panel" id="panel-window">
            <h2>"Range aggregate"</h2>
            <button
                data-testid="copy-summary-link"
                hidden=s.is_bundle
                disabled=move || s.window_summary.with(Option::is_none)
                title="A link that carries this aggregate itself: it opens with no files."
                on:click=copy
            >
                "Copy self-contained link (this aggregate)"
            </button>
            {move || match s.window_summary.get() {
                Some(w) => view! {
                    <div data-testid="window-aggregate">
                        {scoped_view(&w, Some((s.window_scope.get(), s.timeline.with_untracked(|t| t.start_ns))))}
                    </div>
                }
                .into_any(),
                None => view! { <p class="hint">"Aggregating…"</p> }.into_any(),
            }}
        </section>
    }
}

/// A note picked in a file's notes, whole.
fn note(s: AppState) -> impl IntoView {
    move || {
        s.picked_note.get().map(|(file, i, r)| {
            let place = if r.line > 0 {
                format!("{file}:{}", r.line)
            } else {
                file
            };
            view! {
                <section class="note-picked" data-testid="note-picked" data-index=i.to_string()>
                    <h2>"Note"</h2>
                    <b>{place}</b>
                    " "{r.reason_shown()}
                    <pre>{r.text_shown()}</pre>
                </section>
            }
        })
    }
}
