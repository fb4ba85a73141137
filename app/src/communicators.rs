//! The communicators panel: each logical communicator, its ranks, the parallelism it serves
//! with the evidence and confidence behind the label, and the enrichment of its kernels: median
//! bus bandwidth and efficiency against its bottleneck link, and the members' arrival skew.

use leptos::prelude::*;
use ncclscope_app::views::CommPanel;

#[component]
pub fn Communicators(panel: Signal<CommPanel>) -> impl IntoView {
    view! {
        <Show when=move || panel.with(|p| !p.rows.is_empty())>
            <section class="communicators">
                <h2>"Communicators"</h2>
                <p class="hint" data-testid="layout">{move || panel.with(|p| p.layout.clone())}</p>
                <table class="files" data-testid="comm-table">
                    <thead>
                        <tr><th>"id"</th><th>"size"</th><th>"global ranks"</th><th>"parallelism"</th><th>"confidence"</th><th>"median bus BW"</th><th>"bus efficiency"</th><th>"bottleneck"</th><th>"arrival skew"</th><th>"evidence"</th></tr>
                    </thead>
                    <tbody>
                        {move || panel.get().rows.into_iter().map(|r| view! {
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
                        }).collect_view()}
                    </tbody>
                </table>
            </section>
        </Show>
    }
}
