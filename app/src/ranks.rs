//! The per-rank table: what each process's log says it did, its communicators and topology, and
//! how many of its kernels were matched to log operations.

use leptos::prelude::*;
use pipeline::ProcessSummary;

use crate::app::human_bytes as bytes;

#[component]
pub fn RankTable(ranks: Signal<Vec<ProcessSummary>>) -> impl IntoView {
    view! {
        <Show when=move || ranks.with(|r| !r.is_empty())>
            <section class="ranks">
                <h2>"Ranks"</h2>
                <table class="files" data-testid="rank-table">
                    <thead>
                        <tr>
                            <th>"rank"</th><th>"host"</th><th>"pid"</th><th>"GPU"</th><th>"NCCL"</th>
                            <th>"operations (bytes)"</th><th>"communicators"</th><th>"kernels matched"</th><th>"topology"</th>
                        </tr>
                    </thead>
                    <tbody>
                        {move || ranks.get().into_iter().map(|p| view! { <RankRow p=p /> }).collect_view()}
                    </tbody>
                </table>
            </section>
        </Show>
    }
}

#[component]
fn RankRow(p: ProcessSummary) -> impl IntoView {
    let rank_title = if p.rank_from_init {
        "from the communicator init lines"
    } else {
        "from sorted hosts and pids (no init line)"
    };
    let ops: Vec<(String, String)> = p
        .ops
        .iter()
        .map(|(op, (n, b))| (op.name().to_string(), format!("{n} ({})", bytes(*b))))
        .collect();
    let comms: Vec<String> = p
        .comms
        .iter()
        .map(|c| {
            let id = c
                .comm_id
                .map(|i| format!(" commId {i:#x}"))
                .unwrap_or_default();
            let rank = c
                .rank
                .map(|r| format!(" rank {r}/"))
                .unwrap_or_else(|| " size ".to_string());
            format!("{:#x}{rank}{}{id}: {} ops", c.ptr, c.nranks, c.ops)
        })
        .collect();
    let topo = p.topology_lines();
    let matched = if p.kernels == 0 {
        "no export".to_string()
    } else {
        format!("{} / {}", p.matched_kernels, p.kernels)
    };
    view! {
        <tr data-testid="rank-row" data-rank=p.global_rank>
            <td title=rank_title>{p.global_rank}</td>
            <td>{p.process.host.clone()}</td>
            <td>{p.process.pid}</td>
            <td>{p.local_rank.map(|d| d.to_string()).unwrap_or_default()}</td>
            <td>{p.nccl_version.clone().unwrap_or_default()}</td>
            <td>
                {ops.into_iter().map(|(op, v)| {
                    let key = op.clone();
                    view! { <span class="fact" data-op=key>{op}": "<b>{v}</b></span> }
                }).collect_view()}
            </td>
            <td>
                <details>
                    <summary data-testid="comm-count">{comms.len()}</summary>
                    <ul>{comms.into_iter().map(|c| view! { <li>{c}</li> }).collect_view()}</ul>
                </details>
            </td>
            <td data-testid="matched">{matched}</td>
            <td>
                {(!topo.is_empty()).then(|| view! {
                    <details>
                        <summary>{format!("{} lines", topo.len())}</summary>
                        <ul class="topology">{topo.into_iter().map(|l| view! { <li>{l}</li> }).collect_view()}</ul>
                    </details>
                })}
            </td>
        </tr>
    }
}
