//! What every table of the page shares: headers that sort on a click, Enter or Space (again: the
//! other way; `aria-sort` says which), a filter box for long tables, the "CSV" button that saves
//! the rows as shown, and the rows themselves rendered only where the table's scroll box shows
//! them ([`VirtualTable`]: a table of thousands of rows keeps a few dozen in the document, so
//! neither its arrival nor a scroll is a long task). Each table draws its own rows; sorting and
//! filtering work on one [`Cell`] per column, built from the same data the row draws.

use leptos::html::Div;
use leptos::prelude::*;
use ncclscope_app::page_logic::table_window::{
    display_order, padding, window, DEFAULT_ROW_PX, DEFAULT_VIEW_PX, FILTER_MIN_ROWS,
};
use ncclscope_app::protocol::panels::{csv as csv_text_of, Cell};
use wasm_bindgen::JsCast;

use crate::page::client;

/// The column a table is sorted by and whether ascending; `None`: the data's own order.
pub type Sort = RwSignal<Option<(usize, bool)>>;

/// Saves `text` as a file through a blob URL.
pub fn save_text(file_name: &str, mime: &str, text: &str) {
    let bytes = js_sys::Uint8Array::from(text.as_bytes());
    if let Err(e) = client::download(file_name, mime, &bytes.buffer()) {
        web_sys::console::error_1(&e);
    }
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
            title="Save this table, as sorted and filtered, as a CSV file"
            on:click=move |_| save_text(&file, "text/csv", &text())>
            "CSV"
        </button>
    }
}

/// Where a table's scroll box was last seen: how far its rows are scrolled and how much of
/// them it shows (CSS pixels), and how high its rows are: on average (the padding's estimate)
/// and at least. Read from the box only in its scroll events, when the layout is fresh, so a
/// table never forces a layout of its own; the heights are measured once per set of rows.
#[derive(Clone, Copy, PartialEq)]
struct Seen {
    scroll_px: f64,
    view_px: f64,
    row_px: f64,
    min_px: f64,
}

/// A table of `keys.len()` rows (one [`Cell`] per column each: sort keys, filter text and CSV
/// fields) of which only those in its scroll box and a margin are in the document; `row(i)`
/// draws data row `i` (a `<tr>`). Padding above and below the table stands in for the rest, so
/// the scroll bar is that of the whole table. Rows stay in place while they remain in the
/// window (a focused control in them keeps its focus), and a new `keys` redraws every row.
/// `sortable`: headers that sort; `csv`: the CSV button; `class`: of the wrapper.
///
/// (About 170 lines kept whole: the sort order, the filter, the scroll window and the rows in the
/// document are signals of one reactive scope that each closure of the markup reads; split, the
/// halves would pass most of them to each other, and the markup is half of the length.)
#[component]
pub fn VirtualTable<F, V>(
    #[prop(into)] test_id: String,
    headers: Vec<String>,
    #[prop(into)] keys: Signal<Vec<Vec<Cell>>>,
    row: F,
    #[prop(default = true)] sortable: bool,
    #[prop(default = true)] csv: bool,
    #[prop(optional, into)] class: String,
) -> impl IntoView
where
    F: Fn(usize) -> V + Clone + Send + Sync + 'static,
    V: IntoView + 'static,
{
    let sort: Sort = RwSignal::new(None);
    let query = RwSignal::new(String::new());
    let order = Memo::new(move |_| keys.with(|k| display_order(k, sort.get(), &query.get())));
    let scroller = NodeRef::<Div>::new();
    let seen = RwSignal::new(Seen {
        scroll_px: 0.0,
        view_px: DEFAULT_VIEW_PX,
        row_px: DEFAULT_ROW_PX,
        min_px: DEFAULT_ROW_PX,
    });
    let range = Memo::new(move |prev: Option<&(usize, usize)>| {
        let s = seen.get();
        window(
            prev.copied(),
            order.with(Vec::len),
            s.scroll_px,
            s.view_px,
            s.row_px,
            s.min_px,
        )
    });
    // The rows' heights were measured for this set of rows (`epoch`).
    let measured = StoredValue::new(None::<u64>);
    // A new set of rows: every rendered row is drawn again (same indices, new data).
    let epoch = Memo::new(move |last: Option<&u64>| {
        keys.with(|_| ());
        last.map_or(0, |e| e + 1)
    });
    let on_scroll = move |_| {
        let Some(el) = scroller.get_untracked() else {
            return;
        };
        let part = |sel: &str| {
            el.query_selector(sel)
                .ok()
                .flatten()
                .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
        };
        let head = part("thead").map_or(0.0, |h| f64::from(h.offset_height()));
        let mut now = seen.get_untracked();
        let e = epoch.get_untracked();
        let first_measure = measured.get_value().is_none();
        if measured.get_value() != Some(e) {
            let rows = part("tbody").map(|b| b.children()).map_or(Vec::new(), |c| {
                (0..c.length())
                    .filter_map(|i| c.item(i))
                    .filter_map(|r| r.dyn_into::<web_sys::HtmlElement>().ok())
                    .map(|r| f64::from(r.offset_height()))
                    .filter(|h| *h > 0.0)
                    .collect()
            });
            if !rows.is_empty() {
                now.row_px = rows.iter().sum::<f64>() / rows.len() as f64;
                now.min_px = rows.iter().copied().fold(f64::INFINITY, f64::min);
                measured.set_value(Some(e));
            }
        }
        now.scroll_px = f64::from(el.scroll_top()) - head;
        let estimated = seen.get_untracked().row_px;
        if first_measure && now.row_px != estimated && now.scroll_px > 0.0 {
            // The padding was laid out with the default estimate: keep the row the box was
            // scrolled to (its share of the whole) in view once the padding takes the measured
            // height. Only then: later sets of rows (a file's progress, a filter) are measured
            // as the user scrolls them, and moving the box under a scroll would fight it.
            now.scroll_px *= now.row_px / estimated;
            el.set_scroll_top((now.scroll_px + head).round() as i32);
        }
        now.view_px = f64::from(el.client_height());
        if now != seen.get_untracked() {
            seen.set(now);
        }
    };
    let on_filter = move |e: web_sys::Event| {
        query.set(event_target_value(&e));
        // A new filter starts at its first row.
        if let Some(el) = scroller.get_untracked() {
            el.set_scroll_top(0);
        }
        seen.update(|s| s.scroll_px = 0.0);
    };
    let pads = move || {
        let n = order.with(Vec::len);
        padding(n, range.get(), seen.with(|s| s.row_px))
    };
    let total = move || keys.with(Vec::len);
    let shown = move || order.with(Vec::len);
    let headers = StoredValue::new(headers);
    let head = if sortable {
        headers.with_value(|h| sort_headers(h, sort)).into_any()
    } else {
        let cells = headers.with_value(|h| {
            h.iter()
                .map(|h| view! { <th>{h.clone()}</th> })
                .collect_view()
        });
        view! { <tr>{cells}</tr> }.into_any()
    };
    let csv_text = move || {
        headers.with_value(|h| {
            keys.with_untracked(|k| {
                let rows: Vec<Vec<String>> = order
                    .get_untracked()
                    .into_iter()
                    .filter_map(|i| k.get(i))
                    .map(|r| r.iter().map(|c| c.text.clone()).collect())
                    .collect();
                csv_text_of(h, &rows)
            })
        })
    };
    let csv_id = test_id.clone();
    let filter_id = format!("{test_id}-filter");
    let shown_id = format!("{test_id}-shown");
    let label = format!("Rows of {test_id}: scroll for more");
    view! {
        <div class=format!("data-table {class}")>
            {csv.then(|| view! { <CsvButton test_id=csv_id.clone() text=csv_text /> })}
            <Show when=move || { total() > FILTER_MIN_ROWS }>
                <input type="search" class="table-filter" data-testid=filter_id.clone()
                    placeholder="Filter rows" aria-label="Show only the rows containing these words"
                    prop:value=move || query.get() on:input=on_filter />
                <span class="hint table-count" data-testid=shown_id.clone()>
                    {move || if shown() == total() {
                        format!("{} rows", total())
                    } else {
                        format!("{} of {} rows", shown(), total())
                    }}
                </span>
            </Show>
            <div class="table-scroll" node_ref=scroller on:scroll=on_scroll
                tabindex=move || (shown() > FILTER_MIN_ROWS).then_some("0")
                role="region" aria-label=label>
                <div class="table-pad" style:height=move || format!("{}px", pads().0)></div>
                <table class="files" data-testid=test_id aria-rowcount=move || shown() + 1>
                    <thead>{head}</thead>
                    <tbody>
                        <For
                            each=move || {
                                let e = epoch.get();
                                let (a, b) = range.get();
                                order.with(|o| {
                                    let (a, b) = (a.min(o.len()), b.min(o.len()));
                                    o[a..b].iter().map(|&i| (e, i)).collect::<Vec<_>>()
                                })
                            }
                            key=|k| *k
                            children=move |(_, i)| row(i)
                        />
                    </tbody>
                </table>
                <div class="table-pad" style:height=move || format!("{}px", pads().1)></div>
            </div>
        </div>
    }
}
