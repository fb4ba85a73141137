//! Where traffic flows: the rank-to-rank (or node-to-node) heat map of the bytes every logged
//! operation moved, the largest pairs, each communicator's On-Off rhythm, and the run's own α-β
//! model per link class beside LBNL's.

use super::{ms, waiting, InsightsSignal};
use leptos::prelude::*;
use ncclscope_app::protocol::format::human_bytes;
use ncclscope_app::protocol::insights::PatternsView;
use std::collections::BTreeMap;

/// Ranks drawn one cell each at most; past it the heat map is per node.
const RANK_CELLS: usize = 64;
/// Pairs listed.
const TOP_PAIRS: usize = 20;

#[component]
pub fn PatternsPanel(insights: InsightsSignal) -> impl IntoView {
    move || {
        match insights.get() {
        None => waiting().into_any(),
        Some(i) => match &i.patterns {
            None => view! {
                <section class="panel patterns" data-testid="patterns">
                    <h2>"Where traffic flows"</h2>
                    <p class="hint">"The logs say of no operation how many bytes it moved between which ranks."</p>
                </section>
            }
            .into_any(),
            Some(p) => body(p).into_any(),
        },
    }
    }
}

/// Bytes per (source, destination), summed over parallelisms and operations.
fn cells(p: &PatternsView, by_node: bool) -> (usize, BTreeMap<(u32, u32), u64>) {
    let m = &p.patterns.matrix;
    let mut out: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    if by_node {
        for e in &m.nodes {
            *out.entry((e.src, e.dst)).or_default() += e.bytes;
        }
        (m.hosts.len().max(1), out)
    } else {
        let mut n = 0;
        for e in &m.entries {
            *out.entry((e.src, e.dst)).or_default() += e.bytes;
            n = n.max(e.src as usize + 1).max(e.dst as usize + 1);
        }
        (n, out)
    }
}

fn body(p: &PatternsView) -> impl IntoView {
    let ranks = p
        .patterns
        .matrix
        .entries
        .iter()
        .map(|e| e.src.max(e.dst) as usize + 1)
        .max()
        .unwrap_or(0);
    let by_node = p.ranks_left_out || ranks > RANK_CELLS;
    let (n, cells) = cells(p, by_node);
    let unit = if by_node { "node" } else { "rank" };
    let max = cells.values().copied().max().unwrap_or(1).max(1) as f64;
    let size = 480.0_f64;
    let cell = size / n.max(1) as f64;
    let rects: Vec<_> = cells
        .iter()
        .map(|(&(src, dst), &bytes)| {
            // Log scale: the ring's neighbours and a stray byte both stay visible.
            let level = (bytes as f64).ln_1p() / max.ln_1p();
            let label = format!("{unit} {src} → {unit} {dst}: {}", human_bytes(bytes));
            view! {
                <rect x=format!("{:.2}", dst as f64 * cell) y=format!("{:.2}", src as f64 * cell)
                    width=format!("{:.2}", cell.max(1.0)) height=format!("{:.2}", cell.max(1.0))
                    style=format!("fill: var(--accent); fill-opacity: {:.3}", 0.08 + 0.92 * level)>
                    <title>{label}</title>
                </rect>
            }
        })
        .collect();
    let mut top: Vec<((u32, u32), u64)> = cells.iter().map(|(k, v)| (*k, *v)).collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let total: u64 = top.iter().map(|x| x.1).sum();
    let top_rows: Vec<_> = top
        .iter()
        .take(TOP_PAIRS)
        .map(|&((s, d), b)| {
            view! {
                <tr><td class="num">{s}</td><td class="num">{d}</td>
                <td class="num">{human_bytes(b)}</td>
                <td class="num">{format!("{:.1} %", b as f64 * 100.0 / total.max(1) as f64)}</td></tr>
            }
        })
        .collect();
    let periods: Vec<_> = p
        .patterns
        .periodicity
        .comms
        .iter()
        .map(|c| {
            view! {
                <tr>
                    <td class="mono">{c.comm.clone()}</td>
                    <td>{c.parallelism.clone()}</td>
                    <td class="num">{c.size}</td>
                    <td class="num">{c.steps}</td>
                    <td class="num">{c.blocks_per_step}</td>
                    <td class="num">{c.period_ns.map(|v| ms(v as f64 / 1e6)).unwrap_or_default()}</td>
                    <td class="num">{c.on_ns_per_step.map(|v| ms(v as f64 / 1e6)).unwrap_or_default()}</td>
                    <td class="num">{c.flagged_step_count}</td>
                </tr>
            }
        })
        .collect();
    let model: Vec<_> = p
        .patterns
        .model
        .groups
        .iter()
        .map(|g| {
            let class = serde_json::to_value(g.link_class)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            view! {
                <tr>
                    <td>{class}</td>
                    <td>{g.op.clone()}</td>
                    <td class="num">{g.kernels}</td>
                    <td class="num">{g.fit.alpha_ns.map(|a| format!("{:.1} µs", a / 1000.0)).unwrap_or_else(|| "—".into())}</td>
                    <td class="num">{g.fit.beta_gbps.map(|b| format!("{b:.1} GB/s")).unwrap_or_else(|| "—".into())}</td>
                    <td>{g.fit.status.clone()}</td>
                </tr>
            }
        })
        .collect();
    let notes: Vec<_> = p
        .patterns
        .matrix
        .notes
        .iter()
        .chain(&p.patterns.periodicity.notes)
        .chain(&p.patterns.model.notes)
        .map(|n| view! { <li>{n.message.clone()}</li> })
        .collect();
    let caption = format!(
        "Bytes sent, {unit} (row) to {unit} (column), {} in all; darker is more (log scale).",
        human_bytes(total)
    );
    view! {
        <section class="panel patterns" data-testid="patterns">
            <h2>"Where traffic flows"</h2>
            <figure class="heatmap">
                <svg data-testid="patterns-heatmap" role="img" aria-label=caption.clone()
                    viewBox=format!("0 0 {size} {size}") width="480" height="480">
                    <rect width=size height=size class="heatmap-bg"></rect>
                    {rects}
                </svg>
                <figcaption>{caption}</figcaption>
            </figure>
            <h3>"The largest pairs"</h3>
            <table class="data-table" data-testid="patterns-pairs">
                <thead><tr><th scope="col">{format!("from {unit}")}</th><th scope="col">{format!("to {unit}")}</th>
                <th scope="col">"bytes"</th><th scope="col">"of all"</th></tr></thead>
                <tbody>{top_rows}</tbody>
            </table>
            <h3>"On-Off rhythm per communicator"</h3>
            <table class="data-table" data-testid="patterns-periodicity">
                <thead><tr>
                    <th scope="col">"communicator"</th><th scope="col">"parallelism"</th><th scope="col">"size"</th>
                    <th scope="col">"steps"</th><th scope="col">"blocks per step"</th><th scope="col">"period"</th>
                    <th scope="col">"on per step"</th><th scope="col">"odd steps"</th>
                </tr></thead>
                <tbody>{periods}</tbody>
            </table>
            <h3>"The run's own α-β model"</h3>
            <table class="data-table" data-testid="patterns-model">
                <thead><tr>
                    <th scope="col">"link class"</th><th scope="col">"operation"</th><th scope="col">"kernels"</th>
                    <th scope="col">"α (latency)"</th><th scope="col">"β (bandwidth)"</th><th scope="col">"fit"</th>
                </tr></thead>
                <tbody>{model}</tbody>
            </table>
            <ul class="notes">{notes}</ul>
        </section>
    }
}
