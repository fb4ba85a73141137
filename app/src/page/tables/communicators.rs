//! The communicators panel: each logical communicator, its ranks, the parallelism it serves
//! with the evidence and confidence behind the label (and the process group a PyTorch trace
//! names for it, agreeing or not), and the enrichment of its kernels: median
//! bus bandwidth and efficiency against its bottleneck link, the members' arrival skew, and how
//! NCCL set it up (channels, trees, nodes, the transports of its connections).

use leptos::prelude::*;
use ncclscope_app::protocol::format::short_id;
use ncclscope_app::protocol::groups::GroupEvidence;
use ncclscope_app::protocol::panels::Cell;
use ncclscope_app::protocol::views::{CommPanel, CommRow};

use crate::page::tables::table::VirtualTable;

const HEADERS: [&str; 13] = [
    "id",
    "size",
    "global ranks",
    "parallelism",
    "process group",
    "confidence",
    "median bus BW",
    "bus efficiency",
    "bottleneck",
    "arrival skew",
    "evidence",
    "set-up",
    "transports",
];

/// A cell showing `text`, sorted by `value` (cells without one last).
fn cell_of(value: Option<f64>, text: &str) -> Cell {
    Cell {
        text: text.to_string(),
        num: value.filter(|v| v.is_finite()),
    }
}

/// One communicator's sort keys and CSV fields: the bandwidths sort by their figures (their
/// texts' units follow their magnitudes), the skew and set-up by their leading number (one
/// unit per column); ranks sort by the first one.
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
        Cell::text(
            r.process_group
                .as_ref()
                .map_or(String::new(), |g| g.text.clone()),
        ),
        Cell::num(r.confidence, format!("{:.2}", r.confidence)),
        // By the figures themselves: the texts' units follow their magnitudes.
        cell_of(r.bus_bw_gbps, &r.bus_bw),
        cell_of(r.bus_efficiency_value, &r.bus_efficiency),
        Cell::text(r.bottleneck.clone()),
        Cell::parsed(r.skew.clone()),
        Cell::text(r.evidence.clone()),
        Cell::parsed(r.setup.clone()),
        Cell::text(r.transports.clone()),
    ]
}

#[component]
pub fn Communicators(panel: Signal<CommPanel>) -> impl IntoView {
    // Every new analysis redraws the rows, even where the sort keys happen to be equal.
    let keys = Memo::new_with_compare(
        move |_| panel.with(|p| p.rows.iter().map(cells).collect::<Vec<_>>()),
        |_, _| true,
    );
    let row = move |i: usize| {
        panel
            .with_untracked(|p| p.rows.get(i).cloned())
            .map(comm_row)
    };
    view! {
        <Show when=move || panel.with(|p| !p.rows.is_empty())>
            <section class="communicators">
                <h2>"Communicators"</h2>
                <p class="hint" data-testid="layout">{move || panel.with(|p| p.layout.clone())}</p>
                <VirtualTable test_id="comm-table" headers=HEADERS.map(String::from).to_vec()
                    keys=keys row=row />
            </section>
        </Show>
    }
}

/// The process group a trace names, with its verdict against the inferred parallelism.
fn group_cell(g: Option<GroupEvidence>) -> impl IntoView {
    match g {
        Some(g) => view! {
            <td data-testid="process-group" data-verdict=g.verdict.word()
                data-description=g.description.clone().unwrap_or_default()
                title=g.name.map(|n| format!("process group {n}"))>
                {g.text}
            </td>
        }
        .into_any(),
        None => view! { <td data-testid="process-group"></td> }.into_any(),
    }
}

fn comm_row(r: CommRow) -> impl IntoView {
    view! {
        <tr data-testid="comm-row" data-comm=r.id.clone()>
            <td><code title=r.id.clone()>{short_id(&r.id)}</code></td>
            <td>{r.size}</td>
            <td>{r.ranks}</td>
            <td data-testid="parallelism"><b>{r.parallelism}</b></td>
            {group_cell(r.process_group)}
            <td>{format!("{:.2}", r.confidence)}</td>
            <td data-testid="bus-bw" class="num" title=r.no_bandwidth.clone() data-gbps=r.bus_bw_gbps>{r.bus_bw}</td>
            <td data-testid="bus-efficiency" class="num" title=r.no_bandwidth.clone() data-efficiency=r.bus_efficiency_value>{r.bus_efficiency}</td>
            <td>{r.bottleneck}</td>
            <td data-testid="skew">{r.skew}</td>
            <td class="evidence">{r.evidence}</td>
            <td data-testid="setup">{r.setup}</td>
            <td data-testid="transports">{r.transports}</td>
        </tr>
    }
}
