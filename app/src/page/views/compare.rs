//! The Compare view: the loaded run against another (issue 35), the `RunDiff` the first worker
//! sends shown as it is — the summary and the two runs' heads, the one ranked list of changes,
//! the signatures base → new, their paired distributions, the steps, the communicators and the
//! facts that differ. Runs with too little in common say so instead of a table of noise; a run
//! that failed is named and the other summarised.

use analyses::diff::{
    changes::time_text, profile::size_text, Change, CommDiff, RunDiff, RunSide, SigKey,
    SignatureDiff, StageDiff, TestSettings,
};
use leptos::prelude::*;
use ncclscope_app::page_logic::compare::{mirror, pair, ratio_text, significance_text, world_note};
use ncclscope_app::protocol::format::{human_duration, human_rate, percent, significant};
use std::sync::Arc;

use crate::page::app::state::app_state;
use crate::page::compare::chooser::DropZone;
use crate::page::compare::stacked::Stacked;
use crate::page::compare::{swap, Phase};

/// Distributions drawn: the signatures with the largest |impact|.
const CHARTS: usize = 8;
/// Rows of the per-step table.
const STEPS_SHOWN: usize = 50;

#[component]
pub fn Compare() -> impl IntoView {
    let s = app_state();
    let c = s.compare;
    let status = move || match c.phase.get() {
        Phase::Idle => String::new(),
        Phase::Loading => format!(
            "Reading {}: {} of {} files…",
            c.label.get(),
            c.rows
                .with(|r| r.iter().filter(|x| x.report.is_some()).count()),
            c.rows.with(Vec::len)
        ),
        Phase::Profiling => format!("Profiling {}…", c.label.get()),
        Phase::Comparing => "Comparing…".into(),
        Phase::Done => "Compared.".into(),
    };
    view! {
        <div class="view-page compare" data-testid="compare" data-phase=move || format!("{:?}", c.phase.get())>
            <h2>"Compare two runs"</h2>
            <p class="hint">"The loaded run against another, like with like: operations by parallelism, operation, message size and datatype; communicators by parallelism and ranks; steps by index. Both runs stay in this tab."</p>
            {(!s.is_bundle).then(|| view! { <DropZone /> })}
            <p class="hint" data-testid="compare-status">{status}</p>
            <OtherFiles />
            {move || c.diff.get().map(|d| body(d, s.compare.loaded_is_base))}
        </div>
    }
}

/// The other run's files while they load, and those that failed.
#[component]
fn OtherFiles() -> impl IntoView {
    let c = app_state().compare;
    let rows = move || {
        c.rows
            .get()
            .into_iter()
            .filter(|r| c.phase.get() != Phase::Done || r.report.as_ref().is_some_and(|v| v.error.is_some()))
            .map(|r| {
                let state = match &r.report {
                    Some(v) => match &v.error {
                        Some(e) => format!("error: {e}"),
                        None => format!("loaded ({})", v.kind),
                    },
                    None => match &r.stage {
                        Some(stage) => stage.clone(),
                        None => format!("{} %", (r.read * 100).checked_div(r.size).unwrap_or(0)),
                    },
                };
                view! { <li data-testid="compare-file" data-file=r.name.clone()><b>{r.name.clone()}</b>" "{state}</li> }
            })
            .collect::<Vec<_>>()
    };
    view! { <ul class="compare-files">{rows}</ul> }
}

fn body(d: Arc<RunDiff>, loaded_is_base: RwSignal<bool>) -> impl IntoView {
    let s = app_state();
    let failed = d.base.error.is_some() || d.new.error.is_some();
    let note =
        world_note(&d).map(|n| view! { <p class="hint" data-testid="compare-basis">{n}</p> });
    let little = (!failed && !d.common.comparable).then(|| {
        view! {
            <p class="headline" data-testid="compare-nothing-in-common">{format!(
                "These runs have too little in common for a table: they share {} signatures, {} of the base's NCCL time and {} of the new's; {} are only in the base, {} only in the new run. Only their shape, set-ups, versions, settings and hosts are compared.",
                d.common.shared_signatures, percent(d.common.base_share), percent(d.common.new_share),
                d.common.base_only, d.common.new_only
            )}</p>
        }
    });
    view! {
        <section class="panel" data-testid="compare-result">
            <p class="headline" data-testid="compare-summary">{d.summary.clone()}</p>
            <div class="compare-heads">
                {head("Base", &d.base)}
                {head("New", &d.new)}
                <button data-testid="compare-swap" disabled=failed || s.is_bundle
                    title="Make the other run the baseline"
                    on:click=move |_| swap(s)>"Swap base and new"</button>
                <span class="hint">{move || if loaded_is_base.get() { "The loaded run is the base." } else { "The loaded run is the new run." }}</span>
            </div>
            {note}
            {little}
            {(!failed).then(|| view! {
                {changes(&d)}
                {signatures(&d)}
                {distributions(&d)}
                {steps(&d)}
                <Stacked />
                {communicators(&d)}
                {facts(&d)}
            })}
        </section>
    }
}

fn head(which: &'static str, side: &RunSide) -> impl IntoView {
    let text = match &side.error {
        Some(e) => format!("could not be read: {e}"),
        None => format!(
            "{} on {} hosts, {} operations ({} timed), {} signatures, {} communicators{}{}",
            side.size.ranks_text(),
            side.size.hosts,
            side.size.operations,
            side.size.timed_operations,
            side.signatures,
            side.communicators,
            side.size
                .iterations
                .map(|i| format!(", {i} iterations"))
                .unwrap_or_default(),
            if side.nccl_versions.is_empty() {
                String::new()
            } else {
                format!(", NCCL {}", side.nccl_versions.join(", "))
            }
        ),
    };
    view! {
        <p class="compare-head" data-testid=format!("compare-{}", which.to_lowercase()) class:bad=side.error.is_some()>
            <b>{which}": "</b>{side.label.clone()}" — "{text}
        </p>
    }
}

fn find<'a>(d: &'a RunDiff, key: &SigKey) -> Option<&'a SignatureDiff> {
    d.signatures.iter().find(|s| &s.key == key)
}

/// The ranked list: what, base → new (of its first signature), ratio, significant (the test).
fn changes(d: &RunDiff) -> impl IntoView {
    if d.changes.is_empty() {
        return view! { <h3>"What changed"</h3><p data-testid="compare-no-change">"No significant change."</p> }.into_any();
    }
    let rows: Vec<_> = d
        .changes
        .iter()
        .enumerate()
        .map(|(i, ch)| change_row(d, i, ch))
        .collect();
    view! {
        <h3>"What changed, largest impact first"</h3>
        <p class="hint">{format!(
            "Impact: the change of the kernels' time per {}, + slower. Significant: {} and at least {} away from ×1.",
            d.basis.per, test_text(&d.test), percent(d.test.min_effect)
        )}</p>
        <table class="data-table" data-testid="compare-changes">
            <thead><tr>
                <th scope="col">"#"</th><th scope="col">"kind"</th><th scope="col">"what"</th>
                <th scope="col">"median time, base → new"</th><th scope="col">"ratio"</th>
                <th scope="col">"significant"</th><th scope="col">"impact"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}

fn change_row(d: &RunDiff, i: usize, ch: &Change) -> impl IntoView {
    let sig = ch.signatures.first().and_then(|k| find(d, k));
    let kind = serde_json::to_value(ch.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let kind_attr = kind.clone();
    view! {
        <tr data-testid="compare-change" data-kind=kind_attr
            data-signature=ch.signatures.first().map(SigKey::text).unwrap_or_default()>
            <td class="num">{i + 1}</td>
            <td>{kind}</td>
            <td>{ch.what.clone()}</td>
            <td>{sig.map(|s| pair(s.base.median_ns, s.new.median_ns, human_duration)).unwrap_or_default()}</td>
            <td class="num">{sig.map(|s| ratio_text(s.time_ratio)).unwrap_or_default()}</td>
            <td>{sig.map(|s| significance_text(s, &d.test)).unwrap_or_default()}</td>
            <td class="num">{time_text(ch.impact_ns)}</td>
        </tr>
    }
}

fn test_text(t: &TestSettings) -> String {
    match t.method {
        analyses::diff::Test::Bootstrap => format!(
            "the bootstrap's {} % interval of the ratio of medians ({} resamples) excludes ×1",
            significant((1.0 - t.alpha) * 100.0, 3),
            t.resamples
        ),
        analyses::diff::Test::RankSum => {
            format!(
                "the Mann–Whitney rank-sum test rejects no change at α = {}",
                t.alpha
            )
        }
    }
}

/// Per signature, base → new.
fn signatures(d: &RunDiff) -> impl IntoView {
    if d.signatures.is_empty() {
        return ().into_any();
    }
    let opt = |v: Option<String>| v.unwrap_or_else(|| "—".into());
    let rows: Vec<_> = d
        .signatures
        .iter()
        .map(|s| {
            let (b, n) = (&s.base, &s.new);
            let tuning = format!(
                "{} / {} / {} → {} / {} / {}",
                opt(b.algorithm.clone()), opt(b.protocol.clone()), opt(b.channels.map(|c| c.to_string())),
                opt(n.algorithm.clone()), opt(n.protocol.clone()), opt(n.channels.map(|c| c.to_string()))
            );
            view! {
                <tr data-testid="compare-signature" data-signature=s.key.text() class:significant=s.significant>
                    <td>{s.key.text()}{s.new_bytes.map(|b| format!(" (new: {})", size_text(b)))}</td>
                    <td>{format!("{:?}", s.presence).to_lowercase()}</td>
                    <td class="num">{format!("{} → {}", b.count, n.count)}</td>
                    <td class="num">{format!("{} → {}", size_text(b.total_bytes), size_text(n.total_bytes))}</td>
                    <td class="num">{pair(b.median_ns, n.median_ns, human_duration)}</td>
                    <td class="num">{pair(b.p95_ns, n.p95_ns, human_duration)}</td>
                    <td class="num">{pair(b.bus_bw_gbps, n.bus_bw_gbps, human_rate)}</td>
                    <td class="num">{pair(b.bus_efficiency, n.bus_efficiency, percent)}</td>
                    <td>{tuning}</td>
                    <td class="num">{ratio_text(s.time_ratio)}</td>
                    <td>{significance_text(s, &d.test)}</td>
                    <td class="num">{time_text(s.impact_ns)}</td>
                </tr>
            }
        })
        .collect();
    view! {
        <h3>"Per signature, base → new"</h3>
        <div class="table-scroll">
        <table class="data-table" data-testid="compare-signatures">
            <thead><tr>
                <th scope="col">"signature"</th><th scope="col">"in"</th><th scope="col">"count"</th>
                <th scope="col">"bytes"</th><th scope="col">"median time"</th><th scope="col">"p95 time"</th>
                <th scope="col">"bus bandwidth"</th><th scope="col">"bus efficiency"</th>
                <th scope="col">"algorithm / protocol / channels"</th><th scope="col">"time ratio"</th>
                <th scope="col">"significant"</th><th scope="col">"impact"</th>
            </tr></thead>
            <tbody>{rows}</tbody>
        </table>
        </div>
    }
    .into_any()
}

/// Each signature's two distributions of kernel time, mirrored on shared bins.
fn distributions(d: &RunDiff) -> impl IntoView {
    let mut shown: Vec<&SignatureDiff> = d
        .signatures
        .iter()
        .filter(|s| s.distribution.is_some())
        .collect();
    shown.sort_by(|a, b| b.impact_ns.abs().total_cmp(&a.impact_ns.abs()));
    shown.truncate(CHARTS);
    if shown.is_empty() {
        return ().into_any();
    }
    let charts: Vec<_> = shown.into_iter().map(mirror_chart).collect();
    view! {
        <h3>"Kernel times, base (up) and new (down)"</h3>
        <p class="hint">{format!("The {CHARTS} signatures with the largest impact; each half is scaled to its run's fullest bin.")}</p>
        <div class="chart-grid-2">{charts}</div>
    }
    .into_any()
}

fn mirror_chart(s: &SignatureDiff) -> impl IntoView {
    const W: f64 = 420.0;
    const H: f64 = 170.0;
    const LEFT: f64 = 44.0;
    const TOP: f64 = 16.0;
    const HALF: f64 = 55.0;
    let plot_w = W - LEFT - 10.0;
    let mid = TOP + HALF;
    let Some(m) = s
        .distribution
        .as_ref()
        .and_then(|d| mirror(d, plot_w, HALF))
    else {
        return ().into_any();
    };
    let bars: Vec<_> = m
        .bins
        .iter()
        .map(|b| {
            let x = LEFT + b.x + 0.5;
            let w = (b.width - 1.0).max(0.5);
            view! {
                <rect class="compare-base" x=x y=mid - b.base_h width=w height=b.base_h>
                    <title>{format!("base: {} kernels of {}", b.base, b.range)}</title>
                </rect>
                <rect class="compare-new" x=x y=mid width=w height=b.new_h>
                    <title>{format!("new: {} kernels of {}", b.new, b.range)}</title>
                </rect>
            }
        })
        .collect();
    let ticks: Vec<_> = m
        .ticks
        .iter()
        .map(|(x, label)| {
            let x = LEFT + x;
            view! {
                <line class="chart-axis" x1=x x2=x y1=mid + HALF y2=mid + HALF + 4.0 />
                <text class="chart-label" x=x y=mid + HALF + 15.0 text-anchor="middle">{label.clone()}</text>
            }
        })
        .collect();
    view! {
        <figure>
            <svg class="chart" data-testid="compare-distribution" data-signature=s.key.text()
                viewBox=format!("0 0 {W} {H}") role="img"
                aria-label=format!("{}: kernel times of the base run above the line, of the new run below", s.key.text())>
                <text class="chart-label" x=LEFT y=11>{format!("{} · {}", s.key.text(), ratio_text(s.time_ratio))}</text>
                {bars}
                <line class="chart-axis" x1=LEFT x2=W - 10.0 y1=mid y2=mid />
                <line class="chart-axis" x1=LEFT x2=LEFT y1=TOP y2=mid + HALF />
                <text class="chart-label" x=LEFT - 4.0 y=TOP + 8.0 text-anchor="end">{m.base_max.to_string()}</text>
                <text class="chart-label" x=LEFT - 4.0 y=mid - 3.0 text-anchor="end">"base"</text>
                <text class="chart-label" x=LEFT - 4.0 y=mid + 10.0 text-anchor="end">"new"</text>
                <text class="chart-label" x=LEFT - 4.0 y=mid + HALF text-anchor="end">{m.new_max.to_string()}</text>
                {ticks}
                <text class="chart-axis-name" x=LEFT + plot_w / 2.0 y=H - 2.0 text-anchor="middle">"kernel time (log scale); bar height: kernels"</text>
            </svg>
        </figure>
    }
    .into_any()
}

fn stage_row(st: &StageDiff, test: &TestSettings) -> impl IntoView {
    let ms = |v: f64| format!("{} ms", significant(v, 3));
    let sig = match (st.significant, st.interval, st.p_value) {
        (_, None, None) => "—".to_string(),
        (yes, Some([a, b]), _) => format!(
            "{} ({} {}–{})",
            if yes { "yes" } else { "no" },
            test.method.name(),
            ratio_text(Some(a)),
            ratio_text(Some(b))
        ),
        (yes, None, Some(p)) => format!(
            "{} ({} p = {})",
            if yes { "yes" } else { "no" },
            test.method.name(),
            significant(p, 2)
        ),
    };
    view! {
        <tr data-testid="compare-stage">
            <td>{st.stage.clone()}</td>
            <td class="num">{pair(st.base_ms, st.new_ms, ms)}</td>
            <td class="num">{ratio_text(st.ratio)}</td>
            <td>{sig}</td>
        </tr>
    }
}

/// Step time by stage, where both runs have steps.
fn steps(d: &RunDiff) -> impl IntoView {
    let st = &d.steps;
    if !st.available {
        return view! {
            <h3>"Steps"</h3>
            <p class="hint" data-testid="compare-steps-none">{st.message.clone().unwrap_or_else(|| "The runs show no steps to compare.".into())}</p>
        }
        .into_any();
    }
    let rows: Vec<_> = st
        .step
        .iter()
        .chain(st.stages.iter())
        .map(|x| stage_row(x, &d.test))
        .collect();
    let per_step: Vec<_> = st
        .per_step
        .iter()
        .take(STEPS_SHOWN)
        .map(|p| view! { <tr><td class="num">{p.step}</td><td class="num">{format!("{:.2} → {:.2} ms", p.base_ms, p.new_ms)}</td></tr> })
        .collect();
    view! {
        <h3>"Step time by stage (median over steps, the slowest rank's)"</h3>
        <p class="hint">{format!(
            "{} steps in the base, {} in the new run, matched by index{}.{}",
            st.steps_base, st.steps_new,
            st.source_base.as_ref().map(|s| format!(" (from {s})")).unwrap_or_default(),
            st.communication_ms.map(|c| format!(" The NCCL kernels' time change accounts for {c:+.2} ms per step.")).unwrap_or_default()
        )}</p>
        <table class="data-table" data-testid="compare-steps">
            <thead><tr><th scope="col">"stage"</th><th scope="col">"base → new"</th><th scope="col">"ratio"</th><th scope="col">"significant"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
        <details><summary>"Every step, base → new"</summary>
            <table class="data-table"><tbody>{per_step}</tbody></table>
        </details>
    }
    .into_any()
}

fn comm_row(c: &CommDiff) -> impl IntoView {
    let setup = c
        .setup
        .iter()
        .map(|x| format!("{}: {} → {}", x.what, x.base, x.new))
        .collect::<Vec<_>>()
        .join("; ");
    view! {
        <tr data-testid="compare-comm" class:significant=c.significant>
            <td>{format!("{} {:?}", c.parallelism, c.global_ranks)}</td>
            <td>{format!("{:?}", c.presence).to_lowercase()}</td>
            <td class="num">{format!("{} → {}", c.base_operations, c.new_operations)}</td>
            <td class="num">{ratio_text(c.time_ratio)}</td>
            <td>{if c.significant { "yes" } else { "no" }}</td>
            <td>{setup}</td>
        </tr>
    }
}

/// The communicators, matched by parallelism and ranks.
fn communicators(d: &RunDiff) -> impl IntoView {
    if d.communicators.is_empty() {
        return ().into_any();
    }
    let rows: Vec<_> = d.communicators.iter().map(comm_row).collect();
    view! {
        <h3>"Communicators"</h3>
        <p class="hint">"Matched by parallelism and global ranks; the ratio is of transfer times (each collective's fastest member), each divided by its signature's base median."</p>
        <table class="data-table" data-testid="compare-comms">
            <thead><tr><th scope="col">"communicator"</th><th scope="col">"in"</th><th scope="col">"operations"</th>
                <th scope="col">"transfer ratio"</th><th scope="col">"significant"</th><th scope="col">"set-up changes"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}

/// Versions, settings, topology and transports that differ.
fn facts(d: &RunDiff) -> impl IntoView {
    let f = &d.facts;
    let mut rows: Vec<(String, String, String)> = Vec::new();
    if f.versions_base != f.versions_new {
        rows.push((
            "NCCL version".into(),
            f.versions_base.join(", "),
            f.versions_new.join(", "),
        ));
    }
    for x in &f.settings {
        rows.push((x.name.clone(), x.base.clone(), x.new.clone()));
    }
    if f.hosts_base != f.hosts_new {
        rows.push((
            "hosts".into(),
            f.hosts_base.join("; "),
            f.hosts_new.join("; "),
        ));
    }
    for c in &d.communicators {
        for x in &c.setup {
            rows.push((
                format!("{} {:?}: {}", c.parallelism, c.global_ranks, x.what),
                x.base.clone(),
                x.new.clone(),
            ));
        }
    }
    let body = if rows.is_empty() {
        view! { <p class="hint" data-testid="compare-facts-same">"Versions, settings, hosts and communicator set-ups are the same."</p> }.into_any()
    } else {
        let rows: Vec<_> = rows
            .into_iter()
            .map(|(name, b, n)| view! { <tr data-testid="compare-fact"><td>{name}</td><td>{b}</td><td>{n}</td></tr> })
            .collect();
        view! {
            <table class="data-table" data-testid="compare-facts">
                <thead><tr><th scope="col">"what"</th><th scope="col">"base"</th><th scope="col">"new"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        }
        .into_any()
    };
    view! { <h3>"Versions, settings, topology and transports that differ"</h3>{body} }
}
