//! Small SVG charts for the analysis panels: bars with a reference mark per bar (observed volume
//! per rank against its theoretical value) and a log-scale histogram with one marked bucket
//! (message sizes against the activation size b·s·h·β). Inputs are plain, already labelled
//! numbers; every text goes through Leptos, which escapes it.

use leptos::prelude::*;

/// One bar: its label, its value and, when known, the value it should have had.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub reference: Option<f64>,
    /// Shown on hover.
    pub title: String,
}

const W: f64 = 640.0;
const H: f64 = 180.0;
const PAD_LEFT: f64 = 8.0;
const PAD_BOTTOM: f64 = 22.0;

/// Vertical bars scaled to the largest value or reference; a reference is a dark tick across
/// its bar.
#[component]
pub fn BarChart(bars: Vec<Bar>, #[prop(into)] test_id: String) -> impl IntoView {
    let top = bars
        .iter()
        .flat_map(|b| [b.value, b.reference.unwrap_or(0.0)])
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let n = bars.len().max(1) as f64;
    let slot = (W - PAD_LEFT) / n;
    let y = move |v: f64| (H - PAD_BOTTOM) * (1.0 - v / top);
    // Label every bar only when they fit; else every k-th.
    let every = ((n * 28.0) / W).ceil().max(1.0) as usize;
    let items = bars
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            let x = PAD_LEFT + i as f64 * slot;
            let w = (slot * 0.8).max(1.0);
            let label = (i % every == 0).then(|| {
                view! {
                    <text x=x + w / 2.0 y=H - 6.0 text-anchor="middle" class="chart-label">
                        {b.label.clone()}
                    </text>
                }
            });
            let reference = b.reference.map(|r| {
                view! {
                    <line x1=x - 1.0 x2=x + w + 1.0 y1=y(r) y2=y(r) class="chart-reference" />
                }
            });
            view! {
                <g>
                    <title>{b.title.clone()}</title>
                    <rect x=x y=y(b.value) width=w height=(H - PAD_BOTTOM - y(b.value)).max(0.0)
                        class="chart-bar" />
                    {reference}
                    {label}
                </g>
            }
        })
        .collect_view();
    view! {
        <svg class="chart" data-testid=test_id viewBox=format!("0 0 {W} {H}") role="img">
            {items}
        </svg>
    }
}

/// One histogram bucket: `[lower, 2·lower)` bytes and how many operations fell in it.
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    pub lower_bytes: u64,
    pub count: u64,
    pub label: String,
}

/// Buckets side by side (powers of two, so the x axis is logarithmic), heights on a log scale
/// (counts span orders of magnitude); the bucket holding `mark` is outlined.
#[component]
pub fn Histogram(
    buckets: Vec<Bucket>,
    mark: Option<u64>,
    #[prop(into)] test_id: String,
) -> impl IntoView {
    let top = buckets
        .iter()
        .map(|b| (b.count as f64 + 1.0).log10())
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let n = buckets.len().max(1) as f64;
    let slot = (W - PAD_LEFT) / n;
    let every = ((n * 40.0) / W).ceil().max(1.0) as usize;
    let items = buckets
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            let x = PAD_LEFT + i as f64 * slot;
            let w = (slot * 0.85).max(1.0);
            let h = (H - PAD_BOTTOM) * (b.count as f64 + 1.0).log10() / top;
            let marked =
                mark.is_some_and(|m| m >= b.lower_bytes && m < b.lower_bytes.saturating_mul(2));
            let class = if marked {
                "chart-bar chart-marked"
            } else {
                "chart-bar"
            };
            let label = (i % every == 0 || marked).then(|| {
                view! {
                    <text x=x + w / 2.0 y=H - 6.0 text-anchor="middle" class="chart-label">
                        {b.label.clone()}
                    </text>
                }
            });
            view! {
                <g data-bucket=b.lower_bytes data-marked=marked.to_string()>
                    <title>{format!("{}: {} operations", b.label, b.count)}</title>
                    <rect x=x y=H - PAD_BOTTOM - h width=w height=h class=class />
                    {label}
                </g>
            }
        })
        .collect_view();
    view! {
        <svg class="chart" data-testid=test_id viewBox=format!("0 0 {W} {H}") role="img">
            {items}
        </svg>
    }
}
