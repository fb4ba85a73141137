//! Where traffic flows: the rank-to-rank (or node-to-node) heat map of the bytes every logged
//! operation moved — observed, predicted from the layout (with the Theory view's model bytes), or
//! their difference —, the largest pairs, the operations furthest off the run's own α-β model
//! (each opens on the timeline), each communicator's On-Off rhythm, and the model per link class
//! beside LBNL's. The view's state (`PatternsState`) travels in links and bundles.

use super::{ms, waiting, InsightsSignal};
use crate::page::panels::heatmap::HeatMap;
use analyses::patterns::model::Outlier;
use analyses::patterns::PredictedMatrix;
use leptos::prelude::*;
use ncclscope_app::page_logic::heat_grid::{filter_choices, grid, Grid, GridCell};
use ncclscope_app::page_logic::patterns_state::{Cells, Mode, PatternsState};
use ncclscope_app::protocol::format::human_bytes;
use ncclscope_app::protocol::insights::{Insights, PatternsView};
use std::sync::Arc;

/// Pairs listed.
const TOP_PAIRS: usize = 20;

/// The predicted matrix the page has: the theory's (with the model's bytes) when the worker sent
/// it, else the insights' (the layout's pairs alone).
pub type PredictedSignal = Signal<Option<Arc<PredictedMatrix>>>;

#[component]
pub fn PatternsPanel(
    insights: InsightsSignal,
    /// The view's state (in links and bundles).
    state: RwSignal<PatternsState>,
    predicted: PredictedSignal,
    /// Opens an outlier on the timeline.
    on_outlier: Callback<Outlier>,
) -> impl IntoView {
    move || {
        match insights.get() {
        None => waiting().into_any(),
        Some(i) if i.patterns.is_none() => view! {
            <section class="panel patterns" data-testid="patterns">
                <h2>"Where traffic flows"</h2>
                <p class="hint">"The logs say of no operation how many bytes it moved between which ranks."</p>
            </section>
        }
        .into_any(),
        Some(i) => body(i, state, predicted, on_outlier).into_any(),
    }
    }
}

/// The patterns of the insights (there are some: checked by the caller).
fn of(i: &Insights) -> &PatternsView {
    i.patterns.as_ref().expect("the panel checked")
}

/// The largest pairs of `g`, by observed bytes.
fn top_pairs(g: &Grid) -> impl IntoView {
    let mut top: Vec<&GridCell> = g.cells.iter().filter(|c| c.observed > 0).collect();
    top.sort_by(|a, b| {
        b.observed
            .cmp(&a.observed)
            .then((a.src, a.dst).cmp(&(b.src, b.dst)))
    });
    let total: u64 = top.iter().map(|c| c.observed).sum();
    let rows: Vec<_> = top
        .iter()
        .take(TOP_PAIRS)
        .map(|c| {
            view! {
                <tr><td class="num">{c.src}</td><td class="num">{c.dst}</td>
                <td class="num">{human_bytes(c.observed)}</td>
                <td class="num">{format!("{:.1} %", c.observed as f64 * 100.0 / total.max(1) as f64)}</td></tr>
            }
        })
        .collect();
    let unit = g.unit;
    view! {
        <table class="data-table" data-testid="patterns-pairs">
            <thead><tr><th scope="col">{format!("from {unit}")}</th><th scope="col">{format!("to {unit}")}</th>
            <th scope="col">"bytes"</th><th scope="col">"of all"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}

/// A `<select>` of `choices` (plus "all") bound to one of the state's filters.
fn filter_select(
    label: &'static str,
    test_id: &'static str,
    choices: Vec<String>,
    get: fn(&PatternsState) -> Option<String>,
    set: fn(&mut PatternsState, Option<String>),
    state: RwSignal<PatternsState>,
) -> impl IntoView {
    let options = choices
        .into_iter()
        .map(|c| {
            let v = c.clone();
            let selected = move || state.with(|s| get(s).as_deref() == Some(v.as_str()));
            view! { <option value=c.clone() selected=selected>{c.clone()}</option> }
        })
        .collect_view();
    view! {
        <label class="field">{label}" "
            <select data-testid=test_id on:change=move |e| {
                let v = event_target_value(&e);
                state.update(|s| {
                    set(s, (!v.is_empty()).then_some(v));
                    s.picked = None;
                });
            }>
                <option value="" selected=move || state.with(|s| get(s).is_none())>"all"</option>
                {options}
            </select>
        </label>
    }
}

/// The heat map's controls: what the cells hold, their granularity, and the filters.
fn controls(
    p: &PatternsView,
    pm: &PredictedMatrix,
    state: RwSignal<PatternsState>,
    model_bytes: Signal<bool>,
) -> impl IntoView {
    let (pars, ops) = filter_choices(&p.patterns.matrix, &pm.entries);
    let has_ranks = !p.patterns.matrix.entries.is_empty();
    let modes = Mode::ALL
        .into_iter()
        .map(|m| {
            let disabled = move || m == Mode::Difference && !model_bytes.get();
            let label = match m {
                Mode::Observed => "observed",
                Mode::Predicted => "predicted from the layout",
                Mode::Difference => "difference",
            };
            view! {
                <button type="button" data-testid=format!("patterns-mode-{}", m.name())
                    aria-pressed=move || (state.with(|s| s.mode) == m).to_string()
                    disabled=disabled
                    title=move || if disabled() { "No model bytes: the Theory view's model gives them" } else { "" }
                    on:click=move |_| state.update(|s| s.mode = m)>{label}</button>
            }
        })
        .collect_view();
    let cells = [
        (Cells::Auto, "a", "automatic"),
        (Cells::Ranks, "r", "ranks"),
        (Cells::Nodes, "n", "nodes"),
    ]
    .map(|(c, v, label)| {
        let selected = move || state.with(|s| s.cells == c);
        let disabled = c == Cells::Ranks && !has_ranks;
        view! { <option value=v selected=selected disabled=disabled>{label}</option> }
    });
    view! {
        <div class="patterns-controls" data-testid="patterns-controls">
            <span role="group" aria-label="what the cells hold" class="segmented">{modes}</span>
            <label class="field">"cells "
                <select data-testid="patterns-cells" on:change=move |e| {
                    let c = match event_target_value(&e).as_str() {
                        "r" => Cells::Ranks,
                        "n" => Cells::Nodes,
                        _ => Cells::Auto,
                    };
                    state.update(|s| { s.cells = c; s.picked = None; });
                }>{cells.into_iter().collect_view()}</select>
            </label>
            {filter_select("parallelism", "patterns-parallelism", pars, |s| s.parallelism.clone(), |s, v| s.parallelism = v, state)}
            {filter_select("operation", "patterns-op", ops, |s| s.op.clone(), |s, v| s.op = v, state)}
        </div>
    }
}

/// The heat map's caption for `g` in `mode`.
fn caption(g: &Grid, mode: Mode) -> String {
    let unit = g.unit;
    let order = if unit == "rank" {
        " Ranks in node order, node blocks outlined."
    } else {
        ""
    };
    match mode {
        Mode::Observed => format!(
            "Bytes sent, {unit} (row) to {unit} (column), {} in all; darker is more (log scale).{order}",
            human_bytes(g.cells.iter().map(|c| c.observed).sum())
        ),
        Mode::Predicted if g.predicted_bytes => format!(
            "Bytes the layout and the Theory view's model predict, {unit} (row) to {unit} (column), {} in all.{order}",
            human_bytes(g.cells.iter().map(|c| c.predicted).sum())
        ),
        Mode::Predicted => format!(
            "The pairs the layout implies ({} pairs), {unit} (row) to {unit} (column).{order}",
            g.cells.iter().filter(|c| c.implied).count()
        ),
        Mode::Difference => format!(
            "Observed minus predicted bytes, {unit} (row) to {unit} (column): orange is more than predicted, purple less (symmetric log scale).{order}"
        ),
    }
}

fn body(
    i: Arc<Insights>,
    state: RwSignal<PatternsState>,
    predicted: PredictedSignal,
    on_outlier: Callback<Outlier>,
) -> impl IntoView {
    let p = of(&i);
    let fallback = Arc::new(p.patterns.predicted.clone());
    let pm = {
        let fallback = fallback.clone();
        Memo::new(move |_| predicted.get().unwrap_or_else(|| fallback.clone()))
    };
    let model_bytes =
        Signal::derive(move || pm.with(|m| m.entries.iter().any(|e| e.bytes.is_some())));
    let grid = {
        let i = i.clone();
        Memo::new(move |_| {
            let st = state.get();
            pm.with(|m| Arc::new(grid(&of(&i).patterns.matrix, &m.entries, &st)))
        })
    };
    // Without model bytes the difference has nothing to subtract.
    let mode = Signal::derive(move || match state.with(|s| s.mode) {
        Mode::Difference if !model_bytes.get() => Mode::Observed,
        m => m,
    });
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
    let against_layout = move || pm.with(|pr| departures(pr));
    let controls = pm.with_untracked(|m| controls(p, m, state, model_bytes));
    let outliers = outlier_rows(p, on_outlier);
    view! {
        <section class="panel patterns" data-testid="patterns">
            <h2>"Where traffic flows"</h2>
            {controls}
            <div class="heatmaps">
                <HeatMap grid=grid.into() mode=mode
                    picked=Signal::derive(move || state.with(|s| s.picked))
                    on_pick=Callback::new(move |at| state.update(|s| s.picked = at))
                    test_id="patterns-heatmap"
                    caption=Signal::derive(move || grid.with(|g| caption(g, mode.get()))) />
            </div>
            {against_layout}
            <h3>"The largest pairs"</h3>
            {move || grid.with(|g| top_pairs(g))}
            <h3>"Operations furthest off the fitted curve"</h3>
            <p class="hint">"Each opens on the timeline, around the kernel, with its collective picked."</p>
            <table class="data-table" data-testid="patterns-outliers">
                <thead><tr>
                    <th scope="col">"rank"</th><th scope="col">"communicator"</th><th scope="col">"operation"</th>
                    <th scope="col">"size"</th><th scope="col">"measured"</th><th scope="col">"fitted"</th>
                    <th scope="col">"LBNL"</th><th scope="col">"measured / fitted"</th>
                </tr></thead>
                <tbody>{outliers}</tbody>
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

/// How the observed matrix departs from the layout's, and the bytes per parallelism.
fn departures(pr: &PredictedMatrix) -> impl IntoView {
    let by_par: Vec<_> = pr
        .by_parallelism
        .iter()
        .map(|b| view! {
            <tr><td>{b.parallelism.clone()}</td><td class="num">{human_bytes(b.observed_bytes)}</td>
            <td class="num">{b.predicted_bytes.map(human_bytes).unwrap_or_else(|| "—".into())}</td></tr>
        })
        .collect();
    view! {
        <p class="hint" data-testid="patterns-departures">{format!(
            "Against the layout: {} observed pairs it does not imply, {} implied pairs that moved nothing, {} ranks silent in a group.",
            pr.unexpected.len(), pr.missing.len(), pr.silent.len()
        )}</p>
        <table class="data-table" data-testid="patterns-by-parallelism">
            <thead><tr><th scope="col">"parallelism"</th><th scope="col">"observed"</th><th scope="col">"predicted"</th></tr></thead>
            <tbody>{by_par}</tbody>
        </table>
    }
}

/// Nanoseconds, readably.
fn ns(v: f64) -> String {
    ms(v / 1e6)
}

/// The model's outliers (furthest off the fitted curve first), each a button that opens it on
/// the timeline.
fn outlier_rows(p: &PatternsView, on_outlier: Callback<Outlier>) -> Vec<impl IntoView> {
    p.patterns
        .model
        .outliers
        .iter()
        .map(|o| {
            let open = o.clone();
            view! {
                <tr data-testid="patterns-outlier" data-rank=o.rank data-comm=o.comm.clone()
                    data-op-count=o.op_count.clone() data-start=o.sync_start_ns data-end=o.sync_end_ns
                    data-own-start=o.start_ns data-own-end=o.end_ns>
                    <td><button type="button" class="link-button" data-testid="patterns-outlier-open"
                        title="Open on the timeline"
                        on:click=move |_| on_outlier.run(open.clone())>{format!("rank {}", o.rank)}</button></td>
                    <td class="mono">{o.comm.clone()}</td>
                    <td>{o.op.clone()}</td>
                    <td class="num">{human_bytes(o.msg_bytes)}</td>
                    <td class="num">{ns(o.measured_ns as f64)}</td>
                    <td class="num">{ns(o.fitted_ns)}</td>
                    <td class="num">{ns(o.lbnl_ns)}</td>
                    <td class="num">{format!("{:.2}", o.ratio)}</td>
                </tr>
            }
        })
        .collect()
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
