//! The per-rank table: what each process's log says it did, its communicators and topology, and
//! how many of its kernels were matched to log operations.

use leptos::prelude::*;
use ncclscope_app::protocol::panels::Cell;
use ncclscope_app::protocol::views::RankView;

use crate::page::tables::table::VirtualTable;

const HEADERS: [&str; 9] = [
    "rank",
    "host",
    "pid",
    "GPU",
    "NCCL",
    "operations (bytes)",
    "communicators",
    "kernels matched",
    "topology",
];

/// One rank's sort keys and CSV fields, a cell per column: numbers where the column counts
/// something (operations by total bytes, kernels matched by the matched count).
fn cells(p: &RankView) -> Vec<Cell> {
    let ops: Vec<String> = p.ops.iter().map(|(op, v)| format!("{op}: {v}")).collect();
    vec![
        Cell::count(p.global_rank.into()),
        Cell::text(p.host.clone()),
        Cell::count(p.pid.into()),
        p.local_rank
            .map_or(Cell::text(""), |d| Cell::count(d.into())),
        Cell::text(p.nccl_version.clone().unwrap_or_default()),
        Cell::num(p.op_bytes as f64, ops.join("; ")),
        Cell::count(p.comms.len() as u64),
        // `matched / kernels`, or `no export` (last, with no number).
        Cell::parsed(p.matched.clone()),
        Cell::count(p.topology.len() as u64),
    ]
}

#[component]
pub fn RankTable(ranks: Signal<Vec<RankView>>) -> impl IntoView {
    // Every new analysis redraws the rows, even where the sort keys happen to be equal.
    let keys = Memo::new_with_compare(
        move |_| ranks.with(|r| r.iter().map(cells).collect::<Vec<_>>()),
        |_, _| true,
    );
    let row = move |i: usize| {
        ranks
            .with_untracked(|r| r.get(i).cloned())
            .map(|p| view! { <RankRow p=p /> })
    };
    view! {
        <Show when=move || ranks.with(|r| !r.is_empty())>
            <section class="ranks">
                <h2>"Ranks"</h2>
                <VirtualTable test_id="rank-table" headers=HEADERS.map(String::from).to_vec()
                    keys=keys row=row />
            </section>
        </Show>
    }
}

/// A `<details>` whose list is put in the document only once it is opened: a rank's topology
/// dump is dozens of lines, and hundreds of rows of them were most of a rank table's elements.
fn lazy_details(
    summary: impl IntoView + 'static,
    class: Option<&'static str>,
    lines: Vec<String>,
) -> impl IntoView {
    let open = RwSignal::new(false);
    let lines = StoredValue::new(lines);
    view! {
        <details on:toggle=move |_| open.update(|o| *o = !*o)>
            {summary}
            {move || open.get().then(|| view! {
                <ul class=class>{lines.with_value(|l| l.iter().map(|l| view! { <li>{l.clone()}</li> }).collect_view())}</ul>
            })}
        </details>
    }
}

#[component]
fn RankRow(p: RankView) -> impl IntoView {
    let rank_title = if p.rank_from_init {
        "from the communicator init lines"
    } else {
        "from sorted hosts and pids (no init line)"
    };
    let topo = p.topology;
    view! {
        <tr data-testid="rank-row" data-rank=p.global_rank>
            <td title=rank_title>{p.global_rank}</td>
            <td>{p.host}</td>
            <td>{p.pid}</td>
            <td>{p.local_rank.map(|d| d.to_string()).unwrap_or_default()}</td>
            <td>{p.nccl_version.unwrap_or_default()}</td>
            <td>
                {p.ops.into_iter().map(|(op, v)| {
                    let key = op.clone();
                    view! { <span class="fact" data-op=key>{op}": "<b>{v}</b></span> }
                }).collect_view()}
            </td>
            <td>{lazy_details(view! { <summary data-testid="comm-count">{p.comms.len()}</summary> }, None, p.comms)}</td>
            <td data-testid="matched">{p.matched}</td>
            <td>
                {(!topo.is_empty()).then(|| {
                    let summary = view! { <summary>{format!("{} lines", topo.len())}</summary> };
                    lazy_details(summary, Some("topology"), topo)
                })}
            </td>
        </tr>
    }
}
