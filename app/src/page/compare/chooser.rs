//! How the other run's files reach the comparison: the header's "Compare with…" menu (its files
//! or a folder) and the Compare view's drop zone and inputs. A drop on the zone is the other
//! run's; anywhere else on the page it adds to the loaded run.

use leptos::prelude::*;
use leptos::task::spawn_local;
use web_sys::FileList;

use crate::page::app::state::{app_state, AppState};
use crate::page::compare::start;

fn files(s: AppState, list: Option<FileList>) {
    let Some(list) = list else { return };
    let items = (0..list.length())
        .filter_map(|i| list.get(i))
        .map(|f| (f.name(), f.into()))
        .collect();
    start(s, items);
}

fn folder(s: AppState, list: Option<FileList>) {
    if let Some(list) = list {
        start(s, crate::page::folders::files_of_list(&list));
    }
}

/// The two inputs: the other run's files, or its folder.
#[component]
pub fn CompareInputs() -> impl IntoView {
    let s = app_state();
    let folder_input = NodeRef::<leptos::html::Input>::new();
    Effect::new(move |_| {
        if let Some(el) = folder_input.get() {
            let _ = el.set_attribute("webkitdirectory", "");
        }
    });
    view! {
        <label class="button" title="The other run's NCCL logs and exports">
            "Its files…"
            <input type="file" multiple data-testid="compare-files"
                on:change=move |e| files(s, event_target::<web_sys::HtmlInputElement>(&e).files()) />
        </label>
        <label class="button" title="Every file of the other run's folder">
            "Its folder…"
            <input type="file" node_ref=folder_input data-testid="compare-folder"
                on:change=move |e| folder(s, event_target::<web_sys::HtmlInputElement>(&e).files()) />
        </label>
    }
}

/// The header's "Compare with…": enabled once a run is analysed.
#[component]
pub fn CompareMenu() -> impl IntoView {
    let s = app_state();
    let open = RwSignal::new(false);
    let analysed = move || s.analysis_ms.with(Option::is_some);
    view! {
        <div class="menu" on:keydown=move |e: web_sys::KeyboardEvent| {
            if e.key() == "Escape" {
                open.set(false);
            }
        }>
            <button data-testid="compare-menu" aria-haspopup="true"
                aria-expanded=move || open.get().to_string()
                disabled=move || !analysed()
                title="Compare the loaded run (the baseline) with another run: what changed, ranked by impact"
                on:click=move |_| open.update(|o| *o = !*o)>
                "Compare with… ▾"
            </button>
            <Show when=move || open.get()>
                <ul class="menu-list" on:change=move |_| open.set(false)>
                    <li><CompareInputs /></li>
                    <li class="hint">"Or drop them on the Compare view's zone."</li>
                </ul>
            </Show>
        </div>
    }
}

/// The Compare view's drop zone: what is dropped here is the other run.
#[component]
pub fn DropZone() -> impl IntoView {
    let s = app_state();
    let over = RwSignal::new(false);
    view! {
        <div class="compare-drop" class:over=move || over.get() data-testid="compare-drop"
            on:dragover=move |e: web_sys::DragEvent| {
                e.prevent_default();
                over.set(true);
            }
            on:dragleave=move |_| over.set(false)
            on:drop=move |e: web_sys::DragEvent| {
                // The page's own drop (the loaded run's) must not see it.
                e.prevent_default();
                e.stop_propagation();
                over.set(false);
                s.dragging.set(false);
                let Some(dt) = e.data_transfer() else { return };
                match crate::page::folders::dropped_folders(&dt) {
                    Some(entries) => spawn_local(async move {
                        if let Ok(items) = crate::page::folders::files_of_entries(entries).await {
                            start(s, items);
                        }
                    }),
                    None => files(s, dt.files()),
                }
            }>
            "Drop the other run's files or folder here"
            <div class="actions"><CompareInputs /></div>
        </div>
    }
}
