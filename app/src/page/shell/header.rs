//! The header: the name, and the actions: open files or a folder, the demo, copy a link to the
//! view, export (the Chrome trace, the kernels as CSV, a bundle), compare with another run, the
//! theme. A bundle keeps the theme only: it has no files to read, no worker to ask and no assets
//! to bundle again.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::page::app::intake::{load_demo, offer, on_files};
use crate::page::app::state::app_state;
use crate::page::client;
use crate::page::sharing::share::LinkState;

#[component]
pub fn Header() -> impl IntoView {
    let s = app_state();
    // A folder chooser: `webkitdirectory` is not a typed attribute, so it is set once mounted.
    let folder_input = NodeRef::<leptos::html::Input>::new();
    Effect::new(move |_| {
        if let Some(el) = folder_input.get() {
            let _ = el.set_attribute("webkitdirectory", "");
        }
    });
    let intake = (!s.is_bundle).then(|| {
        view! {
            <label class="button" title="Open NCCL logs, Nsight Systems exports (.sqlite) or aggregates (.agg); or drop them anywhere on the page">
                "Open files…"
                <input
                    type="file"
                    multiple
                    data-testid="file-input"
                    on:change=move |e| {
                        let input: web_sys::HtmlInputElement = event_target(&e);
                        on_files(s, input.files());
                    }
                />
            </label>
            <label class="button" title="Open every file of a folder (named by its path in it)">
                "Open folder…"
                <input
                    type="file"
                    node_ref=folder_input
                    data-testid="folder-input"
                    on:change=move |e| {
                        let input: web_sys::HtmlInputElement = event_target(&e);
                        if let Some(list) = input.files() {
                            let items = crate::page::folders::files_of_list(&list);
                            if !items.is_empty() {
                                offer(s, items);
                            }
                        }
                    }
                />
            </label>
            <button data-testid="load-demo" title="A synthetic run of 8 ranks on 2 nodes, made by the project's generator"
                on:click=move |_| load_demo(s)>
                "Load demo run"
            </button>
        }
    });
    let analysed = move || s.analysis_ms.with(Option::is_some) || s.overview.with(Option::is_some);
    let sharing = (!s.is_bundle).then(|| {
        view! {
            <button
                data-testid="copy-link"
                disabled=move || !analysed()
                title="A link to this view: the view, the time window, the filter, the picked kernel, the theory form and the files' SHA-256 fingerprints. It holds no data; the recipient drops the same files."
                on:click=move |_| {
                    s.link.set(LinkState::None);
                    s.ask_fingerprints();
                }
            >
                "Copy link"
            </button>
            <ExportMenu enabled=Signal::derive(analysed) />
            <crate::page::compare::chooser::CompareMenu />
        }
    });
    view! {
        <header class="app-header">
            <h1>"ncclscope"</h1>
            <span class="tagline">"NCCL logs + Nsight Systems kernels, fused, in your browser"</span>
            <div class="actions">
                {intake}
                {sharing}
                <crate::page::theme::ThemeToggle />
            </div>
        </header>
    }
}

/// "Export": a menu of the Chrome trace, the kernels as CSV and a bundle of the page.
#[component]
fn ExportMenu(enabled: Signal<bool>) -> impl IntoView {
    let s = app_state();
    let open = RwSignal::new(false);
    let choose = move |what: &'static str| {
        open.set(false);
        match what {
            "bundle" => export_bundle(),
            kind => s.ask_export(kind),
        }
    };
    view! {
        <div class="menu" on:keydown=move |e: web_sys::KeyboardEvent| {
            if e.key() == "Escape" {
                open.set(false);
            }
        }>
            <button
                data-testid="export-menu"
                aria-haspopup="true"
                aria-expanded=move || open.get().to_string()
                disabled=move || !enabled.get()
                title="Save the analysis: for Perfetto, for a spreadsheet, or as one HTML file that opens anywhere"
                on:click=move |_| open.update(|o| *o = !*o)
            >
                "Export ▾"
            </button>
            <Show when=move || open.get()>
                <ul class="menu-list">
                    <li><button data-testid="download-trace" on:click=move |_| choose("chrome-trace")>
                        "Chrome trace (opens in Perfetto, chrome://tracing)"
                    </button></li>
                    <li><button data-testid="download-csv" on:click=move |_| choose("csv")>
                        "Kernels as CSV (every enriched field)"
                    </button></li>
                    <li><button data-testid="export-bundle"
                        title="One HTML file with the viewer and this analysis inside: it opens anywhere, with no files and no network."
                        on:click=move |_| choose("bundle")>
                        "Bundle (one HTML file)"
                    </button></li>
                    <li class="hint">"Saved from this tab; nothing is uploaded."</li>
                </ul>
            </Show>
        </div>
    }
}

/// Builds the bundle and saves it (or says why it could not).
fn export_bundle() {
    let s = app_state();
    let files: Vec<(String, u64)> = s
        .rows
        .with_untracked(|r| r.iter().map(|r| (r.name.clone(), r.size)).collect());
    // A comparison shown: the other run's worker's messages go in too.
    let c = s.compare;
    let other = c.diff.with_untracked(Option::is_some).then(|| {
        crate::page::sharing::bundle::OtherRun::new(
            c.label.get_untracked(),
            c.rows
                .with_untracked(|r| r.iter().map(|r| (r.name.clone(), r.size)).collect()),
            c.loaded_is_base.get_untracked(),
            crate::page::compare::worker::recording(),
        )
    });
    spawn_local(async move {
        match crate::page::sharing::bundle::build(files, client::recording(), other).await {
            Ok(html) => {
                s.bundle_error.set(None);
                let bytes = js_sys::Uint8Array::from(html.as_bytes());
                if let Err(e) =
                    client::download("ncclscope-bundle.html", "text/html", &bytes.buffer())
                {
                    s.bundle_error
                        .set(Some(ncclscope_app::page_logic::files::js_msg(e)));
                }
            }
            Err(e) => s.bundle_error.set(Some(e)),
        }
    });
}
