//! How files reach the worker: dropped anywhere on the page (files or folders), chosen with the
//! header's inputs, the built-in demo, or a link's `src=` URLs once the user agrees. Files that
//! would not fit in the worker's memory wait for the user's choice ([`offer`]). The first files
//! open the Overview.

use leptos::ev;
use leptos::prelude::*;
use leptos::task::spawn_local;
use ncclscope_app::page_logic::budget::{estimate, fits, FileEstimate};
use ncclscope_app::page_logic::files::{demo_file, demo_manifest, fetch_blob};
use ncclscope_app::protocol::messages::{LoadItem, LoadRequest};
use web_sys::{Blob, File, FileList};

use crate::page::app::state::{AppState, Row};
use crate::page::budget_dialog::Pending;
use crate::page::client;
use crate::page::folders::with_sizes;
use crate::page::sharing::share::LinkState;
use crate::page::url::{memory_limit, page_options};
use crate::page::views::registry;

/// Hands `items` (name, contents, size) to the worker, each with a row in the file list.
pub fn load_all(s: AppState, items: Vec<(String, Blob, u64)>) {
    let first = s.rows.with_untracked(Vec::len);
    if first == 0 && !s.link.with_untracked(LinkState::waiting) {
        // A run's first files: its overview (a link's files open the link's view instead).
        registry::open(&s, "overview");
    }
    s.rows.update(|r| {
        r.extend(
            items
                .iter()
                .map(|(name, _, size)| Row::new(name.clone(), *size)),
        )
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
}

/// Loads `items`, or, when they would not fit in the worker's memory, asks the user first.
pub fn offer(s: AppState, items: Vec<(String, Blob)>) {
    spawn_local(async move {
        let items = with_sizes(items).await;
        let estimates: Vec<FileEstimate> = items
            .iter()
            .map(|(name, _, size)| estimate(name, *size))
            .collect();
        let needs: u64 = estimates.iter().map(|e| e.needs).sum();
        let in_use = s.worker_memory.get_untracked().unwrap_or(0.0) as u64;
        if fits(needs, in_use, memory_limit()) {
            load_all(s, items);
            return;
        }
        s.over_budget.set(Some(
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
    })
}

/// Files chosen with a file input.
pub fn on_files(s: AppState, list: Option<FileList>) {
    let Some(list) = list else { return };
    let items: Vec<(String, Blob)> = (0..list.length())
        .filter_map(|i| list.get(i))
        .map(|f: File| (f.name(), f.into()))
        .collect();
    if !items.is_empty() {
        offer(s, items);
    }
}

/// The whole window is the drop zone; a link pasted into the tab is read again.
pub fn listen(s: AppState) {
    let _ = window_event_listener(ev::dragover, move |e| {
        e.prevent_default();
        s.dragging.set(true);
    });
    let _ = window_event_listener(ev::dragleave, move |_| s.dragging.set(false));
    let _ = window_event_listener(ev::drop, move |e| {
        e.prevent_default();
        s.dragging.set(false);
        if s.is_bundle {
            return;
        }
        let Some(dt) = e.data_transfer() else { return };
        // Folders are read through their entries (taken now: the drop's data empties after).
        match crate::page::folders::dropped_folders(&dt) {
            Some(entries) => spawn_local(async move {
                match crate::page::folders::files_of_entries(entries).await {
                    Ok(items) if !items.is_empty() => offer(s, items),
                    Ok(_) => {}
                    Err(e) => s.rows.update(|r| {
                        r.push(Row::failed(
                            "dropped folder".into(),
                            format!("could not read the folder: {e}"),
                        ))
                    }),
                }
            }),
            None => on_files(s, dt.files()),
        }
    });
    // A link pasted into this tab changes only the fragment: read it again, and check it
    // against the files already loaded.
    let _ = window_event_listener(ev::hashchange, move |_| {
        let state = LinkState::from_location();
        let check = state.waiting() && s.rows.with_untracked(|r| !r.is_empty());
        s.link.set(state);
        if check {
            s.ask_fingerprints();
        }
    });
}

/// A link's `src=` URLs, after the user said yes: fetched here (the page's policy admits exactly
/// their origins), then loaded like dropped files. A URL that fails gets a row.
pub fn load_sources(s: AppState, urls: Vec<String>) {
    spawn_local(async move {
        let mut items = Vec::new();
        for url in urls {
            match fetch_blob(&url).await {
                Ok(blob) => items.push((crate::page::sharing::share::name_of_source(&url), blob)),
                Err(e) => s.rows.update(|r| {
                    r.push(Row::failed(
                        url.clone(),
                        format!("could not fetch {url}: {e} (the host must allow this page's origin by CORS)"),
                    ))
                }),
            }
        }
        if !items.is_empty() {
            offer(s, items);
        }
    });
}

/// The built-in demo run: only the fetch of its files runs here; the worker reads them. Its
/// manifest names its deliberate imperfections, which the overview labels as such.
pub fn load_demo(s: AppState) {
    spawn_local(async move {
        match demo_blobs().await {
            Ok((items, deliberate)) => {
                s.demo.set(Some(deliberate));
                load_all(s, with_sizes(items).await)
            }
            Err(e) => s.rows.update(|r| r.push(Row::failed("demo run".into(), e))),
        }
    });
}

/// The demo run's files, listed in `demo/MANIFEST`, and its deliberate imperfections.
async fn demo_blobs() -> Result<(Vec<(String, Blob)>, Vec<String>), String> {
    let manifest = demo_manifest().await?;
    let mut items = Vec::new();
    for name in manifest.files {
        let blob = demo_file(&name).await?;
        items.push((name, blob));
    }
    Ok((items, manifest.deliberate))
}
