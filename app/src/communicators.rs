//! The communicators panel: each logical communicator, its ranks, the parallelism it serves
//! with the evidence and confidence behind the label, and the enrichment of its kernels: median
//! bus bandwidth and efficiency against its bottleneck link, and the members' arrival skew.

use leptos::prelude::*;
use ncclscope_app::panel_data::Cell;
use ncclscope_app::views::{CommPanel, CommRow};

use crate::table::{csv_of, order, sort_headers, CsvButton, Sort};

const HEADERS: [&str; 10] = [
    "id",
    "size",
    "global ranks",
    "parallelism",
    "confidence",
    "median bus BW",
    "bus efficiency",
    "bottleneck",
    "arrival skew",
    "evidence",
];

/// One communicator's sort keys and CSV fields: the formatted figures each carry one unit per
/// column (GB/s, %, µs), so their leading number orders them; ranks sort by the first one.
fn cells(r: &CommRow) -> Vec<Cell> {
    let first_rank = r
        .ranks
        .split(' ')
        .next()
        .and_then(|x| x.parse::<f64>().ok());
    vec![
        Cell::text(r.id.clone()),
        Cell::count(r.size.into()),
        Cell {
            text: r.ranks.clone(),
            num: first_rank,
        },
        Cell::text(r.parallelism.clone()),
        Cell::num(r.confidence, format!("{:.2}", r.confidence)),
        Cell::parsed(r.bus_bw.clone()),
        Cell::parsed(r.bus_efficiency.clone()),
        Cell::text(r.bottleneck.clone()),
        Cell::parsed(r.skew.clone()),
        Cell::text(r.evidence.clone()),
    ]
}

#[component]
pub fn Communicators(panel: Signal<CommPanel>) -> impl IntoView {
    let sort: Sort = RwSignal::new(None);
    let headers = StoredValue::new(HEADERS.map(String::from).to_vec());
    let text = move || {
        panel.with_untracked(|p| {
            let rows: Vec<Vec<Cell>> = p.rows.iter().map(cells).collect();
            headers.with_value(|h| csv_of(h, &rows, sort.get_untracked()))
        })
    };
    view! {
        <Show when=move || panel.with(|p| !p.rows.is_empty())>
            <section class="communicators">
                <h2>"Communicators"</h2>
                <p class="hint" data-testid="layout">{move || panel.with(|p| p.layout.clone())}</p>
                <div class="data-table">
                    <CsvButton test_id="comm-table" text=text />
                    <table class="files" data-testid="comm-table">
                        <thead>{headers.with_value(|h| sort_headers(h, sort))}</thead>
                        <tbody>
                            {move || panel.with(|p| {
                                let keys: Vec<Vec<Cell>> = p.rows.iter().map(cells).collect();
                                order(&keys, sort.get())
                                    .into_iter()
                                    .map(|i| comm_row(p.rows[i].clone()))
                                    .collect_view()
                            })}
                        </tbody>
                    </table>
                </div>
            </section>
        </Show>
    }
}

fn comm_row(r: CommRow) -> impl IntoView {
    view! {
        <tr data-testid="comm-row" data-comm=r.id.clone()>
            <td><code>{r.id.clone()}</code></td>
            <td>{r.size}</td>
            <td>{r.ranks}</td>
            <td data-testid="parallelism"><b>{r.parallelism}</b></td>
            <td>{format!("{:.2}", r.confidence)}</td>
            <td data-testid="bus-bw">{r.bus_bw}</td>
            <td data-testid="bus-efficiency">{r.bus_efficiency}</td>
            <td>{r.bottleneck}</td>
            <td data-testid="skew">{r.skew}</td>
            <td class="evidence">{r.evidence}</td>
        </tr>
    }
}
