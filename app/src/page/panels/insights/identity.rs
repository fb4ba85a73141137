//! Who is who: how each rank's log was paired with an export's (or a trace's) process, how sure
//! that is, and its log's stamps; the pairing's warnings above them.

use super::{pct, waiting, InsightsSignal};
use leptos::prelude::*;
use ncclscope_app::protocol::insights::IdentityRow;

#[component]
pub fn IdentityPanel(insights: InsightsSignal) -> impl IntoView {
    move || match insights.get() {
        None => waiting().into_any(),
        Some(i) => {
            let notes: Vec<_> = i
                .identity_notes
                .iter()
                .map(|n| view! { <li class="warn">{n.clone()}</li> })
                .collect();
            let rows: Vec<_> = i.identity.iter().map(row).collect();
            view! {
                <section class="panel identity" data-testid="identity">
                    <h2>"Who is who"</h2>
                    <p class="hint">
                        "Each rank's log process paired with the export process that ran its kernels, \
                         from the host names, pids, GPUs, streams and operation sequences both show."
                    </p>
                    <ul class="notes" data-testid="identity-notes">{notes}</ul>
                    <table class="data-table" data-testid="identity-table">
                        <thead><tr>
                            <th scope="col">"rank"</th><th scope="col">"log process"</th>
                            <th scope="col">"export"</th><th scope="col">"export process"</th>
                            <th scope="col">"paired by"</th><th scope="col">"confidence"</th>
                            <th scope="col">"log stamps"</th>
                        </tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                </section>
            }
            .into_any()
        }
    }
}

fn row(r: &IdentityRow) -> impl IntoView {
    let paired_by = if r.export_only {
        "exports alone (no log)".to_string()
    } else if r.matched_by.is_empty() {
        "not paired".to_string()
    } else {
        r.matched_by.join(", ")
    };
    let low = !r.export_only && r.confidence < 0.5;
    let stamps = if r.stamps_used {
        format!("{} (used)", r.stamps)
    } else {
        r.stamps.clone()
    };
    view! {
        <tr class:low-confidence=low data-testid="identity-row">
            <td class="num">{r.global_rank}</td>
            <td class="mono">{r.process.clone()}</td>
            <td class="mono">{r.export.clone().unwrap_or_default()}</td>
            <td class="mono">{r.export_process.clone().unwrap_or_default()}</td>
            <td>{paired_by}</td>
            <td class="num">{if r.export_only { "—".to_string() } else { pct(r.confidence) }}</td>
            <td>{stamps}</td>
        </tr>
    }
}
