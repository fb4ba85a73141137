//! The page: a drop zone that covers the whole window, the file list, and the timeline.

use leptos::ev;
use leptos::prelude::*;
use leptos::task::spawn_local;
use pipeline::{FileReport, ProcessSummary, Session, Timeline};
use std::cell::RefCell;
use std::rc::Rc;
use web_sys::{Blob, File, FileList};

use crate::communicators::{CommPanel, Communicators};
use crate::files::fetch_blob;
use crate::load::load_blob;
use crate::ranks::RankTable;
use crate::timeline_canvas::TimelineCanvas;

/// Lists the files of the built-in demo run, served with the page (`www/demo/`), one per line.
const DEMO_MANIFEST: &str = "demo/MANIFEST";

thread_local! {
    /// Everything loaded so far. Lives outside the reactive graph: views read the small
    /// summaries published to signals, never the records themselves.
    static SESSION: Rc<RefCell<Session>> = Rc::new(RefCell::new(Session::default()));
}

fn session() -> Rc<RefCell<Session>> {
    SESSION.with(Rc::clone)
}

/// `?digest` in the page's URL asks for each input's records digest (for engine comparisons).
fn digests_wanted() -> bool {
    web_sys::window()
        .and_then(|w| w.location().search().ok())
        .is_some_and(|q| {
            q.trim_start_matches('?')
                .split('&')
                .any(|kv| kv == "digest")
        })
}

/// A file in the list: its report once loaded, and bytes read so far while loading.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    name: String,
    size: u64,
    read: u64,
    report: Option<FileReport>,
}

#[component]
pub fn App() -> impl IntoView {
    let rows = RwSignal::new(Vec::<Row>::new());
    let timeline = RwSignal::new(Timeline::default());
    let ranks = RwSignal::new(Vec::<ProcessSummary>::new());
    let comms = RwSignal::new(CommPanel::default());
    let dragging = RwSignal::new(false);
    session().borrow_mut().digests = digests_wanted();

    let load_all = move |items: Vec<(String, Blob)>| {
        spawn_local(async move {
            let first = rows.with_untracked(Vec::len);
            rows.update(|r| {
                r.extend(items.iter().map(|(name, blob)| Row {
                    name: name.clone(),
                    size: blob.size() as u64,
                    read: 0,
                    report: None,
                }))
            });
            let session = session();
            for (i, (name, blob)) in items.iter().enumerate() {
                let at = first + i;
                let report = load_blob(&session, name, blob, |read| {
                    rows.update(|r| r[at].read = read);
                })
                .await;
                rows.update(|r| {
                    r[at].read = r[at].size;
                    r[at].report = Some(report);
                });
            }
            let s = session.borrow();
            // Adding files re-runs the analysis over everything loaded so far.
            let analysis = pipeline::analyse(&s, &pipeline::UserSizes::default());
            timeline.set(s.timeline(&analysis.processes, &analysis.clocks));
            comms.set(CommPanel::from_analysis(&analysis));
            ranks.set(analysis.processes);
        });
    };

    let on_files = move |list: Option<FileList>| {
        let Some(list) = list else { return };
        let items: Vec<(String, Blob)> = (0..list.length())
            .filter_map(|i| list.get(i))
            .map(|f: File| (f.name(), f.into()))
            .collect();
        if !items.is_empty() {
            load_all(items);
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
        on_files(e.data_transfer().and_then(|d| d.files()));
    });

    let load_demo = move |_| {
        spawn_local(async move {
            match demo_blobs().await {
                Ok(items) => load_all(items),
                Err(e) => rows.update(|r| {
                    r.push(Row {
                        name: "demo run".into(),
                        size: 0,
                        read: 0,
                        report: Some(FileReport::failed(
                            "demo run",
                            pipeline::InputKind::Unknown,
                            0,
                            e,
                        )),
                    })
                }),
            }
        });
    };

    view! {
        <div class="page" class:dragging=move || dragging.get()>
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
                    <button data-testid="load-demo" on:click=load_demo>"Load demo run"</button>
                </div>
            </header>
            <Show when=move || rows.with(Vec::is_empty)>
                <EmptyState />
            </Show>
            <Show when=move || !rows.with(Vec::is_empty)>
                <FileList rows=rows.into() />
                <TimelineCanvas timeline=timeline.into() />
                <RankTable ranks=ranks.into() />
                <Communicators panel=comms.into() />
            </Show>
            <p class="privacy">"Files are read in this tab only; nothing is uploaded."</p>
        </div>
    }
}

/// What to drop, and how to produce it.
#[component]
fn EmptyState() -> impl IntoView {
    view! {
        <section class="empty" data-testid="empty-state">
            <h2>"Drop NCCL logs and Nsight Systems exports anywhere on this page"</h2>
            <ul>
                <li>
                    "NCCL debug logs: run with "
                    <code>"NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL,INIT,GRAPH NCCL_DEBUG_FILE=nccl_%h_%p.log"</code>
                    " (optionally "<code>"NCCL_DEBUG_TIMESTAMP_FORMAT=\"%s.%6f\""</code>")."
                </li>
                <li>
                    "Nsight Systems: "<code>"nsys profile --trace=cuda,nvtx …"</code>" then "
                    <code>"nsys export --type sqlite report.nsys-rep"</code>"."
                </li>
                <li>"Or press “Load demo run” to see a synthetic multi-rank run."</li>
            </ul>
        </section>
    }
}

#[component]
fn FileList(rows: Signal<Vec<Row>>) -> impl IntoView {
    view! {
        <table class="files" data-testid="file-list">
            <thead>
                <tr><th>"file"</th><th>"kind"</th><th>"size"</th><th>"version"</th><th>"contents"</th><th>"status"</th></tr>
            </thead>
            <tbody>
                <For
                    each=move || rows.get().into_iter().enumerate()
                    // A row re-renders when its progress or its report changes.
                    key=|(i, r)| (*i, r.read, r.report.is_some())
                    let:item
                >
                    <FileRow row=item.1 />
                </For>
            </tbody>
        </table>
    }
}

#[component]
fn FileRow(row: Row) -> impl IntoView {
    let kind = row.report.as_ref().map(|r| r.kind.label()).unwrap_or("…");
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
        None => format!(
            "reading {} / {}",
            human_bytes(row.read),
            human_bytes(row.size)
        ),
        Some(r) => match &r.error {
            Some(e) => format!("error: {e}"),
            None if r.diagnostics.is_empty() => "loaded".to_string(),
            None => format!("loaded, {} notes", r.diagnostics.len()),
        },
    };
    let failed = row.report.as_ref().is_some_and(|r| r.error.is_some());
    let digest = row.report.as_ref().and_then(|r| r.digest.clone());
    let diagnostics = row
        .report
        .as_ref()
        .map(|r| r.diagnostics.clone())
        .unwrap_or_default();
    // Every string here comes from the user's file: Leptos sets it as text, never as markup.
    view! {
        <tr data-testid="file-row" data-file=row.name.clone() class:failed=failed>
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
                <Show when={
                    let empty = diagnostics.is_empty();
                    move || !empty
                }>
                    <details class="diagnostics">
                        <summary>"skipped lines and warnings"</summary>
                        <ul>
                            {diagnostics
                                .iter()
                                .take(200)
                                .map(|d| view! { <li>{d.to_string()}</li> })
                                .collect_view()}
                        </ul>
                    </details>
                </Show>
            </td>
            <td data-testid="status">
                {status}
                {digest.map(|d| view! { <code class="digest" data-testid="digest">{d}</code> })}
            </td>
        </tr>
    }
}

/// A byte count for people: `1.50 MB` (decimal units, as NCCL's tools print them).
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1000.0 && unit < UNITS.len() - 1 {
        v /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.2} {}", UNITS[unit])
    }
}

/// The demo run's files, listed one per line in `demo/MANIFEST`.
async fn demo_blobs() -> Result<Vec<(String, Blob)>, String> {
    let manifest = fetch_blob(DEMO_MANIFEST).await?;
    let text = wasm_bindgen_futures::JsFuture::from(manifest.text())
        .await
        .map_err(crate::files::js_msg)?
        .as_string()
        .unwrap_or_default();
    let mut items = Vec::new();
    for name in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let blob = fetch_blob(&format!("demo/{name}")).await?;
        items.push((name.to_string(), blob));
    }
    Ok(items)
}
