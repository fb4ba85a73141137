//! What every table of the page shares: headers that sort on a click, Enter or Space (again: the
//! other way; `aria-sort` says which), and the "CSV" button that saves the rows as shown. The
//! rows themselves are each table's own: the sort works on one [`Cell`] per column, built from
//! the same data the row draws.

use leptos::prelude::*;
use ncclscope_app::panel_data::{csv, sort_order, Cell};

use crate::client;

/// The column a table is sorted by and whether ascending; `None`: the data's own order.
pub type Sort = RwSignal<Option<(usize, bool)>>;

/// Saves `text` as a file through a blob URL.
pub fn save_text(file_name: &str, mime: &str, text: &str) {
    let bytes = js_sys::Uint8Array::from(text.as_bytes());
    if let Err(e) = client::download(file_name, mime, &bytes.buffer()) {
        web_sys::console::error_1(&e);
    }
}

/// Row indices in the order `sort` asks for.
pub fn order(rows: &[Vec<Cell>], sort: Option<(usize, bool)>) -> Vec<usize> {
    match sort {
        Some((c, asc)) => sort_order(rows, c, asc),
        None => (0..rows.len()).collect(),
    }
}

/// `rows` as CSV text, in the order `sort` asks for (what the user sees).
pub fn csv_of(headers: &[String], rows: &[Vec<Cell>], sort: Option<(usize, bool)>) -> String {
    let text: Vec<Vec<String>> = order(rows, sort)
        .into_iter()
        .map(|r| rows[r].iter().map(|c| c.text.clone()).collect())
        .collect();
    csv(headers, &text)
}

fn toggle(sort: Sort, i: usize) {
    sort.update(|s| {
        *s = Some(match *s {
            Some((c, asc)) if c == i => (i, !asc),
            _ => (i, true),
        })
    });
}

/// The header row: each header is focusable and sorts on a click, Enter or Space. The arrow
/// has its room kept, so sorting never moves the columns.
pub fn sort_headers(headers: &[String], sort: Sort) -> impl IntoView {
    let cells = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let mark = move || match sort.get() {
                Some((c, true)) if c == i => "▲",
                Some((c, false)) if c == i => "▼",
                _ => "",
            };
            let aria = move || match sort.get() {
                Some((c, true)) if c == i => "ascending",
                Some((c, false)) if c == i => "descending",
                _ => "none",
            };
            view! {
                <th class="sortable" data-col=i tabindex="0" aria-sort=aria
                    title="Sort by this column (again: the other way)"
                    on:click=move |_| toggle(sort, i)
                    on:keydown=move |e: web_sys::KeyboardEvent| {
                        if e.key() == "Enter" || e.key() == " " {
                            // Space would otherwise scroll the page.
                            e.prevent_default();
                            toggle(sort, i);
                        }
                    }>
                    {h.clone()}<span class="sort-mark" aria-hidden="true">{mark}</span>
                </th>
            }
        })
        .collect_view();
    view! { <tr>{cells}</tr> }
}

/// The "CSV" button of table `test_id`: `text` is called on a click for the file's contents.
#[component]
pub fn CsvButton(
    #[prop(into)] test_id: String,
    text: impl Fn() -> String + 'static,
) -> impl IntoView {
    let file = format!("ncclscope-{test_id}.csv");
    view! {
        <button class="export-button" data-testid=format!("{test_id}-csv")
            title="Save this table, as sorted, as a CSV file"
            on:click=move |_| save_text(&file, "text/csv", &text())>
            "CSV"
        </button>
    }
}
