//! The Inputs view: every file dropped, with its kind, version, what it holds, its notes per
//! reason (a link to the Notes view) and its status while it loads. Only the rows in the list's
//! scroll box are in the document (a drop of hundreds of files adds a few dozen rows), and a row
//! is drawn again only when its own progress, stage or report changes.

use leptos::prelude::*;
use ncclscope_app::protocol::format::human_bytes;

use crate::page::app::state::app_state;
use crate::page::app::state::Row;
use crate::page::panels::notes::{NoteSummary, NotesState};
use crate::page::shell::status::percent_read as percent;

#[component]
pub fn Inputs() -> impl IntoView {
    let s = app_state();
    view! {
        <div class="view-page inputs" data-testid="inputs">
            <h2>"Inputs"</h2>
            <p class="hint">"Every file dropped: what it is, what it holds and what the reader noted about it. Files are recognised by their contents, not their names."</p>
            <FileList rows=s.rows.into() notes=s.notes />
        </div>
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
                        title="List this file's notes (every skipped line with its reason and text) in the Notes view"
                        on:click=move |_| {
                            notes.show(id, None, note_count);
                            crate::page::views::registry::open(&app_state(), "notes");
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
