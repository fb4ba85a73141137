//! The per-rank table: what each process's log says it did, its communicators and topology, and
//! how many of its kernels were matched to log operations.

use leptos::prelude::*;
use ncclscope_app::views::RankView;

#[component]
pub fn RankTable(ranks: Signal<Vec<RankView>>) -> impl IntoView {
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
            <td>
                <details>
                    <summary data-testid="comm-count">{p.comms.len()}</summary>
                    <ul>{p.comms.into_iter().map(|c| view! { <li>{c}</li> }).collect_view()}</ul>
                </details>
            </td>
            <td data-testid="matched">{p.matched}</td>
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
