//! Above the timeline: the filter (a query the worker reads with `timeline::Filter`), the clock
//! switch, what the filter kept, and the legend of colours and marks.

use leptos::prelude::*;
use timeline::TimelineView;

use crate::page::timeline::canvas::{COLOURS, PAR_COLOURS};

/// What the worker said of the last filter and clock.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ViewStatus {
    pub kept: u64,
    pub total: u64,
    pub unmatched: u64,
    pub low_confidence: u64,
    /// Why the last query was refused (the timeline kept the one before).
    pub error: Option<String>,
}

const PLACEHOLDER: &str = "op:allreduce,broadcast par:tp size:>=1MiB bw:<100 -rank:0-3";

/// The filter box, the clock switch and the legend. `applied` is what the timeline shows;
/// `on_apply` asks the worker for another view; `compact` folds the legend and the filter's
/// help away (the Overview, where the timeline shares the view).
#[component]
pub fn TimelineControls(
    applied: Signal<TimelineView>,
    status: Signal<Option<ViewStatus>>,
    on_apply: Callback<TimelineView>,
    #[prop(optional)] compact: bool,
) -> impl IntoView {
    // The text being typed; it follows the applied query when that changes (a link, a clear).
    let text = RwSignal::new(String::new());
    Effect::new(move |_| text.set(applied.with(|a| a.filter.clone())));
    let apply = move || {
        on_apply.run(TimelineView {
            filter: text.get_untracked(),
            original_clock: applied.with_untracked(|a| a.original_clock),
        })
    };
    let set_clock = move |original: bool| {
        on_apply.run(TimelineView {
            filter: applied.with_untracked(|a| a.filter.clone()),
            original_clock: original,
        })
    };
    view! {
        <div class="timeline-controls" role="search">
            <label>
                "Filter "
                <input
                    type="search"
                    data-testid="timeline-filter"
                    aria-label="Filter the timeline's kernels"
                    placeholder=PLACEHOLDER
                    size=if compact { "34" } else { "60" }
                    prop:value=move || text.get()
                    on:input=move |e| text.set(event_target_value(&e))
                    on:keydown=move |e: web_sys::KeyboardEvent| {
                        if e.key() == "Enter" {
                            apply();
                        }
                    }
                />
            </label>
            <button data-testid="apply-filter" on:click=move |_| apply()>"Apply"</button>
            <button
                data-testid="clear-filter"
                on:click=move |_| {
                    text.set(String::new());
                    apply();
                }
            >
                "Clear"
            </button>
            <label>
                "Clock "
                <select
                    data-testid="clock"
                    prop:value=move || if applied.with(|a| a.original_clock) { "original" } else { "sync" }
                    on:change=move |e| set_clock(event_target_value(&e) == "original")
                >
                    <option value="sync">"synchronised (reference rank)"</option>
                    <option value="original">"original (each rank's own)"</option>
                </select>
            </label>
            <span
                class="hint"
                data-testid="filter-status"
                data-filter=move || applied.with(|a| a.filter.clone())
            >
                {move || status.get().map(|s| summary(&s))}
            </span>
            {move || status.get().and_then(|s| s.error).map(|e| view! {
                <span class="error" data-testid="filter-error">{e}</span>
            })}
            <details class="filter-help">
                <summary>"filter syntax"</summary>
                <ul>
                    <li><code>"op:allreduce,allgather"</code>" operations (also "<code>"p2p"</code>" for Send, Recv and fused SendRecv)"</li>
                    <li><code>"comm:0x5c1e"</code>" communicator id prefix; "<code>"par:tp,dp"</code>" parallelism (dp, tp, pp, ep, cp, unknown)"</li>
                    <li><code>"rank:0-7,12"</code>" global ranks (other ranks' rows are hidden)"</li>
                    <li><code>"size:>=1MiB"</code>", "<code>"size:1KB..64MiB"</code>" message size; "<code>"bw:<50"</code>" bus bandwidth in GB/s"</li>
                    <li><code>"status:unmatched"</code>" (no log line), "<code>"low"</code>" (low-confidence match), "<code>"matched"</code>", "<code>"fused"</code>", "<code>"duplicated"</code></li>
                    <li>"Terms must all hold; comma-separated values are alternatives; "<code>"-"</code>" negates a term; a bare word is an operation, parallelism or status."</li>
                </ul>
            </details>
        </div>
        {if compact {
            view! { <details class="legend-fold"><summary>"legend"</summary><Legend /></details> }.into_any()
        } else {
            view! { <Legend /> }.into_any()
        }}
    }
}

fn summary(s: &ViewStatus) -> String {
    let mut out = if s.kept == s.total {
        format!("{} kernels", s.total)
    } else {
        format!("kept {} of {} kernels", s.kept, s.total)
    };
    if s.unmatched > 0 {
        out.push_str(&format!(" · {} without a log line (hollow)", s.unmatched));
    }
    if s.low_confidence > 0 {
        out.push_str(&format!(
            " · {} low-confidence matches (flagged)",
            s.low_confidence
        ));
    }
    out
}

const OP_NAMES: [&str; 8] = [
    "AllReduce",
    "AllGather",
    "ReduceScatter",
    "Broadcast",
    "Reduce",
    "Send/Recv",
    "other",
    "unnamed kernel",
];
const PAR_NAMES: [&str; 6] = ["DP", "TP", "PP", "EP", "CP", "unknown"];

fn swatch(rgb: [u8; 3], name: &'static str) -> impl IntoView {
    let style = format!("background: rgb({}, {}, {})", rgb[0], rgb[1], rgb[2]);
    view! { <span class="swatch-item"><span class="swatch" style=style></span>{name}</span> }
}

/// What the colours and marks mean.
#[component]
fn Legend() -> impl IntoView {
    view! {
        <div class="legend" data-testid="timeline-legend">
            <span class="legend-title">"operations:"</span>
            {COLOURS.iter().zip(OP_NAMES).map(|(c, n)| swatch(*c, n)).collect_view()}
            <span class="legend-title">"parallelism (thin row):"</span>
            {PAR_COLOURS.iter().zip(PAR_NAMES).map(|(c, n)| swatch(*c, n)).collect_view()}
            <span class="legend-title">"marks:"</span>
            <span class="swatch-item"><span class="swatch hollow"></span>"no log line"</span>
            <span class="swatch-item"><span class="swatch flagged"></span>"low-confidence match"</span>
        </div>
    }
}
