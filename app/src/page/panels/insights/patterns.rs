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

/// Bytes per (source, destination), summed over parallelisms and operations, and each cell's
/// parts ("TP AllReduce 12 MB") for its hover.
type Cells = BTreeMap<(u32, u32), (u64, Vec<String>)>;

fn cells(p: &PatternsView, by_node: bool) -> (usize, Cells) {
    let m = &p.patterns.matrix;
    let mut out: Cells = BTreeMap::new();
    let mut add = |src: u32, dst: u32, par: &str, op: &str, bytes: u64| {
        let cell = out.entry((src, dst)).or_default();
        cell.0 += bytes;
        cell.1.push(format!("{par} {op} {}", human_bytes(bytes)));
    };
    if by_node {
        for e in &m.nodes {
            add(e.src, e.dst, &e.parallelism, &e.op, e.bytes);
        }
        (m.hosts.len().max(1), out)
    } else {
        let mut n = 0;
        for e in &m.entries {
            add(e.src, e.dst, &e.parallelism, &e.op, e.bytes);
            n = n.max(e.src as usize + 1).max(e.dst as usize + 1);
        }
        (n, out)
    }
}

/// The pairs the layout implies (rank granularity), with their bytes where a model gave them.
fn predicted_cells(p: &PatternsView) -> Cells {
    let mut out: Cells = BTreeMap::new();
    for e in &p.patterns.predicted.entries {
        let cell = out.entry((e.src, e.dst)).or_default();
        cell.0 += e.bytes.unwrap_or(1);
        cell.1.push(match (&e.op, e.bytes) {
            (Some(op), Some(b)) => format!("{} {op} {}", e.parallelism, human_bytes(b)),
            _ => e.parallelism.clone(),
        });
    }
    out
}

/// A heat map of `cells` over an n × n grid (log scale), each cell titled with its parts.
fn heatmap(
    cells: &Cells,
    n: usize,
    unit: &'static str,
    testid: &'static str,
    caption: String,
) -> impl IntoView {
    let max = cells.values().map(|c| c.0).max().unwrap_or(1).max(1) as f64;
    let size = 480.0_f64;
    let cell = size / n.max(1) as f64;
    let rects: Vec<_> = cells
        .iter()
        .map(|(&(src, dst), (bytes, parts))| {
            // Log scale: the ring's neighbours and a stray byte both stay visible.
            let level = (*bytes as f64).ln_1p() / max.ln_1p();
            let label = format!("{unit} {src} → {unit} {dst}: {}", parts.join(", "));
            view! {
                <rect x=format!("{:.2}", dst as f64 * cell) y=format!("{:.2}", src as f64 * cell)
                    width=format!("{:.2}", cell.max(1.0)) height=format!("{:.2}", cell.max(1.0))
                    style=format!("fill: var(--accent); fill-opacity: {:.3}", 0.08 + 0.92 * level)>
                    <title>{label}</title>
                </rect>
            }
        })
        .collect();
    view! {
        <figure class="heatmap" tabindex="0">
            <svg data-testid=testid role="img" aria-label=caption.clone()
                viewBox=format!("0 0 {size} {size}") width="480" height="480">
                <rect width=size height=size class="heatmap-bg"></rect>
                {rects}
            </svg>
            <figcaption>{caption}</figcaption>
        </figure>
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
    let mut top: Vec<((u32, u32), u64)> = cells.iter().map(|(k, v)| (*k, v.0)).collect();
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
    let periods = period_rows(p);
    let model = model_rows(p);
    let plots: Vec<_> = p
        .patterns
        .model
        .groups
        .iter()
        .filter(|g| g.bins.len() >= 2)
        .map(bw_plot)
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
    let predicted = (!by_node && !p.patterns.predicted.entries.is_empty()).then(|| {
        let pc = predicted_cells(p);
        let caption = format!(
            "The pairs the layout implies ({} pairs){}",
            pc.len(),
            if p.patterns
                .predicted
                .entries
                .iter()
                .any(|e| e.bytes.is_some())
            {
                ", with the model's bytes"
            } else {
                ""
            }
        );
        heatmap(&pc, n, unit, "patterns-predicted", caption)
    });
    let pr = &p.patterns.predicted;
    let by_par: Vec<_> = pr
        .by_parallelism
        .iter()
        .map(|b| view! {
            <tr><td>{b.parallelism.clone()}</td><td class="num">{human_bytes(b.observed_bytes)}</td>
            <td class="num">{b.predicted_bytes.map(human_bytes).unwrap_or_else(|| "—".into())}</td></tr>
        })
        .collect();
    let departures = view! {
        <p class="hint" data-testid="patterns-departures">{format!(
            "Against the layout: {} observed pairs it does not imply, {} implied pairs that moved nothing, {} ranks silent in a group.",
            pr.unexpected.len(), pr.missing.len(), pr.silent.len()
        )}</p>
        <table class="data-table" data-testid="patterns-by-parallelism">
            <thead><tr><th scope="col">"parallelism"</th><th scope="col">"observed"</th><th scope="col">"predicted"</th></tr></thead>
            <tbody>{by_par}</tbody>
        </table>
    };
    let caption = format!(
        "Bytes sent, {unit} (row) to {unit} (column), {} in all; darker is more (log scale).",
        human_bytes(total)
    );
    view! {
        <section class="panel patterns" data-testid="patterns">
            <h2>"Where traffic flows"</h2>
            <div class="heatmaps">
                {heatmap(&cells, n, unit, "patterns-heatmap", caption)}
                {predicted}
            </div>
            {departures}
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
            <div class="bw-plots" data-testid="patterns-bw-plots">{plots}</div>
            <ul class="notes">{notes}</ul>
        </section>
    }
}

/// Bus bandwidth against message size for one link class and operation: each size bin's
/// envelope (points), the fitted α-β curve and LBNL's (lines), and the saturation point.
fn bw_plot(g: &analyses::patterns::model::ModelGroup) -> impl IntoView {
    let (w, h, left, bottom) = (300.0_f64, 180.0_f64, 44.0_f64, 22.0_f64);
    let gbps = |bytes: f64, ns: f64| if ns > 0.0 { bytes / ns } else { 0.0 };
    let xs: Vec<f64> = g
        .bins
        .iter()
        .map(|b| b.msg_bytes.max(1.0).log10())
        .collect();
    let (x0, x1) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let series =
        |f: &dyn Fn(&analyses::patterns::model::SizeBin) -> Option<f64>| -> Vec<(f64, f64)> {
            g.bins
                .iter()
                .zip(&xs)
                .filter_map(|(b, &x)| Some((x, f(b)?)))
                .collect()
        };
    let points = series(&|b| Some(b.envelope_bus_gbps));
    let fitted = series(&|b| b.fitted_ns.map(|ns| gbps(b.bus_bytes, ns)));
    let lbnl = series(&|b| Some(gbps(b.bus_bytes, b.lbnl_ns)));
    let top = points
        .iter()
        .chain(&fitted)
        .chain(&lbnl)
        .map(|p| p.1)
        .fold(0.0_f64, f64::max)
        .max(1e-9);
    let px = move |x: f64| left + (x - x0) / (x1 - x0).max(1e-9) * (w - left - 8.0);
    let py = move |y: f64| (h - bottom) - y / top * (h - bottom - 8.0);
    let line = |pts: &[(f64, f64)]| {
        pts.iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let dots: Vec<_> = points
        .iter()
        .map(|&(x, y)| view! {
            <circle cx=format!("{:.1}", px(x)) cy=format!("{:.1}", py(y)) r="3" class="chart-point">
                <title>{format!("{}: {y:.1} GB/s", human_bytes(10f64.powf(x) as u64))}</title>
            </circle>
        })
        .collect();
    let class = serde_json::to_value(g.link_class)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let saturation = g.saturation.msg_bytes.map(|m| {
        let x = px((m.max(1) as f64).log10());
        view! {
            <line x1=format!("{x:.1}") x2=format!("{x:.1}") y1="8" y2=format!("{:.1}", h - bottom) class="chart-reference">
                <title>{format!("saturation at {}", human_bytes(m))}</title>
            </line>
        }
    });
    view! {
        <figure class="chart">
            <figcaption>{format!("{class} {}: bus bandwidth against message size", g.op)}</figcaption>
            <svg role="img" aria-label=format!("{class} {} bus bandwidth against message size", g.op)
                viewBox=format!("0 0 {w} {h}") width=format!("{w}")>
                <line x1=format!("{left}") x2=format!("{left}") y1="8" y2=format!("{:.1}", h - bottom) class="chart-axis"></line>
                <line x1=format!("{left}") x2=format!("{:.1}", w - 8.0) y1=format!("{:.1}", h - bottom) y2=format!("{:.1}", h - bottom) class="chart-axis"></line>
                <text x="2" y="14" class="chart-label">{format!("{top:.0} GB/s")}</text>
                <text x=format!("{left}") y=format!("{:.1}", h - 6.0) class="chart-label">{human_bytes(10f64.powf(x0) as u64)}</text>
                <text x=format!("{:.1}", w - 8.0) y=format!("{:.1}", h - 6.0) text-anchor="end" class="chart-label">{human_bytes(10f64.powf(x1) as u64)}</text>
                {saturation}
                <polyline points=line(&lbnl) class="chart-line lbnl" fill="none"><title>"LBNL two-tier model"</title></polyline>
                <polyline points=line(&fitted) class="chart-line fitted" fill="none"><title>"fitted α-β"</title></polyline>
                {dots}
            </svg>
            <div class="legend small">"points: measured (each size's fastest); solid: fitted α-β; dashed: LBNL"</div>
        </figure>
    }
}

/// One row per communicator: its On-Off rhythm.
fn period_rows(p: &PatternsView) -> Vec<impl IntoView> {
    p
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
        .collect()
}

/// One row per link class and operation: the run's own α-β fit.
fn model_rows(p: &PatternsView) -> Vec<impl IntoView> {
    p
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
        .collect()
}
