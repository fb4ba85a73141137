//! The aggregate of a time window (`analyses::window_summary`): per operation type and per
//! rank, kernels, bytes, busy time and mean algorithm bandwidth. Shown for the timeline's
//! visible window or a range selected on it, and for a summary that a self-contained link
//! carries.

use analyses::{WindowRow, WindowSummary};
use leptos::prelude::*;
use ncclscope_app::protocol::format::human_bytes;

fn rows_view(rows: &[WindowRow], what: &'static str) -> impl IntoView {
    let body = rows
        .iter()
        .map(|r| {
            view! {
                <tr data-key=r.key.clone()>
                    <td>{r.key.clone()}</td>
                    <td class="num" data-col="kernels">{r.kernels}</td>
                    <td class="num" data-col="bytes">{human_bytes(r.bytes)}</td>
                    <td class="num" data-col="busy">{format!("{:.3} ms", r.busy_ns as f64 / 1e6)}</td>
                    <td class="num" data-col="algbw">
                        {r.algbw_gbps().map_or("—".to_string(), |g| format!("{g:.2}"))}
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <table class="window-table" data-testid=format!("window-{what}")>
            <thead>
                <tr>
                    <th>{what}</th>
                    <th>"kernels"</th>
                    <th>"bytes"</th>
                    <th>"busy"</th>
                    <th>"mean algo BW (GB/s)"</th>
                </tr>
            </thead>
            <tbody>{body}</tbody>
        </table>
    }
}

/// Which range an aggregate is of, for its heading.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scope {
    /// The timeline's visible window.
    Visible,
    /// A range selected on the timeline (shift+drag).
    Selection,
}

/// The window's tables; every string is shown as text.
pub fn summary_view(w: &WindowSummary) -> impl IntoView {
    scoped_view(w, None)
}

/// The window's tables, headed by which range they aggregate: `scope`, with the run's start
/// (ns) that the range is shown relative to.
pub fn scoped_view(w: &WindowSummary, scope: Option<(Scope, i64)>) -> impl IntoView {
    let span_ms = (w.end_ns - w.start_ns) as f64 / 1e6;
    let heading = scope.map(|(scope, origin)| {
        let what = match scope {
            Scope::Visible => "visible window",
            Scope::Selection => "selection",
        };
        let ms = |ns: i64| (ns - origin) as f64 / 1e6;
        format!("{what} {:.3}–{:.3} ms", ms(w.start_ns), ms(w.end_ns))
    });
    view! {
        <div class="window-summary">
            {heading.map(|h| view! { <h3 data-testid="window-scope">{h}</h3> })}
            <p class="hint">
                {format!(
                    "Window of {span_ms:.3} ms: NCCL kernels that overlap it, counted whole; {} without a log operation.",
                    w.unmatched_kernels
                )}
            </p>
            {rows_view(&w.per_op, "operation")}
            {rows_view(&w.per_rank, "rank")}
        </div>
    }
}
