//! The communicators panel: each logical communicator, its ranks, and the parallelism it serves
//! with the evidence and confidence behind the label.

use leptos::prelude::*;

/// One row, already formatted (the analysis stays outside the reactive graph).
#[derive(Clone, Debug, PartialEq)]
pub struct CommRow {
    pub id: String,
    pub size: u32,
    pub ranks: String,
    pub parallelism: String,
    pub confidence: f64,
    pub evidence: String,
}

/// The panel's rows and the layout line above them.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct CommPanel {
    pub layout: String,
    pub rows: Vec<CommRow>,
}

impl CommPanel {
    pub fn from_analysis(a: &pipeline::Analysis) -> Self {
        let layout = match a.layout.sizes {
            Some(s) => format!(
                "layout TP={} CP={} EP={} DP={} PP={} (confidence {:.2}): {}",
                s.tp, s.cp, s.ep, s.dp, s.pp, a.layout.confidence, a.layout.evidence
            ),
            None => format!("layout unknown: {}", a.layout.evidence),
        };
        let rows = a
            .communicators
            .comms
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let label = a.layout.comms.iter().find(|l| l.comm == i);
                let ranks: Vec<String> = c.global_ranks.iter().map(u32::to_string).collect();
                CommRow {
                    id: c.id.clone(),
                    size: c.size,
                    ranks: ranks.join(" "),
                    parallelism: label
                        .map_or("unknown", |l| l.parallelism.name())
                        .to_string(),
                    confidence: label.map_or(0.0, |l| l.confidence),
                    evidence: label.map(|l| l.evidence.clone()).unwrap_or_default(),
                }
            })
            .collect();
        CommPanel { layout, rows }
    }
}

#[component]
pub fn Communicators(panel: Signal<CommPanel>) -> impl IntoView {
    view! {
        <Show when=move || panel.with(|p| !p.rows.is_empty())>
            <section class="communicators">
                <h2>"Communicators"</h2>
                <p class="hint" data-testid="layout">{move || panel.with(|p| p.layout.clone())}</p>
                <table class="files" data-testid="comm-table">
                    <thead>
                        <tr><th>"id"</th><th>"size"</th><th>"global ranks"</th><th>"parallelism"</th><th>"confidence"</th><th>"evidence"</th></tr>
                    </thead>
                    <tbody>
                        {move || panel.get().rows.into_iter().map(|r| view! {
                            <tr data-testid="comm-row">
                                <td><code>{r.id}</code></td>
                                <td>{r.size}</td>
                                <td>{r.ranks}</td>
                                <td data-testid="parallelism"><b>{r.parallelism}</b></td>
                                <td>{format!("{:.2}", r.confidence)}</td>
                                <td class="evidence">{r.evidence}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </section>
        </Show>
    }
}
