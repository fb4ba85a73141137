//! The Overview, what a drop opens: beside the timeline, what was loaded and how well the logs
//! and the exports fused, the inferred layout, per parallelism the time and bytes of its
//! collectives and their median bus efficiency against the topology's limit, and the theory's
//! ratio. Every figure is a link to the view that explains it (or to the timeline filtered to
//! it). The built-in demo's deliberate imperfections are said to be deliberate.

use leptos::prelude::*;
use ncclscope_app::protocol::format::{human_bytes, human_duration, human_rate, percent};
use ncclscope_app::protocol::groups::GroupEvidence;
use ncclscope_app::protocol::overview::{OverviewView, ParallelismFigures};
use std::collections::BTreeMap;

use crate::page::app::state::app_state;
use crate::page::app::state::AppState;
use crate::page::timeline::pane::TimelinePane;
use crate::page::views::registry;

/// What to drop, and how to produce it.
#[component]
pub fn EmptyState() -> impl IntoView {
    view! {
        <section class="empty" data-testid="empty-state">
            <h2>"Drop NCCL logs and Nsight Systems exports anywhere on this page"</h2>
            <p>"Or open them with “Open files…” (or a whole folder with “Open folder…”), or press “Load demo run” to see a synthetic run of 8 ranks. Drop every rank's files together: the logs say which collective each rank called, the exports when its kernels ran."</p>
            <ul>
                <li>
                    <b>"NCCL debug logs"</b>" (text, one per process or one combined): run the job with "
                    <code>"NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL,INIT,GRAPH NCCL_DEBUG_FILE=nccl_%h_%p.log"</code>
                    " (optionally "<code>"NCCL_DEBUG_TIMESTAMP_FORMAT=\"%s.%6f\""</code>"). "
                    <code>"COLL"</code>" logs every collective, "<code>"INIT"</code>" the ranks and communicators, "
                    <code>"GRAPH"</code>" the topology."
                </li>
                <li>
                    <b>"Nsight Systems exports"</b>" ("<code>".sqlite"</code>", one per process or node): "
                    <code>"nsys profile --trace=cuda,nvtx -o report …"</code>" then "
                    <code>"nsys export --type sqlite report.nsys-rep"</code>"."
                </li>
                <li>
                    <b>"PyTorch profiler traces"</b>" ("<code>"*.pt.trace.json"</code>", plain or gzip, one per rank) from "
                    <code>"torch.profiler.profile(..., record_shapes=True)"</code>": alone, or beside the logs of the same run."
                </li>
                <li>
                    <b>"Stage files"</b>" ("<code>"step,rank,stage,duration_ms"</code>", CSV or JSON Lines) for the Steps view, alone or with the rest."
                </li>
                <li>"Or press “Load demo run” to see a synthetic multi-rank run."</li>
            </ul>
        </section>
    }
}

/// The Overview view: the summary beside the timeline.
#[component]
pub fn Overview() -> impl IntoView {
    let s = app_state();
    view! {
        <Show when=move || s.has_files() fallback=|| view! { <EmptyState /> }>
            <div class="overview-layout">
                <aside class="overview-panel" data-testid="overview" aria-label="Run overview">
                    <h2>"Run overview"</h2>
                    <DemoNote />
                    <crate::page::panels::insights::diagnosis::DiagnosisCard
                        insights=s.insights
                        on_open=Callback::new(move |()| { registry::open(&s, "diagnosis"); }) />
                    <crate::page::panels::insights::steps::StepsCard
                        insights=s.insights
                        on_open=Callback::new(move |()| { registry::open(&s, "steps"); }) />
                    {move || s.overview.with(|o| o.as_ref().map(captures))}
                    <Loaded />
                    {move || s.overview.get().map(|o| view! {
                        <Fusion o=o.clone() />
                        <Layout o=o.clone() />
                        <Parallelisms rows=o.parallelisms.clone() />
                        <TheoryRatio />
                        <Warnings count=o.warnings />
                    })}
                    {move || (s.overview.with(Option::is_none) && !s.analysing.get()).then(|| view! {
                        <p class="hint">"Reading the files…"</p>
                    })}
                </aside>
                <TimelinePane compact=true />
            </div>
        </Show>
    }
}

/// A figure that opens the view that explains it.
fn go(s: AppState, slug: &'static str, text: String, title: &'static str) -> impl IntoView {
    view! {
        <button class="link" data-go=slug title=title on:click=move |_| {
            registry::open(&s, slug);
        }>{text}</button>
    }
}

/// Applies `filter` to the timeline (keeping the clock) and shows the Timeline view.
fn filter_timeline(s: AppState, filter: &str) {
    let original_clock = s.timeline_view.with_untracked(|v| v.original_clock);
    s.ask_view(timeline::TimelineView {
        filter: filter.to_string(),
        original_clock,
    });
    registry::open(&s, "timeline");
}

/// A figure that opens the timeline filtered to it.
fn filtered(s: AppState, filter: &'static str, text: String) -> impl IntoView {
    view! {
        <button class="link" data-filter=filter title=format!("Show these on the timeline (filter {filter})")
            on:click=move |_| filter_timeline(s, filter)>{text}</button>
    }
}

/// The demo's deliberate imperfections, said to be deliberate.
#[component]
fn DemoNote() -> impl IntoView {
    let s = app_state();
    move || {
        s.demo.get().filter(|d| !d.is_empty()).map(|items| {
            view! {
                <section class="card demo-note" data-testid="demo-note">
                    <p>
                        <b>"This is the built-in demo"</b>
                        ": a synthetic run of 8 ranks made by the project's generator, with imperfections real runs have, put there on purpose so that the notes and the alignment have something to show:"
                    </p>
                    <ul>{items.into_iter().map(|i| view! { <li>{i}</li> }).collect_view()}</ul>
                </section>
            }
        })
    }
}

/// Several captures laid on one clock: said, not hidden.
fn captures(o: &OverviewView) -> Option<impl IntoView> {
    if o.captures.len() < 2 {
        return None;
    }
    let first = o.captures[0].start_ns;
    let parts: Vec<String> = o
        .captures
        .iter()
        .map(|c| {
            format!(
                "{} ({} to {})",
                c.hosts.join(", "),
                human_duration((c.start_ns - first) as f64),
                human_duration((c.end_ns - first) as f64)
            )
        })
        .collect();
    let gap = o.captures[1].start_ns - o.captures[0].end_ns;
    Some(view! {
        <section class="card warn" data-testid="captures" role="note">
            <p>
                <b>{format!("These files look like {} separate captures", o.captures.len())}</b>
                {format!(
                    ": {}. They are {} apart with no kernel in between, and are laid on one clock as recorded. Drop each capture's files on their own to see them apart.",
                    parts.join("; "),
                    human_duration(gap as f64)
                )}
            </p>
        </section>
    })
}

/// What was loaded: ranks, nodes, files by kind, notes by severity.
#[component]
fn Loaded() -> impl IntoView {
    let s = app_state();
    let files = move || {
        s.rows.with(|rows| {
            let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
            let mut severity: BTreeMap<String, usize> = BTreeMap::new();
            let mut failed = 0;
            for r in rows {
                let Some(report) = &r.report else { continue };
                if report.error.is_some() {
                    failed += 1;
                    continue;
                }
                let kind = match report.kind.as_str() {
                    "nccl-log" => "NCCL log",
                    "nsys-sqlite" => "Nsight Systems export",
                    "aggregate" => "aggregate",
                    other => other,
                };
                *kinds.entry(kind.to_string()).or_default() += 1;
                for k in &report.note_kinds {
                    *severity.entry(k.severity.clone()).or_default() += k.count;
                }
            }
            (rows.len(), kinds, severity, failed)
        })
    };
    view! {
        <section class="card" data-testid="overview-loaded">
            <h3>"Loaded"</h3>
            <p>
                {move || s.overview.with(|o| o.as_ref().map(|o| view! {
                    {go(s, "ranks", plural(o.ranks, "rank"), "The ranks the logs name, with their operations")}
                    " on "
                    {go(s, "topology", plural(o.nodes.len(), "node"), "The nodes' topology")}
                    " · "
                }))}
                {move || {
                    let (n, kinds, _, failed) = files();
                    let kinds: Vec<String> = kinds.iter().map(|(k, c)| plural(*c, k)).collect();
                    let failed = (failed > 0).then(|| format!(", {failed} not read"));
                    view! {
                        {go(s, "inputs", plural(n, "file"), "Every file with its contents and problems")}
                        {(!kinds.is_empty()).then(|| format!(" ({}{})", kinds.join(", "), failed.unwrap_or_default()))}
                    }
                }}
            </p>
            <p data-testid="overview-notes">
                {move || {
                    let (_, _, severity, _) = files();
                    let total: usize = severity.values().sum();
                    if total == 0 {
                        return view! { "No notes on the files." }.into_any();
                    }
                    let parts: Vec<String> = [("error", "error"), ("warning", "warning"), ("info", "info note")]
                        .iter()
                        .filter_map(|(k, label)| severity.get(*k).map(|n| plural(*n, label)))
                        .collect();
                    let deliberate = s.demo.with(|d| d.as_ref().is_some_and(|d| !d.is_empty()));
                    view! {
                        "Notes on the files: "
                        {go(s, "notes", parts.join(", "), "Every note with its line")}
                        {deliberate.then_some(" (the demo's, on purpose)")}
                    }
                    .into_any()
                }}
            </p>
        </section>
    }
}

/// How well the logs and the exports fused.
#[component]
fn Fusion(o: OverviewView) -> impl IntoView {
    let s = app_state();
    if o.kernels == 0 {
        let text = if o.log_ops > 0 {
            "Logs only: the timeline and the alignment need the Nsight Systems exports (.sqlite) of the same processes."
        } else {
            "No NCCL kernels in the exports."
        };
        return view! { <section class="card" data-testid="overview-fusion"><h3>"Logs × exports"</h3><p>{text}</p></section> }.into_any();
    }
    if o.log_ops == 0 {
        return view! {
            <section class="card" data-testid="overview-fusion">
                <h3>"Logs × exports"</h3>
                <p>{format!("{} NCCL kernels, no log: drop the processes' NCCL logs to see what each kernel ran.", o.kernels)}</p>
            </section>
        }
        .into_any();
    }
    let share = o.matched_kernels as f64 / o.kernels as f64;
    let unmatched = o.kernels.saturating_sub(o.matched_kernels);
    view! {
        <section class="card" data-testid="overview-fusion">
            <h3>"Logs × exports"</h3>
            <p class="figure">
                {go(s, "alignment", percent(share), "The alignment of every rank's log lines with its kernels")}
                {format!(" of {} NCCL kernels matched to their log line", o.kernels)}
            </p>
            <ul class="facts">
                {(unmatched > 0).then(|| view! { <li>{filtered(s, "status:unmatched", plural(unmatched as usize, "kernel"))}" without a log line (hollow on the timeline)"</li> })}
                {(o.unmatched_log_ops > 0).then(|| view! { <li>{go(s, "alignment", plural(o.unmatched_log_ops as usize, "log line"), "Orphan lines per rank")}" without a kernel"</li> })}
                {(o.low_confidence > 0).then(|| view! { <li>{filtered(s, "status:low", plural(o.low_confidence as usize, "match"))}" of low confidence (flagged)"</li> })}
                {(o.fused_kernels > 0).then(|| view! { <li>{filtered(s, "status:fused", plural(o.fused_kernels as usize, "kernel"))}" ran fused Send/Recv lines"</li> })}
                {(o.duplicate_lines > 0).then(|| view! { <li>{go(s, "alignment", plural(o.duplicate_lines as usize, "line"), "Duplicated lines per rank")}" logged twice"</li> })}
                {(o.log_only + o.kernels_only > 0).then(|| view! { <li>{format!("{} processes in the logs only, {} in the exports only", o.log_only, o.kernels_only)}</li> })}
            </ul>
        </section>
    }
    .into_any()
}

/// The inferred layout and its confidence.
#[component]
fn Layout(o: OverviewView) -> impl IntoView {
    let s = app_state();
    let text = o
        .layout
        .clone()
        .unwrap_or_else(|| "not inferred".to_string());
    view! {
        <section class="card" data-testid="overview-layout">
            <h3>"Layout"</h3>
            <p class="figure">
                {go(s, "communicators", text, "The communicators and the parallelism each serves, with the evidence")}
                {o.layout.is_some().then(|| format!(" · confidence {:.2}", o.layout_confidence))}
                {o.iterations.map(|n| format!(" · {}", plural(n as usize, "iteration")))}
            </p>
            <details>
                <summary>"Why"</summary>
                <p class="evidence">{o.layout_evidence.clone()}</p>
            </details>
        </section>
    }
}

/// Per parallelism: time, bytes and median bus efficiency against the limit.
#[component]
fn Parallelisms(rows: Vec<ParallelismFigures>) -> impl IntoView {
    let s = app_state();
    if rows.is_empty() {
        return ().into_any();
    }
    let body = rows
        .into_iter()
        .map(|p| {
            let filter: &'static str = match p.name.as_str() {
                "TP" => "par:tp",
                "DP" => "par:dp",
                "PP" => "par:pp",
                "EP" => "par:ep",
                "CP" => "par:cp",
                _ => "par:unknown",
            };
            let time = format!(
                "{}{}",
                human_duration(p.busy_ns_per_rank),
                p.busy_share.map_or(String::new(), |x| format!(" ({})", percent(x)))
            );
            let efficiency = if p.scalars_only {
                view! { <span title=ncclscope_app::protocol::views::SCALARS_ONLY>"— (scalars only)"</span> }.into_any()
            } else {
                match (p.median_bus_efficiency, p.median_bus_bw_gbps, &p.limit) {
                    (Some(e), Some(bw), Some((link, limit))) => go(
                        s,
                        "bandwidth",
                        format!("{} ({} of {link} {})", percent(e), human_rate(bw), human_rate(*limit)),
                        "Bus bandwidth (nccl-tests' definition) over the bottleneck link's: every kernel's on the bandwidth plot",
                    )
                    .into_any(),
                    (_, Some(bw), _) => go(s, "bandwidth", format!("{} (no link limit known)", human_rate(bw)), "Bus bandwidth per kernel").into_any(),
                    _ => view! { "—" }.into_any(),
                }
            };
            view! {
                <tr data-parallelism=p.name.clone()>
                    <th scope="row">{go(s, "communicators", p.name.clone(), "Its communicators")}</th>
                    <td class="num" title="Time in its kernels per rank, and its share of the rank's span of kernels">
                        {filtered(s, filter, time)}
                    </td>
                    <td class="num" title="Bytes its operations carried per rank">
                        {go(s, "operations", human_bytes(p.bytes_per_rank as u64), "Operations and bytes per type and rank")}
                    </td>
                    <td class="num">{efficiency}</td>
                </tr>
                {(!p.groups.is_empty()).then(|| group_notes(&p.groups))}
            }
        })
        .collect_view();
    view! {
        <section class="card" data-testid="overview-parallelism">
            <h3>"Communication per parallelism"</h3>
            <div class="table-wide">
                <table class="overview-table">
                    <thead><tr>
                        <th scope="col">"parallelism"</th>
                        <th scope="col">"time per rank"</th>
                        <th scope="col">"bytes per rank"</th>
                        <th scope="col" title="Median bus bandwidth over the bottleneck link's bandwidth">"median bus efficiency"</th>
                    </tr></thead>
                    <tbody>{body}</tbody>
                </table>
            </div>
        </section>
    }
    .into_any()
}

/// A parallelism's process groups, as the PyTorch traces describe them, each with whether it
/// agrees with the inferred parallelism: a row of its own under the parallelism's figures (the
/// overview's column is too narrow for another column).
fn group_notes(groups: &[GroupEvidence]) -> impl IntoView {
    let items = groups
        .iter()
        .map(|g| {
            view! {
                <li data-testid="overview-group" data-verdict=g.verdict.word()
                    data-description=g.description.clone().unwrap_or_default()>{g.text.clone()}</li>
            }
        })
        .collect_view();
    view! {
        <tr class="groups-row">
            <td colspan="4" class="groups" title="The process groups the PyTorch traces name, weighed against the inferred parallelism">
                "process groups: "<ul>{items}</ul>
            </td>
        </tr>
    }
}

/// Observed over theoretical volume per parallelism, and where the model's inputs came from.
#[component]
fn TheoryRatio() -> impl IntoView {
    let s = app_state();
    move || {
        let view = s.theory.view.get()?;
        let ratios: Vec<String> = view
            .rows
            .iter()
            .filter(|r| r.parallelism != "all" && r.ratio != "—")
            .map(|r| format!("{} {}", r.parallelism, r.ratio))
            .collect();
        if ratios.is_empty() {
            return None;
        }
        let from_run = s.theory.inferred.with(Vec::len);
        Some(view! {
            <section class="card" data-testid="overview-theory">
                <h3>"Observed ÷ theory (volume)"</h3>
                <p class="figure">{go(s, "theory", ratios.join(" · "), "The theory's volume per parallelism beside the observed")}</p>
                <p class="hint">
                    {format!("{from_run} of the model's inputs come from the run (the layout, the iterations, the bytes per element); the others are assumed (the thesis' dense model, or what you set): set them in Theory.")}
                </p>
            </section>
        })
    }
}

#[component]
fn Warnings(count: usize) -> impl IntoView {
    let s = app_state();
    let text = if count == 0 {
        "No NCCL WARN line in the logs.".to_string()
    } else {
        plural(count, "NCCL WARN line")
    };
    view! {
        <section class="card" data-testid="overview-warnings">
            <p>{go(s, "warnings", text, "The logs' NCCL WARN lines with file and line")}</p>
        </section>
    }
}

/// `n thing` or `n things`.
fn plural(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else if let Some(stem) = thing.strip_suffix('h') {
        format!("{n} {stem}hes")
    } else {
        format!("{n} {thing}s")
    }
}
